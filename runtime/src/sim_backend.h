// runtime/src/sim_backend.h - the runtime's side of CCLAB_BACKEND=sim: communicators created under the
// sim backend hand their operations to the process's simulated world (sim/session.h) instead of the
// host executor; a synchronisation blocks until the simulation has run the work it waits for.
#pragma once

#include <vector>

#include "cclab/cclab.h"
#include "enqueue.h"

namespace cclab {

// At init: the communicator's ranks join the simulated world (all of them must be in this process).
ncclResult_t sim_attach(ncclComm_t comm);
// At destroy.
void sim_detach(ncclComm_t comm);
// The calling thread drives `comm` from now on (ncclCommInitAll hands its communicators to its caller).
void sim_claim(ncclComm_t comm);
// Queues a group's operations (all of sim communicators) on the simulated streams; operations on the
// NULL stream are simulated before it returns.
ncclResult_t sim_launch(std::vector<OpDesc>& ops);
// Blocks until `stream`'s simulated work is done (NULL: all of it); a no-op without a simulated world.
ncclResult_t sim_synchronize(cudaStream_t stream, const char* fn);
// cclabStreamWaitStream under the sim backend: true when handled.
bool sim_waits(cudaStream_t waiter, cudaStream_t waitee);
// cclabSimKernel: a simulated compute kernel; nothing happens on the host backend.
ncclResult_t sim_kernel(cudaStream_t stream, int rank, double flops, double seconds);
// cclabSimTime: the simulated clock; ncclInvalidUsage without a simulated world.
ncclResult_t sim_time(double* us);

// While one lives, the calling thread is inside a call that may wait for other threads (init, split,
// destroy): the simulated world does not wait for it to queue work.
class SimIdleScope {
 public:
  SimIdleScope();
  ~SimIdleScope();
  SimIdleScope(const SimIdleScope&) = delete;
  SimIdleScope& operator=(const SimIdleScope&) = delete;

 private:
  bool on_ = false;
};

}  // namespace cclab
