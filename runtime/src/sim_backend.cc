#include "sim_backend.h"

#include <map>
#include <string>

#include "base/log.h"
#include "comm.h"
#include "sim/session.h"
#include "sim/world.h"

namespace cclab {

ncclResult_t sim_attach(ncclComm_t comm) {
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

void sim_detach(ncclComm_t comm) {
  if (sim::Session* s = sim::Session::current()) s->detach(comm);
}

void sim_claim(ncclComm_t comm) {
  if (sim::Session* s = sim::Session::current()) s->claim(comm);
}

ncclResult_t sim_launch(std::vector<OpDesc>& ops) {
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
    return report_error(ncclInternalError, "%s (sim backend): %s", ops.front().fn, err.c_str());
  return ncclSuccess;
}

ncclResult_t sim_synchronize(cudaStream_t stream, const char* fn) {
  sim::Session* s = sim::Session::current();
  if (s == nullptr) return ncclSuccess;  // no simulated communicator in this process
  std::string err;
  if (!s->synchronize(stream, &err)) return report_error(ncclInternalError, "%s (sim backend): %s", fn, err.c_str());
  return ncclSuccess;
}

bool sim_waits(cudaStream_t waiter, cudaStream_t waitee) {
  sim::Session* s = sim::Session::current();
  if (s == nullptr) return false;
  s->enqueue_wait(waiter, waitee);
  return true;
}

ncclResult_t sim_kernel(cudaStream_t stream, int rank, double flops, double seconds) {
  sim::Session* s = sim::Session::current();
  if (s == nullptr) return ncclSuccess;  // the host backend does not model compute time
  if (!s->gpu_in_use(rank))
    return report_error(ncclInvalidArgument,
                        "cclabSimKernel: GPU %d is not played by a rank of any simulated communicator (%d GPUs are)",
                        rank, s->gpus_in_use());
  s->enqueue_kernel(stream, rank, flops, seconds);
  if (stream == nullptr) return sim_synchronize(nullptr, "cclabSimKernel");
  return ncclSuccess;
}

ncclResult_t sim_time(double* us) {
  sim::Session* s = sim::Session::current();
  if (s == nullptr) {
    *us = 0;
    return report_error(ncclInvalidUsage, "cclabSimTime: no simulated world (CCLAB_BACKEND=sim and a communicator)");
  }
  *us = s->now_us();
  return ncclSuccess;
}

SimIdleScope::SimIdleScope() {
  if (sim::Session* s = sim::Session::current()) {
    s->idle_begin();
    on_ = true;
  }
}

SimIdleScope::~SimIdleScope() {
  if (!on_) return;
  if (sim::Session* s = sim::Session::current()) s->idle_end();
}

}  // namespace cclab
