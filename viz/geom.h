// viz/geom.h - points, rectangles and packed colours for the visualiser's pure logic (no ImGui, no GL).
// Colours are packed exactly as ImGui's IM_COL32(r, g, b, a): a << 24 | b << 16 | g << 8 | r.
#pragma once

#include <cmath>
#include <cstdint>

namespace cclab {
namespace viz {

struct V2 {
  float x = 0, y = 0;
  V2() = default;
  V2(float x_, float y_) : x(x_), y(y_) {}
};
inline V2 operator+(V2 a, V2 b) { return V2(a.x + b.x, a.y + b.y); }
inline V2 operator-(V2 a, V2 b) { return V2(a.x - b.x, a.y - b.y); }
inline V2 operator*(V2 a, float s) { return V2(a.x * s, a.y * s); }
inline float length(V2 a) { return std::sqrt(a.x * a.x + a.y * a.y); }
inline V2 lerp(V2 a, V2 b, float f) { return V2(a.x + (b.x - a.x) * f, a.y + (b.y - a.y) * f); }

struct Rect {
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  Rect() = default;
  Rect(float a, float b, float c, float d) : x0(a), y0(b), x1(c), y1(d) {}
  float w() const { return x1 - x0; }
  float h() const { return y1 - y0; }
  V2 center() const { return V2((x0 + x1) * 0.5f, (y0 + y1) * 0.5f); }
  bool empty() const { return !(x1 > x0 && y1 > y0); }
  bool contains(V2 p) const { return p.x >= x0 && p.x <= x1 && p.y >= y0 && p.y <= y1; }
  bool contains(const Rect& r) const { return r.x0 >= x0 && r.x1 <= x1 && r.y0 >= y0 && r.y1 <= y1; }
  bool overlaps(const Rect& r) const { return r.x0 < x1 && x0 < r.x1 && r.y0 < y1 && y0 < r.y1; }
  Rect translated(V2 d) const { return Rect(x0 + d.x, y0 + d.y, x1 + d.x, y1 + d.y); }
};

using Color = uint32_t;
constexpr Color rgba(unsigned r, unsigned g, unsigned b, unsigned a = 255) {
  return (static_cast<Color>(a) << 24) | (static_cast<Color>(b) << 16) | (static_cast<Color>(g) << 8) |
         static_cast<Color>(r);
}
constexpr unsigned red_of(Color c) { return c & 0xff; }
constexpr unsigned green_of(Color c) { return (c >> 8) & 0xff; }
constexpr unsigned blue_of(Color c) { return (c >> 16) & 0xff; }
constexpr unsigned alpha_of(Color c) { return (c >> 24) & 0xff; }

}  // namespace viz
}  // namespace cclab
