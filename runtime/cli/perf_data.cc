// runtime/cli/perf_data.cc - deterministic inputs and exact expected results (see perf_data.h).
#include "perf_data.h"

#include <cmath>
#include <cstring>
#include <type_traits>

#include "kernels/dtypes.h"

namespace cclab {
namespace {

// ---- Hashing -------------------------------------------------------------------------------------------
// splitmix64's finalizer: cheap, and every input bit reaches every output bit.
inline uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

inline uint64_t hash3(uint64_t seed, uint64_t rank, uint64_t index) {
  return mix(mix(seed * 0x9e3779b97f4a7c15ULL + rank) ^ (index * 0xd1b54a32d192ed03ULL));
}

// Salts keep the copy and reduction streams (and the per-element choices) independent of each other.
constexpr uint64_t kCopySalt = 0x636f7079ULL;   // "copy"
constexpr uint64_t kElementSalt = 0x656c74ULL;  // "elt": per-element choices shared by all ranks

// ---- Type dispatch -------------------------------------------------------------------------------------
template <class F>
decltype(auto) dispatch_type(ncclDataType_t type, F&& f) {
  switch (type) {
    case ncclInt8: return f(int8_t{});
    case ncclUint8: return f(uint8_t{});
    case ncclInt32: return f(int32_t{});
    case ncclUint32: return f(uint32_t{});
    case ncclInt64: return f(int64_t{});
    case ncclUint64: return f(uint64_t{});
    case ncclFloat16: return f(half_t{});
    case ncclFloat32: return f(float{});
    case ncclFloat64: return f(double{});
    case ncclBfloat16: return f(bfloat16_t{});
    case ncclFloat8e4m3: return f(fp8_e4m3_t{});
    case ncclFloat8e5m2: return f(fp8_e5m2_t{});
    default: return f(uint8_t{});  // not reached: the parser only produces NCCL's twelve types
  }
}

template <class T>
constexpr bool kIsFloat = DataTypeTraits<T>::kIsFloat;

template <class T>
T from_exact(int64_t v) {
  if constexpr (std::is_integral<T>::value) {
    return static_cast<T>(v);
  } else if constexpr (DataTypeTraits<T>::kIsLowPrecision) {
    return from_float<T>(static_cast<float>(v));  // exact: |v| is within the type's exact range
  } else {
    return static_cast<T>(v);
  }
}

template <class T>
uint64_t to_bits(T v) {
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  return bits;
}

template <class T>
T from_bits(uint64_t bits) {
  T v;
  std::memcpy(&v, &bits, sizeof(T));
  return v;
}

// Largest N with every integer in [-N, N] (unsigned: [0, N]) exactly representable; 2^62 at most so sums
// of a few of them stay in int64.
int64_t exact_range_of(ncclDataType_t type) {
  constexpr int64_t kCap = int64_t{1} << 62;
  switch (type) {
    case ncclInt8: return 127;
    case ncclUint8: return 255;
    case ncclInt32: return (int64_t{1} << 31) - 1;
    case ncclUint32: return (int64_t{1} << 32) - 1;
    case ncclInt64: return kCap;
    case ncclUint64: return kCap;
    case ncclFloat16: return 2048;
    case ncclFloat32: return int64_t{1} << 24;
    case ncclFloat64: return int64_t{1} << 53;
    case ncclBfloat16: return 256;
    case ncclFloat8e4m3: return 16;
    case ncclFloat8e5m2: return 8;
    default: return 1;
  }
}

bool is_unsigned_type(ncclDataType_t type) { return type == ncclUint8 || type == ncclUint32 || type == ncclUint64; }

bool is_float_type(ncclDataType_t type) {
  return type == ncclFloat16 || type == ncclFloat32 || type == ncclFloat64 || type == ncclBfloat16 ||
         type == ncclFloat8e4m3 || type == ncclFloat8e5m2;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

int floor_log2(int64_t v) {
  int l = 0;
  while (v > 1) {
    v >>= 1;
    ++l;
  }
  return l;
}

// The avg scalars a runtime may plausibly derive for 1/n: the quotient computed in the op's compute type
// and rounded to T, or 1/n computed in double and rounded to T through float.
template <class T>
T avg_scalar_compute(int n) {
  using C = ComputeType<T>;
  return from_compute<T>(static_cast<C>(1) / static_cast<C>(n));
}

template <class T>
T avg_scalar_via_double(int n) {
  const double q = 1.0 / n;
  if constexpr (DataTypeTraits<T>::kIsLowPrecision) {
    return from_float<T>(static_cast<float>(q));
  } else {
    return static_cast<T>(q);
  }
}

// Whether PreMulSum by the avg scalar maps n to exactly 1 for every scalar candidate, which makes
// +-n*2^j map to exactly +-2^j (scaling by a power of two commutes with rounding).
template <class T>
bool avg_premul_exact(int n) {
  const T one = from_exact<T>(1);
  const T x = from_exact<T>(n);
  if (static_cast<double>(to_compute(x)) != static_cast<double>(n)) return false;  // n itself not exact in T
  for (const T s : {avg_scalar_compute<T>(n), avg_scalar_via_double<T>(n)}) {
    const RedOp<T> op(RedOpArg{RedOpKind::kPreMulSum, scalar_to_bits(s), n});
    if (to_bits(op.pre_op(x)) != to_bits(one)) return false;
  }
  return true;
}

// A random bit pattern; floating types get the top exponent bit cleared when the pattern is Inf or
// NaN, so copies compare equal even through a runtime that canonicalizes NaNs.
template <class T>
T copy_value(int origin, uint64_t seed, uint64_t index) {
  uint64_t h = hash3(seed ^ kCopySalt, static_cast<uint64_t>(origin), index);
  T v = from_bits<T>(h);
  if constexpr (kIsFloat<T>) {
    bool finite;
    if constexpr (DataTypeTraits<T>::kIsLowPrecision) {
      finite = std::isfinite(to_float(v));
    } else {
      finite = std::isfinite(v);
    }
    if (!finite) v = from_bits<T>(h & ~(uint64_t{1} << (8 * sizeof(T) - 2)));
  }
  return v;
}

// ---- Buffers -------------------------------------------------------------------------------------------
template <class T>
void fill_input_t(const CheckSpec& s, int rank, T* dst) {
  const size_t count = s.counts.send_count;
  if (collective_reduces(s.collective)) {
    const ReductionValues rv(s.type, s.op, s.nranks, s.seed);
    for (size_t i = 0; i < count; ++i) dst[i] = from_exact<T>(rv.input(rank, i));
  } else {
    for (size_t i = 0; i < count; ++i) dst[i] = copy_value<T>(rank, s.seed, i);
  }
}

template <class T>
void fill_expected_t(const CheckSpec& s, int rank, T* exp) {
  const CollCounts& c = s.counts;
  const int n = s.nranks;
  const size_t base = c.param_count;  // per-rank chunk for the chunked collectives
  switch (s.collective) {
    case PerfCollective::kAllReduce:
    case PerfCollective::kReduce: {
      if (s.collective == PerfCollective::kReduce && rank != s.root) return;
      const ReductionValues rv(s.type, s.op, n, s.seed);
      for (size_t i = 0; i < c.recv_count; ++i) exp[i] = from_exact<T>(rv.expected(i));
      return;
    }
    case PerfCollective::kReduceScatter: {
      const ReductionValues rv(s.type, s.op, n, s.seed);
      const uint64_t first = static_cast<uint64_t>(rank) * base;
      for (size_t i = 0; i < c.recv_count; ++i) exp[i] = from_exact<T>(rv.expected(first + i));
      return;
    }
    case PerfCollective::kGather:
      if (rank != s.root) return;
      [[fallthrough]];
    case PerfCollective::kAllGather:
      for (int q = 0; q < n; ++q) {
        for (size_t i = 0; i < base; ++i) exp[q * base + i] = copy_value<T>(q, s.seed, i);
      }
      return;
    case PerfCollective::kBroadcast:
      for (size_t i = 0; i < c.recv_count; ++i) exp[i] = copy_value<T>(s.root, s.seed, i);
      return;
    case PerfCollective::kAllToAll:
      for (int q = 0; q < n; ++q) {
        for (size_t i = 0; i < base; ++i) exp[q * base + i] = copy_value<T>(q, s.seed, rank * base + i);
      }
      return;
    case PerfCollective::kScatter:
      for (size_t i = 0; i < c.recv_count; ++i) exp[i] = copy_value<T>(s.root, s.seed, rank * base + i);
      return;
    case PerfCollective::kSendRecv: {
      const int peer = (rank - 1 + n) % n;
      for (size_t i = 0; i < c.recv_count; ++i) exp[i] = copy_value<T>(peer, s.seed, i);
      return;
    }
  }
}

}  // namespace

// ---- ReductionValues -----------------------------------------------------------------------------------
ReductionValues::ReductionValues(ncclDataType_t type, PerfOp op, int nranks, uint64_t seed)
    : type_(type), op_(op), nranks_(nranks > 0 ? nranks : 1), seed_(seed) {
  unsigned_ = is_unsigned_type(type);
  float_ = is_float_type(type);
  exact_ = exact_range_of(type);
  const int64_t n = nranks_;
  switch (op_) {
    case PerfOp::kSum:
    case PerfOp::kMulSum: {
      // Every partial sum is bounded by sum |w_r x_r| <= weight * (nonzero ranks) * bound <= exact_.
      const int64_t weight = op_ == PerfOp::kMulSum ? 2 : 1;
      int64_t period = 1;
      while (weight * ceil_div(n, period) > exact_) ++period;
      period_ = static_cast<int>(period);
      bound_ = exact_ / (weight * ceil_div(n, period));
      break;
    }
    case PerfOp::kProd: {
      // |partial products| <= 2^(number of twos) <= exact_.
      const int64_t max_twos = floor_log2(exact_);
      int64_t period = 1;
      while (ceil_div(n, period) > max_twos) ++period;
      period_ = static_cast<int>(period);
      break;
    }
    case PerfOp::kMax:
    case PerfOp::kMin: bound_ = exact_; break;
    case PerfOp::kAvg:
      if (!float_) {
        // n-1 free values in [-B, B] plus one adjuster |a| <= n-1: partial sums stay within exact_.
        bound_ = n == 1 ? exact_ : (exact_ >= 2 * (n - 1) ? (exact_ - (n - 1)) / (n - 1) : 0);
      } else {
        avg_float_live_ = dispatch_type(type_, [&](auto tag) { return avg_premul_exact<decltype(tag)>(nranks_); });
        avg_jmax_ = n <= exact_ ? floor_log2(exact_ / n) : 0;
      }
      break;
  }
}

int64_t ReductionValues::draw(uint64_t h, int64_t bound) const {
  if (bound <= 0) return 0;
  const uint64_t b = static_cast<uint64_t>(bound);
  if (unsigned_) return static_cast<int64_t>(h % (b + 1));
  // In uint64: 2 * bound + 1 exceeds int64 for the 2^62 range of the 64-bit types.
  return static_cast<int64_t>(h % (2 * b + 1) - b);
}

int64_t ReductionValues::avg_int_others_sum(uint64_t index) const {
  const int adjuster = static_cast<int>(index % static_cast<uint64_t>(nranks_));
  int64_t sum = 0;
  for (int r = 0; r < nranks_; ++r) {
    if (r != adjuster) sum += draw(hash3(seed_, r, index), bound_);
  }
  return sum;
}

int64_t ReductionValues::input(int rank, uint64_t index) const {
  const uint64_t h = hash3(seed_, static_cast<uint64_t>(rank), index);
  const uint64_t p = static_cast<uint64_t>(period_);
  switch (op_) {
    case PerfOp::kSum:
    case PerfOp::kMulSum: return (static_cast<uint64_t>(rank) + index) % p == 0 ? draw(h, bound_) : 0;
    case PerfOp::kProd: {
      const bool two = (static_cast<uint64_t>(rank) + index) % p == 0 && (h & 1);
      const bool negative = !unsigned_ && ((h >> 1) & 1);
      const int64_t magnitude = two ? 2 : 1;
      return negative ? -magnitude : magnitude;
    }
    case PerfOp::kMax:
    case PerfOp::kMin: return draw(h, bound_);
    case PerfOp::kAvg: {
      if (!float_) {
        if (nranks_ == 1) return draw(h, bound_);
        const int adjuster = static_cast<int>(index % static_cast<uint64_t>(nranks_));
        if (rank != adjuster) return draw(h, bound_);
        // The adjuster brings the sum to a multiple of nranks, so the post-division is exact.
        const int64_t n = nranks_;
        const int64_t rem = ((avg_int_others_sum(index) % n) + n) % n;
        return unsigned_ ? (n - rem) % n : -rem;
      }
      if (!avg_float_live_) return 0;
      const uint64_t e = hash3(seed_ ^ kElementSalt, 0, index);
      const int contributor = static_cast<int>(e % static_cast<uint64_t>(nranks_));
      if (rank != contributor) return 0;
      const int j = static_cast<int>((e >> 20) % static_cast<uint64_t>(avg_jmax_ + 1));
      const int64_t v = static_cast<int64_t>(nranks_) << j;
      return ((e >> 40) & 1) ? -v : v;
    }
  }
  return 0;
}

int64_t ReductionValues::expected(uint64_t index) const {
  switch (op_) {
    case PerfOp::kSum: {
      int64_t sum = 0;
      for (int r = 0; r < nranks_; ++r) sum += input(r, index);
      return sum;
    }
    case PerfOp::kMulSum: {
      int64_t sum = 0;
      for (int r = 0; r < nranks_; ++r) sum += (1 + (r & 1)) * input(r, index);
      return sum;
    }
    case PerfOp::kProd: {
      int64_t prod = 1;
      for (int r = 0; r < nranks_; ++r) prod *= input(r, index);
      return prod;
    }
    case PerfOp::kMax:
    case PerfOp::kMin: {
      int64_t best = input(0, index);
      for (int r = 1; r < nranks_; ++r) {
        const int64_t v = input(r, index);
        best = op_ == PerfOp::kMax ? (v > best ? v : best) : (v < best ? v : best);
      }
      return best;
    }
    case PerfOp::kAvg: {
      int64_t sum = 0;
      for (int r = 0; r < nranks_; ++r) sum += input(r, index);
      return sum / nranks_;  // exact by construction
    }
  }
  return 0;
}

// ---- Public helpers ------------------------------------------------------------------------------------
uint64_t exact_to_bits(ncclDataType_t type, int64_t value) {
  return dispatch_type(type, [&](auto tag) { return to_bits(from_exact<decltype(tag)>(value)); });
}

uint64_t copy_value_bits(ncclDataType_t type, int origin, uint64_t seed, uint64_t index) {
  return dispatch_type(type, [&](auto tag) { return to_bits(copy_value<decltype(tag)>(origin, seed, index)); });
}

uint64_t mulsum_scalar_bits(ncclDataType_t type, int rank) { return exact_to_bits(type, 1 + (rank & 1)); }

RedOpArg reference_redop_arg(ncclDataType_t type, PerfOp op, int nranks, int rank) {
  switch (op) {
    case PerfOp::kSum: return RedOpArg{RedOpKind::kSum, 0, nranks};
    case PerfOp::kProd: return RedOpArg{RedOpKind::kProd, 0, nranks};
    case PerfOp::kMax: return RedOpArg{RedOpKind::kMax, 0, nranks};
    case PerfOp::kMin: return RedOpArg{RedOpKind::kMin, 0, nranks};
    case PerfOp::kMulSum: return RedOpArg{RedOpKind::kPreMulSum, mulsum_scalar_bits(type, rank), nranks};
    case PerfOp::kAvg:
      if (!is_float_type(type)) return RedOpArg{RedOpKind::kSumPostDiv, 0, nranks};
      return RedOpArg{RedOpKind::kPreMulSum,
                      dispatch_type(type, [&](auto tag) { return to_bits(avg_scalar_compute<decltype(tag)>(nranks)); }),
                      nranks};
  }
  return RedOpArg{RedOpKind::kSum, 0, nranks};
}

void fill_input(const CheckSpec& spec, int rank, void* dst) {
  dispatch_type(spec.type, [&](auto tag) { fill_input_t(spec, rank, static_cast<decltype(tag)*>(dst)); });
}

void fill_expected(const CheckSpec& spec, int rank, void* expected) {
  dispatch_type(spec.type, [&](auto tag) { fill_expected_t(spec, rank, static_cast<decltype(tag)*>(expected)); });
}

int64_t count_mismatches(const void* got, const void* expected, size_t count, size_t elt_size) {
  if (count == 0 || std::memcmp(got, expected, count * elt_size) == 0) return 0;
  const auto* a = static_cast<const unsigned char*>(got);
  const auto* b = static_cast<const unsigned char*>(expected);
  int64_t wrong = 0;
  for (size_t i = 0; i < count; ++i) wrong += std::memcmp(a + i * elt_size, b + i * elt_size, elt_size) != 0;
  return wrong;
}

}  // namespace cclab
