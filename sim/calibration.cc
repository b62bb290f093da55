// sim/calibration.cc - the simulator's constants (calibration.h) and the what-if edits of a model.
//
// Every number below carries the sentence that says where it comes from; describe() prints them as
// the table `cclab sim --calibration` shows. Provisional values (to be fitted against the calibration
// points of ../shared/reference/calibration.md) say so in their source.
//
// apply_what_if() edits a topology model in place, in this order (each step sees the previous ones):
//   1. nics_per_machine  removes NET ports dev >= N, NICs left without a port, and the leaf switches
//                        of the removed rails (with their spine links); indices are renumbered (the
//                        model is rebuilt node by node, links keep their order and attributes)
//   2. nvlink_bw         every GPU's NVLink edges: bw = nvlink_bw x lanes / (the GPU's NVLink lanes),
//                        both directions; model_bw scaled by the same ratio (search and tuner follow)
//   3. nic_bw            the NIC port: NIC -> NET (LOC) and NET <-> leaf (NET) links, both directions,
//                        bw = model_bw = nic_bw; net_speed_mbps of NIC and NET nodes = nic_bw x 8000;
//                        the leaf uplinks are recomputed with the fabric's oversubscription so that
//                        the fabric keeps its down/up ratio
//   4. link_latency_us   every link's latency
//   5. oversubscription  leaf <-> spine links: bw = model_bw = (the leaf's down bandwidth) / o, lanes
//                        round(ports / o) (at least 1), as replicate_machines builds them
// then compute_paths(). Every value is checked before anything changes: on error the model is as given.
#include "sim/calibration.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace cclab {
namespace sim {

namespace {

Calibration make_default() {
  Calibration c;
  c.gpus = {
      {70, "V100", 80, 20.0,
       "V100-SXM2: 80 SMs (NVIDIA Tesla V100 whitepaper); copy rate "
       "fitted (docs/simulator.md, Calibration): one channel runs on one SM; the rate must let the "
       "machine's channels saturate NVLink without hiding the receive-only "
       "steps' data loops"},
      {80, "A100", 108, 25.0,
       "A100-SXM4: 108 SMs (NVIDIA A100 Tensor Core GPU architecture whitepaper); copy rate "
       "fitted (docs/simulator.md, Calibration): one channel runs on one SM; the rate must let the "
       "machine's channels saturate NVLink without hiding the receive-only "
       "steps' data loops"},
      {90, "H100 SXM", 132, 35.0,
       "H100-SXM5: 132 SMs (NVIDIA H100 Tensor Core GPU architecture whitepaper); copy rate "
       "fitted (docs/simulator.md, Calibration): one channel runs on one SM; the rate must let the "
       "machine's channels saturate NVLink (24 x 35 GB/s > 382 GB/s) without hiding the receive-only "
       "steps' data loops"},
      {100, "B200", 148, 40.0,
       "B200: 148 SMs (NVIDIA Blackwell architecture technical brief); copy rate "
       "fitted (docs/simulator.md, Calibration): one channel runs on one SM; the rate must let the "
       "machine's channels saturate NVLink without hiding the receive-only "
       "steps' data loops"},
  };

  for (GpuModel& g : c.gpus) {
    g.tflops = g.sm >= 100 ? 2250 : g.sm >= 90 ? 989 : g.sm >= 80 ? 312 : 125;
    g.tflops_source =
        "dense FP16/BF16 tensor-core peak from NVIDIA's datasheets (V100 125, A100 312, H100 SXM 989, "
        "B200 2250 TFLOP/s); a simulated kernel runs at this peak";
  }

  LinkEfficiency& e = c.efficiency;
  e.nvlink = 0.85;
  e.nvlink_source =
      "payload share of NVLink packets (header and CRC flits around up to 256 B of data) and measured "
      "p2p copy rates; "
      "simulated 8x H100 Ring all_reduce 357 GB/s at 1 GiB vs ~370 measured (nccl-tests issue 212), "
      "8x A100 242 vs 230-235 (docs/simulator.md)";
  e.pcie = 0.80;
  e.pcie_source =
      "PCIe TLP header + DLLP (ACK, flow control) overhead at 256 B max payload: 0.80-0.87 of the "
      "post-encoding rate; the lower end for small reads/completions";
  e.sys = 0.60;
  e.sys_source =
      "provisional guess, no measurement yet: inter-socket (UPI/xGMI) links also carry coherence "
      "traffic; NCCL's own SYS bandwidths are far lower (SKL_QPI_BW 10, SRP_QPI_BW 22, AMD_BW 16 GB/s)";
  e.net = 0.98;
  e.net_source =
      "InfiniBand transport headers (LRH+GRH+BTH+RETH+ICRC+VCRC, ~60 B) per 4096 B MTU packet on the "
      "400 Gb/s NDR data rate (64b/66b encoding is already below the line rate); the measured 46-48 GB/s "
      "of NCCL traffic per NIC (nccl-tests issue 290) must come out of the simulation, not this factor";
  e.loc = 1.0;

  // NCCL 2.28.9 src/graph/tuning.cc: hwLat[NVLINK] Ring LL .6 / LL128 1.9 / Simple 3.4 us, Tree
  // .6 / 1.25 / 4.0 us (see ../shared/reference/nccl-facts.md section 3).
  c.step_overhead_us[0] = 0.6;  // LL
  c.step_overhead_us[1] = 1.0;  // LL128
  c.step_overhead_us[2] = 2.0;  // Simple
  c.step_overhead_source =
      "fitted below NCCL 2.28.9 tuning.cc's per-step hwLat[NVLINK] (Ring LL .6 / LL128 1.9 / Simple "
      "3.4 us, Tree .6 / 1.25 / 4.0; PCI Ring 1.0 / 2.5 / 5.7), which include the link latency the "
      "route already charges (0.3 us GPU->NVS->GPU): with these the 8-GPU H100 ring lands within 11% "
      "of the tuner's time at every size (docs/simulator.md)";
  c.launch_us = 4.0;
  c.launch_source =
      "fitted: the part of NCCL 2.28.9 tuning.cc baseLat (Ring LL 6.6 / LL128 14.0 "
      "/ Simple 8.4 us, Tree 6.8 / 14.0 / 8.4) that is not step latency: kernel launch, the "
      "channels' first loads and the completion seen by the host stream, ~4 us";
  c.loop_share_source =
      "1, the SM's copy rate: no public curve supports another value on every GPU (fitting the GPU side on "
      "bench/sim_accuracy/ gives LL128 0.23 with LL128 steps of 2.8 us: A100's LL128 sizes fit, its Simple "
      "sizes move further off, and no public H100 Ring curve covers the mid sizes: docs/simulator.md, "
      "Accuracy)";
  c.host_issue_us = 5.66;
  c.host_issue_per_channel_us = 0;
  c.net_message_us = 1.51;
  c.net_message_source =
      "fitted (bench/sim_accuracy.py --fit --fit-names net_message --curves h100x16-ib-aion-ring-ar: 1.51 us) on "
      "the 2-node InfiniBand Ring curve (nccl-tests #309: 10.8%/47.8% -> 9.0%/25.7%); judged on the other "
      "2-node InfiniBand curve, never fitted on (h100x16-ib-xe9680-ar: 29.6% -> 15.7%). Prior: NCCL's tuner adds "
      "1-2 us of net overhead per step between nodes (tuning.cc netOverhead); half is charged on each NIC "
      "port link";
  c.nvls_latency_us = 19.28;
  c.nvls_step_us = 7.66;
  c.nvls_source =
      "fitted (bench/sim_accuracy.py --fit --fit-names nvls.latency,nvls.step --curves h100x8-aws-p5-ar-nvls: "
      "19.28 and 7.66 us, 14 points 2 MiB - 16 GiB, 1.9% geomean) on the one NCCL-default NVLS curve (8x H100, "
      "AWS p5); judged on the two Azure NVLS curves never fitted on (docs/simulator.md, Accuracy). Prior: NCCL "
      "2.28.9 tuning.cc charges NVLS hwLat[NVLINK][NVLS][Simple] = 25 us beyond its bandwidth. Without them the "
      "simulated NVLS was 20-62% too fast from 2 to 64 MiB; where in the kernel the time goes (multimem "
      "round trips, the counters' polling) is not modelled step by step";
  c.host_issue_source =
      "fitted (bench/sim_accuracy.sh --fit: 5.66 us, 16 evaluations) on the public nccl-tests curves of "
      "bench/sim_accuracy/: two 8x A100 curves run with -g 8 (stas00/ml-engineering; Azure ND A100 v4) are flat "
      "at 42-45 us up to ~128 KiB, 8 GPUs x ~5.5 us, one thread issuing every iteration on all 8 (EPYC hosts); "
      "leaving either out, the other gives 5.5 or 8 us. Per channel: 0, the newer NCCL's (the two curves want "
      "0.3 and 0.04 us; fitting it lowers the geomean error but doubles the worst point, docs/simulator.md, "
      "Accuracy); without -g the host hides behind the GPUs (a ring step alone takes longer)";
  return c;
}

std::string fmt_num(double v) {
  char b[64];
  snprintf(b, sizeof b, "%.6g", v);
  return b;
}

// One table line: name (padded), value (padded), unit (padded), source.
void add_line(std::string* s, const std::string& name, const std::string& value, const char* unit,
              const std::string& source) {
  char b[160];
  snprintf(b, sizeof b, "%-34s %10s  %-6s ", name.c_str(), value.c_str(), unit);
  *s += b;
  *s += source.empty() ? std::string("(no source)") : source;
  *s += '\n';
}

}  // namespace

const Calibration& default_calibration() {
  static const Calibration c = make_default();
  return c;
}

const GpuModel& Calibration::gpu(int sm) const {
  static const GpuModel kNone{};
  if (gpus.empty()) return kNone;
  const GpuModel* best = nullptr;
  const GpuModel* smallest = &gpus[0];
  for (const GpuModel& g : gpus) {
    if (g.sm < smallest->sm) smallest = &g;
    if (g.sm <= sm && (best == nullptr || g.sm > best->sm)) best = &g;
  }
  return best != nullptr ? *best : *smallest;
}

namespace {

// One constant of the table: its name as describe() prints it (set() and names() drop the part in
// parentheses), unit and source, where it lives, and the values set() accepts. The one list of the
// constants: the table, set() and names() all walk it.
struct Knob {
  std::string label;       // "gpu.sm90 (H100 SXM).sms", "efficiency.nvlink (NVL, C2C)", "launch"
  const char* unit;
  std::string source;
  double* real = nullptr;  // or
  int* whole = nullptr;
  double lo = 0, hi = 0;   // inclusive bounds
  double value() const { return whole != nullptr ? *whole : *real; }
};

// "gpu.sm90 (H100 SXM).sms" -> "gpu.sm90.sms": the label without its part in parentheses.
std::string bare_name(std::string label) {
  const size_t paren = label.find(" (");
  if (paren != std::string::npos) {
    const size_t close = label.find(')', paren);
    label.erase(paren, close == std::string::npos ? std::string::npos : close + 1 - paren);
  }
  return label;
}

std::vector<Knob> knobs(Calibration* c) {
  std::vector<Knob> k;
  std::vector<GpuModel*> sorted;
  for (GpuModel& g : c->gpus) sorted.push_back(&g);
  std::stable_sort(sorted.begin(), sorted.end(), [](const GpuModel* a, const GpuModel* b) { return a->sm < b->sm; });
  for (GpuModel* g : sorted) {
    const std::string base = "gpu.sm" + std::to_string(g->sm) + " (" + g->name + ")";
    k.push_back({base + ".sms", "SMs", g->source, nullptr, &g->sms, 1, 1024});
    k.push_back({base + ".sm_copy", "GB/s", g->source, &g->sm_copy_gbs, nullptr, 1e-3, 1e5});
    k.push_back({base + ".tflops", "TFLOP/s", g->tflops_source, &g->tflops, nullptr, 1e-3, 1e6});
  }
  LinkEfficiency& e = c->efficiency;
  k.push_back({"efficiency.nvlink (NVL, C2C)", "x", e.nvlink_source, &e.nvlink, nullptr, 1e-3, 1});
  k.push_back({"efficiency.pcie (PCI)", "x", e.pcie_source, &e.pcie, nullptr, 1e-3, 1});
  k.push_back({"efficiency.sys (SYS)", "x", e.sys_source, &e.sys, nullptr, 1e-3, 1});
  k.push_back({"efficiency.net (NET)", "x", e.net_source, &e.net, nullptr, 1e-3, 1});
  k.push_back({"efficiency.loc (LOC)", "x", "a node's internal hop (NIC function to its port): no protocol overhead",
               &e.loc, nullptr, 1e-3, 1});
  const char* const protos[3] = {"LL", "LL128", "Simple"};
  for (int p = 0; p < 3; ++p)
    k.push_back({std::string("step_overhead.") + protos[p], "us", c->step_overhead_source, &c->step_overhead_us[p],
                 nullptr, 0, 1e6});
  for (int p = 0; p < 3; ++p)
    k.push_back({std::string("loop_share.") + protos[p], "x", c->loop_share_source, &c->loop_share[p], nullptr, 1e-3, 1});
  k.push_back({"launch", "us", c->launch_source, &c->launch_us, nullptr, 0, 1e6});
  k.push_back({"host_issue", "us", c->host_issue_source, &c->host_issue_us, nullptr, 0, 1e6});
  k.push_back({"host_issue.per_channel", "us", c->host_issue_source, &c->host_issue_per_channel_us, nullptr, 0, 1e6});
  k.push_back({"net_message", "us", c->net_message_source, &c->net_message_us, nullptr, 0, 1e6});
  k.push_back({"nvls.latency", "us", c->nvls_source, &c->nvls_latency_us, nullptr, 0, 1e6});
  k.push_back({"nvls.step", "us", c->nvls_source, &c->nvls_step_us, nullptr, 0, 1e6});
  return k;
}

std::string lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

}  // namespace

std::string Calibration::describe() const {
  std::string s;
  char head[160];
  snprintf(head, sizeof head, "%-34s %10s  %-6s %s\n", "constant", "value", "unit", "source");
  s += head;
  Calibration copy = *this;  // knobs() hands out pointers it may write through; describe() only reads
  for (const Knob& k : knobs(&copy)) add_line(&s, k.label, fmt_num(k.value()), k.unit, k.source);
  return s;
}

bool Calibration::set(const std::string& name, double value, std::string* error) {
  const std::string key = lower(bare_name(name));  // describe()'s label is accepted as printed
  for (const Knob& k : knobs(this)) {
    const std::string kname = bare_name(k.label);
    if (lower(kname) != key) continue;
    if (!std::isfinite(value) || value < k.lo || value > k.hi || (k.whole != nullptr && value != std::floor(value))) {
      *error = "calibration constant " + kname + ": value " + fmt_num(value) + " is out of range (" +
               (k.whole != nullptr ? "a whole number " : "") + "from " + fmt_num(k.lo) + " to " + fmt_num(k.hi) + ")";
      return false;
    }
    if (k.whole != nullptr) *k.whole = static_cast<int>(value);
    else *k.real = value;
    return true;
  }
  std::string all;
  for (const std::string& n : names()) all += (all.empty() ? "" : ", ") + n;
  *error = "unknown calibration constant '" + name + "' (known: " + all + ")";
  return false;
}

bool Calibration::apply(const std::string& assignments, std::string* error) {
  size_t pos = 0;
  while (pos <= assignments.size()) {
    size_t comma = assignments.find(',', pos);
    if (comma == std::string::npos) comma = assignments.size();
    const std::string item = assignments.substr(pos, comma - pos);
    pos = comma + 1;
    if (item.empty()) {
      if (comma == assignments.size()) break;
      *error = "empty item in calibration assignments '" + assignments + "'";
      return false;
    }
    const size_t eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      *error = "calibration assignment '" + item + "' is not NAME=VALUE";
      return false;
    }
    const std::string v = item.substr(eq + 1);
    char* end = nullptr;
    const double value = std::strtod(v.c_str(), &end);
    if (v.empty() || end == v.c_str() || *end != '\0') {
      *error = "calibration assignment '" + item + "': '" + v + "' is not a number";
      return false;
    }
    if (!set(item.substr(0, eq), value, error)) return false;
  }
  return true;
}

std::vector<std::string> Calibration::names() const {
  Calibration copy = *this;
  std::vector<std::string> out;
  for (const Knob& k : knobs(&copy)) out.push_back(bare_name(k.label));
  return out;
}

namespace {

std::string num(double v) {
  char b[64];
  snprintf(b, sizeof b, "%g", v);
  return b;
}

// Leaf <-> spine links of the fabric: bw = model_bw = down / o, lanes = round(ports / o) >= 1.
void set_leaf_uplinks(Topology* t, double o) {
  const int n = static_cast<int>(t->nodes.size());
  for (int leaf = 0; leaf < n; ++leaf) {
    const TopoNode& ln = t->nodes[leaf];
    if (ln.type != TopoNodeType::kNetSwitch || ln.tier != 0) continue;
    double down = 0;
    int ports = 0;
    for (int l : ln.out) {
      const TopoLink& k = t->links[l];
      if (k.type == LinkType::kNet && t->nodes[k.to].type == TopoNodeType::kNet) {
        const int in = k.reverse;  // NET -> leaf
        down += in >= 0 ? t->links[in].bw : k.bw;
        ++ports;
      }
    }
    for (int l : ln.out) {
      TopoLink& k = t->links[l];
      const TopoNode& to = t->nodes[k.to];
      if (k.type != LinkType::kNet || to.type != TopoNodeType::kNetSwitch || to.tier != 1) continue;
      const double up = down / o;
      const int lanes = std::max(1, static_cast<int>(std::lround(ports / o)));
      k.bw = k.model_bw = up;
      k.lanes = lanes;
      if (k.reverse >= 0) {
        TopoLink& r = t->links[k.reverse];
        r.bw = r.model_bw = up;
        r.lanes = lanes;
      }
    }
  }
}

// Removes NET ports with dev >= keep on every machine (and what hangs only on them).
Topology keep_nics(const Topology& t, int keep) {
  const int n = static_cast<int>(t.nodes.size());
  std::vector<bool> drop(n, false);
  for (int i = 0; i < n; ++i) {
    const TopoNode& x = t.nodes[i];
    if (x.type == TopoNodeType::kNet && x.machine >= 0 && x.dev >= keep) drop[i] = true;
  }
  // NICs whose every port is gone; leaf switches whose every NET port is gone.
  for (int i = 0; i < n; ++i) {
    const TopoNode& x = t.nodes[i];
    if (x.type != TopoNodeType::kNic && !(x.type == TopoNodeType::kNetSwitch && x.tier == 0)) continue;
    int nets = 0, dropped = 0;
    for (int l : x.out) {
      const int to = t.links[l].to;
      if (t.nodes[to].type == TopoNodeType::kNet) {
        ++nets;
        if (drop[to]) ++dropped;
      }
    }
    if (nets > 0 && nets == dropped) drop[i] = true;
  }
  Topology r;
  r.machines = t.machines;
  r.fabric = t.fabric;
  r.name = t.name;
  r.description = t.description;
  std::vector<int> map(n, -1);
  for (int i = 0; i < n; ++i) {
    if (!drop[i]) map[i] = r.add_node(t.nodes[i]);
  }
  const int nl = static_cast<int>(t.links.size());
  for (int l = 0; l < nl; ++l) {
    const TopoLink& a = t.links[l];
    if (a.reverse >= 0 && a.reverse < l) continue;  // added with its mirror
    if (a.from < 0 || a.to < 0 || map[a.from] < 0 || map[a.to] < 0) continue;
    const int i = r.connect(map[a.from], map[a.to], a.type, a.bw, a.latency_us, a.lanes, a.generation,
                            a.model_bw);
    if (a.reverse >= 0) {
      const TopoLink& b = t.links[a.reverse];
      TopoLink& rb = r.links[r.links[i].reverse];
      rb.bw = b.bw;
      rb.model_bw = b.model_bw;
      rb.latency_us = b.latency_us;
      rb.lanes = b.lanes;
      rb.generation = b.generation;
    }
  }
  return r;
}

}  // namespace

bool apply_what_if(const WhatIf& w, Topology* topo, std::string* error) {
  auto fail = [&](const std::string& why) {
    if (error) *error = why;
    return false;
  };
  auto bad_bw = [&](const char* flag, double v) {
    return fail(std::string(flag) + ": must be a finite number > 0 (got " + num(v) + ")");
  };
  // A value <= 0 means "not asked" (calibration.h); a negative or non-finite one is a mistake.
  if (std::isnan(w.nvlink_bw) || std::isinf(w.nvlink_bw) || w.nvlink_bw < 0) {
    return bad_bw("--nvlink-bw", w.nvlink_bw);
  }
  if (std::isnan(w.nic_bw) || std::isinf(w.nic_bw) || w.nic_bw < 0) return bad_bw("--nic-bw", w.nic_bw);
  if (w.nics_per_machine < 0) {
    return fail("--nics-per-machine: must be >= 1 (got " + std::to_string(w.nics_per_machine) + ")");
  }
  // -1 is "not asked" (WhatIf's default); any other negative is a mistake.
  if (std::isnan(w.link_latency_us) || std::isinf(w.link_latency_us) ||
      (w.link_latency_us < 0 && w.link_latency_us != -1)) {
    return fail("--link-latency: must be a finite number >= 0 us (got " + num(w.link_latency_us) + ")");
  }
  if (std::isnan(w.oversubscription) || std::isinf(w.oversubscription) || w.oversubscription < 0) {
    return fail("--oversubscription: must be a finite number > 0 (got " + num(w.oversubscription) + ")");
  }
  if (topo == nullptr) return fail("apply_what_if: no topology");
  if (w.nics_per_machine > 0) {
    const int machines = std::max(topo->machines, 1);
    for (int m = 0; m < machines; ++m) {
      const int have = static_cast<int>(topo->nets(m).size());
      if (w.nics_per_machine > have) {
        return fail("--nics-per-machine: " + std::to_string(w.nics_per_machine) + " asked but machine " +
                    std::to_string(m) + " of " + (topo->name.empty() ? "the model" : topo->name) +
                    " has " + std::to_string(have) + " NIC port" + (have == 1 ? "" : "s"));
      }
    }
  }
  const bool change = w.nics_per_machine > 0 || w.nvlink_bw > 0 || w.nic_bw > 0 ||
                      w.link_latency_us >= 0 || w.oversubscription > 0;
  if (!change) return true;

  // 1. NICs.
  if (w.nics_per_machine > 0) {
    bool any = false;
    for (const TopoNode& x : topo->nodes) {
      any = any || (x.type == TopoNodeType::kNet && x.machine >= 0 && x.dev >= w.nics_per_machine);
    }
    if (any) *topo = keep_nics(*topo, w.nics_per_machine);
  }

  // 2. NVLink: per GPU, spread nvlink_bw over its NVLink edges by lanes.
  if (w.nvlink_bw > 0) {
    const std::vector<TopoLink> before = topo->links;
    for (const TopoNode& g : topo->nodes) {
      if (g.type != TopoNodeType::kGpu) continue;
      int lanes = 0;
      for (int l : g.out) {
        if (before[l].type == LinkType::kNvl) lanes += std::max(before[l].lanes, 1);
      }
      if (lanes == 0) continue;
      for (int l : g.out) {
        if (before[l].type != LinkType::kNvl) continue;
        const double bw = w.nvlink_bw * std::max(before[l].lanes, 1) / lanes;
        for (int k : {l, before[l].reverse}) {
          if (k < 0) continue;
          TopoLink& x = topo->links[k];
          const double old = before[k].bw;
          x.bw = bw;
          x.model_bw = old > 0 ? before[k].model_bw * bw / old : bw;
        }
      }
    }
  }

  // 3. NIC ports.
  if (w.nic_bw > 0) {
    for (TopoLink& l : topo->links) {
      const TopoNodeType a = topo->nodes[l.from].type, b = topo->nodes[l.to].type;
      const bool nic_port = l.type == LinkType::kLoc && ((a == TopoNodeType::kNic && b == TopoNodeType::kNet) ||
                                                         (a == TopoNodeType::kNet && b == TopoNodeType::kNic));
      const bool cable = l.type == LinkType::kNet && (a == TopoNodeType::kNet || b == TopoNodeType::kNet);
      if (nic_port || cable) l.bw = l.model_bw = w.nic_bw;
    }
    for (TopoNode& x : topo->nodes) {
      if (x.type == TopoNodeType::kNet || x.type == TopoNodeType::kNic) x.net_speed_mbps = w.nic_bw * 8000.0;
    }
    const double o = topo->fabric.oversubscription > 0 ? topo->fabric.oversubscription : 1.0;
    set_leaf_uplinks(topo, o);
  }

  // 4. Latency.
  if (w.link_latency_us >= 0) {
    for (TopoLink& l : topo->links) l.latency_us = w.link_latency_us;
  }

  // 5. Oversubscription.
  if (w.oversubscription > 0) {
    topo->fabric.oversubscription = w.oversubscription;
    set_leaf_uplinks(topo, w.oversubscription);
  }

  topo->compute_paths();
  return true;
}

}  // namespace sim
}  // namespace cclab
