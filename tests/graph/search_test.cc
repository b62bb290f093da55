// Tests of the channel search (runtime/graph/search.cc, NCCL's ncclTopoCompute): the structure of
// every channel (each GPU once; NVLink-only rings on NVSwitch machines; few socket crossings; NVLink
// bridges used; rails kept across machines; the NIC's own GPU at the ring's ends), the ring order over
// all ranks, the tree patterns' chains, and the channel counts and bandwidths NCCL 2.28.9 finds on
// each preset, each derived in a comment from NCCL's search.cc. Also the search time.
#include "graph/search.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "graph/topo.h"

namespace cclab {
namespace {

Topology preset(const std::string& name, int machines) {
  Topology topo;
  std::string error;
  FabricSpec fabric;
  EXPECT_TRUE(make_preset_topology(name, machines, fabric, &topo, &error)) << error;
  return topo;
}

TopoGraph search(const Topology& topo, GraphPattern pattern, int min_channels = 1, int max_channels = 32) {
  TopoGraph graph;
  graph.pattern = pattern;
  graph.id = pattern == GraphPattern::kRing ? 0 : 1;
  graph.min_channels = min_channels;
  graph.max_channels = max_channels;
  std::string error;
  EXPECT_TRUE(search_graph(topo, &graph, &error)) << error;
  return graph;
}

// The ring graph, then the tree graph with as many channels, as NCCL's initTransportsRank asks for
// them (treeGraph->minChannels = treeGraph->maxChannels = ringGraph->nChannels).
TopoGraph tree_for(const Topology& topo, const TopoGraph& ring, GraphPattern pattern) {
  return search(topo, pattern, ring.nchannels, ring.nchannels);
}

// Every channel holds every GPU of the machine exactly once.
void expect_permutations(const Topology& topo, const TopoGraph& graph) {
  int n = topo.gpus_per_machine();
  ASSERT_EQ(static_cast<int>(graph.intra.size()), graph.nchannels);
  for (int c = 0; c < graph.nchannels; ++c) {
    std::vector<int> sorted = graph.intra[c];
    std::sort(sorted.begin(), sorted.end());
    std::vector<int> all(n);
    for (int i = 0; i < n; ++i) all[i] = i;
    EXPECT_EQ(sorted, all) << "channel " << c << "\n" << describe_graph(graph);
  }
}

// Path types of the hops of channel c: intra[i] -> intra[i+1], and the wrap (last -> first) on one
// machine (across machines the last GPU sends to the NET instead).
std::vector<PathType> hop_types(const Topology& topo, const TopoGraph& graph, int c) {
  std::vector<PathType> types;
  const std::vector<int>& ch = graph.intra[c];
  int n = static_cast<int>(ch.size());
  int hops = topo.machines == 1 ? n : n - 1;
  if (n == 1) return types;
  for (int i = 0; i < hops; ++i) {
    int a = topo.gpu_node(0, ch[i]);
    int b = topo.gpu_node(0, ch[(i + 1) % n]);
    types.push_back(topo.path(a, b).type);
  }
  return types;
}

int net_node(const Topology& topo, int machine, int dev) {
  for (int n : topo.nets(machine)) {
    if (topo.nodes[n].dev == dev) return n;
  }
  return -1;
}

// ---- structure of the rings ---------------------------------------------------------------------

TEST(SearchRing, EveryChannelHoldsEveryGpuOnce) {
  for (const std::string& name : preset_names()) {
    for (int machines : {1, 4}) {
      SCOPED_TRACE(name + ":" + std::to_string(machines));
      Topology topo = preset(name, machines);
      TopoGraph ring = search(topo, GraphPattern::kRing);
      EXPECT_GE(ring.nchannels, 1);
      EXPECT_LE(ring.nchannels, 32);
      expect_permutations(topo, ring);
      if (machines > 1) {
        ASSERT_EQ(static_cast<int>(ring.inter.size()), ring.nchannels);
      } else {
        EXPECT_TRUE(ring.inter.empty());
      }
    }
  }
}

TEST(SearchRing, NvSwitchMachinesUseNvLinkOnly) {
  for (const std::string& name : {std::string("dgx-a100"), std::string("dgx-h100")}) {
    for (int machines : {1, 4}) {
      SCOPED_TRACE(name + ":" + std::to_string(machines));
      Topology topo = preset(name, machines);
      TopoGraph ring = search(topo, GraphPattern::kRing);
      EXPECT_EQ(ring.type_intra, PathType::kNvl);
      for (int c = 0; c < ring.nchannels; ++c) {
        for (PathType t : hop_types(topo, ring, c)) EXPECT_EQ(t, PathType::kNvl) << "channel " << c;
      }
    }
  }
}

TEST(SearchRing, TwoSocketRingsCrossTheSocketLinkAtMostTwice) {
  for (int machines : {1, 4}) {
    SCOPED_TRACE(machines);
    Topology topo = preset("pcie-8gpu-2socket", machines);
    TopoGraph ring = search(topo, GraphPattern::kRing);
    for (int c = 0; c < ring.nchannels; ++c) {
      std::vector<PathType> types = hop_types(topo, ring, c);
      int crossings = static_cast<int>(std::count(types.begin(), types.end(), PathType::kSys));
      EXPECT_LE(crossings, 2) << "channel " << c << "\n" << describe_graph(ring);
    }
  }
}

TEST(SearchRing, NvLinkPairsAreNeighbours) {
  Topology topo = preset("nvlink-pairs", 1);
  TopoGraph ring = search(topo, GraphPattern::kRing);
  int n = topo.gpus_per_machine();
  for (int c = 0; c < ring.nchannels; ++c) {
    const std::vector<int>& ch = ring.intra[c];
    for (int i = 0; i < n; ++i) {
      int g = topo.gpu_node(0, ch[i]);
      for (int l : topo.nodes[g].out) {
        const TopoLink& link = topo.links[l];
        if (link.type != LinkType::kNvl || topo.nodes[link.to].type != TopoNodeType::kGpu) continue;
        int partner = topo.nodes[link.to].dev;
        bool adjacent = ch[(i + 1) % n] == partner || ch[(i + n - 1) % n] == partner;
        EXPECT_TRUE(adjacent) << "GPU " << ch[i] << " and its NVLink partner " << partner
                              << " are not neighbours in channel " << c << "\n" << describe_graph(ring);
      }
    }
  }
}

// Across machines a channel enters and leaves through the same rail (the same NET dev on a
// rail-optimised fabric), and its first and last GPUs are next to that NIC (the best path type any GPU
// has to it: PIX on the DGX presets, where each NIC shares a PCIe switch with GPUs).
TEST(SearchRing, MultiMachineRingsKeepTheirRail) {
  for (const std::string& name : preset_names()) {
    SCOPED_TRACE(name);
    Topology topo = preset(name, 4);
    TopoGraph ring = search(topo, GraphPattern::kRing);
    for (int c = 0; c < ring.nchannels; ++c) {
      ASSERT_EQ(ring.inter[c].size(), 2u);
      if (!ring.cross_nic) {
        EXPECT_EQ(ring.inter[c][0], ring.inter[c][1]) << "channel " << c;
      }
      int in = net_node(topo, 0, ring.inter[c][0]);
      int out = net_node(topo, 0, ring.inter[c][1]);
      ASSERT_GE(in, 0);
      ASSERT_GE(out, 0);
      int best_in = static_cast<int>(PathType::kDis), best_out = best_in;
      for (int g : topo.gpus(0)) {
        best_in = std::min(best_in, static_cast<int>(topo.path(g, in).type));
        best_out = std::min(best_out, static_cast<int>(topo.path(g, out).type));
      }
      int first = topo.gpu_node(0, ring.intra[c].front());
      int last = topo.gpu_node(0, ring.intra[c].back());
      EXPECT_EQ(static_cast<int>(topo.path(first, in).type), best_in) << "channel " << c;
      EXPECT_LE(topo.path(last, out).type, ring.type_inter) << "channel " << c;
      if (name == "dgx-h100" || name == "dgx-a100") {
        EXPECT_EQ(topo.path(first, in).type, PathType::kPix) << "channel " << c;
        EXPECT_EQ(topo.path(last, out).type, PathType::kPix) << "channel " << c;
      }
    }
  }
}

TEST(SearchRing, RingOrderIsMachineMajorPermutation) {
  for (const std::string& name : {std::string("dgx-h100"), std::string("pcie-8gpu-2socket")}) {
    Topology topo = preset(name, 4);
    TopoGraph ring = search(topo, GraphPattern::kRing);
    int per = topo.gpus_per_machine();
    for (int c = 0; c < ring.nchannels; ++c) {
      std::vector<int> order = ring_order(topo, ring, c);
      ASSERT_EQ(static_cast<int>(order.size()), 4 * per);
      for (int i = 0; i < 4 * per; ++i) {
        EXPECT_EQ(order[i] / per, i / per) << "rank " << order[i] << " at " << i;
        EXPECT_EQ(order[i] % per, ring.intra[c][i % per]);
      }
      std::set<int> ranks(order.begin(), order.end());
      EXPECT_EQ(static_cast<int>(ranks.size()), 4 * per);
      EXPECT_EQ(*ranks.begin(), 0);
      EXPECT_EQ(*ranks.rbegin(), 4 * per - 1);
    }
    EXPECT_TRUE(ring_order(topo, ring, ring.nchannels).empty());
  }
}

// ---- trees ----------------------------------------------------------------------------------------

TEST(SearchTree, TreePatternsAreChainsFromTheNic) {
  for (const std::string& name : preset_names()) {
    for (int machines : {1, 4}) {
      Topology topo = preset(name, machines);
      TopoGraph ring = search(topo, GraphPattern::kRing);
      for (GraphPattern p : {GraphPattern::kBalancedTree, GraphPattern::kSplitTree, GraphPattern::kTree}) {
        SCOPED_TRACE(name + ":" + std::to_string(machines) + " pattern " +
                     std::to_string(static_cast<int>(p)));
        TopoGraph tree = tree_for(topo, ring, p);
        expect_permutations(topo, tree);
        EXPECT_GE(tree.nchannels, 1);
        if (machines == 1) continue;
        for (int c = 0; c < tree.nchannels; ++c) {
          ASSERT_EQ(tree.inter[c].size(), 2u);
          int in = net_node(topo, 0, tree.inter[c][0]);
          ASSERT_GE(in, 0);
          // The head of the chain receives from the network, over a path the graph allows.
          int head = topo.gpu_node(0, tree.intra[c][0]);
          EXPECT_LE(topo.path(in, head).type, tree.type_inter) << "channel " << c;
          if (tree.pattern == GraphPattern::kTree) {
            EXPECT_EQ(tree.inter[c][0], tree.inter[c][1]);
          }
        }
      }
    }
  }
}

// ---- NCCL's numbers per preset ----------------------------------------------------------------------

struct Expected {
  int nchannels;
  double bw_intra, bw_inter;
  PathType type_intra, type_inter;
};

void expect_numbers(const std::string& name, int machines, const Expected& e) {
  SCOPED_TRACE(name + ":" + std::to_string(machines));
  Topology topo = preset(name, machines);
  TopoGraph ring = search(topo, GraphPattern::kRing);
  EXPECT_EQ(ring.nchannels, e.nchannels) << describe_graph(ring);
  EXPECT_NEAR(ring.bw_intra, e.bw_intra, 1e-3);
  EXPECT_NEAR(ring.bw_inter, e.bw_inter, 1e-3);
  EXPECT_EQ(ring.type_intra, e.type_intra);
  EXPECT_EQ(ring.type_inter, e.type_inter);
}

// dgx-h100, one machine. NCCL merges the 4 NVSwitches into one NVS node: each GPU has 18 NVLinks x
// 20.6 = 370.8 GB/s to it, so maxBw = totalBw = 370.8. sm90 intra speeds {60, 50, 40, 30, ...}: 60
// fits, and a GPU's NVS link carries floor(370.8 / 60) = 6 channels (every channel crosses every GPU's
// link once each way), 6 x 60 = 360 < 370.8 so no early stop; 50 (7 x 50 = 350), 40 (9 x 40 = 360,
// not more), 30 (12 x 30 = 360) don't beat 360, and 24/60 < .49 ends pass 1. ncclTopoDupChannels:
// bwIntra 60 >= 50, so 6 -> 12 channels at 60 / 2 = 30. Pass 2 tries 40, 50, 60 with minChannels 12:
// at most 9 channels, no better. Result: 12 channels x 30 GB/s, NVL, sameChannels.
TEST(SearchNumbers, DgxH100OneMachine) {
  expect_numbers("dgx-h100", 1, {12, 30.0, 30.0, PathType::kNvl, PathType::kPix});
}

// dgx-a100, one machine: 12 NVLinks x 20 = 240 GB/s to the merged NVSwitch. sm80 intra speeds {40,
// 30, 20, ...}: 6 x 40 = 240 >= totalBw 240, a perfect solution, pass 1 ends at once. Dup: 40 >= 25
// and sm80 is not > 80, so 12 channels at 20. Pass 2: 30 gives 8 < 12 channels, 40 gives 6. Result: 12
// channels x 20 GB/s.
TEST(SearchNumbers, DgxA100OneMachine) {
  expect_numbers("dgx-a100", 1, {12, 20.0, 20.0, PathType::kNvl, PathType::kPix});
}

// dgx-h100 across machines: maxBw = the best GPU->NET path, min(PCIe Gen5 x16 = 48, NDR 400G = 50) =
// 48, the first sm90 inter speed. A NET carries int(50 / 48) = 1 channel, so 8 NICs give 8 channels of
// 48 (NET n -> its PIX GPU -> NVLink ring -> the other GPU under that switch -> NET n; every GPU sends
// on NVLink in 7 of 8 channels, 7 x 48 = 336 <= 370.8). Lower speeds don't beat 8 x 48 = 384 (24 gives
// 16 x 24 = 384, equal). No dup: sm90, bwIntra 48 < 50 and more than 4 channels. Result: 8 x 48.
TEST(SearchNumbers, DgxH100FourMachines) {
  expect_numbers("dgx-h100", 4, {8, 48.0, 48.0, PathType::kNvl, PathType::kPix});
}

// dgx-a100 across machines: GPU->NET = min(PCIe Gen4 x16 = 24, HDR 200G = 25) = 24; sm80 inter speeds
// {48, 30, 28, 24, ...} start at 24. One channel per NET (25 - 24 < 24): 8 x 24 = 192. 20, 18, 15 keep
// one channel per NET; 12 gives 16 x 12 = 192, equal; 10/24 < .49 stops. No dup (24 < 25). Pass 2: 28
// exceeds the PCIe path. Result: 8 x 24.
TEST(SearchNumbers, DgxA100FourMachines) {
  expect_numbers("dgx-a100", 4, {8, 24.0, 24.0, PathType::kNvl, PathType::kPix});
}

// pcie-4gpu, one machine (A100 PCIe, sm80; PCIe Gen4 x16 = 24 everywhere; Intel CPU). maxBw =
// totalBw = 24, so the first sm80 intra speed is 20. Types run PIX -> ... -> PHB (the ring must cross the
// CPU between the two switches). At 20 a PHB hop through the Intel root complex costs 20 x 6/5 = 24 on
// its PCIe links (NCCL's INTEL_P2P_OVERHEAD): one channel fills both switch uplinks. Lower speeds down to
// 10 (2 x 10 = 20, not more) don't beat 20; no dup (< 25). Result: 1 x 20, PHB.
TEST(SearchNumbers, Pcie4GpuOneMachine) {
  expect_numbers("pcie-4gpu", 1, {1, 20.0, 20.0, PathType::kPhb, PathType::kPix});
}

// pcie-4gpu across machines: the 100G NIC (12.5) hangs off the CPU, so every GPU->NET path is PHB/12.5
// and maxBw = 12.5: sm80 inter speeds start at 12. NET bw 12.5 holds int(12) once: 1 channel of 12;
// 6 gives 2 x 6 = 12, equal. Result: 1 x 12, PHB/PHB.
TEST(SearchNumbers, Pcie4GpuFourMachines) {
  expect_numbers("pcie-4gpu", 4, {1, 12.0, 12.0, PathType::kPhb, PathType::kPhb});
}

// pcie-8gpu-2socket, one machine: totalBw 24, start at 20; every ring crosses UPI (10 GB/s per
// direction) twice, once each way, so nothing at 20, 18, 15, 12; at 10 one channel (3->4 uses cpu0->cpu1,
// 7->0 cpu1->cpu0). 5 gives 2 x 5 = 10, equal; 4/10 < .49 stops. Result: 1 x 10, SYS.
TEST(SearchNumbers, Pcie8Gpu2SocketOneMachine) {
  expect_numbers("pcie-8gpu-2socket", 1, {1, 10.0, 10.0, PathType::kSys, PathType::kPix});
}

// pcie-8gpu-2socket across machines: one 100G NIC per socket (PIX to 2 GPUs each). maxBw 12.5 -> start
// at 12, where UPI (10) fails. At 10, crossNic 0 (same NIC in and out) must cross UPI twice: 1 channel.
// Then NCCL_CROSS_NIC=2 (the default) lets channel pairs swap NICs: NET0 -> socket 0 -> UPI -> socket 1
// -> NET1, and back, each crossing UPI once in its own direction: 2 x 10 = 20. typeIntra can't exceed
// typeInter across machines, so both are SYS. No dup. Result: 2 x 10, SYS/SYS, crossNic.
TEST(SearchNumbers, Pcie8Gpu2SocketFourMachines) {
  expect_numbers("pcie-8gpu-2socket", 4, {2, 10.0, 10.0, PathType::kSys, PathType::kSys});
  Topology topo = preset("pcie-8gpu-2socket", 4);
  TopoGraph ring = search(topo, GraphPattern::kRing);
  EXPECT_TRUE(ring.cross_nic);
  ASSERT_EQ(ring.nchannels, 2);
  // NCCL's crossNic 2: the odd channel enters where the even one left, and leaves where it entered.
  EXPECT_EQ(ring.inter[1][0], ring.inter[0][1]);
  EXPECT_EQ(ring.inter[1][1], ring.inter[0][0]);
  EXPECT_NE(ring.inter[0][0], ring.inter[0][1]);
  // Asking for no NIC crossing (NCCL_CROSS_NIC=0) leaves one channel through one rail.
  setenv("NCCL_CROSS_NIC", "0", 1);
  TopoGraph same_rail = search(topo, GraphPattern::kRing);
  unsetenv("NCCL_CROSS_NIC");
  EXPECT_FALSE(same_rail.cross_nic);
  EXPECT_EQ(same_rail.nchannels, 1);
  EXPECT_EQ(same_rail.inter[0][0], same_rail.inter[0][1]);
}

// nvlink-pairs, one machine (4x sm86, NVLink bridges 0-1 and 2-3 of 4 x 12 = 48, PCIe Gen4 24, AMD CPU).
// Two NVLink islands: ncclTopoSplitNvLink raises the ring's minChannels to 2. maxBw = totalBw = 48:
// start at 40; the ring crosses the CPU twice (1->2 and 3->0, one per direction), so a channel of speed
// s needs s on each switch uplink (24): 2 channels need s <= 12. 40..15 give 1 channel (< minChannels),
// 12 gives 2 x 12 = 24; lower speeds give 20, 18, 21, 24 (6 x 4). Result: 2 x 12, PHB, the bridges used.
TEST(SearchNumbers, NvLinkPairsOneMachine) {
  expect_numbers("nvlink-pairs", 1, {2, 12.0, 12.0, PathType::kPhb, PathType::kPix});
}

// nvlink-pairs across machines: one 100G NIC on the CPU (PHB/12.5); minChannels 2 (split NVLink), and
// the NIC holds int(12.5 / s) channels: 2 channels need s <= 6. Result: 2 x 6, PHB/PHB.
TEST(SearchNumbers, NvLinkPairsFourMachines) {
  expect_numbers("nvlink-pairs", 4, {2, 6.0, 6.0, PathType::kPhb, PathType::kPhb});
}

// Trees get ringGraph->nChannels as both bounds. On dgx-a100 across machines the balanced tree is found
// at 24/24 like the ring; pass 2 then raises bwIntra alone (trees only) while bwIntra < 2 x bwInter:
// 28, then 30, then 48 is not < 48. Result: 8 channels, bw 30 intra / 24 inter.
TEST(SearchNumbers, DgxA100FourMachinesBalancedTree) {
  Topology topo = preset("dgx-a100", 4);
  TopoGraph ring = search(topo, GraphPattern::kRing);
  TopoGraph tree = tree_for(topo, ring, GraphPattern::kBalancedTree);
  EXPECT_EQ(tree.nchannels, 8);
  EXPECT_NEAR(tree.bw_intra, 30.0, 1e-3);
  EXPECT_NEAR(tree.bw_inter, 24.0, 1e-3);
}

// ---- hand-built machines (no preset) ----------------------------------------------------------------

// 8 sm90 GPUs, NVSwitches as `nvs` nodes (1: NCCL's merged node with 18 links per GPU; 4: the real
// 4/5/5/4 split), 4 PCIe switches each with 2 GPUs and 2 NICs (400G), 2 Intel sockets.
Topology hand_h100(int machines, int nvs_count) {
  Topology t;
  t.machines = machines;
  for (int m = 0; m < machines; ++m) {
    auto node = [&](TopoNodeType type, int dev) {
      TopoNode n;
      n.type = type;
      n.machine = m;
      n.dev = dev;
      n.name = "m" + std::to_string(m) + "." + topo_node_type_name(type) + std::to_string(dev);
      return n;
    };
    int cpu[2];
    for (int c = 0; c < 2; ++c) {
      TopoNode n = node(TopoNodeType::kCpu, c);
      n.arch = CpuArch::kX86;
      n.vendor = CpuVendor::kIntel;
      cpu[c] = t.add_node(n);
    }
    t.connect(cpu[0], cpu[1], LinkType::kSys, 22, 0.1);
    std::vector<int> nvs, gpu(8);
    for (int s = 0; s < nvs_count; ++s) nvs.push_back(t.add_node(node(TopoNodeType::kNvs, s)));
    for (int g = 0; g < 8; ++g) {
      TopoNode n = node(TopoNodeType::kGpu, g);
      n.sm = 90;
      gpu[g] = t.add_node(n);
    }
    for (int sw = 0; sw < 4; ++sw) {
      int ps = t.add_node(node(TopoNodeType::kPci, sw));
      t.connect(ps, cpu[sw / 2], LinkType::kPci, 48, 0.1);
      for (int k = 0; k < 2; ++k) {
        int g = sw * 2 + k;
        t.connect(gpu[g], ps, LinkType::kPci, 48, 0.1);
        int nic = t.add_node(node(TopoNodeType::kNic, g));
        t.connect(nic, ps, LinkType::kPci, 48, 0.1);
        TopoNode net = node(TopoNodeType::kNet, g);
        net.net_speed_mbps = 400000;
        int nt = t.add_node(net);
        t.connect(nic, nt, LinkType::kLoc, 50, 0.1);
      }
    }
    for (int g = 0; g < 8; ++g) {
      if (nvs_count == 1) {
        t.connect(gpu[g], nvs[0], LinkType::kNvl, 18 * 20.6, 0.1, 18);
      } else {
        for (int s = 0; s < 4; ++s) {
          int lanes = (s == 1 || s == 2) ? 5 : 4;
          t.connect(gpu[g], nvs[s], LinkType::kNvl, 20.6 * lanes, 0.1, lanes);
        }
      }
    }
  }
  t.compute_paths();
  return t;
}

// Several NVSwitch nodes behave as NCCL's single merged one: a GPU's NVLinks to all of them form one
// bandwidth pool (NCCL's ncclTopoConnectNodes adds them up).
TEST(SearchHandBuilt, SplitNvSwitchesActAsOne) {
  for (int machines : {1, 2}) {
    TopoGraph one = search(hand_h100(machines, 1), GraphPattern::kRing);
    TopoGraph four = search(hand_h100(machines, 4), GraphPattern::kRing);
    EXPECT_EQ(one.nchannels, four.nchannels);
    EXPECT_EQ(one.bw_intra, four.bw_intra);
    EXPECT_EQ(one.intra, four.intra);
    EXPECT_EQ(one.inter, four.inter);
    EXPECT_EQ(one.nchannels, machines == 1 ? 12 : 8);
  }
}

// NVSwitch rings start at the NIC's GPU and go round by index (NCCL tries the next and previous GPU
// only), ending at the other GPU of the NIC's PCIe switch.
TEST(SearchHandBuilt, NvSwitchRingsGoRoundByIndex) {
  Topology topo = hand_h100(2, 1);
  TopoGraph ring = search(topo, GraphPattern::kRing);
  ASSERT_EQ(ring.nchannels, 8);
  EXPECT_FALSE(ring.same_channels);
  for (int c = 0; c < 8; ++c) {
    EXPECT_EQ(ring.inter[c], (std::vector<int>{c, c}));
    EXPECT_EQ(ring.intra[c].front(), c);
    EXPECT_EQ(ring.intra[c].back(), c ^ 1);  // the other GPU on NIC c's PCIe switch
    for (int i = 1; i < 8; ++i) {
      int d = (ring.intra[c][i] - ring.intra[c][i - 1] + 8) % 8;
      EXPECT_TRUE(d == 1 || d == 7);
    }
  }
}

TEST(SearchHandBuilt, NoGpuIsAnError) {
  Topology topo;
  TopoNode cpu;
  cpu.type = TopoNodeType::kCpu;
  topo.add_node(cpu);
  topo.compute_paths();
  TopoGraph graph;
  std::string error;
  EXPECT_FALSE(search_graph(topo, &graph, &error));
  EXPECT_NE(error.find("no GPU"), std::string::npos) << error;
}

TEST(SearchHandBuilt, DescribeGraphAsNcclLogsIt) {
  Topology topo = hand_h100(2, 1);
  TopoGraph ring = search(topo, GraphPattern::kRing);
  std::string text = describe_graph(ring);
  EXPECT_EQ(text.substr(0, text.find('\n')),
            "Pattern 4, crossNic 0, nChannels 8, bw 48.0/48.0, type NVL/PIX, sameChannels 0");
  EXPECT_NE(text.find("\n 0 : NET/0 GPU/0 GPU/7 GPU/6 GPU/5 GPU/4 GPU/3 GPU/2 GPU/1 NET/0"),
            std::string::npos)
      << text;
}

// ---- time ---------------------------------------------------------------------------------------------

// NCCL bounds the search by step budgets (2^19 steps overall); 8 GPUs search well under a second, and
// the bound grows with the GPUs per machine (gb200-nvl72: 72, about 0.8 s for 4 racks on an idle core): a
// guard against a search that blows up, not a speed goal. Sanitizers slow every memory access
// (ThreadSanitizer: about 2x here), so their builds allow 5 s per 8 GPUs.
#ifdef CCLAB_SANITIZED
constexpr double kSearchSeconds = 5.0;
#else
constexpr double kSearchSeconds = 1.0;
#endif
TEST(SearchTime, EveryPresetSearchesQuickly) {
  for (const std::string& name : preset_names()) {
    for (int machines : {1, 4}) {
      Topology topo = preset(name, machines);
      auto t0 = std::chrono::steady_clock::now();
      TopoGraph ring = search(topo, GraphPattern::kRing);
      TopoGraph tree = tree_for(topo, ring, GraphPattern::kBalancedTree);
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      EXPECT_LT(s, kSearchSeconds * std::max(1, topo.gpus_per_machine() / 8)) << name << ":" << machines;
      EXPECT_GE(tree.nchannels, 1);
    }
  }
}

}  // namespace
}  // namespace cclab
