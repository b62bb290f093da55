// kernels/cuda/multimem.h - NVLink SHARP's multimem instructions (PTX ISA 8.1+, sm_90 and later) for the
// NVLS schedule (kernels/nvls.h): a load through a multicast address that returns the reduction over
// every GPU of the multicast group (multimem.ld_reduce), and a store that writes every GPU's copy
// (multimem.st). NCCL uses them the same way (src/device/common_kernel.h, op128.h: multimem.ld_reduce,
// multimem.st on its mcBuff). One element per instruction here; types and ops as ncclNvlsSupported:
// add/min/max on (u)int32, (u)int64, half and bfloat16 (in pairs: .f16x2 / .bf16x2), add on float and
// double.
//
// Multimem<T>::supported(kind) says whether an element type and op have an instruction; where not, or
// when compiled for an older GPU (CCLAB_MULTIMEM 0), the block executor emulates the operation over the
// group's unicast copies (kernels/nvls.h nvls_emulate_*).
#pragma once

#include <stdint.h>
#include <string.h>

#include <type_traits>

#include "kernels/dtypes.h"
#include "kernels/platform.h"
#include "kernels/reduce_ops.h"

#if CCLAB_DEVICE_PASS && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define CCLAB_MULTIMEM 1
#else
#define CCLAB_MULTIMEM 0
#endif

namespace cclab {
namespace cuda {

template <typename T>
struct Multimem {
  static constexpr bool kAdd = false, kMinMax = false;
};
template <> struct Multimem<float> { static constexpr bool kAdd = true, kMinMax = false; };
template <> struct Multimem<double> { static constexpr bool kAdd = true, kMinMax = false; };
template <> struct Multimem<int32_t> { static constexpr bool kAdd = true, kMinMax = true; };
template <> struct Multimem<uint32_t> { static constexpr bool kAdd = true, kMinMax = true; };
template <> struct Multimem<int64_t> { static constexpr bool kAdd = true, kMinMax = true; };
template <> struct Multimem<uint64_t> { static constexpr bool kAdd = true, kMinMax = true; };
template <> struct Multimem<half_t> { static constexpr bool kAdd = true, kMinMax = true; };
template <> struct Multimem<bfloat16_t> { static constexpr bool kAdd = true, kMinMax = true; };

template <typename T>
CCLAB_HD inline bool multimem_supported(RedOpKind k) {
  if (!CCLAB_MULTIMEM) return false;
  if (k == RedOpKind::kSum) return Multimem<T>::kAdd;
  if (k == RedOpKind::kMax || k == RedOpKind::kMin) return Multimem<T>::kMinMax;
  return false;
}
// A multicast store: element types of 4 or 8 bytes one at a time, 16-bit ones in pairs.
template <typename T>
CCLAB_HD inline bool multimem_st_supported() {
  return CCLAB_MULTIMEM && (sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8);
}
// 16-bit elements go in pairs: a run of n at addresses a, b qualifies when n is even and both are
// 4-byte aligned.
CCLAB_HD inline bool multimem_pairs_ok(const void* a, const void* b, size_t n) {
  return n % 2 == 0 && (reinterpret_cast<uintptr_t>(a) % 4) == 0 && (reinterpret_cast<uintptr_t>(b) % 4) == 0;
}

#if CCLAB_MULTIMEM
// The reduction over the group of the element at multicast address p.
#define CCLAB_MM_LDRED(NAME, CT, REG, PTXT)                                                              \
  __device__ __forceinline__ CT NAME(const CT* p, RedOpKind k) {                                        \
    CT v;                                                                                                \
    if (k == RedOpKind::kMax)                                                                            \
      asm volatile("multimem.ld_reduce.relaxed.sys.global.max." PTXT " %0, [%1];" : "=" REG(v) : "l"(p) : "memory"); \
    else if (k == RedOpKind::kMin)                                                                       \
      asm volatile("multimem.ld_reduce.relaxed.sys.global.min." PTXT " %0, [%1];" : "=" REG(v) : "l"(p) : "memory"); \
    else                                                                                                 \
      asm volatile("multimem.ld_reduce.relaxed.sys.global.add." PTXT " %0, [%1];" : "=" REG(v) : "l"(p) : "memory"); \
    return v;                                                                                            \
  }
CCLAB_MM_LDRED(mm_ld_reduce_s32, int32_t, "r", "s32")
CCLAB_MM_LDRED(mm_ld_reduce_u32, uint32_t, "r", "u32")
CCLAB_MM_LDRED(mm_ld_reduce_u64, uint64_t, "l", "u64")
#undef CCLAB_MM_LDRED

__device__ __forceinline__ int64_t mm_ld_reduce_s64(const int64_t* p, RedOpKind k) {
  int64_t v;
  if (k == RedOpKind::kMax)
    asm volatile("multimem.ld_reduce.relaxed.sys.global.max.s64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  else if (k == RedOpKind::kMin)
    asm volatile("multimem.ld_reduce.relaxed.sys.global.min.s64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  else  // two's complement: the unsigned sum is the signed one
    asm volatile("multimem.ld_reduce.relaxed.sys.global.add.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ float mm_ld_reduce_f32(const float* p) {
  float v;
  asm volatile("multimem.ld_reduce.relaxed.sys.global.add.f32 %0, [%1];" : "=f"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ double mm_ld_reduce_f64(const double* p) {
  double v;
  asm volatile("multimem.ld_reduce.relaxed.sys.global.add.f64 %0, [%1];" : "=d"(v) : "l"(p) : "memory");
  return v;
}
// 16-bit floats: sm90 reduces them in pairs (.f16x2 / .bf16x2 on a 32-bit word), as NCCL does.
#define CCLAB_MM_LDRED_X2(NAME, PTXT)                                                                    \
  __device__ __forceinline__ uint32_t NAME(const uint32_t* p, RedOpKind k) {                             \
    uint32_t v;                                                                                          \
    if (k == RedOpKind::kMax)                                                                            \
      asm volatile("multimem.ld_reduce.relaxed.sys.global.max." PTXT " %0, [%1];" : "=r"(v) : "l"(p) : "memory"); \
    else if (k == RedOpKind::kMin)                                                                       \
      asm volatile("multimem.ld_reduce.relaxed.sys.global.min." PTXT " %0, [%1];" : "=r"(v) : "l"(p) : "memory"); \
    else                                                                                                 \
      asm volatile("multimem.ld_reduce.relaxed.sys.global.add." PTXT " %0, [%1];" : "=r"(v) : "l"(p) : "memory"); \
    return v;                                                                                            \
  }
CCLAB_MM_LDRED_X2(mm_ld_reduce_f16x2, "f16x2")
CCLAB_MM_LDRED_X2(mm_ld_reduce_bf16x2, "bf16x2")
#undef CCLAB_MM_LDRED_X2

template <typename T>
__device__ __forceinline__ T mm_ld_reduce(const T* p, RedOpKind k) {
  if constexpr (sizeof(T) == 4 && Multimem<T>::kAdd && !Multimem<T>::kMinMax) {
    return mm_ld_reduce_f32(reinterpret_cast<const float*>(p));
  } else if constexpr (sizeof(T) == 8 && Multimem<T>::kAdd && !Multimem<T>::kMinMax) {
    return mm_ld_reduce_f64(reinterpret_cast<const double*>(p));
  } else if constexpr (std::is_same<T, int32_t>::value) {
    return mm_ld_reduce_s32(p, k);
  } else if constexpr (std::is_same<T, uint32_t>::value) {
    return mm_ld_reduce_u32(p, k);
  } else if constexpr (std::is_same<T, int64_t>::value) {
    return mm_ld_reduce_s64(p, k);
  } else if constexpr (std::is_same<T, uint64_t>::value) {
    return mm_ld_reduce_u64(p, k);
  } else {
    // No single-element instruction (8-bit and fp8 types; 16-bit ones go in pairs, mm_ld_reduce_x2):
    // multimem_supported<T> is false, so the block executor emulates and never calls this.
    __trap();
    return *p;
  }
}

// Two 16-bit elements (a 32-bit word at a 4-byte aligned multicast address) reduced together.
template <typename T>
__device__ __forceinline__ uint32_t mm_ld_reduce_x2(const uint32_t* p, RedOpKind k) {
  return std::is_same<T, bfloat16_t>::value ? mm_ld_reduce_bf16x2(p, k) : mm_ld_reduce_f16x2(p, k);
}
__device__ __forceinline__ void mm_st_b32(uint32_t* p, uint32_t v) {
  asm volatile("multimem.st.relaxed.sys.global.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// Stores v (4 or 8 bytes) into every GPU's copy of multicast address p; 16-bit elements go in pairs
// (mm_st_b32).
template <typename T>
__device__ __forceinline__ void mm_st(T* p, T v) {
  if constexpr (sizeof(T) == 4) {
    uint32_t b;
    memcpy(&b, &v, 4);
    asm volatile("multimem.st.relaxed.sys.global.b32 [%0], %1;" ::"l"(p), "r"(b) : "memory");
  } else {
    uint64_t b;
    memcpy(&b, &v, 8);
    asm volatile("multimem.st.relaxed.sys.global.b64 [%0], %1;" ::"l"(p), "l"(b) : "memory");
  }
}
// Stores a counter into every copy, and loads the smallest of every copy's counter (NCCL's
// NCCL_NVLS_MIN_POLL: the tail read through the multicast address with a min reduction).
__device__ __forceinline__ void mm_st_u64(uint64_t* p, uint64_t v) {
  asm volatile("multimem.st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
__device__ __forceinline__ uint64_t mm_ld_min_u64(const uint64_t* p) {
  uint64_t v;
  asm volatile("multimem.ld_reduce.acquire.sys.global.min.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}
#endif  // CCLAB_MULTIMEM

}  // namespace cuda
}  // namespace cclab
