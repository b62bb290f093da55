// sim/session.h - the runtime's sim backend (CCLAB_BACKEND=sim): one simulated world per process that a
// program written against nccl.h drives without knowing it, from one thread or from a thread per rank.
//
//   program threads                        Session (its own engine thread runs SimGrid)
//   ---------------                        ------------------------------------------------------------
//   ncclCommInitRank / InitAll / Split     attach(): the communicator's ranks play GPUs of the model
//                                          (device index = comm->dev); one World per GPU set, all on
//                                          one platform, each communicator with its own connections
//   ncclAllReduce(..., stream)             enqueue_coll(): rank r's part on the stream's queue
//   ncclSend / ncclRecv (a group)          enqueue_p2p(): the rank's send/recv rounds (kernels/p2p.h)
//   cclabSimKernel(stream, gpu, f, s)      enqueue_kernel(): s + f / peak seconds on that GPU
//   cclabStreamWaitStream(a, b)            enqueue_wait(): later work on a waits for what b holds now
//   cclabStreamSynchronize(stream)         synchronize(): blocks until that queue's work is simulated
//   cclabSimTime(&us)                      now_us(): the simulated clock where the caller stands
//
// Co-simulation. Every queue is one actor that runs its items in order; a collective item spawns the
// rank's channel actors (World::run_rank_op), which meet the other ranks' through the FIFOs. Program
// threads that hold communicators of the world ("participants") take no simulated time: a thread's
// work starts at the simulated time its last synchronisation returned. So the engine advances only
// while every participant is blocked (in a synchronisation, in an init/split/destroy call, or gone),
// and stops, at that simulated instant, as soon as a synchronisation is satisfied, until the released
// thread blocks again. Simulated time therefore depends on the program only, not on thread
// scheduling: a thread-per-rank program and one thread driving every rank give the same times.
// When no actor can progress and every participant waits in a synchronisation, the program has
// deadlocked: those synchronisations fail naming the stuck waits (rank, channel, peer, step), and
// the world is unusable afterwards.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "sim/world.h"

namespace cclab {
namespace sim {

// How a synchronisation's error starts when the simulated ranks deadlocked (the program's misuse: the sim
// backend returns ncclInvalidUsage for it).
constexpr const char* kDeadlockMessage = "the simulated ranks deadlocked";

class Session {
 public:
  // The process's session (created on first use: CCLAB_TOPO / NCCL_TOPO_FILE, else dgx-h100 with enough
  // machines for `devs`). Fails when the model cannot be built.
  static Session* get(const std::vector<int>& devs, std::string* error);
  // The session if one exists.
  static Session* current();
  // The model a session simulates: the existing session's, else what get(devs) would build
  // (NCCL_TOPO_FILE, CCLAB_TOPO, else dgx-h100 with enough machines for `devs`; NCCL_MIN/MAX_NCHANNELS).
  // The runtime describes, tunes and logs a communicator on this model, so that its logs, its tuner
  // and the simulation are about one machine and one plan.
  static SimConfig model_config(const std::vector<int>& devs);

  // A communicator's rank joins: `comm` is its handle, `id` names the communicator (the same on every
  // rank), devs[r] is the GPU (device index) rank r plays. The calling thread drives it. False with
  // *error when the world cannot hold it.
  bool attach(const void* comm, const std::string& id, const std::vector<int>& devs, int rank, std::string* error);
  void detach(const void* comm);
  // The calling thread drives `comm` from now on (its work is what the engine waits for).
  void claim(const void* comm);
  // The calling thread enters / leaves a call that may wait for other threads (init, split, destroy):
  // meanwhile it queues nothing, so the engine may run.
  void idle_begin();
  void idle_end();

  // Queue work. `stream` is the program's stream handle (nullptr: the GPU's default stream).
  bool enqueue_coll(const void* comm, const void* stream, const World::RankOp& op, std::string* error);
  bool enqueue_p2p(const void* comm, const void* stream, uint64_t op_count, const std::vector<World::P2pOp>& ops,
                   std::string* error);
  void enqueue_kernel(const void* stream, int gpu, double flops, double seconds);
  void enqueue_wait(const void* waiter, const void* waitee);
  // Blocks until the stream's work queued so far is simulated (stream nullptr: every queue's work).
  // False with the first error of that work, or with the deadlock report.
  bool synchronize(const void* stream, std::string* error);
  // The same for the default streams of the GPUs the communicators' ranks play (NULL-stream calls).
  bool synchronize_default(const std::vector<const void*>& comms, std::string* error);

  double now_us() const;
  // Whether GPU `gpu` (device index) is played by a rank of some communicator.
  bool gpu_in_use(int gpu) const;
  int gpus_in_use() const;
  std::string description() const;

  ~Session();

 private:
  Session() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sim
}  // namespace cclab
