// runtime/src/sim_backend.h - the runtime's side of CCLAB_BACKEND=sim: communicators created under the
// sim backend hand their collectives to the process's simulated world (sim/session.h) instead of the
// host executor; synchronisation points run the simulation.
#pragma once

#include <vector>

#include "cclab/cclab.h"
#include "enqueue.h"

namespace cclab {

// Creates (or joins) the simulated world for a communicator of `nranks` at init.
ncclResult_t sim_attach(ncclComm_t comm);
// Queues a group's operations (all of sim communicators) on the simulated streams; operations on the
// NULL stream run (simulate) before it returns.
ncclResult_t sim_launch(std::vector<OpDesc>& ops);
// Simulates everything queued (a no-op without a simulated world).
ncclResult_t sim_synchronize(const char* fn);
// cclabStreamWaitStream under the sim backend: true when handled.
bool sim_waits(cudaStream_t waiter, cudaStream_t waitee);
// cclabSimKernel: a simulated compute kernel; nothing happens on the host backend.
ncclResult_t sim_kernel(cudaStream_t stream, int rank, double flops, double seconds);
// cclabSimTime: the simulated clock; ncclInvalidUsage without a simulated world.
ncclResult_t sim_time(double* us);

}  // namespace cclab
