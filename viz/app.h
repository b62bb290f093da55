// viz/app.h - the visualiser's state (the trace, its indexes, the time cursor, each view's settings)
// and the per-frame UI entry points. Drawing lives in the view_*.cc files, one per view.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "trace/switch_traffic.h"
#include "trace/trace.h"
#include "viz/channel_state.h"
#include "viz/curves.h"
#include "viz/drawn.h"
#include "viz/layout.h"
#include "viz/live_load.h"
#include "viz/live_source.h"
#include "viz/model.h"
#include "viz/options.h"
#include "viz/timeline.h"

namespace cclab {
namespace viz {

struct VizState {
  VizOptions opt;
  bool interactive = true;  // false: a headless screenshot (no hover, no animation)

  // ---- data ----
  trace::Trace file_trace;
  bool has_trace = false;            // a file trace or a live one
  std::unique_ptr<LiveSource> live;  // --live
  std::vector<Curve> curves;
  const trace::Trace& trace() const { return live ? live->trace() : file_trace; }
  const trace::LinkLoad& load() const;  // the trace's LOAD section, or the live incremental load

  // ---- indexes (refresh() keeps them current) ----
  TraceIndex index;
  LoadIndex load_index;
  trace::SwitchIndex switches;    // NVLS switch steps' links (built with the topology)
  size_t switches_for = static_cast<size_t>(-1);
  SendMatch match;
  IncrementalLoad live_load{1000};
  trace::LinkLoad live_load_out;
  bool use_live_load = false;
  size_t live_load_filled = 0;    // live_load.events_done() when live_load_out was filled
  double last_live_refresh = -1;  // wall seconds
  double last_match_build = -1;
  std::string title;

  // ---- time ----
  Timeline tl;
  double wall_s = 0;  // seconds since start (animation, throttling)

  // ---- per frame ----
  std::vector<int> in_flight;  // events with data_us <= t < end_us
  int current_op = -1;

  // ---- views ----
  View view = View::kTopology;
  bool select_view = true;  // select `view`'s tab in the next frame
  TopoLayout layout;        // topology layout cache
  V2 layout_size;
  size_t layout_nodes = static_cast<size_t>(-1);
  int channel_mode = 0;     // 0 auto (the current op's algorithm), 1 ring, 2 tree
  int detail_channel = 0;
  bool channel_focus = false;  // channels view: only the selected channel, large
  std::vector<char> link_selected;  // links view: strip charts shown
  bool links_init = false;
  int busiest_n = 8;
  int heat_order = 0;       // 0 busiest first, 1 link index
  double gantt_zoom = 1;    // timeline view: visible fraction of the span
  int log_rank = -1, log_channel = -1;  // step log filters (-1 any)

  DrawnLayout drawn;        // what this frame drew (for --layout-json)
};

// Loads the trace (read_trace; false with its message), the curves, and sets up the cursor.
bool init_state(VizState* s, std::string* error);
// Brings indexes up to date with the trace (live: new events), and the per-frame caches to tl.t.
void refresh(VizState* s);
// --live with --screenshot: reads the stream until the run ends (END) or the stream fails, then puts
// the cursor where a trace file's screenshot has it (--at, else the begin). False, with *error, when
// nothing could be shown: no connection within --wait, or the stream broke before any event arrived.
bool follow_live_to_end(VizState* s, std::string* error);
// The whole window's UI for one frame (between ImGui::NewFrame and ImGui::Render).
void draw_frame(VizState* s, float wall_dt);

// Views (view_*.cc); each draws into the current ImGui window's remaining space.
void draw_topology_view(VizState* s);
void draw_channels_view(VizState* s);
void draw_links_view(VizState* s);
void draw_timeline_view(VizState* s);
void draw_curves_view(VizState* s);
void draw_header(VizState* s);

// The dark theme, colours and sizes used by every view (applied once per context).
void apply_theme();

}  // namespace viz
}  // namespace cclab
