// Shared helpers for runtime tests: communicators of N ranks in this process, typed buffers.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cclab/cclab.h"

namespace cclab_test {

#define NCCL_OK(call)                                                                             \
  do {                                                                                            \
    ncclResult_t _r = (call);                                                                     \
    ASSERT_EQ(_r, ncclSuccess) << #call << ": " << ncclGetErrorString(_r) << " / " << ncclGetLastError(nullptr); \
  } while (0)

// N communicators in this process (one per simulated GPU), each limited to `nchannels` channels
// through ncclConfig_t's minCTAs/maxCTAs.
struct Comms {
  std::vector<ncclComm_t> comms;
  Comms(int n, int nchannels) : comms(n, nullptr) {
    ncclUniqueId id;
    EXPECT_EQ(ncclGetUniqueId(&id), ncclSuccess);
    std::vector<std::thread> threads;
    std::vector<ncclResult_t> res(n);
    for (int r = 0; r < n; ++r)
      threads.emplace_back([&, r] {
        ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
        cfg.minCTAs = cfg.maxCTAs = nchannels;
        res[r] = ncclCommInitRankConfig(&comms[r], n, id, r, &cfg);
      });
    for (auto& t : threads) t.join();
    for (int r = 0; r < n; ++r) EXPECT_EQ(res[r], ncclSuccess) << "rank " << r << ": " << ncclGetLastError(nullptr);
  }
  ~Comms() {
    for (ncclComm_t c : comms)
      if (c) ncclCommDestroy(c);
  }
  int size() const { return static_cast<int>(comms.size()); }
  ncclComm_t operator[](int r) const { return comms[r]; }
};

// Runs fn(rank) for every rank on a thread of its own and joins them: blocking calls of different
// ranks (init, NULL-stream collectives) must overlap or they wait for each other forever.
inline void run_ranks(int n, const std::function<void(int)>& fn) {
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) threads.emplace_back(fn, r);
  for (auto& t : threads) t.join();
}

// Collects one rank's step events (pass EventRecorder::fn and the recorder to cclabCommSetObserver).
struct EventRecorder {
  std::mutex mu;
  std::vector<cclabStepEvent_t> events;
  static void fn(const cclabStepEvent_t* e, void* self) {
    auto* r = static_cast<EventRecorder*>(self);
    std::lock_guard<std::mutex> lk(r->mu);
    r->events.push_back(*e);
  }
};

// Seconds on a monotonic clock, for tests that bound how long something takes.
inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace cclab_test
