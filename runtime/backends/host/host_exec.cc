#include "backends/host/host_exec.h"

#include <sched.h>
#include <time.h>

#include <cstdio>
#include <string>

#include "base/log.h"
#include "kernels/describe.h"

namespace cclab {

std::string HostExec::failure_message() const {
  char buf[512];
  const WaitSite& s = failed_site_;
  switch (failure_) {
    case WaitFailure::kNone:
      return "";
    case WaitFailure::kAborted:
      return "aborted while " + describe_wait(s);
    case WaitFailure::kTimedOut:
      snprintf(buf, sizeof buf, "timed out after CCLAB_TIMEOUT=%.0f s: ", cfg_.timeout_us / 1e6);
      return buf + describe_wait(s);
    case WaitFailure::kWatch:
      return watch_why_;
    case WaitFailure::kPeerFailed:
      snprintf(buf, sizeof buf,
               "rank %d channel %d: rank %d failed in this operation and stopped it (its own error says why: a count or "
               "datatype mismatch, a time-out, an abort) while this rank was ",
               s.rank, s.channel, s.peer);
      return buf + describe_wait(s);
    case WaitFailure::kSizeMismatch:
      snprintf(buf, sizeof buf,
               "rank %d channel %d expected %zu bytes from rank %d at step %llu but received %d: do all ranks call "
               "the operation with the same count and datatype?",
               s.rank, s.channel, mismatch_expected_, s.peer, static_cast<unsigned long long>(s.step), mismatch_got_);
      return buf;
  }
  return "";
}

void HostExec::observe(const StepRecord& r) const {
  if (cfg_.record != nullptr) cfg_.record(r, cfg_.record_data);
  if (cfg_.observer == nullptr) return;
  cclabStepEvent_t e;
  e.rank = r.rank;
  e.channel = r.channel;
  e.sendPeer = r.send_peer;
  e.recvPeer = r.recv_peer;
  e.step = r.step;
  e.prim = static_cast<cclabPrim_t>(r.prim);
  e.coll = static_cast<cclabColl_t>(r.coll);
  e.opCount = r.op_count;
  e.bytes = r.bytes;
  e.beginUs = r.begin_us;
  e.endUs = r.end_us;
  e.offset = r.offset;
  e.dataUs = r.data_us;
  cfg_.observer(&e, cfg_.observer_data);
}

// The checks every slow wait makes between polls: abort, CCLAB_TIMEOUT, the watcher (a dead peer, the
// doctor's verdict) and one stuck-wait warning (its detail built only when it is printed). False, with
// the failure recorded, when the wait must end.
template <typename Detail>
bool HostExec::check_wait(double start, const WaitSite& site, WaitState* st, Detail detail) {
  if (cfg_.abort_flag && cfg_.abort_flag->load(std::memory_order_acquire)) {
    failure_ = WaitFailure::kAborted;
    failed_site_ = site;
    return false;
  }
  const double waited = cclab::now_us() - start;
  if (cfg_.timeout_us > 0 && waited > cfg_.timeout_us) {
    failure_ = WaitFailure::kTimedOut;
    failed_site_ = site;
    return false;
  }
  if (!st->warned && cfg_.stuck_warn_us > 0 && waited > cfg_.stuck_warn_us) {
    st->warned = true;
    log_alert(__FILE__, __LINE__, "%s for %.0f s (%s)", describe_wait(site).c_str(), waited / 1e6, detail().c_str());
  }
  if (cfg_.watch.ctx != nullptr && waited >= kWatchBeginUs) {
    if (!st->watched) {
      st->watched = true;
      st->next_poll_us = kWatchPollUs;
      if (cfg_.watch.begin != nullptr) cfg_.watch.begin(cfg_.watch.ctx, site);
    }
    if (cfg_.watch.poll != nullptr && waited >= st->next_poll_us) {
      st->next_poll_us = waited + kWatchPollUs;
      std::string why;
      if (const int code = cfg_.watch.poll(cfg_.watch.ctx, site, waited, &why)) {
        failure_ = WaitFailure::kWatch;
        failed_site_ = site;
        watch_code_ = code;
        watch_why_ = why;
        return false;
      }
    }
  }
  return true;
}

// 1: the counter reached target; -1: it was poisoned (the failure recorded); 0: not yet.
int HostExec::reached(const ConnCounter* c, uint64_t target, const WaitSite& site) {
  const uint64_t v = counter_load(c);
  if ((v & kCounterPoison) != 0) {
    failure_ = WaitFailure::kPeerFailed;
    failed_site_ = site;
    return -1;
  }
  return v >= target ? 1 : 0;
}

bool HostExec::wait_slow(ConnCounter* c, uint64_t target, const WaitSite& site) {
  const double start = cclab::now_us();
  // Phase 1: spin for spin_us (the default while every rank of the host has a core of its own),
  // yielding every kSpinPolls polls: the scheduler sometimes puts two ranks on one core and keeps them
  // there (a wake-up too places the wakee beside its waker), and a peer sharing this core then runs at
  // the yield instead of after the spin.
  for (int i = 1; cfg_.spin_us > 0; ++i) {
    if (const int d = reached(c, target, site)) return d > 0;
    if (i % kSpinPolls == 0) {
      if (cfg_.abort_flag && cfg_.abort_flag->load(std::memory_order_relaxed)) break;
      if (cclab::now_us() - start > cfg_.spin_us) break;
      sched_yield();
    } else {
      cpu_relax();
    }
  }
  // Phase 2: hand the core over at every check for yield_us. With more ranks than cores the peer
  // we wait for is usually runnable on this very core, and a yield lets it run at once, where a
  // futex sleep would add a wake-up (tens of microseconds) per FIFO step.
  while (cclab::now_us() - start < cfg_.spin_us + cfg_.yield_us) {
    if (const int d = reached(c, target, site)) return d > 0;
    if (cfg_.abort_flag && cfg_.abort_flag->load(std::memory_order_relaxed)) break;
    sched_yield();
  }
  // Phase 3: sleep on the counter's futex, waking at least every 10 ms to check abort and time.
  WaitState st;
  for (;;) {
    if (const int d = reached(c, target, site)) {
      unwatch(site, &st);
      return d > 0;
    }
    if (!check_wait(start, site, &st, [&] {
          return "counter at " + std::to_string(static_cast<unsigned long long>(counter_load(c)));
        })) {
      unwatch(site, &st);
      return false;
    }
    counter_sleep(c, target, 10000);
  }
}

bool HostExec::poll_backoff(uint64_t iter, double start, const WaitSite& site) {
  // Same phases as wait_slow, but the last one naps instead of sleeping on a futex: a flag in a data
  // line has no futex word and no waker.
  if ((iter & 63) != 63) {
    if (iter < 4096) {
      cpu_relax();
      return true;
    }
  }
  if (!check_wait(start, site, &flag_state_, [] { return std::string("polling line flags"); })) return false;
  const double waited = cclab::now_us() - start;
  if (waited < cfg_.spin_us) {
    cpu_relax();
  } else if (waited < cfg_.spin_us + cfg_.yield_us) {
    sched_yield();
  } else {
    const struct timespec ts = {0, 50000};  // 50 us: short next to a step, long enough to free the core
    nanosleep(&ts, nullptr);
  }
  return true;
}

}  // namespace cclab
