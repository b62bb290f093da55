// sim/trace_out.cc - the trace of a simulated run (docs/trace-format.md): the model's topology, the
// channels' rings and trees, one Op per collective run_sizes ran, every step the executors reported
// (step level) and the links' load computed from those steps.
#include <algorithm>
#include <chrono>
#include <ctime>
#include <unordered_map>

#include "sim/world.h"
#include "trace/from_topo.h"
#include "trace/live.h"
#include "trace/trace.h"
#include "kernels/describe.h"

namespace cclab {
namespace sim {
namespace {

const char* redop_label(RedOpKind k) {
  switch (k) {
    case RedOpKind::kSum: return "sum";
    case RedOpKind::kProd: return "prod";
    case RedOpKind::kMax: return "max";
    case RedOpKind::kMin: return "min";
    case RedOpKind::kPreMulSum: return "premulsum";
    case RedOpKind::kSumPostDiv: return "avg";
  }
  return "?";
}

bool reduces(CollKind c) {
  return c == CollKind::kAllReduce || c == CollKind::kReduce || c == CollKind::kReduceScatter;
}

}  // namespace

void World::trace_header(trace::Trace* out, std::map<std::tuple<int, int, int>, int>* conn_routes) const {
  trace::Trace& t = *out;
  t.meta.tool = "cclab " CCLAB_VERSION_STRING_SIM;
  t.meta.backend = "sim";
  t.meta.clock = "simulated";
  t.meta.command = cfg_.command;
  t.meta.created = trace::utc_now_iso8601();
  for (int c = 0; c < nch_ && c < static_cast<int>(plan_.size()); ++c)
    t.channels.push_back(trace::make_channel(c, plan_[c].ring, plan_[c].tree_index, plan_[c].tree));
  trace::set_topology(topo_, rank_gpu_, trace::channel_pairs(t.channels), &t);
  t.meta.machines = nmachines_;
  // The connections' own routes where they differ from their pair's.
  const trace::TopoMapping m = trace::map_topology(topo_);
  std::map<std::tuple<int, int, std::vector<int>>, int> added;
  for (const auto& kv : routes_) {
    const int c = std::get<0>(kv.first), from = std::get<1>(kv.first), to = std::get<2>(kv.first);
    if (c < 0 || from == to || kv.second.links == nullptr) continue;
    std::vector<int> links = trace::map_route(m, *kv.second.links);
    int i = t.route_index(from, to);
    if (i < 0 || t.routes[i].links != links) {
      auto it = added.find(std::make_tuple(from, to, links));
      if (it == added.end()) {
        it = added.emplace(std::make_tuple(from, to, links), static_cast<int>(t.routes.size())).first;
        t.routes.push_back(trace::Route{from, to, std::move(links)});
      }
      i = it->second;
    }
    if (conn_routes != nullptr) (*conn_routes)[kv.first] = i;
  }
  // Degraded links (--degrade/--fail): a crossbar link takes its most degraded member's factor.
  for (size_t i = 0; i < cfg_.degrade.links.size() && i < degrade_links_.size(); ++i) {
    const LinkChange& c = cfg_.degrade.links[i];
    for (int l : degrade_links_[i]) {
      const int k = l < static_cast<int>(m.link.size()) ? m.link[l] : -1;
      if (k < 0 || k >= static_cast<int>(t.links.size())) continue;
      trace::Link& tl = t.links[k];
      const double f = c.fail ? 0.0 : c.factor;
      const bool first = tl.degraded_at_us < 0;
      tl.degraded = first ? f : std::min(tl.degraded, f);
      tl.degraded_at_us = first ? c.at_us : std::min(tl.degraded_at_us, c.at_us);
    }
  }
}

int World::event_route(const trace::Trace& t, const std::map<std::tuple<int, int, int>, int>& conn_routes, int channel,
                       int rank, int send_peer) {
  if (send_peer < 0) return -1;
  auto it = conn_routes.find(std::make_tuple(channel, rank, send_peer));
  return it != conn_routes.end() ? it->second : t.route_index(rank, send_peer);
}

trace::Op World::trace_op(const OpRecord& o) const {
  trace::Op op;
  op.op_count = o.op_count;
  op.coll = o.coll;
  op.algo = o.algo == AlgoKind::kCustom && custom_ != nullptr ? custom_->name.c_str() : algo_name(o.algo);
  op.proto = proto_name(static_cast<ProtoKind>(o.proto));
  op.type = sim_type_name(o.type);
  op.redop = reduces(op.coll) ? redop_label(o.redop) : "";
  op.root = op.coll == CollKind::kBroadcast || op.coll == CollKind::kReduce ? o.root : -1;
  op.count = o.count;
  op.bytes = o.bytes;
  op.nchannels = o.nchannels;
  op.begin_us = o.begin_us;
  op.end_us = o.end_us;
  const double us = o.end_us - o.begin_us;
  op.algbw = us > 0 ? static_cast<double>(o.bytes) / (us * 1e3) : 0;
  op.busbw = op.algbw * bus_factor(op.coll, nranks_);
  if (o.failed) op.algbw = op.busbw = 0;  // unknown: it never completed
  return op;
}

bool World::live_start(std::string* error) {
  if (cfg_.live_path.empty()) return true;
  live_header_ = trace::Trace();
  live_routes_.clear();
  trace_header(&live_header_, &live_routes_);
  live_ = std::make_unique<trace::LiveServer>();
  if (!live_->start(cfg_.live_path, live_header_, cfg_.live_wait_s, error)) {
    *error = "--live " + cfg_.live_path + ": " + *error;
    live_.reset();
    return false;
  }
  return true;
}

void World::live_event(const StepRecord& r) {
  if (!live_->attached()) return;
  int proto = live_proto_;
  trace::Event e = trace::event_from_record(r, proto, -1);
  e.route = event_route(live_header_, live_routes_, e.channel, e.rank, e.send_peer);
  live_->push(e);
}

void World::live_op(const OpRecord& o) {
  if (live_) live_->push_ops({trace_op(o)});
}

void World::live_finish() {
  if (live_) live_->finish();
  live_.reset();
}

bool World::write_trace(std::string* error) const {
  trace::Trace t;
  std::map<std::tuple<int, int, int>, int> conn_routes;
  trace_header(&t, &conn_routes);

  std::unordered_map<uint64_t, int> proto_of;
  for (const OpRecord& o : op_records_) {
    t.ops.push_back(trace_op(o));
    proto_of[o.op_count] = o.proto;
  }
  t.events.reserve(events_.size());
  for (const StepRecord& r : events_) {
    auto it = proto_of.find(r.op_count);
    t.events.push_back(trace::event_from_record(r, it == proto_of.end() ? kProtoSimple : it->second, -1));
  }
  for (trace::Event& e : t.events) e.route = event_route(t, conn_routes, e.channel, e.rank, e.send_peer);
  if (aborted_) {  // a failed link (--fail): the stuck waits as a certain report, as the doctor's
    trace::Stuck st;
    st.time_us = abort_us_;
    st.certain = true;
    st.code = 6;  // ncclRemoteError: a peer's transfer failed
    st.summary = abort_reason_;
    const std::string text = abort_error();
    for (size_t b = 0, e; b <= text.size(); b = e + 1) {
      e = text.find('\n', b);
      if (e == std::string::npos) e = text.size();
      st.lines.push_back(text.substr(b, e - b));
    }
    for (const WaitSite& w : aborted_waits_)
      st.waits.push_back(trace::StuckWait{w.rank, w.channel, w.peer, w.step, w.for_data, prim_name(w.prim),
                                          op_count_ > 0 ? op_count_ - 1 : 0, abort_us_});
    t.stuck.push_back(std::move(st));
  }
  trace::sort_events(&t.events);
  trace::compute_link_load(&t);
  std::string err;
  if (!trace::write_trace(cfg_.trace_path, t, &err)) {
    *error = "writing the trace: " + err;
    return false;
  }
  return true;
}

}  // namespace sim
}  // namespace cclab
