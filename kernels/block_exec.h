// kernels/block_exec.h - the executor of one thread block: what the primitives' waits, posts and data
// loops mean when a block of lanes (a CUDA thread block; in tests, host threads playing one) runs one
// rank's channel. The CUDA backend's kernels (kernels/cuda/) are this executor over DeviceBlock; the
// host tests run the very same code over an emulated block (tests/runtime/block_exec_test.cc), so the
// only device-only lines are the Block policy's few intrinsics.
//
// Every lane runs the schedule and the primitives in lockstep (the same offsets, counts and calls);
// the executor decides who does what:
//   wait_ge       lane 0 polls the counter (volatile), then a block barrier that also votes on abort,
//                 so every lane returns the same answer (the primitives then return together). Lane 0
//                 remembers the last value it saw of each counter (NCCL's connStepCache): counters only
//                 grow, so a wait whose target an earlier poll already reached loads nothing - for a
//                 sender that is a load from the peer's memory saved - and needs no fence (that poll's
//                 acquire already ordered everything up to the value it saw);
//   post          a block barrier (every lane's data stores are done), then lane 0 fences (system
//                 scope, so a peer GPU or the host sees the data first) and stores the counter. Both
//                 counters: a receiver's head post also releases, since a tree rank writes the slot it
//                 consumed (primitives.h) before handing it back;
//   reduce_copy   each lane does its share (reduce_copy_lanes: 16-byte packs, lane p % lanes);
//   LL            each lane polls and writes its own lines (primitives_ll.h spreads the groups over
//                 lanes()); flags are read with volatile 8-byte loads;
//   LL128         NCCL's scheme: 8 consecutive lanes (a line group) move a 128-byte line together, each
//                 one 16-byte part with one 16-byte volatile store or load; the group's last lane holds
//                 the flag word. Receiving, the group repeats its loads until a vote over the group says
//                 the flag lane saw the step's flag (group_wait), then every lane loads its part again.
//                 A block of fewer than 8 lanes moves whole lines, one per lane, as LL does.
//   observe       lane 0 appends the step to this block's record buffer (CCLAB_TRACE), stamped with
//                 the Block's clock (%globaltimer on a GPU).
// A lane whose line poll sees the abort flag cannot leave alone (its block would wait for it at the
// next barrier), so it marks itself aborted and carries on; the next barrier's vote stops the block.
// A wait that spins for long records where it is (rank, channel, peer, step, data or credits) in the
// block's BlockStatus, which the host reads to name what a stuck kernel waits for.
//
// Block policy (DeviceBlock in kernels/cuda/device_block.h; the test's emulated block):
//   int tid(), nthreads()                 lane index and count
//   void sync(); bool sync_or(bool)       block barrier; barrier that ORs a vote over the lanes
//   uint64_t load(const uint64_t*)        volatile (relaxed, single-copy atomic) 8-byte load
//   void store(uint64_t*, uint64_t)       volatile 8-byte store
//   void fence()                          system-scope fence (orders memory for peers and the host)
//   bool abort_requested()                the communicator's abort flag is set
//   bool group_any(bool)                  OR of a vote over this lane's line group (lanes 8g .. 8g+7);
//                                         every lane of the group calls it
//   void store_part(uint64_t* p, uint64_t lo, uint64_t hi, bool flag_part)
//                                         this lane's 16-byte part of a line its group writes; every lane
//                                         of the group calls it for the same line. Contract: a peer that
//                                         sees the flag part's `hi` (the flag) with load_part and then
//                                         votes with group_any sees every part of the line in its
//                                         group's next load_part calls. (GPU: one st.volatile.v2.u64 per
//                                         lane, a warp writing whole 128-byte lines, which NVLink
//                                         delivers whole; host threads: a group barrier, then the flag
//                                         part's release store.)
//   void load_part(const uint64_t* p, uint64_t* lo, uint64_t* hi, bool flag_part)
//                                         16-byte volatile load of a part (the flag part: acquire)
//   void pause()                          back off inside a spin loop
//   double now_us()                       clock for step records
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "kernels/fifo.h"
#include "kernels/nvls.h"
#include "kernels/platform.h"
#include "kernels/primitives.h"
#include "kernels/proto_ll.h"
#include "kernels/reduce_copy.h"
#include "kernels/step_record.h"

// The block's data loop is one out-of-line function per type on a GPU unless CCLAB_INLINE_DATA_LOOP=1
// (CMake: CCLAB_CUDA_INLINE_DATA_LOOP=ON): then it is inlined into every caller, which removes most of the
// kernel's spills for twice the code (docs/gpu.md, "Known costs": an A/B only a GPU can decide).
#if defined(CCLAB_INLINE_DATA_LOOP) && CCLAB_INLINE_DATA_LOOP
#define CCLAB_DATA_LOOP_NOINLINE
#else
#define CCLAB_DATA_LOOP_NOINLINE CCLAB_DEVICE_NOINLINE
#endif

namespace cclab {

// NVLS's multimem data operations on a Block (kernels/nvls.h): each returns false when the block has
// none for this type and op, and the executor then emulates them over the unicast copies. A GPU block
// of sm90+ has them (kernels/cuda/device_block.h: multimem.ld_reduce / multimem.st through the
// multicast address); a host thread playing a block has not.
template <class B, typename T>
CCLAB_HD bool block_mc_ld_reduce(B&, const RedOp<T>&, T*, const char*, size_t, bool) { return false; }
template <class B, typename T>
CCLAB_HD bool block_mc_ld_reduce_st(B&, const RedOp<T>&, const char*, char*, size_t, bool) { return false; }
template <class B, typename T>
CCLAB_HD bool block_mc_st(B&, char*, const T*, size_t) { return false; }

// Where one block is, for the host: written by lane 0 with volatile stores into memory the host can
// read while the kernel runs (mapped pinned memory on the CUDA backend).
struct BlockStatus {
  int32_t state;       // BlockState
  int32_t rank;
  int32_t channel;
  int32_t peer;
  uint64_t step;       // the step waited for
  int32_t for_data;    // 1: waiting for data from peer; 0: for credits from peer
  int32_t prim;        // PrimKind
  int64_t expected;    // size mismatch: bytes this rank expected
  int64_t got;         // and the bytes the peer sent
  uint64_t records;    // step records written (may exceed the buffer: the excess was dropped)
};

enum BlockState : int32_t {
  kBlockRunning = 0,
  kBlockWaiting = 1,       // spun long in a wait: the site fields say where
  kBlockDone = 2,
  kBlockAborted = 3,       // the abort flag stopped it
  kBlockSizeMismatch = 4,  // the peer sent a slice of another size
  kBlockBadPeer = 5,       // a custom schedule called a peer it did not declare (site: rank, channel, peer;
                           // for_data: a receive)
};

// Spins before a wait reports itself in BlockStatus (about a millisecond on a GPU).
constexpr uint64_t kBlockStuckSpins = uint64_t(1) << 20;

struct BlockExecConfig {
  BlockStatus* status = nullptr;  // may be null
  StepRecord* records = nullptr;  // CCLAB_TRACE: room for `record_capacity` steps, or null
  uint64_t record_capacity = 0;
  uint64_t stuck_spins = kBlockStuckSpins;  // spins before a wait reports where it is
};

template <class Block>
class BlockExec {
 public:
  CCLAB_HD BlockExec(Block& block, const BlockExecConfig& cfg) : b_(block), cfg_(cfg) {}

  // ---- Simple: counters ----------------------------------------------------------------------------
  CCLAB_HD bool wait_ge(const ConnCounter* c, uint64_t target, const WaitSite& site) {
    bool ok = true;
    if (b_.tid() == 0) ok = spin_ge(c, target, site);
    const bool failed = b_.sync_or(!ok || lane_aborted_);
    if (failed) mark(kBlockAborted);
    return !failed;
  }
  CCLAB_HD void post(ConnCounter* c, uint64_t value) {
    b_.sync();
    if (b_.tid() == 0) {
      b_.fence();
      b_.store(&c->value, value);
    }
  }
  CCLAB_HD bool size_mismatch(const WaitSite& site, size_t expected, int32_t got) {
    if (b_.tid() == 0 && cfg_.status != nullptr) {
      write_site(site);
      cfg_.status->expected = static_cast<int64_t>(expected);
      cfg_.status->got = got;
      set_state(kBlockSizeMismatch);
    }
    return true;  // every lane read the same size, so every lane stops here
  }

  // A custom schedule called a peer it did not declare (kernels/custom_block.h). Every lane calls it (the
  // schedule runs in lockstep) and stops; lane 0 says where in the status, which finish() keeps.
  CCLAB_HD void bad_peer(const WaitSite& site) {
    if (b_.tid() == 0 && cfg_.status != nullptr) {
      write_site(site);
      set_state(kBlockBadPeer);
    }
    state_ = kBlockBadPeer;
    lane_aborted_ = true;
  }

  // ---- LL / LL128: lines ---------------------------------------------------------------------------
  template <typename Ready>
  CCLAB_HD bool wait_flag(const Ready& ready, const WaitSite& site, const ConnCounter*, uint64_t) {
    for (uint64_t spins = 1; !ready(); ++spins) {
      if ((spins & 1023) == 0) {
        if (lane_aborted_ || b_.abort_requested()) {
          if (b_.tid() == 0 && cfg_.status != nullptr) write_site(site);
          lane_aborted_ = true;  // see the header: carry on to the next barrier's vote
          return true;
        }
        if (spins >= cfg_.stuck_spins && state_ != kBlockWaiting && b_.tid() == 0 && cfg_.status != nullptr) {
          write_site(site);
          set_state(kBlockWaiting);
        }
      }
      b_.pause();
    }
    return true;
  }
  CCLAB_HD void doorbell(ConnCounter*, uint64_t) {}  // the receiver polls the line flags
  CCLAB_HD uint64_t load_u64(const uint64_t* p) { return b_.load(p); }
  CCLAB_HD uint64_t load_u64_acquire(const uint64_t* p) {
    const uint64_t v = b_.load(p);
    b_.fence();
    return v;
  }
  CCLAB_HD void store_u64(uint64_t* p, uint64_t v) { b_.store(p, v); }
  CCLAB_HD void store_u64_release(uint64_t* p, uint64_t v) {
    b_.fence();
    b_.store(p, v);
  }

  // ---- LL128 line groups (see the header and kernels/proto_ll.h) ------------------------------------
  CCLAB_HD int line_groups() const { return b_.nthreads() / kLL128Parts; }
  // Every lane of a group loops the same number of times (the vote is the group's), so the abort checks
  // and the stuck report happen at the same spin on each; a lane that sees the abort stops waiting (its
  // vote is false) and the block stops at its next barrier, as in wait_flag.
  template <typename Poll>
  CCLAB_HD bool group_wait(const Poll& poll, const WaitSite& site) {
    for (uint64_t spins = 1;; ++spins) {
      const bool waiting = poll() && !lane_aborted_;
      if (!b_.group_any(waiting)) return true;
      if ((spins & 1023) == 0) {
        if (b_.abort_requested()) {
          if (b_.tid() == 0 && cfg_.status != nullptr) write_site(site);
          lane_aborted_ = true;
        } else if (spins >= cfg_.stuck_spins && state_ != kBlockWaiting && b_.tid() == 0 && cfg_.status != nullptr) {
          write_site(site);
          set_state(kBlockWaiting);
        }
      }
      b_.pause();
    }
  }
  CCLAB_HD void store_line_part(uint64_t* p, uint64_t lo, uint64_t hi, bool flag_part) {
    b_.store_part(p, lo, hi, flag_part);
  }
  CCLAB_HD void load_line_part(const uint64_t* p, uint64_t* lo, uint64_t* hi, bool flag_part) {
    b_.load_part(p, lo, hi, flag_part);
  }

  // ---- data loops ----------------------------------------------------------------------------------
  template <typename T>
  CCLAB_HD CCLAB_DATA_LOOP_NOINLINE void reduce_copy(const RedOp<T>& op, T* d0, T* d1, const T* a, const T* b, size_t n, bool pre, bool post) {
    reduce_copy_lanes(op, d0, d1, a, b, n, pre, post, b_.tid(), b_.nthreads());
  }
  // A lane's own few elements (a line protocol's line or part): the serial loop, as on the host; the
  // block's unrolled loop would only add code there.
  template <typename T>
  CCLAB_HD void reduce_copy_lane(const RedOp<T>& op, T* d0, T* d1, const T* a, const T* b, size_t n, bool pre,
                                 bool post) {
    cclab::reduce_copy(op, d0, d1, a, b, n, pre, post);
  }
  CCLAB_HD int lane() const { return b_.tid(); }
  CCLAB_HD int lanes() const { return b_.nthreads(); }
  CCLAB_HD void wire(const ConnInfo&, size_t) {}
  CCLAB_HD bool moves_data() const { return true; }

  // ---- NVLS (kernels/nvls.h) ------------------------------------------------------------------------
  // Through the multicast address with the Block's multimem instructions where it has them, else over
  // the unicast copies (every lane its share of the packs, as reduce_copy). The counters go through the
  // unicast copies: lane 0 waits on / stores each rank's.
  template <typename T>
  CCLAB_HD void mc_ld_reduce(const RedOp<T>& op, T* dst, const NvlsConn& c, size_t off, size_t n, bool post) {
    if (c.mc != nullptr && block_mc_ld_reduce(b_, op, dst, c.mc + off, n, post)) return;
    nvls_emulate_ld_reduce(*this, op, dst, c, off, n, post);
  }
  template <typename T>
  CCLAB_HD void mc_st(const RedOp<T>& op, const NvlsConn& c, size_t off, const T* src, size_t n) {
    if (c.mc != nullptr && block_mc_st(b_, c.mc + off, src, n)) return;
    nvls_emulate_st(*this, op, c, off, src, n);
  }
  template <typename T>
  CCLAB_HD void mc_ld_reduce_st(const RedOp<T>& op, const NvlsConn& c, size_t src_off, size_t dst_off, size_t n,
                                bool post) {
    if (c.mc != nullptr && block_mc_ld_reduce_st(b_, op, c.mc + src_off, c.mc + dst_off, n, post)) return;
    nvls_emulate_ld_reduce_st(*this, op, c, src_off, dst_off, n, post);
  }
  CCLAB_HD bool mc_wait_ge(const NvlsConn& c, size_t counter_off, uint64_t target, const WaitSite& site) {
    return nvls_emulate_wait_ge(*this, c, counter_off, target, site);
  }
  // The multimem loops spread elements over the lanes otherwise than reduce_copy's packs: a barrier
  // between a load-reduce into memory and the data loop that reads it (and that loop and a store of it).
  CCLAB_HD void mc_sync() { b_.sync(); }
  CCLAB_HD void mc_post(const NvlsConn& c, size_t counter_off, uint64_t value) {
    nvls_emulate_post(*this, c, counter_off, value);
  }

  // ---- the event stream ----------------------------------------------------------------------------
  CCLAB_HD bool observing() const { return cfg_.records != nullptr; }
  CCLAB_HD double now_us() { return b_.now_us(); }
  CCLAB_HD void observe(const StepRecord& r) {
    if (b_.tid() != 0 || cfg_.records == nullptr) return;
    if (nrecords_ < cfg_.record_capacity) cfg_.records[nrecords_] = r;
    ++nrecords_;
  }

  // Ends the block's work: a last vote (a lane may have seen the abort after the last barrier), the
  // final state and record count for the host. Returns true if the block finished without aborting.
  CCLAB_HD bool finish(bool schedule_ok) {
    const bool failed = b_.sync_or(!schedule_ok || lane_aborted_);
    if (b_.tid() == 0 && cfg_.status != nullptr) {
      cfg_.status->records = nrecords_;
      if (!failed) set_state(kBlockDone);
      else if (state_ != kBlockSizeMismatch && state_ != kBlockBadPeer) set_state(kBlockAborted);
      b_.fence();
    }
    return !failed;
  }

 private:
  CCLAB_HD bool spin_ge(const ConnCounter* c, uint64_t target, const WaitSite& site) {
    int slot = -1, free_slot = -1;  // this counter's entry in seen_; the first unused one
    for (int i = 0; i < kSeenCounters && slot < 0 && free_slot < 0; ++i) {
      if (seen_[i].counter == c) slot = i;
      else if (seen_[i].counter == nullptr) free_slot = i;
    }
    if (slot >= 0 && seen_[slot].value >= target) return true;
    if (slot < 0) slot = free_slot >= 0 ? free_slot : static_cast<int>(next_seen_++ % kSeenCounters);
    uint64_t v;
    for (uint64_t spins = 1; (v = b_.load(&c->value)) < target; ++spins) {
      if ((spins & 1023) == 0) {
        if (b_.abort_requested()) {
          if (cfg_.status != nullptr) write_site(site);  // where it was when the abort came
          return false;
        }
        if (spins >= cfg_.stuck_spins && state_ != kBlockWaiting && cfg_.status != nullptr) {
          write_site(site);
          set_state(kBlockWaiting);
        }
      }
      b_.pause();
    }
    b_.fence();  // acquire: the slot's data (or the freed slot) is read after the counter
    seen_[slot] = SeenCounter{c, v};
    if (state_ == kBlockWaiting) set_state(kBlockRunning);
    return true;
  }
  CCLAB_HD void write_site(const WaitSite& s) {
    BlockStatus* st = cfg_.status;
    st->rank = s.rank;
    st->channel = s.channel;
    st->peer = s.peer;
    st->step = s.step;
    st->for_data = s.for_data ? 1 : 0;
    st->prim = static_cast<int32_t>(s.prim);
  }
  CCLAB_HD void set_state(int32_t s) {
    state_ = s;
    if (cfg_.status == nullptr) return;
#ifdef __CUDA_ARCH__
    *reinterpret_cast<volatile int32_t*>(&cfg_.status->state) = s;  // the host polls mapped memory
#else
    // Host-emulated blocks: an atomic store (a volatile one is a data race in C++), release so that a
    // watcher that sees the state also sees the site written before it.
    __atomic_store_n(&cfg_.status->state, s, __ATOMIC_RELEASE);
#endif
  }
  CCLAB_HD void mark(int32_t s) {
    if (b_.tid() == 0 && state_ != kBlockSizeMismatch && state_ != kBlockBadPeer) set_state(s);
  }

  // Lane 0's last value seen per counter (see wait_ge): a block polls at most one counter per
  // connection, kBlockConns of them at most (a tree rank: 2 parent and 6 child connections).
  static constexpr int kSeenCounters = 8;
  struct SeenCounter {
    const ConnCounter* counter;
    uint64_t value;
  };
  SeenCounter seen_[kSeenCounters] = {};
  uint32_t next_seen_ = 0;  // replacement order once all entries are taken
  Block& b_;
  BlockExecConfig cfg_;
  bool lane_aborted_ = false;
  int32_t state_ = kBlockRunning;
  uint64_t nrecords_ = 0;
};

}  // namespace cclab
