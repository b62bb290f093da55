// viz/drawn.h - where one frame drew things, in window pixels (y down): what `--layout-json` writes so
// tests and scripts can look at the right pixels of a screenshot.
#pragma once

#include <string>
#include <vector>

#include "trace/trace.h"
#include "viz/geom.h"
#include "viz/options.h"

namespace cclab {
namespace viz {

struct DrawnNode {
  int index = -1;
  Rect rect;
};
struct DrawnMachine {
  int machine = 0;
  Rect rect;
};
struct DrawnLink {
  int index = -1;          // Trace::links index (one direction)
  V2 p0, p1;               // the drawn line's end points
  float thickness = 0;
  Color color = 0;
  double utilization = 0;  // at the frame's time
  double gbs = 0;
};
struct DrawnArrow {        // a ring or tree edge of the channels view
  int channel = 0;
  int from = -1, to = -1;  // ranks
  V2 p0, p1;
  float thickness = 0;
  Color color = 0;
  bool active = false;     // a chunk was moving on it
};
struct DrawnChunk {
  int event = -1;
  V2 pos;
  Color color = 0;
};
struct DrawnHeatRow {
  int link = -1;
  float y0 = 0, y1 = 0;
};
struct DrawnHeatmap {
  bool present = false;
  Rect rect;               // the cells' area
  double t0_us = 0, t1_us = 0;  // times at rect.x0 and rect.x1
  std::vector<DrawnHeatRow> rows;
};

struct DrawnLayout {
  View view = View::kTopology;
  double at_us = 0;
  int width = 0, height = 0;
  std::vector<DrawnNode> nodes;
  std::vector<DrawnMachine> machines;
  std::vector<DrawnLink> links;
  std::vector<DrawnArrow> arrows;
  std::vector<DrawnChunk> chunks;
  DrawnHeatmap heatmap;

  void clear();
  // JSON: {"width", "height", "view", "at_us", "nodes": [{index, name, kind, machine, rank, rect:[x0,y0,x1,y1]}],
  // "machines", "links": [{index, from, to, p0, p1, thickness, color:[r,g,b,a], utilization, gbs, capacity_gbs}],
  // "arrows", "chunks", "heatmap": {rect, t0_us, t1_us, rows: [{link, name, y0, y1}]}}.
  std::string to_json(const trace::Trace* t) const;
};

}  // namespace viz
}  // namespace cclab
