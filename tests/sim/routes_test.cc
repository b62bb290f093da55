// The routes the simulator's connections take between machines (docs/simulator.md, "Routes"): each
// takes the NICs its channel's graph chose (graph/channels.h, ChannelPlan::net), as NCCL opens it on
// them, so on a 1:1 rail-optimised fat tree a ring whose channels enter and leave every machine by the
// same rail (crossNic 0) never reaches the spine, and oversubscribing the spine does not slow it.
// Checked on what the simulator reports it moved (SimResult::links), over every multi-machine preset on
// several machine counts and both algorithms.
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>
#include <utility>

#include "graph/channels.h"
#include "graph/search.h"
#include "graph/topo.h"
#include "sim/sim.h"

namespace cclab {
namespace sim {
namespace {

struct Model {
  Topology topo;
  TopoGraph ring, tree;
  RankPlacement place;
};

Model model(const std::string& preset, int machines) {
  Model m;
  std::string err;
  EXPECT_TRUE(make_preset_topology(preset, machines, FabricSpec{}, &m.topo, &err)) << err;
  EXPECT_TRUE(search_ring_and_tree(m.topo, &m.ring, &m.tree, &err)) << err;
  m.place = place_ranks(m.topo, static_cast<int>(m.topo.gpus().size()));
  return m;
}

SimResult run(const std::string& preset, int machines, const char* algo, size_t bytes, double oversubscription = 1) {
  SimConfig cfg;
  cfg.topo = preset;
  cfg.machines = machines;
  cfg.fabric.oversubscription = oversubscription;
  cfg.algo = algo;
  cfg.min_bytes = cfg.max_bytes = bytes;
  SimResult r;
  std::string err;
  EXPECT_TRUE(simulate(cfg, &r, &err)) << err;
  return r;
}

// (machine, NET dev) of the NET ports a run sent into the fabric from (`out`) or received from it at.
std::set<std::pair<int, int>> ports(const Topology& t, const SimResult& r, bool out) {
  std::set<std::pair<int, int>> s;
  for (const SimLinkLoad& l : r.links) {
    if (!(l.bytes > 0)) continue;
    const TopoLink& k = t.links.at(l.link);
    const TopoNode& net = t.nodes[out ? k.from : k.to];
    const TopoNode& sw = t.nodes[out ? k.to : k.from];
    if (net.type == TopoNodeType::kNet && sw.type == TopoNodeType::kNetSwitch) s.insert({net.machine, net.dev});
  }
  return s;
}

// Every multi-machine preset on 2, 3 and 4 machines, ring and tree all_reduce: the NET ports that carry
// traffic out of (into) each machine are exactly those the channels' connections leave (enter) by, and
// where every connection stays on one rail no byte crosses a spine link. Before the connections took
// their channel's NICs, dgx-h100:4's ring moved 1.04 GB over every leaf-spine link of a 1 GiB
// all_reduce (m0.gpu1 left by its own NIC, m0.net1, for m1.gpu0 behind m1.net0).
TEST(SimRoutes, ConnectionsTakeTheirChannelsNics) {
  for (const std::string& preset : preset_names()) {
    for (int machines : {2, 3, 4}) {
      const Model m = model(preset, machines);
      for (const char* algo : {"ring", "tree"}) {
        SCOPED_TRACE(preset + ":" + std::to_string(machines) + " " + algo);
        const SimResult r = run(preset, machines, algo, 4 << 20);
        ASSERT_EQ(r.sizes.size(), 1u);
        const int nch = r.sizes[0].nchannels;
        const std::vector<ChannelPlan> plan =
            plan_channels(m.topo, m.ring, m.tree, m.place, std::max(nch, 1));
        std::set<std::pair<int, int>> want_out, want_in;
        bool one_rail = true;
        auto expect = [&](const ChannelPlan& ch, int a, int b) {
          const NetConn* k = ch.net_of(a, b);
          if (k == nullptr) return;  // on one machine
          want_out.insert({m.place.rank_machine[a], k->send_net});
          want_in.insert({m.place.rank_machine[b], k->recv_net});
          one_rail = one_rail && k->send_net == k->recv_net;
        };
        const int n = m.place.nranks();
        for (int c = 0; c < nch; ++c) {
          const ChannelPlan& ch = plan[c];
          if (std::string(algo) == "ring") {
            for (int i = 0; i < n; ++i) expect(ch, ch.ring[i], ch.ring[(i + 1) % n]);
          } else {
            for (int q = 0; q < n; ++q) {
              if (ch.tree[q].up < 0) continue;
              expect(ch, q, ch.tree[q].up);
              expect(ch, ch.tree[q].up, q);
            }
          }
        }
        EXPECT_EQ(ports(m.topo, r, true), want_out);
        EXPECT_EQ(ports(m.topo, r, false), want_in);
        if (!one_rail) continue;
        for (const SimLinkLoad& l : r.links) {
          const TopoLink& k = m.topo.links.at(l.link);
          const bool spine = m.topo.nodes[k.from].tier > 0 || m.topo.nodes[k.to].tier > 0;
          EXPECT_FALSE(spine && l.bytes > 0) << l.name << " carried " << l.bytes << " bytes";
        }
      }
    }
  }
}

// The measurement: a rail-aligned ring on dgx-h100:4 runs as fast under a 4:1 oversubscribed
// spine as under a 1:1 one (before: 350.9 against 95.2 GB/s busbw at 1 GiB).
TEST(SimRoutes, OversubscribedSpineLeavesRailAlignedRingsAlone) {
  const SimResult a = run("dgx-h100", 4, "ring", 64 << 20, 1);
  const SimResult b = run("dgx-h100", 4, "ring", 64 << 20, 4);
  ASSERT_EQ(a.sizes.size(), 1u);
  ASSERT_EQ(b.sizes.size(), 1u);
  EXPECT_DOUBLE_EQ(a.sizes[0].time_us, b.sizes[0].time_us);
}

// An all-to-all of `bytes` per peer on `topo`, the spine oversubscribed `oversubscription`:1.
SimConfig all_to_all_config(const char* topo, size_t bytes, double oversubscription) {
  SimConfig cfg;
  cfg.topo = topo;
  cfg.coll = CollKind::kSendRecv;
  cfg.p2p = P2pPattern::kAllToAll;
  cfg.fabric.oversubscription = oversubscription;
  cfg.min_bytes = cfg.max_bytes = bytes;
  return cfg;
}

// Bytes a run put on links to or from a spine switch.
double spine_bytes(const Topology& t, const SimResult& r) {
  double b = 0;
  for (const SimLinkLoad& l : r.links) {
    const TopoLink& k = t.links.at(l.link);
    if (t.nodes[k.from].name.find("spine") != std::string::npos || t.nodes[k.to].name.find("spine") != std::string::npos)
      b += l.bytes;
  }
  return b;
}

// NCCL's PXN (Topology::pxn_via, ncclTopoGetNetDev at NCCL_P2P_PXN_LEVEL 2): a point-to-point send to
// another machine's GPU d leaves by rail d's NIC, through the sending machine's GPU d over NVLink; none
// where the sender is on rail d, on one machine, or where no NVLink joins the GPUs (PCIe machines).
TEST(SimRoutes, PxnTakesThePeersRail) {
  const Model m = model("dgx-h100", 2);
  const Topology& t = m.topo;
  int net = -1;
  EXPECT_EQ(t.pxn_via(t.gpu_node(0, 1), t.gpu_node(1, 2), &net), t.gpu_node(0, 2));
  EXPECT_EQ(net, t.net_node(0, 2));
  EXPECT_EQ(t.pxn_via(t.gpu_node(1, 7), t.gpu_node(0, 0), &net), t.gpu_node(1, 0));
  EXPECT_EQ(net, t.net_node(1, 0));
  EXPECT_EQ(t.pxn_via(t.gpu_node(0, 2), t.gpu_node(1, 2), &net), -1);  // already rail 2
  EXPECT_EQ(t.pxn_via(t.gpu_node(0, 1), t.gpu_node(0, 2), &net), -1);  // one machine
  const Model p = model("pcie-8gpu-2socket", 2);
  EXPECT_EQ(p.topo.pxn_via(p.topo.gpu_node(0, 1), p.topo.gpu_node(1, 6), &net), -1);  // no NVLink
}

// NCCL_P2P_PXN_LEVEL 1 ("PXN if needed", ncclTopoGetNetDev): the peer's rail NIC where the sender reaches
// it within its PCIe switch (GPU 0 and NIC 1 of a DGX H100 share one: straight there, no intermediate
// GPU), through that NIC's GPU where the sender's own path crosses a CPU (NCCL's PATH_PXN: GPU 0 to NIC 2
// is PHB, so through GPU 2 as at level 2), and the sender's own NIC where no PXN path exists (PCIe
// presets). Level 2 takes GPU 1 even for NIC 1. In a simulated all-to-all on four DGX H100, level 1 keeps
// the spine as empty as level 2.
TEST(SimRoutes, PxnLevelOneGoesThroughAGpuOnlyWhereNeeded) {
  const Model m = model("dgx-h100", 2);
  const Topology& t = m.topo;
  int net = -1;
  EXPECT_EQ(t.pxn_via(t.gpu_node(0, 0), t.gpu_node(1, 1), &net, 1), -1);
  EXPECT_EQ(net, t.net_node(0, 1));
  net = -1;
  EXPECT_EQ(t.pxn_via(t.gpu_node(0, 0), t.gpu_node(1, 1), &net, 2), t.gpu_node(0, 1));
  EXPECT_EQ(net, t.net_node(0, 1));
  net = -1;
  EXPECT_EQ(t.pxn_via(t.gpu_node(0, 0), t.gpu_node(1, 2), &net, 1), t.gpu_node(0, 2));
  EXPECT_EQ(net, t.net_node(0, 2));
  net = -1;
  EXPECT_EQ(t.pxn_via(t.gpu_node(0, 0), t.gpu_node(1, 6), &net, 1), t.gpu_node(0, 6));  // SYS: through GPU 6
  EXPECT_EQ(net, t.net_node(0, 6));
  net = -1;
  EXPECT_EQ(t.pxn_via(t.gpu_node(0, 0), t.gpu_node(1, 6), &net, 0), -1);  // level 0: the own NIC
  EXPECT_EQ(net, -1);
  const Model p = model("pcie-8gpu-2socket", 2);
  EXPECT_EQ(p.topo.pxn_via(p.topo.gpu_node(0, 1), p.topo.gpu_node(1, 6), &net, 1), -1);
  EXPECT_EQ(net, -1);  // no NVLink, and GPU 1's path to rail 6's NIC crosses the CPUs

  SimConfig cfg;
  cfg.topo = "dgx-h100:4";
  cfg.coll = CollKind::kSendRecv;
  cfg.p2p = P2pPattern::kAllToAll;
  cfg.min_bytes = cfg.max_bytes = size_t{8} << 20;
  setenv("NCCL_P2P_PXN_LEVEL", "1", 1);
  SimResult r;
  std::string err;
  const bool ok = simulate(cfg, &r, &err);
  unsetenv("NCCL_P2P_PXN_LEVEL");
  ASSERT_TRUE(ok) << err;
  EXPECT_EQ(spine_bytes(model("dgx-h100", 4).topo, r), 0.0);
  setenv("NCCL_P2P_PXN_LEVEL", "3", 1);
  EXPECT_FALSE(simulate(cfg, &r, &err));
  unsetenv("NCCL_P2P_PXN_LEVEL");
  EXPECT_NE(err.find("NCCL_P2P_PXN_LEVEL=\"3\""), std::string::npos) << err;
}

// With fewer NICs than GPUs (dgx-h100 --nics-per-node 4) a GPU's own NIC may be the rail NIC of another
// GPU across the CPUs: NCCL (levels 2 and 1) still relays through that NIC's own GPU over NVLink, so an
// all-to-all puts nothing on the inter-socket link from the second CPU; with PXN off the far GPUs cross it.
TEST(SimRoutes, PxnRelaysThroughTheNicsGpuWithFewerNics) {
  auto cpu1_to_cpu0 = [](const char* level) {
    SimConfig cfg;
    cfg.topo = "dgx-h100:2";
    cfg.coll = CollKind::kSendRecv;
    cfg.p2p = P2pPattern::kAllToAll;
    cfg.what_if.nics_per_machine = 4;
    cfg.min_bytes = cfg.max_bytes = size_t{8} << 20;
    setenv("NCCL_P2P_PXN_LEVEL", level, 1);
    SimResult r;
    std::string err;
    const bool ok = simulate(cfg, &r, &err);
    unsetenv("NCCL_P2P_PXN_LEVEL");
    EXPECT_TRUE(ok) << err;
    double b = 0;
    for (const SimLinkLoad& l : r.links)
      if (l.name == "m0.cpu1->m0.cpu0") b += l.bytes;
    return b;
  };
  EXPECT_EQ(cpu1_to_cpu0("2"), 0.0);
  EXPECT_EQ(cpu1_to_cpu0("1"), 0.0);
  EXPECT_GT(cpu1_to_cpu0("0"), 0.0);
}

// NCCL_CROSS_NIC=0 (ncclTopoGetNetDev): with PXN off a send still leaves by the peer's rail NIC, straight
// from the GPU over PCIe and the CPUs, so an all-to-all on four DGX H100 stays off the spine (and a 4:1
// spine costs nothing); without it each GPU's own NIC sends across the rails.
TEST(SimRoutes, CrossNicZeroKeepsPointToPointOnTheRails) {
  auto all_to_all = [](bool cross_nic_zero, double oversubscription) {
    const SimConfig cfg = all_to_all_config("dgx-h100:4", size_t{8} << 20, oversubscription);
    setenv("NCCL_PXN_DISABLE", "1", 1);
    if (cross_nic_zero) setenv("NCCL_CROSS_NIC", "0", 1);
    SimResult r;
    std::string err;
    const bool ok = simulate(cfg, &r, &err);
    unsetenv("NCCL_PXN_DISABLE");
    unsetenv("NCCL_CROSS_NIC");
    EXPECT_TRUE(ok) << err;
    return r;
  };
  const Model m = model("dgx-h100", 4);
  const SimResult rail = all_to_all(true, 1), rail4 = all_to_all(true, 4), own = all_to_all(false, 1);
  ASSERT_EQ(rail.sizes.size(), 1u);
  ASSERT_EQ(rail4.sizes.size(), 1u);
  EXPECT_EQ(spine_bytes(m.topo, rail), 0.0);
  EXPECT_DOUBLE_EQ(rail.sizes[0].time_us, rail4.sizes[0].time_us);
  EXPECT_GT(spine_bytes(m.topo, own), 0.0);
}

// An all-to-all on four DGX H100 with PXN (the default): every send between machines stays on its
// peer's rail, so no byte crosses the spine and a 4:1 spine costs nothing; NCCL_PXN_DISABLE=1 sends from
// each GPU's own NIC, across rails: the spine carries it and 4:1 is over 3x slower.
TEST(SimRoutes, PxnKeepsAllToAllOffTheSpine) {
  auto all_to_all = [](double oversubscription) {
    const SimConfig cfg = all_to_all_config("dgx-h100:4", size_t{32} << 20, oversubscription);
    SimResult r;
    std::string err;
    EXPECT_TRUE(simulate(cfg, &r, &err)) << err;
    return r;
  };
  const Model m = model("dgx-h100", 4);
  const SimResult a = all_to_all(1), b = all_to_all(4);
  ASSERT_EQ(a.sizes.size(), 1u);
  ASSERT_EQ(b.sizes.size(), 1u);
  EXPECT_EQ(spine_bytes(m.topo, a), 0.0);
  EXPECT_EQ(ports(m.topo, a, true).size(), 32u);  // every rail of every machine sends
  EXPECT_DOUBLE_EQ(a.sizes[0].time_us, b.sizes[0].time_us);
  setenv("NCCL_PXN_DISABLE", "1", 1);
  const SimResult c = all_to_all(1), d = all_to_all(4);
  unsetenv("NCCL_PXN_DISABLE");
  ASSERT_EQ(d.sizes.size(), 1u);
  EXPECT_GT(spine_bytes(m.topo, c), 0.0);
  EXPECT_GT(d.sizes[0].time_us, 3 * c.sizes[0].time_us);
}

}  // namespace
}  // namespace sim
}  // namespace cclab
