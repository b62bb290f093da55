// runtime/core/recorder.cc - see recorder.h.
#include "core/recorder.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "base/log.h"
#include "base/param.h"
#include "graph/channels.h"
#include "kernels/describe.h"
#include "base/sync.h"
#include "trace/from_topo.h"
#include "trace/live.h"
#include "trace/trace.h"

namespace cclab {

class Recorder {
 public:
  std::mutex mu;
  std::string path;       // CCLAB_TRACE ("" = no file)
  std::string live_path;  // CCLAB_LIVE ("" = no live stream)
  double live_wait_s = 0;
  size_t max_events = 0;
  std::string clique;     // id_hash of the recorded communicators
  int attached = 0;
  bool header_done = false, written = false, warned_other = false, warned_full = false;
  int first_rank = -1;
  bool multi_process = false;
  double t0 = 0;          // live stream: times are relative to this
  trace::Trace t;         // header, ops and (for the file) events
  std::map<uint64_t, size_t> op_index;
  std::map<uint64_t, int> op_reports;  // ranks that finished each collective
  std::set<uint64_t> ops_streamed;     // collectives sent to the live viewer
  std::set<uint64_t> stuck_keys;       // the doctor's reports recorded (recorder_stuck)
  std::unique_ptr<trace::LiveServer> live;

  void build_header(ncclComm_t comm);
  void write_and_finish();
};

namespace {

const char* type_label(int t) {
  static const char* names[] = {"int8", "uint8", "int32", "uint32", "int64", "uint64", "half",
                                "float", "double", "bfloat16", "f8e4m3", "f8e5m2"};
  return t >= 0 && t < 12 ? names[t] : "?";
}
const char* redop_label(int op) {
  static const char* names[] = {"sum", "prod", "max", "min", "avg"};
  return op >= 0 && op < 5 ? names[op] : "premulsum";
}

std::string program_name() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

Recorder* make_recorder() {
  const std::string path = param_str("CCLAB_TRACE", "");
  const std::string live = param_str("CCLAB_LIVE", "");
  if (path.empty() && live.empty()) return nullptr;
  auto* r = new Recorder;
  r->path = path;
  r->live_path = live;
  r->live_wait_s = std::atof(param_str("CCLAB_LIVE_WAIT", "0").c_str());
  r->max_events = static_cast<size_t>(param_int("CCLAB_TRACE_MAX_EVENTS", 20000000));
  // A process that never destroys its communicators still leaves a trace.
  std::atexit([] {
    Recorder* rec = recorder();
    if (rec == nullptr) return;
    std::lock_guard<std::mutex> lk(rec->mu);
    if (rec->header_done && !rec->written) rec->write_and_finish();
  });
  return r;
}

}  // namespace

Recorder* recorder() {
  static Recorder* r = make_recorder();
  return r;
}

void Recorder::build_header(ncclComm_t comm) {
  t.meta.tool = "cclab " CCLAB_VERSION_STRING;
  // The backend that ran the steps: a CUDA run's steps are %globaltimer stamps shifted onto the host's
  // clock (docs/gpu.md), so the clock is the host's wall clock either way.
  t.meta.backend = comm->cuda ? "cuda" : comm->sim ? "sim" : "host";
  t.meta.clock = "wall";
  t.meta.command = program_name();
  std::vector<int> rank_gpu(comm->nranks, -1);
  for (int r = 0; r < comm->nranks; ++r) rank_gpu[r] = comm->topo.gpu_node(comm->rank_node[r], comm->rank_dev[r]);
  RankPlacement place;
  place.rank_machine = comm->rank_node;
  place.rank_dev = comm->rank_dev;
  const std::vector<ChannelPlan> plan =
      plan_channels(comm->topo, comm->ring_graph, comm->tree_graph, place, comm->nchannels);
  t.channels.clear();
  for (int c = 0; c < comm->nchannels && c < static_cast<int>(plan.size()); ++c)
    t.channels.push_back(trace::make_channel(c, plan[c].ring, plan[c].tree_index, plan[c].tree));
  // Rings and trees, plus every pair for send/recv on small communicators.
  std::vector<std::pair<int, int>> pairs = comm->nranks <= 64 ? trace::all_pairs(comm->nranks)
                                                              : trace::channel_pairs(t.channels);
  trace::set_topology(comm->topo, rank_gpu, pairs, &t);
  multi_process = false;
  for (const PeerInfo& p : comm->peers) multi_process |= p.proc_hash != comm->peers[comm->rank].proc_hash;
  header_done = true;
}

void Recorder::write_and_finish() {
  written = true;
  // One process of several: its file keeps the system-wide monotonic clock, so that `cclab trace merge`
  // can line the processes' steps up (on one host).
  const double origin = multi_process ? 0.0 : t0;
  if (multi_process) t.meta.clock = "wall (monotonic clock of the host, microseconds)";
  for (trace::Event& e : t.events) {
    e.begin_us -= origin;
    e.data_us -= origin;
    e.end_us -= origin;
  }
  for (trace::Stuck& st : t.stuck) {
    st.time_us -= origin;
    for (trace::StuckWait& w : st.waits) w.since_us -= origin;
  }
  for (trace::Op& o : t.ops) {
    o.begin_us -= origin;
    o.end_us -= origin;
    const double us = o.end_us - o.begin_us;
    o.algbw = us > 0 ? static_cast<double>(o.bytes) / (us * 1e3) : 0;
    o.busbw = o.algbw * bus_factor(o.coll, t.meta.nranks);
  }
  if (live) {
    std::vector<trace::Op> rest;  // collectives not every local rank reported before detaching
    for (const trace::Op& o : t.ops)
      if (!ops_streamed.count(o.op_count)) rest.push_back(o);
    if (!rest.empty()) live->push_ops(rest);
    live->finish();
    live.reset();
  }
  if (path.empty()) return;
  trace::sort_events(&t.events);
  trace::compute_link_load(&t);
  t.meta.created = trace::utc_now_iso8601();
  std::string file = path;
  if (multi_process) file += "." + std::to_string(first_rank);
  std::string err;
  if (!trace::write_trace(file, t, &err))
    CCLAB_WARN("CCLAB_TRACE: %s", err.c_str());
  else
    CCLAB_INFO(kLogInit, "CCLAB_TRACE: wrote %zu steps and %zu collectives to %s", t.events.size(), t.ops.size(),
               file.c_str());
  t.events.clear();
  t.events.shrink_to_fit();
}

void recorder_attach(ncclComm_t comm) {
  Recorder* rec = recorder();
  if (rec == nullptr || comm->sim) return;
  std::lock_guard<std::mutex> lk(rec->mu);
  if (rec->written) return;
  if (rec->clique.empty()) rec->clique = comm->id_hash;
  if (comm->id_hash != rec->clique) {
    if (!rec->warned_other) {
      CCLAB_WARN("CCLAB_TRACE/CCLAB_LIVE: only the first communicator (and its ranks in this process) is "
                 "recorded; comm %p is another one", static_cast<void*>(comm));
      rec->warned_other = true;
    }
    return;
  }
  comm->recording = true;
  ++rec->attached;
  if (rec->first_rank < 0 || comm->rank < rec->first_rank) rec->first_rank = comm->rank;
  if (!rec->header_done) {
    rec->build_header(comm);
    rec->t0 = now_us();
    if (!rec->live_path.empty()) {
      rec->live = std::make_unique<trace::LiveServer>();
      std::string err;
      if (!rec->live->start(rec->live_path, rec->t, rec->live_wait_s, &err)) {
        CCLAB_WARN("CCLAB_LIVE=%s: %s; the run goes on without a live stream", rec->live_path.c_str(), err.c_str());
        rec->live.reset();
      }
    }
  }
}

void recorder_detach(ncclComm_t comm) {
  if (!comm->recording) return;
  Recorder* rec = recorder();
  std::lock_guard<std::mutex> lk(rec->mu);
  comm->recording = false;
  if (--rec->attached == 0 && !rec->written) rec->write_and_finish();
}

void recorder_step(const StepRecord& r, void* data) {
  const RecordCtx* ctx = static_cast<const RecordCtx*>(data);
  Recorder* rec = ctx->recorder;
  trace::Event e = trace::event_from_record(r, ctx->proto, -1);
  if (rec->live) {
    trace::Event le = e;
    le.begin_us -= rec->t0;
    le.data_us -= rec->t0;
    le.end_us -= rec->t0;
    le.route = e.send_peer >= 0 ? rec->t.route_index(e.rank, e.send_peer) : -1;
    rec->live->push(le);
  }
  if (rec->path.empty()) return;
  std::lock_guard<std::mutex> lk(rec->mu);
  if (rec->written) return;
  if (rec->t.events.size() >= rec->max_events) {
    if (!rec->warned_full)
      CCLAB_WARN("CCLAB_TRACE: %zu steps recorded; later steps are left out (CCLAB_TRACE_MAX_EVENTS)",
                 rec->max_events);
    rec->warned_full = true;
    return;
  }
  e.route = e.send_peer >= 0 ? rec->t.route_index(e.rank, e.send_peer) : -1;
  rec->t.events.push_back(e);
}

void recorder_op(ncclComm_t comm, uint64_t op_count, CollKind coll, const char* algo, const char* proto, int type,
                 int redop, int root, size_t count, size_t bytes, int nchannels, double begin_us, double end_us) {
  if (!comm->recording) return;
  Recorder* rec = recorder();
  std::lock_guard<std::mutex> lk(rec->mu);
  auto it = rec->op_index.find(op_count);
  if (it == rec->op_index.end()) {
    trace::Op o;
    o.op_count = op_count;
    o.coll = coll;
    o.algo = algo;
    o.proto = proto;
    o.type = type_label(type);
    o.redop = coll == CollKind::kAllReduce || coll == CollKind::kReduce || coll == CollKind::kReduceScatter
                  ? redop_label(redop)
                  : "";
    o.root = root;
    o.count = count;
    o.bytes = bytes;
    o.nchannels = nchannels;
    o.begin_us = begin_us;
    o.end_us = end_us;
    it = rec->op_index.emplace(op_count, rec->t.ops.size()).first;
    rec->t.ops.push_back(o);
  } else {
    trace::Op& o = rec->t.ops[it->second];
    o.begin_us = std::min(o.begin_us, begin_us);
    o.end_us = std::max(o.end_us, end_us);
  }
  // Every rank this process plays has finished it: the live viewer gets it now.
  if (++rec->op_reports[op_count] == rec->attached && rec->live) {
    trace::Op o = rec->t.ops[it->second];
    o.begin_us -= rec->t0;
    o.end_us -= rec->t0;
    const double us = o.end_us - o.begin_us;
    o.algbw = us > 0 ? static_cast<double>(o.bytes) / (us * 1e3) : 0;
    o.busbw = o.algbw * bus_factor(o.coll, rec->t.meta.nranks);
    rec->live->push_ops({o});
    rec->ops_streamed.insert(op_count);
  }
}

void recorder_stuck(ncclComm_t comm, const BoardVerdict& v, uint64_t key) {
  if (!comm->recording) return;
  Recorder* rec = recorder();
  // The board's times are CLOCK_MONOTONIC; the trace's are now_us() (the executors' clock).
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  const double shift = static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3 - now_us();
  trace::Stuck st;
  st.time_us = v.now_us - shift;
  st.certain = v.certain;
  st.code = v.code;
  st.summary = v.summary;
  st.lines = v.lines;
  for (const BoardVerdict::Rank& r : v.ranks) st.ranks.push_back({r.rank, r.pid, r.state, r.line});
  for (const auto& rw : v.waits) {
    trace::StuckWait w;
    w.rank = rw.first;
    w.channel = rw.second.channel;
    w.peer = rw.second.peer;
    w.step = rw.second.step;
    w.for_data = rw.second.for_data != 0;
    w.prim = prim_name(static_cast<PrimKind>(rw.second.prim));
    w.op_count = rw.second.op_seq;
    w.since_us = rw.second.since_us - shift;
    st.waits.push_back(std::move(w));
  }
  std::lock_guard<std::mutex> lk(rec->mu);
  if (rec->written || !rec->stuck_keys.insert(key).second) return;
  rec->t.stuck.push_back(st);
  if (rec->live) {
    st.time_us -= rec->t0;
    for (trace::StuckWait& w : st.waits) w.since_us -= rec->t0;
    rec->live->push_stuck({st});
  }
}

}  // namespace cclab
