// Tests of the channel counts (runtime/graph/channels.cc): the channels NCCL would run on each
// preset (modelled_channels: the fewer of the ring and tree graphs' channels, doubled, as NCCL's
// connect.cc does) and the count a CUDA communicator runs (cuda_channel_count): the modelled count on a
// known machine, 16 on the virtual model, within NCCL_MIN/MAX_NCHANNELS, one launch's 32 blocks, and
// the blocks a GPU shared by several ranks can hold at once.
#include "graph/channels.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace cclab
