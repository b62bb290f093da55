// runtime/backends/host/host_backend.cc - the host backend (host_backend.h). A group's operations are
// split by communicator into plans; each plan runs on the stream of its first operation (a host
// stream's worker, or inline / on the communicator's internal stream for the NULL stream). A plan runs
// its collectives in order, then all its point-to-point operations together.
#include "backends/host/host_backend.h"

#include <cstring>
#include <functional>
#include <map>
#include <memory>

#include "backends/host/host_exec.h"
#include "backends/host/host_kernels.h"
#include "backends/host/lanes.h"
#include "base/log.h"
#include "base/param.h"
#include "base/sync.h"
#include "core/comm.h"
#include "core/doctor.h"
#include "core/enqueue.h"
#include "core/recorder.h"
#include "core/stream.h"
#include "kernels/custom_exec.h"

namespace cclab {

// A host communicator's executor state (ncclComm::host_state).
struct HostComm {
  HostExecConfig exec_cfg;                    // waits: spin, yield, timeout, stuck warning, abort flag
  std::unique_ptr<LanePool> lanes;            // the threads that play the channels' thread blocks
  std::unique_ptr<HostStream> internal_stream;  // runs NULL-stream work of multi-communicator groups
};

namespace {

HostComm& host_of(ncclComm_t comm) { return *comm->host_state; }

// The executor's configuration for one launch: the communicator's, with the observer set now
// (cclabCommSetObserver may come after init).
HostExecConfig exec_config(ncclComm_t comm) {
  HostExecConfig cfg = host_of(comm).exec_cfg;
  cfg.observer = comm->observer;
  cfg.observer_data = comm->observer_data;
  return cfg;
}

class HostBackend final : public Backend {
 public:
  cclabBackend_t kind() const override { return cclabBackendHost; }
  ncclResult_t attach(ncclComm_t comm) override;
  void detach(ncclComm_t comm) override;
  ncclResult_t launch(std::vector<OpDesc>& ops) override;
};

ncclResult_t HostBackend::attach(ncclComm_t comm) {
  auto hc = std::make_shared<HostComm>();
  hc->exec_cfg.abort_flag = &comm->abort_flag;
  // How a wait passes the time (host_exec.cc, wait_slow): while every rank of the host has a core of
  // its own it spins first; with more ranks than cores the peer a rank waits for usually needs that
  // rank's core, so it yields at once.
  const PeerInfo& me = comm->peers[comm->rank];
  int ranks_here = 0, cpus = me.cpus;
  for (const PeerInfo& q : comm->peers)
    if (q.host_hash == me.host_hash) {
      ++ranks_here;
      cpus = std::min(cpus, q.cpus);
    }
  hc->exec_cfg.spin_us = static_cast<double>(param_int("CCLAB_SPIN_US", ranks_here > cpus ? 0 : 20));
  hc->exec_cfg.yield_us = static_cast<double>(param_int("CCLAB_YIELD_US", 2000));
  hc->exec_cfg.timeout_us = comm->timeout_s * 1e6;
  hc->exec_cfg.stuck_warn_us = stuck_warn_us();
  // Sleeping waits are watched: a dead peer process, the doctor's verdict (core/doctor.h).
  doctor_attach(comm);
  hc->exec_cfg.watch = WaitWatch{comm, doctor_wait_begin, doctor_wait_poll, doctor_wait_end};
  hc->lanes = std::make_unique<LanePool>(hc->exec_cfg.spin_us);
  hc->internal_stream = std::make_unique<HostStream>();
  comm->host_state = std::move(hc);
  return ncclSuccess;
}

void HostBackend::detach(ncclComm_t comm) {
  if (!comm->host_state) return;  // init failed before attach
  comm->host_state->internal_stream.reset();  // drains it
  comm->host_state->lanes.reset();
  doctor_detach(comm);
}

// Operation `seq` failed in a wait: the communicator keeps the error, the board shows it, and (unless the
// user aborted) it is printed even without NCCL_DEBUG (base/log.h, log_alert).
ncclResult_t fail_from_exec(ncclComm_t comm, const HostExec& ex, const char* what, uint64_t seq) {
  // The report of what every rank called, while the others are still in the operation.
  if (ex.failure() == WaitFailure::kSizeMismatch) doctor_report_now(comm);
  // This rank stops: its peers must not wait for it (they fail at once, naming it).
  poison_connections(comm);
  ncclResult_t code = ex.failure() == WaitFailure::kAborted     ? ncclInternalError
                      : ex.failure() == WaitFailure::kTimedOut  ? ncclSystemError
                      : ex.failure() == WaitFailure::kPeerFailed ? ncclRemoteError
                      : ex.failure() == WaitFailure::kWatch      ? static_cast<ncclResult_t>(ex.watch_code())
                                                                : ncclInvalidUsage;
  std::string msg = std::string(what) + ": " + ex.failure_message();
  // Not the user's abort but a broken connection (a NET proxy raised the flag): say what broke.
  if (ex.failure() == WaitFailure::kAborted) code = abort_cause(comm, code, &msg);
  set_async_error(comm, code, msg);
  doctor_op_end(comm, seq, false, msg);
  if (ex.failure() == WaitFailure::kAborted && code == ncclInternalError) return report_error(code, "%s", msg.c_str());
  log_alert(__FILE__, __LINE__, "%s", msg.c_str());
  return code;
}

// A custom algorithm's schedule made a call the runtime cannot run (kernels/custom.h): its ranks' peers
// are left waiting for it, so the communicator is aborted (their waits end) and keeps the error.
ncclResult_t fail_custom(ncclComm_t comm, const OpDesc& op, const std::string& why, uint64_t seq) {
  poison_connections(comm);
  const std::string name = comm->custom_algo != nullptr ? comm->custom_algo->name : std::string("NVLS/NVLSTree");
  const std::string msg = std::string(op.fn) + " (algorithm " + name + "): " + why;
  set_async_error(comm, ncclInvalidUsage, msg);
  doctor_op_end(comm, seq, false, msg);
  log_alert(__FILE__, __LINE__, "%s", msg.c_str());
  return ncclInvalidUsage;
}

// A tree's connections on channel `ch` for protocol `proto`, from its links: to and from the parent, to
// and from each child. Conns is TreeConns (Tree) or NvlsTreeConns (NVLS-Tree's heads), which name them alike.
template <typename Conns>
Conns tree_conns(Channel& ch, const TreeLinks& links, int proto) {
  Conns out{};
  if (links.up >= 0) {
    PeerConns& pc = ch.peers[links.up];
    out.up_recv = &pc.recv[proto].info;
    out.up_send = &pc.send[proto].info;
  }
  out.ndown = links.ndown;
  for (int i = 0; i < links.ndown; ++i) {
    PeerConns& pc = ch.peers[links.down[i]];
    out.down_recv[i] = &pc.recv[proto].info;
    out.down_send[i] = &pc.send[proto].info;
  }
  return out;
}

ncclResult_t run_collective(ncclComm_t comm, const OpDesc& op) {
  CollWork w;
  AlgoKind algo = AlgoKind::kRing;
  size_t total = 0;
  ncclResult_t res = prepare_collective(comm, op, &w, &algo, &total);
  if (res != ncclSuccess) return res;
  const bool tree = algo == AlgoKind::kTree;
  const bool nvls = algo == AlgoKind::kNvls || algo == AlgoKind::kNvlsTree;
  const bool nvls_tree = algo == AlgoKind::kNvlsTree;
  const bool custom = algo == AlgoKind::kCustom;
  // A custom algorithm's connections by peer rank (nullptr: not a peer), per channel.
  std::vector<std::vector<ConnInfo*>> custom_send, custom_recv;
  if (custom) {
    custom_send.assign(w.nchannels, std::vector<ConnInfo*>(comm->nranks, nullptr));
    custom_recv.assign(w.nchannels, std::vector<ConnInfo*>(comm->nranks, nullptr));
    for (int c = 0; c < w.nchannels; ++c)
      for (int p : comm->custom_peers) {
        PeerConns& pc = comm->channels[c].peers[p];
        custom_send[c][p] = &pc.send[w.proto].info;
        custom_recv[c][p] = &pc.recv[w.proto].info;
      }
  }
  std::vector<std::string> custom_failure(custom || nvls ? w.nchannels : 0);
  // PAT: the connections along every dimension, per channel.
  const bool pat = algo == AlgoKind::kPat;
  std::vector<PatConns> pat_conns(pat ? w.nchannels : 0);
  for (int c = 0; c < static_cast<int>(pat_conns.size()); ++c) {
    PatConns& pc = pat_conns[c];
    pc.ndims = pat_dims(comm->nranks);
    for (int d = 0; d < pc.ndims && comm->nranks > 1; ++d) {
      PeerConns& down = comm->channels[c].peers[pat_peer(comm->rank, comm->nranks, d, false)];
      PeerConns& up = comm->channels[c].peers[pat_peer(comm->rank, comm->nranks, d, true)];
      pc.send_down[d] = &down.send[w.proto].info;
      pc.recv_down[d] = &down.recv[w.proto].info;
      pc.send_up[d] = &up.send[w.proto].info;
      pc.recv_up[d] = &up.recv[w.proto].info;
    }
  }
  HostPatFn pat_fn = host_pat_kernel(op.type);
  HostCollFn fn = host_coll_kernel(op.type);
  HostTreeFn tree_fn = host_tree_kernel(op.type);
  HostNvlsFn nvls_fn = host_nvls_kernel(op.type);
  HostComm& hc = host_of(comm);
  HostExecConfig cfg = exec_config(comm);
  RecordCtx rctx{recorder(), w.proto};
  if (comm->recording) {
    cfg.record = recorder_step;
    cfg.record_data = &rctx;
  }
  const double t_begin = comm->recording ? now_us() : 0.0;
  // Channel c of this rank: its ring or tree with the protocol's connections.
  auto run_channel = [&](HostExec& ex, int c) {
    Channel& ch = comm->channels[c];
    if (custom) {
      CustomExecCtx<HostExec> ctx{&ex, {}};
      comm->custom_algo->desc->run[op.type](custom_exec_vtable<HostExec>(), &ctx, w, c, comm->custom_topo,
                                            custom_send[c].data(), custom_recv[c].data());
      custom_failure[c] = ctx.failure;
      return;
    }
    if (pat) {
      pat_fn(ex, w, pat_conns[c], c);
      return;
    }
    if (nvls) {
      NvlsTreeConns tc;
      if (nvls_tree) tc = tree_conns<NvlsTreeConns>(ch, ch.nvls_tree, w.proto);
      if (!nvls_fn(ex, w, ch.nvls, c, nvls_tree ? &tc : nullptr) && ex.failure() == WaitFailure::kNone)
        custom_failure[c] = nvls_tree ? "the NVLS-Tree schedule refused the operation"
                                      : "the NVLS schedule refused the operation";
      return;
    }
    if (tree) {
      tree_fn(ex, w, ch.tree, tree_conns<TreeConns>(ch, ch.tree, w.proto), c);
      return;
    }
    RingView ring{ch.view.data(), comm->nranks};
    fn(ex, w, ring, c, comm->nranks > 1 ? &ch.prev().recv[w.proto].info : nullptr,
       comm->nranks > 1 ? &ch.next().send[w.proto].info : nullptr);
  };
  if (w.nchannels == 1) {
    // One channel (every small call): on this thread, with nothing to hand to the lanes.
    HostExec ex(cfg);
    run_channel(ex, 0);
    if (ex.failure() != WaitFailure::kNone) return fail_from_exec(comm, ex, op.fn, w.op_count);
    if ((custom || nvls) && !custom_failure[0].empty()) return fail_custom(comm, op, custom_failure[0], w.op_count);
  } else {
    std::vector<HostExec> execs(w.nchannels, HostExec(cfg));
    std::vector<std::function<void()>> tasks;
    tasks.reserve(w.nchannels);
    for (int c = 0; c < w.nchannels; ++c) tasks.emplace_back([&, c] { run_channel(execs[c], c); });
    hc.lanes->run(tasks);
    for (auto& ex : execs)
      if (ex.failure() != WaitFailure::kNone) return fail_from_exec(comm, ex, op.fn, w.op_count);
    for (const std::string& f : custom_failure)
      if (!f.empty()) return fail_custom(comm, op, f, w.op_count);
  }
  doctor_op_end(comm, w.op_count, true, std::string());
  if (comm->recording)
    recorder_op(comm, w.op_count, op.coll, custom ? comm->custom_algo->name.c_str() : algo_name(algo), proto_name_of(w.proto), op.type, op.op, op.root, op.count,
                total, w.nchannels, t_begin, now_us());
  return ncclSuccess;
}

// All point-to-point operations of one plan. NCCL's schedule (graph/p2p_channels.h p2p_schedule): in
// round r a rank sends to send_to[r] and receives from recv_from[r], both at once (on one machine rank+r
// and rank-r). Every rank walks the rounds in the same order and the schedule is symmetric, so a send and
// its receive always meet in the same round, and grouped send/recv patterns that would deadlock one
// by one (a ring shift of large messages) complete.
ncclResult_t run_p2p_rounds(ncclComm_t comm, const std::vector<const OpDesc*>& ops, uint64_t op_count) {
  HostComm& hc = host_of(comm);
  const int n = comm->nranks, me = comm->rank;
  std::vector<std::vector<const OpDesc*>> sends(n), recvs(n);
  for (const OpDesc* o : ops) (o->kind == OpDesc::Kind::kSend ? sends : recvs)[o->peer].push_back(o);
  // Round 0: to and from myself, a local copy, matched in order.
  if (sends[me].size() != recvs[me].size())
    return report_error(ncclInvalidUsage, "rank %d: %zu sends to itself but %zu receives from itself in one group", me,
                        sends[me].size(), recvs[me].size());
  for (size_t i = 0; i < sends[me].size(); ++i) {
    const OpDesc* s = sends[me][i];
    const OpDesc* r = recvs[me][i];
    const size_t sb = s->count * type_size(s->type), rb = r->count * type_size(r->type);
    if (sb != rb)
      return report_error(ncclInvalidUsage, "rank %d: send of %zu bytes to itself meets a receive of %zu bytes", me, sb,
                          rb);
    if (sb && r->recv != s->send) memmove(r->recv, s->send, sb);
  }
  // Each send and receive is split into parts on p2p channels as NCCL 2.28.9 splits it (kernels/p2p.h
  // p2p_nparts, the same split every backend runs): part j of every operation with a peer goes on the
  // channel of part j, its own connection, one lane each.
  for (int round = 1; round < n; ++round) {
    const int to = comm->p2p_sched.send_to[round], from = comm->p2p_sched.recv_from[round];
    if (sends[to].empty() && recvs[from].empty()) continue;
    const HostExecConfig cfg = exec_config(comm);
    struct Part {
      bool send;
      int peer, channel;
      std::vector<P2pWork> works;
      ncclResult_t err = ncclSuccess;
      std::string msg;  // a task may run on a lane thread, whose last error the caller cannot see
    };
    std::vector<Part> parts;
    for (int dir = 0; dir < 2; ++dir) {
      const std::vector<const OpDesc*>& list = dir == 0 ? sends[to] : recvs[from];
      const int peer = dir == 0 ? to : from;
      int nparts = 0;
      for (const OpDesc* o : list) nparts = std::max(nparts, p2p_nparts(comm->p2p, n, o->count * type_size(o->type)));
      for (int part = 0; part < nparts; ++part) {
        Part p{dir == 0, peer, p2p_channel_for_part(comm->p2p, round, part), {}, ncclSuccess, {}};
        for (const OpDesc* o : list) {
          const size_t bytes = o->count * type_size(o->type);
          const int np = p2p_nparts(comm->p2p, n, bytes);
          if (part >= np) continue;
          size_t beg = 0, end = 0;
          p2p_part_bounds(np, part, bytes, &beg, &end);
          char* base = dir == 0 ? static_cast<char*>(const_cast<void*>(o->send)) : static_cast<char*>(o->recv);
          P2pWork w{base + beg, end - beg, peer, me, op_count};
          w.chunk = comm->p2p.chunk_bytes;
          w.total = bytes;
          p.works.push_back(w);
        }
        if (!p.works.empty()) parts.push_back(std::move(p));
      }
    }
    std::vector<HostExec> execs(parts.size(), HostExec(cfg));
    std::vector<std::function<void()>> tasks;
    for (size_t i = 0; i < parts.size(); ++i)
      tasks.emplace_back([&, i] {
        Part& p = parts[i];
        Conn* c = nullptr;
        p.err = p.send ? p2p_connect_send(comm, p.peer, &c, p.channel) : p2p_connect_recv(comm, p.peer, &c, p.channel);
        if (p.err != ncclSuccess) p.msg = last_error();
        for (size_t k = 0; p.err == ncclSuccess && k < p.works.size(); ++k)
          if (!(p.send ? host_p2p_send(execs[i], p.works[k], p.channel, &c->info)
                       : host_p2p_recv(execs[i], p.works[k], p.channel, &c->info)))
            p.err = ncclInternalError;
      });
    hc.lanes->run(tasks);
    for (size_t i = 0; i < parts.size(); ++i)
      if (execs[i].failure() != WaitFailure::kNone)
        return fail_from_exec(comm, execs[i], parts[i].send ? "ncclSend" : "ncclRecv", op_count);
    for (const Part& p : parts) {
      if (p.err == ncclSuccess) continue;
      const std::string msg = std::string(p.send ? "ncclSend: " : "ncclRecv: ") + p.msg;
      set_async_error(comm, p.err, msg);
      return report_error(p.err, "%s", msg.c_str());
    }
  }
  return ncclSuccess;
}

// A plan's point-to-point operations, one operation (opCount) for the board.
ncclResult_t run_p2p(ncclComm_t comm, const std::vector<const OpDesc*>& ops) {
  const uint64_t op_count = comm->op_count++;
  size_t bytes = 0;
  for (const OpDesc* o : ops) bytes += o->count * type_size(o->type);
  doctor_p2p_begin(comm, op_count, static_cast<int>(ops.size()), ops.empty() ? -1 : ops[0]->peer, bytes);
  const ncclResult_t r = run_p2p_rounds(comm, ops, op_count);
  doctor_op_end(comm, op_count, r == ncclSuccess, r == ncclSuccess ? std::string() : std::string(last_error()));
  return r;
}

// An operation that starts after an earlier one of its communicator failed (typically queued on the
// stream behind it: a loop of ncclAllReduce calls returns before the first fails). That failure
// poisoned this rank's connections, or the peers' stopped them, so the operation cannot run: it fails at
// once with the communicator's error (ncclCommGetAsyncError's), which was printed when it happened; it
// is not printed again for every operation behind it (NCCL_DEBUG=INFO still shows each).
bool failed_earlier(ncclComm_t comm, const char* fn, ncclResult_t* code) {
  const ncclResult_t e = static_cast<ncclResult_t>(comm->async_error.load());
  if (e == ncclSuccess) return false;
  std::string why;
  {
    std::lock_guard<std::mutex> lk(comm->error_mu);
    why = comm->async_message;
  }
  const std::string msg = std::string(fn) + ": not run: an earlier operation of this communicator failed: " + why;
  set_last_error(msg.c_str());
  CCLAB_INFO(kLogColl, "%s", msg.c_str());
  *code = e;
  return true;
}

ncclResult_t run_plan(ncclComm_t comm, const std::vector<OpDesc>& ops) {
  set_log_rank(comm->rank);
  ncclResult_t failed = ncclSuccess;
  if (!ops.empty() && failed_earlier(comm, ops.front().fn, &failed)) return failed;
  std::vector<const OpDesc*> p2p;
  ncclResult_t result = ncclSuccess;
  for (const OpDesc& o : ops) {
    if (o.kind != OpDesc::Kind::kColl) {
      p2p.push_back(&o);
      continue;
    }
    if (result == ncclSuccess) result = run_collective(comm, o);
  }
  if (result == ncclSuccess && !p2p.empty()) result = run_p2p(comm, p2p);
  return result;
}

// One operation, a plan of its own (run_plan without the vector).
ncclResult_t run_single(ncclComm_t comm, const OpDesc& op) {
  set_log_rank(comm->rank);
  ncclResult_t failed = ncclSuccess;
  if (failed_earlier(comm, op.fn, &failed)) return failed;
  if (op.kind == OpDesc::Kind::kColl) return run_collective(comm, op);
  return run_p2p(comm, std::vector<const OpDesc*>{&op});
}

ncclResult_t HostBackend::launch(std::vector<OpDesc>& ops) {
  for (const OpDesc& o : ops)
    if (o.comm->backend != this)
      return report_error(ncclInvalidUsage, "%s: a group mixes host communicators with %s ones", o.fn,
                          cclabBackendName(o.comm->backend->kind()));
  if (ops.size() == 1) {
    // The usual call, one operation outside a group: nothing to split by communicator, and a host
    // stream gets the operation itself (one allocation for the queue's entry).
    const OpDesc& op = ops[0];
    ncclComm_t comm = op.comm;
    bool valid = true;
    HostStream* hs = op.stream == nullptr ? nullptr : host_stream_lookup(op.stream, &valid);
    comm->inflight.fetch_add(1);
    if (hs == nullptr) {
      const ncclResult_t r = run_single(comm, op);
      comm->inflight.fetch_sub(1);
      return r;
    }
    hs->enqueue([comm, op] {
      const ncclResult_t r = run_single(comm, op);
      comm->inflight.fetch_sub(1);
      return r;
    });
    return ncclSuccess;
  }
  // Split by communicator, keeping each communicator's order.
  std::vector<ncclComm_t> order;
  std::map<ncclComm_t, std::vector<OpDesc>> plans;
  for (OpDesc& o : ops) {
    auto it = plans.find(o.comm);
    if (it == plans.end()) {
      order.push_back(o.comm);
      it = plans.emplace(o.comm, std::vector<OpDesc>{}).first;
    }
    it->second.push_back(o);
  }
  if (order.size() == 1 && plans[order[0]][0].stream == nullptr) {
    ncclComm_t comm = order[0];
    comm->inflight.fetch_add(1);
    ncclResult_t r = run_plan(comm, plans[comm]);
    comm->inflight.fetch_sub(1);
    return r;
  }
  std::vector<ncclComm_t> waits;
  for (ncclComm_t comm : order) {
    std::vector<OpDesc>& plan = plans[comm];
    bool valid = true;
    HostStream* hs = host_stream_lookup(plan[0].stream, &valid);
    if (!hs) {
      hs = host_of(comm).internal_stream.get();
      waits.push_back(comm);
    }
    comm->inflight.fetch_add(1);
    hs->enqueue([comm, plan = std::move(plan)] {
      ncclResult_t r = run_plan(comm, plan);
      comm->inflight.fetch_sub(1);
      return r;
    });
  }
  ncclResult_t result = ncclSuccess;
  for (ncclComm_t comm : waits) {
    ncclResult_t r = host_of(comm).internal_stream->synchronize();
    if (result == ncclSuccess) result = r;
  }
  return result;
}

}  // namespace

Backend* host_backend_create() { return new HostBackend; }

}  // namespace cclab
