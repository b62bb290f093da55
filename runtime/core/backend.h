// runtime/core/backend.h - where a communicator's work runs. The core (API, communicators, groups,
// connections) reaches a backend only through this interface:
//
//   host  backends/host/   CPU threads play the GPUs' thread blocks (always built)
//   cuda  backends/cuda/   cclab's kernels on GPUs (built when CUDA is; chosen when a GPU is present)
//   sim   sim/backend/     the simulated fabric: a plugin (libcclab-sim.so, SimGrid) loaded on first use
//                          (CCLAB_BACKEND=sim), so the runtime loads on machines without SimGrid
//
// One instance per backend and process, made on first use (backends/backends.cc). A communicator keeps
// the one it was created under (ncclComm::backend); process-wide calls (streams, memory, devices) go
// to the backend new communicators use (current_backend()).
#pragma once

#include <string>
#include <vector>

#include "cclab/cclab.h"
#include "transport/transport.h"

namespace cclab {

struct OpDesc;      // core/enqueue.h
struct Conn;        // core/comm.h
struct CustomAlgo;  // graph/custom_algo.h

// The version of this interface and of what it hands over (ncclComm, OpDesc): a plugin built from other
// sources refuses to load (cclab_sim_backend_create returns nullptr).
constexpr int kBackendAbi = 2;

class Backend {
 public:
  virtual ~Backend() = default;
  virtual cclabBackend_t kind() const = 0;

  // ---- communicators ----
  // At init, before anything is exchanged: the device a rank created by ncclCommInitRank* plays
  // (CUDA: the calling thread's current device); *dev holds the default (its rank's index).
  virtual ncclResult_t init_device(int* dev) { return ncclSuccess; }
  // What this rank tells its peers about its device: PCI bus id (NCCL's packed form) and compute
  // capability x10, from which topology detection starts (-1 and 0: no real device).
  virtual ncclResult_t device_pci(int dev, int64_t* busid, int* sm) {
    *busid = -1;
    *sm = 0;
    return ncclSuccess;
  }
  // How many thread blocks of cclab's kernels device `dev` runs at once (bounds the channels of
  // ranks sharing a GPU); 0 when there is no such bound.
  virtual ncclResult_t resident_blocks(int dev, int* blocks) {
    *blocks = 0;
    return ncclSuccess;
  }
  // The machine a communicator models when neither CCLAB_TOPO nor NCCL_TOPO_FILE names one, and the
  // channel bounds it runs within: the simulator answers with the machine its world simulates (a preset
  // spec "PRESET:MACHINES" in *preset, or an XML path in *xml) and NCCL_MIN/MAX_NCHANNELS as the world
  // applies them (0: unset), so that the communicator's topology, channels, tuner and logs are the
  // simulation's. devs[r]: the device rank r plays. False: the runtime's own default.
  virtual bool model(const std::vector<int>& devs, std::string* preset, std::string* xml, int* min_channels,
                     int* max_channels) {
    return false;
  }
  // Custom algorithms (docs/custom-algorithms.md). Whether the backend runs those of CCLAB_ALGO_PLUGIN's
  // shared objects (the CUDA backend cannot: a GPU does not call into a host shared object), and the ones
  // compiled into it (the CUDA backend's CCLAB_CUSTOM_ALGOS): the one named `name` (case-insensitive) or
  // nullptr, *error set when the built-in set itself is wrong (a name taken twice); their names, "" for none.
  virtual bool runs_custom_plugins() const { return true; }
  virtual const CustomAlgo* builtin_custom_algo(const std::string& name, std::string* error) { return nullptr; }
  virtual std::string builtin_custom_algo_names() { return ""; }
  // Whether LL128's 128-byte lines reach every peer whole (false with *why: LL128 is left out).
  virtual bool ll128_safe(std::string* why) { return true; }
  // After the topology, rings and trees are set up: the backend's state for `comm`.
  virtual ncclResult_t attach(ncclComm_t comm) = 0;
  // Before `comm` is freed: waits until its work is done and releases the backend's state.
  virtual void detach(ncclComm_t comm) = 0;
  // ncclCommInitAll hands its communicators to the calling thread, which drives them from now on.
  virtual void claim(ncclComm_t comm) {}
  // ncclCommAbort / ncclCommRevoke: stop the communicator's running work.
  virtual void abort(ncclComm_t comm) {}

  // ---- connections ----
  // True when the backend makes the FIFOs' memory itself (connect_recv / connect_send below); false:
  // the host transports' segments (transport/) are the FIFOs.
  virtual bool makes_connections() const { return false; }
  // `rendezvous` is the transport the ranks agreed on; `name` names the connection for both ends.
  virtual ncclResult_t connect_recv(ncclComm_t comm, Conn* conn, TransportKind rendezvous, const std::string& name,
                                    int peer, int buff_bytes);
  virtual ncclResult_t connect_send(ncclComm_t comm, Conn* conn, TransportKind rendezvous, const std::string& name,
                                    int peer, int buff_bytes, double timeout_s);

  // ---- work ----
  // Runs or queues a group's operations, all of communicators of this backend (the NULL stream's
  // before it returns).
  virtual ncclResult_t launch(std::vector<OpDesc>& ops) = 0;

  // ---- streams, memory and devices (cclab/cclab.h, ncclMemAlloc) ----
  // The defaults are the host's: host streams (core/stream.h) and host memory.
  virtual ncclResult_t stream_create(cudaStream_t* s);
  virtual ncclResult_t stream_synchronize(cudaStream_t s);
  virtual ncclResult_t stream_query(cudaStream_t s);
  virtual ncclResult_t stream_destroy(cudaStream_t s);
  virtual ncclResult_t stream_wait(cudaStream_t waiter, cudaStream_t waitee);
  virtual ncclResult_t mem_alloc(void** ptr, size_t bytes);
  virtual ncclResult_t mem_free(void* ptr);
  // cclabMemcpy: copies `bytes` that may be in device memory to host memory.
  virtual ncclResult_t copy_to_host(void* dst, const void* src, size_t bytes);
  virtual ncclResult_t set_device(int dev) { return ncclSuccess; }
  virtual ncclResult_t device_count(int* count) {
    *count = 0;
    return ncclSuccess;
  }
  virtual ncclResult_t device_name(int dev, std::string* name, std::string* pci_bus_id);

  // ---- simulated time (cclabSimKernel, cclabSimTime); only the simulator has it ----
  virtual ncclResult_t sim_kernel(cudaStream_t stream, int rank, double flops, double seconds) { return ncclSuccess; }
  virtual ncclResult_t sim_time(double* us);
  // The calling thread waits for other threads (init, split, destroy): a backend that runs the
  // process's ranks in lockstep (the simulator) must not wait for it meanwhile.
  virtual void idle_begin() {}
  virtual void idle_end() {}
};

// The backend of kind `b`, made on first use; nullptr with *why when it cannot run here (CUDA not built
// or no GPU; the simulator's plugin not found or not loadable).
Backend* backend_get(cclabBackend_t b, std::string* why);
// The backend of kind `b` if this process has made it already, else nullptr (never loads anything).
Backend* backend_if_made(cclabBackend_t b);
// The backend new communicators use (cclabSetBackend, or CCLAB_BACKEND; a present GPU means cuda).
cclabBackend_t current_backend();
// cclabSetBackend: fails, naming why, when `b` cannot run here.
ncclResult_t set_current_backend(cclabBackend_t b);
// current_backend()'s instance; falls back to the host backend (with a warning) when it cannot run.
Backend& current();

// While one lives, the calling thread is inside a call that waits for other threads (init, split,
// destroy): every backend made in this process is told (Backend::idle_begin / idle_end).
class IdleScope {
 public:
  IdleScope();
  ~IdleScope();
  IdleScope(const IdleScope&) = delete;
  IdleScope& operator=(const IdleScope&) = delete;

 private:
  Backend* told_ = nullptr;
};

}  // namespace cclab
