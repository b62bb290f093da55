// runtime/trace/trace_codec.cc - the trace file's bytes (docs/trace-format.md): section framing
// with CRC-32 and zstd, the JSON sections (META, TOPO, CHAN, OPS), the columnar event blocks (EVTS),
// the link-load samples (LOAD) and END, and the validation a reader applies to what it decodes.
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <unordered_map>

#include "trace/codec.h"

namespace cclab {
namespace trace {
namespace codec {

using json = nlohmann::json;

namespace {

// ---- little-endian fixed-width -------------------------------------------------------------------

void put_u32(std::string* out, uint32_t v) {
  char b[4];
  for (int i = 0; i < 4; ++i) b[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  out->append(b, 4);
}
void put_u64(std::string* out, uint64_t v) {
  char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  out->append(b, 8);
}
void put_f64(std::string* out, double d) {
  uint64_t v;
  std::memcpy(&v, &d, 8);
  put_u64(out, v);
}
uint32_t get_u32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
}
uint64_t get_u64(const uint8_t* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}
double get_f64(const uint8_t* p) {
  const uint64_t v = get_u64(p);
  double d;
  std::memcpy(&d, &v, 8);
  return d;
}

// ---- varints ------------------------------------------------------------------------------------

inline void put_varint(std::string* out, uint64_t v) {
  char b[10];
  int n = 0;
  while (v >= 0x80) {
    b[n++] = static_cast<char>((v & 0x7f) | 0x80);
    v >>= 7;
  }
  b[n++] = static_cast<char>(v);
  out->append(b, n);
}
inline uint64_t zigzag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
inline int64_t unzigzag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }
// Difference a - b as a zigzag varint, exact for any 64-bit values (wraps modulo 2^64).
inline uint64_t zz_delta(uint64_t a, uint64_t b) { return zigzag(static_cast<int64_t>(a - b)); }

struct Cursor {
  const uint8_t* p;
  const uint8_t* end;
  // False when the varint runs past the end or is longer than 10 bytes.
  inline bool varint(uint64_t* out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      if (p >= end) return false;
      const uint8_t b = *p++;
      if (shift == 63 && b > 1) return false;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) {
        *out = v;
        return true;
      }
    }
    return false;
  }
};

// A column being written: bytes appended through a pointer, grown geometrically.
class ColumnWriter {
 public:
  void reserve(size_t n) { buf_.resize(n); }
  inline void varint(uint64_t v) {
    if (buf_.size() - len_ < 10) buf_.resize(std::max(buf_.size() * 2, len_ + 10));
    char* p = &buf_[len_];
    while (v >= 0x80) {
      *p++ = static_cast<char>((v & 0x7f) | 0x80);
      v >>= 7;
    }
    *p++ = static_cast<char>(v);
    len_ = static_cast<size_t>(p - buf_.data());
  }
  inline void byte(uint8_t b) {
    if (buf_.size() == len_) buf_.resize(std::max(buf_.size() * 2, len_ + 10));
    buf_[len_++] = static_cast<char>(b);
  }
  size_t size() const { return len_; }
  const char* data() const { return buf_.data(); }

 private:
  std::string buf_;
  size_t len_ = 0;
};

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, f);
  vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

std::string section_label(uint64_t index, uint32_t kind) {
  return fmt("section %llu (%s)", static_cast<unsigned long long>(index), kind_name(kind).c_str());
}

// ---- JSON helpers -------------------------------------------------------------------------------

struct JsonError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Doubles: finite ones as JSON numbers (nlohmann prints the shortest form that reads back exactly),
// the others as the strings "nan", "inf", "-inf".
json jnum(double d) {
  if (std::isfinite(d)) return json(d);
  if (std::isnan(d)) return json("nan");
  return json(d > 0 ? "inf" : "-inf");
}

const json* field(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

double jdouble(const json& v, const char* key) {
  if (v.is_number()) return v.get<double>();
  if (v.is_null()) return std::numeric_limits<double>::quiet_NaN();
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
  }
  throw JsonError(fmt("\"%s\" is not a number", key));
}

int64_t jint64(const json& v, const char* key, int64_t lo, int64_t hi) {
  int64_t x;
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) throw JsonError(fmt("\"%s\" is out of range", key));
    x = static_cast<int64_t>(u);
  } else if (v.is_number_integer()) {
    x = v.get<int64_t>();
  } else {
    throw JsonError(fmt("\"%s\" is not an integer", key));
  }
  if (x < lo || x > hi) throw JsonError(fmt("\"%s\" = %lld is out of range", key, static_cast<long long>(x)));
  return x;
}
int jint(const json& v, const char* key) { return static_cast<int>(jint64(v, key, INT_MIN, INT_MAX)); }
uint64_t juint64(const json& v, const char* key) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return static_cast<uint64_t>(v.get<int64_t>());
  throw JsonError(fmt("\"%s\" is not a non-negative integer", key));
}

void get_str(const json& obj, const char* key, std::string* out) {
  if (const json* v = field(obj, key)) {
    if (!v->is_string()) throw JsonError(fmt("\"%s\" is not a string", key));
    *out = v->get<std::string>();
  }
}
void get_int(const json& obj, const char* key, int* out) {
  if (const json* v = field(obj, key)) *out = jint(*v, key);
}
void get_double(const json& obj, const char* key, double* out) {
  if (const json* v = field(obj, key)) *out = jdouble(*v, key);
}
void get_u64f(const json& obj, const char* key, uint64_t* out) {
  if (const json* v = field(obj, key)) *out = juint64(*v, key);
}
void get_size(const json& obj, const char* key, size_t* out) {
  if (const json* v = field(obj, key)) {
    const uint64_t u = juint64(*v, key);
    if (u > std::numeric_limits<size_t>::max()) throw JsonError(fmt("\"%s\" is out of range", key));
    *out = static_cast<size_t>(u);
  }
}
const json& get_array(const json& obj, const char* key) {
  static const json empty = json::array();
  const json* v = field(obj, key);
  if (!v) return empty;
  if (!v->is_array()) throw JsonError(fmt("\"%s\" is not an array", key));
  return *v;
}
void get_bool(const json& obj, const char* key, bool* out) {
  if (const json* v = field(obj, key)) {
    if (!v->is_boolean()) throw JsonError(fmt("\"%s\" is not a boolean", key));
    *out = v->get<bool>();
  }
}
void get_str_array(const json& obj, const char* key, std::vector<std::string>* out) {
  out->clear();
  for (const json& x : get_array(obj, key)) {
    if (!x.is_string()) throw JsonError(fmt("an element of \"%s\" is not a string", key));
    out->push_back(x.get<std::string>());
  }
}
void get_int_array(const json& obj, const char* key, std::vector<int>* out) {
  const json& a = get_array(obj, key);
  out->clear();
  out->reserve(a.size());
  for (const json& x : a) out->push_back(jint(x, key));
}
void need_object(const json& v, const char* what) {
  if (!v.is_object()) throw JsonError(fmt("%s is not an object", what));
}

std::string dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// ---- JSON sections ------------------------------------------------------------------------------

void decode_meta(const json& j, Meta* m) {
  need_object(j, "META");
  get_str(j, "tool", &m->tool);
  get_str(j, "backend", &m->backend);
  get_str(j, "topo_name", &m->topo_name);
  get_str(j, "topo_description", &m->topo_description);
  get_int(j, "machines", &m->machines);
  get_int(j, "nranks", &m->nranks);
  get_str(j, "clock", &m->clock);
  get_str(j, "command", &m->command);
  get_str(j, "created", &m->created);
}

void decode_topo(const json& j, Trace* t) {
  need_object(j, "TOPO");
  std::vector<Node> nodes;
  for (const json& x : get_array(j, "nodes")) {
    need_object(x, "a node");
    Node n;
    get_str(x, "name", &n.name);
    get_str(x, "kind", &n.kind);
    get_int(x, "machine", &n.machine);
    get_int(x, "dev", &n.dev);
    get_int(x, "rank", &n.rank);
    nodes.push_back(std::move(n));
  }
  std::vector<Link> links;
  for (const json& x : get_array(j, "links")) {
    need_object(x, "a link");
    Link l;
    get_int(x, "from", &l.from);
    get_int(x, "to", &l.to);
    get_int(x, "reverse", &l.reverse);
    get_str(x, "kind", &l.kind);
    get_double(x, "gbs", &l.gbs);
    get_double(x, "latency_us", &l.latency_us);
    if (x.contains("degraded")) {  // optional: a degraded fabric's link (absent in healthy traces)
      get_double(x, "degraded", &l.degraded);
      get_double(x, "degraded_at_us", &l.degraded_at_us);
      if (!(l.degraded >= 0) || !(l.degraded_at_us >= 0)) throw JsonError("a link's degraded factor or time is negative");
    }
    links.push_back(std::move(l));
  }
  std::vector<Route> routes;
  const json& rs = get_array(j, "routes");
  routes.reserve(rs.size());
  for (const json& x : rs) {
    if (!x.is_array() || x.size() != 3 || !x[2].is_array()) throw JsonError("a route is not [src, dst, [links]]");
    Route r;
    r.src = jint(x[0], "route src");
    r.dst = jint(x[1], "route dst");
    r.links.reserve(x[2].size());
    for (const json& l : x[2]) r.links.push_back(jint(l, "route link"));
    routes.push_back(std::move(r));
  }
  t->nodes = std::move(nodes);
  t->links = std::move(links);
  t->routes = std::move(routes);
}

std::vector<Channel> decode_channels(const json& j) {
  need_object(j, "CHAN");
  std::vector<Channel> out;
  for (const json& x : get_array(j, "channels")) {
    need_object(x, "a channel");
    Channel c;
    get_int(x, "index", &c.index);
    get_int_array(x, "ring", &c.ring);
    get_int(x, "tree_index", &c.tree_index);
    get_int_array(x, "tree_up", &c.tree_up);
    for (const json& d : get_array(x, "tree_down")) {
      if (!d.is_array() || d.size() != 3) throw JsonError("a tree_down entry is not [a, b, c]");
      c.tree_down.push_back({jint(d[0], "tree_down"), jint(d[1], "tree_down"), jint(d[2], "tree_down")});
    }
    out.push_back(std::move(c));
  }
  return out;
}

CollKind coll_from_json(const json& v) {
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    for (int c = 0; c < static_cast<int>(CollKind::kNumKinds); ++c)
      if (s == coll_name(static_cast<CollKind>(c))) return static_cast<CollKind>(c);
    throw JsonError("unknown collective \"" + s + "\"");
  }
  return static_cast<CollKind>(jint64(v, "coll", 0, static_cast<int>(CollKind::kNumKinds) - 1));
}

std::vector<Op> decode_ops(const json& j) {
  need_object(j, "OPS");
  std::vector<Op> out;
  for (const json& x : get_array(j, "ops")) {
    need_object(x, "an op");
    Op o;
    get_u64f(x, "op_count", &o.op_count);
    if (const json* c = field(x, "coll")) o.coll = coll_from_json(*c);
    get_str(x, "algo", &o.algo);
    get_str(x, "proto", &o.proto);
    get_str(x, "type", &o.type);
    get_str(x, "redop", &o.redop);
    get_int(x, "root", &o.root);
    get_size(x, "count", &o.count);
    get_size(x, "bytes", &o.bytes);
    get_int(x, "nchannels", &o.nchannels);
    get_double(x, "begin_us", &o.begin_us);
    get_double(x, "end_us", &o.end_us);
    get_double(x, "algbw", &o.algbw);
    get_double(x, "busbw", &o.busbw);
    out.push_back(std::move(o));
  }
  return out;
}

std::vector<Stuck> decode_stuck(const json& j) {
  need_object(j, "STUK");
  std::vector<Stuck> out;
  for (const json& x : get_array(j, "stuck")) {
    need_object(x, "a stuck report");
    Stuck s;
    get_double(x, "time_us", &s.time_us);
    get_bool(x, "certain", &s.certain);
    get_int(x, "code", &s.code);
    get_str(x, "summary", &s.summary);
    get_str_array(x, "lines", &s.lines);
    for (const json& r : get_array(x, "ranks")) {
      need_object(r, "a rank of a stuck report");
      StuckRank k;
      get_int(r, "rank", &k.rank);
      get_int(r, "pid", &k.pid);
      get_str(r, "state", &k.state);
      get_str(r, "line", &k.line);
      s.ranks.push_back(std::move(k));
    }
    for (const json& w : get_array(x, "waits")) {
      need_object(w, "a wait of a stuck report");
      StuckWait k;
      get_int(w, "rank", &k.rank);
      get_int(w, "channel", &k.channel);
      get_int(w, "peer", &k.peer);
      get_u64f(w, "step", &k.step);
      if (const json* v = field(w, "for")) {
        if (!v->is_string() || (*v != "data" && *v != "credits"))
          throw JsonError("\"for\" is neither \"data\" nor \"credits\"");
        k.for_data = *v == "data";
      }
      get_str(w, "prim", &k.prim);
      get_u64f(w, "op_count", &k.op_count);
      get_double(w, "since_us", &k.since_us);
      s.waits.push_back(std::move(k));
    }
    out.push_back(std::move(s));
  }
  return out;
}

// ---- event blocks -------------------------------------------------------------------------------

enum Col {
  kColRank, kColChannel, kColSendPeer, kColRecvPeer, kColOpCount, kColStep, kColPrim, kColColl, kColProto,
  kColOffset, kColBytes, kColBegin, kColData, kColEnd, kColRoute,
};
static_assert(kColRoute + 1 == kEventColumns, "column count");

// What the previous event of the same (rank, channel) in the block held: most fields are coded as the
// difference from it (a rank's steps on a channel advance regularly).
struct Ctx {
  int64_t send_peer = -1, recv_peer = -1, route = -1;
  uint64_t op_count = 0, step = 0, offset = 0, bytes = 0;
};

// (rank, channel) -> context, a small open-addressing table (blocks have a few thousand contexts).
class CtxTable {
 public:
  CtxTable() { reset(); }
  Ctx& get(int32_t rank, int32_t channel) {
    const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(rank)) << 32) | static_cast<uint32_t>(channel);
    if (used_ * 2 >= keys_.size()) grow();
    size_t mask = keys_.size() - 1;
    size_t i = hash(key) & mask;
    while (true) {
      if (!full_[i]) {
        full_[i] = 1;
        keys_[i] = key;
        vals_[i] = Ctx();
        ++used_;
        return vals_[i];
      }
      if (keys_[i] == key) return vals_[i];
      i = (i + 1) & mask;
    }
  }

 private:
  static size_t hash(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return static_cast<size_t>(k);
  }
  void reset() {
    keys_.assign(1024, 0);
    vals_.assign(1024, Ctx());
    full_.assign(1024, 0);
    used_ = 0;
  }
  void grow() {
    std::vector<uint64_t> k = std::move(keys_);
    std::vector<Ctx> v = std::move(vals_);
    std::vector<uint8_t> f = std::move(full_);
    const size_t n = k.size() * 2;
    keys_.assign(n, 0);
    vals_.assign(n, Ctx());
    full_.assign(n, 0);
    for (size_t i = 0; i < k.size(); ++i) {
      if (!f[i]) continue;
      size_t j = hash(k[i]) & (n - 1);
      while (full_[j]) j = (j + 1) & (n - 1);
      full_[j] = 1;
      keys_[j] = k[i];
      vals_[j] = v[i];
    }
  }
  std::vector<uint64_t> keys_;
  std::vector<Ctx> vals_;
  std::vector<uint8_t> full_;
  size_t used_ = 0;
};

// ---- LOAD ---------------------------------------------------------------------------------------

bool decode_load(const std::string& raw, LinkLoad* out, std::string* why) {
  const uint8_t* p = reinterpret_cast<const uint8_t*>(raw.data());
  if (raw.size() < 24) {
    *why = fmt("%zu bytes, shorter than its 24-byte header", raw.size());
    return false;
  }
  LinkLoad l;
  l.t0_us = get_f64(p);
  l.bin_us = get_f64(p + 8);
  const uint32_t bins = get_u32(p + 16), nseries = get_u32(p + 20);
  if (bins > static_cast<uint32_t>(INT_MAX)) {
    *why = fmt("%u bins", bins);
    return false;
  }
  const uint64_t cells = static_cast<uint64_t>(nseries) * bins;  // < 2^63
  if (cells > raw.size()) {
    *why = fmt("%u series of %u bins do not fit in %zu bytes", nseries, bins, raw.size());
    return false;
  }
  const uint64_t need = 24 + 4ull * nseries + 4 * cells;
  if (raw.size() < need) {  // more is allowed: a newer minor version may append fields
    *why = fmt("%u series of %u bins need %llu bytes, the section has %zu", nseries, bins,
               static_cast<unsigned long long>(need), raw.size());
    return false;
  }
  l.bins = static_cast<int>(bins);
  l.series.resize(nseries);
  const uint8_t* links = p + 24;
  const uint8_t* vals = links + 4ull * nseries;
  const size_t total = static_cast<size_t>(nseries) * bins;  // byte planes of `total` floats each
  for (uint32_t s = 0; s < nseries; ++s) {
    const uint32_t link = get_u32(links + 4ull * s);
    if (link > static_cast<uint32_t>(INT_MAX)) {
      *why = fmt("series %u: link %u", s, link);
      return false;
    }
    l.series[s].link = static_cast<int>(link);
    l.series[s].gbs.resize(bins);
    for (uint32_t b = 0; b < bins; ++b) {
      const size_t i = static_cast<size_t>(s) * bins + b;
      const uint32_t bits = static_cast<uint32_t>(vals[i]) | static_cast<uint32_t>(vals[total + i]) << 8 |
                            static_cast<uint32_t>(vals[2 * total + i]) << 16 |
                            static_cast<uint32_t>(vals[3 * total + i]) << 24;
      std::memcpy(&l.series[s].gbs[b], &bits, 4);
    }
  }
  *out = std::move(l);
  return true;
}

}  // namespace

// ---- names, header, sections --------------------------------------------------------------------

const char* column_name(int c) {
  static const char* const names[kEventColumns] = {"rank",  "channel", "send_peer", "recv_peer", "op_count",
                                                   "step",  "prim",    "coll",      "proto",     "offset",
                                                   "bytes", "begin",   "data",      "end",       "route"};
  return c >= 0 && c < kEventColumns ? names[c] : "extra";
}

std::string kind_name(uint32_t kind) {
  std::string s(4, '?');
  bool ok = true;
  for (int i = 0; i < 4; ++i) {
    const char c = static_cast<char>((kind >> (8 * i)) & 0xff);
    if (c < 0x20 || c > 0x7e) ok = false;
    s[i] = c;
  }
  if (!ok) return "????";
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

bool known_kind(uint32_t kind) {
  switch (static_cast<SectionKind>(kind)) {
    case SectionKind::kMeta:
    case SectionKind::kTopo:
    case SectionKind::kChannels:
    case SectionKind::kOps:
    case SectionKind::kEvents:
    case SectionKind::kLoad:
    case SectionKind::kEnd:
    case SectionKind::kStuck:
      return true;
  }
  return false;
}

std::string file_header() {
  std::string h(kMagic, sizeof kMagic);
  put_u32(&h, kFormatVersion);
  put_u32(&h, 0);
  return h;
}

bool magic_prefix(const uint8_t* p, size_t n) {
  return std::memcmp(p, kMagic, std::min(n, sizeof kMagic)) == 0;
}

bool check_file_header(const uint8_t* p, std::string* error) {
  if (std::memcmp(p, kMagic, sizeof kMagic) != 0) {
    *error = "not a cclab trace (bad magic)";
    return false;
  }
  const uint32_t version = get_u32(p + 8);
  if (version > kFormatVersion) {
    *error = fmt("trace format version %u is newer than this reader (%u)", version, kFormatVersion);
    return false;
  }
  if (version == 0) {
    *error = "not a cclab trace (format version 0)";
    return false;
  }
  return true;  // flags: reserved, unknown bits are ignored
}

void put_section_header(std::string* out, const SectionHeader& h) {
  put_u32(out, h.kind);
  put_u32(out, h.codec);
  put_u64(out, h.stored);
  put_u64(out, h.raw);
  put_u32(out, h.crc);
  put_u32(out, h.reserved);
}

SectionHeader get_section_header(const uint8_t* p) {
  SectionHeader h;
  h.kind = get_u32(p);
  h.codec = get_u32(p + 4);
  h.stored = get_u64(p + 8);
  h.raw = get_u64(p + 16);
  h.crc = get_u32(p + 24);
  h.reserved = get_u32(p + 28);
  return h;
}

bool check_section_header(const SectionHeader& h, uint64_t index, std::string* error) {
  std::string label;
  auto name = [&]() {
    label = section_label(index, h.kind);
    return label.c_str();
  };
  const unsigned long long stored = h.stored, raw = h.raw;
  if (!known_kind(h.kind)) {  // skipped: only its length matters
    if (h.stored > kMaxRawBytes) {
      *error = fmt("corrupt: %s claims %llu stored bytes", name(), stored);
      return false;
    }
    return true;
  }
  if (h.codec != kCodecRaw && h.codec != kCodecZstd) {
    *error = fmt("corrupt: %s has unknown codec %u", name(), h.codec);
    return false;
  }
  if (h.raw > kMaxRawBytes) {
    *error = fmt("corrupt: %s claims %llu raw bytes (more than 4 GiB)", name(), raw);
    return false;
  }
  if (h.codec == kCodecRaw && h.stored != h.raw) {
    *error = fmt("corrupt: %s is stored raw but its lengths differ (%llu stored, %llu raw)", name(), stored, raw);
    return false;
  }
  if (h.codec == kCodecZstd && h.raw > kRatioFreeBytes && h.raw / kMaxRatio > h.stored) {
    *error = fmt("corrupt: %s claims %llu raw bytes from %llu stored (more than %llux)", name(), raw, stored,
                 static_cast<unsigned long long>(kMaxRatio));
    return false;
  }
  if (h.codec == kCodecZstd && h.stored > ZSTD_compressBound(h.raw)) {
    *error = fmt("corrupt: %s claims %llu stored bytes for %llu raw bytes", name(), stored, raw);
    return false;
  }
  if (static_cast<SectionKind>(h.kind) == SectionKind::kEnd && h.raw > 4096) {
    *error = fmt("corrupt: %s claims %llu bytes", name(), raw);
    return false;
  }
  return true;
}

uint32_t crc32_of(const void* data, size_t n) {
  uLong c = crc32(0L, Z_NULL, 0);
  const Bytef* p = static_cast<const Bytef*>(data);
  while (n > 0) {
    const size_t k = std::min<size_t>(n, 1u << 30);
    c = crc32(c, p, static_cast<uInt>(k));
    p += k;
    n -= k;
  }
  return static_cast<uint32_t>(c);
}

bool unpack_section(const SectionHeader& h, const uint8_t* stored, uint64_t index, std::string* raw,
                    std::string* error) {
  const std::string s = section_label(index, h.kind);
  if (crc32_of(stored, h.stored) != h.crc) {
    *error = "corrupt: " + s + " checksum mismatch";
    return false;
  }
  raw->clear();
  if (!known_kind(h.kind)) return true;
  if (h.codec == kCodecRaw) {
    raw->assign(reinterpret_cast<const char*>(stored), h.stored);
    return true;
  }
  try {
    raw->resize(h.raw);
  } catch (const std::exception&) {
    *error = fmt("corrupt: %s: cannot allocate %llu bytes", s.c_str(), static_cast<unsigned long long>(h.raw));
    return false;
  }
  const size_t got = ZSTD_decompress(&(*raw)[0], raw->size(), stored, h.stored);
  if (ZSTD_isError(got)) {
    *error = "corrupt: " + s + " does not decompress (" + ZSTD_getErrorName(got) + ")";
    return false;
  }
  if (got != h.raw) {
    *error = fmt("corrupt: %s does not decompress to its length (%zu bytes, header says %llu)", s.c_str(), got,
                 static_cast<unsigned long long>(h.raw));
    return false;
  }
  return true;
}

std::string pack_section(SectionKind kind, const std::string& raw, bool compress) {
  SectionHeader h;
  h.kind = static_cast<uint32_t>(kind);
  h.raw = raw.size();
  std::string z;
  if (compress && !raw.empty()) {
    z.resize(ZSTD_compressBound(raw.size()));
    const size_t n = ZSTD_compress(&z[0], z.size(), raw.data(), raw.size(), kZstdLevel);
    const bool over_ratio = raw.size() > kRatioFreeBytes && raw.size() / kMaxRatio > n;
    if (!ZSTD_isError(n) && n < raw.size() && !over_ratio) {
      z.resize(n);
      h.codec = kCodecZstd;
    } else {
      z.clear();
    }
  }
  const std::string& body = h.codec == kCodecZstd ? z : raw;
  h.stored = body.size();
  h.crc = crc32_of(body.data(), body.size());
  std::string out;
  out.reserve(kSectionHeaderBytes + body.size());
  put_section_header(&out, h);
  out += body;
  return out;
}

int64_t to_ns(double us) {
  const double ns = us * 1000.0;
  if (!(ns > -9.2e18)) return std::isnan(ns) ? 0 : INT64_MIN;
  if (ns >= 9.2e18) return INT64_MAX;
  // std::llround (half away from zero) without the library call: x - trunc(x) is exact here.
  int64_t i = static_cast<int64_t>(ns);
  const double f = ns - static_cast<double>(i);
  if (f >= 0.5) ++i;
  else if (f <= -0.5) --i;
  return i;
}

// ---- encoders -----------------------------------------------------------------------------------

std::string encode_meta(const Meta& m) {
  json j = {{"tool", m.tool},         {"backend", m.backend},   {"topo_name", m.topo_name},
            {"topo_description", m.topo_description},          {"machines", m.machines},
            {"nranks", m.nranks},     {"clock", m.clock},       {"command", m.command},
            {"created", m.created}};
  return dump(j);
}

std::string encode_topo(const Trace& t) {
  json nodes = json::array(), links = json::array(), routes = json::array();
  for (const Node& n : t.nodes)
    nodes.push_back({{"name", n.name}, {"kind", n.kind}, {"machine", n.machine}, {"dev", n.dev}, {"rank", n.rank}});
  for (const Link& l : t.links) {
    links.push_back({{"from", l.from},
                     {"to", l.to},
                     {"reverse", l.reverse},
                     {"kind", l.kind},
                     {"gbs", jnum(l.gbs)},
                     {"latency_us", jnum(l.latency_us)}});
    if (l.degraded_at_us >= 0) {
      links.back()["degraded"] = jnum(l.degraded);
      links.back()["degraded_at_us"] = jnum(l.degraded_at_us);
    }
  }
  for (const Route& r : t.routes) routes.push_back(json::array({r.src, r.dst, r.links}));
  json j = {{"nodes", std::move(nodes)}, {"links", std::move(links)}, {"routes", std::move(routes)}};
  return dump(j);
}

std::string encode_channels(const std::vector<Channel>& channels) {
  json cs = json::array();
  for (const Channel& c : channels) {
    json down = json::array();
    for (const auto& d : c.tree_down) down.push_back(json::array({d[0], d[1], d[2]}));
    cs.push_back({{"index", c.index},
                  {"ring", c.ring},
                  {"tree_index", c.tree_index},
                  {"tree_up", c.tree_up},
                  {"tree_down", std::move(down)}});
  }
  return dump(json{{"channels", std::move(cs)}});
}

std::string encode_ops(const std::vector<Op>& ops) {
  json os = json::array();
  for (const Op& o : ops) {
    const int c = static_cast<int>(o.coll);
    json jc = c >= 0 && c < static_cast<int>(CollKind::kNumKinds) ? json(coll_name(o.coll)) : json(c);
    os.push_back({{"op_count", o.op_count},
                  {"coll", std::move(jc)},
                  {"algo", o.algo},
                  {"proto", o.proto},
                  {"type", o.type},
                  {"redop", o.redop},
                  {"root", o.root},
                  {"count", static_cast<uint64_t>(o.count)},
                  {"bytes", static_cast<uint64_t>(o.bytes)},
                  {"nchannels", o.nchannels},
                  {"begin_us", jnum(o.begin_us)},
                  {"end_us", jnum(o.end_us)},
                  {"algbw", jnum(o.algbw)},
                  {"busbw", jnum(o.busbw)}});
  }
  return dump(json{{"ops", std::move(os)}});
}

std::string encode_stuck(const std::vector<Stuck>& stuck) {
  json ss = json::array();
  for (const Stuck& s : stuck) {
    json ranks = json::array(), waits = json::array();
    for (const StuckRank& r : s.ranks)
      ranks.push_back({{"rank", r.rank}, {"pid", r.pid}, {"state", r.state}, {"line", r.line}});
    for (const StuckWait& w : s.waits)
      waits.push_back({{"rank", w.rank},
                       {"channel", w.channel},
                       {"peer", w.peer},
                       {"step", w.step},
                       {"for", w.for_data ? "data" : "credits"},
                       {"prim", w.prim},
                       {"op_count", w.op_count},
                       {"since_us", jnum(w.since_us)}});
    ss.push_back({{"time_us", jnum(s.time_us)},
                  {"certain", s.certain},
                  {"code", s.code},
                  {"summary", s.summary},
                  {"lines", s.lines},
                  {"ranks", std::move(ranks)},
                  {"waits", std::move(waits)}});
  }
  return dump(json{{"stuck", std::move(ss)}});
}

std::string encode_events(const Event* ev, size_t n) {
  ColumnWriter col[kEventColumns];
  for (int c = 0; c < kEventColumns; ++c) col[c].reserve(n * (c == kColData || c == kColEnd ? 3 : 1) + 16);
  CtxTable ctxs;
  int64_t prev_rank = 0, prev_channel = 0, prev_begin = 0;
  for (size_t i = 0; i < n; ++i) {
    const Event& e = ev[i];
    col[kColRank].varint(zigzag(static_cast<int64_t>(e.rank) - prev_rank));
    col[kColChannel].varint(zigzag(static_cast<int64_t>(e.channel) - prev_channel));
    prev_rank = e.rank;
    prev_channel = e.channel;
    Ctx& c = ctxs.get(e.rank, e.channel);
    col[kColSendPeer].varint(zigzag(static_cast<int64_t>(e.send_peer) - c.send_peer));
    col[kColRecvPeer].varint(zigzag(static_cast<int64_t>(e.recv_peer) - c.recv_peer));
    col[kColOpCount].varint(zz_delta(e.op_count, c.op_count));
    col[kColStep].varint(zz_delta(e.step, c.step));
    col[kColPrim].byte(static_cast<uint8_t>(static_cast<int>(e.prim)));
    col[kColColl].byte(static_cast<uint8_t>(static_cast<int>(e.coll)));
    col[kColProto].byte(e.proto);
    col[kColOffset].varint(zz_delta(e.offset, c.offset));
    col[kColBytes].varint(zz_delta(e.bytes, c.bytes));
    const int64_t b = to_ns(e.begin_us), d = to_ns(e.data_us), en = to_ns(e.end_us);
    col[kColBegin].varint(zz_delta(static_cast<uint64_t>(b), static_cast<uint64_t>(prev_begin)));
    prev_begin = b;
    col[kColData].varint(zz_delta(static_cast<uint64_t>(d), static_cast<uint64_t>(b)));
    col[kColEnd].varint(zz_delta(static_cast<uint64_t>(en), static_cast<uint64_t>(d)));
    col[kColRoute].varint(zigzag(static_cast<int64_t>(e.route) - c.route));
    c.send_peer = e.send_peer;
    c.recv_peer = e.recv_peer;
    c.route = e.route;
    c.op_count = e.op_count;
    c.step = e.step;
    c.offset = e.offset;
    c.bytes = e.bytes;
  }
  std::string out;
  size_t total = 0;
  for (const ColumnWriter& c : col) total += c.size();
  out.reserve(total + 16 + 4 * kEventColumns);
  put_varint(&out, n);
  put_varint(&out, kEventColumns);
  for (const ColumnWriter& c : col) put_varint(&out, c.size());
  for (const ColumnWriter& c : col) out.append(c.data(), c.size());
  return out;
}

std::string encode_load(const LinkLoad& load) {
  std::string out;
  put_f64(&out, load.t0_us);
  put_f64(&out, load.bin_us);
  const uint32_t bins = load.bins > 0 ? static_cast<uint32_t>(load.bins) : 0;
  put_u32(&out, bins);
  put_u32(&out, static_cast<uint32_t>(load.series.size()));
  for (const LinkLoad::Series& s : load.series) put_u32(&out, static_cast<uint32_t>(s.link));
  const size_t total = load.series.size() * bins;
  const size_t base = out.size();
  out.resize(base + 4 * total, '\0');
  for (size_t s = 0; s < load.series.size(); ++s) {
    const std::vector<float>& g = load.series[s].gbs;
    for (uint32_t b = 0; b < bins && b < g.size(); ++b) {
      uint32_t bits;
      std::memcpy(&bits, &g[b], 4);
      const size_t i = s * bins + b;
      for (int k = 0; k < 4; ++k) out[base + k * total + i] = static_cast<char>((bits >> (8 * k)) & 0xff);
    }
  }
  return out;
}

std::string encode_end(uint64_t sections, uint64_t events, uint64_t ops) {
  std::string out;
  put_u64(&out, sections);
  put_u64(&out, events);
  put_u64(&out, ops);
  return out;
}

// ---- validation ---------------------------------------------------------------------------------

namespace {
// "rank 9 is out of range (8 ranks)" when v is not in [lo, n) (n < 0: no upper bound).
bool out_of(long long v, long long lo, long long n) { return v < lo || (n >= 0 && v >= n); }
}  // namespace

std::string check_meta(const Meta& m) {
  if (m.nranks < 0 || m.nranks > (1 << 24)) return fmt("nranks %d is out of range", m.nranks);
  return "";
}

namespace {

// check_topo and check_channels against `nr` ranks (a META that replaces an earlier one re-checks them).
std::string check_topo_ranks(const Trace& t, int nr) {
  const long long nranks = nr > 0 ? nr : -1;
  const long long nn = static_cast<long long>(t.nodes.size()), nl = static_cast<long long>(t.links.size());
  for (size_t i = 0; i < t.nodes.size(); ++i)
    if (out_of(t.nodes[i].rank, -1, nranks))
      return fmt("node %zu: rank %d is out of range (%d ranks)", i, t.nodes[i].rank, nr);
  for (size_t i = 0; i < t.links.size(); ++i) {
    const Link& l = t.links[i];
    if (out_of(l.from, 0, nn) || out_of(l.to, 0, nn))
      return fmt("link %zu: node %d -> %d is out of range (%lld nodes)", i, l.from, l.to, nn);
    if (out_of(l.reverse, -1, nl)) return fmt("link %zu: reverse %d is out of range (%lld links)", i, l.reverse, nl);
  }
  for (size_t i = 0; i < t.routes.size(); ++i) {
    const Route& r = t.routes[i];
    if (out_of(r.src, 0, nranks) || out_of(r.dst, 0, nranks))
      return fmt("route %zu: rank %d -> %d is out of range (%d ranks)", i, r.src, r.dst, nr);
    for (int l : r.links)
      if (out_of(l, 0, nl)) return fmt("route %zu: link %d is out of range (%lld links)", i, l, nl);
  }
  return "";
}

std::string check_channels_ranks(int nr, const std::vector<Channel>& channels) {
  const long long nranks = nr > 0 ? nr : -1;
  for (size_t i = 0; i < channels.size(); ++i) {
    const Channel& c = channels[i];
    for (int r : c.ring)
      if (out_of(r, 0, nranks)) return fmt("channel %zu: ring rank %d is out of range (%d ranks)", i, r, nr);
    for (int r : c.tree_up)
      if (out_of(r, -1, nranks)) return fmt("channel %zu: tree parent %d is out of range (%d ranks)", i, r, nr);
    for (const auto& d : c.tree_down)
      for (int r : d)
        if (out_of(r, -1, nranks)) return fmt("channel %zu: tree child %d is out of range (%d ranks)", i, r, nr);
  }
  return "";
}

}  // namespace

std::string check_topo(const Trace& t) { return check_topo_ranks(t, t.meta.nranks); }
std::string check_channels(const Trace& t, const std::vector<Channel>& channels) {
  return check_channels_ranks(t.meta.nranks, channels);
}

void EventReach::add(const Event* e, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    max_rank = std::max<long long>(max_rank, std::max(e[i].rank, std::max(e[i].send_peer, e[i].recv_peer)));
    max_route = std::max<long long>(max_route, e[i].route);
  }
}

std::string EventReach::ranks_left_out(int nranks) const {
  if (nranks <= 0 || max_rank < nranks) return "";
  return fmt("nranks %d leaves out rank %lld, which earlier events name", nranks, max_rank);
}

std::string EventReach::routes_left_out(size_t nroutes) const {
  if (max_route < static_cast<long long>(nroutes)) return "";
  return fmt("%zu routes leave out route %lld, which earlier events use", nroutes, max_route);
}

std::string check_op(const Op& op) {
  const int c = static_cast<int>(op.coll);
  if (c < 0 || c >= static_cast<int>(CollKind::kNumKinds)) return fmt("collective %d is out of range", c);
  return "";
}

bool event_ok(int nr, size_t nroutes, const Event& e) {
  const uint32_t prim = static_cast<uint32_t>(e.prim), coll = static_cast<uint32_t>(e.coll);
  return e.rank >= 0 && (nr <= 0 || e.rank < nr) && e.channel >= 0 && e.send_peer >= -1 &&
         (nr <= 0 || e.send_peer < nr) && e.recv_peer >= -1 && (nr <= 0 || e.recv_peer < nr) &&
         prim <= static_cast<uint32_t>(PrimKind::kSendFromOutput) && coll < static_cast<uint32_t>(CollKind::kNumKinds) &&
         e.proto <= 2 && e.route >= -1 && (e.route < 0 || static_cast<size_t>(e.route) < nroutes);
}

std::string check_event(int nr, size_t nroutes, const Event& e) {
  const long long nranks = nr > 0 ? nr : -1;
  if (out_of(e.rank, 0, nranks)) return fmt("rank %d is out of range (%d ranks)", e.rank, nr);
  if (e.channel < 0) return fmt("channel %d is negative", e.channel);
  if (out_of(e.send_peer, -1, nranks)) return fmt("send_peer %d is out of range (%d ranks)", e.send_peer, nr);
  if (out_of(e.recv_peer, -1, nranks)) return fmt("recv_peer %d is out of range (%d ranks)", e.recv_peer, nr);
  const int prim = static_cast<int>(e.prim), coll = static_cast<int>(e.coll);
  if (prim < 0 || prim > static_cast<int>(PrimKind::kSendFromOutput)) return fmt("primitive %d is out of range", prim);
  if (coll < 0 || coll >= static_cast<int>(CollKind::kNumKinds)) return fmt("collective %d is out of range", coll);
  if (e.proto > 2) return fmt("protocol %d is out of range", e.proto);
  if (out_of(e.route, -1, static_cast<long long>(nroutes)))
    return fmt("route %d is out of range (%zu routes)", e.route, nroutes);
  return "";
}

std::string check_stuck(int nr, const Stuck& s) {
  const long long n = nr > 0 ? nr : -1;
  for (const StuckRank& r : s.ranks)
    if (out_of(r.rank, 0, n)) return fmt("rank %d is out of range (%d ranks)", r.rank, nr);
  for (const StuckWait& w : s.waits) {
    if (out_of(w.rank, 0, n)) return fmt("a wait of rank %d: the rank is out of range (%d ranks)", w.rank, nr);
    if (out_of(w.peer, -1, n)) return fmt("a wait of rank %d: peer %d is out of range (%d ranks)", w.rank, w.peer, nr);
    if (w.channel < 0) return fmt("a wait of rank %d: channel %d is negative", w.rank, w.channel);
  }
  return "";
}

std::string check_load(size_t nlinks, const LinkLoad& load) {
  if (load.bins < 0) return fmt("%d bins", load.bins);
  for (size_t i = 0; i < load.series.size(); ++i) {
    const LinkLoad::Series& s = load.series[i];
    if (out_of(s.link, 0, static_cast<long long>(nlinks)))
      return fmt("series %zu: link %d is out of range (%zu links)", i, s.link, nlinks);
    if (s.gbs.size() != static_cast<size_t>(load.bins))
      return fmt("series %zu: %zu values for %d bins", i, s.gbs.size(), load.bins);
  }
  return "";
}

// ---- applying a section -------------------------------------------------------------------------

namespace {

bool decode_events(Trace* t, uint64_t block, const std::string& raw, std::string* error) {
  auto fail = [&](const std::string& why) {
    *error = fmt("corrupt: event block %llu: ", static_cast<unsigned long long>(block)) + why;
    return false;
  };
  Cursor hdr{reinterpret_cast<const uint8_t*>(raw.data()), reinterpret_cast<const uint8_t*>(raw.data()) + raw.size()};
  uint64_t n = 0, ncols = 0;
  if (!hdr.varint(&n) || !hdr.varint(&ncols)) return fail("its header runs past its end");
  if (ncols < static_cast<uint64_t>(kEventColumns))
    return fail(fmt("%llu columns, this reader needs %d", static_cast<unsigned long long>(ncols), kEventColumns));
  if (ncols > raw.size()) return fail(fmt("%llu columns in %zu bytes", static_cast<unsigned long long>(ncols), raw.size()));
  std::vector<uint64_t> len(ncols);
  for (uint64_t c = 0; c < ncols; ++c)
    if (!hdr.varint(&len[c])) return fail("its column lengths run past its end");
  Cursor col[kEventColumns];
  const uint8_t* p = hdr.p;
  uint64_t left = static_cast<uint64_t>(hdr.end - hdr.p);
  for (uint64_t c = 0; c < ncols; ++c) {
    if (len[c] > left)
      return fail(fmt("column %s runs past its end (%llu bytes, %llu left in the block)", column_name(static_cast<int>(c)),
                      static_cast<unsigned long long>(len[c]), static_cast<unsigned long long>(left)));
    if (c < static_cast<uint64_t>(kEventColumns)) col[c] = Cursor{p, p + len[c]};
    p += len[c];
    left -= len[c];
  }
  if (left != 0) return fail(fmt("%llu bytes after its columns", static_cast<unsigned long long>(left)));
  // Every column holds at least one byte per event: a bound on n before allocating.
  for (int c = 0; c < kEventColumns; ++c)
    if (static_cast<uint64_t>(col[c].end - col[c].p) < n)
      return fail(fmt("column %s runs past its end (%llu events, %lld bytes)", column_name(c),
                      static_cast<unsigned long long>(n), static_cast<long long>(col[c].end - col[c].p)));
  const size_t first = t->events.size();
  if (t->events.capacity() < first + n) t->events.reserve(std::max<size_t>(first + n, 2 * t->events.capacity()));
  CtxTable ctxs;
  int64_t prev_rank = 0, prev_channel = 0, prev_begin = 0;
  uint64_t v[kEventColumns];
  for (uint64_t i = 0; i < n; ++i) {
    for (int c = 0; c < kEventColumns; ++c) {
      if (c == kColPrim || c == kColColl || c == kColProto) {
        if (col[c].p >= col[c].end) {
          t->events.resize(first);
          return fail(fmt("column %s runs past its end at event %llu", column_name(c), static_cast<unsigned long long>(i)));
        }
        v[c] = *col[c].p++;
      } else if (!col[c].varint(&v[c])) {
        t->events.resize(first);
        return fail(fmt("column %s runs past its end at event %llu", column_name(c), static_cast<unsigned long long>(i)));
      }
    }
    Event e;
    const int64_t rank = prev_rank + unzigzag(v[kColRank]), channel = prev_channel + unzigzag(v[kColChannel]);
    auto bad32 = [](int64_t x) { return x < INT32_MIN || x > INT32_MAX; };
    if (bad32(rank) || bad32(channel)) {
      t->events.resize(first);
      return fail(fmt("event %llu: rank or channel overflows", static_cast<unsigned long long>(i)));
    }
    prev_rank = rank;
    prev_channel = channel;
    e.rank = static_cast<int32_t>(rank);
    e.channel = static_cast<int32_t>(channel);
    Ctx& c = ctxs.get(e.rank, e.channel);
    const int64_t sp = c.send_peer + unzigzag(v[kColSendPeer]), rp = c.recv_peer + unzigzag(v[kColRecvPeer]),
                  route = c.route + unzigzag(v[kColRoute]);
    if (bad32(sp) || bad32(rp) || bad32(route)) {
      t->events.resize(first);
      return fail(fmt("event %llu: a peer or route overflows", static_cast<unsigned long long>(i)));
    }
    e.send_peer = static_cast<int32_t>(sp);
    e.recv_peer = static_cast<int32_t>(rp);
    e.route = static_cast<int32_t>(route);
    e.op_count = c.op_count + static_cast<uint64_t>(unzigzag(v[kColOpCount]));
    e.step = c.step + static_cast<uint64_t>(unzigzag(v[kColStep]));
    e.prim = static_cast<PrimKind>(static_cast<int>(v[kColPrim]));
    e.coll = static_cast<CollKind>(static_cast<int>(v[kColColl]));
    e.proto = static_cast<uint8_t>(v[kColProto]);
    e.offset = c.offset + static_cast<uint64_t>(unzigzag(v[kColOffset]));
    e.bytes = c.bytes + static_cast<uint64_t>(unzigzag(v[kColBytes]));
    const uint64_t b = static_cast<uint64_t>(prev_begin) + static_cast<uint64_t>(unzigzag(v[kColBegin]));
    prev_begin = static_cast<int64_t>(b);
    const uint64_t d = b + static_cast<uint64_t>(unzigzag(v[kColData]));
    const uint64_t en = d + static_cast<uint64_t>(unzigzag(v[kColEnd]));
    e.begin_us = from_ns(static_cast<int64_t>(b));
    e.data_us = from_ns(static_cast<int64_t>(d));
    e.end_us = from_ns(static_cast<int64_t>(en));
    c.send_peer = sp;
    c.recv_peer = rp;
    c.route = route;
    c.op_count = e.op_count;
    c.step = e.step;
    c.offset = e.offset;
    c.bytes = e.bytes;
    if (!event_ok(t->meta.nranks, t->routes.size(), e)) {
      t->events.resize(first);
      return fail(fmt("event %llu: ", static_cast<unsigned long long>(i)) +
                  check_event(t->meta.nranks, t->routes.size(), e));
    }
    t->events.push_back(e);
  }
  for (int c = 0; c < kEventColumns; ++c)
    if (col[c].p != col[c].end) {
      t->events.resize(first);
      return fail(fmt("column %s has %lld bytes after its %llu events", column_name(c),
                      static_cast<long long>(col[c].end - col[c].p), static_cast<unsigned long long>(n)));
    }
  return true;
}

}  // namespace

bool apply_section(Trace* t, ReadState* st, uint32_t kind, const std::string& raw, std::string* error) {
  const uint64_t index = st->sections;
  const std::string s = section_label(index, kind);
  if (st->complete) {
    *error = "corrupt: " + s + " after the END section";
    return false;
  }
  std::string why;
  try {
    switch (static_cast<SectionKind>(kind)) {
      case SectionKind::kMeta: {
        Meta m;
        decode_meta(json::parse(raw), &m);
        why = check_meta(m);
        // A META that replaces an earlier one (a live header update) keeps every rank already named.
        if (why.empty()) why = st->reach.ranks_left_out(m.nranks);
        if (why.empty()) {
          why = check_topo_ranks(*t, m.nranks);
          if (why.empty()) why = check_channels_ranks(m.nranks, t->channels);
          if (!why.empty()) why = fmt("nranks %d does not fit the earlier sections: ", m.nranks) + why;
        }
        if (why.empty()) t->meta = std::move(m);
        break;
      }
      case SectionKind::kTopo: {
        Trace tmp;
        tmp.meta.nranks = t->meta.nranks;
        decode_topo(json::parse(raw), &tmp);
        why = check_topo(tmp);
        // A TOPO that replaces an earlier one keeps every route the events use and every link the load
        // names.
        if (why.empty()) why = st->reach.routes_left_out(tmp.routes.size());
        if (why.empty()) {
          why = check_load(tmp.links.size(), t->load);
          if (!why.empty()) why = "the earlier LOAD section does not fit it: " + why;
        }
        if (why.empty()) {
          t->nodes = std::move(tmp.nodes);
          t->links = std::move(tmp.links);
          t->routes = std::move(tmp.routes);
        }
        break;
      }
      case SectionKind::kChannels: {
        std::vector<Channel> c = decode_channels(json::parse(raw));
        why = check_channels(*t, c);
        if (why.empty()) t->channels = std::move(c);
        break;
      }
      case SectionKind::kOps: {
        std::vector<Op> ops = decode_ops(json::parse(raw));
        for (size_t i = 0; i < ops.size() && why.empty(); ++i) {
          why = check_op(ops[i]);
          if (!why.empty()) why = fmt("op %zu: ", i) + why;
        }
        if (why.empty()) {
          st->ops += ops.size();
          t->ops.insert(t->ops.end(), std::make_move_iterator(ops.begin()), std::make_move_iterator(ops.end()));
        }
        break;
      }
      case SectionKind::kEvents: {
        const size_t before = t->events.size();
        if (!decode_events(t, st->blocks, raw, error)) return false;
        st->reach.add(t->events.data() + before, t->events.size() - before);
        st->events += t->events.size() - before;
        ++st->blocks;
        break;
      }
      case SectionKind::kLoad: {
        LinkLoad l;
        if (decode_load(raw, &l, &why)) {
          why = check_load(t->links.size(), l);
          if (why.empty()) t->load = std::move(l);
        }
        break;
      }
      case SectionKind::kStuck: {
        std::vector<Stuck> ss = decode_stuck(json::parse(raw));
        for (size_t i = 0; i < ss.size() && why.empty(); ++i) {
          why = check_stuck(t->meta.nranks, ss[i]);
          if (!why.empty()) why = fmt("report %zu: ", i) + why;
        }
        if (why.empty())
          t->stuck.insert(t->stuck.end(), std::make_move_iterator(ss.begin()), std::make_move_iterator(ss.end()));
        break;
      }
      case SectionKind::kEnd: {
        if (raw.size() < 24) {
          why = fmt("%zu bytes, needs 24", raw.size());
          break;
        }
        const uint8_t* p = reinterpret_cast<const uint8_t*>(raw.data());
        const uint64_t ns = get_u64(p), ne = get_u64(p + 8), no = get_u64(p + 16);
        if (ns != index || ne != st->events || no != st->ops) {
          *error = fmt("corrupt: the END section counts %llu sections, %llu events, %llu ops but the trace has "
                       "%llu sections, %llu events, %llu ops",
                       static_cast<unsigned long long>(ns), static_cast<unsigned long long>(ne),
                       static_cast<unsigned long long>(no), static_cast<unsigned long long>(index),
                       static_cast<unsigned long long>(st->events), static_cast<unsigned long long>(st->ops));
          return false;
        }
        st->complete = true;
        break;
      }
      default:
        break;  // a newer writer's section: skipped
    }
  } catch (const std::exception& e) {
    *error = "corrupt: " + s + ": bad JSON: " + e.what();
    return false;
  }
  if (!why.empty()) {
    *error = "corrupt: " + s + ": " + why;
    return false;
  }
  ++st->sections;
  return true;
}

}  // namespace codec
}  // namespace trace
}  // namespace cclab
