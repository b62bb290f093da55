// tests/viz/viz_demo_trace.cc - writes a plausible trace of a ring or tree all_reduce on a preset
// topology without running the simulator: real topology, routes and channels (trace/from_topo.h), step
// times from a simple model (each step moves one slice over its route at the bottleneck link's rate
// shared by the steps that cross it, after its data dependency and a little jitter). For the
// visualiser's documentation screenshots until `cclab sim --trace` traces replace them, and for
// trying `cclab viz` on bigger topologies.
//
//   viz_demo_trace OUT.cctrace [--topo dgx-h100[:N]] [--algo ring|tree] [--channels C] [--bytes B]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "graph/topo.h"
#include "trace/from_topo.h"
#include "trace/trace.h"

using namespace cclab;

namespace {

struct Model {
  Topology topo;
  trace::Trace t;
  int n = 0;
  std::vector<int> gpu;  // rank -> GPU node
  std::map<std::pair<int, int>, std::vector<int>> route;  // (src, dst) -> links
};

// Deterministic jitter in [1, 1 + amp).
double jitter(int a, int b, int c, double amp) {
  uint32_t h = static_cast<uint32_t>(a * 73856093) ^ static_cast<uint32_t>(b * 19349663) ^
               static_cast<uint32_t>(c * 83492791);
  h ^= h >> 13;
  h *= 0x5bd1e995;
  h ^= h >> 15;
  return 1 + amp * (h % 1000) / 1000.0;
}

// Seconds-free: microseconds to move `bytes` from a to b when `share[l]` steps cross link l at once.
double move_us(const Model& m, int a, int b, double bytes, const std::vector<double>& share) {
  auto it = m.route.find({a, b});
  if (it == m.route.end() || it->second.empty()) return bytes / 20e3;
  double us = 0, lat = 0;
  for (int l : it->second) {
    const double gbs = m.t.links[l].gbs / std::max(1.0, share[l]);
    us = std::max(us, bytes / (gbs * 1e3));
    lat += m.t.links[l].latency_us;
  }
  return us + lat;
}

trace::Event ev(int rank, int ch, int send, int recv, uint64_t step, PrimKind prim, uint64_t off, uint64_t bytes,
                double b, double d, double e) {
  trace::Event x;
  x.rank = rank;
  x.channel = ch;
  x.send_peer = send;
  x.recv_peer = recv;
  x.step = step;
  x.prim = prim;
  x.coll = CollKind::kAllReduce;
  x.proto = 2;
  x.offset = off;
  x.bytes = bytes;
  x.begin_us = b;
  x.data_us = d;
  x.end_us = e;
  return x;
}

void ring(Model& m, int nch, double bytes) {
  const int n = m.n, gpm = m.topo.gpus_per_machine();
  for (int c = 0; c < nch; ++c) {
    std::vector<int> order;
    for (int mm = 0; mm < m.topo.machines; ++mm)
      for (int i = 0; i < gpm; ++i) order.push_back(mm * gpm + (i + c) % gpm);
    m.t.channels.push_back(trace::make_channel(c, order, 0, {}));
  }
  trace::set_topology(m.topo, m.gpu, trace::channel_pairs(m.t.channels), &m.t);
  for (const trace::Route& r : m.t.routes) m.route[{r.src, r.dst}] = r.links;
  // How many concurrent sends cross each link (every channel's ranks step together).
  std::vector<double> share(m.t.links.size(), 0);
  for (const trace::Channel& ch : m.t.channels)
    for (int i = 0; i < n; ++i)
      for (int l : m.route[{ch.ring[i], ch.ring[(i + 1) % n]}]) share[l] += 1;
  const int loops = 2;
  const double chunk = bytes / nch / n / loops;
  const int steps = 2 * (n - 1);
  for (int c = 0; c < nch; ++c) {
    const std::vector<int>& order = m.t.channels[c].ring;
    std::vector<int> pos(n);
    for (int i = 0; i < n; ++i) pos[order[i]] = i;
    std::vector<double> prev_end(n, 0), cur_end(n, 0);
    uint64_t step = 0;
    for (int loop = 0; loop < loops; ++loop) {
      for (int k = 0; k < steps; ++k, ++step) {
        for (int r = 0; r < n; ++r) {
          const int next = order[(pos[r] + 1) % n], prev = order[(pos[r] + n - 1) % n];
          const bool first = k == 0, last = k == steps - 1;
          PrimKind prim = first                ? PrimKind::kSend
                          : k < n - 1          ? PrimKind::kRecvReduceSend
                          : k == n - 1         ? PrimKind::kRecvReduceCopySend
                          : last               ? PrimKind::kRecv
                                               : PrimKind::kRecvCopySend;
          const double begin = prev_end[r];
          double data = begin + 0.4;
          if (!first || loop > 0) data = std::max(data, prev_end[prev] + 0.2);
          const double slow = (r == n / 2 && k == n) ? 2.5 : 1.0;  // one slow step: someone waits for it
          const double dur = last ? 0.3 : move_us(m, r, next, chunk, share) * jitter(r, k, c, 0.15) * slow;
          const uint64_t idx = static_cast<uint64_t>((pos[r] - k % n + 2 * n) % n);
          const uint64_t off = static_cast<uint64_t>((loop * n + idx) * chunk + c * (bytes / nch));
          cur_end[r] = data + dur;
          m.t.events.push_back(ev(r, c, last ? -1 : next, first ? -1 : prev, step, prim, off,
                                  static_cast<uint64_t>(chunk), begin, data, cur_end[r]));
        }
        prev_end = cur_end;
      }
    }
  }
}

void tree(Model& m, int nch, double bytes) {
  const int n = m.n, gpm = m.topo.gpus_per_machine(), machines = m.topo.machines;
  // Within a machine a chain from its first GPU; machines' first GPUs in a binary tree (two mirrored
  // trees on alternate channels, as NCCL's double binary tree).
  for (int c = 0; c < nch; ++c) {
    std::vector<TreeLinks> links(n);
    const bool mirror = c % 2 == 1;
    auto head = [&](int mm) { return (mirror ? machines - 1 - mm : mm) * gpm; };
    for (int r = 0; r < n; ++r) {
      links[r].up = -1;
      links[r].ndown = 0;
      for (int& d : links[r].down) d = -1;
    }
    for (int mm = 0; mm < machines; ++mm) {
      const int base = (mirror ? machines - 1 - mm : mm) * gpm;
      for (int i = 1; i < gpm; ++i) {
        links[base + i].up = base + i - 1;
        links[base + i - 1].down[links[base + i - 1].ndown++] = base + i;
      }
      if (mm > 0) {
        const int parent = head((mm - 1) / 2);
        links[base].up = parent;
        links[parent].down[links[parent].ndown++] = base;
      }
    }
    std::vector<int> ring;
    for (int r = 0; r < n; ++r) ring.push_back(r);
    m.t.channels.push_back(trace::make_channel(c, ring, c % 2, links));
  }
  trace::set_topology(m.topo, m.gpu, trace::channel_pairs(m.t.channels), &m.t);
  for (const trace::Route& r : m.t.routes) m.route[{r.src, r.dst}] = r.links;
  std::vector<double> share(m.t.links.size(), 0);
  for (const trace::Channel& ch : m.t.channels)
    for (int r = 0; r < n; ++r)
      if (ch.tree_up[r] >= 0)
        for (int l : m.route[{r, ch.tree_up[r]}]) share[l] += 1;
  const int slices = 6;
  const double slice = bytes / nch / slices;
  for (int c = 0; c < nch; ++c) {
    const trace::Channel& ch = m.t.channels[c];
    // Depth order.
    std::vector<int> depth(n, 0), order;
    for (int r = 0; r < n; ++r)
      for (int p = ch.tree_up[r]; p >= 0; p = ch.tree_up[p]) ++depth[r];
    for (int r = 0; r < n; ++r) order.push_back(r);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return depth[a] > depth[b]; });
    std::vector<double> free_at(n, 0);
    std::vector<std::vector<double>> up_end(slices, std::vector<double>(n, 0)), down_end(slices, std::vector<double>(n, 0));
    std::vector<uint64_t> step(n, 0);
    for (int s = 0; s < slices; ++s) {
      // Reduce up: children first.
      for (int r : order) {
        const int parent = ch.tree_up[r];
        const std::array<int, 3>& kids = ch.tree_down[r];
        double ready = free_at[r] + 0.3;
        for (int k : kids)
          if (k >= 0) ready = std::max(ready, up_end[s][k] + 0.2);
        const bool root = parent < 0;
        const bool leaf = kids[0] < 0;
        const double dur = root ? move_us(m, r, std::max(0, kids[0]), slice, share) * 0.5
                                : move_us(m, r, parent, slice, share) * jitter(r, s, c, 0.2);
        const double begin = free_at[r];
        up_end[s][r] = ready + dur;
        const PrimKind prim = leaf ? PrimKind::kSend : root ? PrimKind::kRecvReduceCopySend : PrimKind::kRecvReduceSend;
        const uint64_t off = static_cast<uint64_t>(c * (bytes / nch) + s * slice);
        int nrec = 0;
        for (int k : kids) nrec += k >= 0;
        if (root) {  // receives from its children, sends the result back down
          for (int i = 0; i < std::max(1, nrec); ++i)
            m.t.events.push_back(ev(r, c, kids[i], kids[i], step[r], prim, off, static_cast<uint64_t>(slice), begin,
                                    ready, up_end[s][r]));
        } else {
          for (int i = 0; i < std::max(1, nrec); ++i)
            m.t.events.push_back(ev(r, c, i == 0 ? parent : -1, leaf ? -1 : kids[i], step[r], prim, off,
                                    static_cast<uint64_t>(slice), begin, ready, up_end[s][r]));
        }
        ++step[r];
        free_at[r] = up_end[s][r];
      }
      // Broadcast down: parents first.
      for (auto it = order.rbegin(); it != order.rend(); ++it) {
        const int r = *it, parent = ch.tree_up[r];
        if (parent < 0) {
          down_end[s][r] = up_end[s][r];
          continue;
        }
        const std::array<int, 3>& kids = ch.tree_down[r];
        const bool leaf = kids[0] < 0;
        const double begin = free_at[r];
        const double data = std::max(begin + 0.3, down_end[s][parent] + 0.2);
        const double dur = leaf ? 0.4 : move_us(m, r, kids[0], slice, share) * jitter(r, s + 50, c, 0.2);
        down_end[s][r] = data + dur;
        const uint64_t off = static_cast<uint64_t>(c * (bytes / nch) + s * slice);
        int nk = 0;
        for (int k : kids) nk += k >= 0;
        for (int i = 0; i < std::max(1, nk); ++i)
          m.t.events.push_back(ev(r, c, leaf ? -1 : kids[i], i == 0 ? parent : -1, step[r],
                                  leaf ? PrimKind::kRecv : PrimKind::kRecvCopySend, off, static_cast<uint64_t>(slice),
                                  begin, data, down_end[s][r]));
        ++step[r];
        free_at[r] = down_end[s][r];
      }
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string out, topo_spec = "dgx-h100", algo = "ring";
  int nch = 0;
  double bytes = 256.0 * 1024 * 1024;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "viz_demo_trace: %s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--topo") topo_spec = value();
    else if (a == "--algo") algo = value();
    else if (a == "--channels") nch = std::atoi(value().c_str());
    else if (a == "--bytes") bytes = std::atof(value().c_str());
    else if (!a.empty() && a[0] != '-' && out.empty()) out = a;
    else {
      std::fprintf(stderr, "usage: viz_demo_trace OUT.cctrace [--topo PRESET[:N]] [--algo ring|tree] "
                           "[--channels C] [--bytes B]\n");
      return 2;
    }
  }
  if (out.empty() || (algo != "ring" && algo != "tree")) {
    std::fprintf(stderr, "usage: viz_demo_trace OUT.cctrace [--topo PRESET[:N]] [--algo ring|tree] [--channels C] [--bytes B]\n");
    return 2;
  }
  Model m;
  std::string preset, err;
  int machines = 1;
  if (!parse_topo_spec(topo_spec, &preset, &machines, &err) ||
      !make_preset_topology(preset, machines, FabricSpec(), &m.topo, &err)) {
    std::fprintf(stderr, "viz_demo_trace: %s\n", err.c_str());
    return 2;
  }
  m.gpu = m.topo.gpus();
  m.n = static_cast<int>(m.gpu.size());
  if (nch <= 0) nch = algo == "ring" ? 8 : 4;
  if (algo == "ring") ring(m, nch, bytes);
  else tree(m, nch, bytes);
  m.t.meta.tool = "viz_demo_trace (synthetic)";
  m.t.meta.backend = "sim";
  m.t.meta.clock = "simulated";
  m.t.meta.command = "viz_demo_trace --topo " + topo_spec + " --algo " + algo;
  trace::assign_routes(&m.t);
  trace::sort_events(&m.t.events);
  trace::Op op;
  op.coll = CollKind::kAllReduce;
  op.algo = algo == "ring" ? "Ring" : "Tree";
  op.proto = "Simple";
  op.type = "float";
  op.redop = "sum";
  op.count = static_cast<size_t>(bytes / 4);
  op.bytes = static_cast<size_t>(bytes);
  op.nchannels = nch;
  op.begin_us = m.t.begin_us();
  op.end_us = m.t.end_us();
  m.t.ops.push_back(op);
  trace::compute_link_load(&m.t, 600);
  if (!trace::write_trace(out, m.t, &err)) {
    std::fprintf(stderr, "viz_demo_trace: %s\n", err.c_str());
    return 1;
  }
  std::printf("%s: %s %s, %d ranks, %d channels, %zu events, %.1f us\n", out.c_str(), topo_spec.c_str(), algo.c_str(),
              m.n, nch, m.t.events.size(), m.t.end_us() - m.t.begin_us());
  return 0;
}
