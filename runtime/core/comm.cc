// Communicator life cycle: init (rank, config, all, split), finalize, destroy, abort, queries.
#include "core/comm.h"

#include "base/sync.h"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <numeric>
#include <set>
#include <thread>
#include <unordered_set>

#include "base/log.h"
#include "base/param.h"
#include "graph/algo_proto.h"
#include "core/backend.h"
#include "core/doctor.h"
#include "core/enqueue.h"
#include "core/recorder.h"
#include "kernels/describe.h"
#include "kernels/pat.h"
#include "kernels/proto_ll.h"
#include "transport/net.h"

namespace cclab {
ncclResult_t setup_topology(ncclComm_t comm);
}

namespace cclab {

uint64_t fnv1a(const void* data, size_t n, uint64_t h) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

namespace {

std::mutex g_live_mu;
std::unordered_set<ncclComm_t>& live_comms() {
  static auto* s = new std::unordered_set<ncclComm_t>;
  return *s;
}

// Ranks with the same value share a host (memory): P2P or SHM between them, NET otherwise. NCCL_HOSTID
// overrides the host name, as in NCCL, e.g. to give processes of one machine a host each.
uint64_t host_hash() {
  const std::string id = param_str("NCCL_HOSTID", nullptr);
  if (!id.empty()) return fnv1a(id.data(), id.size());
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  return fnv1a(host, strlen(host));
}

// CPUs this process may run on.
int cpus_available() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
  const long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

uint64_t proc_hash() {
  // pid alone is reused across containers; pid + start time + an address in this process is not.
  static const uint64_t h = [] {
    uint64_t v = static_cast<uint64_t>(getpid());
    auto t = std::chrono::steady_clock::now().time_since_epoch().count();
    v = fnv1a(&t, sizeof t, v);
    const void* addr = &g_live_mu;
    return fnv1a(&addr, sizeof addr, v);
  }();
  return h;
}

std::string hex64(uint64_t v) {
  char buf[17];
  snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// Name of the connection carrying data from `from` to `to`: kind 'r' (ring, channel c) or 'p' (p2p).
std::string conn_name(ncclComm_t comm, char kind, int c, int from, int to) {
  return "/cclab-" + comm->id_hash + "-" + kind + std::to_string(c) + "-" + std::to_string(from) + "-" +
         std::to_string(to);
}

// What a connection kind (conn_name's `kind`) carries, for messages.
const char* conn_kind_name(char kind) {
  return kind == 'p' ? "point-to-point" : kind == 'L' ? "LL" : kind == 'M' ? "LL128" : "Simple";
}

// NCCL's order: P2P within a process, SHM within a host, NET otherwise (and wherever the first two are
// disabled). Simulated ranks share the simulator's process and never use NET.
ncclResult_t pick_transport(ncclComm_t comm, int peer, TransportKind* kind) {
  const PeerInfo& me = comm->peers[comm->rank];
  const PeerInfo& p = comm->peers[peer];
  const bool same_proc = me.proc_hash == p.proc_hash, same_host = me.host_hash == p.host_hash;
  if (same_proc && !param_int("NCCL_P2P_DISABLE", 0)) {
    *kind = TransportKind::kP2p;
    return ncclSuccess;
  }
  if (same_host && (!param_int("NCCL_SHM_DISABLE", 0) || comm->sim)) {
    *kind = TransportKind::kShm;
    return ncclSuccess;
  }
  if (comm->cuda)
    return report_error(ncclInvalidUsage,
                        "no transport between rank %d and rank %d: %s, and the CUDA backend has no network transport "
                        "yet (NET runs on the host backend)",
                        comm->rank, peer,
                        same_host ? "NCCL_SHM_DISABLE=1 rules out host memory between them" : "they are on different hosts");
  *kind = TransportKind::kNet;
  return ncclSuccess;
}

// A NET connection's description for transport_net.cc: `kind` as conn_name's, the data going from
// `from` to `to`.
NetConnSpec net_spec(ncclComm_t comm, char kind, int c, int from, int to, int buff_bytes) {
  static const char kKinds[] = "pLMr";
  NetConnSpec s;
  const int peer = from == comm->rank ? to : from;
  s.bootstrap = comm->bootstrap.get();
  s.rank = comm->rank;
  s.peer = peer;
  s.channel = c;
  s.tag = 0x4e450000 + static_cast<int>(strchr(kKinds, kind) - kKinds) * 64 + c;  // c < 64 channels
  const std::string name = conn_name(comm, kind, c, from, to);
  s.conn_id = fnv1a(name.data(), name.size());
  s.payload = kind == 'L' ? NetPayload::kLL : kind == 'M' ? NetPayload::kLL128 : NetPayload::kSimple;
  s.what = "channel " + std::to_string(c) + " " + conn_kind_name(kind);
  s.fifo_bytes = fifo_total_bytes(buff_bytes);
  s.step_bytes = buff_bytes / kNcclSteps;
  s.abort_flag = &comm->abort_flag;
  s.timeout_s = comm->timeout_s > 0 ? comm->timeout_s : 600.0;
  // A connection that breaks under a live communicator (the peer died or aborted) ends its waits: the
  // first error is what ncclCommGetAsyncError and the failed calls report.
  s.on_error = [comm](ncclResult_t r, const std::string& msg) {
    set_async_error(comm, r, msg);
    mark_stopped(comm, r, msg);
    comm->abort_flag.store(1);
  };
  return s;
}

// Points the connection's view at its (created or opened) memory: header first, then the slots.
void attach(ncclComm_t comm, Conn* conn, int peer, int buff_bytes) {
  conn->info.hdr = static_cast<ConnFifoHeader*>(conn->seg->base());
  conn->info.buff = static_cast<char*>(conn->seg->base()) + kFifoDataOffset;
  conn->info.step_bytes = buff_bytes / kNcclSteps;
  conn->info.peer = peer;
  conn->info.step = 0;
  conn->connected = true;
}

// `kind` names the connection: 'p' point-to-point, or 'L' / 'M' / 'r' the ring's LL / LL128 / Simple FIFO.
ncclResult_t connect_recv(ncclComm_t comm, Conn* conn, char kind, int c, int peer, int buff_bytes) {
  ncclResult_t r = pick_transport(comm, peer, &conn->kind);
  if (r != ncclSuccess) return r;
  if (comm->backend->makes_connections())
    return comm->backend->connect_recv(comm, conn, conn->kind, conn_name(comm, kind, c, peer, comm->rank), peer,
                                      buff_bytes);
  if (conn->kind == TransportKind::kNet)
    r = net_connect_recv(net_spec(comm, kind, c, peer, comm->rank, buff_bytes), &conn->seg);
  else
    r = segment_create(conn->kind, conn_name(comm, kind, c, peer, comm->rank), fifo_total_bytes(buff_bytes),
                       &conn->seg);
  if (r != ncclSuccess) return r;
  attach(comm, conn, peer, buff_bytes);
  return ncclSuccess;
}

// A sender waiting for its peer to create the connection (the peer's first call of an operation that
// needs it: NCCL's runtime connect): reported as a stuck wait after CCLAB_STUCK_WARN seconds and shown
// on the doctor's board (core/doctor.h), which ends it when the peer can never come (it left, died, or
// called another collective).
class ConnectWait {
 public:
  ConnectWait(ncclComm_t comm, int channel, int peer)
      : comm_(comm), site_{comm->rank, channel, peer, kConnectStep, false, PrimKind::kSend},
        warn_us_(stuck_warn_us()) {}
  ~ConnectWait() {
    if (begun_) doctor_wait_end(comm_, site_);
  }
  ConnectWatch watch() {
    if (comm_->doctor == nullptr) return {};
    return [this](double waited_us, std::string* why) {
      if (!begun_) {
        begun_ = true;
        doctor_wait_begin(comm_, site_);
      }
      if (!warned_ && warn_us_ > 0 && waited_us > warn_us_) {
        warned_ = true;
        log_alert(__FILE__, __LINE__, "%s for %.0f s: has it called this operation?", describe_wait(site_).c_str(),
                  waited_us / 1e6);
      }
      return doctor_wait_poll(comm_, site_, waited_us, why);
    };
  }

 private:
  ncclComm_t comm_;
  WaitSite site_;
  double warn_us_;
  bool begun_ = false, warned_ = false;
};

ncclResult_t connect_send(ncclComm_t comm, Conn* conn, char kind, int c, int peer, int buff_bytes) {
  ncclResult_t r = pick_transport(comm, peer, &conn->kind);
  if (r != ncclSuccess) return r;
  const double timeout = comm->timeout_s > 0 ? comm->timeout_s : 600.0;
  if (comm->backend->makes_connections())
    r = comm->backend->connect_send(comm, conn, conn->kind, conn_name(comm, kind, c, comm->rank, peer), peer,
                                    buff_bytes, timeout);
  else if (conn->kind == TransportKind::kNet)
    r = net_connect_send(net_spec(comm, kind, c, comm->rank, peer, buff_bytes), &conn->seg);
  else
    r = segment_open(conn->kind, conn_name(comm, kind, c, comm->rank, peer), fifo_total_bytes(buff_bytes),
                     &comm->abort_flag, timeout, &conn->seg, ConnectWait(comm, c, peer).watch());
  if (r != ncclSuccess) {
    // The transport names the connection object; say which ranks it joins and what was being set up.
    const std::string why = last_error();
    const char* what = conn_kind_name(kind);
    const std::string limit = comm->timeout_s > 0 ? " (CCLAB_TIMEOUT=" + std::to_string(static_cast<int>(comm->timeout_s)) + " s)" : "";
    return report_error(r, "rank %d channel %d could not connect to rank %d (%s connection, via %s): %s%s", comm->rank,
                        c, peer, what, transport_name(conn->kind), why.c_str(), limit.c_str());
  }
  if (!comm->backend->makes_connections()) attach(comm, conn, peer, buff_bytes);
  if (kind == 'r' || kind == 'p')
    CCLAB_INFO(kLogInit | kLogP2p, "Channel %02d/%d : %d[%d] -> %d[%d] via %s", c,
               kind == 'r' ? 0 : 1, comm->rank, comm->dev, peer, comm->peers[peer].dev, transport_name(conn->kind));
  return ncclSuccess;
}

// Parameters every rank must agree on; the smallest wins.
struct SharedParams {
  int nchannels;
  int channel_lo, channel_hi;  // NCCL_MIN/MAX_NCHANNELS, minCTAs/maxCTAs
  int channel_cap;             // CUDA: channel blocks per rank that fit beside the others on its GPU (0: no bound)
  int gpu_sharing;             // CUDA: ranks on this rank's GPU, itself included (the largest wins)
  int buff_bytes;
  int64_t min_channel_bytes;
  int ll_buff_bytes;
  int ll128_buff_bytes;
  uint64_t algo_mask;   // bit coll*7+algo: NCCL_ALGO enables it
  uint32_t proto_mask;  // bit coll*3+proto: NCCL_PROTO enables it
  uint32_t from_env;    // bit coll: NCCL_ALGO (bit coll) / NCCL_PROTO (bit 8+coll) names the collective
  uint64_t topo_hash;   // CCLAB_TOPO, NCCL_TOPO_FILE, NCCL_GRAPH_FILE: every rank must model the same machine
  int32_t channel_rule;  // CCLAB_MIN_CHANNEL_BYTES is set: its rule picks channels even under the host model
};

ncclResult_t read_params(ncclComm_t comm, SharedParams* p) {
  if (!comm->sim) {  // the simulator models its networks; NCCL_NET is about real ones
    const ncclResult_t r = net_check_params();
    if (r != ncclSuccess) return r;
  }
  int64_t buff = param_int("NCCL_BUFFSIZE", 4 << 20);
  if (buff < kNcclSteps * 4096 || buff > (1ll << 30) || buff % (kNcclSteps * 512) != 0)
    return report_error(ncclInvalidArgument,
                        "NCCL_BUFFSIZE=%lld is invalid: it must be a multiple of %d between %d and 1 GiB",
                        static_cast<long long>(buff), kNcclSteps * 512, kNcclSteps * 4096);
  // The host backend's "topology" is flat; two channels exercise the multi-channel paths without
  // oversubscribing small machines. NCCL_MIN/MAX_NCHANNELS and the config's min/maxCTAs bound it.
  // On GPUs the count comes from the model once it is built (setup_topology: cuda_channel_count).
  int64_t nch = comm->cuda ? 16 : 2;
  int64_t lo = param_int("NCCL_MIN_NCHANNELS", 1), hi = param_int("NCCL_MAX_NCHANNELS", 64);
  if (comm->config.minCTAs != NCCL_CONFIG_UNDEF_INT) lo = std::max<int64_t>(lo, comm->config.minCTAs);
  if (comm->config.maxCTAs != NCCL_CONFIG_UNDEF_INT) hi = std::min<int64_t>(hi, comm->config.maxCTAs);
  if (lo < 1 || hi < 1 || lo > 64 || hi > 64)
    return report_error(ncclInvalidArgument,
                        "channel bounds NCCL_MIN_NCHANNELS/minCTAs=%lld and NCCL_MAX_NCHANNELS/maxCTAs=%lld must lie "
                        "in 1..64",
                        static_cast<long long>(lo), static_cast<long long>(hi));
  nch = std::max(lo, std::min(hi, nch));
  p->nchannels = static_cast<int>(nch);
  p->channel_lo = static_cast<int>(lo);
  p->channel_hi = static_cast<int>(hi);
  p->channel_cap = 0;
  p->gpu_sharing = 1;
  if (comm->cuda) {
    // Ranks sharing a GPU (same host, same bus id) must have all their blocks resident at once.
    const PeerInfo& me = comm->peers[comm->rank];
    int sharing = 0, other_procs = 0;
    for (const PeerInfo& q : comm->peers)
      if (q.host_hash == me.host_hash && (me.gpu_busid >= 0 ? q.gpu_busid == me.gpu_busid : q.dev == me.dev)) {
        ++sharing;
        if (q.proc_hash != me.proc_hash) ++other_procs;
      }
    if (other_procs > 0)
      CCLAB_WARN("rank %d: %d rank(s) of other processes share CUDA device %d with it; unless MPS runs, kernels of "
                 "different processes take turns on a GPU instead of running together, and ranks that spin on each "
                 "other then advance once per time slice (very slow) - give each process its own GPU, or start MPS",
                 comm->rank, other_procs, comm->dev);
    int resident = 0;
    if (comm->backend->resident_blocks(comm->dev, &resident) != ncclSuccess)
      CCLAB_WARN("rank %d: how many blocks device %d holds at once is unknown (%s)", comm->rank, comm->dev,
                 last_error());
    else if (resident > 0)
      p->channel_cap = std::max(1, resident / std::max(1, sharing));
    p->gpu_sharing = std::max(1, sharing);
    if (sharing > 1)
      CCLAB_INFO(kLogInit, "rank %d: %d ranks share CUDA device %d, which holds %d of cclab's blocks at once", comm->rank,
                 sharing, comm->dev, resident);
  }
  p->buff_bytes = static_cast<int>(buff);
  p->min_channel_bytes = std::max<int64_t>(1, param_int("CCLAB_MIN_CHANNEL_BYTES", 64 << 10));
  p->channel_rule = param_str("CCLAB_MIN_CHANNEL_BYTES", nullptr).empty() ? 0 : 1;
  const int64_t ll = param_int("NCCL_LL_BUFFSIZE", kLLBuffSize), ll128 = param_int("NCCL_LL128_BUFFSIZE", kLL128BuffSize);
  if (ll < kNcclSteps * kLLLineBytes || ll > (1 << 30) || ll % (kNcclSteps * kLLLineBytes) != 0)
    return report_error(ncclInvalidArgument, "NCCL_LL_BUFFSIZE=%lld is invalid: it must be a multiple of %d up to 1 GiB",
                        static_cast<long long>(ll), kNcclSteps * kLLLineBytes);
  if (ll128 < kNcclSteps * kLL128LineBytes || ll128 > (1 << 30) || ll128 % (kNcclSteps * kLL128LineBytes) != 0)
    return report_error(ncclInvalidArgument,
                        "NCCL_LL128_BUFFSIZE=%lld is invalid: it must be a multiple of %d up to 1 GiB",
                        static_cast<long long>(ll128), kNcclSteps * kLL128LineBytes);
  p->ll_buff_bytes = static_cast<int>(ll);
  p->ll128_buff_bytes = static_cast<int>(ll128);
  AlgoProtoEnable en;
  std::string err;
  const std::string algo = param_str("NCCL_ALGO", nullptr), proto = param_str("NCCL_PROTO", nullptr);
  // NCCL_ALGO=<a custom algorithm's name> (graph/custom_algo.h): that algorithm for the collectives it
  // supports, the tuner's choice for the others. The CUDA backend runs the ones built into its kernels
  // (CCLAB_CUSTOM_ALGOS), never a plugin's.
  const bool plugins = comm->backend->runs_custom_plugins();
  std::string builtin_names;
  if (!plugins) {
    builtin_names = comm->backend->builtin_custom_algo_names();
    if (builtin_names.empty())
      builtin_names = "none (cmake -DCCLAB_CUSTOM_ALGOS=<schedule file> builds one in, docs/custom-algorithms.md)";
    if (!algo.empty() && algo.find_first_of(",;:^") == std::string::npos)
      comm->custom_algo = comm->backend->builtin_custom_algo(algo, &err);
    if (!err.empty()) return report_error(ncclInvalidArgument, "%s", err.c_str());
  }
  const CustomAlgo* plugin = comm->custom_algo == nullptr ? custom_algo_for_env(algo, &err) : nullptr;
  if (!err.empty()) return report_error(ncclInvalidArgument, "%s", err.c_str());
  if (plugin != nullptr && !plugins)
    return report_error(ncclInvalidUsage,
                        "NCCL_ALGO=%s is a custom algorithm from the plugin %s, which the CUDA backend cannot run (a "
                        "GPU cannot call into a host shared object): build its source file into the CUDA backend "
                        "with cmake -DCCLAB_CUSTOM_ALGOS=<file> (docs/custom-algorithms.md); built in here: %s",
                        algo.c_str(), plugin->path.c_str(), builtin_names.c_str());
  if (plugin != nullptr) comm->custom_algo = plugin;
  if (comm->custom_algo != nullptr) {
    CCLAB_INFO(kLogEnv | kLogTuning, "NCCL_ALGO=%s: custom algorithm %s %s %s", algo.c_str(),
               comm->custom_algo->name.c_str(), comm->custom_algo->builtin >= 0 ? "built in from" : "from",
               comm->custom_algo->path.c_str());
  } else if (parse_algo_env(algo.empty() ? nullptr : algo.c_str(), &en, &err) != ncclSuccess) {
    if (getenv("CCLAB_ALGO_PLUGIN") != nullptr) err += " (custom algorithms: " + custom_algo_names() + ")";
    if (!plugins) err += " (custom algorithms built into the CUDA backend: " + builtin_names + ")";
    return report_error(ncclInvalidArgument, "%s", err.c_str());
  }
  if (parse_proto_env(proto.empty() ? nullptr : proto.c_str(), &en, &err) != ncclSuccess)
    return report_error(ncclInvalidArgument, "%s", err.c_str());
  if (!algo.empty() && comm->custom_algo == nullptr)
    CCLAB_INFO(kLogEnv | kLogTuning, "%s", describe_algo_enable(en, algo.c_str()).c_str());
  if (!proto.empty()) CCLAB_INFO(kLogEnv | kLogTuning, "%s", describe_proto_enable(en, proto.c_str()).c_str());
  p->algo_mask = 0;
  p->proto_mask = 0;
  p->from_env = 0;
  for (int c = 0; c < kNumColls; ++c) {
    for (int a = 0; a < kNumAlgos; ++a)
      if (en.algo[c][a]) p->algo_mask |= 1ull << (c * kNumAlgos + a);
    for (int q = 0; q < kNumProtos; ++q)
      if (en.proto[c][q]) p->proto_mask |= 1u << (c * kNumProtos + q);
    if (en.algo_from_env[c]) p->from_env |= 1u << c;
    if (en.proto_from_env[c]) p->from_env |= 1u << (8 + c);
  }
  // On GPUs, LL128 only where its 128-byte lines arrive whole (Backend::ll128_safe); ranks AND their masks,
  // so one rank that cannot use it takes it off for all.
  std::string why;
  if (!comm->backend->ll128_safe(&why)) {
    for (int c = 0; c < kNumColls; ++c) p->proto_mask &= ~(1u << (c * kNumProtos + kProtoLL128));
    CCLAB_INFO(kLogInit | kLogTuning, "LL128 disabled on the CUDA backend: %s", why.c_str());
  }
  const std::string topo = param_str("CCLAB_TOPO", nullptr) + "|" + param_str("NCCL_TOPO_FILE", nullptr) + "|" +
                           param_str("NCCL_GRAPH_FILE", nullptr);
  p->topo_hash = fnv1a(topo.data(), topo.size());
  return ncclSuccess;
}

// The machine a custom algorithm sees (ranks per machine when every machine holds the same number, in
// consecutive ranks) and this rank's peers in it, checked symmetric across all ranks.
ncclResult_t setup_custom_algo(ncclComm_t comm) {
  CustomTopo& t = comm->custom_topo;
  t.nranks = comm->nranks;
  t.nnodes = comm->nnodes;
  t.ranks_per_node = comm->nranks % std::max(1, comm->nnodes) == 0 ? comm->nranks / std::max(1, comm->nnodes) : 0;
  for (int r = 0; r < comm->nranks && t.ranks_per_node > 0; ++r)
    if (static_cast<size_t>(r) >= comm->rank_node.size() || comm->rank_node[r] != comm->rank_node[r - r % t.ranks_per_node])
      t.ranks_per_node = 0;
  std::vector<std::vector<int>> all;
  std::string err;
  if (!custom_all_peers(*comm->custom_algo, t, &all, &err))
    return report_error(ncclInvalidUsage, "NCCL_ALGO=%s: %s", comm->custom_algo->name.c_str(), err.c_str());
  comm->custom_peers = all[comm->rank];
  return ncclSuccess;
}

ncclResult_t init_body(ncclComm_t comm, ncclUniqueId id) {
  set_log_rank(comm->rank);
  ncclResult_t r = Bootstrap::create(id, comm->rank, comm->nranks, &comm->abort_flag, &comm->bootstrap);
  if (r != ncclSuccess) return r;
  comm->id_hash = hex64(fnv1a(id.internal, sizeof id.internal)).substr(0, 12);

  // Who is where.
  comm->peers.resize(comm->nranks);
  PeerInfo& me = comm->peers[comm->rank];
  me.host_hash = host_hash();
  me.proc_hash = proc_hash();
  me.pid = getpid();
  me.dev = comm->dev;
  me.gpu_busid = -1;
  me.gpu_sm = 0;
  me.cpus = cpus_available();
  me.nonce = fnv1a(&comm, sizeof comm, static_cast<uint64_t>(now_us() * 1e3) ^ (static_cast<uint64_t>(me.pid) << 32));
  me.board_addr = socket_address_zero();
  if (comm->backend->kind() == cclabBackendHost) me.board_addr = doctor_board_server(comm->bootstrap->peer_address(comm->rank));
  if (comm->backend->device_pci(comm->dev, &me.gpu_busid, &me.gpu_sm) != ncclSuccess) {
    // Still takes part in the exchange; topology detection then falls back (comm_topo.cc).
    CCLAB_WARN("rank %d: the PCI bus id of CUDA device %d is unknown (%s)", comm->rank, comm->dev, last_error());
    me.gpu_busid = -1;
  }
  r = comm->bootstrap->allgather(comm->peers.data(), sizeof(PeerInfo));
  if (r != ncclSuccess) return r;

  std::vector<SharedParams> params(comm->nranks);
  r = read_params(comm, &params[comm->rank]);
  if (r != ncclSuccess) {
    params[comm->rank] = SharedParams{-1, 0, 0, 0, 1, -1, -1, -1, -1, 0, 0, 0, 0, 0};  // still take part, so the others learn of it
  }
  ncclResult_t ag = comm->bootstrap->allgather(params.data(), sizeof(SharedParams));
  if (r != ncclSuccess) return r;
  if (ag != ncclSuccess) return ag;
  comm->nchannels = 64;
  comm->buff_bytes = 1 << 30;
  comm->min_channel_bytes = SIZE_MAX;
  comm->proto_buff_bytes[kProtoLL] = comm->proto_buff_bytes[kProtoLL128] = 1 << 30;
  uint64_t algo_mask = ~0ull;
  uint32_t proto_mask = ~0u, from_env = 0;
  for (int i = 0; i < comm->nranks; ++i) {
    if (params[i].nchannels < 0)
      return report_error(ncclInvalidArgument, "rank %d rejected its parameters (see its log)", i);
    comm->nchannels = std::min(comm->nchannels, params[i].nchannels);
    comm->channel_lo = std::max(comm->channel_lo, params[i].channel_lo);
    comm->channel_hi = std::min(comm->channel_hi, params[i].channel_hi);
    comm->gpu_sharing = std::max(comm->gpu_sharing, params[i].gpu_sharing);
    if (params[i].channel_cap > 0)
      comm->channel_cap = comm->channel_cap > 0 ? std::min(comm->channel_cap, params[i].channel_cap) : params[i].channel_cap;
    comm->buff_bytes = std::min(comm->buff_bytes, params[i].buff_bytes);
    comm->min_channel_bytes = std::min(comm->min_channel_bytes, static_cast<size_t>(params[i].min_channel_bytes));
    comm->channel_rule = comm->channel_rule || params[i].channel_rule != 0;
    comm->proto_buff_bytes[kProtoLL] = std::min(comm->proto_buff_bytes[kProtoLL], params[i].ll_buff_bytes);
    comm->proto_buff_bytes[kProtoLL128] = std::min(comm->proto_buff_bytes[kProtoLL128], params[i].ll128_buff_bytes);
    algo_mask &= params[i].algo_mask;
    proto_mask &= params[i].proto_mask;
    from_env |= params[i].from_env;
    if (params[i].topo_hash != params[0].topo_hash)
      return report_error(ncclInvalidUsage,
                          "rank %d and rank 0 model different machines: CCLAB_TOPO / NCCL_TOPO_FILE / NCCL_GRAPH_FILE "
                          "must be the same on every rank",
                          i);
  }
  comm->proto_buff_bytes[kProtoSimple] = comm->buff_bytes;
  for (int c = 0; c < kNumColls; ++c) {
    for (int a = 0; a < kNumAlgos; ++a) comm->algo_proto.algo[c][a] = (algo_mask >> (c * kNumAlgos + a)) & 1;
    for (int q = 0; q < kNumProtos; ++q) comm->algo_proto.proto[c][q] = (proto_mask >> (c * kNumProtos + q)) & 1;
    comm->algo_proto.algo_from_env[c] = (from_env >> c) & 1;
    comm->algo_proto.proto_from_env[c] = (from_env >> (8 + c)) & 1;
  }
  comm->timeout_s = static_cast<double>(param_int("CCLAB_TIMEOUT", 0));

  // Topology, rings, trees and the cost model (comm_topo.cc).
  r = setup_topology(comm);
  if (r != ncclSuccess) return r;
  if (comm->custom_algo != nullptr) {
    r = setup_custom_algo(comm);
    if (r != ncclSuccess) return r;
  }
  r = comm->backend->attach(comm);
  if (r != ncclSuccess) return r;
  // The rings' Simple connections now, so that a missing transport fails init; the other protocols
  // and the trees connect on first use (NCCL's runtime connect).
  // The simulator makes its connections in its world; the host transports stay unused.
  if (comm->nranks > 1 && !comm->sim) {
    r = ensure_connected(comm, AlgoKind::kRing, kProtoSimple, comm->nchannels);
    if (r != ncclSuccess) return r;
    CCLAB_INFO(kLogInit, "Connected all rings, use ring PXN 0 GDR 0");
  }
  r = comm->bootstrap->barrier();
  if (r != ncclSuccess) return r;
  recorder_attach(comm);
  CCLAB_INFO(kLogInit, "comm %p rank %d nRanks %d nChannels %d buffSize %d pid %d - Init COMPLETE",
             static_cast<void*>(comm), comm->rank, comm->nranks, comm->nchannels, comm->buff_bytes, getpid());
  return ncclSuccess;
}

ncclResult_t check_config(const ncclConfig_t* config, const char* fn) {
  if (config == nullptr) return ncclSuccess;
  if (config->magic != 0xcafebeef || config->size < offsetof(ncclConfig_t, minCTAs))
    return report_error(ncclInvalidArgument,
                        "%s: config was not initialised with NCCL_CONFIG_INITIALIZER (magic 0x%x, size %zu)", fn,
                        config->magic, config->size);
  if (config->blocking != NCCL_CONFIG_UNDEF_INT && config->blocking != 0 && config->blocking != 1)
    return report_error(ncclInvalidArgument, "%s: config->blocking must be 0 or 1, not %d", fn, config->blocking);
  return ncclSuccess;
}

}  // namespace

ncclResult_t check_comm(ncclComm_t comm, const char* fn) {
  if (comm == nullptr) return report_error(ncclInvalidArgument, "%s: comm is NULL", fn);
  std::lock_guard<std::mutex> lk(g_live_mu);
  if (!live_comms().count(comm) || comm->magic != kCommMagic)
    return report_error(ncclInvalidArgument,
                        "%s: comm %p is not a valid communicator (already destroyed, or never created)", fn,
                        static_cast<void*>(comm));
  return ncclSuccess;
}

ncclResult_t check_comm_ready(ncclComm_t comm, const char* fn, bool stopped_ok) {
  ncclResult_t r = check_comm(comm, fn);
  if (r != ncclSuccess) return r;
  int st = comm->init_state.load();
  if (st == ncclInProgress)
    return report_error(ncclInvalidUsage, "%s: comm %p is still initialising (non-blocking init; poll "
                        "ncclCommGetAsyncError until it returns ncclSuccess)", fn, static_cast<void*>(comm));
  if (st != ncclSuccess)
    return report_error(ncclInvalidUsage, "%s: comm %p failed to initialise: %s", fn, static_cast<void*>(comm),
                        ncclGetErrorString(static_cast<ncclResult_t>(st)));
  if (comm->finalized) return report_error(ncclInvalidUsage, "%s: comm %p was finalized", fn, static_cast<void*>(comm));
  if (comm->stopped.load()) {
    if (stopped_ok) return ncclSuccess;
    std::lock_guard<std::mutex> lk(comm->error_mu);
    return report_error(comm->stop_code,
                        "%s: comm %p was stopped: %s; destroy it, or make a communicator of the ranks left with "
                        "ncclCommShrink(..., NCCL_SHRINK_ABORT)",
                        fn, static_cast<void*>(comm), comm->stop_message.c_str());
  }
  if (comm->abort_flag.load())
    return report_error(ncclInvalidUsage, "%s: comm %p was aborted", fn, static_cast<void*>(comm));
  return ncclSuccess;
}

void mark_stopped(ncclComm_t comm, ncclResult_t r, const std::string& why) {
  std::lock_guard<std::mutex> lk(comm->error_mu);
  if (!comm->stopped.load()) {
    comm->stop_code = r;
    comm->stop_message = why;
  }
  comm->stopped.store(true);
}

ncclResult_t abort_cause(ncclComm_t comm, ncclResult_t code, std::string* msg) {
  if (!comm->abort_flag.load()) return code;
  std::lock_guard<std::mutex> lk(comm->error_mu);
  if (comm->async_error.load() == ncclSuccess) return code;
  *msg += " (" + comm->async_message + ")";
  return static_cast<ncclResult_t>(comm->async_error.load());
}

void set_async_error(ncclComm_t comm, ncclResult_t r, const std::string& msg) {
  std::lock_guard<std::mutex> lk(comm->error_mu);
  if (comm->async_error.load() == ncclSuccess) {
    comm->async_error.store(r);
    comm->async_message = msg;
  }
}

namespace {

// NVLS (kernels/nvls.h): every rank of a multicast group (comm->nvls_group: its machine's ranks, the
// comm->nvls_heads heads first) creates its region of each channel (two FIFOs per head), then maps every other member's, so
// that each reaches all the copies behind the "multicast" addresses. The regions are shared like
// connections (P2P within a process, SHM within a host); a group never spans hosts.
ncclResult_t connect_nvls(ncclComm_t comm, int nchannels) {
  const std::vector<int>& group = comm->nvls_group;
  const int n = static_cast<int>(group.size());
  const int me = static_cast<int>(std::find(group.begin(), group.end(), comm->rank) - group.begin());
  if (me >= n) return report_error(ncclInternalError, "NVLS: rank %d is in no multicast group", comm->rank);
  const int nheads = comm->nvls_heads;
  if (n > kMaxNvlsRanks)
    return report_error(ncclInvalidUsage, "NVLS: %d ranks, a multicast group holds at most %d (NCCL_MAX_LOCAL_RANKS)", n,
                        kMaxNvlsRanks);
  if (nheads < 1 || nheads > kMaxNvlsHeads || nheads > n)
    return report_error(ncclInternalError, "NVLS: %d heads for %d ranks (1 to %d, NCCL_MAX_NVLS_ARITY)", nheads, n,
                        kMaxNvlsHeads);
  TransportKind kind = TransportKind::kP2p;
  for (int p : group) {
    if (p == comm->rank) continue;
    TransportKind k;
    ncclResult_t r = pick_transport(comm, p, &k);
    if (r != ncclSuccess) return r;
    if (k == TransportKind::kNet)
      return report_error(ncclInvalidUsage,
                          "NVLS: rank %d is on another host (or reached over NET): the NVLS memory of a channel is "
                          "shared by every rank of one machine",
                          p);
    if (k == TransportKind::kShm) kind = TransportKind::kShm;
  }
  const size_t bytes = nvls_region_bytes(nheads, comm->nvls_step_bytes);
  auto name = [&](int c, int r) { return conn_name(comm, 'N', c, r, r); };
  for (int c = 0; c < nchannels; ++c) {
    Channel& ch = comm->channels[c];
    if (ch.nvls.nranks != 0) continue;
    ch.nvls_regions.assign(n, nullptr);
    ncclResult_t r = segment_create(kind, name(c, comm->rank), bytes, &ch.nvls_regions[me], n - 1);
    if (r != ncclSuccess) return r;
  }
  const double timeout = comm->timeout_s > 0 ? comm->timeout_s : 600.0;
  for (int c = 0; c < nchannels; ++c) {
    Channel& ch = comm->channels[c];
    if (ch.nvls.nranks != 0) continue;
    NvlsConn v;
    v.nranks = n;
    v.nheads = nheads;
    v.rank = me;
    v.step_bytes = comm->nvls_step_bytes;
    for (int i = 0; i < n; ++i) {
      const int p = group[i];
      if (p != comm->rank) {
        ncclResult_t r = segment_open(kind, name(c, p), bytes, &comm->abort_flag, timeout, &ch.nvls_regions[i],
                                      ConnectWait(comm, c, p).watch(), n - 1);
        if (r != ncclSuccess)
          return report_error(r, "rank %d channel %d could not map rank %d's NVLS memory (via %s): %s", comm->rank, c, p,
                              transport_name(kind), last_error());
      }
      v.uc[i] = static_cast<char*>(ch.nvls_regions[i]->base());
      v.global[i] = p;
    }
    v.global_set = true;
    ch.nvls = v;
  }
  CCLAB_INFO(kLogInit | kLogNvls, "NVLS: %d channels, %d heads of %d ranks, %zu bytes per rank and channel "
             "(NCCL_NVLS_CHUNKSIZE %d) via %s", nchannels, nheads, n, bytes, comm->nvls_step_bytes, transport_name(kind));
  return ncclSuccess;
}

}  // namespace

ncclResult_t ensure_connected(ncclComm_t comm, AlgoKind algo, int proto, int nchannels) {
  if (comm->nranks == 1) return ncclSuccess;
  if (algo == AlgoKind::kNvls || algo == AlgoKind::kNvlsTree) {
    nchannels = std::min(nchannels, comm->nchannels);
    if (comm->nvls_connected.load(std::memory_order_acquire) < nchannels) {
      std::lock_guard<std::mutex> lk(comm->connect_mu);
      ncclResult_t r = connect_nvls(comm, nchannels);
      if (r != ncclSuccess) return r;
      if (comm->nvls_connected.load() < nchannels) comm->nvls_connected.store(nchannels, std::memory_order_release);
    }
    if (algo == AlgoKind::kNvls) return ncclSuccess;
    // NVLS-Tree: then the tree links between the heads of the machines (below, Simple).
    proto = kProtoSimple;
  }
  static const char kKind[kNumProtocols] = {'L', 'M', 'r'};
  nchannels = std::min(nchannels, comm->nchannels);
  const bool custom = algo == AlgoKind::kCustom, pat = algo == AlgoKind::kPat, nvls_tree = algo == AlgoKind::kNvlsTree;
  std::atomic<int>& done = custom      ? comm->custom_connected
                           : pat       ? comm->pat_connected
                           : nvls_tree ? comm->nvls_tree_connected
                                       : comm->connected_channels[algo == AlgoKind::kTree ? 1 : 0][proto];
  if (done.load(std::memory_order_acquire) >= nchannels) return ncclSuccess;
  std::lock_guard<std::mutex> lk(comm->connect_mu);
  // Peers per channel: data comes from `from` and goes to `to`.
  auto peers_of = [&](Channel& ch, std::vector<int>* from, std::vector<int>* to) {
    if (custom) {  // both ways with every peer the algorithm declared
      *from = comm->custom_peers;
      *to = comm->custom_peers;
    } else if (pat) {  // both ways with rank +- 2^d (kernels/pat.h)
      for (int d = 0; d < pat_dims(comm->nranks); ++d)
        for (bool up : {false, true}) {
          const int q = pat_peer(comm->rank, comm->nranks, d, up);
          if (std::find(from->begin(), from->end(), q) == from->end()) from->push_back(q);
        }
      *to = *from;
    } else if (algo == AlgoKind::kTree || nvls_tree) {
      const TreeLinks& t = nvls_tree ? ch.nvls_tree : ch.tree;
      if (t.up >= 0) {
        from->push_back(t.up);
        to->push_back(t.up);
      }
      for (int i = 0; i < t.ndown; ++i) {
        from->push_back(t.down[i]);
        to->push_back(t.down[i]);
      }
    } else {
      from->push_back(ch.view[comm->nranks - 1]);
      to->push_back(ch.view[1]);
    }
  };
  // Every receiver creates its side first (never blocks), then every sender attaches (waits).
  for (int c = 0; c < nchannels; ++c) {
    Channel& ch = comm->channels[c];
    std::vector<int> from, to;
    peers_of(ch, &from, &to);
    for (int peer : from) {
      Conn& conn = ch.peers[peer].recv[proto];
      if (conn.connected) continue;
      ncclResult_t r = connect_recv(comm, &conn, kKind[proto], c, peer, comm->proto_buff_bytes[proto]);
      if (r != ncclSuccess) return r;
    }
  }
  for (int c = 0; c < nchannels; ++c) {
    Channel& ch = comm->channels[c];
    std::vector<int> from, to;
    peers_of(ch, &from, &to);
    for (int peer : to) {
      Conn& conn = ch.peers[peer].send[proto];
      if (conn.connected) continue;
      ncclResult_t r = connect_send(comm, &conn, kKind[proto], c, peer, comm->proto_buff_bytes[proto]);
      if (r != ncclSuccess) return r;
    }
  }
  if (done.load() < nchannels) done.store(nchannels, std::memory_order_release);
  return ncclSuccess;
}

void poison_connections(ncclComm_t comm) {
  auto poison = [](Conn& c, bool send) {
    if (!c.connected || c.kind == TransportKind::kNet || c.info.hdr == nullptr || c.cuda_mem) return;
    ConnCounter* k = send ? &c.info.hdr->tail : &c.info.hdr->head;
    counter_post(k, counter_load(k) | kCounterPoison);
  };
  std::lock_guard<std::mutex> lk(comm->connect_mu);
  for (Channel& ch : comm->channels)
    for (auto& kv : ch.peers)
      for (int q = 0; q < kNumProtocols; ++q) {
        poison(kv.second.send[q], true);
        poison(kv.second.recv[q], false);
      }
  // NVLS: every counter of every region this rank mapped (its peers wait on their own copies and on all).
  for (Channel& ch : comm->channels)
    for (int r = 0; r < ch.nvls.nranks; ++r)
      for (int h = 0; h < ch.nvls.nheads; ++h)
        for (bool b : {false, true}) {
          ConnFifoHeader* hdr = nvls_hdr(ch.nvls, r, nvls_fifo_off(h, b, ch.nvls.step_bytes));
          counter_post(&hdr->head, counter_load(&hdr->head) | kCounterPoison);
          counter_post(&hdr->tail, counter_load(&hdr->tail) | kCounterPoison);
        }
  for (auto& kv : comm->p2p_send) poison(kv.second, true);
  for (auto& kv : comm->p2p_recv) poison(kv.second, false);
}

ncclResult_t p2p_connect_send(ncclComm_t comm, int peer, Conn** out, int channel) {
  Conn* slot;
  {
    std::lock_guard<std::mutex> lock(comm->p2p_mu);
    slot = &comm->p2p_send[{channel, peer}];
  }
  Conn& c = *slot;
  if (!c.connected) {
    ncclResult_t r = connect_send(comm, &c, 'p', channel, peer, comm->buff_bytes);
    if (r != ncclSuccess) return r;
  }
  *out = &c;
  return ncclSuccess;
}

ncclResult_t p2p_connect_recv(ncclComm_t comm, int peer, Conn** out, int channel) {
  Conn* slot;
  {
    std::lock_guard<std::mutex> lock(comm->p2p_mu);
    slot = &comm->p2p_recv[{channel, peer}];
  }
  Conn& c = *slot;
  if (!c.connected) {
    ncclResult_t r = connect_recv(comm, &c, 'p', channel, peer, comm->buff_bytes);
    if (r != ncclSuccess) return r;
  }
  *out = &c;
  return ncclSuccess;
}

// Creates communicator `*out` for `rank` of `nranks`; blocking unless config->blocking == 0.
ncclResult_t comm_init(ncclComm_t* out, int nranks, const ncclUniqueId& id, int rank, const ncclConfig_t* config,
                       int dev, const char* fn) {
  if (out == nullptr) return report_error(ncclInvalidArgument, "%s: comm (the output pointer) is NULL", fn);
  *out = nullptr;
  if (nranks < 1) return report_error(ncclInvalidArgument, "%s: nranks is %d, it must be at least 1", fn, nranks);
  if (rank < 0 || rank >= nranks)
    return report_error(ncclInvalidArgument, "%s: rank %d is out of range for nranks %d (0..%d)", fn, rank, nranks,
                        nranks - 1);
  ncclResult_t r = check_config(config, fn);
  if (r != ncclSuccess) return r;
  print_version_once();
  IdleScope idle;  // init waits for the other ranks

  std::string why;
  Backend* backend = backend_get(current_backend(), &why);
  if (backend == nullptr)
    return report_error(ncclInvalidUsage, "%s: the %s backend cannot run here: %s", fn,
                        cclabBackendName(current_backend()), why.c_str());
  auto* comm = new ncclComm;
  comm->magic = kCommMagic;
  comm->backend = backend;
  comm->sim = backend->kind() == cclabBackendSim;
  comm->cuda = backend->kind() == cclabBackendCuda;
  comm->rank = rank;
  comm->nranks = nranks;
  // On the CUDA backend ncclCommInitRank* take the calling thread's current device, as NCCL does
  // (the host backend numbers its "devices" by rank).
  if (comm->cuda && std::strncmp(fn, "ncclCommInitRank", 16) == 0) {
    r = backend->init_device(&dev);
    if (r != ncclSuccess) {
      delete comm;
      return r;
    }
  }
  comm->dev = dev;
  ncclConfig_t defaults = NCCL_CONFIG_INITIALIZER;
  comm->config = config ? *config : defaults;
  const bool blocking = comm->config.blocking != 0;  // UNDEF means blocking
  {
    std::lock_guard<std::mutex> lk(g_live_mu);
    live_comms().insert(comm);
  }
  *out = comm;
  if (blocking) {
    r = init_body(comm, id);
    if (r != ncclSuccess) {
      comm->init_state = r;
      comm_free(comm);
      *out = nullptr;
    }
    return r;
  }
  comm->init_state = ncclInProgress;
  comm->init_thread = std::thread([comm, id] {
    ncclResult_t res = init_body(comm, id);
    if (res != ncclSuccess) set_async_error(comm, res, last_error());
    comm->init_state = res;
  });
  return ncclInProgress;
}

bool net_stop_all(ncclComm_t comm) {
  std::vector<Segment*> ends;
  auto add = [&](Conn& c) {
    if (c.kind == TransportKind::kNet && c.seg) ends.push_back(c.seg.get());
  };
  for (Channel& ch : comm->channels)
    for (auto& pc : ch.peers)
      for (int q = 0; q < kNumProtocols; ++q) add(pc.second.send[q]), add(pc.second.recv[q]);
  for (auto& pc : comm->p2p_send) add(pc.second);
  for (auto& pc : comm->p2p_recv) add(pc.second);
  for (Segment* e : ends) e->stop(false);
  for (Segment* e : ends) e->stop(true);
  return !ends.empty();
}

void comm_free(ncclComm_t comm) {
  if (comm->backend) comm->backend->detach(comm);
  recorder_detach(comm);
  {
    std::lock_guard<std::mutex> lk(g_live_mu);
    live_comms().erase(comm);
  }
  if (comm->init_thread.joinable()) comm->init_thread.join();
  // NET proxies before the rest: they report to the communicator until they are stopped. All are asked
  // at once, so their drains (send proxies send what was posted) overlap.
  net_stop_all(comm);
  comm->magic = 0;
  delete comm;
}

}  // namespace cclab
