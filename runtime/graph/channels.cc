#include "graph/channels.h"

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <set>

#include "kernels/tree.h"

namespace cclab {
namespace {

// The ranks of machine m in the order of intra (a graph channel's GPU devs); ranks on devs the graph
// does not list (a graph read from a file for fewer GPUs) go last.
std::vector<int> machine_order(const RankPlacement& p, const std::vector<int>& intra, int m) {
  std::vector<int> out;
  const int n = p.nranks();
  for (int dev : intra)
    for (int r = 0; r < n; ++r)
      if (p.rank_machine[r] == m && p.rank_dev[r] == dev) out.push_back(r);
  for (int r = 0; r < n; ++r)
    if (p.rank_machine[r] == m && std::find(out.begin(), out.end(), r) == out.end()) out.push_back(r);
  return out;
}

std::vector<int> identity_intra(int n) {
  std::vector<int> v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}

}  // namespace

std::vector<int> RankPlacement::machines() const {
  std::vector<int> m(rank_machine);
  std::sort(m.begin(), m.end());
  m.erase(std::unique(m.begin(), m.end()), m.end());
  return m;
}

RankPlacement place_ranks(const Topology& topo, int nranks) {
  RankPlacement p;
  const int g = std::max(1, topo.gpus_per_machine());
  for (int r = 0; r < nranks; ++r) {
    p.rank_machine.push_back(r / g);
    p.rank_dev.push_back(r % g);
  }
  return p;
}

std::vector<ChannelPlan> plan_channels(const Topology& topo, const TopoGraph& ring, const TopoGraph& tree,
                                       const RankPlacement& place, int nchannels) {
  const int gpm = topo.gpus_per_machine();
  const int n = place.nranks();
  const std::vector<int> machines = place.machines();
  const int nm = static_cast<int>(machines.size());
  std::vector<ChannelPlan> out(std::max(nchannels, 0));
  for (int c = 0; c < nchannels; ++c) {
    ChannelPlan& ch = out[c];
    const std::vector<int> intra = ring.nchannels > 0 ? ring.intra[c % ring.nchannels] : identity_intra(gpm);
    for (int m : machines) {
      std::vector<int> part = machine_order(place, intra, m);
      ch.ring.insert(ch.ring.end(), part.begin(), part.end());
    }
    const std::vector<int> tintra = tree.nchannels > 0 ? tree.intra[c % tree.nchannels] : identity_intra(gpm);
    ch.tree_index = tree_of_channel(c, nchannels);
    std::vector<std::vector<int>> chains(nm);
    for (int i = 0; i < nm; ++i) chains[i] = machine_order(place, tintra, machines[i]);
    ch.tree.assign(n, TreeLinks{-1, {-1, -1, -1}, 0});
    for (int mi = 0; mi < nm; ++mi) {
      const std::vector<int>& chain = chains[mi];
      TreeLinks t0, t1;
      dtree(nm, mi, &t0, &t1);
      const TreeLinks& nt = ch.tree_index == 0 ? t0 : t1;
      for (size_t local = 0; local < chain.size(); ++local) {
        TreeLinks& t = ch.tree[chain[local]];
        if (local > 0) t.up = chain[local - 1];
        if (local + 1 < chain.size()) t.down[t.ndown++] = chain[local + 1];
        if (local == 0) {
          if (nt.up >= 0) t.up = chains[nt.up][0];
          for (int i = 0; i < nt.ndown && t.ndown < 3; ++i) t.down[t.ndown++] = chains[nt.down[i]][0];
        }
      }
    }
    // The NICs of the connections between machines: the ring's first, then the tree's.
    std::set<std::pair<int, int>> opened;
    auto add_net = [&](const TopoGraph& g, int a, int b) {
      if (a < 0 || b < 0 || a == b || place.rank_machine[a] == place.rank_machine[b] || !opened.insert({a, b}).second)
        return;
      ch.net.push_back(NetConn{a, b, graph_net_dev(g, c, place.rank_dev[a]), graph_net_dev(g, c, place.rank_dev[b])});
    };
    for (int i = 0; i < n; ++i) add_net(ring, ch.ring[i], ch.ring[(i + 1) % n]);
    for (int r = 0; r < n; ++r) {
      add_net(tree, r, ch.tree[r].up);
      add_net(tree, ch.tree[r].up, r);
    }
    std::sort(ch.net.begin(), ch.net.end(),
              [](const NetConn& x, const NetConn& y) { return std::make_pair(x.from, x.to) < std::make_pair(y.from, y.to); });
  }
  return out;
}

int graph_net_dev(const TopoGraph& graph, int channel, int dev) {
  if (graph.nchannels < 1 || channel < 0) return -1;
  const int c = channel % graph.nchannels;
  if (c >= static_cast<int>(graph.inter.size()) || graph.inter[c].size() < 2) return -1;
  const bool first = c < static_cast<int>(graph.intra.size()) && !graph.intra[c].empty() && graph.intra[c][0] == dev;
  return graph.inter[c][first ? 0 : 1];
}

const NetConn* ChannelPlan::net_of(int from, int to) const {
  auto it = std::lower_bound(net.begin(), net.end(), std::make_pair(from, to), [](const NetConn& k, const std::pair<int, int>& v) {
    return std::make_pair(k.from, k.to) < v;
  });
  return it != net.end() && it->from == from && it->to == to ? &*it : nullptr;
}

bool search_ring_and_tree(const Topology& topo, TopoGraph* ring, TopoGraph* tree, std::string* error) {
  *ring = TopoGraph{};
  ring->id = 0;
  ring->pattern = GraphPattern::kRing;
  *tree = TopoGraph{};
  tree->id = 1;
  tree->pattern = GraphPattern::kBalancedTree;
  std::string err;
  if (!search_graph(topo, ring, &err)) {
    *error = "ring search: " + err;
    return false;
  }
  // As NCCL's init: the tree graph is searched for exactly as many channels as the ring found.
  tree->min_channels = tree->max_channels = std::max(1, ring->nchannels);
  if (!search_graph(topo, tree, &err)) {
    *error = "tree search: " + err;
    return false;
  }
  return true;
}

int modelled_channels(const TopoGraph& ring, const TopoGraph& tree, int min_channels, int max_channels) {
  // NCCL takes the fewer of the two graphs' channels and doubles them (connect.cc).
  const int g = std::max(1, std::min(ring.nchannels, tree.nchannels));
  const int nc = std::max(std::min(2 * g, std::max(max_channels, 1)), std::max(min_channels, 1));
  return std::min(nc, 64);
}

int cuda_channel_count(int modelled, int gpu_sharing, int lo, int hi, int max_blocks, int resident, std::string* note) {
  std::string why;
  int n = modelled > 0 ? modelled : gpu_sharing > 1 ? max_blocks : 16;
  n = std::min(std::max(n, std::max(lo, 1)), std::max(hi, 1));
  if (n > max_blocks) {
    why = "one launch carries at most " + std::to_string(max_blocks) + " blocks";
    n = max_blocks;
  }
  if (resident > 0 && n > resident) {
    why = "only " + std::to_string(resident) +
          " blocks per rank fit on its GPU together with the other ranks sharing it";
    n = resident;
  }
  n = std::max(n, 1);
  if (note != nullptr) *note = why;
  return n;
}

int pat_enable_param() {
  // NCCL: 2 (the default) applies its rule, any other value is taken as on (non-zero) or off. Read from
  // the environment here (as NCCL_CROSS_NIC in search.cc): graph/ links without the runtime's parameters.
  const char* s = std::getenv("NCCL_PAT_ENABLE");
  if (s == nullptr || *s == '\0') return 2;
  char* end = nullptr;
  const long v = std::strtol(s, &end, 0);
  if (end == s) return 2;
  return v == 2 ? 2 : v != 0 ? 1 : 0;
}

TunerInput make_tuner_input(const Topology& topo, const TopoGraph& ring, const TopoGraph& tree,
                            const RankPlacement& place, int channels) {
  TunerInput in;
  in.nranks = place.nranks();
  in.nnodes = static_cast<int>(place.machines().size());
  int smin = 1000, smax = 0;
  for (int r = 0; r < place.nranks(); ++r) {
    const int g = topo.gpu_node(place.rank_machine[r], place.rank_dev[r]);
    if (g < 0) continue;
    smin = std::min(smin, topo.nodes[g].sm);
    smax = std::max(smax, topo.nodes[g].sm);
  }
  in.sm_min = smin <= smax ? smin : 80;
  in.sm_max = smin <= smax ? smax : 80;
  std::vector<int> cpus = topo.nodes_of(TopoNodeType::kCpu, 0);
  if (!cpus.empty()) {
    in.cpu_arch = topo.nodes[cpus[0]].arch;
    in.cpu_vendor = topo.nodes[cpus[0]].vendor;
  }
  in.ring = &ring;
  in.tree = &tree;
  in.ring_channels = in.tree_channels = channels > 0 ? channels : modelled_channels(ring, tree);
  in.pat_enable = pat_enable_param();
  return in;
}

void add_nvls(const Topology& topo, int64_t nvls_enable, TopoGraph* graph, TunerInput* in, int nvls_ctas, int min_ctas,
              int max_ctas) {
  in->nvls = nullptr;
  in->nvls_channels = 0;
  if (nvls_enable == 0) {
    in->nvls_why = "NVLS is off (NCCL_NVLS_ENABLE=0)";
    return;
  }
  std::string why;
  if (!search_nvls_graph(topo, graph, &why, in->nranks / std::max(1, in->nnodes))) {
    in->nvls_why = "no NVLS on this machine: " + why;
    return;
  }
  in->nvls = graph;
  in->nvls_why.clear();
  double nic_bw = 0;  // NCCL's comm->minNetBw, GB/s
  for (int n : topo.nets(0)) {
    const double bw = topo.nodes[n].net_speed_mbps / 8000.0;
    if (bw > 0 && (nic_bw == 0 || bw < nic_bw)) nic_bw = bw;
  }
  in->nvls_channels = nvls_default_channels(in->sm_min, in->nnodes, nvls_ctas, min_ctas, max_ctas, nic_bw,
                                            in->nranks / std::max(1, in->nnodes));
}

}  // namespace cclab
