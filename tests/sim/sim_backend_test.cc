// CCLAB_BACKEND=sim: a program written against nccl.h runs unchanged on the simulated fabric. The
// process has one simulated world (4 ranks on dgx-h100, CCLAB_TOPO in the ctest entry); every test
// here uses it.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "cclab/cclab.h"
#include "nccl.h"

namespace {

constexpr int kRanks = 4;

struct World {
  ncclComm_t comms[kRanks];
  cudaStream_t streams[kRanks];
  World() {
    EXPECT_EQ(cclabSetBackend(cclabBackendSim), ncclSuccess);
    EXPECT_EQ(ncclCommInitAll(comms, kRanks, nullptr), ncclSuccess) << ncclGetLastError(nullptr);
    for (auto& s : streams) EXPECT_EQ(cclabStreamCreate(&s), ncclSuccess);
  }
};

World& world() {
  static World* w = new World();
  return *w;
}

double sim_now() {
  double us = -1;
  EXPECT_EQ(cclabSimTime(&us), ncclSuccess) << ncclGetLastError(nullptr);
  return us;
}

TEST(SimBackend, BackendIsSim) {
  world();
  cclabBackend_t b;
  ASSERT_EQ(cclabGetBackend(&b), ncclSuccess);
  EXPECT_EQ(b, cclabBackendSim);
}

// Every collective on the NULL stream (blocking) and on streams: results exact, simulated time moves.
TEST(SimBackend, CollectivesAreExactAndTakeSimulatedTime) {
  World& w = world();
  const size_t count = 100003;
  std::vector<std::vector<float>> in(kRanks), out(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    in[r].resize(count * kRanks);
    out[r].assign(count * kRanks, -1.0f);
    for (size_t i = 0; i < in[r].size(); ++i) in[r][i] = static_cast<float>((r + 1) * (i % 13));
  }
  for (int use_streams = 0; use_streams < 2; ++use_streams) {
    const double t0 = sim_now();
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    for (int r = 0; r < kRanks; ++r)
      ASSERT_EQ(ncclAllReduce(in[r].data(), out[r].data(), count, ncclFloat, ncclSum, w.comms[r],
                              use_streams ? w.streams[r] : nullptr),
                ncclSuccess);
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);
    if (use_streams) {
      for (auto s : w.streams) {
        ASSERT_EQ(cclabStreamSynchronize(s), ncclSuccess) << ncclGetLastError(nullptr);
      }
    }
    EXPECT_GT(sim_now(), t0);
    for (int r = 0; r < kRanks; ++r)
      for (size_t i = 0; i < count; ++i) ASSERT_EQ(out[r][i], 10.0f * (i % 13)) << r << " " << i;
  }
  // all_gather, reduce_scatter, broadcast, reduce (avg through PreMulSum on floats).
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < kRanks; ++r)
    ASSERT_EQ(ncclAllGather(in[r].data(), out[r].data(), count, ncclFloat, w.comms[r], nullptr), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);
  for (int r = 0; r < kRanks; ++r)
    for (int q = 0; q < kRanks; ++q)
      for (size_t i = 0; i < count; i += 97) ASSERT_EQ(out[r][q * count + i], in[q][i]);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < kRanks; ++r)
    ASSERT_EQ(ncclReduceScatter(in[r].data(), out[r].data(), count, ncclFloat, ncclAvg, w.comms[r], nullptr),
              ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);
  for (int r = 0; r < kRanks; ++r)
    for (size_t i = 0; i < count; i += 89) ASSERT_EQ(out[r][i], 2.5f * ((r * count + i) % 13)) << r << " " << i;
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < kRanks; ++r)
    ASSERT_EQ(ncclBroadcast(in[r].data(), out[r].data(), count, ncclFloat, 2, w.comms[r], nullptr), ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);
  for (int r = 0; r < kRanks; ++r) ASSERT_EQ(memcmp(out[r].data(), in[2].data(), count * sizeof(float)), 0);
}

// A compute kernel queued before an all_reduce on another stream, with a wait between the streams:
// the all_reduce starts after the kernel; without the wait the two overlap.
TEST(SimBackend, KernelsAndStreamWaits) {
  World& w = world();
  std::vector<cudaStream_t> compute(kRanks);
  for (auto& s : compute) ASSERT_EQ(cclabStreamCreate(&s), ncclSuccess);
  std::vector<std::vector<float>> buf(kRanks, std::vector<float>(1 << 20, 1.0f));
  auto step = [&](bool wait) -> double {
    const double t0 = sim_now();
    for (int r = 0; r < kRanks; ++r) EXPECT_EQ(cclabSimKernel(compute[r], r, 0, 200e-6), ncclSuccess);
    EXPECT_EQ(ncclGroupStart(), ncclSuccess);
    for (int r = 0; r < kRanks; ++r) {
      if (wait) {
        EXPECT_EQ(cclabStreamWaitStream(w.streams[r], compute[r]), ncclSuccess);
      }
      EXPECT_EQ(ncclAllReduce(buf[r].data(), buf[r].data(), buf[r].size(), ncclFloat, ncclSum, w.comms[r],
                              w.streams[r]),
                ncclSuccess);
    }
    EXPECT_EQ(ncclGroupEnd(), ncclSuccess);
    for (int r = 0; r < kRanks; ++r) {
      EXPECT_EQ(cclabStreamSynchronize(w.streams[r]), ncclSuccess) << ncclGetLastError(nullptr);
      EXPECT_EQ(cclabStreamSynchronize(compute[r]), ncclSuccess);
    }
    return sim_now() - t0;
  };
  const double overlapped = step(false), ordered = step(true);
  EXPECT_NEAR(overlapped, 200, 1.0);  // the 4 MiB all_reduce (~30 us) hides under the 200 us kernel
  EXPECT_GT(ordered, 200 + 10);       // kernel, then all_reduce
  for (auto s : compute) cclabStreamDestroy(s);
}

// A kernel on a GPU that no rank plays (dgx-h100 has 8 GPUs; the 4 ranks play 0..3).
TEST(SimBackend, KernelOnAnUnusedGpuSaysWhy) {
  World& w = world();
  EXPECT_EQ(cclabSimKernel(w.streams[0], 7, 0, 1e-6), ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("GPU 7 is not played"), std::string::npos);
}

// Queuing one rank's part only and synchronising deadlocks the simulated ranks: the error names the
// stuck waits (this leaves the world unusable, so it runs last, in a child process that starts afresh:
// the simulated world's engine thread does not survive a fork).
TEST(SimBackend, MissingRanksDeadlockWithAMessage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        World& w = world();
        std::vector<float> x(1 << 16, 1.0f);
        ncclResult_t r = ncclAllReduce(x.data(), x.data(), x.size(), ncclFloat, ncclSum, w.comms[0], w.streams[0]);
        if (r != ncclSuccess) exit(3);
        r = cclabStreamSynchronize(w.streams[0]);
        const std::string msg = ncclGetLastError(nullptr);
        exit(r != ncclSuccess && msg.find("deadlocked") != std::string::npos &&
                     msg.find("rank 0 channel") != std::string::npos
                 ? 0
                 : 4);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
