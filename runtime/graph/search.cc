// runtime/graph/search.cc - the channel search (NCCL 2.28.9's ncclTopoCompute, src/graph/search.cc).
//
// [SECTION] Model      machine 0 of the Topology as the search sees it: GPUs, NETs, routes as lists of
//                      bandwidth "resources" (links; all NVSwitches of the machine act as one, as in NCCL)
// [SECTION] Search     the recursive placement of one channel after another (ncclTopoSearchRec*)
// [SECTION] Compute    the outer loop over speeds, path types, sameChannels and crossNic, then channel
//                      duplication and the second pass that tries higher speeds (ncclTopoCompute)
// [SECTION] Public     search_graph, ring_order, describe_graph
//
// The decisions are NCCL's, in NCCL's order, so that cclab finds the channels NCCL would find: the same
// speed ladders, the same per-channel bandwidth subtraction (with NCCL's rounding to 1/1000 GB/s), the
// same candidate orders (NVSwitch neighbours first, the NIC's local GPU first, PCI order first), the same
// step budgets. The data structures are our own: a route is a list of resource ids with flags instead of
// NCCL's link pointers, and GPUs/NETs are indices into small vectors.
#include "graph/search.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "kernels/nvls.h"

namespace cclab {
namespace {

// ---- [SECTION] Model ---------------------------------------------------------------------------------

constexpr int kMaxChannels = 64;  // NCCL's MAXCHANNELS; a channel's "used" bit lives in a uint64_t
constexpr float kLocBw = 5000.0f; // NCCL's LOC_BW

// NCCL's step budgets (search.cc): "Try to keep all searches within one second".
constexpr int64_t kGlobalTimeout = 1LL << 19;
constexpr int kTimeout = 1 << 14;
constexpr int kTimeoutTree = 1 << 14;
constexpr int kTimeoutSameChannels = 1 << 8;

constexpr float kSpeedIntra[] = {40.0f, 30.0f, 20.0f, 18.0f, 15.0f, 12.0f, 10.0f,
                                 9.0f,  7.0f,  6.0f,  5.0f,  4.0f,  3.0f};
constexpr float kSpeedInter[] = {48.0f, 30.0f, 28.0f, 24.0f, 20.0f, 18.0f, 15.0f,
                                 12.0f, 10.0f, 9.0f,  7.0f,  6.0f,  5.0f,  4.0f,
                                 3.0f,  2.4f,  1.2f,  0.24f, 0.12f};
constexpr float kSm90SpeedIntra[] = {60.0f, 50.0f, 40.0f, 30.0f, 24.0f, 20.0f,
                                     15.0f, 12.0f, 11.0f, 6.0f,  3.0f};
constexpr float kSm90SpeedInter[] = {48.0f, 45.0f, 42.0f, 40.0f, 30.0f, 24.0f,
                                     22.0f, 20.0f, 17.5f, 15.0f, 12.0f, 6.0f,
                                     3.0f,  2.4f,  1.2f,  0.24f, 0.12f};
constexpr float kSm100SpeedIntra[] = {90.0f, 80.0f, 70.0f, 60.0f, 50.0f, 40.0f,
                                      30.0f, 24.0f, 20.0f, 19.0f, 18.0f};
constexpr float kSm100SpeedInter[] = {96.0f, 48.0f, 45.1f, 42.0f, 40.0f, 30.0f,
                                      24.0f, 22.0f, 20.0f, 17.5f, 15.0f, 12.0f,
                                      6.0f,  3.0f,  2.4f,  1.2f,  0.24f, 0.12f};

constexpr int kPathLoc = static_cast<int>(PathType::kLoc);
constexpr int kPathNvl = static_cast<int>(PathType::kNvl);
constexpr int kPathPix = static_cast<int>(PathType::kPix);
constexpr int kPathPxn = static_cast<int>(PathType::kPxn);
constexpr int kPathPhb = static_cast<int>(PathType::kPhb);
constexpr int kPathSys = static_cast<int>(PathType::kSys);
constexpr int kPathDis = static_cast<int>(PathType::kDis);

// NCCL's SUB_ROUND: "manipulating floats often results in rounding errors".
inline void sub_round(float* a, float b) { *a = roundf((*a - b) * 1000) / 1000; }

int mirror_bits(int val, int pow2) {  // NCCL's mirrorBits (topo.h)
  int mirror = 0;
  for (int b = 1, mb = (pow2 >> 1); b < pow2; b <<= 1, mb >>= 1) {
    if (val & b) mirror |= mb;
  }
  return mirror;
}
bool is_pow2(int v) { return v > 0 && (v & (v - 1)) == 0; }

// One link of a route: the resource it consumes forward, the one it may consume backward, and the
// reasons NCCL charges it differently (PCIe links through an Intel root complex; reverse traffic into
// pre-Ampere GPUs and into POWER CPUs over NVLink).
struct Hop {
  int res = -1;
  int rev = -1;
  bool pci = false;
  bool into_old_gpu = false;      // far end is a GPU with sm < 80
  bool into_power_nvl = false;    // far end is a POWER CPU reached over NVLink
};

struct Route {
  int type = kPathDis;
  float bw = 0;                   // bottleneck of the resources' initial capacities
  std::vector<Hop> hops;
  bool intel_phb = false;         // PHB route through an Intel x86 CPU (NCCL's INTEL_P2P_OVERHEAD)
  int count() const { return static_cast<int>(hops.size()); }
};

enum Kind { kNone = -1, kGpuKind = 0, kNetKind = 1 };

// The search's state of one graph (NCCL's ncclTopoGraph while it is being searched).
struct Graph {
  int pattern = 4;
  int cross_nic = 0;              // 0, 1, or 2 (NCCL: 2 = pairs of channels swap NICs)
  int min_channels = 1, max_channels = 32;
  int nchannels = 0;
  float bw_intra = 0, bw_inter = 0;
  float latency_inter = 0;
  int type_intra = kPathLoc, type_inter = kPathPix;
  int same_channels = 1;
  int nhops = 0;
  std::vector<int> intra;         // [kMaxChannels * ngpus] GPU indices
  std::vector<int> inter;         // [kMaxChannels * 2] NET indices
};

class Searcher {
 public:
  explicit Searcher(const Topology& topo) : topo_(topo) { build(); }
  bool compute(TopoGraph* out, std::string* error);

  // NCCL's multi-machine NVLS search picks, NET after NET, the NET's local GPU (net.localGpu) as the head
  // of one channel, each GPU once (search_rec_net: "NVLS search only tries to find NIC:GPU combinations
  // to compute the heads"). One entry per head: its GPU's dev, the bandwidth its NET path carries (the
  // GPU-to-NET path's bottleneck and the port's rate) and the path type.
  struct NvlsHead {
    int dev;
    float bw;
    int type;
    float latency;
    int net;  // the NET's dev (the channel's NET: NCCL's graph->inter[c * 2])
  };
  std::vector<NvlsHead> nvls_heads() const {
    std::vector<NvlsHead> heads;
    for (int n = 0; n < nnets_; ++n) {
      const int g = net_local_gpu_[n];
      if (g < 0) continue;
      const int dev = topo_.nodes[gpu_node_[g]].dev;
      bool dup = false;
      for (const NvlsHead& h : heads) dup = dup || h.dev == dev;
      if (dup) continue;
      heads.push_back(NvlsHead{dev, std::min(gn(g, n).bw, net_bw_[n]), gn(g, n).type,
                               static_cast<float>(topo_.nodes[net_node_[n]].net_latency_us), topo_.nodes[net_node_[n]].dev});
    }
    return heads;
  }

 private:
  // Model.
  void build();
  Route make_route(int from_node, int to_node, bool from_gpu) const;
  int res_of_link(int link) const;
  float route_min_cap(const Route& r) const;
  void local_nets(int g, std::vector<int>* out) const;   // ncclTopoGetLocal(GPU g -> NET)
  void local_gpus(int n, std::vector<int>* out, int* type) const;  // ncclTopoGetLocal(NET n -> GPU)
  int local_net_uncached(int g, int channel) const;       // ncclTopoGetLocalNet
  int local_net(int g, int channel) const { return local_net_[g * kMaxChannels + channel]; }
  int local_gpu_of_net(int n) const;                      // ncclTopoGetLocalGpu
  void select_nets_uncached(int type_inter, int g, std::vector<int>* nets) const;  // ncclTopoSelectNets
  const std::vector<int>& select_nets(int type_inter, int g) const {
    return select_nets_[type_inter * (ngpus_ + 1) + (g + 1)];
  }
  int gpu_pci_bw(int g) const;

  // Search.
  bool follow_path(const Route& r, int max_steps, float bw, int* steps);
  bool follow(Graph* graph, int kind1, int i1, int kind2, int i2, float mult);
  void search_rec(Graph* graph, Graph* save, int* time);
  void search_rec_net(Graph* graph, Graph* save, int back_to_net, int back_to_first, int* time);
  void search_rec_gpu(Graph* graph, Graph* save, int g, int step, int back_to_net, int back_to_first,
                      int forced, int* time);
  void try_gpu(Graph* graph, Graph* save, int step, int back_to_net, int back_to_first, int forced,
               int* time, int kind, int index, int g);
  void next_gpu_sort(const Graph& graph, int g, std::vector<int>* next, int sort_net);
  bool check_net(const Graph& graph, int start_net, int n, int step) const;
  void compare(const Graph& graph, const Graph& ref, bool* copy) const;
  void search_params(int pattern, int* back_to_net, int* back_to_first) const;
  void dup_channels(Graph* graph) const;

  const Topology& topo_;
  int ngpus_ = 0, nnets_ = 0;
  bool inter_ = false;            // several machines: channels start and end at NETs
  bool has_nvs_ = false;
  int cc_min_ = 0;
  CpuArch cpu_arch_ = CpuArch::kUnknown;
  CpuVendor cpu_vendor_ = CpuVendor::kUnknown;
  std::vector<int> gpu_node_, net_node_;
  std::vector<float> cap_;        // remaining bandwidth per resource
  std::vector<int> nvs_up_, nvs_down_;  // collapsed NVSwitch resources per GPU (-1: none)
  int nlinks_ = 0;
  std::vector<Route> gg_, gn_, ng_;     // [a*ngpus+b], [g*nnets+n], [n*ngpus+g]
  std::vector<float> net_bw_;           // NCCL's net.bw, taken per channel in search_rec_net
  std::vector<uint64_t> net_asic_;
  std::vector<int> net_port_;
  std::vector<int> net_local_gpu_;
  std::vector<std::vector<int>> net_local_gpus_;  // ncclTopoGetLocal(NET n -> GPU), and its type
  std::vector<int> net_local_type_;
  std::vector<int> local_net_;                  // [g * kMaxChannels + c]
  std::vector<std::vector<int>> select_nets_;   // [type_inter * (ngpus + 1) + g + 1]
  std::vector<uint64_t> gpu_used_;
  std::vector<int> gpu_pci_bw_;
  // Scratch, allocated once: candidate lists per recursion level (channel, step) and sort scores.
  std::vector<std::vector<int>> next_buf_;
  struct Score {
    int g, start_index, intra_nhops, intra_bw, inter_nhops, inter_pci_bw, inter_bw;
  };
  std::vector<Score> scores_;
  float max_bw_ = 0, total_bw_ = 0;

  const Route& gg(int a, int b) const { return gg_[a * ngpus_ + b]; }
  const Route& gn(int g, int n) const { return gn_[g * nnets_ + n]; }
  const Route& ng(int n, int g) const { return ng_[n * ngpus_ + g]; }
};

int Searcher::res_of_link(int link) const {
  const TopoLink& l = topo_.links[link];
  const TopoNode& from = topo_.nodes[l.from];
  const TopoNode& to = topo_.nodes[l.to];
  // NCCL merges every NVSwitch of a machine into one NVS node whose link to a GPU carries all of that
  // GPU's NVLinks; charge GPU<->NVSwitch links to one resource per GPU and direction accordingly.
  if (from.type == TopoNodeType::kGpu && to.type == TopoNodeType::kNvs && from.machine == 0) {
    for (int g = 0; g < ngpus_; ++g) {
      if (gpu_node_[g] == l.from && nvs_up_[g] >= 0) return nvs_up_[g];
    }
  }
  if (from.type == TopoNodeType::kNvs && to.type == TopoNodeType::kGpu && to.machine == 0) {
    for (int g = 0; g < ngpus_; ++g) {
      if (gpu_node_[g] == l.to && nvs_down_[g] >= 0) return nvs_down_[g];
    }
  }
  return link;
}

Route Searcher::make_route(int from_node, int to_node, bool from_gpu) const {
  Route r;
  const TopoPath& p = topo_.path(from_node, to_node);
  r.type = static_cast<int>(p.type);
  if (p.type == PathType::kDis || p.type == PathType::kLoc || p.links.empty()) {
    if (p.type != PathType::kLoc) r.type = kPathDis;
    return r;
  }
  bool through_intel = false;
  for (int li : p.links) {
    const TopoLink& l = topo_.links[li];
    const TopoNode& far = topo_.nodes[l.to];
    Hop h;
    h.res = res_of_link(li);
    h.rev = l.reverse >= 0 ? res_of_link(l.reverse) : -1;
    h.pci = l.type == LinkType::kPci;
    h.into_old_gpu = far.type == TopoNodeType::kGpu && far.sm < 80 && !from_gpu;
    h.into_power_nvl = far.type == TopoNodeType::kCpu && far.arch == CpuArch::kPower &&
                       l.type == LinkType::kNvl;
    if (far.type == TopoNodeType::kCpu && far.arch == CpuArch::kX86 && far.vendor == CpuVendor::kIntel) {
      through_intel = true;
    }
    r.hops.push_back(h);
  }
  r.intel_phb = from_gpu && r.type == kPathPhb && through_intel;
  return r;
}

float Searcher::route_min_cap(const Route& r) const {
  if (r.type == kPathLoc) return kLocBw;
  if (r.hops.empty()) return 0;
  float bw = cap_[r.hops[0].res];
  for (const Hop& h : r.hops) bw = std::min(bw, cap_[h.res]);
  return bw;
}

void Searcher::build() {
  gpu_node_ = topo_.gpus(0);
  net_node_ = topo_.nets(0);
  ngpus_ = static_cast<int>(gpu_node_.size());
  // Order GPUs by dev (NCCL orders them by PCI bus id, which presets number in dev order).
  std::sort(gpu_node_.begin(), gpu_node_.end(),
            [&](int a, int b) { return topo_.nodes[a].dev < topo_.nodes[b].dev; });
  std::sort(net_node_.begin(), net_node_.end(),
            [&](int a, int b) { return topo_.nodes[a].dev < topo_.nodes[b].dev; });
  inter_ = topo_.machines > 1;
  nnets_ = inter_ ? static_cast<int>(net_node_.size()) : 0;
  if (!inter_) net_node_.clear();
  has_nvs_ = !topo_.nodes_of(TopoNodeType::kNvs, 0).empty();

  cc_min_ = 0;
  for (int g = 0; g < ngpus_; ++g) {
    int sm = topo_.nodes[gpu_node_[g]].sm;
    cc_min_ = g == 0 ? sm : std::min(cc_min_, sm);
  }
  std::vector<int> cpus = topo_.nodes_of(TopoNodeType::kCpu, 0);
  if (!cpus.empty()) {
    cpu_arch_ = topo_.nodes[cpus[0]].arch;
    cpu_vendor_ = topo_.nodes[cpus[0]].vendor;
  }

  // Resources: every link, then per GPU the two directions of its merged NVSwitch connection.
  nlinks_ = static_cast<int>(topo_.links.size());
  cap_.resize(nlinks_);
  for (int i = 0; i < nlinks_; ++i) cap_[i] = static_cast<float>(topo_.links[i].model_bw);
  nvs_up_.assign(ngpus_, -1);
  nvs_down_.assign(ngpus_, -1);
  for (int g = 0; g < ngpus_; ++g) {
    float up = 0, down = 0;
    bool any = false;
    for (int li : topo_.nodes[gpu_node_[g]].out) {
      const TopoLink& l = topo_.links[li];
      if (topo_.nodes[l.to].type != TopoNodeType::kNvs) continue;
      any = true;
      up += static_cast<float>(l.model_bw);
      if (l.reverse >= 0) down += static_cast<float>(topo_.links[l.reverse].model_bw);
    }
    if (!any) continue;
    nvs_up_[g] = static_cast<int>(cap_.size());
    cap_.push_back(up);
    nvs_down_[g] = static_cast<int>(cap_.size());
    cap_.push_back(down);
  }

  gg_.assign(ngpus_ * ngpus_, Route());
  for (int a = 0; a < ngpus_; ++a) {
    for (int b = 0; b < ngpus_; ++b) {
      Route& r = gg_[a * ngpus_ + b];
      r = make_route(gpu_node_[a], gpu_node_[b], true);
      r.bw = route_min_cap(r);
    }
  }
  gn_.assign(ngpus_ * nnets_, Route());
  ng_.assign(nnets_ * ngpus_, Route());
  for (int g = 0; g < ngpus_; ++g) {
    for (int n = 0; n < nnets_; ++n) {
      Route& r = gn_[g * nnets_ + n];
      r = make_route(gpu_node_[g], net_node_[n], true);
      r.bw = route_min_cap(r);
      Route& q = ng_[n * ngpus_ + g];
      q = make_route(net_node_[n], gpu_node_[g], false);
      q.bw = route_min_cap(q);
    }
  }

  net_bw_.assign(nnets_, 0);
  net_asic_.assign(nnets_, 0);
  net_port_.assign(nnets_, 1);
  for (int n = 0; n < nnets_; ++n) {
    const TopoNode& net = topo_.nodes[net_node_[n]];
    double mbps = net.net_speed_mbps > 0 ? net.net_speed_mbps : 10000;  // NCCL's default speed
    net_bw_[n] = static_cast<float>(mbps / 8000.0);
    net_asic_[n] = net.guid != 0 ? net.guid : (1ULL << 63) | static_cast<uint64_t>(net_node_[n]);
    net_port_[n] = net.port;
  }
  local_net_.assign(ngpus_ * kMaxChannels, -1);
  for (int g = 0; g < ngpus_; ++g) {
    for (int c = 0; c < kMaxChannels; ++c) local_net_[g * kMaxChannels + c] = local_net_uncached(g, c);
  }
  net_local_gpu_.assign(nnets_, -1);
  net_local_gpus_.assign(nnets_, std::vector<int>());
  net_local_type_.assign(nnets_, kPathDis);
  for (int n = 0; n < nnets_; ++n) {
    net_local_gpu_[n] = local_gpu_of_net(n);
    local_gpus(n, &net_local_gpus_[n], &net_local_type_[n]);
  }
  select_nets_.assign((kPathDis + 1) * (ngpus_ + 1), std::vector<int>());
  for (int t = 0; t <= kPathDis; ++t) {
    for (int g = -1; g < ngpus_; ++g) select_nets_uncached(t, g, &select_nets_[t * (ngpus_ + 1) + g + 1]);
  }
  gpu_used_.assign(ngpus_, 0);
  gpu_pci_bw_.assign(ngpus_, -1);
  for (int g = 0; g < ngpus_; ++g) gpu_pci_bw_[g] = gpu_pci_bw(g);
  next_buf_.assign(kMaxChannels * ngpus_, std::vector<int>());
  for (std::vector<int>& v : next_buf_) v.reserve(ngpus_);
  scores_.reserve(ngpus_);

  // ncclTopoSearchInit: the best single path bandwidth and the most a GPU can push in total.
  if (!inter_ && ngpus_ == 1) {
    max_bw_ = total_bw_ = kLocBw;
  } else {
    for (int g = 0; g < ngpus_; ++g) {
      if (inter_) {
        for (int n = 0; n < nnets_; ++n) {
          if (gn(g, n).type != kPathDis && gn(g, n).count() > 0) max_bw_ = std::max(max_bw_, gn(g, n).bw);
        }
      } else {
        for (int p = 0; p < ngpus_; ++p) {
          if (gg(g, p).count() > 0) max_bw_ = std::max(max_bw_, gg(g, p).bw);
        }
      }
      float nvl = 0, pci = 0;
      for (int li : topo_.nodes[gpu_node_[g]].out) {
        const TopoLink& l = topo_.links[li];
        if (l.type == LinkType::kNvl) nvl += static_cast<float>(l.model_bw);
        if (l.type == LinkType::kPci) pci = static_cast<float>(l.model_bw);
      }
      total_bw_ = std::max(total_bw_, std::max(pci, nvl));
    }
  }
}

void Searcher::local_nets(int g, std::vector<int>* out) const {
  out->clear();
  int min_type = kPathDis;
  float max_bw = 0;
  for (int n = 0; n < nnets_; ++n) {
    const Route& r = gn(g, n);
    if (r.bw > max_bw || (r.bw == max_bw && r.type < min_type)) {
      max_bw = r.bw;
      min_type = r.type;
      out->clear();
    }
    if (r.bw == max_bw && r.type == min_type) out->push_back(n);
  }
}

void Searcher::local_gpus(int n, std::vector<int>* out, int* type) const {
  out->clear();
  int min_type = kPathDis;
  float max_bw = 0;
  if (type) *type = kPathDis;
  for (int g = 0; g < ngpus_; ++g) {
    const Route& r = ng(n, g);
    if (r.bw > max_bw || (r.bw == max_bw && r.type < min_type)) {
      max_bw = r.bw;
      min_type = r.type;
      if (type) *type = min_type;
      out->clear();
    }
    if (r.bw == max_bw && r.type == min_type) out->push_back(g);
  }
}

int Searcher::local_net_uncached(int g, int channel) const {
  std::vector<int> nets;
  local_nets(g, &nets);
  if (nets.empty()) return -1;
  std::vector<int> gpus;
  local_gpus(nets[0], &gpus, nullptr);
  int count = static_cast<int>(nets.size());
  int gcount = std::max<int>(1, static_cast<int>(gpus.size()));
  int nets_per_gpu = (count + gcount - 1) / gcount;  // NETDEVS_POLICY AUTO
  int net = topo_.nodes[gpu_node_[g]].dev;
  if (is_pow2(count)) net = mirror_bits(net, count);
  net += channel % nets_per_gpu;
  return nets[net % count];
}

int Searcher::local_gpu_of_net(int n) const {
  std::vector<int> gpus;
  local_gpus(n, &gpus, nullptr);
  for (int c = 0; c < kMaxChannels; ++c) {
    for (int g : gpus) {
      if (local_net(g, c) == n) return g;
    }
  }
  return -1;
}

void Searcher::select_nets_uncached(int type_inter, int gpu, std::vector<int>* nets) const {
  nets->clear();
  auto add = [nets](int n) {
    if (std::find(nets->begin(), nets->end(), n) == nets->end()) nets->push_back(n);
  };
  // Preferred NETs, channel first (ncclTopoPrefNetsChannelFirst).
  for (int g = 0; g < ngpus_; ++g) {
    if (gpu != -1 && gpu != g) continue;
    std::vector<int> locals;
    for (int c = 0; c < kMaxChannels; ++c) {
      int n = local_net(g, c);
      if (n < 0) break;
      if (!locals.empty() && n == locals[0]) break;
      locals.push_back(n);
    }
    for (int n : locals) add(n);
  }
  // Then every other NET the GPU(s) reach with a path no worse than type_inter.
  for (int t = 0; t <= type_inter; ++t) {
    for (int g = 0; g < ngpus_; ++g) {
      if (gpu != -1 && gpu != g) continue;
      for (int n = 0; n < nnets_ && n < kMaxChannels; ++n) {
        if (gn(g, n).type == t) add(n);
      }
    }
  }
}

int Searcher::gpu_pci_bw(int g) const {
  for (int li : topo_.nodes[gpu_node_[g]].out) {
    const TopoLink& l = topo_.links[li];
    if (l.type != LinkType::kPci) continue;
    double rev = l.reverse >= 0 ? topo_.links[l.reverse].model_bw : l.model_bw;
    return static_cast<int>(std::min(l.model_bw, rev));
  }
  return -1;
}

// ---- [SECTION] Search --------------------------------------------------------------------------------

// NCCL's followPath: take bw off every link of the route, up to max_steps links; *steps = how many
// links had enough. bw < 0 gives bandwidth back.
bool Searcher::follow_path(const Route& r, int max_steps, float bw, int* steps) {
  float pci_bw = r.intel_phb ? bw * 6 / 5 : bw;
  for (int s = 0; s < max_steps; ++s) {
    const Hop& h = r.hops[s];
    float fw = h.pci ? pci_bw : bw;
    float rev = 0;
    if (h.into_old_gpu) rev += fw / 8;
    if (h.into_power_nvl) rev += fw;
    bool has_rev = rev != 0 && h.rev >= 0;
    if (cap_[h.res] < fw || (has_rev && cap_[h.rev] < rev)) {
      *steps = s;
      return false;
    }
    sub_round(&cap_[h.res], fw);
    if (has_rev) sub_round(&cap_[h.rev], rev);
  }
  *steps = max_steps;
  return true;
}

// ncclTopoFollowPath: true when kind2/i2 can be reached from kind1/i1 at the graph's speed and type
// (mult 1 takes the bandwidth, -1 gives it back). kind1 == kNone: the start of a channel.
bool Searcher::follow(Graph* graph, int kind1, int i1, int kind2, int i2, float mult) {
  if (kind1 == kNone) return true;
  const Route& path = kind1 == kGpuKind ? (kind2 == kGpuKind ? gg(i1, i2) : gn(i1, i2)) : ng(i1, i2);
  const Route& rev_path = kind2 == kGpuKind ? (kind1 == kGpuKind ? gg(i2, i1) : gn(i2, i1)) : ng(i2, i1);
  bool intra = kind1 == kGpuKind && kind2 == kGpuKind;
  float bw = intra ? graph->bw_intra : graph->bw_inter;
  int type = intra ? graph->type_intra : graph->type_inter;
  if (path.type >= kPathDis) return false;
  if (mult == 1 && path.type > type) return false;
  if (mult == 1 && (graph->pattern == 1 || graph->pattern == 2 || graph->pattern == 3) &&
      rev_path.type > type) {
    return false;
  }
  bw *= mult;
  int steps = 0;
  if (!follow_path(path, path.count(), bw, &steps)) {
    follow_path(path, steps, -bw, &steps);
    return false;
  }
  graph->nhops += static_cast<int>(mult * path.count());
  return true;
}

void Searcher::search_params(int pattern, int* back_to_net, int* back_to_first) const {
  if (inter_) {
    if (pattern == 4) *back_to_net = ngpus_ - 1;
    else if (pattern == 2) *back_to_net = 1;
    else *back_to_net = 0;
    *back_to_first = -1;
  } else {
    *back_to_net = -1;
    *back_to_first = pattern == 4 ? ngpus_ - 1 : -1;
  }
}

// ncclTopoCompareGraphs: is graph better than ref (more total bandwidth, then fewer hops)?
void Searcher::compare(const Graph& graph, const Graph& ref, bool* copy) const {
  if (graph.nchannels < graph.min_channels) return;
  if (graph.nchannels * graph.bw_intra > ref.nchannels * ref.bw_intra) {
    *copy = true;
    return;
  }
  if (graph.nchannels * graph.bw_intra < ref.nchannels * ref.bw_intra) return;
  if (graph.pattern == ref.pattern && graph.cross_nic == ref.cross_nic && graph.nhops < ref.nhops) {
    *copy = true;
  }
}

// ncclTopoSearchNextGpuSort: the order in which to try the GPUs after g. On NVSwitch machines only the
// neighbours by index are tried (NVSwitches prefer a limited set of peers).
void Searcher::next_gpu_sort(const Graph& graph, int g, std::vector<int>* next, int sort_net) {
  const uint64_t flag = 1ULL << graph.nchannels;
  int start_net = sort_net ? graph.inter[graph.nchannels * 2] : -1;
  std::vector<Score>& scores = scores_;
  scores.clear();
  for (int i = 1; i < ngpus_; ++i) {
    int p = (g + i) % ngpus_;
    const Route& r = gg(g, p);
    if (r.count() == 0) continue;
    if (gpu_used_[p] & flag) continue;
    Score s{p, i, r.count(), static_cast<int>(r.bw), 0, 0, 0};
    if (start_net >= 0) {
      s.inter_nhops = ng(start_net, p).count();
      s.inter_pci_bw = gpu_pci_bw_[p];
      s.inter_bw = static_cast<int>(ng(start_net, p).bw);
    }
    scores.push_back(s);
  }
  // qsort is not stable, but the key ends with start_index, which is unique: a total order.
  std::sort(scores.begin(), scores.end(), [](const Score& a, const Score& b) {
    if (a.inter_bw != b.inter_bw) return a.inter_bw > b.inter_bw;
    if (a.inter_pci_bw != b.inter_pci_bw) return a.inter_pci_bw > b.inter_pci_bw;
    if (a.inter_nhops != b.inter_nhops) return a.inter_nhops < b.inter_nhops;
    if (a.intra_bw != b.intra_bw) return a.intra_bw > b.intra_bw;
    if (a.intra_nhops != b.intra_nhops) return a.intra_nhops < b.intra_nhops;
    return a.start_index < b.start_index;
  });
  bool same_intra = true;
  for (const Score& s : scores) {
    if (s.intra_bw != scores[0].intra_bw || s.intra_nhops != scores[0].intra_nhops) same_intra = false;
  }
  next->clear();
  if (sort_net == -1 && same_intra) {
    for (auto it = scores.rbegin(); it != scores.rend(); ++it) next->push_back(it->g);
  } else {
    for (const Score& s : scores) next->push_back(s.g);
  }
  if (has_nvs_) {
    int prev_gpu = (g - 1 + ngpus_) % ngpus_;
    int next_gpu = (g + 1) % ngpus_;
    int first[2] = {next_gpu, prev_gpu};
    int nfirst = 1;
    if (graph.pattern == 4) {
      nfirst = 2;
    } else if (graph.pattern == 2 || graph.pattern == 1) {
      first[0] = prev_gpu;
      first[1] = next_gpu;
      nfirst = 2;
    }
    if (next_gpu == prev_gpu) nfirst = 1;
    int real = 0;
    for (int k = 0; k < nfirst; ++k) {
      int f = first[k];
      auto it = std::find(next->begin(), next->end(), f);
      if (it == next->end()) continue;
      next->erase(it);
      next->insert(next->begin(), f);
      ++real;
    }
    next->resize(real);
  }
}

bool Searcher::check_net(const Graph& graph, int start_net, int n, int step) const {
  if (graph.pattern == 3 && n != start_net) return false;  // trees are symmetric
  if (graph.pattern == 4 && graph.cross_nic == 2) {
    if ((graph.nchannels & 1) && n != graph.inter[(graph.nchannels - 1) * 2]) return false;
  } else if (graph.cross_nic == 0) {
    if (net_asic_[n] != net_asic_[start_net] || net_port_[n] != net_port_[start_net]) return false;
  }
  if (graph.pattern == 1 && step != 0 && n != graph.inter[graph.nchannels * 2 + 1]) return false;
  return true;
}

constexpr int kForcedPci = 1;
constexpr int kForcedReplay = 2;

void Searcher::try_gpu(Graph* graph, Graph* save, int step, int back_to_net, int back_to_first,
                       int forced, int* time, int kind, int index, int g) {
  const uint64_t flag = 1ULL << graph->nchannels;
  if (!follow(graph, kind, index, kGpuKind, g, 1)) return;
  gpu_used_[g] ^= flag;
  search_rec_gpu(graph, save, g, step, back_to_net, back_to_first, forced, time);
  gpu_used_[g] ^= flag;
  follow(graph, kind, index, kGpuKind, g, -1);
}

void Searcher::search_rec_gpu(Graph* graph, Graph* save, int g, int step, int back_to_net,
                              int back_to_first, int forced, int* time) {
  if (*time <= 0) return;
  --*time;
  if (step == ngpus_) {  // a channel is complete: keep it if it is the best so far, then add another
    bool copy = false;
    graph->nchannels++;
    compare(*graph, *save, &copy);
    if (copy) {
      *save = *graph;
      if (graph->nchannels == graph->max_channels) *time = -1;
    }
    if (graph->nchannels < graph->max_channels) search_rec(graph, save, time);
    graph->nchannels--;
    return;
  }
  graph->intra[graph->nchannels * ngpus_ + step] = g;
  if (step == back_to_net) {  // leave the machine
    if (!inter_) return;
    int start_net = graph->inter[graph->nchannels * 2];
    const std::vector<int>& nets = select_nets(graph->type_inter, g);
    for (int n : nets) {
      if (!check_net(*graph, start_net, n, step)) continue;
      int next_back_to_net = -1;
      float bw_inter_save = graph->bw_inter;
      if (graph->pattern == 1) {  // balanced tree: half the bandwidth on each of the first two GPUs
        if (step == 0) next_back_to_net = 1;
        graph->bw_inter /= 2;
      }
      bool ok = follow(graph, kGpuKind, g, kNetKind, n, 1);
      graph->bw_inter = bw_inter_save;
      if (!ok) continue;
      graph->inter[graph->nchannels * 2 + 1] = n;
      search_rec_gpu(graph, save, g, step, next_back_to_net, back_to_first, forced, time);
      if (graph->pattern == 1) graph->bw_inter /= 2;
      follow(graph, kGpuKind, g, kNetKind, n, -1);
      graph->bw_inter = bw_inter_save;
    }
  } else if (step < ngpus_ - 1) {  // go to the next GPU
    std::vector<int>& next = next_buf_[graph->nchannels * ngpus_ + step];
    next.clear();
    if (forced == kForcedPci) {
      next.push_back(step + 1);
    } else if (forced == kForcedReplay) {
      next.push_back(graph->intra[(graph->nchannels - 1) * ngpus_ + step + 1]);
    } else {
      int sort_net = back_to_net == -1 ? 0 : back_to_net == step + 1 ? 1 : -1;
      next_gpu_sort(*graph, g, &next, sort_net);
    }
    for (int p : next) {
      try_gpu(graph, save, step + 1, back_to_net, back_to_first, forced, time, kGpuKind, g, p);
    }
  } else if (step == back_to_first) {  // close the ring
    int first = graph->intra[graph->nchannels * ngpus_];
    if (follow(graph, kGpuKind, g, kGpuKind, first, 1)) {
      search_rec_gpu(graph, save, first, step + 1, back_to_net, -1, forced, time);
      follow(graph, kGpuKind, g, kGpuKind, first, -1);
    }
  } else {  // the channel's GPUs are placed
    search_rec_gpu(graph, save, g, ngpus_, -1, -1, forced, time);
  }
}

void Searcher::search_rec_net(Graph* graph, Graph* save, int back_to_net, int back_to_first,
                              int* time) {
  const int bw = static_cast<int>(graph->bw_inter);  // NCCL takes an int here
  const std::vector<int>& nets = select_nets(graph->type_inter, -1);
  int count = static_cast<int>(nets.size());
  for (int i = 0; i < count; ++i) {
    int n = nets[(graph->nchannels + i) % count];
    if (net_bw_[n] < bw) continue;
    if (graph->pattern == 4 && graph->cross_nic == 2 && (graph->nchannels & 1) &&
        n != graph->inter[(graph->nchannels - 1) * 2 + 1]) {
      continue;
    }
    graph->inter[graph->nchannels * 2] = n;
    graph->latency_inter = static_cast<float>(topo_.nodes[net_node_[n]].net_latency_us);
    for (int m = 0; m < nnets_; ++m) {
      if (net_asic_[m] == net_asic_[n] && net_port_[m] == net_port_[n]) net_bw_[m] -= bw;
    }
    if (graph->nchannels > 0 && graph->same_channels == 1) {
      // Replay the last channel from this NET.
      int g = graph->intra[(graph->nchannels - 1) * ngpus_];
      try_gpu(graph, save, 0, back_to_net, back_to_first, kForcedReplay, time, kNetKind, n, g);
    } else {
      if (graph->nchannels == 0 && !has_nvs_) {
        // PCI order first as a reference, on a budget of its own.
        int t = 1 << 10;
        try_gpu(graph, save, 0, back_to_net, back_to_first, kForcedPci, &t, kNetKind, n, 0);
        if (t == -1) *time = -1;
      }
      int local = net_local_gpu_[n];
      if (local != -1) try_gpu(graph, save, 0, back_to_net, back_to_first, 0, time, kNetKind, n, local);
      if (net_local_type_[n] != kPathDis) {
        for (int g : net_local_gpus_[n]) {
          if (g == local) continue;
          try_gpu(graph, save, 0, back_to_net, back_to_first, 0, time, kNetKind, n, g);
        }
      }
    }
    for (int m = 0; m < nnets_; ++m) {
      if (net_asic_[m] == net_asic_[n] && net_port_[m] == net_port_[n]) net_bw_[m] += bw;
    }
  }
}

void Searcher::search_rec(Graph* graph, Graph* save, int* time) {
  int back_to_net = -1, back_to_first = -1;
  search_params(graph->pattern, &back_to_net, &back_to_first);
  if (inter_) {
    search_rec_net(graph, save, back_to_net, back_to_first, time);
    return;
  }
  if (graph->nchannels == 0) {  // PCI order first
    try_gpu(graph, save, 0, back_to_net, back_to_first, kForcedPci, time, kNone, -1, 0);
  } else {  // then replay the previous channel
    int g = graph->intra[(graph->nchannels - 1) * ngpus_];
    try_gpu(graph, save, 0, back_to_net, back_to_first, kForcedReplay, time, kNone, -1, g);
  }
  if (graph->same_channels == 0 || graph->nchannels == 0) {
    for (int g = 0; g < ngpus_; ++g) {
      try_gpu(graph, save, 0, back_to_net, back_to_first, 0, time, kNone, -1, g);
    }
  }
}

// ncclTopoDupChannels: fast channels are duplicated (each copy gets its share of the bandwidth).
void Searcher::dup_channels(Graph* graph) const {
  if (graph->nchannels == 0) return;
  if (graph->bw_intra < 25.0f) return;
  if (cc_min_ > 80 && graph->bw_intra < 50.0f && graph->nchannels > 4) return;
  int dup = std::min(graph->nchannels * 2, graph->max_channels);
  for (int c = graph->nchannels; c < dup; ++c) {
    int src = c - graph->nchannels;
    std::copy_n(graph->intra.begin() + src * ngpus_, ngpus_, graph->intra.begin() + c * ngpus_);
    graph->inter[c * 2] = graph->inter[src * 2];
    graph->inter[c * 2 + 1] = graph->inter[src * 2 + 1];
  }
  int div = (dup + graph->nchannels - 1) / graph->nchannels;
  graph->bw_intra /= div;
  graph->bw_inter /= div;
  graph->nchannels = dup;
}

// ---- [SECTION] Compute -------------------------------------------------------------------------------

int cross_nic_param() {
  const char* s = std::getenv("NCCL_CROSS_NIC");
  if (s == nullptr || *s == '\0') return 2;
  int v = std::atoi(s);
  return v < 0 || v > 2 ? 2 : v;
}

bool Searcher::compute(TopoGraph* out, std::string* error) {
  if (ngpus_ == 0) {
    if (error) *error = "channel search: machine 0 has no GPU";
    return false;
  }
  if (out->pattern == GraphPattern::kNvls || out->pattern == GraphPattern::kCollNetDirect) {
    if (error) *error = "channel search: NVLS and CollNetDirect patterns are not supported";
    return false;
  }
  if (inter_ && nnets_ == 0) {
    if (error) *error = "channel search: several machines but machine 0 has no NET";
    return false;
  }
  Graph graph;
  graph.pattern = static_cast<int>(out->pattern);
  graph.min_channels = std::max(1, std::min(out->min_channels, kMaxChannels));
  graph.max_channels = std::max(1, std::min(out->max_channels, kMaxChannels));
  graph.min_channels = std::min(graph.min_channels, graph.max_channels);
  graph.intra.assign(kMaxChannels * ngpus_, 0);
  graph.inter.assign(kMaxChannels * 2, 0);

  int cross_param = out->cross_nic ? 1 : cross_nic_param();
  bool pattern_may_cross = graph.pattern == 4 || graph.pattern == 1 || graph.pattern == 2;
  int cross_nic = nnets_ > 1 && pattern_may_cross ? cross_param : 0;
  graph.cross_nic = cross_nic == 1 ? 1 : 0;

  int min_type_intra = kPathLoc, min_type_inter = kPathPix;
  int max_type_intra = kPathSys, max_type_inter = kPathSys;
  if (ngpus_ > 1) {
    int mn = kPathSys, mx = kPathLoc;
    for (int a = 0; a < ngpus_; ++a) {
      for (int b = 0; b < ngpus_; ++b) {
        if (a == b) continue;
        mn = std::min(mn, gg(a, b).type);
        mx = std::max(mx, gg(a, b).type);
      }
    }
    min_type_intra = mn;
    max_type_intra = mx;
  }
  if (inter_) {
    int mn = kPathSys, mx = kPathLoc;
    for (int g = 0; g < ngpus_; ++g) {
      for (int n = 0; n < nnets_; ++n) {
        mn = std::min(mn, gn(g, n).type);
        mx = std::max(mx, gn(g, n).type);
      }
    }
    min_type_inter = mn;
    max_type_inter = mx;
    max_type_intra = max_type_inter;
  }
  graph.type_intra = min_type_intra;
  graph.type_inter = min_type_inter;
  const int try_same = 1;
  graph.same_channels = try_same;

  if (ngpus_ == 1 && graph.pattern != 4) graph.pattern = 3;

  // Two NVLink islands joined by a slower link: trees work better and need 2 channels, and rings must
  // have as many channels as trees (ncclTopoSplitNvLink).
  {
    std::vector<int> domain(ngpus_);
    for (int g = 0; g < ngpus_; ++g) domain[g] = g;
    for (int g = 0; g < ngpus_; ++g) {
      for (int p = g + 1; p < ngpus_; ++p) {
        if (gg(g, p).type == kPathNvl) domain[p] = domain[g];
      }
    }
    std::vector<int> count(ngpus_, 0);
    for (int g = 0; g < ngpus_; ++g) count[domain[g]]++;
    int domains = 0;
    for (int g = 0; g < ngpus_; ++g) domains += count[g] > 1;
    if (graph.pattern == 4 && domains == 2 && graph.max_channels >= 2 && graph.min_channels == 1) {
      graph.min_channels = 2;
    }
  }

  const float* speeds;
  int nspeeds;
  if (!inter_) {
    if (cc_min_ >= 100) { speeds = kSm100SpeedIntra; nspeeds = sizeof(kSm100SpeedIntra) / sizeof(float); }
    else if (cc_min_ >= 90) { speeds = kSm90SpeedIntra; nspeeds = sizeof(kSm90SpeedIntra) / sizeof(float); }
    else { speeds = kSpeedIntra; nspeeds = sizeof(kSpeedIntra) / sizeof(float); }
  } else {
    if (cc_min_ >= 100) { speeds = kSm100SpeedInter; nspeeds = sizeof(kSm100SpeedInter) / sizeof(float); }
    else if (cc_min_ >= 90) { speeds = kSm90SpeedInter; nspeeds = sizeof(kSm90SpeedInter) / sizeof(float); }
    else { speeds = kSpeedInter; nspeeds = sizeof(kSpeedInter) / sizeof(float); }
  }

  Graph tmp = graph;
  const int pattern0 = graph.pattern;
  float max_bw = max_bw_;
  float total_bw = total_bw_;
  if (ngpus_ > 1 && graph.pattern != 4) total_bw *= ngpus_ * 1.0f / (ngpus_ - 1);
  int speed_index = 0;
  while ((speeds[speed_index] > max_bw || speeds[speed_index] * graph.min_channels > total_bw) &&
         speed_index < nspeeds - 1) {
    speed_index++;
  }
  tmp.bw_intra = tmp.bw_inter = speeds[speed_index];
  int64_t global_timeout = kGlobalTimeout;
  int pass = 1;
  int time = 0;

  for (;;) {
    // search:
    time = tmp.same_channels ? kTimeoutSameChannels : tmp.pattern == 3 ? kTimeoutTree : kTimeout;
    tmp.nchannels = 0;
    global_timeout -= time;
    search_rec(&tmp, &graph, &time);

    bool done = time == -1 || graph.nchannels * graph.bw_inter >= total_bw_;
    if (!done && pass == 1) {
      // First pass: no solution yet, or not a perfect one; try other options.
      if (tmp.same_channels == 1 &&
          !(cpu_arch_ == CpuArch::kX86 && cpu_vendor_ == CpuVendor::kAmd && tmp.type_intra == kPathSys)) {
        tmp.same_channels = 0;
        continue;
      }
      tmp.same_channels = try_same;
      if (time != -1) global_timeout += time;
      else global_timeout = kGlobalTimeout;
      if (global_timeout < 0 && graph.nchannels) {
        done = true;
      } else {
        if (cc_min_ >= 90 && tmp.pattern == 1) {  // a simpler tree
          tmp.pattern = 3;
          continue;
        }
        tmp.pattern = pattern0;
        int max_intra = inter_ ? tmp.type_inter : max_type_intra;
        if (tmp.type_intra < max_intra && (graph.nchannels == 0 || tmp.type_intra < graph.type_intra)) {
          tmp.type_intra += 1;
          if (tmp.type_intra < kPathDis) continue;
        }
        tmp.type_intra = min_type_intra;
        if (inter_ && tmp.type_inter < max_type_inter &&
            (graph.nchannels == 0 || tmp.type_inter < graph.type_inter || tmp.type_inter < kPathPxn)) {
          tmp.type_inter += 1;
          if (tmp.type_inter < kPathDis) continue;
        }
        tmp.type_inter = min_type_inter;
        if (cross_nic == 2 && tmp.cross_nic == 0 && (pattern0 == 4 || pattern0 == 1)) {
          tmp.cross_nic = 2;
          continue;
        }
        tmp.cross_nic = cross_nic == 1 ? 1 : 0;
        if (speed_index < nspeeds - 1 &&
            (graph.nchannels == 0 || speeds[speed_index + 1] / graph.bw_inter > .49)) {
          tmp.bw_inter = tmp.bw_intra = speeds[++speed_index];
          continue;
        }
        speed_index = 0;
        while (speeds[speed_index] > max_bw && speed_index < nspeeds - 1) speed_index++;
        tmp.bw_intra = tmp.bw_inter = speeds[speed_index];
      }
    }
    // done:
    if (pass == 1) {
      time = -1;
      dup_channels(&graph);
      tmp = graph;
      speed_index = 0;
      while (speeds[speed_index] > graph.bw_inter && speed_index < nspeeds - 1) speed_index++;
      tmp.bw_intra = tmp.bw_inter = speeds[speed_index];
      tmp.min_channels = graph.nchannels;
      pass = 2;
    }
    // Second pass: see whether a higher speed keeps at least as many channels.
    if (time != 0 && speed_index > 0) {
      if (pattern0 == 4) {
        tmp.bw_intra = tmp.bw_inter = speeds[--speed_index];
        continue;
      } else if (tmp.bw_intra == graph.bw_intra && tmp.bw_intra < tmp.bw_inter * 2) {
        tmp.bw_intra = speeds[--speed_index];  // trees: raise bwIntra only
        continue;
      }
    }
    break;
  }

  if (graph.nchannels == 0) {  // no path at all: NCCL falls back to one channel in simple order
    for (int g = 0; g < ngpus_; ++g) graph.intra[g] = g;
    graph.inter[0] = graph.inter[1] = 0;
    graph.bw_intra = graph.bw_inter = 0.1f;
    graph.type_intra = graph.type_inter = kPathSys;
    graph.nchannels = 1;
  }

  out->nchannels = graph.nchannels;
  out->pattern = static_cast<GraphPattern>(graph.pattern);
  out->bw_intra = graph.bw_intra;
  out->bw_inter = graph.bw_inter;
  out->latency_inter = graph.latency_inter;
  out->type_intra = static_cast<PathType>(graph.type_intra);
  out->type_inter = static_cast<PathType>(graph.type_inter);
  out->same_channels = graph.same_channels != 0;
  out->cross_nic = graph.cross_nic != 0;
  out->intra.assign(graph.nchannels, std::vector<int>());
  out->inter.assign(inter_ ? graph.nchannels : 0, std::vector<int>());
  for (int c = 0; c < graph.nchannels; ++c) {
    for (int i = 0; i < ngpus_; ++i) {
      out->intra[c].push_back(topo_.nodes[gpu_node_[graph.intra[c * ngpus_ + i]]].dev);
    }
    if (inter_) {
      out->inter[c] = {topo_.nodes[net_node_[graph.inter[c * 2]]].dev,
                       topo_.nodes[net_node_[graph.inter[c * 2 + 1]]].dev};
    }
  }
  return true;
}

std::string fmt_bw(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", v);
  return buf;
}

}  // namespace

// ---- [SECTION] Public --------------------------------------------------------------------------------

bool search_graph(const Topology& topo, TopoGraph* graph, std::string* error) {
  if (graph == nullptr) {
    if (error) *error = "search_graph: graph is null";
    return false;
  }
  Searcher searcher(topo);
  return searcher.compute(graph, error);
}

namespace {

// The NVLS graph across machines (NCCL's search with system->inter set): the channels start at NETs, so
// there is one head per NET whose local GPU is not a head yet (Searcher::nvls_heads), at most 32; the
// speeds are the inter ladder (sm90SpeedArrayInter / sm100SpeedArrayInter) from the best GPU-to-NET
// bandwidth down, and a speed fits when each head's NET path carries it and a head GPU's NVLinks to the
// switch carry (channels + 1) x speed (ncclTopoSearchTryNvls). Pass 2 raises bwInter while a head's
// NET path carries the next speed and it stays under 2 x bwIntra. dgx-h100: 8 heads x 40/48 GB/s.
bool nvls_graph_multi(const Topology& topo, TopoGraph* graph, std::string* why, const std::vector<int>& gpus,
                      double cap, double total, int cc_min) {
  auto fail = [&](const std::string& s) {
    if (why) *why = s;
    return false;
  };
  Searcher searcher(topo);
  std::vector<Searcher::NvlsHead> heads;
  for (const Searcher::NvlsHead& h : searcher.nvls_heads()) {
    bool used = false;
    for (int g : gpus) used = used || topo.nodes[g].dev == h.dev;
    if (used && h.type < static_cast<int>(PathType::kDis) && h.bw > 0) heads.push_back(h);
  }
  if (heads.empty()) return fail("NVLS across machines needs a NIC local to a GPU (a head), the machine has none");
  if (heads.size() > 32) heads.resize(32);
  const int nch = static_cast<int>(heads.size());
  const int ngpus = static_cast<int>(gpus.size());
  const float* speeds = cc_min >= 100 ? kSm100SpeedInter : kSm90SpeedInter;
  const int nspeeds = static_cast<int>(cc_min >= 100 ? sizeof(kSm100SpeedInter) / sizeof(float)
                                                     : sizeof(kSm90SpeedInter) / sizeof(float));
  float max_bw = 0, min_bw = heads[0].bw;
  for (const Searcher::NvlsHead& h : heads) max_bw = std::max(max_bw, h.bw), min_bw = std::min(min_bw, h.bw);
  const double total_bw = total * ngpus / (ngpus - 1.0);
  int i = 0;
  while (i < nspeeds - 1 && (speeds[i] > max_bw || speeds[i] * 2 > total_bw)) ++i;
  while (i < nspeeds && (speeds[i] > min_bw + 1e-6 || (nch + 1) * static_cast<double>(speeds[i]) > cap + 1e-6)) ++i;
  if (i >= nspeeds) return fail("the NVLinks to the NVSwitch or the NET paths are too slow for an NVLS channel per head");
  graph->nchannels = nch;
  graph->bw_intra = graph->bw_inter = speeds[i];
  for (int k = i; k > 0 && graph->bw_inter < graph->bw_intra * 2 && speeds[k - 1] <= min_bw + 1e-6;)
    graph->bw_inter = speeds[--k];
  graph->type_intra = PathType::kNvl;
  int type_inter = 0;
  float latency = 0;
  for (const Searcher::NvlsHead& h : heads) type_inter = std::max(type_inter, h.type), latency = std::max(latency, h.latency);
  graph->type_inter = static_cast<PathType>(type_inter);
  graph->latency_inter = latency;
  graph->same_channels = false;
  for (int c = 0; c < nch; ++c) {
    std::vector<int> order{heads[c].dev};
    for (int g : gpus)
      if (topo.nodes[g].dev != heads[c].dev) order.push_back(topo.nodes[g].dev);
    graph->intra.push_back(order);
  }
  return true;
}

}  // namespace

std::vector<std::pair<int, int>> nvls_head_nets(const Topology& topo) {
  std::vector<std::pair<int, int>> out;
  for (const auto& h : Searcher(topo).nvls_heads()) out.emplace_back(h.dev, h.net);
  return out;
}

bool nvls_groups(const TopoGraph& nvls, const std::vector<int>& rank_machine, const std::vector<int>& rank_dev,
                 NvlsGroups* out, std::string* why) {
  const int nranks = static_cast<int>(rank_machine.size());
  const int nheads = nvls.nchannels;
  auto fail = [&](const std::string& s) {
    if (why) *why = s;
    return false;
  };
  if (nheads < 1 || nheads > 32) return fail("NVLS: the NVLS graph has " + std::to_string(nheads) + " heads (1 to 32)");
  std::vector<int> machines(rank_machine.begin(), rank_machine.end());
  std::sort(machines.begin(), machines.end());
  machines.erase(std::unique(machines.begin(), machines.end()), machines.end());
  out->nheads = nheads;
  out->group.assign(machines.size(), std::vector<int>(nheads, -1));
  out->group_of.assign(nranks, -1);
  out->index.assign(nranks, -1);
  if (machines.size() == 1 && nranks == nheads) {
    // One machine, every rank a head (NCCL's graph has a channel per GPU of the communicator, whichever
    // GPUs those are): rank order, so that a rank's place in the group is its rank, as ReduceScatter's
    // and AllGather's blocks need.
    for (int r = 0; r < nranks; ++r) out->group[0][r] = r, out->group_of[r] = 0, out->index[r] = r;
    return true;
  }
  for (int r = 0; r < nranks; ++r) {
    const int m = static_cast<int>(std::lower_bound(machines.begin(), machines.end(), rank_machine[r]) - machines.begin());
    out->group_of[r] = m;
    int h = 0;
    while (h < nheads && nvls.intra[h][0] != rank_dev[r]) ++h;
    std::vector<int>& g = out->group[m];
    if (h < nheads) {
      if (g[h] >= 0)
        return fail("NVLS: ranks " + std::to_string(g[h]) + " and " + std::to_string(r) + " share head " +
                    std::to_string(h) + "'s GPU");
      g[h] = r;
    } else {
      g.push_back(r);
    }
  }
  for (size_t m = 0; m < machines.size(); ++m) {
    for (int h = 0; h < nheads; ++h)
      if (out->group[m][h] < 0)
        return fail("NVLS: machine " + std::to_string(machines[m]) + " has no rank on head " + std::to_string(h) +
                    "'s GPU (dev " + std::to_string(nvls.intra[h][0]) + "; cclab's schedule needs every head GPU of "
                    "every machine in the communicator)");
    if (out->group[m].size() != out->group[0].size())
      return fail("NVLS: machine " + std::to_string(machines[m]) + " holds " + std::to_string(out->group[m].size()) +
                  " ranks and machine " + std::to_string(machines[0]) + " " + std::to_string(out->group[0].size()) +
                  " (one schedule needs as many on each)");
    for (size_t i = 0; i < out->group[m].size(); ++i) out->index[out->group[m][i]] = static_cast<int>(i);
  }
  return true;
}

TreeLinks nvls_tree_links(const NvlsGroups& groups, int rank, int channel) {
  TreeLinks out{};
  out.up = -1;
  out.ndown = 0;
  for (int& d : out.down) d = -1;
  const int me = groups.index[rank];
  if (me >= groups.nheads) return out;  // no head: no tree
  TreeLinks t0{}, t1{};
  dtree(static_cast<int>(groups.group.size()), groups.group_of[rank], &t0, &t1);
  const TreeLinks& nt = nvls_tree_of_channel(channel) == 0 ? t0 : t1;
  out.up = nt.up >= 0 ? groups.group[nt.up][me] : -1;
  for (int i = 0; i < nt.ndown && out.ndown < kMaxNvlsTreeArity; ++i) out.down[out.ndown++] = groups.group[nt.down[i]][me];
  return out;
}

bool search_nvls_graph(const Topology& topo, TopoGraph* graph, std::string* why, int used) {
  *graph = TopoGraph{};
  graph->id = 3;
  graph->pattern = GraphPattern::kNvls;
  auto fail = [&](const std::string& s) {
    if (why) *why = s;
    return false;
  };
  std::vector<int> gpus = topo.gpus(0);
  if (used > 0 && used < static_cast<int>(gpus.size())) gpus.resize(used);
  const int ngpus = static_cast<int>(gpus.size());
  if (ngpus < 2) return fail("NVLS needs 2 GPUs or more on a machine");
  int cc_min = 1000;
  for (int g : gpus) cc_min = std::min(cc_min, topo.nodes[g].sm);
  if (cc_min < 90) return fail("NVLS needs sm90 or later (NVLink SHARP), the GPUs are sm" + std::to_string(cc_min));
  if (topo.nodes_of(TopoNodeType::kNvs, 0).empty()) return fail("NVLS needs an NVSwitch, the machine has none");
  // NCCL runs min(32, GPUs) heads (NCCL_MAX_NVLS_ARITY), every GPU in each head's multicast group.
  // Bandwidth between each GPU and the switch, each direction (NCCL merges the NVSwitches into one NVS
  // node: the GPU's NVLinks to all of them), and the GPU's total link bandwidth (system->totalBw).
  double cap = 0, total = 0;
  for (size_t i = 0; i < gpus.size(); ++i) {
    double up = 0, down = 0, all = 0;
    for (int l : topo.nodes[gpus[i]].out) {
      const TopoLink& link = topo.links[l];
      all += link.model_bw;
      if (topo.nodes[link.to].type != TopoNodeType::kNvs) continue;
      up += link.model_bw;
      down += topo.links[link.reverse].model_bw;
    }
    if (up <= 0 || down <= 0) return fail(topo.nodes[gpus[i]].name + " has no NVLink to the NVSwitch");
    const double c = std::min(up, down);
    cap = i == 0 ? c : std::min(cap, c);
    total = std::max(total, all);
  }
  if (topo.machines > 1) return nvls_graph_multi(topo, graph, why, gpus, cap, total, cc_min);
  const int nch = std::min(32, ngpus);  // NCCL_MAX_NVLS_ARITY; one machine: minChannels = maxChannels
  const float* speeds = cc_min >= 100 ? kSm100SpeedIntra : kSm90SpeedIntra;
  const int nspeeds = static_cast<int>(cc_min >= 100 ? sizeof(kSm100SpeedIntra) / sizeof(float)
                                                     : sizeof(kSm90SpeedIntra) / sizeof(float));
  const double total_bw = total * ngpus / (ngpus - 1.0);  // a pattern other than the ring
  int i = 0;
  while (i < nspeeds - 1 && (speeds[i] > cap || speeds[i] * nch > total_bw)) ++i;
  // ncclTopoSearchTryNvls: every channel pulls from every GPU through the switch (speed on each GPU's
  // link, each way) and its head's link carries it twice, so a head GPU's link takes (nch + 1) x speed.
  // With more GPUs than NCCL_MAX_NVLS_ARITY (a 72-GPU NVLink domain) that is 33 x speed, not 73.
  while (i < nspeeds && (nch + 1) * static_cast<double>(speeds[i]) > cap + 1e-6) ++i;
  if (i >= nspeeds) return fail("the NVLinks to the NVSwitch are too slow for an NVLS channel per head GPU");
  graph->nchannels = nch;
  graph->bw_intra = graph->bw_inter = speeds[i];
  // ncclTopoCompute's second pass raises an NVLS graph's bwInter one speed at a time while it stays
  // under twice bwIntra; on one machine nothing crosses a NET, so every raise succeeds (40/60 on H100).
  for (int k = i; k > 0 && graph->bw_inter < graph->bw_intra * 2;) graph->bw_inter = speeds[--k];
  graph->type_intra = PathType::kNvl;
  graph->type_inter = PathType::kNvl;
  graph->same_channels = false;
  for (int c = 0; c < nch; ++c) {
    std::vector<int> order;
    for (int k = 0; k < ngpus; ++k) order.push_back(topo.nodes[gpus[(c + k) % ngpus]].dev);
    graph->intra.push_back(order);
  }
  return true;
}

std::vector<int> ring_order(const Topology& topo, const TopoGraph& ring, int channel) {
  std::vector<int> order;
  if (channel < 0 || channel >= static_cast<int>(ring.intra.size())) return order;
  int per = topo.gpus_per_machine();
  for (int m = 0; m < topo.machines; ++m) {
    for (int dev : ring.intra[channel]) order.push_back(m * per + dev);
  }
  return order;
}

std::string describe_graph(const TopoGraph& graph) {
  std::ostringstream os;
  os << "Pattern " << static_cast<int>(graph.pattern) << ", crossNic " << (graph.cross_nic ? 1 : 0)
     << ", nChannels " << graph.nchannels << ", bw " << fmt_bw(graph.bw_intra) << "/"
     << fmt_bw(graph.bw_inter) << ", type " << path_type_name(graph.type_intra) << "/"
     << path_type_name(graph.type_inter) << ", sameChannels " << (graph.same_channels ? 1 : 0);
  for (size_t c = 0; c < graph.intra.size(); ++c) {
    char head[16];
    std::snprintf(head, sizeof(head), "\n%2d :", static_cast<int>(c));
    os << head;
    bool net = c < graph.inter.size() && graph.inter[c].size() == 2;
    if (net) os << " NET/" << graph.inter[c][0];
    for (int dev : graph.intra[c]) os << " GPU/" << dev;
    if (net) os << " NET/" << graph.inter[c][1];
  }
  return os.str();
}

}  // namespace cclab
