// Groups and execution. An operation outside a group is a group of one. At ncclGroupEnd the
// operations are split by communicator into plans; each plan runs on the stream of its first
// operation (a host stream's worker, or inline / on the communicator's internal stream for the NULL
// stream). A plan runs its collectives in order, then all its point-to-point operations together.
#include "enqueue.h"
#include "recorder.h"

#include <algorithm>
#include <map>

#include "base/log.h"
#include "base/param.h"
#include "host_kernels.h"
#include "cuda_backend.h"
#include "sim_backend.h"
#include "kernels/collectives.h"
#include "kernels/dtypes.h"

namespace cclab {
namespace {

struct GroupState {
  int depth = 0;
  ncclResult_t error = ncclSuccess;
  std::vector<OpDesc> ops;
};
thread_local GroupState g_group;

// Channels a collective of `bytes` uses: at least CCLAB_MIN_CHANNEL_BYTES (64 KiB) per channel, so
// small operations do not pay for many threads. The same on every rank, since every rank passes the
// same byte count (and the parameter is agreed at init).
int channels_for(ncclComm_t comm, size_t bytes) {
  size_t n = std::max<size_t>(1, div_up(bytes, comm->min_channel_bytes));
  return static_cast<int>(std::min<size_t>(n, static_cast<size_t>(comm->nchannels)));
}

// Algorithm and protocol of a collective of `bytes` (NCCL's nBytes): the cost model's choice among
// the combinations NCCL_ALGO / NCCL_PROTO leave enabled (graph/tuning.h). The same on every rank,
// since the model's inputs are agreed at init. Fails when the environment leaves nothing cclab can
// run for this collective.
ncclResult_t choose_algo_proto(ncclComm_t comm, CollKind coll, size_t bytes, AlgoKind* algo, int* proto,
                               double* time_us, int* nchannels = nullptr) {
  TunerChoice c;
  {
    std::lock_guard<std::mutex> lk(comm->choice_mu);
    if (comm->choice_bytes != bytes || comm->choice_coll != coll) {
      comm->choice = comm->tuner.choose(coll, bytes);
      comm->choice_coll = coll;
      comm->choice_bytes = bytes;
    }
    c = comm->choice;
  }
  if (!c.valid || (c.algo != AlgoKind::kRing && c.algo != AlgoKind::kTree))
    return report_error(ncclInvalidUsage,
                        "%s: no algorithm/protocol is available (NCCL_ALGO=%s NCCL_PROTO=%s leave none that cclab "
                        "runs: Ring for every collective, Tree for AllReduce)",
                        coll_name(coll), param_str("NCCL_ALGO", "(unset)").c_str(),
                        param_str("NCCL_PROTO", "(unset)").c_str());
  *algo = c.algo;
  *proto = static_cast<int>(c.proto);
  *time_us = c.time_us;
  if (nchannels) *nchannels = c.nchannels;
  return ncclSuccess;
}

// NCCL's nBytes of a collective: the whole buffer, which for AllGather and ReduceScatter is nranks
// times the per-rank count. The tuner and the channel rule take this.
size_t coll_bytes(ncclComm_t comm, const OpDesc& op) {
  const bool per_rank = op.coll == CollKind::kAllGather || op.coll == CollKind::kReduceScatter;
  return op.count * type_size(op.type) * (per_rank ? static_cast<size_t>(comm->nranks) : 1);
}

bool is_float_type(ncclDataType_t t) {
  return t == ncclFloat16 || t == ncclFloat32 || t == ncclFloat64 || t == ncclBfloat16 || t == ncclFloat8e4m3 ||
         t == ncclFloat8e5m2;
}

// The scalar `v` as the bit pattern of datatype t.
uint64_t float_as_type_bits(double v, ncclDataType_t t) {
  switch (t) {
    case ncclFloat16: return scalar_to_bits(from_float<half_t>(static_cast<float>(v)));
    case ncclBfloat16: return scalar_to_bits(from_float<bfloat16_t>(static_cast<float>(v)));
    case ncclFloat8e4m3: return scalar_to_bits(from_float<fp8_e4m3_t>(static_cast<float>(v)));
    case ncclFloat8e5m2: return scalar_to_bits(from_float<fp8_e5m2_t>(static_cast<float>(v)));
    case ncclFloat32: return scalar_to_bits(static_cast<float>(v));
    default: return scalar_to_bits(v);
  }
}

}  // namespace

RedOpArg make_redop(ncclComm_t comm, ncclRedOp_t op, ncclDataType_t t) {
  switch (op) {
    case ncclSum: return RedOpArg{RedOpKind::kSum, 0, comm->nranks};
    case ncclProd: return RedOpArg{RedOpKind::kProd, 0, comm->nranks};
    case ncclMax: return RedOpArg{RedOpKind::kMax, 0, comm->nranks};
    case ncclMin: return RedOpArg{RedOpKind::kMin, 0, comm->nranks};
    case ncclAvg:
      // As NCCL: floating point averages pre-multiply by 1/nranks, integers divide the sum.
      if (is_float_type(t)) return RedOpArg{RedOpKind::kPreMulSum, float_as_type_bits(1.0 / comm->nranks, t), comm->nranks};
      return RedOpArg{RedOpKind::kSumPostDiv, 0, comm->nranks};
    default: {
      // A scalar in memory is read by the operation itself when it runs (RedOpArg::scalar_ptr): on a
      // GPU by the kernel, after whatever the stream ran before it.
      const DynRedOp& d = comm->redops[op - ncclNumOps];
      if (d.residence == ncclScalarDevice) return RedOpArg{RedOpKind::kPreMulSum, 0, comm->nranks, d.scalar_ptr};
      return RedOpArg{RedOpKind::kPreMulSum, d.scalar_bits, comm->nranks};
    }
  }
}

namespace {

ncclResult_t fail_from_exec(ncclComm_t comm, const HostExec& ex, const char* what) {
  ncclResult_t code = ex.failure() == WaitFailure::kAborted     ? ncclInternalError
                      : ex.failure() == WaitFailure::kTimedOut  ? ncclSystemError
                                                                : ncclInvalidUsage;
  std::string msg = std::string(what) + ": " + ex.failure_message();
  if (ex.failure() == WaitFailure::kAborted) {
    // Not the user's abort but a broken connection (a NET proxy raised the flag): say what broke.
    std::lock_guard<std::mutex> lk(comm->error_mu);
    if (comm->async_error.load() != ncclSuccess) {
      code = static_cast<ncclResult_t>(comm->async_error.load());
      msg += " (" + comm->async_message + ")";
    }
  }
  set_async_error(comm, code, msg);
  return report_error(code, "%s", msg.c_str());
}

}  // namespace

const char* proto_name_of(int q) { return q == kProtoLL ? "LL" : q == kProtoLL128 ? "LL128" : "Simple"; }

ncclResult_t prepare_collective(ncclComm_t comm, const OpDesc& op, CollWork* out, AlgoKind* algo_out, size_t* total_out) {
  CollWork& w = *out;
  w = CollWork{};
  w.coll = op.coll;
  w.count = op.count;
  w.send = op.send;
  w.recv = op.recv;
  w.root = op.root;
  w.rank = comm->rank;
  w.nranks = comm->nranks;
  const size_t total = coll_bytes(comm, op);
  AlgoKind algo = AlgoKind::kRing;
  double predicted_us = 0;
  int model_channels = 1;
  ncclResult_t res = choose_algo_proto(comm, op.coll, total, &algo, &w.proto, &predicted_us, &model_channels);
  if (res != ncclSuccess) return res;
  // The host model (graph/tuning.h, HostCosts) picks the channel count with the algorithm and protocol,
  // unless CCLAB_MIN_CHANNEL_BYTES asks for its rule; a model of GPUs leaves the backend its own rule.
  w.nchannels = comm->tuner.host_model() && !comm->channel_rule ? std::max(1, std::min(model_channels, comm->nchannels))
                                                                : channels_for(comm, total);
  const bool tree = algo == AlgoKind::kTree;
  w.chunk_bytes = tree ? tree_chunk_bytes(w.proto, comm->proto_buff_bytes[w.proto], total, w.nchannels, comm->nnodes,
                                          comm->nranks)
                       : ring_chunk_bytes(op.coll, w.proto, comm->proto_buff_bytes[w.proto]);
  w.redop = make_redop(comm, op.op, op.type);
  w.op_count = comm->op_count++;
  CCLAB_INFO(kLogColl, "%s: opCount %llx sendbuff %p recvbuff %p count %zu datatype %d op %d root %d comm %p "
             "[nranks=%d] nChannels %d algorithm %s protocol %s", coll_name(op.coll),
             static_cast<unsigned long long>(w.op_count), op.send, op.recv, op.count, op.type, op.op, op.root,
             static_cast<void*>(comm), comm->nranks, w.nchannels, algo_name(algo), proto_name_of(w.proto));
  CCLAB_INFO(kLogTuning, "%s: %zu Bytes -> Algo %s proto %s channel{Lo..Hi}={0..%d} predicted %.1f us",
             coll_name(op.coll), total, algo_name(algo), proto_name_of(w.proto), w.nchannels - 1, predicted_us);
  if (comm->nranks > 1) {
    res = ensure_connected(comm, algo, w.proto, w.nchannels);
    if (res != ncclSuccess) {
      // The peers never connected (they did not call this collective, or the run was aborted): the
      // communicator keeps the error, as for a wait that fails during the collective.
      const std::string msg = std::string(op.fn) + ": " + last_error();
      set_async_error(comm, res, msg);
      return report_error(res, "%s", msg.c_str());
    }
  }
  *algo_out = algo;
  *total_out = total;
  return ncclSuccess;
}

namespace {

ncclResult_t run_collective(ncclComm_t comm, const OpDesc& op) {
  CollWork w;
  AlgoKind algo = AlgoKind::kRing;
  size_t total = 0;
  ncclResult_t res = prepare_collective(comm, op, &w, &algo, &total);
  if (res != ncclSuccess) return res;
  const bool tree = algo == AlgoKind::kTree;
  HostCollFn fn = host_coll_kernel(op.type);
  HostTreeFn tree_fn = host_tree_kernel(op.type);
  HostExecConfig cfg = comm->exec_cfg;
  RecordCtx rctx{recorder(), w.proto};
  if (comm->recording) {
    cfg.record = recorder_step;
    cfg.record_data = &rctx;
  }
  const double t_begin = comm->recording ? now_us() : 0.0;
  // Channel c of this rank: its ring or tree with the protocol's connections.
  auto run_channel = [&](HostExec& ex, int c) {
    Channel& ch = comm->channels[c];
    if (tree) {
      TreeConns conns{};
      if (ch.tree.up >= 0) {
        PeerConns& pc = ch.peers[ch.tree.up];
        conns.up_recv = &pc.recv[w.proto].info;
        conns.up_send = &pc.send[w.proto].info;
      }
      conns.ndown = ch.tree.ndown;
      for (int i = 0; i < ch.tree.ndown; ++i) {
        PeerConns& pc = ch.peers[ch.tree.down[i]];
        conns.down_recv[i] = &pc.recv[w.proto].info;
        conns.down_send[i] = &pc.send[w.proto].info;
      }
      tree_fn(ex, w, ch.tree, conns, c);
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
    if (ex.failure() != WaitFailure::kNone) return fail_from_exec(comm, ex, op.fn);
  } else {
    std::vector<HostExec> execs(w.nchannels, HostExec(cfg));
    std::vector<std::function<void()>> tasks;
    tasks.reserve(w.nchannels);
    for (int c = 0; c < w.nchannels; ++c) tasks.emplace_back([&, c] { run_channel(execs[c], c); });
    comm->lanes->run(tasks);
    for (auto& ex : execs)
      if (ex.failure() != WaitFailure::kNone) return fail_from_exec(comm, ex, op.fn);
  }
  if (comm->recording)
    recorder_op(comm, w.op_count, op.coll, algo_name(algo), proto_name_of(w.proto), op.type, op.op, op.root, op.count,
                total, w.nchannels, t_begin, now_us());
  return ncclSuccess;
}

// All point-to-point operations of one plan. NCCL's schedule: in round r a rank sends to rank+r and
// receives from rank-r, both at once. Every rank walks the rounds in the same order, so a send and
// its receive always meet in the same round, and grouped send/recv patterns that would deadlock one
// by one (a ring shift of large messages) complete.
ncclResult_t run_p2p(ncclComm_t comm, const std::vector<const OpDesc*>& ops) {
  const int n = comm->nranks, me = comm->rank;
  std::vector<std::vector<const OpDesc*>> sends(n), recvs(n);
  for (const OpDesc* o : ops) (o->kind == OpDesc::Kind::kSend ? sends : recvs)[o->peer].push_back(o);
  const uint64_t op_count = comm->op_count++;
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
  for (int round = 1; round < n; ++round) {
    const int to = (me + round) % n, from = (me - round + n) % n;
    if (sends[to].empty() && recvs[from].empty()) continue;
    HostExec send_ex(comm->exec_cfg), recv_ex(comm->exec_cfg);
    ncclResult_t send_err = ncclSuccess, recv_err = ncclSuccess;
    // A task may run on a lane thread, whose last error the caller cannot see: keep the message.
    std::string send_msg, recv_msg;
    std::vector<std::function<void()>> tasks;
    if (!sends[to].empty())
      tasks.emplace_back([&] {
        Conn* c = nullptr;
        send_err = p2p_connect_send(comm, to, &c);
        if (send_err != ncclSuccess) send_msg = last_error();
        for (size_t i = 0; send_err == ncclSuccess && i < sends[to].size(); ++i) {
          const OpDesc* o = sends[to][i];
          P2pWork w{const_cast<void*>(o->send), o->count * type_size(o->type), to, me, op_count};
          if (!host_p2p_send(send_ex, w, 0, &c->info)) send_err = ncclInternalError;
        }
      });
    if (!recvs[from].empty())
      tasks.emplace_back([&] {
        Conn* c = nullptr;
        recv_err = p2p_connect_recv(comm, from, &c);
        if (recv_err != ncclSuccess) recv_msg = last_error();
        for (size_t i = 0; recv_err == ncclSuccess && i < recvs[from].size(); ++i) {
          const OpDesc* o = recvs[from][i];
          P2pWork w{o->recv, o->count * type_size(o->type), from, me, op_count};
          if (!host_p2p_recv(recv_ex, w, 0, &c->info)) recv_err = ncclInternalError;
        }
      });
    comm->lanes->run(tasks);
    if (send_ex.failure() != WaitFailure::kNone) return fail_from_exec(comm, send_ex, "ncclSend");
    if (recv_ex.failure() != WaitFailure::kNone) return fail_from_exec(comm, recv_ex, "ncclRecv");
    for (auto* e : {&send_err, &recv_err}) {
      if (*e == ncclSuccess) continue;
      const std::string msg = std::string(e == &send_err ? "ncclSend: " : "ncclRecv: ") +
                              (e == &send_err ? send_msg : recv_msg);
      set_async_error(comm, *e, msg);
      return report_error(*e, "%s", msg.c_str());
    }
  }
  return ncclSuccess;
}

ncclResult_t run_plan(ncclComm_t comm, const std::vector<OpDesc>& ops) {
  set_log_rank(comm->rank);
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
  if (op.kind == OpDesc::Kind::kColl) return run_collective(comm, op);
  return run_p2p(comm, std::vector<const OpDesc*>{&op});
}

ncclResult_t launch(std::vector<OpDesc>& ops) {
  if (!ops.empty() && ops.front().comm->sim) return sim_launch(ops);
  if (!ops.empty() && ops.front().comm->cuda) return cuda_launch(ops);
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
      hs = comm->internal_stream.get();
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
    ncclResult_t r = comm->internal_stream->synchronize();
    if (result == ncclSuccess) result = r;
  }
  return result;
}

}  // namespace

size_t type_size(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    default: return 8;
  }
}

ncclResult_t enqueue(const OpDesc& op) {
  if (g_group.depth > 0) {
    g_group.ops.push_back(op);
    return ncclSuccess;
  }
  std::vector<OpDesc> ops{op};
  return launch(ops);
}

ncclResult_t group_start() {
  ++g_group.depth;
  return ncclSuccess;
}

int group_depth() { return g_group.depth; }

void group_fail(ncclResult_t r) {
  if (g_group.depth > 0 && g_group.error == ncclSuccess) g_group.error = r;
}

ncclResult_t group_end() {
  if (g_group.depth == 0)
    return report_error(ncclInvalidUsage, "ncclGroupEnd: not inside a group (no matching ncclGroupStart)");
  if (--g_group.depth > 0) return ncclSuccess;
  std::vector<OpDesc> ops;
  ops.swap(g_group.ops);
  ncclResult_t err = g_group.error;
  g_group.error = ncclSuccess;
  if (err != ncclSuccess) return err;  // an argument error inside the group: nothing was launched
  if (ops.empty()) return ncclSuccess;
  return launch(ops);
}

ncclResult_t group_simulate_end(double* time_us) {
  if (g_group.depth == 0)
    return report_error(ncclInvalidUsage, "ncclGroupSimulateEnd: not inside a group (no matching ncclGroupStart)");
  *time_us = 0;
  if (--g_group.depth > 0) return ncclSuccess;
  std::vector<OpDesc> ops;
  ops.swap(g_group.ops);
  ncclResult_t err = g_group.error;
  g_group.error = ncclSuccess;
  if (err != ncclSuccess) return err;
  // As NCCL: nothing is launched; the estimate is the cost model's time of each communicator's
  // collectives, run one after the other, and the communicators side by side (the slowest one).
  std::map<ncclComm_t, double> per_comm;
  for (const OpDesc& op : ops) {
    if (op.kind != OpDesc::Kind::kColl) continue;
    ncclComm_t comm = op.comm;
    const size_t total = coll_bytes(comm, op);
    AlgoKind algo;
    int proto;
    double t = 0;
    ncclResult_t r = choose_algo_proto(comm, op.coll, total, &algo, &proto, &t);
    if (r != ncclSuccess) return r;
    per_comm[comm] += t;
  }
  for (auto& kv : per_comm) *time_us = std::max(*time_us, kv.second);
  return ncclSuccess;
}

void comm_drain(ncclComm_t comm) {
  while (comm->inflight.load() > 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
}

}  // namespace cclab
