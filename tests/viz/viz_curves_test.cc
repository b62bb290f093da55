// tests/viz/viz_curves_test.cc - `cclab viz --curves`: busbw-vs-size from `cclab sim --csv` and
// `--json` (plain and --compare), and from the nccl-tests table `cclab perf` and `cclab sim` print
// (generated with perf_report.h's own formatting functions when cclab_perf_core is built), plus clear
// errors on malformed files.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "viz/curves.h"
#ifdef CCLAB_VIZ_TEST_PERF
#include "perf_report.h"
#endif

namespace cclab {
namespace viz {
namespace {

std::vector<Curve> parse_ok(const std::string& text, const std::string& name) {
  std::vector<Curve> out;
  std::string err;
  EXPECT_TRUE(parse_curves(text, name, &out, &err)) << err;
  return out;
}

std::string parse_err(const std::string& text, const std::string& name) {
  std::vector<Curve> out;
  std::string err;
  EXPECT_FALSE(parse_curves(text, name, &out, &err));
  return err;
}

// As format_sim_csv writes it: "%zu,%zu,%s,%s,%d,%.9g,%.9g,%.9g,%lld,%s,%s,%d,%s,%.9g,%llu".
const char* kSimCsv =
    "bytes,count,type,op,root,time_us,algbw,busbw,wrong,algo,proto,nchannels,level,predicted_us,slices\n"
    "8,2,float,sum,-1,14.2871094,0.000559948096,0.000979909168,-1,Ring,LL,2,step,12.5,16\n"
    "1048576,262144,float,sum,-1,31.8613281,32.9105425,57.5934494,-1,Ring,LL128,8,step,29.4,512\n"
    "1073741824,268435456,float,sum,-1,5103.25391,210.405,368.208751,-1,Ring,Simple,16,flow,5090.1,4096\n";

TEST(Curves, SimCsv) {
  const auto c = parse_ok(kSimCsv, "/tmp/runs/h100.csv");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].label, "h100.csv");
  ASSERT_EQ(c[0].points.size(), 3u);
  EXPECT_EQ(c[0].points[0].bytes, 8);
  EXPECT_DOUBLE_EQ(c[0].points[1].busbw, 57.5934494);
  EXPECT_DOUBLE_EQ(c[0].points[1].algbw, 32.9105425);
  EXPECT_DOUBLE_EQ(c[0].points[1].time_us, 31.8613281);
  EXPECT_EQ(c[0].points[2].bytes, 1073741824.0);
}

TEST(Curves, SimCsvCompareVariants) {
  // --compare with --csv: a first "variant" column; one curve per variant.
  const std::string text =
      "variant,bytes,count,type,op,root,time_us,algbw,busbw,wrong,algo,proto,nchannels,level,predicted_us,slices\n"
      "\"A: --nvlink-bw 450\",1024,256,float,sum,-1,10,0.1,0.2,-1,Ring,LL,2,step,9,10\n"
      "\"A: --nvlink-bw 450\",2048,512,float,sum,-1,11,0.2,0.3,-1,Ring,LL,2,step,9,10\n"
      "\"B: --nvlink-bw 900, x\",1024,256,float,sum,-1,9,0.11,0.21,-1,Ring,LL,2,step,9,10\n";
  const auto c = parse_ok(text, "cmp.csv");
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].label, "cmp.csv A: --nvlink-bw 450");
  EXPECT_EQ(c[0].points.size(), 2u);
  EXPECT_EQ(c[1].label, "cmp.csv B: --nvlink-bw 900, x");
  EXPECT_DOUBLE_EQ(c[1].points[0].busbw, 0.21);
}

const char* kSimJson = R"({
  "collective": "all_reduce",
  "topo": "dgx-h100:4",
  "topo_xml": false,
  "nranks": 32,
  "rows": [
    {"bytes": 1048576, "count": 262144, "type": "float", "op": "sum", "root": -1, "time_us": 40.5,
     "algbw": 25.9, "busbw": 50.1, "wrong": -1, "algo": "Ring", "proto": "LL128", "nchannels": 8,
     "level": "step", "predicted_us": 39.0, "slices": 100},
    {"bytes": 2097152, "count": 524288, "type": "float", "op": "sum", "root": -1, "time_us": 60.0,
     "algbw": 34.9, "busbw": 67.7, "wrong": -1, "algo": "Tree", "proto": "Simple", "nchannels": 8,
     "level": "step", "predicted_us": 58.0, "slices": 200}
  ],
  "links": []
}
)";

TEST(Curves, SimJson) {
  const auto c = parse_ok(kSimJson, "dir/run.json");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].label, "run.json (all_reduce dgx-h100:4)");
  ASSERT_EQ(c[0].points.size(), 2u);
  EXPECT_EQ(c[0].points[1].bytes, 2097152);
  EXPECT_DOUBLE_EQ(c[0].points[1].busbw, 67.7);
  EXPECT_DOUBLE_EQ(c[0].points[0].time_us, 40.5);
}

TEST(Curves, SimCompareJson) {
  const std::string text = R"({"compare": true,
    "a": {"flags": "--nvlink-bw 450", "collective": "all_reduce", "topo": "dgx-h100",
          "rows": [{"bytes": 1024, "busbw": 1.5, "algbw": 0.9, "time_us": 3}]},
    "b": {"flags": "--nvlink-bw 900", "collective": "all_reduce", "topo": "dgx-h100",
          "rows": [{"bytes": 1024, "busbw": 2.5, "algbw": 1.4, "time_us": 2}]}})";
  const auto c = parse_ok(text, "cmp.json");
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].label, "cmp.json A [--nvlink-bw 450] (all_reduce dgx-h100)");
  EXPECT_DOUBLE_EQ(c[1].points[0].busbw, 2.5);
}

// cclab perf's stdout (nccl-tests' table), as perf_report.cc formats it.
std::string perf_table() {
#ifdef CCLAB_VIZ_TEST_PERF
  std::string s = "# nThread 1 nGpus 8 minBytes 1024 maxBytes 4096 step: 2(factor) warmup iters: 5 iters: 20\n";
  s += format_column_header();
  s += format_row_start(1024, 256, "float", "sum", -1) + format_row_half(20.5, 0.05, 0.09, 0) +
       format_row_half(19.5, 0.05, 0.092, 0) + "\n";
  s += format_row_start(2048, 512, "float", "sum", -1) + format_row_half(21, 0.1, 0.17, 0) +
       format_row_half(20, 0.1, 0.18, 0) + "\n";
  s += format_row_start(4096, 1024, "float", "sum", -1) + format_row_half_skipped() +
       format_row_half(22, 0.19, 0.33, -1) + "\n";
  s += format_footer(0, 0.2, "all_reduce");
  return s;
#else
  return "# nThread 1 nGpus 8 minBytes 1024 maxBytes 4096 step: 2(factor) warmup iters: 5 iters: 20\n"
         "#\n"
         "#                                                              out-of-place                       in-place\n"
         "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
         "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
         "        1024           256     float     sum      -1    20.50    0.05    0.09      0    19.50    0.05    0.09      0\n"
         "        2048           512     float     sum      -1    21.00    0.10    0.17      0    20.00    0.10    0.18      0\n"
         "        4096          1024     float     sum      -1      N/A     N/A     N/A    N/A    22.00    0.19    0.33    N/A\n"
         "# Out of bounds values : 0 OK\n"
         "# Avg bus bandwidth    : 0.2 \n"
         "#\n";
#endif
}

TEST(Curves, PerfTable) {
  const auto c = parse_ok(perf_table(), "perf.txt");
  ASSERT_EQ(c.size(), 1u);
  ASSERT_EQ(c[0].points.size(), 3u);
  EXPECT_EQ(c[0].points[0].bytes, 1024);
  EXPECT_NEAR(c[0].points[0].busbw, 0.09, 1e-9);  // out-of-place
  EXPECT_NEAR(c[0].points[0].time_us, 20.5, 1e-9);
  EXPECT_NEAR(c[0].points[1].busbw, 0.17, 1e-9);
  EXPECT_NEAR(c[0].points[2].busbw, 0.33, 1e-9);  // out-of-place N/A: in-place
}

TEST(Curves, SimTable) {
  // cclab sim's stdout: nccl-tests' columns then algo proto nch predicted level.
  const std::string text =
      "# cclab sim all_reduce on dgx-h100 (simulated)\n"
      "#\n"
      "#       size         count      type   redop    root     time   algbw   busbw #wrong      algo   proto   nch  predicted  level\n"
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)                                    (us)\n"
      "     1048576        262144     float     sum      -1    31.86   32.91   57.59    N/A      Ring   LL128     8      29.40   step\n"
      "# Avg bus bandwidth    : 57.59 \n";
  const auto c = parse_ok(text, "sim.txt");
  ASSERT_EQ(c.size(), 1u);
  ASSERT_EQ(c[0].points.size(), 1u);
  EXPECT_DOUBLE_EQ(c[0].points[0].busbw, 57.59);
}

TEST(Curves, Errors) {
  EXPECT_EQ(parse_err("", "e.csv"), "e.csv: empty file");
  EXPECT_EQ(parse_err("   \n", "e.csv"), "e.csv: empty file");
  EXPECT_NE(parse_err("{\"rows\": [", "t.json").find("t.json: invalid JSON"), std::string::npos);
  EXPECT_NE(parse_err("{\"x\": 1}", "t.json").find("no \"rows\" array"), std::string::npos);
  EXPECT_EQ(parse_err("{\"rows\": [{\"bytes\": 8}]}", "t.json"), "t.json: rows[0]: \"busbw\" is missing or not a number");
  EXPECT_EQ(parse_err("{\"rows\": [{\"busbw\": 8}]}", "t.json"), "t.json: rows[0]: \"bytes\" is missing or not a number");
  EXPECT_EQ(parse_err("{\"rows\": []}", "t.json"), "t.json: no rows");
  EXPECT_NE(parse_err("bytes,count\n8,2\n", "c.csv").find("c.csv:1: CSV header has no \"bytes\" and \"busbw\""),
            std::string::npos);
  EXPECT_EQ(parse_err("bytes,busbw\n8,2,3\n", "c.csv"), "c.csv:2: 3 fields, the header has 2");
  EXPECT_EQ(parse_err("bytes,busbw\neight,2\n", "c.csv"), "c.csv:2: bytes \"eight\" is not a number");
  EXPECT_EQ(parse_err("bytes,busbw\n", "c.csv"), "c.csv: no data rows after the CSV header");
  EXPECT_EQ(parse_err("bytes,busbw\n\"8,2\n", "c.csv"), "c.csv:2: unterminated quote");
  EXPECT_NE(parse_err("hello world\n", "x.txt").find("x.txt: no result rows"), std::string::npos);
  EXPECT_NE(parse_err("1024 256 float sum\n", "x.txt").find("x.txt:1: result row has 4 columns"), std::string::npos);
  EXPECT_EQ(parse_err("1024 256 float sum -1 1.0 2.0 fast 0\n", "x.txt"), "x.txt:1: busbw \"fast\" is not a number");
  std::vector<Curve> out;
  std::string err;
  EXPECT_FALSE(load_curves("/nonexistent/dir/x.csv", &out, &err));
  EXPECT_EQ(err, "/nonexistent/dir/x.csv: cannot open");
}

TEST(Curves, LoadFile) {
  const std::string path = "/tmp/cclab_viz_curves_test.csv";
  std::ofstream(path) << kSimCsv;
  std::vector<Curve> out;
  std::string err;
  ASSERT_TRUE(load_curves(path, &out, &err)) << err;
  EXPECT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].source, path);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace viz
}  // namespace cclab
