// runtime/cli/perf_run.h - the `cclab perf` benchmark driver: this process's ranks, their
// communicators, the timing loops and the correctness check.
//
// Each rank is a thread with its own communicator (ncclCommInitRank on a shared unique id), its own
// host stream (or the NULL stream with -z 1) and its own buffers. Per-rank results (time, wrong
// elements) are combined across every rank of the run, in every process, with cclab's own
// ncclAllReduce on the benchmark communicator; the thread holding global rank 0 prints the report.
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
};

// Exit statuses of `cclab perf`.
constexpr int kPerfExitOk = 0;
constexpr int kPerfExitWrong = 1;    // some values were wrong
constexpr int kPerfExitUsage = 2;    // bad command line
constexpr int kPerfExitRuntime = 3;  // an NCCL call failed

// Runs the benchmark with this process's ranks and returns the exit status.
int run_perf(const PerfOptions& options, const ProcessContext& ctx);

}  // namespace cclab
