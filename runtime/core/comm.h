// runtime/core/comm.h - the communicator (struct ncclComm) and its connections.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.h"
#include "cclab/cclab.h"
#include "core/backend.h"
#include "kernels/p2p.h"
#include "core/stream.h"
#include "graph/algo_proto.h"
#include "graph/custom_algo.h"
#include "graph/detect.h"
#include "graph/p2p_channels.h"
#include "graph/search.h"
#include "graph/topo.h"
#include "graph/tuning.h"
#include "kernels/fifo.h"
#include "kernels/nvls.h"
#include "kernels/trees.h"
#include "kernels/work.h"
#include "transport/transport.h"

namespace cclab {

struct CudaComm;  // backends/cuda/cuda_backend.cc
struct HostComm;  // backends/host/host_backend.cc
class Doctor;     // core/doctor.cc

// What every rank tells every other rank at init (all-gathered over the bootstrap).
struct PeerInfo {
  uint64_t host_hash;  // same host <=> same value
  uint64_t proc_hash;  // same process <=> same value
  int pid;
  int dev;             // the "device" index this rank plays in its process
  int64_t gpu_busid;   // CUDA backend: the PCI bus id of its GPU (NCCL's packed form); -1 otherwise
  int gpu_sm;          // CUDA backend: that GPU's compute capability x10; 0 otherwise
  int cpus;            // CPUs its process may run on (sched_getaffinity): the host model's cores
  uint64_t nonce;      // differs between communicators made from one unique id: rank 0's names its board
  SocketAddress board_addr;  // host backend: where its process serves this host's boards (core/doctor.h); port 0: none
};

// One end of one connection, with the memory that keeps it alive.
struct Conn {
  ConnInfo info;
  std::shared_ptr<Segment> seg;
  std::shared_ptr<void> cuda_mem;  // CUDA backend: the FIFO's device or mapped memory (cuda_backend.cc)
  int cuda_slot = -1;              // CUDA backend: this end's ConnInfo in the communicator's device table
  TransportKind kind = TransportKind::kP2p;
  bool connected = false;
};

// This rank's connections with one peer on one channel: one FIFO per protocol (LL, LL128, Simple)
// and direction, as NCCL's channel->peers[peer]->send/recv[connIndex]. The ring and the tree of a
// channel share them when they talk to the same peer.
struct PeerConns {
  Conn recv[kNumProtocols];  // data from the peer
  Conn send[kNumProtocols];  // data to the peer
};

struct Channel {
  std::vector<int> ring;  // ring order starting at rank 0 (same list on every rank)
  std::vector<int> view;  // ring order starting at this rank (RingView::ranks)
  int tree_index = 0;     // which of the double tree's two trees this channel runs (tree_of_channel)
  TreeLinks tree{};       // this rank's parent and children in that tree
  std::map<int, PeerConns> peers;  // by peer rank
  // NVLS (kernels/nvls.h): this rank's view of the channel's NVLS memory (nranks 0 until connected), its
  // own region and the other ranks' regions it mapped.
  NvlsConn nvls;
  std::vector<std::shared_ptr<Segment>> nvls_regions;
  // NVLS-Tree: this rank's parent and children (ranks: the heads of its part on other machines) in the
  // channel's tree of machines (nvls_tree_of_channel); up -1 at the root.
  TreeLinks nvls_tree{};
  PeerConns& prev() { return peers[view[view.size() - 1]]; }
  PeerConns& next() { return peers[view[view.size() > 1 ? 1 : 0]]; }
};

// Dynamic reduction op created by ncclRedOpCreatePreMulSum.
struct DynRedOp {
  bool in_use = false;
  ncclDataType_t type;
  uint64_t scalar_bits;
  ncclScalarResidence_t residence;
  const void* scalar_ptr;  // for ncclScalarDevice: read at execution
};

}  // namespace cclab

struct ncclComm {
  uint64_t magic = 0;
  int rank = -1;
  int nranks = 0;
  int dev = 0;
  std::string id_hash;      // names this communicator's connections
  ncclConfig_t config;
  std::unique_ptr<cclab::Bootstrap> bootstrap;
  std::vector<cclab::PeerInfo> peers;
  int nchannels = 1;
  int channel_lo = 1, channel_hi = 64;  // agreed NCCL_MIN/MAX_NCHANNELS (minCTAs/maxCTAs)
  int channel_cap = 0;                  // CUDA: most blocks per rank its GPU holds beside the others (0: none)
  int gpu_sharing = 1;                  // CUDA: the most ranks of this communicator on one GPU
  bool virtual_model = false;           // the topology is the plain virtual model (no machine given or detected)
  bool host_machine = false;            // host backend, no machine given: the tuner models the host (HostCosts)
  int buff_bytes = 4 << 20;  // NCCL_BUFFSIZE, Simple FIFO bytes per connection
  int proto_buff_bytes[cclab::kNumProtocols] = {0, 0, 0};  // per protocol: NCCL_LL_BUFFSIZE, NCCL_LL128_BUFFSIZE, NCCL_BUFFSIZE
  size_t min_channel_bytes = 64 << 10;  // CCLAB_MIN_CHANNEL_BYTES: smallest share of a collective per channel
  bool channel_rule = false;            // CCLAB_MIN_CHANNEL_BYTES was set: it picks channels, not the host model
  std::vector<cclab::Channel> channels;
  // Topology, searched graphs and cost model (identical on every rank: computed from agreed inputs).
  cclab::Topology topo;
  cclab::TopoGraph ring_graph, tree_graph, nvls_graph;
  cclab::CostModel tuner;
  // The tuner's last answer (enqueue.cc): a run of calls of one collective and size, the usual case,
  // asks the cost model once.
  std::mutex choice_mu;
  cclab::CollKind choice_coll = cclab::CollKind::kAllReduce;
  size_t choice_bytes = SIZE_MAX;
  bool choice_nvls_ok = true;
  cclab::TunerChoice choice;
  cclab::AlgoProtoEnable algo_proto;  // NCCL_ALGO / NCCL_PROTO as agreed by every rank
  int nnodes = 1;                     // machines holding ranks
  std::vector<int> rank_node;         // machine of each rank
  std::vector<int> rank_dev;          // GPU dev of each rank on its machine
  std::mutex connect_mu;              // lazily connecting channels (runtime connect)
  std::atomic<int> connected_channels[2][cclab::kNumProtocols] = {};  // [ring, tree][proto]: channels connected
  // NCCL_ALGO named a custom algorithm (graph/custom_algo.h): it, this rank's peers in it and the
  // channels connected to them (Simple).
  const cclab::CustomAlgo* custom_algo = nullptr;
  cclab::CustomTopo custom_topo{0, 0, 0};
  std::vector<int> custom_peers;
  std::atomic<int> custom_connected{0};
  std::atomic<int> pat_connected{0};  // channels connected to PAT's peers (Simple)
  // NVLS: the tuner may choose it (a modelled NVSwitch machine of sm90+, every rank on this host, the host
  // backend), its FIFO slot (NCCL_NVLS_CHUNKSIZE) and the channels whose regions are mapped.
  bool nvls_runs = false;
  int nvls_step_bytes = 128 * 1024;
  std::atomic<int> nvls_connected{0};
  // NVLS-Tree (NVLS inside each machine, trees of heads across machines): whether it runs (several
  // machines of NVLS, the host backend with every rank on this host); NVLS's multicast group (the ranks
  // of this rank's machine, its nvls_heads heads first in head order: graph/search.h nvls_groups),
  // NCCL's nvlsTreeMaxChunkSize (NCCL_NVLSTREE_MAX_CHUNKSIZE), and the channels whose tree links are connected.
  bool nvls_tree_runs = false;
  std::vector<int> nvls_group;
  int nvls_heads = 0;
  int nvls_tree_max_chunk = 0;
  std::atomic<int> nvls_tree_connected{0};
  // Point-to-point: NCCL 2.28.9's p2p channels for this communicator (graph/p2p_channels.h; every rank
  // the same), and the connections by (p2p channel, peer), lazily connected; p2p_mu guards the maps.
  cclab::P2pChannels p2p;
  cclab::P2pSchedule p2p_sched;  // this rank's rounds: whom it sends to and receives from in each
  std::mutex p2p_mu;
  std::map<std::pair<int, int>, cclab::Conn> p2p_send, p2p_recv;
  std::atomic<int> abort_flag{0};
  // Its NET connections are closed for good: one broke (the peer was lost; that raised abort_flag too),
  // or ncclCommShrink(NCCL_SHRINK_ABORT) closed them. New work is refused with stop_message.
  std::atomic<bool> stopped{false};
  ncclResult_t stop_code = ncclSuccess;  // under error_mu: what new work is refused with (as NCCL, the
  std::string stop_message;              // error that stopped it) and why
  std::atomic<int> async_error{ncclSuccess};
  std::atomic<int> init_state{ncclSuccess};  // ncclInProgress while a non-blocking init runs
  std::mutex error_mu;
  std::string async_message;
  uint64_t op_count = 0;
  cclabObserverFn observer = nullptr;
  void* observer_data = nullptr;
  std::vector<cclab::DynRedOp> redops;
  std::thread init_thread;  // non-blocking init
  std::atomic<int> inflight{0};  // plans queued or running
  bool finalized = false;
  int shrink_count = 0;  // ncclCommShrink calls on this communicator (tags their bootstrap messages)
  double timeout_s = 0;
  bool recording = false;  // CCLAB_TRACE / CCLAB_LIVE record this communicator (recorder.h)
  // The backend it was created under (core/backend.h): every launch, connection and lifecycle step of
  // the communicator goes through it. `sim` and `cuda` say what its ranks play (simulated GPUs, real
  // GPUs), which the channel count, transports and protocols depend on.
  cclab::Backend* backend = nullptr;
  bool sim = false;
  bool cuda = false;
  std::shared_ptr<cclab::HostComm> host_state;  // host backend
  std::shared_ptr<cclab::CudaComm> cuda_state;  // CUDA backend
  std::shared_ptr<cclab::Doctor> doctor;        // host backend: its status board (core/doctor.h)
};

namespace cclab {

constexpr uint64_t kCommMagic = 0x63636c6162636f6dull;  // "cclabcom"

// Checks that `comm` is a live communicator (not destroyed, not garbage); names `fn` in the error.
ncclResult_t check_comm(ncclComm_t comm, const char* fn);
// ... and that its (possibly non-blocking) init has finished successfully and it was neither aborted
// nor stopped. `stopped_ok`: a stopped communicator passes (ncclCommShrink with NCCL_SHRINK_ABORT,
// which exists to get past a lost peer).
ncclResult_t check_comm_ready(ncclComm_t comm, const char* fn, bool stopped_ok = false);

// Stops the proxies of the communicator's NET connections (all asked at once, then joined) and says
// whether it had any. With the abort flag raised they stop at once and close their sockets.
bool net_stop_all(ncclComm_t comm);

// Topology detection's GPUs for the host of `rank` (comm_topo.cc): the bus ids and compute capabilities
// of the ranks on that host, in rank order (empty when ranks carry no bus id: the host backend). Returns
// "" when detection can model the ranks, else why not: a GPU two ranks of one host share (a model GPU
// plays one rank), or some ranks with a bus id and some without. Depends on the peer table alone, so
// every rank decides the same.
std::string detection_gpus(const std::vector<PeerInfo>& peers, int rank, std::vector<DetectGpu>* gpus);

// FNV-1a over `n` bytes (continuing from `h`): ids and agreement checks between ranks.
uint64_t fnv1a(const void* data, size_t n, uint64_t h = 1469598103934665603ull);

// Marks the communicator stopped (ncclComm::stopped): from now on new work is refused with `r` and
// `why` (the first reason given wins).
void mark_stopped(ncclComm_t comm, ncclResult_t r, const std::string& why);

// Records an asynchronous error (first one wins) and its message.
void set_async_error(ncclComm_t comm, ncclResult_t r, const std::string& msg);

// A call that failed while the abort flag was up: when the flag was raised not by the user's abort but
// by a broken connection (a NET proxy records its error, then raises the flag), returns that error and
// appends its message to *msg; otherwise returns `code`.
ncclResult_t abort_cause(ncclComm_t comm, ncclResult_t code, std::string* msg);

// Connects, if not done yet, the connections algorithm `algo` (kRing / kTree) needs with protocol
// `proto` on channels [0, nchannels) (NCCL's runtime connect: on first use, by every rank at the same
// collective).
ncclResult_t ensure_connected(ncclComm_t comm, AlgoKind algo, int proto, int nchannels);

// This rank failed in an operation and stops: poisons (base/sync.h, kCounterPoison) the counters its
// peers wait on in every connection in host memory (P2P, SHM) - the tail of each send FIFO, the head of
// each receive FIFO - so that they stop too, at once, naming this rank, instead of waiting forever. NET
// connections are left alone (their proxies report a peer that stops). The communicator's connections
// stay poisoned: it must be aborted or destroyed.
void poison_connections(ncclComm_t comm);

// Connects point-to-point connections with `peer` on p2p channel `channel` if not done yet (both
// directions lazily; a part of a send runs on each of its channels: kernels/p2p.h p2p_nparts). Threads
// may connect different channels or peers at once.
ncclResult_t p2p_connect_send(ncclComm_t comm, int peer, Conn** out, int channel = 0);
ncclResult_t p2p_connect_recv(ncclComm_t comm, int peer, Conn** out, int channel = 0);

}  // namespace cclab
