// Tests of `cclab perf`'s check data: for every datatype x op x nranks, reducing the generated inputs in
// several orders with the executors' own RedOp<T> gives exactly the expected bits; and every collective's
// expected output agrees with a direct model of the collective applied to the generated inputs.
#include "perf_data.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kernels/dtypes.h"
#include "kernels/reduce_ops.h"

namespace cclab {
namespace {

constexpr ncclDataType_t kTypes[] = {ncclInt8,    ncclUint8,    ncclInt32,      ncclUint32,
                                     ncclInt64,   ncclUint64,   ncclFloat16,    ncclFloat32,
                                     ncclFloat64, ncclBfloat16, ncclFloat8e4m3, ncclFloat8e5m2};
constexpr PerfOp kOps[] = {PerfOp::kSum, PerfOp::kProd, PerfOp::kMax, PerfOp::kMin, PerfOp::kAvg, PerfOp::kMulSum};
constexpr int kRankCounts[] = {1, 2, 3, 8};

template <class T>
T from_bits(uint64_t bits) {
  T v;
  std::memcpy(&v, &bits, sizeof(T));
  return v;
}

template <class T>
uint64_t to_bits(T v) {
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  return bits;
}

template <class F>
void for_type(ncclDataType_t type, F&& f) {
  switch (type) {
    case ncclInt8: f(int8_t{}); break;
    case ncclUint8: f(uint8_t{}); break;
    case ncclInt32: f(int32_t{}); break;
    case ncclUint32: f(uint32_t{}); break;
    case ncclInt64: f(int64_t{}); break;
    case ncclUint64: f(uint64_t{}); break;
    case ncclFloat16: f(half_t{}); break;
    case ncclFloat32: f(float{}); break;
    case ncclFloat64: f(double{}); break;
    case ncclBfloat16: f(bfloat16_t{}); break;
    case ncclFloat8e4m3: f(fp8_e4m3_t{}); break;
    case ncclFloat8e5m2: f(fp8_e5m2_t{}); break;
    default: FAIL() << "unknown type";
  }
}

// Orders in which an executor may combine the ranks' contributions: ring chains from every start,
// reversed, a recursive-halving tree, and a few random orders.
std::vector<std::vector<int>> chain_orders(int n, uint64_t seed) {
  std::vector<std::vector<int>> orders;
  for (int start = 0; start < n; ++start) {
    std::vector<int> o;
    for (int k = 0; k < n; ++k) o.push_back((start + k) % n);
    orders.push_back(o);
    std::reverse(o.begin(), o.end());
    orders.push_back(o);
  }
  std::mt19937_64 rng(seed);
  for (int k = 0; k < 4; ++k) {
    std::vector<int> o(n);
    std::iota(o.begin(), o.end(), 0);
    std::shuffle(o.begin(), o.end(), rng);
    orders.push_back(o);
  }
  return orders;
}

template <class T>
T tree_reduce(const RedOp<T>& op, const std::vector<T>& v, size_t lo, size_t hi) {
  if (hi - lo == 1) return v[lo];
  const size_t mid = lo + (hi - lo) / 2;
  return op(tree_reduce(op, v, lo, mid), tree_reduce(op, v, mid, hi));
}

template <class T>
void check_exact(ncclDataType_t type, PerfOp op, int n) {
  const uint64_t seed = 1234 + static_cast<uint64_t>(n) * 7 + static_cast<uint64_t>(op);
  const ReductionValues rv(type, op, n, seed);
  std::vector<RedOp<T>> rank_ops;
  for (int r = 0; r < n; ++r) rank_ops.emplace_back(reference_redop_arg(type, op, n, r));
  const RedOp<T>& combine = rank_ops[0];
  const auto orders = chain_orders(n, seed);

  size_t nonzero = 0;
  constexpr uint64_t kElements = 3000;
  for (uint64_t i = 0; i < kElements; ++i) {
    std::vector<T> pre(n);
    for (int r = 0; r < n; ++r) {
      const int64_t x = rv.input(r, i);
      ASSERT_LE(x, rv.exact_range());
      ASSERT_GE(x, -rv.exact_range());
      nonzero += x != 0;
      pre[r] = rank_ops[r].pre_op(from_bits<T>(exact_to_bits(type, x)));
    }
    const uint64_t want = exact_to_bits(type, rv.expected(i));
    for (const auto& order : orders) {
      T acc = pre[order[0]];
      for (int k = 1; k < n; ++k) acc = combine(acc, pre[order[k]]);
      ASSERT_EQ(to_bits(combine.post_op(acc)), want)
          << datatype_name(type) << " " << op_name(op) << " n=" << n << " element " << i << " order from " << order[0];
    }
    ASSERT_EQ(to_bits(combine.post_op(tree_reduce(combine, pre, 0, pre.size()))), want)
        << datatype_name(type) << " " << op_name(op) << " n=" << n << " element " << i << " (tree)";
  }
  // The check must have something to check: many inputs are nonzero (sum rotates nonzero ranks only
  // when the datatype's range is smaller than nranks; float avg has one contributor per element).
  const bool sparse = op == PerfOp::kAvg && DataTypeTraits<T>::kIsFloat;
  if (sparse) {
    EXPECT_EQ(rv.avg_float_live(), true) << datatype_name(type) << " n=" << n;
    EXPECT_EQ(nonzero, kElements) << datatype_name(type) << " n=" << n;
  } else {
    EXPECT_GT(nonzero, kElements * n / 4) << datatype_name(type) << " " << op_name(op) << " n=" << n;
  }
}

TEST(PerfData, EveryReductionOrderGivesTheExpectedBits) {
  for (ncclDataType_t type : kTypes) {
    for (PerfOp op : kOps) {
      for (int n : kRankCounts) {
        for_type(type, [&](auto tag) { check_exact<decltype(tag)>(type, op, n); });
        if (HasFatalFailure()) return;
      }
    }
  }
}

TEST(PerfData, LargeRankCountsStayExact) {
  // More ranks than fp8 e5m2 has exact integers: sums use rotating sparse contributors.
  for (ncclDataType_t type : {ncclFloat8e5m2, ncclFloat8e4m3, ncclInt8, ncclBfloat16}) {
    for (PerfOp op : kOps) {
      for (int n : {17, 64}) {
        for_type(type, [&](auto tag) {
          using T = decltype(tag);
          const ReductionValues rv(type, op, n, 99);
          std::vector<RedOp<T>> ops;
          for (int r = 0; r < n; ++r) ops.emplace_back(reference_redop_arg(type, op, n, r));
          for (uint64_t i = 0; i < 500; ++i) {
            T fwd{}, bwd{};
            for (int k = 0; k < n; ++k) {
              const T a = ops[k].pre_op(from_bits<T>(exact_to_bits(type, rv.input(k, i))));
              const T b = ops[n - 1 - k].pre_op(from_bits<T>(exact_to_bits(type, rv.input(n - 1 - k, i))));
              fwd = k == 0 ? a : ops[0](fwd, a);
              bwd = k == 0 ? b : ops[0](bwd, b);
            }
            const uint64_t want = exact_to_bits(type, rv.expected(i));
            ASSERT_EQ(to_bits(ops[0].post_op(fwd)), want) << datatype_name(type) << " " << op_name(op) << " n=" << n;
            ASSERT_EQ(to_bits(ops[0].post_op(bwd)), want) << datatype_name(type) << " " << op_name(op) << " n=" << n;
          }
        });
      }
    }
  }
}

TEST(PerfData, InputsAreDeterministicAndSeedDependent) {
  const ReductionValues a(ncclFloat32, PerfOp::kSum, 4, 7), b(ncclFloat32, PerfOp::kSum, 4, 7),
      c(ncclFloat32, PerfOp::kSum, 4, 8);
  int differ = 0;
  for (uint64_t i = 0; i < 100; ++i) {
    EXPECT_EQ(a.input(2, i), b.input(2, i));
    differ += a.input(2, i) != c.input(2, i);
  }
  EXPECT_GT(differ, 90);
}

TEST(PerfData, CopyValuesAreFiniteAndDistinctPerRank) {
  for (ncclDataType_t type : kTypes) {
    for_type(type, [&](auto tag) {
      using T = decltype(tag);
      int same = 0;
      for (uint64_t i = 0; i < 2000; ++i) {
        const T v = from_bits<T>(copy_value_bits(type, 0, 5, i));
        if constexpr (DataTypeTraits<T>::kIsLowPrecision) {
          ASSERT_TRUE(std::isfinite(to_float(v))) << datatype_name(type);
        } else if constexpr (DataTypeTraits<T>::kIsFloat) {
          ASSERT_TRUE(std::isfinite(v)) << datatype_name(type);
        }
        same += copy_value_bits(type, 0, 5, i) == copy_value_bits(type, 1, 5, i);
      }
      EXPECT_LT(same, 200) << datatype_name(type);  // 1-byte types collide 1/256 of the time
    });
  }
}

TEST(PerfData, MulsumScalarsAreOneAndTwo) {
  EXPECT_EQ(mulsum_scalar_bits(ncclFloat32, 0), to_bits(1.0f));
  EXPECT_EQ(mulsum_scalar_bits(ncclFloat32, 1), to_bits(2.0f));
  EXPECT_EQ(mulsum_scalar_bits(ncclFloat64, 3), to_bits(2.0));
  EXPECT_EQ(mulsum_scalar_bits(ncclInt32, 2), 1u);
  EXPECT_EQ(mulsum_scalar_bits(ncclFloat16, 1), 0x4000u);  // half 2.0
  EXPECT_EQ(mulsum_scalar_bits(ncclBfloat16, 1), 0x4000u);
}

TEST(PerfData, CountMismatchesIsBitExact) {
  const float a[4] = {1.0f, 2.0f, 0.0f, 4.0f};
  float b[4] = {1.0f, 2.0f, -0.0f, 5.0f};
  EXPECT_EQ(count_mismatches(a, a, 4, sizeof(float)), 0);
  EXPECT_EQ(count_mismatches(a, b, 4, sizeof(float)), 2);  // -0 differs from +0 in its bits
  EXPECT_EQ(count_mismatches(a, b, 2, sizeof(float)), 0);
}

// ---- Collective models -----------------------------------------------------------------------------
// Applies each collective directly to every rank's generated input and compares the result with
// fill_expected, so the index arithmetic of both sides is checked against the collective's definition.
template <class T>
void check_collective(PerfCollective coll, ncclDataType_t type, PerfOp op, int n, int root, size_t bytes) {
  CheckSpec spec;
  spec.collective = coll;
  spec.type = type;
  spec.op = op;
  spec.nranks = n;
  spec.root = root;
  spec.seed = 42;
  spec.counts = coll_counts(coll, bytes, sizeof(T), n);
  const CollCounts& c = spec.counts;
  const size_t base = c.param_count;

  std::vector<std::vector<T>> in(n, std::vector<T>(c.send_count));
  for (int r = 0; r < n; ++r) fill_input(spec, r, in[r].data());

  std::vector<RedOp<T>> ops;
  for (int r = 0; r < n; ++r) ops.emplace_back(reference_redop_arg(type, op, n, r));
  const auto reduce_at = [&](size_t i) {  // element i reduced over ranks in rank order
    T acc = ops[0].pre_op(in[0][i]);
    for (int r = 1; r < n; ++r) acc = ops[0](acc, ops[r].pre_op(in[r][i]));
    return ops[0].post_op(acc);
  };

  const T sentinel = from_bits<T>(0x5a5a5a5a5a5a5a5aULL);
  for (int rank = 0; rank < n; ++rank) {
    std::vector<T> model(c.recv_count, sentinel);  // untouched parts stay the sentinel
    switch (coll) {
      case PerfCollective::kAllReduce:
        for (size_t i = 0; i < c.recv_count; ++i) model[i] = reduce_at(i);
        break;
      case PerfCollective::kReduce:
        if (rank == root) {
          for (size_t i = 0; i < c.recv_count; ++i) model[i] = reduce_at(i);
        }
        break;
      case PerfCollective::kReduceScatter:
        for (size_t i = 0; i < base; ++i) model[i] = reduce_at(rank * base + i);
        break;
      case PerfCollective::kAllGather:
        for (int q = 0; q < n; ++q) std::copy(in[q].begin(), in[q].begin() + base, model.begin() + q * base);
        break;
      case PerfCollective::kGather:
        if (rank == root) {
          for (int q = 0; q < n; ++q) std::copy(in[q].begin(), in[q].begin() + base, model.begin() + q * base);
        }
        break;
      case PerfCollective::kBroadcast: model = in[root]; break;
      case PerfCollective::kScatter:
        std::copy(in[root].begin() + rank * base, in[root].begin() + (rank + 1) * base, model.begin());
        break;
      case PerfCollective::kAllToAll:
        for (int q = 0; q < n; ++q) {
          std::copy(in[q].begin() + rank * base, in[q].begin() + (rank + 1) * base, model.begin() + q * base);
        }
        break;
      case PerfCollective::kSendRecv: model = in[(rank + n - 1) % n]; break;
    }
    std::vector<T> expected(c.recv_count, sentinel);
    fill_expected(spec, rank, expected.data());
    ASSERT_EQ(count_mismatches(expected.data(), model.data(), c.recv_count, sizeof(T)), 0)
        << collective_name(coll) << " " << datatype_name(type) << " n=" << n << " rank " << rank;
  }
}

TEST(PerfData, ExpectedOutputsMatchCollectiveModels) {
  for (PerfCollective coll : {PerfCollective::kAllReduce, PerfCollective::kAllGather, PerfCollective::kReduceScatter,
                              PerfCollective::kBroadcast, PerfCollective::kReduce, PerfCollective::kAllToAll,
                              PerfCollective::kGather, PerfCollective::kScatter, PerfCollective::kSendRecv}) {
    for (int n : {1, 3, 4}) {
      for (int root : {0, n - 1}) {
        check_collective<float>(coll, ncclFloat32, PerfOp::kSum, n, root, 4096);
        check_collective<int8_t>(coll, ncclInt8, PerfOp::kAvg, n, root, 1000);
        check_collective<half_t>(coll, ncclFloat16, PerfOp::kMulSum, n, root, 2048);
        check_collective<double>(coll, ncclFloat64, PerfOp::kProd, n, root, 800);
        if (HasFatalFailure()) return;
      }
    }
  }
}

}  // namespace
}  // namespace cclab
