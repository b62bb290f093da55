// runtime/cli/perf_launch.h - how `cclab perf` processes find each other.
//
//   plain          one process, all ranks are its threads
//   --nprocs N     this process gets a unique id, then fork+execs itself N times (clean processes, same
//                  arguments) passing the id in CCLAB_PERF_UNIQUE_ID (hex) and the process index in
//                  CCLAB_PERF_PROC; it waits for them and fails if any of them fails. With --hosts H
//                  each child also gets NCCL_HOSTID=<host>-hostK, K = process * H / N. The children
//                  exchange the run's bookkeeping (ProcessContext::exchange) through memory the parent
//                  shares with them (an inherited memfd, its number in CCLAB_PERF_CONTROL_FD)
//   mpirun         (OMPI_COMM_WORLD_* or PMI_* in the environment; needs a build with MPI) MPI rank 0
//                  gets the unique id and MPI_Bcast's it; MPI_Allgather then carries the run's
//                  bookkeeping (never the measured collectives)
#pragma once

#include "perf_options.h"

namespace cclab {

// Environment of the --nprocs children.
constexpr const char* kPerfIdEnv = "CCLAB_PERF_UNIQUE_ID";
constexpr const char* kPerfProcEnv = "CCLAB_PERF_PROC";
constexpr const char* kPerfNprocsEnv = "CCLAB_PERF_NPROCS";
constexpr const char* kPerfControlFdEnv = "CCLAB_PERF_CONTROL_FD";

// Runs `cclab perf` as this process's role requires; `argv` is the full command line (re-executed by
// --nprocs). Returns the exit status.
int launch_perf(const PerfOptions& options, char** argv);

// Whether this process was started by an MPI launcher, and its rank there (0 when not).
bool under_mpi_launcher(int* world_rank, int* world_size);

}  // namespace cclab
