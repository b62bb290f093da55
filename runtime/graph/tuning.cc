// runtime/graph/tuning.cc - NCCL's cost model (see tuning.h and docs/tuner.md).
//
// [SECTION] Constants            every table names the NCCL 2.28.9 table it is transcribed from
// [SECTION] Model pieces         latency and bandwidth of one combination, each with its derivation
// [SECTION] Enablement           NCCL_ALGO / NCCL_PROTO, the LL128 default rule, what cclab lacks
// [SECTION] CostModel            init, time, choice (+ channel/thread trimming), explain, describe
//
// The latency and bandwidth functions build the number and, on request, the sentence that explains it,
// so init() (the tables) and explain() (the prose) cannot drift apart.
#include "graph/tuning.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <string>

namespace cclab {
namespace {

// ---------------------------------------------------------------------------------------------------
// [SECTION] Constants
// ---------------------------------------------------------------------------------------------------

constexpr int kA = kNumAlgos;
constexpr int kP = kNumProtos;
constexpr int kTree = static_cast<int>(AlgoKind::kTree);
constexpr int kRing = static_cast<int>(AlgoKind::kRing);
constexpr int kPat = static_cast<int>(AlgoKind::kPat);
constexpr int kNvls = static_cast<int>(AlgoKind::kNvls);
constexpr int kNvlsTree = static_cast<int>(AlgoKind::kNvlsTree);
constexpr int kLL = static_cast<int>(ProtoKind::kLL);
constexpr int kLL128 = static_cast<int>(ProtoKind::kLL128);
constexpr int kSimple = static_cast<int>(ProtoKind::kSimple);

// Base latency per algorithm x protocol, µs (ncclTunerConstantsDefaults.baseLatencies, tuning.cc).
// Rows: Tree, Ring, CollNetDirect, CollNetChain, NVLS, NVLSTree, PAT; columns LL, LL128, Simple.
const double kBaseLatencies[kA][kP] = {
    {6.8, 14.0, 8.4}, {6.6, 14.0, 8.4},  // Tree, Ring
    {0, 0, 0},        {0, 0, 0},         // CollNetDirect, CollNetChain
    {0, 0, 0},        {0, 0, 0},         // NVLS, NVLSTree
    {8.0, 8.0, 8.0},                     // PAT
};

// Hardware latency per hop by link class, µs (ncclTunerConstantsDefaults.hwLatencies; the classes are
// NCCL_HW_NVLINK, NCCL_HW_PCI, NCCL_HW_NET).
constexpr int kHwNvlink = 0, kHwPci = 1, kHwNet = 2;
const char* const kHwNames[3] = {"NVLink", "PCI", "NET"};
const double kHwLatencies[3][kA][kP] = {
    // NVLINK
    {{.6, 1.25, 4.0}, {.6, 1.9, 3.4}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 25}, {0, 0, 25}, {0, 0, 4.0}},
    // PCI
    {{1.0, 1.9, 4.0}, {1.0, 2.5, 5.7}, {0, 0, 3.7}, {0, 0, 2.8}, {0, 0, 0}, {0, 0, 0}, {0, 0, 4.0}},
    // NET
    {{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 31}, {0, 0, 30}, {0, 0, 18}, {0, 0, 20.9}, {0, 0, 14}},
};

// GPU generation index (NCCL_VOLTA/AMPERE/HOPPER/BLACKWELL_COMPCAP_IDX) picked from the smallest sm.
const char* const kGenNames[4] = {"Volta", "Ampere", "Hopper", "Blackwell"};

// NVLS efficiency per generation (nvlsEfficiency, tuning.cc): the share of the NVLS graph's
// per-channel speed that NVLink SHARP delivers.
const double kNvlsEfficiency[4] = {0.0, 0.0, 0.85, 0.74};

// Caps in GB/s, [generation or CPU row][node-count index: 1 node, 2 nodes, more].
// ncclTunerConstantsDefaults.llMaxBws: on one node the row is the GPU generation; on several nodes row
// 0 (Intel and others) or row 1 (AMD): the LL bandwidth is then bound by the CPU's PCIe ordering.
const double kLlMaxBws[4][3] = {
    {39.0, 39.0, 20.4},     // Volta-N1 / Intel-N2 / Intel-N4
    {87.7, 22.5, 19.0},     // Ampere-N1 / AMD-N2 / AMD-N4
    {141.0, 45.0, 35.0},    // Hopper-N1 / AMD-N2 / AMD-N4
    {282.0, 90.0, 70.0},    // Blackwell-N1 (2 x Hopper in NCCL's source)
};
// ncclTunerConstantsDefaults.perChMaxRingLL128Bws.
const double kPerChMaxRingLL128Bws[4][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {73.4, 34.6, 73.4}};
// ncclTunerConstantsDefaults.perChMaxTreeLL128Bws.
const double kPerChMaxTreeLL128Bws[4][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}};
// ncclTunerConstantsDefaults.perChMaxTreeBws.
const double kPerChMaxTreeBws[4][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};
// ncclTunerConstantsDefaults.perChMaxNVLSTreeBws (NVLS-Tree runs on 2 machines or more: N1 is 0 from
// Hopper on).
const double kPerChMaxNvlsTreeBws[4][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}, {0.0, 96.0, 80.0}};

// Tree AllReduce bandwidth correction by size, powers of two from 64 B (index 0) to 512 MiB (index 23)
// (treeCorrectionFactor in tuning.cc; index = log2(nBytes / 64)). Tree takes indices 0..22; NVLS-Tree
// 0..23, on sm100 x86 machines only.
const double kTreeCorrectionFactor[kP][24] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9, .9},
};

// Threads and thresholds (device.h, comm.h, topo.h).
constexpr int kWarpSize = 32;                 // WARP_SIZE
constexpr int kMaxNthreads = 640;             // NCCL_MAX_NTHREADS
constexpr int kSimpleMaxNthreads = 512;       // NCCL_SIMPLE_MAX_NTHREADS
constexpr int kLLMaxNthreads = 512;           // NCCL_LL_MAX_NTHREADS
constexpr int kLL128MaxNthreads = 640;        // NCCL_LL128_MAX_NTHREADS
constexpr int kThreadThresholds[kP] = {8, 8, 64};  // NCCL_{LL,LL128,SIMPLE}_THREAD_THRESHOLD
constexpr double kPciBw = 12.0;               // PCI_BW (topo.h): Gen3 x16, GB/s
// NCCL_MAX_DEV_WORK_BATCH_COLLS = NCCL_MAX_DEV_WORK_BATCH_BYTES (1024) / sizeof(ncclDevWorkColl) (96).
constexpr int kMaxDevWorkBatchColls = 10;
// Ring/Simple multi-node "plateau effect" latency factor (ncclTopoGetAlgoTime).
constexpr double kRingPlateauFactor = 1.4, kRingPlateauFactorPreAmpere = 1.9;

// The host model's constants (HostCosts), measured on the reference host - 2 cores of an Intel Xeon VM
// (L2 2 MiB per core), Debian 12, g++ 12, RelWithDebInfo - by bench/host_costs.sh with one process per
// rank; docs/tuner.md section 6 gives the run. Rows Tree, Ring; columns LL, LL128, Simple. A hop is one
// primitive of the critical path with all its slices: Ring/Simple's AllReduce, AllGather and
// ReduceScatter primitives hand over two (ProtoSimple<2,2>), Tree/Simple's and the ring's
// Broadcast/Reduce one (ProtoSimple<1,1>), hence Ring/Simple's higher hop.
constexpr double kHostLaunchUs = 0.33;   // 1 rank, 8 B
constexpr double kHostChannelUs = 1.66;  // 2 ranks, 8 B, Tree/Simple: 2 channels minus 1, less the hops
const double kHostHopUs[2][kP] = {{0.30, 0.41, 0.34}, {0.20, 0.30, 0.60}};         // 2 ranks, 8 B
const double kHostOversubHopUs[2][kP] = {{2.34, 2.36, 1.78}, {0.80, 1.22, 1.71}};  // 4 ranks on 2 cores, 8 B
const double kHostChannelGbps[kP] = {0.66, 0.37, 10.11};  // 2 ranks, Ring, 16 KiB .. 256 KiB

// NCCL's function order (ncclFunc_t: Broadcast, Reduce, AllGather, ReduceScatter, AllReduce), the
// order its TUNING log prints rows in; cclab's CollKind order differs.
const CollKind kNcclFuncOrder[kNumColls] = {CollKind::kBroadcast, CollKind::kReduce, CollKind::kAllGather,
                                            CollKind::kReduceScatter, CollKind::kAllReduce};

// ---------------------------------------------------------------------------------------------------
// [SECTION] Model pieces
// ---------------------------------------------------------------------------------------------------

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  return buf;
}

// A number as a person writes it: up to 3 decimals, trailing zeros dropped ("0.6", "14", "36.7").
std::string num(double v) {
  std::string s = format("%.3f", v);
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

// floor(log2(n)) with log2i(0) = -1, as NCCL's log2i.
int log2i(long long n) {
  int r = -1;
  while (n > 0) {
    n >>= 1;
    r++;
  }
  return r;
}

int gen_index(const TunerInput& in) {
  return in.sm_min >= 100 ? 3 : in.sm_min >= 90 ? 2 : in.sm_min >= 80 ? 1 : 0;
}
int nodes_index(const TunerInput& in) { return in.nnodes <= 2 ? in.nnodes - 1 : 2; }
int ll_row(const TunerInput& in) {
  if (in.nnodes == 1) return gen_index(in);
  return in.cpu_vendor == CpuVendor::kAmd ? 1 : 0;
}

const TopoGraph* graph_of(const TunerInput& in, int a) {
  if (a == kRing) return in.ring;
  if (a == kTree || a == kPat) return in.tree;  // NCCL's graphs[NCCL_ALGO_PAT] is the tree graph
  if (a == kNvls || a == kNvlsTree) return in.nvls;  // NCCL: graphs[NVLS_TREE] is the NVLS graph
  return nullptr;
}

// Channels the communicator runs for this algorithm (NCCL's comm->nChannels).
int comm_channels(const TunerInput& in, int a) {
  const TopoGraph* g = graph_of(in, a);
  if (a == kNvls || a == kNvlsTree)
    return in.nvls_channels > 0 ? in.nvls_channels : nvls_default_channels(in.sm_min, in.nnodes);
  int explicit_nc = a == kRing ? in.ring_channels : a == kTree || a == kPat ? in.tree_channels : 0;
  if (explicit_nc > 0) return explicit_nc;
  return g != nullptr && g->nchannels > 0 ? g->nchannels : 1;
}

// NCCL: intraHw[a] = graphs[a]->typeIntra == LINK_NVL ? NCCL_HW_NVLINK : NCCL_HW_PCI. It compares a
// path type with LINK_NVL (1 == PATH_NVL), so NVB (NVLink through a GPU) already counts as PCI.
int intra_hw(const TopoGraph& g) { return g.type_intra == PathType::kNvl ? kHwNvlink : kHwPci; }

double net_overhead(const TunerInput& in) {  // getNetOverhead, µs
  if (in.net_overhead_us >= 0) return in.net_overhead_us;
  if (in.cpu_arch == CpuArch::kX86 && in.cpu_vendor == CpuVendor::kIntel) return 1.0;
  if (in.cpu_arch == CpuArch::kX86 && in.cpu_vendor == CpuVendor::kAmd) return 2.0;
  return 1.0;
}

int nsteps_of(CollKind coll, int nranks) {
  if (coll == CollKind::kAllReduce) return 2 * (nranks - 1);
  if (coll == CollKind::kAllGather || coll == CollKind::kReduceScatter) return nranks - 1;
  return nranks;
}

// Whether cclab models this combination at all: Ring for every collective, Tree for AllReduce, PAT for
// AllGather and ReduceScatter.
bool modelled(CollKind coll, int a) {
  if (a == kRing) return true;
  if (a == kTree) return coll == CollKind::kAllReduce;
  if (a == kPat) return coll == CollKind::kAllGather || coll == CollKind::kReduceScatter;
  if (a == kNvls)
    return coll == CollKind::kAllReduce || coll == CollKind::kAllGather || coll == CollKind::kReduceScatter;
  if (a == kNvlsTree) return coll == CollKind::kAllReduce;
  return false;
}

// Why an algorithm has no numbers in cclab (empty when it does for this collective).
std::string not_modelled_reason(CollKind coll, int a) {
  switch (static_cast<AlgoKind>(a)) {
    case AlgoKind::kTree:
      return coll == CollKind::kAllReduce ? "" : "NCCL has no Tree for this collective";
    case AlgoKind::kRing: return "";
    case AlgoKind::kCollNetDirect:
    case AlgoKind::kCollNetChain: return "CollNet needs in-network reduction (SHARP) that cclab does not model";
    case AlgoKind::kNvls:
      return coll == CollKind::kAllReduce || coll == CollKind::kAllGather || coll == CollKind::kReduceScatter
                 ? ""
                 : "NCCL has no NVLS for this collective";
    case AlgoKind::kNvlsTree:
      return coll == CollKind::kAllReduce ? "" : "NCCL runs NVLS-Tree for AllReduce only";
    case AlgoKind::kPat:
      return coll == CollKind::kAllGather || coll == CollKind::kReduceScatter
                 ? ""
                 : "NCCL runs PAT for AllGather and ReduceScatter only";
    case AlgoKind::kCustom: return "a custom algorithm has no NCCL cost model";
  }
  return "unknown algorithm";
}

// Hardware latency of one hop, µs (hwLatencies with the Power tweak of ncclTopoTuneModel).
double hw_lat(const TunerInput& in, int hw, int a, int p) {
  // "De-penalize Tree/Simple latency on Power systems to favor Tree than Ring".
  if (in.cpu_arch == CpuArch::kPower && hw == kHwPci && a == kTree && p == kSimple)
    return kHwLatencies[kHwPci][kRing][kSimple];
  return kHwLatencies[hw][a][p];
}

// Latency (µs) of a modelled combination, NCCL's comm->latencies[coll][a][p]; *how gets the formula.
double model_latency(const TunerInput& in, CollKind coll, int a, int p, std::string* how) {
  const TopoGraph& g = *graph_of(in, a);
  const int nranks = in.nranks, nnodes = in.nnodes, ppn = nranks / nnodes;
  const int nsteps = nsteps_of(coll, nranks);
  if (a == kNvls) {
    // NCCL: latencies = intraLat (the base latency is replaced, not added), + interLat across machines.
    const int ihw = intra_hw(g);
    const double lat = hw_lat(in, ihw, a, p);
    if (how) *how = format("%s NVLS %s (replaces the base)", kHwNames[ihw], num(lat).c_str());
    return lat;
  }
  const double base = kBaseLatencies[a][p];
  if (a == kNvlsTree) {
    // NCCL: base (0) + intraLat + 2 x log2(nNodes) x interLat: one switch round trip inside the machines,
    // up and down the tree of machines.
    const int ihw = intra_hw(g);
    const double intra = hw_lat(in, ihw, a, p);
    double inter = hw_lat(in, kHwNet, ppn == 1 ? kTree : a, p) + g.latency_inter;
    if (p == kSimple) inter += g.latency_inter;
    const int levels = log2i(nnodes);
    if (how)
      *how = format("base %s + %s NVLS-Tree %s + 2 x %d levels x NET %s", num(base).c_str(), kHwNames[ihw],
                    num(intra).c_str(), levels, num(inter).c_str());
    return base + intra + 2 * levels * inter;
  }
  const int ihw = intra_hw(g);
  double intra_lat = hw_lat(in, ihw, a, p);
  // With ppn = 1 latencies are fully exposed: NCCL uses the Tree network latency.
  double inter_lat = hw_lat(in, kHwNet, ppn == 1 ? kTree : a, p) + g.latency_inter;
  if (p == kSimple) inter_lat += g.latency_inter;  // the flush
  std::string inter_how = num(hw_lat(in, kHwNet, ppn == 1 ? kTree : a, p));
  if (g.latency_inter > 0) inter_how += format(" + %s%s latencyInter", p == kSimple ? "2 x " : "",
                                               num(g.latency_inter).c_str());

  if (a == kRing) {
    if (coll == CollKind::kBroadcast || coll == CollKind::kReduce) {
      // One hop per call (the pipeline hides the rest) when every channel has the same order.
      int hw = nnodes == 1 ? ihw : kHwNet;
      double lat = hw_lat(in, hw, a, p);
      if (g.same_channels) {
        if (how) *how = format("base %s + %s hop %s", num(base).c_str(), kHwNames[hw], num(lat).c_str());
        return base + lat;
      }
      if (p == kSimple) lat = hw_lat(in, hw, kTree, p);  // "some chunk latency"
      if (how)
        *how = format("base %s + %d steps x %s %s (channels differ)", num(base).c_str(), nsteps, num(lat).c_str(),
                      kHwNames[hw]);
      return base + nsteps * lat;
    }
    double overhead = 0;
    if (nnodes > 1) {
      overhead = net_overhead(in);
      if (p == kSimple) overhead *= 3;
    }
    double hw_intra = intra_lat;
    intra_lat = std::max(intra_lat, overhead);
    int inter_steps = nnodes == 1 ? 0 : coll == CollKind::kAllReduce ? 2 * (nnodes - 1) : nnodes - 1;
    if (how) {
      std::string intra_s = num(intra_lat);
      if (nnodes > 1)
        intra_s = format("max(%s %s, net overhead %s)", kHwNames[ihw], num(hw_intra).c_str(), num(overhead).c_str());
      else
        intra_s = format("%s %s", kHwNames[ihw], num(hw_intra).c_str());
      *how = format("base %s + %d intra steps x %s", num(base).c_str(), nsteps - inter_steps, intra_s.c_str());
      if (inter_steps > 0) *how += format(" + %d inter steps x NET %s", inter_steps, inter_how.c_str());
    }
    return base + (nsteps - inter_steps) * intra_lat + inter_steps * inter_lat;
  }
  if (a == kPat) {
    // PAT (AllGather/ReduceScatter): a log part over the nodes and a linear part over the ranks.
    const int levels = log2i(nnodes);
    if (how)
      *how = format("base %s + log2(%d nodes) %d x NET %s / 3.5 + 2.8 x %d ranks", num(base).c_str(), nnodes, levels,
                    inter_how.c_str(), nranks);
    return base + levels * (inter_lat / 3.5) + nranks * 2.8;
  }
  // Tree AllReduce: up and down the chain of ppn GPUs and log2(nnodes) levels of the node tree.
  int levels = log2i(nnodes);
  if (how) {
    *how = format("base %s + 2 x (%d x %s %s", num(base).c_str(), ppn - 1, kHwNames[ihw], num(intra_lat).c_str());
    if (levels > 0) *how += format(" + %d x NET %s", levels, inter_how.c_str());
    *how += ")";
  }
  return base + 2 * ((ppn - 1) * intra_lat + levels * inter_lat);
}

// Algorithm bandwidth (GB/s) of a modelled combination before enablement, NCCL's
// comm->bandwidths[coll][a][p]; *how gets the derivation.
double model_bandwidth(const TunerInput& in, CollKind coll, int a, int p, std::string* how) {
  const TopoGraph& g = *graph_of(in, a);
  const int gi = gen_index(in), ni = nodes_index(in);
  const double ll_max = kLlMaxBws[ll_row(in)][ni];
  const bool use_intra = in.nnodes <= 2;
  double per_ch = use_intra ? g.bw_intra : g.bw_inter;
  const int nch = g.nchannels;
  std::string s;
  if (a == kNvls || a == kNvlsTree) {
    // NVLS busBw per channel: bwIntra x nvlsEfficiency x (nChannels-1)/nChannels, x2 for AllReduce (it
    // pipelines two operations: the reduction and the multicast), else x (ppn-1)/ppn; capped by bwInter.
    // NVLS-Tree: bwInter counts twice on 2 machines (each head sends and receives half over its NIC:
    // "Handle 2 node case of NVLSTree"), and perChMaxNVLSTreeBws caps the channel.
    const double eff = kNvlsEfficiency[gi];
    const double ppn = static_cast<double>(in.nranks) / in.nnodes;
    double intra = g.bw_intra * eff * (nch - 1) / nch;
    const double f = coll == CollKind::kAllReduce ? 2.0 : (ppn - 1) / ppn;
    intra *= f;
    const bool two = a == kNvlsTree && in.nnodes <= 2;
    const double inter = g.bw_inter * (two ? 2 : 1);
    per_ch = std::min(intra, inter);
    std::string cap_s;
    if (a == kNvlsTree) {
      per_ch = std::min(per_ch, kPerChMaxNvlsTreeBws[gi][ni]);
      cap_s = format(", perChMaxNVLSTreeBw %s", num(kPerChMaxNvlsTreeBws[gi][ni]).c_str());
    }
    s = format("%s: min(bwIntra %s x efficiency %s x %d/%d x %s, bwInter %s%s%s) = %s; ",
               a == kNvls ? "NVLS" : "NVLS-Tree", num(g.bw_intra).c_str(), num(eff).c_str(), nch - 1, nch,
               coll == CollKind::kAllReduce ? "2 (two pipelined ops)" : "(ppn-1)/ppn", num(g.bw_inter).c_str(),
               two ? " x 2 (2 machines)" : "", cap_s.c_str(), num(per_ch).c_str());
  }
  double bus = nch * per_ch;
  s += format("%d ch x %s GB/s (%s) = %s", nch, num(per_ch).c_str(),
              a == kNvls || a == kNvlsTree ? "NVLS" : use_intra ? "bwIntra" : "bwInter", num(bus).c_str());
  if (a == kRing && p == kLL) {
    double half = bus * .5;
    bus = std::min(ll_max, half);
    s += format("; LL: min(llMaxBw %s, 0.5 x bus %s) = %s", num(ll_max).c_str(), num(half).c_str(), num(bus).c_str());
  }
  if (a == kRing && p == kLL128) {
    double cap = nch * kPerChMaxRingLL128Bws[gi][ni];
    double eff = bus * 0.92;
    bus = std::min(eff, cap);
    s += format("; LL128: min(0.92 x bus %s, %d x %s cap) = %s", num(eff).c_str(), nch,
                num(kPerChMaxRingLL128Bws[gi][ni]).c_str(), num(bus).c_str());
  }
  if (a == kTree && coll == CollKind::kAllReduce) {
    double cap = nch * kPerChMaxTreeBws[gi][ni];
    double eff = bus * .92;
    bus = std::min(eff, cap);
    s += format("; tree: min(0.92 x bus %s, %d x %s cap) = %s", num(eff).c_str(), nch,
                num(kPerChMaxTreeBws[gi][ni]).c_str(), num(bus).c_str());
  }
  if (a == kTree && p == kLL) {
    double eff = bus / 3.8;
    bus = std::min(eff, ll_max);
    s += format("; LL: min(bus / 3.8 = %s, llMaxBw %s) = %s", num(eff).c_str(), num(ll_max).c_str(), num(bus).c_str());
  }
  if (a == kTree && p == kLL128) {
    double f = in.nnodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0;
    double cap = nch * kPerChMaxTreeLL128Bws[gi][ni];
    double eff = bus * f;
    bus = std::min(eff, cap);
    s += format("; LL128: min(%s x bus = %s, %d x %s cap) = %s", in.nnodes == 1 ? "7/9" : "120/128",
                num(eff).c_str(), nch, num(kPerChMaxTreeLL128Bws[gi][ni]).c_str(), num(bus).c_str());
  }
  if (a == kTree && in.tree != nullptr && in.tree->pattern == GraphPattern::kTree) {
    bus *= .85;
    s += format("; simple tree pattern x 0.85 = %s", num(bus).c_str());
  }
  if (a == kPat) {
    bus *= .75;
    s += format("; PAT x 0.75 = %s (AllGather/ReduceScatter: no algorithm-bandwidth ratio)", num(bus).c_str());
  }
  // Bus bandwidth to algorithm bandwidth: NCCL leaves AllGather/ReduceScatter of other algorithms than
  // Ring as they are.
  if (a == kPat) {
  } else if (a == kNvls && coll != CollKind::kAllReduce) {
    s += "; AllGather/ReduceScatter: bus = algorithm bandwidth";
  } else if (a == kRing || a == kNvls || a == kNvlsTree) {
    int nsteps = nsteps_of(coll, in.nranks);
    bus *= static_cast<double>(in.nranks) / nsteps;
    s += format("; x nRanks/nsteps %d/%d", in.nranks, nsteps);
  } else {
    bus *= .5;
    s += "; x 0.5 (tree)";
  }
  if (how) *how = s;
  return bus;
}

// ---------------------------------------------------------------------------------------------------
// [SECTION] Host model (HostCosts): threads of one host play the GPUs
// ---------------------------------------------------------------------------------------------------

// The host's trees (comm_topo.cc): every rank has up to kHostTreeArity children (the kernels' fan-in,
// NCCL_MAX_TREE_ARITY), the children of place p at 3p+1..3p+3. Depth: edges from the root to the last
// rank; 1 for 2..4 ranks, 2 for 5..13.
constexpr int kHostTreeArity = 3;
int host_tree_depth(int nranks) {
  int depth = 0;
  for (long long reach = 1, level = 1; reach < nranks; ++depth) {
    level *= kHostTreeArity;
    reach += level;
  }
  return depth;
}

// Primitives on the critical path of one call: a ring's nsteps (k-1 for Broadcast/Reduce, which pass
// the data on once around the ring); for Tree up and down the host's tree.
int host_hops(CollKind coll, int a, int nranks) {
  if (a == kTree) return 2 * host_tree_depth(nranks);
  if (coll == CollKind::kBroadcast || coll == CollKind::kReduce) return nranks - 1;
  return nsteps_of(coll, nranks);
}

// Bytes on the critical path's data loops per byte of the call. The ring's steps run on every rank at
// once, so it is each rank's share, NCCL's bus factor (nsteps / nRanks). A tree level waits for the
// level below, and its parent passes over each child's slice on the way up and writes each child's on
// the way down: depth x (1 + children) (2 for 2 ranks, 4 from 4 ranks on; fits the measured slopes,
// docs/tuner.md section 6).
double host_traffic(CollKind coll, int a, int nranks) {
  if (a == kTree) return host_tree_depth(nranks) * (1.0 + std::min(kHostTreeArity, nranks - 1));
  if (coll == CollKind::kBroadcast || coll == CollKind::kReduce) return 1.0;
  return static_cast<double>(nsteps_of(coll, nranks)) / nranks;
}

// Threads busy at once per channel: every rank on a ring, about half of them in a tree (a level at a
// time; the leaves send together).
int host_busy(int a, int nranks) { return a == kTree ? std::max(1, nranks / 2) : nranks; }

bool host_oversubscribed(const HostCosts& h, int nc) { return h.ranks_per_host * nc > h.cores; }

// The per-primitive hop: Broadcast/Reduce run Simple in one-slot slices, as Tree does.
double host_hop(const HostCosts& h, CollKind coll, int a, int p, int nc) {
  const int row = (a == kRing && p == kSimple && (coll == CollKind::kBroadcast || coll == CollKind::kReduce)) ? kTree : a;
  return host_oversubscribed(h, nc) ? h.oversub_hop_us[row][p] : h.hop_us[row][p];
}

// Payload GB/s of the critical path's data loops: each channel's thread at channel_gbps, times the
// cores' share when the threads busy at once outnumber them.
double host_rate(const HostCosts& h, int a, int p, int nc, std::string* how) {
  const int busy = host_busy(a, h.ranks_per_host) * nc;
  const double share = std::min(1.0, static_cast<double>(h.cores) / busy);
  const double rate = nc * h.channel_gbps[p] * share;
  if (how) {
    *how = format("%d ch x %s GB/s", nc, num(h.channel_gbps[p]).c_str());
    if (share < 1) *how += format(" x %d cores / %d busy threads", h.cores, busy);
    *how += format(" = %s GB/s", num(rate).c_str());
  }
  return rate;
}

double host_latency(const TunerInput& in, CollKind coll, int a, int p, int nc, std::string* how) {
  const HostCosts& h = in.host;
  const int hops = host_hops(coll, a, in.nranks);
  const double hop = host_hop(h, coll, a, p, nc);
  if (how) {
    *how = format("launch %s", num(h.launch_us).c_str());
    if (nc > 1) *how += format(" + %d more channel%s x %s", nc - 1, nc == 2 ? "" : "s", num(h.channel_us).c_str());
    *how += format(" + %d hops x %s%s", hops, num(hop).c_str(),
                   host_oversubscribed(h, nc) ? format(" (%d rank threads on %d cores)", h.ranks_per_host * nc,
                                                       h.cores).c_str()
                                              : "");
  }
  return h.launch_us + (nc - 1) * h.channel_us + hops * hop;
}

// Algorithm bandwidth (GB/s: bytes of the call per second) on nc channels.
double host_bandwidth(const TunerInput& in, CollKind coll, int a, int p, int nc, std::string* how) {
  std::string rate_how;
  const double rate = host_rate(in.host, a, p, nc, how ? &rate_how : nullptr);
  const double traffic = host_traffic(coll, a, in.nranks);
  if (how) *how = rate_how + format("; the critical path moves %s x the bytes", num(traffic).c_str());
  return rate / traffic;
}

// ---------------------------------------------------------------------------------------------------
// [SECTION] Enablement
// ---------------------------------------------------------------------------------------------------

// NCCL's default LL128 rule for algorithm a (used when NCCL_PROTO does not name the collective);
// *why says which condition failed.
bool ll128_default(const TunerInput& in, int a, std::string* why) {
  const TopoGraph* g = graph_of(in, a);
  if (g == nullptr) return false;
  auto fail = [&](const std::string& s) {
    if (why) *why = "LL128 is off by default here: " + s;
    return false;
  };
  if (in.sm_min < 70) return fail(format("sm %d < 70", in.sm_min));
  if (in.sm_min != in.sm_max) return fail(format("mixed GPUs (sm %d..%d)", in.sm_min, in.sm_max));
  if (static_cast<int>(g->type_intra) > static_cast<int>(PathType::kNvb))
    return fail(format("typeIntra %s is beyond NVB", path_type_name(g->type_intra)));
  // NCCL_LL128_C2C defaults to 1: from sm90 LL128 also runs over PXN/P2C/C2C paths to the NIC.
  PathType max_inter = in.sm_min >= 90 ? PathType::kPxn : PathType::kPxb;
  if (static_cast<int>(g->type_inter) > static_cast<int>(max_inter))
    return fail(format("typeInter %s is beyond %s", path_type_name(g->type_inter), path_type_name(max_inter)));
  return true;
}

// Whether a modelled combination is enabled, with the reason when it is not.
bool is_enabled(const TunerInput& in, CollKind coll, int a, int p, std::string* why) {
  int c = coll_index(coll);
  if (a == kNvls) {
    auto no = [&](const std::string& s) {
      if (why) *why = s;
      return false;
    };
    if (p != kSimple) return no("NVLS runs the Simple protocol only");
    if (in.nnodes > 1)
      return no("NCCL runs NVLS across machines only with CollNet (collnetEnable 0 disables it); NVLS-Tree is "
                "its multi-machine form");
    if (in.nvls == nullptr || in.nvls->nchannels < 2) return no("NVLS needs at least 2 channels");
    if (coll != CollKind::kAllReduce && in.nranks / in.nnodes > 32)
      return no("NVLS AllGather/ReduceScatter needs at most 32 ranks per machine (NCCL_MAX_NVLS_ARITY)");
  }
  if (a == kNvlsTree) {
    auto no = [&](const std::string& s) {
      if (why) *why = s;
      return false;
    };
    if (p != kSimple) return no("NVLS-Tree runs the Simple protocol only");
    if (in.nnodes == 1) return no("NCCL disables NVLS-Tree on one machine (NVLS runs there)");
    if (in.nvls == nullptr || in.nvls->nchannels < 2) return no("NVLS-Tree needs at least 2 NVLS channels (heads)");
  }
  if (!in.enable.algo[c][a]) {
    if (why) *why = "disabled by NCCL_ALGO";
    return false;
  }
  if (!in.enable.proto[c][p]) {
    if (why) *why = "disabled by NCCL_PROTO";
    return false;
  }
  if (a == kPat) {
    // ncclPatEnable and the PAT rows of ncclTopoTuneModel.
    auto no = [&](const std::string& r) {
      if (why) *why = r;
      return false;
    };
    if (p != kSimple) return no("PAT runs the Simple protocol only");
    if (in.sm_min < 60) return no(format("PAT needs sm60 or newer (sm %d)", in.sm_min));
    if (in.pat_enable == 0) return no("disabled by NCCL_PAT_ENABLE=0");
    if (in.pat_enable == 2 && in.nnodes != in.nranks)
      return no(format("PAT needs one GPU per node (%d ranks on %d nodes; NCCL_PAT_ENABLE=1 forces it)", in.nranks,
                       in.nnodes));
    if (in.host.cores > 0) return no("the host model has no PAT costs");
  }
  if (p == kLL128 && !in.enable.proto_from_env[c]) return ll128_default(in, a, why);
  return true;
}

std::string combo_name(int a, int p) {
  return std::string(algo_name(static_cast<AlgoKind>(a))) + "/" + proto_name(static_cast<ProtoKind>(p));
}

}  // namespace

// ---------------------------------------------------------------------------------------------------
// [SECTION] CostModel
// ---------------------------------------------------------------------------------------------------

int nvls_default_channels(int sm_min, int nnodes, int nvls_ctas, int min_ctas, int max_ctas, double nic_bw, int ppn) {
  int ch = sm_min >= 100 ? (nnodes > 1 ? 32 : 24) : 16;  // NVLS_NCHANNELS_SM100 / _SM100_NVL / _SM90
  // ncclNvlsTreeSm100Tuning (sm100, several machines), by the slowest NIC's GB/s.
  if (sm_min >= 100 && nnodes > 1 && nic_bw > 0) {
    if (nnodes == 2 && nic_bw >= 48.0) ch = 32;
    else if (nic_bw >= 96.0) ch = ppn <= 8 ? 24 : 32;
    else if (nic_bw >= 48.0) ch = 24;
  }
  if (nvls_ctas > 0) ch = nvls_ctas;
  if (max_ctas > 0) ch = std::min(ch, max_ctas);
  if (min_ctas > 0) ch = std::max(ch, min_ctas);
  return ch;
}

double nvls_efficiency(int sm) { return kNvlsEfficiency[sm >= 100 ? 3 : sm >= 90 ? 2 : sm >= 80 ? 1 : 0]; }

bool nvls_op_supported(CollKind coll, int type, int op) {
  if (coll == CollKind::kAllGather) return true;
  // ncclDataType_t: 2 int32 3 uint32 4 int64 5 uint64 6 half 7 float 8 double 9 bfloat16;
  // ncclRedOp_t: 0 sum 2 max 3 min.
  const bool sum = op == 0, minmax = op == 2 || op == 3;
  switch (type) {
    case 2: case 3: case 4: case 5: case 6: case 9: return sum || minmax;
    case 7: case 8: return sum;
    default: return false;
  }
}

HostCosts host_costs(int cores, int ranks_per_host, int max_channels) {
  HostCosts h;
  h.cores = std::max(cores, 1);
  h.ranks_per_host = std::max(ranks_per_host, 1);
  h.max_channels = std::max(max_channels, 1);
  h.launch_us = kHostLaunchUs;
  h.channel_us = kHostChannelUs;
  for (int row = 0; row < 2; ++row) {
    const int a = row == 0 ? kTree : kRing;
    for (int p = 0; p < kP; ++p) {
      h.hop_us[a][p] = kHostHopUs[row][p];
      h.oversub_hop_us[a][p] = kHostOversubHopUs[row][p];
    }
  }
  for (int p = 0; p < kP; ++p) h.channel_gbps[p] = kHostChannelGbps[p];
  return h;
}

bool CostModel::init(const TunerInput& in, std::string* error) {
  auto fail = [&](const std::string& s) {
    if (error) *error = "tuner: " + s;
    return false;
  };
  if (in.nranks < 1) return fail(format("nranks %d < 1", in.nranks));
  // Machines may hold different numbers of ranks (NCCL too allows it); ppn is then nranks / nnodes
  // rounded down, as NCCL's integer arithmetic has it.
  if (in.nnodes < 1 || in.nnodes > in.nranks)
    return fail(format("nnodes %d must lie in 1..nranks (%d)", in.nnodes, in.nranks));
  if (in.sm_min <= 0 || in.sm_max < in.sm_min)
    return fail(format("bad compute capabilities sm_min %d sm_max %d", in.sm_min, in.sm_max));
  if (in.ring == nullptr && in.tree == nullptr) return fail("no graph (ring and tree are both null)");
  if (in.nvls != nullptr && (in.nvls->nchannels < 0 || in.nvls->bw_intra < 0 || in.nvls->bw_inter < 0))
    return fail("the NVLS graph has a negative channel count or bandwidth");
  for (const TopoGraph* g : {in.ring, in.tree}) {
    if (g == nullptr) continue;
    if (g->nchannels < 1) return fail(format("graph %d has %d channels", g->id, g->nchannels));
    if (g->bw_intra < 0 || g->bw_inter < 0) return fail(format("graph %d has a negative bandwidth", g->id));
  }
  if (in.ring_channels < 0 || in.tree_channels < 0) return fail("negative channel count");
  if (in.host.cores > 0) {
    const HostCosts& h = in.host;
    if (in.nnodes != 1) return fail(format("the host model describes one host, not %d", in.nnodes));
    if (h.ranks_per_host < 1 || h.max_channels < 1)
      return fail(format("bad host model: %d ranks, %d channels", h.ranks_per_host, h.max_channels));
    for (int p = 0; p < kP; ++p)
      if (h.channel_gbps[p] <= 0) return fail("bad host model: a protocol moves no data");
  }

  in_ = in;
  for (int c = 0; c < kNumColls; c++)
    for (int a = 0; a < kA; a++)
      for (int p = 0; p < kP; p++) lat_[c][a][p] = bw_[c][a][p] = 0;

  // Thread limits (ncclTopoTuneModel, NCCL_NTHREADS / NCCL_LL128_NTHREADS unset).
  for (int a = 0; a < kA; a++)
    for (int p = 0; p < kP; p++) max_threads_[a][p] = 0;
  bool slow_ring = in.ring != nullptr && in.ring->bw_intra * in.ring->nchannels <= kPciBw;
  max_threads_[kRing][kSimple] = slow_ring ? 256 : kSimpleMaxNthreads;
  max_threads_[kTree][kSimple] = kSimpleMaxNthreads;
  for (int a = 2; a <= 5; a++) max_threads_[a][kSimple] = kMaxNthreads;  // CollNet, NVLS
  max_threads_[kPat][kSimple] = kMaxNthreads;
  max_threads_[kRing][kLL] = max_threads_[kTree][kLL] = kLLMaxNthreads;
  max_threads_[kRing][kLL128] = max_threads_[kTree][kLL128] = kLL128MaxNthreads;

  ll128_ok_ = ll128_default(in, in.ring != nullptr ? kRing : kTree, nullptr);
  if (in.nranks <= 1) return true;  // NCCL stops here: a 1-rank communicator copies, nothing to tune

  for (int c = 0; c < kNumColls; c++) {
    CollKind coll = static_cast<CollKind>(c);
    for (int a = 0; a < kA; a++) {
      if (!modelled(coll, a) || graph_of(in, a) == nullptr || (host_model() && (a == kNvls || a == kNvlsTree)))
        continue;
      for (int p = 0; p < kP; p++) {
        if (host_model()) {
          lat_[c][a][p] = host_latency(in, coll, a, p, 1, nullptr);
          bw_[c][a][p] = is_enabled(in, coll, a, p, nullptr) ? host_bandwidth(in, coll, a, p, 1, nullptr) : 0;
          continue;
        }
        lat_[c][a][p] = model_latency(in, coll, a, p, nullptr);
        bw_[c][a][p] = is_enabled(in, coll, a, p, nullptr) ? model_bandwidth(in, coll, a, p, nullptr) : 0;
      }
    }
  }
  return true;
}

double CostModel::latency_us(CollKind coll, AlgoKind algo, ProtoKind proto) const {
  int c = coll_index(coll), a = static_cast<int>(algo), p = static_cast<int>(proto);
  if (c < 0 || c >= kNumColls || a < 0 || a >= kA || p < 0 || p >= kP) return 0;
  return lat_[c][a][p];
}

double CostModel::bandwidth(CollKind coll, AlgoKind algo, ProtoKind proto) const {
  int c = coll_index(coll), a = static_cast<int>(algo), p = static_cast<int>(proto);
  if (c < 0 || c >= kNumColls || a < 0 || a >= kA || p < 0 || p >= kP) return 0;
  return bw_[c][a][p];
}

bool CostModel::enabled(CollKind coll, AlgoKind algo, ProtoKind proto) const {
  return bandwidth(coll, algo, proto) > 0;
}

double CostModel::time_us(CollKind coll, size_t bytes, AlgoKind algo, ProtoKind proto, int num_pipe_ops,
                          int* nchannels) const {
  // ncclTopoGetAlgoTime.
  int a = static_cast<int>(algo), p = static_cast<int>(proto);
  double bw = bandwidth(coll, algo, proto);
  if (bw <= 0) return -1;
  if (nchannels) *nchannels = comm_channels(in_, a);
  if (host_model()) {
    // Every operation of a group pays its own hops; the fastest channel count, fewest on a tie.
    double best = -1;
    for (int nc = 1; nc <= in_.host.max_channels; ++nc) {
      const double t = std::max(num_pipe_ops, 1) * host_latency(in_, coll, a, p, nc, nullptr) +
                       static_cast<double>(bytes) / (1000.0 * host_bandwidth(in_, coll, a, p, nc, nullptr));
      if (best < 0 || t < best) {
        best = t;
        if (nchannels) *nchannels = nc;
      }
    }
    return best;
  }
  double lat = latency_us(coll, algo, proto);
  int log_size = log2i(static_cast<long long>(bytes >> 6));
  if (a == kTree && coll == CollKind::kAllReduce && log_size >= 0 && log_size < 23)
    bw *= kTreeCorrectionFactor[p][log_size];
  if (a == kNvlsTree && coll == CollKind::kAllReduce && log_size >= 0 && log_size < 24 && in_.sm_min >= 100 &&
      in_.cpu_arch == CpuArch::kX86)
    bw *= kTreeCorrectionFactor[p][log_size];
  if (a == kRing && p == kSimple && in_.nnodes > 1 && coll == CollKind::kAllReduce &&
      bytes / (static_cast<size_t>(comm_channels(in_, kRing)) * in_.nranks) >= 64)
    lat *= in_.sm_min < 80 ? kRingPlateauFactorPreAmpere : kRingPlateauFactor;
  int pipe = std::max(num_pipe_ops, 1);
  int lat_count = a == kRing ? pipe : (pipe + kMaxDevWorkBatchColls - 1) / kMaxDevWorkBatchColls;
  return lat * lat_count + static_cast<double>(bytes) / (1000.0 * bw);
}

TunerChoice CostModel::choose(CollKind coll, size_t bytes, int num_pipe_ops, bool allow_pat, bool nvls_ok) const {
  TunerChoice out;
  if (coll_index(coll) < 0 || coll_index(coll) >= kNumColls) return out;
  int best_a = -1, best_p = -1, best_nc = 1;
  double best = 3600000000.0;
  if (in_.nranks == 1) {
    // updateCollCostTable: a 1-rank communicator always runs Ring/Simple (a copy), time 0.
    best_a = kRing, best_p = kSimple, best = 0;
  } else {
    // topoGetAlgoInfo: the lowest time wins; ties go to the lower algorithm, then protocol index.
    for (int a = 0; a < kA; a++) {
      if (a == kPat && !allow_pat) continue;
      if ((a == kNvls || a == kNvlsTree) && !nvls_ok) continue;  // getAlgoInfo: no multimem reduction here
      for (int p = 0; p < kP; p++) {
        int nc = 1;
        double t = time_us(coll, bytes, static_cast<AlgoKind>(a), static_cast<ProtoKind>(p), num_pipe_ops, &nc);
        if (t >= 0 && t < best) best_a = a, best_p = p, best = t, best_nc = nc;
      }
    }
  }
  if (best_a < 0) return out;  // valid = false: nothing enabled/available
  return finish(bytes, best_a, best_p, best_nc, best);
}

TunerChoice CostModel::choose_combo(CollKind coll, size_t bytes, AlgoKind algo, ProtoKind proto, int num_pipe_ops) const {
  if (coll_index(coll) < 0 || coll_index(coll) >= kNumColls) return TunerChoice();
  int nc = 1;
  const double t = in_.nranks == 1 ? 0.0 : time_us(coll, bytes, algo, proto, num_pipe_ops, &nc);
  if (t < 0) return TunerChoice();
  return finish(bytes, static_cast<int>(algo), static_cast<int>(proto), nc, t);
}

TunerChoice CostModel::finish(size_t bytes, int best_a, int best_p, int best_nc, double best) const {
  TunerChoice out;
  out.algo = static_cast<AlgoKind>(best_a);
  out.proto = static_cast<ProtoKind>(best_p);
  out.time_us = best;
  out.valid = true;
  if (host_model()) {
    // The host runs a thread per channel: the model's fastest count, no thread trimming.
    out.nchannels = in_.nranks == 1 ? 1 : best_nc;
    out.nthreads = 1;
    return out;
  }

  // Channel then thread trimming: fewer channels, then fewer threads, while each thread would get less
  // than threadThreshold bytes (Ring/LL's threshold scales with nRanks).
  long long nc = comm_channels(in_, best_a);
  long long nt = max_threads_[best_a][best_p];
  long long threshold = kThreadThresholds[best_p];
  if (best_a == kRing && best_p == kLL) threshold *= in_.nranks;
  const long long nbytes = static_cast<long long>(bytes);
  if (best_a == kNvls || best_a == kNvlsTree) {
    // "NVLS should not need more than 16 channels to get peak BW": comm->nvlsChannels, all threads.
    out.nchannels = static_cast<int>(nc);
    out.nthreads = static_cast<int>(nt);
    return out;
  }
  while (nbytes < nc * nt * threshold && nc >= 2) nc--;
  while (nbytes < nc * nt * threshold && nt % 128 == 0) nt /= 2;
  if (best_p == kSimple) {
    if (best_a == kRing) nt += kWarpSize;      // extra warp for sync
    if (best_a == kTree) nt += 4 * kWarpSize;  // split thread model
  }
  if (nt / kWarpSize < 3) nt = 3 * kWarpSize;
  if (best_a == kTree || best_a == kPat) nt = kMaxNthreads;  // Tree and PAT always use all threads
  out.nchannels = static_cast<int>(nc);
  out.nthreads = static_cast<int>(nt);
  return out;
}

std::string CostModel::explain(CollKind coll, size_t bytes, AlgoKind algo, ProtoKind proto) const {
  const int c = coll_index(coll), a = static_cast<int>(algo), p = static_cast<int>(proto);
  std::string head = format("%s %zu B, %s: ", coll_name(coll), bytes, combo_name(a, p).c_str());
  if (c < 0 || c >= kNumColls || a < 0 || a >= kA || p < 0 || p >= kP) return head + "unknown combination";
  if (in_.nranks == 1) return head + "1 rank: NCCL does not tune, it runs Ring/Simple (a local copy), time 0";

  if (!modelled(coll, a)) return head + "unavailable - " + not_modelled_reason(coll, a);
  if (graph_of(in_, a) == nullptr)
    return head + "unavailable - " +
           ((a == kNvls || a == kNvlsTree) && !in_.nvls_why.empty()
                ? in_.nvls_why
                : "no " + std::string(algo_name(algo)) + " graph was given" +
                      (a == kNvls || a == kNvlsTree ? " (NVLink SHARP needs an NVSwitch machine of sm90+)" : ""));
  std::string why;
  if (!is_enabled(in_, coll, a, p, &why)) return head + "unavailable - " + why;

  std::string lat_how, bw_how, s;
  if (host_model()) {
    int nc = 1;
    const double t = time_us(coll, bytes, algo, proto, 1, &nc);
    const double lat = host_latency(in_, coll, a, p, nc, &lat_how);
    const double bw = host_bandwidth(in_, coll, a, p, nc, &bw_how);
    s = head + format("%.1f us on %d channel%s = latency %.1f us (%s) + %.1f us for %zu B at %.2f GB/s [host: %s]", t,
                      nc, nc == 1 ? "" : "s", lat, lat_how.c_str(), static_cast<double>(bytes) / (1000.0 * bw), bytes,
                      bw, bw_how.c_str());
  } else {
    double lat = model_latency(in_, coll, a, p, &lat_how);
    double bw = model_bandwidth(in_, coll, a, p, &bw_how);
    double t = time_us(coll, bytes, algo, proto);

    // The adjustments time_us applies for this size.
    std::string lat_s = format("latency %.1f us (%s)", lat, lat_how.c_str());
    double eff_bw = bw;
    std::string bw_note;
    int log_size = log2i(static_cast<long long>(bytes >> 6));
    if ((a == kTree && coll == CollKind::kAllReduce && log_size >= 0 && log_size < 23) ||
        (a == kNvlsTree && coll == CollKind::kAllReduce && log_size >= 0 && log_size < 24 && in_.sm_min >= 100 &&
         in_.cpu_arch == CpuArch::kX86)) {
      double f = kTreeCorrectionFactor[p][log_size];
      eff_bw = bw * f;
      bw_note = format(" = %.1f x tree correction %s", bw, num(f).c_str());
    }
    if (a == kRing && p == kSimple && in_.nnodes > 1 && coll == CollKind::kAllReduce &&
        bytes / (static_cast<size_t>(comm_channels(in_, kRing)) * in_.nranks) >= 64) {
      double f = in_.sm_min < 80 ? kRingPlateauFactorPreAmpere : kRingPlateauFactor;
      lat_s = format("latency %.1f us (%s; x %s multi-node ring plateau = %.1f)", lat * f, lat_how.c_str(),
                     num(f).c_str(), lat * f);
    }
    s = head + format("%.1f us = %s + %.1f us for %zu B at %.1f GB/s%s [%s]", t, lat_s.c_str(),
                      static_cast<double>(bytes) / (1000.0 * eff_bw), bytes, eff_bw, bw_note.c_str(), bw_how.c_str());
  }

  // Where it stands against the rest.
  TunerChoice ch = choose(coll, bytes);
  int best_a = static_cast<int>(ch.algo), best_p = static_cast<int>(ch.proto);
  if (ch.valid && best_a == a && best_p == p) {
    int ru_a = -1, ru_p = -1;
    double ru = 0;
    for (int aa = 0; aa < kA; aa++)
      for (int pp = 0; pp < kP; pp++) {
        if (aa == a && pp == p) continue;
        double tt = time_us(coll, bytes, static_cast<AlgoKind>(aa), static_cast<ProtoKind>(pp));
        if (tt >= 0 && (ru_a < 0 || tt < ru)) ru_a = aa, ru_p = pp, ru = tt;
      }
    if (host_model())
      s += format("; chosen, on %d channel%s", ch.nchannels, ch.nchannels == 1 ? "" : "s");
    else
      s += format("; chosen, on %d channels x %d threads", ch.nchannels, ch.nthreads);
    if (ru_a >= 0) s += format("; runner-up %s %.1f us", combo_name(ru_a, ru_p).c_str(), ru);
    else s += "; nothing else is enabled";
  } else if (ch.valid) {
    s += format("; not chosen: %s %.1f us is lower", combo_name(best_a, best_p).c_str(), ch.time_us);
  }
  return s;
}

std::string CostModel::describe() const {
  std::string out;
  const TunerInput& in = in_;
  if (host_model()) {
    const HostCosts& h = in.host;
    out += format("Tuner: host model (docs/tuner.md section 6): nRanks %d on %d cores, 1..%d channels; launch %s us, "
                  "each further channel %s us; per channel LL/LL128/Simple %s/%s/%s GB/s\n",
                  in.nranks, h.cores, h.max_channels, num(h.launch_us).c_str(), num(h.channel_us).c_str(),
                  num(h.channel_gbps[kLL]).c_str(), num(h.channel_gbps[kLL128]).c_str(),
                  num(h.channel_gbps[kSimple]).c_str());
    for (int a : {kTree, kRing})
      out += format("  %s hops LL/LL128/Simple: %s/%s/%s us, %s/%s/%s us with more rank threads than cores\n",
                    algo_name(static_cast<AlgoKind>(a)), num(h.hop_us[a][kLL]).c_str(), num(h.hop_us[a][kLL128]).c_str(),
                    num(h.hop_us[a][kSimple]).c_str(), num(h.oversub_hop_us[a][kLL]).c_str(),
                    num(h.oversub_hop_us[a][kLL128]).c_str(), num(h.oversub_hop_us[a][kSimple]).c_str());
    std::string why;
    out += format("  LL128: %s; the table below is for one channel\n",
                  ll128_default(in, kRing, &why) ? "on by default" : why.c_str());
  } else {
    out += format("Tuner: nRanks %d nNodes %d ppn %d sm %d/%d (%s) cpu %s, llMaxBw %s GB/s, net overhead %s us\n",
                  in.nranks, in.nnodes, in.nranks / in.nnodes, in.sm_min, in.sm_max, kGenNames[gen_index(in)],
                  in.cpu_vendor == CpuVendor::kAmd ? "AMD" : in.cpu_vendor == CpuVendor::kIntel ? "Intel" : "other",
                  num(kLlMaxBws[ll_row(in)][nodes_index(in)]).c_str(), num(in.nnodes > 1 ? net_overhead(in) : 0).c_str());
  }
  for (int a : {kTree, kRing}) {
    if (host_model()) break;
    const TopoGraph* g = graph_of(in, a);
    if (g == nullptr) {
      out += format("  %s: no graph, unavailable\n", algo_name(static_cast<AlgoKind>(a)));
      continue;
    }
    std::string why;
    bool ll128 = ll128_default(in, a, &why);
    out += format("  %s graph: %d ch x %s/%s GB/s, type %s/%s, latencyInter %s us, %d comm channels, %s\n",
                  algo_name(static_cast<AlgoKind>(a)), g->nchannels, num(g->bw_intra).c_str(),
                  num(g->bw_inter).c_str(), path_type_name(g->type_intra), path_type_name(g->type_inter),
                  num(g->latency_inter).c_str(), comm_channels(in, a),
                  ll128 ? "LL128 on by default" : why.c_str());
  }
  if (!host_model()) {
    if (in.nvls != nullptr)
      out += format("  NVLS graph: %d ch x %s/%s GB/s, %d comm NVLS channels (NVLS_NCHANNELS), efficiency %s\n",
                    in.nvls->nchannels, num(in.nvls->bw_intra).c_str(), num(in.nvls->bw_inter).c_str(),
                    comm_channels(in, kNvls), num(kNvlsEfficiency[gen_index(in)]).c_str());
    else
      out += "  NVLS: unavailable (" + (in.nvls_why.empty() ? std::string("no NVLS graph") : in.nvls_why) + ")\n";
    std::string why;
    out += format("  PAT (AllGather/ReduceScatter, tree graph): %s\n",
                  is_enabled(in, CollKind::kAllGather, kPat, kSimple, &why) ? "on (Simple)" : why.c_str());
  }
  out += "  CollNetDirect/CollNetChain (SHARP) are not modelled by cclab: bandwidth 0\n";

  // The TUNING table, in NCCL's layout: blocks of three algorithms, rows in ncclFunc_t order,
  // "latency(us)/bandwidth(GB/s)" per protocol.
  const int kLineLen = 1024;
  char line[kLineLen];
  for (int block = 0; block < (kA + 2) / 3; block++) {
    int off = snprintf(line, kLineLen, "  Algorithm   |");
    for (int ba = 0; ba < 3; ba++) {
      int a = block * 3 + ba;
      if (a >= kA) continue;
      off += snprintf(line + off, std::max(0, kLineLen - off), " %14s   %14s   %14s |", "",
                      algo_name(static_cast<AlgoKind>(a)), "");
    }
    out += line + std::string("\n");
    off = snprintf(line, kLineLen, "  Protocol    |");
    for (int ba = 0; ba < 3; ba++) {
      for (int p = 0; p < kP; p++)
        off += snprintf(line + off, std::max(0, kLineLen - off), " %14s |", proto_name(static_cast<ProtoKind>(p)));
    }
    out += line + std::string("\n");
    off = snprintf(line, kLineLen, " Max NThreads |");
    for (int ba = 0; ba < 3; ba++) {
      int a = block * 3 + ba;
      if (a >= kA) continue;
      for (int p = 0; p < kP; p++)
        off += snprintf(line + off, std::max(0, kLineLen - off), " %14d |", max_threads_[a][p]);
    }
    out += line + std::string("\n");
    for (CollKind coll : kNcclFuncOrder) {
      int c = coll_index(coll);
      off = snprintf(line, kLineLen, "%13s |", coll_name(coll));
      for (int ba = 0; ba < 3; ba++) {
        int a = block * 3 + ba;
        if (a >= kA) continue;
        for (int p = 0; p < kP; p++)
          off += snprintf(line + off, std::max(0, kLineLen - off), "%8.1f/%6.1f |", lat_[c][a][p], bw_[c][a][p]);
      }
      out += line + std::string("\n");
    }
  }
  if (host_model()) return out;
  long long ring_ll = static_cast<long long>(kThreadThresholds[kLL]) * in.nranks;
  out += format("threadThresholds %d/%d/%d | %lld/%d/%d\n", kThreadThresholds[kLL], kThreadThresholds[kLL128],
                kThreadThresholds[kSimple], ring_ll, kThreadThresholds[kLL128], kThreadThresholds[kSimple]);
  return out;
}

}  // namespace cclab
