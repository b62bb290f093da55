// runtime/trace/trace.cc - the trace's helpers, names, the streaming writer, the whole-file and
// stream readers (the bytes themselves: trace_codec.cc; the format: docs/trace-format.md).
#include "trace/trace.h"

#include <chrono>
#include <ctime>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <unordered_map>

#include "kernels/describe.h"
#include "kernels/work.h"
#include "trace/codec.h"

namespace cclab {
namespace trace {

// ---- Trace helpers ------------------------------------------------------------------------------

struct Trace::RouteCache {
  const Route* data = nullptr;  // what it was built from: rebuilt when routes is reallocated or resized,
  size_t size = 0;
  std::array<std::pair<int, int>, 4> sample{};  // or when one of these entries changed
  int dim = 0;                                  // dense: table[src * dim + dst] (-1 none)
  std::vector<int> dense;
  std::unordered_map<uint64_t, int> sparse;     // when ranks are too many (or negative) for a table

  static size_t sample_at(size_t size, int k) { return size == 0 ? 0 : (size - 1) * static_cast<size_t>(k) / 3; }
  bool valid_for(const std::vector<Route>& routes) const {
    if (data != routes.data() || size != routes.size()) return false;
    for (int k = 0; k < 4 && size > 0; ++k) {
      const Route& r = routes[sample_at(size, k)];
      if (r.src != sample[k].first || r.dst != sample[k].second) return false;
    }
    return true;
  }
  static uint64_t key(int src, int dst) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(src)) << 32) | static_cast<uint32_t>(dst);
  }
  int find(int src, int dst) const {
    if (dim > 0) {
      if (src < 0 || dst < 0 || src >= dim || dst >= dim) return -1;
      return dense[static_cast<size_t>(src) * dim + dst];
    }
    auto it = sparse.find(key(src, dst));
    return it == sparse.end() ? -1 : it->second;
  }
};

int Trace::route_index(int src, int dst) const {
  if (routes.empty()) return -1;
  std::shared_ptr<const RouteCache> c = std::atomic_load(&route_cache_);
  if (c && c->valid_for(routes)) {
    const int i = c->find(src, dst);
    if (i < 0 || (routes[i].src == src && routes[i].dst == dst)) return i;
  }
  auto n = std::make_shared<RouteCache>();
  n->data = routes.data();
  n->size = routes.size();
  for (int k = 0; k < 4; ++k) {
    const Route& r = routes[RouteCache::sample_at(routes.size(), k)];
    n->sample[k] = {r.src, r.dst};
  }
  int lo = 0, hi = -1;
  for (const Route& r : routes) {
    lo = std::min({lo, r.src, r.dst});
    hi = std::max({hi, r.src, r.dst});
  }
  if (lo >= 0 && hi < 4096) {
    n->dim = hi + 1;
    n->dense.assign(static_cast<size_t>(n->dim) * n->dim, -1);
    for (size_t i = routes.size(); i-- > 0;)  // the first route of a pair wins
      n->dense[static_cast<size_t>(routes[i].src) * n->dim + routes[i].dst] = static_cast<int>(i);
  } else {
    n->sparse.reserve(routes.size());
    for (size_t i = 0; i < routes.size(); ++i)
      n->sparse.emplace(RouteCache::key(routes[i].src, routes[i].dst), static_cast<int>(i));
  }
  const int i = n->find(src, dst);
  std::atomic_store(&route_cache_, std::shared_ptr<const RouteCache>(std::move(n)));
  return i;
}

double Trace::begin_us() const {
  if (events.empty()) return 0;
  double b = events.front().begin_us;
  for (const Event& e : events) b = std::min(b, e.begin_us);
  return b;
}

double Trace::end_us() const {
  if (events.empty()) return 0;
  double b = events.front().end_us;
  for (const Event& e : events) b = std::max(b, e.end_us);
  return b;
}

int Trace::rank_node(int rank) const {
  if (rank < 0) return -1;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].rank == rank) return static_cast<int>(i);
  return -1;
}

Event event_from_record(const StepRecord& r, int proto, int route) {
  Event e;
  e.rank = r.rank;
  e.channel = r.channel;
  e.send_peer = r.send_peer;
  e.recv_peer = r.recv_peer;
  e.op_count = r.op_count;
  e.step = r.step;
  e.prim = r.prim;
  e.coll = r.coll;
  e.proto = static_cast<uint8_t>(proto >= kProtoLL && proto <= kProtoSimple ? proto : kProtoSimple);
  e.offset = r.offset;
  e.bytes = r.bytes;
  e.begin_us = r.begin_us;
  e.end_us = r.end_us;
  // An executor that does not report when the data started to move leaves data_us outside
  // [begin, end] (0): then the step is taken to have waited until its end.
  e.data_us = r.data_us >= r.begin_us && r.data_us <= r.end_us ? r.data_us : r.end_us;
  e.route = route;
  return e;
}

void sort_events(std::vector<Event>* events) {
  std::stable_sort(events->begin(), events->end(), [](const Event& a, const Event& b) {
    if (a.begin_us != b.begin_us) return a.begin_us < b.begin_us;
    if (a.rank != b.rank) return a.rank < b.rank;
    if (a.channel != b.channel) return a.channel < b.channel;
    return a.step < b.step;
  });
}

const char* section_name(SectionKind k) {
  switch (k) {
    case SectionKind::kMeta: return "META";
    case SectionKind::kTopo: return "TOPO";
    case SectionKind::kChannels: return "CHAN";
    case SectionKind::kOps: return "OPS";
    case SectionKind::kEvents: return "EVTS";
    case SectionKind::kLoad: return "LOAD";
    case SectionKind::kEnd: return "END";
    case SectionKind::kStuck: return "STUK";
  }
  return "????";
}

const char* coll_name(CollKind c) {
  switch (c) {
    case CollKind::kAllReduce: return "AllReduce";
    case CollKind::kBroadcast: return "Broadcast";
    case CollKind::kReduce: return "Reduce";
    case CollKind::kAllGather: return "AllGather";
    case CollKind::kReduceScatter: return "ReduceScatter";
    case CollKind::kSendRecv: return "SendRecv";
    case CollKind::kNumKinds: break;
  }
  return "?";
}

const char* prim_label(PrimKind p) { return prim_name(p); }

const char* proto_label(int proto) {
  switch (proto) {
    case kProtoLL: return "LL";
    case kProtoLL128: return "LL128";
    case kProtoSimple: return "Simple";
  }
  return "?";
}

// ---- TraceWriter --------------------------------------------------------------------------------

TraceWriter::TraceWriter() = default;

TraceWriter::~TraceWriter() {
  if (file_) fclose(file_);  // unfinished: no END, a reader reports it incomplete
}

bool TraceWriter::open(const std::string& path, std::string* error) {
  if (file_) fclose(file_);
  file_ = nullptr;
  sink_ = nullptr;
  path_ = path;
  error_.clear();
  file_ = fopen(path.c_str(), "wb");
  if (!file_) {
    error_ = path + ": cannot open for writing: " + strerror(errno);
    if (error) *error = error_;
    return false;
  }
  return true;
}

void TraceWriter::open_sink(Sink sink, void* user) {
  if (file_) fclose(file_);
  file_ = nullptr;
  sink_ = sink;
  user_ = user;
  path_.clear();
  error_.clear();
}

bool TraceWriter::put(const std::string& bytes) {
  if (!error_.empty()) return false;
  if (file_) {
    if (fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size()) {
      error_ = path_ + ": write failed: " + strerror(errno);
      return false;
    }
    return true;
  }
  if (sink_) {
    if (!sink_(bytes.data(), bytes.size(), user_)) {
      error_ = "the trace sink failed";
      return false;
    }
    return true;
  }
  error_ = "the trace writer is not open";
  return false;
}

bool TraceWriter::section(SectionKind kind, const std::string& raw, bool compress) {
  if (!put(codec::pack_section(kind, raw, compress))) return false;
  ++sections_;
  return true;
}

namespace {
std::string prefixed(const std::string& path, const std::string& what) {
  return path.empty() ? what : path + ": " + what;
}
}  // namespace

bool TraceWriter::begin(const Trace& t) {
  if (!error_.empty()) return false;
  if (begun_) {
    error_ = prefixed(path_, "begin() called twice");
    return false;
  }
  std::string why = codec::check_meta(t.meta);
  if (why.empty()) why = codec::check_topo(t);
  if (why.empty()) why = codec::check_channels(t, t.channels);
  if (!why.empty()) {
    error_ = prefixed(path_, "cannot write this trace: " + why);
    return false;
  }
  nranks_ = t.meta.nranks;
  nroutes_ = t.routes.size();
  nlinks_ = t.links.size();
  begun_ = true;
  return put(codec::file_header()) && section(SectionKind::kMeta, codec::encode_meta(t.meta), true) &&
         section(SectionKind::kTopo, codec::encode_topo(t), true) &&
         section(SectionKind::kChannels, codec::encode_channels(t.channels), true);
}

bool TraceWriter::add_event(const Event& e) {
  if (!error_.empty()) return false;
  if (!begun_) {
    error_ = prefixed(path_, "add_event() before begin()");
    return false;
  }
  if (!codec::event_ok(nranks_, nroutes_, e)) {
    error_ = prefixed(path_, "cannot write event " + std::to_string(events_ + pending_.size()) + ": " +
                                 codec::check_event(nranks_, nroutes_, e));
    return false;
  }
  pending_.push_back(e);
  if (pending_.size() >= kEventsPerBlock) return flush_events();
  return true;
}

bool TraceWriter::flush_events() {
  if (!error_.empty()) return false;
  if (pending_.empty()) return true;
  if (!section(SectionKind::kEvents, codec::encode_events(pending_.data(), pending_.size()), true)) return false;
  events_ += pending_.size();
  pending_.clear();
  return true;
}

bool TraceWriter::writable(const char* call) {
  if (!error_.empty()) return false;
  if (!begun_) {
    error_ = prefixed(path_, std::string(call) + "() before begin()");
    return false;
  }
  return true;
}

bool TraceWriter::add_ops(const std::vector<Op>& ops) {
  if (!writable("add_ops")) return false;
  if (ops.empty()) return true;
  for (size_t i = 0; i < ops.size(); ++i) {
    const std::string why = codec::check_op(ops[i]);
    if (!why.empty()) {
      error_ = prefixed(path_, "cannot write op " + std::to_string(ops_ + i) + ": " + why);
      return false;
    }
  }
  if (!section(SectionKind::kOps, codec::encode_ops(ops), true)) return false;
  ops_ += ops.size();
  return true;
}

bool TraceWriter::add_stuck(const std::vector<Stuck>& stuck) {
  if (!writable("add_stuck")) return false;
  if (stuck.empty()) return true;
  for (size_t i = 0; i < stuck.size(); ++i) {
    const std::string why = codec::check_stuck(nranks_, stuck[i]);
    if (!why.empty()) {
      error_ = prefixed(path_, "cannot write stuck report " + std::to_string(i) + ": " + why);
      return false;
    }
  }
  return section(SectionKind::kStuck, codec::encode_stuck(stuck), true);
}

bool TraceWriter::finish(const LinkLoad* load) {
  if (!error_.empty()) return false;
  if (!begun_) {
    error_ = prefixed(path_, "finish() before begin()");
    return false;
  }
  if (!flush_events()) return false;
  if (load) {
    const std::string why = codec::check_load(nlinks_, *load);
    if (!why.empty()) {
      error_ = prefixed(path_, "cannot write the link load: " + why);
      return false;
    }
    if (!section(SectionKind::kLoad, codec::encode_load(*load), true)) return false;
  }
  if (!section(SectionKind::kEnd, codec::encode_end(sections_, events_, ops_), false)) return false;
  if (file_) {
    const bool ok = fflush(file_) == 0;
    const int err = errno;
    const bool closed = fclose(file_) == 0;
    file_ = nullptr;
    if (!ok || !closed) {
      error_ = path_ + ": write failed: " + strerror(err);
      return false;
    }
  }
  sink_ = nullptr;  // later calls fail: "not open" / "before begin()"
  begun_ = false;
  return true;
}

// ---- whole-file write and read ------------------------------------------------------------------

namespace {

bool write_all(TraceWriter* w, const Trace& t) {
  if (!w->begin(t)) return false;
  for (const Event& e : t.events)
    if (!w->add_event(e)) return false;
  if (!w->flush_events() || !w->add_ops(t.ops) || !w->add_stuck(t.stuck)) return false;
  return w->finish(&t.load);
}

bool string_sink(const void* data, size_t n, void* user) {
  static_cast<std::string*>(user)->append(static_cast<const char*>(data), n);
  return true;
}

}  // namespace

bool write_trace(const std::string& path, const Trace& t, std::string* error) {
  TraceWriter w;
  if (!w.open(path, error)) return false;
  if (!write_all(&w, t)) {
    if (error) *error = w.error();
    std::remove(path.c_str());
    return false;
  }
  return true;
}

std::string encode_trace(const Trace& t) {
  std::string out;
  TraceWriter w;
  w.open_sink(&string_sink, &out);
  if (!write_all(&w, t)) return std::string();
  return out;
}

namespace {

std::string ull(uint64_t v) { return std::to_string(static_cast<unsigned long long>(v)); }

std::string section_at(uint64_t index, uint32_t kind) {
  return "section " + ull(index) + " (" + codec::kind_name(kind) + ")";
}

}  // namespace

bool decode_trace(const std::string& bytes, Trace* out, std::string* error) {
  std::string scratch;
  std::string& err = error ? *error : scratch;
  *out = Trace();
  const uint8_t* p = reinterpret_cast<const uint8_t*>(bytes.data());
  const uint64_t size = bytes.size();
  if (size == 0) {
    err = "not a cclab trace (empty file)";
    return false;
  }
  if (size < codec::kFileHeaderBytes) {
    err = codec::magic_prefix(p, size) ? "truncated: the file header needs 16 bytes but the file ends at " + ull(size)
                                       : "not a cclab trace (bad magic)";
    return false;
  }
  if (!codec::check_file_header(p, &err)) return false;
  codec::ReadState st;
  uint64_t pos = codec::kFileHeaderBytes;
  std::string raw;
  while (!st.complete) {
    if (pos == size) {
      err = "incomplete: no END section (the writer did not finish)";
      return false;
    }
    if (size - pos < codec::kSectionHeaderBytes) {
      err = "truncated: section " + ull(st.sections) + " header needs 32 bytes at offset " + ull(pos) +
            " but the file ends at " + ull(size);
      return false;
    }
    const codec::SectionHeader h = codec::get_section_header(p + pos);
    if (!codec::check_section_header(h, st.sections, &err)) return false;
    const uint64_t body = pos + codec::kSectionHeaderBytes;
    if (h.stored > size - body) {
      err = "truncated: " + section_at(st.sections, h.kind) + " needs " + ull(h.stored) + " bytes at offset " +
            ull(body) + " but the file ends at " + ull(size);
      return false;
    }
    if (!codec::unpack_section(h, p + body, st.sections, &raw, &err)) return false;
    if (!codec::apply_section(out, &st, h.kind, raw, &err)) return false;
    pos = body + h.stored;
  }
  if (pos != size) {
    err = "corrupt: " + ull(size - pos) + " bytes after the END section";
    return false;
  }
  return true;
}

bool read_trace(const std::string& path, Trace* out, std::string* error) {
  std::string scratch;
  std::string& err = error ? *error : scratch;
  FILE* f = fopen(path.c_str(), "rb");
  if (!f) {
    err = path + ": cannot open: " + strerror(errno);
    *out = Trace();
    return false;
  }
  std::string bytes;
  char buf[1 << 16];
  size_t n;
  try {
    if (fseek(f, 0, SEEK_END) == 0) {
      const long sz = ftell(f);
      if (sz > 0) bytes.reserve(static_cast<size_t>(sz));
      fseek(f, 0, SEEK_SET);
    }
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) bytes.append(buf, n);
  } catch (const std::exception& e) {
    fclose(f);
    err = path + ": cannot read: " + e.what();
    *out = Trace();
    return false;
  }
  const bool read_error = ferror(f) != 0;
  fclose(f);
  if (read_error) {
    err = path + ": read failed";
    *out = Trace();
    return false;
  }
  if (!decode_trace(bytes, out, &err)) {
    err = path + ": " + err;
    return false;
  }
  return true;
}

// ---- TraceStreamDecoder -------------------------------------------------------------------------

bool TraceStreamDecoder::fail(const std::string& why) {
  failed_ = true;
  error_ = why;
  buf_.clear();
  pos_ = 0;
  return false;
}

bool TraceStreamDecoder::apply(uint32_t kind, const std::string& raw) {
  codec::ReadState st;
  st.sections = sections_;
  st.events = events_seen_;
  st.ops = ops_seen_;
  st.blocks = blocks_;
  st.complete = complete_;
  st.reach.max_rank = max_rank_;
  st.reach.max_route = max_route_;
  std::string err;
  if (!codec::apply_section(&trace_, &st, kind, raw, &err)) return fail(err);
  sections_ = st.sections;
  events_seen_ = st.events;
  ops_seen_ = st.ops;
  blocks_ = st.blocks;
  complete_ = st.complete;
  max_rank_ = st.reach.max_rank;
  max_route_ = st.reach.max_route;
  return true;
}

bool TraceStreamDecoder::feed(const void* data, size_t n) {
  if (failed_) return false;
  if (n == 0) return true;
  if (complete_) return fail("corrupt: " + ull(n) + " bytes after the END section");
  if (pos_ == buf_.size()) {
    offset_ += pos_;
    buf_.clear();
    pos_ = 0;
  } else if (pos_ > (1u << 20) && pos_ * 2 > buf_.size()) {
    buf_.erase(0, pos_);
    offset_ += pos_;
    pos_ = 0;
  }
  buf_.append(static_cast<const char*>(data), n);
  std::string raw, err;
  while (true) {
    const uint8_t* p = reinterpret_cast<const uint8_t*>(buf_.data()) + pos_;
    const size_t avail = buf_.size() - pos_;
    if (!header_seen_) {
      if (avail < codec::kFileHeaderBytes) {
        if (!codec::magic_prefix(p, avail)) return fail("not a cclab trace (bad magic)");
        return true;
      }
      if (!codec::check_file_header(p, &err)) return fail(err);
      header_seen_ = true;
      pos_ += codec::kFileHeaderBytes;
      continue;
    }
    if (complete_) {
      if (avail > 0) return fail("corrupt: " + ull(avail) + " bytes after the END section");
      return true;
    }
    if (avail < codec::kSectionHeaderBytes) return true;
    const codec::SectionHeader h = codec::get_section_header(p);
    if (!codec::check_section_header(h, sections_, &err)) return fail(err);
    if (h.stored > avail - codec::kSectionHeaderBytes) return true;  // wait for the rest
    if (!codec::unpack_section(h, p + codec::kSectionHeaderBytes, sections_, &raw, &err)) return fail(err);
    if (!apply(h.kind, raw)) return false;
    pos_ += codec::kSectionHeaderBytes + h.stored;
  }
}

std::string utc_now_iso8601() {
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace trace
}  // namespace cclab
