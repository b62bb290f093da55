// tests/viz/synth.h - synthetic traces for the visualiser's tests: one machine of 4 GPUs on an
// NVSwitch (100 GB/s per direction), a ring channel, ring steps with routes, and a LOAD section that
// drives one link at 97% of its capacity during [20, 60) us while another stays idle.
#pragma once

#include <string>
#include <vector>

#include "trace/trace.h"

namespace cclab {
namespace viz_test {

constexpr int kGpus = 4;
constexpr double kLinkGbs = 100;
constexpr double kBusyFrom = 20, kBusyTo = 60;  // us: link kBusyLink at 97%
constexpr int kBusyLink = 0;                    // gpu0 -> nvs0
constexpr int kIdleLink = 5;                    // nvs0 -> gpu2 (carries nothing)

// Node i < kGpus: "m0.gpu<i>" (rank i); node kGpus: "m0.nvs0". Link 2i: gpu i -> nvs, 2i+1: nvs -> gpu i.
inline trace::Trace small_trace(bool with_events = true) {
  trace::Trace t;
  t.meta.tool = "viz test";
  t.meta.backend = "sim";
  t.meta.topo_name = "synthetic-4gpu";
  t.meta.machines = 1;
  t.meta.nranks = kGpus;
  t.meta.clock = "simulated";
  for (int i = 0; i < kGpus; ++i) {
    trace::Node n;
    n.name = "m0.gpu" + std::to_string(i);
    n.kind = "gpu";
    n.machine = 0;
    n.dev = i;
    n.rank = i;
    t.nodes.push_back(n);
  }
  trace::Node nvs;
  nvs.name = "m0.nvs0";
  nvs.kind = "nvswitch";
  nvs.machine = 0;
  nvs.dev = 0;
  t.nodes.push_back(nvs);
  for (int i = 0; i < kGpus; ++i) {
    trace::Link up, down;
    up.from = i;
    up.to = kGpus;
    up.reverse = 2 * i + 1;
    down.from = kGpus;
    down.to = i;
    down.reverse = 2 * i;
    up.kind = down.kind = "nvlink";
    up.gbs = down.gbs = kLinkGbs;
    up.latency_us = down.latency_us = 0.5;
    t.links.push_back(up);
    t.links.push_back(down);
  }
  for (int a = 0; a < kGpus; ++a)
    for (int b = 0; b < kGpus; ++b)
      if (a != b) t.routes.push_back({a, b, {2 * a, 2 * b + 1}});
  trace::Channel c;
  c.index = 0;
  c.ring = {0, 1, 2, 3};
  c.tree_up = {-1, 0, 1, 2};
  c.tree_down = {{{1, -1, -1}}, {{2, -1, -1}}, {{3, -1, -1}}, {{-1, -1, -1}}};
  t.channels.push_back(c);

  trace::Op op;
  op.op_count = 0;
  op.coll = CollKind::kAllReduce;
  op.algo = "Ring";
  op.proto = "Simple";
  op.type = "float";
  op.redop = "sum";
  op.count = 1 << 20;
  op.bytes = 4u << 20;
  op.nchannels = 1;
  op.begin_us = 0;
  op.end_us = 100;
  t.ops.push_back(op);

  if (with_events) {
    // Ring steps: every 10 us each rank sends 1 MiB to the next, waiting 2 us, moving 8 us; the
    // route of rank r -> r+1 is gpu r -> nvs -> gpu r+1. Rank 0's step 3 waits longer (data from 3).
    for (int s = 0; s < 10; ++s) {
      for (int r = 0; r < kGpus; ++r) {
        trace::Event e;
        e.rank = r;
        e.channel = 0;
        e.send_peer = (r + 1) % kGpus;
        e.recv_peer = s == 0 ? -1 : (r + kGpus - 1) % kGpus;
        e.prim = s == 0 ? PrimKind::kSend : PrimKind::kRecvReduceSend;
        e.step = static_cast<uint64_t>(s);
        e.offset = static_cast<uint64_t>(s) << 20;
        e.bytes = 1 << 20;
        e.begin_us = 10.0 * s;
        e.data_us = e.begin_us + 2;
        e.end_us = e.begin_us + 10;
        e.route = t.route_index(r, e.send_peer);
        t.events.push_back(e);
      }
    }
    trace::sort_events(&t.events);
  }

  // LOAD: 100 bins of 1 us; link 0 at 97 GB/s in [20, 60), link 2 at 40 GB/s throughout.
  t.load.t0_us = 0;
  t.load.bin_us = 1;
  t.load.bins = 100;
  trace::LinkLoad::Series busy;
  busy.link = kBusyLink;
  busy.gbs.assign(100, 0.0f);
  for (int b = static_cast<int>(kBusyFrom); b < static_cast<int>(kBusyTo); ++b) busy.gbs[b] = 97.0f;
  trace::LinkLoad::Series mid;
  mid.link = 2;
  mid.gbs.assign(100, 40.0f);
  t.load.series = {busy, mid};
  return t;
}

// An NVLS AllReduce on the same machine (no LOAD section: readers compute it): three loops of 10 us, in
// each every rank scatters (a local copy, [10s, 10s+2)), is the head of its part ([10s+2, 10s+8): a
// switch step of 1 MiB, its own rank as both peers) and gathers ([10s+8, 10s+10)).
inline trace::Trace nvls_trace() {
  trace::Trace t = small_trace(false);
  t.ops[0].algo = "NVLS";
  t.ops[0].end_us = 30;
  t.load = trace::LinkLoad();
  for (int s = 0; s < 3; ++s) {
    for (int r = 0; r < kGpus; ++r) {
      trace::Event e;
      e.rank = r;
      e.channel = 0;
      e.step = static_cast<uint64_t>(s);
      e.bytes = 1 << 20;
      e.offset = static_cast<uint64_t>(s * kGpus + r) << 20;
      e.prim = PrimKind::kLocalCopy;
      e.begin_us = e.data_us = 10.0 * s;
      e.end_us = e.begin_us + 2;
      t.events.push_back(e);
      e.prim = PrimKind::kRecvReduceCopySend;
      e.send_peer = e.recv_peer = r;
      e.begin_us = e.data_us = 10.0 * s + 2;
      e.end_us = e.begin_us + 6;
      t.events.push_back(e);
      e.prim = PrimKind::kLocalCopy;
      e.send_peer = e.recv_peer = -1;
      e.begin_us = e.data_us = 10.0 * s + 8;
      e.end_us = e.begin_us + 2;
      t.events.push_back(e);
    }
  }
  trace::sort_events(&t.events);
  return t;
}

// A doctor's report at `at_us` (default 70 us, after every step of small_trace): ranks 0-2 wait in a ring
// towards rank 3, which left its communicator - rank 0 waits for data from 3 on channel 0, rank 1 for data
// from 0, rank 2 for FIFO credits from 1.
inline trace::Stuck stuck_report(double at_us = 70) {
  trace::Stuck st;
  st.time_us = at_us;
  st.certain = true;
  st.code = 5;
  st.summary = "rank 3 left the communicator without calling collective #0";
  st.lines = {"board /cclab-board-test: 4 ranks", "verdict: " + st.summary};
  for (int r = 0; r < kGpus; ++r)
    st.ranks.push_back({r, 100 + r, r == 3 ? "left" : "running", "rank " + std::to_string(r)});
  auto wait = [&](int rank, int peer, bool data, uint64_t step) {
    trace::StuckWait w;
    w.rank = rank;
    w.peer = peer;
    w.channel = 0;
    w.step = step;
    w.for_data = data;
    w.prim = "recv";
    w.since_us = at_us - 10;
    st.waits.push_back(w);
  };
  wait(0, 3, true, 4);
  wait(1, 0, true, 2);
  wait(2, 1, false, 6);
  return st;
}

}  // namespace viz_test
}  // namespace cclab
