// runtime/trace/chrome.h - a cclab trace as Chrome's Trace Event Format (the "JSON Object Format":
// {"displayTimeUnit": "ns", "otherData": {...}, "traceEvents": [...]}), for ui.perfetto.dev and
// chrome://tracing. Written by `cclab trace export --chrome OUT.json TRACE` (docs/cli-trace.md).
//
//   std::ofstream out("run.json");
//   std::string err;
//   ChromeStats stats;
//   if (!export_chrome(trace, out, ChromeOptions{}, &err, &stats)) ...
//
// The JSON is streamed, one event per line; beyond the trace itself it holds under 100 bytes per event
// (sort keys, lane assignment, send/receive matching). Strings are escaped (quotes, backslashes,
// control characters; invalid UTF-8 becomes U+FFFD) and non-finite numbers never appear.
//
// What appears where (times: "ts" and "dur" in microseconds, exact to the nanosecond):
//   pid = rank                 process_name "rank 3 (m0.gpu3)" (the GPU node the rank plays, when known),
//                              process_sort_index = rank. Every rank 0..nranks-1 and every rank with events.
//   tid = channel c            thread_name "channel c", thread_sort_index 16 c (+ sub-lane)
//   tid = kChromeCollTid       thread_name "collectives", thread_sort_index -1: the collective lane
//   pid = chrome_links_pid(t)  process_name "links": one counter track per link (LOAD section)
// Slices ("ph": "X"):
//   collective  name coll_name ("AllReduce"), cat "COLL", on the collective lane: one per op and rank,
//               from the rank's first step of the op to its last; args op, algo, proto, type, redop,
//               count, bytes, root, nchannels, algbw, busbw (from Trace::ops when the op is there).
//   kernel      name "KernelCh<c>" ("KernelCh0"), cat "GPU", on the channel's lane: one per (rank,
//               channel, op), from its first step's begin to its last step's end; args op, channel, steps.
//   step        name prim_label ("recvReduceSend"), cat "STEP", on the channel's lane (nested in its
//               kernel slice): one per event, ts = begin_us, dur = end_us - begin_us; args op, coll,
//               send_peer, recv_peer (-1: none), step, offset, bytes, proto ("LL", "LL128", "Simple"),
//               wait_us (data_us - begin_us: waiting for credits/data before the data moved).
//   Slices on one lane must nest; when the trace has slices that overlap without nesting (e.g. two
//   concurrent halves of a tree), the later ones go to a sub-lane k >= 1 of the same lane, tid + 10000 k,
//   thread_name "channel c (overlap k)" / "collectives (overlap k)". Ordinary traces have none.
// Flows ("ph": "s" / "f", cat "FLOW", name "send", matching "id" from 1): from each sending step to the
//   step that receives its slice. A connection is a FIFO: within one collective (op_count), the k-th
//   step of rank R on channel C with send_peer = P (in begin order) is received by the k-th step of rank
//   P on channel C with recv_peer = R. This holds whatever the events' `step` field holds: the
//   connection step of the send end and of the receive end agree for a pure send and a pure receive
//   (both ends of a connection advance together: LL/LL128 by 1 per slice, Simple by StepPerSlice), but a
//   step that both receives and sends (recvReduceSend, ...) records its *send* connection's step, which
//   is one slice ahead of the receive connection's, so matching on equal step values would pair a send
//   with the slice after the one that received it. Pairs are made over the whole trace before the
//   window applies; a send with no receive left in its group gets no flow (ChromeStats::unmatched_sends).
//   Each end sits at the middle of its step's slice and binds to that enclosing slice ("s" binds to the
//   enclosing slice by definition; "f" has "bp": "e").
// Counters ("ph": "C", cat "LINK", pid = chrome_links_pid): one track per link that carried traffic,
//   named by its endpoints' node names "m0.gpu0->m0.nvs0" (" #<link index>" appended when two links share
//   endpoints), args {"GB/s": value}: a sample at the start of each LOAD bin whose value differs from
//   the previous bin's (the first bin always), then a 0 sample at the end of the last bin when the last
//   value was not 0, so the track drops.
#pragma once

#include <cstdint>
#include <limits>
#include <ostream>
#include <string>

#include "trace/trace.h"

namespace cclab {
namespace trace {

constexpr int kChromeCollTid = 1000;       // the collective lane of each rank
constexpr int kChromeSubLaneStride = 10000;  // sub-lane k of lane tid: tid + k * kChromeSubLaneStride

struct ChromeOptions {
  // Time window in the trace's microseconds: slices that intersect [from_us, to_us], flows whose both
  // ends are in the output, counter bins that intersect it. Infinite: no bound.
  double from_us = -std::numeric_limits<double>::infinity();
  double to_us = std::numeric_limits<double>::infinity();
  bool steps = true;         // one slice per step event (false: only collective and kernel slices)
  bool flows = true;         // send -> receive flow arrows (need steps)
  bool counters = true;      // per-link GB/s counter tracks from the LOAD section
  int max_link_counters = 0; // > 0: only the N links that moved the most bytes
};

struct ChromeStats {
  uint64_t metadata = 0;     // "M" events
  uint64_t collectives = 0;  // collective slices
  uint64_t kernels = 0;      // KernelCh slices
  uint64_t steps = 0;        // step slices
  uint64_t flows = 0;        // flow pairs (each is an "s" and an "f" event)
  uint64_t unmatched_sends = 0;  // sending steps in the output with no receive (no flow)
  uint64_t counter_tracks = 0;
  uint64_t counter_samples = 0;  // "C" events
  uint64_t sub_lanes = 0;    // overlap sub-lanes that had to be opened
  uint64_t bytes = 0;        // characters written
  uint64_t events() const { return metadata + collectives + kernels + steps + 2 * flows + counter_samples; }
};

// The pid of the "links" process: one past the highest rank (max(meta.nranks, highest event rank + 1)).
int chrome_links_pid(const Trace& t);

// Writes `t` to `out`. False with *error when the options are inconsistent (from_us > to_us) or the
// stream failed. *stats (optional) counts what was written.
bool export_chrome(const Trace& t, std::ostream& out, const ChromeOptions& opt, std::string* error,
                   ChromeStats* stats = nullptr);

// `s` as a JSON string literal with its quotes (the escaping export_chrome uses).
std::string json_quote(const std::string& s);

}  // namespace trace
}  // namespace cclab
