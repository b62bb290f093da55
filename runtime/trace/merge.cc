// runtime/trace/merge.cc - see merge.h.
#include "trace/merge.h"

#include <algorithm>
#include <limits>
#include <map>

namespace cclab {
namespace trace {

bool merge_traces(const std::vector<Trace>& parts, Trace* out, std::string* error) {
  if (parts.empty()) {
    *error = "nothing to merge";
    return false;
  }
  const Trace& first = parts[0];
  for (size_t i = 1; i < parts.size(); ++i) {
    const Trace& p = parts[i];
    auto bad = [&](const std::string& what) {
      *error = "part " + std::to_string(i + 1) + " is not of the same run as part 1: " + what;
      return false;
    };
    if (p.meta.nranks != first.meta.nranks)
      return bad(std::to_string(p.meta.nranks) + " ranks against " + std::to_string(first.meta.nranks));
    if (p.meta.backend != first.meta.backend) return bad("backend " + p.meta.backend + " against " + first.meta.backend);
    if (p.nodes.size() != first.nodes.size() || p.links.size() != first.links.size())
      return bad("another topology (" + p.meta.topo_name + ")");
    if (p.channels.size() != first.channels.size()) return bad("another number of channels");
    for (size_t c = 0; c < p.channels.size(); ++c)
      if (p.channels[c].ring != first.channels[c].ring) return bad("channel " + std::to_string(c) + "'s ring differs");
  }
  Trace t;
  t.meta = first.meta;
  t.nodes = first.nodes;
  t.links = first.links;
  t.routes = first.routes;
  t.channels = first.channels;
  // GPUs played by ranks of any part.
  for (const Trace& p : parts)
    for (size_t n = 0; n < p.nodes.size(); ++n)
      if (p.nodes[n].rank >= 0) t.nodes[n].rank = p.nodes[n].rank;
  std::map<std::pair<int, int>, int> route_of;
  for (size_t i = 0; i < t.routes.size(); ++i) route_of[{t.routes[i].src, t.routes[i].dst}] = static_cast<int>(i);
  std::map<uint64_t, size_t> op_index;
  double t0 = std::numeric_limits<double>::infinity();
  for (const Trace& p : parts) {
    for (const Event& e : p.events) t0 = std::min(t0, e.begin_us);
    for (const Op& o : p.ops) t0 = std::min(t0, o.begin_us);
  }
  if (!(t0 < std::numeric_limits<double>::infinity())) t0 = 0;
  for (const Trace& p : parts) {
    for (Event e : p.events) {
      e.begin_us -= t0;
      e.data_us -= t0;
      e.end_us -= t0;
      if (e.send_peer >= 0) {
        auto it = route_of.find({e.rank, e.send_peer});
        e.route = it == route_of.end() ? -1 : it->second;
      }
      t.events.push_back(e);
    }
    for (Op o : p.ops) {
      o.begin_us -= t0;
      o.end_us -= t0;
      auto it = op_index.find(o.op_count);
      if (it == op_index.end()) {
        op_index[o.op_count] = t.ops.size();
        t.ops.push_back(o);
        continue;
      }
      Op& m = t.ops[it->second];
      m.begin_us = std::min(m.begin_us, o.begin_us);
      m.end_us = std::max(m.end_us, o.end_us);
    }
  }
  // The doctor's reports: each process of a stuck job records the one it saw; the same verdict is kept once
  // (the earliest).
  for (const Trace& p : parts)
    for (Stuck st : p.stuck) {
      st.time_us -= t0;
      for (StuckWait& w : st.waits) w.since_us -= t0;
      t.stuck.push_back(std::move(st));
    }
  std::stable_sort(t.stuck.begin(), t.stuck.end(), [](const Stuck& a, const Stuck& b) { return a.time_us < b.time_us; });
  {
    std::vector<Stuck> kept;
    for (Stuck& st : t.stuck) {
      bool seen = false;
      for (const Stuck& k : kept) seen = seen || (k.summary == st.summary && k.certain == st.certain);
      if (!seen) kept.push_back(std::move(st));
    }
    t.stuck = std::move(kept);
  }
  for (Op& o : t.ops) {
    const double us = o.end_us - o.begin_us;
    const double factor = o.algbw > 0 ? o.busbw / o.algbw : 0;
    o.algbw = us > 0 ? static_cast<double>(o.bytes) / (us * 1e3) : 0;
    o.busbw = o.algbw * factor;
  }
  std::sort(t.ops.begin(), t.ops.end(), [](const Op& a, const Op& b) { return a.op_count < b.op_count; });
  sort_events(&t.events);
  compute_link_load(&t);
  *out = std::move(t);
  return true;
}

}  // namespace trace
}  // namespace cclab
