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
  // Channels: round 1 of 32 starts at bit-reversed 1 = 16, round 2 at 8.
  EXPECT_EQ(p2p_channel_for_part(32, 1, 0), 16);
  EXPECT_EQ(p2p_channel_for_part(32, 1, 3), 19);
  EXPECT_EQ(p2p_channel_for_part(32, 2, 0), 8);
  EXPECT_EQ(p2p_channel_for_part(32, 3, 15), (24 + 15) & 31);
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
