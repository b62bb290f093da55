// runtime/base/thread_barrier.h - threads of one process meet here (no collective, no device).
//
// On the CUDA backend cudaFree waits for every kernel on the device, so a rank thread that frees memory
// while another rank of the same process has launched a collective that waits for the first can wait
// forever (seen on an H200: docs/gpu.md, "cudaFree and ranks sharing a process"). `cclab perf` and the
// GPU tests let their rank threads meet here before allocating or freeing around collectives.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace cclab {

class ThreadBarrier {
 public:
  explicit ThreadBarrier(int n) : n_(n) {}
  ThreadBarrier(const ThreadBarrier&) = delete;
  ThreadBarrier& operator=(const ThreadBarrier&) = delete;
  // Returns once `n` threads have called it (again and again: each round is a generation).
  void wait() {
    std::unique_lock<std::mutex> lk(mu_);
    const uint64_t gen = gen_;
    if (++arrived_ == n_) {
      arrived_ = 0;
      ++gen_;
      cv_.notify_all();
      return;
    }
    cv_.wait(lk, [&] { return gen_ != gen; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  const int n_;
  int arrived_ = 0;
  uint64_t gen_ = 0;
};

}  // namespace cclab
