// viz/view_topology.cc - the topology view: machines, nodes, both directions of every link coloured by
// utilisation at the cursor, chunks in flight moving along their routes (an NVLS switch step's: up to
// the NVSwitch in the step's first half, down from it in the second), what each NVSwitch is doing, and
// a legend.
#include <imgui.h>

#include <algorithm>
#include <cmath>

#include "viz/app.h"
#include "viz/colors.h"
#include "viz/draw_util.h"

namespace cclab {
namespace viz {
namespace {

constexpr float kLegendWidth = 220;

float distance_to_segment(V2 p, V2 a, V2 b) {
  const V2 d = b - a;
  const float l2 = d.x * d.x + d.y * d.y;
  float f = l2 > 0 ? ((p.x - a.x) * d.x + (p.y - a.y) * d.y) / l2 : 0;
  f = std::min(1.0f, std::max(0.0f, f));
  return length(p - lerp(a, b, f));
}

std::string node_label(const trace::Trace& t, int i) {
  const trace::Node& n = t.nodes[i];
  std::string s = short_node_name(t, i);
  const size_t dot = s.find('.');
  if (n.machine >= 0 && dot != std::string::npos && s[0] == 'm') s = s.substr(dot + 1);  // the box says which machine
  return s;
}

void legend(VizState* s, int links_busy, int chunks) {
  const trace::Trace& t = s->trace();
  ImGui::TextUnformatted("Link utilisation");
  ImGui::SameLine();
  help_marker(
      "Colour of each direction of a link: its GB/s in the trace's LOAD section at the cursor (the time bin "
      "that holds it) divided by its capacity. Grey-blue: idle (< 0.5%); blue -> green (30%) -> yellow (60%) "
      "-> orange (80%) -> red at 90% and above (saturated, RGB 230,40,40). Each full-duplex link is two "
      "parallel lines, one per direction, each offset to the right of its direction of travel.");
  utilization_legend(kLegendWidth - 16);
  swatch(kIdle, "idle");
  ImGui::Spacing();
  ImGui::TextUnformatted("Capacity (line width)");
  {
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const double caps[] = {12.5, 50, 200};
    for (double c : caps) {
      const ImVec2 p = ImGui::GetCursorScreenPos();
      const float th = link_thickness(c);
      dl->AddLine(ImVec2(p.x, p.y + 7), ImVec2(p.x + 40, p.y + 7), kIdle, th);
      ImGui::Dummy(ImVec2(44, 14));
      ImGui::SameLine();
      ImGui::Text(c >= 200 ? ">= %.0f GB/s" : "%.4g GB/s", c);
    }
  }
  ImGui::Spacing();
  ImGui::TextUnformatted("Nodes");
  const char* kinds[][2] = {{"gpu", "GPU (rN: rank)"}, {"nvswitch", "NVSwitch"}, {"pci", "PCIe switch"},
                            {"cpu", "CPU"},          {"nic", "NIC"},           {"net", "NIC port"},
                            {"switch", "network switch"}};
  for (auto& k : kinds) {
    bool present = false;
    for (const trace::Node& n : t.nodes) present = present || n.kind == k[0];
    if (present) swatch(node_color(k[0]), k[1]);
  }
  ImGui::Spacing();
  ImGui::TextUnformatted("Chunks in flight");
  ImGui::SameLine();
  help_marker(
      "A square per step whose data is moving at the cursor (data_us <= t < end_us) and that sends: it "
      "travels its route's links from sender to receiver as the step progresses, coloured by channel.");
  const int all = std::max<int>(static_cast<int>(t.channels.size()), s->index.nchannels());
  const int nch = std::min(12, all);
  for (int c = 0; c < nch; ++c) {
    if (c % 3) ImGui::SameLine();
    swatch(channel_color(c), printf_str("ch %d", c).c_str());
  }
  // The palette has 12 colours: say so when the run has more channels (16 on a multi-node DGX H100).
  if (all > 24)
    ImGui::TextDisabled("ch 12-%d: ch c mod 12's", all - 1);
  else if (all > 12)
    ImGui::TextDisabled("ch 12-%d: colours of ch 0-%d", all - 1, all - 13);
  if (!t.stuck.empty()) {
    ImGui::Spacing();
    ImGui::TextUnformatted("Stuck (the doctor)");
    ImGui::SameLine();
    help_marker(
        "The doctor's report in force at the cursor (the trace's STUK section: cclab doctor TRACE prints it). "
        "Magenta outline: a rank with a sleeping wait; orange: a rank the waits lead to that waits for nobody, "
        "or one that left its communicator or died. Each arrow goes from a waiting rank to the rank it waits "
        "for: data (the peer's tail) or FIFO credits (its head), channel and step.");
    swatch(kStuckWaiting, "waits");
    swatch(kStuckCulprit, "waited for / left / dead");
    swatch(kStuckArrow, "waits for (data/credits)");
  }
  bool degraded = false, failed = false;
  for (const trace::Link& l : t.links) {
    degraded |= l.degraded_at_us >= 0 && l.degraded > 0;
    failed |= l.degraded_at_us >= 0 && l.degraded <= 0;
  }
  if (degraded || failed) {
    ImGui::Spacing();
    ImGui::TextUnformatted("Degraded fabric");
    ImGui::SameLine();
    help_marker("Links of a degraded fabric (cclab sim --degrade / --fail): dashed, labelled with the bandwidth "
                "factor and the simulated time it applies from; dim before that time.");
    if (degraded) swatch(kDegraded, "degraded (x factor)");
    if (failed) swatch(kFailed, "failed");
  }
  ImGui::Spacing();
  ImGui::Separator();
  ImGui::TextDisabled("%d link directions busy", links_busy);
  ImGui::TextDisabled("%d chunks in flight", chunks);
}

}  // namespace

void draw_topology_view(VizState* s) {
  const trace::Trace& t = s->trace();
  if (t.nodes.empty()) {
    ImGui::TextDisabled(s->live ? "waiting for the run's topology..." : "this trace has no topology (TOPO section)");
    return;
  }
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  const V2 size(std::max(200.0f, avail.x - kLegendWidth - 8), std::max(150.0f, avail.y));
  if (s->layout_nodes != t.nodes.size() || std::fabs(s->layout_size.x - size.x) > 0.5f ||
      std::fabs(s->layout_size.y - size.y) > 0.5f) {
    s->layout = layout_topology(t, size);
    s->layout_size = size;
    s->layout_nodes = t.nodes.size();
  }
  const TopoLayout& L = s->layout;
  ImGui::BeginChild("topo_canvas", ImVec2(size.x, size.y), false, ImGuiWindowFlags_NoScrollbar);
  const ImVec2 o = ImGui::GetCursorScreenPos();
  const V2 origin(o.x, o.y);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  ImGui::InvisibleButton("##topo", ImVec2(size.x, size.y));
  const bool hovered = ImGui::IsItemHovered() && s->interactive;
  const V2 mouse = v2(ImGui::GetIO().MousePos);

  // Machine boxes and the network band.
  for (const MachineBox& m : L.machines) {
    const Rect r = m.rect.translated(origin);
    dl->AddRectFilled(iv(V2(r.x0, r.y0)), iv(V2(r.x1, r.y1)), kMachineFill, 6);
    dl->AddRect(iv(V2(r.x0, r.y0)), iv(V2(r.x1, r.y1)), kMachineBorder, 6);
    const std::string label = printf_str("machine %d", m.machine);
    const float ly = m.mirrored ? r.y1 - ImGui::GetTextLineHeight() - 2 : r.y0 + 2;
    dl->AddText(ImVec2(r.x0 + 8, ly), kTextDim, label.c_str());
    s->drawn.machines.push_back({m.machine, r});
  }
  if (!L.fabric.empty()) {
    const Rect r = L.fabric.translated(origin);
    dl->AddRectFilled(iv(V2(r.x0, r.y0)), iv(V2(r.x1, r.y1)), kFabricFill, 6);
    dl->AddText(ImVec2(r.x0 + 8, r.y0 + 2), kTextDim, "network");
  }

  // Links, idle first so that busy ones are on top.
  const trace::LinkLoad& load = s->load();
  const double now = s->tl.t;
  struct Drawn {
    int link;
    Segment seg;
    float th;
    double u, gbs;
  };
  std::vector<Drawn> lines;
  lines.reserve(t.links.size());
  int busy = 0;
  for (size_t l = 0; l < t.links.size(); ++l) {
    const trace::Link& link = t.links[l];
    const float th = link_thickness(link.gbs);
    Segment seg;
    if (!link_segment(L, link, link_offset(th), &seg)) continue;
    seg.a = seg.a + origin;
    seg.b = seg.b + origin;
    const double gbs = s->load_index.gbs_at(load, static_cast<int>(l), now);
    const double u = utilization(gbs, link.gbs);
    if (u >= kIdleBelow) ++busy;
    lines.push_back({static_cast<int>(l), seg, th, u, gbs});
  }
  std::stable_sort(lines.begin(), lines.end(), [](const Drawn& a, const Drawn& b) { return a.u < b.u; });
  int hover_link = -1;
  float hover_d = 1e9f;
  for (const Drawn& d : lines) {
    const Color c = utilization_color(d.u);
    dl->AddLine(iv(d.seg.a), iv(d.seg.b), c, d.th);
    s->drawn.links.push_back({d.link, d.seg.a, d.seg.b, d.th, c, d.u, d.gbs});
    if (hovered) {
      const float dist = distance_to_segment(mouse, d.seg.a, d.seg.b);
      if (dist < d.th * 0.5f + 3 && dist < hover_d) {
        hover_d = dist;
        hover_link = d.link;
      }
    }
  }

  // Degraded and failed links (trace::Link::degraded): dashed, with their factor at the middle (drawn
  // over the chunks, below); dim until the playback reaches the time they degrade.
  struct DegradedLabel {
    V2 mid;
    Color c;
    std::string text;
  };
  std::vector<DegradedLabel> degraded_labels;
  for (const Drawn& d : lines) {
    const trace::Link& link = t.links[d.link];
    if (link.degraded_at_us < 0) continue;
    const bool active = now >= link.degraded_at_us;
    const Color c = dim(link.degraded <= 0 ? kFailed : kDegraded, active ? 1.0f : 0.45f);
    const V2 a = d.seg.a, b = d.seg.b;
    const float len = std::sqrt((b.x - a.x) * (b.x - a.x) + (b.y - a.y) * (b.y - a.y));
    for (float x = 0; x < len; x += 9) {
      const float x1 = std::min(len, x + 5);
      dl->AddLine(iv(a + (b - a) * (x / len)), iv(a + (b - a) * (x1 / len)), c, d.th + 2);
    }
    // One label per cable: on the direction whose reverse comes later (or has none).
    if (link.reverse >= 0 && link.reverse < d.link && t.links[link.reverse].degraded_at_us >= 0) continue;
    const std::string label = link.degraded <= 0 ? printf_str("FAILED @%gus", link.degraded_at_us)
                                                 : printf_str("x%.2g @%gus", link.degraded, link.degraded_at_us);
    degraded_labels.push_back({(a + b) * 0.5f, c, label});
  }

  // Chunks in flight.
  int chunks = 0;
  auto chunk = [&](int ev, V2 p, Color c) {
    p = p + origin;
    dl->AddRectFilled(ImVec2(p.x - 4, p.y - 4), ImVec2(p.x + 4, p.y + 4), rgba(0, 0, 0, 200));
    dl->AddRectFilled(ImVec2(p.x - 3, p.y - 3), ImVec2(p.x + 3, p.y + 3), c);
    s->drawn.chunks.push_back({ev, p, c});
    ++chunks;
  };
  // NVLS: per NVSwitch node, the switch steps in flight, their load-reduces and multicast stores (an
  // AllReduce head step is both), and the slot bytes per us they move (each step's slot once).
  struct SwitchWork {
    int steps = 0, reductions = 0, multicasts = 0;
    double bytes_per_us = 0;
  };
  std::vector<SwitchWork> switch_work(t.nodes.size());
  std::vector<trace::SwitchIndex::Hop> hops;
  for (int ev : s->in_flight) {
    if (chunks >= 4000) break;
    const trace::Event& e = t.events[ev];
    const Color c = channel_color(e.channel);
    if (s->switches.is_switch_step(e)) {
      const int sw = s->switches.switch_node(e.rank);
      const double span = e.end_us - e.data_us;
      if (sw >= 0) {
        SwitchWork& w = switch_work[sw];
        ++w.steps;
        if (e.recv_peer == e.rank) ++w.reductions;
        if (e.send_peer == e.rank) ++w.multicasts;
        if (span > 0) w.bytes_per_us += static_cast<double>(e.bytes) / span;
      }
      const double f = span > 0 ? (now - e.data_us) / span : 1.0;
      const int phase = f < 0.5 ? 0 : 1;
      const float along = static_cast<float>(std::min(1.0, std::max(0.0, phase == 0 ? 2 * f : 2 * f - 1)));
      hops.clear();
      s->switches.hops(e, &hops);
      for (const trace::SwitchIndex::Hop& h : hops) {
        if (h.phase != phase || chunks >= 4000) continue;
        Segment seg;
        if (!link_segment(L, t.links[h.link], link_offset(link_thickness(t.links[h.link].gbs)), &seg)) continue;
        chunk(ev, lerp(seg.a, seg.b, along), c);
      }
      continue;
    }
    if (e.send_peer < 0) continue;
    V2 p;
    if (!chunk_position(t, L, e, now, &p)) continue;
    chunk(ev, p, c);
  }

  for (const DegradedLabel& g : degraded_labels) {
    const ImVec2 sz = ImGui::CalcTextSize(g.text.c_str());
    dl->AddRectFilled(ImVec2(g.mid.x - sz.x / 2 - 3, g.mid.y - sz.y / 2 - 1),
                      ImVec2(g.mid.x + sz.x / 2 + 3, g.mid.y + sz.y / 2 + 1), rgba(0, 0, 0, 220), 3);
    text_centered(dl, iv(g.mid), g.c, g.text.c_str());
  }

  // Nodes.
  int hover_node = -1;
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    if (L.node_rect[i].empty()) continue;
    const Rect r = L.node_rect[i].translated(origin);
    const trace::Node& n = t.nodes[i];
    const Color fill = node_color(n.kind.c_str());
    dl->AddRectFilled(ImVec2(r.x0, r.y0), ImVec2(r.x1, r.y1), fill, 4);
    dl->AddRect(ImVec2(r.x0, r.y0), ImVec2(r.x1, r.y1), mix(fill, kText, 0.45f), 4);
    std::string activity;
    if (n.kind == "nvswitch" && switch_work[i].steps > 0) {
      const SwitchWork& w = switch_work[i];
      activity = printf_str("NVLS: %d reductions, %d multicasts, %.0f GB/s", w.reductions, w.multicasts,
                            w.bytes_per_us * 1e-3);
    }
    s->drawn.nodes.push_back({static_cast<int>(i), r, activity});
    if (hovered && r.contains(mouse)) hover_node = static_cast<int>(i);
    std::string label = node_label(t, static_cast<int>(i));
    const float lh = ImGui::GetTextLineHeight();
    const bool two = n.kind == "gpu" && n.rank >= 0 && r.h() >= 2 * lh + 2;
    if (ImGui::CalcTextSize(label.c_str()).x > r.w() - 2) {
      // Too narrow: what follows the kind ("leaf r3.0" -> "r3.0"), then the device number alone.
      const size_t sp = label.find(' ');
      if (sp != std::string::npos) label = label.substr(sp + 1);
      if (ImGui::CalcTextSize(label.c_str()).x > r.w() - 2) {
        std::string digits;
        for (char ch : label)
          if ((ch >= '0' && ch <= '9') || ch == '.') digits += ch;
        label = digits;
      }
    }
    if (!activity.empty() && ImGui::CalcTextSize((label + "   " + activity).c_str()).x <= r.w() - 2)
      label += "   " + activity;
    if (ImGui::CalcTextSize(label.c_str()).x <= r.w() - 2) {
      const V2 c = r.center();
      text_centered(dl, ImVec2(c.x, two ? c.y - lh * 0.5f : c.y), kText, label.c_str());
      if (two) text_centered(dl, ImVec2(c.x, c.y + lh * 0.5f), rgba(200, 235, 205), printf_str("r%d", n.rank).c_str());
    }
  }

  // The doctor's report in force at the cursor: stuck ranks outlined, an arrow from each waiting rank to
  // the rank it waits for.
  const int report = stuck_at(t, now);
  if (report >= 0) {
    const trace::Stuck& st = t.stuck[report];
    const StuckPicture pic = stuck_picture(st);
    s->drawn.stuck_report = report;
    s->drawn.stuck_summary = st.summary;
    auto rank_rect = [&](int rank, Rect* out) {
      const int node = t.rank_node(rank);
      if (node < 0 || static_cast<size_t>(node) >= L.node_rect.size() || L.node_rect[node].empty()) return false;
      *out = L.node_rect[node].translated(origin);
      return true;
    };
    auto marked = [&](int rank, bool waiting, bool culprit) {
      Rect r;
      if (!rank_rect(rank, &r)) return;
      const Color c = culprit ? kStuckCulprit : kStuckWaiting;
      dl->AddRect(ImVec2(r.x0 - 4, r.y0 - 4), ImVec2(r.x1 + 4, r.y1 + 4), c, 6, 0, 3.5f);
      const std::string state = pic.state(rank);
      std::string tag = waiting ? "waits" : state == "left" ? "left" : state == "dead" ? "dead" : "waited for";
      const ImVec2 ts = ImGui::CalcTextSize(tag.c_str());
      const ImVec2 tp(r.center().x - ts.x * 0.5f, r.y1 + 6);
      dl->AddRectFilled(ImVec2(tp.x - 3, tp.y - 1), ImVec2(tp.x + ts.x + 3, tp.y + ts.y + 1), rgba(0, 0, 0, 190), 3);
      dl->AddText(tp, c, tag.c_str());
      s->drawn.stuck_ranks.push_back({rank, r, waiting, culprit, state, c});
    };
    for (int r : pic.waiting)
      marked(r, true, std::binary_search(pic.culprits.begin(), pic.culprits.end(), r));
    for (int r : pic.culprits)
      if (!std::binary_search(pic.waiting.begin(), pic.waiting.end(), r)) marked(r, false, true);
    for (const StuckPicture::Arrow& a : pic.arrows) {
      Rect ra, rb;
      if (!rank_rect(a.from, &ra) || !rank_rect(a.to, &rb)) continue;
      const V2 ca = ra.center(), cb = rb.center();
      const V2 d = cb - ca;
      const float len = length(d);
      if (len < 1) continue;
      // A curve bulging to the left of its direction: two ranks waiting on each other get two arcs, and an
      // arrow past the ranks between two others arcs around them.
      const V2 u = d * (1.0f / len), n(u.y, -u.x);
      const V2 ctrl = lerp(ca, cb, 0.5f) + n * std::min(0.35f * len, 110.0f);
      auto edge = [](const Rect& r, V2 from, V2 toward) {  // where the ray from the centre leaves the box
        const V2 dir = toward - from;
        const float hx = r.w() * 0.5f + 6, hy = r.h() * 0.5f + 6;
        const float tx = std::fabs(dir.x) > 1e-4f ? hx / std::fabs(dir.x) : 1e9f;
        const float ty = std::fabs(dir.y) > 1e-4f ? hy / std::fabs(dir.y) : 1e9f;
        return from + dir * std::min(1.0f, std::min(tx, ty));
      };
      const V2 p0 = edge(ra, ca, ctrl), p1 = edge(rb, cb, ctrl);
      const float head = 13;
      const V2 t1 = p1 - ctrl;
      const float tl = length(t1);
      const V2 tu = tl > 0 ? t1 * (1.0f / tl) : u;
      const V2 base = p1 - tu * head;
      dl->AddBezierQuadratic(iv(p0), iv(ctrl), iv(base), kStuckArrow, 3.0f, 32);
      dl->AddTriangleFilled(iv(p1), iv(base + V2(-tu.y, tu.x) * (head * 0.55f)), iv(base - V2(-tu.y, tu.x) * (head * 0.55f)),
                            kStuckArrow);
      const V2 m = p0 * 0.25f + ctrl * 0.5f + p1 * 0.25f;  // the curve's middle
      const ImVec2 ls = ImGui::CalcTextSize(a.label.c_str());
      const ImVec2 lp(m.x - ls.x * 0.5f, m.y - ls.y * 0.5f);
      dl->AddRectFilled(ImVec2(lp.x - 4, lp.y - 2), ImVec2(lp.x + ls.x + 4, lp.y + ls.y + 2), rgba(20, 10, 20, 225), 3);
      dl->AddRect(ImVec2(lp.x - 4, lp.y - 2), ImVec2(lp.x + ls.x + 4, lp.y + ls.y + 2), kStuckArrow, 3);
      dl->AddText(lp, kText, a.label.c_str());
      s->drawn.waits.push_back({a.from, a.to, p0, ctrl, p1, a.label});
    }
  }

  if (hover_node >= 0) {
    const trace::Node& n = t.nodes[hover_node];
    ImGui::BeginTooltip();
    ImGui::Text("%s (%s)", n.name.c_str(), n.kind.c_str());
    if (n.rank >= 0) {
      ImGui::Text("rank %d at %s", n.rank, format_time(now).c_str());
      const int nch = std::max<int>(static_cast<int>(t.channels.size()), s->index.nchannels());
      for (int c = 0; c < nch && c < 16; ++c) {
        const RankStatus st = rank_status(t, s->index, s->match, n.rank, c, now);
        ImGui::TextColored(ImVec4(red_of(channel_color(c)) / 255.0f, green_of(channel_color(c)) / 255.0f,
                                  blue_of(channel_color(c)) / 255.0f, 1),
                           "ch %d", c);
        ImGui::SameLine();
        if (st.event >= 0)
          ImGui::Text("step %llu %s: %s", static_cast<unsigned long long>(st.step),
                      trace::prim_label(t.events[st.event].prim), st.text(t).c_str());
        else
          ImGui::TextDisabled("%s", st.text(t).c_str());
      }
      if (nch > 16) ImGui::TextDisabled("... %d more channels", nch - 16);
    }
    int nl = 0;
    for (const trace::Link& l : t.links) nl += l.from == hover_node;
    ImGui::TextDisabled("%d outgoing links", nl);
    ImGui::EndTooltip();
  } else if (hover_link >= 0) {
    const trace::Link& l = t.links[hover_link];
    const double gbs = s->load_index.gbs_at(load, hover_link, now);
    ImGui::BeginTooltip();
    ImGui::Text("%s", link_name(t, hover_link).c_str());
    ImGui::TextDisabled("%s, capacity %.1f GB/s, latency %.2f us", l.kind.c_str(), l.gbs, l.latency_us);
    if (l.degraded_at_us >= 0 && l.degraded <= 0)
      ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(kFailed), "failed from %.3g us (--fail)", l.degraded_at_us);
    else if (l.degraded_at_us >= 0)
      ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(kDegraded), "degraded to x%.3g from %.3g us (--degrade)",
                         l.degraded, l.degraded_at_us);
    ImGui::Text("now %.2f GB/s (%.0f%%)", gbs, 100 * utilization(gbs, l.gbs));
    if (hover_link < static_cast<int>(s->load_index.total_gb().size()))
      ImGui::TextDisabled("total %.3f GB, peak %.2f GB/s", s->load_index.total_gb()[hover_link],
                          s->load_index.peak_gbs()[hover_link]);
    ImGui::EndTooltip();
  }
  ImGui::EndChild();

  ImGui::SameLine();
  ImGui::BeginChild("topo_legend", ImVec2(kLegendWidth, size.y), false);
  legend(s, busy, chunks);
  ImGui::EndChild();
}

}  // namespace viz
}  // namespace cclab
