// runtime/cli/perf_report.h - what `cclab perf` prints and the arithmetic behind the columns.
//
// Byte accounting and bus-bandwidth factors follow nccl-tests (src/<collective>.cu: GetCollByteCount and
// GetBw); the text follows its output (src/util.cu), so scripts written for nccl-tests parse ours:
//
//   #       size         count      type   redop    root     time   algbw   busbw #wrong     time ...
//   #        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us) ...
//              8             2     float     sum      -1    12.34    0.00    0.00      0    11.90 ...
//
// algbw = S / t and busbw = algbw * factor, in GB/s with 1 GB = 1e9 bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "perf_options.h"

namespace cclab {

// Element counts for one benchmark size, as nccl-tests derives them from `bytes`:
//   send_count/recv_count   elements in each rank's send/recv buffer
//   param_count             the count argument of the NCCL call (printed in the count column)
//   send/recv_inplace_offset  in-place: sendbuff = recvbase + rank * send_inplace_offset elements and
//                           recvbuff = recvbase + rank * recv_inplace_offset elements
// Per-rank chunks (all_gather, reduce_scatter, alltoall, gather, scatter) are rounded down to a multiple
// of 16 bytes, as nccl-tests does.
struct CollCounts {
  size_t send_count = 0;
  size_t recv_count = 0;
  size_t param_count = 0;
  size_t send_inplace_offset = 0;
  size_t recv_inplace_offset = 0;
};
CollCounts coll_counts(PerfCollective coll, size_t bytes, size_t elt_size, int nranks);

// The size column: the larger of the send and receive buffers, in bytes.
size_t reported_bytes(const CollCounts& counts, size_t elt_size);

// busbw / algbw: 2(n-1)/n for all_reduce; (n-1)/n for all_gather, reduce_scatter, alltoall, gather,
// scatter; 1 for broadcast, reduce, sendrecv.
double busbw_factor(PerfCollective coll, int nranks);

// S, the bytes algbw divides by time: param_count x elt_size, times nranks for the collectives whose
// count is per rank (all_gather, reduce_scatter, alltoall, gather, scatter).
double algbw_bytes(PerfCollective coll, size_t param_count, size_t elt_size, int nranks);

struct Bandwidth {
  double algbw = 0;  // GB/s (1e9 bytes per second)
  double busbw = 0;  // GB/s
};
Bandwidth compute_bandwidth(PerfCollective coll, size_t param_count, size_t elt_size, int nranks, double seconds);

// nccl-tests checks in-place alltoall and sendrecv results with nothing: it prints N/A there.
bool reports_errors(PerfCollective coll, bool in_place);

// Whether the in-place variant can run at all: ncclAlltoAll rejects sendbuff == recvbuff (as cclab's
// runtime does), so `cclab perf alltoall` prints N/A in every in-place column instead.
bool runs_in_place(PerfCollective coll);

// ---- Text --------------------------------------------------------------------------------------------
// `value` right-aligned in exactly `width` characters: two decimals if they fit, then one, then none,
// then exponent notation (nccl-tests' getFloatStr).
std::string format_number(double value, int width);

struct BannerInfo {
  std::string collective;  // "all_reduce"
  int threads = 1;
  int gpus = 1;
  size_t min_bytes = 0;
  size_t max_bytes = 0;
  size_t step_bytes = 0;
  uint64_t step_factor = 1;
  int warmup_iters = 0;
  int iters = 0;
  int agg_iters = 1;
  int check_iters = 1;
  int blocking = 0;
  int library_version = 0;  // ncclGetVersion
};
// The opening comment block up to and including "# Using devices".
std::string format_banner(const BannerInfo& info);

struct RankInfo {
  int rank = 0;
  int group = 0;
  int pid = 0;
  std::string host;
  int device = 0;              // the rank's device; without devices, its index among the ranks on its host
  std::string backend = "host";  // cclabBackendName
  std::string bus_id;          // PCI bus id of a real device, empty otherwise
  std::string device_name;     // cclabGetDeviceName's name
};
// nccl-tests' line, the backend shown:
// "#  Rank  0 Group  0 Pid  12345 on       host device  0 [cclab host]"                      (no device)
// "#  Rank  0 Group  0 Pid  12345 on       host device  0 [0000:07:00.0] NVIDIA H100 (cclab cuda)"
std::string format_rank_line(const RankInfo& info);

// "#" then the three column-header lines.
std::string format_column_header();

// The left part of a result row: size, count, type, redop, root.
std::string format_row_start(size_t bytes, size_t count, const char* type, const char* op, int root);
// One half of a row (out-of-place or in-place): time in us, algbw, busbw, #wrong (negative: N/A).
std::string format_row_half(double time_us, double algbw, double busbw, int64_t wrong);
// A half that was not run: N/A in every column.
std::string format_row_half_skipped();

// "# Out of bounds values : N OK|FAILED", "# Avg bus bandwidth    : X", "#", the closing lines.
std::string format_footer(int64_t error_count, double avg_busbw, const std::string& collective);

}  // namespace cclab
