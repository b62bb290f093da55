// viz/draw_util.h - small ImGui drawing helpers shared by the views.
#pragma once

#include <imgui.h>

#include <string>

#include "viz/geom.h"

namespace cclab {
namespace viz {

inline ImVec2 iv(V2 p) { return ImVec2(p.x, p.y); }
inline V2 v2(ImVec2 p) { return V2(p.x, p.y); }
inline ImVec2 add(ImVec2 a, ImVec2 b) { return ImVec2(a.x + b.x, a.y + b.y); }

// "(?)" in dim text; hovering shows `text`.
void help_marker(const char* text);
// A line from a to b with an arrow head at b (head: its length in pixels).
void draw_arrow(ImDrawList* dl, ImVec2 a, ImVec2 b, ImU32 col, float thickness, float head);
// Text centred on `c`, clipped to nothing (callers check the size).
void text_centered(ImDrawList* dl, ImVec2 c, ImU32 col, const char* text);
// Tick values for an axis over [lo, hi] with about `n` ticks (1, 2, 5 x 10^k steps).
double nice_step(double span, int n);
// A horizontal time axis: ticks and labels under y for [t0, t1] mapped onto [x0, x1].
void draw_time_axis(ImDrawList* dl, float x0, float x1, float y, double t0, double t1);
// The colour legend bar of the utilisation ramp, at the cursor, `width` wide (advances the cursor).
void utilization_legend(float width);
// Channel colour swatch + text (advances the cursor).
void swatch(ImU32 col, const char* text);
std::string printf_str(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

}  // namespace viz
}  // namespace cclab
