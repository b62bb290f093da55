// The simulator's results: payload mode moves and reduces real bytes through the same schedules as the
// host backend, so every collective x algorithm x protocol must give byte-exact results; simulated
// times are deterministic; bad configurations fail with a message.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>
#include <vector>
#include <cstdlib>

#include "sim/sim.h"

namespace cclab {
namespace sim {
namespace {

SimConfig payload_config(const std::string& topo, CollKind coll, const char* algo, const char* proto, size_t bytes) {
  SimConfig c;
  c.topo = topo;
  c.coll = coll;
  c.payload = true;
  c.algo = algo;
  c.proto = proto;
  c.min_bytes = c.max_bytes = bytes;
  return c;
}

const char* coll_label(CollKind c) {
  switch (c) {
    case CollKind::kAllReduce: return "all_reduce";
    case CollKind::kAllGather: return "all_gather";
    case CollKind::kReduceScatter: return "reduce_scatter";
    case CollKind::kBroadcast: return "broadcast";
    case CollKind::kReduce: return "reduce";
    default: return "?";
  }
}

using Case = std::tuple<std::string, CollKind, std::string, std::string>;

class PayloadTest : public ::testing::TestWithParam<Case> {};

// An odd element count that does not fill the last slice, and a size with several chunks per channel
// (two channels): both must come out exact on every rank.
TEST_P(PayloadTest, ExactOnEveryRank) {
  const auto& [topo, coll, algo, proto] = GetParam();
  for (size_t bytes : {size_t{4099} * 4 * 8, size_t{1} << 20}) {
    SimConfig cfg = payload_config(topo, coll, algo.c_str(), proto.c_str(), bytes);
    cfg.max_channels = 2;
    cfg.iters = 2;  // the second iteration starts from the connections' state after the first
    SimResult r;
    std::string err;
    ASSERT_TRUE(simulate(cfg, &r, &err)) << err;
    ASSERT_EQ(r.sizes.size(), 1u);
    const SimSizeResult& s = r.sizes[0];
    EXPECT_EQ(s.wrong, 0) << topo << " " << coll_label(coll) << " " << algo << "/" << proto << " " << bytes << " B";
    EXPECT_EQ(s.algo, algo == "tree" ? AlgoKind::kTree : algo == "PAT" ? AlgoKind::kPat : AlgoKind::kRing);
    EXPECT_GT(s.time_us, 0);
    EXPECT_GT(s.slices, 0u);
  }
}

// Every collective x algorithm x protocol on dgx-h100 (NVSwitch); on a PCIe machine across sockets
// and on two machines (where trees cross the network) every protocol of all_reduce and Simple for the
// rest.
std::vector<Case> cases() {
  std::vector<Case> out;
  const CollKind all[] = {CollKind::kAllReduce, CollKind::kAllGather, CollKind::kReduceScatter, CollKind::kBroadcast,
                          CollKind::kReduce};
  for (const char* proto : {"LL", "LL128", "Simple"}) {
    for (CollKind c : all) out.emplace_back("dgx-h100", c, "ring", proto);
    out.emplace_back("dgx-h100", CollKind::kAllReduce, "tree", proto);
  }
  // PAT (kernels/pat.h) at one GPU per machine, on a power of two and on 5 and 7 machines.
  for (const char* topo : {"pcie-1gpu:8", "pcie-1gpu:5", "pcie-1gpu:7"})
    for (CollKind c : {CollKind::kAllGather, CollKind::kReduceScatter}) out.emplace_back(topo, c, "PAT", "Simple");
  for (const char* topo : {"pcie-8gpu-2socket", "nvlink-pairs:2"}) {
    for (const char* proto : {"LL", "LL128"}) {
      out.emplace_back(topo, CollKind::kAllReduce, "ring", proto);
      out.emplace_back(topo, CollKind::kAllReduce, "tree", proto);
    }
    for (CollKind c : all) out.emplace_back(topo, c, "ring", "Simple");
    out.emplace_back(topo, CollKind::kAllReduce, "tree", "Simple");
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Sim, PayloadTest, ::testing::ValuesIn(cases()), [](const auto& info) {
  std::string n = std::get<0>(info.param) + "_" + coll_label(std::get<1>(info.param)) + "_" +
                  std::get<2>(info.param) + "_" + std::get<3>(info.param);
  for (char& c : n)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
});

TEST(Sim, PayloadTypesAndOps) {
  for (SimType t : {SimType::kInt8, SimType::kFloat16, SimType::kBfloat16, SimType::kInt32, SimType::kFloat64})
    for (RedOpKind op : {RedOpKind::kSum, RedOpKind::kProd, RedOpKind::kMax, RedOpKind::kMin}) {
      SimConfig cfg = payload_config("pcie-4gpu", CollKind::kAllReduce, "", "", 40000);
      cfg.type = t;
      cfg.op = op;
      SimResult r;
      std::string err;
      ASSERT_TRUE(simulate(cfg, &r, &err)) << err;
      EXPECT_EQ(r.sizes.at(0).wrong, 0) << sim_type_name(t) << " op " << static_cast<int>(op);
    }
}

// PAT reduce_scatter and all_gather over every datatype the payload check models (int8, int32, half,
// float, double, bfloat16) and every op, on 6
// machines of one GPU (a non-power of two: the partial sums of blocks 1..5 wait in the scratch chunks),
// at an odd count that leaves the last slice short.
TEST(Sim, PatPayloadTypesAndOps) {
  for (CollKind coll : {CollKind::kReduceScatter, CollKind::kAllGather})
    for (SimType t : {SimType::kInt8, SimType::kInt32, SimType::kFloat16, SimType::kFloat32, SimType::kFloat64,
                      SimType::kBfloat16})
      for (RedOpKind op : {RedOpKind::kSum, RedOpKind::kProd, RedOpKind::kMax, RedOpKind::kMin}) {
        if (coll == CollKind::kAllGather && op != RedOpKind::kSum) continue;
        SimConfig cfg = payload_config("pcie-1gpu:6", coll, "PAT", "", 6 * 1021 * sim_type_size(t));
        cfg.type = t;
        cfg.op = op;
        SimResult r;
        std::string err;
        ASSERT_TRUE(simulate(cfg, &r, &err)) << err;
        EXPECT_EQ(r.sizes.at(0).algo, AlgoKind::kPat) << sim_type_name(t);
        EXPECT_EQ(r.sizes.at(0).wrong, 0) << coll_label(coll) << " " << sim_type_name(t) << " op "
                                          << static_cast<int>(op);
      }
}

// Same inputs, same times and the same event log, bit for bit.
TEST(Sim, Deterministic) {
  SimConfig cfg;
  cfg.topo = "dgx-h100:2";
  cfg.min_bytes = 64 << 10;
  cfg.max_bytes = 4 << 20;
  cfg.factor = 8;
  cfg.record_events = true;
  SimResult a, b;
  std::string err;
  ASSERT_TRUE(simulate(cfg, &a, &err)) << err;
  ASSERT_TRUE(simulate(cfg, &b, &err)) << err;
  ASSERT_EQ(a.sizes.size(), 3u);
  for (size_t i = 0; i < a.sizes.size(); ++i) EXPECT_EQ(a.sizes[i].time_us, b.sizes[i].time_us);
  EXPECT_FALSE(a.events.empty());
  EXPECT_EQ(format_events(a.events), format_events(b.events));
}

TEST(Sim, TimesGrowWithSizeAndFollowTheTuner) {
  SimConfig cfg;
  cfg.topo = "dgx-h100";
  cfg.min_bytes = 8;
  cfg.max_bytes = 256 << 20;
  cfg.factor = 16;
  SimResult r;
  std::string err;
  ASSERT_TRUE(simulate(cfg, &r, &err)) << err;
  ASSERT_EQ(r.sizes.size(), 7u);  // 8 B .. 128 MiB
  for (size_t i = 1; i < r.sizes.size(); ++i) EXPECT_GT(r.sizes[i].time_us, r.sizes[i - 1].time_us);
  EXPECT_EQ(r.sizes.front().proto, ProtoKind::kLL);
  EXPECT_EQ(r.sizes.back().proto, ProtoKind::kSimple);
  EXPECT_EQ(r.nranks, 8);
}

TEST(Sim, BadConfigurationsSayWhatIsWrong) {
  auto fails = [](SimConfig c, const std::string& needle) {
    SimResult r;
    std::string err;
    EXPECT_FALSE(simulate(c, &r, &err));
    EXPECT_NE(err.find(needle), std::string::npos) << "error: " << err;
  };
  SimConfig c;
  c.topo = "dgx-h900";
  fails(c, "dgx-h900");
  c = SimConfig{};
  c.nranks = 16;
  fails(c, "16");
  c = SimConfig{};
  c.min_bytes = 1024;
  c.max_bytes = 8;
  fails(c, "larger");
  c = SimConfig{};
  c.payload = true;
  c.type = SimType::kUint64;
  fails(c, "uint64");
  c = SimConfig{};
  c.algo = "tree";
  c.coll = CollKind::kBroadcast;
  fails(c, "no algorithm");
  c = SimConfig{};
  c.proto = "LL1024";
  fails(c, "LL1024");
}

}  // namespace
}  // namespace sim
}  // namespace cclab

namespace cclab {
namespace sim {
namespace {

SimResult run_ok(const SimConfig& cfg) {
  SimResult r;
  std::string err;
  EXPECT_TRUE(simulate(cfg, &r, &err)) << err;
  return r;
}

// The same run at step level and at flow level, one size each.
struct StepAndFlow {
  SimResult step, flow;
};
StepAndFlow at_both_levels(SimConfig cfg) {
  StepAndFlow out;
  cfg.level = SimLevel::kStep;
  out.step = run_ok(cfg);
  cfg.level = SimLevel::kFlow;
  out.flow = run_ok(cfg);
  EXPECT_EQ(out.step.sizes.size(), 1u);
  EXPECT_EQ(out.flow.sizes.size(), 1u);
  return out;
}

// NCCL_NVLS_CHUNKSIZE=4096 while it lives (unset again however the test ends): NVLS runs that wrap the
// FIFOs many times at small sizes.
struct SmallNvlsChunk {
  SmallNvlsChunk() { setenv("NCCL_NVLS_CHUNKSIZE", "4096", 1); }
  ~SmallNvlsChunk() { unsetenv("NCCL_NVLS_CHUNKSIZE"); }
};

// Several loops of the ring per channel with Simple's 2 MiB chunks: 4 ranks x 2 MiB = 8 MiB a loop,
// 20 MiB a channel.
TEST(Sim, PayloadManyLoops) {
  SimConfig cfg = payload_config("pcie-4gpu", CollKind::kAllReduce, "ring", "Simple", size_t{40} << 20);
  cfg.max_channels = 2;
  const SimResult r = run_ok(cfg);
  ASSERT_EQ(r.sizes.size(), 1u);
  EXPECT_EQ(r.sizes[0].wrong, 0);
  EXPECT_EQ(r.sizes[0].nchannels, 2);
}

// Fewer ranks than GPUs: the first N GPUs of the model.
TEST(Sim, RankSubset) {
  SimConfig cfg = payload_config("dgx-h100", CollKind::kAllReduce, "", "", 1 << 20);
  cfg.nranks = 4;
  const SimResult r = run_ok(cfg);
  EXPECT_EQ(r.nranks, 4);
  EXPECT_EQ(r.sizes.at(0).wrong, 0);
}

// The flow level against the step level where both run: within 2% of busbw (the issue's target) on every
// preset family, both algorithms, every collective, every protocol, latency- and bandwidth-bound sizes,
// one machine and several (docs/simulator.md, "Levels", has the table).
TEST(Sim, FlowAgreesWithStep) {
  struct Point {
    const char* topo;
    CollKind coll;
    const char* algo;
    const char* proto;
    size_t bytes;
  };
  const Point points[] = {
      {"dgx-h100", CollKind::kAllReduce, "ring", "", size_t{1} << 20},            // LL
      {"dgx-h100", CollKind::kAllReduce, "ring", "", size_t{8} << 20},            // LL128
      {"dgx-h100", CollKind::kAllReduce, "ring", "", size_t{512} << 20},          // Simple
      {"dgx-h100", CollKind::kAllReduce, "ring", "LL", size_t{32} << 20},
      {"dgx-h100:2", CollKind::kAllReduce, "ring", "", size_t{1} << 20},
      {"dgx-h100:2", CollKind::kAllReduce, "ring", "", size_t{64} << 20},
      {"dgx-h100:2", CollKind::kAllReduce, "tree", "", size_t{1} << 20},
      {"dgx-h100:2", CollKind::kAllReduce, "tree", "", size_t{8} << 20},
      {"dgx-h100:2", CollKind::kAllReduce, "tree", "", size_t{64} << 20},
      {"dgx-h100:2", CollKind::kAllReduce, "tree", "", size_t{512} << 20},
      {"dgx-a100:2", CollKind::kAllReduce, "tree", "", size_t{4} << 20},
      {"pcie-8gpu-2socket", CollKind::kAllReduce, "ring", "", size_t{1} << 20},
      {"dgx-h100:2", CollKind::kBroadcast, "ring", "", size_t{4} << 20},
      {"dgx-h100:2", CollKind::kAllGather, "ring", "", size_t{128} << 20},
      {"pcie-8gpu-2socket", CollKind::kReduceScatter, "ring", "", size_t{16} << 20},
      {"nvlink-pairs:2", CollKind::kReduce, "ring", "Simple", size_t{1} << 20},
      // issue 23, item 6: a GPU's PCIe link carries a peer and a network connection of different weights
      {"pcie-8gpu-2socket:2", CollKind::kAllReduce, "ring", "", size_t{16} << 20},  // was -27%
      {"pcie-4gpu:3", CollKind::kAllReduce, "tree", "", size_t{16} << 20},          // was -5.8%
  };
  for (const Point& p : points) {
    SimConfig cfg;
    cfg.topo = p.topo;
    cfg.coll = p.coll;
    cfg.algo = p.algo;
    cfg.proto = p.proto;
    cfg.min_bytes = cfg.max_bytes = p.bytes;
    const auto [step, flow] = at_both_levels(cfg);
    ASSERT_EQ(step.sizes.size(), 1u);
    ASSERT_EQ(flow.sizes.size(), 1u);
    EXPECT_EQ(step.sizes[0].level, SimLevel::kStep);
    EXPECT_EQ(flow.sizes[0].level, SimLevel::kFlow);
    const double a = step.sizes[0].busbw, b = flow.sizes[0].busbw;
    EXPECT_NEAR(b / a, 1.0, 0.02) << p.topo << " " << coll_name(p.coll) << " " << p.algo << " " << p.bytes
                                  << " B: step " << a << " GB/s, flow " << b << " GB/s";
  }
}

// Real bytes cost no simulated time: with --payload every protocol, algorithm and collective takes the time
// of timing-only mode to the bit (the line protocols' per-line flag waits once serialised each step's
// data loop with its sends: LL128 ring all_reduce of 16 MiB took 137.9 us instead of 105.6).
TEST(Sim, PayloadTakesTheTimingModesTime) {
  struct Point {
    const char* topo;
    CollKind coll;
    const char* algo;
    const char* proto;
  };
  const Point points[] = {
      {"dgx-h100", CollKind::kAllReduce, "ring", "LL"},          {"dgx-h100", CollKind::kAllReduce, "ring", "LL128"},
      {"dgx-h100", CollKind::kAllReduce, "ring", "Simple"},      {"dgx-h100", CollKind::kAllGather, "ring", "LL128"},
      {"dgx-h100", CollKind::kReduceScatter, "ring", "LL"},      {"dgx-h100", CollKind::kBroadcast, "ring", "LL128"},
      {"dgx-h100", CollKind::kReduce, "ring", "LL"},             {"dgx-h100:2", CollKind::kAllReduce, "tree", "LL"},
      {"dgx-h100:2", CollKind::kAllReduce, "tree", "LL128"},     {"dgx-h100", CollKind::kAllReduce, "nvls", ""},
      {"dgx-h100:2", CollKind::kAllReduce, "nvlstree", ""},      {"pcie-8gpu-2socket", CollKind::kAllReduce, "ring", "LL128"},
  };
  for (const Point& p : points) {
    SimConfig cfg;
    cfg.topo = p.topo;
    cfg.coll = p.coll;
    cfg.algo = p.algo;
    cfg.proto = p.proto;
    cfg.min_bytes = cfg.max_bytes = (size_t{4} << 20) + 4 * 16 * 3;  // 4 MiB and an odd tail per rank
    const SimResult timing = run_ok(cfg);
    cfg.payload = true;
    const SimResult payload = run_ok(cfg);
    ASSERT_EQ(timing.sizes.size(), 1u);
    ASSERT_EQ(payload.sizes.size(), 1u);
    EXPECT_EQ(payload.sizes[0].wrong, 0) << p.topo << " " << coll_name(p.coll) << " " << p.algo << " " << p.proto;
    EXPECT_EQ(payload.sizes[0].algo, timing.sizes[0].algo);
    EXPECT_NEAR(payload.sizes[0].time_us, timing.sizes[0].time_us, 1e-9 * timing.sizes[0].time_us)
        << p.topo << " " << coll_name(p.coll) << " " << p.algo << " " << p.proto;
  }
}

// NVLS and NVLS-Tree at the flow level: a switch step's up, down and reduce parts are connections of their
// own (SimExec::SwitchPart) and the fluid replay evaluates them with the tree connections, as SimGrid does
// at step level. Same times (2%) and the same bytes on every link.
TEST(Sim, FlowRunsNvlsAsTheStepLevel) {
  struct Point {
    const char* topo;
    CollKind coll;
    const char* algo;
    size_t bytes;
    int nics = 0;  // what-if: NICs kept per machine (fewer NVLS-Tree heads than GPUs)
  };
  const Point points[] = {
      {"gb200-nvl72", CollKind::kAllReduce, "nvls", size_t{16} << 20},  // 32 heads over 72 GPUs
      {"dgx-h100:2", CollKind::kAllReduce, "nvlstree", size_t{64} << 20, 4},
      {"dgx-h100:3", CollKind::kAllReduce, "nvlstree", size_t{64} << 20, 2},
      {"dgx-h100", CollKind::kAllReduce, "nvls", size_t{16} << 20},
      {"dgx-h100", CollKind::kAllReduce, "nvls", size_t{256} << 20},
      {"dgx-h100", CollKind::kAllGather, "nvls", size_t{64} << 20},
      {"dgx-h100", CollKind::kReduceScatter, "nvls", size_t{64} << 20},
      {"dgx-b200", CollKind::kAllReduce, "nvls", size_t{64} << 20},
      {"dgx-h100:2", CollKind::kAllReduce, "nvlstree", size_t{16} << 20},
      {"dgx-h100:2", CollKind::kAllReduce, "nvlstree", size_t{1} << 30},
      {"dgx-h100:3", CollKind::kAllReduce, "nvlstree", size_t{128} << 20},
  };
  for (const Point& p : points) {
    SimConfig cfg;
    cfg.topo = p.topo;
    cfg.coll = p.coll;
    cfg.algo = p.algo;
    cfg.min_bytes = cfg.max_bytes = p.bytes;
    cfg.what_if.nics_per_machine = p.nics;
    const auto [step, flow] = at_both_levels(cfg);
    ASSERT_EQ(step.sizes.size(), 1u);
    ASSERT_EQ(flow.sizes.size(), 1u);
    EXPECT_EQ(flow.sizes[0].level, SimLevel::kFlow);
    EXPECT_EQ(flow.sizes[0].algo, step.sizes[0].algo);
    EXPECT_TRUE(flow.sizes[0].algo == AlgoKind::kNvls || flow.sizes[0].algo == AlgoKind::kNvlsTree) << p.topo;
    const double a = step.sizes[0].busbw, b = flow.sizes[0].busbw;
    EXPECT_NEAR(b / a, 1.0, 0.02) << p.topo << " " << coll_name(p.coll) << " " << p.bytes << " B: step " << a
                                  << " GB/s, flow " << b << " GB/s";
    std::map<std::string, double> at_step;
    for (const SimLinkLoad& l : step.links) at_step[l.name] = l.bytes;
    ASSERT_EQ(flow.links.size(), step.links.size()) << p.topo;
    for (const SimLinkLoad& l : flow.links) EXPECT_NEAR(l.bytes, at_step[l.name], 1e-6 * l.bytes) << l.name;
  }
    // `auto` counts NVLS-Tree's slices from its loops: 4 DGX H100 at 1 GiB (425,984 slices) is a flow-level
  // run, 2 (81,920) a step-level one, single-machine NVLS at 8 GiB (131,072) too.
  {
    SimConfig a;
    a.topo = "dgx-h100:4";
    a.algo = "nvlstree";
    a.min_bytes = a.max_bytes = size_t{1} << 30;
    EXPECT_EQ(run_ok(a).sizes.at(0).level, SimLevel::kFlow);
    a.topo = "dgx-h100:2";
    EXPECT_EQ(run_ok(a).sizes.at(0).level, SimLevel::kStep);
    a.topo = "dgx-h100";
    a.algo = "nvls";
    a.min_bytes = a.max_bytes = size_t{8} << 30;
    EXPECT_EQ(run_ok(a).sizes.at(0).level, SimLevel::kStep);
  }
  // Past nvls_fluid_limit the occupancy rounds take over: documented within 3% here (-2.7%).
  SimConfig cfg;
  cfg.topo = "dgx-h100:2";
  cfg.algo = "nvlstree";
  cfg.min_bytes = cfg.max_bytes = size_t{1} << 30;
  cfg.level = SimLevel::kStep;
  const double step = run_ok(cfg).sizes[0].busbw;
  cfg.level = SimLevel::kFlow;
  cfg.nvls_fluid_limit = 0;
  const double rounds = run_ok(cfg).sizes[0].busbw;
  EXPECT_NEAR(rounds / step, 1.0, 0.03) << "step " << step << " GB/s, occupancy rounds " << rounds;
}

// The flow level solves each connection's max-min share itself; SimGrid's own solver, measured from real
// flows, gives the same shares, so the same simulated times (to SimGrid's solver precision, 1e-5).
TEST(Sim, FlowSharesAreSimGrids) {
  // The PCIe and NVLink-pair machines share links between routes of different latencies, where CM02's
  // latency-weighted sharing matters (equal weights would be 5-17% off there).
  const std::pair<const char*, const char*> cases[] = {{"dgx-h100:2", "tree"},          {"dgx-h100:4", "ring"},
                                                       {"pcie-4gpu:2", "tree"},         {"pcie-8gpu-2socket:2", "ring"},
                                                       {"pcie-8gpu-2socket:2", "tree"}, {"nvlink-pairs:2", "tree"}};
  for (const auto& c : cases) {
    SimConfig cfg;
    cfg.topo = c.first;
    cfg.algo = c.second;
    cfg.min_bytes = cfg.max_bytes = size_t{16} << 20;
    cfg.level = SimLevel::kFlow;
    const SimResult solved = run_ok(cfg);
    cfg.shares_from_simgrid = true;
    const SimResult measured = run_ok(cfg);
    EXPECT_NEAR(solved.sizes.at(0).time_us / measured.sizes.at(0).time_us, 1.0, 1e-5) << c.first << " " << c.second;
  }
}

// Runs too large to record whole replay channel by channel at the static shares (docs/simulator.md,
// "Levels"); rings move in lockstep, so that agrees with the step level too. The flow level is
// deterministic: the same config gives the same time, bit for bit.
TEST(Sim, FlowStaticSharesAndDeterminism) {
  SimConfig cfg;
  cfg.topo = "dgx-h100:2";
  cfg.algo = "ring";
  cfg.min_bytes = cfg.max_bytes = size_t{64} << 20;
  cfg.level = SimLevel::kStep;
  const SimResult step = run_ok(cfg);
  cfg.level = SimLevel::kFlow;
  cfg.refine_limit = 0;
  const SimResult flat = run_ok(cfg), again = run_ok(cfg);
  EXPECT_NEAR(flat.sizes.at(0).busbw / step.sizes.at(0).busbw, 1.0, 0.02);
  EXPECT_EQ(flat.sizes.at(0).time_us, again.sizes.at(0).time_us);
  cfg.algo = "tree";
  cfg.refine_limit = 1000000;
  const SimResult t1 = run_ok(cfg), t2 = run_ok(cfg);
  EXPECT_EQ(t1.sizes.at(0).time_us, t2.sizes.at(0).time_us);
}

// PAT at the static shares: a rank sends on one dimension at a time, so each dimension's connections
// share the links apart (flow.cc pat_phase). Sharing all of them at once gave a PAT reduce_scatter a
// sixth of its bandwidth (pcie-1gpu:256 at 2 GiB: 6.3 GB/s busbw against 27.4 at 1 GiB, refined).
// With n = 2^a + 2^b (6, 12) the peer 2^a one way is 2^b the other: the dimension follows the direction
// the collective sends in (a dimension taken either way round gave 0.78 and 0.87 of the step level).
TEST(Sim, FlowStaticSharesRunPatByDimension) {
  for (const char* topo : {"pcie-1gpu:16", "pcie-1gpu:6", "pcie-1gpu:12"})
  for (CollKind coll : {CollKind::kReduceScatter, CollKind::kAllGather}) {
    SimConfig cfg;
    cfg.topo = topo;
    cfg.coll = coll;
    cfg.algo = "pat";
    cfg.min_bytes = cfg.max_bytes = size_t{64} << 20;
    cfg.level = SimLevel::kStep;
    const SimResult step = run_ok(cfg);
    cfg.level = SimLevel::kFlow;
    cfg.refine_limit = 0;
    const SimResult flat = run_ok(cfg);
    EXPECT_TRUE(flat.sizes.at(0).static_shares);  // what `cclab sim` notes as an upper bound
    EXPECT_FALSE(step.sizes.at(0).static_shares);
    EXPECT_NEAR(flat.sizes.at(0).busbw / step.sizes.at(0).busbw, 1.0, 0.02)
        << topo << (coll == CollKind::kReduceScatter ? " reduce_scatter" : " all_gather") << ": step " << step.sizes.at(0).busbw << " GB/s, static shares " << flat.sizes.at(0).busbw;
  }
}

// ../shared/reference/calibration.md: DGX-A100 all_reduce ~230-235 GB/s at >= 1 GiB, DGX-H100 Ring
// all_reduce ~370 GB/s, and 46-48 GB/s of NCCL traffic per NDR NIC across machines; within 10%.
TEST(Sim, CalibrationPoints) {
  SimConfig cfg;
  cfg.min_bytes = cfg.max_bytes = size_t{1} << 30;
  cfg.algo = "ring";
  cfg.topo = "dgx-a100";
  const SimResult a100 = run_ok(cfg);
  EXPECT_NEAR(a100.sizes.at(0).busbw, 232.5, 23.25);
  cfg.topo = "dgx-h100";
  const SimResult h100 = run_ok(cfg);
  EXPECT_NEAR(h100.sizes.at(0).busbw, 370, 37);
  cfg.topo = "dgx-h100:2";
  const SimResult two = run_ok(cfg);
  ASSERT_EQ(two.sizes.size(), 1u);
  // Every NIC port's bytes over the collective's time.
  int nics = 0;
  for (const SimLinkLoad& l : two.links) {
    if (l.name.find(".net") == std::string::npos || l.name.find("->fabric") == std::string::npos) continue;
    ++nics;
    const double gbs = l.bytes / (two.sizes[0].time_us * 1e3);
    EXPECT_NEAR(gbs, 47, 4.7) << l.name;
  }
  EXPECT_EQ(nics, 16);  // 8 NICs x 2 machines, every one used
}

// The network transport's per-message cost (net_message) is paid by messages between machines only: a
// 2-machine ring all_reduce of 8 bytes, whose critical path crosses the network twice per loop of the
// ring, slows down by at least one message's cost; one machine is unchanged, to the bit.
TEST(Sim, NetMessageCostIsPaidBetweenMachinesOnly) {
  for (const char* topo : {"dgx-h100:2", "dgx-h100"}) {
    SimConfig cfg;
    cfg.topo = topo;
    cfg.algo = "ring";
    cfg.min_bytes = cfg.max_bytes = 8;
    const SimResult base = run_ok(cfg);
    cfg.calibration.net_message_us = 10;
    const SimResult slow = run_ok(cfg);
    const double dt = slow.sizes.at(0).time_us - base.sizes.at(0).time_us;
    if (std::string(topo) == "dgx-h100") {
      EXPECT_EQ(dt, 0.0);
    } else {
      EXPECT_GE(dt, 10.0) << "base " << base.sizes.at(0).time_us << " us";
      EXPECT_LE(dt, 10.0 * 2 * 16) << "base " << base.sizes.at(0).time_us << " us";  // 2 crossings x 2(n-1) steps
    }
  }
}

// NVLS's own costs (nvls.latency once per collective, nvls.step per head step) move NVLS and nothing else:
// an NVLS all_reduce gets at least the latency's difference slower, Ring not at all.
TEST(Sim, NvlsCostsArePaidByNvlsOnly) {
  for (const char* algo : {"nvls", "ring"}) {
    SimConfig cfg;
    cfg.topo = "dgx-h100";
    cfg.algo = algo;
    cfg.min_bytes = cfg.max_bytes = 8 << 20;
    cfg.calibration.nvls_latency_us = 0;
    cfg.calibration.nvls_step_us = 0;
    const SimResult base = run_ok(cfg);
    cfg.calibration.nvls_latency_us = 20;
    const SimResult lat = run_ok(cfg);
    cfg.calibration.nvls_step_us = 5;
    const SimResult step = run_ok(cfg);
    const double t0 = base.sizes.at(0).time_us, t1 = lat.sizes.at(0).time_us, t2 = step.sizes.at(0).time_us;
    if (std::string(algo) == "ring") {
      EXPECT_EQ(t1, t0);
      EXPECT_EQ(t2, t0);
    } else {
      EXPECT_NEAR(t1 - t0, 20.0, 1e-6) << "the latency is paid once, before every role starts";
      EXPECT_GE(t2 - t1, 5.0) << "at least one head step on the critical path";
    }
  }
}

// NVLS (kernels/nvls.h) in payload mode: every type and op the simulator's payload mode checks that NVLS
// supports (sum on half, bfloat16, float, int32, double; min and max on half, bfloat16, int32; AllGather
// also int8), odd counts (a last loop split unevenly over the heads) and sizes that wrap the FIFOs (a
// 4 KiB NCCL_NVLS_CHUNKSIZE), one and two channels, 8 and 5 ranks: byte-exact on every rank, and NVLS ran.
TEST(Sim, NvlsPayloadExact) {
  SmallNvlsChunk chunk;
  struct TypeOps {
    SimType type;
    std::vector<RedOpKind> ops;
  };
  const std::vector<TypeOps> reducing = {
      {SimType::kFloat16, {RedOpKind::kSum, RedOpKind::kMax, RedOpKind::kMin}},
      {SimType::kBfloat16, {RedOpKind::kSum, RedOpKind::kMax, RedOpKind::kMin}},
      {SimType::kFloat32, {RedOpKind::kSum}},
      {SimType::kInt32, {RedOpKind::kSum, RedOpKind::kMax, RedOpKind::kMin}},
      {SimType::kFloat64, {RedOpKind::kSum}}};
  int cases = 0;
  for (int nranks : {8, 5})
    for (int nch : {1, 2})
      for (CollKind coll : {CollKind::kAllReduce, CollKind::kReduceScatter, CollKind::kAllGather})
        for (const TypeOps& to : reducing)
          for (RedOpKind op : coll == CollKind::kAllGather ? std::vector<RedOpKind>{RedOpKind::kSum} : to.ops)
            for (size_t count : {size_t{7}, size_t{100003}}) {
              SimConfig cfg = payload_config("dgx-h100", coll, "nvls", "", 0);
              cfg.type = to.type;
              cfg.op = op;
              cfg.nranks = nranks;
              cfg.max_channels = nch;
              cfg.iters = 2;
              cfg.min_bytes = cfg.max_bytes = count * sim_type_size(to.type) * (coll == CollKind::kAllReduce ? 1 : nranks);
              SimResult r;
              std::string err;
              ASSERT_TRUE(simulate(cfg, &r, &err)) << err;
              ASSERT_EQ(r.sizes.size(), 1u);
              const std::string what = std::string(coll_label(coll)) + " " + sim_type_name(to.type) + " op " +
                                       std::to_string(static_cast<int>(op)) + " count " + std::to_string(count) +
                                       " ranks " + std::to_string(nranks) + " ch " + std::to_string(nch);
              EXPECT_EQ(r.sizes[0].wrong, 0) << what;
              EXPECT_EQ(r.sizes[0].algo, AlgoKind::kNvls) << what;
              ++cases;
            }
  // AllGather of int8 (no reduction: every type).
  SimConfig cfg = payload_config("dgx-h100", CollKind::kAllGather, "nvls", "", 8 * 4099);
  cfg.type = SimType::kInt8;
  SimResult r;
  std::string err;
  ASSERT_TRUE(simulate(cfg, &r, &err)) << err;
  EXPECT_EQ(r.sizes.at(0).wrong, 0);
  EXPECT_EQ(r.sizes.at(0).algo, AlgoKind::kNvls);
  EXPECT_GT(cases, 100);
}

// ../shared/reference/calibration.md: 8x H100/H200 NVLS all_reduce ~475-480 GB/s busbw at large sizes
// (where Ring gives ~370): the switch reduces at NCCL's NVLS rate (bwIntra x nvlsEfficiency per port,
// 34 GB/s on Hopper) while each GPU's NVLinks carry its share in and out once. Within 5%; and the default
// choice at 1 GiB on dgx-h100 is NVLS, as NCCL's, faster than Ring by the busbw ratio.
TEST(Sim, NvlsCalibrationPoint) {
  SimConfig cfg;
  cfg.topo = "dgx-h100";
  cfg.min_bytes = cfg.max_bytes = size_t{1} << 30;
  const SimResult nvls = run_ok(cfg);
  ASSERT_EQ(nvls.sizes.size(), 1u);
  EXPECT_EQ(nvls.sizes[0].algo, AlgoKind::kNvls);
  EXPECT_NEAR(nvls.sizes[0].busbw, 477.5, 477.5 * 0.05);
  cfg.algo = "ring";
  const SimResult ring = run_ok(cfg);
  EXPECT_GT(nvls.sizes[0].busbw, ring.sizes[0].busbw * 1.2);
  // Every GPU's NVLinks to the switch carried (n + 1) / n of the buffer each way (its copies read by every
  // head, the multicasts of every head; the head's own result and multicast once): 9/8 x 1 GiB per GPU
  // and direction, spread over its 18 NVLinks to the 4 NVSwitch chips.
  double up = 0;
  for (const SimLinkLoad& l : nvls.links)
    if (l.name.rfind("m0.gpu0->", 0) == 0 && l.name.find("nvs") != std::string::npos) up += l.bytes;
  EXPECT_NEAR(up, 9.0 / 8.0 * (size_t{1} << 30) * (cfg.warmup + cfg.iters), 1e-6 * up) << "bytes on gpu0's up links";
}

// NVLS-Tree in payload mode (kernels/nvls.h run_nvls_tree_channel on the simulator's actors: scatter,
// reduce, bcast and gather each an actor): byte-exact AllReduce on 2 and 3 DGX H100 (16 and 24 ranks),
// every payload type NVLS reduces with sum/max/min, 1 and 2 channels (the two trees), small NVLS slots.
TEST(Sim, NvlsTreePayloadExact) {
  SmallNvlsChunk chunk;
  int cases = 0;
  for (const char* topo : {"dgx-h100:2", "dgx-h100:3"})
    for (int nch : {1, 2})
      for (SimType type : {SimType::kBfloat16, SimType::kFloat32, SimType::kInt32, SimType::kFloat64})
        for (RedOpKind op : {RedOpKind::kSum, RedOpKind::kMax, RedOpKind::kMin}) {
          const bool minmax = type == SimType::kBfloat16 || type == SimType::kInt32;
          if (op != RedOpKind::kSum && !minmax) continue;
          for (size_t count : {size_t{7}, size_t{100003}}) {
            SimConfig cfg = payload_config(topo, CollKind::kAllReduce, "nvlstree", "", count * sim_type_size(type));
            cfg.type = type;
            cfg.op = op;
            cfg.max_channels = nch;
            cfg.iters = 1;
            SimResult r;
            std::string err;
            ASSERT_TRUE(simulate(cfg, &r, &err)) << err;
            ASSERT_EQ(r.sizes.size(), 1u);
            EXPECT_EQ(r.sizes[0].wrong, 0) << topo << " type " << sim_type_name(type) << " op " << static_cast<int>(op)
                                           << " count " << count << " ch " << nch;
            EXPECT_EQ(r.sizes[0].algo, AlgoKind::kNvlsTree);
            ++cases;
          }
        }
  EXPECT_GT(cases, 30);
}

// Fewer NVLS heads than GPUs, as NCCL runs them: 32 heads (NCCL_MAX_NVLS_ARITY) over gb200-nvl72's 72 GPUs,
// and NVLS-Tree with a head per NIC (4 or 2 NICs kept per DGX H100). Byte-exact in payload mode; every
// GPU's links to the switch carry the data once each way, a head's 1/heads more (its multicast up, its
// sum down), at both levels.
TEST(Sim, NvlsFewerHeadsThanGpus) {
  SmallNvlsChunk chunk;
  struct Case {
    const char* topo;
    const char* algo;
    int nics;
  };
  for (const Case& c : {Case{"gb200-nvl72", "nvls", 0}, Case{"dgx-h100:2", "nvlstree", 4}, Case{"dgx-h100:3", "nvlstree", 2}})
    for (SimType type : {SimType::kFloat32, SimType::kInt32})
      for (size_t count : {size_t{7}, size_t{100003}}) {
        SimConfig cfg = payload_config(c.topo, CollKind::kAllReduce, c.algo, "", count * sim_type_size(type));
        cfg.type = type;
        cfg.op = type == SimType::kInt32 ? RedOpKind::kMax : RedOpKind::kSum;
        cfg.what_if.nics_per_machine = c.nics;
        cfg.iters = 1;
        const SimResult r = run_ok(cfg);
        ASSERT_EQ(r.sizes.size(), 1u);
        EXPECT_EQ(r.sizes[0].wrong, 0) << c.topo << " " << sim_type_name(type) << " count " << count;
        EXPECT_EQ(r.sizes[0].algo, c.nics ? AlgoKind::kNvlsTree : AlgoKind::kNvls) << c.topo;
      }
  // The links of gb200-nvl72 at 16 MiB: a head (GPU 0..31) moves the data and its own parts (about 1/32)
  // up and down its links to the switch, any other GPU the data.
  SimConfig cfg;
  cfg.topo = "gb200-nvl72";
  cfg.algo = "nvls";
  const size_t bytes = size_t{16} << 20;
  cfg.min_bytes = cfg.max_bytes = bytes;
  for (SimLevel level : {SimLevel::kStep, SimLevel::kFlow}) {
    cfg.level = level;
    const SimResult r = run_ok(cfg);
    std::map<std::string, double> up, down;
    for (const SimLinkLoad& l : r.links) {
      const size_t arrow = l.name.find("->");
      const std::string from = l.name.substr(0, arrow), to = l.name.substr(arrow + 2);
      if (from.find(".gpu") != std::string::npos && to.find(".nvs") != std::string::npos) up[from] += l.bytes;
      if (from.find(".nvs") != std::string::npos && to.find(".gpu") != std::string::npos) down[to] += l.bytes;
    }
    ASSERT_EQ(up.size(), 72u);
    const double data = static_cast<double>(bytes);
    double extra_up = 0, extra_down = 0;
    for (int g = 0; g < 72; ++g) {
      const std::string name = "m0.gpu" + std::to_string(g) + (level == SimLevel::kStep ? " step" : " flow");
      const double u = up["m0.gpu" + std::to_string(g)], d = down["m0.gpu" + std::to_string(g)];
      if (g >= 32) {
        EXPECT_NEAR(u, data, 1e-6 * data) << name;
        EXPECT_NEAR(d, data, 1e-6 * data) << name;
        continue;
      }
      // A head's own parts: about 1/32 of the data (the last loop of a channel splits what is left
      // evenly, rounded to 512 bytes, so the last heads get a little less).
      EXPECT_GT(u, data * 1.01) << name;
      EXPECT_LT(u, data * 1.04) << name;
      EXPECT_NEAR(u, d, 1e-6 * data) << name;
      extra_up += u - data;
      extra_down += d - data;
    }
    EXPECT_NEAR(extra_up, data, 1e-6 * data);  // the parts of all heads are the data once
    EXPECT_NEAR(extra_down, data, 1e-6 * data);
  }
}

// The NVLS-Tree point on two DGX H100 at 256 MiB: the default choice is NVLSTree (NCCL's tuner), at step
// level, between bounds (docs/simulator.md, "NVLS-Tree": 1 GiB gives 494.7 GB/s, above Ring's 341.4 and
// NCCL's model's 461.6).
TEST(Sim, NvlsTreeTwoDgxH100) {
  SimConfig cfg;
  cfg.topo = "dgx-h100:2";
  cfg.min_bytes = cfg.max_bytes = size_t{1} << 28;
  const SimResult r = run_ok(cfg);
  ASSERT_EQ(r.sizes.size(), 1u);
  EXPECT_EQ(r.sizes[0].algo, AlgoKind::kNvlsTree);
  EXPECT_EQ(r.sizes[0].level, SimLevel::kStep);
  EXPECT_GT(r.sizes[0].busbw, 200.0);
  EXPECT_LT(r.sizes[0].busbw, 600.0);
}

// avg and mulsum (nccl-tests' -o avg / mulsum) are timed as NCCL runs them: the same data loops, but no
// NVLS (no multimem reduction scales) and no PAT ReduceScatter; payload mode refuses them with a reason.
TEST(Sim, ScalingOpsRunTimingOnly) {
  SimConfig cfg;
  cfg.topo = "dgx-h100";
  cfg.min_bytes = cfg.max_bytes = size_t{64} << 20;
  cfg.op = RedOpKind::kSum;
  EXPECT_EQ(run_ok(cfg).sizes.at(0).algo, AlgoKind::kNvls);
  cfg.op = RedOpKind::kSumPostDiv;
  const SimResult avg = run_ok(cfg);
  EXPECT_EQ(avg.sizes.at(0).algo, AlgoKind::kRing);
  cfg.algo = "ring";
  cfg.op = RedOpKind::kSum;
  EXPECT_NEAR(run_ok(cfg).sizes.at(0).time_us, avg.sizes.at(0).time_us, 1e-9 * avg.sizes.at(0).time_us);
  cfg.algo = "";
  cfg.topo = "pcie-1gpu:8";
  cfg.coll = CollKind::kReduceScatter;
  cfg.min_bytes = cfg.max_bytes = size_t{64} << 10;  // where NCCL's tuner picks PAT for a plain sum
  EXPECT_EQ(run_ok(cfg).sizes.at(0).algo, AlgoKind::kPat);
  cfg.op = RedOpKind::kPreMulSum;
  EXPECT_EQ(run_ok(cfg).sizes.at(0).algo, AlgoKind::kRing);
  cfg.payload = true;
  SimResult r;
  std::string err;
  EXPECT_FALSE(simulate(cfg, &r, &err));
  EXPECT_NE(err.find("payload mode checks sum, prod, max and min"), std::string::npos) << err;
}

// NVLS-Tree's switch work is in the event stream: each head step through the switch is also an event
// with the rank as its own peer, as NVLS's (the visualiser and trace::compute_link_load put those on the
// GPUs' switch links): a load-reduce (recvReduceCopy) on every head with a parent, a multicast (copySend)
// from its broadcast role, both at once (recvReduceCopySend) at the root. So on every rank and channel
// the loads and the multicasts are as many, and each part of the buffer is reduced once per machine.
TEST(Sim, NvlsTreeSwitchStepsAreEvents) {
  SimConfig cfg;
  cfg.topo = "dgx-h100:2";
  cfg.algo = "nvlstree";
  cfg.min_bytes = cfg.max_bytes = size_t{4} << 20;
  cfg.level = SimLevel::kStep;
  cfg.record_events = true;
  const SimResult r = run_ok(cfg);
  ASSERT_EQ(r.sizes.size(), 1u);
  ASSERT_EQ(r.sizes[0].algo, AlgoKind::kNvlsTree);
  std::map<std::pair<int, int>, std::pair<int, int>> per;  // (rank, channel) -> (loads, multicasts)
  uint64_t reduced = 0;
  for (const StepRecord& e : r.events) {
    if (e.send_peer != e.rank || e.recv_peer != e.rank) continue;
    const bool load = e.prim == PrimKind::kRecvReduceCopy || e.prim == PrimKind::kRecvReduceCopySend;
    const bool mc = e.prim == PrimKind::kCopySend || e.prim == PrimKind::kRecvReduceCopySend;
    auto& c = per[{e.rank, e.channel}];
    c.first += load;
    c.second += mc;
    if (load) reduced += e.bytes;
  }
  EXPECT_EQ(per.size(), static_cast<size_t>(r.nranks * r.sizes[0].nchannels));
  for (const auto& kv : per) {
    EXPECT_GT(kv.second.first, 0) << "rank " << kv.first.first << " channel " << kv.first.second;
    EXPECT_EQ(kv.second.first, kv.second.second) << "rank " << kv.first.first << " channel " << kv.first.second;
  }
  EXPECT_EQ(reduced, 2 * r.sizes[0].bytes);  // each machine's heads reduce the whole buffer once
}

// nccl-tests -g G: one thread issues every iteration on G GPUs, so an iteration lasts at least G x the host's
// issue cost (host_issue + host_issue.per_channel x channels); where the GPUs are slower the host is hidden.
TEST(Sim, HostIssueCostBoundsAnIterationPerGpuOfTheThread) {
  SimConfig cfg;
  cfg.topo = "dgx-a100";
  cfg.min_bytes = 32 << 10;
  cfg.max_bytes = size_t{256} << 20;
  cfg.factor = 8;
  cfg.calibration.host_issue_us = 0;
  cfg.calibration.host_issue_per_channel_us = 0;
  const SimResult gpu = run_ok(cfg);  // no host cost: the GPUs' time
  cfg.calibration.host_issue_us = 5;
  cfg.calibration.host_issue_per_channel_us = 0.25;
  cfg.gpus_per_thread = 8;
  const SimResult eight = run_ok(cfg);
  cfg.gpus_per_thread = 1;
  const SimResult one = run_ok(cfg);
  ASSERT_EQ(gpu.sizes.size(), eight.sizes.size());
  int host_bound = 0, gpu_bound = 0;
  for (size_t i = 0; i < gpu.sizes.size(); ++i) {
    const SimSizeResult& g = gpu.sizes[i];
    const double host8 = 8 * (5 + 0.25 * g.nchannels);
    EXPECT_DOUBLE_EQ(eight.sizes[i].host_us, host8) << g.bytes;
    EXPECT_DOUBLE_EQ(eight.sizes[i].time_us, std::max(g.time_us, host8)) << g.bytes;
    EXPECT_DOUBLE_EQ(eight.sizes[i].busbw * eight.sizes[i].time_us, g.busbw * g.time_us) << g.bytes;
    EXPECT_DOUBLE_EQ(one.sizes[i].time_us, std::max(g.time_us, host8 / 8)) << g.bytes;
    (host8 > g.time_us ? host_bound : gpu_bound)++;
  }
  EXPECT_GE(host_bound, 1);  // 32 KiB: 8 x 5.25 us > the ring's ~17 us
  EXPECT_GE(gpu_bound, 1);   // 256 MiB: milliseconds on the GPUs
}

// At scale the automatic level switches to flows; 32 machines x 8 GPUs stays fast and close to the
// cost model's prediction (bench/sim_scale.sh runs 1024 GPUs at 1 GiB).
TEST(Sim, ScaleUsesFlows) {
  SimConfig cfg;
  cfg.topo = "dgx-h100";
  cfg.machines = 32;
  cfg.min_bytes = cfg.max_bytes = size_t{1} << 30;  // replayed channel by channel at the static shares (0.7 s)
  cfg.proto = "simple";
  cfg.step_limit = 50000;  // (300,000 by default: the step level would run minutes of NVLS-Tree steps)
  const SimResult r = run_ok(cfg);
  ASSERT_EQ(r.sizes.size(), 1u);
  EXPECT_EQ(r.nranks, 256);
  EXPECT_EQ(r.sizes[0].algo, AlgoKind::kNvlsTree);  // NCCL's choice here
  EXPECT_EQ(r.sizes[0].level, SimLevel::kFlow);
  EXPECT_NEAR(r.sizes[0].time_us / r.sizes[0].predicted_us, 1.0, 0.3);
}

}  // namespace
}  // namespace sim
}  // namespace cclab
