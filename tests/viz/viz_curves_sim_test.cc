// tests/viz/viz_curves_sim_test.cc - `cclab viz --curves` reads exactly what `cclab sim` writes: the
// CSV, JSON and --compare JSON and the stdout table, produced here by sim_cmd.h's own formatting
// functions from a fabricated result.
#include <gtest/gtest.h>

#include "sim_cmd.h"
#include "viz/curves.h"

namespace cclab {
namespace viz {
namespace {

sim::SimResult fabricated() {
  sim::SimResult r;
  r.topo_description = "8x H100 SXM";
  r.nranks = 8;
  r.machines = 1;
  const size_t sizes[] = {1024, 1 << 20, 1u << 30};
  const double busbw[] = {0.75, 57.6, 368.2};
  for (int i = 0; i < 3; ++i) {
    sim::SimSizeResult s;
    s.bytes = sizes[i];
    s.count = sizes[i] / 4;
    s.busbw = busbw[i];
    s.algbw = busbw[i] / 1.75;
    s.time_us = static_cast<double>(sizes[i]) / (s.algbw * 1e3);
    s.nchannels = 8;
    r.sizes.push_back(s);
  }
  return r;
}

SimRun base_run() {
  SimRun run;
  run.config.topo = "dgx-h100";
  run.config.min_bytes = 1024;
  run.config.max_bytes = 1u << 30;
  run.topo_label = "dgx-h100";
  return run;
}

void expect_points(const Curve& c, const sim::SimResult& r) {
  ASSERT_EQ(c.points.size(), r.sizes.size());
  for (size_t i = 0; i < r.sizes.size(); ++i) {
    EXPECT_EQ(c.points[i].bytes, static_cast<double>(r.sizes[i].bytes));
    EXPECT_NEAR(c.points[i].busbw, r.sizes[i].busbw, r.sizes[i].busbw * 1e-6);
    EXPECT_NEAR(c.points[i].time_us, r.sizes[i].time_us, r.sizes[i].time_us * 1e-6);
  }
}

TEST(CurvesFromSim, CsvJsonAndTable) {
  const SimRun run = base_run();
  const sim::SimResult r = fabricated();
  std::vector<Curve> c;
  std::string err;
  ASSERT_TRUE(parse_curves(format_sim_csv(run.config, r), "sim.csv", &c, &err)) << err;
  ASSERT_EQ(c.size(), 1u);
  expect_points(c[0], r);
  c.clear();
  ASSERT_TRUE(parse_curves(format_sim_json(run, r), "sim.json", &c, &err)) << err;
  ASSERT_EQ(c.size(), 1u);
  expect_points(c[0], r);
  EXPECT_EQ(c[0].label, "sim.json (all_reduce dgx-h100)");
  c.clear();
  ASSERT_TRUE(parse_curves(format_sim_report(run, r), "sim.txt", &c, &err)) << err;
  ASSERT_EQ(c.size(), 1u);
  ASSERT_EQ(c[0].points.size(), r.sizes.size());
  for (size_t i = 0; i < r.sizes.size(); ++i)  // the table rounds to 2 decimals
    EXPECT_NEAR(c[0].points[i].busbw, r.sizes[i].busbw, 0.01);
}

TEST(CurvesFromSim, Compare) {
  SimCmdOptions o;
  o.compare = true;
  o.compare_flags[0] = "--nvlink-bw 450";
  o.compare_flags[1] = "--nvlink-bw 900";
  o.compare_runs[0] = base_run();
  o.compare_runs[1] = base_run();
  const sim::SimResult a = fabricated();
  sim::SimResult b = fabricated();
  for (auto& s : b.sizes) s.busbw *= 2;
  std::vector<Curve> c;
  std::string err;
  ASSERT_TRUE(parse_curves(format_sim_compare_json(o, a, b), "cmp.json", &c, &err)) << err;
  ASSERT_EQ(c.size(), 2u);
  expect_points(c[0], a);
  EXPECT_NEAR(c[1].points[1].busbw, 2 * a.sizes[1].busbw, 1e-6);
  c.clear();
  const std::string csv = format_sim_csv(o.compare_runs[0].config, a, "A: " + o.compare_flags[0]) +
                          format_sim_csv(o.compare_runs[1].config, b, "B: " + o.compare_flags[1], false);
  ASSERT_TRUE(parse_curves(csv, "cmp.csv", &c, &err)) << err;
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].label, "cmp.csv A: --nvlink-bw 450");
  expect_points(c[0], a);
}

}  // namespace
}  // namespace viz
}  // namespace cclab
