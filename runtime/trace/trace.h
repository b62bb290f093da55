// runtime/trace/trace.h - cclab's trace: what a run did, step by step, on which links, in one
// versioned, compressed, checksummed file (docs/trace-format.md). Written by the simulator
// (`cclab sim --trace`), by the host backend (CCLAB_TRACE=path) and streamed live (trace/live.h);
// read by `cclab trace` (info, dump, export --chrome) and by the visualiser (`cclab viz`).
//
//   Trace t;                              // fill meta, nodes, links, routes, channels, ops, events
//   compute_link_load(&t);                // per-link bandwidth samples from the events (optional)
//   std::string err;
//   if (!write_trace("run.cctrace", t, &err)) ...
//   Trace back;
//   if (!read_trace("run.cctrace", &back, &err)) ... err: "run.cctrace: truncated: section 5 ..."
//
// For runs too large to hold, TraceWriter streams: header sections first, then events in blocks as
// they come, then ops and link load, then the END section (without it a reader reports truncation).
//
// The file is a sequence of sections after a 16-byte header (magic "CCLABTR\0", u32 version, u32
// flags); each section is a 32-byte header (u32 kind, u32 codec, u64 stored length, u64 raw length,
// u32 CRC-32 of the stored bytes, u32 reserved) and its bytes (zstd when codec is 1). META, TOPO, CHAN
// and OPS hold JSON; EVTS blocks hold up to kEventsPerBlock events in columns of zig-zag varint deltas
// (times as integer nanoseconds); LOAD holds float32 GB/s per link and time bin; STUK (JSON) the
// doctor's reports of stuck waits; END holds the counts.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "kernels/step_record.h"

namespace cclab {
namespace trace {

constexpr uint32_t kFormatVersion = 1;
constexpr char kMagic[8] = {'C', 'C', 'L', 'A', 'B', 'T', 'R', '\0'};
constexpr size_t kEventsPerBlock = 65536;

// Section kinds (four ASCII characters, little-endian).
enum class SectionKind : uint32_t {
  kMeta = 0x4154454d,    // "META": Meta as JSON
  kTopo = 0x4f504f54,    // "TOPO": nodes, links, routes as JSON
  kChannels = 0x4e414843,  // "CHAN": channels as JSON
  kOps = 0x2053504f,     // "OPS ": collectives as JSON (may repeat; concatenated in order)
  kEvents = 0x53545645,  // "EVTS": one block of events (binary, columnar)
  kLoad = 0x44414f4c,    // "LOAD": link-load samples (binary)
  kEnd = 0x20444e45,     // "END ": counts; the last section of a complete trace
  kStuck = 0x4b555453,   // "STUK": the doctor's reports of stuck waits as JSON (may repeat; concatenated)
};
const char* section_name(SectionKind k);  // "META", ...; "????" for an unknown kind

struct Meta {
  std::string tool;          // "cclab 0.1.0"
  std::string backend;       // "host", "sim" or "cuda"
  std::string topo_name;     // "dgx-h100", "virtual", or the XML file
  std::string topo_description;
  int machines = 1;
  int nranks = 0;
  std::string clock;         // what the times mean: "simulated" or "wall"
  std::string command;       // the command line or program that made the trace (informational)
  std::string created;       // ISO 8601 UTC time the trace was written (informational)
};

// A vertex of the topology: GPU, NVSwitch, PCIe switch, CPU (root complex), NIC, network switch.
struct Node {
  std::string name;          // "m0.gpu3", "m1.nvswitch", "fabric.leaf.r3.0"
  std::string kind;          // "gpu", "nvswitch", "pci", "cpu", "nic", "net", "switch"
  int machine = 0;           // -1 for the network's switches
  int dev = -1;              // GPU / NIC index on its machine
  int rank = -1;             // GPUs: the rank that plays it, -1 none
};

// One direction of a physical link.
struct Link {
  int from = -1, to = -1;    // node indices
  int reverse = -1;          // the opposite direction's link index, -1 none
  std::string kind;          // "nvlink", "pci", "sys" (inter-socket), "net" (NIC/switch ports)
  double gbs = 0;            // capacity, GB/s
  double latency_us = 0;
  // A degraded fabric (`cclab sim --degrade/--fail`): from degraded_at_us on, the link carries
  // degraded x gbs (0: failed). degraded_at_us < 0: healthy (files without the fields read so).
  double degraded = 1;
  double degraded_at_us = -1;
};

// The links a step from rank `src` to rank `dst` crosses, in order.
struct Route {
  int src = -1, dst = -1;
  std::vector<int> links;
};

struct Channel {
  int index = 0;
  std::vector<int> ring;                   // ring order of ranks
  int tree_index = 0;                      // which of the double binary tree's trees
  std::vector<int> tree_up;                // per rank: parent, -1 at the root (empty: no tree)
  std::vector<std::array<int, 3>> tree_down;  // per rank: children, -1 where none
};

// One collective (per communicator opCount; ranks of one communicator share it).
struct Op {
  uint64_t op_count = 0;
  CollKind coll = CollKind::kAllReduce;
  std::string algo;          // "Ring", "Tree"
  std::string proto;         // "LL", "LL128", "Simple"
  std::string type;          // "float", "half", ... (nccl-tests spellings)
  std::string redop;         // "sum", ...; "" when the collective does not reduce
  int root = -1;
  size_t count = 0;          // elements per rank, as the API call got it
  size_t bytes = 0;          // NCCL's nBytes (as nccl-tests' size column)
  int nchannels = 0;
  double begin_us = 0, end_us = 0;  // first step's begin, last step's end over every rank
  double algbw = 0, busbw = 0;      // GB/s, nccl-tests' definitions (0 when unknown)
};

// One primitive step of one rank on one channel (kernels' StepRecord plus what the trace adds).
struct Event {
  int32_t rank = 0;
  int32_t channel = 0;
  int32_t send_peer = -1;    // -1: sends nothing
  int32_t recv_peer = -1;    // -1: receives nothing
  uint64_t op_count = 0;
  uint64_t step = 0;         // FIFO step on the connection when the slice began
  PrimKind prim = PrimKind::kSend;
  CollKind coll = CollKind::kAllReduce;
  uint8_t proto = 2;         // 0 LL, 1 LL128, 2 Simple (kProtoLL...)
  uint64_t offset = 0;       // byte offset of the slice in the rank's buffer ("which chunk")
  uint64_t bytes = 0;        // payload bytes
  double begin_us = 0;       // started waiting
  double data_us = 0;        // its waits were satisfied: the data started to move
  double end_us = 0;         // data posted
  int32_t route = -1;        // index into Trace::routes of rank -> send_peer, -1 when none
};

// One sleeping wait the doctor's report lists (core/doctor.h, base/board.h).
struct StuckWait {
  int rank = -1;             // the rank that waits
  int channel = 0;
  int peer = -1;             // the rank it waits for
  uint64_t step = 0;         // FIFO step it waits for
  bool for_data = true;      // true: data (the peer's tail); false: FIFO credits (the peer's head)
  std::string prim;          // the primitive that waits ("recvReduceSend", ...)
  uint64_t op_count = 0;     // the communicator's operation it belongs to
  double since_us = 0;       // when it went to sleep (the trace's clock)
};

// One rank's line of the report.
struct StuckRank {
  int rank = -1;
  int pid = 0;               // 0: no status (never opened the board, or on another host)
  std::string state;         // "running", "idle" (not in a call), "left", "dead", "none" (no status)
  std::string line;          // the report's line for it ("rank 0 (pid 12): in op #0, ...")
};

// A report of the doctor: the ranks of a communicator that wait, and its verdict, at time_us.
struct Stuck {
  double time_us = 0;        // when the board was read (the trace's clock)
  bool certain = false;      // the operation cannot complete: the waits ended with `code`
  int code = 0;              // ncclResult_t of a certain verdict (0 otherwise)
  std::string summary;       // the verdict, one line
  std::vector<std::string> lines;   // the report as printed (without its "doctor: " first line)
  std::vector<StuckRank> ranks;
  std::vector<StuckWait> waits;     // the waits the report lists (asleep long enough)
};

// Bandwidth of each link over time: bin i covers [t0_us + i*bin_us, t0_us + (i+1)*bin_us).
struct LinkLoad {
  double t0_us = 0;
  double bin_us = 0;
  int bins = 0;
  struct Series {
    int link = -1;                 // index into Trace::links
    std::vector<float> gbs;        // `bins` values, GB/s averaged over the bin
  };
  std::vector<Series> series;      // links that carried traffic, ascending link index
};

struct Trace {
  Meta meta;
  std::vector<Node> nodes;
  std::vector<Link> links;
  std::vector<Route> routes;
  std::vector<Channel> channels;
  std::vector<Op> ops;
  std::vector<Event> events;       // ordered by begin_us, then rank, channel
  LinkLoad load;
  std::vector<Stuck> stuck;        // the doctor's reports (STUK sections), in time order

  // Index of the route from rank src to rank dst, -1 when the trace has none.
  int route_index(int src, int dst) const;
  // First and last time of any event (0, 0 when none).
  double begin_us() const;
  double end_us() const;
  // The node a rank plays (-1 when none).
  int rank_node(int rank) const;

  // Internal: route_index's lookup table, built on first use (safe to call from several threads at
  // once); rebuilt when `routes` is reallocated, resized or found changed. Not part of the trace.
  struct RouteCache;
  mutable std::shared_ptr<const RouteCache> route_cache_;
};

// Converts an executor's step (end = data_us when the executor does not report it) into an event.
Event event_from_record(const StepRecord& r, int proto, int route);

// Sorts events into the order readers expect (begin_us, rank, channel, step).
void sort_events(std::vector<Event>* events);

// Fills t->load from the events: each sending step's wire bytes (the protocol's: LL 2x the payload,
// LL128 128/120) spread evenly over [data_us, end_us] on every link of its route, summed into at most
// `max_bins` bins over the trace's time span. Links that carried nothing have no series. NVLS switch
// steps (a rank that names itself as its peer, trace/switch_traffic.h) load the GPU <-> NVSwitch links.
void compute_link_load(Trace* t, int max_bins = 1000);
// Adds `bytes` moving evenly over [x0, x1] to the bins b0 .. b1 of `bins` (bin b covers [t0 + b x bin_us,
// t0 + (b + 1) x bin_us)): each bin its share of the overlap, the last bin the rest, so the bytes are
// conserved exactly; all of them to bin b1 when b0 == b1 or the interval is empty. compute_link_load and
// the visualiser's live binning both place a step's bytes with it.
void spread_bytes(double* bins, double t0, double bin_us, int b0, int b1, double x0, double x1, double bytes);
// Bytes a step puts on the wire for `payload` bytes with protocol `proto` (kProtoLL: 8-byte lines of
// 4 data + 4 flag bytes, 2x; kProtoLL128: 120 data bytes per 128-byte line; Simple: the payload).
double wire_bytes(int proto, uint64_t payload);

// Whole-file write and read. False with *error naming the file and what was wrong ("not a cclab
// trace (bad magic)", "trace format version 7 is newer than this reader (1)", "truncated: section 4
// (EVTS) needs N bytes at offset X but the file ends at Y", "corrupt: section 3 (OPS) checksum
// mismatch", "incomplete: no END section (the writer did not finish)", ...; docs/trace-format.md lists
// them). Never throws, never crashes on arbitrary bytes. On failure *out holds what was read before the
// problem. The writer checks what it writes as the reader will (ranks, routes, links, enums) and fails
// rather than write a file its reader rejects (write_trace then removes the file; encode_trace returns
// an empty string).
bool write_trace(const std::string& path, const Trace& t, std::string* error);
bool read_trace(const std::string& path, Trace* out, std::string* error);
// The same, to and from memory.
std::string encode_trace(const Trace& t);
bool decode_trace(const std::string& bytes, Trace* out, std::string* error);

// Streaming writer: header sections, then events in blocks of kEventsPerBlock as they are added, then
// ops, link load and END at finish(). Writes to a file or to any byte sink (the live socket).
class TraceWriter {
 public:
  using Sink = bool (*)(const void* data, size_t n, void* user);  // false: the sink failed
  TraceWriter();
  ~TraceWriter();
  bool open(const std::string& path, std::string* error);
  void open_sink(Sink sink, void* user);
  // META, TOPO and CHAN from `t` (its ops, events and load are ignored here).
  bool begin(const Trace& t);
  bool add_event(const Event& e);       // buffered; a full block is compressed and written
  bool add_ops(const std::vector<Op>& ops);  // one OPS section
  bool add_stuck(const std::vector<Stuck>& stuck);  // one STUK section (nothing when empty)
  bool flush_events();                  // writes the buffered events as a (short) block now
  bool finish(const LinkLoad* load);    // last block, LOAD (when given) and END; closes a file
  const std::string& error() const { return error_; }
  uint64_t events_written() const { return events_; }

 private:
  bool put(const std::string& bytes);
  bool writable(const char* call);  // no error yet and begun (else error_ says "CALL() before begin()")
  bool section(SectionKind kind, const std::string& raw, bool compress);
  FILE* file_ = nullptr;
  Sink sink_ = nullptr;
  void* user_ = nullptr;
  std::vector<Event> pending_;
  uint64_t events_ = 0, sections_ = 0, ops_ = 0;
  int nranks_ = 0;                      // from begin(): what events and load are checked against
  size_t nroutes_ = 0, nlinks_ = 0;
  bool begun_ = false;
  std::string path_, error_;
};

// Incremental reader of a byte stream (a file being written or a live socket): feed bytes as they
// come; each complete section is applied to the trace being built.
class TraceStreamDecoder {
 public:
  // Appends bytes; false with error() once the stream is corrupt (then it stays failed).
  bool feed(const void* data, size_t n);
  // Sections applied so far. Events of a section are appended to trace().events in stream order.
  const Trace& trace() const { return trace_; }
  Trace& trace() { return trace_; }
  bool header_seen() const { return header_seen_; }
  bool complete() const { return complete_; }  // the END section was read
  uint64_t sections() const { return sections_; }
  const std::string& error() const { return error_; }

 private:
  bool apply(uint32_t kind, const std::string& raw);
  bool fail(const std::string& why);
  std::string buf_;
  size_t pos_ = 0;
  uint64_t offset_ = 0;  // stream offset of buf_[0]
  bool header_seen_ = false, complete_ = false, failed_ = false;
  uint64_t sections_ = 0;
  uint64_t events_seen_ = 0, ops_seen_ = 0, blocks_ = 0;  // for END's check (trace_ may be drained)
  long long max_rank_ = -1, max_route_ = -1;  // what accepted events name (codec::EventReach)
  Trace trace_;
  std::string error_;
};

// The current UTC time as ISO 8601 ("2026-11-22T13:55:57Z"), for Meta::created.
std::string utc_now_iso8601();

// Names used in the file and by `cclab trace dump` ("AllReduce", "recvReduceSend", ...).
const char* coll_name(CollKind c);
const char* prim_label(PrimKind p);
const char* proto_label(int proto);

}  // namespace trace
}  // namespace cclab
