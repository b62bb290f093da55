// Tests of kernels/reduce_ops.h: every op on every datatype against hand-computed results, the
// wrap/truncate/round rules at their edges, and reduce_range against the element-wise operator.
#include "kernels/reduce_ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace cclab {
namespace {

// A value of T from a double that T holds exactly (the low-precision types go through one rounding).
template <class T>
T val(double x) {
  if constexpr (DataTypeTraits<T>::kIsLowPrecision) {
    return from_float<T>(static_cast<float>(x));
  } else {
    return static_cast<T>(x);
  }
}

template <class T>
uint64_t raw(T v) {
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  return bits;
}

// Bit-level equality, with the values printed as numbers.
template <class T>
::testing::AssertionResult same(const char* got_expr, const char* want_expr, T got, T want) {
  if (raw(got) == raw(want)) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << got_expr << " = " << static_cast<double>(to_compute(got)) << " (bits 0x"
                                       << std::hex << raw(got) << "), expected " << want_expr << " = " << std::dec
                                       << static_cast<double>(to_compute(want)) << " (bits 0x" << std::hex << raw(want)
                                       << ")";
}
#define EXPECT_SAME(got, want) EXPECT_PRED_FORMAT2(same, got, want)

template <class T>
RedOp<T> make_op(RedOpKind kind, T scalar = T{}, int nranks = 1) {
  return RedOp<T>(RedOpArg{kind, scalar_to_bits(scalar), nranks});
}

// ---- Every op on every type: small values all twelve types hold exactly ---------------------------
template <class T>
class RedOpAllTypesTest : public ::testing::Test {};
using AllTypes = ::testing::Types<int8_t, uint8_t, int32_t, uint32_t, int64_t, uint64_t, half_t, float, double,
                                  bfloat16_t, fp8_e4m3_t, fp8_e5m2_t>;
TYPED_TEST_SUITE(RedOpAllTypesTest, AllTypes);

TYPED_TEST(RedOpAllTypesTest, SumProdMaxMin) {
  using T = TypeParam;
  EXPECT_SAME(make_op<T>(RedOpKind::kSum)(val<T>(2), val<T>(3)), val<T>(5));
  EXPECT_SAME(make_op<T>(RedOpKind::kProd)(val<T>(2), val<T>(3)), val<T>(6));
  EXPECT_SAME(make_op<T>(RedOpKind::kMax)(val<T>(2), val<T>(3)), val<T>(3));
  EXPECT_SAME(make_op<T>(RedOpKind::kMax)(val<T>(3), val<T>(2)), val<T>(3));
  EXPECT_SAME(make_op<T>(RedOpKind::kMin)(val<T>(2), val<T>(3)), val<T>(2));
  EXPECT_SAME(make_op<T>(RedOpKind::kMin)(val<T>(3), val<T>(2)), val<T>(2));
  for (RedOpKind kind : {RedOpKind::kSum, RedOpKind::kProd, RedOpKind::kMax, RedOpKind::kMin}) {
    const RedOp<T> op = make_op<T>(kind);
    EXPECT_FALSE(op.has_pre_op());
    EXPECT_FALSE(op.has_post_op());
    EXPECT_EQ(op.kind(), kind);
    EXPECT_EQ(op.combine_kind(), kind);
    EXPECT_SAME(op.pre_op(val<T>(7)), val<T>(7));
    EXPECT_SAME(op.post_op(val<T>(7)), val<T>(7));
  }
  if constexpr (std::is_signed<T>::value || DataTypeTraits<T>::kIsFloat) {
    EXPECT_SAME(make_op<T>(RedOpKind::kSum)(val<T>(-2), val<T>(3)), val<T>(1));
    EXPECT_SAME(make_op<T>(RedOpKind::kProd)(val<T>(-2), val<T>(3)), val<T>(-6));
    EXPECT_SAME(make_op<T>(RedOpKind::kMax)(val<T>(-2), val<T>(1)), val<T>(1));
    EXPECT_SAME(make_op<T>(RedOpKind::kMin)(val<T>(-2), val<T>(1)), val<T>(-2));
    EXPECT_SAME(make_op<T>(RedOpKind::kMax)(val<T>(-2), val<T>(-3)), val<T>(-2));
    EXPECT_SAME(make_op<T>(RedOpKind::kMin)(val<T>(-2), val<T>(-3)), val<T>(-3));
  }
}

TYPED_TEST(RedOpAllTypesTest, PreMulSum) {
  using T = TypeParam;
  const RedOp<T> op = make_op<T>(RedOpKind::kPreMulSum, val<T>(3));
  EXPECT_TRUE(op.has_pre_op());
  EXPECT_FALSE(op.has_post_op());
  EXPECT_EQ(op.combine_kind(), RedOpKind::kSum);
  EXPECT_SAME(op.pre_op(val<T>(2)), val<T>(6));
  EXPECT_SAME(op(val<T>(2), val<T>(3)), val<T>(5));  // combines as a plain sum
  EXPECT_SAME(op.post_op(val<T>(7)), val<T>(7));
  // Two ranks holding 2 and 4: 3*2 + 3*4.
  EXPECT_SAME(op.post_op(op(op.pre_op(val<T>(2)), op.pre_op(val<T>(4)))), val<T>(18));
  // ncclScalarDevice: the scalar is read from memory when the op is built (where the operation runs),
  // and scalar_bits is ignored.
  T in_memory = val<T>(3);
  const RedOp<T> dev(RedOpArg{RedOpKind::kPreMulSum, scalar_to_bits(val<T>(5)), 1, &in_memory});
  EXPECT_SAME(dev.pre_op(val<T>(2)), val<T>(6));
  in_memory = val<T>(4);
  EXPECT_SAME(RedOp<T>(RedOpArg{RedOpKind::kPreMulSum, 0, 1, &in_memory}).pre_op(val<T>(2)), val<T>(8));
}

TYPED_TEST(RedOpAllTypesTest, SumPostDiv) {
  using T = TypeParam;
  const RedOp<T> op = make_op<T>(RedOpKind::kSumPostDiv, T{}, 2);
  EXPECT_FALSE(op.has_pre_op());
  EXPECT_TRUE(op.has_post_op());
  EXPECT_EQ(op.combine_kind(), RedOpKind::kSum);
  EXPECT_SAME(op.pre_op(val<T>(7)), val<T>(7));
  EXPECT_SAME(op(val<T>(3), val<T>(4)), val<T>(7));
  EXPECT_SAME(op.post_op(val<T>(7)), val<T>(DataTypeTraits<T>::kIsFloat ? 3.5 : 3));
  EXPECT_SAME(op.post_op(val<T>(8)), val<T>(4));
}

TYPED_TEST(RedOpAllTypesTest, ScalarBitsRoundTrip) {
  using T = TypeParam;
  const T v = val<T>(3);
  const uint64_t bits = scalar_to_bits(v);
  EXPECT_EQ(bits, raw(v));  // zero-extended: the bytes above sizeof(T) are 0
  EXPECT_SAME(scalar_from_bits<T>(bits), v);
}

TYPED_TEST(RedOpAllTypesTest, NonPositiveNranksDividesByOne) {
  using T = TypeParam;
  EXPECT_SAME(make_op<T>(RedOpKind::kSumPostDiv, T{}, 0).post_op(val<T>(5)), val<T>(5));
  EXPECT_SAME(make_op<T>(RedOpKind::kSumPostDiv, T{}, -3).post_op(val<T>(5)), val<T>(5));
}

// reduce_range must equal the element-wise operator for every op, including in place (dst == a, dst ==
// b) and lengths that are not a multiple of the internal block. Random bit patterns: for the floating
// types that includes NaN, inf and subnormals.
template <class T>
std::vector<T> random_values(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<T> v(n);
  for (T& x : v) {
    const uint64_t r = rng();
    if constexpr (DataTypeTraits<T>::kIsFloat && !DataTypeTraits<T>::kIsLowPrecision) {
      // Mostly ordinary values, with some raw patterns (NaN, inf, subnormals) mixed in.
      if (r % 8 == 0) {
        std::memcpy(&x, &r, sizeof(T));
      } else {
        x = static_cast<T>(static_cast<int64_t>(r >> 40) - (int64_t{1} << 23)) / static_cast<T>(1 << (r % 16));
      }
    } else {
      std::memcpy(&x, &r, sizeof(T));
    }
  }
  return v;
}

TYPED_TEST(RedOpAllTypesTest, ReduceRangeMatchesElementwise) {
  using T = TypeParam;
  for (size_t n : {size_t{0}, size_t{1}, size_t{15}, size_t{64}, size_t{1037}}) {
    const std::vector<T> a = random_values<T>(n, 11 + n);
    const std::vector<T> b = random_values<T>(n, 29 + n);
    for (RedOpKind kind : {RedOpKind::kSum, RedOpKind::kProd, RedOpKind::kMax, RedOpKind::kMin, RedOpKind::kPreMulSum,
                           RedOpKind::kSumPostDiv}) {
      const RedOp<T> op = make_op<T>(kind, val<T>(3), 4);
      std::vector<T> want(n);
      for (size_t i = 0; i < n; ++i) want[i] = op(a[i], b[i]);

      std::vector<T> out(n);
      reduce_range(op, out.data(), a.data(), b.data(), n);
      std::vector<T> in_a = a;
      reduce_range(op, in_a.data(), in_a.data(), b.data(), n);
      std::vector<T> in_b = b;
      reduce_range(op, in_b.data(), a.data(), in_b.data(), n);
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(raw(out[i]), raw(want[i])) << "kind " << static_cast<int>(kind) << " n " << n << " i " << i;
        ASSERT_EQ(raw(in_a[i]), raw(want[i])) << "in place (a), kind " << static_cast<int>(kind) << " i " << i;
        ASSERT_EQ(raw(in_b[i]), raw(want[i])) << "in place (b), kind " << static_cast<int>(kind) << " i " << i;
      }
    }
  }
}

// ---- Integers: wrapping, truncating division, wrapping PreMulSum ---------------------------------
template <class T>
T sum(T a, T b) {
  return make_op<T>(RedOpKind::kSum)(a, b);
}
template <class T>
T prod(T a, T b) {
  return make_op<T>(RedOpKind::kProd)(a, b);
}
template <class T>
T avg_div(T x, int nranks) {
  return make_op<T>(RedOpKind::kSumPostDiv, T{}, nranks).post_op(x);
}
template <class T>
T premul(T x, T scalar) {
  return make_op<T>(RedOpKind::kPreMulSum, scalar).pre_op(x);
}

TEST(RedOpIntegerTest, SumAndProdWrap) {
  EXPECT_EQ(sum<int8_t>(127, 1), -128);
  EXPECT_EQ(sum<int8_t>(-128, -1), 127);
  EXPECT_EQ(prod<int8_t>(16, 16), 0);
  EXPECT_EQ(prod<int8_t>(-128, -1), -128);
  EXPECT_EQ(prod<int8_t>(100, 3), 44);  // 300 - 256
  EXPECT_EQ(sum<uint8_t>(255, 1), 0);
  EXPECT_EQ(prod<uint8_t>(200, 2), 144);
  EXPECT_EQ(prod<uint8_t>(255, 255), 1);

  constexpr int32_t kI32Max = std::numeric_limits<int32_t>::max(), kI32Min = std::numeric_limits<int32_t>::min();
  EXPECT_EQ(sum<int32_t>(kI32Max, 1), kI32Min);
  EXPECT_EQ(sum<int32_t>(kI32Min, -1), kI32Max);
  EXPECT_EQ(prod<int32_t>(kI32Min, -1), kI32Min);
  EXPECT_EQ(prod<int32_t>(65536, 65536), 0);
  EXPECT_EQ(prod<int32_t>(46341, 46341), -2147479015);  // 2147488281 - 2^32
  EXPECT_EQ(sum<uint32_t>(0xffffffffu, 1u), 0u);
  EXPECT_EQ(prod<uint32_t>(0x10000u, 0x10000u), 0u);
  EXPECT_EQ(prod<uint32_t>(0xffffffffu, 0xffffffffu), 1u);

  constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max(), kI64Min = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(sum<int64_t>(kI64Max, 1), kI64Min);
  EXPECT_EQ(prod<int64_t>(kI64Min, -1), kI64Min);
  EXPECT_EQ(prod<int64_t>(int64_t{1} << 32, int64_t{1} << 32), 0);
  EXPECT_EQ(sum<uint64_t>(~uint64_t{0}, 1), 0u);
  EXPECT_EQ(prod<uint64_t>(~uint64_t{0}, ~uint64_t{0}), 1u);
}

TEST(RedOpIntegerTest, MaxMinUseTheTypesOrder) {
  EXPECT_EQ(make_op<int8_t>(RedOpKind::kMax)(-128, 127), 127);
  EXPECT_EQ(make_op<uint8_t>(RedOpKind::kMax)(0x80, 0x7f), 0x80);  // unsigned: 128 > 127
  EXPECT_EQ(make_op<int32_t>(RedOpKind::kMin)(-1, 0), -1);
  EXPECT_EQ(make_op<uint32_t>(RedOpKind::kMin)(0xffffffffu, 0u), 0u);
  constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(make_op<int64_t>(RedOpKind::kMin)(kI64Min, 0), kI64Min);
  EXPECT_EQ(make_op<uint64_t>(RedOpKind::kMax)(~uint64_t{0}, 1), ~uint64_t{0});
}

TEST(RedOpIntegerTest, SumPostDivTruncatesTowardZero) {
  EXPECT_EQ(avg_div<int32_t>(7, 2), 3);
  EXPECT_EQ(avg_div<int32_t>(-7, 2), -3);
  EXPECT_EQ(avg_div<int32_t>(-1, 4), 0);
  EXPECT_EQ(avg_div<int32_t>(std::numeric_limits<int32_t>::min(), 1), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(avg_div<int32_t>(std::numeric_limits<int32_t>::min(), 3), -715827882);
  EXPECT_EQ(avg_div<int8_t>(-128, 3), -42);
  EXPECT_EQ(avg_div<int8_t>(-7, 2), -3);
  EXPECT_EQ(avg_div<int8_t>(127, 300), 0);
  EXPECT_EQ(avg_div<uint8_t>(200, 3), 66);
  EXPECT_EQ(avg_div<uint8_t>(250, 300), 0);  // the divisor does not wrap to 8 bits
  EXPECT_EQ(avg_div<uint8_t>(255, 256), 0);
  EXPECT_EQ(avg_div<uint32_t>(0xffffffffu, 2), 0x7fffffffu);  // unsigned, not -1 / 2
  EXPECT_EQ(avg_div<int64_t>(-9, 4), -2);
  EXPECT_EQ(avg_div<int64_t>(std::numeric_limits<int64_t>::min(), 2), std::numeric_limits<int64_t>::min() / 2);
  EXPECT_EQ(avg_div<uint64_t>(~uint64_t{0}, 3), 0x5555555555555555u);
}

TEST(RedOpIntegerTest, PreMulSumWrapsInTheIntegerType) {
  EXPECT_EQ(premul<int8_t>(100, 3), 44);
  EXPECT_EQ(premul<int8_t>(-128, -1), -128);
  EXPECT_EQ(premul<uint8_t>(2, 255), 254);
  EXPECT_EQ(premul<int32_t>(std::numeric_limits<int32_t>::min(), -1), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(premul<uint32_t>(0x80000000u, 2u), 0u);
  EXPECT_EQ(premul<int64_t>(-3, 5), -15);
  EXPECT_EQ(premul<uint64_t>(uint64_t{1} << 63, 2), 0u);
  // The scalar's bits are T's own: -1 as int8 is 0xff, zero-extended.
  EXPECT_EQ(scalar_to_bits<int8_t>(-1), 0xffu);
  EXPECT_EQ(scalar_to_bits<int32_t>(-1), 0xffffffffu);
}

// ---- Floating point --------------------------------------------------------------------------------
TEST(RedOpFloatTest, FloatAndDouble) {
  EXPECT_EQ(premul<float>(3.0f, 0.5f), 1.5f);
  EXPECT_EQ(premul<double>(3.0, 0.25), 0.75);
  EXPECT_EQ(avg_div<float>(1.0f, 3), 1.0f / 3.0f);
  EXPECT_EQ(avg_div<double>(1.0, 3), 1.0 / 3.0);
  EXPECT_EQ(sum<float>(16777216.0f, 1.0f), 16777216.0f);  // 2^24 + 1: tie, even
  EXPECT_EQ(sum<float>(3.0e38f, 3.0e38f), std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(sum<double>(std::numeric_limits<double>::quiet_NaN(), 1.0)));
}

TEST(RedOpFloatTest, MaxMinTreatNanAsMissing) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const RedOp<float> max = make_op<float>(RedOpKind::kMax), min = make_op<float>(RedOpKind::kMin);
  EXPECT_EQ(max(nan, 1.0f), 1.0f);
  EXPECT_EQ(max(1.0f, nan), 1.0f);
  EXPECT_EQ(min(nan, 1.0f), 1.0f);
  EXPECT_EQ(min(1.0f, nan), 1.0f);
  EXPECT_TRUE(std::isnan(max(nan, nan)));
  EXPECT_EQ(max(-std::numeric_limits<float>::infinity(), -1.0f), -1.0f);
  const double dnan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(make_op<double>(RedOpKind::kMax)(dnan, -5.0), -5.0);
  EXPECT_EQ(make_op<double>(RedOpKind::kMin)(-5.0, dnan), -5.0);
  const half_t hnan{0x7e00};
  EXPECT_EQ(make_op<half_t>(RedOpKind::kMax)(hnan, half_t{0x3c00}).bits, 0x3c00);
  EXPECT_EQ(make_op<half_t>(RedOpKind::kMin)(half_t{0xbc00}, hnan).bits, 0xbc00);
}

// ---- Low precision: compute in float, round once (RNE) ---------------------------------------------
TEST(RedOpLowPrecisionTest, HalfRounding) {
  EXPECT_EQ(sum(half_t{0x6800}, half_t{0x3c00}).bits, 0x6800);  // 2048 + 1 = 2049: tie, even 2048
  EXPECT_EQ(sum(half_t{0x6800}, half_t{0x4200}).bits, 0x6802);  // 2048 + 3 = 2051: tie, even 2052
  EXPECT_EQ(sum(half_t{0x7bff}, half_t{0x7bff}).bits, 0x7c00);  // 65504 + 65504 overflows to inf
  EXPECT_EQ(prod(val<half_t>(300), val<half_t>(300)).bits, 0x7c00);
  EXPECT_EQ(prod(half_t{0x0001}, half_t{0x3800}).bits, 0x0000);  // 2^-24 * 0.5: tie, even 0
  EXPECT_EQ(sum(half_t{0x7e00}, half_t{0x3c00}).bits, 0x7fff);   // NaN in, canonical NaN out
  // PreMulSum by half(1/3) = 1365/4096: 3 * that = 1 - 2^-12, the tie between 0x3bff and 1: even is 1.
  EXPECT_EQ(premul(half_t{0x4200}, half_t{0x3555}).bits, 0x3c00);
  EXPECT_EQ(premul(half_t{0x4200}, half_t{0x3800}).bits, 0x3e00);                            // 3 * 0.5 = 1.5
  EXPECT_EQ(avg_div(half_t{0x3c00}, 3).bits, 0x3555);                                        // 1/3 rounded once
  EXPECT_EQ(make_op<half_t>(RedOpKind::kMax)(half_t{0xbc00}, half_t{0x3800}).bits, 0x3800);  // max(-1, 0.5)
  EXPECT_EQ(make_op<half_t>(RedOpKind::kMin)(half_t{0xbc00}, half_t{0x3800}).bits, 0xbc00);
}

TEST(RedOpLowPrecisionTest, Bfloat16Rounding) {
  EXPECT_EQ(sum(val<bfloat16_t>(256), val<bfloat16_t>(1)).bits, val<bfloat16_t>(256).bits);  // 257: tie, even
  EXPECT_EQ(sum(val<bfloat16_t>(258), val<bfloat16_t>(1)).bits, val<bfloat16_t>(260).bits);  // 259: tie, even
  EXPECT_EQ(sum(bfloat16_t{0x3f80}, bfloat16_t{0x3b80}).bits, 0x3f80);                       // 1 + 2^-8
  EXPECT_EQ(sum(bfloat16_t{0x7f7f}, bfloat16_t{0x7f7f}).bits, 0x7f80);                       // overflow: inf
  EXPECT_EQ(make_op<bfloat16_t>(RedOpKind::kMax)(bfloat16_t{0xc000}, bfloat16_t{0xbf80}).bits, 0xbf80);
}

TEST(RedOpLowPrecisionTest, Fp8RoundingAndSaturation) {
  using E4 = fp8_e4m3_t;
  using E5 = fp8_e5m2_t;
  EXPECT_EQ(sum(E4{0x58}, E4{0x38}).bits, 0x58);  // 16 + 1 = 17: tie between 16 and 18, even 16
  EXPECT_EQ(sum(E4{0x59}, E4{0x38}).bits, 0x5a);  // 18 + 1 = 19: tie between 18 and 20, even 20
  EXPECT_EQ(sum(E4{0x7e}, E4{0x7e}).bits, 0x7e);  // 448 + 448 saturates to 448
  EXPECT_EQ(sum(E4{0xfe}, E4{0xfe}).bits, 0xfe);
  EXPECT_EQ(prod(E4{0x7e}, E4{0x7e}).bits, 0x7e);
  EXPECT_EQ(sum(E4{0x7f}, E4{0x38}).bits, 0x7f);                           // NaN stays NaN
  EXPECT_EQ(prod(E4{0x01}, E4{0x30}).bits, 0x00);                          // 2^-9 * 0.5: tie, even 0
  EXPECT_EQ(make_op<E4>(RedOpKind::kMax)(E4{0xb8}, E4{0x30}).bits, 0x30);  // max(-1, 0.5), compared in float
  EXPECT_EQ(make_op<E4>(RedOpKind::kMin)(E4{0x08}, E4{0x07}).bits, 0x07);  // smallest normal vs subnormal
  EXPECT_EQ(premul(E4{0x40}, E4{0x30}).bits, 0x38);                        // 2 * 0.5

  EXPECT_EQ(sum(E5{0x7b}, E5{0x7b}).bits, 0x7b);  // 57344 + 57344 saturates
  EXPECT_EQ(sum(E5{0x7c}, E5{0x3c}).bits, 0x7b);  // inf + 1: the saturating rounding turns inf finite
  EXPECT_EQ(sum(E5{0x3c}, E5{0x34}).bits, 0x3d);  // 1 + 0.25 = 1.25, exact
  EXPECT_EQ(sum(E5{0x3c}, E5{0x30}).bits, 0x3c);  // 1 + 0.125: tie, even 1
  EXPECT_EQ(make_op<E5>(RedOpKind::kMax)(E5{0x7c}, E5{0x3c}).bits, 0x7c);  // max selects: inf passes through
  EXPECT_EQ(avg_div(E5{0x42}, 2).bits, 0x3e);                              // 3 / 2 = 1.5
}

}  // namespace
}  // namespace cclab
