// CCLAB_BACKEND=sim without CCLAB_TOPO: the communicator describes the machine the simulation runs
// (dgx-h100 with enough machines for its ranks), on that machine's channels, in its INFO log and through
// cclabCommChannels - not the host backend's virtual machine and its 2 channels. ctest runs it twice:
// as is, and with NCCL_MAX_NCHANNELS=4 (the simulated world and the communicator both honour it).
// NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS and NCCL_DEBUG_FILE come from the ctest entry.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cclab/cclab.h"
#include "nccl.h"

namespace {

std::string read_log() {
  const char* path = std::getenv("NCCL_DEBUG_FILE");
  if (path == nullptr) return "";
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

// 16 ranks: two simulated DGX H100s (8 ring channels found across machines, doubled: 16).
TEST(SimBackendLog, CommunicatorDescribesTheSimulatedMachine) {
  ASSERT_EQ(std::getenv("CCLAB_TOPO"), nullptr) << "this test checks the sim backend's default model";
  const char* max_env = std::getenv("NCCL_MAX_NCHANNELS");
  const int want = max_env != nullptr ? std::min(16, std::atoi(max_env)) : 16;
  ASSERT_EQ(cclabSetBackend(cclabBackendSim), ncclSuccess);
  constexpr int kRanks = 16;
  ncclComm_t comms[kRanks];
  ASSERT_EQ(ncclCommInitAll(comms, kRanks, nullptr), ncclSuccess) << ncclGetLastError(nullptr);
  int nch = -1;
  ASSERT_EQ(cclabCommChannels(comms[0], &nch), ncclSuccess);
  EXPECT_EQ(nch, want);

  // An all_reduce runs and takes simulated time.
  std::vector<std::vector<float>> buf(kRanks, std::vector<float>(1 << 16, 1.0f));
  double t0 = -1, t1 = -1;
  ASSERT_EQ(cclabSimTime(&t0), ncclSuccess);
  ASSERT_EQ(ncclGroupStart(), ncclSuccess);
  for (int r = 0; r < kRanks; ++r)
    ASSERT_EQ(ncclAllReduce(buf[r].data(), buf[r].data(), buf[r].size(), ncclFloat, ncclSum, comms[r], nullptr),
              ncclSuccess);
  ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);
  ASSERT_EQ(cclabSimTime(&t1), ncclSuccess);
  EXPECT_GT(t1, t0);
  EXPECT_EQ(buf[5][100], 16.0f);

  // A communicator on machine 1's GPUs models the same machine and channels.
  ncclComm_t sub[8];
  const int devs[8] = {8, 9, 10, 11, 12, 13, 14, 15};
  ASSERT_EQ(ncclCommInitAll(sub, 8, devs), ncclSuccess) << ncclGetLastError(nullptr);
  ASSERT_EQ(cclabCommChannels(sub[0], &nch), ncclSuccess);
  EXPECT_EQ(nch, want);

  // NVLS where NCCL runs it: 16 MiB is NVLS-Tree on the two machines and NVLS on one (the switch hosts the
  // first world added serve the second's), with exact sums.
  const size_t big = size_t{4} << 20;  // floats: 16 MiB
  auto all_reduce = [&](ncclComm_t* cs, int n) -> double {
    std::vector<std::vector<float>> b(n, std::vector<float>(big));
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < big; ++i) b[r][i] = static_cast<float>((r + 1) * (i % 7));
    double a = -1, z = -1;
    EXPECT_EQ(cclabSimTime(&a), ncclSuccess);
    EXPECT_EQ(ncclGroupStart(), ncclSuccess);
    for (int r = 0; r < n; ++r)
      EXPECT_EQ(ncclAllReduce(b[r].data(), b[r].data(), big, ncclFloat, ncclSum, cs[r], nullptr), ncclSuccess);
    EXPECT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);
    EXPECT_EQ(cclabSimTime(&z), ncclSuccess);
    EXPECT_GT(z, a);
    const float ranks_sum = n * (n + 1) / 2.0f;
    for (int r = 0; r < n; r += 3)
      for (size_t i = 0; i < big; i += 4099) EXPECT_EQ(b[r][i], ranks_sum * (i % 7)) << n << " ranks, rank " << r;
    return z - a;
  };
  const double two = all_reduce(comms, kRanks), one = all_reduce(sub, 8);
  std::printf("16 MiB all_reduce: %.2f us on 16 ranks, %.2f us on 8\n", two, one);
  // Ranks that do not play their own-numbered GPU (a reversed device list) and a communicator on GPUs
  // 4-7 only: NVLS's group is then the ranks in rank order, every one a head, and the sums are exact
  // (before: the schedule refused every rank's part in silence, and GPUs 4-7 had no NVLS).
  {
    ncclComm_t rev[8], upper[4];
    const int rdevs[8] = {15, 14, 13, 12, 11, 10, 9, 8}, udevs[4] = {12, 13, 14, 15};
    ASSERT_EQ(ncclCommInitAll(rev, 8, rdevs), ncclSuccess) << ncclGetLastError(nullptr);
    ASSERT_EQ(ncclCommInitAll(upper, 4, udevs), ncclSuccess) << ncclGetLastError(nullptr);
    EXPECT_NEAR(all_reduce(rev, 8), one, 0.01 * one);  // the same machine and algorithm: the same time
    all_reduce(upper, 4);
    for (ncclComm_t c : rev) ncclCommDestroy(c);
    for (ncclComm_t c : upper) ncclCommDestroy(c);
  }

  // NVLS on streams: several all_reduces queued back to back (each rank's next one may start before
  // another rank's last has ended), out of place and in place, sum over float and max over int32 (NVLS's
  // multimem reductions), and avg, which NVLS does not run (Ring does): every result exact.
  {
    constexpr int n = 8;
    const size_t count = (size_t{4} << 20) / sizeof(float) + 3;  // 4 MiB and an odd tail
    std::vector<cudaStream_t> st(n);
    for (auto& x : st) ASSERT_EQ(cclabStreamCreate(&x), ncclSuccess);
    std::vector<std::vector<float>> in(n), out(n), avg(n);
    std::vector<std::vector<int32_t>> imax(n);
    for (int r = 0; r < n; ++r) {
      in[r].resize(count);
      for (size_t i = 0; i < count; ++i) in[r][i] = static_cast<float>((r + 1) * (i % 11));
      out[r].assign(count, -1.0f);
      avg[r] = in[r];
      imax[r].resize(count);
      for (size_t i = 0; i < count; ++i) imax[r][i] = static_cast<int32_t>((i * 7 + r * 13) % 1001) - 500;
    }
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    for (int r = 0; r < n; ++r) {
      ASSERT_EQ(ncclAllReduce(in[r].data(), out[r].data(), count, ncclFloat, ncclSum, sub[r], st[r]), ncclSuccess);
      ASSERT_EQ(ncclAllReduce(out[r].data(), out[r].data(), count, ncclFloat, ncclSum, sub[r], st[r]), ncclSuccess);
      ASSERT_EQ(ncclAllReduce(imax[r].data(), imax[r].data(), count, ncclInt32, ncclMax, sub[r], st[r]), ncclSuccess);
      ASSERT_EQ(ncclAllReduce(avg[r].data(), avg[r].data(), count, ncclFloat, ncclAvg, sub[r], st[r]), ncclSuccess);
    }
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);
    for (auto x : st) ASSERT_EQ(cclabStreamSynchronize(x), ncclSuccess) << ncclGetLastError(nullptr);
    const float ranks_sum = n * (n + 1) / 2.0f;
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < count; ++i) {
        ASSERT_EQ(out[r][i], n * ranks_sum * (i % 11)) << "rank " << r << " element " << i;
        int32_t want = -1000;
        for (int q = 0; q < n; ++q) want = std::max(want, static_cast<int32_t>((i * 7 + q * 13) % 1001) - 500);
        ASSERT_EQ(imax[r][i], want) << "rank " << r << " element " << i;
        ASSERT_EQ(avg[r][i], ranks_sum / n * (i % 11)) << "rank " << r << " element " << i;
      }
    for (auto x : st) cclabStreamDestroy(x);
  }

  const std::string log = read_log();
  ASSERT_FALSE(log.empty()) << "NCCL_DEBUG_FILE was not written";
  EXPECT_TRUE(contains(log, "AllReduce: 16777216 Bytes -> Algo NVLSTree proto Simple")) << log.substr(0, 4000);
  EXPECT_TRUE(contains(log, "AllReduce: 16777216 Bytes -> Algo NVLS proto Simple")) << log.substr(0, 4000);
  EXPECT_TRUE(contains(log, "AllReduce: 4194316 Bytes -> Algo NVLS proto Simple")) << log.substr(0, 4000);
  EXPECT_TRUE(contains(log, "AllReduce: 4194316 Bytes -> Algo Ring")) << log.substr(0, 4000);  // avg
  EXPECT_TRUE(contains(log, "Topology dgx-h100: 8x H100-SXM5")) << log.substr(0, 2000);
  EXPECT_TRUE(contains(log, "16 ranks on 2 machines")) << log.substr(0, 2000);
  EXPECT_FALSE(contains(log, "Topology virtual")) << log.substr(0, 2000);
  EXPECT_TRUE(contains(log, "Channel 00/" + std::to_string(want) + " :")) << log.substr(0, 4000);
  EXPECT_TRUE(contains(log, "nChannels " + std::to_string(want) + " ")) << log.substr(0, 4000);
  // Ring channel 0 (NET/0 GPU/0 GPU/7 ... GPU/1 NET/0) leaves machine 0 from rank 1 through NET/0.
  EXPECT_TRUE(contains(log, "Channel 00/" + std::to_string(want) + " : 1[1] -> 8[8] via NET/0 -> NET/0 (simulated)"))
      << log.substr(0, 4000);
  EXPECT_TRUE(contains(log, "sim backend: 16 ranks on 8x H100-SXM5")) << log.substr(0, 4000);
  // The call's choice, on at most the communicator's channels (NCCL_DEBUG_SUBSYS=TUNING).
  const size_t at = log.find("AllReduce: 262144 Bytes -> Algo ");
  ASSERT_NE(at, std::string::npos) << log.substr(0, 4000);
  const size_t hi = log.find("channel{Lo..Hi}={0..", at);
  ASSERT_NE(hi, std::string::npos);
  EXPECT_LT(std::atoi(log.c_str() + hi + 20), want) << log.substr(at, 200);
  EXPECT_TRUE(contains(log.substr(at, 200), "(simulated)")) << log.substr(at, 200);
}

}  // namespace
