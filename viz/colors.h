// viz/colors.h - the visualiser's colours: the utilisation ramp of links and heatmap cells, the channel
// palette of chunks and ring arrows, node kinds, and the line thickness of a link's capacity.
//
// Utilisation ramp (u = link GB/s at the current time / capacity), piecewise linear between stops:
//   u < 0.005  kIdle       (95, 108, 130)  slate grey-blue: nothing moves
//   0.005      (70, 130, 210) blue  -> 0.30 (60, 190, 100) green -> 0.60 (235, 210, 60) yellow
//   -> 0.80 (245, 145, 45) orange -> 0.90 and above kSaturated (230, 40, 40) red
// docs/visualiser.md documents the same stops.
#pragma once

#include "viz/geom.h"

namespace cclab {
namespace viz {

constexpr Color kIdle = rgba(95, 108, 130);
constexpr Color kSaturated = rgba(230, 40, 40);
constexpr double kSaturatedAt = 0.9;   // utilisation from which a link is drawn kSaturated
constexpr double kIdleBelow = 0.005;   // utilisation below which a link is drawn kIdle

// Heatmap cells below kIdleBelow are kHeatEmpty (dark) so the busy cells stand out.
constexpr Color kHeatEmpty = rgba(38, 42, 52);

// Theme.
constexpr Color kBackground = rgba(22, 24, 30);
constexpr Color kPanel = rgba(30, 33, 41);
constexpr Color kMachineFill = rgba(32, 36, 46);
constexpr Color kMachineBorder = rgba(78, 86, 104);
constexpr Color kFabricFill = rgba(28, 32, 40);
constexpr Color kText = rgba(225, 228, 235);
constexpr Color kTextDim = rgba(150, 156, 170);
constexpr Color kGrid = rgba(58, 63, 76);
constexpr Color kCursor = rgba(255, 255, 255);

// The doctor's report (topology view): ranks with a sleeping wait, the ranks they wait for that wait for
// nobody (or left, or died), and the arrows between them.
constexpr Color kStuckWaiting = rgba(235, 70, 200);
constexpr Color kStuckCulprit = rgba(255, 150, 30);
constexpr Color kStuckArrow = rgba(255, 110, 215);
// A degraded link (cclab sim --degrade): dashed over the link; a failed one (--fail).
constexpr Color kDegraded = rgba(255, 200, 40);
constexpr Color kFailed = rgba(255, 45, 70);

// Utilisation -> colour (see the ramp above); NaN or negative is idle.
Color utilization_color(double u);
// The heatmap's cell colour: kHeatEmpty below kIdleBelow, else utilization_color.
Color heat_color(double u);

// The channel palette: 12 distinct colours, channel c gets kChannelPalette[c % 12].
Color channel_color(int channel);
// A darker version of a colour (f in [0, 1]: 0 -> black, 1 -> unchanged), opaque.
Color dim(Color c, float f);
// Blend a over b (f = weight of a), opaque.
Color mix(Color a, Color b, float f);

// Node fill per kind ("gpu", "nvswitch", "pci", "cpu", "nic", "net", "switch"; grey otherwise).
Color node_color(const char* kind);

// Line thickness of a link of `gbs` capacity (log2 scale): 1.5 px at <= 12.5 GB/s, +1 px per doubling,
// at most 6 px (>= 200 GB/s).
float link_thickness(double gbs);

}  // namespace viz
}  // namespace cclab
