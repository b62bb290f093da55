// tests/viz/viz_live_test.cc - `cclab viz --live`: the viewer side against a LiveServer in this
// process. The state connects (retrying until the socket exists), decodes the stream a little per
// refresh, indexes events as they come, bins link load incrementally, keeps the cursor on the newest
// event while following, and sees the run complete. No display needed (no frame is drawn).
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "synth.h"
#include "trace/live.h"
#include "viz/app.h"

namespace cclab {
namespace viz {
namespace {

template <typename F>
bool pump(VizState* s, F done, double seconds = 10) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
    s->wall_s += 0.2;  // as frames would advance it (the live load refreshes every 100 ms)
    refresh(s);
    if (done()) return true;
  }
  return false;
}

// What a run serves before its first event: the trace without events, collectives or link load.
trace::Trace header_of(const trace::Trace& full) {
  trace::Trace header = full;
  header.events.clear();
  header.ops.clear();
  header.load = trace::LinkLoad();
  return header;
}

TEST(Live, FollowsARun) {
  const std::string sock = "/tmp/cclab_viz_live_" + std::to_string(getpid()) + ".sock";
  const trace::Trace full = viz_test::small_trace();
  const trace::Trace header = header_of(full);

  VizState s;
  s.opt.live_socket = sock;
  s.opt.live_wait_s = 10;
  std::string err;
  ASSERT_TRUE(init_state(&s, &err)) << err;
  EXPECT_TRUE(s.tl.follow);
  // The viewer starts first: nothing to connect to yet.
  refresh(&s);
  EXPECT_EQ(s.live->state(), LiveSource::State::kConnecting);

  trace::LiveServer srv;
  ASSERT_TRUE(srv.start(sock, header, 0, &err)) << err;
  // The header's sections (META, TOPO, CHAN) arrive one by one; a refresh may have decoded only some.
  ASSERT_TRUE(pump(&s, [&] { return srv.attached() && !s.trace().nodes.empty() && !s.trace().channels.empty(); }))
      << s.live->status();
  EXPECT_EQ(s.live->state(), LiveSource::State::kStreaming);
  EXPECT_EQ(s.trace().nodes.size(), full.nodes.size());
  EXPECT_EQ(s.trace().channels.size(), 1u);

  // The first half of the run.
  const size_t half = full.events.size() / 2;
  for (size_t i = 0; i < half; ++i) srv.push(full.events[i]);
  ASSERT_TRUE(pump(&s, [&] { return s.index.indexed() == half; })) << s.index.indexed();
  double end = 0;
  for (size_t i = 0; i < half; ++i) end = std::max(end, full.events[i].end_us);
  EXPECT_DOUBLE_EQ(s.tl.end, end);
  EXPECT_DOUBLE_EQ(s.tl.t, end);  // following the newest event
  ASSERT_TRUE(pump(&s, [&] { return !s.load().series.empty(); }));
  EXPECT_TRUE(s.use_live_load);
  // Link 0 (gpu0 -> nvs0) carries rank 0's sends: busy at 15 us.
  EXPECT_GT(s.load_index.gbs_at(s.load(), 0, 15), 50);

  // Pausing stops following; the cursor stays while the run goes on.
  s.tl.pause();
  const double paused_at = s.tl.t;
  for (size_t i = half; i < full.events.size(); ++i) srv.push(full.events[i]);
  srv.push_ops(full.ops);
  srv.finish();
  ASSERT_TRUE(pump(&s, [&] { return s.live->state() == LiveSource::State::kComplete; })) << s.live->status();
  EXPECT_EQ(s.index.indexed(), full.events.size());
  EXPECT_DOUBLE_EQ(s.tl.t, paused_at);
  EXPECT_DOUBLE_EQ(s.tl.end, full.end_us());
  EXPECT_EQ(s.trace().ops.size(), 1u);
  EXPECT_EQ(s.current_op, 0);
  // Every link that carried traffic has a series.
  trace::Trace computed = full;
  trace::compute_link_load(&computed);
  pump(&s, [&] { return s.load().series.size() == computed.load.series.size(); }, 2);
  EXPECT_EQ(s.load().series.size(), computed.load.series.size());
  // Stepping works on the live index.
  s.tl.seek(0);
  s.tl.step_forward(s.index.boundaries(s.trace()));
  EXPECT_DOUBLE_EQ(s.tl.t, 2);
}

// --live with --screenshot (cclab viz --live SOCK --screenshot OUT.png, as on the GPU machine): the
// viewer reads the whole run before its one frame, then puts the cursor where --at says (or at the
// begin), with the run's own final link load.
TEST(Live, ScreenshotWaitsForTheRunToEnd) {
  const std::string sock = "/tmp/cclab_viz_live_shot_" + std::to_string(getpid()) + ".sock";
  const trace::Trace full = viz_test::small_trace();
  const trace::Trace header = header_of(full);
  for (bool at : {false, true}) {
    VizState s;
    s.opt.live_socket = sock;
    s.opt.live_wait_s = 10;
    s.opt.screenshot = "unused.png";
    s.opt.has_at = at;
    s.opt.at_is_percent = true;
    s.opt.at_us = 50;
    s.interactive = false;
    std::string err;
    ASSERT_TRUE(init_state(&s, &err)) << err;
    std::thread run([&] {
      trace::LiveServer srv;
      std::string e;
      if (!srv.start(sock, header, 5, &e)) return;  // waits up to 5 s for the viewer
      // Half the run, a pause in which the viewer sees only that half, then the rest.
      const size_t half = full.events.size() / 2;
      for (size_t i = 0; i < half; ++i) srv.push(full.events[i]);
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      for (size_t i = half; i < full.events.size(); ++i) srv.push(full.events[i]);
      srv.push_ops(full.ops);
      srv.finish();
    });
    const bool ok = follow_live_to_end(&s, &err);
    run.join();
    ASSERT_TRUE(ok) << err;
    EXPECT_EQ(s.live->state(), LiveSource::State::kComplete) << s.live->status();
    EXPECT_EQ(s.index.indexed(), full.events.size());
    EXPECT_FALSE(s.tl.follow);
    EXPECT_DOUBLE_EQ(s.tl.speed, default_speed(full.end_us() - full.begin_us()));  // the whole run's
    EXPECT_DOUBLE_EQ(s.tl.t, at ? full.begin_us() + (full.end_us() - full.begin_us()) / 2 : full.begin_us());
    trace::Trace computed = full;
    trace::compute_link_load(&computed);
    EXPECT_EQ(s.load().series.size(), computed.load.series.size());
  }
}

// --screenshot --live with no run to follow fails after --wait, saying why (no empty picture).
TEST(Live, ScreenshotWithoutARunFails) {
  VizState s;
  s.opt.live_socket = "/tmp/cclab_viz_live_nobody2_" + std::to_string(getpid()) + ".sock";
  s.opt.live_wait_s = 0.3;
  s.opt.screenshot = "unused.png";
  s.interactive = false;
  std::string err;
  ASSERT_TRUE(init_state(&s, &err)) << err;
  EXPECT_FALSE(follow_live_to_end(&s, &err));
  EXPECT_NE(err.find("cannot connect"), std::string::npos) << err;
}

TEST(Live, GivesUpAfterTheWait) {
  VizState s;
  s.opt.live_socket = "/tmp/cclab_viz_live_nobody_" + std::to_string(getpid()) + ".sock";
  s.opt.live_wait_s = 0.3;
  std::string err;
  ASSERT_TRUE(init_state(&s, &err)) << err;
  ASSERT_TRUE(pump(&s, [&] { return s.live->state() == LiveSource::State::kFailed; }, 5));
  EXPECT_NE(s.live->status().find("cannot connect"), std::string::npos) << s.live->status();
}

}  // namespace
}  // namespace viz
}  // namespace cclab
