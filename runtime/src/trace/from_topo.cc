// runtime/src/trace/from_topo.cc - see from_topo.h.
#include "trace/from_topo.h"

#include <algorithm>
#include <map>

namespace cclab {
namespace trace {
namespace {

const char* node_kind(TopoNodeType t) {
  switch (t) {
    case TopoNodeType::kGpu: return "gpu";
    case TopoNodeType::kPci: return "pci";
    case TopoNodeType::kNvs: return "nvswitch";
    case TopoNodeType::kCpu: return "cpu";
    case TopoNodeType::kNic: return "nic";
    case TopoNodeType::kNet: return "net";
    case TopoNodeType::kNetSwitch: return "switch";
  }
  return "?";
}

const char* link_kind(LinkType t) {
  switch (t) {
    case LinkType::kNvl: return "nvlink";
    case LinkType::kC2c: return "c2c";
    case LinkType::kPci: return "pci";
    case LinkType::kSys: return "sys";
    case LinkType::kNet: return "net";
    case LinkType::kLoc: return "loc";
  }
  return "?";
}

}  // namespace

void set_topology(const Topology& topo, const std::vector<int>& rank_gpu,
                  const std::vector<std::pair<int, int>>& pairs, Trace* t) {
  t->meta.topo_name = topo.name;
  t->meta.topo_description = topo.description;
  t->meta.machines = topo.machines;
  t->meta.nranks = static_cast<int>(rank_gpu.size());
  t->nodes.clear();
  t->links.clear();
  t->routes.clear();
  for (const TopoNode& n : topo.nodes) {
    Node o;
    o.name = n.name;
    o.kind = node_kind(n.type);
    o.machine = n.machine;
    o.dev = n.dev;
    t->nodes.push_back(o);
  }
  for (size_t r = 0; r < rank_gpu.size(); ++r)
    if (rank_gpu[r] >= 0 && rank_gpu[r] < static_cast<int>(t->nodes.size())) t->nodes[rank_gpu[r]].rank = static_cast<int>(r);
  for (const TopoLink& l : topo.links) {
    Link o;
    o.from = l.from;
    o.to = l.to;
    o.reverse = l.reverse;
    o.kind = link_kind(l.type);
    o.gbs = l.bw;
    o.latency_us = l.latency_us;
    t->links.push_back(o);
  }
  for (const auto& p : pairs) {
    if (p.first < 0 || p.second < 0 || p.first >= static_cast<int>(rank_gpu.size()) ||
        p.second >= static_cast<int>(rank_gpu.size()) || p.first == p.second)
      continue;
    const int a = rank_gpu[p.first], b = rank_gpu[p.second];
    if (a < 0 || b < 0) continue;
    Route r;
    r.src = p.first;
    r.dst = p.second;
    r.links = topo.path(a, b).links;
    t->routes.push_back(std::move(r));
  }
}

std::vector<std::pair<int, int>> channel_pairs(const std::vector<Channel>& channels) {
  std::vector<std::pair<int, int>> out;
  auto add = [&](int a, int b) {
    if (a < 0 || b < 0 || a == b) return;
    out.emplace_back(a, b);
    out.emplace_back(b, a);
  };
  for (const Channel& c : channels) {
    const size_t n = c.ring.size();
    for (size_t i = 0; i < n; ++i) add(c.ring[i], c.ring[(i + 1) % n]);
    for (size_t r = 0; r < c.tree_up.size(); ++r) add(static_cast<int>(r), c.tree_up[r]);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<std::pair<int, int>> all_pairs(int nranks) {
  std::vector<std::pair<int, int>> out;
  for (int a = 0; a < nranks; ++a)
    for (int b = 0; b < nranks; ++b)
      if (a != b) out.emplace_back(a, b);
  return out;
}

Channel make_channel(int index, const std::vector<int>& ring, int tree_index, const std::vector<TreeLinks>& tree) {
  Channel c;
  c.index = index;
  c.ring = ring;
  c.tree_index = tree_index;
  for (const TreeLinks& l : tree) {
    c.tree_up.push_back(l.up);
    std::array<int, 3> d{-1, -1, -1};
    for (int i = 0; i < l.ndown && i < 3; ++i) d[i] = l.down[i];
    c.tree_down.push_back(d);
  }
  return c;
}

void assign_routes(Trace* t) {
  std::map<std::pair<int, int>, int> index;
  for (size_t i = 0; i < t->routes.size(); ++i) index[{t->routes[i].src, t->routes[i].dst}] = static_cast<int>(i);
  for (Event& e : t->events) {
    if (e.send_peer < 0) {
      e.route = -1;
      continue;
    }
    auto it = index.find({e.rank, e.send_peer});
    e.route = it == index.end() ? -1 : it->second;
  }
}

}  // namespace trace
}  // namespace cclab
