// tests/trace/trace_topo_test.cc - a trace's topology from the topology model (trace/from_topo.h):
// the NVSwitch chips of a machine become one crossbar node with one up and one down link per GPU (as
// the simulator models them, sim/platform.cc), every other node and link is kept as it is, and routes
// are the model's paths mapped onto the trace's links, connected end to end.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "graph/topo.h"
#include "trace/from_topo.h"
#include "trace/trace.h"

namespace cclab {
namespace trace {
namespace {

Topology preset(const std::string& name, int machines) {
  Topology topo;
  std::string err;
  EXPECT_TRUE(make_preset_topology(name, machines, FabricSpec(), &topo, &err)) << err;
  return topo;
}

// A trace of `topo` with every GPU a rank (in node order) and routes between every pair of ranks.
Trace trace_of(const Topology& topo) {
  Trace t;
  const std::vector<int> gpus = topo.gpus();
  set_topology(topo, gpus, all_pairs(static_cast<int>(gpus.size())), &t);
  return t;
}

int node_named(const Trace& t, const std::string& name) {
  for (size_t i = 0; i < t.nodes.size(); ++i)
    if (t.nodes[i].name == name) return static_cast<int>(i);
  return -1;
}

int link_between(const Trace& t, int from, int to) {
  for (size_t i = 0; i < t.links.size(); ++i)
    if (t.links[i].from == from && t.links[i].to == to) return static_cast<int>(i);
  return -1;
}

// What holds for the trace of any topology: links' ends and reverses valid and mirrored; every route
// leaves its source rank's GPU, arrives at its destination's, each link starting where the previous
// one ended, no link twice; the trace passes the writer's checks.
void expect_consistent(const Trace& t, const std::string& what) {
  SCOPED_TRACE(what);
  const int nn = static_cast<int>(t.nodes.size()), nl = static_cast<int>(t.links.size());
  for (int i = 0; i < nl; ++i) {
    const Link& l = t.links[i];
    ASSERT_TRUE(l.from >= 0 && l.from < nn && l.to >= 0 && l.to < nn) << "link " << i;
    EXPECT_NE(l.from, l.to) << "link " << i;
    ASSERT_TRUE(l.reverse >= 0 && l.reverse < nl) << "link " << i;
    EXPECT_EQ(t.links[l.reverse].reverse, i);
    EXPECT_EQ(t.links[l.reverse].from, l.to);
    EXPECT_EQ(t.links[l.reverse].to, l.from);
    EXPECT_EQ(t.links[l.reverse].gbs, l.gbs);
    EXPECT_GT(l.gbs, 0) << "link " << i;
  }
  std::map<std::string, int> names;
  for (const Node& n : t.nodes) EXPECT_EQ(names[n.name]++, 0) << "two nodes named " << n.name;
  ASSERT_FALSE(t.routes.empty());
  for (const Route& r : t.routes) {
    SCOPED_TRACE("route " + std::to_string(r.src) + " -> " + std::to_string(r.dst));
    ASSERT_FALSE(r.links.empty());
    for (int l : r.links) ASSERT_TRUE(l >= 0 && l < nl);
    EXPECT_EQ(t.links[r.links.front()].from, t.rank_node(r.src));
    EXPECT_EQ(t.links[r.links.back()].to, t.rank_node(r.dst));
    for (size_t k = 1; k < r.links.size(); ++k) EXPECT_EQ(t.links[r.links[k - 1]].to, t.links[r.links[k]].from);
    std::vector<int> sorted = r.links;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_TRUE(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end()) << "a link twice";
  }
  EXPECT_FALSE(encode_trace(t).empty()) << "the writer rejects the topology";
}

// One NVSwitch node per machine, "m<k>.nvswitch"; every GPU of the machine has one link up to it and
// one down from it, each the sum of the GPU's links to the model's chips, latency the largest; routes
// between two GPUs of a machine are [gpuA -> nvswitch, nvswitch -> gpuB].
void expect_crossbar(const Topology& topo, const Trace& t, const std::string& what) {
  SCOPED_TRACE(what);
  int nvs_nodes = 0;
  for (const Node& n : t.nodes) nvs_nodes += n.kind == "nvswitch";
  EXPECT_EQ(nvs_nodes, topo.machines);
  for (int m = 0; m < topo.machines; ++m) {
    const std::string prefix = "m" + std::to_string(m) + ".";
    const int sw = node_named(t, prefix + "nvswitch");
    ASSERT_GE(sw, 0) << prefix << "nvswitch";
    EXPECT_EQ(t.nodes[sw].kind, "nvswitch");
    EXPECT_EQ(t.nodes[sw].machine, m);
    EXPECT_EQ(t.nodes[sw].rank, -1);
    EXPECT_EQ(node_named(t, prefix + "nvs0"), -1) << "a chip is left";
    int up = 0, down = 0;
    for (const Link& l : t.links) {
      up += l.to == sw;
      down += l.from == sw;
      if (l.to == sw || l.from == sw) {
        EXPECT_EQ(l.kind, "nvlink");
        EXPECT_EQ(t.nodes[l.to == sw ? l.from : l.to].kind, "gpu");
      }
    }
    const std::vector<int> gpus = topo.gpus(m);
    EXPECT_EQ(up, static_cast<int>(gpus.size()));
    EXPECT_EQ(down, static_cast<int>(gpus.size()));
    for (int g : gpus) {
      double sum_up = 0, sum_down = 0, lat_up = 0, lat_down = 0;
      int chips = 0;
      for (const TopoLink& l : topo.links) {
        if (l.from == g && topo.nodes[l.to].type == TopoNodeType::kNvs) {
          sum_up += l.bw;
          lat_up = std::max(lat_up, l.latency_us);
          ++chips;
        }
        if (l.to == g && topo.nodes[l.from].type == TopoNodeType::kNvs) {
          sum_down += l.bw;
          lat_down = std::max(lat_down, l.latency_us);
        }
      }
      EXPECT_GT(chips, 1);
      const int gn = node_named(t, topo.nodes[g].name);
      ASSERT_GE(gn, 0);
      const int lu = link_between(t, gn, sw), ld = link_between(t, sw, gn);
      ASSERT_GE(lu, 0) << topo.nodes[g].name;
      ASSERT_GE(ld, 0) << topo.nodes[g].name;
      EXPECT_DOUBLE_EQ(t.links[lu].gbs, sum_up) << topo.nodes[g].name;
      EXPECT_DOUBLE_EQ(t.links[ld].gbs, sum_down) << topo.nodes[g].name;
      EXPECT_DOUBLE_EQ(t.links[lu].latency_us, lat_up);
      EXPECT_DOUBLE_EQ(t.links[ld].latency_us, lat_down);
      EXPECT_EQ(t.links[lu].reverse, ld);
    }
    for (int a : gpus)
      for (int b : gpus) {
        if (a == b) continue;
        const int ta = node_named(t, topo.nodes[a].name), tb = node_named(t, topo.nodes[b].name);
        const int route = t.route_index(t.nodes[ta].rank, t.nodes[tb].rank);
        ASSERT_GE(route, 0);
        EXPECT_EQ(t.routes[route].links, (std::vector<int>{link_between(t, ta, sw), link_between(t, sw, tb)}))
            << topo.nodes[a].name << " -> " << topo.nodes[b].name;
      }
  }
}

// Every node and link of the model that does not touch an NVSwitch is in the trace as it is.
void expect_rest_unchanged(const Topology& topo, const Trace& t, const std::string& what) {
  SCOPED_TRACE(what);
  int kept_nodes = 0, kept_links = 0, nvs = 0;
  for (const TopoNode& n : topo.nodes) {
    if (n.type == TopoNodeType::kNvs) {
      ++nvs;
      continue;
    }
    const int k = node_named(t, n.name);
    ASSERT_GE(k, 0) << n.name;
    EXPECT_EQ(t.nodes[k].machine, n.machine);
    EXPECT_EQ(t.nodes[k].dev, n.dev);
    ++kept_nodes;
  }
  EXPECT_EQ(static_cast<int>(t.nodes.size()), kept_nodes + (nvs > 0 ? topo.machines : 0));
  for (const TopoLink& l : topo.links) {
    if (topo.nodes[l.from].type == TopoNodeType::kNvs || topo.nodes[l.to].type == TopoNodeType::kNvs) continue;
    const int a = node_named(t, topo.nodes[l.from].name), b = node_named(t, topo.nodes[l.to].name);
    const int k = link_between(t, a, b);
    ASSERT_GE(k, 0) << topo.nodes[l.from].name << " -> " << topo.nodes[l.to].name;
    EXPECT_DOUBLE_EQ(t.links[k].gbs, l.bw);
    EXPECT_DOUBLE_EQ(t.links[k].latency_us, l.latency_us);
    ++kept_links;
  }
  int gpu_nvs = 0;
  for (const Link& l : t.links) gpu_nvs += t.nodes[l.from].kind == "nvswitch" || t.nodes[l.to].kind == "nvswitch";
  EXPECT_EQ(static_cast<int>(t.links.size()), kept_links + gpu_nvs);
}

TEST(TraceTopology, DgxH100HasOneNvSwitchCrossbar) {
  const Topology topo = preset("dgx-h100", 1);
  const Trace t = trace_of(topo);
  EXPECT_EQ(t.meta.topo_name, "dgx-h100");
  EXPECT_EQ(t.meta.nranks, 8);
  EXPECT_EQ(t.meta.machines, 1);
  expect_consistent(t, "dgx-h100");
  expect_crossbar(topo, t, "dgx-h100");
  expect_rest_unchanged(topo, t, "dgx-h100");
  // 18 NVLink4 links of 25 GB/s per GPU (5 + 4 + 4 + 5 over the four chips).
  const int sw = node_named(t, "m0.nvswitch"), g0 = node_named(t, "m0.gpu0"), g5 = node_named(t, "m0.gpu5");
  const int up = link_between(t, g0, sw), down = link_between(t, sw, g5);
  ASSERT_GE(up, 0);
  ASSERT_GE(down, 0);
  EXPECT_DOUBLE_EQ(t.links[up].gbs, 450.0);
  EXPECT_EQ(t.routes[t.route_index(0, 5)].links, (std::vector<int>{up, down}));
  // 122 model links: 64 GPU <-> chip directions become 16.
  EXPECT_EQ(topo.links.size(), 122u);
  EXPECT_EQ(t.links.size(), 122u - 64u + 16u);
  EXPECT_EQ(t.nodes.size(), topo.nodes.size() - 3);
}

TEST(TraceTopology, DgxA100AndMultiMachine) {
  for (const auto& p : std::vector<std::pair<std::string, int>>{{"dgx-a100", 1}, {"dgx-h100", 4}, {"dgx-a100", 2}}) {
    const std::string what = p.first + ":" + std::to_string(p.second);
    const Topology topo = preset(p.first, p.second);
    const Trace t = trace_of(topo);
    EXPECT_EQ(t.meta.machines, p.second);
    expect_consistent(t, what);
    expect_crossbar(topo, t, what);
    expect_rest_unchanged(topo, t, what);
  }
}

// Routes are the model's paths with every link mapped onto its trace link.
TEST(TraceTopology, RoutesFollowTheModelsPaths) {
  const Topology topo = preset("dgx-h100", 2);
  const TopoMapping m = map_topology(topo);
  const Trace t = trace_of(topo);
  ASSERT_EQ(m.nodes, static_cast<int>(t.nodes.size()));
  ASSERT_EQ(m.links, static_cast<int>(t.links.size()));
  ASSERT_EQ(m.link.size(), topo.links.size());
  for (size_t i = 0; i < topo.nodes.size(); ++i) {
    const int k = m.node[i];
    ASSERT_TRUE(k >= 0 && k < m.nodes);
    if (topo.nodes[i].type != TopoNodeType::kNvs) {
      EXPECT_EQ(t.nodes[k].name, topo.nodes[i].name);
    } else {
      EXPECT_EQ(t.nodes[k].name, "m" + std::to_string(topo.nodes[i].machine) + ".nvswitch");
    }
  }
  for (size_t i = 0; i < topo.links.size(); ++i) {
    const int k = m.link[i];
    ASSERT_TRUE(k >= 0 && k < m.links);
    EXPECT_EQ(t.links[k].from, m.node[topo.links[i].from]);
    EXPECT_EQ(t.links[k].to, m.node[topo.links[i].to]);
  }
  const std::vector<int> gpus = topo.gpus();
  int crossing = 0;
  for (const Route& r : t.routes) {
    const TopoPath& path = topo.path(gpus[r.src], gpus[r.dst]);
    EXPECT_EQ(r.links, map_route(m, path.links));
    if (path.hops() > 2) {
      ++crossing;
      EXPECT_EQ(r.links.size(), path.links.size());  // across machines: no NVSwitch hop
    }
  }
  EXPECT_EQ(crossing, 8 * 8 * 2);
  // Consecutive links that map onto one trace link count once; dropped links (-1) vanish.
  TopoMapping fake;
  fake.link = {3, 3, -1, 4, 3};
  EXPECT_EQ(map_route(fake, {0, 1, 2, 3, 4, 9, -2}), (std::vector<int>{3, 4, 3}));
}

// Without NVSwitches the trace is the model: same nodes, same links, same indices, same paths.
TEST(TraceTopology, WithoutNvSwitchNothingChanges) {
  for (const char* p : {"pcie-8gpu-2socket", "nvlink-pairs", "pcie-4gpu"}) {
    SCOPED_TRACE(p);
    const Topology topo = preset(p, 1);
    const Trace t = trace_of(topo);
    expect_consistent(t, p);
    ASSERT_EQ(t.nodes.size(), topo.nodes.size());
    ASSERT_EQ(t.links.size(), topo.links.size());
    for (size_t i = 0; i < topo.nodes.size(); ++i) EXPECT_EQ(t.nodes[i].name, topo.nodes[i].name);
    for (size_t i = 0; i < topo.links.size(); ++i) {
      EXPECT_EQ(t.links[i].from, topo.links[i].from);
      EXPECT_EQ(t.links[i].to, topo.links[i].to);
      EXPECT_EQ(t.links[i].reverse, topo.links[i].reverse);
      EXPECT_DOUBLE_EQ(t.links[i].gbs, topo.links[i].bw);
    }
    const std::vector<int> gpus = topo.gpus();
    for (const Route& r : t.routes) EXPECT_EQ(r.links, topo.path(gpus[r.src], gpus[r.dst]).links);
  }
}

// Chips joined to each other inside a machine (not in the presets; an XML model could have it): the
// link between them disappears into the crossbar.
TEST(TraceTopology, LinksBetweenChipsVanish) {
  Topology topo;
  auto node = [&](TopoNodeType type, int dev, const std::string& name) {
    TopoNode n;
    n.type = type;
    n.dev = dev;
    n.name = name;
    n.sm = 90;
    return topo.add_node(n);
  };
  const int cpu = node(TopoNodeType::kCpu, 0, "m0.cpu0");
  const int g0 = node(TopoNodeType::kGpu, 0, "m0.gpu0"), g1 = node(TopoNodeType::kGpu, 1, "m0.gpu1");
  const int s0 = node(TopoNodeType::kNvs, 0, "m0.nvs0"), s1 = node(TopoNodeType::kNvs, 1, "m0.nvs1");
  topo.connect(cpu, g0, LinkType::kPci, 24, 1);
  topo.connect(cpu, g1, LinkType::kPci, 24, 1);
  topo.connect(g0, s0, LinkType::kNvl, 100, 0.3);
  topo.connect(g0, s1, LinkType::kNvl, 50, 0.2);
  topo.connect(s0, s1, LinkType::kNvl, 200, 0.1);
  topo.connect(s0, g1, LinkType::kNvl, 100, 0.4);
  topo.connect(s1, g1, LinkType::kNvl, 100, 0.4);
  topo.name = "two-chips";
  topo.compute_paths();
  Trace t;
  set_topology(topo, {g0, g1}, all_pairs(2), &t);
  expect_consistent(t, "two chips");
  ASSERT_EQ(t.nodes.size(), 4u);
  const int sw = node_named(t, "m0.nvswitch");
  ASSERT_GE(sw, 0);
  EXPECT_EQ(t.links.size(), 4u + 4u);  // 2 PCIe links, 2 NVLinks, both directions; the chip-chip one gone
  const int a = node_named(t, "m0.gpu0"), b = node_named(t, "m0.gpu1");
  const int route = t.route_index(0, 1);
  ASSERT_GE(route, 0);
  const std::vector<int>& links = t.routes[route].links;
  EXPECT_EQ(links, (std::vector<int>{link_between(t, a, sw), link_between(t, sw, b)}));
  EXPECT_DOUBLE_EQ(t.links[link_between(t, a, sw)].gbs, 150);
  EXPECT_DOUBLE_EQ(t.links[link_between(t, a, sw)].latency_us, 0.3);
  EXPECT_DOUBLE_EQ(t.links[link_between(t, sw, b)].gbs, 200);
}

}  // namespace
}  // namespace trace
}  // namespace cclab
