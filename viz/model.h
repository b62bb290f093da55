// viz/model.h - what the views ask of a trace, indexed once (and incrementally while a live trace
// grows): events per (rank, channel) row, the events in flight at a time, event boundaries for
// stepping, link utilisation from a LinkLoad, the busiest links, collectives' algbw/busbw. Pure logic.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "trace/trace.h"

namespace cclab {
namespace viz {

using trace::Event;
using trace::LinkLoad;
using trace::Trace;

// The events of one rank on one channel, sorted by begin_us.
struct EventRow {
  int rank = 0;
  int channel = 0;
  std::vector<int> events;       // indices into Trace::events
  std::vector<double> max_end;   // max_end[i]: the largest end_us of events[0..i]
};

class TraceIndex {
 public:
  // Indexes the events not seen yet (all of them the first time). Call again after events were
  // appended (live mode); the trace must not be replaced by another (call reset() then).
  void update(const Trace& t);
  void reset() { *this = TraceIndex(); }
  size_t indexed() const { return indexed_; }

  int nranks() const { return nranks_; }
  int nchannels() const { return nchannels_; }
  // Every event indexed is a point-to-point step (ncclSend / ncclRecv), and there is at least one.
  bool p2p_only() const { return indexed_ > 0 && !non_p2p_; }
  const std::vector<EventRow>& rows() const { return rows_; }
  int row_of(int rank, int channel) const;  // -1 when the rank has no event on the channel

  // Events sorted by (begin_us, rank, channel, step): what the step log lists.
  const std::vector<int>& by_begin() const { return by_begin_; }
  // Position in by_begin() of the first event with begin_us >= t.
  size_t lower_bound_begin(const Trace& t, double time_us) const;

  // The last event of `row` that began at or before t (-1 none): the step the rank is at.
  int last_begun(const Trace& t, int row, double time_us) const;
  // Events with data_us <= t < end_us in any row (sending or not), appended to *out.
  void in_flight(const Trace& t, double time_us, std::vector<int>* out) const;
  // Every distinct begin/data/end time, sorted (built on first use after an update).
  const std::vector<double>& boundaries(const Trace& t) const;

 private:
  size_t indexed_ = 0;
  int nranks_ = 0, nchannels_ = 0;
  bool non_p2p_ = false;  // an indexed event belongs to a collective
  std::vector<EventRow> rows_;
  std::map<std::pair<int, int>, int> row_index_;
  std::vector<int> by_begin_;
  mutable std::vector<double> boundaries_;
  mutable size_t boundaries_for_ = static_cast<size_t>(-1);
};

// Next / previous boundary strictly after / before t (by more than a picosecond); t itself when none.
double next_boundary(const std::vector<double>& b, double t);
double prev_boundary(const std::vector<double>& b, double t);

// ---- link load -----------------------------------------------------------------------------------
class LoadIndex {
 public:
  // Maps links to their series; call after the load changed.
  void build(const LinkLoad& load, size_t nlinks);
  // GB/s of `link` at time t (0 outside the load's span or for a link without a series).
  double gbs_at(const LinkLoad& load, int link, double time_us) const;
  // The bin covering t, -1 outside.
  int bin_at(const LinkLoad& load, double time_us) const;
  const LinkLoad::Series* series(const LinkLoad& load, int link) const;
  // Total GB each link moved (0 without a series).
  const std::vector<double>& total_gb() const { return total_gb_; }
  // Peak GB/s of each link over the bins.
  const std::vector<double>& peak_gbs() const { return peak_gbs_; }
  // Links with a series, busiest (most bytes) first.
  const std::vector<int>& busiest() const { return busiest_; }

 private:
  std::vector<int> series_of_;
  std::vector<double> total_gb_, peak_gbs_;
  std::vector<int> busiest_;
};

// Utilisation of a link: gbs / capacity (0 when the capacity is unknown).
double utilization(double gbs, double capacity_gbs);

// ---- collectives -----------------------------------------------------------------------------------
// nccl-tests' bus bandwidth factor: all_reduce 2(n-1)/n, all_gather and reduce_scatter (n-1)/n,
// broadcast, reduce and send/recv 1.
double busbw_factor(CollKind coll, int nranks);

struct OpBandwidth {
  double time_us = 0;
  double algbw = 0;  // GB/s: bytes / time
  double busbw = 0;  // GB/s: algbw * busbw_factor
};
// From the op's own algbw/busbw when the trace has them, else from bytes / (end - begin).
OpBandwidth op_bandwidth(const trace::Op& op, int nranks);

// The op running at t (begin <= t <= end), else the last that ended before t, else the first; -1 none.
int op_at(const Trace& t, double time_us);

// ---- the doctor's reports (STUK) -------------------------------------------------------------------
// Until when report i holds: a report that was not certain (a late rank) ends when the operations of its
// waits completed (the trace's OPS has them all; the last end), a certain one never (+infinity).
double stuck_until(const Trace& t, int i);
// The report in force at t: the last with time_us <= t, unless its waits ended by t (stuck_until); -1
// before the first, or when none holds.
int stuck_at(const Trace& t, double time_us);
// The span the timeline covers: the events' [begin, end], widened to hold every report's time and the end
// of its waits (a stuck run's report comes after its last step; a run stuck from the start may have no
// step at all).
std::pair<double, double> trace_span(const Trace& t);

// What the views draw of one report.
struct StuckPicture {
  struct Arrow {
    int from = -1, to = -1;        // the waiting rank -> the rank it waits for
    std::string label;             // "data ch 0 step 4" (several waits: one per line, at most 3)
    int waits = 0;
  };
  std::vector<int> waiting;        // ranks with a sleeping wait, ascending
  std::vector<int> culprits;       // ranks waited for that wait for nobody, and ranks that left or died
  std::vector<Arrow> arrows;       // one per (from, to), in order of from, to
  std::string state(int rank) const;  // the report's state of the rank ("running", "left", ...; "" unknown)
  std::vector<std::pair<int, std::string>> states;
};
StuckPicture stuck_picture(const trace::Stuck& st);

// ---- names -----------------------------------------------------------------------------------------
// "m0.gpu3" -> "gpu3" when the trace has one machine; fabric names shortened ("leaf r3.0", "spine 0").
std::string short_node_name(const Trace& t, int node);
// "m0.gpu0 -> m0.nvs1".
std::string link_name(const Trace& t, int link);
// "12.345 us", "1.234 ms", "2.500 s".
std::string format_time(double us);
// "512 B", "64 KiB", "1.5 MiB", "8 GiB".
std::string format_bytes(double bytes);
// "coll algo/proto bytes".
std::string op_label(const trace::Op& op);

}  // namespace viz
}  // namespace cclab
