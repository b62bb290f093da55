#include "sim_backend.h"

#include <mutex>
#include <string>

#include "base/log.h"
#include "comm.h"
#include "sim/session.h"
#include "sim/world.h"

namespace cclab {

namespace {
// The world is built by the thread that drives it (SimGrid binds its engine to the thread that creates
// it, and ncclCommInitAll initialises ranks on threads of its own): init records the size, the first
// collective, kernel or synchronisation builds it.
std::mutex g_mu;
int g_nranks = 0;

sim::Session* session(std::string* err) {
  sim::Session* s = sim::Session::current();
  if (s != nullptr) return s;
  int n;
  {
    std::lock_guard<std::mutex> lk(g_mu);
    n = g_nranks;
  }
  if (n == 0) return nullptr;
  s = sim::Session::get(n, err);
  if (s != nullptr) CCLAB_INFO(kLogInit, "sim backend: %d ranks on %s", n, s->description().c_str());
  return s;
}
}  // namespace

ncclResult_t sim_attach(ncclComm_t comm) {
  std::lock_guard<std::mutex> lk(g_mu);
  if (g_nranks != 0 && g_nranks != comm->nranks)
    return report_error(ncclInvalidUsage,
                        "CCLAB_BACKEND=sim: the simulator runs one communicator size per process (%d ranks, this "
                        "communicator has %d)",
                        g_nranks, comm->nranks);
  g_nranks = comm->nranks;
  return ncclSuccess;
}

ncclResult_t sim_launch(std::vector<OpDesc>& ops) {
  std::string err;
  sim::Session* s = session(&err);
  if (s == nullptr) return report_error(ncclInvalidUsage, "%s (sim backend): %s", ops.front().fn, err.c_str());
  bool blocking = false;
  for (const OpDesc& o : ops) {
    if (!o.comm->sim)
      return report_error(ncclInvalidUsage, "%s: a group mixes simulated and host communicators", o.fn);
    if (o.kind != OpDesc::Kind::kColl)
      return report_error(ncclInvalidUsage, "%s: point-to-point operations are not simulated yet", o.fn);
    if (sim::sim_coll_kernel(static_cast<sim::SimType>(o.type)) == nullptr)
      return report_error(ncclInvalidArgument,
                          "%s: datatype %d is not simulated (int8, half, bfloat16, float, int32 and double are)", o.fn,
                          static_cast<int>(o.type));
  }
  for (const OpDesc& o : ops) {
    sim::World::RankOp op;
    op.coll = o.coll;
    op.type = static_cast<sim::SimType>(o.type);
    op.count = o.count;
    op.send = o.send;
    op.recv = o.recv;
    op.root = o.root;
    op.redop = make_redop(o.comm, o.op, o.type);
    op.op_count = o.comm->op_count++;
    s->enqueue_coll(o.stream, o.comm->rank, op);
    if (o.stream == nullptr) blocking = true;
  }
  return blocking ? sim_synchronize(ops.front().fn) : ncclSuccess;
}

ncclResult_t sim_synchronize(const char* fn) {
  std::string err;
  sim::Session* s = session(&err);
  if (s == nullptr) {
    if (err.empty()) return ncclSuccess;  // no simulated communicator in this process
    return report_error(ncclInvalidUsage, "%s (sim backend): %s", fn, err.c_str());
  }
  if (!s->run(&err)) return report_error(ncclInternalError, "%s (sim backend): %s", fn, err.c_str());
  return ncclSuccess;
}

bool sim_waits(cudaStream_t waiter, cudaStream_t waitee) {
  std::string err;
  sim::Session* s = session(&err);
  if (s == nullptr) return false;
  s->enqueue_wait(waiter, 0, waitee, 0);
  return true;
}

ncclResult_t sim_kernel(cudaStream_t stream, int rank, double flops, double seconds) {
  std::string err;
  sim::Session* s = session(&err);
  if (s == nullptr) {
    if (err.empty()) return ncclSuccess;  // the host backend does not model compute time
    return report_error(ncclInvalidUsage, "cclabSimKernel (sim backend): %s", err.c_str());
  }
  if (rank < 0 || rank >= s->nranks())
    return report_error(ncclInvalidArgument, "cclabSimKernel: rank %d is not a simulated GPU (0..%d)", rank,
                        s->nranks() - 1);
  s->enqueue_kernel(stream, rank, flops, seconds);
  if (stream == nullptr) return sim_synchronize("cclabSimKernel");
  return ncclSuccess;
}

ncclResult_t sim_time(double* us) {
  std::string err;
  sim::Session* s = session(&err);
  if (s == nullptr) {
    *us = 0;
    return report_error(ncclInvalidUsage, "cclabSimTime: no simulated world (CCLAB_BACKEND=sim and a communicator)");
  }
  *us = s->now_us();
  return ncclSuccess;
}

}  // namespace cclab
