// runtime/trace/chrome.cc - see chrome.h.
#include "trace/chrome.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

namespace cclab {
namespace trace {

namespace {

constexpr int64_t kMinNs = std::numeric_limits<int64_t>::min();
constexpr int64_t kMaxNs = std::numeric_limits<int64_t>::max();
constexpr uint16_t kNotEmitted = 0xffff;

// Microseconds -> integer nanoseconds (the trace's own resolution); false when not finite or too large.
bool to_ns(double us, int64_t* ns) {
  if (!std::isfinite(us) || std::fabs(us) > 9e12) return false;
  *ns = std::llround(us * 1000.0);
  return true;
}

// Appends one UTF-8 sequence starting at s[i] when valid; returns its length, 0 when invalid.
size_t utf8_length(const std::string& s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  size_t n;
  uint32_t cp;
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
    cp = c & 0x1f;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    cp = c & 0x0f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    const auto d = static_cast<unsigned char>(s[i + k]);
    if ((d & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (d & 0x3f);
  }
  // Overlong forms, surrogates and values past U+10FFFF are invalid.
  if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
    return 0;
  return n;
}

void append_quoted(std::string* out, const std::string& s) {
  out->push_back('"');
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '"': *out += "\\\""; break;
        case '\\': *out += "\\\\"; break;
        case '\n': *out += "\\n"; break;
        case '\r': *out += "\\r"; break;
        case '\t': *out += "\\t"; break;
        case '\b': *out += "\\b"; break;
        case '\f': *out += "\\f"; break;
        default:
          if (c < 0x20 || c == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof(buf), "\\u%04x", c);
            *out += buf;
          } else {
            out->push_back(static_cast<char>(c));
          }
      }
      ++i;
      continue;
    }
    const size_t n = utf8_length(s, i);
    if (n == 0) {
      *out += "\xef\xbf\xbd";  // U+FFFD for a byte that starts no valid sequence
      ++i;
    } else {
      out->append(s, i, n);
      i += n;
    }
  }
  out->push_back('"');
}

// Buffered JSON text to a stream.
class Writer {
 public:
  explicit Writer(std::ostream& os) : os_(os) { buf_.reserve(kFlushAt + 4096); }
  std::string& buf() { return buf_; }
  void str(const std::string& s) { append_quoted(&buf_, s); }
  void raw(const char* s) { buf_ += s; }
  void integer(int64_t v) {
    char b[24];
    buf_.append(b, std::to_chars(b, b + sizeof(b), v).ptr);
  }
  void uinteger(uint64_t v) {
    char b[24];
    buf_.append(b, std::to_chars(b, b + sizeof(b), v).ptr);
  }
  // Nanoseconds as microseconds with three decimals (exact).
  void micros(int64_t ns) {
    char b[32];
    char* p = b;
    const uint64_t a = ns < 0 ? 0 - static_cast<uint64_t>(ns) : static_cast<uint64_t>(ns);
    if (ns < 0) *p++ = '-';
    p = std::to_chars(p, b + sizeof(b) - 4, a / 1000).ptr;
    const unsigned frac = static_cast<unsigned>(a % 1000);
    *p++ = '.';
    *p++ = static_cast<char>('0' + frac / 100);
    *p++ = static_cast<char>('0' + frac / 10 % 10);
    *p++ = static_cast<char>('0' + frac % 10);
    buf_.append(b, p);
  }
  void real(double v, const char* fmt = "%.6g") {
    if (!std::isfinite(v)) v = 0;
    char b[40];
    std::snprintf(b, sizeof(b), fmt, v);
    buf_ += b;
  }
  // Ends one event line; flushes the buffer when it is large.
  void end_event() {
    buf_ += "}";
    if (buf_.size() >= kFlushAt) flush();
  }
  void begin_event() { buf_ += started_ ? ",\n{" : "\n{"; started_ = true; }
  bool flush() {
    if (!buf_.empty() && os_) {
      os_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
      written_ += buf_.size();
    }
    buf_.clear();
    return static_cast<bool>(os_);
  }
  bool ok() const { return static_cast<bool>(os_); }
  uint64_t written() const { return written_; }

 private:
  static constexpr size_t kFlushAt = 1 << 16;
  std::ostream& os_;
  std::string buf_;
  uint64_t written_ = 0;
  bool started_ = false;
};

struct Span {
  int rank = 0, channel = 0;
  uint64_t op = 0;
  int64_t b = 0, e = 0;
  uint64_t steps = 0;
  CollKind coll = CollKind::kAllReduce;
};

struct SpanKeyHash {
  size_t operator()(const std::tuple<int, int, uint64_t>& k) const {
    uint64_t h = static_cast<uint64_t>(static_cast<uint32_t>(std::get<0>(k))) * 0x9e3779b97f4a7c15ull;
    h ^= static_cast<uint64_t>(static_cast<uint32_t>(std::get<1>(k))) + 0x7f4a7c159e3779b9ull + (h << 6) + (h >> 2);
    h ^= std::get<2>(k) * 0xc2b2ae3d27d4eb4full + (h << 6) + (h >> 2);
    return static_cast<size_t>(h);
  }
};

enum SliceKind : uint8_t { kColl = 0, kKernel = 1, kStep = 2 };

struct Slice {
  int64_t b, e;
  uint32_t index;  // into colls, kernels or events
  uint8_t kind;
};

// Slices of one lane must nest: each sub-lane is a stack of the ends of its open slices.
class Lanes {
 public:
  // The sub-lane (0 first) where [b, e] nests; slices must come in (begin, longest first) order.
  int place(int rank, int tid, int64_t b, int64_t e, bool* opened) {
    std::vector<std::vector<int64_t>>& subs = lanes_[{rank, tid}];
    *opened = false;
    for (size_t k = 0; k < subs.size(); ++k) {
      std::vector<int64_t>& st = subs[k];
      while (!st.empty() && st.back() <= b) st.pop_back();
      if (st.empty() || e <= st.back()) {
        // A zero-length slice at the end of its parent still nests; it never stays open.
        st.push_back(e);
        return static_cast<int>(k);
      }
    }
    subs.emplace_back(1, e);
    *opened = subs.size() > 1;
    return static_cast<int>(subs.size() - 1);
  }
  // (rank, tid) -> number of sub-lanes.
  std::map<std::pair<int, int>, size_t> used() const {
    std::map<std::pair<int, int>, size_t> out;
    for (const auto& l : lanes_) out[l.first] = l.second.size();
    return out;
  }

 private:
  std::map<std::pair<int, int>, std::vector<std::vector<int64_t>>> lanes_;
};

const char* proto_name(int p) {
  const char* s = proto_label(p);
  return s != nullptr ? s : "?";
}

const char* coll_label(CollKind c) {
  const char* s = coll_name(c);
  return s != nullptr ? s : "Collective";
}

const char* prim_name(PrimKind p) {
  const char* s = prim_label(p);
  return s != nullptr ? s : "step";
}

void common(Writer& w, const char* ph, int pid, int64_t tid) {
  w.raw("\"ph\":\"");
  w.raw(ph);
  w.raw("\",\"pid\":");
  w.integer(pid);
  w.raw(",\"tid\":");
  w.integer(tid);
}

// A metadata event: process_name / thread_name (value) or process_sort_index / thread_sort_index (number).
void metadata(Writer& w, const char* name, int pid, int64_t tid, const std::string& value, bool numeric,
              int64_t number) {
  w.begin_event();
  w.raw("\"name\":\"");
  w.raw(name);
  w.raw("\",");
  common(w, "M", pid, tid);
  if (numeric) {
    w.raw(",\"args\":{\"sort_index\":");
    w.integer(number);
  } else {
    w.raw(",\"args\":{\"name\":");
    w.str(value);
  }
  w.raw("}");
  w.end_event();
}

}  // namespace

std::string json_quote(const std::string& s) {
  std::string out;
  append_quoted(&out, s);
  return out;
}

int chrome_links_pid(const Trace& t) {
  int n = std::max(t.meta.nranks, 0);
  for (const Event& e : t.events) n = std::max(n, e.rank + 1);
  for (const Node& node : t.nodes) n = std::max(n, node.rank + 1);
  return n;
}

bool export_chrome(const Trace& t, std::ostream& out, const ChromeOptions& opt, std::string* error,
                   ChromeStats* stats_out) {
  ChromeStats stats;
  if (std::isnan(opt.from_us) || std::isnan(opt.to_us) || opt.from_us > opt.to_us) {
    if (error) *error = "the time window is empty (--from must not be after --to)";
    return false;
  }
  // The window in ns, clamped (a bound past the int64 range is no bound).
  auto bound = [](double us, bool up) {
    const double v = up ? std::ceil(us * 1000.0) : std::floor(us * 1000.0);
    if (v <= -9.2e18) return kMinNs;
    if (v >= 9.2e18) return kMaxNs;
    return static_cast<int64_t>(v);
  };
  const int64_t from = bound(opt.from_us, false), to = bound(opt.to_us, true);
  auto in_window = [&](int64_t b, int64_t e) { return b <= to && e >= from; };

  const size_t n = t.events.size();
  if (n >= std::numeric_limits<uint32_t>::max()) {
    if (error) *error = "too many events for one export (" + std::to_string(n) + ")";
    return false;
  }

  // Event times in ns; events with times that are not finite are left out.
  std::vector<int64_t> eb(n), ee(n);
  std::vector<uint8_t> valid(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const Event& e = t.events[i];
    int64_t b, en;
    if (!to_ns(e.begin_us, &b) || !to_ns(e.end_us, &en) || e.rank < 0 || e.channel < 0) continue;
    eb[i] = b;
    ee[i] = std::max(b, en);
    valid[i] = 1;
  }

  // Collective (rank, op) and kernel (rank, channel, op) spans from the steps.
  std::unordered_map<std::tuple<int, int, uint64_t>, uint32_t, SpanKeyHash> coll_of, kernel_of;
  std::vector<Span> colls, kernels;
  auto grow = [](std::unordered_map<std::tuple<int, int, uint64_t>, uint32_t, SpanKeyHash>& index,
                 std::vector<Span>& spans, const std::tuple<int, int, uint64_t>& key, const Event& e, int64_t b,
                 int64_t en) {
    auto it = index.find(key);
    if (it == index.end()) {
      Span s;
      s.rank = e.rank;
      s.channel = std::get<1>(key);
      s.op = e.op_count;
      s.b = b;
      s.e = en;
      s.coll = e.coll;
      s.steps = 1;
      index.emplace(key, static_cast<uint32_t>(spans.size()));
      spans.push_back(s);
      return;
    }
    Span& s = spans[it->second];
    s.b = std::min(s.b, b);
    s.e = std::max(s.e, en);
    ++s.steps;
  };
  for (size_t i = 0; i < n; ++i) {
    if (!valid[i]) continue;
    const Event& e = t.events[i];
    grow(coll_of, colls, {e.rank, -1, e.op_count}, e, eb[i], ee[i]);
    grow(kernel_of, kernels, {e.rank, e.channel, e.op_count}, e, eb[i], ee[i]);
  }
  coll_of.clear();
  kernel_of.clear();
  std::unordered_map<uint64_t, size_t> op_index;
  for (size_t i = 0; i < t.ops.size(); ++i) op_index.emplace(t.ops[i].op_count, i);

  // Every slice in the window, in (begin, longest first, parent kind first) order.
  std::vector<Slice> slices;
  slices.reserve((opt.steps ? n : 0) + colls.size() + kernels.size());
  for (size_t i = 0; i < colls.size(); ++i)
    if (in_window(colls[i].b, colls[i].e)) slices.push_back({colls[i].b, colls[i].e, static_cast<uint32_t>(i), kColl});
  for (size_t i = 0; i < kernels.size(); ++i)
    if (in_window(kernels[i].b, kernels[i].e))
      slices.push_back({kernels[i].b, kernels[i].e, static_cast<uint32_t>(i), kKernel});
  if (opt.steps)
    for (size_t i = 0; i < n; ++i)
      if (valid[i] && in_window(eb[i], ee[i])) slices.push_back({eb[i], ee[i], static_cast<uint32_t>(i), kStep});
  std::sort(slices.begin(), slices.end(), [](const Slice& a, const Slice& b) {
    if (a.b != b.b) return a.b < b.b;
    if (a.e != b.e) return a.e > b.e;
    if (a.kind != b.kind) return a.kind < b.kind;
    return a.index < b.index;
  });

  Writer w(out);
  w.raw("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"exporter\":\"cclab trace export --chrome\"");
  const std::pair<const char*, const std::string*> other[] = {
      {"tool", &t.meta.tool},           {"backend", &t.meta.backend}, {"clock", &t.meta.clock},
      {"topology", &t.meta.topo_name},  {"command", &t.meta.command}, {"created", &t.meta.created}};
  for (const auto& kv : other) {
    w.raw(",\"");
    w.raw(kv.first);
    w.raw("\":");
    w.str(*kv.second);
  }
  w.raw(",\"nranks\":\"");
  w.integer(t.meta.nranks);
  w.raw("\"},\n\"traceEvents\":[");

  // Processes: ranks 0..nranks-1, and any other rank that plays a node or has steps.
  const int links_pid = chrome_links_pid(t);
  std::set<int> ranks;
  for (int r = 0; r < t.meta.nranks; ++r) ranks.insert(r);
  for (const Node& node : t.nodes)
    if (node.rank >= 0) ranks.insert(node.rank);
  for (const Span& c : colls) ranks.insert(c.rank);
  for (const int r : ranks) {
    const int node = t.rank_node(r);
    std::string name = "rank " + std::to_string(r);
    if (node >= 0 && node < static_cast<int>(t.nodes.size())) name += " (" + t.nodes[node].name + ")";
    metadata(w, "process_name", r, 0, name, false, 0);
    metadata(w, "process_sort_index", r, 0, "", true, r);
    stats.metadata += 2;
  }

  // Slices.
  Lanes lanes;
  std::vector<uint16_t> sub_of(opt.steps ? n : 0, kNotEmitted);
  for (const Slice& s : slices) {
    const Span* span = s.kind == kColl ? &colls[s.index] : s.kind == kKernel ? &kernels[s.index] : nullptr;
    const Event* ev = s.kind == kStep ? &t.events[s.index] : nullptr;
    const int rank = span ? span->rank : ev->rank;
    const int base = s.kind == kColl ? kChromeCollTid : span ? span->channel : ev->channel;
    bool opened = false;
    const int sub = lanes.place(rank, base, s.b, s.e, &opened);
    if (sub >= kNotEmitted) {
      if (error) *error = "too many overlapping slices on rank " + std::to_string(rank);
      return false;
    }
    stats.sub_lanes += opened;
    const int64_t tid = base + static_cast<int64_t>(sub) * kChromeSubLaneStride;
    w.begin_event();
    if (s.kind == kColl) {
      const auto it = op_index.find(span->op);
      const Op* op = it == op_index.end() ? nullptr : &t.ops[it->second];
      w.raw("\"name\":");
      w.str(coll_label(op ? op->coll : span->coll));
      w.raw(",\"cat\":\"COLL\",");
      common(w, "X", rank, tid);
      w.raw(",\"ts\":");
      w.micros(s.b);
      w.raw(",\"dur\":");
      w.micros(s.e - s.b);
      w.raw(",\"args\":{\"op\":");
      w.uinteger(span->op);
      if (op) {
        w.raw(",\"algo\":");
        w.str(op->algo);
        w.raw(",\"proto\":");
        w.str(op->proto);
        w.raw(",\"type\":");
        w.str(op->type);
        w.raw(",\"redop\":");
        w.str(op->redop);
        w.raw(",\"count\":");
        w.uinteger(op->count);
        w.raw(",\"bytes\":");
        w.uinteger(op->bytes);
        w.raw(",\"root\":");
        w.integer(op->root);
        w.raw(",\"nchannels\":");
        w.integer(op->nchannels);
        w.raw(",\"algbw\":");
        w.real(op->algbw);
        w.raw(",\"busbw\":");
        w.real(op->busbw);
      }
      w.raw(",\"steps\":");
      w.uinteger(span->steps);
      w.raw("}");
      ++stats.collectives;
    } else if (s.kind == kKernel) {
      w.raw("\"name\":\"KernelCh");
      w.integer(span->channel);
      w.raw("\",\"cat\":\"GPU\",");
      common(w, "X", rank, tid);
      w.raw(",\"ts\":");
      w.micros(s.b);
      w.raw(",\"dur\":");
      w.micros(s.e - s.b);
      w.raw(",\"args\":{\"op\":");
      w.uinteger(span->op);
      w.raw(",\"channel\":");
      w.integer(span->channel);
      w.raw(",\"steps\":");
      w.uinteger(span->steps);
      w.raw("}");
      ++stats.kernels;
    } else {
      sub_of[s.index] = static_cast<uint16_t>(sub);
      w.raw("\"name\":");
      w.str(prim_name(ev->prim));
      w.raw(",\"cat\":\"STEP\",");
      common(w, "X", rank, tid);
      w.raw(",\"ts\":");
      w.micros(s.b);
      w.raw(",\"dur\":");
      w.micros(s.e - s.b);
      w.raw(",\"args\":{\"op\":");
      w.uinteger(ev->op_count);
      w.raw(",\"coll\":");
      w.str(coll_label(ev->coll));
      w.raw(",\"send_peer\":");
      w.integer(ev->send_peer);
      w.raw(",\"recv_peer\":");
      w.integer(ev->recv_peer);
      w.raw(",\"step\":");
      w.uinteger(ev->step);
      w.raw(",\"offset\":");
      w.uinteger(ev->offset);
      w.raw(",\"bytes\":");
      w.uinteger(ev->bytes);
      w.raw(",\"proto\":");
      w.str(proto_name(ev->proto));
      int64_t data_ns;
      const int64_t wait = to_ns(ev->data_us, &data_ns) ? std::min(std::max<int64_t>(data_ns - s.b, 0), s.e - s.b) : 0;
      w.raw(",\"wait_us\":");
      w.micros(wait);
      w.raw("}");
      ++stats.steps;
    }
    w.end_event();
    if (!w.ok()) break;
  }
  slices.clear();
  slices.shrink_to_fit();

  // Flows: each sending step to the step that receives its slice. A connection (from, to, channel) is a
  // FIFO, so within one collective the k-th step of `from` that sends to `to` on the channel is received
  // by the k-th step of `to` that receives from `from` there. Pairs are made over the whole trace, then
  // those with both ends in the output are written.
  if (opt.steps && opt.flows && w.ok()) {
    // Sort keys, packed: the connection (from, to, channel), the op, the begin time, the event.
    struct FlowKey {
      uint64_t conn;
      uint64_t op;
      int64_t b;
      uint32_t index;
      bool operator<(const FlowKey& o) const {
        return std::tie(conn, op, b, index) < std::tie(o.conn, o.op, o.b, o.index);
      }
      bool same_group(const FlowKey& o) const { return conn == o.conn && op == o.op; }
      bool group_before(const FlowKey& o) const { return std::tie(conn, op) < std::tie(o.conn, o.op); }
    };
    auto conn_of = [](int from, int to, int channel) {
      return (static_cast<uint64_t>(static_cast<uint32_t>(from) & 0xffffff) << 40) |
             (static_cast<uint64_t>(static_cast<uint32_t>(to) & 0xffffff) << 16) |
             (static_cast<uint64_t>(static_cast<uint32_t>(channel) & 0xffff));
    };
    std::vector<FlowKey> sends, recvs;
    for (size_t i = 0; i < n; ++i) {
      if (!valid[i]) continue;
      const Event& e = t.events[i];
      const uint32_t idx = static_cast<uint32_t>(i);
      if (e.send_peer >= 0) sends.push_back({conn_of(e.rank, e.send_peer, e.channel), e.op_count, eb[i], idx});
      if (e.recv_peer >= 0) recvs.push_back({conn_of(e.recv_peer, e.rank, e.channel), e.op_count, eb[i], idx});
    }
    std::sort(sends.begin(), sends.end());
    std::sort(recvs.begin(), recvs.end());
    auto end_of_flow = [&](const char* ph, uint32_t i, uint64_t id) {
      const Event& e = t.events[i];
      w.begin_event();
      w.raw("\"name\":\"send\",\"cat\":\"FLOW\",");
      common(w, ph, e.rank, e.channel + static_cast<int64_t>(sub_of[i]) * kChromeSubLaneStride);
      w.raw(",\"ts\":");
      w.micros(eb[i] + (ee[i] - eb[i]) / 2);
      w.raw(",\"id\":");
      w.uinteger(id);
      if (ph[0] == 'f') w.raw(",\"bp\":\"e\"");
      w.end_event();
    };
    size_t r = 0;
    for (size_t i = 0; i < sends.size() && w.ok();) {
      // One connection's group of sends and its group of receives, paired in order.
      size_t i_end = i;
      while (i_end < sends.size() && sends[i_end].same_group(sends[i])) ++i_end;
      while (r < recvs.size() && recvs[r].group_before(sends[i])) ++r;
      size_t r_end = r;
      while (r_end < recvs.size() && recvs[r_end].same_group(sends[i])) ++r_end;
      for (size_t j = 0; i + j < i_end; ++j) {
        const uint32_t snd = sends[i + j].index;
        if (sub_of[snd] == kNotEmitted) continue;
        if (r + j >= r_end) {
          ++stats.unmatched_sends;
          continue;
        }
        const uint32_t rcv = recvs[r + j].index;
        if (sub_of[rcv] == kNotEmitted) continue;  // received outside the window
        const uint64_t id = ++stats.flows;
        end_of_flow("s", snd, id);
        end_of_flow("f", rcv, id);
      }
      i = i_end;
      r = r_end;
    }
  }

  // Counters: GB/s of each link per LOAD bin.
  if (opt.counters && w.ok() && t.load.bins > 0 && t.load.bin_us > 0 && std::isfinite(t.load.t0_us) &&
      std::isfinite(t.load.bin_us)) {
    const LinkLoad& L = t.load;
    std::vector<size_t> chosen;
    for (size_t i = 0; i < L.series.size(); ++i) chosen.push_back(i);
    if (opt.max_link_counters > 0 && chosen.size() > static_cast<size_t>(opt.max_link_counters)) {
      // The busiest: most bytes (the sum of the bins), then the highest peak, then the lower link index.
      std::vector<double> sum(L.series.size(), 0), peak(L.series.size(), 0);
      for (size_t i = 0; i < L.series.size(); ++i)
        for (float g : L.series[i].gbs) {
          const double v = std::isfinite(g) ? g : 0.0;
          sum[i] += v;
          peak[i] = std::max(peak[i], v);
        }
      std::sort(chosen.begin(), chosen.end(), [&](size_t a, size_t b) {
        if (sum[a] != sum[b]) return sum[a] > sum[b];
        if (peak[a] != peak[b]) return peak[a] > peak[b];
        return L.series[a].link < L.series[b].link;
      });
      chosen.resize(static_cast<size_t>(opt.max_link_counters));
      std::sort(chosen.begin(), chosen.end());
    }
    // Track names from the endpoints; a link that shares its endpoints with an earlier one gets " #index"
    // (names do not depend on which links are chosen).
    auto node_name = [&](int node) {
      return node >= 0 && node < static_cast<int>(t.nodes.size()) ? t.nodes[node].name : "node" + std::to_string(node);
    };
    std::vector<std::string> names(L.series.size());
    std::map<std::string, int> names_used;
    for (size_t i = 0; i < L.series.size(); ++i) {
      const int link = L.series[i].link;
      std::string name = "link " + std::to_string(link);
      if (link >= 0 && link < static_cast<int>(t.links.size()))
        name = node_name(t.links[link].from) + "->" + node_name(t.links[link].to);
      if (names_used[name]++ > 0) name += " #" + std::to_string(link);
      names[i] = name;
    }
    bool any = false;
    for (size_t c : chosen) {
      const LinkLoad::Series& s = L.series[c];
      const std::string& name = names[c];
      const int bins = std::min(L.bins, static_cast<int>(s.gbs.size()));
      bool emitted = false;
      float last = 0;
      int64_t last_end = 0;
      for (int i = 0; i < bins && w.ok(); ++i) {
        int64_t b, e;
        if (!to_ns(L.t0_us + i * L.bin_us, &b) || !to_ns(L.t0_us + (i + 1) * L.bin_us, &e)) break;
        if (!(b <= to && e > from)) continue;
        const float v = std::isfinite(s.gbs[i]) ? s.gbs[i] : 0.0f;
        last_end = e;
        if (emitted && v == last) continue;
        w.begin_event();
        w.raw("\"name\":");
        w.str(name);
        w.raw(",\"cat\":\"LINK\",\"ph\":\"C\",\"pid\":");
        w.integer(links_pid);
        w.raw(",\"ts\":");
        w.micros(b);
        w.raw(",\"args\":{\"GB/s\":");
        w.real(v);
        w.raw("}");
        w.end_event();
        ++stats.counter_samples;
        emitted = true;
        last = v;
      }
      if (!emitted) continue;
      any = true;
      ++stats.counter_tracks;
      if (last != 0) {
        w.begin_event();
        w.raw("\"name\":");
        w.str(name);
        w.raw(",\"cat\":\"LINK\",\"ph\":\"C\",\"pid\":");
        w.integer(links_pid);
        w.raw(",\"ts\":");
        w.micros(last_end);
        w.raw(",\"args\":{\"GB/s\":0}");
        w.end_event();
        ++stats.counter_samples;
      }
    }
    if (any) {
      metadata(w, "process_name", links_pid, 0, "links", false, 0);
      metadata(w, "process_sort_index", links_pid, 0, "", true, links_pid);
      stats.metadata += 2;
    }
  }

  // Threads: every lane that got a slice.
  for (const auto& lane : lanes.used()) {
    const int rank = lane.first.first, base = lane.first.second;
    for (size_t k = 0; k < lane.second; ++k) {
      const int64_t tid = base + static_cast<int64_t>(k) * kChromeSubLaneStride;
      std::string name = base == kChromeCollTid ? "collectives" : "channel " + std::to_string(base);
      if (k > 0) name += " (overlap " + std::to_string(k) + ")";
      metadata(w, "thread_name", rank, tid, name, false, 0);
      metadata(w, "thread_sort_index", rank, tid, "", true,
               base == kChromeCollTid ? -1 - static_cast<int64_t>(k) : 16 * static_cast<int64_t>(base) + k);
      stats.metadata += 2;
    }
  }

  w.raw("\n]}\n");
  const bool flushed = w.flush();
  out.flush();
  stats.bytes = w.written();
  if (stats_out) *stats_out = stats;
  if (!flushed || !out) {
    if (error) *error = "writing the JSON failed";
    return false;
  }
  return true;
}

}  // namespace trace
}  // namespace cclab
