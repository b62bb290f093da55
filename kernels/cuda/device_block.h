// kernels/cuda/device_block.h - the Block policy of kernels/block_exec.h on a GPU: the only
// device-specific lines of the CUDA backend's kernels. Everything else (schedules, primitives, the
// executor) is the host-tested code of kernels/.
//
// Memory ordering, as NCCL's primitives rely on it:
//  - counters and line words are read and written with volatile 8-byte accesses (single-copy atomic
//    on NVLink, PCIe and local memory), never cached in registers across a poll;
//  - fence() is __threadfence_system(): it orders a block's data stores before lane 0's counter store
//    for a peer GPU or the host (release), and the counter load before the data loads (acquire);
//  - sync() / sync_or() are __syncthreads / __syncthreads_or, which also order memory within the block.
#pragma once

#include <stdint.h>

#if !defined(__CUDACC__)
#error "kernels/cuda/device_block.h is device code: include it from .cu files only"
#endif

namespace cclab {

struct DeviceBlock {
  const volatile int* abort_flag;  // the communicator's abort flag, in mapped host memory

  __device__ __forceinline__ int tid() const { return static_cast<int>(threadIdx.x); }
  __device__ __forceinline__ int nthreads() const { return static_cast<int>(blockDim.x); }
  __device__ __forceinline__ void sync() const { __syncthreads(); }
  __device__ __forceinline__ bool sync_or(bool v) const { return __syncthreads_or(v ? 1 : 0) != 0; }
  __device__ __forceinline__ uint64_t load(const uint64_t* p) const {
    return *reinterpret_cast<const volatile uint64_t*>(p);
  }
  __device__ __forceinline__ void store(uint64_t* p, uint64_t v) const { *reinterpret_cast<volatile uint64_t*>(p) = v; }
  __device__ __forceinline__ void fence() const { __threadfence_system(); }
  __device__ __forceinline__ bool abort_requested() const { return abort_flag != nullptr && *abort_flag != 0; }
  __device__ __forceinline__ void pause() const {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
    __nanosleep(20);
#endif
  }
  // %globaltimer: nanoseconds, the same clock on every GPU of a machine.
  __device__ __forceinline__ double now_us() const {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return static_cast<double>(t) * 1e-3;
  }
};

}  // namespace cclab
