// sim/session.h - the runtime's sim backend (CCLAB_BACKEND=sim): one simulated world per process that a
// program written against nccl.h drives without knowing it.
//
//   host program (one thread)              Session
//   -------------------------              ------------------------------------------------------------
//   ncclAllReduce(..., comm_r, stream)     queues rank r's part on `stream` (on the NULL stream: runs now)
//   cclabSimKernel(stream, r, flops, s)    queues a compute kernel on GPU r: s + flops / peak seconds
//   cclabStreamWaitStream(a, b)            later work on a waits for what b holds now (an event)
//   cclabStreamSynchronize(stream)         simulates everything queued: one actor per stream runs its
//                                          items in order; a collective item spawns that rank's channel
//                                          actors (World::run_rank_op), which meet the other ranks'
//                                          through the FIFOs as on a GPU
//   cclabSimTime(&us)                      the simulated clock
//
// The world is built on first use for the communicator's size: CCLAB_TOPO=PRESET[:MACHINES] or
// NCCL_TOPO_FILE, else dgx-h100 with as many machines as the ranks need; payload mode, so the user's
// buffers hold real results. Simulated time only moves inside run(), at the program's synchronisation
// points; the program must queue every rank's part of a collective before synchronising (one thread
// driving every rank, as NCCL's single-process multi-GPU pattern does), or the ranks deadlock and run()
// says which waits were stuck.
#pragma once

#include <memory>
#include <string>

#include "sim/world.h"

namespace cclab {
namespace sim {

class Session {
 public:
  // The process's session for `nranks` ranks (created on first use). Fails when it exists with
  // another size or the model cannot be built.
  static Session* get(int nranks, std::string* error);
  // The session if one exists.
  static Session* current();

  // Queue work. `stream` is the program's stream handle (nullptr: rank r's default stream).
  void enqueue_coll(const void* stream, int rank, const World::RankOp& op);
  void enqueue_kernel(const void* stream, int rank, double flops, double seconds);
  void enqueue_wait(const void* waiter, int waiter_rank, const void* waitee, int waitee_rank);
  // Simulates everything queued. False with the first error.
  bool run(std::string* error);
  double now_us() const;
  int nranks() const;
  std::string description() const;

  ~Session();

 private:
  Session() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sim
}  // namespace cclab
