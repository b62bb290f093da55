// viz/live_load.cc - see live_load.h.
#include "viz/live_load.h"

#include <algorithm>
#include <cmath>


namespace cclab {
namespace viz {

IncrementalLoad::IncrementalLoad(int max_bins, double first_bin_us)
    : max_bins_(std::max(2, max_bins)), bin_us_(first_bin_us > 0 ? first_bin_us : 0.1) {}

void IncrementalLoad::coarsen() {
  for (std::vector<double>& b : bytes_) {
    if (b.empty()) continue;
    for (int i = 0; i < max_bins_ / 2; ++i) b[i] = b[2 * i] + b[2 * i + 1];
    if (max_bins_ % 2) b[max_bins_ / 2] = b[max_bins_ - 1];
    std::fill(b.begin() + (max_bins_ + 1) / 2, b.end(), 0.0);
  }
  bin_us_ *= 2;
}

void IncrementalLoad::update(const trace::Trace& t) {
  if (t.events.size() < done_) {  // another trace
    *this = IncrementalLoad(max_bins_);
  }
  if (bytes_.size() < t.links.size()) bytes_.resize(t.links.size());
  if (switches_for_ != t.links.size()) {  // the topology arrives before the events
    switches_.build(t);
    switches_for_ = t.links.size();
  }
  for (; done_ < t.events.size(); ++done_) add(t, t.events[done_]);
}

void IncrementalLoad::add(const trace::Trace& t, const trace::Event& e) {
  if (!std::isfinite(e.begin_us) || !std::isfinite(e.end_us) || !std::isfinite(e.data_us)) return;
  if (!started_) {
    t0_ = e.begin_us;
    t_max_ = e.begin_us;
    started_ = true;
  }
  t_max_ = std::max(t_max_, e.end_us);
  while (e.end_us - t0_ >= bin_us_ * max_bins_) coarsen();
  const double x0 = std::max(e.data_us, t0_), x1 = std::max(e.end_us, x0);
  if (switches_.is_switch_step(e)) {
    hops_.clear();
    switches_.hops(e, &hops_);
    for (const trace::SwitchIndex::Hop& h : hops_) place(h.link, h.bytes, x0, x1);
    return;
  }
  if (e.send_peer < 0 || e.route < 0 || static_cast<size_t>(e.route) >= t.routes.size()) return;
  const double wire = trace::wire_bytes(e.proto, e.bytes);
  for (int l : t.routes[e.route].links) place(l, wire, x0, x1);
}

void IncrementalLoad::place(int link, double wire, double x0, double x1) {
  if (link < 0 || static_cast<size_t>(link) >= bytes_.size() || !(wire > 0)) return;
  auto bin_of = [&](double x) {
    const int b = static_cast<int>(std::floor((x - t0_) / bin_us_));
    return std::min(max_bins_ - 1, std::max(0, b));
  };
  std::vector<double>& a = bytes_[link];
  if (a.empty()) a.assign(max_bins_, 0.0);
  trace::spread_bytes(a.data(), t0_, bin_us_, bin_of(x0), bin_of(x1), x0, x1, wire);
}

void IncrementalLoad::fill(trace::LinkLoad* out, size_t nlinks) const {
  *out = trace::LinkLoad();
  if (!started_) return;
  out->t0_us = t0_;
  out->bin_us = bin_us_;
  out->bins = std::min(max_bins_, static_cast<int>(std::floor((t_max_ - t0_) / bin_us_)) + 1);
  const double scale = 1.0 / (bin_us_ * 1e3);
  for (size_t l = 0; l < bytes_.size() && l < nlinks; ++l) {
    if (bytes_[l].empty()) continue;
    trace::LinkLoad::Series s;
    s.link = static_cast<int>(l);
    s.gbs.resize(out->bins);
    for (int b = 0; b < out->bins; ++b) s.gbs[b] = static_cast<float>(bytes_[l][b] * scale);
    out->series.push_back(std::move(s));
  }
}

}  // namespace viz
}  // namespace cclab
