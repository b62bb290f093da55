// sim/calibration.h - every constant the simulated fabric uses, in one place, each with its source.
//
// The platform (platform.h) turns the topology model's physical link rates into SimGrid links of
// rate x efficiency; the executor (sim_exec.h) charges each protocol step its fixed overhead and each
// data loop its time on one SM of the GPU. Nothing else in sim/ holds a number about hardware: change
// a constant here and `cclab sim --calibration` prints the new table.
#pragma once

#include <string>
#include <vector>

#include "graph/topo.h"

namespace cclab {
namespace sim {

// One GPU generation (by compute capability), as the executor needs it.
struct GpuModel {
  int sm = 0;                 // compute capability x10: 70, 80, 90, 100
  const char* name = "";      // "A100", "H100"
  int sms = 0;                // streaming multiprocessors (one channel runs on one SM)
  double sm_copy_gbs = 0;     // bytes/s one SM moves through a data loop (copy or reduce), GB/s
  const char* source = "";
  // Dense BF16/FP16 tensor throughput, TFLOP/s: what a simulated compute kernel of F flops takes
  // F / (tflops x 1e12) seconds on (cclabSimKernel).
  double tflops = 0;
  const char* tflops_source = "";
};

// Fraction of a link's physical rate that carries payload (packet headers, flow control, encoding).
struct LinkEfficiency {
  double nvlink = 1, pcie = 1, sys = 1, net = 1, loc = 1;
  const char* nvlink_source = "";
  const char* pcie_source = "";
  const char* sys_source = "";
  const char* net_source = "";
};

struct Calibration {
  std::vector<GpuModel> gpus;       // by sm; gpu(sm) picks the closest generation not newer than sm
  LinkEfficiency efficiency;
  // Fixed cost of one protocol step on top of the route's latency (the sender's fence and flag
  // store, the receiver noticing it), microseconds, per protocol (kProtoLL, kProtoLL128, kProtoSimple).
  double step_overhead_us[3] = {0, 0, 0};
  const char* step_overhead_source = "";
  // Share of an SM's copy rate (GpuModel::sm_copy_gbs) that a protocol's data loop reaches, per protocol
  // (kProtoLL, kProtoLL128, kProtoSimple): LL stores 8 B of data with an 8 B flag per 16 B line and
  // polls its flags, LL128 keeps one flag word per 128 B line; Simple moves plain data.
  double loop_share[3] = {1, 1, 1};
  const char* loop_share_source = "";
  // Kernel launch and completion of one collective (the first step of every channel starts after it).
  double launch_us = 0;
  const char* launch_source = "";
  // The host's cost of issuing one collective on one GPU (NCCL's enqueue: planning the channels' work,
  // the proxy operations, cudaLaunchKernel), microseconds: host_issue_us + host_issue_per_channel_us x
  // channels. nccl-tests launches its iterations back to back, so an iteration takes at least the time
  // the thread that drives G GPUs (-g G) needs to issue it on all of them: G x that cost.
  double host_issue_us = 0;
  double host_issue_per_channel_us = 0;
  const char* host_issue_source = "";
  // The network transport's cost per message, microseconds: the proxies' progress loops, the RDMA post
  // and its completion, the receiver's flush (NCCL's NET transport, src/transport/net.cc), on top of the
  // cables' and switches' latency. Half of it is added to each NIC port link (NIC <-> NET), so a message
  // between machines pays it once.
  double net_message_us = 0;
  const char* net_message_source = "";
  // NVLS (kernels/nvls.h) beyond its bytes, microseconds: nvls_latency_us once per NVLS collective (every
  // role of every channel starts after it, like launch_us), nvls_step_us on each head step (a multimem
  // load-reduce and multicast through the switch) on top of step_overhead_us[Simple].
  double nvls_latency_us = 0;
  double nvls_step_us = 0;
  const char* nvls_source = "";

  const GpuModel& gpu(int sm) const;
  // Sets one constant by the name describe() prints ("launch", "step_overhead.LL",
  // "efficiency.nvlink", "gpu.sm90.sm_copy", ...; case-insensitive, the part in parentheses left
  // out). False with *error naming the constant or the value when either is unknown or out of range.
  // `cclab sim --calib NAME=VALUE,...` and bench/sim_accuracy.sh's fits use it.
  bool set(const std::string& name, double value, std::string* error);
  // "NAME=VALUE,NAME=VALUE": set() for each pair, in order; stops at the first bad one (those before it
  // stay set).
  bool apply(const std::string& assignments, std::string* error);
  // Every name set() accepts, in describe()'s order.
  std::vector<std::string> names() const;
  // The table as text (one line per constant: value, unit, source), for `cclab sim --calibration`
  // and docs/simulator.md.
  std::string describe() const;
};

// The built-in calibration (calibration.cc).
const Calibration& default_calibration();

// What-if changes to a topology model before it becomes a platform (`cclab sim` flags). A value <= 0
// (or < 0 for latency) leaves the model as it is.
struct WhatIf {
  double nvlink_bw = 0;        // GB/s per direction per GPU (spread over its NVLink edges by lanes)
  double nic_bw = 0;           // GB/s per NIC port (the NIC-leaf cables and the NIC's PCIe link stay)
  int nics_per_machine = 0;    // keep the first N NICs of every machine (GPUs re-home to NIC dev % N)
  double link_latency_us = -1; // every link's latency
  double oversubscription = 0; // fabric leaf down/up ratio (rebuilds the fabric)
};

// Applies `w` to `topo` (recomputing paths). False with *error naming the bad value (e.g. more NICs
// asked than the machine has, a negative bandwidth).
bool apply_what_if(const WhatIf& w, Topology* topo, std::string* error);

}  // namespace sim
}  // namespace cclab
