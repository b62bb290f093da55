// tests/trace/trace_live_test.cc - the live stream (trace/live.h, docs/live.md): a viewer gets the
// header and every event pushed while it is attached, in order and field for field, plus the ops and
// the END; pushes before it attached are not sent; a viewer that leaves does not disturb the run and
// another can attach; header updates reach the attached viewer; a slow viewer loses nothing (the run
// waits on it), a stuck one is detached; errors (long path, a file in the way, no server) are clear.
// Also measures what push() costs with and without a viewer (printed, not asserted).
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "trace/live.h"
#include "trace/trace.h"

namespace cclab {
namespace trace {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double thread_cpu_s() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

std::string sock_path(const std::string& name) {
  return "/tmp/cclab_live_" + std::to_string(getpid()) + "_" + name + ".sock";
}

bool exists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

// 8 GPUs on an NVSwitch, both directions of each link, routes between all ranks, two channels.
Trace header(int nranks = 8) {
  Trace t;
  t.meta.tool = "cclab test";
  t.meta.backend = "sim";
  t.meta.topo_name = "live-test";
  t.meta.topo_description = "8 GPUs on one switch";
  t.meta.nranks = nranks;
  t.meta.clock = "simulated";
  t.meta.command = "trace_live_test";
  for (int g = 0; g < nranks; ++g) {
    Node n;
    n.name = "m0.gpu" + std::to_string(g);
    n.kind = "gpu";
    n.dev = g;
    n.rank = g;
    t.nodes.push_back(n);
  }
  Node sw;
  sw.name = "m0.nvs0";
  sw.kind = "nvswitch";
  t.nodes.push_back(sw);
  for (int g = 0; g < nranks; ++g) {  // link 2g: gpu -> switch, 2g+1: switch -> gpu
    Link up;
    up.from = g;
    up.to = nranks;
    up.reverse = 2 * g + 1;
    up.kind = "nvlink";
    up.gbs = 450;
    up.latency_us = 0.5 + g;
    Link down = up;
    down.from = nranks;
    down.to = g;
    down.reverse = 2 * g;
    t.links.push_back(up);
    t.links.push_back(down);
  }
  for (int a = 0; a < nranks; ++a)
    for (int b = 0; b < nranks; ++b) {
      if (a == b) continue;
      Route r;
      r.src = a;
      r.dst = b;
      r.links = {2 * a, 2 * b + 1};
      t.routes.push_back(r);
    }
  for (int c = 0; c < 2; ++c) {
    Channel ch;
    ch.index = c;
    for (int i = 0; i < nranks; ++i) ch.ring.push_back(c == 0 ? i : nranks - 1 - i);
    ch.tree_index = c;
    for (int r = 0; r < nranks; ++r) {
      ch.tree_up.push_back(r == 0 ? -1 : (r - 1) / 2);
      ch.tree_down.push_back({2 * r + 1 < nranks ? 2 * r + 1 : -1, 2 * r + 2 < nranks ? 2 * r + 2 : -1, -1});
    }
    t.channels.push_back(ch);
  }
  return t;
}

uint64_t mix(uint64_t x) {  // splitmix64: offsets and sizes that do not compress (the socket fills)
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Event i: every field differs from its neighbours' and is a function of i (times exact in ns).
Event make_event(uint64_t i, size_t nroutes = 56) {
  Event e;
  e.rank = static_cast<int32_t>(i % 8);
  e.channel = static_cast<int32_t>(i % 3);
  e.send_peer = i % 5 == 0 ? -1 : static_cast<int32_t>((i + 1) % 8);
  e.recv_peer = i % 7 == 0 ? -1 : static_cast<int32_t>((i + 7) % 8);
  e.op_count = i / 1000;
  e.step = i;
  e.prim = static_cast<PrimKind>(i % (static_cast<int>(PrimKind::kSendFromOutput) + 1));
  e.coll = static_cast<CollKind>(i % static_cast<int>(CollKind::kNumKinds));
  e.proto = static_cast<uint8_t>(i % 3);
  e.offset = mix(i);
  e.bytes = mix(~i) % (uint64_t(1) << 30);
  e.begin_us = static_cast<double>(i) * 0.25 + 0.001;
  e.data_us = e.begin_us + static_cast<double>(i % 13) * 0.125;
  e.end_us = e.data_us + 1.5 + static_cast<double>(i % 5) * 0.003;
  e.route = nroutes == 0 || i % 4 == 0 ? -1 : static_cast<int32_t>(i % nroutes);
  return e;
}

int64_t ns(double us) { return std::llround(us * 1000); }

// "" when equal, else the first field that differs.
std::string diff_event(const Event& a, const Event& b) {
  if (a.rank != b.rank) return "rank";
  if (a.channel != b.channel) return "channel";
  if (a.send_peer != b.send_peer) return "send_peer";
  if (a.recv_peer != b.recv_peer) return "recv_peer";
  if (a.op_count != b.op_count) return "op_count";
  if (a.step != b.step) return "step";
  if (a.prim != b.prim) return "prim";
  if (a.coll != b.coll) return "coll";
  if (a.proto != b.proto) return "proto";
  if (a.offset != b.offset) return "offset";
  if (a.bytes != b.bytes) return "bytes";
  if (ns(a.begin_us) != ns(b.begin_us)) return "begin_us";
  if (ns(a.data_us) != ns(b.data_us)) return "data_us";
  if (ns(a.end_us) != ns(b.end_us)) return "end_us";
  if (a.route != b.route) return "route";
  return "";
}

// Checks that `got` holds exactly make_event(first) ... make_event(first + n - 1).
void expect_events(const std::vector<Event>& got, uint64_t first, size_t n, size_t nroutes = 56) {
  ASSERT_EQ(got.size(), n);
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) {
    const std::string d = diff_event(got[i], make_event(first + i, nroutes));
    if (!d.empty() && bad++ < 5) ADD_FAILURE() << "event " << i << " differs in " << d;
  }
  EXPECT_EQ(bad, 0u);
}

void expect_header(const Trace& got, const Trace& want) {
  EXPECT_EQ(got.meta.tool, want.meta.tool);
  EXPECT_EQ(got.meta.backend, want.meta.backend);
  EXPECT_EQ(got.meta.topo_name, want.meta.topo_name);
  EXPECT_EQ(got.meta.nranks, want.meta.nranks);
  EXPECT_EQ(got.meta.command, want.meta.command);
  ASSERT_EQ(got.nodes.size(), want.nodes.size());
  for (size_t i = 0; i < want.nodes.size(); ++i) {
    EXPECT_EQ(got.nodes[i].name, want.nodes[i].name);
    EXPECT_EQ(got.nodes[i].kind, want.nodes[i].kind);
    EXPECT_EQ(got.nodes[i].rank, want.nodes[i].rank);
    EXPECT_EQ(got.nodes[i].dev, want.nodes[i].dev);
  }
  ASSERT_EQ(got.links.size(), want.links.size());
  for (size_t i = 0; i < want.links.size(); ++i) {
    EXPECT_EQ(got.links[i].from, want.links[i].from);
    EXPECT_EQ(got.links[i].to, want.links[i].to);
    EXPECT_EQ(got.links[i].reverse, want.links[i].reverse);
    EXPECT_EQ(got.links[i].kind, want.links[i].kind);
    EXPECT_DOUBLE_EQ(got.links[i].gbs, want.links[i].gbs);
    EXPECT_DOUBLE_EQ(got.links[i].latency_us, want.links[i].latency_us);
  }
  ASSERT_EQ(got.routes.size(), want.routes.size());
  for (size_t i = 0; i < want.routes.size(); ++i) {
    EXPECT_EQ(got.routes[i].src, want.routes[i].src);
    EXPECT_EQ(got.routes[i].dst, want.routes[i].dst);
    EXPECT_EQ(got.routes[i].links, want.routes[i].links);
  }
  ASSERT_EQ(got.channels.size(), want.channels.size());
  for (size_t i = 0; i < want.channels.size(); ++i) {
    EXPECT_EQ(got.channels[i].index, want.channels[i].index);
    EXPECT_EQ(got.channels[i].ring, want.channels[i].ring);
    EXPECT_EQ(got.channels[i].tree_index, want.channels[i].tree_index);
    EXPECT_EQ(got.channels[i].tree_up, want.channels[i].tree_up);
    EXPECT_EQ(got.channels[i].tree_down, want.channels[i].tree_down);
  }
}

Op make_op(uint64_t op_count) {
  Op o;
  o.op_count = op_count;
  o.coll = op_count % 2 ? CollKind::kAllGather : CollKind::kAllReduce;
  o.algo = op_count % 2 ? "Tree" : "Ring";
  o.proto = "Simple";
  o.type = "float";
  o.redop = op_count % 2 ? "" : "sum";
  o.count = 1000 + op_count;
  o.bytes = 4000 + 4 * op_count;
  o.nchannels = 2;
  o.begin_us = 10.0 * static_cast<double>(op_count);
  o.end_us = o.begin_us + 7.5;
  o.algbw = 1.5;
  o.busbw = 2.625;
  return o;
}

// A viewer on its own thread: connects (waiting up to `wait_s`), optionally sleeps before reading
// and between reads, and reads until the stream ends.
struct Viewer {
  std::string path;
  double wait_s = 5;
  int delay_ms = 0;       // before the first read
  int between_ms = 0;     // after each read
  bool connected = false;
  std::string connect_error, error;
  TraceStreamDecoder dec;
  std::thread th;

  void start() {
    th = std::thread([this] {
      LiveClient cli;
      connected = cli.connect(path, wait_s, &connect_error);
      if (!connected) return;
      if (delay_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
      while (cli.poll(&dec, 100))
        if (between_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(between_ms));
      error = cli.error();
    });
  }
  void join() {
    if (th.joinable()) th.join();
  }
};

bool wait_until(const std::function<bool()>& cond, double timeout_s) {
  const auto t0 = Clock::now();
  while (!cond()) {
    if (seconds_since(t0) > timeout_s) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// Polls `cli` until the decoder holds `n` events (or the stream ends / times out).
bool read_until(LiveClient* cli, TraceStreamDecoder* dec, size_t n, double timeout_s) {
  const auto t0 = Clock::now();
  while (dec->trace().events.size() < n) {
    if (seconds_since(t0) > timeout_s) return false;
    if (!cli->poll(dec, 10)) return dec->trace().events.size() >= n;
  }
  return true;
}

// ---- the stream ---------------------------------------------------------------------------------

TEST(LiveStream, ViewerGetsHeaderEveryEventInOrderOpsAndEnd) {
  const std::string path = sock_path("all");
  const Trace h = header();
  const size_t n = 200000;
  Viewer v;
  v.path = path;
  v.start();
  LiveServer srv;
  std::string err;
  ASSERT_TRUE(srv.start(path, h, 5, &err)) << err;
  ASSERT_TRUE(srv.attached());  // start() waited for the viewer
  EXPECT_EQ(srv.path(), path);
  // Half pushed one by one, half in batches; ops between the events.
  for (uint64_t i = 0; i < n / 2; ++i) {
    srv.push(make_event(i));
    if (i == 1000) srv.push_ops({make_op(0), make_op(1)});
  }
  std::vector<Event> batch;
  for (uint64_t i = n / 2; i < n; i += batch.size()) {
    batch.clear();
    for (uint64_t j = i; j < std::min<uint64_t>(n, i + 999); ++j) batch.push_back(make_event(j));
    srv.push(batch.data(), batch.size());
  }
  srv.push_ops({make_op(2)});
  srv.finish();
  v.join();
  EXPECT_FALSE(exists(path)) << "finish() removes the socket file";
  ASSERT_TRUE(v.connected) << v.connect_error;
  EXPECT_TRUE(v.error.empty()) << v.error;
  EXPECT_TRUE(v.dec.error().empty()) << v.dec.error();
  EXPECT_TRUE(v.dec.complete());
  EXPECT_EQ(srv.events_sent(), n);
  const Trace& t = v.dec.trace();
  expect_header(t, h);
  expect_events(t.events, 0, n);
  ASSERT_EQ(t.ops.size(), 3u);
  for (uint64_t k = 0; k < 3; ++k) {
    const Op want = make_op(k);
    EXPECT_EQ(t.ops[k].op_count, want.op_count);
    EXPECT_EQ(t.ops[k].coll, want.coll);
    EXPECT_EQ(t.ops[k].algo, want.algo);
    EXPECT_EQ(t.ops[k].redop, want.redop);
    EXPECT_EQ(t.ops[k].count, want.count);
    EXPECT_EQ(t.ops[k].bytes, want.bytes);
    EXPECT_DOUBLE_EQ(t.ops[k].end_us, want.end_us);
    EXPECT_DOUBLE_EQ(t.ops[k].busbw, want.busbw);
  }
  srv.finish();  // idempotent
}

TEST(LiveStream, PushesBeforeTheViewerAttachedAreNotSent) {
  const std::string path = sock_path("detached");
  const Trace h = header();
  LiveServer srv;
  std::string err;
  ASSERT_TRUE(srv.start(path, h, 0, &err)) << err;
  EXPECT_FALSE(srv.attached());
  for (uint64_t i = 0; i < 1000; ++i) srv.push(make_event(i));
  srv.push_ops({make_op(0)});
  EXPECT_EQ(srv.events_sent(), 0u);

  LiveClient cli;
  ASSERT_TRUE(cli.connect(path, 2, &err)) << err;
  ASSERT_TRUE(wait_until([&] { return srv.attached(); }, 5));
  for (uint64_t i = 5000; i < 5010; ++i) srv.push(make_event(i));
  // Fewer events than a block: they still arrive promptly (the sender flushes every 20 ms).
  TraceStreamDecoder dec;
  const auto t0 = Clock::now();
  ASSERT_TRUE(read_until(&cli, &dec, 10, 5)) << cli.error();
  EXPECT_LT(seconds_since(t0), 1.0);
  EXPECT_FALSE(dec.complete());
  srv.finish();
  while (cli.poll(&dec, 100)) {
  }
  EXPECT_TRUE(dec.complete()) << cli.error();
  EXPECT_TRUE(cli.error().empty()) << cli.error();
  expect_header(dec.trace(), h);
  expect_events(dec.trace().events, 5000, 10);
  EXPECT_TRUE(dec.trace().ops.empty());
  EXPECT_EQ(srv.events_sent(), 10u);
}

// The doctor's reports (STUK): one pushed before the viewer attached comes right after the header, one
// pushed while it is attached at its place among the events; a report naming a rank the header lacks is
// left out (the decoder would refuse it).
TEST(LiveStream, StuckReportsReachTheViewer) {
  const std::string path = sock_path("stuck");
  const Trace h = header(8);
  LiveServer srv;
  std::string err;
  ASSERT_TRUE(srv.start(path, h, 0, &err)) << err;
  Stuck early;
  early.time_us = 5;
  early.summary = "rank 7 has not called collective #0";
  early.ranks.push_back({7, 42, "idle", "rank 7 (pid 42): has begun no operation"});
  srv.push_stuck({early});
  LiveClient cli;
  ASSERT_TRUE(cli.connect(path, 2, &err)) << err;
  ASSERT_TRUE(wait_until([&] { return srv.attached(); }, 5));
  for (uint64_t i = 0; i < 10; ++i) srv.push(make_event(i));
  Stuck late;
  late.time_us = 2e6;
  late.certain = true;
  late.code = 5;
  late.summary = "rank 3 left the communicator";
  StuckWait w;
  w.rank = 0;
  w.peer = 3;
  w.step = 2;
  w.for_data = false;
  late.waits.push_back(w);
  Stuck bad = late;
  bad.waits[0].peer = 8;
  srv.push_stuck({late, bad});
  for (uint64_t i = 10; i < 20; ++i) srv.push(make_event(i));
  srv.finish();
  TraceStreamDecoder dec;
  while (cli.poll(&dec, 100)) {
  }
  EXPECT_TRUE(dec.complete()) << cli.error() << dec.error();
  expect_events(dec.trace().events, 0, 20);
  ASSERT_EQ(dec.trace().stuck.size(), 2u);
  EXPECT_EQ(dec.trace().stuck[0].summary, early.summary);
  ASSERT_EQ(dec.trace().stuck[0].ranks.size(), 1u);
  EXPECT_EQ(dec.trace().stuck[0].ranks[0].line, early.ranks[0].line);
  EXPECT_EQ(dec.trace().stuck[1].summary, late.summary);
  EXPECT_TRUE(dec.trace().stuck[1].certain);
  ASSERT_EQ(dec.trace().stuck[1].waits.size(), 1u);
  EXPECT_EQ(dec.trace().stuck[1].waits[0].peer, 3);
  EXPECT_FALSE(dec.trace().stuck[1].waits[0].for_data);
}

TEST(LiveStream, ViewerThatLeavesDoesNotDisturbTheRunAndAnotherCanAttach) {
  const std::string path = sock_path("leave");
  const Trace h = header();
  LiveServer srv;
  std::string err;
  ASSERT_TRUE(srv.start(path, h, 0, &err)) << err;
  {
    LiveClient first;
    ASSERT_TRUE(first.connect(path, 2, &err)) << err;
    ASSERT_TRUE(wait_until([&] { return srv.attached(); }, 5));
    for (uint64_t i = 0; i < 1000; ++i) srv.push(make_event(i));
    TraceStreamDecoder dec;
    ASSERT_TRUE(read_until(&first, &dec, 1000, 5)) << first.error();
    expect_events(dec.trace().events, 0, 1000);
    first.close();
  }
  // The run goes on: pushes neither fail nor block while the server notices, and after.
  const auto t0 = Clock::now();
  uint64_t i = 1000;
  while (srv.attached() && seconds_since(t0) < 5) srv.push(make_event(i++));
  EXPECT_FALSE(srv.attached()) << "the server did not notice the viewer left";
  for (int k = 0; k < 100000; ++k) srv.push(make_event(i++));
  EXPECT_LT(seconds_since(t0), 5.0);

  LiveClient second;
  ASSERT_TRUE(second.connect(path, 2, &err)) << err;
  ASSERT_TRUE(wait_until([&] { return srv.attached(); }, 5));
  for (uint64_t k = 1000000; k < 1000500; ++k) srv.push(make_event(k));
  srv.push_ops({make_op(7)});
  srv.finish();
  TraceStreamDecoder dec;
  while (second.poll(&dec, 100)) {
  }
  EXPECT_TRUE(dec.complete()) << second.error() << dec.error();
  expect_header(dec.trace(), h);
  expect_events(dec.trace().events, 1000000, 500);
  ASSERT_EQ(dec.trace().ops.size(), 1u);
  EXPECT_EQ(dec.trace().ops[0].op_count, 7u);
}

TEST(LiveStream, HeaderUpdateReachesTheAttachedViewerBeforeLaterEvents) {
  const std::string path = sock_path("hdr");
  Trace bare = header();
  bare.routes.clear();
  bare.channels.clear();
  const Trace full = header();
  Viewer v;
  v.path = path;
  v.start();
  LiveServer srv;
  std::string err;
  ASSERT_TRUE(srv.start(path, bare, 5, &err)) << err;
  ASSERT_TRUE(srv.attached());
  for (uint64_t i = 0; i < 100; ++i) srv.push(make_event(i, 0));  // no routes yet
  srv.set_header(full);
  for (uint64_t i = 100; i < 200; ++i) srv.push(make_event(i));  // events on the new routes
  srv.finish();
  v.join();
  EXPECT_TRUE(v.error.empty()) << v.error << v.dec.error();
  EXPECT_TRUE(v.dec.complete());
  expect_header(v.dec.trace(), full);
  const std::vector<Event>& ev = v.dec.trace().events;
  ASSERT_EQ(ev.size(), 200u);
  expect_events(std::vector<Event>(ev.begin(), ev.begin() + 100), 0, 100, 0);
  expect_events(std::vector<Event>(ev.begin() + 100, ev.end()), 100, 100);

  // A later viewer gets the updated header from the start.
  LiveServer srv2;
  ASSERT_TRUE(srv2.start(path, bare, 0, &err)) << err;
  srv2.set_header(full);
  LiveClient cli;
  ASSERT_TRUE(cli.connect(path, 2, &err)) << err;
  ASSERT_TRUE(wait_until([&] { return srv2.attached(); }, 5));
  srv2.finish();
  TraceStreamDecoder dec;
  while (cli.poll(&dec, 100)) {
  }
  EXPECT_TRUE(dec.complete()) << cli.error();
  expect_header(dec.trace(), full);
  EXPECT_EQ(dec.sections(), 4u);  // META, TOPO, CHAN, END: the header once
}

// ---- slow and stuck viewers -----------------------------------------------------------------

// An update may not take away what events already sent use (the viewer's decoder refuses that, see
// TraceFormat.ReplacedHeaderSectionsMustFitWhatCameBefore): the server keeps the viewer on the header it
// has. Before any event, fewer ranks are fine, and META then follows the TOPO and CHAN that fit it.
TEST(LiveStream, HeaderUpdatesKeepWhatEventsAlreadyUse) {
  const std::string path = sock_path("shrink");
  const Trace full = header();
  Trace no_routes = full;
  no_routes.routes.clear();
  {
    Viewer v;
    v.path = path;
    v.start();
    LiveServer srv;
    std::string err;
    ASSERT_TRUE(srv.start(path, full, 5, &err)) << err;
    ASSERT_TRUE(srv.attached());
    for (uint64_t i = 0; i < 100; ++i) srv.push(make_event(i));
    srv.set_header(no_routes);  // the events above use routes: not sent
    for (uint64_t i = 100; i < 200; ++i) srv.push(make_event(i));
    srv.finish();
    v.join();
    EXPECT_TRUE(v.error.empty()) << v.error << v.dec.error();
    EXPECT_TRUE(v.dec.complete());
    expect_header(v.dec.trace(), full);
    expect_events(v.dec.trace().events, 0, 200);
  }
  {
    const Trace two = header(2);
    ASSERT_LT(two.routes.size(), full.routes.size());
    Viewer v;
    v.path = path;
    v.start();
    LiveServer srv;
    std::string err;
    ASSERT_TRUE(srv.start(path, full, 5, &err)) << err;
    ASSERT_TRUE(srv.attached());
    srv.set_header(two);  // before any event: 8 ranks become 2
    std::vector<Event> evs;
    for (uint64_t i = 0; i < 50; ++i) {
      Event e = make_event(i, two.routes.size());
      e.rank = static_cast<int32_t>(i % 2);
      e.send_peer = e.send_peer < 0 ? -1 : static_cast<int32_t>((i + 1) % 2);
      e.recv_peer = e.recv_peer < 0 ? -1 : static_cast<int32_t>((i + 1) % 2);
      evs.push_back(e);
      srv.push(e);
    }
    srv.finish();
    v.join();
    EXPECT_TRUE(v.error.empty()) << v.error << v.dec.error();
    EXPECT_TRUE(v.dec.complete()) << v.dec.error();
    expect_header(v.dec.trace(), two);
    ASSERT_EQ(v.dec.trace().events.size(), evs.size());
    for (size_t i = 0; i < evs.size(); ++i) EXPECT_EQ(diff_event(v.dec.trace().events[i], evs[i]), "") << i;
  }
}

TEST(LiveStream, SlowViewerLosesNothingTheRunWaitsForIt) {
  const std::string path = sock_path("slow");
  const Trace h = header();
  const size_t n = (size_t(1) << 18) + 250000;  // more than the server's queue holds
  Viewer v;
  v.path = path;
  v.delay_ms = 600;  // reads nothing for a while, then slowly
  v.between_ms = 2;
  v.start();
  LiveServer srv;
  std::string err;
  ASSERT_TRUE(srv.start(path, h, 5, &err)) << err;
  ASSERT_TRUE(srv.attached());
  const auto t0 = Clock::now();
  for (uint64_t i = 0; i < n; ++i) srv.push(make_event(i));
  const double push_s = seconds_since(t0);
  srv.finish(30);
  v.join();
  // Without a bound the pushes take a few ms; with it they waited for the viewer to start reading.
  EXPECT_GT(push_s, 0.3);
  EXPECT_TRUE(v.error.empty()) << v.error << v.dec.error();
  EXPECT_TRUE(v.dec.complete());
  expect_events(v.dec.trace().events, 0, n);
  std::printf("[ slow     ] %zu events through a viewer that slept 0.6 s: pushes took %.2f s\n", n, push_s);
}

TEST(LiveStream, StuckViewerIsDetachedAfterTenSecondsAndTheRunFinishes) {
  const std::string path = sock_path("stuck");
  LiveServer srv;
  std::string err;
  ASSERT_TRUE(srv.start(path, header(), 0, &err)) << err;
  LiveClient cli;  // connects and never reads
  ASSERT_TRUE(cli.connect(path, 2, &err)) << err;
  ASSERT_TRUE(wait_until([&] { return srv.attached(); }, 5));
  const auto t0 = Clock::now();
  const size_t n = (size_t(1) << 18) + 500000;
  for (uint64_t i = 0; i < n; ++i) srv.push(make_event(i));
  const double push_s = seconds_since(t0);
  EXPECT_FALSE(srv.attached());
  EXPECT_GT(push_s, 9.5);
  EXPECT_LT(push_s, 20.0);
  const auto t1 = Clock::now();
  srv.finish(1);
  EXPECT_LT(seconds_since(t1), 2.0);
  TraceStreamDecoder dec;
  while (cli.poll(&dec, 100)) {
  }
  EXPECT_FALSE(dec.complete());
  EXPECT_EQ(cli.error(), "the run closed the stream before its end");
}

// ---- errors and edges -----------------------------------------------------------------------

TEST(LiveStream, PathTooLongIsAClearError) {
  const std::string path = "/tmp/" + std::string(150, 'x') + ".sock";
  LiveServer srv;
  std::string err;
  EXPECT_FALSE(srv.start(path, header(), 0, &err));
  EXPECT_NE(err.find(path), std::string::npos) << err;
  EXPECT_NE(err.find(std::to_string(sizeof(sockaddr_un::sun_path) - 1)), std::string::npos) << err;
  LiveClient cli;
  EXPECT_FALSE(cli.connect(path, 0, &err));
  EXPECT_NE(err.find("at most"), std::string::npos) << err;
}

TEST(LiveStream, ARegularFileInTheWayIsAnErrorAndIsKept) {
  const std::string path = sock_path("file");
  FILE* f = fopen(path.c_str(), "w");
  ASSERT_TRUE(f);
  fputs("keep me", f);
  fclose(f);
  LiveServer srv;
  std::string err;
  EXPECT_FALSE(srv.start(path, header(), 0, &err));
  EXPECT_NE(err.find(path), std::string::npos) << err;
  EXPECT_NE(err.find("not a socket"), std::string::npos) << err;
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 7);
  unlink(path.c_str());
}

TEST(LiveStream, StaleSocketIsReplacedALiveOneIsNot) {
  const std::string path = sock_path("stale");
  {  // a socket file nobody listens on (a run that crashed)
    const int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
    ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    close(fd);
  }
  ASSERT_TRUE(exists(path));
  LiveServer srv;
  std::string err;
  ASSERT_TRUE(srv.start(path, header(), 0, &err)) << err;
  LiveClient cli;
  ASSERT_TRUE(cli.connect(path, 2, &err)) << err;
  ASSERT_TRUE(wait_until([&] { return srv.attached(); }, 5));
  // A second run on the same path is refused (its probe connection does not disturb the viewer).
  LiveServer other;
  EXPECT_FALSE(other.start(path, header(), 0, &err));
  EXPECT_NE(err.find("another run"), std::string::npos) << err;
  EXPECT_TRUE(exists(path));
  for (uint64_t i = 0; i < 10; ++i) srv.push(make_event(i));
  srv.finish();
  TraceStreamDecoder dec;
  while (cli.poll(&dec, 100)) {
  }
  EXPECT_TRUE(dec.complete()) << cli.error();
  expect_events(dec.trace().events, 0, 10);
  EXPECT_FALSE(exists(path));
}

TEST(LiveStream, ConnectingToNothingFailsWithinTheWait) {
  const std::string path = sock_path("nothing");
  LiveClient cli;
  std::string err;
  const auto t0 = Clock::now();
  EXPECT_FALSE(cli.connect(path, 0.2, &err));
  const double s = seconds_since(t0);
  EXPECT_GE(s, 0.19);
  EXPECT_LT(s, 0.5);
  EXPECT_NE(err.find(path), std::string::npos) << err;
  EXPECT_NE(err.find("No such file"), std::string::npos) << err;
  EXPECT_EQ(cli.error(), err);
  TraceStreamDecoder dec;
  EXPECT_FALSE(cli.poll(&dec, 0));
}

TEST(LiveStream, RunThatEndsWhileTheViewerWaitsGivesACompleteStream) {
  const std::string path = sock_path("end");
  const Trace h = header();
  Viewer v;  // started before the run: connect() waits for the socket
  v.path = path;
  v.start();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  LiveServer srv;
  std::string err;
  ASSERT_TRUE(srv.start(path, h, 5, &err)) << err;
  ASSERT_TRUE(srv.attached());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  srv.finish();
  v.join();
  ASSERT_TRUE(v.connected) << v.connect_error;
  EXPECT_TRUE(v.error.empty()) << v.error;
  EXPECT_TRUE(v.dec.complete());
  expect_header(v.dec.trace(), h);
  EXPECT_TRUE(v.dec.trace().events.empty());
}

TEST(LiveStream, ASecondViewerIsRefusedWhileOneIsAttached) {
  const std::string path = sock_path("second");
  LiveServer srv;
  std::string err;
  ASSERT_TRUE(srv.start(path, header(), 0, &err)) << err;
  LiveClient first, second;
  ASSERT_TRUE(first.connect(path, 2, &err)) << err;
  ASSERT_TRUE(wait_until([&] { return srv.attached(); }, 5));
  ASSERT_TRUE(second.connect(path, 2, &err)) << err;  // the kernel accepts; the server then refuses
  TraceStreamDecoder dec2;
  const auto t0 = Clock::now();
  while (second.poll(&dec2, 100) && seconds_since(t0) < 5) {
  }
  EXPECT_NE(second.error().find("another viewer"), std::string::npos) << second.error();
  EXPECT_FALSE(dec2.header_seen());
  // The first is unaffected.
  for (uint64_t i = 0; i < 10; ++i) srv.push(make_event(i));
  srv.finish();
  TraceStreamDecoder dec;
  while (first.poll(&dec, 100)) {
  }
  EXPECT_TRUE(dec.complete()) << first.error();
  expect_events(dec.trace().events, 0, 10);
}

// ---- cost ---------------------------------------------------------------------------------------

TEST(LiveStream, PushCost) {
  const std::string path = sock_path("cost");
  LiveServer srv;
  std::string err;
  ASSERT_TRUE(srv.start(path, header(), 0, &err)) << err;
  std::vector<Event> ev;
  for (uint64_t i = 0; i < 4096; ++i) ev.push_back(make_event(i));
  // Nobody attached: the inline check only.
  const size_t nd = 20000000;
  auto t0 = Clock::now();
  for (size_t i = 0; i < nd; ++i) srv.push(ev[i & 4095]);
  const double detached_ns = seconds_since(t0) * 1e9 / static_cast<double>(nd);
  // A viewer reading as fast as it can.
  Viewer v;
  v.path = path;
  v.start();
  ASSERT_TRUE(wait_until([&] { return srv.attached(); }, 5));
  // A burst that fits in the queue, after one that warmed it up: wall time (on a 2-core machine the
  // sender's encoding and the viewer's decoding compete with the pushing thread) and the pushing
  // thread's own CPU time.
  const size_t nb = 100000;
  for (size_t i = 0; i < nb; ++i) srv.push(ev[i & 4095]);
  ASSERT_TRUE(wait_until([&] { return srv.events_sent() == nb; }, 10));
  t0 = Clock::now();
  const double cpu0 = thread_cpu_s();
  for (size_t i = 0; i < nb; ++i) srv.push(ev[i & 4095]);
  const double attached_cpu_ns = (thread_cpu_s() - cpu0) * 1e9 / static_cast<double>(nb);
  const double attached_ns = seconds_since(t0) * 1e9 / static_cast<double>(nb);
  ASSERT_TRUE(wait_until([&] { return srv.events_sent() == 2 * nb; }, 10));
  // A long run: bound by how fast the sender encodes and the viewer decodes (push() waits for room).
  const size_t na = 2000000;
  t0 = Clock::now();
  for (size_t i = 0; i < na; ++i) srv.push(ev[i & 4095]);
  srv.finish(30);
  const double sustained_s = seconds_since(t0);
  v.join();
  EXPECT_TRUE(v.dec.complete()) << v.error;
  EXPECT_EQ(v.dec.trace().events.size(), 2 * nb + na);
  std::printf("[ cost     ] push(): %.2f ns detached; attached (a %zu-event burst): %.0f ns wall, %.0f ns CPU of the "
              "pushing thread; sustained with a viewer decoding: %.2f M events/s (%zu events in %.2f s)\n",
              detached_ns, nb, attached_ns, attached_cpu_ns, static_cast<double>(na) / sustained_s / 1e6, na,
              sustained_s);
  RecordProperty("push_detached_ns", std::to_string(detached_ns));
  RecordProperty("push_attached_ns", std::to_string(attached_ns));
  RecordProperty("push_attached_cpu_ns", std::to_string(attached_cpu_ns));
}

}  // namespace
}  // namespace trace
}  // namespace cclab
