// Tests of the channel counts (runtime/graph/channels.cc): the channels NCCL would run on each
// preset (modelled_channels: the fewer of the ring and tree graphs' channels, doubled, as NCCL's
// connect.cc does) and the count a CUDA communicator runs (cuda_channel_count): the modelled count on a
// known machine, 16 on the virtual model, within NCCL_MIN/MAX_NCHANNELS, one launch's 32 blocks, and
// the blocks a GPU shared by several ranks can hold at once; and the NICs of the connections between
// machines (ChannelPlan::net, Topology::path_via): each takes its channel's NET/n, so a rail-aligned
// ring never leaves its rail's leaf switch.
#include "graph/channels.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "graph/topo.h"

namespace cclab {
namespace {

int modelled_on(const std::string& name, int machines, int lo = 1, int hi = 64) {
  Topology topo;
  std::string error;
  EXPECT_TRUE(make_preset_topology(name, machines, FabricSpec{}, &topo, &error)) << error;
  TopoGraph ring, tree;
  EXPECT_TRUE(search_ring_and_tree(topo, &ring, &tree, &error)) << error;
  return modelled_channels(ring, tree, lo, hi);
}

// NCCL on a DGX H100 runs 24 channels (12 found by the ring search at 30 GB/s each, doubled); on a
// PCIe box with one ring and two tree channels, 2.
TEST(ModelledChannels, PresetsGiveNcclsCounts) {
  EXPECT_EQ(modelled_on("dgx-h100", 1), 24);
  EXPECT_EQ(modelled_on("dgx-a100", 1), 24);
  EXPECT_EQ(modelled_on("dgx-h100", 2), 16);
  EXPECT_EQ(modelled_on("nvlink-pairs", 1), 4);
  EXPECT_EQ(modelled_on("pcie-4gpu", 1), 2);
  EXPECT_EQ(modelled_on("pcie-8gpu-2socket", 1), 2);
  // NCCL_MIN/MAX_NCHANNELS bound the doubled count.
  EXPECT_EQ(modelled_on("dgx-h100", 1, 1, 8), 8);
  EXPECT_EQ(modelled_on("pcie-4gpu", 1, 6, 64), 6);
}

TEST(CudaChannels, TheModelledCountOnAKnownMachine) {
  std::string note;
  EXPECT_EQ(cuda_channel_count(modelled_on("dgx-h100", 1), 1, 1, 64, 32, 0, &note), 24);
  EXPECT_EQ(note, "");
  EXPECT_EQ(cuda_channel_count(modelled_on("pcie-4gpu", 1), 1, 1, 64, 32, 0, &note), 2);
  EXPECT_EQ(note, "");
}

TEST(CudaChannels, SixteenOnTheVirtualModel) {
  std::string note = "stale";
  EXPECT_EQ(cuda_channel_count(0, 1, 1, 64, 32, 0, &note), 16);
  EXPECT_EQ(note, "");
  EXPECT_EQ(cuda_channel_count(0, 1, 1, 4, 32, 0, nullptr), 4);   // NCCL_MAX_NCHANNELS=4
  EXPECT_EQ(cuda_channel_count(0, 1, 20, 64, 32, 0, nullptr), 20);  // NCCL_MIN_NCHANNELS=20
}

// Ranks sharing one GPU on the virtual model: as many as one launch carries, within what the GPU holds
// for each (2 ranks on an H200 moved 1.48x the bytes of a 1 GiB all_reduce with 32 channels each than
// with 16). A modelled machine keeps its own count; NCCL_MAX_NCHANNELS still bounds it.
TEST(CudaChannels, RanksSharingAGpuFillIt) {
  std::string note;
  EXPECT_EQ(cuda_channel_count(0, 2, 1, 64, 32, 132 / 2, &note), 32);
  EXPECT_EQ(note, "");
  EXPECT_EQ(cuda_channel_count(0, 4, 1, 64, 32, 132 / 4, &note), 32);
  EXPECT_EQ(cuda_channel_count(0, 8, 1, 64, 32, 132 / 8, &note), 16);
  EXPECT_NE(note.find("only 16 blocks per rank fit"), std::string::npos) << note;
  EXPECT_EQ(cuda_channel_count(0, 2, 1, 8, 32, 132 / 2, nullptr), 8);       // NCCL_MAX_NCHANNELS=8
  EXPECT_EQ(cuda_channel_count(24, 2, 1, 64, 32, 132 / 2, nullptr), 24);    // a modelled machine
  EXPECT_EQ(cuda_channel_count(0, 1, 1, 64, 32, 132, nullptr), 16);         // one rank per GPU: unchanged
}

TEST(CudaChannels, BoundsApplyToTheModelledCount) {
  EXPECT_EQ(cuda_channel_count(24, 1, 1, 12, 32, 0, nullptr), 12);
  EXPECT_EQ(cuda_channel_count(2, 1, 8, 64, 32, 0, nullptr), 8);
  // lo above hi (ranks asked for different bounds): hi wins, as in the agreed host count.
  EXPECT_EQ(cuda_channel_count(24, 1, 16, 8, 32, 0, nullptr), 8);
}

TEST(CudaChannels, OneLaunchCarriesAtMost32Blocks) {
  std::string note;
  EXPECT_EQ(cuda_channel_count(48, 1, 1, 64, 32, 0, &note), 32);
  EXPECT_NE(note.find("at most 32 blocks"), std::string::npos) << note;
  EXPECT_EQ(cuda_channel_count(0, 1, 40, 64, 32, 0, &note), 32);
}

// Four ranks on a GPU that holds 132 blocks at once get 33 each at most; with 8 ranks, 16; with 40
// ranks, 3 - even against NCCL_MIN_NCHANNELS, since more would leave blocks waiting for an SM while
// their peers spin on them.
TEST(CudaChannels, SharedGpuHoldsEveryRanksBlocks) {
  std::string note;
  EXPECT_EQ(cuda_channel_count(24, 1, 1, 64, 32, 132 / 4, &note), 24);
  EXPECT_EQ(note, "");
  EXPECT_EQ(cuda_channel_count(24, 1, 1, 64, 32, 132 / 8, &note), 16);
  EXPECT_NE(note.find("only 16 blocks per rank fit"), std::string::npos) << note;
  EXPECT_EQ(cuda_channel_count(0, 1, 8, 64, 32, 132 / 40, &note), 3);
  EXPECT_EQ(cuda_channel_count(0, 1, 1, 64, 32, 1, nullptr), 1);
}

// ---- the NICs of connections between machines ------------------------------------------------------

// The NET node a route leaves machine `m` by and the one it enters machine `m2` by (-1 when none).
std::pair<int, int> route_nets(const Topology& t, const TopoPath& p, int m, int m2) {
  int out = -1, in = -1;
  for (int l : p.links) {
    const TopoNode& from = t.nodes[t.links[l].from];
    const TopoNode& to = t.nodes[t.links[l].to];
    if (from.type == TopoNodeType::kNet && from.machine == m && to.type == TopoNodeType::kNetSwitch) out = t.links[l].from;
    if (to.type == TopoNodeType::kNet && to.machine == m2 && from.type == TopoNodeType::kNetSwitch) in = t.links[l].to;
  }
  return {out, in};
}

// Every multi-machine preset on 2, 3, 4 and 9 machines (one leaf per rail): every connection of every
// channel between machines - the ring's, and the tree's up and down - takes the NICs of its channel's
// graph: the sender leaves by the channel's exit NET (inter[1]; inter[0] for the channel's first GPU,
// a tree's head), the receiver enters by its entry NET (inter[0]); its route (path_via) crosses those
// two ports; and where both are one rail (crossNic 0) it stays on that rail's leaf, never reaching the
// spine. Before the simulator took the channel's NICs, dgx-h100's ring 0 (NET/0 GPU/0 GPU/7 ... GPU/1
// NET/0) went m0.gpu1 -> m0.net1 -> leaf r1 -> spine -> leaf r0 -> m1.net0 -> m1.gpu0.
TEST(ChannelNets, EveryConnectionBetweenMachinesTakesItsChannelsNics) {
  for (const std::string& name : preset_names()) {
    for (int machines : {2, 3, 4, 9}) {
      SCOPED_TRACE(name + ":" + std::to_string(machines));
      Topology t;
      std::string err;
      ASSERT_TRUE(make_preset_topology(name, machines, FabricSpec{}, &t, &err)) << err;
      TopoGraph ring, tree;
      ASSERT_TRUE(search_ring_and_tree(t, &ring, &tree, &err)) << err;
      const int nranks = static_cast<int>(t.gpus().size());
      const RankPlacement place = place_ranks(t, nranks);
      const int nch = modelled_channels(ring, tree);
      const std::vector<ChannelPlan> plan = plan_channels(t, ring, tree, place, nch);
      int checked = 0, same_rail = 0;
      for (int c = 0; c < nch; ++c) {
        const ChannelPlan& ch = plan[c];
        auto expect_conn = [&](const TopoGraph& g, int a, int b) {
          const int ma = place.rank_machine[a], mb = place.rank_machine[b];
          const NetConn* k = ch.net_of(a, b);
          if (ma == mb) {
            EXPECT_EQ(k, nullptr) << "channel " << c << " " << a << "->" << b;
            return;
          }
          ASSERT_NE(k, nullptr) << "channel " << c << " " << a << "->" << b;
          const std::vector<int>& intra = g.intra[c % g.nchannels];
          const std::vector<int>& inter = g.inter[c % g.nchannels];
          EXPECT_EQ(k->send_net, inter[intra[0] == place.rank_dev[a] ? 0 : 1]) << "channel " << c << " " << a << "->" << b;
          EXPECT_EQ(k->recv_net, inter[intra[0] == place.rank_dev[b] ? 0 : 1]) << "channel " << c << " " << a << "->" << b;
          const int exit = t.net_node(ma, k->send_net), entry = t.net_node(mb, k->recv_net);
          const TopoPath& p = t.path_via(t.gpu_node(ma, place.rank_dev[a]), t.gpu_node(mb, place.rank_dev[b]), exit, entry);
          ASSERT_EQ(p.type, PathType::kNet) << "channel " << c << " " << a << "->" << b;
          EXPECT_EQ(route_nets(t, p, ma, mb), std::make_pair(exit, entry)) << "channel " << c << " " << a << "->" << b;
          if (k->send_net == k->recv_net) {
            ++same_rail;
            for (int l : p.links) {
              const int to = t.links[l].to;
              EXPECT_FALSE(t.nodes[to].type == TopoNodeType::kNetSwitch && t.nodes[to].tier > 0)
                  << "channel " << c << " " << a << "->" << b << " reaches " << t.nodes[to].name;
            }
          }
          ++checked;
        };
        std::set<std::pair<int, int>> ring_conns;
        for (int i = 0; i < nranks; ++i) {
          ring_conns.insert({ch.ring[i], ch.ring[(i + 1) % nranks]});
          expect_conn(ring, ch.ring[i], ch.ring[(i + 1) % nranks]);
        }
        for (int r = 0; r < nranks; ++r) {  // a tree link to a ring neighbour reuses the ring's connection
          const int up = ch.tree[r].up;
          if (up < 0) continue;
          if (!ring_conns.count({r, up})) expect_conn(tree, r, up);
          if (!ring_conns.count({up, r})) expect_conn(tree, up, r);
        }
      }
      EXPECT_GT(checked, 0);
      // crossNic 0 graphs keep every connection on one rail.
      if (!ring.cross_nic && !tree.cross_nic) {
        EXPECT_EQ(same_rail, checked);
      }
    }
  }
}

// A named NET must be on its end's machine; on one machine path_via is path().
TEST(ChannelNets, PathViaChecksItsNets) {
  Topology t;
  std::string err;
  ASSERT_TRUE(make_preset_topology("dgx-h100", 2, FabricSpec{}, &t, &err)) << err;
  const int a = t.gpu_node(0, 1), b = t.gpu_node(1, 0);
  EXPECT_EQ(t.path_via(a, b, t.net_node(1, 0), t.net_node(1, 0)).type, PathType::kDis);
  EXPECT_EQ(t.path_via(a, b, t.net_node(0, 0), t.gpu_node(1, 0)).type, PathType::kDis);
  EXPECT_EQ(&t.path_via(a, b, -1, -1), &t.path(a, b));
  EXPECT_EQ(&t.path_via(a, t.gpu_node(0, 5), t.net_node(0, 0), -1), &t.path(a, t.gpu_node(0, 5)));
  // m0.gpu1 through NET/0: its PCIe switch's other NIC, rail 0's leaf, m1.gpu0's own NIC.
  const TopoPath& p = t.path_via(a, b, t.net_node(0, 0), t.net_node(1, 0));
  std::vector<std::string> names;
  for (int l : p.links) names.push_back(t.nodes[t.links[l].from].name + "->" + t.nodes[t.links[l].to].name);
  const std::vector<std::string> want = {"m0.gpu1->m0.pci0", "m0.pci0->m0.nic0", "m0.nic0->m0.net0",
                                         "m0.net0->fabric.leaf.r0.0", "fabric.leaf.r0.0->m1.net0", "m1.net0->m1.nic0",
                                         "m1.nic0->m1.pci0", "m1.pci0->m1.gpu0"};
  EXPECT_EQ(names, want);
}

}  // namespace
}  // namespace cclab
