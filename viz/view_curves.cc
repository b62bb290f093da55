// viz/view_curves.cc - the curves view: busbw against size (log2 x axis) for every --curves file, with
// a legend, and the trace's own collectives as points.
#include <imgui.h>

#include <algorithm>
#include <cmath>

#include "viz/app.h"
#include "viz/colors.h"
#include "viz/draw_util.h"

namespace cclab {
namespace viz {
namespace {

std::string size_label(double bytes) {
  const char* units[] = {"", "K", "M", "G", "T"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  return printf_str("%.0f%s", bytes, units[u]);
}

}  // namespace

void draw_curves_view(VizState* s) {
  const trace::Trace& t = s->trace();
  const int n = std::max(t.meta.nranks, s->index.nranks());
  if (s->curves.empty() && t.ops.empty()) {
    ImGui::TextDisabled("No curves: load results with --curves FILE (cclab sim --csv/--json output, or the table "
                        "cclab perf / cclab sim print), repeatable.");
    return;
  }
  // Data range.
  double xmin = 1e300, xmax = 0, ymax = 0;
  auto take = [&](double x, double y) {
    if (!(x > 0)) return;
    xmin = std::min(xmin, x);
    xmax = std::max(xmax, x);
    ymax = std::max(ymax, y);
  };
  for (const Curve& c : s->curves)
    for (const CurvePoint& p : c.points) take(p.bytes, p.busbw);
  for (const trace::Op& o : t.ops) take(static_cast<double>(o.bytes), op_bandwidth(o, n).busbw);
  if (!(xmax > 0)) {
    ImGui::TextDisabled("no points with a size > 0");
    return;
  }
  // Whole powers of two, plus half a step of margin on each side so points at the ends stay visible.
  double lx0 = std::floor(std::log2(xmin)) - 0.5, lx1 = std::ceil(std::log2(xmax)) + 0.5;
  const double ystep = nice_step(std::max(1e-9, ymax * 1.08), 6);
  const double ytop = std::max(ystep, std::ceil(ymax * 1.08 / ystep) * ystep);

  const ImVec2 avail = ImGui::GetContentRegionAvail();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 p = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton("##curves", avail);
  const bool hovered = ImGui::IsItemHovered() && s->interactive;
  const float lh = ImGui::GetTextLineHeight();
  const float x0 = p.x + 70, x1 = p.x + avail.x - 20, y0 = p.y + 30, y1 = p.y + avail.y - 2 * lh - 14;
  dl->AddRectFilled(ImVec2(x0, y0), ImVec2(x1, y1), kPanel);
  auto X = [&](double b) { return x0 + static_cast<float>((std::log2(b) - lx0) / (lx1 - lx0)) * (x1 - x0); };
  auto Y = [&](double v) { return y1 - static_cast<float>(v / ytop) * (y1 - y0); };
  // Grid and axes.
  const int every = std::max(1, static_cast<int>(std::ceil((lx1 - lx0) / ((x1 - x0) / 60))));
  const int k0 = static_cast<int>(std::ceil(lx0)), k1 = static_cast<int>(std::floor(lx1));
  for (int k = k0; k <= k1; ++k) {
    const float x = X(std::pow(2.0, k));
    dl->AddLine(ImVec2(x, y0), ImVec2(x, y1), kGrid);
    if ((k - k0) % every == 0) text_centered(dl, ImVec2(x, y1 + 4 + lh * 0.5f), kTextDim, size_label(std::pow(2.0, k)).c_str());
  }
  for (double v = 0; v <= ytop + ystep * 1e-6; v += ystep) {
    const float y = Y(v);
    dl->AddLine(ImVec2(x0, y), ImVec2(x1, y), kGrid);
    const std::string l = printf_str("%g", v);
    dl->AddText(ImVec2(x0 - 8 - ImGui::CalcTextSize(l.c_str()).x, y - lh * 0.5f), kTextDim, l.c_str());
  }
  text_centered(dl, ImVec2((x0 + x1) * 0.5f, y1 + 6 + 1.5f * lh), kText, "size (bytes, log scale)");
  dl->AddText(ImVec2(p.x, p.y + 4), kText, "busbw (GB/s)");
  dl->AddRect(ImVec2(x0, y0), ImVec2(x1, y1), kMachineBorder);

  // Curves.
  struct Near {
    float d = 1e9f;
    std::string text;
  } nearest;
  const ImVec2 m = ImGui::GetIO().MousePos;
  for (size_t i = 0; i < s->curves.size(); ++i) {
    const Curve& c = s->curves[i];
    const Color col = channel_color(static_cast<int>(i));
    ImVec2 prev;
    bool have = false;
    for (const CurvePoint& q : c.points) {
      if (!(q.bytes > 0)) continue;
      const ImVec2 pt(X(q.bytes), Y(q.busbw));
      if (have) dl->AddLine(prev, pt, col, 2.0f);
      dl->AddCircleFilled(pt, 3.5f, col, 12);
      prev = pt;
      have = true;
      if (hovered) {
        const float d = std::hypot(m.x - pt.x, m.y - pt.y);
        if (d < 12 && d < nearest.d) {
          nearest.d = d;
          nearest.text = printf_str("%s\nsize %s (%.0f B)\nbusbw %.2f GB/s, algbw %.2f GB/s, time %s", c.label.c_str(),
                                    format_bytes(q.bytes).c_str(), q.bytes, q.busbw, q.algbw,
                                    format_time(q.time_us).c_str());
        }
      }
    }
  }
  // The trace's collectives.
  for (const trace::Op& o : t.ops) {
    if (o.bytes == 0) continue;
    const OpBandwidth bw = op_bandwidth(o, n);
    const ImVec2 pt(X(static_cast<double>(o.bytes)), Y(bw.busbw));
    dl->AddQuadFilled(ImVec2(pt.x, pt.y - 6), ImVec2(pt.x + 6, pt.y), ImVec2(pt.x, pt.y + 6), ImVec2(pt.x - 6, pt.y),
                      kCursor);
    if (hovered) {
      const float d = std::hypot(m.x - pt.x, m.y - pt.y);
      if (d < 12 && d < nearest.d) {
        nearest.d = d;
        nearest.text = printf_str("this trace: %s\nbusbw %.2f GB/s, algbw %.2f GB/s, time %s", op_label(o).c_str(),
                                  bw.busbw, bw.algbw, format_time(bw.time_us).c_str());
      }
    }
  }
  // Legend.
  float lw = 0;
  for (const Curve& c : s->curves) lw = std::max(lw, ImGui::CalcTextSize(c.label.c_str()).x);
  lw = std::max(lw, ImGui::CalcTextSize("this trace's collectives").x) + 34;
  const int entries = static_cast<int>(s->curves.size()) + (t.ops.empty() ? 0 : 1);
  const ImVec2 lp(x0 + 10, y0 + 10);
  dl->AddRectFilled(lp, ImVec2(lp.x + lw, lp.y + entries * (lh + 4) + 8), rgba(22, 24, 30, 230), 4);
  dl->AddRect(lp, ImVec2(lp.x + lw, lp.y + entries * (lh + 4) + 8), kGrid, 4);
  float ly = lp.y + 6;
  for (size_t i = 0; i < s->curves.size(); ++i) {
    const Color col = channel_color(static_cast<int>(i));
    dl->AddLine(ImVec2(lp.x + 8, ly + lh * 0.5f), ImVec2(lp.x + 26, ly + lh * 0.5f), col, 2);
    dl->AddCircleFilled(ImVec2(lp.x + 17, ly + lh * 0.5f), 3.5f, col, 12);
    dl->AddText(ImVec2(lp.x + 32, ly), kText, s->curves[i].label.c_str());
    ly += lh + 4;
  }
  if (!t.ops.empty()) {
    const ImVec2 c(lp.x + 17, ly + lh * 0.5f);
    dl->AddQuadFilled(ImVec2(c.x, c.y - 5), ImVec2(c.x + 5, c.y), ImVec2(c.x, c.y + 5), ImVec2(c.x - 5, c.y), kCursor);
    dl->AddText(ImVec2(lp.x + 32, ly), kText, "this trace's collectives");
  }
  if (!nearest.text.empty()) ImGui::SetTooltip("%s", nearest.text.c_str());
}

}  // namespace viz
}  // namespace cclab
