// runtime/src/comm.h - the communicator (struct ncclComm) and its connections.
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
#include "host_exec.h"
#include "kernels/fifo.h"
#include "kernels/work.h"
#include "lanes.h"
#include "stream.h"
#include "transport.h"

namespace cclab {

// What every rank tells every other rank at init (all-gathered over the bootstrap).
struct PeerInfo {
  uint64_t host_hash;  // same host <=> same value
  uint64_t proc_hash;  // same process <=> same value
  int pid;
  int dev;             // the "device" index this rank plays in its process
};

// One end of one connection, with the memory that keeps it alive.
struct Conn {
  ConnInfo info;
  std::shared_ptr<Segment> seg;
  TransportKind kind = TransportKind::kP2p;
  bool connected = false;
};

struct Channel {
  std::vector<int> ring;  // ring order starting at rank 0 (same list on every rank)
  std::vector<int> view;  // ring order starting at this rank (RingView::ranks)
  Conn recv[kNumProtocols];  // from ring prev, one FIFO per protocol (LL, LL128, Simple) as NCCL
  Conn send[kNumProtocols];  // to ring next
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
  int buff_bytes = 4 << 20;  // NCCL_BUFFSIZE, Simple FIFO bytes per connection
  int proto_buff_bytes[cclab::kNumProtocols] = {0, 0, 0};  // per protocol: NCCL_LL_BUFFSIZE, NCCL_LL128_BUFFSIZE, NCCL_BUFFSIZE
  // proto_enabled[coll][proto]: NCCL_PROTO as agreed by every rank (coll = CollKind 0..4). LL and
  // LL128 are on only where NCCL_PROTO sets that collective's protocols (until the tuner chooses).
  bool proto_enabled[5][cclab::kNumProtocols] = {};
  size_t ll_threshold = 16 << 10;  // CCLAB_LL_THRESHOLD: largest collective (bytes per rank) sent with LL
  size_t min_channel_bytes = 64 << 10;  // CCLAB_MIN_CHANNEL_BYTES: smallest share of a collective per channel
  std::vector<cclab::Channel> channels;
  std::map<int, cclab::Conn> p2p_send, p2p_recv;  // by peer (lazily connected)
  std::atomic<int> abort_flag{0};
  std::atomic<int> async_error{ncclSuccess};
  std::atomic<int> init_state{ncclSuccess};  // ncclInProgress while a non-blocking init runs
  std::mutex error_mu;
  std::string async_message;
  uint64_t op_count = 0;
  cclabObserverFn observer = nullptr;
  void* observer_data = nullptr;
  cclab::HostExecConfig exec_cfg;
  std::unique_ptr<cclab::LanePool> lanes;
  std::unique_ptr<cclab::HostStream> internal_stream;  // runs NULL-stream work of multi-comm groups
  std::vector<cclab::DynRedOp> redops;
  std::thread init_thread;  // non-blocking init
  std::atomic<int> inflight{0};  // plans queued or running
  bool finalized = false;
  int shrink_count = 0;  // ncclCommShrink calls on this communicator (tags their bootstrap messages)
  double timeout_s = 0;
};

namespace cclab {

constexpr uint64_t kCommMagic = 0x63636c6162636f6dull;  // "cclabcom"

// Checks that `comm` is a live communicator (not destroyed, not garbage); names `fn` in the error.
ncclResult_t check_comm(ncclComm_t comm, const char* fn);
// ... and that its (possibly non-blocking) init has finished successfully.
ncclResult_t check_comm_ready(ncclComm_t comm, const char* fn);

// Records an asynchronous error (first one wins) and its message.
void set_async_error(ncclComm_t comm, ncclResult_t r, const std::string& msg);

// Connects point-to-point connections with `peer` if not done yet (both directions lazily).
ncclResult_t p2p_connect_send(ncclComm_t comm, int peer, Conn** out);
ncclResult_t p2p_connect_recv(ncclComm_t comm, int peer, Conn** out);

}  // namespace cclab
