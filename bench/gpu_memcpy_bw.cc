// bench/gpu_memcpy_bw.cc - the peer of cclab's CUDA data path on one GPU: cudaMemcpyAsync device to
// device, NRANKS copies at once (one stream each, as NRANKS ranks sharing the GPU), timed with CUDA
// events. Prints, per size, the bytes each "rank" copies and the GB/s each achieves (size / time, the
// algbw column of nccl-tests). bench/gpu_vs_memcpy.sh sets it beside `cclab perf sendrecv` with the same
// ranks on the same GPU.
//
//   cclab_gpu_memcpy_bw [MIN_BYTES [MAX_BYTES [NRANKS [ITERS]]]]   (defaults 1 MiB, 1 GiB, 2, 20)
//
// Exit 77 without a CUDA device, 2 on bad arguments. Built with the host compiler against the CUDA
// runtime (no device code).
#include <cuda_runtime.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <thread>
#include <vector>

#include "perf_options.h"

namespace {

// The gate's host function: returns once the host has queued every copy (no CUDA calls allowed here).
void CUDART_CB hold_until_open(void* flag) {
  while (static_cast<std::atomic<int>*>(flag)->load(std::memory_order_acquire) == 0) std::this_thread::yield();
}

#define CHECK(x)                                                                          \
  do {                                                                                    \
    const cudaError_t e_ = (x);                                                           \
    if (e_ != cudaSuccess) {                                                              \
      std::fprintf(stderr, "gpu_memcpy_bw: %s: %s\n", #x, cudaGetErrorString(e_));       \
      return 1;                                                                           \
    }                                                                                     \
  } while (0)

}  // namespace

int main(int argc, char** argv) {
  size_t lo = size_t(1) << 20, hi = size_t(1) << 30;
  int nranks = 2, iters = 20;
  bool sizes_ok = true;
  try {  // sizes as `cclab perf -b/-e` reads them
    if (argc > 1) lo = cclab::parse_size(argv[1], "MIN_BYTES");
    if (argc > 2) hi = cclab::parse_size(argv[2], "MAX_BYTES");
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "%s\n", e.what());
    sizes_ok = false;
  }
  if (!sizes_ok || lo == 0 || (argc > 3 && (nranks = std::atoi(argv[3])) < 1) ||
      (argc > 4 && (iters = std::atoi(argv[4])) < 1) || argc > 5 || lo > hi) {
    std::fprintf(stderr, "usage: %s [MIN_BYTES [MAX_BYTES [NRANKS [ITERS]]]] (sizes as 8, 64K, 1M, 1G; MIN <= MAX)\n",
                 argv[0]);
    return 2;
  }
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    std::printf("SKIPPED: no CUDA device\n");
    return 77;
  }
  std::vector<void*> src(nranks), dst(nranks);
  std::vector<cudaStream_t> streams(nranks);
  std::vector<cudaEvent_t> stop(nranks);
  cudaStream_t gate_stream;
  cudaEvent_t gate;
  CHECK(cudaStreamCreateWithFlags(&gate_stream, cudaStreamNonBlocking));
  CHECK(cudaEventCreate(&gate));
  for (int r = 0; r < nranks; ++r) {
    CHECK(cudaMalloc(&src[r], hi));
    CHECK(cudaMalloc(&dst[r], hi));
    CHECK(cudaMemset(src[r], r + 1, hi));
    CHECK(cudaStreamCreateWithFlags(&streams[r], cudaStreamNonBlocking));
    CHECK(cudaEventCreate(&stop[r]));
  }
  std::printf("# cudaMemcpyAsync device to device, %d copies at once on one GPU, %d iterations\n", nranks, iters);
  std::printf("# %12s %10s %10s\n", "size", "time(us)", "algbw");
  // The gate's flag outlives every return below, and any return opens it: a held host function must
  // not outlive the flag or keep the process from ending.
  std::atomic<int> open{1};
  struct OpenAtExit {
    std::atomic<int>& f;
    ~OpenAtExit() { f.store(1); }
  } open_at_exit{open};
  for (size_t n = lo; n <= hi; n *= 2) {
    for (int r = 0; r < nranks; ++r) CHECK(cudaMemcpyAsync(dst[r], src[r], n, cudaMemcpyDeviceToDevice, streams[r]));
    CHECK(cudaDeviceSynchronize());  // warm-up
    // A gate: the gate stream holds in a host function until every stream's copies are queued, so the
    // copies start together and no queueing gap is timed; the time runs from the gate to the last stop.
    open.store(0);
    CHECK(cudaLaunchHostFunc(gate_stream, hold_until_open, &open));
    CHECK(cudaEventRecord(gate, gate_stream));
    for (int r = 0; r < nranks; ++r) {
      CHECK(cudaStreamWaitEvent(streams[r], gate, 0));
      for (int i = 0; i < iters; ++i) CHECK(cudaMemcpyAsync(dst[r], src[r], n, cudaMemcpyDeviceToDevice, streams[r]));
      CHECK(cudaEventRecord(stop[r], streams[r]));
    }
    open.store(1, std::memory_order_release);
    CHECK(cudaDeviceSynchronize());
    float worst_ms = 0;  // the last stream to finish, as nccl-tests times the slowest rank
    for (int r = 0; r < nranks; ++r) {
      float ms = 0;
      CHECK(cudaEventElapsedTime(&ms, gate, stop[r]));
      if (ms > worst_ms) worst_ms = ms;
    }
    const double us = 1e3 * worst_ms / iters;
    std::printf("  %12zu %10.2f %10.2f\n", n, us, static_cast<double>(n) / (us * 1e3));
    if (n > hi / 2) break;
  }
  for (int r = 0; r < nranks; ++r) {
    cudaFree(src[r]);
    cudaFree(dst[r]);
    cudaStreamDestroy(streams[r]);
    cudaEventDestroy(stop[r]);
  }
  cudaEventDestroy(gate);
  cudaStreamDestroy(gate_stream);
  return 0;
}
