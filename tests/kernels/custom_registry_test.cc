// The registry of custom algorithms built into the CUDA backend's kernels (kernels/cuda/launch.h:
// custom_kernel), as kernels/CMakeLists.txt generates it from a list of schedule files: here the
// cclab_custom_kernels_check library, built from the documented TwoShot and lab 8's reference solution
// by the same CMake function as CCLAB_CUSTOM_ALGOS. Each entry is the file's own algorithm (name,
// supports, peers - the runtime's view of it on the CUDA backend), in the listed order; its launch and
// launch function refuses a launch configuration or a datatype no kernel of it runs, before any GPU work.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/cuda/launch.h"

namespace cclab {
namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

TEST(CustomKernels, TheRegistryListsTheBuiltInFilesInOrder) {
  ASSERT_EQ(cuda::custom_kernel_count(), 2);
  const cuda::CustomKernel* a = cuda::custom_kernel(0);
  const cuda::CustomKernel* b = cuda::custom_kernel(1);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(cuda::custom_kernel(2), nullptr);
  EXPECT_EQ(cuda::custom_kernel(-1), nullptr);
  EXPECT_STREQ(a->name, "TwoShot");
  EXPECT_TRUE(ends_with(a->source, "/docs/examples/algorithms/two_shot.cc")) << a->source;
  EXPECT_STREQ(b->name, "MyAllReduce");
  EXPECT_TRUE(ends_with(b->source, "/labs/solutions/08-your-own-algorithm/my_allreduce.cc")) << b->source;
}

TEST(CustomKernels, EntriesCarryTheSchedulesOwnSupportsAndPeers) {
  const CustomTopo topo{6, 1, 6};
  for (int i = 0; i < 2; ++i) {
    const cuda::CustomKernel* k = cuda::custom_kernel(i);
    SCOPED_TRACE(k->name);
    EXPECT_EQ(k->supports(CollKind::kAllReduce, topo), nullptr);
    EXPECT_NE(k->supports(CollKind::kBroadcast, topo), nullptr);
  }
  // TwoShot: every other rank. MyAllReduce on 6 ranks (p2 = 4, rem = 2): rank 0 pairs with 1 and sits
  // out; rank 1 (virtual 0) pairs with 0 and talks to virtual 1 and 2 (ranks 3 and 4).
  std::vector<int> out(16, -1);
  EXPECT_EQ(cuda::custom_kernel(0)->peers(topo, 2, out.data(), 16), 5);
  EXPECT_EQ(cuda::custom_kernel(1)->peers(topo, 0, out.data(), 16), 1);
  EXPECT_EQ(out[0], 1);
  ASSERT_EQ(cuda::custom_kernel(1)->peers(topo, 1, out.data(), 16), 3);
  EXPECT_EQ(out[0], 0);
  EXPECT_EQ(out[1], 3);
  EXPECT_EQ(out[2], 4);
}

TEST(CustomKernels, LaunchesRefuseWhatNoKernelRuns) {
  cuda::LaunchArgs args{};
  args.nblocks = 1;
  args.type = 7;  // float
  const cuda::CustomKernel* k = cuda::custom_kernel(0);
  EXPECT_NE(k->launch(args, 0, nullptr), 0) << "a block of 0 threads is refused before anything runs";
  args.type = 12;
  EXPECT_NE(k->launch(args, 256, nullptr), 0) << "no kernel for ncclDataType_t 12";
}

}  // namespace
}  // namespace cclab
