// The C API: argument checks (each error names the argument), then enqueue. Every function has the
// pnccl* profiling alias NCCL provides.
#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "base/log.h"
#include "base/param.h"
#include "bootstrap/bootstrap.h"
#include "cclab/cclab.h"
#include "core/backend.h"
#include "core/comm.h"
#include "core/enqueue.h"
#include "kernels/dtypes.h"
#include "kernels/p2p.h"

using namespace cclab;

#define CCLAB_ALIAS(ret, name, args) extern "C" ret p##name args __attribute__((alias(#name)));
#define CCLAB_TRY(call)                      \
  do {                                         \
    ncclResult_t _r = (call);                  \
    if (_r != ncclSuccess) return fail(_r);    \
  } while (0)

namespace {

// An argument error inside a group also fails the group's ncclGroupEnd.
ncclResult_t fail(ncclResult_t r) {
  group_fail(r);
  return r;
}

// An enum argument's value as the caller passed it. A C caller can pass any int, but in C++ loading an
// enum object whose value lies outside the enum's range is undefined, so the checks read the bits.
template <typename E>
int enum_bits(const E& e) {
  static_assert(sizeof(E) == sizeof(int), "an int-sized enum");
  int v;
  memcpy(&v, &e, sizeof v);
  return v;
}

ncclResult_t check_type(const ncclDataType_t& t, const char* fn) {
  const int v = enum_bits(t);
  if (v < 0 || v >= ncclNumTypes)
    return report_error(ncclInvalidArgument, "%s: invalid datatype %d (valid: 0..%d)", fn, v, ncclNumTypes - 1);
  return ncclSuccess;
}

ncclResult_t check_op(ncclComm_t comm, const ncclRedOp_t& op, ncclDataType_t t, const char* fn) {
  const int v = enum_bits(op);
  if (v >= 0 && v < ncclNumOps) return ncclSuccess;
  const int idx = v - ncclNumOps;
  if (v < 0 || idx >= static_cast<int>(comm->redops.size()) || !comm->redops[idx].in_use)
    return report_error(ncclInvalidArgument, "%s: invalid reduction op %d (not a built-in op, nor one created by "
                        "ncclRedOpCreatePreMulSum on this communicator)", fn, v);
  if (comm->redops[idx].type != t)
    return report_error(ncclInvalidArgument, "%s: reduction op %d was created for datatype %d, not %d", fn, v,
                        comm->redops[idx].type, t);
  return ncclSuccess;
}

// Counts are size_t: a negative int converted to size_t becomes enormous. Reject counts whose byte
// size (times `mult` ranks) cannot be a real buffer.
ncclResult_t check_count(size_t count, ncclDataType_t t, size_t mult, const char* fn, const char* name) {
  const size_t limit = (static_cast<size_t>(1) << 62) / type_size(t) / mult;
  if (count > limit)
    return report_error(ncclInvalidArgument,
                        "%s: %s %zu is too large (%zu bytes overflow; a negative count converted to size_t?)", fn,
                        name, count, count);
  return ncclSuccess;
}

ncclResult_t check_ptr(const void* p, size_t count, const char* fn, const char* name) {
  if (p == nullptr && count > 0) return report_error(ncclInvalidArgument, "%s: %s is NULL", fn, name);
  return ncclSuccess;
}

ncclResult_t check_rank(ncclComm_t comm, int r, const char* fn, const char* name) {
  if (r < 0 || r >= comm->nranks)
    return report_error(ncclInvalidArgument, "%s: %s %d is out of range (nranks %d)", fn, name, r, comm->nranks);
  return ncclSuccess;
}

ncclResult_t check_stream(cudaStream_t s, const char* fn) {
  bool valid = true;
  host_stream_lookup(s, &valid);
  if (!valid)
    return report_error(ncclInvalidArgument, "%s: stream %p is not a stream of this backend (create host streams "
                        "with cclabStreamCreate)", fn, static_cast<void*>(s));
  return ncclSuccess;
}

// Buffers that overlap without being in place, as NCCL defines it: an AllGather's sendbuff at recvbuff +
// rank x count, a ReduceScatter's recvbuff at sendbuff + rank x count, the others the same buffer.
// Anything else would read input the call has already overwritten (NCCL leaves it undefined).
ncclResult_t check_overlap(const OpDesc& op) {
  if (op.count == 0) return ncclSuccess;
  const ncclComm_t comm = op.comm;
  const bool root = comm->rank == op.root;
  // Which buffers the call reads and writes on this rank.
  const bool reads = op.coll != CollKind::kBroadcast || root, writes = op.coll != CollKind::kReduce || root;
  if (!reads || !writes) return ncclSuccess;
  const size_t es = type_size(op.type), n = static_cast<size_t>(comm->nranks);
  const size_t in = (op.coll == CollKind::kReduceScatter ? n : 1) * op.count * es;
  const size_t out = (op.coll == CollKind::kAllGather ? n : 1) * op.count * es;
  const uintptr_t s = reinterpret_cast<uintptr_t>(op.send), r = reinterpret_cast<uintptr_t>(op.recv);
  const size_t mine = static_cast<size_t>(comm->rank) * op.count * es;
  uintptr_t in_place = r;  // where sendbuff is when the call is in place
  if (op.coll == CollKind::kAllGather) in_place = r + mine;
  if (op.coll == CollKind::kReduceScatter) in_place = r - mine;
  if (s == in_place || s + in <= r || r + out <= s) return ncclSuccess;
  const char* rule = op.coll == CollKind::kAllGather       ? "sendbuff == recvbuff + rank x count x type size"
                     : op.coll == CollKind::kReduceScatter ? "recvbuff == sendbuff + rank x count x type size"
                                                           : "sendbuff == recvbuff";
  return report_error(ncclInvalidArgument,
                      "%s: rank %d's sendbuff %p (%zu bytes) and recvbuff %p (%zu bytes) overlap but the call is not "
                      "in place (in place means %s, here sendbuff %p): the call would read input it has already "
                      "overwritten",
                      op.fn, comm->rank, op.send, in, op.recv, out, rule, reinterpret_cast<const void*>(in_place));
}

ncclResult_t collective(OpDesc op, size_t mult, bool needs_op) {
  CCLAB_TRY(check_comm_ready(op.comm, op.fn));
  CCLAB_TRY(check_type(op.type, op.fn));
  if (needs_op) CCLAB_TRY(check_op(op.comm, op.op, op.type, op.fn));
  CCLAB_TRY(check_count(op.count, op.type, mult, op.fn, "count"));
  CCLAB_TRY(check_overlap(op));
  if (!op.comm->cuda) CCLAB_TRY(check_stream(op.stream, op.fn));  // CUDA checks its streams at launch
  return fail(enqueue(op));
}

}  // namespace

// ---- Version, ids, errors ------------------------------------------------------------------------

extern "C" ncclResult_t ncclGetVersion(int* version) {
  if (!version) return report_error(ncclInvalidArgument, "ncclGetVersion: version is NULL");
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}
CCLAB_ALIAS(ncclResult_t, ncclGetVersion, (int*))

extern "C" ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  if (!id) return report_error(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
  print_version_once();
  return bootstrap_get_unique_id(id);
}
CCLAB_ALIAS(ncclResult_t, ncclGetUniqueId, (ncclUniqueId*))

extern "C" const char* ncclGetErrorString(ncclResult_t r) {
  switch (r) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the cclab developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}
CCLAB_ALIAS(const char*, ncclGetErrorString, (ncclResult_t))

extern "C" const char* ncclGetLastError(ncclComm_t comm) {
  const char* e = last_error();
  if (e && *e) return e;
  if (comm && check_comm(comm, "ncclGetLastError") == ncclSuccess) {
    std::lock_guard<std::mutex> lk(comm->error_mu);
    thread_local std::string copy;
    copy = comm->async_message;
    return copy.c_str();
  }
  return "";
}
CCLAB_ALIAS(const char*, ncclGetLastError, (ncclComm_t))

extern "C" void ncclResetDebugInit(void) { reset_log_for_testing(); }
extern "C" void pncclResetDebugInit(void) __attribute__((alias("ncclResetDebugInit")));

// ---- Memory ---------------------------------------------------------------------------------------

extern "C" ncclResult_t ncclMemAlloc(void** ptr, size_t size) {
  if (!ptr) return report_error(ncclInvalidArgument, "ncclMemAlloc: ptr is NULL");
  *ptr = nullptr;
  if (size == 0) return ncclSuccess;
  return current().mem_alloc(ptr, size);
}
CCLAB_ALIAS(ncclResult_t, ncclMemAlloc, (void**, size_t))

extern "C" ncclResult_t ncclMemFree(void* ptr) {
  if (ptr == nullptr) return ncclSuccess;
  return current().mem_free(ptr);
}
CCLAB_ALIAS(ncclResult_t, ncclMemFree, (void*))

// ---- Communicators ------------------------------------------------------------------------------

extern "C" ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank,
                                              ncclConfig_t* config) {
  return comm_init(comm, nranks, id, rank, config, rank, "ncclCommInitRankConfig");
}
CCLAB_ALIAS(ncclResult_t, ncclCommInitRankConfig, (ncclComm_t*, int, ncclUniqueId, int, ncclConfig_t*))

extern "C" ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  return comm_init(comm, nranks, id, rank, nullptr, rank, "ncclCommInitRank");
}
CCLAB_ALIAS(ncclResult_t, ncclCommInitRank, (ncclComm_t*, int, ncclUniqueId, int))

extern "C" ncclResult_t ncclCommInitRankScalable(ncclComm_t* comm, int nranks, int rank, int nId,
                                                ncclUniqueId* ids, ncclConfig_t* config) {
  if (nId < 1 || ids == nullptr)
    return report_error(ncclInvalidArgument, "ncclCommInitRankScalable: need at least one unique id (nId %d)", nId);
  // One rendezvous serves any scale on the host backend: every rank uses the first id.
  return comm_init(comm, nranks, ids[0], rank, config, rank, "ncclCommInitRankScalable");
}
CCLAB_ALIAS(ncclResult_t, ncclCommInitRankScalable, (ncclComm_t*, int, int, int, ncclUniqueId*, ncclConfig_t*))

extern "C" ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  const char* fn = "ncclCommInitAll";
  if (!comms) return report_error(ncclInvalidArgument, "%s: comms is NULL", fn);
  if (ndev < 1) return report_error(ncclInvalidArgument, "%s: ndev is %d, it must be at least 1", fn, ndev);
  if (devlist) {
    for (int i = 0; i < ndev; ++i) {
      if (devlist[i] < 0) return report_error(ncclInvalidArgument, "%s: devlist[%d] = %d is negative", fn, i, devlist[i]);
      for (int j = 0; j < i; ++j)
        if (devlist[j] == devlist[i])
          return report_error(ncclInvalidUsage, "%s: device %d appears twice in devlist (entries %d and %d)", fn,
                              devlist[i], j, i);
    }
  }
  ncclUniqueId id;
  ncclResult_t r = bootstrap_get_unique_id(&id);
  if (r != ncclSuccess) return r;
  IdleScope idle;  // the sim backend need not wait for this thread while it waits for the ranks' inits
  std::vector<ncclResult_t> res(ndev, ncclSuccess);
  std::vector<std::string> errs(ndev);
  std::vector<std::thread> threads;
  for (int i = 0; i < ndev; ++i) {
    threads.emplace_back([&, i] {
      res[i] = comm_init(&comms[i], ndev, id, i, nullptr, devlist ? devlist[i] : i, fn);
      if (res[i] != ncclSuccess) errs[i] = last_error();
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < ndev; ++i) {
    if (res[i] != ncclSuccess) {
      for (int j = 0; j < ndev; ++j)
        if (comms[j]) comm_free(comms[j]), comms[j] = nullptr;
      set_last_error(errs[i].c_str());
      return res[i];
    }
  }
  for (int i = 0; i < ndev; ++i)
    comms[i]->backend->claim(comms[i]);  // the caller drives them, not the threads that initialised them
  return ncclSuccess;
}
CCLAB_ALIAS(ncclResult_t, ncclCommInitAll, (ncclComm_t*, int, const int*))

extern "C" ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  ncclResult_t r = check_comm(comm, "ncclCommFinalize");
  if (r != ncclSuccess) return r;
  comm_drain(comm);
  comm->finalized = true;
  return static_cast<ncclResult_t>(comm->async_error.load());
}
CCLAB_ALIAS(ncclResult_t, ncclCommFinalize, (ncclComm_t))

extern "C" ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;  // as NCCL
  ncclResult_t r = check_comm(comm, "ncclCommDestroy");
  if (r != ncclSuccess) return r;
  comm_drain(comm);
  comm_free(comm);
  return ncclSuccess;
}
CCLAB_ALIAS(ncclResult_t, ncclCommDestroy, (ncclComm_t))

extern "C" ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (comm == nullptr) return ncclSuccess;
  ncclResult_t r = check_comm(comm, "ncclCommAbort");
  if (r != ncclSuccess) return r;
  // Every wait of this communicator polls the flag, so in-flight work stops within milliseconds.
  comm->abort_flag.store(1);
  comm->backend->abort(comm);
  comm_drain(comm);
  comm_free(comm);
  return ncclSuccess;
}
CCLAB_ALIAS(ncclResult_t, ncclCommAbort, (ncclComm_t))

extern "C" ncclResult_t ncclCommRevoke(ncclComm_t comm, int flags) {
  ncclResult_t r = check_comm(comm, "ncclCommRevoke");
  if (r != ncclSuccess) return r;
  if (flags != NCCL_REVOKE_DEFAULT)
    return report_error(ncclInvalidArgument, "ncclCommRevoke: revokeFlags must be NCCL_REVOKE_DEFAULT (0), not %d",
                        flags);
  comm->abort_flag.store(1);
  comm->backend->abort(comm);
  comm_drain(comm);
  net_stop_all(comm);  // its NET connections close now, so peers waiting on this rank learn of it
  return ncclSuccess;
}
CCLAB_ALIAS(ncclResult_t, ncclCommRevoke, (ncclComm_t, int))

extern "C" ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                                     ncclConfig_t* config) {
  const char* fn = "ncclCommSplit";
  ncclResult_t r = check_comm_ready(comm, fn);
  if (r != ncclSuccess) return r;
  if (!newcomm) return report_error(ncclInvalidArgument, "%s: newcomm is NULL", fn);
  *newcomm = nullptr;
  if (color < NCCL_SPLIT_NOCOLOR)
    return report_error(ncclInvalidArgument, "%s: color %d is invalid (use >= 0 or NCCL_SPLIT_NOCOLOR)", fn, color);
  IdleScope idle;  // waits for the other ranks (sim backend: the simulation need not wait for this thread)
  // Everyone learns everyone's (color, key); the first rank of each color makes the new unique id.
  struct Entry {
    int color, key, rank;
    ncclUniqueId id;
  };
  std::vector<Entry> all(comm->nranks);
  Entry& me = all[comm->rank];
  me.color = color;
  me.key = key;
  me.rank = comm->rank;
  memset(&me.id, 0, sizeof me.id);
  r = comm->bootstrap->allgather(all.data(), sizeof(Entry));
  if (r != ncclSuccess) return r;
  std::vector<Entry> group;
  for (const Entry& e : all)
    if (color != NCCL_SPLIT_NOCOLOR && e.color == color) group.push_back(e);
  std::stable_sort(group.begin(), group.end(),
                   [](const Entry& a, const Entry& b) { return a.key != b.key ? a.key < b.key : a.rank < b.rank; });
  const bool leader = !group.empty() && group[0].rank == comm->rank;
  ncclResult_t id_err = ncclSuccess;
  if (leader) id_err = bootstrap_get_unique_id(&me.id);
  r = comm->bootstrap->allgather(all.data(), sizeof(Entry));  // second round: the leaders' ids
  if (r != ncclSuccess) return r;
  if (id_err != ncclSuccess) return id_err;
  if (color == NCCL_SPLIT_NOCOLOR) return ncclSuccess;
  int newrank = 0;
  while (group[newrank].rank != comm->rank) ++newrank;
  ncclConfig_t cfg = config ? *config : comm->config;
  return comm_init(newcomm, static_cast<int>(group.size()), all[group[0].rank].id, newrank, &cfg, comm->dev, fn);
}
CCLAB_ALIAS(ncclResult_t, ncclCommSplit, (ncclComm_t, int, int, ncclComm_t*, ncclConfig_t*))

extern "C" ncclResult_t ncclCommShrink(ncclComm_t comm, int* exclude, int nexclude, ncclComm_t* newcomm,
                                      ncclConfig_t* config, int flags) {
  const char* fn = "ncclCommShrink";
  ncclResult_t r = check_comm_ready(comm, fn, flags == NCCL_SHRINK_ABORT);
  if (r != ncclSuccess) return r;
  if (!newcomm) return report_error(ncclInvalidArgument, "%s: newcomm is NULL", fn);
  IdleScope idle;
  *newcomm = nullptr;
  if (nexclude < 0 || (nexclude > 0 && !exclude))
    return report_error(ncclInvalidArgument, "%s: excludeRanksList is NULL or excludeRanksCount %d < 0", fn, nexclude);
  if (flags != NCCL_SHRINK_DEFAULT && flags != NCCL_SHRINK_ABORT)
    return report_error(ncclInvalidArgument, "%s: shrinkFlags %d is not NCCL_SHRINK_DEFAULT or NCCL_SHRINK_ABORT", fn,
                        flags);
  std::vector<bool> excluded(comm->nranks, false);
  for (int i = 0; i < nexclude; ++i) {
    if (exclude[i] < 0 || exclude[i] >= comm->nranks)
      return report_error(ncclInvalidArgument, "%s: excluded rank %d is out of range (nranks %d)", fn, exclude[i],
                          comm->nranks);
    excluded[exclude[i]] = true;
  }
  // As in NCCL, excluded ranks do not call: they may be dead. So nothing here may wait for them (no
  // all-gather over the parent); the survivors only talk to each other.
  if (excluded[comm->rank])
    return report_error(ncclInvalidArgument, "%s: rank %d is in excludeRanksList; excluded ranks must not call it", fn,
                        comm->rank);
  if (flags == NCCL_SHRINK_ABORT) {
    // Operations stuck on a dead rank end now; the flag is lowered again for the bootstrap below. NET
    // connections close first (their proxies stop while the flag is up): a survivor still waiting on
    // this rank then learns of the shrink, and a late proxy cannot raise the flag again meanwhile.
    comm->abort_flag.store(1);
    comm_drain(comm);
    if (net_stop_all(comm))
      mark_stopped(comm, ncclInvalidUsage, "ncclCommShrink(NCCL_SHRINK_ABORT) closed its network connections");
    comm->abort_flag.store(0);
  }
  std::vector<int> survivors;
  for (int i = 0; i < comm->nranks; ++i)
    if (!excluded[i]) survivors.push_back(i);
  // The first survivor makes the new unique id and sends it to the others. Every survivor counts its
  // shrinks of this parent, so the tag tells this shrink's message from an earlier one's.
  struct IdMsg {
    int32_t status;
    ncclUniqueId id;
  } msg;
  memset(&msg, 0, sizeof msg);
  const int tag = 0x53480000 + (comm->shrink_count++ & 0xffff);
  const int leader = survivors[0];
  if (comm->rank == leader) {
    msg.status = bootstrap_get_unique_id(&msg.id);
    std::string err = msg.status != ncclSuccess ? last_error() : "";
    for (size_t i = 1; i < survivors.size(); ++i) {
      r = comm->bootstrap->send(survivors[i], tag, &msg, sizeof msg);
      if (r != ncclSuccess) return r;
    }
    if (msg.status != ncclSuccess) {
      set_last_error(err.c_str());
      return static_cast<ncclResult_t>(msg.status);
    }
  } else {
    r = comm->bootstrap->recv(leader, tag, &msg, sizeof msg);
    if (r != ncclSuccess) return r;
    if (msg.status != ncclSuccess)
      return report_error(static_cast<ncclResult_t>(msg.status), "%s: rank %d (the first remaining rank) could not "
                          "create the new communicator's unique id", fn, leader);
  }
  const int newrank = static_cast<int>(std::find(survivors.begin(), survivors.end(), comm->rank) - survivors.begin());
  ncclConfig_t cfg = config ? *config : comm->config;
  return comm_init(newcomm, static_cast<int>(survivors.size()), msg.id, newrank, &cfg, comm->dev, fn);
}
CCLAB_ALIAS(ncclResult_t, ncclCommShrink, (ncclComm_t, int*, int, ncclComm_t*, ncclConfig_t*, int))

extern "C" ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* err) {
  ncclResult_t r = check_comm(comm, "ncclCommGetAsyncError");
  if (r != ncclSuccess) return r;
  if (!err) return report_error(ncclInvalidArgument, "ncclCommGetAsyncError: asyncError is NULL");
  const int st = comm->init_state.load();
  *err = static_cast<ncclResult_t>(st != ncclSuccess ? st : comm->async_error.load());
  return ncclSuccess;
}
CCLAB_ALIAS(ncclResult_t, ncclCommGetAsyncError, (ncclComm_t, ncclResult_t*))

#define CCLAB_QUERY(NAME, OUT, VALUE)                                                                 \
  extern "C" ncclResult_t ncclComm##NAME(const ncclComm_t comm, int* OUT) {                           \
    ncclResult_t r = check_comm(comm, "ncclComm" #NAME);                                              \
    if (r != ncclSuccess) return r;                                                                   \
    if (!OUT) return report_error(ncclInvalidArgument, "ncclComm" #NAME ": " #OUT " is NULL");        \
    *OUT = (VALUE);                                                                                   \
    return ncclSuccess;                                                                               \
  }                                                                                                   \
  CCLAB_ALIAS(ncclResult_t, ncclComm##NAME, (const ncclComm_t, int*))
CCLAB_QUERY(Count, count, comm->nranks)
CCLAB_QUERY(CuDevice, device, comm->dev)
CCLAB_QUERY(UserRank, rank, comm->rank)

// Registration: host memory needs none; handles are checked for symmetry only.
extern "C" ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size, void** handle) {
  ncclResult_t r = check_comm(comm, "ncclCommRegister");
  if (r != ncclSuccess) return r;
  if (!handle) return report_error(ncclInvalidArgument, "ncclCommRegister: handle is NULL");
  *handle = buff;
  return ncclSuccess;
}
CCLAB_ALIAS(ncclResult_t, ncclCommRegister, (const ncclComm_t, void*, size_t, void**))
extern "C" ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle) {
  return check_comm(comm, "ncclCommDeregister");
}
CCLAB_ALIAS(ncclResult_t, ncclCommDeregister, (const ncclComm_t, void*))
extern "C" ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win,
                                              int flags) {
  ncclResult_t r = check_comm(comm, "ncclCommWindowRegister");
  if (r != ncclSuccess) return r;
  if (!win) return report_error(ncclInvalidArgument, "ncclCommWindowRegister: win is NULL");
  if (reinterpret_cast<uintptr_t>(buff) % NCCL_WIN_REQUIRED_ALIGNMENT)
    return report_error(ncclInvalidArgument, "ncclCommWindowRegister: buff %p is not %d-byte aligned", buff,
                        NCCL_WIN_REQUIRED_ALIGNMENT);
  *win = reinterpret_cast<ncclWindow_t>(buff);
  return ncclSuccess;
}
CCLAB_ALIAS(ncclResult_t, ncclCommWindowRegister, (ncclComm_t, void*, size_t, ncclWindow_t*, int))
extern "C" ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  return check_comm(comm, "ncclCommWindowDeregister");
}
CCLAB_ALIAS(ncclResult_t, ncclCommWindowDeregister, (ncclComm_t, ncclWindow_t))

// ---- Reduction ops ------------------------------------------------------------------------------

extern "C" ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar, ncclDataType_t type,
                                                ncclScalarResidence_t residence, ncclComm_t comm) {
  const char* fn = "ncclRedOpCreatePreMulSum";
  ncclResult_t r = check_comm(comm, fn);
  if (r != ncclSuccess) return r;
  if (!op) return report_error(ncclInvalidArgument, "%s: op is NULL", fn);
  if (!scalar) return report_error(ncclInvalidArgument, "%s: scalar is NULL", fn);
  if ((r = check_type(type, fn)) != ncclSuccess) return r;
  const int where = enum_bits(residence);
  if (where != ncclScalarDevice && where != ncclScalarHostImmediate)
    return report_error(ncclInvalidArgument, "%s: residence %d is invalid", fn, where);
  DynRedOp d;
  d.in_use = true;
  d.type = type;
  d.residence = residence;
  d.scalar_ptr = scalar;
  d.scalar_bits = 0;
  // A device-resident scalar on the CUDA backend is GPU memory: the kernel reads it when it runs, and the
  // host must not (it segfaulted on an H200); make_redop passes scalar_ptr for it on every backend.
  if (where == ncclScalarHostImmediate) memcpy(&d.scalar_bits, scalar, type_size(type));
  size_t idx = 0;
  while (idx < comm->redops.size() && comm->redops[idx].in_use) ++idx;
  if (idx == comm->redops.size()) comm->redops.push_back(d); else comm->redops[idx] = d;
  *op = static_cast<ncclRedOp_t>(ncclNumOps + static_cast<int>(idx));
  return ncclSuccess;
}
CCLAB_ALIAS(ncclResult_t, ncclRedOpCreatePreMulSum,
            (ncclRedOp_t*, void*, ncclDataType_t, ncclScalarResidence_t, ncclComm_t))

extern "C" ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  ncclResult_t r = check_comm(comm, "ncclRedOpDestroy");
  if (r != ncclSuccess) return r;
  const int idx = static_cast<int>(op) - ncclNumOps;
  if (static_cast<int>(op) < ncclNumOps)
    return report_error(ncclInvalidArgument, "ncclRedOpDestroy: op %d is a built-in op", static_cast<int>(op));
  if (idx >= static_cast<int>(comm->redops.size()) || !comm->redops[idx].in_use)
    return report_error(ncclInvalidArgument, "ncclRedOpDestroy: op %d was not created on this communicator",
                        static_cast<int>(op));
  comm->redops[idx].in_use = false;
  return ncclSuccess;
}
CCLAB_ALIAS(ncclResult_t, ncclRedOpDestroy, (ncclRedOp_t, ncclComm_t))

// ---- Collectives ----------------------------------------------------------------------------------

static OpDesc coll_desc(const char* fn, CollKind k, const void* s, void* r, size_t count, ncclDataType_t t,
                        ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  OpDesc d;
  d.kind = OpDesc::Kind::kColl;
  d.coll = k;
  d.send = s;
  d.recv = r;
  d.count = count;
  d.type = t;
  d.op = op;
  d.root = root;
  d.comm = comm;
  d.stream = stream;
  d.fn = fn;
  return d;
}

extern "C" ncclResult_t ncclAllReduce(const void* s, void* r, size_t count, ncclDataType_t t, ncclRedOp_t op,
                                     ncclComm_t comm, cudaStream_t stream) {
  const char* fn = "ncclAllReduce";
  CCLAB_TRY(check_ptr(s, count, fn, "sendbuff"));
  CCLAB_TRY(check_ptr(r, count, fn, "recvbuff"));
  return collective(coll_desc(fn, CollKind::kAllReduce, s, r, count, t, op, 0, comm, stream), 1, true);
}
CCLAB_ALIAS(ncclResult_t, ncclAllReduce,
            (const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t))

extern "C" ncclResult_t ncclBroadcast(const void* s, void* r, size_t count, ncclDataType_t t, int root,
                                     ncclComm_t comm, cudaStream_t stream) {
  const char* fn = "ncclBroadcast";
  CCLAB_TRY(check_comm_ready(comm, fn));
  CCLAB_TRY(check_rank(comm, root, fn, "root"));
  if (comm->rank == root) CCLAB_TRY(check_ptr(s, count, fn, "sendbuff"));
  CCLAB_TRY(check_ptr(r, count, fn, "recvbuff"));
  return collective(coll_desc(fn, CollKind::kBroadcast, s, r, count, t, ncclSum, root, comm, stream), 1, false);
}
CCLAB_ALIAS(ncclResult_t, ncclBroadcast, (const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))

extern "C" ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t t, int root, ncclComm_t comm,
                                 cudaStream_t stream) {
  return ncclBroadcast(buff, buff, count, t, root, comm, stream);
}
CCLAB_ALIAS(ncclResult_t, ncclBcast, (void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))

extern "C" ncclResult_t ncclReduce(const void* s, void* r, size_t count, ncclDataType_t t, ncclRedOp_t op, int root,
                                  ncclComm_t comm, cudaStream_t stream) {
  const char* fn = "ncclReduce";
  CCLAB_TRY(check_comm_ready(comm, fn));
  CCLAB_TRY(check_rank(comm, root, fn, "root"));
  CCLAB_TRY(check_ptr(s, count, fn, "sendbuff"));
  if (comm->rank == root) CCLAB_TRY(check_ptr(r, count, fn, "recvbuff"));
  return collective(coll_desc(fn, CollKind::kReduce, s, r, count, t, op, root, comm, stream), 1, true);
}
CCLAB_ALIAS(ncclResult_t, ncclReduce,
            (const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, int, ncclComm_t, cudaStream_t))

extern "C" ncclResult_t ncclAllGather(const void* s, void* r, size_t count, ncclDataType_t t, ncclComm_t comm,
                                     cudaStream_t stream) {
  const char* fn = "ncclAllGather";
  CCLAB_TRY(check_comm_ready(comm, fn));
  CCLAB_TRY(check_ptr(s, count, fn, "sendbuff"));
  CCLAB_TRY(check_ptr(r, count, fn, "recvbuff"));
  return collective(coll_desc(fn, CollKind::kAllGather, s, r, count, t, ncclSum, 0, comm, stream), comm->nranks,
                    false);
}
CCLAB_ALIAS(ncclResult_t, ncclAllGather, (const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t))

extern "C" ncclResult_t ncclReduceScatter(const void* s, void* r, size_t count, ncclDataType_t t, ncclRedOp_t op,
                                         ncclComm_t comm, cudaStream_t stream) {
  const char* fn = "ncclReduceScatter";
  CCLAB_TRY(check_comm_ready(comm, fn));
  CCLAB_TRY(check_ptr(s, count, fn, "sendbuff"));
  CCLAB_TRY(check_ptr(r, count, fn, "recvbuff"));
  return collective(coll_desc(fn, CollKind::kReduceScatter, s, r, count, t, op, 0, comm, stream), comm->nranks,
                    true);
}
CCLAB_ALIAS(ncclResult_t, ncclReduceScatter,
            (const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t))

// ---- Point-to-point and the collectives built from it -------------------------------------------

static ncclResult_t p2p(const char* fn, OpDesc::Kind kind, const void* s, void* r, size_t count, ncclDataType_t t,
                        int peer, ncclComm_t comm, cudaStream_t stream) {
  CCLAB_TRY(check_comm_ready(comm, fn));
  CCLAB_TRY(check_type(t, fn));
  CCLAB_TRY(check_rank(comm, peer, fn, "peer"));
  CCLAB_TRY(check_count(count, t, 1, fn, "count"));
  CCLAB_TRY(check_ptr(kind == OpDesc::Kind::kSend ? s : r, count, fn,
                        kind == OpDesc::Kind::kSend ? "sendbuff" : "recvbuff"));
  if (!comm->cuda) CCLAB_TRY(check_stream(stream, fn));  // CUDA checks its streams at launch
  OpDesc d = coll_desc(fn, CollKind::kSendRecv, s, r, count, t, ncclSum, 0, comm, stream);
  d.kind = kind;
  d.peer = peer;
  return fail(enqueue(d));
}

extern "C" ncclResult_t ncclSend(const void* s, size_t count, ncclDataType_t t, int peer, ncclComm_t comm,
                                cudaStream_t stream) {
  return p2p("ncclSend", OpDesc::Kind::kSend, s, nullptr, count, t, peer, comm, stream);
}
CCLAB_ALIAS(ncclResult_t, ncclSend, (const void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))

extern "C" ncclResult_t ncclRecv(void* r, size_t count, ncclDataType_t t, int peer, ncclComm_t comm,
                                cudaStream_t stream) {
  return p2p("ncclRecv", OpDesc::Kind::kRecv, nullptr, r, count, t, peer, comm, stream);
}
CCLAB_ALIAS(ncclResult_t, ncclRecv, (void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))

namespace {
// Runs `body` (which issues sends and receives) as one group, as NCCL's taskAppend expands
// AlltoAll, Gather and Scatter into point-to-point tasks.
template <typename F>
ncclResult_t as_group(F body) {
  ncclResult_t r = group_start();
  if (r != ncclSuccess) return r;
  ncclResult_t body_r = body();
  r = group_end();
  return body_r != ncclSuccess ? body_r : r;
}

// The sends and receives of a point-to-point collective (kernels/p2p.h's p2p_pattern, which `cclab sim`
// runs too), as one group.
ncclResult_t p2p_group(P2pPattern pattern, const void* s, void* r, size_t count, ncclDataType_t t, int root,
                       ncclComm_t comm, cudaStream_t stream) {
  const size_t bytes = count * type_size(t);
  return as_group([&] {
    ncclResult_t e = ncclSuccess;
    p2p_pattern(pattern, comm->rank, comm->nranks, root, bytes, [&](bool send, int peer, size_t offset) {
      if (e != ncclSuccess) return;
      e = send ? ncclSend(static_cast<const char*>(s) + offset, count, t, peer, comm, stream)
               : ncclRecv(static_cast<char*>(r) + offset, count, t, peer, comm, stream);
    });
    return e;
  });
}
}  // namespace

extern "C" ncclResult_t ncclAlltoAll(const void* s, void* r, size_t count, ncclDataType_t t, ncclComm_t comm,
                                    cudaStream_t stream) {
  const char* fn = "ncclAlltoAll";
  CCLAB_TRY(check_comm_ready(comm, fn));
  CCLAB_TRY(check_type(t, fn));
  CCLAB_TRY(check_count(count, t, comm->nranks, fn, "count"));
  CCLAB_TRY(check_ptr(s, count, fn, "sendbuff"));
  CCLAB_TRY(check_ptr(r, count, fn, "recvbuff"));
  // In place, every block but a rank's own would be overwritten while it is still being sent. With one
  // rank the only block is the rank's own and stays where it is, so that is exact (nccl-tests runs
  // alltoall in place too, on one GPU with one rank).
  if (count > 0 && s == r && comm->nranks > 1)
    return fail(report_error(ncclInvalidArgument,
                             "%s: in-place AlltoAll (sendbuff == recvbuff) is not supported with %d ranks: the "
                             "blocks for other ranks would be overwritten while they are sent",
                             fn, comm->nranks));
  return p2p_group(P2pPattern::kAllToAll, s, r, count, t, 0, comm, stream);
}
CCLAB_ALIAS(ncclResult_t, ncclAlltoAll, (const void*, void*, size_t, ncclDataType_t, ncclComm_t, cudaStream_t))

extern "C" ncclResult_t ncclGather(const void* s, void* r, size_t count, ncclDataType_t t, int root,
                                  ncclComm_t comm, cudaStream_t stream) {
  const char* fn = "ncclGather";
  CCLAB_TRY(check_comm_ready(comm, fn));
  CCLAB_TRY(check_type(t, fn));
  CCLAB_TRY(check_rank(comm, root, fn, "root"));
  CCLAB_TRY(check_count(count, t, comm->nranks, fn, "count"));
  CCLAB_TRY(check_ptr(s, count, fn, "sendbuff"));
  if (comm->rank == root) CCLAB_TRY(check_ptr(r, count, fn, "recvbuff"));
  return p2p_group(P2pPattern::kGather, s, r, count, t, root, comm, stream);
}
CCLAB_ALIAS(ncclResult_t, ncclGather, (const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))

extern "C" ncclResult_t ncclScatter(const void* s, void* r, size_t count, ncclDataType_t t, int root,
                                   ncclComm_t comm, cudaStream_t stream) {
  const char* fn = "ncclScatter";
  CCLAB_TRY(check_comm_ready(comm, fn));
  CCLAB_TRY(check_type(t, fn));
  CCLAB_TRY(check_rank(comm, root, fn, "root"));
  CCLAB_TRY(check_count(count, t, comm->nranks, fn, "count"));
  if (comm->rank == root) CCLAB_TRY(check_ptr(s, count, fn, "sendbuff"));
  CCLAB_TRY(check_ptr(r, count, fn, "recvbuff"));
  return p2p_group(P2pPattern::kScatter, s, r, count, t, root, comm, stream);
}
CCLAB_ALIAS(ncclResult_t, ncclScatter, (const void*, void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t))

// ---- Groups ---------------------------------------------------------------------------------------

extern "C" ncclResult_t ncclGroupStart(void) { return group_start(); }
CCLAB_ALIAS(ncclResult_t, ncclGroupStart, (void))
extern "C" ncclResult_t ncclGroupEnd(void) { return group_end(); }
CCLAB_ALIAS(ncclResult_t, ncclGroupEnd, (void))
extern "C" ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* info) {
  if (!info) return report_error(ncclInvalidArgument, "ncclGroupSimulateEnd: simInfo is NULL");
  if (info->magic != 0x74685283 || info->size < sizeof(ncclSimInfo_t))
    return report_error(ncclInvalidArgument,
                        "ncclGroupSimulateEnd: simInfo was not initialised with NCCL_SIM_INFO_INITIALIZER (magic 0x%x, "
                        "size %zu)",
                        info->magic, info->size);
  double us = 0;
  ncclResult_t r = group_simulate_end(&us);
  if (r == ncclSuccess) info->estimatedTime = static_cast<float>(us);
  return r;
}
CCLAB_ALIAS(ncclResult_t, ncclGroupSimulateEnd, (ncclSimInfo_t*))

// ---- cclab extensions -------------------------------------------------------------------------------

extern "C" ncclResult_t cclabSetBackend(cclabBackend_t b) { return set_current_backend(b); }
extern "C" ncclResult_t cclabGetBackend(cclabBackend_t* b) {
  if (!b) return report_error(ncclInvalidArgument, "cclabGetBackend: backend is NULL");
  *b = current_backend();
  return ncclSuccess;
}
extern "C" const char* cclabBackendName(cclabBackend_t b) {
  switch (b) {
    case cclabBackendHost: return "host";
    case cclabBackendSim: return "sim";
    case cclabBackendCuda: return "cuda";
  }
  return "unknown";
}

extern "C" ncclResult_t cclabStreamCreate(cudaStream_t* s) {
  if (!s) return report_error(ncclInvalidArgument, "cclabStreamCreate: stream is NULL");
  return current().stream_create(s);
}
extern "C" ncclResult_t cclabStreamSynchronize(cudaStream_t s) { return current().stream_synchronize(s); }
extern "C" ncclResult_t cclabStreamWaitStream(cudaStream_t waiter, cudaStream_t waitee) {
  return current().stream_wait(waiter, waitee);
}
extern "C" ncclResult_t cclabSimKernel(cudaStream_t stream, int rank, double flops, double seconds) {
  bool valid = true;
  host_stream_lookup(stream, &valid);
  if (!valid) return report_error(ncclInvalidArgument, "cclabSimKernel: %p is not a host stream", (void*)stream);
  if (!(flops >= 0) || !(seconds >= 0))
    return report_error(ncclInvalidArgument, "cclabSimKernel: flops (%g) and seconds (%g) must be >= 0", flops, seconds);
  Backend* sim = backend_if_made(cclabBackendSim);
  return sim ? sim->sim_kernel(stream, rank, flops, seconds) : ncclSuccess;  // the host does not model compute
}
extern "C" ncclResult_t cclabSimTime(double* us) {
  if (!us) return report_error(ncclInvalidArgument, "cclabSimTime: us is NULL");
  Backend* sim = backend_if_made(cclabBackendSim);
  return sim ? sim->sim_time(us) : current().sim_time(us);
}
extern "C" ncclResult_t cclabStreamQuery(cudaStream_t s) { return current().stream_query(s); }
extern "C" ncclResult_t cclabStreamDestroy(cudaStream_t s) { return current().stream_destroy(s); }
extern "C" ncclResult_t cclabSetDevice(int dev) {
  if (dev < 0) return report_error(ncclInvalidArgument, "cclabSetDevice: device %d is negative", dev);
  return current().set_device(dev);
}
extern "C" ncclResult_t cclabGetDeviceCount(int* count) {
  if (!count) return report_error(ncclInvalidArgument, "cclabGetDeviceCount: count is NULL");
  *count = 0;
  return current().device_count(count);
}
extern "C" ncclResult_t cclabGetDeviceName(int dev, char* name, int name_len, char* bus_id, int bus_id_len) {
  if (dev < 0) return report_error(ncclInvalidArgument, "cclabGetDeviceName: device %d is negative", dev);
  if (name_len < 0 || bus_id_len < 0 || (name_len > 0 && !name) || (bus_id_len > 0 && !bus_id))
    return report_error(ncclInvalidArgument, "cclabGetDeviceName: %s is NULL or its length (%d) is negative",
                        (name_len < 0 || (name_len > 0 && !name)) ? "name" : "pciBusId",
                        (name_len < 0 || (name_len > 0 && !name)) ? name_len : bus_id_len);
  std::string n, b;
  const ncclResult_t r = current().device_name(dev, &n, &b);
  if (r != ncclSuccess) return r;
  if (name_len > 0) snprintf(name, static_cast<size_t>(name_len), "%s", n.c_str());
  if (bus_id_len > 0) snprintf(bus_id, static_cast<size_t>(bus_id_len), "%s", b.c_str());
  return ncclSuccess;
}
extern "C" ncclResult_t cclabMemcpy(void* dst, const void* src, size_t bytes) {
  if (bytes && (!dst || !src)) return report_error(ncclInvalidArgument, "cclabMemcpy: %s is NULL", dst ? "src" : "dst");
  return bytes ? current().copy_to_host(dst, src, bytes) : ncclSuccess;
}

extern "C" ncclResult_t cclabCommSetObserver(ncclComm_t comm, cclabObserverFn fn, void* data) {
  ncclResult_t r = check_comm(comm, "cclabCommSetObserver");
  if (r != ncclSuccess) return r;
  comm->observer = fn;
  comm->observer_data = data;
  return ncclSuccess;
}
extern "C" ncclResult_t cclabCommChannels(ncclComm_t comm, int* n) {
  ncclResult_t r = check_comm_ready(comm, "cclabCommChannels");
  if (r != ncclSuccess) return r;
  if (!n) return report_error(ncclInvalidArgument, "cclabCommChannels: nChannels is NULL");
  *n = comm->nchannels;
  return ncclSuccess;
}
extern "C" ncclResult_t cclabCommRing(ncclComm_t comm, int channel, int* ranks) {
  ncclResult_t r = check_comm_ready(comm, "cclabCommRing");
  if (r != ncclSuccess) return r;
  if (channel < 0 || channel >= comm->nchannels)
    return report_error(ncclInvalidArgument, "cclabCommRing: channel %d out of range (%d channels)", channel,
                        comm->nchannels);
  if (!ranks) return report_error(ncclInvalidArgument, "cclabCommRing: ranks is NULL");
  for (int i = 0; i < comm->nranks; ++i) ranks[i] = comm->channels[channel].ring[i];
  return ncclSuccess;
}

extern "C" ncclResult_t cclabCommTree(ncclComm_t comm, int channel, int* tree, int* up, int* down) {
  ncclResult_t r = check_comm_ready(comm, "cclabCommTree");
  if (r != ncclSuccess) return r;
  if (channel < 0 || channel >= comm->nchannels)
    return report_error(ncclInvalidArgument, "cclabCommTree: channel %d out of range (%d channels)", channel,
                        comm->nchannels);
  if (!tree || !up || !down) return report_error(ncclInvalidArgument, "cclabCommTree: an output pointer is NULL");
  const Channel& ch = comm->channels[channel];
  *tree = ch.tree_index;
  *up = ch.tree.up;
  for (int i = 0; i < 3; ++i) down[i] = ch.tree.down[i];
  return ncclSuccess;
}
