// kernels/dtypes.h - storage types and conversions for NCCL's twelve datatypes.
//
// The low-precision types (fp16, bf16, fp8 e4m3, fp8 e5m2) are plain bit containers, so the same
// buffers can be reduced by the host executor (g++), the CUDA backend (nvcc) and the simulator without
// pulling CUDA's headers into host code. Arithmetic on them is defined as: widen to float, compute in
// float, round once back to the storage type with round-to-nearest-even (RNE).
//
// The conversions reproduce the CUDA 13.0 toolkit bit for bit (tests/kernels/dtypes_test.cc checks
// every pattern against cuda_fp16.h / cuda_bf16.h / cuda_fp8.h):
//   from_float<half_t>      = __float2half_rn          overflow -> inf, any NaN -> 0x7fff
//   from_float<bfloat16_t>  = __float2bfloat16_rn      overflow -> inf, any NaN -> 0x7fff
//   from_float<fp8_e4m3_t>  = __nv_cvt_float_to_fp8(f, __NV_SATFINITE, __NV_E4M3)
//                             |x| > 464 (and +-inf) -> +-448 (0x7e/0xfe), any NaN -> 0x7f
//   from_float<fp8_e5m2_t>  = __nv_cvt_float_to_fp8(f, __NV_SATFINITE, __NV_E5M2)
//                             |x| >= 61440 (and +-inf) -> +-57344 (0x7b/0xfb), any NaN -> 0x7f
//   to_float(half_t / fp8)  = __half2float (via __nv_cvt_fp8_to_halfraw for fp8); any NaN -> 0x7fffffff
//   to_float(bfloat16_t)    = __bfloat162float (exact widening, NaN payload kept)
// CUDA's host code drops the sign of a NaN and returns one canonical pattern; we do the same so the
// host executor and CUDA's host path agree bit for bit.
//
// Everything here is integer bit manipulation plus two float operations whose results are normal
// numbers (an exact int->float scaling, and an add whose own RNE is the rounding we want), so it gives
// the same bits with or without flush-to-zero, on the host and in nvcc device code. It is written
// branch-free so that g++ -O2 vectorizes loops over it (see select_u32).
#pragma once

#include <cstdint>
#include <type_traits>

#include "kernels/platform.h"

namespace cclab {

// ---- Storage types -------------------------------------------------------------------------------
// Aggregates holding the wire bits: trivially copyable, same size and alignment as the wire type.
struct half_t {
  uint16_t bits;
};
struct bfloat16_t {
  uint16_t bits;
};
struct fp8_e4m3_t {
  uint8_t bits;
};
struct fp8_e5m2_t {
  uint8_t bits;
};

static_assert(sizeof(half_t) == 2 && alignof(half_t) == 2, "half_t must match the wire type");
static_assert(sizeof(bfloat16_t) == 2 && alignof(bfloat16_t) == 2, "bfloat16_t must match the wire type");
static_assert(sizeof(fp8_e4m3_t) == 1 && sizeof(fp8_e5m2_t) == 1, "fp8 types must be one byte");
static_assert(std::is_trivially_copyable<half_t>::value && std::is_trivially_copyable<bfloat16_t>::value &&
                  std::is_trivially_copyable<fp8_e4m3_t>::value && std::is_trivially_copyable<fp8_e5m2_t>::value,
              "storage types are copied as raw bytes");

namespace detail {

// memcpy punning: defined behaviour in C++17, compiles to a register move on both compilers.
template <class To, class From>
CCLAB_HD CCLAB_FORCEINLINE To bit_cast(const From& from) {
  static_assert(sizeof(To) == sizeof(From), "bit_cast needs equal sizes");
  To to;
  __builtin_memcpy(&to, &from, sizeof(To));
  return to;
}

// cond ? a : b as mask arithmetic. The conversions are written branch-free so that g++ -O2 vectorizes
// reduce_range over fp16/fp8; a plain ?: lets g++ sink one arm's float operation into a branch, which
// it then will not if-convert under -ftrapping-math (the default).
CCLAB_HD CCLAB_FORCEINLINE uint32_t select_u32(bool cond, uint32_t a, uint32_t b) {
  const uint32_t mask = 0u - static_cast<uint32_t>(cond);
  return (a & mask) | (b & ~mask);
}

// Magnitudes (sign bit cleared) compare as int32: SSE2 only has signed 32-bit compares.
CCLAB_HD CCLAB_FORCEINLINE int32_t as_s32(uint32_t magnitude) { return static_cast<int32_t>(magnitude); }

constexpr uint32_t kFloatAbsMask = 0x7fffffffu;
constexpr uint32_t kFloatInf = 0x7f800000u;
constexpr uint32_t kFloatCanonicalNan = 0x7fffffffu;  // what CUDA's host conversions return for any NaN

// |x| (float bits, finite, below the format's overflow threshold) rounded RNE to a format with kMant
// mantissa bits and exponent bias kBias; returns the unsigned magnitude encoding.
//  - Normal result: rebias the exponent and round the float mantissa in integer arithmetic; a carry
//    out of the mantissa correctly bumps the exponent.
//  - Subnormal result (|x| < 2^(1-kBias)): add a magic power of two whose ulp is the target's smallest
//    subnormal and let the float adder's RNE do the rounding; the low bits of the sum are the target
//    encoding, up to and including the carry into the smallest normal. The magic and the sum are normal
//    floats, so flush-to-zero modes give the same bits (a flushed float subnormal still rounds to 0).
template <int kMant, int kBias>
CCLAB_HD CCLAB_FORCEINLINE uint32_t round_magnitude_rne(uint32_t u) {
  constexpr int kDrop = 23 - kMant;                                              // float mantissa bits dropped
  constexpr uint32_t kMinNormal = static_cast<uint32_t>(128 - kBias) << 23;      // 2^(1-kBias)
  constexpr uint32_t kRebias = static_cast<uint32_t>(127 - kBias) << 23;         // float bias -> kBias
  constexpr uint32_t kMagic = static_cast<uint32_t>(151 - kBias - kMant) << 23;  // ulp 2^(1-kBias-kMant)
  const uint32_t normal = (u - kRebias + ((1u << (kDrop - 1)) - 1u) + ((u >> kDrop) & 1u)) >> kDrop;
  const uint32_t subnormal = bit_cast<uint32_t>(bit_cast<float>(u) + bit_cast<float>(kMagic)) - kMagic;
  return select_u32(as_s32(u) < as_s32(kMinNormal), subnormal, normal);
}

// Exact value of a small integer times a power of two, as float bits: int->float is exact below 2^24
// and the product is a normal float, so flush-to-zero cannot change it.
CCLAB_HD CCLAB_FORCEINLINE uint32_t scaled_int_bits(uint32_t count, float scale) {
  return bit_cast<uint32_t>(static_cast<float>(as_s32(count)) * scale);
}

// Half bits -> float bits.
CCLAB_HD CCLAB_FORCEINLINE uint32_t half_bits_to_float_bits(uint32_t h) {
  const uint32_t sign = (h & 0x8000u) << 16;
  const int32_t em = as_s32(h & 0x7fffu);
  const uint32_t normal = (static_cast<uint32_t>(em) << 13) + 0x38000000u;  // rebias 15 -> 127
  const uint32_t subnormal = scaled_int_bits(static_cast<uint32_t>(em), 0x1p-24f);
  uint32_t r = select_u32(em >= 0x0400, normal, subnormal);
  r = select_u32(em >= 0x7c00, kFloatInf, r);
  return select_u32(em > 0x7c00, kFloatCanonicalNan, sign | r);
}

}  // namespace detail

// ---- Widening to float (exact) -------------------------------------------------------------------
CCLAB_HD CCLAB_FORCEINLINE float to_float(half_t x) {
  return detail::bit_cast<float>(detail::half_bits_to_float_bits(x.bits));
}

CCLAB_HD CCLAB_FORCEINLINE float to_float(bfloat16_t x) {
  return detail::bit_cast<float>(static_cast<uint32_t>(x.bits) << 16);
}

// e4m3: bias 7, no infinities; 0x7f/0xff are the only NaNs, 0x78..0x7e are finite (256..448).
CCLAB_HD CCLAB_FORCEINLINE float to_float(fp8_e4m3_t x) {
  const uint32_t sign = (static_cast<uint32_t>(x.bits) & 0x80u) << 24;
  const int32_t em = x.bits & 0x7f;
  const uint32_t normal = (static_cast<uint32_t>(em) << 20) + (120u << 23);  // rebias 7 -> 127
  const uint32_t subnormal = detail::scaled_int_bits(static_cast<uint32_t>(em), 0x1p-9f);
  const uint32_t r = sign | detail::select_u32(em >= 0x08, normal, subnormal);
  return detail::bit_cast<float>(detail::select_u32(em == 0x7f, detail::kFloatCanonicalNan, r));
}

// e5m2 is the top byte of an IEEE half (same exponent, inf and NaN encodings).
CCLAB_HD CCLAB_FORCEINLINE float to_float(fp8_e5m2_t x) {
  return detail::bit_cast<float>(detail::half_bits_to_float_bits(static_cast<uint32_t>(x.bits) << 8));
}

// ---- Narrowing from float (RNE, CUDA's overflow and NaN rules) ------------------------------------
template <class T>
CCLAB_HD T from_float(float f);

template <>
CCLAB_HD CCLAB_FORCEINLINE half_t from_float<half_t>(float f) {
  const uint32_t x = detail::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t u = x & detail::kFloatAbsMask;
  // 65520 = 65504 + half an ulp: 65504 has an odd mantissa, so RNE sends the tie up to infinity.
  uint32_t r = detail::select_u32(detail::as_s32(u) >= 0x477ff000, 0x7c00u, detail::round_magnitude_rne<10, 15>(u));
  r = detail::select_u32(detail::as_s32(u) > detail::as_s32(detail::kFloatInf), 0x7fffu, sign | r);
  return half_t{static_cast<uint16_t>(r)};
}

template <>
CCLAB_HD CCLAB_FORCEINLINE bfloat16_t from_float<bfloat16_t>(float f) {
  const uint32_t x = detail::bit_cast<uint32_t>(f);
  // Same exponent range as float: RNE on the low 16 bits; a carry into the exponent yields inf.
  const uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  const bool is_nan = detail::as_s32(x & detail::kFloatAbsMask) > detail::as_s32(detail::kFloatInf);
  return bfloat16_t{static_cast<uint16_t>(detail::select_u32(is_nan, 0x7fffu, rounded))};
}

// Saturating (__NV_SATFINITE): anything whose RNE result would not be finite, inf included, becomes the
// largest finite value of its sign. The cut is max + half an ulp = 464, exclusive: 448 has an even
// mantissa, so the tie 464 rounds down to it.
template <>
CCLAB_HD CCLAB_FORCEINLINE fp8_e4m3_t from_float<fp8_e4m3_t>(float f) {
  const uint32_t x = detail::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 24) & 0x80u;
  const uint32_t u = x & detail::kFloatAbsMask;
  uint32_t r = detail::select_u32(detail::as_s32(u) > 0x43e80000, 0x7eu, detail::round_magnitude_rne<3, 7>(u));
  r = detail::select_u32(detail::as_s32(u) > detail::as_s32(detail::kFloatInf), 0x7fu, sign | r);
  return fp8_e4m3_t{static_cast<uint8_t>(r)};
}

// Saturating like e4m3; here the cut 61440 = 57344 + half an ulp is inclusive: 57344 has an odd
// mantissa, so RNE sends that tie up to 65536 (infinity), which saturates.
template <>
CCLAB_HD CCLAB_FORCEINLINE fp8_e5m2_t from_float<fp8_e5m2_t>(float f) {
  const uint32_t x = detail::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 24) & 0x80u;
  const uint32_t u = x & detail::kFloatAbsMask;
  uint32_t r = detail::select_u32(detail::as_s32(u) >= 0x47700000, 0x7bu, detail::round_magnitude_rne<2, 15>(u));
  r = detail::select_u32(detail::as_s32(u) > detail::as_s32(detail::kFloatInf), 0x7fu, sign | r);
  return fp8_e5m2_t{static_cast<uint8_t>(r)};
}

// ---- Traits --------------------------------------------------------------------------------------
// kIsFloat: floating-point semantics (NaN, rounding). kIsLowPrecision: stored narrower than it is
// computed; such types compute in `Compute` (float) and round once per operation.
template <class T>
struct DataTypeTraits;  // only NCCL's twelve datatypes are defined

#define CCLAB_DTYPE_TRAITS(T, is_float, is_low, compute) \
  template <>                                            \
  struct DataTypeTraits<T> {                             \
    static constexpr bool kIsFloat = is_float;           \
    static constexpr bool kIsLowPrecision = is_low;      \
    using Compute = compute;                             \
  };
CCLAB_DTYPE_TRAITS(int8_t, false, false, int8_t)
CCLAB_DTYPE_TRAITS(uint8_t, false, false, uint8_t)
CCLAB_DTYPE_TRAITS(int32_t, false, false, int32_t)
CCLAB_DTYPE_TRAITS(uint32_t, false, false, uint32_t)
CCLAB_DTYPE_TRAITS(int64_t, false, false, int64_t)
CCLAB_DTYPE_TRAITS(uint64_t, false, false, uint64_t)
CCLAB_DTYPE_TRAITS(half_t, true, true, float)
CCLAB_DTYPE_TRAITS(float, true, false, float)
CCLAB_DTYPE_TRAITS(double, true, false, double)
CCLAB_DTYPE_TRAITS(bfloat16_t, true, true, float)
CCLAB_DTYPE_TRAITS(fp8_e4m3_t, true, true, float)
CCLAB_DTYPE_TRAITS(fp8_e5m2_t, true, true, float)
#undef CCLAB_DTYPE_TRAITS

template <class T>
using ComputeType = typename DataTypeTraits<T>::Compute;

// The value a reduction computes with: float for the low-precision types, the type itself otherwise.
template <class T>
CCLAB_HD CCLAB_FORCEINLINE ComputeType<T> to_compute(T x) {
  if constexpr (DataTypeTraits<T>::kIsLowPrecision) {
    return to_float(x);
  } else {
    return x;
  }
}

// Back to storage: one RNE rounding (CUDA's rules above) for the low-precision types, identity otherwise.
template <class T>
CCLAB_HD CCLAB_FORCEINLINE T from_compute(ComputeType<T> x) {
  if constexpr (DataTypeTraits<T>::kIsLowPrecision) {
    return from_float<T>(x);
  } else {
    return x;
  }
}

}  // namespace cclab
