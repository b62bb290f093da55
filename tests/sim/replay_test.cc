// tests/sim/replay_test.cc - the flow level's step replay (sim/replay.h) on hand-built recordings: a
// sender and a receiver over one NCCL_STEPS FIFO, checked against the pipeline recurrence written out
// step by step; credits throttling a fast sender; counters that already hold a value; errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "sim/replay.h"

namespace cclab {
namespace sim {
namespace {

constexpr int kSteps = 8;  // NCCL_STEPS
constexpr uint32_t kHead = 0, kTail = 1;

// Sender: per step, wait for a credit (head >= s + 1 - 8), send `bytes`, complete the step (overhead),
// post tail = s + 1. Receiver: wait for tail >= s + 1, a data loop over the bytes, post head = s + 1.
void build(int nsteps, uint64_t bytes, ReplayTask* send, ReplayTask* recv) {
  for (int s = 0; s < nsteps; ++s) {
    send->ops.push_back({ReplayKind::kWait, kHead, static_cast<uint64_t>(std::max(0, s + 1 - kSteps))});
    send->ops.push_back({ReplayKind::kXfer, 1, bytes});
    send->ops.push_back({ReplayKind::kFlushOv, 0, 0});
    send->ops.push_back({ReplayKind::kPost, kTail, static_cast<uint64_t>(s + 1)});
    recv->ops.push_back({ReplayKind::kWait, kTail, static_cast<uint64_t>(s + 1)});
    recv->ops.push_back({ReplayKind::kExec, 0, bytes});
    recv->ops.push_back({ReplayKind::kFlush, 0, 0});
    recv->ops.push_back({ReplayKind::kPost, kHead, static_cast<uint64_t>(s + 1)});
  }
  send->peers.push_back(ReplayPeer{1, 2e9, 0.5e-6});
}

// The same two loops as a recurrence: sender step s starts when its previous step ended and the
// receiver has consumed step s - 8; the receiver's step s starts when the data is there.
void expected(int nsteps, double bytes, const ReplayTask& send, const ReplayTask& recv, double* send_end,
              double* recv_end) {
  std::vector<double> sent(nsteps), consumed(nsteps);
  double ts = send.start, tr = recv.start;
  for (int s = 0; s < nsteps; ++s) {
    const double credit = s >= kSteps ? consumed[s - kSteps] : 0.0;
    ts = std::max(ts, credit) + send.peers[0].latency + bytes / send.peers[0].rate + send.overhead;
    sent[s] = ts;
    tr = std::max(tr, sent[s]) + bytes / recv.sm_rate;
    consumed[s] = tr;
  }
  *send_end = ts;
  *recv_end = tr;
}

TEST(Replay, PipelineMatchesTheRecurrence) {
  for (double sm_rate : {50e9, 1e9, 0.3e9}) {  // receiver faster than the wire, equal-ish, much slower
    ReplayTask send, recv;
    build(40, 4096, &send, &recv);
    send.start = recv.start = 4e-6;
    send.overhead = 1e-6;
    send.sm_rate = recv.sm_rate = sm_rate;
    std::vector<ReplayTask> tasks{send, recv};
    std::string err;
    ASSERT_TRUE(replay_steps(tasks, {0, 0}, &err)) << err;
    double se = 0, re = 0;
    expected(40, 4096, send, recv, &se, &re);
    EXPECT_NEAR(tasks[0].end, se, 1e-15) << sm_rate;
    EXPECT_NEAR(tasks[1].end, re, 1e-15) << sm_rate;
  }
}

TEST(Replay, CreditsThrottleAFastSender) {
  // A receiver 10x slower than the wire: the sender can run at most 8 steps ahead, so it ends within
  // 8 receiver steps of the receiver's end instead of after its own 40 x 2.55 us.
  ReplayTask send, recv;
  build(40, 4096, &send, &recv);
  send.sm_rate = recv.sm_rate = 4096 / 25e-6;
  std::vector<ReplayTask> tasks{send, recv};
  std::string err;
  ASSERT_TRUE(replay_steps(tasks, {0, 0}, &err)) << err;
  const double recv_step = 25e-6;
  EXPECT_GT(tasks[0].end, tasks[1].end - (kSteps + 1) * recv_step);
  EXPECT_NEAR(tasks[1].end, 40 * recv_step + (0.5e-6 + 4096 / 2e9), 1e-12);
}

TEST(Replay, ParkedTasksResumeInAnyOrder) {
  // The receiver listed first parks on its first wait and is woken by the sender's post; the result
  // does not depend on the order in which tasks are listed.
  ReplayTask send, recv;
  build(20, 1000, &send, &recv);
  send.sm_rate = recv.sm_rate = 1e9;
  std::vector<ReplayTask> a{send, recv}, b{recv, send};
  b[1].peers = send.peers;
  std::string err;
  ASSERT_TRUE(replay_steps(a, {0, 0}, &err)) << err;
  ASSERT_TRUE(replay_steps(b, {0, 0}, &err)) << err;
  EXPECT_EQ(a[0].end, b[1].end);
  EXPECT_EQ(a[1].end, b[0].end);
}

TEST(Replay, CountersKeepTheirValueFromBefore) {
  // A second collective on the same FIFO: head already holds 100, so the credit waits of steps up to
  // 107 are free and the sender never waits for this collective's receiver.
  ReplayTask send;
  for (uint64_t s = 100; s < 108; ++s) {
    send.ops.push_back({ReplayKind::kWait, kHead, s + 1 - kSteps});
    send.ops.push_back({ReplayKind::kXfer, 1, 1000});
    send.ops.push_back({ReplayKind::kFlush, 0, 0});
  }
  send.peers.push_back(ReplayPeer{1, 1e9, 0});
  send.sm_rate = 1e9;
  std::vector<ReplayTask> tasks{send};
  std::string err;
  ASSERT_TRUE(replay_steps(tasks, {100, 100}, &err)) << err;
  EXPECT_NEAR(tasks[0].end, 8 * 1e-6, 1e-15);
  // With head at 0 the same recording cannot complete: nobody posts head.
  std::vector<ReplayTask> stuck{send};
  EXPECT_FALSE(replay_steps(stuck, {0, 0}, &err));
  EXPECT_NE(err.find("stuck"), std::string::npos) << err;
  EXPECT_NE(err.find("counter 0 to reach 93"), std::string::npos) << err;
}

TEST(Replay, ATransferWithoutAShareIsAnError) {
  ReplayTask t;
  t.ops.push_back({ReplayKind::kXfer, 3, 100});
  t.sm_rate = 1e9;
  std::vector<ReplayTask> tasks{t};
  std::string err;
  EXPECT_FALSE(replay_steps(tasks, {}, &err));
  EXPECT_NE(err.find("rank 3"), std::string::npos) << err;
}

}  // namespace
}  // namespace sim
}  // namespace cclab
