// runtime/core/recorder.h - the host backend's trace (CCLAB_TRACE=path) and live stream (CCLAB_LIVE=socket).
//
// One recorder per process, created on the first communicator init when either variable is set. It
// records the communicator clique of the first communicator it sees (every communicator with the same
// id: the ranks this process plays); other communicators are not recorded (a note says so once). Each
// collective's executors report their steps (HostExecConfig::record) with the collective's protocol;
// each rank reports the collective when it finishes. When the last recorded communicator is destroyed
// (or at exit) the trace is written - times relative to the first step, wall clock - and the live
// stream ends. A communicator spanning several processes: each process writes the ranks it plays,
// to PATH.<first rank> (`cclab trace merge` joins them). The doctor's reports of stuck waits (core/doctor.h)
// are recorded too (Trace::stuck), and a run whose operations failed and whose communicators were
// aborted still writes its trace.
#pragma once

#include <string>

#include "base/board.h"
#include "core/comm.h"
#include "kernels/step_record.h"

namespace cclab {

class Recorder;

// What the executors of one collective carry to the recorder.
struct RecordCtx {
  Recorder* recorder = nullptr;
  int proto = 0;
};

// The trace's number for replay `replay` (1, 2, ...) of a collective captured into a CUDA graph as
// `op_count`: each replay is a collective of its own, after every eagerly launched one.
inline uint64_t replay_op_count(uint64_t op_count, uint64_t replay) { return op_count + (replay << 32); }

// The recorder when CCLAB_TRACE or CCLAB_LIVE is set (host backend), else nullptr.
Recorder* recorder();

// Starts recording `comm` if it belongs to the recorded clique (sets comm->recording).
void recorder_attach(ncclComm_t comm);
// Before a communicator is freed.
void recorder_detach(ncclComm_t comm);
// The executors' hook (HostExecConfig::record): `data` is a RecordCtx.
void recorder_step(const StepRecord& r, void* data);
// One rank finished its part of collective `op_count`.
void recorder_op(ncclComm_t comm, uint64_t op_count, CollKind coll, const char* algo, const char* proto,
                 int type, int redop, int root, size_t count, size_t bytes, int nchannels, double begin_us,
                 double end_us);

// The doctor printed (or would print) report `v` of `comm`'s board: recorded once per `key` as a STUK
// entry of the trace and sent to the live viewer (nothing when `comm` is not recorded).
void recorder_stuck(ncclComm_t comm, const BoardVerdict& v, uint64_t key);

}  // namespace cclab
