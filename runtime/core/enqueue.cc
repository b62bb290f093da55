// Groups and execution. An operation outside a group is a group of one. At ncclGroupEnd the
// operations are split by communicator into plans; each plan runs on the stream of its first
// operation (a host stream's worker, or inline / on the communicator's internal stream for the NULL
// stream). A plan runs its collectives in order, then all its point-to-point operations together.
#include "core/enqueue.h"

#include <algorithm>
#include <map>

#include "base/log.h"
#include "base/param.h"
#include "core/backend.h"
#include "core/doctor.h"
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
// nvls_ok: the call's datatype and op have a multimem reduction (graph/tuning.h, nvls_op_supported).
ncclResult_t choose_algo_proto(ncclComm_t comm, CollKind coll, size_t bytes, AlgoKind* algo, int* proto,
                               double* time_us, int* nchannels = nullptr, bool scaling_op = false,
                               bool nvls_ok = true) {
  TunerChoice c;
  // NCCL's PAT ReduceScatter does not run scaling reductions (ncclAvg, ncclRedOpCreatePreMulSum).
  if (coll == CollKind::kReduceScatter && scaling_op) {
    c = comm->tuner.choose(coll, bytes, 1, false, nvls_ok);
  } else {
    std::lock_guard<std::mutex> lk(comm->choice_mu);
    if (comm->choice_bytes != bytes || comm->choice_coll != coll || comm->choice_nvls_ok != nvls_ok) {
      comm->choice = comm->tuner.choose(coll, bytes, 1, true, nvls_ok);
      comm->choice_coll = coll;
      comm->choice_bytes = bytes;
      comm->choice_nvls_ok = nvls_ok;
    }
    c = comm->choice;
  }
  if (!c.valid || (c.algo != AlgoKind::kRing && c.algo != AlgoKind::kTree && c.algo != AlgoKind::kPat &&
                   !(c.algo == AlgoKind::kNvls && comm->nvls_runs) &&
                   !(c.algo == AlgoKind::kNvlsTree && comm->nvls_tree_runs)))
    return report_error(ncclInvalidUsage,
                        "%s: no algorithm/protocol is available (NCCL_ALGO=%s NCCL_PROTO=%s leave none that cclab "
                        "runs: Ring for every collective, Tree for AllReduce, PAT (Simple, one GPU per node or "
                        "NCCL_PAT_ENABLE=1) for AllGather/ReduceScatter with no scaling reduction, NVLS on a "
                        "modelled NVSwitch machine of sm90+, NVLS-Tree (AllReduce) across such machines)",
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
  // NCCL_ALGO named a custom algorithm (graph/custom_algo.h): it runs every collective it supports, with
  // the Simple protocol on the ring's channel rule; the tuner chooses for the others.
  bool custom = false;
  if (comm->custom_algo != nullptr && comm->nranks > 1) {
    std::string why;
    custom = custom_supports(*comm->custom_algo, op.coll, comm->custom_topo, &why);
    if (!custom)
      CCLAB_INFO(kLogColl | kLogTuning, "%s: custom algorithm %s does not run it (%s); the tuner chooses",
                 coll_name(op.coll), comm->custom_algo->name.c_str(), why.c_str());
  }
  ncclResult_t res = ncclSuccess;
  if (custom) {
    algo = AlgoKind::kCustom;
    w.proto = kProtoSimple;
  } else {
    res = choose_algo_proto(comm, op.coll, total, &algo, &w.proto, &predicted_us, &model_channels,
                            op.op == ncclAvg || op.op >= ncclNumOps, nvls_op_supported(op.coll, op.type, op.op));
    if (res != ncclSuccess) return res;
  }
  // The host model (graph/tuning.h, HostCosts) picks the channel count with the algorithm and protocol,
  // unless CCLAB_MIN_CHANNEL_BYTES asks for its rule; a model of GPUs leaves the backend its own rule.
  w.nchannels = comm->tuner.host_model() && !comm->channel_rule && !custom
                    ? std::max(1, std::min(model_channels, comm->nchannels))
                    : channels_for(comm, total);
  const bool tree = algo == AlgoKind::kTree;
  w.chunk_bytes = algo == AlgoKind::kNvls ? nvls_chunk_bytes(total, w.nchannels, comm->nvls_heads, comm->nvls_step_bytes)
                  : algo == AlgoKind::kNvlsTree
                      ? nvls_tree_chunk_bytes(total, w.nchannels, comm->nvls_heads,
                                              comm->nvls_step_bytes, comm->nvls_tree_max_chunk)
                  : custom ? ProtoSimpleRing::max_chunk_bytes(comm->proto_buff_bytes[w.proto])
                  : algo == AlgoKind::kPat ? pat_chunk_bytes(op.coll, comm->proto_buff_bytes[w.proto], total, w.nchannels)
                  : tree ? tree_chunk_bytes(w.proto, comm->proto_buff_bytes[w.proto], total, w.nchannels, comm->nnodes,
                                            comm->nranks)
                         : ring_chunk_bytes(op.coll, w.proto, comm->proto_buff_bytes[w.proto]);
  const char* aname = custom ? comm->custom_algo->name.c_str() : algo_name(algo);
  w.redop = make_redop(comm, op.op, op.type);
  w.op_count = comm->op_count++;
  CCLAB_INFO(kLogColl, "%s: opCount %llx sendbuff %p recvbuff %p count %zu datatype %d op %d root %d comm %p "
             "[nranks=%d] nChannels %d algorithm %s protocol %s", coll_name(op.coll),
             static_cast<unsigned long long>(w.op_count), op.send, op.recv, op.count, op.type, op.op, op.root,
             static_cast<void*>(comm), comm->nranks, w.nchannels, aname, proto_name_of(w.proto));
  CCLAB_INFO(kLogTuning, "%s: %zu Bytes -> Algo %s proto %s channel{Lo..Hi}={0..%d} predicted %.1f us",
             coll_name(op.coll), total, aname, proto_name_of(w.proto), w.nchannels - 1, predicted_us);
  doctor_coll_begin(comm, w.op_count, static_cast<int>(op.coll), op.count, op.type, op.op, op.root, aname, w.proto,
                    w.nchannels);
  if (comm->nranks > 1) {
    res = ensure_connected(comm, algo, w.proto, w.nchannels);
    if (res != ncclSuccess) {
      // The peers never connected (they did not call this collective, or the run was aborted): the
      // communicator keeps the error, as for a wait that fails during the collective.
      // A connection that broke meanwhile (the peer aborted or died) is what to report, not the abort
      // flag it raised.
      std::string msg = std::string(op.fn) + ": " + last_error();
      res = abort_cause(comm, res, &msg);
      set_async_error(comm, res, msg);
      doctor_op_end(comm, w.op_count, false, msg);
      return report_error(res, "%s", msg.c_str());
    }
  }
  *algo_out = algo;
  *total_out = total;
  return ncclSuccess;
}

namespace {

// The group's operations go to the backend of its first communicator (every communicator of a group
// must be of one backend; each backend checks).
ncclResult_t launch(std::vector<OpDesc>& ops) {
  if (ops.empty()) return ncclSuccess;
  return ops.front().comm->backend->launch(ops);
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
    ncclResult_t r = choose_algo_proto(comm, op.coll, total, &algo, &proto, &t, nullptr,
                                       op.op == ncclAvg || op.op >= ncclNumOps,
                                       nvls_op_supported(op.coll, op.type, op.op));
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
