// Tests of kernels/dtypes.h: the low-precision conversions must match the CUDA toolkit bit for bit.
//
// With the toolkit's headers (cuda_fp16.h, cuda_bf16.h, cuda_fp8.h: header-only on the host side) the
// conversions are compared against CUDA's own host code over every bit pattern, every tie between two
// representable neighbours (and the floats just around it), and a few million pseudo-random floats.
// A table of hand-checked values runs everywhere; with the toolkit it is itself checked against CUDA.
#include "kernels/dtypes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#if __has_include(<cuda_fp16.h>) && __has_include(<cuda_bf16.h>) && __has_include(<cuda_fp8.h>)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#define CCLAB_TEST_HAVE_CUDA_TYPES 1
#else
#define CCLAB_TEST_HAVE_CUDA_TYPES 0
#endif

namespace cclab {
namespace {

uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof(u));
  return u;
}

float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof(f));
  return f;
}

std::string hex(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08x", v);
  return buf;
}

// Per-format description used by the generic loops below.
template <class T>
struct Format;
template <>
struct Format<half_t> {
  static constexpr uint32_t kPatterns = 1u << 16;
  static constexpr uint32_t kSignBit = 0x8000u;
  static constexpr uint32_t kMaxFinite = 0x7bffu;
  static constexpr int kMinExp = -24, kMaxExp = 16;  // binades the format touches, plus margin
  static const char* name() { return "half"; }
};
template <>
struct Format<bfloat16_t> {
  static constexpr uint32_t kPatterns = 1u << 16;
  static constexpr uint32_t kSignBit = 0x8000u;
  static constexpr uint32_t kMaxFinite = 0x7f7fu;
  static constexpr int kMinExp = -133, kMaxExp = 128;
  static const char* name() { return "bfloat16"; }
};
template <>
struct Format<fp8_e4m3_t> {
  static constexpr uint32_t kPatterns = 1u << 8;
  static constexpr uint32_t kSignBit = 0x80u;
  static constexpr uint32_t kMaxFinite = 0x7eu;
  static constexpr int kMinExp = -11, kMaxExp = 10;
  static const char* name() { return "fp8_e4m3"; }
};
template <>
struct Format<fp8_e5m2_t> {
  static constexpr uint32_t kPatterns = 1u << 8;
  static constexpr uint32_t kSignBit = 0x80u;
  static constexpr uint32_t kMaxFinite = 0x7bu;
  static constexpr int kMinExp = -18, kMaxExp = 17;
  static const char* name() { return "fp8_e5m2"; }
};

template <class T>
T make(uint32_t bits) {
  T v;
  v.bits = static_cast<decltype(v.bits)>(bits);
  return v;
}

// ---- Traits and storage --------------------------------------------------------------------------
static_assert(DataTypeTraits<half_t>::kIsFloat && DataTypeTraits<half_t>::kIsLowPrecision, "");
static_assert(DataTypeTraits<bfloat16_t>::kIsLowPrecision && DataTypeTraits<fp8_e4m3_t>::kIsLowPrecision &&
                  DataTypeTraits<fp8_e5m2_t>::kIsLowPrecision,
              "");
static_assert(DataTypeTraits<float>::kIsFloat && !DataTypeTraits<float>::kIsLowPrecision, "");
static_assert(DataTypeTraits<double>::kIsFloat && !DataTypeTraits<double>::kIsLowPrecision, "");
static_assert(!DataTypeTraits<int8_t>::kIsFloat && !DataTypeTraits<uint8_t>::kIsFloat &&
                  !DataTypeTraits<int32_t>::kIsFloat && !DataTypeTraits<uint32_t>::kIsFloat &&
                  !DataTypeTraits<int64_t>::kIsFloat && !DataTypeTraits<uint64_t>::kIsFloat,
              "");
static_assert(!DataTypeTraits<int64_t>::kIsLowPrecision, "");
static_assert(std::is_same<ComputeType<half_t>, float>::value && std::is_same<ComputeType<fp8_e5m2_t>, float>::value,
              "");
static_assert(std::is_same<ComputeType<double>, double>::value && std::is_same<ComputeType<int8_t>, int8_t>::value, "");

TEST(DtypesTest, ComputeHelpers) {
  EXPECT_EQ(to_compute(half_t{0x3e00}), 1.5f);
  EXPECT_EQ(from_compute<half_t>(1.5f).bits, 0x3e00);
  EXPECT_EQ(from_compute<fp8_e4m3_t>(1000.0f).bits, 0x7e);  // one RNE rounding, saturating
  EXPECT_EQ(to_compute(2.5), 2.5);
  EXPECT_EQ(from_compute<double>(2.5), 2.5);
  EXPECT_EQ(to_compute(int8_t{-7}), -7);
  EXPECT_EQ(from_compute<uint64_t>(42u), 42u);
}

// ---- Hand-checked values (run with or without the CUDA toolkit) ----------------------------------
struct FromCase {
  uint32_t in;  // float bits
  uint32_t out;
};
struct ToCase {
  uint32_t in;
  uint32_t out;  // float bits
};

constexpr uint32_t kNan = 0x7fc00000u, kNegNan = 0xffc00000u, kSnan = 0x7f800001u, kInf = 0x7f800000u;

const std::vector<FromCase> kHalfFrom = {
    {0x3f800000u, 0x3c00u},  // 1
    {0xc0000000u, 0xc000u},  // -2
    {0x3dcccccdu, 0x2e66u},  // 0.1
    {0x477fe000u, 0x7bffu},  // 65504, the largest finite
    {0x477fefffu, 0x7bffu},  // just below 65520
    {0x477ff000u, 0x7c00u},  // 65520: tie, even neighbour is inf
    {0x501502f9u, 0x7c00u},  // 1e10
    {kInf, 0x7c00u},        {0xff800000u, 0xfc00u}, {kNan, 0x7fffu}, {kNegNan, 0x7fffu},  // CUDA drops a NaN's sign
    {kSnan, 0x7fffu},       {0x33800000u, 0x0001u},  // 2^-24, the smallest subnormal
    {0x33000000u, 0x0000u},                          // 2^-25: tie, rounds to even 0
    {0x33000001u, 0x0001u},                          // just above
    {0x33c00000u, 0x0002u},                          // 3 * 2^-25: tie between 1 and 2 units, even is 2
    {0x387fc000u, 0x03ffu},                          // largest subnormal
    {0x387fe000u, 0x0400u},                          // tie between the largest subnormal and 2^-14: even is 2^-14
    {0x38800000u, 0x0400u},                          // 2^-14, the smallest normal
    {0x3f801000u, 0x3c00u},                          // 1 + 2^-11: tie, even
    {0x3f803000u, 0x3c02u},                          // 1 + 3 * 2^-11: tie, even
    {0x80000000u, 0x8000u},                          // -0
    {0xb3000000u, 0x8000u},                          // -2^-25 -> -0
    {0x00000001u, 0x0000u},                          // float subnormal
};

const std::vector<FromCase> kBf16From = {
    {0x3f800000u, 0x3f80u},  // 1
    {0x3f808000u, 0x3f80u},  // 1 + 2^-8: tie, even
    {0x3f818000u, 0x3f82u},  // 1 + 3 * 2^-8: tie, even
    {0x3dcccccdu, 0x3dcdu},  // 0.1
    {0x7f7fffffu, 0x7f80u},  // FLT_MAX rounds to inf
    {0x7f7f7fffu, 0x7f7fu},  // below the tie stays at the largest finite
    {0x7f7f8000u, 0x7f80u},  // tie above the (odd) largest finite: inf
    {kInf, 0x7f80u},        {0xff800000u, 0xff80u}, {kNan, 0x7fffu},
    {kNegNan, 0x7fffu},     {kSnan, 0x7fffu},       {0x00000001u, 0x0000u},  // float subnormal
    {0x00008000u, 0x0000u},                                                  // tie, even 0
    {0x00018000u, 0x0002u},                                                  // tie, even 2
    {0x80000000u, 0x8000u},
};

const std::vector<FromCase> kE4m3From = {
    {0x3f800000u, 0x38u},  // 1
    {0x3dcccccdu, 0x1du},  // 0.1
    {0x43700000u, 0x77u},  // 240
    {0x43800000u, 0x78u},  // 256
    {0x43e00000u, 0x7eu},  // 448, the largest finite
    {0x43e80000u, 0x7eu},  // 464: tie, even neighbour is 448
    {0x43e80001u, 0x7eu},  // just above 464: saturates
    {0x43f00000u, 0x7eu},  // 480 (0x7f would be NaN): saturates
    {0x49742400u, 0x7eu},  // 1e6
    {kInf, 0x7eu},         // satfinite: inf saturates too
    {0xff800000u, 0xfeu}, {kNan, 0x7fu},        {kNegNan, 0x7fu},
    {kSnan, 0x7fu},       {0x3b000000u, 0x01u},  // 2^-9, the smallest subnormal
    {0x3a800000u, 0x00u},                        // 2^-10: tie, even 0
    {0x3a800001u, 0x01u}, {0x3b400000u, 0x02u},  // 3 * 2^-10: tie, even 2
    {0x3c600000u, 0x07u},                        // 7 * 2^-9, the largest subnormal
    {0x3c700000u, 0x08u},                        // 15 * 2^-10: tie, even is 2^-6
    {0x3c800000u, 0x08u},                        // 2^-6, the smallest normal
    {0x41880000u, 0x58u},                        // 17: tie between 16 and 18, even 16
    {0x41980000u, 0x5au},                        // 19: tie between 18 and 20, even 20
    {0x80000000u, 0x80u}, {0xba000000u, 0x80u},  // -2^-11 -> -0
};

const std::vector<FromCase> kE5m2From = {
    {0x3f800000u, 0x3cu},  // 1
    {0x3f900000u, 0x3cu},  // 1.125: tie between 1 and 1.25, even 1
    {0x3fb00000u, 0x3eu},  // 1.375: tie between 1.25 and 1.5, even 1.5
    {0x47600000u, 0x7bu},  // 57344, the largest finite
    {0x476fffffu, 0x7bu},  // just below 61440
    {0x47700000u, 0x7bu},  // 61440: tie, rounds to inf, saturates
    {0x47800000u, 0x7bu},  // 65536
    {kInf, 0x7bu},        {0xff800000u, 0xfbu}, {kNan, 0x7fu},
    {kNegNan, 0x7fu},     {kSnan, 0x7fu},       {0x37800000u, 0x01u},  // 2^-16, the smallest subnormal
    {0x37000000u, 0x00u},                                              // 2^-17: tie, even 0
    {0x37c00000u, 0x02u},                                              // 3 * 2^-17: tie, even 2
    {0x38800000u, 0x04u},                                              // 2^-14, the smallest normal
    {0x80000000u, 0x80u},
};

const std::vector<ToCase> kHalfTo = {
    {0x0001u, 0x33800000u}, {0x03ffu, 0x387fc000u}, {0x0400u, 0x38800000u}, {0x3c00u, 0x3f800000u},
    {0x7bffu, 0x477fe000u}, {0x7c00u, kInf},        {0xfc00u, 0xff800000u}, {0x7c01u, 0x7fffffffu},
    {0xfe00u, 0x7fffffffu}, {0x8000u, 0x80000000u}, {0x8001u, 0xb3800000u},
};
const std::vector<ToCase> kBf16To = {
    {0x3f80u, 0x3f800000u}, {0x7f80u, kInf},        {0x7fc1u, 0x7fc10000u},
    {0xffc0u, 0xffc00000u}, {0x0001u, 0x00010000u}, {0x8000u, 0x80000000u},
};
const std::vector<ToCase> kE4m3To = {
    {0x01u, 0x3b000000u}, {0x07u, 0x3c600000u}, {0x08u, 0x3c800000u}, {0x38u, 0x3f800000u},
    {0x78u, 0x43800000u}, {0x7eu, 0x43e00000u}, {0x7fu, 0x7fffffffu}, {0xffu, 0x7fffffffu},
    {0xfeu, 0xc3e00000u}, {0x80u, 0x80000000u}, {0x00u, 0x00000000u},
};
const std::vector<ToCase> kE5m2To = {
    {0x01u, 0x37800000u}, {0x04u, 0x38800000u}, {0x3cu, 0x3f800000u}, {0x7bu, 0x47600000u}, {0x7cu, kInf},
    {0xfcu, 0xff800000u}, {0x7du, 0x7fffffffu}, {0xffu, 0x7fffffffu}, {0x80u, 0x80000000u},
};

template <class T>
void check_table(const std::vector<FromCase>& from_cases, const std::vector<ToCase>& to_cases) {
  for (const FromCase& c : from_cases) {
    EXPECT_EQ(from_float<T>(bits_float(c.in)).bits, c.out) << Format<T>::name() << " from_float(" << hex(c.in) << ")";
  }
  for (const ToCase& c : to_cases) {
    EXPECT_EQ(float_bits(to_float(make<T>(c.in))), c.out) << Format<T>::name() << " to_float(" << hex(c.in) << ")";
  }
}

TEST(DtypesTest, KnownValuesHalf) { check_table<half_t>(kHalfFrom, kHalfTo); }
TEST(DtypesTest, KnownValuesBfloat16) { check_table<bfloat16_t>(kBf16From, kBf16To); }
TEST(DtypesTest, KnownValuesE4m3) { check_table<fp8_e4m3_t>(kE4m3From, kE4m3To); }
TEST(DtypesTest, KnownValuesE5m2) { check_table<fp8_e5m2_t>(kE5m2From, kE5m2To); }

// Self-consistency that needs no reference: every non-NaN pattern survives a round trip (except e5m2
// infinity, which the saturating conversion maps to the largest finite), and to_float is strictly
// increasing over the positive encodings.
template <class T>
void check_round_trip() {
  using F = Format<T>;
  float prev = -1.0f;
  for (uint32_t b = 0; b < F::kPatterns; ++b) {
    const float f = to_float(make<T>(b));
    if (std::isnan(f)) continue;
    uint32_t expected = b;
    if (std::is_same<T, fp8_e5m2_t>::value && std::isinf(f)) expected = (b & F::kSignBit) | F::kMaxFinite;
    ASSERT_EQ(from_float<T>(f).bits, expected) << F::name() << " round trip of " << hex(b);
    if (b < F::kSignBit) {
      ASSERT_GT(f, prev) << F::name() << " not increasing at " << hex(b);
      prev = f;
    }
  }
}

TEST(DtypesTest, RoundTripAllPatterns) {
  check_round_trip<half_t>();
  check_round_trip<bfloat16_t>();
  check_round_trip<fp8_e4m3_t>();
  check_round_trip<fp8_e5m2_t>();
}

#if CCLAB_TEST_HAVE_CUDA_TYPES

// ---- CUDA's host-side conversions, the reference -------------------------------------------------
uint32_t cuda_from_float(half_t*, float f) { return static_cast<__half_raw>(__float2half_rn(f)).x; }
uint32_t cuda_from_float(bfloat16_t*, float f) { return static_cast<__nv_bfloat16_raw>(__float2bfloat16_rn(f)).x; }
uint32_t cuda_from_float(fp8_e4m3_t*, float f) { return __nv_cvt_float_to_fp8(f, __NV_SATFINITE, __NV_E4M3); }
uint32_t cuda_from_float(fp8_e5m2_t*, float f) { return __nv_cvt_float_to_fp8(f, __NV_SATFINITE, __NV_E5M2); }

float cuda_to_float(half_t*, uint32_t b) {
  __half_raw r;
  r.x = static_cast<unsigned short>(b);
  return __half2float(__half(r));
}
float cuda_to_float(bfloat16_t*, uint32_t b) {
  __nv_bfloat16_raw r;
  r.x = static_cast<unsigned short>(b);
  return __bfloat162float(__nv_bfloat16(r));
}
float cuda_to_float(fp8_e4m3_t*, uint32_t b) {
  __nv_fp8_e4m3 v;
  v.__x = static_cast<__nv_fp8_storage_t>(b);
  return static_cast<float>(v);
}
float cuda_to_float(fp8_e5m2_t*, uint32_t b) {
  __nv_fp8_e5m2 v;
  v.__x = static_cast<__nv_fp8_storage_t>(b);
  return static_cast<float>(v);
}

template <class T>
uint32_t ref_from(float f) {
  return cuda_from_float(static_cast<T*>(nullptr), f);
}
template <class T>
float ref_to(uint32_t b) {
  return cuda_to_float(static_cast<T*>(nullptr), b);
}

// Compares from_float<T> with CUDA on each input; reports the count and the first few mismatches.
template <class T>
class FromFloatChecker {
 public:
  void check(uint32_t in_bits) {
    ++checked_;
    const float f = bits_float(in_bits);
    const uint32_t got = from_float<T>(f).bits;
    const uint32_t want = ref_from<T>(f);
    if (got != want && ++mismatches_ <= 5) {
      first_ += "\n  from_float<" + std::string(Format<T>::name()) + ">(" + hex(in_bits) + ") = " + hex(got) +
                ", CUDA " + hex(want);
    }
  }
  void check_around(float f) {  // f and its float neighbours on both sides
    const uint32_t u = float_bits(f);
    check(u);
    if ((u & 0x7fffffffu) != 0) check(u - 1);
    if ((u & 0x7fffffffu) < 0x7f800000u) check(u + 1);
  }
  void expect_clean(const char* what) const {
    EXPECT_EQ(mismatches_, 0u) << what << ": " << mismatches_ << " of " << checked_ << " differ" << first_;
  }
  uint64_t checked() const { return checked_; }

 private:
  uint64_t checked_ = 0;
  uint64_t mismatches_ = 0;
  std::string first_;
};

template <class T>
void check_table_against_cuda(const std::vector<FromCase>& from_cases, const std::vector<ToCase>& to_cases) {
  for (const FromCase& c : from_cases) EXPECT_EQ(ref_from<T>(bits_float(c.in)), c.out) << "table entry " << hex(c.in);
  for (const ToCase& c : to_cases) EXPECT_EQ(float_bits(ref_to<T>(c.in)), c.out) << "table entry " << hex(c.in);
}

TEST(DtypesCudaTest, TableAgreesWithCuda) {
  check_table_against_cuda<half_t>(kHalfFrom, kHalfTo);
  check_table_against_cuda<bfloat16_t>(kBf16From, kBf16To);
  check_table_against_cuda<fp8_e4m3_t>(kE4m3From, kE4m3To);
  check_table_against_cuda<fp8_e5m2_t>(kE5m2From, kE5m2To);
}

// to_float over every pattern, bit for bit (CUDA returns one canonical NaN, so NaNs compare too).
template <class T>
void check_to_float_exhaustive() {
  uint32_t mismatches = 0;
  std::string first;
  for (uint32_t b = 0; b < Format<T>::kPatterns; ++b) {
    const uint32_t got = float_bits(to_float(make<T>(b)));
    const uint32_t want = float_bits(ref_to<T>(b));
    if (got != want && ++mismatches <= 5) first += "\n  " + hex(b) + ": " + hex(got) + ", CUDA " + hex(want);
  }
  EXPECT_EQ(mismatches, 0u) << Format<T>::name() << first;
}

TEST(DtypesCudaTest, ToFloatAllPatterns) {
  check_to_float_exhaustive<half_t>();
  check_to_float_exhaustive<bfloat16_t>();
  check_to_float_exhaustive<fp8_e4m3_t>();
  check_to_float_exhaustive<fp8_e5m2_t>();
}

// Every representable value, every tie between two neighbours (the midpoint in double is exact in
// float for these formats), the floats just around each, and the overflow tie above the largest
// finite value (max + half the ulp below it). Both signs.
template <class T>
uint64_t check_representable_and_ties() {
  using F = Format<T>;
  FromFloatChecker<T> checker;
  for (uint32_t b = 0; b < F::kPatterns; ++b) {
    const float f = to_float(make<T>(b));
    checker.check_around(f);
    const uint32_t mag = b & (F::kSignBit - 1);
    if (mag > F::kMaxFinite) continue;
    const double lo = to_float(make<T>(b));
    const double hi = mag < F::kMaxFinite ? static_cast<double>(to_float(make<T>(b + 1)))
                                          : lo + (lo - static_cast<double>(to_float(make<T>(b - 1))));
    const double mid = (lo + hi) / 2;
    EXPECT_EQ(static_cast<double>(static_cast<float>(mid)), mid) << "midpoint not exact at " << hex(b);
    checker.check_around(static_cast<float>(mid));
  }
  checker.check(0x7f800000u);
  checker.check(0xff800000u);
  for (uint32_t nan : {0x7f800001u, 0x7fc00000u, 0x7fffffffu, 0xff800001u, 0xffc00000u, 0xffffffffu}) {
    checker.check(nan);
  }
  checker.expect_clean(F::name());
  return checker.checked();
}

TEST(DtypesCudaTest, FromFloatRepresentableAndTies) {
  uint64_t n = 0;
  n += check_representable_and_ties<half_t>();
  n += check_representable_and_ties<bfloat16_t>();
  n += check_representable_and_ties<fp8_e4m3_t>();
  n += check_representable_and_ties<fp8_e5m2_t>();
  RecordProperty("inputs", std::to_string(n));
}

// Pseudo-random floats (fixed seed): uniform bit patterns cover NaN, inf, subnormals and overflow;
// patterns with the exponent drawn from the format's own range (plus margin) hit its rounding cases.
template <class T>
void check_random(uint64_t seed, int count) {
  using F = Format<T>;
  std::mt19937_64 rng(seed);
  FromFloatChecker<T> checker;
  std::uniform_int_distribution<int> exp_dist(F::kMinExp, F::kMaxExp);
  for (int i = 0; i < count; ++i) {
    const uint64_t r = rng();
    const uint32_t any = static_cast<uint32_t>(r);
    checker.check(any);
    const int e = std::max(-149, std::min(127, exp_dist(rng)));
    const uint32_t biased = static_cast<uint32_t>(std::max(0, e + 127));
    const uint32_t in_range = (static_cast<uint32_t>(r >> 32) & 0x807fffffu) | (biased << 23);
    checker.check(in_range);
  }
  checker.expect_clean(F::name());
}

TEST(DtypesCudaTest, FromFloatRandom) {
  constexpr int kCount = 1 << 20;  // per format, times two kinds of input: 8 Mi conversions in all
  check_random<half_t>(1, kCount);
  check_random<bfloat16_t>(2, kCount);
  check_random<fp8_e4m3_t>(3, kCount);
  check_random<fp8_e5m2_t>(4, kCount);
}

#else  // !CCLAB_TEST_HAVE_CUDA_TYPES

TEST(DtypesCudaTest, NeedsCudaHeaders) {
  GTEST_SKIP() << "cuda_fp16.h / cuda_bf16.h / cuda_fp8.h not found: only the hand-checked table ran";
}

#endif

}  // namespace
}  // namespace cclab
