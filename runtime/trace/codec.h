// runtime/trace/codec.h - internal: the pieces of the trace file format (docs/trace-format.md)
// shared by the writer (trace.cc), the whole-file reader and the stream decoder. Not installed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "trace/trace.h"

namespace cclab {
namespace trace {
namespace codec {

constexpr size_t kFileHeaderBytes = 16;
constexpr size_t kSectionHeaderBytes = 32;
constexpr uint32_t kCodecRaw = 0;
constexpr uint32_t kCodecZstd = 1;
constexpr int kZstdLevel = 3;
// A section's raw (decoded) length may not exceed 4 GiB, nor max(64 x its stored length, 16 MiB):
// a corrupt header cannot make a reader allocate absurd amounts. The writer stores a section raw
// when compressing it would exceed the ratio (never seen in practice).
constexpr uint64_t kMaxRawBytes = uint64_t(4) << 30;
constexpr uint64_t kMaxRatio = 64;
constexpr uint64_t kRatioFreeBytes = uint64_t(16) << 20;
// Event columns written by this version, in order (a reader needs at least these; more are skipped).
constexpr int kEventColumns = 15;
const char* column_name(int c);

struct SectionHeader {
  uint32_t kind = 0;
  uint32_t codec = 0;
  uint64_t stored = 0;
  uint64_t raw = 0;
  uint32_t crc = 0;
  uint32_t reserved = 0;
};

// "META", ...: the four characters of a kind, known or not ("????" when not printable).
std::string kind_name(uint32_t kind);
bool known_kind(uint32_t kind);

std::string file_header();
// Checks the 16-byte header (n >= 16). False with *error ("not a cclab trace (bad magic)", ...).
bool check_file_header(const uint8_t* p, std::string* error);
// Whether the first n (< 16) bytes could start a trace (the magic's prefix).
bool magic_prefix(const uint8_t* p, size_t n);

void put_section_header(std::string* out, const SectionHeader& h);
SectionHeader get_section_header(const uint8_t* p);
// Sanity of a header before its bytes are read: codec, lengths. `index`: the section's number.
bool check_section_header(const SectionHeader& h, uint64_t index, std::string* error);
// CRC and decompression of the stored bytes into *raw. Unknown kinds are only CRC-checked.
bool unpack_section(const SectionHeader& h, const uint8_t* stored, uint64_t index, std::string* raw,
                    std::string* error);
// A whole section (header + stored bytes) for `raw`; zstd when `compress` and it helps.
std::string pack_section(SectionKind kind, const std::string& raw, bool compress);

uint32_t crc32_of(const void* data, size_t n);

// Section payloads.
std::string encode_meta(const Meta& m);
std::string encode_topo(const Trace& t);
std::string encode_channels(const std::vector<Channel>& channels);
std::string encode_ops(const std::vector<Op>& ops);
std::string encode_events(const Event* events, size_t n);
std::string encode_load(const LinkLoad& load);
std::string encode_stuck(const std::vector<Stuck>& stuck);
std::string encode_end(uint64_t sections, uint64_t events, uint64_t ops);

// The largest rank (rank, send or receive peer) and route index that a stream of events names: what a
// header replacing an earlier one must still describe (the reader refuses one that does not; the live
// server does not send it).
struct EventReach {
  long long max_rank = -1;
  long long max_route = -1;
  void add(const Event* e, size_t n);
  // "" when `nranks` ranks (0: unknown) cover every rank named, else what is left out ("nranks 2 leaves
  // out rank 3, which earlier events name"); likewise for `nroutes` routes.
  std::string ranks_left_out(int nranks) const;
  std::string routes_left_out(size_t nroutes) const;
};

// What the reader keeps across sections.
struct ReadState {
  uint64_t sections = 0;  // sections applied (the next one's index)
  uint64_t events = 0;    // events decoded
  uint64_t ops = 0;       // ops decoded
  uint64_t blocks = 0;    // EVTS blocks decoded
  bool complete = false;  // END read and its counts matched
  // What accepted events name, for a META or TOPO that replaces an earlier one (the events may have been
  // drained from the trace by then).
  EventReach reach;
};

// Applies one section's raw bytes to *t (index = st->sections). Unknown kinds are skipped. Validates
// what it decodes against what *t holds already (nranks, routes, links, nodes). A META, TOPO or CHAN
// replaces an earlier one (live header updates), and must then fit what was accepted before it: a META
// keeps every rank that events, nodes, routes and channels name, a TOPO every route events use and
// every link the LOAD names. False with *error.
bool apply_section(Trace* t, ReadState* st, uint32_t kind, const std::string& raw, std::string* error);

// Validation shared by reader and writer: "" when fine, else what is wrong.
std::string check_meta(const Meta& m);
std::string check_topo(const Trace& t);
std::string check_channels(const Trace& t, const std::vector<Channel>& channels);
std::string check_op(const Op& op);
bool event_ok(int nranks, size_t nroutes, const Event& e);  // the fast check; check_event says why not
std::string check_event(int nranks, size_t nroutes, const Event& e);
std::string check_load(size_t nlinks, const LinkLoad& load);
std::string check_stuck(int nranks, const Stuck& s);  // ranks in [0, nranks), peers in [-1, nranks)

// Time in integer nanoseconds (llround(us * 1000), non-finite and out-of-range values clamped).
int64_t to_ns(double us);
inline double from_ns(int64_t ns) { return static_cast<double>(ns) / 1000.0; }

}  // namespace codec
}  // namespace trace
}  // namespace cclab
