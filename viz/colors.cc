// viz/colors.cc - see colors.h.
#include "viz/colors.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace cclab {
namespace viz {
namespace {

struct Stop {
  double u;
  unsigned r, g, b;
};
constexpr Stop kRamp[] = {
    {kIdleBelow, 70, 130, 210}, {0.30, 60, 190, 100}, {0.60, 235, 210, 60},
    {0.80, 245, 145, 45},       {kSaturatedAt, 230, 40, 40},
};

constexpr Color kChannelPalette[12] = {
    rgba(0, 200, 255),  rgba(255, 120, 220), rgba(170, 255, 90),  rgba(255, 190, 60),
    rgba(150, 130, 255), rgba(80, 255, 200),  rgba(255, 110, 90),  rgba(220, 220, 120),
    rgba(120, 180, 255), rgba(255, 160, 160), rgba(140, 220, 160), rgba(210, 150, 255),
};

unsigned channel_mix(unsigned a, unsigned b, double f) {
  return static_cast<unsigned>(std::lround(a + (static_cast<double>(b) - a) * f));
}

}  // namespace

Color utilization_color(double u) {
  if (!(u >= kIdleBelow)) return kIdle;  // NaN too
  if (u >= kSaturatedAt) return kSaturated;
  const size_t n = sizeof(kRamp) / sizeof(kRamp[0]);
  for (size_t i = 0; i + 1 < n; ++i) {
    if (u <= kRamp[i + 1].u) {
      const double f = (u - kRamp[i].u) / (kRamp[i + 1].u - kRamp[i].u);
      return rgba(channel_mix(kRamp[i].r, kRamp[i + 1].r, f), channel_mix(kRamp[i].g, kRamp[i + 1].g, f),
                  channel_mix(kRamp[i].b, kRamp[i + 1].b, f));
    }
  }
  return kSaturated;
}

Color heat_color(double u) { return u >= kIdleBelow ? utilization_color(u) : kHeatEmpty; }

Color channel_color(int channel) {
  const int i = ((channel % 12) + 12) % 12;
  return kChannelPalette[i];
}

Color dim(Color c, float f) {
  f = std::min(1.0f, std::max(0.0f, f));
  return rgba(static_cast<unsigned>(red_of(c) * f), static_cast<unsigned>(green_of(c) * f),
              static_cast<unsigned>(blue_of(c) * f));
}

Color mix(Color a, Color b, float f) {
  f = std::min(1.0f, std::max(0.0f, f));
  return rgba(channel_mix(red_of(b), red_of(a), f), channel_mix(green_of(b), green_of(a), f),
              channel_mix(blue_of(b), blue_of(a), f));
}

Color node_color(const char* kind) {
  if (!kind) return rgba(90, 90, 90);
  if (!std::strcmp(kind, "gpu")) return rgba(46, 125, 70);
  if (!std::strcmp(kind, "nvswitch")) return rgba(120, 80, 160);
  if (!std::strcmp(kind, "pci")) return rgba(60, 95, 140);
  if (!std::strcmp(kind, "cpu")) return rgba(140, 100, 50);
  if (!std::strcmp(kind, "nic")) return rgba(40, 120, 130);
  if (!std::strcmp(kind, "net")) return rgba(40, 95, 105);
  if (!std::strcmp(kind, "switch")) return rgba(130, 60, 80);
  return rgba(90, 90, 90);
}

float link_thickness(double gbs) {
  if (!(gbs > 12.5)) return 1.5f;
  const double t = 1.5 + std::log2(gbs / 12.5);
  return static_cast<float>(std::min(6.0, t));
}

}  // namespace viz
}  // namespace cclab
