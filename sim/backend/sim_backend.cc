// sim/backend/sim_backend.cc - the runtime's CCLAB_BACKEND=sim (core/backend.h), built as the plugin
// libcclab-sim.so that the runtime loads on first use (runtime/backends/backends.cc): communicators created
// under it hand their operations to the process's simulated world (sim/session.h) instead of the host
// executor; a synchronisation blocks until the simulation has run the work it waits for.
//
// The plugin carries the simulator and SimGrid; what it calls in the runtime (errors, logging, the
// communicator's reduction ops) resolves to the runtime library that loaded it.
#include <map>
#include <string>

#include "base/log.h"
#include "core/backend.h"
#include "core/comm.h"
#include "core/enqueue.h"
#include "core/stream.h"
#include "sim/session.h"
#include "sim/world.h"

namespace cclab {
namespace {

// What a failed synchronisation returns: the program's misuse - ranks that deadlocked (a rank that never
// called a collective, or called another), or disagreed on a collective's count or datatype (a slice of
// the wrong size, a line flag missing) - is ncclInvalidUsage, as NCCL reports misuse; anything else is
// cclab's own failure (ncclInternalError).
ncclResult_t sync_error_code(const std::string& err) {
  for (const char* misuse : {sim::kDeadlockMessage, "bytes from rank", "a line flag was not set"})
    if (err.find(misuse) != std::string::npos) return ncclInvalidUsage;
  return ncclInternalError;
}

class SimBackend final : public Backend {
 public:
  cclabBackend_t kind() const override { return cclabBackendSim; }
  bool model(const std::vector<int>& devs, std::string* preset, std::string* xml, int* min_channels,
             int* max_channels) override;
  ncclResult_t attach(ncclComm_t comm) override;
  void detach(ncclComm_t comm) override;
  void claim(ncclComm_t comm) override;
  ncclResult_t launch(std::vector<OpDesc>& ops) override;
  ncclResult_t stream_synchronize(cudaStream_t s) override;
  ncclResult_t stream_wait(cudaStream_t waiter, cudaStream_t waitee) override;
  ncclResult_t sim_kernel(cudaStream_t stream, int rank, double flops, double seconds) override;
  ncclResult_t sim_time(double* us) override;
  void idle_begin() override;
  void idle_end() override;

 private:
  ncclResult_t synchronize(cudaStream_t stream, const char* fn);
};

bool SimBackend::model(const std::vector<int>& devs, std::string* preset, std::string* xml, int* min_channels,
                       int* max_channels) {
  const sim::SimConfig cfg = sim::Session::model_config(devs);
  if (!cfg.topo_xml.empty()) {
    *xml = cfg.topo_xml;
  } else {
    *preset = cfg.topo.find(':') != std::string::npos || cfg.machines <= 1 ? cfg.topo
                                                                          : cfg.topo + ":" + std::to_string(cfg.machines);
  }
  *min_channels = cfg.min_channels;
  *max_channels = cfg.max_channels;
  return true;
}

ncclResult_t SimBackend::attach(ncclComm_t comm) {
  const PeerInfo& me = comm->peers[comm->rank];
  std::vector<int> devs(comm->nranks);
  for (int r = 0; r < comm->nranks; ++r) {
    const PeerInfo& p = comm->peers[r];
    if (p.proc_hash != me.proc_hash)
      return report_error(ncclInvalidUsage,
                          "CCLAB_BACKEND=sim: rank %d of this communicator runs in another process (pid %d; rank %d "
                          "is pid %d): the simulator needs every rank in one process (a thread per rank, or one "
                          "thread driving all ranks)",
                          r, p.pid, comm->rank, me.pid);
    devs[r] = p.dev;
  }
  std::string err;
  sim::Session* s = sim::Session::get(devs, &err);
  if (s == nullptr) return report_error(ncclInvalidUsage, "CCLAB_BACKEND=sim: %s", err.c_str());
  if (!s->attach(comm, comm->id_hash, devs, comm->rank, &err))
    return report_error(ncclInvalidUsage, "CCLAB_BACKEND=sim: %s", err.c_str());
  if (comm->rank == 0) CCLAB_INFO(kLogInit, "sim backend: %d ranks on %s", comm->nranks, s->description().c_str());
  return ncclSuccess;
}

void SimBackend::detach(ncclComm_t comm) {
  if (sim::Session* s = sim::Session::current()) s->detach(comm);
}

void SimBackend::claim(ncclComm_t comm) {
  if (sim::Session* s = sim::Session::current()) s->claim(comm);
}

ncclResult_t SimBackend::launch(std::vector<OpDesc>& ops) {
  sim::Session* s = sim::Session::current();
  if (s == nullptr)
    return report_error(ncclInvalidUsage, "%s (sim backend): the communicator is not in a simulated world",
                        ops.front().fn);
  std::vector<ncclComm_t> order;
  std::map<ncclComm_t, std::vector<const OpDesc*>> plans;
  for (const OpDesc& o : ops) {
    if (!o.comm->sim)
      return report_error(ncclInvalidUsage, "%s: a group mixes simulated and host communicators", o.fn);
    if (o.kind == OpDesc::Kind::kColl && sim::sim_coll_kernel(static_cast<sim::SimType>(o.type)) == nullptr)
      return report_error(ncclInvalidArgument, "%s: datatype %d is not simulated", o.fn, static_cast<int>(o.type));
    if (plans.find(o.comm) == plans.end()) order.push_back(o.comm);
    plans[o.comm].push_back(&o);
  }
  // Per communicator, as the host backend's plans: its collectives in order, each on its stream, then
  // its point-to-point operations together (one item, on the stream of the first of them).
  std::vector<const void*> blocking;
  std::string err;
  for (ncclComm_t comm : order) {
    s->claim(comm);
    std::vector<sim::World::P2pOp> p2p;
    cudaStream_t p2p_stream = nullptr;
    bool on_null = false;
    for (const OpDesc* o : plans[comm]) {
      if (o->kind != OpDesc::Kind::kColl) {
        if (p2p.empty()) p2p_stream = o->stream;
        sim::World::P2pOp p;
        p.send = o->kind == OpDesc::Kind::kSend;
        p.peer = o->peer;
        p.buff = p.send ? const_cast<void*>(o->send) : o->recv;
        p.bytes = o->count * type_size(o->type);
        p2p.push_back(p);
        continue;
      }
      sim::World::RankOp op;
      op.coll = o->coll;
      op.type = static_cast<sim::SimType>(o->type);
      op.count = o->count;
      op.send = o->send;
      op.recv = o->recv;
      op.root = o->root;
      op.redop = make_redop(comm, o->op, o->type);
      op.op_count = comm->op_count++;
      if (log_enabled(LogLevel::kInfo, kLogTuning)) {
        // The choice the world makes (World::choose): the communicator's tuner has the world's input.
        const bool per_rank = o->coll == CollKind::kAllGather || o->coll == CollKind::kReduceScatter;
        const size_t bytes = o->count * type_size(o->type) * (per_rank ? static_cast<size_t>(comm->nranks) : 1);
        const TunerChoice c = comm->tuner.choose(o->coll, bytes, 1, o->op != ncclAvg && o->op < ncclNumOps,
                                                 nvls_op_supported(o->coll, o->type, o->op));
        if (c.valid)
          CCLAB_INFO(kLogTuning, "%s: %zu Bytes -> Algo %s proto %s channel{Lo..Hi}={0..%d} predicted %.1f us (simulated)",
                     coll_name(o->coll), bytes, algo_name(c.algo), proto_name(c.proto),
                     std::max(1, std::min(c.nchannels, comm->nchannels)) - 1, c.time_us);
      }
      if (!s->enqueue_coll(comm, o->stream, op, &err))
        return report_error(ncclInvalidUsage, "%s (sim backend): %s", o->fn, err.c_str());
      on_null = on_null || o->stream == nullptr;
    }
    if (!p2p.empty()) {
      if (!s->enqueue_p2p(comm, p2p_stream, comm->op_count++, p2p, &err))
        return report_error(ncclInvalidUsage, "%s (sim backend): %s", ops.front().fn, err.c_str());
      on_null = on_null || p2p_stream == nullptr;
    }
    if (on_null) blocking.push_back(comm);
  }
  if (blocking.empty()) return ncclSuccess;
  if (!s->synchronize_default(blocking, &err))
    return report_error(sync_error_code(err), "%s (sim backend): %s", ops.front().fn, err.c_str());
  return ncclSuccess;
}

ncclResult_t SimBackend::synchronize(cudaStream_t stream, const char* fn) {
  sim::Session* s = sim::Session::current();
  if (s == nullptr) return ncclSuccess;  // no simulated communicator in this process
  std::string err;
  if (!s->synchronize(stream, &err)) return report_error(sync_error_code(err), "%s (sim backend): %s", fn, err.c_str());
  return ncclSuccess;
}

// Host streams order the program's own work; the simulated world orders the simulated work on them.
ncclResult_t SimBackend::stream_synchronize(cudaStream_t s) {
  bool valid = true;
  host_stream_lookup(s, &valid);
  if (!valid) return report_error(ncclInvalidArgument, "cclabStreamSynchronize: %p is not a host stream", (void*)s);
  const ncclResult_t r = synchronize(s, "cclabStreamSynchronize");
  if (r != ncclSuccess) return r;
  return Backend::stream_synchronize(s);
}

ncclResult_t SimBackend::stream_wait(cudaStream_t waiter, cudaStream_t waitee) {
  bool v1 = true, v2 = true;
  host_stream_lookup(waiter, &v1);
  host_stream_lookup(waitee, &v2);
  if (!v1 || !v2)
    return report_error(ncclInvalidArgument, "cclabStreamWaitStream: %p is not a host stream",
                        (void*)(!v1 ? waiter : waitee));
  sim::Session* s = sim::Session::current();
  if (s == nullptr) return Backend::stream_wait(waiter, waitee);
  s->enqueue_wait(waiter, waitee);
  return ncclSuccess;
}

ncclResult_t SimBackend::sim_kernel(cudaStream_t stream, int rank, double flops, double seconds) {
  sim::Session* s = sim::Session::current();
  if (s == nullptr) return ncclSuccess;  // the host backend does not model compute time
  if (!s->gpu_in_use(rank))
    return report_error(ncclInvalidArgument,
                        "cclabSimKernel: GPU %d is not played by a rank of any simulated communicator (%d GPUs are)",
                        rank, s->gpus_in_use());
  s->enqueue_kernel(stream, rank, flops, seconds);
  if (stream == nullptr) return synchronize(nullptr, "cclabSimKernel");
  return ncclSuccess;
}

ncclResult_t SimBackend::sim_time(double* us) {
  sim::Session* s = sim::Session::current();
  if (s == nullptr) {
    *us = 0;
    return report_error(ncclInvalidUsage, "cclabSimTime: no simulated world (CCLAB_BACKEND=sim and a communicator)");
  }
  *us = s->now_us();
  return ncclSuccess;
}

void SimBackend::idle_begin() {
  if (sim::Session* s = sim::Session::current()) s->idle_begin();
}

void SimBackend::idle_end() {
  if (sim::Session* s = sim::Session::current()) s->idle_end();
}

}  // namespace
}  // namespace cclab

// The plugin's entry point (runtime/backends/backends.cc): nullptr when the runtime that loads it was
// built from other sources (another Backend interface, ncclComm or OpDesc layout).
extern "C" __attribute__((visibility("default"))) cclab::Backend* cclab_sim_backend_create(int abi, size_t comm_bytes,
                                                                                          size_t op_bytes) {
  if (abi != cclab::kBackendAbi || comm_bytes != sizeof(ncclComm) || op_bytes != sizeof(cclab::OpDesc)) return nullptr;
  static cclab::SimBackend backend;
  return &backend;
}
