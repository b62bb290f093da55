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
// cclab runs Ring (every collective), Tree (AllReduce), PAT (AllGather, ReduceScatter), NVLS (AllReduce,
// AllGather, ReduceScatter on one NVSwitch machine of sm90+: kernels/nvls.h) and NVLS-Tree (AllReduce
// across NVSwitch machines: kernels/nvls_tree.h); CollNet needs hardware cclab does not model (SHARP
// switches), so the model reports it as unavailable (time < 0) rather than inventing numbers.
#pragma once

#include <cstddef>
#include <string>

#include "graph/algo_proto.h"
#include "graph/search.h"
#include "graph/topo.h"

namespace cclab {

// The host backend's own machine, modelled when no CCLAB_TOPO / NCCL_TOPO_FILE names another: CPU
// threads play the GPUs, so a step of the critical path is a hand-off between threads (a cache line, or
// a context switch when the threads outnumber the cores) and the data a copy through memory, not a trip
// over NVLink or PCIe. A call may run on 1..max_channels channels, and the model picks that count too.
// host_costs() fills it with constants measured on a reference host (docs/tuner.md, section 6).
struct HostCosts {
  int cores = 0;           // CPUs the ranks of the host share; 0 = no host model (NCCL's constants)
  int ranks_per_host = 1;  // ranks on the host: each runs a thread per channel of a call
  int max_channels = 1;    // channels the communicator connected
  double launch_us = 0;    // a call's fixed cost: API, tuner, its first channel's setup
  double channel_us = 0;   // each channel beyond the first: handing it to a lane thread and joining it
  // One primitive of the critical path (all its slices), per algorithm x protocol: every rank thread on
  // a core of its own (hop_us), or more rank threads than cores (oversub_hop_us: the peer has to be
  // scheduled first).
  double hop_us[kNumAlgos][kNumProtos] = {};
  double oversub_hop_us[kNumAlgos][kNumProtos] = {};
  double channel_gbps[kNumProtos] = {};  // payload GB/s one channel's thread moves through its data loop
};

// The host model for ranks_per_host ranks sharing `cores` CPUs, on up to max_channels channels.
HostCosts host_costs(int cores, int ranks_per_host, int max_channels);

struct TunerInput {
  int nranks = 1;
  int nnodes = 1;                // machines
  int sm_min = 80, sm_max = 80;  // compute capability x10 over all GPUs
  CpuArch cpu_arch = CpuArch::kX86;
  CpuVendor cpu_vendor = CpuVendor::kIntel;
  const TopoGraph* ring = nullptr;  // searched graphs; nullptr = that algorithm unavailable
  const TopoGraph* tree = nullptr;
  // NCCL's NVLS graph (search_nvls_graph); nullptr = no NVLS (comm->nvlsSupport 0), nvls_why says why.
  const TopoGraph* nvls = nullptr;
  std::string nvls_why;
  int nvls_channels = 0;         // NCCL's comm->nvlsChannels; 0 = nvls_default_channels
  int ring_channels = 0;         // channels the communicator really runs (<= graph nchannels x 2);
  int tree_channels = 0;         // 0 = the graph's nchannels
  AlgoProtoEnable enable;        // NCCL_ALGO / NCCL_PROTO (everything enabled by default)
  double net_overhead_us = -1;   // NCCL_NET_OVERHEAD; -1 = NCCL's default per CPU vendor
  int pat_enable = 2;            // NCCL_PAT_ENABLE: 0 off, 1 on, 2 NCCL's rule (one GPU per node)
  HostCosts host;                // host.cores > 0: the host backend's own machine (one host) instead of GPUs
};

struct TunerChoice {
  AlgoKind algo = AlgoKind::kRing;
  ProtoKind proto = ProtoKind::kSimple;
  int nchannels = 1;             // after trimming for small sizes (the host model: the fastest count)
  int nthreads = 512;            // per channel (a CUDA block), after trimming; 1 under the host model
  double time_us = -1;           // predicted, for the untrimmed configuration as NCCL compares them
  bool valid = false;            // false when nothing is enabled / available for this collective
};

// NCCL's NVLS_NCHANNELS: 16 on sm90, on sm100+ 24 on one machine (NVLS_NCHANNELS_SM100_NVL) and 32
// across machines; a config's nvlsCTAs (>0) replaces it; then clamped to [min_ctas, max_ctas] (the
// config's minCTAs/maxCTAs; <= 0: no bound) as ncclNvlsInit does.
// On sm100 across machines NCCL 2.28.9 tunes them by the slowest NIC (nic_bw GB/s, 0 = unknown) and
// the ranks per machine (ncclNvlsTreeSm100Tuning): 32 on 2 machines with >= 48 GB/s NICs, else 24 with
// 48..96 GB/s NICs or >= 96 GB/s and <= 8 ranks per machine.
int nvls_default_channels(int sm_min, int nnodes, int nvls_ctas = 0, int min_ctas = 0, int max_ctas = 0,
                          double nic_bw = 0, int ppn = 0);

// NCCL's ncclNvlsSupported: the multimem reductions exist for sum, min and max on (u)int32, (u)int64,
// half and bfloat16, and for sum on float and double. `type` is ncclDataType_t, `op` ncclRedOp_t (avg
// is a pre- or post-multiplied sum on the device, so it is not supported). AllGather needs no
// reduction: NVLS runs it for every type.
bool nvls_op_supported(CollKind coll, int type, int op);

// NCCL's nvlsEfficiency for the GPU generation of compute capability sm (x10): 0.85 Hopper, 0.74
// Blackwell, 0 before.
double nvls_efficiency(int sm);

class CostModel {
 public:
  // Fills the latency and bandwidth tables. False with *error when the input is inconsistent
  // (nranks < 1, nnodes not dividing nranks, no graph at all, ...).
  bool init(const TunerInput& in, std::string* error);

  // Latency (µs) and bandwidth (GB/s, algorithm bandwidth = bytes / time) of one combination; the
  // bandwidth is 0 when the combination is unavailable or disabled. Under the host model: on one channel.
  double latency_us(CollKind coll, AlgoKind algo, ProtoKind proto) const;
  double bandwidth(CollKind coll, AlgoKind algo, ProtoKind proto) const;
  bool enabled(CollKind coll, AlgoKind algo, ProtoKind proto) const;

  // Predicted time of one call of `bytes` (NCCL's nBytes: count x type size for every collective
  // but AllGather/ReduceScatter, where it is the total, count x nranks x type size), -1 when
  // unavailable. num_pipe_ops as in NCCL (operations aggregated in one group). Under the host model:
  // on the fastest channel count (*nchannels, when given).
  double time_us(CollKind coll, size_t bytes, AlgoKind algo, ProtoKind proto,
                 int num_pipe_ops = 1, int* nchannels = nullptr) const;

  // NCCL's choice: lowest time among enabled combinations, then channel/thread trimming.
  // allow_pat = false: the call's reduction scales (ncclAvg, a pre-multiplied sum), which NCCL's PAT
  // ReduceScatter does not run (updateCollCostTable skips it). nvls_ok = false: the call's datatype and
  // op have no multimem reduction (nvls_op_supported), so NVLS is skipped.
  TunerChoice choose(CollKind coll, size_t bytes, int num_pipe_ops = 1, bool allow_pat = true,
                     bool nvls_ok = true) const;

  // One combination as choose() would run it had it won (its channel and thread trimming); valid false
  // when it is unavailable or disabled. A custom algorithm runs on Ring/Simple's channels.
  TunerChoice choose_combo(CollKind coll, size_t bytes, AlgoKind algo, ProtoKind proto, int num_pipe_ops = 1) const;

  // "Tree/LL at 64 KiB: 13.0 us = latency 12.1 us (base 6.8 + 2 x (7 x 0.6 + ...)) + 0.9 us for
  // 65536 B at 72.0 GB/s; not chosen: Ring/LL 14.2 us ..." - the derivation of one prediction.
  std::string explain(CollKind coll, size_t bytes, AlgoKind algo, ProtoKind proto) const;

  // The whole table (TUNING log at init): per collective, latency/bandwidth of every combination.
  std::string describe() const;

  const TunerInput& input() const { return in_; }
  bool host_model() const { return in_.host.cores > 0; }

 private:
  // choose()'s result for the winner (algo a, proto p, the model's channel count nc, time t): trimmed.
  TunerChoice finish(size_t bytes, int a, int p, int nc, double t) const;

  TunerInput in_;
  double lat_[kNumColls][kNumAlgos][kNumProtos] = {};
  double bw_[kNumColls][kNumAlgos][kNumProtos] = {};
  int max_threads_[kNumAlgos][kNumProtos] = {};
  bool ll128_ok_ = false;
};

}  // namespace cclab
