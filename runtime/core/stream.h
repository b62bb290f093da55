// runtime/core/stream.h - host streams: an in-order queue of operations run by one worker thread.
// cudaStream_t values handed out by cclabStreamCreate point to HostStream objects; a registry tells
// them apart from anything else (a real CUDA stream on the CUDA backend, or garbage).
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "cclab/nccl.h"

namespace cclab {

class HostStream {
 public:
  HostStream();
  ~HostStream();  // drains the queue, then joins the worker

  // Queues `op`; it runs after everything queued before it. An op's error is kept until the next
  // synchronize.
  void enqueue(std::function<ncclResult_t()> op);
  // Waits for everything queued so far; returns (and clears) the first error.
  ncclResult_t synchronize();
  bool idle();
  // Operations queued so far, and a wait (without consuming errors) until the first `target` of them
  // have completed: cclabStreamWaitStream's event.
  uint64_t enqueued_count();
  void wait_for(uint64_t target);

 private:
  void run();

  std::mutex mu_;
  std::condition_variable cv_;       // worker waits for work
  std::condition_variable done_cv_;  // synchronize waits for completion
  std::deque<std::function<ncclResult_t()>> queue_;
  uint64_t enqueued_ = 0, completed_ = 0;
  uint64_t sync_target_ = 0;  // largest enqueued_ a synchronize() waits for
  int sync_waiters_ = 0;
  ncclResult_t error_ = ncclSuccess;
  std::string error_msg_;  // the message of error_, handed to the thread that synchronizes
  bool stop_ = false;
  std::thread worker_;
};

// Looks up a stream handle; nullptr for the NULL stream. Sets *valid=false for an unknown handle.
HostStream* host_stream_lookup(cudaStream_t s, bool* valid);
cudaStream_t host_stream_register(HostStream* s);
bool host_stream_unregister(cudaStream_t s);

}  // namespace cclab
