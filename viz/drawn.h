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
  std::string activity;    // an NVSwitch's NVLS work at the cursor ("NVLS: 16 reductions, 250 GB/s"), or ""
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

struct DrawnStuckRank {   // a rank the doctor's report marks (topology view)
  int rank = -1;
  Rect rect;               // its node's rectangle
  bool waiting = false;    // it has a sleeping wait
  bool culprit = false;    // waited for, waiting for nobody; or it left or died
  std::string state;       // the report's state ("running", "left", "dead", ...)
  Color color = 0;         // its outline
};
struct DrawnWait {         // an arrow from a waiting rank to the rank it waits for
  int from = -1, to = -1;
  V2 p0, control, p1;      // a quadratic Bezier curve from p0 to p1 (the arrow's tip)
  std::string label;       // "data ch 0 step 4"
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
  int stuck_report = -1;   // the doctor's report in force at the frame's time (Trace::stuck index)
  std::string stuck_summary;
  std::vector<DrawnStuckRank> stuck_ranks;
  std::vector<DrawnWait> waits;

  void clear();
  // JSON: {"width", "height", "view", "at_us", "nodes": [{index, name, kind, machine, rank, rect:[x0,y0,x1,y1],
  // activity (NVSwitch nodes at work only)}],
  // "machines", "links": [{index, from, to, p0, p1, thickness, color:[r,g,b,a], utilization, gbs, capacity_gbs}],
  // "arrows", "chunks", "heatmap": {rect, t0_us, t1_us, rows: [{link, name, y0, y1}]}, "stuck": {report,
  // summary, ranks: [{rank, rect, waiting, culprit, state, color}], waits: [{from, to, p0, control, p1, label}]}}.
  std::string to_json(const trace::Trace* t) const;
};

}  // namespace viz
}  // namespace cclab
