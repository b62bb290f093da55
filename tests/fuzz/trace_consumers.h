// tests/fuzz/trace_consumers.h - everything that reads a trace once the reader has accepted it (whole
// or, as the visualiser does while a live stream grows, the sections accepted so far): link load,
// `cclab trace info` / `dump` / `export --chrome`, and the visualiser's pure logic when it is built.
// The reader's validation is their only guard, so whatever it lets through must not crash them.
#pragma once

#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz.h"
#include "trace/chrome.h"
#include "trace/trace.h"
#include "trace_cmd.h"
#ifdef CCLAB_FUZZ_HAVE_VIZ
#include "viz/channel_state.h"
#include "viz/layout.h"
#include "viz/live_load.h"
#include "viz/model.h"
#endif

namespace cclab {
namespace fuzz {

// A trace the reader accepted is one the writer writes, and writing is a fixed point:
// decode(encode(t)) succeeds and encodes to the same bytes.
inline void check_rewrites(const trace::Trace& t) {
  const std::string bytes = trace::encode_trace(t);
  FUZZ_CHECK(!bytes.empty(), "the writer refuses a trace its reader accepted");
  trace::Trace back;
  std::string err;
  FUZZ_CHECK(trace::decode_trace(bytes, &back, &err), "a re-encoded trace does not decode: " + err);
  FUZZ_CHECK(trace::encode_trace(back) == bytes, "encode(decode(encode(t))) != encode(t)");
}

inline void consume_trace(const trace::Trace& t) {
  // `cclab trace info`, `dump` (to /dev/null: it writes to a FILE*), `export --chrome`.
  TraceFileFacts facts;
  facts.path = "fuzz.cctrace";
  facts.version = trace::kFormatVersion;
  TraceInfoOptions info;
  info.max_ops = 0;
  (void)format_trace_info(t, facts, info);
  if (std::FILE* null = std::fopen("/dev/null", "w")) {
    TraceDumpOptions dump;
    dump.limit = 2000;
    write_trace_dump(t, dump, null);
    dump.csv = true;
    dump.rank = 0;
    write_trace_dump(t, dump, null);
    std::fclose(null);
  }
  std::ostringstream chrome;
  std::string err;
  trace::ChromeOptions copt;
  (void)trace::export_chrome(t, chrome, copt, &err);

  // The load as `cclab sim`/CCLAB_TRACE compute it before writing.
  trace::Trace loaded = t;
  trace::compute_link_load(&loaded, 64);

#ifdef CCLAB_FUZZ_HAVE_VIZ
  using namespace viz;
  TraceIndex index;
  index.update(t);
  const std::vector<double>& b = index.boundaries(t);
  std::vector<double> times = {t.begin_us(), t.end_us(), 0.5 * (t.begin_us() + t.end_us())};
  if (!b.empty()) times.push_back(b[b.size() / 2]);
  SendMatch match;
  match.build(t, index);
  LoadIndex load;
  load.build(t.load, t.links.size());
  for (double time : times) {
    std::vector<int> flying;
    index.in_flight(t, time, &flying);
    (void)next_boundary(b, time);
    (void)prev_boundary(b, time);
    (void)index.lower_bound_begin(t, time);
    (void)op_at(t, time);
    int rows = 0;
    for (const EventRow& row : index.rows()) {
      if (++rows > 64) break;
      (void)index.last_begun(t, index.row_of(row.rank, row.channel), time);
      (void)rank_status(t, index, match, row.rank, row.channel, time).text(t);
    }
    for (int l : load.busiest()) (void)load.gbs_at(t.load, l, time);
  }
  const TopoLayout layout = layout_topology(t, V2{1280, 720});
  for (size_t l = 0; l < t.links.size() && l < 256; ++l) {
    Segment s;
    (void)link_segment(layout, t.links[l], link_offset(2.0f), &s);
    (void)link_name(t, static_cast<int>(l));
  }
  for (size_t n = 0; n < t.nodes.size() && n < 256; ++n) (void)short_node_name(t, static_cast<int>(n));
  for (size_t e = 0; e < t.events.size() && e < 512; ++e) {
    V2 at;
    const trace::Event& ev = t.events[e];
    (void)chunk_position(t, layout, ev, 0.5 * (ev.data_us + ev.end_us), &at);
  }
  for (const trace::Op& op : t.ops) {
    (void)op_bandwidth(op, t.meta.nranks);
    (void)op_label(op);
  }
  IncrementalLoad inc(64);
  inc.update(t);
  trace::LinkLoad live;
  inc.fill(&live, t.links.size());
#endif
}

}  // namespace fuzz
}  // namespace cclab
