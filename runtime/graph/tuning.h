// runtime/graph/tuning.h - NCCL's cost model: predicted time of every algorithm x protocol for a
// collective of a given size, the choice NCCL would make, and why.
//
// Follows NCCL 2.28.9 src/graph/tuning.cc (ncclTopoTuneModel, ncclTopoGetAlgoTime) and enqueue.cc
// (topoGetAlgoInfo): base and hardware latencies per algorithm x protocol x link type, per-channel
// bandwidth from the searched graphs, the protocol caps (llMaxBws, perChMaxRingLL128Bws,
// perChMaxTreeBws, perChMaxTreeLL128Bws), the tree correction factors, the selection rule (lowest
// time among enabled combinations) and the channel/thread trimming for small sizes. Constants are in
// tuning.cc with the NCCL table each comes from (../shared/reference/nccl-facts.md section 3).
//
// cclab runs Ring (every collective) and Tree (AllReduce); CollNet, NVLS and PAT need hardware cclab
// does not model (SHARP switches, NVLink SHARP) or are not implemented, so the model reports them as
// unavailable (time < 0) rather than inventing numbers.
#pragma once

#include <cstddef>
#include <string>

#include "graph/algo_proto.h"
#include "graph/search.h"
#include "graph/topo.h"

namespace cclab {

struct TunerInput {
  int nranks = 1;
  int nnodes = 1;                // machines
  int sm_min = 80, sm_max = 80;  // compute capability x10 over all GPUs
  CpuArch cpu_arch = CpuArch::kX86;
  CpuVendor cpu_vendor = CpuVendor::kIntel;
  const TopoGraph* ring = nullptr;  // searched graphs; nullptr = that algorithm unavailable
  const TopoGraph* tree = nullptr;
  int ring_channels = 0;         // channels the communicator really runs (<= graph nchannels x 2);
  int tree_channels = 0;         // 0 = the graph's nchannels
  AlgoProtoEnable enable;        // NCCL_ALGO / NCCL_PROTO (everything enabled by default)
  double net_overhead_us = -1;   // NCCL_NET_OVERHEAD; -1 = NCCL's default per CPU vendor
};

struct TunerChoice {
  AlgoKind algo = AlgoKind::kRing;
  ProtoKind proto = ProtoKind::kSimple;
  int nchannels = 1;             // after trimming for small sizes
  int nthreads = 512;            // per channel (a CUDA block), after trimming
  double time_us = -1;           // predicted, for the untrimmed configuration as NCCL compares them
  bool valid = false;            // false when nothing is enabled / available for this collective
};

class CostModel {
 public:
  // Fills the latency and bandwidth tables. False with *error when the input is inconsistent
  // (nranks < 1, nnodes not dividing nranks, no graph at all, ...).
  bool init(const TunerInput& in, std::string* error);

  // Latency (µs) and bandwidth (GB/s, algorithm bandwidth = bytes / time) of one combination; the
  // bandwidth is 0 when the combination is unavailable or disabled.
  double latency_us(CollKind coll, AlgoKind algo, ProtoKind proto) const;
  double bandwidth(CollKind coll, AlgoKind algo, ProtoKind proto) const;
  bool enabled(CollKind coll, AlgoKind algo, ProtoKind proto) const;

  // Predicted time of one call of `bytes` (NCCL's nBytes: count x type size for every collective
  // but AllGather/ReduceScatter, where it is the total, count x nranks x type size), -1 when
  // unavailable. num_pipe_ops as in NCCL (operations aggregated in one group).
  double time_us(CollKind coll, size_t bytes, AlgoKind algo, ProtoKind proto,
                 int num_pipe_ops = 1) const;

  // NCCL's choice: lowest time among enabled combinations, then channel/thread trimming.
  TunerChoice choose(CollKind coll, size_t bytes, int num_pipe_ops = 1) const;

  // "Tree/LL at 64 KiB: 13.0 us = latency 12.1 us (base 6.8 + 2 x (7 x 0.6 + ...)) + 0.9 us for
  // 65536 B at 72.0 GB/s; not chosen: Ring/LL 14.2 us ..." - the derivation of one prediction.
  std::string explain(CollKind coll, size_t bytes, AlgoKind algo, ProtoKind proto) const;

  // The whole table (TUNING log at init): per collective, latency/bandwidth of every combination.
  std::string describe() const;

  const TunerInput& input() const { return in_; }

 private:
  TunerInput in_;
  double lat_[kNumColls][kNumAlgos][kNumProtos] = {};
  double bw_[kNumColls][kNumAlgos][kNumProtos] = {};
  int max_threads_[kNumAlgos][kNumProtos] = {};
  bool ll128_ok_ = false;
};

}  // namespace cclab
