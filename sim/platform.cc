// sim/platform.cc - the SimGrid 3.32 platform of a topology model (platform.h).
//
// One full-routing zone ("cclab", the engine's root zone) holds a host per GPU and a link per directed
// TopoLink; routes are declared pair by pair (add_route) from Topology::path, then the zone is sealed.
// SimGrid's FullZone keeps an n x n table of route pointers (n = hosts of the zone: 8 MiB for 1024
// GPUs) and one Route per declared pair, so declaring only the pairs that talk keeps a 1024-GPU
// platform small.
#include "sim/platform.h"

#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>
#include <simgrid/s4u/NetZone.hpp>
#include <xbt/log.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <exception>
#include <map>
#include <unordered_map>
#include <unordered_set>

namespace cclab {
namespace sim {

namespace s4u = simgrid::s4u;

void configure_engine(s4u::Engine& engine) {
  // Logs: quiet unless CCLAB_SIM_LOG is set. CCLAB_SIM_LOG=1 keeps SimGrid's defaults; any other
  // value is handed to xbt_log_control_set ("root.thresh:debug", "ker_network.thresh:verbose", ...).
  const char* log = std::getenv("CCLAB_SIM_LOG");
  if (log == nullptr || *log == '\0') {
    xbt_log_control_set("root.thresh:critical");
    // SimGrid's "Oops! Deadlock detected ... the user code is not perfectly clean" (CRITICAL): cclab
    // reports a deadlock itself, naming the stuck waits and what the ranks did wrong (session.cc).
    xbt_log_control_set("ker_engine.app:file:/dev/null");
  } else if (std::strcmp(log, "1") != 0) {
    xbt_log_control_set(log);
  }
  // Configuration is read when the first zone is created (it becomes the root and the models are
  // built then); once a platform exists SimGrid refuses changes, so a second call does nothing.
  if (engine.get_netzone_root() != nullptr) return;
  // CM02: max-min sharing, time = latency + bytes / share, latency and bandwidth factors 1, weight-S 0
  // (LV08, the default, multiplies latencies by 13.01 and bandwidths by 0.97 to fit TCP).
  s4u::Engine::set_config("network/model:CM02");
  // No cross-traffic: a flow does not also load the reverse route (which SimGrid would look up, and
  // which may not be declared), so the two directions of a cable are independent.
  s4u::Engine::set_config("network/crosstraffic:0");
  // CM02 still bounds every flow by TCP-gamma / (2 x route latency), a TCP window (4 MiB by default:
  // 4 MiB / (2 x 2 us) ~ 1 TB/s, but 26 GB/s once a route has 80 us); no window here.
  s4u::Engine::set_config("network/TCP-gamma:1e30");
  // Full updates, not SimGrid's default lazy ones: with lazy updates the LMM is re-solved only over the
  // constraints marked modified since the last solve (selective update), and SimGrid 3.32 misses some: when a
  // flow's latency phase ends (its variable is enabled) the flows sharing its later links can keep their
  // old rates until an unrelated event re-solves them, so a link carries more than its capacity for a while
  // (SimGrid's own check, CCLAB_SIM_LOG=ker_lmm.thresh:debug, aborts with "Incorrect value (30240000000 is not
  // smaller than 25200000000)" on pcie-8gpu-2socket:3's ring all_gather at 88.17 us). That made the step
  // level non-monotone in efficiency.net and 1-7% off the flow level's fluid replay there; with full updates
  // the two agree within 0.7% on bench/flow_vs_step.py's 324 points. Costs up to ~2x wall time on runs with
  // thousands of concurrent transfers (dgx-h100:8 ring all_reduce 64 MiB: 1.2 s -> 2.1 s).
  s4u::Engine::set_config("network/optim:Full");
  // Actor stacks (KiB): the schedules keep small arrays on the stack; 8 MiB each is wasteful with
  // thousands of actors.
  s4u::Engine::set_config("contexts/stack-size:256");
}

EngineArgs::EngineArgs() {
  argv[argc++] = name;
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer cannot follow SimGrid's swapped stacks when an actor is unwound (a killed actor at a
  // deadlock: a false stack-buffer-overflow); with one thread per actor it can. The context factory is
  // chosen when the engine is created, so it goes on its command line.
  argv[argc++] = quiet_cfg;
  argv[argc++] = thread_contexts;
#endif
  argv[argc] = nullptr;
}

struct Platform::Routes {
  std::unordered_map<int64_t, std::vector<int>> by_pair;  // (end id a << 32) | end id b -> TopoLink indices
};

Platform::Platform(const Topology& topo) : topo_(topo), routes_(new Routes) {}
Platform::~Platform() = default;

namespace {

double efficiency_of(const Calibration& cal, LinkType t) {
  const LinkEfficiency& e = cal.efficiency;
  switch (t) {
    case LinkType::kNvl:
    case LinkType::kC2c: return e.nvlink;
    case LinkType::kPci: return e.pcie;
    case LinkType::kSys: return e.sys;
    case LinkType::kNet: return e.net;
    case LinkType::kLoc: return e.loc;
  }
  return 1.0;
}

const std::vector<int>& no_route() {
  static const std::vector<int> kEmpty;
  return kEmpty;
}

}  // namespace

bool Platform::build(s4u::Engine& engine, const Topology& topo, const Calibration& cal,
                     std::unique_ptr<Platform>* out, std::string* error) {
  auto fail = [&](const std::string& why) {
    if (error) *error = why;
    return false;
  };
  if (out == nullptr) return fail("Platform::build: no output");
  if (engine.get_netzone_root() != nullptr) {
    return fail("this SimGrid engine already has a platform (SimGrid allows one per process)");
  }
  const int nn = static_cast<int>(topo.nodes.size());
  const int nl = static_cast<int>(topo.links.size());
  int ngpu = 0;
  for (const TopoNode& n : topo.nodes) ngpu += n.type == TopoNodeType::kGpu ? 1 : 0;
  if (ngpu == 0) return fail("topology " + topo.name + " has no GPUs");
  if (cal.gpus.empty()) return fail("the calibration has no GPU models");
  for (int i = 0; i < nl; ++i) {
    const TopoLink& l = topo.links[i];
    if (l.from < 0 || l.from >= nn || l.to < 0 || l.to >= nn) {
      return fail("topology " + topo.name + ": link " + std::to_string(i) + " joins nodes " +
                  std::to_string(l.from) + " and " + std::to_string(l.to) + " of " + std::to_string(nn));
    }
    if (!std::isfinite(l.bw) || !std::isfinite(l.latency_us) || l.latency_us < 0) {
      return fail("link " + topo.nodes[l.from].name + "->" + topo.nodes[l.to].name +
                  " has a bad bandwidth or latency");
    }
  }

  std::unique_ptr<Platform> p(new Platform(topo));
  p->hosts_.assign(nn, nullptr);
  p->links_.assign(nl, nullptr);
  p->rates_.assign(nl, 0.0);
  p->own_rates_.assign(nl, 0.0);
  p->factors_.assign(nl, 1.0);
  try {
    p->zone_ = s4u::create_full_zone("cclab");
    std::unordered_set<std::string> names;
    for (int i = 0; i < nn; ++i) {
      const TopoNode& n = topo.nodes[i];
      if (n.type != TopoNodeType::kGpu) continue;
      if (!names.insert(n.name).second) return fail("topology " + topo.name + ": two GPUs named " + n.name);
      const GpuModel& g = cal.gpu(n.sm);
      if (!(g.sm_copy_gbs > 0) || g.sms < 1) {
        return fail("calibration: GPU model " + std::string(g.name) + " has no copy rate or SM count");
      }
      s4u::Host* h = p->zone_->create_host(n.name, g.sm_copy_gbs * 1e9);
      h->set_core_count(g.sms);
      h->seal();
      p->hosts_[i] = h;
    }
    names.clear();
    names.reserve(static_cast<size_t>(nl) * 2);
    // NVSwitch chips of one machine act as one crossbar: a GPU's NVLinks to all of them carry a flow in
    // parallel (the fabric sprays packets over every link), so each GPU gets one up link and one down
    // link whose rate is the sum of its NVLinks, and every GPU<->NVS TopoLink maps onto them. (Routes
    // through one NVSwitch node would otherwise cap a GPU pair at that chip's links: 5 of 18 on H100.)
    std::map<std::pair<int, bool>, std::vector<int>> nvs_groups;  // (GPU node, up?) -> TopoLinks
    for (int i = 0; i < nl; ++i) {
      const TopoLink& l = topo.links[i];
      const TopoNodeType ft = topo.nodes[l.from].type, tt = topo.nodes[l.to].type;
      if (ft == TopoNodeType::kGpu && tt == TopoNodeType::kNvs) nvs_groups[{l.from, true}].push_back(i);
      if (ft == TopoNodeType::kNvs && tt == TopoNodeType::kGpu) nvs_groups[{l.to, false}].push_back(i);
    }
    for (const auto& g : nvs_groups) {
      double rate = 0, latency = 0;
      for (int i : g.second) {
        const TopoLink& l = topo.links[i];
        rate += l.bw > 0 ? l.bw * 1e9 * efficiency_of(cal, l.type) : 0.0;
        latency = std::max(latency, l.latency_us);
      }
      const std::string& gpu = topo.nodes[g.first.first].name;
      const std::string name = g.first.second ? gpu + "->nvswitch" : "nvswitch->" + gpu;
      names.insert(name);
      s4u::Link* link = p->zone_->create_link(name, rate);
      link->set_latency(latency * 1e-6);
      link->set_sharing_policy(s4u::Link::SharingPolicy::SHARED);
      link->seal();
      for (int i : g.second) {
        p->links_[i] = link;
        p->rates_[i] = rate;
        const TopoLink& l = topo.links[i];
        p->own_rates_[i] = l.bw > 0 ? l.bw * 1e9 * efficiency_of(cal, l.type) : 0.0;
      }
      p->nvs_links_[g.first] = g.second;
    }
    for (int i = 0; i < nl; ++i) {
      if (p->links_[i] != nullptr) continue;
      const TopoLink& l = topo.links[i];
      std::string name = topo.nodes[l.from].name + "->" + topo.nodes[l.to].name;
      if (!names.insert(name).second) {
        name += "#" + std::to_string(i);
        names.insert(name);
      }
      const double rate = l.bw > 0 ? l.bw * 1e9 * efficiency_of(cal, l.type) : 0.0;
      s4u::Link* link = p->zone_->create_link(name, rate);
      // A NIC port link carries half of the transport's per-message cost (Calibration::net_message_us).
      const TopoNodeType ft = topo.nodes[l.from].type, tt = topo.nodes[l.to].type;
      const bool nic_port = (ft == TopoNodeType::kNic && tt == TopoNodeType::kNet) ||
                            (ft == TopoNodeType::kNet && tt == TopoNodeType::kNic);
      link->set_latency((l.latency_us + (nic_port ? cal.net_message_us / 2 : 0.0)) * 1e-6);
      link->set_sharing_policy(s4u::Link::SharingPolicy::SHARED);
      link->seal();
      p->links_[i] = link;
      p->rates_[i] = rate;
      p->own_rates_[i] = rate;
    }
  } catch (const std::exception& e) {
    return fail(std::string("SimGrid refused the platform of ") + topo.name + ": " + e.what());
  }
  *out = std::move(p);
  return true;
}

s4u::Host* Platform::gpu_host(int node) const {
  return node >= 0 && node < static_cast<int>(topo_.nodes.size()) ? hosts_[node] : nullptr;
}

s4u::Link* Platform::link(int topo_link) const {
  return topo_link >= 0 && topo_link < static_cast<int>(links_.size()) ? links_[topo_link] : nullptr;
}

void Platform::set_link_factors(const std::vector<std::pair<int, double>>& factors) {
  std::vector<s4u::Link*> touched;
  for (const auto& f : factors) {
    if (f.first < 0 || f.first >= static_cast<int>(links_.size())) continue;
    factors_[f.first] = f.second;
    touched.push_back(links_[f.first]);
  }
  std::sort(touched.begin(), touched.end());
  touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
  for (s4u::Link* link : touched) {
    double rate = 0;
    bool failed = false;
    for (size_t i = 0; i < links_.size(); ++i) {
      if (links_[i] != link) continue;
      rate += own_rates_[i] * factors_[i];
      failed |= factors_[i] <= 0;
    }
    if (failed) {
      if (link->is_on()) link->turn_off();
      continue;
    }
    if (!link->is_on()) link->turn_on();
    link->set_bandwidth(rate);
  }
}

double Platform::link_factor(int topo_link) const {
  return topo_link >= 0 && topo_link < static_cast<int>(factors_.size()) ? factors_[topo_link] : 1.0;
}

double Platform::link_rate(int topo_link) const {
  return topo_link >= 0 && topo_link < static_cast<int>(rates_.size()) ? rates_[topo_link] : 0.0;
}

Platform::End Platform::normalized(End e, End other) const {
  const int nn = static_cast<int>(topo_.nodes.size());
  const bool apart = e.gpu >= 0 && e.gpu < nn && other.gpu >= 0 && other.gpu < nn &&
                     topo_.nodes[e.gpu].machine != topo_.nodes[other.gpu].machine;
  if (!apart) e.via = -1;
  if (!apart || (e.via < 0 && e.net == topo_.exit_net(e.gpu))) e.net = -1;
  return e;
}

int Platform::end_id(End e) const {
  if (gpu_host(e.gpu) == nullptr) return -1;
  if (e.net < 0) return e.gpu;
  auto it = ports_.find(std::make_tuple(e.gpu, e.net, e.via));
  return it == ports_.end() ? -1 : it->second;
}

int Platform::end_id(End e, bool create, std::string* error) {
  const int id = end_id(e);
  if (id >= 0 || !create || gpu_host(e.gpu) == nullptr) return id;
  const int nn = static_cast<int>(topo_.nodes.size());
  if (e.net >= nn || topo_.nodes[e.net].type != TopoNodeType::kNet ||
      topo_.nodes[e.net].machine != topo_.nodes[e.gpu].machine) {
    if (error) *error = topo_.nodes[e.gpu].name + ": node " + std::to_string(e.net) + " is not a NET of its machine";
    return -1;
  }
  if (e.via >= 0 && (gpu_host(e.via) == nullptr || topo_.nodes[e.via].machine != topo_.nodes[e.gpu].machine)) {
    if (error) *error = topo_.nodes[e.gpu].name + ": node " + std::to_string(e.via) + " is not a GPU of its machine";
    return -1;
  }
  if (sealed_) {
    if (error) *error = topo_.nodes[e.gpu].name + " through " + topo_.nodes[e.net].name + ": the platform is sealed";
    return -1;
  }
  try {
    s4u::Host* gpu = hosts_[e.gpu];
    const std::string via = e.via >= 0 ? topo_.nodes[e.via].name + "@" : std::string();
    s4u::Host* h = zone_->create_host(topo_.nodes[e.gpu].name + "@" + via + topo_.nodes[e.net].name, gpu->get_speed());
    h->seal();
    hosts_.push_back(h);
  } catch (const std::exception& x) {
    if (error) *error = "SimGrid refused the host of " + topo_.nodes[e.gpu].name + " through " + topo_.nodes[e.net].name + ": " + x.what();
    return -1;
  }
  const int made = static_cast<int>(hosts_.size()) - 1;
  ports_.emplace(std::make_tuple(e.gpu, e.net, e.via), made);
  return made;
}

bool Platform::add_route(End a, End b, std::string* error) {
  auto fail = [&](const std::string& why) {
    if (error) *error = why;
    return false;
  };
  const int nn = static_cast<int>(topo_.nodes.size());
  if (gpu_host(a.gpu) == nullptr || gpu_host(b.gpu) == nullptr) {
    const int bad = gpu_host(a.gpu) == nullptr ? a.gpu : b.gpu;
    return fail("add_route: node " + std::to_string(bad) +
                (bad >= 0 && bad < nn ? " (" + topo_.nodes[bad].name + ")" : std::string()) +
                " is not a GPU of the platform");
  }
  a = normalized(a, b);
  b = normalized(b, a);
  auto name = [&](End e) {
    return topo_.nodes[e.gpu].name + (e.via >= 0 && e.via < nn ? " (PXN through " + topo_.nodes[e.via].name + ")" : std::string()) +
           (e.net >= 0 && e.net < nn ? " (by " + topo_.nodes[e.net].name + ")" : std::string());
  };
  const std::string what = name(a) + " -> " + name(b);
  {
    const int ia = end_id(a), ib = end_id(b);
    if (ia >= 0 && ib >= 0 && routes_->by_pair.count((static_cast<int64_t>(ia) << 32) | ib) != 0) return true;
  }
  if (sealed_) return fail("add_route " + what + ": the platform is sealed (declare routes before seal())");
  std::string err;
  const int ia = end_id(a, true, &err), ib = end_id(b, true, &err);
  if (ia < 0 || ib < 0) return fail("add_route " + what + ": " + err);
  const int64_t key = (static_cast<int64_t>(ia) << 32) | ib;
  s4u::Host* ha = hosts_[ia];
  s4u::Host* hb = hosts_[ib];
  if (a.gpu == b.gpu) {  // a host's communications with itself take SimGrid's loopback
    routes_->by_pair.emplace(key, std::vector<int>());
    return true;
  }
  if (b.via >= 0) return fail("add_route " + what + ": PXN names the sending end only");
  TopoPath pxn;  // a.via: a -> a.via over NVLink, then a.via's route through a.net
  if (a.via >= 0) {
    const TopoPath& hop = topo_.path(a.gpu, a.via);
    const TopoPath& rest = topo_.path_via(a.via, b.gpu, a.net, b.net);
    if (hop.type != PathType::kDis && rest.type != PathType::kDis && !hop.links.empty() && !rest.links.empty()) {
      pxn.type = PathType::kNet;
      pxn.links = hop.links;
      pxn.links.insert(pxn.links.end(), rest.links.begin(), rest.links.end());
    }
  }
  const TopoPath& path = a.via >= 0 ? pxn : topo_.path_via(a.gpu, b.gpu, a.net, b.net);
  if (path.type == PathType::kDis || path.links.empty()) {
    return fail("add_route " + what + ": the model has no path between them");
  }
  std::vector<s4u::LinkInRoute> hops;
  hops.reserve(path.links.size());
  for (int l : path.links) {
    if (l < 0 || l >= static_cast<int>(links_.size())) {
      return fail("add_route " + what + ": the path names link " + std::to_string(l) + " which does not exist");
    }
    if (!(rates_[l] > 0)) {
      const TopoLink& k = topo_.links[l];
      return fail("add_route " + what + ": link " + topo_.nodes[k.from].name + "->" + topo_.nodes[k.to].name +
                  " on the path has no bandwidth (" + std::to_string(k.bw) + " GB/s)");
    }
    hops.emplace_back(links_[l]);
  }
  try {
    zone_->add_route(ha->get_netpoint(), hb->get_netpoint(), nullptr, nullptr, hops, /*symmetrical=*/false);
  } catch (const std::exception& e) {
    return fail("add_route " + what + ": SimGrid refused it: " + e.what());
  }
  routes_->by_pair.emplace(key, path.links);
  return true;
}

const std::vector<int>& Platform::route(End a, End b) const {
  if (!routes_) return no_route();
  const End na = normalized(a, b), nb = normalized(b, a);
  const int ia = end_id(na), ib = end_id(nb);
  if (ia < 0 || ib < 0) return no_route();
  auto it = routes_->by_pair.find((static_cast<int64_t>(ia) << 32) | ib);
  return it == routes_->by_pair.end() ? no_route() : it->second;
}

std::pair<s4u::Host*, s4u::Host*> Platform::route_hosts(End a, End b) const {
  const End na = normalized(a, b), nb = normalized(b, a);
  const int ia = end_id(na), ib = end_id(nb);
  if (ia < 0 || ib < 0 || !routes_ || routes_->by_pair.count((static_cast<int64_t>(ia) << 32) | ib) == 0)
    return {nullptr, nullptr};
  return {hosts_[ia], hosts_[ib]};
}

bool Platform::add_nvswitch(int machine, double port_gbs, std::string* error) {
  if (nvswitch_.count(machine)) return true;
  auto fail = [&](const std::string& m) {
    if (error) *error = "NVLS: " + m;
    return false;
  };
  if (sealed_) return fail("the platform is sealed (add the NVSwitch before seal())");
  if (!(port_gbs > 0)) return fail("the switch's reduction rate must be positive");
  const std::vector<int> gpus = topo_.gpus(machine);
  if (gpus.empty()) return fail("machine " + std::to_string(machine) + " has no GPU");
  try {
    s4u::Host* sw = zone_->create_host("m" + std::to_string(machine) + ".nvswitch", port_gbs * 1e9);
    sw->set_core_count(static_cast<int>(gpus.size()));
    sw->seal();
    for (int g : gpus) {
      auto up = nvs_links_.find({g, true}), down = nvs_links_.find({g, false});
      if (up == nvs_links_.end() || down == nvs_links_.end() || up->second.empty() || down->second.empty())
        return fail(topo_.nodes[g].name + " has no NVLink to an NVSwitch");
      std::vector<s4u::LinkInRoute> to{s4u::LinkInRoute(links_[up->second[0]])};
      std::vector<s4u::LinkInRoute> from{s4u::LinkInRoute(links_[down->second[0]])};
      zone_->add_route(hosts_[g]->get_netpoint(), sw->get_netpoint(), nullptr, nullptr, to, false);
      zone_->add_route(sw->get_netpoint(), hosts_[g]->get_netpoint(), nullptr, nullptr, from, false);
    }
    nvswitch_[machine] = sw;
  } catch (const std::exception& e) {
    return fail(std::string("SimGrid refused the switch: ") + e.what());
  }
  return true;
}

simgrid::s4u::Host* Platform::nvswitch_host(int machine) const {
  auto it = nvswitch_.find(machine);
  return it == nvswitch_.end() ? nullptr : it->second;
}

const std::vector<int>& Platform::nvswitch_links(int gpu_node, bool up) const {
  static const std::vector<int> kNone;
  auto it = nvs_links_.find({gpu_node, up});
  return it == nvs_links_.end() ? kNone : it->second;
}

void Platform::seal() {
  if (sealed_) return;
  if (zone_ != nullptr) zone_->seal();
  sealed_ = true;
}

}  // namespace sim
}  // namespace cclab
