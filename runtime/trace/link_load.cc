// runtime/trace/link_load.cc - per-link bandwidth over time from a trace's events (trace.h's
// compute_link_load): every sending step's wire bytes, spread evenly over the time its data moved,
// added to each link of its route, summed into time bins. NVLS switch steps, which have no route, go
// to the GPU <-> NVSwitch links switch_traffic.h names.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/work.h"
#include "trace/switch_traffic.h"
#include "trace/trace.h"

namespace cclab {
namespace trace {

namespace {

constexpr double kMinBinUs = 0.01;

}  // namespace

void spread_bytes(double* bins, double t0, double bin_us, int b0, int b1, double x0, double x1, double bytes) {
  if (b0 == b1 || !(x1 > x0)) {
    bins[b1] += bytes;
    return;
  }
  const double rate = bytes / (x1 - x0);
  double placed = 0;
  for (int b = b0; b < b1; ++b) {
    const double part = rate * (std::min(t0 + (b + 1) * bin_us, x1) - std::max(t0 + b * bin_us, x0));
    bins[b] += part;
    placed += part;
  }
  bins[b1] += bytes - placed;  // the rest
}

double wire_bytes(int proto, uint64_t payload) {
  if (proto == kProtoLL) return static_cast<double>((payload + 7) / 8) * 16.0;
  if (proto == kProtoLL128) return static_cast<double>((payload + 119) / 120) * 128.0;
  return static_cast<double>(payload);
}

void compute_link_load(Trace* t, int max_bins) {
  t->load = LinkLoad();
  if (max_bins < 1) max_bins = 1;
  bool any = false;
  double lo = 0, hi = 0;
  for (const Event& e : t->events) {
    if (!std::isfinite(e.begin_us) || !std::isfinite(e.end_us)) continue;
    if (!any) {
      lo = e.begin_us;
      hi = e.end_us;
      any = true;
    }
    lo = std::min(lo, e.begin_us);
    hi = std::max(hi, e.end_us);
  }
  if (!any) return;
  const double span = hi - lo;
  int bins = 1;
  if (span > kMinBinUs) bins = static_cast<int>(std::max(1.0, std::min<double>(max_bins, std::floor(span / kMinBinUs))));
  const double bin_us = std::max(span / bins, kMinBinUs);
  const double t_end = lo + bin_us * bins;

  // Bytes per bin, per route that carried anything first (a route's bytes then go to each of its links).
  const size_t nroutes = t->routes.size();
  std::vector<int> slot(nroutes, -1);
  std::vector<int> slot_route;
  std::vector<double> acc;  // slot * bins + bin
  auto bin_of = [&](double x) {
    const double f = std::floor((x - lo) / bin_us);
    if (!(f > 0)) return 0;
    return f >= bins ? bins - 1 : static_cast<int>(f);
  };
  // Spreads `wire` bytes moving over [data_us, end_us] (clamped to the span) into the bins of a.
  auto spread = [&](double* a, double data_us, double end_us, double wire) {
    const double x0 = std::min(std::max(data_us, lo), t_end), x1 = std::min(std::max(end_us, lo), t_end);
    spread_bytes(a, lo, bin_us, bin_of(x0), bin_of(x1), x0, x1, wire);
  };
  // Switch steps' bytes per bin, per link (switch_slot: link -> its block of bins in switch_acc).
  SwitchIndex switches(*t);
  std::vector<SwitchIndex::Hop> hops;
  std::vector<int> switch_slot(t->links.size(), -1);
  std::vector<double> switch_acc;
  for (const Event& e : t->events) {
    if (!std::isfinite(e.data_us) || !std::isfinite(e.end_us)) continue;
    if (switches.is_switch_step(e)) {
      hops.clear();
      switches.hops(e, &hops);
      for (const SwitchIndex::Hop& h : hops) {
        if (h.link < 0 || static_cast<size_t>(h.link) >= t->links.size() || !(h.bytes > 0)) continue;
        int& s = switch_slot[h.link];
        if (s < 0) {
          s = static_cast<int>(switch_acc.size() / bins);
          switch_acc.resize(switch_acc.size() + bins, 0.0);
        }
        spread(&switch_acc[static_cast<size_t>(s) * bins], e.data_us, e.end_us, h.bytes);
      }
      continue;
    }
    if (e.send_peer < 0 || e.route < 0 || static_cast<size_t>(e.route) >= nroutes) continue;
    if (t->routes[e.route].links.empty()) continue;
    const double wire = wire_bytes(e.proto, e.bytes);
    if (!(wire > 0)) continue;
    int s = slot[e.route];
    if (s < 0) {
      s = slot[e.route] = static_cast<int>(slot_route.size());
      slot_route.push_back(e.route);
      acc.resize(acc.size() + bins, 0.0);
    }
    spread(&acc[static_cast<size_t>(s) * bins], e.data_us, e.end_us, wire);
  }

  std::vector<int> link_slot(t->links.size(), -1);
  std::vector<std::vector<double>> per_link;
  std::vector<int> link_of;
  for (size_t s = 0; s < slot_route.size(); ++s) {
    const double* a = &acc[s * bins];
    for (int l : t->routes[slot_route[s]].links) {
      if (l < 0 || static_cast<size_t>(l) >= t->links.size()) continue;
      if (link_slot[l] < 0) {
        link_slot[l] = static_cast<int>(per_link.size());
        per_link.emplace_back(bins, 0.0);
        link_of.push_back(l);
      }
      std::vector<double>& dst = per_link[link_slot[l]];
      for (int b = 0; b < bins; ++b) dst[b] += a[b];
    }
  }

  for (size_t l = 0; l < t->links.size(); ++l) {
    if (switch_slot[l] < 0) continue;
    if (link_slot[l] < 0) {
      link_slot[l] = static_cast<int>(per_link.size());
      per_link.emplace_back(bins, 0.0);
      link_of.push_back(static_cast<int>(l));
    }
    const double* a = &switch_acc[static_cast<size_t>(switch_slot[l]) * bins];
    std::vector<double>& dst = per_link[link_slot[l]];
    for (int b = 0; b < bins; ++b) dst[b] += a[b];
  }

  LinkLoad& out = t->load;
  out.t0_us = lo;
  out.bin_us = bin_us;
  out.bins = bins;
  const double scale = 1.0 / (bin_us * 1e3);  // bytes per bin -> GB/s (1 GB/s = 1e3 bytes per us)
  for (size_t l = 0; l < t->links.size(); ++l) {
    if (link_slot[l] < 0) continue;
    const std::vector<double>& src = per_link[link_slot[l]];
    LinkLoad::Series s;
    s.link = static_cast<int>(l);
    s.gbs.resize(bins);
    for (int b = 0; b < bins; ++b) s.gbs[b] = static_cast<float>(src[b] * scale);
    out.series.push_back(std::move(s));
  }
}

}  // namespace trace
}  // namespace cclab
