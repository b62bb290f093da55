// runtime/cli/perf_data.h - inputs and expected outputs for `cclab perf`'s correctness check.
//
// Every value is a pure function of (seed, rank, element index), so each rank can regenerate every other
// rank's input and compute the expected result by itself; no data travels for the check.
//
// Reductions are checked bit for bit, so the inputs are chosen to make every reduction order give the
// same bits: each is an integer small enough that every partial result is exactly representable in the
// datatype (fp8 e5m2 holds the integers up to 8 only, e4m3 up to 16, bf16 256, half 2048). The
// expected value is computed in exact int64 arithmetic and converted once:
//   sum      values in [-B, B] ([0, B] unsigned) with n*B <= the exact range; when there are more ranks
//            than the range allows, only every P-th rank (rotating with the index) is nonzero
//   mulsum   as sum, with the PreMulSum scalar 1 on even ranks and 2 on odd ranks (nccl-tests' choice)
//   prod     factors 1, 2 (and -1, -2 for signed types) with at most log2(range) twos per element
//   min/max  any values in the exact range
//   avg      integers: the sum is made divisible by nranks (one rank per element adjusts), so the
//            SumPostDiv division is exact; floats (PreMulSum by 1/n): one rank per element holds
//            +-n * 2^j and the others 0, so the result is +-2^j whatever the order, provided
//            n is exact in the datatype and round(n * round(1/n)) == 1 there; for the (type, nranks)
//            pairs where it is not (e.g. half with 11 ranks, float with 41, e5m2 with 9), avg inputs are
//            all zero
// Copy collectives move random bit patterns (finite ones for floating types).
#pragma once

#include <cstddef>
#include <cstdint>

#include "cclab/nccl.h"
#include "kernels/reduce_ops.h"
#include "perf_options.h"
#include "perf_report.h"

namespace cclab {

// One correctness check of one collective at one size.
struct CheckSpec {
  PerfCollective collective = PerfCollective::kAllReduce;
  ncclDataType_t type = ncclFloat32;
  PerfOp op = PerfOp::kSum;
  int nranks = 1;
  int root = 0;
  uint64_t seed = 0;
  CollCounts counts;
};

// Writes `rank`'s input: spec.counts.send_count elements of spec.type at dst.
void fill_input(const CheckSpec& spec, int rank, void* dst);

// `expected` holds spec.counts.recv_count elements: the receive region of `rank` as it was before the
// collective (so parts the collective must not touch, such as a non-root's buffer in reduce or gather,
// are expected unchanged). Overwrites the elements the collective defines.
void fill_expected(const CheckSpec& spec, int rank, void* expected);

// Elements whose bytes differ (bit-exact comparison, as nccl-tests' 0-ulp check).
int64_t count_mismatches(const void* got, const void* expected, size_t count, size_t elt_size);

// The ncclRedOpCreatePreMulSum scalar `rank` uses for "mulsum": 1 on even ranks, 2 on odd ranks, as the
// bits of `type` in the low bytes (ready for ncclRedOpCreatePreMulSum's void* scalar).
uint64_t mulsum_scalar_bits(ncclDataType_t type, int rank);

// ---- Element level (used by the above; exposed for the tests) -----------------------------------------

// Exact integer inputs and results of one reduction over nranks ranks.
class ReductionValues {
 public:
  ReductionValues(ncclDataType_t type, PerfOp op, int nranks, uint64_t seed);

  // `rank`'s input at element `index`, before the op's pre-multiplication.
  int64_t input(int rank, uint64_t index) const;
  // The reduction's result at element `index`, computed exactly (pre and post ops included).
  int64_t expected(uint64_t index) const;

  // Largest magnitude the datatype holds with every integer below it exact (capped at 2^62).
  int64_t exact_range() const { return exact_; }
  // Whether the float avg inputs are live (false: the (type, nranks) pair only sees zeros).
  bool avg_float_live() const { return avg_float_live_; }

 private:
  int64_t draw(uint64_t h, int64_t bound) const;  // uniform in [-bound, bound], or [0, bound] unsigned
  int64_t avg_int_others_sum(uint64_t index) const;

  ncclDataType_t type_;
  PerfOp op_;
  int nranks_;
  uint64_t seed_;
  bool unsigned_ = false;
  bool float_ = false;
  int64_t exact_ = 0;
  int64_t bound_ = 0;  // per-value magnitude bound (sum, mulsum, avg)
  int period_ = 1;     // sum/mulsum: nonzero ranks rotate with this period; prod: ranks allowed a 2
  int avg_jmax_ = 0;   // float avg: largest j in +-n*2^j
  bool avg_float_live_ = false;
};

// The exact integer `value` (within exact_range) as the bits of `type` in the low bytes.
uint64_t exact_to_bits(ncclDataType_t type, int64_t value);

// The copy collectives' value of element `index` of rank `origin`'s input, as bits in the low bytes.
uint64_t copy_value_bits(ncclDataType_t type, int origin, uint64_t seed, uint64_t index);

// The device op NCCL runs for a PerfOp on `rank` (what the cclab runtime hands its executors): float
// avg is PreMulSum by 1/nranks rounded to the datatype, integer avg is SumPostDiv.
RedOpArg reference_redop_arg(ncclDataType_t type, PerfOp op, int nranks, int rank);

}  // namespace cclab
