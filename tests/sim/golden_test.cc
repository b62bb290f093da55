// Golden scenarios (in the spirit of SimGrid's tesh files): small fixed runs whose complete event log
// and simulated times are compared line by line with checked-in expected output. A change to a
// schedule, a protocol, the executor, the platform or a calibration constant shows up here as a diff.
// CCLAB_UPDATE_GOLDEN=1 rewrites the files (review the diff before committing it).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "sim/sim.h"

#ifndef CCLAB_GOLDEN_DIR
#error "CCLAB_GOLDEN_DIR must name tests/sim/golden"
#endif

namespace cclab {
namespace sim {
namespace {

struct Scenario {
  const char* name;
  const char* topo;
  CollKind coll;
  const char* algo;
  const char* proto;
  size_t bytes;
};

const Scenario kScenarios[] = {
    {"ring_all_reduce_dgx_h100_simple", "dgx-h100", CollKind::kAllReduce, "ring", "simple", 256 << 10},
    {"tree_all_reduce_nvlink_pairs_2_ll", "nvlink-pairs:2", CollKind::kAllReduce, "tree", "ll", 8 << 10},
    {"ring_all_gather_pcie_4gpu_ll128", "pcie-4gpu", CollKind::kAllGather, "ring", "ll128", 64 << 10},
};

std::string render(const Scenario& s, const SimResult& r) {
  std::string out;
  char line[256];
  snprintf(line, sizeof line, "# %s: %s on %s, %d ranks, %s/%s\n", s.name, coll_name(s.coll), s.topo, r.nranks,
           s.algo, s.proto);
  out += line;
  for (const SimSizeResult& z : r.sizes) {
    snprintf(line, sizeof line, "# size %zu algo %s proto %s channels %d time_us %.6f busbw %.6f\n", z.bytes,
             algo_name(z.algo), proto_name(z.proto), z.nchannels, z.time_us, z.busbw);
    out += line;
  }
  return out + format_events(r.events);
}

class Golden : public ::testing::TestWithParam<Scenario> {};

TEST_P(Golden, EventLogMatches) {
  const Scenario& s = GetParam();
  SimConfig cfg;
  cfg.topo = s.topo;
  cfg.coll = s.coll;
  cfg.algo = s.algo;
  cfg.proto = s.proto;
  cfg.min_bytes = cfg.max_bytes = s.bytes;
  cfg.max_channels = 2;
  cfg.payload = true;
  cfg.record_events = true;
  SimResult r;
  std::string err;
  ASSERT_TRUE(simulate(cfg, &r, &err)) << err;
  ASSERT_EQ(r.sizes.size(), 1u);
  EXPECT_EQ(r.sizes[0].wrong, 0);
  const std::string got = render(s, r);
  const std::string path = std::string(CCLAB_GOLDEN_DIR) + "/" + s.name + ".txt";
  const char* update = getenv("CCLAB_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    std::ofstream(path) << got;
    GTEST_SKIP() << "rewrote " << path;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << path << " is missing (run with CCLAB_UPDATE_GOLDEN=1 to create it)";
  std::stringstream want;
  want << in.rdbuf();
  // Report the first differing line rather than two walls of text.
  std::istringstream a(want.str()), b(got);
  std::string la, lb;
  int n = 0;
  while (true) {
    const bool ea = !std::getline(a, la), eb = !std::getline(b, lb);
    ++n;
    if (ea && eb) break;
    ASSERT_FALSE(ea || eb || la != lb) << path << ":" << n << "\n  expected: " << (ea ? "(end of file)" : la)
                                       << "\n  got:      " << (eb ? "(end of output)" : lb);
  }
}

INSTANTIATE_TEST_SUITE_P(Sim, Golden, ::testing::ValuesIn(kScenarios),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace sim
}  // namespace cclab
