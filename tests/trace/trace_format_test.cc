// tests/trace/trace_format_test.cc - the trace file (docs/trace-format.md): every field round-trips,
// the streaming writer and the stream decoder agree with the whole-file ones, every kind of damaged
// file gets its specific message (and arbitrary damage never crashes), the format is compact on a
// realistic trace, and the link load conserves bytes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/work.h"
#include "trace/codec.h"
#include "trace/merge.h"
#include "trace/trace.h"

namespace cclab {
namespace trace {
namespace {

// ---- fixtures -----------------------------------------------------------------------------------

std::string scratch_path(const std::string& name) {
  const char* dir = getenv("TMPDIR");
  return std::string(dir && *dir ? dir : "/tmp") + "/cclab_trace_format_" + std::to_string(getpid()) + "_" + name;
}

std::string read_file(const std::string& path) {
  std::string out;
  FILE* f = fopen(path.c_str(), "rb");
  if (!f) return out;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  fclose(f);
  return out;
}

void write_file(const std::string& path, const std::string& bytes) {
  FILE* f = fopen(path.c_str(), "wb");
  ASSERT_TRUE(f);
  fwrite(bytes.data(), 1, bytes.size(), f);
  fclose(f);
}

// A small topology: 4 GPUs on one NVSwitch (machine 0) plus a NIC, routes between ring neighbours.
Trace small_header(int nranks = 4) {
  Trace t;
  t.meta.tool = "cclab 0.1.0";
  t.meta.backend = "sim";
  t.meta.topo_name = "dgx-test";
  t.meta.topo_description = "4 GPUs, \"quoted\" \\ and a tab\t and \xc3\xa9";
  t.meta.machines = 1;
  t.meta.nranks = nranks;
  t.meta.clock = "simulated";
  t.meta.command = "cclab sim --trace x.cctrace all_reduce";
  t.meta.created = "2024-05-01T12:00:00Z";
  for (int g = 0; g < nranks; ++g) {
    Node n;
    n.name = "m0.gpu" + std::to_string(g);
    n.kind = "gpu";
    n.machine = 0;
    n.dev = g;
    n.rank = g;
    t.nodes.push_back(n);
  }
  Node sw;
  sw.name = "m0.nvs0";
  sw.kind = "nvswitch";
  sw.machine = 0;
  t.nodes.push_back(sw);
  Node net;
  net.name = "fabric.leaf.0";
  net.kind = "switch";
  net.machine = -1;
  t.nodes.push_back(net);
  const int s = nranks;
  for (int g = 0; g < nranks; ++g) {  // links 2g: gpu -> switch, 2g+1: switch -> gpu
    Link up, down;
    up.from = g;
    up.to = s;
    up.reverse = 2 * g + 1;
    up.kind = "nvlink";
    up.gbs = 450.5;
    up.latency_us = 0.7;
    down = up;
    down.from = s;
    down.to = g;
    down.reverse = 2 * g;
    t.links.push_back(up);
    t.links.push_back(down);
  }
  Link nl;
  nl.from = s;
  nl.to = s + 1;
  nl.kind = "net";
  nl.gbs = 50;
  nl.latency_us = 1.0 / 3.0;
  nl.degraded = 0.5;  // cclab sim --degrade: half its bandwidth from 100 us
  nl.degraded_at_us = 100;
  t.links.push_back(nl);
  t.links[1].degraded = 0;  // --fail from 0
  t.links[1].degraded_at_us = 0;
  for (int a = 0; a < nranks; ++a)
    for (int d : {1, nranks - 1}) {
      const int b = (a + d) % nranks;
      if (b == a) continue;
      Route r;
      r.src = a;
      r.dst = b;
      r.links = std::vector<int>{2 * a, 2 * b + 1};
      t.routes.push_back(r);
    }
  for (int c = 0; c < 2; ++c) {
    Channel ch;
    ch.index = c;
    for (int i = 0; i < nranks; ++i) ch.ring.push_back(c == 0 ? i : nranks - 1 - i);
    ch.tree_index = c;
    for (int r = 0; r < nranks; ++r) {
      ch.tree_up.push_back(r == 0 ? -1 : (r - 1) / 2);
      std::array<int, 3> d{-1, -1, -1};
      if (2 * r + 1 < nranks) d[0] = 2 * r + 1;
      if (2 * r + 2 < nranks) d[1] = 2 * r + 2;
      ch.tree_down.push_back(d);
    }
    t.channels.push_back(ch);
  }
  return t;
}

Op make_op(uint64_t op_count, CollKind coll) {
  Op o;
  o.op_count = op_count;
  o.coll = coll;
  o.algo = op_count % 2 ? "Tree" : "Ring";
  o.proto = op_count % 3 == 0 ? "LL" : "Simple";
  o.type = "half";
  o.redop = coll == CollKind::kAllGather ? "" : "sum";
  o.root = coll == CollKind::kBroadcast ? 2 : -1;
  o.count = (size_t(1) << 33) + op_count;
  o.bytes = o.count * 2;
  o.nchannels = 2;
  o.begin_us = 1.25 + op_count;
  o.end_us = 1e6 / 7.0 + op_count;
  o.algbw = 123.456789012345;
  o.busbw = 0.1 + 0.2;
  return o;
}

// `n` events cycling through every primitive, collective and protocol, with routes where they send.
std::vector<Event> varied_events(const Trace& h, size_t n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Event> ev;
  const int nr = h.meta.nranks;
  for (size_t i = 0; i < n; ++i) {
    Event e;
    e.rank = static_cast<int32_t>(rng() % nr);
    e.channel = static_cast<int32_t>(rng() % 2);
    e.send_peer = rng() % 5 == 0 ? -1 : (e.rank + 1) % nr;
    e.recv_peer = rng() % 5 == 0 ? -1 : (e.rank + nr - 1) % nr;
    e.op_count = i / 1000 + (i % 7 == 0 ? (uint64_t(1) << 63) : 0);
    e.step = i * 2 + (i % 11 == 0 ? ~uint64_t(0) - 5 : 0);
    e.prim = static_cast<PrimKind>(i % 9);
    e.coll = static_cast<CollKind>(i % 6);
    e.proto = static_cast<uint8_t>(i % 3);
    e.offset = (i % 13 == 0) ? ~uint64_t(0) : i * 4096;
    e.bytes = (i % 17 == 0) ? (uint64_t(1) << 62) : 4096 + rng() % 100;
    e.begin_us = i * 0.731 - 5.0 + (rng() % 1000) * 1e-6;
    e.data_us = e.begin_us + (rng() % 3000) * 1e-3;
    e.end_us = e.data_us + (rng() % 9000) * 1e-3;
    e.route = e.send_peer >= 0 ? h.route_index(e.rank, e.send_peer) : -1;
    ev.push_back(e);
  }
  return ev;
}

// A trace with every field set: header, events (2 blocks), ops, load.
Trace full_trace(size_t nevents = 1000) {
  Trace t = small_header();
  t.events = varied_events(t, nevents, 7);
  for (uint64_t i = 0; i < 6; ++i) t.ops.push_back(make_op(i, static_cast<CollKind>(i % 6)));
  compute_link_load(&t, 50);
  return t;
}

int64_t ns(double us) { return std::llround(us * 1000.0); }

void expect_same_double(double a, double b, const char* what) {
  if (std::isnan(a)) {
    EXPECT_TRUE(std::isnan(b)) << what;
  } else {
    EXPECT_EQ(a, b) << what;
  }
}

void expect_same_events(const std::vector<Event>& a, const std::vector<Event>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    const Event &x = a[i], &y = b[i];
    SCOPED_TRACE("event " + std::to_string(i));
    EXPECT_EQ(x.rank, y.rank);
    EXPECT_EQ(x.channel, y.channel);
    EXPECT_EQ(x.send_peer, y.send_peer);
    EXPECT_EQ(x.recv_peer, y.recv_peer);
    EXPECT_EQ(x.op_count, y.op_count);
    EXPECT_EQ(x.step, y.step);
    EXPECT_EQ(x.prim, y.prim);
    EXPECT_EQ(x.coll, y.coll);
    EXPECT_EQ(x.proto, y.proto);
    EXPECT_EQ(x.offset, y.offset);
    EXPECT_EQ(x.bytes, y.bytes);
    EXPECT_EQ(x.route, y.route);
    // Times: exact to the nanosecond.
    EXPECT_EQ(ns(x.begin_us), ns(y.begin_us));
    EXPECT_EQ(ns(x.data_us), ns(y.data_us));
    EXPECT_EQ(ns(x.end_us), ns(y.end_us));
    EXPECT_NEAR(x.begin_us, y.begin_us, 0.0005 + 1e-9 * std::fabs(x.begin_us));
    if (testing::Test::HasFailure()) return;
  }
}

void expect_same_trace(const Trace& a, const Trace& b) {
  EXPECT_EQ(a.meta.tool, b.meta.tool);
  EXPECT_EQ(a.meta.backend, b.meta.backend);
  EXPECT_EQ(a.meta.topo_name, b.meta.topo_name);
  EXPECT_EQ(a.meta.topo_description, b.meta.topo_description);
  EXPECT_EQ(a.meta.machines, b.meta.machines);
  EXPECT_EQ(a.meta.nranks, b.meta.nranks);
  EXPECT_EQ(a.meta.clock, b.meta.clock);
  EXPECT_EQ(a.meta.command, b.meta.command);
  EXPECT_EQ(a.meta.created, b.meta.created);
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    EXPECT_EQ(a.nodes[i].name, b.nodes[i].name);
    EXPECT_EQ(a.nodes[i].kind, b.nodes[i].kind);
    EXPECT_EQ(a.nodes[i].machine, b.nodes[i].machine);
    EXPECT_EQ(a.nodes[i].dev, b.nodes[i].dev);
    EXPECT_EQ(a.nodes[i].rank, b.nodes[i].rank);
  }
  ASSERT_EQ(a.links.size(), b.links.size());
  for (size_t i = 0; i < a.links.size(); ++i) {
    EXPECT_EQ(a.links[i].from, b.links[i].from);
    EXPECT_EQ(a.links[i].to, b.links[i].to);
    EXPECT_EQ(a.links[i].reverse, b.links[i].reverse);
    EXPECT_EQ(a.links[i].kind, b.links[i].kind);
    expect_same_double(a.links[i].gbs, b.links[i].gbs, "gbs");
    expect_same_double(a.links[i].latency_us, b.links[i].latency_us, "latency_us");
    expect_same_double(a.links[i].degraded, b.links[i].degraded, "degraded");
    expect_same_double(a.links[i].degraded_at_us, b.links[i].degraded_at_us, "degraded_at_us");
  }
  ASSERT_EQ(a.routes.size(), b.routes.size());
  for (size_t i = 0; i < a.routes.size(); ++i) {
    EXPECT_EQ(a.routes[i].src, b.routes[i].src);
    EXPECT_EQ(a.routes[i].dst, b.routes[i].dst);
    EXPECT_EQ(a.routes[i].links, b.routes[i].links);
  }
  ASSERT_EQ(a.channels.size(), b.channels.size());
  for (size_t i = 0; i < a.channels.size(); ++i) {
    EXPECT_EQ(a.channels[i].index, b.channels[i].index);
    EXPECT_EQ(a.channels[i].ring, b.channels[i].ring);
    EXPECT_EQ(a.channels[i].tree_index, b.channels[i].tree_index);
    EXPECT_EQ(a.channels[i].tree_up, b.channels[i].tree_up);
    EXPECT_EQ(a.channels[i].tree_down, b.channels[i].tree_down);
  }
  ASSERT_EQ(a.ops.size(), b.ops.size());
  for (size_t i = 0; i < a.ops.size(); ++i) {
    const Op &x = a.ops[i], &y = b.ops[i];
    EXPECT_EQ(x.op_count, y.op_count);
    EXPECT_EQ(x.coll, y.coll);
    EXPECT_EQ(x.algo, y.algo);
    EXPECT_EQ(x.proto, y.proto);
    EXPECT_EQ(x.type, y.type);
    EXPECT_EQ(x.redop, y.redop);
    EXPECT_EQ(x.root, y.root);
    EXPECT_EQ(x.count, y.count);
    EXPECT_EQ(x.bytes, y.bytes);
    EXPECT_EQ(x.nchannels, y.nchannels);
    expect_same_double(x.begin_us, y.begin_us, "op begin_us");
    expect_same_double(x.end_us, y.end_us, "op end_us");
    expect_same_double(x.algbw, y.algbw, "algbw");
    expect_same_double(x.busbw, y.busbw, "busbw");
  }
  expect_same_events(a.events, b.events);
  EXPECT_EQ(a.load.t0_us, b.load.t0_us);
  EXPECT_EQ(a.load.bin_us, b.load.bin_us);
  EXPECT_EQ(a.load.bins, b.load.bins);
  ASSERT_EQ(a.load.series.size(), b.load.series.size());
  for (size_t i = 0; i < a.load.series.size(); ++i) {
    EXPECT_EQ(a.load.series[i].link, b.load.series[i].link);
    EXPECT_EQ(a.load.series[i].gbs, b.load.series[i].gbs);
  }
}

// The sections of a file: where each starts and its header.
struct SectionAt {
  size_t offset;  // of its 32-byte header
  codec::SectionHeader h;
};
std::vector<SectionAt> sections_of(const std::string& bytes) {
  std::vector<SectionAt> out;
  size_t pos = codec::kFileHeaderBytes;
  while (pos + codec::kSectionHeaderBytes <= bytes.size()) {
    SectionAt s{pos, codec::get_section_header(reinterpret_cast<const uint8_t*>(bytes.data()) + pos)};
    out.push_back(s);
    pos += codec::kSectionHeaderBytes + s.h.stored;
  }
  return out;
}

std::string decode_error(const std::string& bytes) {
  Trace t;
  std::string err;
  EXPECT_FALSE(decode_trace(bytes, &t, &err));
  return err;
}

std::string stream_error(const std::string& bytes, size_t piece = 7) {
  TraceStreamDecoder d;
  for (size_t i = 0; i < bytes.size(); i += piece)
    if (!d.feed(bytes.data() + i, std::min(piece, bytes.size() - i))) break;
  return d.error();
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// The realistic trace the size figures come from: a ring all_reduce of `loops` chunk loops on every
// channel, each rank's steps one slice period apart with jitter, sorted as readers expect.
Trace ring_all_reduce_trace(int nranks, int nchannels, int loops, uint32_t seed, bool jitter = true) {
  Trace t;
  t.meta.nranks = nranks;
  t.meta.backend = "sim";
  t.meta.clock = "simulated";
  for (int r = 0; r < nranks; ++r) {
    Node n;
    n.name = "m" + std::to_string(r / 8) + ".gpu" + std::to_string(r % 8);
    n.kind = "gpu";
    n.machine = r / 8;
    n.dev = r % 8;
    n.rank = r;
    t.nodes.push_back(n);
  }
  for (int r = 0; r < nranks; ++r) {  // a link per direction between ring neighbours
    Link l;
    l.from = r;
    l.to = (r + 1) % nranks;
    l.kind = "nvlink";
    l.gbs = 450;
    t.links.push_back(l);
    l.from = (r + 1) % nranks;
    l.to = r;
    t.links.push_back(l);
  }
  for (int r = 0; r < nranks; ++r) {
    Route a;
    a.src = r;
    a.dst = (r + 1) % nranks;
    a.links = std::vector<int>{2 * r};
    t.routes.push_back(a);
    Route b;
    b.src = (r + 1) % nranks;
    b.dst = r;
    b.links = std::vector<int>{2 * r + 1};
    t.routes.push_back(b);
  }
  std::mt19937_64 rng(seed);
  const int steps = 2 * nranks - 1;
  const uint64_t slice = 131072;
  const double period = 0.35 + slice / 450e3;  // us per step
  t.events.reserve(static_cast<size_t>(nranks) * nchannels * loops * steps);
  for (int c = 0; c < nchannels; ++c) {
    const bool fwd = c % 2 == 0;
    for (int r = 0; r < nranks; ++r) {
      const int next = fwd ? (r + 1) % nranks : (r + nranks - 1) % nranks;
      const int prev = fwd ? (r + nranks - 1) % nranks : (r + 1) % nranks;
      const int route = t.route_index(r, next);
      for (int l = 0; l < loops; ++l) {
        for (int s = 0; s < steps; ++s) {
          Event e;
          e.rank = r;
          e.channel = c;
          e.op_count = 3 + l / 2;
          e.coll = CollKind::kAllReduce;
          e.proto = kProtoSimple;
          e.step = static_cast<uint64_t>(l * steps + s) * 2;
          if (s == 0) e.prim = PrimKind::kSend;
          else if (s < nranks - 1) e.prim = PrimKind::kRecvReduceSend;
          else if (s == nranks - 1) e.prim = PrimKind::kRecvReduceCopySend;
          else if (s < steps - 1) e.prim = PrimKind::kRecvCopySend;
          else e.prim = PrimKind::kRecv;
          e.send_peer = s == steps - 1 ? -1 : next;
          e.recv_peer = s == 0 ? -1 : prev;
          e.route = e.send_peer >= 0 ? route : -1;
          const int chunk = ((r - s) % nranks + nranks) % nranks;
          e.offset = (static_cast<uint64_t>(l) * nchannels * nranks + static_cast<uint64_t>(c) * nranks + chunk) * slice;
          e.bytes = slice;
          const double base = (l * steps + s) * period + c * 0.013;
          // Jitter: up to 400 ns on the start, 300 ns of waiting, 150 ns on the transfer (uniform), as a
          // wall clock shows; a simulated clock is regular (jitter = false: rank-dependent offsets only).
          const double j = jitter ? 1e-3 : 0.0;
          e.begin_us = base + (jitter ? rng() % 400 : 7 * r % 40) * j + (jitter ? 0 : 0.007 * r);
          e.data_us = e.begin_us + (s == 0 ? 0.02 : 0.05 + (rng() % 300) * j);
          e.end_us = e.data_us + slice / 450e3 + (rng() % 150) * j;
          t.events.push_back(e);
        }
      }
    }
  }
  sort_events(&t.events);
  return t;
}

// ---- round trips --------------------------------------------------------------------------------

TEST(TraceFormat, EveryFieldRoundTripsThroughAFile) {
  Trace t = full_trace(kEventsPerBlock + 1000);  // two event blocks
  ASSERT_FALSE(t.load.series.empty());
  const std::string path = scratch_path("full.cctrace");
  std::string err;
  ASSERT_TRUE(write_trace(path, t, &err)) << err;
  Trace back;
  ASSERT_TRUE(read_trace(path, &back, &err)) << err;
  expect_same_trace(t, back);
  // The file is what encode_trace produces.
  EXPECT_EQ(read_file(path), encode_trace(t));
  std::remove(path.c_str());
}

TEST(TraceFormat, SectionOrderAndEndCounts) {
  Trace t = full_trace(kEventsPerBlock * 2 + 3);
  const std::string bytes = encode_trace(t);
  ASSERT_EQ(bytes.substr(0, 8), std::string(kMagic, 8));
  const std::vector<SectionAt> s = sections_of(bytes);
  std::vector<std::string> kinds;
  for (const SectionAt& x : s) kinds.push_back(codec::kind_name(x.h.kind));
  EXPECT_EQ(kinds, (std::vector<std::string>{"META", "TOPO", "CHAN", "EVTS", "EVTS", "EVTS", "OPS", "LOAD", "END"}));
  const SectionAt& end = s.back();
  EXPECT_EQ(end.h.codec, 0u);
  ASSERT_EQ(end.h.raw, 24u);
  const uint8_t* p = reinterpret_cast<const uint8_t*>(bytes.data()) + end.offset + 32;
  uint64_t v[3];
  std::memcpy(v, p, 24);  // little-endian hosts only; the test machines are
  EXPECT_EQ(v[0], 8u);
  EXPECT_EQ(v[1], t.events.size());
  EXPECT_EQ(v[2], t.ops.size());
  EXPECT_EQ(end.offset + 32 + 24, bytes.size());
  for (const SectionAt& x : s) EXPECT_EQ(x.h.reserved, 0u);
}

TEST(TraceFormat, ExtremeValuesRoundTrip) {
  Trace t;  // nranks 0: ranks are not bounded
  t.meta.nranks = 0;
  Link l;
  l.from = 0;
  l.to = 0;
  l.gbs = std::numeric_limits<double>::infinity();
  l.latency_us = std::numeric_limits<double>::quiet_NaN();
  Node n;
  t.nodes.push_back(n);
  t.links.push_back(l);
  l.gbs = -std::numeric_limits<double>::infinity();
  l.latency_us = std::numeric_limits<double>::denorm_min();
  t.links.push_back(l);
  Op o = make_op(~uint64_t(0), CollKind::kSendRecv);
  o.count = std::numeric_limits<size_t>::max();
  o.begin_us = std::numeric_limits<double>::quiet_NaN();
  o.end_us = -0.0;
  o.algbw = 1e308;
  t.ops.push_back(o);
  const int32_t big = std::numeric_limits<int32_t>::max();
  for (int i = 0; i < 40; ++i) {
    Event e;
    e.rank = i % 2 ? big : 0;
    e.channel = i % 3 ? big : 0;
    e.send_peer = i % 2 ? -1 : big;
    e.recv_peer = i % 2 ? big : -1;
    e.op_count = i % 2 ? ~uint64_t(0) : 0;
    e.step = i % 3 ? 0 : ~uint64_t(0);
    e.offset = i % 4 ? ~uint64_t(0) : 1;
    e.bytes = i % 5 ? 0 : ~uint64_t(0);
    e.prim = PrimKind::kSendFromOutput;
    e.coll = CollKind::kSendRecv;
    e.proto = 0;
    e.begin_us = i % 2 ? -4e12 + i * 1e-3 : 4e12 - i * 1e-3;  // +-4e15 ns: far apart, still exact
    e.data_us = e.begin_us + 0.0004;                             // rounds to the same nanosecond
    e.end_us = e.begin_us + 1e-3 * i;
    t.events.push_back(e);
  }
  Trace back;
  std::string err;
  ASSERT_TRUE(decode_trace(encode_trace(t), &back, &err)) << err;
  expect_same_trace(t, back);
  EXPECT_TRUE(std::isinf(back.links[0].gbs) && back.links[0].gbs > 0);
  EXPECT_TRUE(std::isinf(back.links[1].gbs) && back.links[1].gbs < 0);
  EXPECT_TRUE(std::isnan(back.links[0].latency_us));
  EXPECT_TRUE(std::signbit(back.ops[0].end_us));
}

TEST(TraceFormat, TimesRoundTripToTheNanosecond) {
  Trace t = small_header();
  std::mt19937_64 rng(3);
  for (int i = 0; i < 5000; ++i) {
    Event e;
    e.begin_us = static_cast<double>(rng() % 1000000000000ull) / 997.0;  // up to ~1e9 us, any fraction
    e.data_us = e.begin_us + static_cast<double>(rng() % 100000) / 3.0;
    e.end_us = e.data_us + static_cast<double>(rng() % 100000) / 7.0;
    t.events.push_back(e);
  }
  Trace back;
  std::string err;
  ASSERT_TRUE(decode_trace(encode_trace(t), &back, &err)) << err;
  ASSERT_EQ(back.events.size(), t.events.size());
  for (size_t i = 0; i < t.events.size(); ++i) {
    EXPECT_LE(std::fabs(back.events[i].begin_us - t.events[i].begin_us), 0.0005 + 1e-12);
    EXPECT_LE(std::fabs(back.events[i].end_us - t.events[i].end_us), 0.0005 + 1e-12);
    EXPECT_EQ(ns(back.events[i].data_us), ns(t.events[i].data_us));
  }
}

TEST(TraceFormat, InvalidUtf8IsReplacedNotFatal) {
  Trace t = small_header();
  t.meta.command = std::string("run \xff\xfe here");
  Trace back;
  std::string err;
  const std::string bytes = encode_trace(t);
  ASSERT_FALSE(bytes.empty());
  ASSERT_TRUE(decode_trace(bytes, &back, &err)) << err;
  EXPECT_EQ(back.meta.command, "run \xef\xbf\xbd\xef\xbf\xbd here");  // U+FFFD each
}

// ---- streaming ----------------------------------------------------------------------------------

bool string_sink(const void* data, size_t n, void* user) {
  static_cast<std::string*>(user)->append(static_cast<const char*>(data), n);
  return true;
}

TEST(TraceFormat, StreamingWriterDecodesLikeTheWholeFileWriter) {
  Trace t = full_trace(kEventsPerBlock + 5000);
  std::string streamed;
  TraceWriter w;
  w.open_sink(&string_sink, &streamed);
  ASSERT_TRUE(w.begin(t)) << w.error();
  const size_t after_header = streamed.size();
  std::vector<Op> first(t.ops.begin(), t.ops.begin() + 2), second(t.ops.begin() + 2, t.ops.end());
  for (size_t i = 0; i < t.events.size(); ++i) {
    ASSERT_TRUE(w.add_event(t.events[i])) << w.error();
    if (i == 100) {
      EXPECT_EQ(streamed.size(), after_header);  // buffered, nothing written yet
      ASSERT_TRUE(w.add_ops(first));
      ASSERT_TRUE(w.flush_events());  // a short block
      EXPECT_EQ(w.events_written(), 101u);
    }
    if (i == 3000) {
      ASSERT_TRUE(w.add_ops(second));
    }
  }
  ASSERT_TRUE(w.finish(&t.load)) << w.error();
  EXPECT_FALSE(w.add_event(t.events[0]));  // finished

  Trace a, b;
  std::string err;
  ASSERT_TRUE(decode_trace(streamed, &a, &err)) << err;
  ASSERT_TRUE(decode_trace(encode_trace(t), &b, &err)) << err;
  expect_same_trace(a, b);
  expect_same_trace(t, a);
  std::vector<std::string> kinds;
  for (const SectionAt& x : sections_of(streamed)) kinds.push_back(codec::kind_name(x.h.kind));
  EXPECT_EQ(kinds, (std::vector<std::string>{"META", "TOPO", "CHAN", "OPS", "EVTS", "OPS", "EVTS", "EVTS", "LOAD",
                                             "END"}));
}

TEST(TraceFormat, StreamingWriterToAFileWithoutLoad) {
  Trace t = full_trace(300);
  const std::string path = scratch_path("stream.cctrace");
  TraceWriter w;
  std::string err;
  ASSERT_TRUE(w.open(path, &err)) << err;
  ASSERT_TRUE(w.begin(t));
  for (const Event& e : t.events) ASSERT_TRUE(w.add_event(e));
  ASSERT_TRUE(w.add_ops(t.ops));
  ASSERT_TRUE(w.finish(nullptr)) << w.error();
  Trace back;
  ASSERT_TRUE(read_trace(path, &back, &err)) << err;
  t.load = LinkLoad();
  expect_same_trace(t, back);
  std::remove(path.c_str());
}

TEST(TraceFormat, UnfinishedWriterLeavesAnIncompleteFile) {
  Trace t = full_trace(300);
  const std::string path = scratch_path("unfinished.cctrace");
  {
    TraceWriter w;
    std::string err;
    ASSERT_TRUE(w.open(path, &err));
    ASSERT_TRUE(w.begin(t));
    for (const Event& e : t.events) ASSERT_TRUE(w.add_event(e));
    ASSERT_TRUE(w.flush_events());
  }  // destroyed without finish()
  Trace back;
  std::string err;
  EXPECT_FALSE(read_trace(path, &back, &err));
  EXPECT_EQ(err, path + ": incomplete: no END section (the writer did not finish)");
  EXPECT_EQ(back.events.size(), t.events.size());  // what was read before the problem is kept
  std::remove(path.c_str());
}

TEST(TraceFormat, StreamDecoderOneByteAndRandomFeeds) {
  Trace t = full_trace(kEventsPerBlock + 2000);
  const std::string bytes = encode_trace(t);
  const std::vector<SectionAt> secs = sections_of(bytes);
  const size_t first_block_end = secs[3].offset + 32 + secs[3].h.stored;

  TraceStreamDecoder one;
  for (size_t i = 0; i < bytes.size(); ++i) {
    ASSERT_TRUE(one.feed(&bytes[i], 1)) << "byte " << i << ": " << one.error();
    if (i + 1 == 15) {
      EXPECT_FALSE(one.header_seen());
    }
    if (i + 1 == 16) {
      EXPECT_TRUE(one.header_seen());
    }
    if (i + 1 == first_block_end - 1) {
      EXPECT_EQ(one.trace().events.size(), 0u);
    }
    if (i + 1 == first_block_end) {
      EXPECT_EQ(one.trace().events.size(), kEventsPerBlock);  // a block is applied once it is whole
      EXPECT_EQ(one.sections(), 4u);
      EXPECT_EQ(one.trace().meta.nranks, t.meta.nranks);
    }
    if (i + 1 < bytes.size()) {
      EXPECT_FALSE(one.complete());
    }
  }
  EXPECT_TRUE(one.complete());
  EXPECT_EQ(one.sections(), secs.size());  // END included
  expect_same_trace(t, one.trace());

  std::mt19937 rng(11);
  for (int round = 0; round < 3; ++round) {
    TraceStreamDecoder d;
    size_t i = 0;
    while (i < bytes.size()) {
      const size_t n = std::min<size_t>(bytes.size() - i, rng() % (round == 0 ? 40 : 40000) + 1);
      ASSERT_TRUE(d.feed(bytes.data() + i, n)) << d.error();
      i += n;
    }
    EXPECT_TRUE(d.complete());
    expect_same_trace(t, d.trace());
  }
}

TEST(TraceFormat, StreamDecoderConsumerMayDrainEvents) {
  Trace t = full_trace(kEventsPerBlock + 2000);
  const std::string bytes = encode_trace(t);
  TraceStreamDecoder d;
  size_t seen = 0;
  for (size_t i = 0; i < bytes.size(); i += 4096) {
    ASSERT_TRUE(d.feed(bytes.data() + i, std::min<size_t>(4096, bytes.size() - i))) << d.error();
    seen += d.trace().events.size();
    d.trace().events.clear();  // a viewer takes the events as they come
  }
  EXPECT_TRUE(d.complete()) << d.error();
  EXPECT_EQ(seen, t.events.size());
}

TEST(TraceFormat, StreamDecoderRejectsGarbageAndStaysFailed) {
  TraceStreamDecoder d;
  EXPECT_TRUE(d.feed("CCL", 3));
  EXPECT_FALSE(d.feed("X", 1));
  EXPECT_EQ(d.error(), "not a cclab trace (bad magic)");
  EXPECT_FALSE(d.feed("ABTR", 4));
  EXPECT_EQ(d.error(), "not a cclab trace (bad magic)");

  const std::string bytes = encode_trace(full_trace(10));
  TraceStreamDecoder e;
  ASSERT_TRUE(e.feed(bytes.data(), bytes.size()));
  EXPECT_TRUE(e.complete());
  EXPECT_FALSE(e.feed("x", 1));
  EXPECT_EQ(e.error(), "corrupt: 1 bytes after the END section");
}

// ---- damaged files ------------------------------------------------------------------------------

TEST(TraceFormat, BadMagicVersionAndEmptyFiles) {
  const std::string good = encode_trace(full_trace(100));
  std::string bad = good;
  bad[0] = 'X';
  EXPECT_EQ(decode_error(bad), "not a cclab trace (bad magic)");
  EXPECT_EQ(stream_error(bad), "not a cclab trace (bad magic)");
  EXPECT_EQ(decode_error("hello world, this is not a trace"), "not a cclab trace (bad magic)");
  EXPECT_EQ(decode_error(""), "not a cclab trace (empty file)");
  EXPECT_EQ(decode_error(good.substr(0, 10)), "truncated: the file header needs 16 bytes but the file ends at 10");
  EXPECT_EQ(decode_error("PK\x03\x04"), "not a cclab trace (bad magic)");

  std::string newer = good;
  newer[8] = 2;
  EXPECT_EQ(decode_error(newer), "trace format version 2 is newer than this reader (1)");
  EXPECT_EQ(stream_error(newer), "trace format version 2 is newer than this reader (1)");
  newer[8] = 0;
  newer[11] = 1;  // 0x01000000
  EXPECT_EQ(decode_error(newer), "trace format version 16777216 is newer than this reader (1)");
  std::string zero = good;
  zero[8] = 0;
  EXPECT_EQ(decode_error(zero), "not a cclab trace (format version 0)");
  std::string flags = good;  // unknown flag bits are ignored
  flags[12] = 0x5a;
  Trace t;
  std::string err;
  EXPECT_TRUE(decode_trace(flags, &t, &err)) << err;

  const std::string path = scratch_path("newer.cctrace");
  write_file(path, newer);
  EXPECT_FALSE(read_trace(path, &t, &err));
  EXPECT_EQ(err, path + ": trace format version 16777216 is newer than this reader (1)");
  std::remove(path.c_str());
  EXPECT_FALSE(read_trace(path, &t, &err));
  EXPECT_EQ(err, path + ": cannot open: No such file or directory");
}

TEST(TraceFormat, TruncationAtEverySectionBoundaryAndInside) {
  const std::string good = encode_trace(full_trace(kEventsPerBlock + 100));
  const std::vector<SectionAt> secs = sections_of(good);
  ASSERT_EQ(secs.size(), 8u);
  for (size_t k = 0; k < secs.size(); ++k) {
    const SectionAt& s = secs[k];
    const std::string kind = codec::kind_name(s.h.kind);
    SCOPED_TRACE("section " + std::to_string(k) + " " + kind);
    // At the boundary before section k: no END.
    EXPECT_EQ(decode_error(good.substr(0, s.offset)), "incomplete: no END section (the writer did not finish)");
    // Inside its header.
    for (size_t cut : {size_t(1), size_t(31)})
      EXPECT_EQ(decode_error(good.substr(0, s.offset + cut)),
                "truncated: section " + std::to_string(k) + " header needs 32 bytes at offset " +
                    std::to_string(s.offset) + " but the file ends at " + std::to_string(s.offset + cut));
    // Inside its bytes.
    if (s.h.stored == 0) continue;
    for (size_t cut : {size_t(0), s.h.stored / 2, s.h.stored - 1}) {
      const size_t end = s.offset + 32 + cut;
      EXPECT_EQ(decode_error(good.substr(0, end)),
                "truncated: section " + std::to_string(k) + " (" + kind + ") needs " + std::to_string(s.h.stored) +
                    " bytes at offset " + std::to_string(s.offset + 32) + " but the file ends at " +
                    std::to_string(end));
      // The stream decoder just waits for more.
      TraceStreamDecoder d;
      EXPECT_TRUE(d.feed(good.data(), end)) << d.error();
      EXPECT_FALSE(d.complete());
    }
  }
  // read_trace names the file.
  const std::string path = scratch_path("truncated.cctrace");
  write_file(path, good.substr(0, secs[3].offset + 100));
  Trace t;
  std::string err;
  EXPECT_FALSE(read_trace(path, &t, &err));
  EXPECT_EQ(err.rfind(path + ": truncated: section 3 (EVTS) needs ", 0), 0u) << err;
  std::remove(path.c_str());
}

TEST(TraceFormat, FlippedByteInEachSectionFailsItsChecksum) {
  const std::string good = encode_trace(full_trace(500));
  const std::vector<SectionAt> secs = sections_of(good);
  for (size_t k = 0; k < secs.size(); ++k) {
    const SectionAt& s = secs[k];
    const std::string want = "corrupt: section " + std::to_string(k) + " (" + codec::kind_name(s.h.kind) +
                             ") checksum mismatch";
    for (size_t at : {size_t(0), s.h.stored / 2, s.h.stored - 1}) {
      std::string bad = good;
      bad[s.offset + 32 + at] ^= 0x10;
      EXPECT_EQ(decode_error(bad), want);
      EXPECT_EQ(stream_error(bad, 1), want);
    }
    std::string bad = good;  // the CRC field itself
    bad[s.offset + 24] ^= 1;
    EXPECT_EQ(decode_error(bad), want);
  }
}

// Replaces section k's bytes with `raw` (packed like the writer would), keeping the rest.
std::string replace_section(const std::string& file, size_t k, SectionKind kind, const std::string& raw,
                            bool compress) {
  const std::vector<SectionAt> secs = sections_of(file);
  const SectionAt& s = secs.at(k);
  return file.substr(0, s.offset) + codec::pack_section(kind, raw, compress) +
         file.substr(s.offset + 32 + s.h.stored);
}

std::string unpacked(const std::string& file, size_t k) {
  const SectionAt s = sections_of(file).at(k);
  std::string raw, err;
  EXPECT_TRUE(codec::unpack_section(s.h, reinterpret_cast<const uint8_t*>(file.data()) + s.offset + 32, k, &raw, &err));
  return raw;
}

// Section k's header with a field changed (CRC left alone: the header is not checksummed).
std::string with_header(const std::string& file, size_t k, void (*edit)(codec::SectionHeader*)) {
  const SectionAt s = sections_of(file).at(k);
  codec::SectionHeader h = s.h;
  edit(&h);
  std::string hdr;
  codec::put_section_header(&hdr, h);
  std::string out = file;
  out.replace(s.offset, 32, hdr);
  return out;
}

TEST(TraceFormat, CorruptCompressedDataAndJson) {
  const std::string good = encode_trace(full_trace(500));
  const std::vector<SectionAt> secs = sections_of(good);
  ASSERT_EQ(codec::kind_name(secs[3].h.kind), "EVTS");
  ASSERT_EQ(secs[3].h.codec, 1u);
  // Damaged zstd with a matching CRC.
  {
    std::string bad = good;
    const SectionAt& s = secs[3];
    bad[s.offset + 32] ^= 0xff;  // the zstd frame's magic
    codec::SectionHeader h = s.h;
    h.crc = codec::crc32_of(bad.data() + s.offset + 32, s.h.stored);
    std::string hdr;
    codec::put_section_header(&hdr, h);
    bad.replace(s.offset, 32, hdr);
    const std::string err = decode_error(bad);
    EXPECT_EQ(err.rfind("corrupt: section 3 (EVTS) does not decompress", 0), 0u) << err;
  }
  // A raw length that disagrees with what decompresses.
  {
    const std::string bad = with_header(good, 1, [](codec::SectionHeader* h) { h->raw -= 1; });
    const std::string err = decode_error(bad);
    EXPECT_EQ(err.rfind("corrupt: section 1 (TOPO) does not decompress", 0), 0u) << err;
  }
  // JSON that does not parse, or has the wrong types.
  EXPECT_EQ(decode_error(replace_section(good, 0, SectionKind::kMeta, "{\"nranks\": 4", true))
                .rfind("corrupt: section 0 (META): bad JSON: ", 0),
            0u);
  EXPECT_EQ(decode_error(replace_section(good, 0, SectionKind::kMeta, "{\"nranks\": \"four\"}", true)),
            "corrupt: section 0 (META): bad JSON: \"nranks\" is not an integer");
  EXPECT_EQ(decode_error(replace_section(good, 0, SectionKind::kMeta, "[1,2]", false)),
            "corrupt: section 0 (META): bad JSON: META is not an object");
  EXPECT_EQ(decode_error(replace_section(good, 0, SectionKind::kMeta, "{\"nranks\": 4294967296}", false)),
            "corrupt: section 0 (META): bad JSON: \"nranks\" = 4294967296 is out of range");
  EXPECT_EQ(decode_error(replace_section(good, 2, SectionKind::kChannels, "{\"channels\": [{\"tree_down\": [[1,2]]}]}",
                                         false)),
            "corrupt: section 2 (CHAN): bad JSON: a tree_down entry is not [a, b, c]");
  EXPECT_EQ(decode_error(replace_section(good, 1, SectionKind::kTopo, "{\"routes\": [[0, 1]]}", false)),
            "corrupt: section 1 (TOPO): bad JSON: a route is not [src, dst, [links]]");
  const size_t ops_k = secs.size() - 3;
  EXPECT_EQ(decode_error(replace_section(good, ops_k, SectionKind::kOps, "{\"ops\": [{\"coll\": \"AllToAll\"}]}", true)),
            "corrupt: section " + std::to_string(ops_k) + " (OPS): bad JSON: unknown collective \"AllToAll\"");
  // Deep nesting is only an error.
  const std::string deep = "{\"nranks\": " + std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_EQ(decode_error(replace_section(good, 0, SectionKind::kMeta, deep, true)),
            "corrupt: section 0 (META): bad JSON: \"nranks\" is not an integer");
  // Unknown keys are ignored (a newer minor version may add some), missing ones keep their defaults.
  Trace t;
  std::string err;
  ASSERT_TRUE(decode_trace(replace_section(good, 0, SectionKind::kMeta, "{\"nranks\": 4, \"future\": [1]}", true), &t,
                           &err))
      << err;
  EXPECT_EQ(t.meta.nranks, 4);
  EXPECT_EQ(t.meta.tool, "");
  EXPECT_EQ(t.meta.machines, 1);
}

TEST(TraceFormat, DecodedValuesAreValidated) {
  const Trace base = full_trace(200);
  const std::string good = encode_trace(base);
  const size_t nroutes = base.routes.size();
  auto block_with = [&](void (*edit)(Event*)) {
    std::vector<Event> ev = base.events;
    edit(&ev[7]);
    return replace_section(good, 3, SectionKind::kEvents, codec::encode_events(ev.data(), ev.size()), true);
  };
  EXPECT_EQ(decode_error(block_with([](Event* e) { e->route = 1000; })),
            "corrupt: event block 0: event 7: route 1000 is out of range (" + std::to_string(nroutes) + " routes)");
  EXPECT_EQ(decode_error(block_with([](Event* e) { e->rank = 4; })),
            "corrupt: event block 0: event 7: rank 4 is out of range (4 ranks)");
  EXPECT_EQ(decode_error(block_with([](Event* e) { e->send_peer = -2; })),
            "corrupt: event block 0: event 7: send_peer -2 is out of range (4 ranks)");
  EXPECT_EQ(decode_error(block_with([](Event* e) { e->recv_peer = 9; })),
            "corrupt: event block 0: event 7: recv_peer 9 is out of range (4 ranks)");
  EXPECT_EQ(decode_error(block_with([](Event* e) { e->channel = -1; })),
            "corrupt: event block 0: event 7: channel -1 is negative");
  EXPECT_EQ(decode_error(block_with([](Event* e) { e->prim = static_cast<PrimKind>(9); })),
            "corrupt: event block 0: event 7: primitive 9 is out of range");
  EXPECT_EQ(decode_error(block_with([](Event* e) { e->coll = CollKind::kNumKinds; })),
            "corrupt: event block 0: event 7: collective 6 is out of range");
  EXPECT_EQ(decode_error(block_with([](Event* e) { e->proto = 3; })),
            "corrupt: event block 0: event 7: protocol 3 is out of range");

  Trace bad_topo = base;
  bad_topo.links[2].to = 99;
  EXPECT_EQ(decode_error(replace_section(good, 1, SectionKind::kTopo, codec::encode_topo(bad_topo), true)),
            "corrupt: section 1 (TOPO): link 2: node 1 -> 99 is out of range (6 nodes)");
  bad_topo = base;
  bad_topo.routes[3].links.push_back(-1);
  EXPECT_EQ(decode_error(replace_section(good, 1, SectionKind::kTopo, codec::encode_topo(bad_topo), true)),
            "corrupt: section 1 (TOPO): route 3: link -1 is out of range (9 links)");
  bad_topo = base;
  bad_topo.nodes[1].rank = 4;
  EXPECT_EQ(decode_error(replace_section(good, 1, SectionKind::kTopo, codec::encode_topo(bad_topo), true)),
            "corrupt: section 1 (TOPO): node 1: rank 4 is out of range (4 ranks)");
  bad_topo = base;
  bad_topo.links[0].reverse = 9;
  EXPECT_EQ(decode_error(replace_section(good, 1, SectionKind::kTopo, codec::encode_topo(bad_topo), true)),
            "corrupt: section 1 (TOPO): link 0: reverse 9 is out of range (9 links)");
  std::vector<Channel> ch = base.channels;
  ch[1].ring[2] = 7;
  EXPECT_EQ(decode_error(replace_section(good, 2, SectionKind::kChannels, codec::encode_channels(ch), true)),
            "corrupt: section 2 (CHAN): channel 1: ring rank 7 is out of range (4 ranks)");
  ch = base.channels;
  ch[0].tree_down[1][2] = -5;
  EXPECT_EQ(decode_error(replace_section(good, 2, SectionKind::kChannels, codec::encode_channels(ch), true)),
            "corrupt: section 2 (CHAN): channel 0: tree child -5 is out of range (4 ranks)");
  // A LOAD series on a link the trace lacks.
  LinkLoad l = base.load;
  ASSERT_FALSE(l.series.empty());
  l.series[0].link = 50;
  const size_t load_k = sections_of(good).size() - 2;
  EXPECT_EQ(decode_error(replace_section(good, load_k, SectionKind::kLoad, codec::encode_load(l), true)),
            "corrupt: section " + std::to_string(load_k) + " (LOAD): series 0: link 50 is out of range (9 links)");
  EXPECT_EQ(decode_error(replace_section(good, load_k, SectionKind::kLoad, "short", false)),
            "corrupt: section " + std::to_string(load_k) + " (LOAD): 5 bytes, shorter than its 24-byte header");
  std::string load_raw = codec::encode_load(base.load);
  load_raw.pop_back();
  const std::string err = decode_error(replace_section(good, load_k, SectionKind::kLoad, load_raw, true));
  EXPECT_TRUE(contains(err, "(LOAD): ") && contains(err, " bins need ")) << err;
}

TEST(TraceFormat, CorruptEventColumns) {
  const Trace base = full_trace(200);
  const std::string good = encode_trace(base);
  const std::string raw = unpacked(good, 3);
  // A block that says 5 events but whose columns hold 1 byte each.
  {
    std::string b;
    b.push_back(5);
    b.push_back(15);
    for (int c = 0; c < 15; ++c) b.push_back(1);
    for (int c = 0; c < 15; ++c) b.push_back(0);
    EXPECT_EQ(decode_error(replace_section(good, 3, SectionKind::kEvents, b, false)),
              "corrupt: event block 0: column rank runs past its end (5 events, 1 bytes)");
  }
  // A column length beyond the block.
  {
    std::string b;
    b.push_back(1);
    b.push_back(15);
    b.push_back(100);
    for (int c = 1; c < 15; ++c) b.push_back(1);
    for (int c = 0; c < 15; ++c) b.push_back(0);
    EXPECT_EQ(decode_error(replace_section(good, 3, SectionKind::kEvents, b, false)),
              "corrupt: event block 0: column rank runs past its end (100 bytes, 15 left in the block)");
  }
  // A varint that runs past its column.
  {
    std::string b;
    b.push_back(1);
    b.push_back(15);
    b.push_back(1);
    b.push_back(1);
    b.push_back(1);
    for (int c = 3; c < 15; ++c) b.push_back(1);
    b.push_back(0);
    b.push_back(0);
    b.push_back(static_cast<char>(0x80));  // send_peer: continuation byte, then the column ends
    for (int c = 3; c < 15; ++c) b.push_back(0);
    EXPECT_EQ(decode_error(replace_section(good, 3, SectionKind::kEvents, b, false)),
              "corrupt: event block 0: column send_peer runs past its end at event 0");
  }
  // Too few columns; bytes left over; a bad header.
  {
    std::string b = "\x01\x03\x01\x01\x01\x00\x00\x00";
    EXPECT_EQ(decode_error(replace_section(good, 3, SectionKind::kEvents, b, false)),
              "corrupt: event block 0: 3 columns, this reader needs 15");
    EXPECT_EQ(decode_error(replace_section(good, 3, SectionKind::kEvents, raw + "xy", true)),
              "corrupt: event block 0: 2 bytes after its columns");
    EXPECT_EQ(decode_error(replace_section(good, 3, SectionKind::kEvents, "\x80", false)),
              "corrupt: event block 0: its header runs past its end");
  }
  // Extra columns after the 15 (a newer minor version's) are skipped.
  {
    std::vector<Event> ev = base.events;
    std::string b = codec::encode_events(ev.data(), ev.size());
    // Rebuild with a 16th column of 3 bytes: n, ncols, lengths..., data.
    const uint8_t* p = reinterpret_cast<const uint8_t*>(b.data());
    size_t pos = 0;
    auto varint = [&]() {
      uint64_t v = 0;
      for (int s = 0;; s += 7) {
        const uint8_t x = p[pos++];
        v |= uint64_t(x & 0x7f) << s;
        if (!(x & 0x80)) return v;
      }
    };
    auto put = [](std::string* o, uint64_t v) {
      while (v >= 0x80) {
        o->push_back(static_cast<char>((v & 0x7f) | 0x80));
        v >>= 7;
      }
      o->push_back(static_cast<char>(v));
    };
    const uint64_t n = varint(), ncols = varint();
    ASSERT_EQ(ncols, 15u);
    std::vector<uint64_t> len;
    for (int c = 0; c < 15; ++c) len.push_back(varint());
    std::string nb;
    put(&nb, n);
    put(&nb, 16);
    for (uint64_t l : len) put(&nb, l);
    put(&nb, 3);
    nb += b.substr(pos);
    nb += "abc";
    Trace t;
    std::string err;
    ASSERT_TRUE(decode_trace(replace_section(good, 3, SectionKind::kEvents, nb, true), &t, &err)) << err;
    expect_same_events(base.events, t.events);
  }
}

TEST(TraceFormat, EndSectionCountsAndMissingEnd) {
  const std::string good = encode_trace(full_trace(300));
  const std::vector<SectionAt> secs = sections_of(good);
  const size_t k = secs.size() - 1;
  EXPECT_EQ(decode_error(good.substr(0, secs[k].offset)), "incomplete: no END section (the writer did not finish)");
  ASSERT_EQ(k, 6u);
  EXPECT_EQ(decode_error(replace_section(good, k, SectionKind::kEnd, codec::encode_end(k, 301, 6), false)),
            "corrupt: the END section counts 6 sections, 301 events, 6 ops but the trace has 6 sections, 300 events, "
            "6 ops");
  EXPECT_EQ(decode_error(replace_section(good, k, SectionKind::kEnd, codec::encode_end(k + 1, 300, 6), false)),
            "corrupt: the END section counts 7 sections, 300 events, 6 ops but the trace has 6 sections, 300 events, "
            "6 ops");
  EXPECT_EQ(decode_error(replace_section(good, k, SectionKind::kEnd, codec::encode_end(k, 300, 5), false)),
            "corrupt: the END section counts 6 sections, 300 events, 5 ops but the trace has 6 sections, 300 events, "
            "6 ops");
  EXPECT_EQ(stream_error(replace_section(good, k, SectionKind::kEnd, codec::encode_end(k, 300, 5), false)),
            "corrupt: the END section counts 6 sections, 300 events, 5 ops but the trace has 6 sections, 300 events, "
            "6 ops");
  EXPECT_EQ(decode_error(replace_section(good, k, SectionKind::kEnd, "short", false)),
            "corrupt: section " + std::to_string(k) + " (END): 5 bytes, needs 24");
  // A dropped OPS section: END's ops and sections disagree.
  const size_t ops_k = k - 2;
  const std::string no_ops = good.substr(0, secs[ops_k].offset) + good.substr(secs[ops_k + 1].offset);
  EXPECT_EQ(decode_error(no_ops),
            "corrupt: the END section counts 6 sections, 300 events, 6 ops but the trace has 5 sections, 300 events, "
            "0 ops");
  // Bytes after END.
  EXPECT_EQ(decode_error(good + "junk"), "corrupt: 4 bytes after the END section");
}

TEST(TraceFormat, AbsurdLengthsAreRejectedBeforeAllocating) {
  const std::string good = encode_trace(full_trace(300));
  EXPECT_EQ(decode_error(with_header(good, 3, [](codec::SectionHeader* h) { h->raw = uint64_t(5) << 30; })),
            "corrupt: section 3 (EVTS) claims 5368709120 raw bytes (more than 4 GiB)");
  const std::vector<SectionAt> secs = sections_of(good);
  const uint64_t stored = secs[3].h.stored;
  const std::string ratio = decode_error(with_header(good, 3, [](codec::SectionHeader* h) { h->raw = uint64_t(3) << 30; }));
  EXPECT_EQ(ratio, "corrupt: section 3 (EVTS) claims 3221225472 raw bytes from " + std::to_string(stored) +
                       " stored (more than 64x)");
  EXPECT_EQ(stream_error(with_header(good, 3, [](codec::SectionHeader* h) { h->raw = uint64_t(3) << 30; })), ratio);
  EXPECT_EQ(decode_error(with_header(good, 3, [](codec::SectionHeader* h) { h->stored = uint64_t(1) << 40; })),
            "corrupt: section 3 (EVTS) claims 1099511627776 stored bytes for " + std::to_string(secs[3].h.raw) +
                " raw bytes");
  // A length that passes every check but the file's: truncated (the stream decoder waits for it).
  const std::string long_raw = with_header(good, 3, [](codec::SectionHeader* h) {
    h->codec = 0;
    h->stored = h->raw = uint64_t(3) << 30;
  });
  EXPECT_EQ(decode_error(long_raw), "truncated: section 3 (EVTS) needs 3221225472 bytes at offset " +
                                        std::to_string(secs[3].offset + 32) + " but the file ends at " +
                                        std::to_string(good.size()));
  EXPECT_EQ(stream_error(long_raw), "");
  EXPECT_EQ(decode_error(with_header(good, 2, [](codec::SectionHeader* h) {
              h->raw = 10;
              h->stored = 1000;
            })),
            "corrupt: section 2 (CHAN) claims 1000 stored bytes for 10 raw bytes");
  EXPECT_EQ(decode_error(with_header(good, 2, [](codec::SectionHeader* h) { h->codec = 7; })),
            "corrupt: section 2 (CHAN) has unknown codec 7");
  const size_t k = secs.size() - 1;
  EXPECT_EQ(decode_error(with_header(good, k, [](codec::SectionHeader* h) { h->raw = 1; })),
            "corrupt: section " + std::to_string(k) + " (END) is stored raw but its lengths differ (24 stored, 1 raw)");
}

TEST(TraceFormat, UnknownSectionKindsAreSkipped) {
  const Trace t = full_trace(300);
  const std::string good = encode_trace(t);
  const std::vector<SectionAt> secs = sections_of(good);
  // A newer writer's section ("XTRA", even with a codec this reader lacks) after CHAN; END counts it.
  codec::SectionHeader h;
  h.kind = 0x41525458;  // "XTRA"
  h.codec = 9;
  const std::string body = "anything at all";
  h.stored = h.raw = body.size();
  h.crc = codec::crc32_of(body.data(), body.size());
  std::string extra;
  codec::put_section_header(&extra, h);
  extra += body;
  std::string file = good.substr(0, secs[3].offset) + extra + good.substr(secs[3].offset);
  const size_t k = secs.size();  // END's index now
  file = replace_section(file, k, SectionKind::kEnd, codec::encode_end(k, t.events.size(), t.ops.size()), false);
  Trace back;
  std::string err;
  ASSERT_TRUE(decode_trace(file, &back, &err)) << err;
  expect_same_trace(t, back);
  TraceStreamDecoder d;
  for (char c : file) ASSERT_TRUE(d.feed(&c, 1)) << d.error();
  EXPECT_TRUE(d.complete());
  // Its checksum is still checked.
  file[secs[3].offset + 40] ^= 1;
  EXPECT_EQ(decode_error(file), "corrupt: section 3 (XTRA) checksum mismatch");
}

// The doctor's reports (STUK, JSON, may repeat): every field round-trips through a file and the stream
// decoder; a report naming a rank the trace does not have is refused by the writer and the reader; a
// trace without them reads as before.
Stuck make_stuck(double at, bool certain) {
  Stuck st;
  st.time_us = at;
  st.certain = certain;
  st.code = certain ? 5 : 0;
  st.summary = certain ? "rank 3 left the communicator (ncclCommDestroy / ncclCommAbort) without calling collective #0"
                       : "rank 3 has not called collective #0, all_reduce(1048576 x float32, sum) \xe2\x80\x94 \"late\"";
  st.lines = {"board /cclab-board-x: 4 ranks", "  rank 0 (pid 12): in op #0", "      waits for data from rank 3",
              "verdict: " + st.summary};
  st.ranks = {{0, 12, "running", "rank 0 (pid 12): in op #0"}, {3, 15, certain ? "left" : "running", "rank 3 (pid 15)"},
              {2, 0, "none", "rank 2: no status"}};
  StuckWait w;
  w.rank = 0;
  w.channel = 1;
  w.peer = 3;
  w.step = 1ull << 40;
  w.for_data = true;
  w.prim = "recvReduceSend";
  w.op_count = 7;
  w.since_us = at - 1234.5678;
  st.waits.push_back(w);
  w.rank = 1;
  w.peer = 0;
  w.for_data = false;
  w.channel = 0;
  w.since_us = std::numeric_limits<double>::quiet_NaN();
  st.waits.push_back(w);
  return st;
}

void expect_same_stuck(const std::vector<Stuck>& a, const std::vector<Stuck>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].time_us, b[i].time_us);
    EXPECT_EQ(a[i].certain, b[i].certain);
    EXPECT_EQ(a[i].code, b[i].code);
    EXPECT_EQ(a[i].summary, b[i].summary);
    EXPECT_EQ(a[i].lines, b[i].lines);
    ASSERT_EQ(a[i].ranks.size(), b[i].ranks.size());
    for (size_t r = 0; r < a[i].ranks.size(); ++r) {
      EXPECT_EQ(a[i].ranks[r].rank, b[i].ranks[r].rank);
      EXPECT_EQ(a[i].ranks[r].pid, b[i].ranks[r].pid);
      EXPECT_EQ(a[i].ranks[r].state, b[i].ranks[r].state);
      EXPECT_EQ(a[i].ranks[r].line, b[i].ranks[r].line);
    }
    ASSERT_EQ(a[i].waits.size(), b[i].waits.size());
    for (size_t w = 0; w < a[i].waits.size(); ++w) {
      const StuckWait &x = a[i].waits[w], &y = b[i].waits[w];
      EXPECT_EQ(x.rank, y.rank);
      EXPECT_EQ(x.channel, y.channel);
      EXPECT_EQ(x.peer, y.peer);
      EXPECT_EQ(x.step, y.step);
      EXPECT_EQ(x.for_data, y.for_data);
      EXPECT_EQ(x.prim, y.prim);
      EXPECT_EQ(x.op_count, y.op_count);
      if (std::isnan(x.since_us)) EXPECT_TRUE(std::isnan(y.since_us));
      else EXPECT_EQ(x.since_us, y.since_us);
    }
  }
}

TEST(TraceFormat, StuckReportsRoundTrip) {
  Trace t = full_trace(300);
  t.stuck = {make_stuck(2.0e6 + 0.1, false), make_stuck(3.5e6, true)};
  const std::string path = scratch_path("stuck.cctrace");
  std::string err;
  ASSERT_TRUE(write_trace(path, t, &err)) << err;
  Trace back;
  ASSERT_TRUE(read_trace(path, &back, &err)) << err;
  expect_same_trace(t, back);
  expect_same_stuck(t.stuck, back.stuck);
  std::remove(path.c_str());

  // One STUK section after OPS; END counts it.
  const std::string bytes = encode_trace(t);
  std::vector<std::string> kinds;
  for (const SectionAt& x : sections_of(bytes)) kinds.push_back(codec::kind_name(x.h.kind));
  EXPECT_EQ(kinds, (std::vector<std::string>{"META", "TOPO", "CHAN", "EVTS", "OPS", "STUK", "LOAD", "END"}));
  EXPECT_EQ(section_name(SectionKind::kStuck), std::string("STUK"));

  // The stream decoder, a byte at a time; several STUK sections are concatenated.
  TraceStreamDecoder d;
  for (char c : bytes) ASSERT_TRUE(d.feed(&c, 1)) << d.error();
  EXPECT_TRUE(d.complete());
  expect_same_stuck(t.stuck, d.trace().stuck);
  std::string two;
  TraceWriter w;
  w.open_sink([](const void* p, size_t n, void* u) {
    static_cast<std::string*>(u)->append(static_cast<const char*>(p), n);
    return true;
  }, &two);
  ASSERT_TRUE(w.begin(t));
  ASSERT_TRUE(w.add_stuck({t.stuck[0]}));
  for (const Event& e : t.events) ASSERT_TRUE(w.add_event(e));
  ASSERT_TRUE(w.add_stuck({}));  // nothing: no section
  ASSERT_TRUE(w.add_stuck({t.stuck[1]}));
  ASSERT_TRUE(w.finish(nullptr)) << w.error();
  Trace back2;
  ASSERT_TRUE(decode_trace(two, &back2, &err)) << err;
  expect_same_stuck(t.stuck, back2.stuck);

  // A trace without reports has no STUK section and reads with none.
  Trace plain = full_trace(300);
  const std::string pb = encode_trace(plain);
  for (const SectionAt& x : sections_of(pb)) EXPECT_NE(codec::kind_name(x.h.kind), "STUK");
  Trace pback;
  ASSERT_TRUE(decode_trace(pb, &pback, &err)) << err;
  EXPECT_TRUE(pback.stuck.empty());
}

// Each process of a stuck job records the report it saw: merging the parts keeps a verdict once (the
// earliest), every other one in time order, shifted like the events.
TEST(TraceMerge, StuckReportsOfThePartsOnceEach) {
  Trace a = full_trace(300), b = full_trace(300);
  const double t0 = std::min(a.begin_us(), b.begin_us());
  a.stuck = {make_stuck(t0 + 900, true)};
  b.stuck = {make_stuck(t0 + 500, false), make_stuck(t0 + 950, true)};  // the second: a's verdict again
  Trace m;
  std::string err;
  ASSERT_TRUE(merge_traces({a, b}, &m, &err)) << err;
  ASSERT_EQ(m.stuck.size(), 2u);
  EXPECT_FALSE(m.stuck[0].certain);
  EXPECT_NEAR(m.stuck[0].time_us, 500, 1e-6);
  EXPECT_TRUE(m.stuck[1].certain);
  EXPECT_NEAR(m.stuck[1].time_us, 900, 1e-6);
  EXPECT_NEAR(m.stuck[1].waits[0].since_us, 900 - 1234.5678, 1e-6);
}

TEST(TraceFormat, StuckReportsAreValidated) {
  Trace t = full_trace(300);
  t.stuck = {make_stuck(1, false)};
  t.stuck[0].waits[0].peer = 4;  // 4 ranks
  std::string err;
  EXPECT_EQ(encode_trace(t), "");
  const std::string path = scratch_path("bad_stuck.cctrace");
  EXPECT_FALSE(write_trace(path, t, &err));
  EXPECT_TRUE(contains(err, "cannot write stuck report 0: a wait of rank 0: peer 4 is out of range (4 ranks)")) << err;

  // The reader refuses what the writer would not write.
  t.stuck[0].waits[0].peer = 3;
  const std::string good = encode_trace(t);
  const std::vector<SectionAt> secs = sections_of(good);
  size_t k = 0;
  while (k < secs.size() && codec::kind_name(secs[k].h.kind) != "STUK") ++k;
  ASSERT_LT(k, secs.size());
  std::vector<Stuck> bad = t.stuck;
  bad[0].ranks[0].rank = 9;
  EXPECT_EQ(decode_error(replace_section(good, k, SectionKind::kStuck, codec::encode_stuck(bad), true)),
            "corrupt: section 5 (STUK): report 0: rank 9 is out of range (4 ranks)");
  EXPECT_EQ(stream_error(replace_section(good, k, SectionKind::kStuck, codec::encode_stuck(bad), true)),
            "corrupt: section 5 (STUK): report 0: rank 9 is out of range (4 ranks)");
  EXPECT_EQ(decode_error(replace_section(good, k, SectionKind::kStuck,
                                         R"({"stuck":[{"waits":[{"rank":0,"for":"tea"}]}]})", false)),
            "corrupt: section 5 (STUK): bad JSON: \"for\" is neither \"data\" nor \"credits\"");
  EXPECT_EQ(decode_error(replace_section(good, k, SectionKind::kStuck, R"({"stuck":[{"certain":1}]})", false)),
            "corrupt: section 5 (STUK): bad JSON: \"certain\" is not a boolean");
  // Unknown keys are ignored, missing ones take their defaults.
  Trace back;
  ASSERT_TRUE(decode_trace(replace_section(good, k, SectionKind::kStuck, R"({"stuck":[{"summary":"x","new":[1]}]})", false),
                           &back, &err))
      << err;
  ASSERT_EQ(back.stuck.size(), 1u);
  EXPECT_EQ(back.stuck[0].summary, "x");
  EXPECT_FALSE(back.stuck[0].certain);
  EXPECT_TRUE(back.stuck[0].waits.empty());
}

// A META, TOPO or CHAN may come again (the live stream's header updates) and replaces the earlier one,
// but only if it fits what was accepted before it. fuzz_trace_sections' properties exposed that a second
// META with fewer ranks, or a TOPO without the routes of the events before it, were accepted, leaving
// events that name ranks and routes the trace no longer has (a trace its own writer then refused).
TEST(TraceFormat, ReplacedHeaderSectionsMustFitWhatCameBefore) {
  const Trace t = full_trace(300);
  const std::string good = encode_trace(t);
  const std::vector<SectionAt> secs = sections_of(good);
  ASSERT_EQ(codec::kind_name(secs[3].h.kind), "EVTS");
  ASSERT_EQ(codec::kind_name(secs[4].h.kind), "OPS");
  auto section = [&](size_t k) { return good.substr(secs[k].offset, 32 + secs[k].h.stored); };
  const std::string head4 = good.substr(0, secs[4].offset);  // header, META, TOPO, CHAN, EVTS
  long long max_rank = -1, max_route = -1;
  for (const Event& e : t.events) {
    max_rank = std::max<long long>(max_rank, std::max(e.rank, std::max(e.send_peer, e.recv_peer)));
    max_route = std::max<long long>(max_route, e.route);
  }
  ASSERT_GT(max_rank, 0);
  ASSERT_GE(max_route, 0);
  Trace fewer = t;
  fewer.meta.nranks = static_cast<int>(max_rank);  // one rank short
  const std::string meta_short = codec::pack_section(SectionKind::kMeta, codec::encode_meta(fewer.meta), true);
  Trace no_routes = t;
  no_routes.routes.clear();
  const std::string topo_bare = codec::pack_section(SectionKind::kTopo, codec::encode_topo(no_routes), true);

  const std::string want_meta = "corrupt: section 4 (META): nranks " + std::to_string(max_rank) + " leaves out rank " +
                                std::to_string(max_rank) + ", which earlier events name";
  EXPECT_EQ(decode_error(head4 + meta_short + good.substr(secs[4].offset)), want_meta);
  EXPECT_EQ(stream_error(head4 + meta_short + good.substr(secs[4].offset), 5), want_meta);
  const std::string want_topo = "corrupt: section 4 (TOPO): 0 routes leave out route " + std::to_string(max_route) +
                                ", which earlier events use";
  EXPECT_EQ(decode_error(head4 + topo_bare + good.substr(secs[4].offset)), want_topo);
  EXPECT_EQ(stream_error(head4 + topo_bare + good.substr(secs[4].offset), 5), want_topo);

  // Before any event: the nodes, routes and channels accepted so far must fit the new rank count.
  const std::string e = decode_error(good.substr(0, secs[3].offset) + meta_short + good.substr(secs[3].offset));
  EXPECT_TRUE(contains(e, "corrupt: section 3 (META): nranks " + std::to_string(max_rank) +
                              " does not fit the earlier sections: ")) << e;

  // A TOPO with fewer links than the LOAD before it names.
  const size_t load = secs.size() - 2;
  ASSERT_EQ(codec::kind_name(secs[load].h.kind), "LOAD");
  ASSERT_FALSE(t.load.series.empty());
  Trace few_links = t;
  few_links.links.clear();
  few_links.routes.clear();
  for (Node& n : few_links.nodes) n.rank = -1;
  const std::string topo_nolinks = codec::pack_section(SectionKind::kTopo, codec::encode_topo(few_links), true);
  EXPECT_EQ(decode_error(good.substr(0, secs[3].offset) + section(load) + topo_nolinks),
            "corrupt: section 4 (TOPO): the earlier LOAD section does not fit it: series 0: link " +
                std::to_string(t.load.series[0].link) + " is out of range (0 links)");

  // The stream decoder checks against what its events named even after the consumer drained them.
  TraceStreamDecoder d;
  const std::string first = head4;
  ASSERT_TRUE(d.feed(first.data(), first.size())) << d.error();
  d.trace().events.clear();
  EXPECT_FALSE(d.feed(meta_short.data(), meta_short.size()));
  EXPECT_EQ(d.error(), want_meta);

  // Growing is what a header update does: no routes at first, events without routes, then the full
  // TOPO and events on its routes, and more ranks. Accepted, and the writer writes the result.
  Trace bare = t;
  bare.routes.clear();
  bare.meta.nranks = static_cast<int>(max_rank) + 1;
  std::vector<Event> early(t.events.begin(), t.events.begin() + 50);
  for (Event& ev : early) ev.route = -1;
  Trace more = t;
  more.meta.nranks = bare.meta.nranks + 2;
  const std::string grown = good.substr(0, codec::kFileHeaderBytes) +
                            codec::pack_section(SectionKind::kMeta, codec::encode_meta(bare.meta), true) +
                            codec::pack_section(SectionKind::kTopo, codec::encode_topo(bare), true) + section(2) +
                            codec::pack_section(SectionKind::kEvents, codec::encode_events(early.data(), early.size()), true) +
                            section(1) + codec::pack_section(SectionKind::kMeta, codec::encode_meta(more.meta), true) +
                            section(3) + codec::pack_section(SectionKind::kEnd, codec::encode_end(7, 50 + t.events.size(), 0), false);
  Trace back;
  std::string err;
  ASSERT_TRUE(decode_trace(grown, &back, &err)) << err;
  EXPECT_EQ(back.meta.nranks, more.meta.nranks);
  EXPECT_EQ(back.routes.size(), t.routes.size());
  EXPECT_EQ(back.events.size(), 50 + t.events.size());
  EXPECT_FALSE(encode_trace(back).empty());
}

TEST(TraceFormat, FuzzedFilesNeverCrash) {
  const Trace t = full_trace(600);
  const std::string good = encode_trace(t);
  const std::vector<SectionAt> secs = sections_of(good);
  std::mt19937_64 rng(20240501);
  int accepted = 0, rejected = 0;
  const char* env = getenv("CCLAB_TRACE_FUZZ_ITERS");  // longer runs by hand
  const int iters = env && atoi(env) > 0 ? atoi(env) : 2000;
  for (int it = 0; it < iters; ++it) {
    std::string bad = good;
    switch (it % 5) {
      case 0: {  // flip 1-4 random bytes
        const int n = 1 + rng() % 4;
        for (int i = 0; i < n; ++i) bad[rng() % bad.size()] ^= static_cast<char>(1 + rng() % 255);
        break;
      }
      case 1:  // truncate anywhere
        bad.resize(rng() % bad.size());
        break;
      case 2: {  // overwrite a header field with a random value
        const SectionAt& s = secs[rng() % secs.size()];
        const size_t at = s.offset + (rng() % 8) * 4;
        const uint32_t v = (rng() % 3 == 0) ? static_cast<uint32_t>(rng()) : static_cast<uint32_t>(rng() % 64);
        std::memcpy(&bad[at], &v, 4);
        break;
      }
      default: {  // damage a section's decoded bytes and repack it (past the CRC and zstd)
        const size_t k = rng() % secs.size();
        std::string raw = unpacked(good, k);
        if (raw.empty()) break;
        const int n = 1 + rng() % 6;
        for (int i = 0; i < n; ++i) {
          const size_t at = rng() % raw.size();
          switch (rng() % 4) {
            case 0: raw[at] ^= static_cast<char>(1 + rng() % 255); break;
            case 1: raw[at] = static_cast<char>(0x80 | (rng() % 128)); break;
            case 2: raw.erase(at, 1 + rng() % 8); break;
            default: raw.insert(at, 1 + rng() % 4, static_cast<char>(rng())); break;
          }
          if (raw.empty()) break;
        }
        bad = replace_section(good, k, static_cast<SectionKind>(secs[k].h.kind), raw, rng() % 2);
        break;
      }
    }
    Trace out;
    std::string err;
    const bool ok = decode_trace(bad, &out, &err);
    if (ok) {
      ++accepted;
      for (const Event& e : out.events) {  // whatever is accepted is valid
        ASSERT_TRUE(e.route < static_cast<int>(out.routes.size()));
        ASSERT_TRUE(e.rank >= 0);
      }
    } else {
      ++rejected;
      EXPECT_FALSE(err.empty());
    }
    TraceStreamDecoder d;
    for (size_t i = 0; i < bad.size();) {
      const size_t n = std::min<size_t>(bad.size() - i, 1 + rng() % 3000);
      if (!d.feed(bad.data() + i, n)) break;
      i += n;
    }
    if (ok) {
      EXPECT_TRUE(d.complete()) << d.error();
    }
    if (d.complete() && d.error().empty()) {
      EXPECT_TRUE(ok);
    }
  }
  EXPECT_GT(rejected, iters * 3 / 4);
  printf("fuzz: %d accepted, %d rejected\n", accepted, rejected);
}

// ---- compactness and speed ----------------------------------------------------------------------

TEST(TraceFormat, CompactOnARealisticRingAllReduce) {
  // 64 ranks x 16 channels, 4 chunk loops of 127 steps: 520,192 events.
  Trace t = ring_all_reduce_trace(64, 16, 4, 5);
  ASSERT_EQ(t.events.size(), 520192u);
  const auto t0 = std::chrono::steady_clock::now();
  const std::string bytes = encode_trace(t);
  const auto t1 = std::chrono::steady_clock::now();
  Trace back;
  std::string err;
  ASSERT_TRUE(decode_trace(bytes, &back, &err)) << err;
  const auto t2 = std::chrono::steady_clock::now();
  expect_same_events(t.events, back.events);
  size_t evts = 0;
  for (const SectionAt& s : sections_of(bytes))
    if (s.h.kind == static_cast<uint32_t>(SectionKind::kEvents)) evts += 32 + s.h.stored;
  const double per_event = static_cast<double>(evts) / t.events.size();
  const double enc_s = std::chrono::duration<double>(t1 - t0).count();
  const double dec_s = std::chrono::duration<double>(t2 - t1).count();
  printf("ring all_reduce 64x16: %zu events, file %zu bytes, EVTS %.2f bytes/event (raw struct %zu), "
         "encode %.1f Mevents/s, decode %.1f Mevents/s\n",
         t.events.size(), bytes.size(), per_event, sizeof(Event), t.events.size() / enc_s / 1e6,
         t.events.size() / dec_s / 1e6);
  EXPECT_LT(per_event, 6.0);  // measured 4.41
  EXPECT_LT(static_cast<double>(bytes.size()) / t.events.size(), 6.0);

  // A simulated clock's regular times: the columns are almost all constant differences.
  Trace regular = ring_all_reduce_trace(64, 16, 4, 5, false);
  const std::string rb = encode_trace(regular);
  size_t revts = 0;
  for (const SectionAt& s : sections_of(rb))
    if (s.h.kind == static_cast<uint32_t>(SectionKind::kEvents)) revts += 32 + s.h.stored;
  printf("regular times: EVTS %.3f bytes/event\n", static_cast<double>(revts) / regular.events.size());
  EXPECT_LT(static_cast<double>(revts) / regular.events.size(), 0.5);  // measured 0.14
  ASSERT_TRUE(decode_trace(rb, &back, &err)) << err;
  expect_same_events(regular.events, back.events);
}

// ---- link load ----------------------------------------------------------------------------------

TEST(LinkLoad, TwoEventsByHand) {
  Trace t = small_header();
  // Event A: rank 0 -> 1 (route r01: links 0, 3), Simple, 1000 bytes moving over [2, 4] us.
  // Event B: rank 1 -> 2 (links 2, 5), Simple, 500 bytes with data == end at 5 us: all in 5's bin.
  // Event C: rank 2 receives only: no traffic. The span is [0, 10] us.
  Event a;
  a.rank = 0;
  a.send_peer = 1;
  a.bytes = 1000;
  a.begin_us = 0;
  a.data_us = 2;
  a.end_us = 4;
  a.route = t.route_index(0, 1);
  Event b = a;
  b.rank = 1;
  b.send_peer = 2;
  b.bytes = 500;
  b.begin_us = 3;
  b.data_us = 5;
  b.end_us = 5;
  b.route = t.route_index(1, 2);
  Event c;
  c.rank = 2;
  c.recv_peer = 1;
  c.bytes = 4000;
  c.begin_us = 1;
  c.data_us = 6;
  c.end_us = 10;
  t.events = {a, b, c};
  ASSERT_EQ(t.routes[a.route].links, (std::vector<int>{0, 3}));
  ASSERT_EQ(t.routes[b.route].links, (std::vector<int>{2, 5}));
  compute_link_load(&t, 5);  // 5 bins of 2 us
  EXPECT_EQ(t.load.t0_us, 0);
  EXPECT_EQ(t.load.bins, 5);
  EXPECT_DOUBLE_EQ(t.load.bin_us, 2.0);
  ASSERT_EQ(t.load.series.size(), 4u);
  const std::vector<int> want_links = {0, 2, 3, 5};
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(t.load.series[i].link, want_links[i]);
  // A: 1000 bytes over [2, 4] = bin 1 entirely: 1000 B / 2 us = 0.5 GB/s.
  const std::vector<float> wa = {0, 0.5f, 0, 0, 0};
  // B: 500 bytes in bin 2 (5 us): 500 / 2 us = 0.25 GB/s.
  const std::vector<float> wb = {0, 0, 0.25f, 0, 0};
  EXPECT_EQ(t.load.series[0].gbs, wa);
  EXPECT_EQ(t.load.series[2].gbs, wa);
  EXPECT_EQ(t.load.series[1].gbs, wb);
  EXPECT_EQ(t.load.series[3].gbs, wb);

  // Spread across a bin edge: [3, 6] us -> 1/3 in bin 1, 2/3 in bin 2.
  t.events = {a, c};
  t.events[0].data_us = 3;
  t.events[0].end_us = 6;
  t.events[0].bytes = 1200;
  compute_link_load(&t, 5);
  ASSERT_EQ(t.load.series.size(), 2u);
  EXPECT_NEAR(t.load.series[0].gbs[1], 400.0 / 2000.0, 1e-6);
  EXPECT_NEAR(t.load.series[0].gbs[2], 800.0 / 2000.0, 1e-6);
}

TEST(LinkLoad, ProtocolWireFactors) {
  Trace t = small_header();
  Event e;
  e.rank = 0;
  e.send_peer = 1;
  e.route = t.route_index(0, 1);
  e.begin_us = 0;
  e.data_us = 0;
  e.end_us = 1;
  e.bytes = 1000;
  auto wire = [&](int proto) {
    e.proto = static_cast<uint8_t>(proto);
    t.events = {e};
    compute_link_load(&t, 1);
    EXPECT_EQ(t.load.bins, 1);
    return t.load.series.at(0).gbs.at(0) * t.load.bin_us * 1e3;
  };
  EXPECT_NEAR(wire(kProtoSimple), 1000.0, 1e-3);
  EXPECT_NEAR(wire(kProtoLL), (1000 + 7) / 8 * 16.0, 1e-3);       // 2000
  EXPECT_NEAR(wire(kProtoLL128), (1000 + 119) / 120 * 128.0, 1e-3);  // 9 lines: 1152
  e.bytes = 1001;
  EXPECT_NEAR(wire(kProtoLL), 126 * 16.0, 1e-3);
}

TEST(LinkLoad, ConservesBytesOnEveryLink) {
  Trace t = ring_all_reduce_trace(16, 4, 2, 9);
  // Mix protocols and some odd timings (data before begin, end before data).
  for (size_t i = 0; i < t.events.size(); ++i) {
    t.events[i].proto = static_cast<uint8_t>(i % 3);
    if (i % 101 == 0) t.events[i].end_us = t.events[i].data_us - 0.5;
    if (i % 103 == 0) t.events[i].data_us = t.events[i].begin_us - 0.2;
  }
  for (int max_bins : {1, 7, 1000, 100000}) {
    compute_link_load(&t, max_bins);
    EXPECT_LE(t.load.bins, max_bins);
    EXPECT_GE(t.load.bin_us, 0.01 - 1e-12);
    std::vector<double> want(t.links.size(), 0.0);
    for (const Event& e : t.events) {
      if (e.send_peer < 0 || e.route < 0) continue;
      const double w = e.proto == kProtoLL ? (e.bytes + 7) / 8 * 16.0
                       : e.proto == kProtoLL128 ? (e.bytes + 119) / 120 * 128.0
                                               : static_cast<double>(e.bytes);
      for (int l : t.routes[e.route].links) want[l] += w;
    }
    std::vector<double> got(t.links.size(), 0.0);
    int prev = -1;
    for (const LinkLoad::Series& s : t.load.series) {
      EXPECT_GT(s.link, prev);  // ascending
      prev = s.link;
      ASSERT_EQ(s.gbs.size(), static_cast<size_t>(t.load.bins));
      for (float g : s.gbs) {
        EXPECT_GE(g, 0.0f);
        got[s.link] += static_cast<double>(g) * t.load.bin_us * 1e3;
      }
    }
    for (size_t l = 0; l < t.links.size(); ++l) {
      if (want[l] == 0) {
        EXPECT_EQ(got[l], 0.0);
        continue;
      }
      EXPECT_NEAR(got[l] / want[l], 1.0, 1e-6) << "link " << l << " max_bins " << max_bins;
    }
  }
}

TEST(LinkLoad, EmptyAndDegenerateTraces) {
  Trace t = small_header();
  compute_link_load(&t);
  EXPECT_EQ(t.load.bins, 0);
  EXPECT_TRUE(t.load.series.empty());
  Event e;  // one instantaneous send
  e.rank = 0;
  e.send_peer = 1;
  e.route = t.route_index(0, 1);
  e.bytes = 100;
  e.begin_us = e.data_us = e.end_us = 5;
  t.events = {e};
  compute_link_load(&t);
  EXPECT_EQ(t.load.bins, 1);
  EXPECT_GE(t.load.bin_us, 0.01);
  ASSERT_EQ(t.load.series.size(), 2u);
  EXPECT_NEAR(t.load.series[0].gbs[0] * t.load.bin_us * 1e3, 100.0, 1e-3);
}

// ---- helpers ------------------------------------------------------------------------------------

TEST(TraceHelpers, RouteIndexFollowsChanges) {
  Trace t = small_header();
  for (size_t i = 0; i < t.routes.size(); ++i)
    EXPECT_EQ(t.route_index(t.routes[i].src, t.routes[i].dst), static_cast<int>(i));
  EXPECT_EQ(t.route_index(0, 2), -1);
  EXPECT_EQ(t.route_index(-1, 0), -1);
  EXPECT_EQ(t.route_index(0, 100000), -1);
  // Changed in place (same size and storage): still right.
  t.routes[0].dst = 2;
  EXPECT_EQ(t.route_index(0, 2), 0);
  std::vector<Route> moved = t.routes;
  t.routes.clear();
  EXPECT_EQ(t.route_index(0, 2), -1);
  t.routes = moved;
  t.routes.push_back({1, 3, {}});
  EXPECT_EQ(t.route_index(1, 3), static_cast<int>(t.routes.size()) - 1);
  // The first of duplicates; large and negative ranks (hash table).
  t.routes.push_back({1, 3, {}});
  EXPECT_EQ(t.route_index(1, 3), static_cast<int>(t.routes.size()) - 2);
  t.routes.push_back({100000, 7, {}});
  EXPECT_EQ(t.route_index(100000, 7), static_cast<int>(t.routes.size()) - 1);
  EXPECT_EQ(t.route_index(1, 3), static_cast<int>(t.routes.size()) - 3);
  // A copy answers for its own routes.
  Trace c = t;
  c.routes.erase(c.routes.begin());
  EXPECT_EQ(c.route_index(1, 3), static_cast<int>(c.routes.size()) - 3);
  Trace empty;
  EXPECT_EQ(empty.route_index(0, 1), -1);
}

TEST(TraceHelpers, SpanRankNodeSortAndNames) {
  Trace t = small_header();
  EXPECT_EQ(t.begin_us(), 0);
  EXPECT_EQ(t.end_us(), 0);
  EXPECT_EQ(t.rank_node(2), 2);
  EXPECT_EQ(t.rank_node(9), -1);
  EXPECT_EQ(t.rank_node(-1), -1);
  auto ev = [](double b, int rank, int ch, uint64_t step, double end) {
    Event e;
    e.begin_us = b;
    e.rank = rank;
    e.channel = ch;
    e.step = step;
    e.end_us = end;
    e.data_us = b;
    return e;
  };
  t.events = {ev(5, 1, 0, 0, 9), ev(1, 2, 1, 4, 3), ev(1, 2, 0, 9, 2), ev(1, 0, 3, 0, 20), ev(1, 2, 1, 3, 3),
              ev(1, 2, 1, 3, 4)};
  EXPECT_EQ(t.begin_us(), 1);
  EXPECT_EQ(t.end_us(), 20);
  sort_events(&t.events);
  EXPECT_EQ(t.events[0].rank, 0);
  EXPECT_EQ(t.events[1].channel, 0);
  EXPECT_EQ(t.events[2].step, 3u);
  EXPECT_EQ(t.events[2].end_us, 3);  // stable among equal keys
  EXPECT_EQ(t.events[3].end_us, 4);
  EXPECT_EQ(t.events[4].step, 4u);
  EXPECT_EQ(t.events[5].begin_us, 5);

  EXPECT_STREQ(coll_name(CollKind::kAllReduce), "AllReduce");
  EXPECT_STREQ(coll_name(CollKind::kBroadcast), "Broadcast");
  EXPECT_STREQ(coll_name(CollKind::kReduce), "Reduce");
  EXPECT_STREQ(coll_name(CollKind::kAllGather), "AllGather");
  EXPECT_STREQ(coll_name(CollKind::kReduceScatter), "ReduceScatter");
  EXPECT_STREQ(coll_name(CollKind::kSendRecv), "SendRecv");
  EXPECT_STREQ(prim_label(PrimKind::kRecvReduceSend), "recvReduceSend");
  EXPECT_STREQ(prim_label(PrimKind::kSendFromOutput), "sendFromOutput");
  EXPECT_STREQ(proto_label(kProtoLL), "LL");
  EXPECT_STREQ(proto_label(kProtoLL128), "LL128");
  EXPECT_STREQ(proto_label(kProtoSimple), "Simple");
  EXPECT_STREQ(proto_label(7), "?");
  EXPECT_STREQ(section_name(SectionKind::kEvents), "EVTS");
  EXPECT_STREQ(section_name(SectionKind::kOps), "OPS");
  EXPECT_STREQ(section_name(static_cast<SectionKind>(1)), "????");
}

TEST(TraceHelpers, EventFromRecord) {
  StepRecord r{};
  r.rank = 3;
  r.channel = 1;
  r.send_peer = 0;
  r.recv_peer = 2;
  r.step = 44;
  r.prim = PrimKind::kRecvCopySend;
  r.coll = CollKind::kAllGather;
  r.op_count = 9;
  r.bytes = 8192;
  r.begin_us = 10;
  r.end_us = 12;
  r.offset = 65536;
  r.data_us = 11;
  Event e = event_from_record(r, kProtoLL128, 5);
  EXPECT_EQ(e.rank, 3);
  EXPECT_EQ(e.channel, 1);
  EXPECT_EQ(e.send_peer, 0);
  EXPECT_EQ(e.recv_peer, 2);
  EXPECT_EQ(e.step, 44u);
  EXPECT_EQ(e.prim, PrimKind::kRecvCopySend);
  EXPECT_EQ(e.coll, CollKind::kAllGather);
  EXPECT_EQ(e.op_count, 9u);
  EXPECT_EQ(e.bytes, 8192u);
  EXPECT_EQ(e.offset, 65536u);
  EXPECT_EQ(e.begin_us, 10);
  EXPECT_EQ(e.data_us, 11);
  EXPECT_EQ(e.end_us, 12);
  EXPECT_EQ(e.proto, kProtoLL128);
  EXPECT_EQ(e.route, 5);
  r.data_us = 0;  // not reported
  EXPECT_EQ(event_from_record(r, kProtoLL, -1).data_us, 12);
}

TEST(TraceWriterChecks, InvalidTracesAreNotWritten) {
  Trace t = full_trace(50);
  t.events[10].route = 999;
  const std::string path = scratch_path("invalid.cctrace");
  std::string err;
  EXPECT_FALSE(write_trace(path, t, &err));
  EXPECT_EQ(err, path + ": cannot write event 10: route 999 is out of range (8 routes)");
  EXPECT_TRUE(read_file(path).empty());  // removed
  EXPECT_EQ(encode_trace(t), "");
  t = full_trace(50);
  t.links[0].from = -3;
  EXPECT_FALSE(write_trace(path, t, &err));
  EXPECT_EQ(err, path + ": cannot write this trace: link 0: node -3 -> 4 is out of range (6 nodes)");
  t = full_trace(50);
  t.load.series[0].gbs.pop_back();
  EXPECT_FALSE(write_trace(path, t, &err));
  EXPECT_EQ(err, path + ": cannot write the link load: series 0: 49 values for 50 bins");
  EXPECT_FALSE(write_trace("/nonexistent-dir/x.cctrace", t, &err));
  EXPECT_EQ(err, "/nonexistent-dir/x.cctrace: cannot open for writing: No such file or directory");

  TraceWriter w;
  EXPECT_FALSE(w.begin(t));
  EXPECT_EQ(w.error(), "the trace writer is not open");
  std::string sunk;
  TraceWriter v;
  v.open_sink(&string_sink, &sunk);
  EXPECT_FALSE(v.add_event(Event()));
  EXPECT_EQ(v.error(), "add_event() before begin()");
  TraceWriter fails;
  fails.open_sink([](const void*, size_t, void*) { return false; }, nullptr);
  EXPECT_FALSE(fails.begin(t));
  EXPECT_EQ(fails.error(), "the trace sink failed");
}

}  // namespace
}  // namespace trace
}  // namespace cclab
