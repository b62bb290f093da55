// viz/draw_util.cc - see draw_util.h.
#include "viz/draw_util.h"

#include <cmath>
#include <cstdarg>
#include <cstdio>

#include "viz/colors.h"
#include "viz/model.h"

namespace cclab {
namespace viz {

std::string printf_str(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  return buf;
}

void help_marker(const char* text) {
  ImGui::TextDisabled("(?)");
  if (ImGui::IsItemHovered()) {
    ImGui::BeginTooltip();
    ImGui::PushTextWrapPos(ImGui::GetFontSize() * 40.0f);
    ImGui::TextUnformatted(text);
    ImGui::PopTextWrapPos();
    ImGui::EndTooltip();
  }
}

void draw_arrow(ImDrawList* dl, ImVec2 a, ImVec2 b, ImU32 col, float thickness, float head) {
  const float dx = b.x - a.x, dy = b.y - a.y;
  const float len = std::sqrt(dx * dx + dy * dy);
  if (!(len > 1e-3f)) return;
  const float ux = dx / len, uy = dy / len;
  head = std::min(head, len * 0.5f);
  const ImVec2 base(b.x - ux * head, b.y - uy * head);
  dl->AddLine(a, base, col, thickness);
  const float w = head * 0.55f;
  dl->AddTriangleFilled(b, ImVec2(base.x - uy * w, base.y + ux * w), ImVec2(base.x + uy * w, base.y - ux * w), col);
}

void text_centered(ImDrawList* dl, ImVec2 c, ImU32 col, const char* text) {
  const ImVec2 sz = ImGui::CalcTextSize(text);
  dl->AddText(ImVec2(std::floor(c.x - sz.x * 0.5f), std::floor(c.y - sz.y * 0.5f)), col, text);
}

double nice_step(double span, int n) {
  if (!(span > 0) || n < 1) return 1;
  const double raw = span / n;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  const double f = raw / p;
  return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
}

void draw_time_axis(ImDrawList* dl, float x0, float x1, float y, double t0, double t1) {
  if (!(t1 > t0) || !(x1 > x0)) return;
  // One unit for the whole axis (from its largest value), and as many decimals as the step needs.
  const double big = std::max(std::fabs(t0), std::fabs(t1));
  const double scale = big >= 1e6 ? 1e6 : big >= 1e3 ? 1e3 : 1;
  const char* unit = big >= 1e6 ? "s" : big >= 1e3 ? "ms" : "us";
  const float label_w = ImGui::CalcTextSize("000.000 ms").x + 16;
  const int n = std::max(2, static_cast<int>((x1 - x0) / label_w));
  const double step = nice_step(t1 - t0, n);
  const int decimals = std::max(0, std::min(6, static_cast<int>(std::ceil(-std::log10(step / scale) - 1e-9))));
  dl->AddLine(ImVec2(x0, y), ImVec2(x1, y), kGrid);
  float last_end = -1e9f;
  for (double v = std::ceil(t0 / step) * step; v <= t1 + step * 1e-9; v += step) {
    const float x = x0 + static_cast<float>((v - t0) / (t1 - t0)) * (x1 - x0);
    dl->AddLine(ImVec2(x, y), ImVec2(x, y + 4), kTextDim);
    const std::string s = printf_str("%.*f %s", decimals, v / scale, unit);
    const ImVec2 sz = ImGui::CalcTextSize(s.c_str());
    float tx = x - sz.x * 0.5f;
    if (tx < x0) tx = x0;
    if (tx + sz.x > x1) tx = x1 - sz.x;
    if (tx < last_end + 8) continue;  // would overlap the previous label
    dl->AddText(ImVec2(tx, y + 5), kTextDim, s.c_str());
    last_end = tx + sz.x;
  }
}

void utilization_legend(float width) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 p = ImGui::GetCursorScreenPos();
  const float h = 14;
  const int steps = 100;
  for (int i = 0; i < steps; ++i) {
    const double u = (i + 0.5) / steps;
    const float xa = p.x + width * i / steps, xb = p.x + width * (i + 1) / steps + 0.5f;
    dl->AddRectFilled(ImVec2(xa, p.y), ImVec2(xb, p.y + h), utilization_color(u));
  }
  dl->AddRect(ImVec2(p.x, p.y), ImVec2(p.x + width, p.y + h), kGrid);
  const double ticks[] = {0, 0.3, 0.6, 0.9};
  const char* labels[] = {"0", "30%", "60%", "90+%"};
  for (int i = 0; i < 4; ++i) {
    const float x = p.x + static_cast<float>(ticks[i]) * width;
    dl->AddLine(ImVec2(x, p.y + h), ImVec2(x, p.y + h + 3), kTextDim);
    const ImVec2 sz = ImGui::CalcTextSize(labels[i]);
    float tx = i == 0 ? x : x - sz.x * 0.5f;
    if (tx + sz.x > p.x + width) tx = p.x + width - sz.x;
    dl->AddText(ImVec2(tx, p.y + h + 3), kTextDim, labels[i]);
  }
  ImGui::Dummy(ImVec2(width, h + 3 + ImGui::GetTextLineHeight()));
}

void swatch(ImU32 col, const char* text) {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 p = ImGui::GetCursorScreenPos();
  const float s = ImGui::GetTextLineHeight();
  dl->AddRectFilled(ImVec2(p.x, p.y + 2), ImVec2(p.x + s - 2, p.y + s), col, 2);
  ImGui::Dummy(ImVec2(s, s));
  ImGui::SameLine();
  ImGui::TextUnformatted(text);
}

}  // namespace viz
}  // namespace cclab
