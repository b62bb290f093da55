// sim/sim.h - run cclab's own schedules and protocols on a SimGrid model of a machine or cluster.
//
//   SimConfig cfg;  cfg.topo = "dgx-h100";  cfg.coll = CollKind::kAllReduce;
//   cfg.min_bytes = 8;  cfg.max_bytes = 1 << 30;  cfg.factor = 2;
//   SimResult res;  std::string err;
//   if (!simulate(cfg, &res, &err)) { ... err says what was wrong ... }
//   for (const SimSizeResult& s : res.sizes) printf("%zu %.1f us %.1f GB/s\n", s.bytes, s.time_us, s.busbw);
//
// Every rank and channel becomes a SimGrid actor that runs the same kernels/ schedule and primitives
// as a host thread does; each step's data crosses the model's route as a SimGrid communication of the
// protocol's wire bytes (sim_exec.h), so contention between channels and pipelining come out of the
// simulation. payload = true moves and reduces real bytes and verifies the results; false runs without
// buffers (timing only). Results are deterministic: the same config gives the same times and events.
//
// SimGrid allows one simulation per process, so simulate() runs each config in a forked child and
// returns its results through a pipe; the caller's process never holds SimGrid state.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "graph/algo_proto.h"
#include "graph/p2p_channels.h"
#include "graph/topo.h"
#include "kernels/reduce_ops.h"
#include "kernels/step_record.h"
#include "sim/calibration.h"
#include "sim/degrade.h"

namespace cclab {
namespace sim {

// Element types the simulator instantiates (timing-only runs take any type of the same size).
enum class SimType : int { kInt8 = 0, kUint8, kInt32, kUint32, kInt64, kUint64, kFloat16, kFloat32, kFloat64,
                           kBfloat16, kFloat8e4m3, kFloat8e5m2 };  // ncclDataType_t's values and order
size_t sim_type_size(SimType t);
const char* sim_type_name(SimType t);            // nccl-tests spellings: "float", "half", "bfloat16", ...
bool sim_type_from_name(const std::string& s, SimType* out);

// How finely the collective is simulated. kStep: every slice of every channel is a SimGrid
// communication. kFlow: each connection's steps are one flow (see docs/simulator.md); for scale.
// kAuto: kStep while the run has at most `step_limit` slices, else kFlow.
enum class SimLevel : int { kAuto = 0, kStep = 1, kFlow = 2 };
const char* sim_level_name(SimLevel l);
// "alltoall", "gather", "scatter", "sendrecv" (nccl-tests' names); "none".
const char* sim_p2p_name(P2pPattern p);

struct SimConfig {
  // Model: a preset ("dgx-h100", "dgx-a100", ... with `machines` copies) or NCCL topology XML.
  std::string topo = "dgx-h100";
  std::string topo_xml;          // non-empty: read this instead of the preset
  int machines = 1;
  FabricSpec fabric;             // oversubscription etc. for multi-machine models
  WhatIf what_if;
  Degradation degrade;           // links slowed or failed from a simulated time, stragglers, jitter (degrade.h)
  int nranks = 0;                // 0: every GPU of the model

  // What to run (nccl-tests flags). A point-to-point collective (alltoall, gather, scatter, sendrecv)
  // sets `p2p` and coll = kSendRecv: every rank issues p2p_pattern()'s sends and receives as one group,
  // run as the runtime's sim backend runs ncclSend/ncclRecv (World::run_rank_p2p).
  CollKind coll = CollKind::kAllReduce;
  P2pPattern p2p = P2pPattern::kNone;
  P2pParams p2p_params;          // NCCL_MIN/MAX_P2P_NCHANNELS, NCCL_NCHANNELS_PER_NET_PEER, chunk sizes
  SimType type = SimType::kFloat32;
  RedOpKind op = RedOpKind::kSum;
  int root = 0;
  size_t min_bytes = 8, max_bytes = 8;
  double factor = 2;             // sizes multiply by factor (>1), or add `increment` when > 0
  size_t increment = 0;
  int iters = 1, warmup = 0;     // back-to-back iterations per size (timed / untimed)
  int gpus_per_thread = 1;       // nccl-tests' -g: one host thread issues every operation on this many GPUs,
                                 // so an iteration lasts at least that many times the calibration's host
                                 // issue cost (host_issue_us + host_issue_per_channel_us x channels)

  // Algorithm and protocol: NCCL_ALGO / NCCL_PROTO syntax ("" = the tuner chooses among all).
  std::string algo, proto;
  int min_channels = 0, max_channels = 0;  // NCCL_MIN/MAX_NCHANNELS (0 = NCCL's default)

  bool payload = false;          // move and reduce real bytes, verify the results
  SimLevel level = SimLevel::kAuto;
  uint64_t step_limit = 300000;  // kAuto: largest run (in slices) simulated at step level (~15 s)
  uint64_t refine_limit = 1000000;  // kFlow: largest run (in transfers) whose rates are refined
                                    // (docs/simulator.md, "Levels"); larger ones keep the static shares
  // kFlow: largest refined run replayed as a fluid (every rate solved again at each transfer's start and
  // end), in transfers x connections (~3 s here); larger refined runs take the occupancy rounds
  double fluid_limit = 3e7;
  // The same for NVLS and NVLS-Tree (~3 s at 1e9 here), whose pipelined roles the occupancy rounds
  // misjudge by up to 9% where the fluid is exact (docs/simulator.md, "Levels")
  double nvls_fluid_limit = 1e9;
  bool shares_from_simgrid = false;  // kFlow: measure the shares with SimGrid flows instead of solving
                                     // max-min (the same numbers; slow past ~10^4 connections; for tests)
  bool record_events = false;    // keep every step (SimResult::events)
  std::string trace_path;        // non-empty: write the run's trace there (docs/trace-format.md); step level
                                 // sizes carry every step, flow level sizes only their collective
  std::string live_path;         // non-empty: stream every step live on this Unix socket (trace/live.h)
  double live_wait_s = 0;        // wait this long for a viewer before simulating
  std::string command;           // recorded in the trace's META (informational)

  Calibration calibration = default_calibration();
};

struct SimSizeResult {
  size_t bytes = 0;              // NCCL's nBytes (AllGather/ReduceScatter: the whole buffer)
  size_t count = 0;              // elements, as nccl-tests prints them
  AlgoKind algo = AlgoKind::kRing;
  std::string custom_algo;       // algo == kCustom: the custom algorithm's name (graph/custom_algo.h)
  ProtoKind proto = ProtoKind::kSimple;
  int nchannels = 0;             // the channels it ran on: the tuner's choice (cclab tune's column); a
                                 // point-to-point collective: the channels one send to a peer is split over
  bool p2p = false;              // a point-to-point collective: no algorithm (NCCL's SendRecv kernel),
                                 // Simple, no tuner prediction
  int nthreads = 0;              // the tuner's threads per channel; the simulator's data loop does not
                                 // depend on them (one SM per channel at its calibrated copy rate)
  SimLevel level = SimLevel::kStep;  // the level used
  bool static_shares = false;    // kFlow past refine_limit: every connection at its static share, in
                                 // lockstep (PAT behind a spine: an upper bound, docs/simulator.md)
  double time_us = 0;            // simulated time of one iteration (mean of iters): the GPUs' time, or
                                 // host_us where the host issues operations slower than the GPUs run them
  double host_us = 0;            // the host's time to issue one iteration (gpus_per_thread x issue cost)
  double algbw = 0, busbw = 0;   // GB/s, nccl-tests' definitions
  double predicted_us = 0;       // the tuner's estimate for the same choice
  int64_t wrong = -1;            // payload mode: elements that differ from the expected result; -1 unchecked
  uint64_t slices = 0;           // SimGrid communications (step level) or flows (flow level) it took
};
// The algorithm's name: NCCL's spelling, or the custom algorithm's.
inline const char* algo_label(const SimSizeResult& s) {
  if (s.p2p) return "SendRecv";
  return s.algo == AlgoKind::kCustom && !s.custom_algo.empty() ? s.custom_algo.c_str() : algo_name(s.algo);
}


struct SimLinkLoad {
  int link = -1;                 // TopoLink index
  std::string name;              // "m0.gpu0->m0.nvs0"
  double bytes = 0;              // wire bytes over the whole run
  double busy_us = 0;            // time with at least one transfer on it (step level)
};

// One degraded element of SimConfig::degrade and the channels whose connections cross it.
struct SimDegraded {
  std::string label;             // "m0.nic3 at 50% from 0 us", "m0.gpu3-m0.nvs0 fails at 100 us", "rank 3 2x slower"
  std::vector<int> links;        // the TopoLinks it changes
  // Connections whose route crosses one of those links, grouped by edge: "ring"/"tree"/"nvlstree" (NVLS-Tree's
  // tree between machines), from, to rank and the channels that carry that edge over it; a point-to-point
  // collective: "p2p", each send (no channels).
  struct Carrier {
    std::string kind;
    int from = -1, to = -1;
    std::vector<int> channels;
  };
  std::vector<Carrier> carriers;
};

struct SimResult {
  std::string topo_description;
  int nranks = 0;
  int machines = 0;
  std::vector<SimSizeResult> sizes;
  std::vector<StepRecord> events;  // record_events: every step, in simulated time order
  std::vector<SimLinkLoad> links;  // links that carried traffic
  std::vector<SimDegraded> degraded;  // SimConfig::degrade's elements, in order
  P2pChannels p2p;                 // the point-to-point channels sends and receives are split over
  double wall_s = 0;               // wall time the simulation took
  double peak_rss_mib = 0;         // the simulating child's peak memory
};

// Called in the caller's process as sizes complete: (done, total).
using SimProgress = std::function<void(int done, int total)>;

// Runs `cfg`. False with *error naming what was wrong (unknown preset, bad size range, a type the
// payload mode does not instantiate, nranks larger than the model, ...) or why the simulation failed.
bool simulate(const SimConfig& cfg, SimResult* out, std::string* error, const SimProgress& progress = nullptr);

// The same, in this process (tests of the child side; at most once per process).
bool simulate_in_process(const SimConfig& cfg, SimResult* out, std::string* error,
                         const SimProgress& progress = nullptr);

// The model a config simulates (preset or XML, machines, what-ifs applied), as World::setup builds it:
// for checking names (degradations) before a run. False with *error.
bool build_model(const SimConfig& cfg, Topology* topo, std::string* error);

// The event log of a run as text, one step per line, for golden files:
//   "<begin_us> <end_us> r<rank> c<channel> <prim> send=<peer> recv=<peer> step=<n> bytes=<n>"
std::string format_events(const std::vector<StepRecord>& events);

}  // namespace sim
}  // namespace cclab
