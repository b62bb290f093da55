// viz/live_load.h - link load of a trace that grows (live mode), binned incrementally: each new sending
// event's wire bytes (trace::wire_bytes, as compute_link_load counts them) spread evenly over
// [data_us, end_us] on every link of its route; an NVLS switch step's bytes on the GPU <-> NVSwitch links
// trace/switch_traffic.h names. Bins start fine and double in width
// (pairs merged) whenever the run outgrows max_bins, so the cost per event stays bounded. Pure logic.
#pragma once

#include <cstddef>
#include <vector>

#include "trace/switch_traffic.h"
#include "trace/trace.h"

namespace cclab {
namespace viz {

class IncrementalLoad {
 public:
  explicit IncrementalLoad(int max_bins = 1000, double first_bin_us = 0.1);
  // Adds the events appended to t.events since the last call.
  void update(const trace::Trace& t);
  size_t events_done() const { return done_; }
  // The load so far, in LinkLoad's form (series for the links that carried traffic).
  void fill(trace::LinkLoad* out, size_t nlinks) const;
  double bin_us() const { return bin_us_; }

 private:
  void add(const trace::Trace& t, const trace::Event& e);
  void place(int link, double bytes, double x0, double x1);
  void coarsen();  // bin width x2
  int max_bins_;
  double bin_us_;
  double t0_ = 0, t_max_ = 0;
  bool started_ = false;
  size_t done_ = 0;
  std::vector<std::vector<double>> bytes_;  // per link: bytes per bin (empty: no traffic yet)
  trace::SwitchIndex switches_;
  size_t switches_for_ = static_cast<size_t>(-1);  // the link count switches_ was built for
  std::vector<trace::SwitchIndex::Hop> hops_;
};

}  // namespace viz
}  // namespace cclab
