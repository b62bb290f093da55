// viz/options.h - `cclab viz` flags. Pure logic.
//
//   cclab viz TRACE [--at US] [--view V] [--curves FILE]... [--size WxH] [--speed US_PER_S]
//   cclab viz --live SOCKET [--wait S] ...
//   cclab viz --curves FILE [--curves FILE]...            (curves only)
//   cclab viz TRACE --screenshot OUT.png [--at US] [--view V] [--size WxH] [--layout-json FILE]
#pragma once

#include <string>
#include <vector>

namespace cclab {
namespace viz {

enum class View { kTopology, kChannels, kLinks, kTimeline, kCurves };
const char* view_name(View v);  // "topology", ...
bool view_from_name(const std::string& s, View* out);

struct VizOptions {
  std::string trace_path;              // TRACE (a .cctrace file)
  std::string live_socket;             // --live SOCKET
  double live_wait_s = 30;             // --wait: how long to retry connecting
  std::vector<std::string> curves;     // --curves FILE (repeatable)
  std::string screenshot;              // --screenshot OUT.png: render one frame headless and exit
  bool has_at = false;
  double at_us = 0;                    // --at TIME_US: the time cursor (default: the trace's begin)
  bool at_is_percent = false;          // --at P%: at_us is a percentage of the trace's span
  View view = View::kTopology;         // --view
  bool view_given = false;
  int width = 1600, height = 1000;     // --size WxH
  std::string layout_json;             // --layout-json FILE (with --screenshot)
  double speed = 0;                    // --speed: us of trace per wall second (0: the span in ~10 s)
  int busiest = 8;                     // --busiest N: strip charts shown in the links view
  int channel = -1;                    // --channel C: the channels view shows channel C alone
};

struct VizParse {
  bool ok = false;
  bool help = false;
  std::string message;  // why parsing failed
  VizOptions options;
};

VizParse parse_viz_args(const std::vector<std::string>& args);
std::string viz_usage();

}  // namespace viz
}  // namespace cclab
