// sim/degrade_run.cc - a World's degradations (degrade.h): which channels cross each degraded element,
// the daemon actor that changes the links at their simulated times, and the abort that turns a failed
// link into an error naming the stuck waits instead of a hang.
#include <simgrid/s4u.hpp>

#include <algorithm>
#include <cstdio>
#include <set>

#include "kernels/describe.h"
#include "sim/world.h"

namespace sg4 = simgrid::s4u;

namespace cclab {
namespace sim {

bool World::setup_degradation(std::string* error) {
  const Degradation& d = cfg_.degrade;
  degraded_.clear();
  degrade_links_.clear();
  fail_at_us_.assign(topo_.links.size(), -1.0);
  straggle_.clear();
  for (const LinkChange& c : d.links) {
    SimDegraded g;
    if (!resolve_link_target(topo_, c.target, &g.links, error)) {
      *error = std::string(c.fail ? "--fail" : "--degrade") + ": " + *error;
      return false;
    }
    degrade_links_.push_back(g.links);
    g.label = c.fail ? c.target + " fails at " + fmt("%g", c.at_us) + " us"
                     : c.target + " at " + fmt("%g", c.factor * 100) + "% from " + fmt("%g", c.at_us) + " us";
    // The SimGrid links it changes (a crossbar member changes its GPU's crossbar link): a connection
    // crosses the element when its route takes one of them.
    std::set<const void*> hit;
    for (int l : g.links) hit.insert(platform_->link(l));
    auto crosses = [&](int ch, int a, int b) {
      auto it = routes_.find(std::make_tuple(ch, a, b));
      if (it == routes_.end() || it->second.links == nullptr) return false;
      for (int l : *it->second.links)
        if (hit.count(platform_->link(l)) != 0) return true;
      return false;
    };
    std::map<std::tuple<int, int, int>, std::vector<int>> edges;  // (0 ring / 1 tree / 2 NVLS-Tree, from, to) -> channels
    if (cfg_.p2p != P2pPattern::kNone) {  // a point-to-point collective: its sends' paths (PXN: p2p_end)
      for (int r = 0; r < nranks_; ++r)
        p2p_pattern(cfg_.p2p, r, nranks_, cfg_.root, 0, [&](bool send, int peer, size_t) {
          if (!send || peer == r) return;
          for (int l : platform_->route(p2p_end(r, peer), Platform::End{rank_gpu_[peer]}))
            if (hit.count(platform_->link(l)) != 0) {
              g.carriers.push_back(SimDegraded::Carrier{"p2p", r, peer, {}});
              break;
            }
        });
      degraded_.push_back(std::move(g));
      continue;
    }
    for (int ch = 0; ch < nch_ && nranks_ > 1; ++ch) {
      const std::vector<int>& ring = plan_[ch].ring;
      for (int i = 0; i < nranks_; ++i) {
        const int r = ring[i], next = ring[(i + 1) % nranks_];
        if (crosses(ch, r, next)) edges[std::make_tuple(0, r, next)].push_back(ch);
      }
      // A tree's edges both ways: Tree's, and NVLS-Tree's between the machines' heads (its NVLS part stays
      // inside a machine).
      auto tree_edges = [&](int kind, int r, int up) {
        if (up < 0) return;
        if (crosses(ch, r, up)) edges[std::make_tuple(kind, r, up)].push_back(ch);
        if (crosses(ch, up, r)) edges[std::make_tuple(kind, up, r)].push_back(ch);
      };
      for (int r = 0; r < nranks_; ++r) {
        tree_edges(1, r, plan_[ch].tree[r].up);
        if (nvls_tree_) tree_edges(2, r, nvls_tree_links(nvls_g_, r, ch).up);
      }
    }
    static const char* const kKinds[] = {"ring", "tree", "nvlstree"};
    for (const auto& e : edges)
      g.carriers.push_back(
          SimDegraded::Carrier{kKinds[std::get<0>(e.first)], std::get<1>(e.first), std::get<2>(e.first), e.second});
    degraded_.push_back(std::move(g));
  }
  if (!d.stragglers.empty()) {
    straggle_.assign(nranks_, 1.0);
    for (const auto& s : d.stragglers) {
      if (s.first >= nranks_) {
        *error = "--straggler: rank " + std::to_string(s.first) + " is not a rank (the run has " +
                 std::to_string(nranks_) + ")";
        return false;
      }
      straggle_[s.first] = s.second;
      SimDegraded g;
      const auto at = d.straggler_from_us.find(s.first);
      const double from = at == d.straggler_from_us.end() ? 0 : at->second;
      g.label = "rank " + std::to_string(s.first) + " (" + topo_.nodes[rank_gpu_[s.first]].name + ") data loops " +
                fmt("%g", s.second) + "x slower" + (from > 0 ? " from " + fmt("%g", from) + " us" : "");
      degraded_.push_back(std::move(g));
    }
  }
  if (d.jitter_pct > 0) {
    SimDegraded g;
    g.label = "jitter: each transfer up to " + fmt("%g", d.jitter_pct) + "% of its route's latency later (seed " +
              std::to_string(d.jitter_seed) + ")" + (d.jitter_from_us > 0 ? " from " + fmt("%g", d.jitter_from_us) + " us" : "");
    degraded_.push_back(std::move(g));
  }
  return true;
}

double World::straggle(int rank) const {
  if (straggle_.empty() || straggle_[rank] == 1.0) return 1.0;
  return cfg_.degrade.straggle_at(rank, sg4::Engine::get_clock() * 1e6);
}

void World::start_degradation() {
  const std::vector<LinkChange>& changes = cfg_.degrade.links;
  if (changes.empty()) return;
  std::vector<size_t> order(changes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return changes[a].at_us < changes[b].at_us; });
  auto apply = [this, &changes](size_t i) {
    const LinkChange& c = changes[i];
    std::vector<std::pair<int, double>> f;
    for (int l : degrade_links_[i]) {
      f.emplace_back(l, c.fail ? 0.0 : c.factor);
      if (!c.fail) continue;
      // Every TopoLink of the SimGrid link goes down with it (a GPU's crossbar link).
      for (int k = 0; k < static_cast<int>(fail_at_us_.size()); ++k)
        if (fail_at_us_[k] < 0 && platform_->link(k) == platform_->link(l)) fail_at_us_[k] = c.at_us;
    }
    platform_->set_link_factors(f);
  };
  size_t k = 0;
  for (; k < order.size() && changes[order[k]].at_us <= 0; ++k) apply(order[k]);  // before anything runs
  if (k == order.size()) return;
  std::vector<size_t> later(order.begin() + static_cast<long>(k), order.end());
  sg4::ActorPtr a = sg4::Actor::create("degrade", rank_host_[0], [this, later, apply, &changes] {
    for (size_t i : later) {
      sg4::this_actor::sleep_until(changes[i].at_us * 1e-6);
      apply(i);
    }
  });
  a->daemonize();  // the run ends when the collectives do, whatever is still to change
}

// A TopoLink whose SimGrid link is down (failed itself, or a member of a failed crossbar link).
bool World::link_down(int l) const {
  const simgrid::s4u::Link* sl = platform_->link(l);
  return sl != nullptr && !sl->is_on();
}

std::string World::failed_links_on(const ConnRoute& route) const {
  std::vector<std::string> names;  // SimGrid's: a GPU's crossbar link is "m0.gpu2->nvswitch"
  double at = -1;
  if (route.links != nullptr)
    for (int l : *route.links) {
      if (!link_down(l)) continue;
      const std::string name = platform_->link(l)->get_name();
      if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
      if (l < static_cast<int>(fail_at_us_.size()) && fail_at_us_[l] >= 0) at = at < 0 ? fail_at_us_[l] : std::min(at, fail_at_us_[l]);
    }
  if (names.empty()) return "a link of its route is down";
  std::string out = names.size() == 1 ? "link " : "links ";
  for (size_t i = 0; i < names.size(); ++i) out += (i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
  out += names.size() == 1 ? " is down" : " are down";
  if (at >= 0) out += " (--fail at " + fmt("%g", at) + " us)";
  return out;
}

std::string World::failed_links_between(simgrid::s4u::Host* a, simgrid::s4u::Host* b) const {
  std::vector<simgrid::s4u::Link*> links;
  double latency = 0;
  a->route_to(b, links, &latency);
  std::vector<int> ids;  // the model's links behind SimGrid's (several may share one SimGrid link)
  for (int k = 0; k < static_cast<int>(topo_.links.size()); ++k)
    for (const simgrid::s4u::Link* l : links)
      if (platform_->link(k) == l) {
        ids.push_back(k);
        break;
      }
  ConnRoute route;
  route.links = &ids;
  return failed_links_on(route);
}

void World::abort_run(const std::string& why) {
  if (aborted_) return;
  aborted_ = true;
  abort_us_ = sg4::Engine::get_clock() * 1e6;
  abort_reason_ = why;
  for (CounterWait& w : waits_) {
    if (w.actor == nullptr) continue;
    aborted_waits_.push_back(w.site);
    sg4::Actor* a = w.actor;
    w.actor = nullptr;
    if (hooks_ != nullptr) hooks_->woken();
    a->resume();
  }
}

std::string World::abort_error() const {
  std::string out = abort_reason_ + ". The collective was aborted (no hang): ";
  if (aborted_waits_.empty()) return out + "no wait was stuck";
  // First the waits on a connection through a failed link (the ranks that wait for what cannot come),
  // then those stuck behind them.
  auto on_failed = [&](const WaitSite& s) {
    const int from = s.for_data ? s.peer : s.rank, to = s.for_data ? s.rank : s.peer;
    const bool p2p = cfg_.p2p != P2pPattern::kNone;  // a p2p channel's connection, or its pair's path
    for (int ch : {p2p ? kP2pChannel - s.channel : s.channel, p2p ? kP2pChannel : s.channel}) {
      auto it = routes_.find(std::make_tuple(ch, from, to));
      if (it == routes_.end() || it->second.links == nullptr) continue;
      for (int l : *it->second.links)
        if (link_down(l)) return true;
    }
    return false;
  };
  std::vector<WaitSite> direct, behind;
  for (const WaitSite& s : aborted_waits_) (on_failed(s) ? direct : behind).push_back(s);
  const auto list = [](const std::vector<WaitSite>& v, size_t shown) {
    std::string o;
    for (size_t i = 0; i < v.size() && i < shown; ++i) o += "\n  " + describe_wait(v[i]);
    if (v.size() > shown) o += "\n  ... and " + std::to_string(v.size() - shown) + " more";
    return o;
  };
  out += std::to_string(aborted_waits_.size()) + " wait" + (aborted_waits_.size() == 1 ? " was" : "s were") + " stuck";
  if (direct.empty()) return out + ":" + list(behind, 8);
  out += "; " + std::to_string(direct.size()) + " on a connection through the failed link:" + list(direct, 8);
  if (!behind.empty()) out += "\n and " + std::to_string(behind.size()) + " behind them:" + list(behind, 3);
  return out;
}

}  // namespace sim
}  // namespace cclab
