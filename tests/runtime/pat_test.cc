// PAT all_gather / reduce_scatter in the runtime (kernels/pat.h): on virtual machines of one GPU each, a
// PAT call moves data only between ranks at power-of-two distances, in the directions the schedule
// says, over many chunks per channel, in place and out of place, byte-exact; NCCL's enabling rules
// (NCCL_PAT_ENABLE, one GPU per node, no scaling ReduceScatter) hold through the API. The full
// datatype x op matrix is collectives_test run with NCCL_ALGO=PAT (tests/runtime/CMakeLists.txt).
#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "../base/test_env.h"
#include "comm_fixture.h"

using cclab_test::Comms;
using cclab_test::run_ranks;

namespace {

// Variables set for the object's lifetime, restored after (tests/base/test_env.h).
using Env = cclab::testing_env::ScopedEnv;

using Recorder = cclab_test::EventRecorder;

// The distances d with 2^d < n, as ranks: {2^d mod n}.
std::set<int> pat_distances(int n) {
  std::set<int> s;
  for (int p = 1; p < n; p *= 2) s.insert(p);
  return s;
}

// n ranks on n virtual machines (NCCL's rule turns PAT on), a 64 KiB FIFO (8 KiB chunks: a channel's
// share is many chunks, one block per FIFO step), 2 channels.
void check_pat(int n) {
  SCOPED_TRACE("nranks " + std::to_string(n));
  const std::string machines = "virtual:" + std::to_string(n);
  Env env{{"CCLAB_TOPO", machines.c_str()}, {"NCCL_ALGO", "PAT"}, {"NCCL_BUFFSIZE", "65536"},
          {"CCLAB_MIN_CHANNEL_BYTES", "512"}, {"CCLAB_TIMEOUT", "60"}};
  const int nch = 2;
  Comms comms(n, nch);
  ASSERT_NE(comms[0], nullptr);
  std::vector<Recorder> rec(n);
  for (int r = 0; r < n; ++r) NCCL_OK(cclabCommSetObserver(comms[r], Recorder::fn, &rec[r]));
  const size_t count = 50001;  // per rank: 195 KiB of floats, ~12 chunks per channel
  auto value = [](int r, size_t i) { return static_cast<float>((i * 7 + static_cast<size_t>(r) * 5) % 11); };
  for (bool in_place : {false, true}) {
    SCOPED_TRACE(in_place ? "in place" : "out of place");
    // all_gather
    std::vector<std::vector<float>> in(n, std::vector<float>(count)), out(n, std::vector<float>(count * n, -1.0f));
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < count; ++i) (in_place ? out[r][r * count + i] : in[r][i]) = value(r, i);
    run_ranks(n, [&](int r) {
      const float* src = in_place ? out[r].data() + r * count : in[r].data();
      NCCL_OK(ncclAllGather(src, out[r].data(), count, ncclFloat, comms[r], nullptr));
    });
    for (int r = 0; r < n; ++r)
      for (size_t e = 0; e < count * n; ++e)
        ASSERT_EQ(out[r][e], value(static_cast<int>(e / count), e % count)) << "all_gather rank " << r << " element " << e;
    // reduce_scatter
    std::vector<std::vector<float>> rin(n, std::vector<float>(count * n)), rout(n, std::vector<float>(count, -1.0f));
    for (int r = 0; r < n; ++r)
      for (size_t e = 0; e < count * n; ++e) rin[r][e] = value(r, e);
    run_ranks(n, [&](int r) {
      float* dst = in_place ? rin[r].data() + r * count : rout[r].data();
      NCCL_OK(ncclReduceScatter(rin[r].data(), dst, count, ncclFloat, ncclSum, comms[r], nullptr));
    });
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < count; ++i) {
        float want = 0;
        for (int q = 0; q < n; ++q) want += value(q, r * count + i);
        const float got = in_place ? rin[r][r * count + i] : rout[r][i];
        ASSERT_EQ(got, want) << "reduce_scatter rank " << r << " element " << i;
      }
  }
  // Every transfer goes to rank - 2^d and comes from rank + 2^d (all_gather), the other way round for
  // reduce_scatter, and every distance is used on every channel.
  const std::set<int> dist = pat_distances(n);
  for (int r = 0; r < n; ++r) {
    std::set<std::pair<int, int>> used;  // (channel, distance)
    ASSERT_FALSE(rec[r].events.empty());
    for (const cclabStepEvent_t& e : rec[r].events) {
      ASSERT_TRUE(e.coll == cclabCollAllGather || e.coll == cclabCollReduceScatter);
      const bool ag = e.coll == cclabCollAllGather;
      if (e.sendPeer >= 0) {
        const int d = ag ? (r - e.sendPeer + n) % n : (e.sendPeer - r + n) % n;
        EXPECT_TRUE(dist.count(d)) << "rank " << r << " sent to " << e.sendPeer << (ag ? " (all_gather)" : "");
        used.insert({e.channel, d});
      }
      if (e.recvPeer >= 0) {
        const int d = ag ? (e.recvPeer - r + n) % n : (r - e.recvPeer + n) % n;
        EXPECT_TRUE(dist.count(d)) << "rank " << r << " received from " << e.recvPeer << (ag ? " (all_gather)" : "");
      }
    }
    EXPECT_EQ(used.size(), dist.size() * nch) << "rank " << r;
  }
}

TEST(Pat, PowerOfTwoPeersManyChunksInAndOutOfPlace) {
  for (int n : {8, 6}) check_pat(n);
}

// NCCL's rules through the API: 4 ranks on one virtual machine have no PAT (one GPU per node), so
// NCCL_ALGO=PAT leaves all_gather nothing to run; NCCL_PAT_ENABLE=1 turns it on. A ReduceScatter with
// ncclAvg is never PAT (NCCL's PAT ReduceScatter does not scale): refused under NCCL_ALGO=PAT, run by
// the ring when the tuner chooses.
TEST(Pat, EnablingRules) {
  const int n = 4;
  const size_t count = 1000;
  std::vector<std::vector<float>> in(n, std::vector<float>(count * n, 1.0f)), out(n, std::vector<float>(count * n));
  std::string last_error;  // rank 0's ncclGetLastError (per thread) after its call
  auto all_gather = [&](const Comms& comms) {
    std::vector<ncclResult_t> res(n);
    run_ranks(n, [&](int r) {
      res[r] = ncclAllGather(in[r].data(), out[r].data(), count, ncclFloat, comms[r], nullptr);
      if (r == 0) last_error = ncclGetLastError(nullptr);
    });
    return res[0];
  };
  {
    Env env{{"CCLAB_TOPO", "virtual"}, {"NCCL_ALGO", "PAT"}, {"CCLAB_TIMEOUT", "20"}};
    Comms comms(n, 1);
    ASSERT_NE(comms[0], nullptr);
    EXPECT_EQ(all_gather(comms), ncclInvalidUsage);
    EXPECT_NE(last_error.find("no algorithm/protocol is available"), std::string::npos) << last_error;
  }
  {
    Env env{{"CCLAB_TOPO", "virtual"}, {"NCCL_ALGO", "PAT"}, {"NCCL_PAT_ENABLE", "1"}, {"CCLAB_TIMEOUT", "20"}};
    Comms comms(n, 1);
    ASSERT_NE(comms[0], nullptr);
    EXPECT_EQ(all_gather(comms), ncclSuccess);
    EXPECT_EQ(out[2][count * n - 1], 1.0f);
    std::vector<ncclResult_t> res(n);
    run_ranks(n, [&](int r) {
      res[r] = ncclReduceScatter(in[r].data(), out[r].data(), count, ncclFloat, ncclAvg, comms[r], nullptr);
    });
    EXPECT_EQ(res[0], ncclInvalidUsage);
  }
  {
    Env env{{"CCLAB_TOPO", "virtual:4"}, {"CCLAB_TIMEOUT", "20"}};
    Comms comms(n, 1);
    ASSERT_NE(comms[0], nullptr);
    run_ranks(n, [&](int r) {
      NCCL_OK(ncclReduceScatter(in[r].data(), out[r].data(), count, ncclFloat, ncclAvg, comms[r], nullptr));
    });
    for (int r = 0; r < n; ++r) EXPECT_EQ(out[r][count - 1], 1.0f);
  }
}

// Ranks that disagree on the count of a PAT call (rank 0 passes half, so its plan has other steps and
// places): the receivers' size check (the sender records how far it filled each step) catches it at
// once - "do all ranks call the operation with the same count" - and the others are stopped; no hang,
// no crash. Small counts (blocks side by side in a FIFO step) and large ones (many chunks), both
// collectives.
TEST(Pat, MismatchedCountsFailWithAnError) {
  const int n = 5;
  Env env{{"CCLAB_TOPO", "virtual:5"}, {"NCCL_ALGO", "PAT"}, {"NCCL_BUFFSIZE", "65536"}, {"CCLAB_TIMEOUT", "5"}};
  for (size_t count : {size_t{64}, size_t{20000}})
    for (bool gather : {true, false}) {
      SCOPED_TRACE(std::string(gather ? "all_gather" : "reduce_scatter") + " count " + std::to_string(count));
      Comms comms(n, 1);
      ASSERT_NE(comms[0], nullptr);
      std::vector<std::vector<float>> in(n, std::vector<float>(count * n, 1.0f)), out(n, std::vector<float>(count * n));
      std::vector<ncclResult_t> res(n);
      std::vector<std::string> msg(n);
      const double t0 = cclab_test::now_s();
      run_ranks(n, [&](int r) {
        const size_t c = r == 0 ? count / 2 : count;
        res[r] = gather ? ncclAllGather(in[r].data(), out[r].data(), c, ncclFloat, comms[r], nullptr)
                        : ncclReduceScatter(in[r].data(), out[r].data(), c, ncclFloat, ncclSum, comms[r], nullptr);
        msg[r] = ncclGetLastError(comms[r]);
      });
      EXPECT_LT(cclab_test::now_s() - t0, 30.0);
      bool seen = false;  // some rank saw the cause itself (the slice sizes), the others were stopped
      for (int r = 0; r < n; ++r) {
        EXPECT_NE(res[r], ncclSuccess) << "rank " << r;
        const bool cause = msg[r].find("same count") != std::string::npos;
        const bool stopped = msg[r].find("failed in this operation and stopped it") != std::string::npos;
        EXPECT_TRUE(cause || stopped) << "rank " << r << ": " << msg[r];
        seen |= cause;
      }
      EXPECT_TRUE(seen);
    }
}

}  // namespace
