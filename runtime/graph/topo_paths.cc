// runtime/graph/topo_paths.cc - Topology::compute_paths() and path(): the route between two nodes,
// its NCCL path type and bottleneck bandwidth.
//
// Inside a machine this is NCCL's ncclTopoSetPaths (NCCL 2.28.9 src/graph/paths.cc), run forward from
// every GPU and NET node:
//   - breadth-first, so a node keeps the route with the fewest hops; among routes of that length the
//     one with the highest bottleneck model bandwidth (a route replaces another only when it is not
//     longer and strictly wider; ties keep the first found, links visited widest first as NCCL sorts
//     them);
//   - the route never goes through a GPU, except GPU -NVLink-> GPU -> one more hop (NCCL's NVB);
//   - the type is the worst of its hops: a link's own type (NVL, C2C, PCI = PIX, SYS; the NIC -> NET
//     LOC link adds nothing), a PCI hop between two PCI switches is PXB, a PCI hop touching a CPU is
//     PHB, two NVLink hops through a GPU are NVB.
// NCCL merges every NVSwitch of a machine into one NVS node (topo.cc, ncclTopoAddNvLinks); cclab keeps
// the chips apart for the simulator but the search sees them as NCCL does: during the search all NVS
// nodes of a machine are one vertex, parallel links between two vertices add up, so a DGX H100 GPU pair
// is NVL at 18 x 20.6 = 370.8 GB/s (model) / 450 GB/s (physical). The stored route goes through the
// one chip that carries most of the pair's links (first in index order on a tie).
// NCCL's later adjustments (P2P level and GDR diversions through the CPU, PXN, P2C) depend on the
// environment and the communicator and are left to the consumers.
//
// Across machines (NCCL has no such paths; cclab's simulator needs them): the source leaves through
// its exit NET (a GPU: among the NETs of widest then best-typed path, the one with the GPU's dev index
// (its rail) if any, else the (dev mod count)-th; a NET: itself), crosses the fabric by the fewest
// switch hops (widest on ties), and enters the destination's machine through the destination's own
// exit NET (or the destination itself when it is a NET). Type NET, bandwidths the bottleneck of the
// three parts, latency their sum. These are composed on first use and cached. path_via() composes the
// same three parts through NETs the caller names: a network connection's route, on the NICs its
// channel's graph chose (sim/world.cc); path() is the route when nothing chose.
#include <algorithm>
#include <array>
#include <cstdint>
#include <mutex>
#include <unordered_map>

#include "graph/topo.h"

namespace cclab {

namespace {

constexpr double kLocBw = 5000.0;  // NCCL's LOC_BW: a node to itself

// One edge of the machine graph the search runs on: all links of one type between two vertices
// (a vertex is a node, or all NVSwitches of a machine) added up.
struct Edge {
  int to = -1;            // vertex
  LinkType type = LinkType::kPci;
  double model_bw = 0;
  double bw = 0;
};

}  // namespace

struct Topology::PathCache::Impl {
  struct KeyHash {
    size_t operator()(const std::array<int, 4>& k) const {
      uint64_t h = 1469598103934665603ULL;
      for (int v : k) h = (h ^ static_cast<uint32_t>(v)) * 1099511628211ULL;
      return static_cast<size_t>(h);
    }
  };
  std::mutex mu;
  // (source, exit NET, entry NET or switch, destination) -> composed route
  std::unordered_map<std::array<int, 4>, std::unique_ptr<TopoPath>, KeyHash> paths;
  // per source NET node: predecessor link of every node on the widest-shortest fabric route
  std::unordered_map<int, std::vector<int>> fabric_pred;
};

Topology::PathCache::PathCache() : impl_(new Impl) {}
Topology::PathCache::PathCache(const PathCache&) : impl_(new Impl) {}
Topology::PathCache& Topology::PathCache::operator=(const PathCache&) {
  impl_.reset(new Impl);
  return *this;
}
Topology::PathCache::~PathCache() = default;
void Topology::PathCache::reset() { impl_.reset(new Impl); }

namespace {

int hop_type(const Topology& t, int from, int to, LinkType lt) {
  const TopoNodeType a = t.nodes[from].type, b = t.nodes[to].type;
  int type = lt == LinkType::kNet ? static_cast<int>(PathType::kLoc) : static_cast<int>(lt);
  if (a == TopoNodeType::kPci && b == TopoNodeType::kPci) type = static_cast<int>(PathType::kPxb);
  if (lt == LinkType::kPci && (a == TopoNodeType::kCpu || b == TopoNodeType::kCpu)) {
    type = static_cast<int>(PathType::kPhb);
  }
  return type;
}

// Best real link from -> to of the given type (highest model bw, first on ties), -1 if none.
int best_link(const Topology& t, int from, int to, LinkType type) {
  int best = -1;
  for (int l : t.nodes[from].out) {
    const TopoLink& k = t.links[l];
    if (k.to != to || k.type != type) continue;
    if (best < 0 || k.model_bw > t.links[best].model_bw) best = l;
  }
  return best;
}

}  // namespace

void Topology::compute_paths() {
  const int n = static_cast<int>(nodes.size());
  cache_.reset();
  paths_.assign(n, {});
  local_index_.assign(n, -1);
  exit_net_.assign(n, -1);

  // Nodes of each machine; vertices: a node, or (id n + machine) all NVSwitches of a machine.
  int nmach = std::max(machines, 1);
  for (const TopoNode& node : nodes) nmach = std::max(nmach, node.machine + 1);
  std::vector<std::vector<int>> machine_nodes(nmach);
  for (int i = 0; i < n; ++i) {
    int m = nodes[i].machine;
    if (m < 0) continue;
    local_index_[i] = static_cast<int>(machine_nodes[m].size());
    machine_nodes[m].push_back(i);
  }
  const int nv = n + nmach;
  auto vertex_of = [&](int node) {
    return nodes[node].type == TopoNodeType::kNvs ? n + nodes[node].machine : node;
  };
  std::vector<std::vector<int>> members(nv);  // real nodes of each vertex
  for (int i = 0; i < n; ++i) {
    if (nodes[i].machine >= 0) members[vertex_of(i)].push_back(i);
  }

  // Edges inside machines, aggregated per (vertex, vertex, type), widest first (NCCL keeps each
  // node's links sorted by bandwidth).
  std::vector<std::vector<Edge>> adj(nv);
  for (const TopoLink& l : links) {
    if (l.from < 0 || l.to < 0 || l.from >= n || l.to >= n) continue;
    const TopoNode& a = nodes[l.from];
    const TopoNode& b = nodes[l.to];
    if (l.type == LinkType::kNet || a.machine < 0 || b.machine != a.machine) continue;
    int va = vertex_of(l.from), vb = vertex_of(l.to);
    if (va == vb) continue;
    std::vector<Edge>& e = adj[va];
    auto it = std::find_if(e.begin(), e.end(),
                           [&](const Edge& x) { return x.to == vb && x.type == l.type; });
    if (it == e.end()) {
      e.push_back(Edge{vb, l.type, l.model_bw, l.bw});
    } else {
      it->model_bw += l.model_bw;
      it->bw += l.bw;
    }
  }
  for (auto& e : adj) {
    std::stable_sort(e.begin(), e.end(),
                     [](const Edge& x, const Edge& y) { return x.model_bw > y.model_bw; });
  }

  // BFS state per vertex, two labels: the best route that crosses no GPU ("free", the only one the
  // search extends) and the best GPU -NVL-> GPU -> vertex route ("via", NCCL's one exception, which
  // ends where it arrives).
  struct Label {
    int hops = -1, pred = -1, type = 0;
    LinkType pred_type = LinkType::kLoc;
    double mbw = 0, pbw = 0;
  };
  std::vector<Label> free_(nv), via(nv);
  std::vector<int> touched;
  std::vector<int> chain;
  std::vector<LinkType> chain_types;

  for (int src = 0; src < n; ++src) {
    const TopoNode& s = nodes[src];
    if ((s.type != TopoNodeType::kGpu && s.type != TopoNodeType::kNet) || s.machine < 0) continue;
    for (int v : touched) free_[v] = via[v] = Label();
    touched.clear();
    const int vs = vertex_of(src);
    free_[vs].hops = 0;
    free_[vs].mbw = free_[vs].pbw = kLocBw;
    touched.push_back(vs);
    std::vector<int> level{vs}, next;
    while (!level.empty()) {
      next.clear();
      for (int u : level) {
        const Label& lu = free_[u];
        const bool gpu_between = u != vs && u < n && nodes[u].type == TopoNodeType::kGpu;
        if (gpu_between && !(lu.hops == 1 && s.type == TopoNodeType::kGpu &&
                             lu.pred_type == LinkType::kNvl)) {
          continue;  // NCCL routes through a GPU only as GPU -NVL-> GPU -> one more hop
        }
        for (const Edge& e : adj[u]) {
          const int v = e.to;
          Label& lv = gpu_between ? via[v] : free_[v];
          const double b = std::min(lu.mbw, e.model_bw);
          if (!((lv.hops < 0 || lv.hops > lu.hops) && lv.mbw < b)) continue;
          if (free_[v].hops < 0 && via[v].hops < 0) touched.push_back(v);
          const int from_node = u < n ? u : members[u][0];
          const int to_node = v < n ? v : members[v][0];
          int t = hop_type(*this, from_node, to_node, e.type);
          if (gpu_between && lu.type == static_cast<int>(PathType::kNvl) &&
              t == static_cast<int>(PathType::kNvl)) {
            t = static_cast<int>(PathType::kNvb);
          }
          lv.hops = lu.hops + 1;
          lv.pred = u;
          lv.pred_type = e.type;
          lv.mbw = b;
          lv.pbw = std::min(lu.pbw, e.bw);
          lv.type = std::max(lu.type, t);
          if (!gpu_between && std::find(next.begin(), next.end(), v) == next.end()) next.push_back(v);
        }
      }
      level.swap(next);
    }

    // Routes: the vertex chain, with real nodes chosen for NVSwitch vertices.
    const std::vector<int>& local = machine_nodes[s.machine];
    std::vector<TopoPath>& row = paths_[src];
    row.assign(local.size(), TopoPath{});
    for (size_t k = 0; k < local.size(); ++k) {
      const int dst = local[k];
      const int vd = vertex_of(dst);
      const Label& f = free_[vd];
      const Label& w = via[vd];
      const bool use_via = w.hops >= 0 && (f.hops < 0 || w.hops < f.hops ||
                                           (w.hops == f.hops && w.mbw > f.mbw));
      const Label& best = use_via ? w : f;
      TopoPath& p = row[k];
      if (best.hops < 0) continue;  // kDis
      p.type = static_cast<PathType>(best.type);
      p.bw = best.mbw;
      p.bw_physical = best.pbw;
      if (dst == src) {
        p.type = PathType::kLoc;
        continue;
      }
      // chain[i] -> chain[i+1] over a link of type chain_types[i]
      chain.assign(1, vd);
      chain_types.assign(1, best.pred_type);
      for (int v = best.pred; v >= 0; v = free_[v].pred) {
        chain.push_back(v);
        if (free_[v].pred >= 0) chain_types.push_back(free_[v].pred_type);
      }
      std::reverse(chain.begin(), chain.end());
      std::reverse(chain_types.begin(), chain_types.end());
      std::vector<int> real(chain.size());
      for (size_t i = 0; i < chain.size(); ++i) {
        const int v = chain[i];
        if (v < n) {
          real[i] = v;
        } else if (i + 1 == chain.size()) {
          real[i] = dst;
        } else {
          // The NVSwitch that carries most of (previous -> it -> next).
          const int prev = real[i - 1];
          const int nextv = chain[i + 1];
          const int next_node = nextv < n ? nextv : members[nextv][0];
          int pick = -1;
          double pick_bw = -1;
          for (int x : members[v]) {
            int l1 = best_link(*this, prev, x, chain_types[i - 1]);
            int l2 = best_link(*this, x, next_node, chain_types[i]);
            if (l1 < 0) continue;
            double bw = std::min(links[l1].model_bw, l2 < 0 ? 0.0 : links[l2].model_bw);
            if (bw > pick_bw) {
              pick_bw = bw;
              pick = x;
            }
          }
          real[i] = pick >= 0 ? pick : members[v][0];
        }
      }
      for (size_t i = 0; i + 1 < chain.size(); ++i) {
        int l = best_link(*this, real[i], real[i + 1], chain_types[i]);
        if (l < 0) continue;  // NVSwitches not joined to both ends; bandwidths stay NCCL's
        p.links.push_back(l);
        p.latency_us += links[l].latency_us;
      }
    }
  }

  // Exit NETs. GPU: widest, then best type; the same dev (rail) among those, else dev mod count.
  for (int m = 0; m < nmach; ++m) {
    std::vector<int> nets_m;
    for (int i : machine_nodes[m]) {
      if (nodes[i].type == TopoNodeType::kNet) nets_m.push_back(i);
    }
    if (nets_m.empty()) continue;
    for (int i : machine_nodes[m]) {
      const TopoNode& node = nodes[i];
      if (node.type == TopoNodeType::kNet) {
        exit_net_[i] = i;
        continue;
      }
      std::vector<int> best;
      double best_bw = 0;
      int best_type = static_cast<int>(PathType::kDis);
      int best_hops = 0;
      const bool gpu = node.type == TopoNodeType::kGpu;
      for (int net : nets_m) {
        const TopoPath& p = gpu ? paths_[i][local_index_[net]] : paths_[net][local_index_[i]];
        if (p.type == PathType::kDis) continue;
        const int t = static_cast<int>(p.type);
        const bool better = p.bw > best_bw || (p.bw == best_bw && t < best_type) ||
                            (!gpu && p.bw == best_bw && t == best_type && p.hops() < best_hops);
        const bool same = p.bw == best_bw && t == best_type && (gpu || p.hops() == best_hops);
        if (better) {
          best.assign(1, net);
          best_bw = p.bw;
          best_type = t;
          best_hops = p.hops();
        } else if (same) {
          best.push_back(net);
        }
      }
      if (best.empty()) continue;
      int pick = best[0];
      if (gpu) {
        pick = best[static_cast<size_t>(std::max(node.dev, 0)) % best.size()];
        for (int net : best) {
          if (nodes[net].dev == node.dev) pick = net;
        }
      }
      exit_net_[i] = pick;
    }
  }
}

const TopoPath& Topology::path(int a, int b) const {
  const int n = static_cast<int>(nodes.size());
  if (a < 0 || b < 0 || a >= n || b >= n || paths_.size() != nodes.size() || paths_[a].empty()) {
    return disconnected_;
  }
  if (nodes[a].machine == nodes[b].machine) {
    const int k = local_index_[b];
    if (k < 0 || k >= static_cast<int>(paths_[a].size())) return disconnected_;
    return paths_[a][k];
  }
  return remote_path(a, b);
}

const TopoPath& Topology::remote_path(int a, int b) const {
  const bool to_switch = nodes[b].type == TopoNodeType::kNetSwitch;
  return compose_path(a, exit_net_[a], to_switch ? b : exit_net_[b], b);
}

int Topology::exit_net(int node) const {
  return node >= 0 && node < static_cast<int>(exit_net_.size()) ? exit_net_[node] : -1;
}

const TopoPath& Topology::path_via(int a, int b, int exit, int entry) const {
  const int n = static_cast<int>(nodes.size());
  if (a < 0 || b < 0 || a >= n || b >= n || paths_.size() != nodes.size() || paths_[a].empty()) {
    return disconnected_;
  }
  if (nodes[a].machine == nodes[b].machine) return path(a, b);
  if (exit < 0) exit = exit_net_[a];
  if (entry < 0) entry = exit_net_[b];
  auto is_net_of = [&](int net, int node) {
    return net >= 0 && net < n && nodes[net].type == TopoNodeType::kNet && nodes[net].machine == nodes[node].machine;
  };
  if (nodes[a].type != TopoNodeType::kGpu || nodes[b].type != TopoNodeType::kGpu || !is_net_of(exit, a) ||
      !is_net_of(entry, b)) {
    return disconnected_;
  }
  return compose_path(a, exit, entry, b);
}

int Topology::rail_net(int a, int b) const {
  const int n = static_cast<int>(nodes.size());
  if (a < 0 || b < 0 || a >= n || b >= n || nodes[a].type != TopoNodeType::kGpu || nodes[b].type != TopoNodeType::kGpu ||
      nodes[a].machine == nodes[b].machine)
    return -1;
  const int rail_gpu = gpu_node(nodes[a].machine, nodes[b].dev);  // ncclTopoDevToRank of the peer's device
  return rail_gpu < 0 ? -1 : exit_net(rail_gpu);                  // ncclTopoGetLocalNet
}

int Topology::pxn_via(int a, int b, int* net, int level) const {
  const int n = static_cast<int>(nodes.size());
  if (level <= 0 || a < 0 || b < 0 || a >= n || b >= n || nodes[a].type != TopoNodeType::kGpu ||
      nodes[b].type != TopoNodeType::kGpu || nodes[a].machine == nodes[b].machine)
    return -1;
  const int nic = rail_net(a, b);
  if (nic < 0) return -1;
  // ncclTopoGetLocalGpu: of the GPUs closest to that NIC, the first whose own NIC it is (else the first).
  PathType best = PathType::kDis;
  for (int g : gpus(nodes[a].machine)) best = std::min(best, path(g, nic).type);
  int via = -1;
  for (int g : gpus(nodes[a].machine))
    if (path(g, nic).type == best && (via < 0 || (exit_net(g) == nic && exit_net(via) != nic))) via = g;
  // That GPU can relay: NVLink to a, the NIC within PCIe switches or C2C (NCCL_PXN_C2C 1).
  const bool relay = via >= 0 && via != a && path(via, a).type <= PathType::kNvl && path(via, nic).type <= PathType::kP2c;
  if (level == 1) {
    // NCCL's PATH_PXN from a to the NIC (paths.cc): a relay that has more bandwidth to it than a, or a's own
    // path through a CPU. Level 1 takes the NIC where a's path is at most PXN, through the relay on a PXN path.
    const TopoPath& own = path(a, nic);
    if (relay && (path(via, nic).bw > own.bw || own.type > PathType::kPxn)) {
      *net = nic;
      return via;
    }
    if (own.type <= PathType::kPxn && nic != exit_net(a)) *net = nic;  // (a's own NIC: nothing to say)
    return -1;
  }
  if (!relay) return -1;
  *net = nic;
  return via;
}

const TopoPath& Topology::compose_path(int a, int ea, int eb, int b) const {
  PathCache::Impl* c = cache_.get();
  std::lock_guard<std::mutex> lock(c->mu);
  const std::array<int, 4> key{a, ea, eb, b};
  auto found = c->paths.find(key);
  if (found != c->paths.end()) return *found->second;

  std::unique_ptr<TopoPath> p(new TopoPath);
  const int n = static_cast<int>(nodes.size());
  const bool to_switch = nodes[b].type == TopoNodeType::kNetSwitch;
  if (ea >= 0 && eb >= 0) {
    // Fabric route from ea: BFS over network switches (fewest hops, then widest), NETs as ends.
    auto fp = c->fabric_pred.find(ea);
    if (fp == c->fabric_pred.end()) {
      std::vector<int> pred(n, -1), hops(n, -1);
      std::vector<double> bw(n, 0);
      hops[ea] = 0;
      bw[ea] = kLocBw;
      std::vector<int> level{ea}, next;
      while (!level.empty()) {
        next.clear();
        for (int u : level) {
          if (u != ea && nodes[u].type != TopoNodeType::kNetSwitch) continue;
          for (int l : nodes[u].out) {
            const TopoLink& k = links[l];
            if (k.type != LinkType::kNet) continue;
            const int v = k.to;
            const double w = std::min(bw[u], k.model_bw);
            if ((hops[v] < 0 || hops[v] > hops[u]) && bw[v] < w) {
              hops[v] = hops[u] + 1;
              bw[v] = w;
              pred[v] = l;
              if (std::find(next.begin(), next.end(), v) == next.end()) next.push_back(v);
            }
          }
        }
        level.swap(next);
      }
      fp = c->fabric_pred.emplace(ea, std::move(pred)).first;
    }
    const std::vector<int>& pred = fp->second;
    if (pred[eb] >= 0) {
      std::vector<int> mid;
      for (int v = eb; v != ea; v = links[pred[v]].from) mid.push_back(pred[v]);
      std::reverse(mid.begin(), mid.end());
      const TopoPath* head = a == ea ? nullptr : &paths_[a][local_index_[ea]];
      const TopoPath* tail = (to_switch || b == eb) ? nullptr : &paths_[eb][local_index_[b]];
      if ((head == nullptr || head->type != PathType::kDis) &&
          (tail == nullptr || tail->type != PathType::kDis)) {
        p->type = PathType::kNet;
        p->bw = kLocBw;
        p->bw_physical = kLocBw;
        auto add_part = [&](const TopoPath& part) {
          p->links.insert(p->links.end(), part.links.begin(), part.links.end());
          p->bw = std::min(p->bw, part.bw);
          p->bw_physical = std::min(p->bw_physical, part.bw_physical);
          p->latency_us += part.latency_us;
        };
        if (head) add_part(*head);
        for (int l : mid) {
          p->links.push_back(l);
          p->bw = std::min(p->bw, links[l].model_bw);
          p->bw_physical = std::min(p->bw_physical, links[l].bw);
          p->latency_us += links[l].latency_us;
        }
        if (tail) add_part(*tail);
      }
    }
  }
  const TopoPath& ref = *p;
  c->paths.emplace(key, std::move(p));
  return ref;
}

}  // namespace cclab
