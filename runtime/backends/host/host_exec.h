// runtime/backends/host/host_exec.h - the host executor: what the kernels/ primitives' waits, posts and data
// loops mean when CPU threads (or processes) play the GPUs.
//
// Memory ordering: counters are read with acquire and written with release (sync.h), which on a CPU
// orders the slot's data stores before the counter store as the GPU's fences do. Waits spin for a
// few microseconds, then sleep on a futex, so 8 ranks on 2 cores still progress. Every wait polls
// the communicator's abort flag and, with CCLAB_TIMEOUT set, gives up after that many seconds;
// a wait longer than CCLAB_STUCK_WARN seconds warns naming the rank, channel, peer and step.
#pragma once

#include <sched.h>

#include <atomic>
#include <cstdint>
#include <string>

#include "cclab/cclab.h"
#include "kernels/describe.h"
#include "kernels/nvls.h"
#include "kernels/primitives.h"
#include "kernels/reduce_copy.h"
#include "base/sync.h"

namespace cclab {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Polls between the spin phase's yields (host_exec.cc, wait_slow; wait_flag).
constexpr int kSpinPolls = 64;

// Why a wait ended without its condition.
// kPeerFailed: the counter was poisoned - the peer failed in this collective and stopped it.
// kWatch: the wait's watcher ended it (a dead peer process, a verdict of the doctor: core/doctor.h).
enum class WaitFailure : int { kNone = 0, kAborted = 1, kTimedOut = 2, kSizeMismatch = 3, kPeerFailed = 4, kWatch = 5 };

// Who watches a wait that went to sleep (core/doctor.h): told when it starts sleeping and when it ends,
// and polled about every kWatchPollUs while it sleeps. A poll that returns non-zero (an ncclResult_t)
// ends the wait with that code and *why. Never called on the fast path.
struct WaitWatch {
  void* ctx = nullptr;
  void (*begin)(void* ctx, const WaitSite& site) = nullptr;
  int (*poll)(void* ctx, const WaitSite& site, double waited_us, std::string* why) = nullptr;
  void (*end)(void* ctx, const WaitSite& site) = nullptr;
};
constexpr double kWatchPollUs = 250e3;
constexpr double kWatchBeginUs = 1e3;  // a wait is shown on the board once it has lasted this long

struct HostExecConfig {
  const std::atomic<int>* abort_flag = nullptr;  // communicator's abort flag
  double spin_us = 20;                           // spin before yielding, microseconds (0: yield at once)
  double yield_us = 2000;                        // then yield the core before sleeping, microseconds
  double timeout_us = 0;                         // 0: wait forever (abortable)
  double stuck_warn_us = 30e6;                   // warn once after this long
  cclabObserverFn observer = nullptr;
  void* observer_data = nullptr;
  void (*record)(const StepRecord&, void*) = nullptr;  // CCLAB_TRACE / CCLAB_LIVE (recorder.h)
  void* record_data = nullptr;
  WaitWatch watch;  // the communicator's doctor (none: ctx == nullptr)
};

class HostExec {
 public:
  explicit HostExec(const HostExecConfig& cfg) : cfg_(cfg) {}

  bool wait_ge(const ConnCounter* c, uint64_t target, const WaitSite& site) {
    const uint64_t v = counter_load(c);
    if (v >= target && (v & kCounterPoison) == 0) return true;
    return wait_slow(const_cast<ConnCounter*>(c), target, site);
  }
  void post(ConnCounter* c, uint64_t value) { counter_post(c, value); }

  // For the LL and LL128 primitives (kernels/primitives_ll.h): the flags live in the data lines.
  // Polls ready() (which loads the line) for CCLAB_SPIN_US, as a GPU would for the whole wait; then
  // waits on the step's doorbell `bell` >= `target` like any counter (yield, then futex sleep,
  // checking abort and CCLAB_TIMEOUT), since polling lines with more ranks than cores starves the
  // sender. The sender rings the bell (release) after the step's last line, so once it is rung
  // every flag of the step is there; the flags are still what says the data is valid.
  template <typename Ready>
  bool wait_flag(const Ready& ready, const WaitSite& site, const ConnCounter* bell, uint64_t target) {
    if (ready()) return true;
    const double start = cclab::now_us();
    // As wait_slow's spin: the clock, the abort flag and a yield every kSpinPolls polls (a peer the
    // scheduler put on this core runs at the yield).
    for (uint64_t i = 1; cfg_.spin_us > 0; ++i) {
      if (ready()) return true;
      if (i % kSpinPolls == 0) {
        if (cclab::now_us() - start >= cfg_.spin_us ||
            (cfg_.abort_flag && cfg_.abort_flag->load(std::memory_order_relaxed)))
          break;
        sched_yield();
      } else {
        cpu_relax();
      }
    }
    if (!wait_ge(bell, target, site)) return false;
    flag_state_ = WaitState{};
    for (uint64_t i = 0;; ++i) {
      if (ready()) {
        unwatch(site, &flag_state_);
        return true;
      }
      if (!poll_backoff(i, start, site)) {
        unwatch(site, &flag_state_);
        return false;
      }
    }
  }
  void doorbell(ConnCounter* bell, uint64_t value) { counter_post(bell, value); }
  // 8-byte atomic loads and stores of line words. An LL {data, flag} half is one such word, so a
  // relaxed load that sees the flag also sees the data stored with it; LL128 orders its 15 data words
  // before the flag word by storing the flag with release and loading it with acquire.
  uint64_t load_u64(const uint64_t* p) const { return __atomic_load_n(p, __ATOMIC_RELAXED); }
  uint64_t load_u64_acquire(const uint64_t* p) const { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
  void store_u64(uint64_t* p, uint64_t v) const { __atomic_store_n(p, v, __ATOMIC_RELAXED); }
  void store_u64_release(uint64_t* p, uint64_t v) const { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

  // One lane does the whole loop on the host, so a lane's loop is the loop.
  template <typename T>
  void reduce_copy_lane(const RedOp<T>& op, T* d0, T* d1, const T* a, const T* b, size_t n, bool pre, bool post) {
    reduce_copy(op, d0, d1, a, b, n, pre, post);
  }
  int lane() const { return 0; }
  int lanes() const { return 1; }
  template <typename T>
  void reduce_copy(const RedOp<T>& op, T* d0, T* d1, const T* a, const T* b, size_t n, bool pre, bool post) {
    cclab::reduce_copy(op, d0, d1, a, b, n, pre, post);
  }
  void wire(const ConnInfo&, size_t) {}
  // NVLS's multimem operations (kernels/nvls.h), emulated over every rank's copy of the NVLS memory,
  // which this process maps: real bytes, reduced in rank order.
  template <typename T>
  void mc_ld_reduce(const RedOp<T>& op, T* dst, const NvlsConn& c, size_t off, size_t n, bool post) {
    nvls_emulate_ld_reduce(*this, op, dst, c, off, n, post);
  }
  template <typename T>
  void mc_st(const RedOp<T>& op, const NvlsConn& c, size_t off, const T* src, size_t n) {
    nvls_emulate_st(*this, op, c, off, src, n);
  }
  template <typename T>
  void mc_ld_reduce_st(const RedOp<T>& op, const NvlsConn& c, size_t src_off, size_t dst_off, size_t n, bool post) {
    nvls_emulate_ld_reduce_st(*this, op, c, src_off, dst_off, n, post);
  }
  bool mc_wait_ge(const NvlsConn& c, size_t counter_off, uint64_t target, const WaitSite& site) {
    return nvls_emulate_wait_ge(*this, c, counter_off, target, site);
  }
  void mc_post(const NvlsConn& c, size_t counter_off, uint64_t value) { nvls_emulate_post(*this, c, counter_off, value); }
  void mc_sync() {}  // one lane
  bool size_mismatch(const WaitSite& site, size_t expected, int32_t got) {
    failure_ = WaitFailure::kSizeMismatch;
    failed_site_ = site;
    mismatch_expected_ = expected;
    mismatch_got_ = got;
    return true;
  }
  // Describes why the executor stopped ("" when it did not).
  std::string failure_message() const;

  bool observing() const { return cfg_.observer != nullptr || cfg_.record != nullptr; }
  bool moves_data() const { return true; }
  double now_us() const { return cclab::now_us(); }
  void observe(const StepRecord& r) const;

  WaitFailure failure() const { return failure_; }
  // kWatch: the ncclResult_t the watcher ended the wait with.
  int watch_code() const { return watch_code_; }
  // The wait that failed (valid when failure() != kNone).
  const WaitSite& failed_site() const { return failed_site_; }

 private:
  bool wait_slow(ConnCounter* c, uint64_t target, const WaitSite& site);
  int reached(const ConnCounter* c, uint64_t target, const WaitSite& site);
  // One round of wait_flag's back-off after `iter` failed polls since `start`; false (failure recorded)
  // once aborted or timed out.
  bool poll_backoff(uint64_t iter, double start, const WaitSite& site);
  // One sleeping wait's state: warned once, watched (begun), when the watcher is polled next.
  struct WaitState {
    bool warned = false;
    bool watched = false;
    double next_poll_us = 0;
  };
  template <typename Detail>
  bool check_wait(double start, const WaitSite& site, WaitState* st, Detail detail);
  void unwatch(const WaitSite& site, WaitState* st) {
    if (st->watched && cfg_.watch.end != nullptr) cfg_.watch.end(cfg_.watch.ctx, site);
    st->watched = false;
  }

  HostExecConfig cfg_;
  WaitFailure failure_ = WaitFailure::kNone;
  WaitSite failed_site_{};
  size_t mismatch_expected_ = 0;
  int32_t mismatch_got_ = 0;
  int watch_code_ = 0;
  std::string watch_why_;
  WaitState flag_state_;  // the flag wait poll_backoff is in
};


}  // namespace cclab
