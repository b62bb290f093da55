// Tests of `cclab perf`'s byte accounting, bus-bandwidth factors (against nccl-tests' formulas) and
// the text layout (nccl-tests' column widths).
#include "perf_report.h"

#include <gtest/gtest.h>

#include <string>

namespace cclab {
namespace {

constexpr PerfCollective kAll[] = {
    PerfCollective::kAllReduce, PerfCollective::kAllGather, PerfCollective::kReduceScatter,
    PerfCollective::kBroadcast, PerfCollective::kReduce,    PerfCollective::kAllToAll,
    PerfCollective::kGather,    PerfCollective::kScatter,   PerfCollective::kSendRecv};

TEST(PerfReport, CountsForWholeBufferCollectives) {
  for (PerfCollective c :
       {PerfCollective::kAllReduce, PerfCollective::kBroadcast, PerfCollective::kReduce, PerfCollective::kSendRecv}) {
    const CollCounts k = coll_counts(c, 1000, 4, 3);
    EXPECT_EQ(k.send_count, 250u);
    EXPECT_EQ(k.recv_count, 250u);
    EXPECT_EQ(k.param_count, 250u);
    EXPECT_EQ(k.send_inplace_offset, 0u);
    EXPECT_EQ(k.recv_inplace_offset, 0u);
    EXPECT_EQ(reported_bytes(k, 4), 1000u);
  }
}

TEST(PerfReport, CountsForChunkedCollectivesAre16ByteAligned) {
  // 1024 bytes of float over 3 ranks: 256 elements, 85 per rank, rounded down to 84 (16 bytes = 4 floats).
  CollCounts k = coll_counts(PerfCollective::kAllGather, 1024, 4, 3);
  EXPECT_EQ(k.send_count, 84u);
  EXPECT_EQ(k.recv_count, 252u);
  EXPECT_EQ(k.param_count, 84u);
  EXPECT_EQ(k.send_inplace_offset, 84u);
  EXPECT_EQ(k.recv_inplace_offset, 0u);
  EXPECT_EQ(reported_bytes(k, 4), 1008u);

  k = coll_counts(PerfCollective::kGather, 1024, 4, 3);
  EXPECT_EQ(k.send_count, 84u);
  EXPECT_EQ(k.recv_count, 252u);
  EXPECT_EQ(k.send_inplace_offset, 84u);

  k = coll_counts(PerfCollective::kReduceScatter, 1024, 4, 3);
  EXPECT_EQ(k.send_count, 252u);
  EXPECT_EQ(k.recv_count, 84u);
  EXPECT_EQ(k.param_count, 84u);
  EXPECT_EQ(k.send_inplace_offset, 0u);
  EXPECT_EQ(k.recv_inplace_offset, 84u);

  k = coll_counts(PerfCollective::kScatter, 1024, 4, 3);
  EXPECT_EQ(k.send_count, 252u);
  EXPECT_EQ(k.recv_count, 84u);
  EXPECT_EQ(k.recv_inplace_offset, 84u);

  k = coll_counts(PerfCollective::kAllToAll, 1 << 20, 4, 8);
  EXPECT_EQ(k.param_count, 32768u);
  EXPECT_EQ(k.send_count, 262144u);
  EXPECT_EQ(k.recv_count, 262144u);
  EXPECT_EQ(k.send_inplace_offset, 0u);
  EXPECT_EQ(k.recv_inplace_offset, 0u);

  // int8: chunks are multiples of 16 elements; double: of 2.
  EXPECT_EQ(coll_counts(PerfCollective::kAllGather, 100, 1, 2).param_count, 48u);
  EXPECT_EQ(coll_counts(PerfCollective::kAllGather, 88, 8, 2).param_count, 4u);  // 11 elements, 5 per rank
  // Too small to give every rank a chunk: zero, as nccl-tests prints.
  EXPECT_EQ(coll_counts(PerfCollective::kAllGather, 8, 4, 2).param_count, 0u);
}

TEST(PerfReport, BusBandwidthFactorsMatchNcclTests) {
  for (int n : {1, 2, 3, 4, 7, 8, 16, 64}) {
    const double nd = n;
    EXPECT_DOUBLE_EQ(busbw_factor(PerfCollective::kAllReduce, n), 2.0 * (nd - 1) / nd) << n;
    EXPECT_DOUBLE_EQ(busbw_factor(PerfCollective::kAllGather, n), (nd - 1) / nd) << n;
    EXPECT_DOUBLE_EQ(busbw_factor(PerfCollective::kReduceScatter, n), (nd - 1) / nd) << n;
    EXPECT_DOUBLE_EQ(busbw_factor(PerfCollective::kAllToAll, n), (nd - 1) / nd) << n;
    EXPECT_DOUBLE_EQ(busbw_factor(PerfCollective::kGather, n), (nd - 1) / nd) << n;
    EXPECT_DOUBLE_EQ(busbw_factor(PerfCollective::kScatter, n), (nd - 1) / nd) << n;
    EXPECT_DOUBLE_EQ(busbw_factor(PerfCollective::kBroadcast, n), 1.0) << n;
    EXPECT_DOUBLE_EQ(busbw_factor(PerfCollective::kReduce, n), 1.0) << n;
    EXPECT_DOUBLE_EQ(busbw_factor(PerfCollective::kSendRecv, n), 1.0) << n;
  }
}

TEST(PerfReport, AlgorithmBandwidthBytes) {
  // nccl-tests GetBw: count * typesize, times nranks where count is per rank.
  const int n = 4;
  const size_t count = 1000;
  for (PerfCollective c : kAll) {
    const bool per_rank = c == PerfCollective::kAllGather || c == PerfCollective::kReduceScatter ||
                          c == PerfCollective::kAllToAll || c == PerfCollective::kGather ||
                          c == PerfCollective::kScatter;
    EXPECT_DOUBLE_EQ(algbw_bytes(c, count, 4, n), per_rank ? 16000.0 : 4000.0) << collective_name(c);
  }
  // 1e6 bytes in 1 ms is 1 GB/s (GB = 1e9 bytes).
  const Bandwidth bw = compute_bandwidth(PerfCollective::kAllReduce, 250000, 4, 8, 1e-3);
  EXPECT_DOUBLE_EQ(bw.algbw, 1.0);
  EXPECT_DOUBLE_EQ(bw.busbw, 1.75);
  const Bandwidth ag = compute_bandwidth(PerfCollective::kAllGather, 62500, 4, 4, 1e-3);
  EXPECT_DOUBLE_EQ(ag.algbw, 1.0);
  EXPECT_DOUBLE_EQ(ag.busbw, 0.75);
}

TEST(PerfReport, InPlaceAlltoallAndSendrecvAreNotChecked) {
  for (PerfCollective c : kAll) {
    EXPECT_TRUE(reports_errors(c, false)) << collective_name(c);
    const bool unchecked = c == PerfCollective::kAllToAll || c == PerfCollective::kSendRecv;
    EXPECT_EQ(reports_errors(c, true), !unchecked) << collective_name(c);
  }
}

TEST(PerfReport, NumbersFitTheirColumn) {
  EXPECT_EQ(format_number(0.0, 6), "  0.00");
  EXPECT_EQ(format_number(12.5, 6), " 12.50");
  EXPECT_EQ(format_number(123.25, 6), "123.25");
  EXPECT_EQ(format_number(1234.5, 6), "1234.5");
  EXPECT_EQ(format_number(123456.0, 6), "123456");
  EXPECT_EQ(format_number(1234567.0, 6), " 1e+06");
  EXPECT_EQ(format_number(5.25, 7), "   5.25");
  EXPECT_EQ(format_number(1234.25, 7), "1234.25");
  EXPECT_EQ(format_number(12345.75, 7), "12345.8");
  EXPECT_EQ(format_number(1.5e8, 7), "1.5e+08");
}

TEST(PerfReport, ColumnHeaderIsNcclTestsText) {
  // nccl-tests' format strings, printed with its arguments (the names line is the brief's reference).
  const std::string expected =
      "#\n"
      "#" +
      std::string(61, ' ') +
      " out-of-place                       in-place          \n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
      "#wrong\n"
      "#        (B)    (elements)" +
      std::string(31, ' ') + "(us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)" + std::string(7, ' ') + "\n";
  EXPECT_EQ(format_column_header(), expected);
}

TEST(PerfReport, RowsLineUpWithTheHeader) {
  const std::string start = format_row_start(8, 2, "float", "sum", -1);
  EXPECT_EQ(start, "           8             2     float     sum      -1");
  const std::string half = format_row_half(12.34, 0.5, 0.75, 0);
  EXPECT_EQ(half, "    12.34    0.50    0.75      0");
  EXPECT_EQ(format_row_half(1.5, 0, 0, -1), "     1.50    0.00    0.00    N/A");
  EXPECT_EQ(format_row_half(1.5, 0, 0, 17), "     1.50    0.00    0.00     17");
  EXPECT_EQ(format_row_start(134217728, 33554432, "bfloat16", "mulsum", 3),
            "   134217728      33554432  bfloat16  mulsum       3");

  // Every column of a row ends where its header column ends.
  const std::string header = format_column_header();
  const size_t names = header.find("#       size");
  const std::string name_line = header.substr(names, header.find('\n', names) - names);
  const std::string row = start + half + half;
  EXPECT_EQ(row.size(), name_line.size());
  for (const char* col : {"size", "count", "type", "redop", "root"}) {
    const size_t end = name_line.find(col) + std::string(col).size();
    EXPECT_NE(row[end - 1], ' ') << col;
    EXPECT_EQ(row[end], ' ') << col;
  }
}

TEST(PerfReport, BannerRankLineAndFooter) {
  BannerInfo b;
  b.collective = "all_reduce";
  b.threads = 1;
  b.gpus = 2;
  b.min_bytes = 8;
  b.max_bytes = 1048576;
  b.step_bytes = 1048576;
  b.step_factor = 2;
  b.warmup_iters = 1;
  b.iters = 20;
  b.agg_iters = 1;
  b.check_iters = 1;
  b.library_version = 22809;
  const std::string banner = format_banner(b);
  EXPECT_NE(banner.find("# Collective test starting: all_reduce\n"), std::string::npos) << banner;
  EXPECT_NE(banner.find("# nThread 1 nGpus 2 minBytes 8 maxBytes 1048576 step: 2(factor) warmup iters: 1 iters: 20 "
                        "agg iters: 1 validation: 1 graph: 0 unalign: 0\n"),
            std::string::npos)
      << banner;
  EXPECT_NE(banner.find("nccl-library=22809"), std::string::npos) << banner;
  EXPECT_EQ(banner.substr(banner.size() - 18), "#\n# Using devices\n");
  b.step_factor = 1;
  b.blocking = 1;
  const std::string stepped = format_banner(b);
  EXPECT_NE(stepped.find("step: 1048576(bytes)"), std::string::npos) << stepped;
  EXPECT_NE(stepped.find("# Blocking Enabled"), std::string::npos) << stepped;

  RankInfo r;
  r.rank = 3;
  r.pid = 12345;
  r.host = "node1";
  r.device = 1;
  EXPECT_EQ(format_rank_line(r), "#  Rank  3 Group  0 Pid  12345 on      node1 device  1 [cclab host]\n");
  r.backend = "sim";
  EXPECT_EQ(format_rank_line(r), "#  Rank  3 Group  0 Pid  12345 on      node1 device  1 [cclab sim]\n");
  // A real device: nccl-tests' bus id and name, then the backend.
  r.backend = "cuda";
  r.bus_id = "0000:07:00.0";
  r.device_name = "NVIDIA H100 80GB HBM3";
  EXPECT_EQ(format_rank_line(r),
            "#  Rank  3 Group  0 Pid  12345 on      node1 device  1 [0000:07:00.0] NVIDIA H100 80GB HBM3 (cclab cuda)\n");

  EXPECT_EQ(format_footer(0, 1.5, "all_reduce"),
            "# Out of bounds values : 0 OK\n"
            "# Avg bus bandwidth    : 1.5 \n"
            "#\n"
            "# Collective test concluded: all_reduce\n"
            "#\n");
  EXPECT_EQ(format_footer(2, 0.123456789, "reduce").substr(0, 69),
            "# Out of bounds values : 2 FAILED\n# Avg bus bandwidth    : 0.123457 \n");
}

}  // namespace
}  // namespace cclab
