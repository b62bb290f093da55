// runtime/graph/topo_describe.cc - Topology::validate(), describe() and describe_paths().
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <map>
#include <set>

#include "graph/topo.h"

namespace cclab {

namespace {

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

bool is(const TopoNode& n, TopoNodeType t) { return n.type == t; }

// Which node types a link type may join (either order).
bool link_allowed(LinkType type, const TopoNode& a, const TopoNode& b) {
  using T = TopoNodeType;
  auto pair = [&](T x, T y) { return (is(a, x) && is(b, y)) || (is(a, y) && is(b, x)); };
  switch (type) {
    case LinkType::kNvl:  // GPU-GPU bridge, GPU-NVSwitch, GPU-CPU (IBM POWER)
      return pair(T::kGpu, T::kGpu) || pair(T::kGpu, T::kNvs) || pair(T::kGpu, T::kCpu);
    case LinkType::kC2c:
      return pair(T::kGpu, T::kCpu);
    case LinkType::kSys:
      return pair(T::kCpu, T::kCpu);
    case LinkType::kPci: {
      auto pcie = [](const TopoNode& n) {
        return is(n, T::kGpu) || is(n, T::kPci) || is(n, T::kCpu) || is(n, T::kNic) || is(n, T::kNvs);
      };
      return pcie(a) && pcie(b);
    }
    case LinkType::kLoc:  // NIC to its port; PCI to PCI (NCCL's pcilink)
      return pair(T::kNic, T::kNet) || pair(T::kPci, T::kPci);
    case LinkType::kNet:
      return pair(T::kNet, T::kNetSwitch) || pair(T::kNetSwitch, T::kNetSwitch);
  }
  return false;
}

bool known_link_type(LinkType t) {
  switch (t) {
    case LinkType::kLoc: case LinkType::kNvl: case LinkType::kC2c: case LinkType::kPci:
    case LinkType::kSys: case LinkType::kNet:
      return true;
  }
  return false;
}

}  // namespace

bool Topology::validate(std::string* error) const {
  auto fail = [&](const std::string& why) {
    if (error) *error = why;
    return false;
  };
  const int n = static_cast<int>(nodes.size());
  const int nl = static_cast<int>(links.size());
  if (machines < 1) return fail(format("machines is %d, must be >= 1", machines));
  if (nodes_of(TopoNodeType::kGpu).empty()) return fail("no GPU");

  std::set<std::string> names;
  for (int i = 0; i < n; ++i) {
    const TopoNode& node = nodes[i];
    const int t = static_cast<int>(node.type);
    if (t < 0 || t >= kNumTopoNodeTypes) return fail(format("node %d has unknown type %d", i, t));
    if (node.name.empty()) return fail(format("node %d has no name", i));
    if (!names.insert(node.name).second) return fail("two nodes are named " + node.name);
    if (is(node, TopoNodeType::kNetSwitch)) {
      if (node.machine != -1) return fail(node.name + ": a network switch must have machine -1");
    } else if (node.machine < 0 || node.machine >= machines) {
      return fail(format("%s: machine %d outside 0..%d", node.name.c_str(), node.machine,
                         machines - 1));
    }
    if (is(node, TopoNodeType::kGpu) && node.sm <= 0) return fail(node.name + ": GPU without sm");
    for (int l : node.out) {
      if (l < 0 || l >= nl) return fail(format("%s: out link %d does not exist", node.name.c_str(), l));
      if (links[l].from != i) {
        return fail(format("%s: out link %d starts at node %d", node.name.c_str(), l, links[l].from));
      }
    }
  }

  std::vector<int> listed(nl, 0);
  for (int i = 0; i < n; ++i) {
    for (int l : nodes[i].out) ++listed[l];
  }
  for (int l = 0; l < nl; ++l) {
    const TopoLink& k = links[l];
    if (k.from < 0 || k.from >= n || k.to < 0 || k.to >= n) {
      return fail(format("link %d joins %d -> %d: no such node", l, k.from, k.to));
    }
    const TopoNode& a = nodes[k.from];
    const TopoNode& b = nodes[k.to];
    const std::string what = format("link %d (%s -> %s)", l, a.name.c_str(), b.name.c_str());
    if (listed[l] != 1) return fail(what + format(": listed %d times in its node's out", listed[l]));
    if (k.from == k.to) return fail(what + ": a node linked to itself");
    if (!known_link_type(k.type)) return fail(what + format(": unknown type %d", static_cast<int>(k.type)));
    if (!(k.bw > 0) || !std::isfinite(k.bw)) return fail(what + format(": bandwidth %g", k.bw));
    if (!(k.model_bw > 0) || !std::isfinite(k.model_bw)) {
      return fail(what + format(": model bandwidth %g", k.model_bw));
    }
    if (!(k.latency_us >= 0)) return fail(what + format(": latency %g", k.latency_us));
    if (k.lanes < 1) return fail(what + format(": %d lanes", k.lanes));
    if (!link_allowed(k.type, a, b)) {
      return fail(what + ": a " + link_type_name(k.type) + " link cannot join " +
                  topo_node_type_name(a.type) + " and " + topo_node_type_name(b.type));
    }
    if (k.type != LinkType::kNet && a.machine != b.machine) {
      return fail(what + ": joins two machines without a network link");
    }
    if (k.reverse < 0 || k.reverse >= nl || k.reverse == l) return fail(what + ": no reverse link");
    const TopoLink& r = links[k.reverse];
    if (r.reverse != l || r.from != k.to || r.to != k.from || r.type != k.type || r.lanes != k.lanes ||
        r.generation != k.generation) {
      return fail(what + format(": reverse link %d is not its mirror", k.reverse));
    }
  }

  // GPUs: devs 0..n-1 on every machine, the same count everywhere; NETs: distinct devs, on a NIC.
  int per_machine = -1;
  for (int m = 0; m < machines; ++m) {
    std::vector<int> g = gpus(m);
    std::vector<char> seen(g.size(), 0);
    for (int i : g) {
      const int dev = nodes[i].dev;
      if (dev < 0 || dev >= static_cast<int>(g.size()) || seen[dev]) {
        return fail(format("%s: dev %d; the %zu GPUs of machine %d must have devs 0..%zu once each",
                           nodes[i].name.c_str(), dev, g.size(), m, g.size() - 1));
      }
      seen[dev] = 1;
    }
    if (per_machine < 0) per_machine = static_cast<int>(g.size());
    if (static_cast<int>(g.size()) != per_machine) {
      return fail(format("machine %d has %zu GPUs, machine 0 has %d", m, g.size(), per_machine));
    }
    std::set<int> net_devs;
    for (int i : nets(m)) {
      if (!net_devs.insert(nodes[i].dev).second) {
        return fail(format("%s: NET dev %d used twice on machine %d", nodes[i].name.c_str(),
                           nodes[i].dev, m));
      }
      bool on_nic = false;
      for (int l : nodes[i].out) on_nic = on_nic || is(nodes[links[l].to], TopoNodeType::kNic);
      if (!on_nic) return fail(nodes[i].name + ": NET port not attached to a NIC");
    }
  }
  if (machines > 1) {
    for (int i : nets()) {
      bool cabled = false;
      for (int l : nodes[i].out) cabled = cabled || links[l].type == LinkType::kNet;
      if (!cabled) return fail(nodes[i].name + ": NET port of a multi-machine model not cabled");
    }
  }
  return true;
}

std::string Topology::describe() const {
  std::string s = format("Topology %s: %s; %d machine(s), %zu nodes, %zu links\n", name.c_str(),
                         description.c_str(), machines, nodes.size(), links.size());
  if (machines > 1) {
    s += format("  fabric: %d per leaf, oversubscription %g:1, switch %g us, cable %g us\n",
                fabric.machines_per_leaf, fabric.oversubscription, fabric.switch_latency_us,
                fabric.cable_latency_us);
  }
  for (const TopoNode& n : nodes) {
    s += format("%-22s %-6s dev %d", n.name.c_str(), topo_node_type_name(n.type), n.dev);
    switch (n.type) {
      case TopoNodeType::kGpu:
        s += format(" sm %d", n.sm);
        if (n.rank >= 0) s += format(" rank %d", n.rank);
        break;
      case TopoNodeType::kCpu:
        s += format(" arch %d vendor %d family 0x%x model 0x%x", static_cast<int>(n.arch),
                    static_cast<int>(n.vendor), n.familyid, n.modelid);
        break;
      case TopoNodeType::kNic:
      case TopoNodeType::kNet:
        s += format(" %s %g Mb/s", n.net_name.c_str(), n.net_speed_mbps);
        break;
      case TopoNodeType::kNetSwitch:
        s += format(" tier %d", n.tier);
        if (n.rail >= 0) s += format(" rail %d", n.rail);
        break;
      default:
        break;
    }
    if (n.busid >= 0) s += format(" busid %llx", static_cast<long long>(n.busid));
    s += "\n";
    for (int l : n.out) {
      const TopoLink& k = links[l];
      s += format("    + %s x%d %g/%g GB/s %g us -> %s\n", link_type_name(k.type), k.lanes, k.bw,
                  k.model_bw, k.latency_us, nodes[k.to].name.c_str());
    }
  }
  return s;
}

std::string Topology::describe_paths(int machine) const {
  const std::vector<int> g = gpus(machine);
  const std::vector<int> nt = nets(machine);
  std::string s = format("Paths of machine %d (type/bandwidth GB/s, NCCL's model; rows from, columns to)\n",
                         machine);
  auto cell = [&](int a, int b) {
    const TopoPath& p = path(a, b);
    if (p.type == PathType::kDis) return std::string("DIS");
    return format("%s/%.1f", path_type_name(p.type), p.bw);
  };
  auto table = [&](const std::vector<int>& rows, const std::vector<int>& cols, const char* rname,
                   const char* cname) {
    s += format("%-7s", "");
    for (int c : cols) s += format(" %12s", format("%s%d", cname, nodes[c].dev).c_str());
    s += "\n";
    for (int r : rows) {
      s += format("%-7s", format("%s%d", rname, nodes[r].dev).c_str());
      for (int c : cols) s += format(" %12s", cell(r, c).c_str());
      s += "\n";
    }
  };
  table(g, g, "GPU", "GPU");
  if (!nt.empty()) table(g, nt, "GPU", "NET");
  return s;
}

}  // namespace cclab
