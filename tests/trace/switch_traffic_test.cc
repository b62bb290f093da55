// tests/trace/switch_traffic_test.cc - NVLS switch steps in the link load (trace/switch_traffic.h): an
// AllReduce head step loads every GPU's link up and down by its slot and the head's twice, a
// ReduceScatter step every GPU's up link and the head's down link, an AllGather step the head's up link
// and every GPU's down link; a GPU on two switch chips splits its bytes evenly; a rank without a switch
// has no switch steps; ring steps on routes count as before, beside them. Byte totals are exact.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "kernels/work.h"
#include "trace/switch_traffic.h"
#include "trace/trace.h"

namespace cclab {
namespace trace {
namespace {

constexpr uint64_t kSlot = 65536;

// Machine 0: GPUs 0..ngpus-1 (ranks 0..) on `switches` NVSwitch nodes, each GPU linked to each switch
// both ways; machine 1: one GPU (the next rank) with no switch, joined to GPU 0 by a PCIe-like pair.
struct Machine {
  Trace t;
  std::map<std::pair<int, int>, int> link;  // (from node, to node) -> link
  int at(int from, int to) const { return link.at({from, to}); }
};

Machine machine(int ngpus, int switches) {
  Machine m;
  Trace& t = m.t;
  t.meta.nranks = ngpus + 1;
  for (int i = 0; i < ngpus; ++i) t.nodes.push_back(Node{"m0.gpu" + std::to_string(i), "gpu", 0, i, i});
  for (int k = 0; k < switches; ++k) t.nodes.push_back(Node{"m0.nvs" + std::to_string(k), "nvswitch", 0, k, -1});
  const int lone = static_cast<int>(t.nodes.size());
  t.nodes.push_back(Node{"m1.gpu0", "gpu", 1, 0, ngpus});
  auto add = [&](int a, int b, const char* kind) {
    Link up;
    up.from = a;
    up.to = b;
    up.kind = kind;
    up.gbs = 100;
    m.link[{a, b}] = static_cast<int>(t.links.size());
    t.links.push_back(up);
  };
  for (int i = 0; i < ngpus; ++i)
    for (int k = 0; k < switches; ++k) {
      add(i, ngpus + k, "nvlink");
      add(ngpus + k, i, "nvlink");
    }
  add(0, lone, "pci");
  add(lone, 0, "pci");
  t.routes.push_back({0, ngpus, {m.at(0, lone)}});
  return m;
}

Event step(int rank, int send_peer, int recv_peer, PrimKind prim, double data_us, double end_us) {
  Event e;
  e.rank = rank;
  e.send_peer = send_peer;
  e.recv_peer = recv_peer;
  e.prim = prim;
  e.bytes = kSlot;
  e.begin_us = data_us - 1;
  e.data_us = data_us;
  e.end_us = end_us;
  return e;
}

// Bytes each link carried, from the LOAD section (GB/s x bin width).
std::vector<double> moved(const Trace& t) {
  std::vector<double> out(t.links.size(), 0.0);
  for (const LinkLoad::Series& s : t.load.series)
    for (float g : s.gbs) out[s.link] += static_cast<double>(g) * t.load.bin_us * 1e3;
  return out;
}

TEST(SwitchTraffic, AllReduceHeadStepLoadsEveryLinkOnceAndTheHeadsTwice) {
  Machine m = machine(4, 1);
  m.t.events.push_back(step(1, 1, 1, PrimKind::kRecvReduceCopySend, 10, 20));
  compute_link_load(&m.t, 50);
  const std::vector<double> b = moved(m.t);
  for (int r = 0; r < 4; ++r) {
    const double want = r == 1 ? 2.0 * kSlot : 1.0 * kSlot;
    EXPECT_NEAR(b[m.at(r, 4)], want, want * 1e-5) << "gpu" << r << " -> switch";
    EXPECT_NEAR(b[m.at(4, r)], want, want * 1e-5) << "switch -> gpu" << r;
  }
  EXPECT_EQ(b[m.at(0, 5)], 0.0) << "the lone GPU's link carries nothing";
}

TEST(SwitchTraffic, ReduceScatterAndAllGatherSteps) {
  Machine m = machine(4, 1);
  m.t.events.push_back(step(2, -1, 2, PrimKind::kRecvReduceCopy, 10, 20));  // load-reduce only
  m.t.events.push_back(step(3, 3, -1, PrimKind::kCopySend, 30, 40));        // multicast only
  compute_link_load(&m.t, 50);
  const std::vector<double> b = moved(m.t);
  for (int r = 0; r < 4; ++r) {
    const double up = kSlot + (r == 3 ? kSlot : 0), down = kSlot + (r == 2 ? kSlot : 0);
    EXPECT_NEAR(b[m.at(r, 4)], up, 1) << "gpu" << r << " -> switch";
    EXPECT_NEAR(b[m.at(4, r)], down, 1) << "switch -> gpu" << r;
  }
  // In time: the reduce-scatter step's bytes lie in [10, 20), the all-gather's in [30, 40).
  SwitchIndex idx(m.t);
  std::vector<SwitchIndex::Hop> hops;
  idx.hops(m.t.events[0], &hops);
  ASSERT_EQ(hops.size(), 5u);  // 4 up (phase 0), the head's down (phase 1)
  EXPECT_EQ(hops[4].link, m.at(4, 2));
  EXPECT_EQ(hops[4].phase, 1);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(hops[i].phase, 0);
}

TEST(SwitchTraffic, TwoSwitchChipsSplitTheBytes) {
  Machine m = machine(2, 2);
  m.t.events.push_back(step(0, 0, 0, PrimKind::kRecvReduceCopySend, 5, 9));
  compute_link_load(&m.t, 20);
  const std::vector<double> b = moved(m.t);
  for (int k = 0; k < 2; ++k) {
    EXPECT_NEAR(b[m.at(0, 2 + k)], kSlot, 1);        // head: 2 x slot over 2 chips
    EXPECT_NEAR(b[m.at(1, 2 + k)], kSlot / 2.0, 1);  // the other GPU: 1 x slot over 2 chips
    EXPECT_NEAR(b[m.at(2 + k, 1)], kSlot / 2.0, 1);
  }
  SwitchIndex idx(m.t);
  EXPECT_EQ(idx.switch_node(0), 2);
  EXPECT_EQ(idx.switch_node(2), -1) << "the lone GPU reaches no switch";
}

TEST(SwitchTraffic, OnlySelfPeersOnSwitchedGpusAreSwitchSteps) {
  Machine m = machine(4, 1);
  SwitchIndex idx(m.t);
  EXPECT_TRUE(idx.is_switch_step(step(0, 0, 0, PrimKind::kRecvReduceCopySend, 1, 2)));
  EXPECT_FALSE(idx.is_switch_step(step(0, 1, -1, PrimKind::kSend, 1, 2))) << "a send to another rank";
  EXPECT_FALSE(idx.is_switch_step(step(0, -1, -1, PrimKind::kLocalCopy, 1, 2))) << "a local copy";
  EXPECT_FALSE(idx.is_switch_step(step(4, 4, 4, PrimKind::kRecvReduceCopySend, 1, 2))) << "no switch";
  EXPECT_FALSE(idx.is_switch_step(step(9, 9, 9, PrimKind::kRecvReduceCopySend, 1, 2))) << "no such rank";
  std::vector<SwitchIndex::Hop> hops;
  idx.hops(step(4, 4, 4, PrimKind::kRecvReduceCopySend, 1, 2), &hops);
  EXPECT_TRUE(hops.empty());
}

TEST(SwitchTraffic, RouteStepsBesideSwitchSteps) {
  Machine m = machine(4, 1);
  Event ring = step(0, 4, -1, PrimKind::kSend, 10, 20);
  ring.route = 0;
  ring.proto = kProtoLL;
  m.t.events.push_back(ring);
  m.t.events.push_back(step(0, 0, 0, PrimKind::kRecvReduceCopySend, 10, 20));
  compute_link_load(&m.t, 50);
  const std::vector<double> b = moved(m.t);
  EXPECT_NEAR(b[m.at(0, 5)], wire_bytes(kProtoLL, kSlot), 1) << "LL doubles the wire bytes";
  EXPECT_NEAR(b[m.at(0, 4)], 2.0 * kSlot, 1);
}

}  // namespace
}  // namespace trace
}  // namespace cclab
