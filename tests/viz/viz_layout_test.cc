// tests/viz/viz_layout_test.cc - the topology layout on real presets (dgx-h100, dgx-a100,
// pcie-8gpu-2socket, nvlink-pairs, dgx-h100:4, dgx-h100:8): every node placed inside the canvas, no two
// nodes overlapping, each machine in its own box with all its nodes; link segments, chunk positions,
// ring and tree positions.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "graph/topo.h"
#include "synth.h"
#include "trace/from_topo.h"
#include "viz/colors.h"
#include "viz/layout.h"

namespace cclab {
namespace viz {
namespace {

trace::Trace preset_trace(const std::string& preset, int machines) {
  Topology topo;
  std::string err;
  FabricSpec fabric;
  EXPECT_TRUE(make_preset_topology(preset, machines, fabric, &topo, &err)) << err;
  trace::Trace t;
  const std::vector<int> gpus = topo.gpus();
  std::vector<std::pair<int, int>> pairs;
  const int n = static_cast<int>(gpus.size());
  for (int r = 0; r < n; ++r) pairs.emplace_back(r, (r + 1) % n);
  trace::set_topology(topo, gpus, pairs, &t);
  return t;
}

void expect_readable_layout(const trace::Trace& t, V2 canvas, const std::string& what) {
  SCOPED_TRACE(what);
  const TopoLayout L = layout_topology(t, canvas);
  ASSERT_EQ(L.node_rect.size(), t.nodes.size());
  const Rect all(0, 0, canvas.x, canvas.y);
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    const Rect& r = L.node_rect[i];
    ASSERT_FALSE(r.empty()) << t.nodes[i].name << " not placed";
    EXPECT_TRUE(all.contains(r)) << t.nodes[i].name << " outside the canvas";
    EXPECT_GE(r.w(), 6) << t.nodes[i].name;
    EXPECT_GE(r.h(), 6) << t.nodes[i].name;
  }
  for (size_t i = 0; i < t.nodes.size(); ++i)
    for (size_t j = i + 1; j < t.nodes.size(); ++j)
      EXPECT_FALSE(L.node_rect[i].overlaps(L.node_rect[j])) << t.nodes[i].name << " overlaps " << t.nodes[j].name;
  // Machines: one box each, disjoint, inside the canvas, holding exactly their nodes.
  int machines = 0;
  for (const trace::Node& n : t.nodes)
    if (n.machine >= 0 && n.kind != "switch") machines = std::max(machines, n.machine + 1);
  ASSERT_EQ(static_cast<int>(L.machines.size()), machines);
  for (size_t a = 0; a < L.machines.size(); ++a) {
    EXPECT_EQ(L.machines[a].machine, static_cast<int>(a));
    EXPECT_TRUE(all.contains(L.machines[a].rect));
    for (size_t b = a + 1; b < L.machines.size(); ++b)
      EXPECT_FALSE(L.machines[a].rect.overlaps(L.machines[b].rect)) << "machine " << a << " and " << b;
  }
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    const trace::Node& n = t.nodes[i];
    if (n.machine >= 0 && n.kind != "switch") {
      EXPECT_TRUE(L.machines[n.machine].rect.contains(L.node_rect[i])) << n.name << " outside machine " << n.machine;
    } else {
      EXPECT_TRUE(L.fabric.contains(L.node_rect[i])) << n.name << " outside the network band";
      for (const MachineBox& m : L.machines) EXPECT_FALSE(m.rect.overlaps(L.node_rect[i])) << n.name;
    }
  }
  if (!L.fabric.empty()) {
    for (const MachineBox& m : L.machines) EXPECT_FALSE(m.rect.overlaps(L.fabric)) << "machine " << m.machine;
  }
  // GPUs of a machine in one row, left to right by device index.
  for (int m = 0; m < machines; ++m) {
    float last_x = -1, y = -1;
    for (int dev = 0;; ++dev) {
      int node = -1;
      for (size_t i = 0; i < t.nodes.size(); ++i)
        if (t.nodes[i].kind == "gpu" && t.nodes[i].machine == m && t.nodes[i].dev == dev) node = static_cast<int>(i);
      if (node < 0) break;
      const Rect& r = L.node_rect[node];
      EXPECT_GT(r.x0, last_x) << t.nodes[node].name;
      if (y >= 0) {
        EXPECT_FLOAT_EQ(r.center().y, y) << t.nodes[node].name;
      }
      last_x = r.x0;
      y = r.center().y;
    }
  }
}

TEST(Layout, OneMachinePresets) {
  for (const char* p : {"dgx-h100", "dgx-a100", "pcie-8gpu-2socket", "nvlink-pairs", "pcie-4gpu"}) {
    expect_readable_layout(preset_trace(p, 1), V2(1370, 850), p);
    expect_readable_layout(preset_trace(p, 1), V2(700, 420), std::string(p) + " small");
  }
}

TEST(Layout, MultiMachinePresets) {
  expect_readable_layout(preset_trace("dgx-h100", 2), V2(1370, 850), "dgx-h100:2");
  expect_readable_layout(preset_trace("dgx-h100", 4), V2(1370, 850), "dgx-h100:4");
  expect_readable_layout(preset_trace("dgx-a100", 8), V2(1370, 850), "dgx-a100:8");
  expect_readable_layout(preset_trace("pcie-8gpu-2socket", 3), V2(1370, 850), "pcie-8gpu-2socket:3");
}

TEST(Layout, NetworkBandFacesTheNics) {
  const trace::Trace t = preset_trace("dgx-h100", 4);
  const TopoLayout L = layout_topology(t, V2(1370, 850));
  ASSERT_FALSE(L.fabric.empty());
  // One row of machines: the band is below them and their NIC ports are their lowest nodes.
  for (const MachineBox& m : L.machines) {
    EXPECT_LT(m.rect.y1, L.fabric.y0);
    EXPECT_FALSE(m.mirrored);
  }
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    if (t.nodes[i].kind != "net") continue;
    for (size_t j = 0; j < t.nodes.size(); ++j)
      if (t.nodes[j].machine == t.nodes[i].machine && t.nodes[j].kind == "gpu") {
        EXPECT_GT(L.node_rect[i].y0, L.node_rect[j].y1);
      }
  }
  // Eight machines: two rows, the band between them, the lower row mirrored.
  const trace::Trace t8 = preset_trace("dgx-h100", 8);
  const TopoLayout L8 = layout_topology(t8, V2(1370, 850));
  int above = 0, below = 0;
  for (const MachineBox& m : L8.machines) {
    if (m.rect.y1 <= L8.fabric.y0) {
      ++above;
      EXPECT_FALSE(m.mirrored);
    } else {
      EXPECT_GE(m.rect.y0, L8.fabric.y1);
      EXPECT_TRUE(m.mirrored);
      ++below;
    }
  }
  EXPECT_EQ(above, 4);
  EXPECT_EQ(below, 4);
}

// A trace's one NVSwitch node per machine (trace/from_topo.h) is a bar over the machine's GPU row, and
// every GPU's links to it run straight up and down.
TEST(Layout, NvSwitchCrossbarSpansTheGpus) {
  for (int machines : {1, 4}) {
    SCOPED_TRACE("dgx-h100:" + std::to_string(machines));
    const trace::Trace t = preset_trace("dgx-h100", machines);
    const TopoLayout L = layout_topology(t, V2(1370, 850));
    for (int m = 0; m < machines; ++m) {
      int sw = -1;
      float gx0 = 1e9f, gx1 = -1e9f;
      for (size_t i = 0; i < t.nodes.size(); ++i) {
        if (t.nodes[i].machine != m) continue;
        if (t.nodes[i].kind == "nvswitch") {
          EXPECT_EQ(sw, -1) << "two NVSwitch nodes on machine " << m;
          sw = static_cast<int>(i);
        }
        if (t.nodes[i].kind == "gpu") {
          gx0 = std::min(gx0, L.node_rect[i].x0);
          gx1 = std::max(gx1, L.node_rect[i].x1);
        }
      }
      ASSERT_GE(sw, 0);
      const Rect& bar = L.node_rect[sw];
      EXPECT_NEAR(bar.x0, gx0, 0.5f);
      EXPECT_NEAR(bar.x1, gx1, 0.5f);
      int links = 0;
      for (const trace::Link& l : t.links) {
        if (l.from != sw && l.to != sw) continue;
        ++links;
        Segment s;
        ASSERT_TRUE(link_segment(L, l, 0, &s));
        const Rect& gpu = L.node_rect[l.from == sw ? l.to : l.from];
        EXPECT_NEAR(s.a.x, gpu.center().x, 1e-3);  // vertical, at the GPU's centre
        EXPECT_NEAR(s.b.x, gpu.center().x, 1e-3);
        EXPECT_NEAR(l.from == sw ? s.a.y : s.b.y, bar.y1, 1e-3);  // from / to the bar's lower edge
        EXPECT_NEAR(l.from == sw ? s.b.y : s.a.y, gpu.y0, 1e-3);  // to / from the GPU's upper edge
      }
      EXPECT_EQ(links, 16);
    }
  }
}

TEST(Layout, SyntheticTrace) {
  const trace::Trace t = viz_test::small_trace();
  expect_readable_layout(t, V2(800, 500), "synthetic");
  const TopoLayout L = layout_topology(t, V2(800, 500));
  // NVSwitch above the GPUs.
  for (int g = 0; g < viz_test::kGpus; ++g) EXPECT_LT(L.node_rect[viz_test::kGpus].y1, L.node_rect[g].y0);
}

TEST(Layout, EmptyTrace) {
  trace::Trace t;
  const TopoLayout L = layout_topology(t, V2(800, 500));
  EXPECT_TRUE(L.node_rect.empty());
  EXPECT_TRUE(L.machines.empty());
}

TEST(Segments, BothDirectionsAreParallelAndApart) {
  const trace::Trace t = viz_test::small_trace();
  const TopoLayout L = layout_topology(t, V2(800, 500));
  const float th = link_thickness(viz_test::kLinkGbs);
  Segment up, down, centre;
  ASSERT_TRUE(link_segment(L, t.links[0], link_offset(th), &up));
  ASSERT_TRUE(link_segment(L, t.links[1], link_offset(th), &down));
  // Without an offset the line runs from the GPU box's border to the switch box's border.
  ASSERT_TRUE(link_segment(L, t.links[0], 0, &centre));
  const Rect& gpu = L.node_rect[0];
  const Rect& sw = L.node_rect[viz_test::kGpus];
  auto on_border = [](const Rect& r, V2 p) {
    const bool in = p.x >= r.x0 - 1e-3f && p.x <= r.x1 + 1e-3f && p.y >= r.y0 - 1e-3f && p.y <= r.y1 + 1e-3f;
    const bool edge = std::fabs(p.x - r.x0) < 1e-3f || std::fabs(p.x - r.x1) < 1e-3f ||
                      std::fabs(p.y - r.y0) < 1e-3f || std::fabs(p.y - r.y1) < 1e-3f;
    return in && edge;
  };
  EXPECT_TRUE(on_border(gpu, centre.a));
  EXPECT_TRUE(on_border(sw, centre.b));
  // The two directions run opposite ways.
  EXPECT_LT(length(up.a - down.b), 2 * link_offset(th) + 1e-3f);
  EXPECT_LT(length(up.b - down.a), 2 * link_offset(th) + 1e-3f);
  // Midpoints apart by 2 x offset, perpendicular to the line.
  const V2 mu = lerp(up.a, up.b, 0.5f), md = lerp(down.a, down.b, 0.5f);
  EXPECT_NEAR(length(mu - md), 2 * link_offset(th), 1e-3);
  const V2 d = up.b - up.a;
  EXPECT_NEAR((mu - md).x * d.x + (mu - md).y * d.y, 0, 1e-2);
  // Not drawn when an end is not placed.
  trace::Link bad = t.links[0];
  bad.to = 99;
  EXPECT_FALSE(link_segment(L, bad, 1, &up));
}

TEST(Chunks, PointAlongAPolyline) {
  const std::vector<Segment> path = {{V2(0, 0), V2(10, 0)}, {V2(10, 0), V2(10, 30)}};
  const V2 a = point_along(path, 0);
  EXPECT_FLOAT_EQ(a.x, 0);
  EXPECT_FLOAT_EQ(a.y, 0);
  const V2 q = point_along(path, 0.25f);  // 10 of 40
  EXPECT_FLOAT_EQ(q.x, 10);
  EXPECT_FLOAT_EQ(q.y, 0);
  const V2 h = point_along(path, 0.5f);  // 20 of 40: 10 down the second segment
  EXPECT_FLOAT_EQ(h.x, 10);
  EXPECT_FLOAT_EQ(h.y, 10);
  const V2 e = point_along(path, 2.0f);
  EXPECT_FLOAT_EQ(e.y, 30);
  // Gaps between segments do not count.
  const std::vector<Segment> gap = {{V2(0, 0), V2(10, 0)}, {V2(100, 0), V2(110, 0)}};
  EXPECT_FLOAT_EQ(point_along(gap, 0.75f).x, 105);
}

TEST(Chunks, MoveAlongTheirRouteWithTime) {
  const trace::Trace t = viz_test::small_trace();
  const TopoLayout L = layout_topology(t, V2(800, 500));
  trace::Event e = t.events.front();
  ASSERT_EQ(e.rank, 0);
  ASSERT_EQ(e.send_peer, 1);
  ASSERT_GE(e.route, 0);
  Segment s0, s1;
  ASSERT_TRUE(link_segment(L, t.links[0], link_offset(link_thickness(100)), &s0));  // gpu0 -> nvs
  ASSERT_TRUE(link_segment(L, t.links[3], link_offset(link_thickness(100)), &s1));  // nvs -> gpu1
  V2 p;
  ASSERT_TRUE(chunk_position(t, L, e, e.data_us, &p));
  EXPECT_NEAR(p.x, s0.a.x, 1e-3);
  EXPECT_NEAR(p.y, s0.a.y, 1e-3);
  ASSERT_TRUE(chunk_position(t, L, e, e.end_us, &p));
  EXPECT_NEAR(p.x, s1.b.x, 1e-3);
  EXPECT_NEAR(p.y, s1.b.y, 1e-3);
  // Halfway in time is halfway along the route's drawn length.
  ASSERT_TRUE(chunk_position(t, L, e, (e.data_us + e.end_us) / 2, &p));
  const V2 want = point_along({s0, s1}, 0.5f);
  EXPECT_NEAR(p.x, want.x, 1e-3);
  EXPECT_NEAR(p.y, want.y, 1e-3);
  // Without a route: nowhere.
  e.route = -1;
  EXPECT_FALSE(chunk_position(t, L, e, e.data_us, &p));
}

TEST(ChannelGeometry, RingAndTree) {
  const Rect r(0, 0, 200, 200);
  const std::vector<V2> ring = ring_positions(4, r);
  ASSERT_EQ(ring.size(), 4u);
  EXPECT_NEAR(ring[0].x, 100, 1e-3);  // first at the top
  EXPECT_LT(ring[0].y, 50);
  EXPECT_GT(ring[1].x, 150);  // then clockwise: right
  for (const V2& p : ring) EXPECT_TRUE(r.contains(p));
  // Chain 0 <- 1 <- 2 and 3 under 0: root at the top, depths downwards, parents over children.
  const std::vector<V2> tree = tree_positions({-1, 0, 1, 0}, r);
  EXPECT_LT(tree[0].y, tree[1].y);
  EXPECT_LT(tree[1].y, tree[2].y);
  EXPECT_FLOAT_EQ(tree[1].y, tree[3].y);
  EXPECT_NEAR(tree[0].x, (tree[1].x + tree[3].x) / 2, 1e-3);
  for (const V2& p : tree) EXPECT_TRUE(r.contains(p));
  // A rank outside the tree still gets a place.
  const std::vector<V2> stray = tree_positions({-1, 0, -2}, r);
  EXPECT_TRUE(r.contains(stray[2]));
  EXPECT_GT(stray[2].y, stray[1].y);
}

}  // namespace
}  // namespace viz
}  // namespace cclab
