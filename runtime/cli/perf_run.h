// runtime/cli/perf_run.h - the `cclab perf` benchmark driver: this process's ranks, their
// communicators, the timing loops and the correctness check.
//
// Each rank is a thread with its own communicator (ncclCommInitRank on a shared unique id), its own
// host stream (or the NULL stream with -z 1) and its own buffers. The run's own bookkeeping - the device
// report, the barrier before each timed loop, and combining per-rank results (time, wrong elements)
// across every rank of the run - never goes through the library it measures (as nccl-tests uses MPI
// for it): the threads of a process meet on a ThreadBarrier, and the processes exchange through
// ProcessContext::exchange. So NCCL_ALGO / NCCL_PROTO settings that leave a collective nothing to run
// fail only the collective under test, and the measured communicator carries only measured work. The
// thread holding global rank 0 prints the report.
#pragma once

#include <functional>

#include "cclab/nccl.h"
#include "perf_options.h"

namespace cclab {

// How this process takes part in the run.
struct ProcessContext {
  int nprocs = 1;  // processes in the run
  int proc = 0;    // this process's index: it holds ranks [proc * ranks_per_process, +ranks_per_process)
  ncclUniqueId id{};
  // Ends the whole run after a fatal error on one rank (the other ranks would wait forever for it):
  // the process exits with `status`, and under MPI the job is aborted.
  std::function<void(int status)> abort;
  // With several processes: exchanges `bytes` bytes per process, `in` this process's, `out` receiving
  // every process's in process order (nprocs x bytes). One thread of each process calls it, every
  // process the same calls in the same order; it returns once every process has contributed. The
  // --nprocs launcher exchanges through memory shared with its children, mpirun through MPI_Allgather.
  std::function<void(const void* in, void* out, size_t bytes)> exchange;
};

// Largest per-rank record `cclab perf` exchanges (ProcessContext::exchange carries at most this many
// bytes per rank of the process).
constexpr size_t kPerfMaxRecordBytes = 256;

// Exit statuses of `cclab perf`.
constexpr int kPerfExitOk = 0;
constexpr int kPerfExitWrong = 1;    // some values were wrong
constexpr int kPerfExitUsage = 2;    // bad command line
constexpr int kPerfExitRuntime = 3;  // an NCCL call failed

// Runs the benchmark with this process's ranks and returns the exit status.
int run_perf(const PerfOptions& options, const ProcessContext& ctx);

}  // namespace cclab
