// viz/options.cc - see options.h.
#include "viz/options.h"

#include <cmath>
#include <cstdlib>

namespace cclab {
namespace viz {
namespace {

bool to_double(const std::string& s, double* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (*end || !std::isfinite(v)) return false;
  *out = v;
  return true;
}

bool to_int(const std::string& s, int* out) {
  double v;
  if (!to_double(s, &v) || v != std::floor(v) || std::fabs(v) > 1e9) return false;
  *out = static_cast<int>(v);
  return true;
}

}  // namespace

const char* view_name(View v) {
  switch (v) {
    case View::kTopology: return "topology";
    case View::kChannels: return "channels";
    case View::kLinks: return "links";
    case View::kTimeline: return "timeline";
    case View::kCurves: return "curves";
  }
  return "?";
}

bool view_from_name(const std::string& s, View* out) {
  for (View v : {View::kTopology, View::kChannels, View::kLinks, View::kTimeline, View::kCurves}) {
    if (s == view_name(v)) {
      *out = v;
      return true;
    }
  }
  return false;
}

std::string viz_usage() {
  return "usage: cclab viz TRACE [flags]\n"
         "       cclab viz --live SOCKET [flags]\n"
         "       cclab viz --curves FILE [--curves FILE]...\n"
         "\n"
         "Shows a trace (cclab sim --trace, CCLAB_TRACE=path) or a running job (CCLAB_LIVE=SOCKET): the\n"
         "topology with per-link utilisation and chunks in flight, each channel's ring/tree and what every\n"
         "rank waits for, per-link bandwidth charts and a link x time heatmap, the step log, busbw/algbw.\n"
         "\n"
         "  --live SOCKET        follow a run that streams its trace (CCLAB_LIVE=SOCKET)\n"
         "  --wait SECONDS       how long --live retries connecting (default 30)\n"
         "  --curves FILE        overlay busbw-vs-size results: cclab sim --csv/--json output or the\n"
         "                       cclab perf / cclab sim table (repeatable)\n"
         "  --at TIME_US|P%      start with the time cursor at TIME_US, or P% into the trace (default: its\n"
         "                       begin)\n"
         "  --view VIEW          topology, channels, links, timeline or curves (default topology)\n"
         "  --size WxH           window / screenshot size in pixels (default 1600x1000)\n"
         "  --speed US_PER_S     playback speed: trace microseconds per second (default: span / 10 s)\n"
         "  --busiest N          strip charts of the N busiest links in the links view (default 8)\n"
         "  --channel C          the channels view shows channel C alone (large)\n"
         "  --screenshot OUT.png render one frame without showing a window, write it and exit; with --live,\n"
         "                       once the run has ended (the cursor at --at, else at the run's begin)\n"
         "                       (needs an X display: run under xvfb-run -a on a headless machine)\n"
         "  --layout-json FILE   with --screenshot: where every node, link, arrow and heatmap row was\n"
         "                       drawn, with link colours and utilisation\n"
         "  -h, --help           this text\n"
         "\n"
         "Keys: space play/pause, left/right previous/next event boundary, home/end, 1-5 views.\n";
}

VizParse parse_viz_args(const std::vector<std::string>& args) {
  VizParse r;
  VizOptions& o = r.options;
  auto fail = [&](const std::string& m) {
    r.ok = false;
    r.message = m;
    return r;
  };
  for (size_t i = 0; i < args.size(); ++i) {
    std::string a = args[i];
    if (a == "-h" || a == "--help") {
      r.help = true;
      r.ok = true;
      return r;
    }
    std::string value;
    bool has_value = false;
    if (a.compare(0, 2, "--") == 0) {
      const size_t eq = a.find('=');
      if (eq != std::string::npos) {
        value = a.substr(eq + 1);
        a = a.substr(0, eq);
        has_value = true;
      }
    } else if (!a.empty() && a[0] == '-' && a.size() > 1) {
      return fail("unknown flag '" + a + "'");
    } else {
      if (!o.trace_path.empty()) return fail("more than one trace file: '" + o.trace_path + "' and '" + a + "'");
      o.trace_path = a;
      continue;
    }
    static const char* kWithValue[] = {"--live", "--wait", "--curves", "--at", "--view", "--size",
                                       "--speed", "--busiest", "--channel", "--screenshot", "--layout-json"};
    bool known = false;
    for (const char* f : kWithValue) known = known || a == f;
    if (!known) return fail("unknown flag '" + a + "'");
    if (!has_value) {
      if (i + 1 >= args.size()) return fail(a + " needs a value");
      value = args[++i];
    }
    if (a == "--live") {
      if (value.empty()) return fail("--live needs a socket path");
      o.live_socket = value;
    } else if (a == "--wait") {
      if (!to_double(value, &o.live_wait_s) || o.live_wait_s < 0)
        return fail("--wait '" + value + "': expected seconds >= 0");
    } else if (a == "--curves") {
      if (value.empty()) return fail("--curves needs a file");
      o.curves.push_back(value);
    } else if (a == "--at") {
      const bool pct = !value.empty() && value.back() == '%';
      if (!to_double(pct ? value.substr(0, value.size() - 1) : value, &o.at_us) ||
          (pct && (o.at_us < 0 || o.at_us > 100)))
        return fail("--at '" + value + "': expected a time in microseconds or a percentage of the trace (0% to 100%)");
      o.has_at = true;
      o.at_is_percent = pct;
    } else if (a == "--view") {
      if (!view_from_name(value, &o.view))
        return fail("--view '" + value + "': expected topology, channels, links, timeline or curves");
      o.view_given = true;
    } else if (a == "--size") {
      const size_t x = value.find_first_of("xX");
      int w = 0, h = 0;
      if (x == std::string::npos || !to_int(value.substr(0, x), &w) || !to_int(value.substr(x + 1), &h) || w < 320 ||
          h < 240 || w > 8192 || h > 8192)
        return fail("--size '" + value + "': expected WxH, 320x240 to 8192x8192");
      o.width = w;
      o.height = h;
    } else if (a == "--speed") {
      if (!to_double(value, &o.speed) || !(o.speed > 0))
        return fail("--speed '" + value + "': expected microseconds per second > 0");
    } else if (a == "--busiest") {
      if (!to_int(value, &o.busiest) || o.busiest < 1 || o.busiest > 64)
        return fail("--busiest '" + value + "': expected 1 to 64");
    } else if (a == "--channel") {
      if (!to_int(value, &o.channel) || o.channel < 0) return fail("--channel '" + value + "': expected a channel >= 0");
    } else if (a == "--screenshot") {
      if (value.empty()) return fail("--screenshot needs a file");
      o.screenshot = value;
    } else if (a == "--layout-json") {
      if (value.empty()) return fail("--layout-json needs a file");
      o.layout_json = value;
    }
  }
  if (!o.trace_path.empty() && !o.live_socket.empty()) return fail("give a TRACE file or --live SOCKET, not both");
  if (o.trace_path.empty() && o.live_socket.empty() && o.curves.empty())
    return fail("no trace: give a TRACE file, --live SOCKET or --curves FILE");
  if (!o.layout_json.empty() && o.screenshot.empty()) return fail("--layout-json needs --screenshot");
  if (o.trace_path.empty() && o.live_socket.empty() && o.view_given && o.view != View::kCurves)
    return fail(std::string("--view ") + view_name(o.view) + " needs a trace (only --curves was given)");
  if (o.trace_path.empty() && o.live_socket.empty()) o.view = View::kCurves;
  r.ok = true;
  return r;
}

}  // namespace viz
}  // namespace cclab
