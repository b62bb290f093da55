// Tree all_reduce in the runtime: the trees a communicator builds over (virtual) machines, that a tree
// all_reduce moves data only along them, that NCCL_ALGO selects and rejects as NCCL's syntax says, and
// ncclGroupSimulateEnd's estimate. The byte-exact matrix for Tree x {Simple, LL, LL128} is
// collectives_test run with NCCL_ALGO=allreduce:tree (tests/runtime/CMakeLists.txt).
//
// Each test sets the environment it needs, then forgets the cached parameters (the runtime reads
// each variable once per process).
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "base/param.h"
#include "../base/test_env.h"
#include "comm_fixture.h"
#include "kernels/trees.h"

using cclab_test::Comms;
using cclab_test::run_ranks;

namespace {

// Variables set for the object's lifetime, restored after (tests/base/test_env.h).
using Env = cclab::testing_env::ScopedEnv;

using Recorder = cclab_test::EventRecorder;

// 8 ranks on 4 virtual machines of 2: every channel's tree is the double binary tree over machines
// (kernels/trees.h dtree) with the chain local 0 -> local 1 inside each machine, tree 0 on the first
// half of the channels and tree 1 on the second; a tree all_reduce sends only along tree links, up
// then down, and every rank ends with the sum.
TEST(Tree, AllReduceFollowsTheDoubleBinaryTree) {
  Env env{{"CCLAB_TOPO", "virtual:4"}, {"NCCL_ALGO", "allreduce:tree"}, {"CCLAB_MIN_CHANNEL_BYTES", "512"},
          {"CCLAB_TIMEOUT", "60"}};
  const int n = 8, nch = 2, ppn = 2;
  Comms comms(n, nch);
  ASSERT_NE(comms[0], nullptr);
  std::vector<Recorder> rec(n);
  for (int r = 0; r < n; ++r) NCCL_OK(cclabCommSetObserver(comms[r], Recorder::fn, &rec[r]));

  // The tree each channel reports is NCCL's, over machines, with the chain inside.
  for (int c = 0; c < nch; ++c)
    for (int r = 0; r < n; ++r) {
      int tree = -1, up = -2, down[3] = {-2, -2, -2};
      NCCL_OK(cclabCommTree(comms[r], c, &tree, &up, down));
      EXPECT_EQ(tree, c == 0 ? 0 : 1);
      cclab::TreeLinks want;
      cclab::node_tree_with_chain(n / ppn, ppn, r, tree, &want);
      EXPECT_EQ(up, want.up) << "rank " << r << " channel " << c;
      for (int i = 0; i < 3; ++i) EXPECT_EQ(down[i], want.down[i]) << "rank " << r << " channel " << c << " down " << i;
    }

  const size_t count = 100003;  // one chunk per channel; ManyChunksInPlaceAverage pipelines many
  std::vector<std::vector<float>> in(n, std::vector<float>(count)), out(n, std::vector<float>(count, -1.0f));
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < count; ++i) in[r][i] = static_cast<float>((i * 7 + r * 3) % 13);
  run_ranks(n, [&](int r) { NCCL_OK(ncclAllReduce(in[r].data(), out[r].data(), count, ncclFloat, ncclSum, comms[r], nullptr)); });
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < count; ++i) {
      float want = 0;
      for (int q = 0; q < n; ++q) want += in[q][i];
      ASSERT_EQ(out[r][i], want) << "rank " << r << " element " << i;
    }

  for (int r = 0; r < n; ++r) {
    std::map<int, std::set<int>> allowed;  // channel -> tree neighbours
    for (int c = 0; c < nch; ++c) {
      cclab::TreeLinks t;
      cclab::node_tree_with_chain(n / ppn, ppn, r, c == 0 ? 0 : 1, &t);
      if (t.up >= 0) allowed[c].insert(t.up);
      for (int i = 0; i < t.ndown; ++i) allowed[c].insert(t.down[i]);
    }
    bool saw_up = false, saw_down = false;
    ASSERT_FALSE(rec[r].events.empty());
    for (const cclabStepEvent_t& e : rec[r].events) {
      ASSERT_EQ(e.coll, cclabCollAllReduce);
      if (e.sendPeer >= 0) {
        EXPECT_TRUE(allowed[e.channel].count(e.sendPeer)) << "rank " << r << " sent to " << e.sendPeer;
      }
      if (e.recvPeer >= 0) {
        EXPECT_TRUE(allowed[e.channel].count(e.recvPeer)) << "rank " << r << " got from " << e.recvPeer;
      }
      saw_up |= e.prim == cclabPrimRecvReduceSend || e.prim == cclabPrimSend || e.prim == cclabPrimRecvReduceCopy;
      saw_down |= e.prim == cclabPrimRecvCopySend || e.prim == cclabPrimRecv || e.prim == cclabPrimSendFromOutput;
      EXPECT_NE(e.prim, cclabPrimRecvReduceCopySend) << "a ring primitive in a tree all_reduce";
    }
    EXPECT_TRUE(saw_up && saw_down) << "rank " << r;
  }
  // The root of each tree reduces (recvReduceCopy) and then sends its output down.
  for (int c = 0; c < nch; ++c) {
    const int root = cclab::dtree_root(n / ppn, c == 0 ? 0 : 1) * ppn;
    bool reduced = false, sent = false;
    for (const cclabStepEvent_t& e : rec[root].events) {
      if (e.channel != c) continue;
      reduced |= e.prim == cclabPrimRecvReduceCopy;
      sent |= e.prim == cclabPrimSendFromOutput;
    }
    EXPECT_TRUE(reduced && sent) << "root " << root << " of channel " << c;
  }
}

// Two in-place all_reduces on every rank, of `small` then `large` floats, each rank's buffer all
// rank + 1; checks the sums and returns rank 0's buffer.
std::vector<float> small_then_large(const Comms& comms, size_t small, size_t large) {
  const int n = comms.size();
  std::vector<std::vector<float>> buf(n, std::vector<float>(large));
  for (size_t count : {small, large}) {
    for (int r = 0; r < n; ++r) std::fill(buf[r].begin(), buf[r].end(), static_cast<float>(r + 1));
    run_ranks(n, [&](int r) {
      NCCL_OK(ncclAllReduce(buf[r].data(), buf[r].data(), count, ncclFloat, ncclSum, comms[r], nullptr));
    });
    for (int r = 0; r < n; ++r) EXPECT_EQ(buf[r][count - 1], n * (n + 1) / 2.0f) << "count " << count;
  }
  return buf[0];
}

// The host backend without CCLAB_TOPO models the host (graph/tuning.h, HostCosts): its trees give every
// rank up to 3 children (the kernels' fan-in), channel c's rooted at rank c, so 4 ranks are a root and
// 3 leaves; small all_reduces run as Tree/Simple (fewer hops than the ring on any number of cores: 2
// against 6), large ones as Ring/Simple, and ncclGroupSimulateEnd answers with the host model's time;
// CCLAB_TOPO=virtual keeps NCCL's model of PCIe GPUs (Ring/LL, 6.6 + 6 x 1.0 us at 8 B).
TEST(Tree, HostModelWithoutTopology) {
  for (const char* v : {"CCLAB_TOPO", "NCCL_TOPO_FILE", "CCLAB_MIN_CHANNEL_BYTES", "NCCL_ALGO", "NCCL_PROTO"}) unsetenv(v);
  Env env{{"CCLAB_TIMEOUT", "20"}};
  const int n = 4;
  Comms comms(n, 2);
  ASSERT_NE(comms[0], nullptr);
  for (int c = 0; c < 2; ++c)
    for (int r = 0; r < n; ++r) {
      int tree = -1, up = -2, down[3] = {-2, -2, -2};
      NCCL_OK(cclabCommTree(comms[r], c, &tree, &up, down));
      // Channel c: rank c is the root and the others its children, in rank order from c on.
      EXPECT_EQ(up, r == c ? -1 : c) << "rank " << r << " channel " << c;
      for (int i = 0; i < 3; ++i) EXPECT_EQ(down[i], r == c ? (c + 1 + i) % n : -1) << "rank " << r << " channel " << c;
    }
  std::vector<Recorder> rec(n);
  for (int r = 0; r < n; ++r) NCCL_OK(cclabCommSetObserver(comms[r], Recorder::fn, &rec[r]));
  std::vector<float> any = small_then_large(comms, 2, 1 << 20);
  const int root = 0;  // channel 0's
  bool tree_small = false, ring_small = false, ring_big = false;
  for (const cclabStepEvent_t& e : rec[root].events) {
    tree_small |= e.opCount == 0 && e.prim == cclabPrimSendFromOutput;
    ring_small |= e.opCount == 0 && e.prim == cclabPrimRecvReduceCopySend;
    ring_big |= e.opCount == 1 && e.prim == cclabPrimRecvReduceCopySend;
    if (e.opCount == 0) {
      EXPECT_EQ(e.channel, 0) << "the small call runs on one channel";
      EXPECT_LE(e.bytes, 8u);
    }
  }
  EXPECT_TRUE(tree_small && !ring_small && ring_big);

  auto estimate = [&](ncclComm_t comm) {
    ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
    EXPECT_EQ(ncclGroupStart(), ncclSuccess);
    EXPECT_EQ(ncclAllReduce(any.data(), any.data(), 2, ncclFloat, ncclSum, comm, nullptr), ncclSuccess);
    EXPECT_EQ(ncclGroupSimulateEnd(&info), ncclSuccess) << ncclGetLastError(nullptr);
    return info.estimatedTime;
  };
  const float host = estimate(comms[0]);
  Env virt{{"CCLAB_TOPO", "virtual"}};
  Comms gpus(n, 2);
  ASSERT_NE(gpus[0], nullptr);
  const float nccl = estimate(gpus[0]);
  EXPECT_NEAR(nccl, 12.6f, 0.01f);
  EXPECT_GT(host, 0.0f);
  EXPECT_LT(host, 6.0f);  // 3.89 us on 2 cores, 1.01 us with a core per rank
}

// A small FIFO makes every channel's share several chunks long: the pipeline through the tree, and
// in-place, with an average (the post op is applied once, at the root).
TEST(Tree, ManyChunksInPlaceAverage) {
  for (const char* proto : {"Simple", "LL", "LL128"}) {
    SCOPED_TRACE(proto);
    Env env{{"CCLAB_TOPO", "virtual:3"}, {"NCCL_ALGO", "allreduce:tree"}, {"NCCL_PROTO", proto},
            {"NCCL_BUFFSIZE", "65536"}, {"NCCL_LL_BUFFSIZE", "16384"}, {"NCCL_LL128_BUFFSIZE", "61440"},
            {"CCLAB_MIN_CHANNEL_BYTES", "512"}, {"CCLAB_TIMEOUT", "60"}};
    const int n = 5;
    Comms comms(n, 2);
    ASSERT_NE(comms[0], nullptr);
    const size_t count = 200001;
    std::vector<std::vector<double>> buf(n, std::vector<double>(count));
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < count; ++i) buf[r][i] = static_cast<double>(((i + r) % 7) * n);
    std::vector<double> want(count, 0.0);
    for (size_t i = 0; i < count; ++i) {
      double s = 0;
      for (int r = 0; r < n; ++r) s += buf[r][i] / n;
      want[i] = s;
    }
    run_ranks(n, [&](int r) {
      NCCL_OK(ncclAllReduce(buf[r].data(), buf[r].data(), count, ncclDouble, ncclAvg, comms[r], nullptr));
    });
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < count; ++i) ASSERT_EQ(buf[r][i], want[i]) << "rank " << r << " element " << i;
  }
}

// NCCL_ALGO=tree leaves Broadcast without an algorithm cclab runs: the call fails naming why, and the
// AllReduce still runs.
TEST(Tree, AlgoEnvLeavingNothingFailsTheCall) {
  Env env{{"CCLAB_TOPO", "virtual:2"}, {"NCCL_ALGO", "tree"}, {"CCLAB_TIMEOUT", "20"}};
  const int n = 4;
  Comms comms(n, 1);
  ASSERT_NE(comms[0], nullptr);
  std::vector<std::vector<int>> b(n, std::vector<int>(64, 1));
  std::vector<ncclResult_t> res(n);
  std::vector<std::string> msg(n);
  run_ranks(n, [&](int r) {
    res[r] = ncclBroadcast(b[r].data(), b[r].data(), 64, ncclInt32, 0, comms[r], nullptr);
    msg[r] = ncclGetLastError(comms[r]);
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(res[r], ncclInvalidUsage);
    EXPECT_NE(msg[r].find("Broadcast"), std::string::npos) << msg[r];
    EXPECT_NE(msg[r].find("NCCL_ALGO=tree"), std::string::npos) << msg[r];
  }
  run_ranks(n, [&](int r) { NCCL_OK(ncclAllReduce(b[r].data(), b[r].data(), 64, ncclInt32, ncclSum, comms[r], nullptr)); });
  for (int r = 0; r < n; ++r) EXPECT_EQ(b[r][0], n);
}

// An invalid NCCL_ALGO fails init with the parser's message.
TEST(Tree, InvalidAlgoStringFailsInit) {
  Env env{{"NCCL_ALGO", "ring,bogus"}};
  ncclUniqueId id;
  NCCL_OK(ncclGetUniqueId(&id));
  ncclComm_t comm = nullptr;
  EXPECT_EQ(ncclCommInitRank(&comm, 1, id, 0), ncclInvalidArgument);
  EXPECT_EQ(comm, nullptr);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("bogus"), std::string::npos) << ncclGetLastError(nullptr);
}

// ncclGroupSimulateEnd: launches nothing, and estimates more time for more bytes; forcing the
// algorithm changes the estimate the way the cost model says (tree at large sizes on one NVLink
// machine is slower than ring).
TEST(Tree, GroupSimulateEndEstimates) {
  Env env{{"CCLAB_TOPO", "dgx-h100"}, {"CCLAB_TIMEOUT", "20"}};
  const int n = 8;
  Comms comms(n, 1);
  ASSERT_NE(comms[0], nullptr);
  std::vector<float> in(1 << 20, 1.0f), out(1 << 20, -1.0f);
  auto estimate = [&](size_t count) {
    ncclSimInfo_t info = NCCL_SIM_INFO_INITIALIZER;
    EXPECT_EQ(ncclGroupStart(), ncclSuccess);
    EXPECT_EQ(ncclAllReduce(in.data(), out.data(), count, ncclFloat, ncclSum, comms[0], nullptr), ncclSuccess);
    EXPECT_EQ(ncclGroupSimulateEnd(&info), ncclSuccess) << ncclGetLastError(nullptr);
    return info.estimatedTime;
  };
  const float small = estimate(2), large = estimate(1 << 20);
  EXPECT_GT(small, 0.0f);
  EXPECT_GT(large, small);
  EXPECT_EQ(out[0], -1.0f) << "a simulated group must not run";
  // Without NCCL_SIM_INFO_INITIALIZER the call is refused.
  ncclSimInfo_t bad{};
  NCCL_OK(ncclGroupStart());
  EXPECT_EQ(ncclGroupSimulateEnd(&bad), ncclInvalidArgument);
  NCCL_OK(ncclGroupEnd());  // the refused call left the group open
}

}  // namespace

namespace {

// A ring and a tree of one channel share the connection to a peer. A tree step (1-step slices) in
// both directions followed by a ring all_reduce (2-step slices, rounded to a 4-step chunk) must not
// deadlock: the receiver returns the credits of the steps the rounding skips. Two ranks both send
// first in a ring all_reduce, so without that the second call waits forever.
TEST(Tree, RingAfterTreeOnSharedConnections) {
  Env env{{"NCCL_PROTO", "Simple"}, {"CCLAB_TIMEOUT", "10"}};
  const int n = 2;
  Comms comms(n, 1);
  ASSERT_NE(comms[0], nullptr);
  std::vector<Recorder> rec(n);
  for (int r = 0; r < n; ++r) NCCL_OK(cclabCommSetObserver(comms[r], Recorder::fn, &rec[r]));
  small_then_large(comms, 1, 512 * 1024);
  // The precondition: the tuner ran the small call as a tree and the large one as a ring.
  bool tree_first = false, ring_second = false;
  for (const cclabStepEvent_t& e : rec[0].events) {
    tree_first |= e.opCount == 0 && e.prim == cclabPrimSendFromOutput;
    ring_second |= e.opCount == 1 && e.prim == cclabPrimRecvReduceCopySend;
  }
  EXPECT_TRUE(tree_first && ring_second) << "the tuner no longer picks Tree then Ring here; force them another way";
}

}  // namespace
