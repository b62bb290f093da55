// sim/sim_exec.h - the simulator's executor: what the kernels/ primitives' waits, posts, data loops and
// wires mean when SimGrid actors play the GPUs' channels.
//
//   primitive call            SimExec
//   ----------------------    ----------------------------------------------------------------------
//   reduce_copy(n elements)   payload mode: the real arithmetic (cclab::reduce_copy); always: the step's
//                             data loop, one pass over its n x size bytes (however many sources and
//                             destinations it combines), runs on one core (SM) of the GPU host at the
//                             calibrated per-SM rate
//   wire(conn, bytes)         starts a SimGrid communication of the protocol's wire bytes (Simple: the
//                             payload; LL: 16-byte lines of 8 payload bytes; LL128: 128-byte lines of
//                             120) from this rank's GPU to the peer's, along the model's route
//   post(counter, v)          deferred until the step's transfers and data loop complete, then the
//                             protocol's per-step overhead (fence + flag) passes and the counter is set;
//                             an actor waiting on it resumes
//   wait_ge(counter, v)       completes the previous step first (above); suspends the actor until the
//                             counter reaches v
//   wait_flag / doorbell      LL/LL128: the receiver waits on the step's doorbell (rung once every line
//                             is stored, after the transfer), then (payload mode) checks the flags
//   mc_* (NVLS, nvls.h)       payload mode: the arithmetic over every rank's copy; always: the switch's
//                             part - the head's NVSwitch port reduces the step's output on the machine's
//                             switch host (World: one core per GPU port at NCCL's NVLS rate), and the
//                             NVLink traffic of one head's step under NVLS's symmetry (every rank is a
//                             head; a load-reduce of b bytes reads b from each of the n ranks and returns
//                             b to the head, a multicast store sends b to the switch and b to each rank)
//                             is charged on the head's own links: a communication of the bytes its up
//                             link carries per loop to the switch host and one of its down link's back.
//                             mc_wait_ge / mc_post are the counters' waits and posts on every copy
//
// So a step costs max(transfer, data loop) + step overhead, channels are concurrent actors whose
// transfers share links under SimGrid's max-min model, and a slow receiver holds back its sender
// through the NCCL_STEPS credits exactly as on a GPU. Credits travel back instantly (they are 8-byte
// stores; documented as a simplification in docs/simulator.md).
//
// Timing-only mode (payload = false): the FIFO headers exist (the primitives keep their step counts and
// slice sizes in them) but no data buffer is ever touched: reduce_copy only counts bytes, line stores
// are dropped, and a flag wait trusts the doorbell.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "kernels/fifo.h"
#include "kernels/nvls.h"
#include "kernels/primitives.h"
#include "kernels/reduce_copy.h"
#include "kernels/step_record.h"
#include "kernels/work.h"
#include "sim/replay.h"

#include <simgrid/forward.h>

namespace cclab {
namespace sim {

class World;

// Why an executor stopped.
enum class SimFailure : int { kNone = 0, kSizeMismatch = 1, kFlagMissing = 2, kAborted = 3, kLinkDown = 4 };

class SimExec {
 public:
  // One executor per (rank, channel) actor and collective. `proto`: the protocol whose wire format
  // the collective uses (kProtoLL...).
  SimExec(World* world, int rank, int channel, int proto);
  // The flow level's counting pass (flow.cc): no SimGrid call at all; every wait is satisfied at once
  // and wire() only records the bytes and slices each connection carries.
  struct Count {
    double bytes = 0;
    uint64_t slices = 0;
  };
  // The counts are by peer rank, then (NVLS) the switch's parts of this rank's steps: per_peer[nranks +
  // kSwitchUp] the bytes up its link to the switch, kSwitchDown the bytes back, kSwitchReduce the bytes its
  // switch port reduces. A recording names them the same way (kXfer to "rank" nranks + part). The last two
  // are no flows, only the link bytes of each rank of the group that is no head (kSwitchOthersUp: what
  // each sends up, kSwitchOthersDown: what each receives), whose time the head's parts stand in for.
  enum SwitchPart : int {
    kSwitchUp = 0,
    kSwitchDown = 1,
    kSwitchReduce = 2,
    kSwitchFlows = 3,
    kSwitchOthersUp = 3,
    kSwitchOthersDown = 4,
    kSwitchParts = 5
  };
  void set_counting(std::vector<Count>* per_peer) { counting_ = per_peer; }
  // The flow level's recording pass (replay.h): as counting, and also appends every action a step-level
  // SimExec would take to *ops, and posts set their counters (so the FIFOs' state after the collective
  // is what a step-level run leaves). Counter ids are the counters' `waiters` slots.
  void set_recording(std::vector<Count>* per_peer, std::vector<ReplayOp>* ops) {
    counting_ = per_peer;
    rec_ = ops;
  }
  ~SimExec();

  bool wait_ge(const ConnCounter* c, uint64_t target, const WaitSite& site);
  void post(ConnCounter* c, uint64_t value);

  // The line protocols call this for every line of a step with real bytes (payload mode), once per step
  // without (a timing-only step has one data loop). Once the step's doorbell has rung, the rest of its
  // lines wait for nothing: the step goes on, its data loop still one with its transfers, as in timing
  // mode (a wait_ge would complete the step's loop so far and serialise it with the sends).
  template <typename Ready>
  bool wait_flag(const Ready& ready, const WaitSite& site, const ConnCounter* bell, uint64_t target) {
    if ((counting_ != nullptr || bell->value < target) && !wait_ge(bell, target, site)) return false;
    if (!payload_ || counting_ != nullptr) return true;
    if (ready()) return true;
    failure_ = SimFailure::kFlagMissing;
    site_ = site;
    return false;
  }
  void doorbell(ConnCounter* c, uint64_t value) { post(c, value); }

  uint64_t load_u64(const uint64_t* p) const { return payload_ ? *p : 0; }
  uint64_t load_u64_acquire(const uint64_t* p) const { return payload_ ? *p : 0; }
  void store_u64(uint64_t* p, uint64_t v) const {
    if (payload_) *p = v;
  }
  void store_u64_release(uint64_t* p, uint64_t v) const {
    if (payload_) *p = v;
  }

  // One lane does the whole loop on the host, so a lane's loop is the loop.
  template <typename T>
  void reduce_copy_lane(const RedOp<T>& op, T* d0, T* d1, const T* a, const T* b, size_t n, bool pre, bool post) {
    reduce_copy(op, d0, d1, a, b, n, pre, post);
  }
  int lane() const { return 0; }
  int lanes() const { return 1; }
  template <typename T>
  void reduce_copy(const RedOp<T>& op, T* d0, T* d1, const T* a, const T* b, size_t n, bool pre, bool post) {
    if (payload_ && counting_ == nullptr) cclab::reduce_copy(op, d0, d1, a, b, n, pre, post);
    // One pass over the data, however many sources and destinations a step combines (NCCL's reduceCopy
    // reads every source and writes every destination in one loop): the primitives' `combine` folds
    // further sources into, and copies out of, the destination of its first call, so a call whose
    // source is the previous call's destination adds nothing.
    if (b == nullptr || b != last_dst_) {
      pending_bytes_ += static_cast<double>(n * sizeof(T));
      last_dst_ = d0;
    }
  }

  void wire(const ConnInfo& send, size_t payload_bytes);

  // NVLS's multimem operations (kernels/nvls.h), as the head's switch step. Over a loop of the schedule
  // (L bytes over all heads) every rank's link to the switch carries L each way (its part of every
  // head's load-reduce up, every head's multicast down), and a head's own part b more (its multicast up,
  // its load-reduce's sum down). Each head takes one switch step per loop, which carries its own link's
  // L + b (L alone: NVLS-Tree's separate load-reduce and multicast), so that the heads' links, the
  // busiest, take the loop's time; a rank that is no head gets its b each way per head step counted on
  // its links (kSwitchOthers*), not timed. AllGather (every rank a head, no loop bytes): L = heads x b.
  template <typename T>
  void mc_ld_reduce(const RedOp<T>& op, T* dst, const NvlsConn& c, size_t off, size_t n, bool post) {
    if (moves_data()) {
      Data d;
      nvls_emulate_ld_reduce(d, op, dst, c, off, n, post);
    }
    const double b = static_cast<double>(n * sizeof(T));
    nvls_switch(loop_share(c, b), b, b, b, 0);
  }
  template <typename T>
  void mc_st(const RedOp<T>& op, const NvlsConn& c, size_t off, const T* src, size_t n) {
    if (moves_data()) {
      Data d;
      nvls_emulate_st(d, op, c, off, src, n);
    }
    const double b = static_cast<double>(n * sizeof(T));
    nvls_switch(b, loop_share(c, b), 0, 0, b);
  }
  template <typename T>
  void mc_ld_reduce_st(const RedOp<T>& op, const NvlsConn& c, size_t src_off, size_t dst_off, size_t n, bool post) {
    if (moves_data()) {
      Data d;
      nvls_emulate_ld_reduce_st(d, op, c, src_off, dst_off, n, post);
    }
    const double b = static_cast<double>(n * sizeof(T));
    const double l = loop_share(c, b);
    nvls_switch(l + b, l + b, b, b, b);
  }
  static double loop_share(const NvlsConn& c, double b) {
    return c.loop_bytes > 0 ? static_cast<double>(c.loop_bytes) : c.nheads * b;
  }
  bool mc_wait_ge(const NvlsConn& c, size_t counter_off, uint64_t target, const WaitSite& site) {
    return nvls_emulate_wait_ge(*this, c, counter_off, target, site);
  }
  void mc_post(const NvlsConn& c, size_t counter_off, uint64_t value) { nvls_emulate_post(*this, c, counter_off, value); }
  void mc_sync() {}  // one lane
  bool size_mismatch(const WaitSite& site, size_t expected, int32_t got);

  bool observing() const;
  bool moves_data() const { return payload_ && counting_ == nullptr; }
  double now_us();  // completes the step in flight first, so a step's end time includes its transfer
  void observe(const StepRecord& r);

  // Completes whatever the current step has in flight (transfers, data loop, overhead, deferred posts).
  void flush();

  SimFailure failure() const { return failure_; }
  const WaitSite& failed_site() const { return site_; }
  size_t mismatch_expected() const { return mismatch_expected_; }
  int32_t mismatch_got() const { return mismatch_got_; }
  uint64_t transfers() const { return transfers_; }

 private:
  void apply_post(ConnCounter* c, uint64_t value);
  // The payload arithmetic of the multimem operations, without the SM's data loop (the switch does it).
  struct Data {
    template <typename T>
    void reduce_copy(const RedOp<T>& op, T* d0, T* d1, const T* a, const T* b, size_t n, bool pre, bool post) {
      cclab::reduce_copy(op, d0, d1, a, b, n, pre, post);
    }
  };
  // The switch's part of one NVLS step of this rank's (the head's): `up` bytes on its link to the switch,
  // `down` bytes back, `reduce` bytes of output reduced on its switch port.
  void nvls_switch(double up, double down, double reduce, double others_up, double others_down);
  void start_loop();

  World* world_;
  int rank_;
  int channel_;
  int proto_;
  bool payload_;
  double pending_bytes_ = 0;                  // the current step's data loop, bytes
  const void* last_dst_ = nullptr;            // destination of the last reduce_copy
  std::vector<simgrid::s4u::ActivityPtr> inflight_;  // the current step's started transfers and data loop
  // Per inflight_ entry: the transfer's route, peer and FIFO step (route nullptr: the data loop, or with
  // peer kToSwitch / kFromSwitch an NVLS transfer between this rank's GPU and its NVSwitch).
  static constexpr int kToSwitch = -2, kFromSwitch = -3;
  struct InflightXfer {
    const void* route = nullptr;
    int peer = -1;
    uint64_t step = 0;
  };
  std::vector<InflightXfer> inflight_xfer_;
  double step_latency_us_ = 0;                // the longest route latency of the step's transfers (jitter)
  uint64_t jitter_n_ = 0;                     // transfers of this executor so far (jitter's counter)
  void link_down(const InflightXfer& x);
  bool sent_ = false;                         // the current step put data on a wire
  bool switch_step_ = false;                  // ... through the NVSwitch (nvls_switch): pays nvls_step_us
  std::vector<std::pair<ConnCounter*, uint64_t>> deferred_;
  SimFailure failure_ = SimFailure::kNone;
  WaitSite site_{};
  size_t mismatch_expected_ = 0;
  int32_t mismatch_got_ = 0;
  uint64_t transfers_ = 0;
  std::vector<Count>* counting_ = nullptr;  // by peer rank
  std::vector<ReplayOp>* rec_ = nullptr;    // recording pass: the actions
  bool rec_inflight_ = false;               // recording: the step started a data loop or transfer
  void record(ReplayKind k, uint32_t idx, uint64_t val) { rec_->push_back(ReplayOp{k, idx, val}); }
  // Counting: the connection in per_peer slot `slot` carries `bytes` more, in one more slice.
  void tally(int slot, double bytes) {
    Count& k = (*counting_)[slot];
    k.bytes += bytes;
    ++k.slices;
  }
  // Counting without recording: the step's data loop is only counted, never run (true: nothing more to do).
  bool counted_only() {
    if (rec_ != nullptr) return false;
    pending_bytes_ = 0;
    last_dst_ = nullptr;
    return true;
  }
};

// Wire bytes of `payload` bytes in protocol `proto` (NCCL's formats: LL 16-byte lines of 8 payload
// bytes, LL128 128-byte lines of 120, Simple the payload itself).
inline double wire_bytes(int proto, size_t payload) {
  if (proto == kProtoLL) return static_cast<double>((payload + 7) / 8 * 16);
  if (proto == kProtoLL128) return static_cast<double>((payload + 119) / 120 * 128);
  return static_cast<double>(payload);
}

}  // namespace sim
}  // namespace cclab
