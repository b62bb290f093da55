// tests/viz/viz_screenshot_test.cc - headless screenshots (`cclab viz TRACE --screenshot --layout-json`)
// checked pixel by pixel: a link driven at 97% of its capacity is drawn saturated red where the layout
// says its line is, an idle link in the idle colour, the same link not red outside its busy interval;
// the channels view's ring arrows; the links view's heatmap cell of the busy link. Runs under xvfb-run
// (tests/viz/CMakeLists.txt).
#include <gtest/gtest.h>
#include <stb_image.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "synth.h"
#include "viz/colors.h"
#include "viz/viz.h"

namespace cclab {
namespace viz {
namespace {

using nlohmann::json;

struct Image {
  int w = 0, h = 0;
  std::vector<unsigned char> rgb;
  Color at(int x, int y) const {
    if (x < 0 || y < 0 || x >= w || y >= h) return 0;
    const unsigned char* p = &rgb[(static_cast<size_t>(y) * w + x) * 3];
    return rgba(p[0], p[1], p[2]);
  }
};

// A scratch directory, removed at exit unless CCLAB_VIZ_KEEP is set (to look at the screenshots).
struct Scratch {
  std::string dir;
  ~Scratch() {
    if (!dir.empty() && dir != "/tmp" && !std::getenv("CCLAB_VIZ_KEEP")) std::filesystem::remove_all(dir);
  }
};

std::string tmp_dir() {
  static Scratch scratch;
  if (scratch.dir.empty()) {
    char tmpl[] = "/tmp/cclab_viz_test_XXXXXX";
    const char* d = mkdtemp(tmpl);
    scratch.dir = d ? d : "/tmp";
  }
  return scratch.dir;
}

std::string write_synthetic(const trace::Trace& t, const std::string& name) {
  const std::string path = tmp_dir() + "/" + name;
  std::string err;
  EXPECT_TRUE(trace::write_trace(path, t, &err)) << err;
  return path;
}

struct Shot {
  Image img;
  json layout;
};

Shot shoot(const std::string& trace, const std::vector<std::string>& extra, int w = 1200, int h = 800) {
  static int n = 0;
  const std::string png = tmp_dir() + "/shot" + std::to_string(n) + ".png";
  const std::string lj = tmp_dir() + "/shot" + std::to_string(n++) + ".json";
  std::vector<std::string> args = {trace, "--screenshot", png, "--layout-json", lj,
                                   "--size", std::to_string(w) + "x" + std::to_string(h)};
  args.insert(args.end(), extra.begin(), extra.end());
  Shot s;
  const int rc = viz_main(args);
  EXPECT_EQ(rc, 0);
  if (rc != 0) return s;
  int comp = 0;
  unsigned char* data = stbi_load(png.c_str(), &s.img.w, &s.img.h, &comp, 3);
  EXPECT_NE(data, nullptr) << png;
  if (data) {
    s.img.rgb.assign(data, data + static_cast<size_t>(s.img.w) * s.img.h * 3);
    stbi_image_free(data);
  }
  std::ifstream in(lj);
  std::stringstream ss;
  ss << in.rdbuf();
  s.layout = json::parse(ss.str());
  return s;
}

int distance(Color a, Color b) {
  return std::abs(static_cast<int>(red_of(a)) - static_cast<int>(red_of(b))) +
         std::abs(static_cast<int>(green_of(a)) - static_cast<int>(green_of(b))) +
         std::abs(static_cast<int>(blue_of(a)) - static_cast<int>(blue_of(b)));
}

// Pixels within `radius` of (x, y) whose colour is within `tol` (sum of channel differences) of c.
int count_near(const Image& img, float x, float y, Color c, int radius = 1, int tol = 0) {
  int n = 0;
  for (int dy = -radius; dy <= radius; ++dy)
    for (int dx = -radius; dx <= radius; ++dx)
      if (distance(img.at(static_cast<int>(x) + dx, static_cast<int>(y) + dy), c) <= tol) ++n;
  return n;
}

Color color_of(const json& j) { return rgba(j[0].get<unsigned>(), j[1].get<unsigned>(), j[2].get<unsigned>(), j[3].get<unsigned>()); }

const json* find_link(const json& layout, int index) {
  for (const json& l : layout["links"])
    if (l["index"].get<int>() == index) return &l;
  return nullptr;
}

TEST(Screenshot, SaturatedAndIdleLinks) {
  const std::string tr = write_synthetic(viz_test::small_trace(), "small.cctrace");
  const Shot s = shoot(tr, {"--at", "40"});
  ASSERT_EQ(s.img.w, 1200);
  ASSERT_EQ(s.img.h, 800);
  EXPECT_EQ(s.layout["width"], 1200);
  EXPECT_EQ(s.layout["view"], "topology");
  EXPECT_EQ(s.layout["at_us"], 40);
  ASSERT_EQ(s.layout["nodes"].size(), 5u);
  for (const json& n : s.layout["nodes"]) {
    const json& r = n["rect"];
    EXPECT_GE(r[0].get<float>(), 0);
    EXPECT_LE(r[2].get<float>(), 1200);
    EXPECT_LE(r[3].get<float>(), 800);
  }
  const json* busy = find_link(s.layout, viz_test::kBusyLink);
  ASSERT_NE(busy, nullptr);
  EXPECT_EQ((*busy)["from"], "m0.gpu0");
  EXPECT_EQ((*busy)["to"], "m0.nvs0");
  EXPECT_NEAR((*busy)["utilization"].get<double>(), 0.97, 1e-6);
  EXPECT_EQ(color_of((*busy)["color"]), kSaturated);
  const float bx = ((*busy)["p0"][0].get<float>() + (*busy)["p1"][0].get<float>()) / 2;
  const float by = ((*busy)["p0"][1].get<float>() + (*busy)["p1"][1].get<float>()) / 2;
  EXPECT_GE(count_near(s.img, bx, by, kSaturated, 1), 5) << "around " << bx << "," << by;
  // Along the segment too, not only at the midpoint.
  for (float f : {0.3f, 0.7f}) {
    const float x = (*busy)["p0"][0].get<float>() * (1 - f) + (*busy)["p1"][0].get<float>() * f;
    const float y = (*busy)["p0"][1].get<float>() * (1 - f) + (*busy)["p1"][1].get<float>() * f;
    EXPECT_GE(count_near(s.img, x, y, kSaturated, 1), 3) << "at fraction " << f;
  }
  const json* idle = find_link(s.layout, viz_test::kIdleLink);
  ASSERT_NE(idle, nullptr);
  EXPECT_EQ((*idle)["utilization"].get<double>(), 0);
  EXPECT_EQ(color_of((*idle)["color"]), kIdle);
  const float ix = ((*idle)["p0"][0].get<float>() + (*idle)["p1"][0].get<float>()) / 2;
  const float iy = ((*idle)["p0"][1].get<float>() + (*idle)["p1"][1].get<float>()) / 2;
  EXPECT_GE(count_near(s.img, ix, iy, kIdle, 1), 3);
  EXPECT_EQ(count_near(s.img, ix, iy, kSaturated, 2), 0);
  // The reverse direction of the busy link (nvs0 -> gpu0) is idle and drawn apart from it.
  const json* rev = find_link(s.layout, 1);
  ASSERT_NE(rev, nullptr);
  EXPECT_EQ(color_of((*rev)["color"]), kIdle);
  const float rx = ((*rev)["p0"][0].get<float>() + (*rev)["p1"][0].get<float>()) / 2;
  const float ry = ((*rev)["p0"][1].get<float>() + (*rev)["p1"][1].get<float>()) / 2;
  EXPECT_GE(count_near(s.img, rx, ry, kIdle, 1), 3);
}

// A degraded fabric (cclab sim --degrade/--fail: trace::Link::degraded): the degraded link is drawn dashed
// in the degraded colour; the failed one in the failed colour, dim before its time.
TEST(Screenshot, DegradedAndFailedLinks) {
  trace::Trace t = viz_test::small_trace();
  t.links[viz_test::kIdleLink].degraded = 0.5;
  t.links[viz_test::kIdleLink].degraded_at_us = 10;
  t.links[3].degraded = 0;
  t.links[3].degraded_at_us = 50;
  const std::string tr = write_synthetic(t, "degraded.cctrace");
  // Pixels of colour c along a link's drawn segment.
  const auto along = [](const Shot& s, int link, Color c) {
    const json* l = find_link(s.layout, link);
    if (l == nullptr) return -1;
    int n = 0;
    for (int i = 1; i < 40; ++i) {
      const float f = i / 40.0f;
      n += count_near(s.img, (*l)["p0"][0].get<float>() * (1 - f) + (*l)["p1"][0].get<float>() * f,
                      (*l)["p0"][1].get<float>() * (1 - f) + (*l)["p1"][1].get<float>() * f, c, 1);
    }
    return n;
  };
  const Shot before = shoot(tr, {"--at", "40"}), after = shoot(tr, {"--at", "60"});
  EXPECT_GE(along(before, viz_test::kIdleLink, kDegraded), 20);
  EXPECT_EQ(along(before, 3, kFailed), 0) << "dim before its time";
  EXPECT_GE(along(before, 3, dim(kFailed, 0.45f)), 20);
  EXPECT_GE(along(after, 3, kFailed), 20);
  EXPECT_EQ(along(after, viz_test::kBusyLink, kDegraded), 0) << "a healthy link is not dashed";
  EXPECT_EQ(along(after, viz_test::kBusyLink, kFailed), 0);
}

TEST(Screenshot, LinkNotRedOutsideItsBusyInterval) {
  const std::string tr = write_synthetic(viz_test::small_trace(), "small2.cctrace");
  for (const char* at : {"10", "75"}) {
    const Shot s = shoot(tr, {"--at", at});
    const json* busy = find_link(s.layout, viz_test::kBusyLink);
    ASSERT_NE(busy, nullptr);
    EXPECT_LT((*busy)["utilization"].get<double>(), 0.01) << at;
    EXPECT_NE(color_of((*busy)["color"]), kSaturated);
    const float bx = ((*busy)["p0"][0].get<float>() + (*busy)["p1"][0].get<float>()) / 2;
    const float by = ((*busy)["p0"][1].get<float>() + (*busy)["p1"][1].get<float>()) / 2;
    EXPECT_EQ(count_near(s.img, bx, by, kSaturated, 2, 30), 0) << "at " << at;
    EXPECT_GE(count_near(s.img, bx, by, kIdle, 1), 3) << "at " << at;
  }
}

TEST(Screenshot, AtAPercentage) {
  const std::string tr = write_synthetic(viz_test::small_trace(), "small6.cctrace");
  const Shot s = shoot(tr, {"--at", "40%"}, 640, 400);
  EXPECT_EQ(s.img.w, 640);
  EXPECT_EQ(s.img.h, 400);
  EXPECT_DOUBLE_EQ(s.layout["at_us"].get<double>(), 40);  // the trace spans 0 .. 100 us
  const json* busy = find_link(s.layout, viz_test::kBusyLink);
  ASSERT_NE(busy, nullptr);
  EXPECT_EQ(color_of((*busy)["color"]), kSaturated);
}

// A headless run says what it wrote (students ran it, saw nothing and could not tell it had worked).
TEST(Screenshot, SaysWhatItWrote) {
  const std::string tr = write_synthetic(viz_test::small_trace(), "small_said.cctrace");
  const std::string png = tmp_dir() + "/said.png";
  testing::internal::CaptureStdout();
  const int rc = viz_main({tr, "--screenshot", png, "--at", "40%", "--view", "timeline", "--size", "640x400"});
  const std::string out = testing::internal::GetCapturedStdout();
  ASSERT_EQ(rc, 0);
  EXPECT_EQ(out, "wrote " + png + " (640 x 400 pixels, the timeline view at 40.000 us)\n");
  std::ifstream written(png, std::ios::binary);
  EXPECT_TRUE(written.good()) << png;
}

TEST(Screenshot, NvlsSwitchStepsMoveThroughTheSwitch) {
  // At 3 us every rank's head step is in its first half: its slot goes up from every GPU (load-reduce)
  // and from the head (the multicast's source) - 4 x (4 + 1) chunks on the GPU -> switch links; at 7 us
  // in its second half, down again. The switch node says what it does; every NVLink is busy.
  const std::string tr = write_synthetic(viz_test::nvls_trace(), "nvls.cctrace");
  for (double at : {3.0, 7.0}) {
    const Shot s = shoot(tr, {"--at", std::to_string(at)});
    ASSERT_EQ(s.layout["chunks"].size(), 20u) << at;
    std::string activity;
    for (const json& n : s.layout["nodes"])
      if (n.value("kind", "") == "nvswitch") activity = n.value("activity", "");
    EXPECT_EQ(activity.rfind("NVLS: 4 reductions, 4 multicasts", 0), 0u) << activity;
    int busy = 0;
    for (const json& l : s.layout["links"]) busy += l["utilization"].get<double>() > 0.5;
    EXPECT_EQ(busy, 2 * viz_test::kGpus) << at;
    // Chunks sit on the links of the phase: up (gpu -> switch: the switch is above) first, then down.
    for (const json& c : s.layout["chunks"]) {
      bool on_phase_link = false;
      for (const json& l : s.layout["links"]) {
        const bool up = l["index"].get<int>() % 2 == 0;  // synth.h: link 2i gpu i -> switch, 2i+1 back
        if (up != (at < 5)) continue;
        const float x0 = l["p0"][0].get<float>(), x1 = l["p1"][0].get<float>();
        const float y0 = l["p0"][1].get<float>(), y1 = l["p1"][1].get<float>();
        const float x = c["pos"][0].get<float>(), y = c["pos"][1].get<float>();
        if (x >= std::min(x0, x1) - 2 && x <= std::max(x0, x1) + 2 && y >= std::min(y0, y1) - 2 &&
            y <= std::max(y0, y1) + 2)
          on_phase_link = true;
      }
      EXPECT_TRUE(on_phase_link) << "a chunk off its phase's links at " << at;
    }
  }
  // Between head steps (at 9 us: gathers) the switch is idle and nothing is in flight on its links.
  const Shot idle = shoot(tr, {"--at", "9"});
  EXPECT_EQ(idle.layout["chunks"].size(), 0u);
}

TEST(Screenshot, ChannelsViewRingArrows) {
  const std::string tr = write_synthetic(viz_test::small_trace(), "small3.cctrace");
  // At 45 us every rank's step 4 is moving: all four ring arrows are active (bright channel colour).
  const Shot s = shoot(tr, {"--at", "45", "--view", "channels"});
  EXPECT_EQ(s.layout["view"], "channels");
  ASSERT_EQ(s.layout["arrows"].size(), 4u);
  for (const json& a : s.layout["arrows"]) {
    EXPECT_TRUE(a["active"].get<bool>());
    EXPECT_EQ(color_of(a["color"]), channel_color(0));
    const float x = (a["p0"][0].get<float>() + a["p1"][0].get<float>()) / 2;
    const float y = (a["p0"][1].get<float>() + a["p1"][1].get<float>()) / 2;
    EXPECT_GE(count_near(s.img, x, y, channel_color(0), 1, 6), 3) << "arrow " << a["from"] << "->" << a["to"];
  }
  // Ring order 0 -> 1 -> 2 -> 3 -> 0.
  EXPECT_EQ(s.layout["arrows"][0]["from"], 0);
  EXPECT_EQ(s.layout["arrows"][0]["to"], 1);
  EXPECT_EQ(s.layout["arrows"][3]["to"], 0);
  // At 41 (waiting, nothing moves) the arrows are dim: not the bright colour.
  const Shot d = shoot(tr, {"--at", "41", "--view", "channels"});
  ASSERT_EQ(d.layout["arrows"].size(), 4u);
  for (const json& a : d.layout["arrows"]) {
    EXPECT_FALSE(a["active"].get<bool>());
    const float x = (a["p0"][0].get<float>() + a["p1"][0].get<float>()) / 2;
    const float y = (a["p0"][1].get<float>() + a["p1"][1].get<float>()) / 2;
    EXPECT_EQ(count_near(d.img, x, y, channel_color(0), 2, 6), 0);
    EXPECT_GE(count_near(d.img, x, y, color_of(a["color"]), 1, 6), 2);
  }
}

TEST(Screenshot, LinksViewHeatmap) {
  const std::string tr = write_synthetic(viz_test::small_trace(), "small4.cctrace");
  const Shot s = shoot(tr, {"--at", "30", "--view", "links"});
  EXPECT_EQ(s.layout["view"], "links");
  ASSERT_TRUE(s.layout.contains("heatmap"));
  const json& h = s.layout["heatmap"];
  const float x0 = h["rect"][0].get<float>(), x1 = h["rect"][2].get<float>();
  const double t0 = h["t0_us"].get<double>(), t1 = h["t1_us"].get<double>();
  auto x_of = [&](double t) { return x0 + static_cast<float>((t - t0) / (t1 - t0)) * (x1 - x0); };
  const json* row = nullptr;
  for (const json& r : h["rows"])
    if (r["link"].get<int>() == viz_test::kBusyLink) row = &r;
  ASSERT_NE(row, nullptr);
  const float y = ((*row)["y0"].get<float>() + (*row)["y1"].get<float>()) / 2;
  // Busy column (45 us; the cursor is at 30) saturated; before 20 us the cell is empty (dark).
  EXPECT_GE(count_near(s.img, x_of(45), y, kSaturated, 1), 9);
  EXPECT_GE(count_near(s.img, x_of(10), y, kHeatEmpty, 1), 9);
  EXPECT_EQ(count_near(s.img, x_of(70), y, kSaturated, 1), 0);
  // The other row (link 2 at 40%) is neither empty nor red.
  for (const json& r : h["rows"]) {
    if (r["link"].get<int>() != 2) continue;
    const float y2 = (r["y0"].get<float>() + r["y1"].get<float>()) / 2;
    const Color c = utilization_color(0.4);
    EXPECT_GE(count_near(s.img, x_of(45), y2, c, 1), 9);
  }
  // The cursor: a white line at 30 us.
  EXPECT_GE(count_near(s.img, x_of(30), y, rgba(255, 255, 255), 1, 40), 1);
}

TEST(Screenshot, EveryViewRendersAMultiMachineTrace) {
  // A larger synthetic: 4 machines of the small trace's shape joined by a leaf switch.
  trace::Trace t = viz_test::small_trace();
  trace::Trace big;
  big.meta = t.meta;
  big.meta.machines = 4;
  big.meta.nranks = 16;
  for (int m = 0; m < 4; ++m) {
    const int base = static_cast<int>(big.nodes.size());
    const int lbase = static_cast<int>(big.links.size());
    for (trace::Node n : t.nodes) {
      n.name = "m" + std::to_string(m) + n.name.substr(2);
      n.machine = m;
      if (n.rank >= 0) n.rank += 4 * m;
      big.nodes.push_back(n);
    }
    for (trace::Link l : t.links) {
      l.from += base;
      l.to += base;
      l.reverse += lbase;
      big.links.push_back(l);
    }
  }
  trace::Node leaf;
  leaf.name = "fabric.leaf.r0.0";
  leaf.kind = "switch";
  leaf.machine = -1;
  big.nodes.push_back(leaf);
  const int leaf_index = static_cast<int>(big.nodes.size()) - 1;
  for (int m = 0; m < 4; ++m) {
    trace::Link l;
    l.from = m * 5 + 4;
    l.to = leaf_index;
    l.kind = "net";
    l.gbs = 50;
    big.links.push_back(l);
    std::swap(l.from, l.to);
    big.links.push_back(l);
  }
  for (int m = 0; m < 4; ++m)
    for (const trace::Event& e0 : t.events) {
      trace::Event e = e0;
      e.rank += 4 * m;
      e.send_peer = e.send_peer >= 0 ? e.send_peer + 4 * m : -1;
      e.recv_peer = e.recv_peer >= 0 ? e.recv_peer + 4 * m : -1;
      e.route = -1;
      big.events.push_back(e);
    }
  trace::sort_events(&big.events);
  big.ops = t.ops;
  trace::Channel c;
  for (int r = 0; r < 16; ++r) c.ring.push_back(r);
  big.channels.push_back(c);
  trace::compute_link_load(&big);
  const std::string tr = write_synthetic(big, "big.cctrace");
  for (const char* v : {"topology", "channels", "links", "timeline"}) {
    const Shot s = shoot(tr, {"--at", "45", "--view", v}, 1600, 1000);
    EXPECT_EQ(s.layout["view"], v);
    EXPECT_EQ(s.img.w, 1600);
  }
  const Shot topo = shoot(tr, {"--at", "45"}, 1600, 1000);
  EXPECT_EQ(topo.layout["machines"].size(), 4u);
  EXPECT_EQ(topo.layout["nodes"].size(), big.nodes.size());
}

TEST(Screenshot, SparseTracesRenderEveryView) {
  // Topology only (no events, ops or load), and events only (no topology, routes or channels).
  trace::Trace topo_only = viz_test::small_trace(false);
  topo_only.ops.clear();
  topo_only.load = trace::LinkLoad();
  trace::Trace events_only = viz_test::small_trace();
  events_only.nodes.clear();
  events_only.links.clear();
  events_only.routes.clear();
  events_only.channels.clear();
  events_only.load = trace::LinkLoad();
  for (trace::Event& e : events_only.events) e.route = -1;
  const std::string a = write_synthetic(topo_only, "topo_only.cctrace");
  const std::string b = write_synthetic(events_only, "events_only.cctrace");
  for (const std::string& tr : {a, b})
    for (const char* v : {"topology", "channels", "links", "timeline", "curves"}) {
      const Shot s = shoot(tr, {"--view", v, "--at", "50%"}, 800, 500);
      EXPECT_EQ(s.layout["view"], v) << tr;
    }
}

TEST(Screenshot, CurvesView) {
  const std::string csv = tmp_dir() + "/curve.csv";
  std::ofstream(csv) << "bytes,count,type,op,root,time_us,algbw,busbw,wrong,algo,proto,nchannels,level,predicted_us,slices\n"
                        "1024,256,float,sum,-1,10,0.1,0.2,-1,Ring,LL,2,step,9,10\n"
                        "1048576,262144,float,sum,-1,30,34.9,61.2,-1,Ring,Simple,8,step,28,100\n";
  const std::string tr = write_synthetic(viz_test::small_trace(), "small5.cctrace");
  const Shot s = shoot(tr, {"--view", "curves", "--curves", csv});
  EXPECT_EQ(s.layout["view"], "curves");
  // Curves alone, without a trace.
  const std::string png = tmp_dir() + "/curves_only.png";
  EXPECT_EQ(viz_main({"--curves", csv, "--screenshot", png}), 0);
}

// The doctor's report (a STUK section): from its time on, the topology view outlines the waiting ranks
// and the rank they wait for, draws an arrow from each waiting rank to its peer, and the layout says so;
// before it, nothing is marked.
TEST(Screenshot, StuckRanksAndTheirWaits) {
  trace::Trace t = viz_test::small_trace();
  t.stuck.push_back(viz_test::stuck_report(70));
  const std::string tr = write_synthetic(t, "stuck.cctrace");
  const Shot before = shoot(tr, {"--at", "30"});
  EXPECT_EQ(before.layout["stuck"]["report"], -1);
  EXPECT_TRUE(before.layout["stuck"]["ranks"].empty());
  EXPECT_TRUE(before.layout["stuck"]["waits"].empty());

  const Shot s = shoot(tr, {"--at", "100%"});
  const json& st = s.layout["stuck"];
  EXPECT_EQ(st["report"], 0);
  EXPECT_EQ(st["summary"], t.stuck[0].summary);
  ASSERT_EQ(st["ranks"].size(), 4u);
  for (const json& r : st["ranks"]) {
    const int rank = r["rank"].get<int>();
    EXPECT_EQ(r["waiting"].get<bool>(), rank != 3) << rank;
    EXPECT_EQ(r["culprit"].get<bool>(), rank == 3) << rank;
    const Color c = rank == 3 ? kStuckCulprit : kStuckWaiting;
    EXPECT_EQ(color_of(r["color"]), c);
    // The outline, 4 px outside the node's box, left edge at mid-height.
    const json& rc = r["rect"];
    const float x = rc[0].get<float>() - 4, y = (rc[1].get<float>() + rc[3].get<float>()) / 2;
    EXPECT_GE(count_near(s.img, x, y, c, 1, 12), 2) << "outline of rank " << rank << " at " << x << "," << y;
  }
  ASSERT_EQ(st["waits"].size(), 3u);
  const json& w0 = st["waits"][0];
  EXPECT_EQ(w0["from"], 0);
  EXPECT_EQ(w0["to"], 3);
  EXPECT_EQ(w0["label"], "data ch 0 step 4");
  for (const json& w : st["waits"]) {
    // The arrow's curve near its start (its label sits over the middle of a short one).
    int best = 0;
    for (float f : {0.1f, 0.15f, 0.2f, 0.25f}) {
      auto at = [&](int k) {
        return (1 - f) * (1 - f) * w["p0"][k].get<float>() + 2 * f * (1 - f) * w["control"][k].get<float>() +
               f * f * w["p1"][k].get<float>();
      };
      best = std::max(best, count_near(s.img, at(0), at(1), kStuckArrow, 2, 12));
    }
    EXPECT_GE(best, 3) << "arrow " << w["from"] << "->" << w["to"];
  }
}

}  // namespace
}  // namespace viz
}  // namespace cclab
