// runtime/trace/from_topo.cc - see from_topo.h.
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

TopoMapping map_topology(const Topology& topo) {
  TopoMapping m;
  const int nn = static_cast<int>(topo.nodes.size()), nl = static_cast<int>(topo.links.size());
  auto is_nvs = [&](int n) { return n >= 0 && n < nn && topo.nodes[n].type == TopoNodeType::kNvs; };
  auto is_gpu = [&](int n) { return n >= 0 && n < nn && topo.nodes[n].type == TopoNodeType::kGpu; };
  m.node.assign(nn, -1);
  std::map<int, int> crossbar;  // machine -> its NVSwitch node in the trace
  for (int i = 0; i < nn; ++i) {
    if (is_nvs(i)) {
      auto it = crossbar.find(topo.nodes[i].machine);
      if (it != crossbar.end()) {
        m.node[i] = it->second;
        continue;
      }
      crossbar[topo.nodes[i].machine] = m.nodes;
    }
    m.node[i] = m.nodes++;
  }
  m.link.assign(nl, -1);
  std::map<std::pair<int, bool>, int> aggregated;  // (GPU node, up?) -> trace link
  for (int i = 0; i < nl; ++i) {
    const TopoLink& l = topo.links[i];
    const int a = l.from >= 0 && l.from < nn ? m.node[l.from] : -1, b = l.to >= 0 && l.to < nn ? m.node[l.to] : -1;
    if (is_nvs(l.from) && is_nvs(l.to) && a == b) continue;  // inside the crossbar
    const bool up = is_gpu(l.from) && is_nvs(l.to), down = is_nvs(l.from) && is_gpu(l.to);
    if (up || down) {
      auto ins = aggregated.emplace(std::make_pair(up ? l.from : l.to, up), m.links);
      m.link[i] = ins.first->second;
      if (ins.second) ++m.links;
      continue;
    }
    m.link[i] = m.links++;
  }
  return m;
}

std::vector<int> map_route(const TopoMapping& m, const std::vector<int>& topo_links) {
  std::vector<int> out;
  out.reserve(topo_links.size());
  for (int l : topo_links) {
    const int k = l >= 0 && l < static_cast<int>(m.link.size()) ? m.link[l] : -1;
    if (k < 0 || (!out.empty() && out.back() == k)) continue;
    out.push_back(k);
  }
  return out;
}

void set_topology(const Topology& topo, const std::vector<int>& rank_gpu,
                  const std::vector<std::pair<int, int>>& pairs, Trace* t) {
  t->meta.topo_name = topo.name;
  t->meta.topo_description = topo.description;
  t->meta.machines = topo.machines;
  t->meta.nranks = static_cast<int>(rank_gpu.size());
  t->nodes.clear();
  t->links.clear();
  t->routes.clear();
  const TopoMapping m = map_topology(topo);
  t->nodes.resize(m.nodes);
  std::vector<char> made(m.nodes, 0);
  for (size_t i = 0; i < topo.nodes.size(); ++i) {
    const TopoNode& n = topo.nodes[i];
    const int k = m.node[i];
    if (made[k]) continue;
    made[k] = 1;
    Node& o = t->nodes[k];
    o.name = n.name;
    o.kind = node_kind(n.type);
    o.machine = n.machine;
    o.dev = n.dev;
    if (n.type == TopoNodeType::kNvs) {  // the machine's crossbar: "m0.nvs0" -> "m0.nvswitch"
      const size_t dot = n.name.rfind('.');
      o.name = (dot == std::string::npos ? std::string() : n.name.substr(0, dot + 1)) + "nvswitch";
      o.dev = 0;
    }
  }
  for (size_t r = 0; r < rank_gpu.size(); ++r)
    if (rank_gpu[r] >= 0 && rank_gpu[r] < static_cast<int>(m.node.size())) t->nodes[m.node[rank_gpu[r]]].rank = static_cast<int>(r);
  t->links.resize(m.links);
  made.assign(m.links, 0);
  for (size_t i = 0; i < topo.links.size(); ++i) {
    const TopoLink& l = topo.links[i];
    const int k = m.link[i];
    if (k < 0) continue;
    Link& o = t->links[k];
    if (made[k]) {  // one more NVLink of a GPU to the crossbar
      o.gbs += l.bw > 0 ? l.bw : 0.0;
      o.latency_us = std::max(o.latency_us, l.latency_us);
      continue;
    }
    made[k] = 1;
    const int nn = static_cast<int>(m.node.size());
    o.from = l.from >= 0 && l.from < nn ? m.node[l.from] : l.from;
    o.to = l.to >= 0 && l.to < nn ? m.node[l.to] : l.to;
    o.reverse = l.reverse >= 0 && l.reverse < static_cast<int>(m.link.size()) ? m.link[l.reverse] : -1;
    o.kind = link_kind(l.type);
    o.gbs = l.bw;
    o.latency_us = l.latency_us;
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
    r.links = map_route(m, topo.path(a, b).links);
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
