// runtime/base/sync.h - waiting on a FIFO counter on a CPU: spin briefly, then sleep on a futex so
// that more ranks than cores still make progress. Works between threads and between processes
// (the counter may live in POSIX shared memory: the futex is not process-private).
#pragma once

#include <cstdint>

#include "kernels/fifo.h"

namespace cclab {

// A counter whose value has this bit was poisoned (core/comm.h, poison_connections): the rank at the other
// end failed in the collective and stopped; a wait on it ends with that failure instead of waiting on.
constexpr uint64_t kCounterPoison = uint64_t{1} << 62;

// Acquire load / release store of a counter value shared with another thread or process.
inline uint64_t counter_load(const ConnCounter* c) { return __atomic_load_n(&c->value, __ATOMIC_ACQUIRE); }

// Publishes `value` and wakes any sleeper.
void counter_post(ConnCounter* c, uint64_t value);

// Sleeps until c->value >= target or `timeout_us` passes (returns on either; caller re-checks).
void counter_sleep(ConnCounter* c, uint64_t target, int64_t timeout_us);

// Wakes whoever sleeps on the counter without changing its value (a sleeper re-checks why it waits).
void counter_wake(ConnCounter* c);

// Monotonic clock in microseconds since the process started.
double now_us();

// A small reusable flag between threads of one process: one producer sets, waiters sleep on it.
class Event32 {
 public:
  void set();
  void reset() { __atomic_store_n(&word_, 0u, __ATOMIC_RELEASE); }
  bool is_set() const { return __atomic_load_n(&word_, __ATOMIC_ACQUIRE) != 0; }
  // Spins for up to `spin_us`, then sleeps until set.
  void wait(int64_t spin_us);

 private:
  uint32_t word_ = 0;
};

}  // namespace cclab
