// tests/viz/viz_logic_test.cc - the visualiser's pure logic: the colour ramp, the trace index (events in
// flight, boundaries), link utilisation, what each rank waits for, the timeline (stepping, log-scale
// speed), collectives' bandwidth, the flags, and the incremental live link load.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "synth.h"
#include "viz/channel_state.h"
#include "viz/colors.h"
#include "viz/live_load.h"
#include "viz/model.h"
#include "viz/options.h"
#include "viz/timeline.h"

namespace cclab {
namespace viz {
namespace {

// ---- colours ------------------------------------------------------------------------------------------
TEST(Colors, RampEnds) {
  EXPECT_EQ(utilization_color(0), kIdle);
  EXPECT_EQ(utilization_color(-1), kIdle);
  EXPECT_EQ(utilization_color(std::nan("")), kIdle);
  EXPECT_EQ(utilization_color(0.004), kIdle);
  EXPECT_EQ(utilization_color(0.9), kSaturated);
  EXPECT_EQ(utilization_color(0.97), kSaturated);
  EXPECT_EQ(utilization_color(3.0), kSaturated);
  EXPECT_EQ(kSaturated, rgba(230, 40, 40, 255));
  EXPECT_NE(utilization_color(0.89), kSaturated);
  EXPECT_NE(utilization_color(0.01), kIdle);
  EXPECT_EQ(heat_color(0), kHeatEmpty);
  EXPECT_EQ(heat_color(0.95), kSaturated);
}

TEST(Colors, RampIsOrdered) {
  // Red grows and blue falls from idle-blue towards saturated red; green peaks in the middle.
  const Color low = utilization_color(0.05), mid = utilization_color(0.45), high = utilization_color(0.85);
  EXPECT_GT(blue_of(low), blue_of(high));
  EXPECT_LT(red_of(low), red_of(high));
  EXPECT_GT(green_of(mid), green_of(utilization_color(0.89)));
  // Continuous: neighbouring utilisations give neighbouring colours.
  for (double u = 0.01; u < 0.895; u += 0.01) {
    const Color a = utilization_color(u), b = utilization_color(u + 0.005);
    EXPECT_LE(std::abs(static_cast<int>(red_of(a)) - static_cast<int>(red_of(b))), 12) << u;
    EXPECT_LE(std::abs(static_cast<int>(green_of(a)) - static_cast<int>(green_of(b))), 12) << u;
  }
}

TEST(Colors, PackingMatchesImGui) {
  // IM_COL32(r, g, b, a) = a << 24 | b << 16 | g << 8 | r.
  EXPECT_EQ(rgba(1, 2, 3, 4), 0x04030201u);
  EXPECT_EQ(red_of(kSaturated), 230u);
  EXPECT_EQ(green_of(kSaturated), 40u);
  EXPECT_EQ(alpha_of(kSaturated), 255u);
  EXPECT_NE(channel_color(0), channel_color(1));
  EXPECT_EQ(channel_color(12), channel_color(0));
}

TEST(Colors, Thickness) {
  EXPECT_FLOAT_EQ(link_thickness(0), 1.5f);
  EXPECT_FLOAT_EQ(link_thickness(12.5), 1.5f);
  EXPECT_FLOAT_EQ(link_thickness(25), 2.5f);
  EXPECT_FLOAT_EQ(link_thickness(1000), 6.0f);
  EXPECT_LT(link_thickness(50), link_thickness(100));
}

// ---- index ----------------------------------------------------------------------------------------------
// The header's "point-to-point steps only" (lab 1's ring of ncclSend / ncclRecv): every indexed event a
// SendRecv step; one event of a collective, or none, is not.
TEST(Index, PointToPointOnly) {
  trace::Trace t = viz_test::small_trace();
  TraceIndex idx;
  idx.update(t);
  EXPECT_FALSE(idx.p2p_only());  // the synthetic trace's all_reduce
  for (auto& e : t.events) e.coll = CollKind::kSendRecv;
  idx.reset();
  idx.update(t);
  EXPECT_TRUE(idx.p2p_only());
  t.events.push_back(t.events.back());
  t.events.back().coll = CollKind::kAllGather;  // appended live: the index sees it on update
  idx.update(t);
  EXPECT_FALSE(idx.p2p_only());
  TraceIndex empty;
  empty.update(viz_test::small_trace(false));
  EXPECT_FALSE(empty.p2p_only());
}

TEST(Index, RowsInFlightAndBoundaries) {
  const trace::Trace t = viz_test::small_trace();
  TraceIndex idx;
  idx.update(t);
  EXPECT_EQ(idx.nranks(), 4);
  EXPECT_EQ(idx.nchannels(), 1);
  ASSERT_EQ(idx.rows().size(), 4u);
  EXPECT_EQ(idx.rows()[2].rank, 2);
  // t = 45: step 4 of every rank is moving (data 42, end 50).
  std::vector<int> f;
  idx.in_flight(t, 45, &f);
  ASSERT_EQ(f.size(), 4u);
  for (int e : f) EXPECT_EQ(t.events[e].step, 4u);
  // t = 41: waiting (begin 40, data 42): nothing moves.
  f.clear();
  idx.in_flight(t, 41, &f);
  EXPECT_TRUE(f.empty());
  // Last begun.
  const int ev = idx.last_begun(t, idx.row_of(1, 0), 41);
  ASSERT_GE(ev, 0);
  EXPECT_EQ(t.events[ev].step, 4u);
  EXPECT_EQ(idx.last_begun(t, idx.row_of(1, 0), -1), -1);
  // Boundaries: 0, 2, 10, 12, 20, ... 100.
  const std::vector<double>& b = idx.boundaries(t);
  EXPECT_EQ(b.front(), 0);
  EXPECT_EQ(b.back(), 100);
  EXPECT_EQ(b.size(), 21u);
  EXPECT_EQ(next_boundary(b, 0), 2);
  EXPECT_EQ(next_boundary(b, 2), 10);
  EXPECT_EQ(next_boundary(b, 5), 10);
  EXPECT_EQ(prev_boundary(b, 10), 2);
  EXPECT_EQ(prev_boundary(b, 11), 10);
  EXPECT_EQ(prev_boundary(b, 0), 0);
  EXPECT_EQ(next_boundary(b, 100), 100);
  // by_begin order.
  const std::vector<int>& o = idx.by_begin();
  for (size_t i = 1; i < o.size(); ++i) EXPECT_LE(t.events[o[i - 1]].begin_us, t.events[o[i]].begin_us);
  EXPECT_EQ(idx.lower_bound_begin(t, 10), 4u);
}

TEST(Index, GrowsIncrementallyOutOfOrder) {
  const trace::Trace full = viz_test::small_trace();
  trace::Trace t = full;
  t.events.clear();
  TraceIndex idx;
  // Feed in reverse order, in three batches: the result equals indexing all at once.
  std::vector<trace::Event> rev(full.events.rbegin(), full.events.rend());
  for (size_t i = 0; i < rev.size(); ++i) {
    t.events.push_back(rev[i]);
    if (i == 5 || i == 20 || i + 1 == rev.size()) idx.update(t);
  }
  EXPECT_EQ(idx.indexed(), t.events.size());
  for (const EventRow& row : idx.rows())
    for (size_t k = 1; k < row.events.size(); ++k)
      EXPECT_LE(t.events[row.events[k - 1]].begin_us, t.events[row.events[k]].begin_us);
  std::vector<int> f;
  idx.in_flight(t, 45, &f);
  EXPECT_EQ(f.size(), 4u);
  EXPECT_EQ(idx.boundaries(t).size(), 21u);
  for (size_t i = 1; i < idx.by_begin().size(); ++i)
    EXPECT_LE(t.events[idx.by_begin()[i - 1]].begin_us, t.events[idx.by_begin()[i]].begin_us);
}

TEST(Load, UtilisationAtTime) {
  const trace::Trace t = viz_test::small_trace();
  LoadIndex li;
  li.build(t.load, t.links.size());
  EXPECT_FLOAT_EQ(li.gbs_at(t.load, viz_test::kBusyLink, 40), 97);
  EXPECT_NEAR(utilization(li.gbs_at(t.load, viz_test::kBusyLink, 40), 100), 0.97, 1e-6);
  EXPECT_EQ(li.gbs_at(t.load, viz_test::kBusyLink, 10), 0);
  EXPECT_EQ(li.gbs_at(t.load, viz_test::kBusyLink, 60.5), 0);
  EXPECT_EQ(li.gbs_at(t.load, viz_test::kIdleLink, 40), 0);
  EXPECT_EQ(li.gbs_at(t.load, viz_test::kBusyLink, -5), 0);
  EXPECT_FLOAT_EQ(li.gbs_at(t.load, 2, 100), 40);  // the end of the span is in the last bin
  EXPECT_EQ(li.gbs_at(t.load, 2, 101), 0);
  ASSERT_EQ(li.busiest().size(), 2u);
  EXPECT_EQ(li.busiest()[0], 2);  // 40 GB/s x 100 us = 4 MB > 97 x 40 us
  EXPECT_NEAR(li.total_gb()[2], 40 * 100e-6, 1e-9);
  EXPECT_FLOAT_EQ(li.peak_gbs()[viz_test::kBusyLink], 97);
  EXPECT_EQ(utilization(10, 0), 0);
}

// ---- what each rank waits for ----------------------------------------------------------------------------
trace::Trace waiting_trace() {
  // Ring 0 -> 1 -> 2 -> 3 -> 0. Step 0: everyone sends. Step 1 (recvReduceSend) begins at 10 for all,
  // but rank 3's step-0 send to 0 is slow (ends at 30), so rank 0 waits for data from 3 until 30.
  // Rank 1 received from 0 on time (0's send ended at 10) but waits for credits from 2 until 25.
  trace::Trace t = viz_test::small_trace(false);
  auto add = [&](int r, int step, PrimKind prim, int send, int recv, double b, double d, double e) {
    trace::Event ev;
    ev.rank = r;
    ev.channel = 0;
    ev.send_peer = send;
    ev.recv_peer = recv;
    ev.step = static_cast<uint64_t>(step);
    ev.prim = prim;
    ev.bytes = 1024;
    ev.begin_us = b;
    ev.data_us = d;
    ev.end_us = e;
    ev.route = send >= 0 ? t.route_index(r, send) : -1;
    t.events.push_back(ev);
  };
  for (int r = 0; r < 4; ++r) add(r, 0, PrimKind::kSend, (r + 1) % 4, -1, 0, 1, r == 3 ? 30 : 10);
  add(0, 1, PrimKind::kRecvReduceSend, 1, 3, 10, 30, 40);
  add(1, 1, PrimKind::kRecvReduceSend, 2, 0, 10, 25, 35);
  add(2, 1, PrimKind::kRecvReduceSend, 3, 1, 10, 11, 20);
  add(3, 1, PrimKind::kRecv, -1, 2, 31, 32, 40);
  trace::sort_events(&t.events);
  return t;
}

TEST(ChannelState, WhatEachRankWaitsFor) {
  const trace::Trace t = waiting_trace();
  TraceIndex idx;
  idx.update(t);
  SendMatch m;
  m.build(t, idx);
  const RankStatus r0 = rank_status(t, idx, m, 0, 0, 20);
  EXPECT_EQ(r0.state, RankStatus::kWaitingData);
  EXPECT_EQ(r0.peer, 3);
  EXPECT_EQ(r0.peer_step, 0u);
  EXPECT_EQ(r0.step, 1u);
  EXPECT_EQ(r0.text(t), "waiting for data from rank 3 step 0");
  const RankStatus r1 = rank_status(t, idx, m, 1, 0, 20);
  EXPECT_EQ(r1.state, RankStatus::kWaitingCredits);
  EXPECT_EQ(r1.peer, 2);
  EXPECT_EQ(r1.text(t), "waiting for credits from rank 2");
  const RankStatus r2 = rank_status(t, idx, m, 2, 0, 15);
  EXPECT_EQ(r2.state, RankStatus::kMoving);
  EXPECT_EQ(r2.text(t), "moving data from 1 to 3");
  // Rank 3 at 20: its step-0 send is still moving; at 30.5 it is between steps; after 40 done.
  EXPECT_EQ(rank_status(t, idx, m, 3, 0, 20).state, RankStatus::kMoving);
  EXPECT_EQ(rank_status(t, idx, m, 3, 0, 30.5).state, RankStatus::kIdle);
  EXPECT_EQ(rank_status(t, idx, m, 3, 0, 41).state, RankStatus::kDone);
  EXPECT_EQ(rank_status(t, idx, m, 3, 0, 41).text(t), "done");
  // Before anything: not started. Unknown channel: not started.
  EXPECT_EQ(rank_status(t, idx, m, 0, 0, -1).state, RankStatus::kNotStarted);
  EXPECT_EQ(rank_status(t, idx, m, 0, 5, 20).state, RankStatus::kNotStarted);
  // Rank 2 at 10.5: its receive from 1 is there (1's step 0 ended at 10): credits from 3.
  EXPECT_EQ(rank_status(t, idx, m, 2, 0, 10.5).state, RankStatus::kWaitingCredits);
  // Rank 0 once 3's data is posted (30) but before its own data_us (30): moving at 30.
  EXPECT_EQ(rank_status(t, idx, m, 0, 0, 30).state, RankStatus::kMoving);
}

TEST(ChannelState, MatchesByOrdinalPerConnection) {
  const trace::Trace t = viz_test::small_trace();
  TraceIndex idx;
  idx.update(t);
  SendMatch m;
  m.build(t, idx);
  // In the ring trace, rank r's receive at step s matches rank r-1's send at step s-1 (its s-1-th send
  // to r is the s-th, counting from 0... each send is one slice): ordinal k of the receives = ordinal k
  // of the sends.
  for (size_t i = 0; i < t.events.size(); ++i) {
    const trace::Event& e = t.events[i];
    if (e.recv_peer < 0) {
      EXPECT_EQ(m.match(static_cast<int>(i)), -1);
      continue;
    }
    const int s = m.match(static_cast<int>(i));
    ASSERT_GE(s, 0);
    EXPECT_EQ(t.events[s].rank, e.recv_peer);
    EXPECT_EQ(t.events[s].send_peer, e.rank);
    EXPECT_EQ(t.events[s].step + 1, e.step);
  }
}

// ---- timeline ------------------------------------------------------------------------------------------
TEST(Timeline, LogSpeedMapping) {
  EXPECT_NEAR(speed_from_slider(0), kMinSpeed, 1e-12);
  EXPECT_NEAR(speed_from_slider(1), kMaxSpeed, 1e-3);
  // Equal slider steps multiply the speed by equal factors.
  const double a = speed_from_slider(0.2), b = speed_from_slider(0.3), c = speed_from_slider(0.4);
  EXPECT_NEAR(b / a, c / b, 1e-9);
  for (double s : {0.0, 0.1, 0.37, 0.5, 0.99, 1.0}) EXPECT_NEAR(slider_from_speed(speed_from_slider(s)), s, 1e-9);
  EXPECT_NEAR(slider_from_speed(1e30), 1, 1e-12);
  EXPECT_NEAR(slider_from_speed(0), 0, 1e-12);
  EXPECT_NEAR(default_speed(100), 10, 1e-12);
}

TEST(Timeline, PlayStepSeek) {
  const trace::Trace t = viz_test::small_trace();
  TraceIndex idx;
  idx.update(t);
  Timeline tl;
  tl.set_range(t.begin_us(), t.end_us());
  tl.speed = 10;
  EXPECT_EQ(tl.t, 0);
  tl.advance(1);  // paused: nothing
  EXPECT_EQ(tl.t, 0);
  tl.play();
  tl.advance(0.5);
  EXPECT_DOUBLE_EQ(tl.t, 5);
  tl.step_forward(idx.boundaries(t));
  EXPECT_FALSE(tl.playing);
  EXPECT_DOUBLE_EQ(tl.t, 10);
  tl.step_forward(idx.boundaries(t));
  EXPECT_DOUBLE_EQ(tl.t, 12);
  tl.step_back(idx.boundaries(t));
  EXPECT_DOUBLE_EQ(tl.t, 10);
  tl.step_back(idx.boundaries(t));
  EXPECT_DOUBLE_EQ(tl.t, 2);
  tl.seek(1e9);
  EXPECT_DOUBLE_EQ(tl.t, 100);
  tl.step_forward(idx.boundaries(t));
  EXPECT_DOUBLE_EQ(tl.t, 100);
  tl.seek(-5);
  EXPECT_DOUBLE_EQ(tl.t, 0);
  // Playing to the end stops there; play again restarts.
  tl.play();
  tl.advance(100);
  EXPECT_DOUBLE_EQ(tl.t, 100);
  EXPECT_FALSE(tl.playing);
  tl.play();
  EXPECT_DOUBLE_EQ(tl.t, 0);
  // Live: following keeps the cursor at the newest end.
  Timeline live;
  live.follow = true;
  live.set_range(0, 10);
  EXPECT_DOUBLE_EQ(live.t, 10);
  live.set_range(0, 20);
  EXPECT_DOUBLE_EQ(live.t, 20);
  live.pause();
  live.set_range(0, 30);
  EXPECT_DOUBLE_EQ(live.t, 20);
  // Playing a live run up to its newest event follows it from then on.
  live.speed = 10;
  live.play();
  live.advance(5, true);
  EXPECT_DOUBLE_EQ(live.t, 30);
  EXPECT_TRUE(live.follow);
  live.set_range(0, 40);
  EXPECT_DOUBLE_EQ(live.t, 40);
}

// ---- collectives ----------------------------------------------------------------------------------------
TEST(Ops, BusbwFactorsAndBandwidth) {
  EXPECT_DOUBLE_EQ(busbw_factor(CollKind::kAllReduce, 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(busbw_factor(CollKind::kAllGather, 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(busbw_factor(CollKind::kReduceScatter, 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(busbw_factor(CollKind::kBroadcast, 8), 1);
  EXPECT_DOUBLE_EQ(busbw_factor(CollKind::kReduce, 8), 1);
  trace::Op op;
  op.coll = CollKind::kAllReduce;
  op.bytes = 100000000;  // 1e8 bytes in 1000 us = 100 GB/s
  op.begin_us = 0;
  op.end_us = 1000;
  OpBandwidth bw = op_bandwidth(op, 4);
  EXPECT_NEAR(bw.algbw, 100, 1e-9);
  EXPECT_NEAR(bw.busbw, 150, 1e-9);
  op.algbw = 80;
  op.busbw = 120;
  bw = op_bandwidth(op, 4);  // the trace's own numbers win
  EXPECT_EQ(bw.algbw, 80);
  EXPECT_EQ(bw.busbw, 120);
  const trace::Trace t = viz_test::small_trace();
  EXPECT_EQ(op_at(t, 50), 0);
  EXPECT_EQ(op_at(t, 500), 0);
  trace::Trace none;
  EXPECT_EQ(op_at(none, 0), -1);
}

TEST(Names, ShortAndFormatted) {
  trace::Trace t = viz_test::small_trace();
  EXPECT_EQ(short_node_name(t, 0), "gpu0");
  EXPECT_EQ(link_name(t, 0), "m0.gpu0 -> m0.nvs0");
  t.meta.machines = 2;
  EXPECT_EQ(short_node_name(t, 0), "m0.gpu0");
  trace::Node leaf;
  leaf.name = "fabric.leaf.r3.0";
  t.nodes.push_back(leaf);
  EXPECT_EQ(short_node_name(t, static_cast<int>(t.nodes.size()) - 1), "leaf r3.0");
  EXPECT_EQ(format_time(12.3456), "12.346 us");
  EXPECT_EQ(format_time(1234.0), "1.234 ms");
  EXPECT_EQ(format_time(2.5e6), "2.500 s");
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(64 << 20), "64 MiB");
  EXPECT_EQ(format_bytes(1.5 * 1024 * 1024), "1.5 MiB");
}

// ---- flags ---------------------------------------------------------------------------------------------
TEST(Options, Parse) {
  VizParse p = parse_viz_args({"run.cctrace", "--screenshot", "o.png", "--at", "40", "--view", "links", "--size",
                               "800x600", "--layout-json=l.json", "--curves", "a.csv", "--curves", "b.json"});
  ASSERT_TRUE(p.ok) << p.message;
  EXPECT_EQ(p.options.trace_path, "run.cctrace");
  EXPECT_EQ(p.options.screenshot, "o.png");
  EXPECT_TRUE(p.options.has_at);
  EXPECT_EQ(p.options.at_us, 40);
  EXPECT_EQ(p.options.view, View::kLinks);
  EXPECT_EQ(p.options.width, 800);
  EXPECT_EQ(p.options.height, 600);
  EXPECT_EQ(p.options.layout_json, "l.json");
  EXPECT_EQ(p.options.curves.size(), 2u);
  p = parse_viz_args({"--live", "/tmp/s", "--wait", "5"});
  ASSERT_TRUE(p.ok) << p.message;
  EXPECT_EQ(p.options.live_socket, "/tmp/s");
  EXPECT_EQ(p.options.live_wait_s, 5);
  p = parse_viz_args({"t.cctrace", "--channel", "3"});
  ASSERT_TRUE(p.ok) << p.message;
  EXPECT_EQ(p.options.channel, 3);
  p = parse_viz_args({"t.cctrace", "--at", "25%"});
  ASSERT_TRUE(p.ok) << p.message;
  EXPECT_TRUE(p.options.at_is_percent);
  EXPECT_EQ(p.options.at_us, 25);
  p = parse_viz_args({"--curves", "x.csv"});
  ASSERT_TRUE(p.ok);
  EXPECT_EQ(p.options.view, View::kCurves);
  EXPECT_TRUE(parse_viz_args({"--help"}).help);
  // A live run can be pictured: the screenshot waits for it to end (viz_live_test).
  VizParse live_shot = parse_viz_args({"--live", "s", "--screenshot", "x.png", "--at", "40%"});
  EXPECT_TRUE(live_shot.ok) << live_shot.message;
  EXPECT_EQ(live_shot.options.live_socket, "s");
  EXPECT_EQ(live_shot.options.screenshot, "x.png");
}

TEST(Options, Errors) {
  auto msg = [](std::vector<std::string> a) {
    VizParse p = parse_viz_args(a);
    EXPECT_FALSE(p.ok);
    return p.message;
  };
  EXPECT_NE(msg({}).find("no trace"), std::string::npos);
  EXPECT_NE(msg({"a", "b"}).find("more than one"), std::string::npos);
  EXPECT_NE(msg({"a", "--bogus"}).find("unknown flag '--bogus'"), std::string::npos);
  EXPECT_NE(msg({"a", "-x"}).find("unknown flag"), std::string::npos);
  EXPECT_NE(msg({"a", "--at"}).find("--at needs a value"), std::string::npos);
  EXPECT_NE(msg({"a", "--at", "soon"}).find("--at 'soon'"), std::string::npos);
  EXPECT_NE(msg({"a", "--at", "150%"}).find("--at '150%'"), std::string::npos);
  EXPECT_NE(msg({"a", "--view", "3d"}).find("--view '3d'"), std::string::npos);
  EXPECT_NE(msg({"a", "--size", "big"}).find("--size 'big'"), std::string::npos);
  EXPECT_NE(msg({"a", "--size", "10x10"}).find("--size"), std::string::npos);
  EXPECT_NE(msg({"a", "--layout-json", "x"}).find("needs --screenshot"), std::string::npos);
  EXPECT_NE(msg({"a", "--live", "s"}).find("not both"), std::string::npos);
  EXPECT_NE(msg({"a", "--speed", "0"}).find("--speed"), std::string::npos);
  EXPECT_NE(msg({"a", "--channel", "-1"}).find("--channel '-1'"), std::string::npos);
  EXPECT_NE(msg({"--curves", "c.csv", "--view", "links"}).find("needs a trace"), std::string::npos);
}

// ---- live link load ------------------------------------------------------------------------------------
double total_bytes(const trace::LinkLoad& l, int link) {
  for (const auto& s : l.series)
    if (s.link == link) {
      double sum = 0;
      for (float v : s.gbs) sum += v;
      return sum * l.bin_us * 1e3;
    }
  return 0;
}

// Feeds full's events to inc in batches of `every`, as a live stream would; returns the trace fed.
trace::Trace feed_live(const trace::Trace& full, IncrementalLoad* inc, size_t every) {
  trace::Trace t = full;
  t.events.clear();
  for (size_t i = 0; i < full.events.size(); ++i) {
    t.events.push_back(full.events[i]);
    if (i % every == 0) inc->update(t);
  }
  inc->update(t);
  return t;
}

TEST(LiveLoad, NvlsSwitchStepsLoadTheSwitchLinks) {
  // Live and file load agree on switch steps too: each head step of 1 MiB puts 1 MiB on every GPU's link
  // in both directions and another on the head's own (3 loops x (4 + 1) MiB per link and direction).
  const trace::Trace full = viz_test::nvls_trace();
  trace::Trace whole = full;
  trace::compute_link_load(&whole, 1000);
  IncrementalLoad inc(64, 0.05);
  const trace::Trace t = feed_live(full, &inc, 5);
  trace::LinkLoad out;
  inc.fill(&out, t.links.size());
  ASSERT_EQ(whole.load.series.size(), t.links.size()) << "every GPU <-> switch link carries the switch's bytes";
  for (const auto& s : whole.load.series) {
    const double want = 3.0 * (viz_test::kGpus + 1) * (1 << 20);
    EXPECT_NEAR(total_bytes(whole.load, s.link), want, want * 1e-5) << "link " << s.link;
    EXPECT_NEAR(total_bytes(out, s.link), want, want * 1e-5) << "live, link " << s.link;
  }
}

TEST(LiveLoad, IncrementalMatchesComputeLinkLoad) {
  trace::Trace full = viz_test::small_trace();
  full.events.back().proto = 0;  // one LL step: 2x wire bytes
  trace::Trace whole = full;
  trace::compute_link_load(&whole, 1000);
  // Feed the events in batches, as a live stream would; small max_bins forces coarsening.
  IncrementalLoad inc(64, 0.05);
  const trace::Trace t = feed_live(full, &inc, 7);
  EXPECT_EQ(inc.events_done(), full.events.size());
  trace::LinkLoad out;
  inc.fill(&out, t.links.size());
  EXPECT_GT(out.bins, 0);
  EXPECT_LE(out.bins, 64);
  EXPECT_GE(out.t0_us + out.bin_us * out.bins, 100 - 1e-9);
  // Same bytes per link as compute_link_load, and the same links.
  ASSERT_EQ(out.series.size(), whole.load.series.size());
  for (const auto& s : whole.load.series) {
    EXPECT_NEAR(total_bytes(out, s.link), total_bytes(whole.load, s.link), total_bytes(whole.load, s.link) * 1e-5)
        << "link " << s.link;
  }
  // Rates: a link that carries one 1 MiB step per 10 us moving for 8 us runs at 131 GB/s while moving.
  LoadIndex li;
  li.build(out, t.links.size());
  EXPECT_NEAR(li.gbs_at(out, 0, 45), trace::wire_bytes(2, 1 << 20) / 8e3, 20);
  EXPECT_DOUBLE_EQ(trace::wire_bytes(0, 8), 16);
  EXPECT_DOUBLE_EQ(trace::wire_bytes(1, 120), 128);
  EXPECT_DOUBLE_EQ(trace::wire_bytes(2, 1000), 1000);
}

// ---- the doctor's reports ------------------------------------------------------------------------------
TEST(Stuck, PictureAtAndSpan) {
  trace::Trace t = viz_test::small_trace();
  EXPECT_EQ(stuck_at(t, 1e9), -1);
  const auto plain = trace_span(t);
  EXPECT_EQ(plain.first, t.begin_us());
  EXPECT_EQ(plain.second, t.end_us());
  t.stuck.push_back(viz_test::stuck_report(150));
  t.stuck.push_back(viz_test::stuck_report(300));
  t.stuck[1].waits.pop_back();
  EXPECT_EQ(stuck_at(t, 149.9), -1);
  EXPECT_EQ(stuck_at(t, 150), 0);
  EXPECT_EQ(stuck_at(t, 299), 0);
  EXPECT_EQ(stuck_at(t, 1e9), 1);
  // The timeline reaches the reports after the last step.
  const auto span = trace_span(t);
  EXPECT_EQ(span.first, t.begin_us());
  EXPECT_EQ(span.second, 300);
  // No step at all (a run stuck from the start): from 0 to the report.
  trace::Trace empty = viz_test::small_trace(false);
  empty.stuck.push_back(viz_test::stuck_report(1.5e6));
  EXPECT_EQ(trace_span(empty), std::make_pair(0.0, 1.5e6));

  // A report that was not certain (a late rank) ends when its waits' operation completed; a certain one
  // holds.
  EXPECT_EQ(stuck_until(t, 0), std::numeric_limits<double>::infinity());
  trace::Trace late = viz_test::small_trace();
  ASSERT_FALSE(late.ops.empty());
  late.stuck.push_back(viz_test::stuck_report(late.ops[0].begin_us + 1));
  late.stuck[0].certain = false;
  for (trace::StuckWait& w : late.stuck[0].waits) w.op_count = late.ops[0].op_count;
  EXPECT_EQ(stuck_until(late, 0), late.ops[0].end_us);
  EXPECT_EQ(stuck_at(late, late.ops[0].begin_us + 2), 0);
  EXPECT_EQ(stuck_at(late, late.ops[0].end_us), -1);
  late.ops[0].end_us = late.end_us() + 5;  // the op ends after its last step: the timeline reaches it
  EXPECT_EQ(trace_span(late).second, late.ops[0].end_us);
  late.stuck[0].waits[1].op_count = 99;  // an operation the trace has not (yet) seen end: it holds
  EXPECT_EQ(stuck_at(late, late.ops[0].end_us), 0);

  const StuckPicture p = stuck_picture(t.stuck[0]);
  EXPECT_EQ(p.waiting, (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(p.culprits, (std::vector<int>{3}));  // waited for, waiting for nobody, and left
  ASSERT_EQ(p.arrows.size(), 3u);
  EXPECT_EQ(p.arrows[0].from, 0);
  EXPECT_EQ(p.arrows[0].to, 3);
  EXPECT_EQ(p.arrows[0].label, "data ch 0 step 4");
  EXPECT_EQ(p.arrows[2].from, 2);
  EXPECT_EQ(p.arrows[2].to, 1);
  EXPECT_EQ(p.arrows[2].label, "credits ch 0 step 6");
  EXPECT_EQ(p.state(3), "left");
  EXPECT_EQ(p.state(7), "");
  // Several waits between the same two ranks: one arrow, a line each (at most 3).
  trace::Stuck many = viz_test::stuck_report();
  for (int c = 1; c < 5; ++c) {
    trace::StuckWait w = many.waits[0];
    w.channel = c;
    many.waits.push_back(w);
  }
  const StuckPicture q = stuck_picture(many);
  ASSERT_EQ(q.arrows.size(), 3u);
  EXPECT_EQ(q.arrows[0].waits, 5);
  EXPECT_EQ(q.arrows[0].label, "data ch 0 step 4\ndata ch 1 step 4\ndata ch 2 step 4\n+2 more");
  // A rank that waits for nobody but is not waited for is no culprit; a dead one is.
  trace::Stuck dead = viz_test::stuck_report();
  dead.waits.clear();
  dead.ranks[3].state = "dead";
  EXPECT_EQ(stuck_picture(dead).culprits, (std::vector<int>{3}));
  EXPECT_TRUE(stuck_picture(dead).waiting.empty());
}

}  // namespace
}  // namespace viz
}  // namespace cclab
