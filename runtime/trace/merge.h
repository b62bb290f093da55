// runtime/trace/merge.h - one trace from the per-process traces of one run (CCLAB_TRACE on a
// communicator spanning several processes writes PATH.<first rank> per process).
#pragma once

#include <string>
#include <vector>

#include "trace/trace.h"

namespace cclab {
namespace trace {

// Joins `parts` (the same communicator: same ranks, topology and channels) into *out: every part's events
// and collectives (a collective's begin is the earliest, its end the latest over the parts), times shifted
// so the first step begins at 0, link load recomputed; the doctor's reports of every part in time order, a
// verdict that several parts recorded kept once (the earliest). False with *error naming the part that does not fit.
bool merge_traces(const std::vector<Trace>& parts, Trace* out, std::string* error);

}  // namespace trace
}  // namespace cclab
