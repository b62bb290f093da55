// tests/graph/p2p_channels_test.cc - NCCL 2.28.9's point-to-point channels (graph/p2p_channels.h) and the
// split of one send over them (kernels/p2p.h), against numbers worked out by hand from NCCL's source
// (src/graph/paths.cc ncclTopoComputeP2pChannels, src/enqueue.cc addP2pToPlan, src/include/device.h).
#include <gtest/gtest.h>

#include "graph/p2p_channels.h"
#include "graph/topo.h"

namespace cclab {
namespace {

std::vector<int> first_gpus(const Topology& t, int n) {
  std::vector<int> g;
  for (int m = 0; static_cast<int>(g.size()) < n; ++m)
    for (int d = 0; d < t.gpus_per_machine() && static_cast<int>(g.size()) < n; ++d) g.push_back(t.gpu_node(m, d));
  return g;
}

P2pChannels of(const char* preset, int machines, int nranks, int nchannels) {
  Topology t;
  std::string err;
  EXPECT_TRUE(make_preset_topology(preset, machines, FabricSpec{}, &t, &err)) << err;
  return p2p_channels(t, first_gpus(t, nranks), nchannels, 4 << 20);
}

TEST(P2pChannels, NvlinkMachine) {
  // H100 over NVSwitch: path 18 x 20.6 GB/s = 18 NVLinks -> 2 x 18 = 36 per peer; 24 collective channels
  // -> p2pnChannels 32, per peer pow2Up(min(24, 36)) = 32; all NVLink: 512 KiB chunks.
  P2pChannels pc = of("dgx-h100", 1, 8, 24);
  EXPECT_EQ(pc.nchannels, 32);
  EXPECT_EQ(pc.per_peer, 32);
  EXPECT_EQ(pc.chunk_bytes, 512u << 10);
  EXPECT_FALSE(pc.multi_node);
  // A100: 12 NVLinks x 20 GB/s -> 24 per peer; 16 channels -> 16 and 16.
  pc = of("dgx-a100", 1, 8, 16);
  EXPECT_EQ(pc.nchannels, 16);
  EXPECT_EQ(pc.per_peer, 16);
}

TEST(P2pChannels, PcieAndNetwork) {
  // PCIe peers: 2 per peer, 128 KiB chunks.
  P2pChannels pc = of("pcie-4gpu", 1, 4, 4);
  EXPECT_EQ(pc.per_peer, 2);
  EXPECT_EQ(pc.chunk_bytes, 128u << 10);
  // Two DGX H100: network peers get 2 (no GPU links to a CPU: getLocalNetCountByBw 0), 128 KiB chunks.
  pc = of("dgx-h100", 2, 16, 16);
  EXPECT_EQ(pc.nchannels, 16);
  EXPECT_EQ(pc.per_peer, 2);
  EXPECT_EQ(pc.chunk_bytes, 128u << 10);
  EXPECT_TRUE(pc.multi_node);
  // Many ranks: 2 halves while 2 x nranks > 4 x p2pnChannels (80 ranks, 16 channels: 1).
  pc = of("dgx-h100", 10, 80, 16);
  EXPECT_EQ(pc.per_peer, 1);
}

TEST(P2pChannels, PartsOfASend) {
  // 4 ranks of a DGX H100 (32 p2p channels, 32 per peer, 512 KiB): nChannelsMin 32 -> 8 (8 x 4 <= 32);
  // a 1 MiB send: min(8, 1 MiB / 64 KiB) = 8 parts of 128 KiB.
  const P2pChannels one{32, 32, 512u << 10, false};
  EXPECT_EQ(p2p_nparts(one, 4, 1 << 20), 8);
  EXPECT_EQ(p2p_nparts(one, 8, 1 << 20), 4);      // 8 ranks: nChannelsMin 4
  EXPECT_EQ(p2p_nparts(one, 4, 100 << 10), 2);    // ceil(100 KiB / 64 KiB)
  EXPECT_EQ(p2p_nparts(one, 4, 0), 1);
  EXPECT_EQ(p2p_nparts(one, 2, 1u << 30), 32);    // 16 parts of 64 MiB > 16 MiB: doubled to 32
  // Two machines (16 channels, 2 per peer, 128 KiB): parts of 64 KiB to 128 KiB, at most 2.
  const P2pChannels two{16, 2, 128u << 10, true};
  // nChannelsMin 1 (2 x 16 > 16); a part of 1 MiB exceeds 128 KiB: doubled once (1 <= nChannelsMax / 2).
  EXPECT_EQ(p2p_nparts(two, 16, 1 << 20), 2);
  EXPECT_EQ(p2p_nparts(two, 16, 64 << 10), 1);
  size_t beg = 0, end = 0;
  p2p_part_bounds(8, 7, 1 << 20, &beg, &end);
  EXPECT_EQ(beg, 7u << 17);
  EXPECT_EQ(end, 1u << 20);
  p2p_part_bounds(4, 3, 10000, &beg, &end);       // parts of 4 KiB (2500 rounded up): the last is empty
  EXPECT_EQ(beg, 10000u);
  EXPECT_EQ(end, 10000u);
  // Channels on one machine: round 1 of 32 starts at bit-reversed 1 = 16, round 2 at 8.
  const P2pChannels ch32{32, 4, 512u << 10, false};
  EXPECT_EQ(p2p_channel_for_part(ch32, 1, 0), 16);
  EXPECT_EQ(p2p_channel_for_part(ch32, 1, 3), 19);
  EXPECT_EQ(p2p_channel_for_part(ch32, 2, 0), 8);
  EXPECT_EQ(p2p_channel_for_part(ch32, 3, 15), (24 + 15) & 31);
  // Several machines (groups of 8 rounds, ncclP2pChannelBaseForRound): rounds 0-7 share base 0, rounds
  // 8-15 base 1 (bit-reversed: 16), rounds 16-23 base 2 (8).
  P2pChannels multi{32, 2, 128u << 10, true};
  multi.group_size = 8;
  for (int r = 0; r < 8; ++r) EXPECT_EQ(p2p_channel_for_part(multi, r, 1), 1) << r;
  for (int r = 8; r < 16; ++r) EXPECT_EQ(p2p_channel_for_part(multi, r, 0), 16) << r;
  EXPECT_EQ(p2p_channel_for_part(multi, 16, 1), 9);
  // Groups of 16 ranks: two bases per group, 8 rounds each.
  multi.group_size = 16;
  EXPECT_EQ(p2p_channel_for_part(multi, 7, 0), 0);
  EXPECT_EQ(p2p_channel_for_part(multi, 8, 0), 16);
  EXPECT_EQ(p2p_channel_for_part(multi, 16, 0), 8);  // group 1: base 2
}

// NCCL's point-to-point schedule (src/init.cc ncclP2pSchedule) over generated layouts: machines of equal
// or unequal rank counts, ranks in machine order or interleaved. Every schedule pairs each peer once
// each way, starts with itself, and is symmetric (a sends to b in round r exactly when b receives from a
// in round r), so every backend's sends and receives meet; on one machine it is rank +/- round.
TEST(P2pSchedule, GeneratedLayouts) {
  int layouts = 0;
  for (int machines = 1; machines <= 5; ++machines)
    for (int per : {1, 2, 3, 4, 6, 8, 16})
      for (int shape = 0; shape < 3; ++shape) {
        std::vector<int> node_of;
        for (int m = 0; m < machines; ++m)
          for (int l = 0; l < (shape == 2 && m == 0 ? 2 * per : per); ++l) node_of.push_back(m);
        if (shape == 1) {  // interleaved: rank r on machine r % machines
          for (size_t r = 0; r < node_of.size(); ++r) node_of[r] = static_cast<int>(r) % machines;
        }
        const int n = static_cast<int>(node_of.size());
        std::vector<P2pSchedule> all;
        for (int r = 0; r < n; ++r) all.push_back(p2p_schedule(r, node_of));
        for (int a = 0; a < n; ++a) {
          const P2pSchedule& s = all[a];
          ASSERT_EQ(static_cast<int>(s.send_to.size()), n) << "layout " << layouts << " rank " << a;
          EXPECT_EQ(s.send_to[0], a);
          EXPECT_EQ(s.recv_from[0], a);
          std::vector<int> seen_send(n, 0), seen_recv(n, 0);
          for (int r = 0; r < n; ++r) {
            ++seen_send[s.send_to[r]];
            ++seen_recv[s.recv_from[r]];
            EXPECT_EQ(all[s.send_to[r]].recv_from[r], a) << "layout " << layouts << " rank " << a << " round " << r;
            EXPECT_EQ(s.send_round[s.send_to[r]], r);
            if (machines == 1) {
              EXPECT_EQ(s.send_to[r], (a + r) % n);
            }
          }
          for (int q = 0; q < n; ++q) EXPECT_TRUE(seen_send[q] == 1 && seen_recv[q] == 1) << "layout " << layouts;
        }
        ++layouts;
      }
  EXPECT_EQ(layouts, 105);
}

// Several machines: the rounds go machine by machine (groups of 8), in NCCL's quadratic order of machine
// distances: with 4 machines of 8 GPUs, rank 3 goes to its own machine, then +1, +3, +2.
TEST(P2pSchedule, MachinesInNcclsOrder) {
  std::vector<int> node_of;
  for (int m = 0; m < 4; ++m)
    for (int l = 0; l < 8; ++l) node_of.push_back(m);
  const P2pSchedule s = p2p_schedule(3, node_of);
  EXPECT_EQ(s.group_size, 8);
  const int want_machine[4] = {0, 1, 3, 2};
  for (int r = 0; r < 32; ++r) {
    EXPECT_EQ(node_of[s.send_to[r]], want_machine[r / 8]) << r;
    EXPECT_EQ(s.send_to[r] % 8, (3 + r % 8) % 8) << r;  // within the machine: local + distance
    EXPECT_EQ(node_of[s.recv_from[r]], (4 - want_machine[r / 8]) % 4) << r;
  }
  // Machines of 2 GPUs: groups of gcd(8, 2) = 2.
  EXPECT_EQ(p2p_schedule_group_size({0, 0, 1, 1, 2, 2}), 2);
  // One machine: all its ranks are one group.
  EXPECT_EQ(p2p_schedule_group_size({0, 0, 0, 0, 0, 0}), 6);
  // NCCL_P2P_SCHEDULE_GROUP_SIZE 4 on machines of 8.
  EXPECT_EQ(p2p_schedule(0, node_of, 4).group_size, 4);
}

// The machine's p2p channels carry the schedule's group size where several machines talk.
TEST(P2pSchedule, ChannelsKnowTheGroupSize) {
  Topology t;
  std::string err;
  ASSERT_TRUE(make_preset_topology("dgx-h100", 2, FabricSpec(), &t, &err)) << err;
  std::vector<int> gpus;
  for (int m = 0; m < 2; ++m)
    for (int d = 0; d < 8; ++d) gpus.push_back(t.gpu_node(m, d));
  const P2pChannels pc = p2p_channels(t, gpus, 16, 4 << 20);
  EXPECT_TRUE(pc.multi_node);
  EXPECT_EQ(pc.group_size, 8);
  gpus.resize(8);
  EXPECT_EQ(p2p_channels(t, gpus, 16, 4 << 20).group_size, 0);  // one machine: no groups
}

// Ranks sharing one GPU: every p2p channel serves each peer, in NVLink's chunk within a Simple slot.
TEST(P2pChannels, RanksSharingAGpu) {
  const P2pChannels pcie{32, 2, 128u << 10, false};
  std::string why;
  P2pChannels pc = p2p_channels_sharing_gpu(pcie, 4 << 20, P2pParams(), &why);
  EXPECT_EQ(pc.nchannels, 32);
  EXPECT_EQ(pc.per_peer, 32);
  EXPECT_EQ(pc.chunk_bytes, 512u << 10);
  EXPECT_NE(why.find("sharing a GPU"), std::string::npos) << why;
  pc = p2p_channels_sharing_gpu(pcie, 1 << 20, P2pParams());  // 128 KiB slots
  EXPECT_EQ(pc.chunk_bytes, 128u << 10);
  // Then a launch's cap: 2 ranks cut 1 GiB into 16 parts, where the PCIe rule gave 2.
  EXPECT_EQ(p2p_nparts(p2p_channels_for_launch(pcie, 2, 32), 2, size_t{1} << 30), 2);
  EXPECT_EQ(p2p_nparts(p2p_channels_for_launch(p2p_channels_sharing_gpu(pcie, 4 << 20), 2, 32), 2, size_t{1} << 30), 16);
}

// The CUDA backend's launches carry 32 blocks, a block per part: the parts per peer are capped so that
// every peer's parts both ways fit, whatever the group holds.
TEST(P2pChannels, PartsFitOneLaunch) {
  const P2pChannels one{32, 32, 128u << 10, false};
  // The largest power of two with 2 (n - 1) x cap <= 32.
  const int want_cap[] = {0, 0, 16, 8, 4, 4, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  for (int n = 2; n <= 18; ++n) {
    const P2pChannels pc = p2p_channels_for_launch(one, n, 32);
    EXPECT_EQ(pc.per_peer, want_cap[n]) << n << " ranks";
    EXPECT_EQ(pc.nchannels, 32);
    EXPECT_EQ(pc.chunk_bytes, one.chunk_bytes);
    // An all-to-all of any size: every peer's parts, sent and received, fit one launch (up to 16 peers).
    for (size_t bytes : {size_t{0}, size_t{1}, size_t{65537}, size_t{1} << 20, size_t{1} << 30}) {
      const int blocks = 2 * (n - 1) * p2p_nparts(pc, n, bytes);
      if (n <= 17) {
        EXPECT_LE(blocks, 32) << n << " ranks, " << bytes << " bytes";
      }
    }
  }
  // Ranks sharing a GPU keep fewer blocks each (CUDA's channel_cap: 132 SMs over 8 ranks, 16): 8 ranks
  // then get 1 part per peer, so an all-to-all launches 14 blocks per rank, 112 in all, which fit.
  EXPECT_EQ(p2p_channels_for_launch(one, 8, 16).per_peer, 1);
  EXPECT_LE(2 * 7 * p2p_nparts(p2p_channels_for_launch(one, 8, 16), 8, size_t{1} << 30), 16);
  EXPECT_EQ(p2p_channels_for_launch(one, 4, 32).per_peer, 4);  // 4 ranks: 33 each, the launch's 32 rule
  // Never more than NCCL's own per-peer channels.
  EXPECT_EQ(p2p_channels_for_launch(P2pChannels{8, 2, 128u << 10, false}, 2, 32).per_peer, 2);
  EXPECT_EQ(p2p_channels_for_launch(one, 1, 32).per_peer, 1);
  // 2 ranks: a 1 GiB send is cut into 16 parts (NCCL: 32), a 1 MiB one too (16 x 64 KiB).
  EXPECT_EQ(p2p_nparts(p2p_channels_for_launch(one, 2, 32), 2, size_t{1} << 30), 16);
  EXPECT_EQ(p2p_nparts(p2p_channels_for_launch(one, 2, 32), 2, size_t{1} << 20), 16);
}

}  // namespace
}  // namespace cclab
