// kernels/reduce_ops.h - the reduction functor every executor applies (host threads, CUDA, simulator).
//
// One class template, RedOp<T>, covers NCCL's device ops for all twelve datatypes:
//   kSum, kProd, kMax, kMin       the user's ncclSum/ncclProd/ncclMax/ncclMin
//   kPreMulSum                    ncclRedOpCreatePreMulSum and float ncclAvg (scalar 1/nranks):
//                                 pre_op multiplies each rank's input by the scalar, then sum
//   kSumPostDiv                   integer ncclAvg: sum, then post_op divides by nranks once
// A reduction over ranks r0..rk is post_op(op(...op(pre_op(x0), pre_op(x1))..., pre_op(xk))).
//
// Semantics, chosen so results do not depend on the executor:
//   - integers wrap modulo 2^bits (computed in the unsigned type, no undefined behaviour); PreMulSum
//     multiplies in the integer type (wrapping); SumPostDiv truncates toward zero like C's '/'.
//   - fp16/bf16/fp8 widen to float, compute in float and round once per operation back to storage (RNE,
//     CUDA's overflow rules from kernels/dtypes.h: fp16/bf16 overflow to inf, fp8 saturates to its
//     largest finite value, so an e5m2 infinity that goes through a sum comes out as 57344).
//   - Max/Min follow IEEE maxNum/minNum like NCCL's fmaxf/fminf: a NaN operand loses to a number.
//     They select one of the two inputs unchanged (low-precision types compare in float).
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/dtypes.h"
#include "kernels/platform.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "scalar_bits holds the scalar in its low bytes: cclab assumes little-endian hosts, like CUDA GPUs"
#endif

namespace cclab {

enum class RedOpKind : int { kSum = 0, kProd = 1, kMax = 2, kMin = 3, kPreMulSum = 4, kSumPostDiv = 5 };

// What the runtime hands an executor. scalar_bits: the PreMulSum scalar as the bit pattern of T in the
// low sizeof(T) bytes (scalar_to_bits); nranks: the SumPostDiv divisor.
struct RedOpArg {
  RedOpKind kind;
  uint64_t scalar_bits;
  int nranks;
  // PreMulSum with a scalar in memory (ncclScalarDevice): where it is. The operation reads it when it
  // runs, as NCCL's kernels do (a kernel earlier on the stream may compute it, and a captured CUDA
  // graph reads it again on every replay); scalar_bits is then ignored.
  const void* scalar_ptr = nullptr;
};

// The scalar's bits, zero-extended to 64 (the layout NCCL uses for its op argument).
template <class T>
CCLAB_HD CCLAB_FORCEINLINE uint64_t scalar_to_bits(T v) {
  static_assert(sizeof(T) <= sizeof(uint64_t), "scalar wider than 64 bits");
  uint64_t bits = 0;
  __builtin_memcpy(&bits, &v, sizeof(T));
  return bits;
}

template <class T>
CCLAB_HD CCLAB_FORCEINLINE T scalar_from_bits(uint64_t bits) {
  static_assert(sizeof(T) <= sizeof(uint64_t), "scalar wider than 64 bits");
  T v;
  __builtin_memcpy(&v, &bits, sizeof(T));
  return v;
}

namespace detail {

// Element arithmetic per type family. Integer: wrap via the unsigned type, widened to unsigned int
// for 8/16-bit types so the promoted product cannot overflow a signed int.
template <class T, bool kIsInteger = std::is_integral<T>::value, bool kIsLow = DataTypeTraits<T>::kIsLowPrecision>
struct Arith;

template <class T>
struct Arith<T, /*kIsInteger=*/true, /*kIsLow=*/false> {
  using Wide = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
  // The division type: C semantics (truncation toward zero) in at least 32 bits, so a uint8 sum divides
  // correctly by nranks > 255 and signed values keep their sign.
  using Div =
      std::conditional_t<(sizeof(T) < sizeof(int)), std::conditional_t<std::is_signed<T>::value, int, unsigned>, T>;
  using Scalar = T;

  static CCLAB_HD CCLAB_FORCEINLINE T add(T a, T b) {
    return static_cast<T>(static_cast<Wide>(a) + static_cast<Wide>(b));
  }
  static CCLAB_HD CCLAB_FORCEINLINE T mul(T a, T b) {
    return static_cast<T>(static_cast<Wide>(a) * static_cast<Wide>(b));
  }
  static CCLAB_HD CCLAB_FORCEINLINE T max(T a, T b) { return a < b ? b : a; }
  static CCLAB_HD CCLAB_FORCEINLINE T min(T a, T b) { return b < a ? b : a; }
  static CCLAB_HD CCLAB_FORCEINLINE Scalar load_scalar(uint64_t bits) { return scalar_from_bits<T>(bits); }
  static CCLAB_HD CCLAB_FORCEINLINE T mul_scalar(T x, Scalar s) { return mul(x, s); }
  static CCLAB_HD CCLAB_FORCEINLINE T div(T x, int n) {
    return static_cast<T>(static_cast<Div>(x) / static_cast<Div>(n));
  }
};

// float and double: native arithmetic.
template <class T>
struct Arith<T, /*kIsInteger=*/false, /*kIsLow=*/false> {
  using Scalar = T;
  static CCLAB_HD CCLAB_FORCEINLINE T add(T a, T b) { return a + b; }
  static CCLAB_HD CCLAB_FORCEINLINE T mul(T a, T b) { return a * b; }
  // maxNum/minNum: "b != b" is b's NaN test; when a is NaN both tests fail and b is returned.
  static CCLAB_HD CCLAB_FORCEINLINE T max(T a, T b) { return (a > b || b != b) ? a : b; }
  static CCLAB_HD CCLAB_FORCEINLINE T min(T a, T b) { return (a < b || b != b) ? a : b; }
  static CCLAB_HD CCLAB_FORCEINLINE Scalar load_scalar(uint64_t bits) { return scalar_from_bits<T>(bits); }
  static CCLAB_HD CCLAB_FORCEINLINE T mul_scalar(T x, Scalar s) { return x * s; }
  static CCLAB_HD CCLAB_FORCEINLINE T div(T x, int n) { return x / static_cast<T>(n); }
};

// fp16/bf16/fp8: compute in float, round once.
template <class T>
struct Arith<T, /*kIsInteger=*/false, /*kIsLow=*/true> {
  using Scalar = float;  // the scalar is widened once, at construction
  static CCLAB_HD CCLAB_FORCEINLINE T add(T a, T b) { return from_float<T>(to_float(a) + to_float(b)); }
  static CCLAB_HD CCLAB_FORCEINLINE T mul(T a, T b) { return from_float<T>(to_float(a) * to_float(b)); }
  static CCLAB_HD CCLAB_FORCEINLINE T max(T a, T b) {
    const float fa = to_float(a), fb = to_float(b);
    return (fa > fb || fb != fb) ? a : b;
  }
  static CCLAB_HD CCLAB_FORCEINLINE T min(T a, T b) {
    const float fa = to_float(a), fb = to_float(b);
    return (fa < fb || fb != fb) ? a : b;
  }
  static CCLAB_HD CCLAB_FORCEINLINE Scalar load_scalar(uint64_t bits) { return to_float(scalar_from_bits<T>(bits)); }
  static CCLAB_HD CCLAB_FORCEINLINE T mul_scalar(T x, Scalar s) { return from_float<T>(to_float(x) * s); }
  static CCLAB_HD CCLAB_FORCEINLINE T div(T x, int n) { return from_float<T>(to_float(x) / static_cast<float>(n)); }
};

// Stateless combine functors, so reduce_range can pick one outside its loop.
template <class T>
struct SumFn {
  CCLAB_HD CCLAB_FORCEINLINE T operator()(T a, T b) const { return Arith<T>::add(a, b); }
};
template <class T>
struct ProdFn {
  CCLAB_HD CCLAB_FORCEINLINE T operator()(T a, T b) const { return Arith<T>::mul(a, b); }
};
template <class T>
struct MaxFn {
  CCLAB_HD CCLAB_FORCEINLINE T operator()(T a, T b) const { return Arith<T>::max(a, b); }
};
template <class T>
struct MinFn {
  CCLAB_HD CCLAB_FORCEINLINE T operator()(T a, T b) const { return Arith<T>::min(a, b); }
};

}  // namespace detail

template <class T>
struct RedOp {
  using Scalar = typename detail::Arith<T>::Scalar;

  // PreMulSum and SumPostDiv combine as a sum: combine_ holds one of the four combine kinds, so the
  // per-element switch has four cases. A non-positive nranks is treated as 1 rather than dividing by 0.
  CCLAB_HD explicit RedOp(const RedOpArg& arg)
      : kind_(arg.kind),
        combine_(arg.kind == RedOpKind::kPreMulSum || arg.kind == RedOpKind::kSumPostDiv ? RedOpKind::kSum : arg.kind),
        nranks_(arg.nranks > 0 ? arg.nranks : 1),
        scalar_(arg.kind != RedOpKind::kPreMulSum ? Scalar{}
                : arg.scalar_ptr != nullptr
                    ? detail::Arith<T>::load_scalar(scalar_to_bits(*static_cast<const T*>(arg.scalar_ptr)))
                    : detail::Arith<T>::load_scalar(arg.scalar_bits)) {}

  // Combines two partial results.
  CCLAB_HD CCLAB_FORCEINLINE T operator()(T a, T b) const {
    switch (combine_) {
      case RedOpKind::kProd:
        return detail::Arith<T>::mul(a, b);
      case RedOpKind::kMax:
        return detail::Arith<T>::max(a, b);
      case RedOpKind::kMin:
        return detail::Arith<T>::min(a, b);
      default:
        return detail::Arith<T>::add(a, b);
    }
  }

  // Applied to each rank's own input as it enters the reduction.
  CCLAB_HD CCLAB_FORCEINLINE T pre_op(T x) const {
    return kind_ == RedOpKind::kPreMulSum ? detail::Arith<T>::mul_scalar(x, scalar_) : x;
  }

  // Applied once to the final result.
  CCLAB_HD CCLAB_FORCEINLINE T post_op(T x) const {
    return kind_ == RedOpKind::kSumPostDiv ? detail::Arith<T>::div(x, nranks_) : x;
  }

  CCLAB_HD CCLAB_FORCEINLINE bool has_pre_op() const { return kind_ == RedOpKind::kPreMulSum; }
  CCLAB_HD CCLAB_FORCEINLINE bool has_post_op() const { return kind_ == RedOpKind::kSumPostDiv; }

  CCLAB_HD CCLAB_FORCEINLINE RedOpKind kind() const { return kind_; }
  // kSum, kProd, kMax or kMin: how two partial results combine.
  CCLAB_HD CCLAB_FORCEINLINE RedOpKind combine_kind() const { return combine_; }

 private:
  RedOpKind kind_;
  RedOpKind combine_;
  int nranks_;
  Scalar scalar_;
};

namespace detail {

// Fixed-size blocks through a local buffer: the inner loops have a compile-time trip count and no
// aliasing question (dst may equal a or b), which is what g++ -O2's cheap vectorizer needs.
// On a GPU the local buffer would only cost registers or local memory, so the device pass keeps the
// plain loop.
template <class T, class Fn>
CCLAB_HD CCLAB_FORCEINLINE void reduce_loop(Fn fn, T* dst, const T* a, const T* b, size_t n) {
#if CCLAB_DEVICE_PASS
  for (size_t i = 0; i < n; ++i) dst[i] = fn(a[i], b[i]);
#else
  constexpr size_t kBlock = 64 / sizeof(T) < 16 ? 16 : 64 / sizeof(T);
  const size_t full = n - n % kBlock;
  for (size_t i = 0; i < full; i += kBlock) {
    T tmp[kBlock];
    for (size_t j = 0; j < kBlock; ++j) tmp[j] = fn(a[i + j], b[i + j]);
    for (size_t j = 0; j < kBlock; ++j) dst[i + j] = tmp[j];
  }
  for (size_t i = full; i < n; ++i) dst[i] = fn(a[i], b[i]);
#endif
}

}  // namespace detail

// dst[i] = op(a[i], b[i]) for i < n, with the op's switch hoisted out of the loop. dst may be a or b
// (in-place accumulation); other partial overlaps are not supported. pre_op/post_op are not applied.
template <class T>
CCLAB_HD void reduce_range(const RedOp<T>& op, T* dst, const T* a, const T* b, size_t n) {
  switch (op.combine_kind()) {
    case RedOpKind::kProd:
      detail::reduce_loop(detail::ProdFn<T>{}, dst, a, b, n);
      break;
    case RedOpKind::kMax:
      detail::reduce_loop(detail::MaxFn<T>{}, dst, a, b, n);
      break;
    case RedOpKind::kMin:
      detail::reduce_loop(detail::MinFn<T>{}, dst, a, b, n);
      break;
    default:
      detail::reduce_loop(detail::SumFn<T>{}, dst, a, b, n);
      break;
  }
}

}  // namespace cclab
