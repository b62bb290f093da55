// Degraded fabrics (sim/degrade.h): the flags' values and link names, and what a degradation does to a
// run: a degraded link on a ring's path slows it by the expected bound, one that no route takes changes
// nothing, a straggler slows every rank, jitter is deterministic per seed, a failed link gives the error
// with the stuck waits named within a bounded wall time, and the same flags give identical results.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <set>
#include <string>

#include "sim/degrade.h"
#include "sim/sim.h"
#include "trace/trace.h"

namespace cclab {
namespace sim {
namespace {

// ---- values and names ----------------------------------------------------------------------------

TEST(DegradeFlags, Values) {
  Degradation d;
  std::string err;
  ASSERT_TRUE(parse_degrade("m0.nic3=0.5@100us", &d, &err)) << err;
  ASSERT_TRUE(parse_degrade("m0.gpu3-m0.nvs0=0.25@2ms", &d, &err)) << err;
  ASSERT_TRUE(parse_degrade("m0.gpu0->m0.nvs0=2", &d, &err)) << err;
  ASSERT_TRUE(parse_fail("m0.nic1@0.5s", &d, &err)) << err;
  ASSERT_EQ(d.links.size(), 4u);
  EXPECT_EQ(d.links[0].target, "m0.nic3");
  EXPECT_DOUBLE_EQ(d.links[0].factor, 0.5);
  EXPECT_DOUBLE_EQ(d.links[0].at_us, 100);
  EXPECT_EQ(d.links[1].target, "m0.gpu3-m0.nvs0");
  EXPECT_DOUBLE_EQ(d.links[1].at_us, 2000);
  EXPECT_EQ(d.links[2].target, "m0.gpu0->m0.nvs0");
  EXPECT_DOUBLE_EQ(d.links[2].at_us, 0);
  EXPECT_TRUE(d.links[3].fail);
  EXPECT_DOUBLE_EQ(d.links[3].at_us, 5e5);
  EXPECT_TRUE(d.needs_step());
  ASSERT_TRUE(parse_straggler("3=2,5=1.5", &d, &err)) << err;
  EXPECT_EQ(d.stragglers.size(), 2u);
  EXPECT_DOUBLE_EQ(d.stragglers[5], 1.5);
  ASSERT_TRUE(parse_jitter("20,seed=7", &d, &err)) << err;
  EXPECT_DOUBLE_EQ(d.jitter_pct, 20);
  EXPECT_EQ(d.jitter_seed, 7u);
  EXPECT_DOUBLE_EQ(d.jitter_from_us, 0);
  ASSERT_TRUE(parse_jitter("5,from=2ms,seed=3", &d, &err)) << err;
  EXPECT_DOUBLE_EQ(d.jitter_from_us, 2000);
  EXPECT_EQ(d.jitter_seed, 3u);
  ASSERT_TRUE(parse_straggler("6=4@50us", &d, &err)) << err;
  EXPECT_DOUBLE_EQ(d.stragglers[6], 4);
  EXPECT_DOUBLE_EQ(d.straggle_at(6, 49), 1);
  EXPECT_DOUBLE_EQ(d.straggle_at(6, 50), 4);
  EXPECT_DOUBLE_EQ(d.straggle_at(3, 0), 2);
  EXPECT_DOUBLE_EQ(d.straggle_at(0, 100), 1);

  Degradation only_static;
  ASSERT_TRUE(parse_degrade("m0.nic3=0.5", &only_static, &err));
  ASSERT_TRUE(parse_straggler("1=3", &only_static, &err));
  EXPECT_FALSE(only_static.needs_step());  // the flow level models these

  struct Bad {
    bool (*parse)(const std::string&, Degradation*, std::string*);
    const char* value;
    const char* says;
  };
  const Bad bad[] = {
      {parse_degrade, "m0.nic3", "LINK=FACTOR"},          {parse_degrade, "m0.nic3=0", "bad factor '0'"},
      {parse_degrade, "m0.nic3=-1", "bad factor"},        {parse_degrade, "m0.nic3=x", "bad factor 'x'"},
      {parse_degrade, "m0.nic3=0.5@-3us", "bad time"},    {parse_degrade, "m0.nic3=0.5@3xs", "bad time '3xs'"},
      {parse_degrade, "=0.5", "no link or node"},         {parse_fail, "@10us", "no link or node"},
      {parse_fail, "m0.nic1@soon", "bad time 'soon'"},    {parse_straggler, "3", "RANK=FACTOR"},
      {parse_straggler, "x=2", "RANK=FACTOR"},            {parse_straggler, "3=0", "bad factor '0'"},
      {parse_straggler, "1.5=2", "RANK=FACTOR"},          {parse_jitter, "0", "bad percentage"},
      {parse_jitter, "2000", "bad percentage"},           {parse_jitter, "10,seed=x", "seed=N"},
      {parse_jitter, "10,sed=3", "seed=N"},
      {parse_jitter, "10,from=soon", "from=TIME"},    {parse_straggler, "3=2@x", "bad time 'x'"},
  };
  for (const Bad& b : bad) {
    Degradation x;
    std::string why;
    EXPECT_FALSE(b.parse(b.value, &x, &why)) << b.value;
    EXPECT_NE(why.find(b.says), std::string::npos) << b.value << ": " << why;
    EXPECT_NE(why.find(b.value), std::string::npos) << "the message quotes the value: " << why;
  }
}

TEST(DegradeFlags, LinkNames) {
  SimConfig cfg;
  cfg.topo = "dgx-h100:2";
  Topology topo;
  std::string err;
  ASSERT_TRUE(build_model(cfg, &topo, &err)) << err;
  std::vector<int> links;
  auto name = [&](int l) { return topo.nodes[topo.links[l].from].name + "->" + topo.nodes[topo.links[l].to].name; };
  ASSERT_TRUE(resolve_link_target(topo, "m0.gpu3->m0.nvs0", &links, &err)) << err;
  ASSERT_EQ(links.size(), 1u);
  EXPECT_EQ(name(links[0]), "m0.gpu3->m0.nvs0");
  ASSERT_TRUE(resolve_link_target(topo, "m0.gpu3-m0.nvs0", &links, &err)) << err;
  ASSERT_EQ(links.size(), 2u);  // both directions
  std::set<std::string> both{name(links[0]), name(links[1])};
  EXPECT_EQ(both, (std::set<std::string>{"m0.gpu3->m0.nvs0", "m0.nvs0->m0.gpu3"}));
  ASSERT_TRUE(resolve_link_target(topo, "m1.nic3", &links, &err)) << err;
  EXPECT_GE(links.size(), 4u);  // to and from its PCIe switch and its port
  for (int l : links) EXPECT_NE(name(l).find("m1.nic3"), std::string::npos) << name(l);

  EXPECT_FALSE(resolve_link_target(topo, "m0.nic9", &links, &err));
  EXPECT_NE(err.find("no link or node named 'm0.nic9'"), std::string::npos) << err;
  EXPECT_NE(err.find("m0.nic0"), std::string::npos) << "the closest names are listed: " << err;
  EXPECT_FALSE(resolve_link_target(topo, "m0.gpu0-m0.gpu1", &links, &err));
  EXPECT_NE(err.find("not joined by a link"), std::string::npos) << err;

  Degradation d;
  ASSERT_TRUE(parse_straggler("16=2", &d, &err));
  EXPECT_FALSE(check_degradation(d, topo, 16, &err));
  EXPECT_NE(err.find("rank 16 is not a rank"), std::string::npos) << err;
}

// ---- runs ----------------------------------------------------------------------------------------

SimConfig ring(const std::string& topo, size_t bytes) {
  SimConfig c;
  c.topo = topo;
  c.algo = "ring";
  c.proto = "simple";
  c.min_bytes = c.max_bytes = bytes;
  return c;
}

SimResult run(const SimConfig& cfg) {
  SimResult r;
  std::string err;
  EXPECT_TRUE(simulate(cfg, &r, &err)) << err;
  return r;
}

double time_of(const SimResult& r) { return r.sizes.empty() ? 0 : r.sizes[0].time_us; }

// Two machines with one NIC each: every ring crosses that NIC, so halving it halves the ring's bandwidth
// at a size where the network is the bottleneck, at both levels.
TEST(DegradeRun, HalvingTheOnlyNicHalvesTheRing) {
  for (SimLevel level : {SimLevel::kStep, SimLevel::kFlow}) {
    SimConfig cfg = ring("dgx-h100:2", size_t{256} << 20);
    cfg.what_if.nics_per_machine = 1;
    cfg.level = level;
    const SimResult healthy = run(cfg);
    std::string err;
    ASSERT_TRUE(parse_degrade("m0.nic0=0.5", &cfg.degrade, &err)) << err;
    const SimResult slow = run(cfg);
    ASSERT_EQ(slow.sizes.size(), 1u);
    EXPECT_EQ(slow.sizes[0].level, level);
    const double ratio = slow.sizes[0].busbw / healthy.sizes[0].busbw;
    EXPECT_GT(ratio, 0.45) << sim_level_name(level);
    EXPECT_LT(ratio, 0.6) << sim_level_name(level);
    // Every ring channel crosses it, both ways (m1 -> m0 enters through it, m0 -> m1 leaves).
    ASSERT_EQ(slow.degraded.size(), 1u);
    std::set<std::pair<int, int>> ring_edges;
    for (const auto& c : slow.degraded[0].carriers)
      if (c.kind == "ring") ring_edges.insert({c.from / 8, c.to / 8});
    EXPECT_EQ(ring_edges, (std::set<std::pair<int, int>>{{0, 1}, {1, 0}}));
  }
}

// A NIC of a single NVSwitch machine carries none of its rings: degrading or failing it changes nothing.
TEST(DegradeRun, ALinkNoRouteTakesChangesNothing) {
  SimConfig cfg = ring("dgx-h100", size_t{16} << 20);
  cfg.record_events = true;
  const SimResult healthy = run(cfg);
  std::string err;
  ASSERT_TRUE(parse_degrade("m0.nic3=0.1", &cfg.degrade, &err));
  ASSERT_TRUE(parse_fail("m0.nic5@5us", &cfg.degrade, &err));
  const SimResult same = run(cfg);
  EXPECT_EQ(time_of(same), time_of(healthy));
  EXPECT_EQ(format_events(same.events), format_events(healthy.events));
  ASSERT_EQ(same.degraded.size(), 2u);
  EXPECT_TRUE(same.degraded[0].carriers.empty());
  EXPECT_TRUE(same.degraded[1].carriers.empty());
}

// Half of a GPU's NVLink port from a time in the middle of the collective: slower than healthy, faster
// than degraded from the start; the channels crossing it are every ring's (each ring visits every GPU).
TEST(DegradeRun, FromATimeAndDeterministic) {
  SimConfig cfg = ring("dgx-h100", size_t{64} << 20);
  const double healthy = time_of(run(cfg));
  SimConfig from0 = cfg, later = cfg;
  std::string err;
  ASSERT_TRUE(parse_degrade("m0.gpu3=0.5", &from0.degrade, &err)) << err;
  ASSERT_TRUE(parse_degrade("m0.gpu3=0.5@" + std::to_string(healthy / 2) + "us", &later.degrade, &err)) << err;
  const SimResult a = run(from0), b = run(later);
  EXPECT_GT(time_of(a), healthy * 1.5);  // the GPU's port is every ring's bottleneck
  EXPECT_GT(time_of(b), healthy * 1.1);
  EXPECT_LT(time_of(b), time_of(a) * 0.95);
  EXPECT_EQ(b.sizes[0].level, SimLevel::kStep);  // a change after 0 needs the step level
  ASSERT_EQ(a.degraded.size(), 1u);
  std::set<int> channels;
  for (const auto& c : a.degraded[0].carriers)
    for (int ch : c.channels) channels.insert(ch);
  EXPECT_GE(channels.size(), static_cast<size_t>(a.sizes[0].nchannels));
  // The same flags, the same bits.
  later.record_events = true;
  const SimResult b1 = run(later), b2 = run(later);
  EXPECT_EQ(time_of(b1), time_of(b2));
  EXPECT_EQ(format_events(b1.events), format_events(b2.events));
  EXPECT_FALSE(b1.events.empty());
}

// Rank 3's data loops 8x slower: every rank finishes the collective later than on the healthy run.
TEST(DegradeRun, AStragglerSlowsEveryRank) {
  SimConfig cfg = ring("dgx-h100", size_t{16} << 20);
  cfg.level = SimLevel::kStep;
  cfg.record_events = true;
  const SimResult healthy = run(cfg);
  std::string err;
  ASSERT_TRUE(parse_straggler("3=8", &cfg.degrade, &err));
  const SimResult slow = run(cfg);
  EXPECT_GT(time_of(slow), time_of(healthy) * 1.5);
  auto last_end = [](const SimResult& r, int rank) {
    double t = 0;
    for (const StepRecord& e : r.events)
      if (e.rank == rank) t = std::max(t, e.end_us);
    return t;
  };
  for (int rank = 0; rank < 8; ++rank) EXPECT_GT(last_end(slow, rank), last_end(healthy, rank) * 1.3) << rank;
  ASSERT_EQ(slow.degraded.size(), 1u);
  EXPECT_NE(slow.degraded[0].label.find("rank 3 (m0.gpu3)"), std::string::npos) << slow.degraded[0].label;
  // From half-way: between the two, and at step level.
  SimConfig later = cfg;
  later.degrade = Degradation{};
  ASSERT_TRUE(parse_straggler("3=8@" + std::to_string(time_of(healthy) / 2) + "us", &later.degrade, &err));
  const SimResult half = run(later);
  EXPECT_GT(time_of(half), time_of(healthy) * 1.1);
  EXPECT_LT(time_of(half), time_of(slow) * 0.95);
  EXPECT_NE(half.degraded[0].label.find("8x slower from "), std::string::npos) << half.degraded[0].label;
}

// Jitter: later than healthy, by at most PCT of the route latency per step; one seed, one result.
TEST(DegradeRun, JitterIsDeterministicPerSeed) {
  SimConfig cfg = ring("dgx-h100:2", size_t{4} << 20);
  cfg.level = SimLevel::kStep;
  const double healthy = time_of(run(cfg));
  std::string err;
  SimConfig j7 = cfg, j8 = cfg;
  ASSERT_TRUE(parse_jitter("100,seed=7", &j7.degrade, &err));
  ASSERT_TRUE(parse_jitter("100,seed=8", &j8.degrade, &err));
  const double a1 = time_of(run(j7)), a2 = time_of(run(j7)), b = time_of(run(j8));
  EXPECT_EQ(a1, a2);
  EXPECT_NE(a1, b);
  EXPECT_GT(a1, healthy);
  EXPECT_GT(b, healthy);
  EXPECT_LT(a1, healthy * 2);
  // From a time after the run: no effect.
  SimConfig late = cfg;
  ASSERT_TRUE(parse_jitter("100,seed=7,from=1s", &late.degrade, &err));
  EXPECT_EQ(time_of(run(late)), healthy);
}

// A failed link mid-collective: the runtime's error, naming the transfer and the stuck waits, quickly.
TEST(DegradeRun, AFailedLinkGivesTheErrorNotAHang) {
  for (const char* when : {"20us", "0"}) {
    SimConfig cfg = ring("dgx-h100:2", size_t{64} << 20);
    std::string err;
    ASSERT_TRUE(parse_fail(std::string("m0.nic3@") + when, &cfg.degrade, &err));
    SimResult r;
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_FALSE(simulate(cfg, &r, &err));
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 30.0);
    EXPECT_NE(err.find("its transfer to rank"), std::string::npos) << err;
    EXPECT_NE(err.find("m0.nic3"), std::string::npos) << err;
    EXPECT_NE(err.find("down (--fail at "), std::string::npos) << err;
    EXPECT_NE(err.find("aborted (no hang)"), std::string::npos) << err;
    EXPECT_NE(err.find("on a connection through the failed link:\n  rank "), std::string::npos) << err;
    EXPECT_NE(err.find("waiting for data from rank"), std::string::npos) << err;
    // The same failure, the same message.
    SimResult r2;
    std::string err2;
    EXPECT_FALSE(simulate(cfg, &r2, &err2));
    EXPECT_EQ(err, err2);
  }
  // A failure after the run ends changes nothing.
  SimConfig cfg = ring("dgx-h100:2", size_t{1} << 20);
  const double healthy = time_of(run(cfg));
  std::string err;
  ASSERT_TRUE(parse_fail("m0.nic3@1s", &cfg.degrade, &err));
  EXPECT_EQ(time_of(run(cfg)), healthy);
}

// NVLS moves data between each GPU and its NVSwitch as well as on connections: a link that fails under it
// gives the same error (these runs crashed the simulation process, an NVLS transfer's failure read as
// another transfer's). One machine (NVLS): the GPU's link to the switch; two (NVLS-Tree): a NIC.
TEST(DegradeRun, AFailedLinkUnderNvlsGivesTheError) {
  struct Case {
    const char* topo;
    const char* algo;
    const char* fail;
    const char* names;    // in the error: what failed
    const char* through;  // in the error: the waits counted on connections through the failed link
  };
  // NVLS-Tree on 16 channels: one wait each way on the tree edge between rail 3's heads (ranks 3 and 11)
  // per channel, 32; a wait on a head's NVLS FIFO named by the head's group index (not its rank) was
  // counted too (40).
  for (const Case& c : {Case{"dgx-h100", "nvls", "m0.gpu3@50us", "its NVLS transfer to the NVSwitch failed", ""},
                        Case{"dgx-h100:2", "nvlstree", "m0.nic3@50us", "m0.nic3", "; 32 on a connection through"}}) {
    SimConfig cfg;
    cfg.topo = c.topo;
    cfg.algo = c.algo;
    cfg.min_bytes = cfg.max_bytes = size_t{256} << 20;
    std::string err;
    ASSERT_TRUE(parse_fail(c.fail, &cfg.degrade, &err));
    SimResult r;
    EXPECT_FALSE(simulate(cfg, &r, &err)) << c.topo;
    EXPECT_EQ(err.find("died of signal"), std::string::npos) << err;
    EXPECT_NE(err.find(c.names), std::string::npos) << err;
    EXPECT_NE(err.find("down (--fail at 50 us)"), std::string::npos) << err;
    EXPECT_NE(err.find("aborted (no hang)"), std::string::npos) << err;
    EXPECT_NE(err.find(c.through), std::string::npos) << err;
    // A wait on the switch names the switch, not the rank itself as its peer.
    EXPECT_NE(err.find(" the NVSwitch for step "), std::string::npos) << err;
    for (int r = 0; r < 16; ++r)
      EXPECT_EQ(err.find("rank " + std::to_string(r) + " channel 0 waiting for data from rank " + std::to_string(r) + " "),
                std::string::npos) << err;
  }
}

// Under NVLS-Tree (the tuner's choice on two DGX H100s) a degraded NIC names the NVLS-Tree edges between the
// machines' heads that cross it: rail 3's head GPUs, ranks 3 and 11, on every channel whose head they are.
TEST(DegradeRun, NvlsTreeNamesItsEdges) {
  SimConfig cfg;
  cfg.topo = "dgx-h100:2";
  cfg.algo = "nvlstree";
  cfg.min_bytes = cfg.max_bytes = size_t{64} << 20;
  std::string err;
  ASSERT_TRUE(parse_degrade("m0.nic3=0.5", &cfg.degrade, &err));
  const SimResult r = run(cfg);
  ASSERT_EQ(r.degraded.size(), 1u);
  std::set<std::pair<int, int>> edges;
  for (const auto& c : r.degraded[0].carriers)
    if (c.kind == "nvlstree") {
      EXPECT_FALSE(c.channels.empty());
      edges.insert({c.from, c.to});
    }
  EXPECT_EQ(edges, (std::set<std::pair<int, int>>{{3, 11}, {11, 3}}));
}

// A point-to-point collective: the sends whose path crosses the NIC are named - rail 3's NIC of machine 0
// carries, through NCCL's PXN, every send from machine 0 to GPU 3 of machine 1 and every send from
// machine 1 to GPU 3 of machine 0 - and the all-to-all slows down.
TEST(DegradeRun, AllToAllNamesTheSendsThatCrossIt) {
  SimConfig cfg;
  cfg.topo = "dgx-h100:2";
  cfg.coll = CollKind::kSendRecv;
  cfg.p2p = P2pPattern::kAllToAll;
  cfg.min_bytes = cfg.max_bytes = size_t{16} << 20;
  const double healthy = time_of(run(cfg));
  std::string err;
  ASSERT_TRUE(parse_degrade("m0.nic3=0.5", &cfg.degrade, &err));
  const SimResult slow = run(cfg);
  EXPECT_GT(time_of(slow), healthy * 1.5);
  ASSERT_EQ(slow.degraded.size(), 1u);
  std::set<std::pair<int, int>> sends;
  for (const auto& c : slow.degraded[0].carriers) {
    EXPECT_EQ(c.kind, "p2p");
    sends.insert({c.from, c.to});
  }
  std::set<std::pair<int, int>> want;
  for (int r = 0; r < 8; ++r) want.insert({r, 11}), want.insert({r + 8, 3});
  EXPECT_EQ(sends, want);
  // Failed mid-way: the error, and the waits on those sends first.
  SimConfig bad = cfg;
  bad.degrade = Degradation{};
  ASSERT_TRUE(parse_fail("m0.nic3@30us", &bad.degrade, &err));
  SimResult r;
  EXPECT_FALSE(simulate(bad, &r, &err));
  EXPECT_NE(err.find("on a connection through the failed link:\n  rank "), std::string::npos) << err;
  const size_t first = err.find("failed link:\n  ") + 15;  // the first listed wait
  const std::string line = err.substr(first, err.find('\n', first) - first);
  EXPECT_TRUE(line.find("rank 3 ") == 0 || line.find("from rank 3 ") != std::string::npos) << line;
}

// The trace of a degraded run carries its links' factors; a failed run's trace holds the run up to the
// failure, the failed link and the stuck waits as a certain report (what cclab viz draws).
TEST(DegradeRun, TraceCarriesTheDegradation) {
  const std::string path = ::testing::TempDir() + "degrade_test.cctrace";
  SimConfig cfg = ring("dgx-h100:2", size_t{4} << 20);
  cfg.trace_path = path;
  std::string err;
  ASSERT_TRUE(parse_degrade("m0.nic3=0.5", &cfg.degrade, &err));
  ASSERT_TRUE(parse_degrade("m1.nic2-m1.net2=0.25@10us", &cfg.degrade, &err));
  run(cfg);
  trace::Trace t;
  ASSERT_TRUE(trace::read_trace(path, &t, &err)) << err;
  int half = 0, quarter = 0, other = 0;
  for (const trace::Link& l : t.links) {
    if (l.degraded_at_us < 0) continue;
    const std::string a = t.nodes[l.from].name, b = t.nodes[l.to].name;
    if ((a == "m0.nic3" || b == "m0.nic3") && l.degraded == 0.5 && l.degraded_at_us == 0) ++half;
    else if ((a == "m1.nic2" || b == "m1.nic2") && l.degraded == 0.25 && l.degraded_at_us == 10) ++quarter;
    else ++other;
  }
  EXPECT_GE(half, 4);
  EXPECT_EQ(quarter, 2);
  EXPECT_EQ(other, 0);
  EXPECT_TRUE(t.stuck.empty());

  SimConfig bad = ring("dgx-h100:2", size_t{64} << 20);
  bad.trace_path = path;
  ASSERT_TRUE(parse_fail("m0.nic3@20us", &bad.degrade, &err));
  SimResult r;
  EXPECT_FALSE(simulate(bad, &r, &err));
  EXPECT_NE(err.find("holds the run up to the failure"), std::string::npos) << err;
  ASSERT_TRUE(trace::read_trace(path, &t, &err)) << err;
  ASSERT_EQ(t.stuck.size(), 1u);
  EXPECT_TRUE(t.stuck[0].certain);
  EXPECT_GE(t.stuck[0].time_us, 20);
  EXPECT_FALSE(t.stuck[0].waits.empty());
  EXPECT_NE(t.stuck[0].summary.find("m0.nic3"), std::string::npos) << t.stuck[0].summary;
  EXPECT_FALSE(t.events.empty());
  bool failed = false;
  for (const trace::Link& l : t.links) failed |= l.degraded_at_us == 20 && l.degraded == 0;
  EXPECT_TRUE(failed);
  std::remove(path.c_str());
}

TEST(DegradeRun, FlowLevelRefusesWhatItCannotModel) {
  SimConfig cfg = ring("dgx-h100", size_t{1} << 20);
  cfg.level = SimLevel::kFlow;
  std::string err;
  ASSERT_TRUE(parse_fail("m0.nic3@5us", &cfg.degrade, &err));
  SimResult r;
  EXPECT_FALSE(simulate(cfg, &r, &err));
  EXPECT_NE(err.find("needs the step level"), std::string::npos) << err;
  // auto: a size the flow level would take runs at step level when a change needs it.
  SimConfig big = ring("dgx-h100", size_t{8} << 20);
  big.step_limit = 10;  // auto would pick flow
  ASSERT_TRUE(parse_degrade("m0.nic3=0.5@5us", &big.degrade, &err));
  const SimResult s = run(big);
  ASSERT_EQ(s.sizes.size(), 1u);
  EXPECT_EQ(s.sizes[0].level, SimLevel::kStep);
}

}  // namespace
}  // namespace sim
}  // namespace cclab
