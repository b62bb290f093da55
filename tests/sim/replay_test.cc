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


// ---- the fluid replay (replay_fluid) ----------------------------------------------------------------

// Two tasks each send one transfer over one shared link (10 bytes/s). A starts at 0, B at 5 s: A moves
// 50 bytes alone, then both share the link (5 each) until A's last 50 are through at 15 s; B, 50 bytes
// behind, has the link alone from there and ends at 20 s. One fixed rate per transfer (replay_steps at
// the static share of 5) would end A at 20 and B at 25.
TEST(ReplayFluid, ATransferSpeedsUpWhenItsCompetitorEnds) {
  FluidNet net;
  net.capacity = {10.0};
  net.conn_links = {{0}, {0}};
  net.conn_weight = {1.0, 1.0};
  std::vector<ReplayTask> tasks(2);
  for (int i = 0; i < 2; ++i) {
    tasks[i].ops = {{ReplayKind::kXfer, 1, 100}, {ReplayKind::kFlush, 0, 0}};
    tasks[i].peers.push_back(ReplayPeer{1, 5.0, 0.0, i});
    tasks[i].sm_rate = 1e9;
  }
  tasks[1].start = 5.0;
  std::string err;
  ASSERT_TRUE(replay_fluid(tasks, {}, net, &err)) << err;
  EXPECT_NEAR(tasks[0].end, 15.0, 1e-9);
  EXPECT_NEAR(tasks[1].end, 20.0, 1e-9);
  ASSERT_TRUE(replay_steps(tasks, {}, &err)) << err;
  EXPECT_NEAR(tasks[0].end, 20.0, 1e-9);
  EXPECT_NEAR(tasks[1].end, 25.0, 1e-9);
}

// Weighted max-min (CM02: weight 1 / route latency): a flow of weight 3 and one of weight 1 share a
// 12 bytes/s link 9 : 3; the light one also crosses a 2 bytes/s link, so it is capped at 2 and the
// heavy one gets the other 10 (max-min hands on what a competitor bottlenecked elsewhere leaves).
TEST(ReplayFluid, MaxMinRatesAreWeightedAndHandOnSpareCapacity) {
  FluidNet net;
  net.capacity = {12.0, 100.0};
  net.conn_links = {{0}, {0, 1}};
  net.conn_weight = {3.0, 1.0};
  const int conns[2] = {0, 1};
  double rates[2];
  maxmin_rates(net, conns, 2, rates);
  EXPECT_NEAR(rates[0], 9.0, 1e-12);
  EXPECT_NEAR(rates[1], 3.0, 1e-12);
  net.capacity[1] = 2.0;
  maxmin_rates(net, conns, 2, rates);
  EXPECT_NEAR(rates[0], 10.0, 1e-12);
  EXPECT_NEAR(rates[1], 2.0, 1e-12);
}

// The fluid replay keeps the step replay's semantics where rates do not change: the FIFO pipeline with
// credits, alone on its link, gives the recurrence's times.
TEST(ReplayFluid, PipelineMatchesTheRecurrence) {
  for (double sm_rate : {50e9, 1e9, 0.3e9}) {
    ReplayTask send, recv;
    build(40, 4096, &send, &recv);
    send.peers[0].conn = 0;
    send.start = recv.start = 4e-6;
    send.overhead = 1e-6;
    send.sm_rate = recv.sm_rate = sm_rate;
    FluidNet net;
    net.capacity = {send.peers[0].rate};
    net.conn_links = {{0}};
    net.conn_weight = {1.0};
    std::vector<ReplayTask> tasks{send, recv};
    std::string err;
    ASSERT_TRUE(replay_fluid(tasks, {0, 0}, net, &err)) << err;
    double send_end = 0, recv_end = 0;
    expected(40, 4096, send, recv, &send_end, &recv_end);
    EXPECT_NEAR(tasks[0].end, send_end, 1e-12 + 1e-9 * send_end) << sm_rate;
    EXPECT_NEAR(tasks[1].end, recv_end, 1e-12 + 1e-9 * recv_end) << sm_rate;
  }
}

// An NVLS switch step (kFlushOv with val 1) pays the switch's per-step cost on top of the protocol's
// overhead; the other steps do not. Both replays: 2 steps of 10 bytes at 10 bytes/s, overhead 0.5 s,
// switch overhead 2 s on the second step only: 1 + 0.5 + 1 + 0.5 + 2 = 5 s.
TEST(ReplayFluid, SwitchStepsPayTheSwitchOverhead) {
  FluidNet net;
  net.capacity = {10.0};
  net.conn_links = {{0}};
  net.conn_weight = {1.0};
  std::vector<ReplayTask> tasks(1);
  tasks[0].ops = {{ReplayKind::kXfer, 1, 10}, {ReplayKind::kFlushOv, 0, 0},
                  {ReplayKind::kXfer, 1, 10}, {ReplayKind::kFlushOv, 0, 1}};
  tasks[0].peers.push_back(ReplayPeer{1, 10.0, 0.0, 0});
  tasks[0].sm_rate = 1e9;
  tasks[0].overhead = 0.5;
  tasks[0].switch_overhead = 2.0;
  std::string err;
  ASSERT_TRUE(replay_fluid(tasks, {}, net, &err)) << err;
  EXPECT_NEAR(tasks[0].end, 5.0, 1e-9);
  ASSERT_TRUE(replay_steps(tasks, {}, &err)) << err;
  EXPECT_NEAR(tasks[0].end, 5.0, 1e-9);
}

// A transfer whose route has no bandwidth cannot finish: an error naming the stuck task, not a hang.
TEST(ReplayFluid, ATransferWithoutBandwidthIsAnError) {
  FluidNet net;
  net.capacity = {0.0};
  net.conn_links = {{0}};
  net.conn_weight = {1.0};
  std::vector<ReplayTask> tasks(1);
  tasks[0].ops = {{ReplayKind::kXfer, 1, 100}, {ReplayKind::kFlush, 0, 0}};
  tasks[0].peers.push_back(ReplayPeer{1, 0.0, 0.0, 0});
  std::string err;
  EXPECT_FALSE(replay_fluid(tasks, {}, net, &err));
  EXPECT_NE(err.find("task 0"), std::string::npos) << err;
}

}  // namespace
}  // namespace sim
}  // namespace cclab
