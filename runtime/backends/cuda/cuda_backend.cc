// runtime/backends/cuda/cuda_backend.cc - the CUDA backend (see cuda_backend.h). Host compiler only: the kernels
// are kernels/block_kernel.h built by nvcc into cclab_cuda_kernels and reached through
// kernels/cuda/launch.h.
#include "backends/cuda/cuda_backend.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <strings.h>
#include <thread>

#include "base/log.h"
#include "base/param.h"
#include "graph/p2p_channels.h"
#include "graph/topo.h"
#include "kernels/cuda/launch.h"
#include "graph/algo_proto.h"
#include "base/sync.h"
#include "core/recorder.h"
#include "transport/transport.h"

namespace cclab {

namespace {


// ---- errors ------------------------------------------------------------------------------------------

ncclResult_t cuda_fail(cudaError_t e, const char* what, ncclComm_t comm = nullptr) {
  const ncclResult_t code = e == cudaErrorMemoryAllocation ? ncclSystemError : ncclUnhandledCudaError;
  if (comm != nullptr)
    return report_error(code, "rank %d (device %d): %s failed: %s (%s)", comm->rank, comm->dev, what,
                        cudaGetErrorString(e), cudaGetErrorName(e));
  return report_error(code, "%s failed: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

#define CUDA_TRY(call, comm)                                 \
  do {                                                       \
    const cudaError_t e_ = (call);                           \
    if (e_ != cudaSuccess) return cuda_fail(e_, #call, comm); \
  } while (0)

// ---- where a connection's FIFO is, as the receiver publishes it -----------------------------------

enum class FifoPlace : int32_t { kDevice = 1, kDeviceIpc = 2, kHost = 3, kHostShm = 4 };

struct CudaConnDesc {
  uint32_t published;  // set last (release): the fields below are valid
  int32_t place;       // FifoPlace
  int32_t dev;         // the receiver's device
  uint64_t ptr;        // kDevice / kHost: the FIFO's address in the receiver's process (same process)
  cudaIpcMemHandle_t ipc;  // kDeviceIpc
  char shm_name[160];  // kHostShm: the POSIX shm object holding the FIFO
};

// One launch's statuses and step records, in mapped pinned memory (the kernels write, the host reads).
struct LaunchSlot {
  BlockStatus* status = nullptr;  // kMaxLaunchBlocks
  StepRecord* records = nullptr;  // kMaxLaunchBlocks * record_capacity, when recording
  std::atomic<bool> busy{false};
  // Captured into a CUDA graph: every replay of the graph runs this launch again, so the slot (its
  // status memory) stays the graph's until the graph is destroyed (release_graph_slot).
  std::atomic<bool> in_graph{false};
  // Completed replays of a captured launch (its completion callback counts them). One graph exec runs
  // its replays one after another; two execs of one graph at once would share this slot (unsupported).
  std::atomic<uint64_t> replays{0};
  // What the completion callback reports.
  ncclComm_t comm = nullptr;
  int nblocks = 0;
  const char* fn = "";
  bool recording = false;
  const char* custom = nullptr;  // a built-in custom algorithm's name (its bad-peer report names it)
  RecordCtx rctx;
  OpDesc op;
  CollWork work;
  const char* algo = "";
  size_t total = 0;
  double launch_us = 0;
};

}  // namespace

struct CudaComm {
  int dev = 0;
  int nthreads = cuda::kDefaultThreads;
  int* abort_host = nullptr;  // mapped pinned
  int* abort_dev = nullptr;
  ConnInfo* conns_dev = nullptr;  // the device's copies of this rank's connection ends
  int nconns = 0;
  int conn_capacity = 0;
  int* views_dev = nullptr;  // channel c's ring view at views_dev + c * nranks
  // A built-in custom algorithm (CCLAB_CUSTOM_ALGOS): channel c's declared peers and their Simple
  // connection ends at custom_peers_dev + c * comm->custom_peers.size(), filled as channels connect.
  CustomPeerConn* custom_peers_dev = nullptr;
  int custom_channels = 0;  // channels whose entries are filled
  // PAT (kernels/pat.h): channel c's connection ends along every dimension at pat_dev + c, filled as
  // channels connect.
  PatConns* pat_dev = nullptr;
  int pat_channels = 0;  // channels whose entries are filled
  // Set-up copies (zeroed FIFOs, connection tables), each waited for before anything uses it: the
  // synchronous cudaMemset and cudaMemcpy run on the legacy default stream and may still be in flight
  // when they return, and the kernels run on non-blocking streams that do not wait for it.
  cudaStream_t setup = nullptr;
  // The communicator's launches in the order they were made, whatever streams they are on: each kernel
  // reads its connections' steps at start and writes them back at the end, so two of them running at
  // once would share FIFO slots. A launch on another stream than the last one waits for its event.
  // Eager launches and captured ones keep separate orders: inside a stream capture the event becomes a
  // dependency between the capture's streams (cudaStreamGetCaptureInfo's id tells captures apart), so
  // the graph runs the communicator's kernels one after another as eager launches do.
  struct LaunchOrder {
    cudaEvent_t done = nullptr;     // recorded after the last launch
    cudaStream_t stream = nullptr;  // its stream
    unsigned long long capture = 0;  // its capture (0: eager)
    bool any = false;               // a launch happened (the legacy stream is null too)
  };
  LaunchOrder eager, captured;
  // Joins the streams of a group's sends and receives (recorded on one, waited for on another).
  cudaEvent_t join = nullptr;
  uint64_t record_capacity = 0;  // step records per block per launch (CCLAB_TRACE)
  double clock_offset_us = 0;    // host now_us() - %globaltimer (us)
  std::mutex mu;
  std::deque<std::shared_ptr<LaunchSlot>> slots;  // shared: a graph holding a slot may outlive the communicator
  ~CudaComm();
};

namespace {

void free_slot_memory(LaunchSlot* s) {
  if (s->status) cudaFreeHost(s->status);
  if (s->records) cudaFreeHost(s->records);
  s->status = nullptr;
  s->records = nullptr;
}

// A free launch slot (or a new one); nullptr with the error reported.
std::shared_ptr<LaunchSlot> take_slot(ncclComm_t comm) {
  CudaComm& cc = *comm->cuda_state;
  std::lock_guard<std::mutex> lk(cc.mu);
  for (auto& s : cc.slots) {
    bool expected = false;
    if (s->busy.compare_exchange_strong(expected, true)) return s;
  }
  auto s = std::make_shared<LaunchSlot>();
  cudaError_t e = cudaHostAlloc(reinterpret_cast<void**>(&s->status), sizeof(BlockStatus) * cuda::kMaxLaunchBlocks,
                                cudaHostAllocMapped | cudaHostAllocPortable);
  if (e == cudaSuccess && cc.record_capacity > 0)
    e = cudaHostAlloc(reinterpret_cast<void**>(&s->records),
                      sizeof(StepRecord) * cc.record_capacity * cuda::kMaxLaunchBlocks,
                      cudaHostAllocMapped | cudaHostAllocPortable);
  if (e != cudaSuccess) {
    free_slot_memory(s.get());
    cuda_fail(e, "cudaHostAlloc (kernel status)", comm);
    return nullptr;
  }
  s->busy = true;
  cc.slots.push_back(s);
  return s;
}

// NCCL_NTHREADS: threads per channel block, whole warps from 64 to 640.
bool nthreads_valid(int64_t nt) { return nt >= 64 && nt <= 640 && nt % 32 == 0; }

template <typename T>
T* device_view(T* host) {
  void* d = nullptr;
  return cudaHostGetDevicePointer(&d, host, 0) == cudaSuccess ? static_cast<T*>(d) : nullptr;
}

// NCCL_P2P_LEVEL: the furthest path (by NCCL's path types) over which GPUs write each other's memory.
bool p2p_allowed(ncclComm_t comm, int peer) {
  if (param_int("NCCL_P2P_DISABLE", 0)) return false;
  const std::string level = param_str("NCCL_P2P_LEVEL", nullptr);
  if (level.empty()) return true;
  PathType max_type;
  if (!path_type_from_name(level.c_str(), &max_type)) max_type = static_cast<PathType>(atoi(level.c_str()));
  if (comm->rank_node.empty() || comm->rank_dev.empty()) return true;
  const int a = comm->topo.gpu_node(comm->rank_node[comm->rank], comm->rank_dev[comm->rank]);
  const int b = comm->topo.gpu_node(comm->rank_node[peer], comm->rank_dev[peer]);
  if (a < 0 || b < 0 || a == b) return true;
  return static_cast<int>(comm->topo.path(a, b).type) <= static_cast<int>(max_type);
}

ncclResult_t add_conn_slot(ncclComm_t comm, Conn* conn) {
  CudaComm& cc = *comm->cuda_state;
  std::lock_guard<std::mutex> lk(cc.mu);
  if (cc.nconns >= cc.conn_capacity)
    return report_error(ncclInternalError, "rank %d: more than %d connections on the CUDA backend", comm->rank,
                        cc.conn_capacity);
  conn->cuda_slot = cc.nconns++;
  CUDA_TRY(cudaMemcpyAsync(cc.conns_dev + conn->cuda_slot, &conn->info, sizeof(ConnInfo), cudaMemcpyHostToDevice,
                           cc.setup), comm);
  CUDA_TRY(cudaStreamSynchronize(cc.setup), comm);
  return ncclSuccess;
}

// A FIFO in a POSIX shm segment (host memory shared between processes), registered with CUDA so this
// rank's GPU reaches it; the connection keeps the segment and the registration alive.
ncclResult_t map_shm_fifo(ncclComm_t comm, Conn* conn, const std::shared_ptr<Segment>& fifo, size_t bytes,
                          void** dptr) {
  CUDA_TRY(cudaHostRegister(fifo->base(), bytes, cudaHostRegisterMapped | cudaHostRegisterPortable), comm);
  conn->cuda_mem = std::shared_ptr<void>(fifo->base(), [fifo](void* p) { cudaHostUnregister(p); });
  *dptr = device_view(fifo->base());
  return ncclSuccess;
}

// Points the connection's view at its FIFO (device addresses) and gives it its device table slot.
ncclResult_t attach_fifo(ncclComm_t comm, Conn* conn, void* dptr, int peer, int buff_bytes) {
  conn->info.hdr = static_cast<ConnFifoHeader*>(dptr);
  conn->info.buff = static_cast<char*>(dptr) + kFifoDataOffset;
  conn->info.step_bytes = buff_bytes / kNcclSteps;
  conn->info.peer = peer;
  conn->info.step = 0;
  conn->connected = true;
  return add_conn_slot(comm, conn);
}

ConnInfo* dev_conn(ncclComm_t comm, Conn& c) {
  return c.cuda_slot >= 0 ? comm->cuda_state->conns_dev + c.cuda_slot : nullptr;
}

}  // namespace

CudaComm::~CudaComm() {
  // The communicator's streams must be idle here (ncclCommDestroy/Abort drain them).
  for (auto& s : slots) free_slot_memory(s.get());
  if (conns_dev) cudaFree(conns_dev);
  if (views_dev) cudaFree(views_dev);
  if (custom_peers_dev) cudaFree(custom_peers_dev);
  if (pat_dev) cudaFree(pat_dev);
  if (setup) cudaStreamDestroy(setup);
  for (LaunchOrder* o : {&eager, &captured})
    if (o->done) cudaEventDestroy(o->done);
  if (join) cudaEventDestroy(join);
  if (abort_host) cudaFreeHost(abort_host);
}

namespace {
// The built-in custom algorithms as the runtime's CustomAlgo (name, source, supports, peers), checked once.
struct BuiltinAlgos {
  std::vector<CustomAlgoDesc> descs;
  std::vector<CustomAlgo> algos;
  std::string error;
};
const BuiltinAlgos& builtin_algos() {
  static const BuiltinAlgos b = [] {
    BuiltinAlgos x;
    const int n = cuda::custom_kernel_count();
    x.descs.reserve(static_cast<size_t>(n));  // algos point into it
    for (int i = 0; i < n && x.error.empty(); ++i) {
      const cuda::CustomKernel* k = cuda::custom_kernel(i);
      x.descs.push_back(CustomAlgoDesc{kCustomAlgoAbi, sizeof(CollWork), sizeof(ConnInfo), sizeof(ExecVTable),
                                       sizeof(WaitSite), sizeof(StepRecord), k->name, k->supports, k->peers, {}});
      std::string why;
      if (!custom_algo_name_ok(k->name, x.algos, &why))
        x.error = std::string("CCLAB_CUSTOM_ALGOS: ") + k->source + ": " + why;
      x.algos.push_back(CustomAlgo{k->name, k->source, &x.descs.back(), i});
    }
    return x;
  }();
  return b;
}
}  // namespace

const CustomAlgo* cuda_builtin_custom_algo(const std::string& name, std::string* error) {
  const BuiltinAlgos& b = builtin_algos();
  for (const CustomAlgo& a : b.algos)
    if (strcasecmp(a.name.c_str(), name.c_str()) == 0) {
      if (!b.error.empty()) {
        *error = b.error;
        return nullptr;
      }
      return &a;
    }
  return nullptr;
}

std::string cuda_builtin_custom_algo_names() {
  std::string s;
  for (const CustomAlgo& a : builtin_algos().algos) s += (s.empty() ? "" : ", ") + a.name;
  return s;
}

bool cuda_available(std::string* why) {
  static std::once_flag once;
  static int count = 0;
  static std::string reason;
  std::call_once(once, [] {
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
      reason = std::string("no usable CUDA device: ") + cudaGetErrorString(e);
      count = 0;
    } else if (count == 0) {
      reason = "no CUDA device is present";
    }
  });
  if (count == 0 && why) *why = reason;
  return count > 0;
}

ncclResult_t cuda_current_device(int* dev) {
  CUDA_TRY(cudaGetDevice(dev), nullptr);
  return ncclSuccess;
}

ncclResult_t cuda_device_pci(int dev, int64_t* busid, int* sm) {
  char id[32] = {0};
  int major = 0, minor = 0;
  CUDA_TRY(cudaDeviceGetPCIBusId(id, sizeof id, dev), nullptr);
  CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev), nullptr);
  CUDA_TRY(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev), nullptr);
  if (!parse_pci_busid(id, busid))
    return report_error(ncclSystemError, "cudaDeviceGetPCIBusId(%d) gave \"%s\", not a PCI bus id", dev, id);
  *sm = major * 10 + minor;
  return ncclSuccess;
}

ncclResult_t cuda_attach(ncclComm_t comm) {
  auto cc = std::make_shared<CudaComm>();
  cc->dev = comm->dev;
  comm->cuda_state = cc;
  CUDA_TRY(cudaSetDevice(cc->dev), comm);
  const int64_t nt = param_int("NCCL_NTHREADS", cuda::kDefaultThreads);
  if (!nthreads_valid(nt))
    return report_error(ncclInvalidArgument, "NCCL_NTHREADS=%lld is invalid: use a multiple of 32 from 64 to 640",
                        static_cast<long long>(nt));
  cc->nthreads = static_cast<int>(nt);
  CUDA_TRY(cudaStreamCreateWithFlags(&cc->setup, cudaStreamNonBlocking), comm);
  CUDA_TRY(cudaEventCreateWithFlags(&cc->eager.done, cudaEventDisableTiming), comm);
  CUDA_TRY(cudaEventCreateWithFlags(&cc->captured.done, cudaEventDisableTiming), comm);
  CUDA_TRY(cudaEventCreateWithFlags(&cc->join, cudaEventDisableTiming), comm);
  CUDA_TRY(cudaHostAlloc(reinterpret_cast<void**>(&cc->abort_host), sizeof(int),
                         cudaHostAllocMapped | cudaHostAllocPortable), comm);
  *cc->abort_host = 0;
  cc->abort_dev = device_view(cc->abort_host);
  // Ring and tree ends: per channel up to 2 ring + 2*3 tree peers, 3 protocols, 2 directions. PAT's: per
  // channel rank +- 2^d for every dimension, Simple, 2 directions. Point-to-point: a launch's parts
  // (cuda_p2p_channels) use at most 32 ends, or 2 per peer where there are more than 16 peers. A
  // built-in custom algorithm's declared peers on every channel, Simple, both directions.
  const bool custom = comm->custom_algo != nullptr && comm->custom_algo->builtin >= 0;
  const size_t npeers = custom ? comm->custom_peers.size() : 0;
  const int ndims = comm->nranks > 1 ? pat_dims(comm->nranks) : 0;
  cc->conn_capacity = comm->nchannels * 8 * kNumProtocols * 2 + comm->nchannels * 4 * ndims +
                      2 * std::max(comm->nranks, cuda::kMaxLaunchBlocks) + 64 +
                      comm->nchannels * 2 * static_cast<int>(npeers);
  CUDA_TRY(cudaMalloc(reinterpret_cast<void**>(&cc->conns_dev), sizeof(ConnInfo) * cc->conn_capacity), comm);
  if (npeers > 0)
    CUDA_TRY(cudaMalloc(reinterpret_cast<void**>(&cc->custom_peers_dev),
                        sizeof(CustomPeerConn) * npeers * static_cast<size_t>(comm->nchannels)), comm);
  if (ndims > 0)
    CUDA_TRY(cudaMalloc(reinterpret_cast<void**>(&cc->pat_dev), sizeof(PatConns) * static_cast<size_t>(comm->nchannels)),
             comm);
  std::vector<int> views;
  for (const Channel& ch : comm->channels) views.insert(views.end(), ch.view.begin(), ch.view.end());
  CUDA_TRY(cudaMalloc(reinterpret_cast<void**>(&cc->views_dev), sizeof(int) * std::max<size_t>(1, views.size())), comm);
  if (!views.empty()) {
    CUDA_TRY(cudaMemcpyAsync(cc->views_dev, views.data(), sizeof(int) * views.size(), cudaMemcpyHostToDevice,
                             cc->setup), comm);
    CUDA_TRY(cudaStreamSynchronize(cc->setup), comm);
  }
  if (comm->recording || recorder() != nullptr) {
    cc->record_capacity = static_cast<uint64_t>(param_int("CCLAB_TRACE_GPU_STEPS", 1 << 16));
    uint64_t gpu_ns = 0;
    const double t0 = now_us();
    const int e = cuda::read_gpu_clock(&gpu_ns);
    const double t1 = now_us();
    if (e != 0) return cuda_fail(static_cast<cudaError_t>(e), "reading %globaltimer", comm);
    cc->clock_offset_us = (t0 + t1) / 2 - static_cast<double>(gpu_ns) * 1e-3;
  }
  CCLAB_INFO(kLogInit, "rank %d runs on CUDA device %d: %d threads per channel block", comm->rank, cc->dev,
             cc->nthreads);
  return ncclSuccess;
}

ncclResult_t cuda_connect_recv(ncclComm_t comm, Conn* conn, TransportKind rendezvous, const std::string& name, int peer,
                               int buff_bytes) {
  CudaComm& cc = *comm->cuda_state;
  CUDA_TRY(cudaSetDevice(cc.dev), comm);
  const size_t bytes = fifo_total_bytes(static_cast<size_t>(buff_bytes));
  const bool same_proc = comm->peers[peer].proc_hash == comm->peers[comm->rank].proc_hash;
  bool p2p = p2p_allowed(comm, peer);
  // The sender's GPU as this process numbers it: its own device in this process; for another process,
  // its bus id looked up here (-1 when this process does not see it: then the model decides alone).
  // CUDA then says whether it reaches this GPU's memory (a CUDA IPC mapping would fail where it cannot).
  int sender_dev = same_proc ? comm->peers[peer].dev : -1;
  if (!same_proc && comm->peers[peer].gpu_busid >= 0 && comm->peers[peer].gpu_busid != comm->peers[comm->rank].gpu_busid &&
      cudaDeviceGetByPCIBusId(&sender_dev, pci_busid_string(comm->peers[peer].gpu_busid).c_str()) != cudaSuccess) {
    (void)cudaGetLastError();
    sender_dev = -1;
  }
  if (p2p && sender_dev >= 0 && sender_dev != cc.dev) {
    int can = 0;
    if (cudaDeviceCanAccessPeer(&can, sender_dev, cc.dev) != cudaSuccess) can = 0;
    p2p = can != 0;
  }
  CudaConnDesc desc{};
  desc.dev = cc.dev;
  void* dptr = nullptr;
  if (p2p) {
    CUDA_TRY(cudaMalloc(&dptr, bytes), comm);
    const int dev = cc.dev;
    conn->cuda_mem = std::shared_ptr<void>(dptr, [dev](void* p) {
      cudaSetDevice(dev);
      cudaFree(p);
    });
    // Zeroed before the FIFO is published: the sender's kernel may write it as soon as it is.
    CUDA_TRY(cudaMemsetAsync(dptr, 0, bytes, cc.setup), comm);
    CUDA_TRY(cudaStreamSynchronize(cc.setup), comm);
    desc.place = static_cast<int32_t>(same_proc ? FifoPlace::kDevice : FifoPlace::kDeviceIpc);
    desc.ptr = reinterpret_cast<uint64_t>(dptr);
    if (!same_proc) CUDA_TRY(cudaIpcGetMemHandle(&desc.ipc, dptr), comm);
  } else if (same_proc) {
    void* host = nullptr;
    CUDA_TRY(cudaHostAlloc(&host, bytes, cudaHostAllocMapped | cudaHostAllocPortable), comm);
    conn->cuda_mem = std::shared_ptr<void>(host, [](void* p) { cudaFreeHost(p); });
    std::memset(host, 0, bytes);
    dptr = device_view(host);
    desc.place = static_cast<int32_t>(FifoPlace::kHost);
    desc.ptr = reinterpret_cast<uint64_t>(host);
  } else {
    if (param_int("NCCL_SHM_DISABLE", 0))
      return report_error(ncclInvalidUsage,
                          "no transport from rank %d to rank %d: GPU peer access is off (NCCL_P2P_DISABLE, "
                          "NCCL_P2P_LEVEL, or GPUs that cannot reach each other) and NCCL_SHM_DISABLE=1",
                          peer, comm->rank);
    std::shared_ptr<Segment> fifo;
    const std::string fifo_name = name + "-cufifo";
    ncclResult_t r = segment_create(TransportKind::kShm, fifo_name, bytes, &fifo);
    if (r != ncclSuccess) return r;
    std::memset(fifo->base(), 0, bytes);
    r = map_shm_fifo(comm, conn, fifo, bytes, &dptr);
    if (r != ncclSuccess) return r;
    desc.place = static_cast<int32_t>(FifoPlace::kHostShm);
    std::snprintf(desc.shm_name, sizeof(desc.shm_name), "%s", fifo_name.c_str());
  }
  if (dptr == nullptr) return report_error(ncclUnhandledCudaError, "rank %d: no device address for a FIFO", comm->rank);
  ncclResult_t r = segment_create(rendezvous, name + "-cu", kFifoDataOffset + sizeof(CudaConnDesc), &conn->seg);
  if (r != ncclSuccess) return r;
  auto* pub = reinterpret_cast<CudaConnDesc*>(static_cast<char*>(conn->seg->base()) + kFifoDataOffset);
  std::memcpy(reinterpret_cast<char*>(pub) + sizeof(uint32_t), reinterpret_cast<const char*>(&desc) + sizeof(uint32_t),
              sizeof(desc) - sizeof(uint32_t));
  __atomic_store_n(&pub->published, 1u, __ATOMIC_RELEASE);
  return attach_fifo(comm, conn, dptr, peer, buff_bytes);
}

ncclResult_t cuda_connect_send(ncclComm_t comm, Conn* conn, TransportKind rendezvous, const std::string& name, int peer,
                               int buff_bytes, double timeout_s) {
  CudaComm& cc = *comm->cuda_state;
  CUDA_TRY(cudaSetDevice(cc.dev), comm);
  const size_t bytes = fifo_total_bytes(static_cast<size_t>(buff_bytes));
  ncclResult_t r = segment_open(rendezvous, name + "-cu", kFifoDataOffset + sizeof(CudaConnDesc), &comm->abort_flag,
                                timeout_s, &conn->seg);
  if (r != ncclSuccess) return r;
  auto* pub = reinterpret_cast<CudaConnDesc*>(static_cast<char*>(conn->seg->base()) + kFifoDataOffset);
  const auto t0 = std::chrono::steady_clock::now();
  while (__atomic_load_n(&pub->published, __ATOMIC_ACQUIRE) == 0) {
    if (comm->abort_flag.load()) return report_error(ncclInternalError, "aborted while connecting");
    if (std::chrono::steady_clock::now() - t0 > std::chrono::duration<double>(timeout_s))
      return report_error(ncclSystemError, "rank %d never published where its FIFO is", peer);
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  CudaConnDesc desc;
  std::memcpy(&desc, pub, sizeof(desc));
  void* dptr = nullptr;
  switch (static_cast<FifoPlace>(desc.place)) {
    case FifoPlace::kDevice:
      dptr = reinterpret_cast<void*>(desc.ptr);
      if (desc.dev != cc.dev) {
        const cudaError_t e = cudaDeviceEnablePeerAccess(desc.dev, 0);
        if (e == cudaErrorPeerAccessAlreadyEnabled)
          (void)cudaGetLastError();
        else if (e != cudaSuccess)
          return cuda_fail(e, "cudaDeviceEnablePeerAccess", comm);
      }
      break;
    case FifoPlace::kDeviceIpc: {
      const cudaError_t e = cudaIpcOpenMemHandle(&dptr, desc.ipc, cudaIpcMemLazyEnablePeerAccess);
      if (e != cudaSuccess)
        return report_error(ncclUnhandledCudaError,
                            "rank %d cannot map rank %d's FIFO (CUDA IPC): %s; NCCL_P2P_DISABLE=1 uses host memory "
                            "instead",
                            comm->rank, peer, cudaGetErrorString(e));
      conn->cuda_mem = std::shared_ptr<void>(dptr, [](void* p) { cudaIpcCloseMemHandle(p); });
      break;
    }
    case FifoPlace::kHost:
      dptr = device_view(reinterpret_cast<void*>(desc.ptr));
      break;
    case FifoPlace::kHostShm: {
      std::shared_ptr<Segment> fifo;
      r = segment_open(TransportKind::kShm, desc.shm_name, bytes, &comm->abort_flag, timeout_s, &fifo);
      if (r != ncclSuccess) return r;
      r = map_shm_fifo(comm, conn, fifo, bytes, &dptr);
      if (r != ncclSuccess) return r;
      break;
    }
    default:
      return report_error(ncclInternalError, "rank %d published an unknown FIFO placement %d", peer, desc.place);
  }
  if (dptr == nullptr) return report_error(ncclUnhandledCudaError, "rank %d: no device address for rank %d's FIFO",
                                           comm->rank, peer);
  return attach_fifo(comm, conn, dptr, peer, buff_bytes);
}

namespace {

// Runs on the stream once the launch has finished: reports what the kernels said, hands the step records
// to the recorder, frees the slot. (No CUDA call is allowed here.)
void CUDART_CB launch_done(void* data) {
  auto* s = static_cast<LaunchSlot*>(data);
  ncclComm_t comm = s->comm;
  for (int b = 0; b < s->nblocks; ++b) {
    const BlockStatus& st = s->status[b];
    if (st.state == kBlockSizeMismatch) {
      set_async_error(comm, ncclInvalidUsage,
                      std::string(s->fn) + ": rank " + std::to_string(st.rank) + " channel " +
                          std::to_string(st.channel) + " received " + std::to_string(st.got) +
                          " bytes from rank " + std::to_string(st.peer) + " at step " + std::to_string(st.step) +
                          " where it expected " + std::to_string(st.expected) +
                          " (the ranks called the operation with different counts or datatypes)");
    } else if (st.state == kBlockBadPeer) {
      char msg[160];
      custom_bad_peer_message(msg, sizeof msg,
                              WaitSite{st.rank, st.channel, st.peer, st.step, st.for_data != 0, PrimKind::kSend},
                              comm->nranks);
      set_async_error(comm, ncclInvalidUsage,
                      std::string(s->fn) + " (algorithm " + (s->custom ? s->custom : "?") + "): " + msg);
    } else if (st.state == kBlockAborted && !comm->abort_flag.load()) {
      set_async_error(comm, ncclInternalError,
                      std::string(s->fn) + ": block " + std::to_string(b) + " of the launch aborted");
    }
  }
  if (s->recording) {
    // A captured launch runs once per replay of its graph, and each replay is a collective of its own in
    // the trace: numbered op_count + replay x 2^32 (replays 1, 2, ...), the same on every rank, since
    // every rank replays its graphs in the same order.
    const bool replay = s->in_graph.load();
    const uint64_t op = replay ? replay_op_count(s->work.op_count, s->replays.fetch_add(1) + 1) : s->work.op_count;
    const double off = comm->cuda_state->clock_offset_us;
    double first = 0, last = 0;
    for (int b = 0; b < s->nblocks; ++b) {
      const uint64_t n = std::min<uint64_t>(s->status[b].records, comm->cuda_state->record_capacity);
      for (uint64_t i = 0; i < n; ++i) {
        StepRecord r = s->records[b * comm->cuda_state->record_capacity + i];
        r.begin_us += off;
        r.end_us += off;
        r.data_us += off;
        r.op_count = op;
        if (first == 0 || r.begin_us < first) first = r.begin_us;
        last = std::max(last, r.end_us);
        recorder_step(r, &s->rctx);
      }
    }
    if (first == 0) first = last = replay ? now_us() : s->launch_us;
    recorder_op(comm, op, s->op.coll, s->algo, proto_name_of(s->work.proto), s->op.type, s->op.op,
                s->op.root, s->op.count, s->total, s->work.nchannels, first, last);
  }
  if (!s->in_graph.load()) s->busy.store(false);
}

// The destructor of a captured launch's user object: the graph (every copy of it) is gone, so the slot
// is free again. A CUDA-internal thread calls it; no CUDA call is allowed here.
void CUDART_CB release_graph_slot(void* data) {
  auto* holder = static_cast<std::shared_ptr<LaunchSlot>*>(data);
  (*holder)->in_graph.store(false);
  (*holder)->busy.store(false);
  delete holder;
}

// The graph `stream` is capturing into (and the capture's id), or null (and id 0) when it is not capturing.
cudaGraph_t capturing_graph(cudaStream_t stream, unsigned long long* id = nullptr) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cudaGraph_t graph = nullptr;
  unsigned long long cid = 0;
  if (cudaStreamGetCaptureInfo(stream, &status, &cid, &graph) != cudaSuccess) {
    (void)cudaGetLastError();
    return nullptr;
  }
  const bool active = status == cudaStreamCaptureStatusActive;
  if (id) *id = active ? cid : 0;
  return active ? graph : nullptr;
}

// custom: a built-in custom algorithm's kernels (kernels/cuda/launch.h: custom_kernel) instead of cclab's.
ncclResult_t launch_slot(ncclComm_t comm, const std::shared_ptr<LaunchSlot>& owned, cuda::LaunchArgs& args,
                         cudaStream_t stream, const cuda::CustomKernel* custom = nullptr) {
  CudaComm& cc = *comm->cuda_state;
  LaunchSlot* slot = owned.get();
  for (int b = 0; b < args.nblocks; ++b) {
    slot->status[b] = BlockStatus{};
    args.works[b].status = device_view(slot->status + b);
    if (slot->recording && slot->records) {
      args.works[b].records = device_view(slot->records + b * cc.record_capacity);
      args.works[b].record_capacity = cc.record_capacity;
    }
  }
  args.abort_flag = cc.abort_dev;
  slot->nblocks = args.nblocks;
  slot->launch_us = now_us();
  // Under stream capture the kernel and its completion callback become graph nodes, replayed with the
  // same arguments: the slot's status memory must stay put until the graph is destroyed. A user object
  // owned by the graph frees the slot then.
  unsigned long long capture = 0;
  const cudaGraph_t graph = capturing_graph(stream, &capture);
  if (graph != nullptr) {
    cudaUserObject_t obj = nullptr;
    auto* holder = new std::shared_ptr<LaunchSlot>(owned);
    cudaError_t eg = cudaUserObjectCreate(&obj, holder, release_graph_slot, 1, cudaUserObjectNoDestructorSync);
    if (eg != cudaSuccess) {
      delete holder;
      slot->busy = false;
      return cuda_fail(eg, "cudaUserObjectCreate (a launch captured into a CUDA graph)", comm);
    }
    slot->in_graph = true;
    slot->replays.store(0);
    eg = cudaGraphRetainUserObject(graph, obj, 1, cudaGraphUserObjectMove);
    if (eg != cudaSuccess) {
      cudaUserObjectRelease(obj, 1);  // runs release_graph_slot
      return cuda_fail(eg, "cudaGraphRetainUserObject", comm);
    }
  }
  // Eager launches of one communicator run one after another, and so do the launches captured into one
  // graph (CudaComm::LaunchOrder). Replaying a graph beside other launches of the communicator is, as
  // with NCCL, the caller's to order.
  CudaComm::LaunchOrder& order = graph != nullptr ? cc.captured : cc.eager;
  if (order.any && order.capture == capture && order.stream != stream) {
    const cudaError_t ew = cudaStreamWaitEvent(stream, order.done, 0);
    if (ew != cudaSuccess) {
      if (graph == nullptr) slot->busy = false;
      return cuda_fail(ew, "cudaStreamWaitEvent (after the communicator's previous launch)", comm);
    }
  }
  const int e = custom != nullptr ? custom->launch(args, cc.nthreads, stream) : cuda::launch(args, cc.nthreads, stream);
  if (e != 0) {
    if (graph == nullptr) slot->busy = false;  // a captured slot is freed with its graph
    return cuda_fail(static_cast<cudaError_t>(e), "launching cclab's kernel", comm);
  }
  const cudaError_t e2 = cudaLaunchHostFunc(stream, launch_done, slot);
  if (e2 != cudaSuccess) return cuda_fail(e2, "cudaLaunchHostFunc", comm);
  CUDA_TRY(cudaEventRecord(order.done, stream), comm);
  order = CudaComm::LaunchOrder{order.done, stream, capture, true};
  return ncclSuccess;
}

// A user buffer the kernels will touch, as the address they use: device memory (this rank's GPU, or
// another GPU this one reaches - peer access is enabled for it, as a program sharing buffers between
// GPUs would; that covers cudaMalloc memory, while a cudaMallocAsync pool or cuMem allocation of the
// other GPU needs the program's own cudaMemPoolSetAccess / cuMemSetAccess), managed memory, or host
// memory registered or allocated for CUDA, by its device address on this rank's GPU (the same as the
// host pointer on most systems, not on all). Anything else is refused with a message naming the
// buffer: unregistered host memory, memory of a GPU this one cannot reach, host memory not mapped for
// the device. NCCL leaves the last two to fault in the kernel. Leaves comm->dev current.
ncclResult_t device_buffer(ncclComm_t comm, const void* p, const char* fn, const char* what, const void** dev) {
  *dev = p;
  if (p == nullptr) return ncclSuccess;
  CUDA_TRY(cudaSetDevice(comm->dev), comm);  // devicePointer is the address on the current device
  cudaPointerAttributes a;
  const cudaError_t e = cudaPointerGetAttributes(&a, p);
  if (e != cudaSuccess || a.type == cudaMemoryTypeUnregistered) {
    (void)cudaGetLastError();
    return report_error(ncclInvalidArgument,
                        "%s: %s %p is not GPU memory (allocate it with cudaMalloc or ncclMemAlloc, or register it "
                        "with cudaHostRegister) - rank %d runs on CUDA device %d",
                        fn, what, p, comm->rank, comm->dev);
  }
  if (a.type == cudaMemoryTypeHost) {
    if (a.devicePointer == nullptr)
      return report_error(ncclInvalidArgument,
                          "%s: %s %p is host memory that is not mapped for CUDA device %d (rank %d): register it "
                          "with cudaHostRegisterMapped or allocate it with cudaHostAllocMapped",
                          fn, what, p, comm->dev, comm->rank);
    *dev = a.devicePointer;
  } else if (a.type == cudaMemoryTypeDevice && a.device != comm->dev) {
    int can = 0;
    if (cudaDeviceCanAccessPeer(&can, comm->dev, a.device) != cudaSuccess) {
      (void)cudaGetLastError();
      can = 0;
    }
    if (!can)
      return report_error(ncclInvalidArgument,
                          "%s: %s %p is memory of CUDA device %d, which rank %d's device %d cannot reach (no peer "
                          "access between them); use a buffer on device %d",
                          fn, what, p, a.device, comm->rank, comm->dev, comm->dev);
    const cudaError_t pe = cudaDeviceEnablePeerAccess(a.device, 0);
    (void)cudaGetLastError();
    if (pe != cudaSuccess && pe != cudaErrorPeerAccessAlreadyEnabled)
      return cuda_fail(pe, "cudaDeviceEnablePeerAccess for a user buffer", comm);
  }
  return ncclSuccess;
}

// Every operation's buffers as the kernels' addresses (device_buffer), before anything is launched.
ncclResult_t device_buffers(std::vector<OpDesc>& ops) {
  for (OpDesc& o : ops) {
    const bool send = o.kind != OpDesc::Kind::kRecv, recv = o.kind != OpDesc::Kind::kSend;
    const void* d = nullptr;
    if (send) {
      ncclResult_t r = device_buffer(o.comm, o.send, o.fn, "sendbuff", &d);
      if (r != ncclSuccess) return r;
      o.send = d;
    }
    if (recv) {
      ncclResult_t r = device_buffer(o.comm, o.recv, o.fn, "recvbuff", &d);
      if (r != ncclSuccess) return r;
      o.recv = const_cast<void*>(d);
    }
  }
  return ncclSuccess;
}

bool single_rank_copy(ncclComm_t comm, const OpDesc& op);

// What a collective runs, chosen (and its channels connected) before anything of the group is launched.
struct PreparedColl {
  CollWork w;
  AlgoKind algo = AlgoKind::kRing;
  size_t total = 0;
};

// A built-in custom algorithm's peer tables (CudaComm::custom_peers_dev) of channels [filled, nchannels),
// once ensure_connected has connected them: each declared peer's Simple connection ends as the kernels
// address them.
ncclResult_t fill_custom_peers(ncclComm_t comm, int nchannels) {
  CudaComm& cc = *comm->cuda_state;
  const size_t np = comm->custom_peers.size();
  if (cc.custom_channels >= nchannels || np == 0 || cc.custom_peers_dev == nullptr) return ncclSuccess;
  std::vector<CustomPeerConn> t;
  for (int c = cc.custom_channels; c < nchannels; ++c)
    for (int q : comm->custom_peers) {
      PeerConns& pc = comm->channels[c].peers[q];
      const CustomPeerConn e{q, dev_conn(comm, pc.send[kProtoSimple]), dev_conn(comm, pc.recv[kProtoSimple])};
      if (e.send == nullptr || e.recv == nullptr)
        return report_error(ncclInternalError, "rank %d channel %d: algorithm %s's connections to rank %d are not made",
                            comm->rank, c, comm->custom_algo->name.c_str(), q);
      t.push_back(e);
    }
  CUDA_TRY(cudaMemcpyAsync(cc.custom_peers_dev + static_cast<size_t>(cc.custom_channels) * np, t.data(),
                           sizeof(CustomPeerConn) * t.size(), cudaMemcpyHostToDevice, cc.setup), comm);
  CUDA_TRY(cudaStreamSynchronize(cc.setup), comm);
  cc.custom_channels = nchannels;
  return ncclSuccess;
}

// PAT's connection tables (CudaComm::pat_dev) of channels [filled, nchannels), once ensure_connected has
// connected them: channel c's ends with rank +- 2^d as the kernels address them (kernels/pat.h PatConns;
// the host backend builds the same table from its own ends).
ncclResult_t fill_pat_conns(ncclComm_t comm, int nchannels, int proto) {
  CudaComm& cc = *comm->cuda_state;
  if (cc.pat_channels >= nchannels || cc.pat_dev == nullptr) return ncclSuccess;
  std::vector<PatConns> t;
  for (int c = cc.pat_channels; c < nchannels; ++c) {
    PatConns pc;
    pc.ndims = pat_dims(comm->nranks);
    for (int d = 0; d < pc.ndims; ++d) {
      PeerConns& down = comm->channels[c].peers[pat_peer(comm->rank, comm->nranks, d, false)];
      PeerConns& up = comm->channels[c].peers[pat_peer(comm->rank, comm->nranks, d, true)];
      pc.send_down[d] = dev_conn(comm, down.send[proto]);
      pc.recv_down[d] = dev_conn(comm, down.recv[proto]);
      pc.send_up[d] = dev_conn(comm, up.send[proto]);
      pc.recv_up[d] = dev_conn(comm, up.recv[proto]);
      if (!pc.send_down[d] || !pc.recv_down[d] || !pc.send_up[d] || !pc.recv_up[d])
        return report_error(ncclInternalError, "rank %d channel %d: PAT's connections of dimension %d are not made",
                            comm->rank, c, d);
    }
    t.push_back(pc);
  }
  CUDA_TRY(cudaMemcpyAsync(cc.pat_dev + cc.pat_channels, t.data(), sizeof(PatConns) * t.size(), cudaMemcpyHostToDevice,
                           cc.setup), comm);
  CUDA_TRY(cudaStreamSynchronize(cc.setup), comm);
  cc.pat_channels = nchannels;
  return ncclSuccess;
}

ncclResult_t prepare_launch(ncclComm_t comm, const OpDesc& op, PreparedColl* p) {
  ncclResult_t r = prepare_collective(comm, op, &p->w, &p->algo, &p->total);
  if (r != ncclSuccess) return r;
  if (p->w.nchannels > cuda::kMaxLaunchBlocks)
    return report_error(ncclInvalidUsage, "%s: %d channels; the CUDA backend launches at most %d", op.fn,
                        p->w.nchannels, cuda::kMaxLaunchBlocks);
  if (single_rank_copy(comm, op)) return ncclSuccess;
  if (p->algo == AlgoKind::kCustom) return fill_custom_peers(comm, p->w.nchannels);
  if (p->algo == AlgoKind::kPat) return fill_pat_conns(comm, p->w.nchannels, p->w.proto);
  return ncclSuccess;
}

// One rank: every collective leaves the input in the output (a user PreMulSum scales it; ncclAvg over
// one rank is the identity), so, as NCCL does, a copy on the stream - or nothing in place - instead of
// a kernel and its status report. Measured on an H200 with nccl-tests -g 1 (docs/gpu.md): 8 B
// all_reduce 41 us through the kernel, 4.5 us for NCCL's copy. Traced runs keep the kernel (its steps
// and timing are what the trace records).
bool single_rank_copy(ncclComm_t comm, const OpDesc& op) {
  return comm->nranks == 1 && !comm->recording && static_cast<int>(op.op) < ncclNumOps;
}

ncclResult_t launch_collective(ncclComm_t comm, const OpDesc& op, const PreparedColl& p) {
  if (single_rank_copy(comm, op)) {
    const size_t bytes = op.count * type_size(op.type);
    CUDA_TRY(cudaSetDevice(comm->cuda_state->dev), comm);
    if (bytes > 0 && op.recv != op.send)
      CUDA_TRY(cudaMemcpyAsync(op.recv, op.send, bytes, cudaMemcpyDefault, op.stream), comm);
    return ncclSuccess;
  }
  const CollWork& w = p.w;
  const AlgoKind algo = p.algo;
  const size_t total = p.total;
  CudaComm& cc = *comm->cuda_state;
  CUDA_TRY(cudaSetDevice(cc.dev), comm);
  const std::shared_ptr<LaunchSlot> slot = take_slot(comm);
  if (slot == nullptr) return ncclUnhandledCudaError;
  slot->comm = comm;
  slot->fn = op.fn;
  slot->recording = comm->recording && slot->records != nullptr;
  slot->rctx = RecordCtx{recorder(), w.proto};
  slot->op = op;
  slot->work = w;
  const bool custom = algo == AlgoKind::kCustom;
  slot->algo = custom ? comm->custom_algo->name.c_str() : algo_name(algo);
  slot->custom = custom ? comm->custom_algo->name.c_str() : nullptr;
  slot->total = total;
  const cuda::CustomKernel* kernel = custom ? cuda::custom_kernel(comm->custom_algo->builtin) : nullptr;
  if (custom && kernel == nullptr)
    return report_error(ncclInternalError, "%s: custom algorithm %s has no kernels", op.fn, comm->custom_algo->name.c_str());
  auto args = std::make_unique<cuda::LaunchArgs>();
  *args = cuda::LaunchArgs{};
  args->nblocks = w.nchannels;
  args->type = static_cast<int32_t>(op.type);
  for (int c = 0; c < w.nchannels; ++c) {
    Channel& ch = comm->channels[c];
    BlockWork& b = args->works[c];
    b.channel = c;
    b.coll = w;
    if (custom) {
      const size_t np = comm->custom_peers.size();
      b.kind = kBlockCustom;
      b.custom_peers = cc.custom_peers_dev + static_cast<size_t>(c) * np;
      b.custom_npeers = static_cast<int32_t>(np);
      b.custom_topo = comm->custom_topo;
    } else if (algo == AlgoKind::kPat) {
      b.kind = kBlockPat;
      b.pat = cc.pat_dev + c;
    } else if (algo == AlgoKind::kTree) {
      b.kind = kBlockTree;
      b.tree = ch.tree;
      if (ch.tree.up >= 0) {
        b.conn[0] = dev_conn(comm, ch.peers[ch.tree.up].recv[w.proto]);
        b.conn[1] = dev_conn(comm, ch.peers[ch.tree.up].send[w.proto]);
      }
      for (int i = 0; i < ch.tree.ndown; ++i) {
        b.conn[2 + i] = dev_conn(comm, ch.peers[ch.tree.down[i]].recv[w.proto]);
        b.conn[5 + i] = dev_conn(comm, ch.peers[ch.tree.down[i]].send[w.proto]);
      }
    } else {
      b.kind = kBlockRing;
      b.ring_ranks = cc.views_dev + static_cast<size_t>(c) * comm->nranks;
      if (comm->nranks > 1) {
        b.conn[0] = dev_conn(comm, ch.prev().recv[w.proto]);
        b.conn[1] = dev_conn(comm, ch.next().send[w.proto]);
      }
    }
  }
  return launch_slot(comm, slot, *args, op.stream, kernel);
}

// The point-to-point channels a CUDA launch uses: NCCL's split of a send into parts on several channels
// (kernels/p2p.h p2p_nparts, as the host backend and the simulator run it), with no more parts per peer
// than one launch (and, for ranks sharing a GPU, the rank's share of it) holds for every peer both ways
// (graph/p2p_channels.h p2p_channels_for_launch).
P2pChannels cuda_p2p_channels(ncclComm_t comm) {
  // Ranks sharing a GPU hold at most channel_cap blocks each (every rank's blocks must be resident at
  // once; the same cap on every rank, so both ends still cut alike).
  const int blocks = comm->channel_cap > 0 ? std::min(cuda::kMaxLaunchBlocks, comm->channel_cap) : cuda::kMaxLaunchBlocks;
  return p2p_channels_for_launch(comm->p2p, comm->nranks, blocks);
}

// Connects part `part` of a send or receive with o.peer on the channel both ends compute from the round
// of their schedule that pairs them (kernels/p2p.h p2p_channel_for_part, as the host backend places it).
ncclResult_t connect_part(ncclComm_t comm, const P2pChannels& pc, const OpDesc& o, int part, int* channel, Conn** c) {
  const bool send = o.kind == OpDesc::Kind::kSend;
  *channel = p2p_channel_for_part(pc, send ? comm->p2p_sched.send_round[o.peer] : comm->p2p_sched.recv_round[o.peer], part);
  return send ? p2p_connect_send(comm, o.peer, c, *channel) : p2p_connect_recv(comm, o.peer, c, *channel);
}

// Calls f(beg, end, channel, conn) for each part of a send or receive: its bytes [beg, end), its channel
// and connection (connect_part). A trailing part that 4 KiB rounding leaves empty is skipped (by both
// ends).
template <typename F>
ncclResult_t for_each_part(ncclComm_t comm, const P2pChannels& pc, const OpDesc& o, F&& f) {
  const size_t bytes = o.count * type_size(o.type);
  const int nparts = p2p_nparts(pc, comm->nranks, bytes);
  for (int part = 0; part < nparts; ++part) {
    size_t beg = 0, end = 0;
    p2p_part_bounds(nparts, part, bytes, &beg, &end);
    if (end == beg && part > 0) continue;
    int channel = 0;
    Conn* c = nullptr;
    ncclResult_t r = connect_part(comm, pc, o, part, &channel, &c);
    if (r == ncclSuccess) r = f(beg, end, channel, c);
    if (r != ncclSuccess) return r;
  }
  return ncclSuccess;
}

// Connects every channel a group's sends and receives of one communicator may use: parts 0 .. per_peer
// - 1 with each peer, whatever the sizes, so that a send and a receive of different sizes (different
// part counts) still meet on part 0's channel, where the receiver's size check stops them, instead of
// one end waiting to connect a channel the other never opens. The receiving ends first (they create
// the FIFOs), then the sending ends (which wait for the peer's receiving end), so ranks connecting at
// the same time never wait on each other in a cycle.
ncclResult_t connect_p2p(ncclComm_t comm, const std::vector<const OpDesc*>& ops) {
  const P2pChannels pc = cuda_p2p_channels(comm);
  for (int pass = 0; pass < 2; ++pass)
    for (const OpDesc* o : ops) {
      if (o->peer == comm->rank || (o->kind == OpDesc::Kind::kSend) != (pass == 1)) continue;
      for (int part = 0; part < pc.per_peer; ++part) {
        int channel = 0;
        Conn* c = nullptr;
        const ncclResult_t r = connect_part(comm, pc, *o, part, &channel, &c);
        if (r != ncclSuccess) return r;
      }
    }
  return ncclSuccess;
}

// A group's sends and receives of one communicator: the k-th send to each peer and the k-th receive from
// each peer go in launch k, so every rank's launch k holds the matching halves and all of them progress
// at once (no round can wait on a later one). Each is cut into parts as NCCL cuts it (cuda_p2p_channels),
// one block per part, part j of a transfer between ranks a and b on the channel both sides compute from
// their distance (kernels/p2p.h p2p_channel_for_part, as the host backend places it).
ncclResult_t launch_p2p(ncclComm_t comm, const std::vector<const OpDesc*>& ops) {
  CudaComm& cc = *comm->cuda_state;
  CUDA_TRY(cudaSetDevice(cc.dev), comm);
  const int me = comm->rank;
  std::map<std::pair<int, int>, std::vector<const OpDesc*>> by_peer;  // (peer, send?) -> ops in order
  std::vector<const OpDesc*> self_send, self_recv;
  for (const OpDesc* o : ops) {
    if (o->peer == me)
      (o->kind == OpDesc::Kind::kSend ? self_send : self_recv).push_back(o);
    else
      by_peer[{o->peer, o->kind == OpDesc::Kind::kSend ? 1 : 0}].push_back(o);
  }
  if (self_send.size() != self_recv.size())
    return report_error(ncclInvalidUsage, "rank %d: %zu sends to itself but %zu receives from itself in one group", me,
                        self_send.size(), self_recv.size());
  // The group runs on its first operation's stream. That stream first waits for the work queued before
  // on the group's other streams (which may produce a buffer sent here), and at the end those streams
  // wait for the group. Events join them as well inside a stream capture, where they add the graph's
  // dependencies between the capture's streams.
  cudaStream_t stream = ops.front()->stream;
  std::set<cudaStream_t> others;
  for (const OpDesc* o : ops)
    if (o->stream != stream) others.insert(o->stream);
  // Joining an uncaptured stream with a captured one would pull it into the capture (or fail), and two
  // captures cannot be joined: the streams must all be uncaptured or all in one capture, as NCCL asks.
  unsigned long long capture = 0;
  const bool captured = capturing_graph(stream, &capture) != nullptr;
  for (cudaStream_t o : others) {
    unsigned long long id = 0;
    const bool c = capturing_graph(o, &id) != nullptr;
    if (c != captured || (c && id != capture))
      return report_error(ncclInvalidUsage,
                          "rank %d: a group's sends and receives are on streams of which %s; they must all be "
                          "uncaptured or all captured by the same graph",
                          me, c != captured ? "some are being captured and some are not" : "two are in different captures");
  }
  for (cudaStream_t o : others) {
    CUDA_TRY(cudaEventRecord(cc.join, o), comm);
    CUDA_TRY(cudaStreamWaitEvent(stream, cc.join, 0), comm);
  }
  for (size_t i = 0; i < self_send.size(); ++i) {
    const size_t sb = self_send[i]->count * type_size(self_send[i]->type);
    const size_t rb = self_recv[i]->count * type_size(self_recv[i]->type);
    if (sb != rb)
      return report_error(ncclInvalidUsage, "rank %d sends %zu bytes to itself but receives %zu", me, sb, rb);
    if (sb) CUDA_TRY(cudaMemcpyAsync(self_recv[i]->recv, self_send[i]->send, sb, cudaMemcpyDefault, stream), comm);
  }
  const uint64_t op_count = comm->op_count++;
  const P2pChannels pc = cuda_p2p_channels(comm);
  for (size_t round = 0;; ++round) {
    auto args = std::make_unique<cuda::LaunchArgs>();
    *args = cuda::LaunchArgs{};
    args->type = ncclUint8;
    for (auto& kv : by_peer) {
      if (round >= kv.second.size()) continue;
      const OpDesc* o = kv.second[round];
      const bool send = kv.first.second == 1;
      const ncclResult_t r = for_each_part(comm, pc, *o, [&](size_t beg, size_t end, int channel, Conn* c) {
        if (args->nblocks == cuda::kMaxLaunchBlocks)
          return report_error(ncclInvalidUsage,
                              "rank %d: one group's sends and receives need more than the %d blocks a launch carries "
                              "(a block per peer and direction: at most %d peers both ways)",
                              me, cuda::kMaxLaunchBlocks, cuda::kMaxLaunchBlocks / 2);
        BlockWork& b = args->works[args->nblocks++];
        b.kind = send ? kBlockP2pSend : kBlockP2pRecv;
        b.channel = channel;
        char* base = send ? static_cast<char*>(const_cast<void*>(o->send)) : static_cast<char*>(o->recv);
        b.p2p = P2pWork{base + beg, end - beg, o->peer, me, op_count};
        b.p2p.chunk = pc.chunk_bytes;
        b.p2p.total = o->count * type_size(o->type);
        b.conn[send ? 1 : 0] = dev_conn(comm, *c);
        return ncclSuccess;
      });
      if (r != ncclSuccess) return r;
    }
    if (args->nblocks == 0) break;
    const std::shared_ptr<LaunchSlot> slot = take_slot(comm);
    if (slot == nullptr) return ncclUnhandledCudaError;
    slot->comm = comm;
    slot->fn = "ncclSend/ncclRecv";
    slot->recording = false;
    slot->custom = nullptr;
    ncclResult_t r = launch_slot(comm, slot, *args, stream);
    if (r != ncclSuccess) return r;
  }
  // Synchronising any stream of the group means its sends and receives are done.
  if (!others.empty()) {
    CUDA_TRY(cudaEventRecord(cc.join, stream), comm);
    for (cudaStream_t o : others) CUDA_TRY(cudaStreamWaitEvent(o, cc.join, 0), comm);
  }
  return ncclSuccess;
}

}  // namespace

namespace {
// Restores the calling thread's current device when a launch (which sets each rank's) returns.
struct DeviceGuard {
  int dev = -1;
  DeviceGuard() {
    if (cudaGetDevice(&dev) != cudaSuccess) dev = -1;
  }
  ~DeviceGuard() {
    if (dev >= 0) cudaSetDevice(dev);
  }
};
}  // namespace

// While a stream is being captured in the global (default) mode, CUDA refuses calls it deems unsafe
// from this thread - cudaMalloc, synchronous copies, stream synchronisation - which connecting a
// channel on first use makes (on the communicator's own streams, outside the graph). Relaxed for the
// duration of a launch, as NCCL does around its own.
namespace {
struct RelaxedCapture {
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  RelaxedCapture() { (void)cudaThreadExchangeStreamCaptureMode(&mode); }
  ~RelaxedCapture() { (void)cudaThreadExchangeStreamCaptureMode(&mode); }
};
}  // namespace

ncclResult_t cuda_launch(std::vector<OpDesc>& ops) {
  DeviceGuard guard;
  RelaxedCapture relaxed;
  // Two ranks of one clique on one device with one stream would run their kernels one after the other,
  // and each waits for the other: refuse that instead of hanging.
  std::map<std::tuple<std::string, int, cudaStream_t>, int> seen;
  for (const OpDesc& o : ops) {
    auto key = std::make_tuple(o.comm->id_hash, o.comm->dev, o.stream);
    auto it = seen.find(key);
    if (it != seen.end() && it->second != o.comm->rank)
      return report_error(ncclInvalidUsage,
                          "%s: ranks %d and %d of one communicator run on CUDA device %d with the same stream; their "
                          "kernels would wait for each other - give each rank its own stream",
                          o.fn, it->second, o.comm->rank, o.comm->dev);
    seen[key] = o.comm->rank;
  }
  const ncclResult_t rb = device_buffers(ops);
  if (rb != ncclSuccess) return rb;
  std::vector<ncclComm_t> order, comms;
  std::map<ncclComm_t, std::vector<const OpDesc*>> p2p;
  for (const OpDesc& o : ops) {
    if (std::find(comms.begin(), comms.end(), o.comm) == comms.end()) comms.push_back(o.comm);
    if (o.kind != OpDesc::Kind::kColl) {
      if (!p2p.count(o.comm)) order.push_back(o.comm);
      p2p[o.comm].push_back(&o);
    }
  }
  // First every operation's choice and connections, then the launches. Channels connect on first use,
  // and a sending end waits for its peer's receiving end: when one thread drives several ranks (one
  // per communicator, as nccl-tests -g N does), those ranks connect at once, on a thread each.
  std::vector<PreparedColl> prepared(ops.size());
  auto prepare = [&](ncclComm_t c, std::string* error) {
    RelaxedCapture relaxed_here;
    for (size_t i = 0; i < ops.size(); ++i) {
      if (ops[i].comm != c || ops[i].kind != OpDesc::Kind::kColl) continue;
      const ncclResult_t r = prepare_launch(c, ops[i], &prepared[i]);
      if (r != ncclSuccess) {
        if (error) *error = last_error();
        return r;
      }
    }
    const auto it = p2p.find(c);
    const ncclResult_t r = it == p2p.end() ? ncclSuccess : connect_p2p(c, it->second);
    if (r != ncclSuccess && error) *error = last_error();
    return r;
  };
  if (comms.size() == 1) {
    const ncclResult_t r = prepare(comms[0], nullptr);
    if (r != ncclSuccess) return r;
  } else {
    std::vector<ncclResult_t> res(comms.size(), ncclSuccess);
    std::vector<std::string> errors(comms.size());
    std::vector<std::thread> threads;
    for (size_t k = 0; k < comms.size(); ++k)
      threads.emplace_back([&, k] { res[k] = prepare(comms[k], &errors[k]); });
    for (auto& t : threads) t.join();
    for (size_t k = 0; k < comms.size(); ++k)
      if (res[k] != ncclSuccess) return report_error(res[k], "%s", errors[k].c_str());
  }
  for (size_t i = 0; i < ops.size(); ++i) {
    if (ops[i].kind != OpDesc::Kind::kColl) continue;
    const ncclResult_t r = launch_collective(ops[i].comm, ops[i], prepared[i]);
    if (r != ncclSuccess) return r;
  }
  for (ncclComm_t c : order) {
    const ncclResult_t r = launch_p2p(c, p2p[c]);
    if (r != ncclSuccess) return r;
  }
  return ncclSuccess;
}

void cuda_abort(ncclComm_t comm) {
  if (comm->cuda_state && comm->cuda_state->abort_host)
    __atomic_store_n(comm->cuda_state->abort_host, 1, __ATOMIC_RELEASE);
}

void cuda_detach(ncclComm_t comm) {
  if (!comm->cuda_state) return;
  CudaComm& cc = *comm->cuda_state;
  const auto t0 = std::chrono::steady_clock::now();
  int warned = 0;
  for (;;) {
    bool busy = false;
    {
      std::lock_guard<std::mutex> lk(cc.mu);
      for (auto& s : cc.slots) busy = busy || (s->busy.load() && !s->in_graph.load());
    }
    if (!busy) break;
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (waited > 10.0 * (warned + 1)) {
      ++warned;
      CCLAB_WARN("rank %d: destroying the communicator waits for kernels still running on device %d (%.0f s); "
                 "ncclCommAbort stops them",
                 comm->rank, cc.dev, waited);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  cudaSetDevice(cc.dev);
  comm->cuda_state.reset();
}

ncclResult_t cuda_mem_alloc(void** ptr, size_t bytes) {
  CUDA_TRY(cudaMalloc(ptr, bytes), nullptr);
  return ncclSuccess;
}

ncclResult_t cuda_mem_free(void* ptr) {
  CUDA_TRY(cudaFree(ptr), nullptr);
  return ncclSuccess;
}

ncclResult_t cuda_stream(CudaStreamOp op, cudaStream_t* s) {
  switch (op) {
    case CudaStreamOp::kCreate: CUDA_TRY(cudaStreamCreateWithFlags(s, cudaStreamNonBlocking), nullptr); break;
    case CudaStreamOp::kSynchronize: CUDA_TRY(cudaStreamSynchronize(*s), nullptr); break;
    case CudaStreamOp::kQuery: {
      const cudaError_t e = cudaStreamQuery(*s);
      if (e == cudaErrorNotReady) return ncclInProgress;
      CUDA_TRY(e, nullptr);
      break;
    }
    case CudaStreamOp::kDestroy: CUDA_TRY(cudaStreamDestroy(*s), nullptr); break;
  }
  return ncclSuccess;
}

ncclResult_t cuda_stream_wait(cudaStream_t waiter, cudaStream_t waitee) {
  cudaEvent_t ev;
  CUDA_TRY(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), nullptr);
  cudaError_t e = cudaEventRecord(ev, waitee);
  if (e == cudaSuccess) e = cudaStreamWaitEvent(waiter, ev, 0);
  cudaEventDestroy(ev);
  CUDA_TRY(e, nullptr);
  return ncclSuccess;
}

ncclResult_t cuda_set_device(int dev) {
  CUDA_TRY(cudaSetDevice(dev), nullptr);
  return ncclSuccess;
}

bool cuda_ll128_safe(std::string* why) {
  if (param_int("NCCL_P2P_DISABLE", 0)) {
    *why = "NCCL_P2P_DISABLE=1 puts the FIFOs in host memory";
    return false;
  }
  if (!param_str("NCCL_P2P_LEVEL", nullptr).empty()) {
    *why = "NCCL_P2P_LEVEL may put FIFOs in host memory";
    return false;
  }
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) n = 0;
  for (int a = 0; a < n; ++a)
    for (int b = 0; b < n; ++b) {
      int can = 0;
      if (a != b && (cudaDeviceCanAccessPeer(&can, a, b) != cudaSuccess || can == 0)) {
        *why = "GPU " + std::to_string(a) + " has no peer access to GPU " + std::to_string(b) +
               " (their FIFOs would be in host memory)";
        return false;
      }
    }
  return true;
}

ncclResult_t cuda_device_count(int* count) {
  CUDA_TRY(cudaGetDeviceCount(count), nullptr);
  return ncclSuccess;
}

ncclResult_t cuda_device_name(int dev, std::string* name, std::string* pci_bus_id) {
  int count = 0;
  CUDA_TRY(cudaGetDeviceCount(&count), nullptr);
  if (dev >= count)
    return report_error(ncclInvalidArgument, "cclabGetDeviceName: device %d does not exist (%d CUDA devices: 0..%d)",
                        dev, count, count - 1);
  cudaDeviceProp prop;
  CUDA_TRY(cudaGetDeviceProperties(&prop, dev), nullptr);
  char bus[32] = {};
  CUDA_TRY(cudaDeviceGetPCIBusId(bus, sizeof(bus), dev), nullptr);
  *name = prop.name;
  *pci_bus_id = bus;
  return ncclSuccess;
}

ncclResult_t cuda_resident_blocks(int dev, int* blocks) {
  int64_t nt = param_int("NCCL_NTHREADS", cuda::kDefaultThreads);
  if (!nthreads_valid(nt)) nt = cuda::kDefaultThreads;  // cuda_attach refuses it with a message
  DeviceGuard guard;
  CUDA_TRY(cudaSetDevice(dev), nullptr);
  const int e = cuda::resident_blocks(static_cast<int>(nt), blocks);
  if (e != 0) return cuda_fail(static_cast<cudaError_t>(e), "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
  return ncclSuccess;
}

ncclResult_t cuda_read(void* dst, const void* src, size_t bytes) {
  CUDA_TRY(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault), nullptr);
  // From pageable host memory cudaMemcpy may return before the DMA has landed; cclabMemcpy promises a
  // finished copy, and the collectives run on non-blocking streams. Waiting for the legacy default stream
  // (the copy's) is enough; a device-wide sync could wait for another rank's kernel on this GPU.
  CUDA_TRY(cudaStreamSynchronize(nullptr), nullptr);
  return ncclSuccess;
}

}  // namespace cclab
