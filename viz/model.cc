// viz/model.cc - see model.h.
#include "viz/model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

namespace cclab {
namespace viz {
namespace {

constexpr double kEps = 1e-6;  // 1 ps in microseconds

bool begin_less(const Trace& t, int a, int b) {
  const Event& x = t.events[a];
  const Event& y = t.events[b];
  if (x.begin_us != y.begin_us) return x.begin_us < y.begin_us;
  if (x.rank != y.rank) return x.rank < y.rank;
  if (x.channel != y.channel) return x.channel < y.channel;
  if (x.step != y.step) return x.step < y.step;
  return a < b;
}

std::string printf_string(const char* fmt, double v, const char* unit) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), fmt, v, unit);
  return buf;
}

}  // namespace

void TraceIndex::update(const Trace& t) {
  nranks_ = std::max(nranks_, t.meta.nranks);
  if (t.events.size() < indexed_) reset();  // the trace shrank: it is another trace
  const size_t first = indexed_;
  if (first == t.events.size()) return;
  std::vector<char> dirty(rows_.size(), 0);
  std::vector<size_t> old_size(rows_.size());
  for (size_t r = 0; r < rows_.size(); ++r) old_size[r] = rows_[r].events.size();
  for (size_t i = first; i < t.events.size(); ++i) {
    const Event& e = t.events[i];
    nranks_ = std::max({nranks_, e.rank + 1, e.send_peer + 1, e.recv_peer + 1});
    nchannels_ = std::max(nchannels_, e.channel + 1);
    non_p2p_ = non_p2p_ || e.coll != CollKind::kSendRecv;
    auto key = std::make_pair(e.rank, e.channel);
    auto it = row_index_.find(key);
    int r;
    if (it == row_index_.end()) {
      r = static_cast<int>(rows_.size());
      row_index_.emplace(key, r);
      EventRow row;
      row.rank = e.rank;
      row.channel = e.channel;
      rows_.push_back(row);
      dirty.push_back(0);
      old_size.push_back(0);
    } else {
      r = it->second;
    }
    EventRow& row = rows_[r];
    if (!row.events.empty() && begin_less(t, static_cast<int>(i), row.events.back())) dirty[r] = 1;
    row.events.push_back(static_cast<int>(i));
  }
  for (size_t r = 0; r < rows_.size(); ++r) {
    EventRow& row = rows_[r];
    size_t from = old_size[r];
    if (dirty[r]) {
      std::sort(row.events.begin(), row.events.end(), [&](int a, int b) { return begin_less(t, a, b); });
      from = 0;
    }
    row.max_end.resize(row.events.size());
    for (size_t k = from; k < row.events.size(); ++k) {
      const double e = t.events[row.events[k]].end_us;
      row.max_end[k] = k == 0 ? e : std::max(row.max_end[k - 1], e);
    }
  }
  // Rows in (rank, channel) order for the views.
  std::vector<EventRow> sorted = std::move(rows_);
  std::sort(sorted.begin(), sorted.end(), [](const EventRow& a, const EventRow& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.channel < b.channel;
  });
  rows_ = std::move(sorted);
  row_index_.clear();
  for (size_t r = 0; r < rows_.size(); ++r) row_index_[{rows_[r].rank, rows_[r].channel}] = static_cast<int>(r);

  const size_t old = by_begin_.size();
  for (size_t i = first; i < t.events.size(); ++i) by_begin_.push_back(static_cast<int>(i));
  auto less = [&](int a, int b) { return begin_less(t, a, b); };
  std::sort(by_begin_.begin() + old, by_begin_.end(), less);
  std::inplace_merge(by_begin_.begin(), by_begin_.begin() + old, by_begin_.end(), less);
  indexed_ = t.events.size();
}

int TraceIndex::row_of(int rank, int channel) const {
  auto it = row_index_.find({rank, channel});
  return it == row_index_.end() ? -1 : it->second;
}

size_t TraceIndex::lower_bound_begin(const Trace& t, double time_us) const {
  auto it = std::lower_bound(by_begin_.begin(), by_begin_.end(), time_us,
                             [&](int i, double x) { return t.events[i].begin_us < x; });
  return static_cast<size_t>(it - by_begin_.begin());
}

int TraceIndex::last_begun(const Trace& t, int row, double time_us) const {
  if (row < 0 || row >= static_cast<int>(rows_.size())) return -1;
  const std::vector<int>& ev = rows_[row].events;
  auto it = std::upper_bound(ev.begin(), ev.end(), time_us,
                             [&](double x, int i) { return x < t.events[i].begin_us; });
  if (it == ev.begin()) return -1;
  return *(it - 1);
}

void TraceIndex::in_flight(const Trace& t, double time_us, std::vector<int>* out) const {
  for (const EventRow& row : rows_) {
    const std::vector<int>& ev = row.events;
    auto it = std::upper_bound(ev.begin(), ev.end(), time_us,
                               [&](double x, int i) { return x < t.events[i].begin_us; });
    for (long k = static_cast<long>(it - ev.begin()) - 1; k >= 0 && row.max_end[k] > time_us; --k) {
      const Event& e = t.events[ev[k]];
      if (e.data_us <= time_us && time_us < e.end_us) out->push_back(ev[k]);
    }
  }
}

const std::vector<double>& TraceIndex::boundaries(const Trace& t) const {
  if (boundaries_for_ == indexed_) return boundaries_;
  boundaries_.clear();
  boundaries_.reserve(indexed_ * 3);
  for (size_t i = 0; i < indexed_ && i < t.events.size(); ++i) {
    const Event& e = t.events[i];
    for (double x : {e.begin_us, e.data_us, e.end_us})
      if (std::isfinite(x)) boundaries_.push_back(x);
  }
  std::sort(boundaries_.begin(), boundaries_.end());
  auto end = std::unique(boundaries_.begin(), boundaries_.end(), [](double a, double b) { return b - a <= kEps; });
  boundaries_.erase(end, boundaries_.end());
  boundaries_for_ = indexed_;
  return boundaries_;
}

double next_boundary(const std::vector<double>& b, double t) {
  auto it = std::upper_bound(b.begin(), b.end(), t + kEps);
  return it == b.end() ? t : *it;
}

double prev_boundary(const std::vector<double>& b, double t) {
  auto it = std::lower_bound(b.begin(), b.end(), t - kEps);
  return it == b.begin() ? t : *(it - 1);
}

// ---- link load -------------------------------------------------------------------------------------
void LoadIndex::build(const LinkLoad& load, size_t nlinks) {
  series_of_.assign(nlinks, -1);
  total_gb_.assign(nlinks, 0.0);
  peak_gbs_.assign(nlinks, 0.0);
  busiest_.clear();
  for (size_t s = 0; s < load.series.size(); ++s) {
    const int l = load.series[s].link;
    if (l < 0 || static_cast<size_t>(l) >= nlinks) continue;
    series_of_[l] = static_cast<int>(s);
    double sum = 0, peak = 0;
    for (float v : load.series[s].gbs) {
      sum += v;
      peak = std::max(peak, static_cast<double>(v));
    }
    total_gb_[l] = sum * load.bin_us * 1e-6;  // GB/s x us
    peak_gbs_[l] = peak;
    busiest_.push_back(l);
  }
  std::stable_sort(busiest_.begin(), busiest_.end(), [&](int a, int b) { return total_gb_[a] > total_gb_[b]; });
}

int LoadIndex::bin_at(const LinkLoad& load, double time_us) const {
  if (load.bins <= 0 || !(load.bin_us > 0)) return -1;
  const double f = (time_us - load.t0_us) / load.bin_us;
  if (!(f >= 0)) return -1;
  if (f >= load.bins) return f <= load.bins + 1e-9 ? load.bins - 1 : -1;
  return static_cast<int>(f);
}

const LinkLoad::Series* LoadIndex::series(const LinkLoad& load, int link) const {
  if (link < 0 || static_cast<size_t>(link) >= series_of_.size() || series_of_[link] < 0) return nullptr;
  const int s = series_of_[link];
  return s < static_cast<int>(load.series.size()) ? &load.series[s] : nullptr;
}

double LoadIndex::gbs_at(const LinkLoad& load, int link, double time_us) const {
  const LinkLoad::Series* s = series(load, link);
  if (!s) return 0;
  const int b = bin_at(load, time_us);
  if (b < 0 || b >= static_cast<int>(s->gbs.size())) return 0;
  return s->gbs[b];
}

double utilization(double gbs, double capacity_gbs) {
  if (!(capacity_gbs > 0) || !(gbs > 0)) return 0;
  return gbs / capacity_gbs;
}

// ---- collectives -------------------------------------------------------------------------------------
double busbw_factor(CollKind coll, int n) {
  if (n <= 0) return 1;
  switch (coll) {
    case CollKind::kAllReduce: return 2.0 * (n - 1) / n;
    case CollKind::kAllGather:
    case CollKind::kReduceScatter: return static_cast<double>(n - 1) / n;
    default: return 1;
  }
}

OpBandwidth op_bandwidth(const trace::Op& op, int nranks) {
  OpBandwidth b;
  b.time_us = op.end_us - op.begin_us;
  if (op.algbw > 0) {
    b.algbw = op.algbw;
    b.busbw = op.busbw > 0 ? op.busbw : op.algbw * busbw_factor(op.coll, nranks);
    return b;
  }
  if (b.time_us > 0) {
    b.algbw = static_cast<double>(op.bytes) / (b.time_us * 1e3);  // bytes/us -> GB/s
    b.busbw = b.algbw * busbw_factor(op.coll, nranks);
  }
  return b;
}

int op_at(const Trace& t, double time_us) {
  int before = -1;
  double before_end = 0;
  for (size_t i = 0; i < t.ops.size(); ++i) {
    const trace::Op& o = t.ops[i];
    if (o.begin_us <= time_us && time_us <= o.end_us) return static_cast<int>(i);
    if (o.end_us < time_us && (before < 0 || o.end_us >= before_end)) {
      before = static_cast<int>(i);
      before_end = o.end_us;
    }
  }
  if (before >= 0) return before;
  return t.ops.empty() ? -1 : 0;
}

// ---- names ---------------------------------------------------------------------------------------------
std::string short_node_name(const Trace& t, int node) {
  if (node < 0 || node >= static_cast<int>(t.nodes.size())) return "?";
  const std::string& n = t.nodes[node].name;
  if (n.compare(0, 13, "fabric.spine.") == 0) return "spine " + n.substr(13);
  if (n.compare(0, 12, "fabric.leaf.") == 0) return "leaf " + n.substr(12);
  if (n.compare(0, 7, "fabric.") == 0) return n.substr(7);
  if (t.meta.machines <= 1 && n.compare(0, 3, "m0.") == 0) return n.substr(3);
  return n;
}

std::string link_name(const Trace& t, int link) {
  if (link < 0 || link >= static_cast<int>(t.links.size())) return "?";
  const trace::Link& l = t.links[link];
  auto name = [&](int n) { return n >= 0 && n < static_cast<int>(t.nodes.size()) ? t.nodes[n].name : std::string("?"); };
  return name(l.from) + " -> " + name(l.to);
}

std::string format_time(double us) {
  const double a = std::fabs(us);
  if (a < 1e3) return printf_string("%.3f %s", us, "us");
  if (a < 1e6) return printf_string("%.3f %s", us / 1e3, "ms");
  return printf_string("%.3f %s", us / 1e6, "s");
}

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (std::fabs(bytes) >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  char buf[48];
  if (u == 0 || bytes == std::floor(bytes))
    std::snprintf(buf, sizeof(buf), "%.0f %s", bytes, units[u]);
  else
    std::snprintf(buf, sizeof(buf), "%.1f %s", bytes, units[u]);
  return buf;
}

std::string op_label(const trace::Op& op) {
  std::string s = trace::coll_name(op.coll);
  if (!op.algo.empty() || !op.proto.empty()) s += " " + op.algo + "/" + op.proto;
  s += " " + format_bytes(static_cast<double>(op.bytes));
  return s;
}

// ---- the doctor's reports ----------------------------------------------------------------------------

double stuck_until(const Trace& t, int i) {
  const double never = std::numeric_limits<double>::infinity();
  if (i < 0 || static_cast<size_t>(i) >= t.stuck.size()) return never;
  const trace::Stuck& st = t.stuck[i];
  if (st.certain || st.waits.empty()) return never;
  double until = st.time_us;
  for (const trace::StuckWait& w : st.waits) {
    bool done = false;
    for (const trace::Op& o : t.ops)
      if (o.op_count == w.op_count && o.end_us >= st.time_us) {
        until = std::max(until, o.end_us);
        done = true;
      }
    if (!done) return never;
  }
  return until;
}

int stuck_at(const Trace& t, double time_us) {
  int found = -1;
  for (size_t i = 0; i < t.stuck.size(); ++i)
    if (t.stuck[i].time_us <= time_us && (found < 0 || t.stuck[i].time_us >= t.stuck[found].time_us))
      found = static_cast<int>(i);
  return found >= 0 && time_us < stuck_until(t, found) ? found : -1;
}

std::pair<double, double> trace_span(const Trace& t) {
  double b = t.begin_us(), e = t.end_us();
  bool any = !t.events.empty();
  for (size_t i = 0; i < t.stuck.size(); ++i) {
    const trace::Stuck& st = t.stuck[i];
    if (!std::isfinite(st.time_us)) continue;
    b = any ? std::min(b, st.time_us) : std::min(0.0, st.time_us);
    e = std::max(e, st.time_us);
    any = true;
    // The end of the waits of a late rank's report (its operation's end: after the last step's).
    const double until = stuck_until(t, static_cast<int>(i));
    if (std::isfinite(until)) e = std::max(e, until);
  }
  return {b, e};
}

std::string StuckPicture::state(int rank) const {
  for (const auto& s : states)
    if (s.first == rank) return s.second;
  return "";
}

StuckPicture stuck_picture(const trace::Stuck& st) {
  StuckPicture p;
  for (const trace::StuckRank& r : st.ranks) p.states.emplace_back(r.rank, r.state);
  std::map<std::pair<int, int>, std::vector<const trace::StuckWait*>> by_pair;
  for (const trace::StuckWait& w : st.waits) {
    if (w.rank < 0) continue;
    p.waiting.push_back(w.rank);
    if (w.peer >= 0 && w.peer != w.rank) by_pair[{w.rank, w.peer}].push_back(&w);
  }
  std::sort(p.waiting.begin(), p.waiting.end());
  p.waiting.erase(std::unique(p.waiting.begin(), p.waiting.end()), p.waiting.end());
  auto waits = [&](int r) { return std::binary_search(p.waiting.begin(), p.waiting.end(), r); };
  for (const auto& kv : by_pair) {
    StuckPicture::Arrow a;
    a.from = kv.first.first;
    a.to = kv.first.second;
    a.waits = static_cast<int>(kv.second.size());
    for (size_t i = 0; i < kv.second.size() && i < 3; ++i) {
      const trace::StuckWait& w = *kv.second[i];
      a.label += (i ? "\n" : "") + std::string(w.for_data ? "data" : "credits") + " ch " + std::to_string(w.channel) +
                 " step " + std::to_string(static_cast<unsigned long long>(w.step));
    }
    if (kv.second.size() > 3) a.label += "\n+" + std::to_string(kv.second.size() - 3) + " more";
    p.arrows.push_back(std::move(a));
    if (!waits(kv.first.second)) p.culprits.push_back(kv.first.second);
  }
  for (const trace::StuckRank& r : st.ranks)
    if (r.state == "left" || r.state == "dead") p.culprits.push_back(r.rank);
  std::sort(p.culprits.begin(), p.culprits.end());
  p.culprits.erase(std::unique(p.culprits.begin(), p.culprits.end()), p.culprits.end());
  return p;
}

}  // namespace viz
}  // namespace cclab
