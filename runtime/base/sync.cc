#include "base/sync.h"

#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <climits>

namespace cclab {
namespace {

long futex(uint32_t* addr, int op, uint32_t val, const struct timespec* ts) {
  return syscall(SYS_futex, addr, op, val, ts, nullptr, 0);
}

const auto kStart = std::chrono::steady_clock::now();

}  // namespace

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - kStart).count();
}

void counter_post(ConnCounter* c, uint64_t value) {
  __atomic_store_n(&c->value, value, __ATOMIC_RELEASE);
  // seq changes before waiters is read (both seq_cst): a sleeper that registered after this read
  // sees the new seq and does not sleep; one that registered before is woken.
  __atomic_add_fetch(&c->seq, 1u, __ATOMIC_SEQ_CST);
  if (__atomic_load_n(&c->waiters, __ATOMIC_SEQ_CST) != 0) futex(&c->seq, FUTEX_WAKE, INT_MAX, nullptr);
}

void counter_wake(ConnCounter* c) {
  __atomic_add_fetch(&c->seq, 1u, __ATOMIC_SEQ_CST);
  futex(&c->seq, FUTEX_WAKE, INT_MAX, nullptr);
}

void counter_sleep(ConnCounter* c, uint64_t target, int64_t timeout_us) {
  const uint32_t seq = __atomic_load_n(&c->seq, __ATOMIC_SEQ_CST);
  __atomic_add_fetch(&c->waiters, 1u, __ATOMIC_SEQ_CST);
  if (counter_load(c) < target) {
    struct timespec ts;
    ts.tv_sec = timeout_us / 1000000;
    ts.tv_nsec = (timeout_us % 1000000) * 1000;
    futex(&c->seq, FUTEX_WAIT, seq, &ts);
  }
  __atomic_sub_fetch(&c->waiters, 1u, __ATOMIC_SEQ_CST);
}

void Event32::set() {
  __atomic_store_n(&word_, 1u, __ATOMIC_SEQ_CST);
  futex(&word_, FUTEX_WAKE_PRIVATE, INT_MAX, nullptr);
}

void Event32::wait(int64_t spin_us) {
  if (is_set()) return;
  const double deadline = now_us() + static_cast<double>(spin_us);
  for (int i = 0; !is_set(); ++i) {
    if ((i & 63) == 63) {
      if (now_us() > deadline) break;
      sched_yield();
    } else {
      __builtin_ia32_pause();
    }
  }
  while (!is_set()) {
    struct timespec ts {0, 100 * 1000 * 1000};
    futex(&word_, FUTEX_WAIT_PRIVATE, 0u, &ts);
  }
}

}  // namespace cclab
