// runtime/trace/switch_traffic.cc - see switch_traffic.h.
#include "trace/switch_traffic.h"

#include <algorithm>

namespace cclab {
namespace trace {

void SwitchIndex::build(const Trace& t) {
  ranks_.clear();
  group_.clear();
  first_switch_.clear();
  int nranks = t.meta.nranks;
  for (const Node& n : t.nodes)
    if (n.kind == "gpu") nranks = std::max(nranks, n.rank + 1);
  ranks_.resize(std::max(nranks, 0));
  first_switch_.assign(ranks_.size(), -1);
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    const Node& n = t.nodes[i];
    if (n.kind != "gpu" || n.rank < 0) continue;
    ranks_[n.rank].machine = n.machine;
    ranks_[n.rank].node = static_cast<int>(i);
  }
  auto is_switch = [&](int node) {
    return node >= 0 && static_cast<size_t>(node) < t.nodes.size() && t.nodes[node].kind == "nvswitch";
  };
  std::vector<int> rank_of_node(t.nodes.size(), -1);
  for (size_t r = 0; r < ranks_.size(); ++r)
    if (ranks_[r].node >= 0) rank_of_node[ranks_[r].node] = static_cast<int>(r);
  for (size_t l = 0; l < t.links.size(); ++l) {
    const Link& k = t.links[l];
    if (k.from >= 0 && static_cast<size_t>(k.from) < t.nodes.size() && rank_of_node[k.from] >= 0 && is_switch(k.to)) {
      const int r = rank_of_node[k.from];
      ranks_[r].up.push_back(static_cast<int>(l));
      if (first_switch_[r] < 0) first_switch_[r] = k.to;
    }
    if (k.to >= 0 && static_cast<size_t>(k.to) < t.nodes.size() && rank_of_node[k.to] >= 0 && is_switch(k.from))
      ranks_[rank_of_node[k.to]].down.push_back(static_cast<int>(l));
  }
  for (size_t r = 0; r < ranks_.size(); ++r) {
    const RankLinks& x = ranks_[r];
    if (x.machine < 0 || x.up.empty() || x.down.empty()) continue;
    if (static_cast<size_t>(x.machine) >= group_.size()) group_.resize(x.machine + 1);
    group_[x.machine].push_back(static_cast<int>(r));
  }
}

bool SwitchIndex::is_switch_step(const Event& e) const {
  if (e.rank < 0 || static_cast<size_t>(e.rank) >= ranks_.size()) return false;
  if (e.send_peer != e.rank && e.recv_peer != e.rank) return false;
  const RankLinks& x = ranks_[e.rank];
  return !x.up.empty() && !x.down.empty();
}

void SwitchIndex::hops(const Event& e, std::vector<Hop>* out) const {
  if (!is_switch_step(e)) return;
  const RankLinks& head = ranks_[e.rank];
  const std::vector<int>& group = group_[head.machine];
  const double b = static_cast<double>(e.bytes);
  auto spread = [&](const std::vector<int>& links, int phase) {
    const double share = b / static_cast<double>(links.size());
    for (int l : links) out->push_back(Hop{l, share, phase});
  };
  if (e.recv_peer == e.rank) {  // load-reduce: every GPU's slot up, the result down to the head
    for (int r : group) spread(ranks_[r].up, 0);
    spread(head.down, 1);
  }
  if (e.send_peer == e.rank) {  // multicast store: the head's slot up, every GPU's copy down
    spread(head.up, 0);
    for (int r : group) spread(ranks_[r].down, 1);
  }
}

int SwitchIndex::switch_node(int rank) const {
  return rank >= 0 && static_cast<size_t>(rank) < first_switch_.size() ? first_switch_[rank] : -1;
}

}  // namespace trace
}  // namespace cclab
