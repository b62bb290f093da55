// kernels/cuda/device_block.h - the Block policy of kernels/block_exec.h on a GPU: the only
// device-specific lines of the CUDA backend's kernels. Everything else (schedules, primitives, the
// executor) is the host-tested code of kernels/.
//
// Memory ordering, as NCCL's primitives rely on it:
//  - counters and line words are read and written with volatile 8-byte accesses (single-copy atomic
//    on NVLink, PCIe and local memory), never cached in registers across a poll;
//  - fence() is fence.acq_rel.sys, NCCL's fence_acq_rel_sys (sm_70+; __threadfence_system before): it
//    orders a block's data stores before lane 0's counter store for a peer GPU or the host (a release
//    pattern), and the counter load before the data loads (an acquire pattern: in PTX's memory model a
//    volatile load is a relaxed system-scope load). __threadfence_system is fence.sc.sys, a sequentially
//    consistent fence that costs more and orders nothing more that these patterns need;
//  - sync() / sync_or() are __syncthreads / __syncthreads_or, which also order memory within the block;
//  - LL128 line groups (NCCL's prims_ll128.h): the 8 lanes of a group (lanes 8g .. 8g+7 of a warp) each
//    store or load one 16-byte part of a line with one st/ld.volatile.v2.u64. A __syncwarp over the group
//    before the store keeps its 8 lanes converged, so a warp's store instruction carries whole aligned
//    128-byte lines, which NVLink delivers whole: a peer that sees the flag word sees the line. The
//    group's vote is __any_sync over its 8 lanes (groups of a warp may loop different line counts).
#pragma once

#include <stdint.h>

#include "kernels/cuda/multimem.h"
#include "kernels/reduce_ops.h"

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
  __device__ __forceinline__ void fence() const {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
    asm volatile("fence.acq_rel.sys;" ::: "memory");
#else
    __threadfence_system();
#endif
  }
  // The 8 lanes of this lane's LL128 line group, as a warp mask.
  __device__ __forceinline__ unsigned group_mask() const { return 0xffu << (threadIdx.x & 24u); }
  __device__ __forceinline__ bool group_any(bool v) const { return __any_sync(group_mask(), v ? 1 : 0) != 0; }
  __device__ __forceinline__ void store_part(uint64_t* p, uint64_t lo, uint64_t hi, bool) const {
    __syncwarp(group_mask());
    asm volatile("st.volatile.v2.u64 [%0], {%1, %2};" ::"l"(p), "l"(lo), "l"(hi) : "memory");
  }
  __device__ __forceinline__ void load_part(const uint64_t* p, uint64_t* lo, uint64_t* hi, bool) const {
    uint64_t a, b;
    asm volatile("ld.volatile.v2.u64 {%0, %1}, [%2];" : "=l"(a), "=l"(b) : "l"(p) : "memory");
    *lo = a;
    *hi = b;
  }
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

// NVLS through the multicast address (kernels/block_exec.h block_mc_*): the multimem instructions of
// sm90+ (kernels/cuda/multimem.h), each lane its elements; false where there is no instruction for the
// type and op (or when compiled for an older GPU), and the executor emulates.
template <typename T>
__device__ bool block_mc_ld_reduce(DeviceBlock& b, const RedOp<T>& op, T* dst, const char* mc, size_t n, bool post) {
#if CCLAB_MULTIMEM
  if (op.has_pre_op() || !cuda::multimem_supported<T>(op.combine_kind())) return false;
  const size_t lane = static_cast<size_t>(b.tid()), lanes = static_cast<size_t>(b.nthreads());
  if constexpr (sizeof(T) == 2) {
    if (!cuda::multimem_pairs_ok(mc, dst, n)) return false;
    const uint32_t* p = reinterpret_cast<const uint32_t*>(mc);
    for (size_t i = lane; i < n / 2; i += lanes) {
      const uint32_t w = cuda::mm_ld_reduce_x2<T>(p + i, op.combine_kind());
      T v[2];
      memcpy(v, &w, 4);
      for (int k = 0; k < 2; ++k) dst[2 * i + k] = post && op.has_post_op() ? op.post_op(v[k]) : v[k];
    }
  } else {
    const T* p = reinterpret_cast<const T*>(mc);
    for (size_t i = lane; i < n; i += lanes) {
      const T v = cuda::mm_ld_reduce(p + i, op.combine_kind());
      dst[i] = post && op.has_post_op() ? op.post_op(v) : v;
    }
  }
  return true;
#else
  (void)b, (void)op, (void)dst, (void)mc, (void)n, (void)post;
  return false;
#endif
}
template <typename T>
__device__ bool block_mc_ld_reduce_st(DeviceBlock& b, const RedOp<T>& op, const char* src, char* dst, size_t n,
                                      bool post) {
#if CCLAB_MULTIMEM
  if (op.has_pre_op() || (post && op.has_post_op()) || !cuda::multimem_supported<T>(op.combine_kind()) ||
      !cuda::multimem_st_supported<T>())
    return false;
  const size_t lane = static_cast<size_t>(b.tid()), lanes = static_cast<size_t>(b.nthreads());
  if constexpr (sizeof(T) == 2) {
    if (!cuda::multimem_pairs_ok(src, dst, n)) return false;
    const uint32_t* p = reinterpret_cast<const uint32_t*>(src);
    uint32_t* q = reinterpret_cast<uint32_t*>(dst);
    for (size_t i = lane; i < n / 2; i += lanes) cuda::mm_st_b32(q + i, cuda::mm_ld_reduce_x2<T>(p + i, op.combine_kind()));
  } else {
    const T* p = reinterpret_cast<const T*>(src);
    T* q = reinterpret_cast<T*>(dst);
    for (size_t i = lane; i < n; i += lanes) cuda::mm_st(q + i, cuda::mm_ld_reduce(p + i, op.combine_kind()));
  }
  return true;
#else
  (void)b, (void)op, (void)src, (void)dst, (void)n, (void)post;
  return false;
#endif
}
template <typename T>
__device__ bool block_mc_st(DeviceBlock& b, char* mc, const T* src, size_t n) {
#if CCLAB_MULTIMEM
  if (!cuda::multimem_st_supported<T>()) return false;
  const size_t lane = static_cast<size_t>(b.tid()), lanes = static_cast<size_t>(b.nthreads());
  if constexpr (sizeof(T) == 2) {
    if (!cuda::multimem_pairs_ok(mc, src, n)) return false;
    uint32_t* q = reinterpret_cast<uint32_t*>(mc);
    const uint32_t* s = reinterpret_cast<const uint32_t*>(src);
    for (size_t i = lane; i < n / 2; i += lanes) cuda::mm_st_b32(q + i, s[i]);
  } else {
    T* q = reinterpret_cast<T*>(mc);
    for (size_t i = lane; i < n; i += lanes) cuda::mm_st(q + i, src[i]);
  }
  return true;
#else
  (void)b, (void)mc, (void)src, (void)n;
  return false;
#endif
}

}  // namespace cclab
