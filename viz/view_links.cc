// viz/view_links.cc - the links view: the links that carried traffic (busiest first, selectable), a
// bandwidth strip chart per selected link, and a link x time heatmap of utilisation with the cursor.
#include <imgui.h>

#include <algorithm>
#include <cmath>

#include "viz/app.h"
#include "viz/colors.h"
#include "viz/draw_util.h"

namespace cclab {
namespace viz {
namespace {

constexpr float kListWidth = 330;
constexpr float kLabelWidth = 190;

void select_busiest(VizState* s) {
  const std::vector<int>& busiest = s->load_index.busiest();
  s->link_selected.assign(s->trace().links.size(), 0);
  for (int i = 0; i < s->busiest_n && i < static_cast<int>(busiest.size()); ++i) s->link_selected[busiest[i]] = 1;
  s->links_init = true;
}

// One strip chart: GB/s over the whole trace (max per pixel column), capacity line, cursor.
void strip_chart(VizState* s, int link, float width, float height) {
  const trace::Trace& t = s->trace();
  const trace::LinkLoad& load = s->load();
  const trace::LinkLoad::Series* series = s->load_index.series(load, link);
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 p = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton(printf_str("##strip%d", link).c_str(), ImVec2(width, height));
  const bool hovered = ImGui::IsItemHovered() && s->interactive;
  const float x0 = p.x + kLabelWidth, x1 = p.x + width, y0 = p.y + 2, y1 = p.y + height - 2;
  dl->AddRectFilled(ImVec2(x0, y0), ImVec2(x1, y1), kPanel, 3);
  const double cap = t.links[link].gbs;
  const double peak = s->load_index.peak_gbs()[link];
  const double top = std::max(cap, peak) * 1.05;
  const double t0 = load.t0_us, t1 = load.t0_us + load.bin_us * load.bins;
  auto y_of = [&](double v) { return y1 - static_cast<float>(top > 0 ? v / top : 0) * (y1 - y0); };
  if (series && load.bins > 0) {
    const int cols = std::max(1, static_cast<int>(x1 - x0));
    for (int px = 0; px < cols; ++px) {
      const int b0 = static_cast<int>(static_cast<double>(px) / cols * load.bins);
      const int b1 = std::max(b0 + 1, static_cast<int>(static_cast<double>(px + 1) / cols * load.bins));
      float v = 0;
      for (int b = b0; b < b1 && b < load.bins; ++b) v = std::max(v, series->gbs[b]);
      if (v <= 0) continue;
      const Color c = utilization_color(utilization(v, cap));
      dl->AddRectFilled(ImVec2(x0 + px, y_of(v)), ImVec2(x0 + px + 1, y1), c);
    }
  }
  if (cap > 0) {
    const float yc = y_of(cap);
    for (float x = x0; x < x1; x += 8) dl->AddLine(ImVec2(x, yc), ImVec2(std::min(x + 4, x1), yc), kTextDim);
  }
  if (t1 > t0) {
    const float cx = x0 + static_cast<float>((s->tl.t - t0) / (t1 - t0)) * (x1 - x0);
    if (cx >= x0 && cx <= x1) dl->AddLine(ImVec2(cx, y0), ImVec2(cx, y1), kCursor, 1);
  }
  const double now = s->load_index.gbs_at(load, link, s->tl.t);
  const std::string name = link_name(t, link);
  dl->PushClipRect(p, ImVec2(x0 - 6, p.y + height), true);
  dl->AddText(ImVec2(p.x, p.y + 2), kText, name.c_str());
  dl->PopClipRect();
  const std::string info = printf_str("%.1f / %.0f GB/s  %3.0f%%", now, cap, 100 * utilization(now, cap));
  dl->AddText(ImVec2(p.x, p.y + 4 + ImGui::GetTextLineHeight()), utilization_color(utilization(now, cap)),
              info.c_str());
  const std::string sub = printf_str("%s, peak %.1f GB/s", t.links[link].kind.c_str(), peak);
  dl->AddText(ImVec2(p.x, p.y + 6 + 2 * ImGui::GetTextLineHeight()), kTextDim, sub.c_str());
  if (hovered) {
    const float mx = ImGui::GetIO().MousePos.x;
    if (mx >= x0 && t1 > t0) {
      const double at = t0 + (mx - x0) / (x1 - x0) * (t1 - t0);
      ImGui::SetTooltip("%s\n%s: %.2f GB/s", name.c_str(), format_time(at).c_str(),
                        s->load_index.gbs_at(load, link, at));
    }
    if (ImGui::IsItemClicked() && mx >= x0 && t1 > t0) s->tl.seek(t0 + (mx - x0) / (x1 - x0) * (t1 - t0));
  }
}

void heatmap(VizState* s, float width, float height) {
  const trace::Trace& t = s->trace();
  const trace::LinkLoad& load = s->load();
  std::vector<int> rows = s->load_index.busiest();
  if (s->heat_order == 1) std::sort(rows.begin(), rows.end());
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 p = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton("##heat", ImVec2(width, height));
  const bool hovered = ImGui::IsItemHovered() && s->interactive;
  const float axis_h = ImGui::GetTextLineHeight() + 8;
  const float x0 = p.x + kLabelWidth, x1 = p.x + width, y0 = p.y, y1 = p.y + height - axis_h;
  if (rows.empty() || load.bins <= 0 || !(y1 > y0 + 4)) {
    dl->AddText(p, kTextDim, "no link carried traffic");
    return;
  }
  float row_h = (y1 - y0) / rows.size();
  if (row_h < 2) {
    rows.resize(static_cast<size_t>((y1 - y0) / 2));
    row_h = 2;
  }
  row_h = std::min(row_h, 18.0f);
  const double t0 = load.t0_us, t1 = load.t0_us + load.bin_us * load.bins;
  DrawnHeatmap& dh = s->drawn.heatmap;
  dh.present = true;
  dh.rect = Rect(x0, y0, x1, y0 + row_h * rows.size());
  dh.t0_us = t0;
  dh.t1_us = t1;
  const int cols = std::max(1, static_cast<int>(x1 - x0));
  const bool per_bin = load.bins <= cols;
  for (size_t r = 0; r < rows.size(); ++r) {
    const int link = rows[r];
    const trace::LinkLoad::Series* series = s->load_index.series(load, link);
    const float ya = y0 + r * row_h, yb = ya + row_h - (row_h >= 5 ? 1 : 0);
    dh.rows.push_back({link, ya, yb});
    const double cap = t.links[link].gbs;
    if (!series) continue;
    if (per_bin) {
      for (int b = 0; b < load.bins; ++b) {
        const float xa = x0 + static_cast<float>(b) / load.bins * (x1 - x0);
        const float xb = x0 + static_cast<float>(b + 1) / load.bins * (x1 - x0);
        dl->AddRectFilled(ImVec2(xa, ya), ImVec2(xb, yb), heat_color(utilization(series->gbs[b], cap)));
      }
    } else {
      for (int px = 0; px < cols; ++px) {
        const int b0 = static_cast<int>(static_cast<double>(px) / cols * load.bins);
        const int b1 = std::max(b0 + 1, static_cast<int>(static_cast<double>(px + 1) / cols * load.bins));
        float v = 0;
        for (int b = b0; b < b1 && b < load.bins; ++b) v = std::max(v, series->gbs[b]);
        dl->AddRectFilled(ImVec2(x0 + px, ya), ImVec2(x0 + px + 1, yb), heat_color(utilization(v, cap)));
      }
    }
    if (row_h >= ImGui::GetTextLineHeight() - 1) {
      dl->PushClipRect(ImVec2(p.x, ya), ImVec2(x0 - 4, yb + 1), true);
      dl->AddText(ImVec2(p.x, ya + (row_h - ImGui::GetTextLineHeight()) * 0.5f), kTextDim, link_name(t, link).c_str());
      dl->PopClipRect();
    }
  }
  const float yend = y0 + row_h * rows.size();
  draw_time_axis(dl, x0, x1, yend + 2, t0, t1);
  const float cx = x0 + static_cast<float>((s->tl.t - t0) / (t1 - t0)) * (x1 - x0);
  if (cx >= x0 && cx <= x1) dl->AddLine(ImVec2(cx, y0), ImVec2(cx, yend), kCursor, 2);
  if (hovered) {
    const ImVec2 m = ImGui::GetIO().MousePos;
    const int r = static_cast<int>((m.y - y0) / row_h);
    if (m.x >= x0 && r >= 0 && r < static_cast<int>(rows.size())) {
      const double at = t0 + (m.x - x0) / (x1 - x0) * (t1 - t0);
      const double gbs = s->load_index.gbs_at(load, rows[r], at);
      ImGui::SetTooltip("%s\n%s: %.2f GB/s (%.0f%%)", link_name(t, rows[r]).c_str(), format_time(at).c_str(), gbs,
                        100 * utilization(gbs, t.links[rows[r]].gbs));
      if (ImGui::IsItemClicked()) s->tl.seek(at);
    }
  }
}

}  // namespace

void draw_links_view(VizState* s) {
  const trace::Trace& t = s->trace();
  const std::vector<int>& busiest = s->load_index.busiest();
  if (!s->links_init || s->link_selected.size() != t.links.size()) select_busiest(s);
  const ImVec2 avail = ImGui::GetContentRegionAvail();

  // Left: the list.
  ImGui::BeginChild("link_list", ImVec2(kListWidth, avail.y), false);
  ImGui::TextUnformatted("Links with traffic");
  ImGui::SameLine();
  help_marker(
      "Every link direction that carried bytes, busiest (most GB over the trace) first. Ticked links get a "
      "strip chart: GB/s over time (each pixel column the largest bin it covers), the dashed line at the "
      "link's capacity, bars coloured by utilisation, the white line at the cursor. Click a chart or the "
      "heatmap to move the cursor there.");
  ImGui::SetNextItemWidth(140);
  if (ImGui::SliderInt("busiest N", &s->busiest_n, 1, 64)) select_busiest(s);
  ImGui::SameLine();
  if (ImGui::SmallButton("none")) s->link_selected.assign(t.links.size(), 0);
  const ImGuiTableFlags tf = ImGuiTableFlags_RowBg | ImGuiTableFlags_ScrollY | ImGuiTableFlags_SizingFixedFit |
                             ImGuiTableFlags_BordersInnerV;
  if (ImGui::BeginTable("links", 3, tf)) {
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("link", ImGuiTableColumnFlags_WidthStretch);
    ImGui::TableSetupColumn("GB");
    ImGui::TableSetupColumn("peak %");
    ImGui::TableHeadersRow();
    ImGuiListClipper clip;
    clip.Begin(static_cast<int>(busiest.size()));
    while (clip.Step()) {
      for (int i = clip.DisplayStart; i < clip.DisplayEnd; ++i) {
        const int l = busiest[i];
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        bool on = s->link_selected[l] != 0;
        if (ImGui::Checkbox(printf_str("%s##l%d", link_name(t, l).c_str(), l).c_str(), &on))
          s->link_selected[l] = on ? 1 : 0;
        ImGui::TableNextColumn();
        ImGui::Text("%.3f", s->load_index.total_gb()[l]);
        ImGui::TableNextColumn();
        const double u = utilization(s->load_index.peak_gbs()[l], t.links[l].gbs);
        const Color c = utilization_color(u);
        ImGui::TextColored(ImVec4(red_of(c) / 255.0f, green_of(c) / 255.0f, blue_of(c) / 255.0f, 1), "%.0f", 100 * u);
      }
    }
    ImGui::EndTable();
  }
  ImGui::EndChild();
  ImGui::SameLine();

  // Right: strip charts above, heatmap below.
  ImGui::BeginChild("link_charts", ImVec2(0, avail.y), false, ImGuiWindowFlags_NoScrollbar);
  const float w = ImGui::GetContentRegionAvail().x;
  const float strip_h = 3 * ImGui::GetTextLineHeight() + 12;
  int nsel = 0;
  for (char c : s->link_selected) nsel += c != 0;
  const float charts_h = std::min(avail.y * 0.45f, std::max(strip_h + 28, nsel * (strip_h + 4) + 28));
  ImGui::TextUnformatted("Bandwidth over time");
  ImGui::SameLine();
  ImGui::TextDisabled("(%d selected)", nsel);
  ImGui::BeginChild("strips", ImVec2(w, charts_h - ImGui::GetTextLineHeightWithSpacing()), false);
  for (int l : busiest)
    if (s->link_selected[l]) strip_chart(s, l, ImGui::GetContentRegionAvail().x, strip_h);
  if (nsel == 0) ImGui::TextDisabled("tick links on the left");
  ImGui::EndChild();
  ImGui::Separator();
  ImGui::TextUnformatted("Utilisation heatmap");
  ImGui::SameLine();
  help_marker(
      "Rows: links that carried traffic; columns: time bins of the trace's LOAD section (several bins per "
      "pixel: their maximum); colour: utilisation, the topology view's ramp (dark: idle). The white line is "
      "the cursor.");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(130);
  const char* orders[] = {"busiest first", "link index"};
  ImGui::Combo("##order", &s->heat_order, orders, 2);
  ImGui::SameLine();
  utilization_legend(220);
  const ImVec2 rest = ImGui::GetContentRegionAvail();
  heatmap(s, rest.x, std::max(40.0f, rest.y));
  ImGui::EndChild();
}

}  // namespace viz
}  // namespace cclab
