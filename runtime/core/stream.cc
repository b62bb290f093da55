#include "core/stream.h"

#include <chrono>
#include <unordered_set>

#include "base/log.h"

namespace cclab {

HostStream::HostStream() : worker_([this] { run(); }) {}

HostStream::~HostStream() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

void HostStream::enqueue(std::function<ncclResult_t()> op) {
  {
    std::lock_guard<std::mutex> lk(mu_);
    queue_.push_back(std::move(op));
    ++enqueued_;
  }
  cv_.notify_one();
}

ncclResult_t HostStream::synchronize() {
  std::unique_lock<std::mutex> lk(mu_);
  const uint64_t target = enqueued_;
  ++sync_waiters_;
  if (target > sync_target_) sync_target_ = target;
  done_cv_.wait(lk, [&] { return completed_ >= target; });
  --sync_waiters_;
  ncclResult_t e = error_;
  error_ = ncclSuccess;
  // The failure was reported on the worker thread; make its message the caller's last error too, so
  // that ncclGetLastError after a failed synchronize says what went wrong.
  if (e != ncclSuccess) set_last_error(error_msg_.c_str());
  error_msg_.clear();
  return e;
}

uint64_t HostStream::enqueued_count() {
  std::lock_guard<std::mutex> lk(mu_);
  return enqueued_;
}

void HostStream::wait_for(uint64_t target) {
  std::unique_lock<std::mutex> lk(mu_);
  // Synchronizers are woken only at their own target; poll at 1 ms for ours.
  while (completed_ < target) done_cv_.wait_for(lk, std::chrono::milliseconds(1));
}

bool HostStream::idle() {
  std::lock_guard<std::mutex> lk(mu_);
  return completed_ == enqueued_;
}

void HostStream::run() {
  std::unique_lock<std::mutex> lk(mu_);
  for (;;) {
    cv_.wait(lk, [&] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop_ and drained
    auto op = std::move(queue_.front());
    queue_.pop_front();
    lk.unlock();
    ncclResult_t r = op();
    lk.lock();
    if (r != ncclSuccess && error_ == ncclSuccess) {
      error_ = r;
      error_msg_ = last_error();  // set by the failing op on this (the worker) thread
    }
    ++completed_;
    // Wake synchronizers only when what they wait for is done: a wake-up per operation would
    // pull the waiting thread onto a core the ranks need.
    if (sync_waiters_ > 0 && completed_ >= sync_target_) done_cv_.notify_all();
  }
}

namespace {
std::mutex g_streams_mu;
std::unordered_set<HostStream*>& streams() {
  static auto* s = new std::unordered_set<HostStream*>;
  return *s;
}
}  // namespace

HostStream* host_stream_lookup(cudaStream_t s, bool* valid) {
  *valid = true;
  if (s == nullptr) return nullptr;
  auto* hs = reinterpret_cast<HostStream*>(s);
  std::lock_guard<std::mutex> lk(g_streams_mu);
  if (!streams().count(hs)) *valid = false;
  return *valid ? hs : nullptr;
}

cudaStream_t host_stream_register(HostStream* s) {
  std::lock_guard<std::mutex> lk(g_streams_mu);
  streams().insert(s);
  return reinterpret_cast<cudaStream_t>(s);
}

bool host_stream_unregister(cudaStream_t s) {
  std::lock_guard<std::mutex> lk(g_streams_mu);
  return streams().erase(reinterpret_cast<HostStream*>(s)) > 0;
}

}  // namespace cclab
