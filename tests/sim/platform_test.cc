// tests/sim/platform_test.cc - the SimGrid platform of a topology model (sim/platform.h), the
// calibration table and the what-if edits (sim/calibration.h).
//
// SimGrid allows one engine (and in practice one platform) per process, so every test that builds a
// platform runs in a forked child (run_in_child): the child's EXPECT failures print as usual, the
// parent fails the test when the child reports any (or dies).
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <simgrid/s4u.hpp>
#include <xbt/config.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "graph/topo.h"
#include "sim/calibration.h"
#include "sim/platform.h"

namespace cclab {
namespace sim {
namespace {

namespace s4u = simgrid::s4u;

int failed_parts() {
  const ::testing::TestResult* r = ::testing::UnitTest::GetInstance()->current_test_info()->result();
  int n = 0;
  for (int i = 0; i < r->total_part_count(); ++i) n += r->GetTestPartResult(i).failed() ? 1 : 0;
  return n;
}

// Runs `fn` in a forked child. Returns "" when it passed, else what went wrong (the child has printed
// its failures already).
std::string run_in_child(const std::function<void()>& fn) {
  fflush(stdout);
  fflush(stderr);
  const pid_t pid = fork();
  if (pid < 0) return "fork failed";
  if (pid == 0) {
    const int before = failed_parts();
    try {
      fn();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "exception in the child: " << e.what();
    } catch (...) {
      ADD_FAILURE() << "unknown exception in the child";
    }
    const int rc = failed_parts() > before ? 1 : 0;
    fflush(stdout);
    fflush(stderr);
    _exit(rc);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return "waitpid failed";
  if (WIFEXITED(status)) {
    return WEXITSTATUS(status) == 0 ? "" : "the child reported failures (printed above)";
  }
  if (WIFSIGNALED(status)) return "the child died of signal " + std::to_string(WTERMSIG(status));
  return "the child ended strangely";
}

#define EXPECT_IN_CHILD(...)                                  \
  do {                                                        \
    const std::string child_failed_ = run_in_child([&] __VA_ARGS__); \
    EXPECT_TRUE(child_failed_.empty()) << child_failed_;      \
  } while (0)

Topology preset(const std::string& name, int machines = 1, FabricSpec fabric = FabricSpec()) {
  Topology t;
  std::string err;
  EXPECT_TRUE(make_preset_topology(name, machines, fabric, &t, &err)) << err;
  return t;
}

s4u::Engine* new_engine() {
  static int argc = 1;
  static char arg0[] = "sim_platform_test";
  static char* argv[] = {arg0, nullptr};
  auto* e = new s4u::Engine(&argc, argv);  // lives until the child exits
  configure_engine(*e);
  return e;
}

std::unique_ptr<Platform> build(s4u::Engine* e, const Topology& t) {
  std::unique_ptr<Platform> p;
  std::string err;
  EXPECT_TRUE(Platform::build(*e, t, default_calibration(), &p, &err)) << err;
  return p;
}

double efficiency(LinkType type) {
  const LinkEfficiency& e = default_calibration().efficiency;
  switch (type) {
    case LinkType::kNvl:
    case LinkType::kC2c: return e.nvlink;
    case LinkType::kPci: return e.pcie;
    case LinkType::kSys: return e.sys;
    case LinkType::kNet: return e.net;
    case LinkType::kLoc: return e.loc;
  }
  return 0;
}

std::string link_name(const Topology& t, int l) {
  return t.nodes[t.links[l].from].name + "->" + t.nodes[t.links[l].to].name;
}

// ---- calibration --------------------------------------------------------------------------------

TEST(Calibration, GpuPicksNewestGenerationNotNewerThanSm) {
  const Calibration& c = default_calibration();
  ASSERT_EQ(c.gpus.size(), 4u);
  EXPECT_STREQ(c.gpu(86).name, "A100");
  EXPECT_EQ(c.gpu(86).sm, 80);
  EXPECT_EQ(c.gpu(86).sms, 108);
  EXPECT_STREQ(c.gpu(90).name, "H100 SXM");
  EXPECT_EQ(c.gpu(90).sms, 132);
  EXPECT_STREQ(c.gpu(60).name, "V100");  // older than every entry: the smallest
  EXPECT_EQ(c.gpu(70).sms, 80);
  EXPECT_EQ(c.gpu(100).sms, 148);
  EXPECT_EQ(c.gpu(120).sm, 100);
  for (const GpuModel& g : c.gpus) {
    EXPECT_GT(g.sm_copy_gbs, 0) << g.name;
    EXPECT_GT(std::string(g.source).size(), 20u) << g.name;
  }
  EXPECT_EQ(c.gpu(70).sm_copy_gbs, 20);
  EXPECT_EQ(c.gpu(80).sm_copy_gbs, 25);
  EXPECT_EQ(c.gpu(90).sm_copy_gbs, 35);
  EXPECT_EQ(c.gpu(100).sm_copy_gbs, 40);
  // Efficiencies are fractions of a link's rate (their values are held by the calibration points in
  // sim_test and by the golden logs).
  for (double e : {c.efficiency.nvlink, c.efficiency.pcie, c.efficiency.sys, c.efficiency.net, c.efficiency.loc}) {
    EXPECT_GT(e, 0.0);
    EXPECT_LE(e, 1.0);
  }
  Calibration empty;
  EXPECT_EQ(empty.gpu(80).sms, 0);
}

TEST(Calibration, DescribeListsEveryConstantWithItsSource) {
  const Calibration& c = default_calibration();
  const std::string d = c.describe();
  EXPECT_EQ(d, c.describe());  // deterministic
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < d.size()) {
    size_t nl = d.find('\n', start);
    if (nl == std::string::npos) nl = d.size();
    lines.push_back(d.substr(start, nl - start));
    start = nl + 1;
  }
  // header + 3 per GPU (SMs, copy rate, tensor peak) + 5 efficiencies + 3 step overheads + 3 loop shares +
  // launch + 2 host issue costs + the network's per-message cost + NVLS's latency and per-step cost
  ASSERT_EQ(lines.size(), 1u + 3 * 4 + 5 + 3 + 3 + 1 + 2 + 1 + 2) << d;
  EXPECT_EQ(d.find("(no source)"), std::string::npos) << d;
  for (const char* name : {"gpu.sm70 (V100).sms", "gpu.sm70 (V100).sm_copy", "gpu.sm80 (A100).sm_copy",
                           "gpu.sm90 (H100 SXM).sms", "gpu.sm100 (B200).sm_copy", "gpu.sm90 (H100 SXM).tflops", "efficiency.nvlink",
                           "efficiency.pcie", "efficiency.sys", "efficiency.net", "efficiency.loc",
                           "step_overhead.LL ", "step_overhead.LL128", "step_overhead.Simple", "loop_share.LL ",
                           "loop_share.LL128", "loop_share.Simple", "launch", "host_issue ", "host_issue.per_channel", "net_message", "nvls.latency", "nvls.step"}) {
    EXPECT_NE(d.find(name), std::string::npos) << name << "\n" << d;
  }
  for (size_t i = 1; i < lines.size(); ++i) EXPECT_GT(lines[i].size(), 60u) << lines[i];
  EXPECT_NE(d.find("nccl-tests issue 290"), std::string::npos) << d;
  EXPECT_NE(d.find("hwLat"), std::string::npos) << d;
  EXPECT_NE(d.find("baseLat"), std::string::npos) << d;
}

// Every name the table prints can be set by that name (what `cclab sim --calib` and the accuracy fit use),
// and a wrong name or value is refused with a message naming it, the calibration unchanged.
TEST(Calibration, SetByTheNamesTheTablePrints) {
  Calibration c = default_calibration();
  const std::vector<std::string> names = c.names();
  ASSERT_EQ(names.size(), 3u * 4 + 5 + 3 + 3 + 1 + 2 + 1 + 2);
  const std::string table = c.describe();
  for (const std::string& n : names) {
    const std::string key = n.find('.') == std::string::npos ? n : n.substr(n.rfind('.'));
    EXPECT_NE(table.find(key), std::string::npos) << n;
  }
  std::string err;
  ASSERT_TRUE(c.set("launch", 7.5, &err)) << err;
  EXPECT_EQ(c.launch_us, 7.5);
  ASSERT_TRUE(c.set("STEP_OVERHEAD.ll128", 3, &err)) << err;  // case-insensitive
  EXPECT_EQ(c.step_overhead_us[1], 3);
  ASSERT_TRUE(c.set("gpu.sm90 (H100 SXM).sm_copy", 30, &err)) << err;  // as describe() prints it
  EXPECT_EQ(c.gpu(90).sm_copy_gbs, 30);
  ASSERT_TRUE(c.set("efficiency.nvlink (NVL, C2C)", 0.9, &err)) << err;
  EXPECT_EQ(c.efficiency.nvlink, 0.9);
  ASSERT_TRUE(c.apply("host_issue=5,host_issue.per_channel=0.25,loop_share.LL128=0.5", &err)) << err;
  EXPECT_EQ(c.host_issue_us, 5);
  EXPECT_EQ(c.host_issue_per_channel_us, 0.25);
  EXPECT_EQ(c.loop_share[1], 0.5);
  ASSERT_TRUE(c.set("gpu.sm80.sms", 100, &err)) << err;
  EXPECT_EQ(c.gpu(80).sms, 100);

  const Calibration before = c;
  const struct {
    const char* assign;
    const char* want;
  } bad[] = {
      {"lunch=4", "unknown calibration constant 'lunch'"},
      {"launch=-1", "launch: value -1 is out of range"},
      {"loop_share.LL=0", "loop_share.LL: value 0 is out of range"},
      {"efficiency.net=1.5", "efficiency.net: value 1.5 is out of range"},
      {"gpu.sm80.sms=1.5", "a whole number"},
      {"launch", "'launch' is not NAME=VALUE"},
      {"launch=fast", "'fast' is not a number"},
      {"launch=4,,host_issue=1", "empty item"},
  };
  for (const auto& b : bad) {
    Calibration t = before;
    EXPECT_FALSE(t.apply(b.assign, &err)) << b.assign;
    EXPECT_NE(err.find(b.want), std::string::npos) << b.assign << ": " << err;
  }
  // A failing item leaves the ones before it applied; a failing set() changes nothing.
  Calibration t = before;
  EXPECT_FALSE(t.set("launch", 1e9, &err));
  EXPECT_EQ(t.launch_us, before.launch_us);
}

// ---- what-if ------------------------------------------------------------------------------------

double nvl_out(const Topology& t, int node) {
  double s = 0;
  for (int l : t.nodes[node].out) {
    if (t.links[l].type == LinkType::kNvl) s += t.links[l].bw;
  }
  return s;
}

TEST(WhatIf, NothingAskedChangesNothing) {
  Topology t = preset("dgx-h100", 2);
  const std::string before = t.describe();
  std::string err;
  ASSERT_TRUE(apply_what_if(WhatIf(), &t, &err)) << err;
  EXPECT_EQ(t.describe(), before);
}

TEST(WhatIf, NvlinkBwSpreadsOverLanesBothDirections) {
  Topology t = preset("dgx-h100");
  const Topology base = t;
  WhatIf w;
  w.nvlink_bw = 900;
  std::string err;
  ASSERT_TRUE(apply_what_if(w, &t, &err)) << err;
  ASSERT_EQ(t.links.size(), base.links.size());
  for (int g : t.gpus()) EXPECT_DOUBLE_EQ(nvl_out(t, g), 900) << t.nodes[g].name;
  int nvl = 0;
  for (size_t l = 0; l < t.links.size(); ++l) {
    const TopoLink& a = t.links[l];
    const TopoLink& b = base.links[l];
    if (a.type == LinkType::kNvl) {
      ++nvl;
      EXPECT_DOUBLE_EQ(a.bw, 2 * b.bw) << link_name(t, l);  // 450 -> 900: every edge doubles
      EXPECT_DOUBLE_EQ(a.model_bw, 2 * b.model_bw) << link_name(t, l);
      EXPECT_DOUBLE_EQ(a.bw, 900.0 * a.lanes / 18) << link_name(t, l);
    } else {
      EXPECT_EQ(a.bw, b.bw) << link_name(t, l);
      EXPECT_EQ(a.model_bw, b.model_bw) << link_name(t, l);
    }
  }
  EXPECT_EQ(nvl, 8 * 4 * 2);
  // The search sees it: GPU -> GPU path bandwidth doubles.
  const int g0 = t.gpu_node(0, 0), g1 = t.gpu_node(0, 1);
  EXPECT_DOUBLE_EQ(t.path(g0, g1).bw, 2 * base.path(g0, g1).bw);

  Topology p = preset("nvlink-pairs");
  w.nvlink_bw = 100;
  ASSERT_TRUE(apply_what_if(w, &p, &err)) << err;
  const int l01 = p.link_between(p.gpu_node(0, 0), p.gpu_node(0, 1));
  ASSERT_GE(l01, 0);
  EXPECT_DOUBLE_EQ(p.links[l01].bw, 100);
  EXPECT_DOUBLE_EQ(p.links[p.links[l01].reverse].bw, 100);
  EXPECT_DOUBLE_EQ(p.links[l01].model_bw, 48.0 * 100 / 56.25);

  // A machine without NVLink is left alone.
  Topology q = preset("pcie-4gpu");
  const std::string before = q.describe();
  ASSERT_TRUE(apply_what_if(w, &q, &err)) << err;
  EXPECT_EQ(q.describe(), before);
}

TEST(WhatIf, NicBwSetsThePortsAndKeepsTheFabricRatio) {
  Topology t = preset("dgx-h100", 2);
  const Topology base = t;
  WhatIf w;
  w.nic_bw = 25;
  std::string err;
  ASSERT_TRUE(apply_what_if(w, &t, &err)) << err;
  int cables = 0, ports = 0, uplinks = 0;
  for (size_t l = 0; l < t.links.size(); ++l) {
    const TopoLink& k = t.links[l];
    const TopoNodeType a = t.nodes[k.from].type, b = t.nodes[k.to].type;
    if (k.type == LinkType::kNet && (a == TopoNodeType::kNet || b == TopoNodeType::kNet)) {
      ++cables;
      EXPECT_EQ(k.bw, 25) << link_name(t, l);
      EXPECT_EQ(k.model_bw, 25) << link_name(t, l);
    } else if (k.type == LinkType::kLoc && (a == TopoNodeType::kNic || b == TopoNodeType::kNic)) {
      ++ports;
      EXPECT_EQ(k.bw, 25) << link_name(t, l);
    } else if (k.type == LinkType::kNet) {
      ++uplinks;  // leaf <-> spine: 2 machines x 25 GB/s, oversubscription 1
      EXPECT_EQ(k.bw, 50) << link_name(t, l);
      EXPECT_EQ(base.links[l].bw, 100) << link_name(t, l);
    } else {
      EXPECT_EQ(k.bw, base.links[l].bw) << link_name(t, l);  // PCIe, NVLink, SYS stay
    }
  }
  EXPECT_EQ(cables, 2 * 16);
  EXPECT_EQ(ports, 2 * 16);
  EXPECT_EQ(uplinks, 2 * 8);
  for (int n : t.nets()) EXPECT_EQ(t.nodes[n].net_speed_mbps, 200000);
  const int a = t.gpu_node(0, 0), b = t.gpu_node(1, 0);
  EXPECT_EQ(t.path(a, b).type, PathType::kNet);
  EXPECT_DOUBLE_EQ(t.path(a, b).bw_physical, 25);
}

TEST(WhatIf, NicsPerMachineKeepsTheFirstNics) {
  Topology t = preset("dgx-h100", 2);
  WhatIf w;
  w.nics_per_machine = 4;
  std::string err;
  ASSERT_TRUE(apply_what_if(w, &t, &err)) << err;
  EXPECT_TRUE(t.validate(&err)) << err;
  for (int m = 0; m < 2; ++m) {
    const std::vector<int> nets = t.nets(m);
    ASSERT_EQ(nets.size(), 4u);
    for (size_t i = 0; i < nets.size(); ++i) EXPECT_EQ(t.nodes[nets[i]].dev, static_cast<int>(i));
    EXPECT_EQ(t.nodes_of(TopoNodeType::kNic, m).size(), 4u);
    EXPECT_EQ(t.gpus(m).size(), 8u);
  }
  // Leaves of rails 4..7 are gone with their spine links; the spine stays.
  int leaves = 0;
  for (int s : t.nodes_of(TopoNodeType::kNetSwitch)) {
    if (t.nodes[s].tier == 0) {
      ++leaves;
      EXPECT_LT(t.nodes[s].rail, 4) << t.nodes[s].name;
    }
  }
  EXPECT_EQ(leaves, 4);
  EXPECT_EQ(t.find("m0.net5"), -1);
  EXPECT_EQ(t.find("m1.nic7"), -1);
  EXPECT_EQ(t.find("fabric.leaf.r6.0"), -1);
  EXPECT_GE(t.find("fabric.spine.0"), 0);
  for (const TopoLink& l : t.links) {
    ASSERT_GE(l.reverse, 0);
    EXPECT_EQ(t.links[l.reverse].from, l.to);
    EXPECT_EQ(t.links[l.reverse].to, l.from);
  }
  // Every GPU still reaches every GPU of the other machine, through a NIC that is left.
  for (int d = 0; d < 8; ++d) {
    const int a = t.gpu_node(0, d), b = t.gpu_node(1, d);
    const TopoPath& p = t.path(a, b);
    ASSERT_EQ(p.type, PathType::kNet) << d;
    bool via_net = false;
    for (int l : p.links) {
      const TopoNode& n = t.nodes[t.links[l].to];
      if (n.type == TopoNodeType::kNet) {
        via_net = true;
        EXPECT_LT(n.dev, 4);
      }
    }
    EXPECT_TRUE(via_net) << d;
  }
  // Asking for as many as there are is a no-op; more is an error naming the flag.
  Topology u = preset("pcie-8gpu-2socket");
  const std::string before = u.describe();
  w.nics_per_machine = 2;
  ASSERT_TRUE(apply_what_if(w, &u, &err)) << err;
  EXPECT_EQ(u.describe(), before);
  w.nics_per_machine = 3;
  EXPECT_FALSE(apply_what_if(w, &u, &err));
  EXPECT_NE(err.find("--nics-per-machine"), std::string::npos) << err;
  EXPECT_NE(err.find("has 2 NIC ports"), std::string::npos) << err;
  w.nics_per_machine = 1;
  ASSERT_TRUE(apply_what_if(w, &u, &err)) << err;
  EXPECT_EQ(u.nets().size(), 1u);
  EXPECT_TRUE(u.validate(&err)) << err;
}

TEST(WhatIf, LinkLatencySetsEveryLink) {
  Topology t = preset("dgx-h100", 2);
  WhatIf w;
  w.link_latency_us = 1;
  std::string err;
  ASSERT_TRUE(apply_what_if(w, &t, &err)) << err;
  for (const TopoLink& l : t.links) EXPECT_EQ(l.latency_us, 1);
  const int a = t.gpu_node(0, 0), b = t.gpu_node(0, 1), c = t.gpu_node(1, 0);
  EXPECT_DOUBLE_EQ(t.path(a, b).latency_us, 2);  // GPU -> NVS -> GPU
  EXPECT_DOUBLE_EQ(t.path(a, c).latency_us, t.path(a, c).hops());
  w.link_latency_us = 0;  // zero is a value, not "unset"
  ASSERT_TRUE(apply_what_if(w, &t, &err)) << err;
  for (const TopoLink& l : t.links) EXPECT_EQ(l.latency_us, 0);
}

TEST(WhatIf, OversubscriptionMatchesTheFabricBuilder) {
  for (int machines : {2, 64}) {  // one leaf per rail, and two (32 machines per leaf)
    Topology t = preset("dgx-h100", machines);
    WhatIf w;
    w.oversubscription = 2;
    std::string err;
    ASSERT_TRUE(apply_what_if(w, &t, &err)) << err;
    FabricSpec f;
    f.oversubscription = 2;
    const Topology want = preset("dgx-h100", machines, f);
    EXPECT_EQ(t.fabric.oversubscription, 2);
    ASSERT_EQ(t.links.size(), want.links.size());
    int uplinks = 0;
    for (size_t l = 0; l < t.links.size(); ++l) {
      const TopoLink& a = t.links[l];
      const TopoLink& b = want.links[l];
      EXPECT_EQ(a.from, b.from);
      EXPECT_EQ(a.to, b.to);
      EXPECT_DOUBLE_EQ(a.bw, b.bw) << link_name(t, l);
      EXPECT_DOUBLE_EQ(a.model_bw, b.model_bw) << link_name(t, l);
      EXPECT_EQ(a.lanes, b.lanes) << link_name(t, l);
      EXPECT_DOUBLE_EQ(a.latency_us, b.latency_us) << link_name(t, l);
      const TopoNode& from = t.nodes[a.from];
      if (from.type == TopoNodeType::kNetSwitch && from.tier == 0 &&
          t.nodes[a.to].type == TopoNodeType::kNetSwitch) {
        ++uplinks;
        const int per_leaf = std::min(machines, 32);
        EXPECT_DOUBLE_EQ(a.bw, per_leaf * 50.0 / 2) << link_name(t, l);  // half the leaf's down bw
      }
    }
    EXPECT_EQ(uplinks, 8 * ((machines + 31) / 32));
  }
  // After nic_bw, oversubscription applies to the new port rate.
  Topology t = preset("dgx-h100", 2);
  WhatIf w;
  w.nic_bw = 100;
  w.oversubscription = 4;
  std::string err;
  ASSERT_TRUE(apply_what_if(w, &t, &err)) << err;
  const int leaf = t.find("fabric.leaf.r0.0"), spine = t.find("fabric.spine.0");
  const int up = t.link_between(leaf, spine);
  ASSERT_GE(up, 0);
  EXPECT_DOUBLE_EQ(t.links[up].bw, 2 * 100.0 / 4);
  EXPECT_DOUBLE_EQ(t.links[t.links[up].reverse].bw, 2 * 100.0 / 4);
}

TEST(WhatIf, BadValuesAreRejectedNamingTheFlag) {
  const Topology base = preset("dgx-h100", 2);
  struct Case {
    WhatIf w;
    const char* flag;
    const char* value;
  };
  std::vector<Case> cases(7);
  cases[0].w.nvlink_bw = -3, cases[0].flag = "--nvlink-bw", cases[0].value = "got -3";
  cases[1].w.nic_bw = -3, cases[1].flag = "--nic-bw", cases[1].value = "got -3";
  cases[2].w.nic_bw = std::nan(""), cases[2].flag = "--nic-bw", cases[2].value = "nan";
  cases[3].w.nics_per_machine = -1, cases[3].flag = "--nics-per-machine", cases[3].value = "got -1";
  cases[4].w.link_latency_us = -2, cases[4].flag = "--link-latency", cases[4].value = "got -2";
  cases[5].w.oversubscription = -1, cases[5].flag = "--oversubscription", cases[5].value = "got -1";
  cases[6].w.nvlink_bw = INFINITY, cases[6].flag = "--nvlink-bw", cases[6].value = "inf";
  for (const Case& c : cases) {
    Topology t = base;
    WhatIf w = c.w;
    if (std::string(c.flag) != "--link-latency") w.link_latency_us = 5;  // valid, must not be applied
    std::string err;
    EXPECT_FALSE(apply_what_if(w, &t, &err)) << c.flag;
    EXPECT_NE(err.find(c.flag), std::string::npos) << err;
    EXPECT_NE(err.find(c.value), std::string::npos) << err;
    EXPECT_EQ(t.describe(), base.describe()) << c.flag;  // untouched on error
  }
}

// ---- platform -----------------------------------------------------------------------------------

// Everything a platform must show for any model: hosts, links, rates, latencies, and every declared
// route as SimGrid resolves it.
void check_platform(const Topology& t, const std::vector<std::pair<int, int>>& pairs) {
  s4u::Engine* e = new_engine();
  std::unique_ptr<Platform> p = build(e, t);
  ASSERT_TRUE(p);
  configure_engine(*e);  // a second call, after the platform exists, changes nothing
  EXPECT_EQ(simgrid::config::get_value<std::string>("network/model"), "CM02");
  EXPECT_FALSE(simgrid::config::get_value<bool>("network/crosstraffic"));
  // Full LMM updates: SimGrid 3.32's lazy ones leave flows at stale rates (sim/platform.cc).
  EXPECT_EQ(simgrid::config::get_value<std::string>("network/optim"), "Full");
  EXPECT_EQ(simgrid::config::get_value<double>("network/latency-factor"), 1.0);
  EXPECT_EQ(simgrid::config::get_value<double>("network/bandwidth-factor"), 1.0);
  EXPECT_EQ(simgrid::config::get_value<double>("network/weight-S"), 0.0);
  EXPECT_EQ(simgrid::config::get_value<int>("contexts/stack-size"), 256);

  const Calibration& cal = default_calibration();
  const std::vector<int> gpus = t.gpus();
  EXPECT_EQ(e->get_host_count(), gpus.size());
  for (int i = 0; i < static_cast<int>(t.nodes.size()); ++i) {
    s4u::Host* h = p->gpu_host(i);
    if (t.nodes[i].type != TopoNodeType::kGpu) {
      EXPECT_EQ(h, nullptr) << t.nodes[i].name;
      continue;
    }
    ASSERT_NE(h, nullptr) << t.nodes[i].name;
    EXPECT_EQ(h->get_name(), t.nodes[i].name);
    EXPECT_EQ(h->get_speed(), cal.gpu(t.nodes[i].sm).sm_copy_gbs * 1e9);
    EXPECT_EQ(h->get_core_count(), cal.gpu(t.nodes[i].sm).sms);
  }
  EXPECT_EQ(p->link_count(), static_cast<int>(t.links.size()));
  // A GPU's NVLinks to the NVSwitch chips are one SimGrid link per direction at their summed rate.
  auto nvs_side = [&](int l, int* gpu, bool* up) {
    const TopoLink& tl = t.links[l];
    const TopoNodeType ft = t.nodes[tl.from].type, tt = t.nodes[tl.to].type;
    if (ft == TopoNodeType::kGpu && tt == TopoNodeType::kNvs) return *gpu = tl.from, *up = true, true;
    if (ft == TopoNodeType::kNvs && tt == TopoNodeType::kGpu) return *gpu = tl.to, *up = false, true;
    return false;
  };
  std::set<std::string> names;
  size_t expected_links = 0;
  std::set<std::pair<int, bool>> groups;
  for (int l = 0; l < static_cast<int>(t.links.size()); ++l) {
    s4u::Link* k = p->link(l);
    ASSERT_NE(k, nullptr);
    names.insert(k->get_name());
    const TopoLink& tl = t.links[l];
    int gpu = -1;
    bool up = false;
    if (nvs_side(l, &gpu, &up)) {
      if (groups.insert({gpu, up}).second) ++expected_links;
      EXPECT_EQ(k->get_name(), up ? t.nodes[gpu].name + "->nvswitch" : "nvswitch->" + t.nodes[gpu].name);
      double sum = 0;
      for (int m = 0; m < static_cast<int>(t.links.size()); ++m) {
        int g2 = -1;
        bool up2 = false;
        if (nvs_side(m, &g2, &up2) && g2 == gpu && up2 == up) sum += t.links[m].bw * 1e9 * efficiency(t.links[m].type);
      }
      EXPECT_DOUBLE_EQ(k->get_bandwidth(), sum) << k->get_name();
    } else {
      ++expected_links;
      EXPECT_EQ(k->get_name(), link_name(t, l));
      EXPECT_DOUBLE_EQ(k->get_bandwidth(), tl.bw * 1e9 * efficiency(tl.type)) << k->get_name();
    }
    EXPECT_DOUBLE_EQ(p->link_rate(l), k->get_bandwidth()) << k->get_name();
    // A NIC port link carries half of the network's per-message cost (Calibration::net_message_us).
    const TopoNodeType ft = t.nodes[tl.from].type, tt = t.nodes[tl.to].type;
    const bool nic_port = (ft == TopoNodeType::kNic && tt == TopoNodeType::kNet) ||
                          (ft == TopoNodeType::kNet && tt == TopoNodeType::kNic);
    EXPECT_DOUBLE_EQ(k->get_latency(), (tl.latency_us + (nic_port ? cal.net_message_us / 2 : 0.0)) * 1e-6)
        << k->get_name();
    EXPECT_EQ(k->get_sharing_policy(), s4u::Link::SharingPolicy::SHARED) << k->get_name();
    EXPECT_NE(p->link(tl.reverse), k);  // the two directions of a cable are two links
  }
  EXPECT_EQ(names.size(), expected_links);
  EXPECT_EQ(p->link(-1), nullptr);
  EXPECT_EQ(p->link(static_cast<int>(t.links.size())), nullptr);

  std::string err;
  for (const auto& ab : pairs) {
    ASSERT_TRUE(p->add_route(ab.first, ab.second, &err)) << err;
    ASSERT_TRUE(p->add_route(ab.first, ab.second, &err)) << err;  // idempotent
  }
  ASSERT_TRUE(p->add_route(gpus[0], gpus[0], &err)) << err;
  EXPECT_TRUE(p->route(gpus[0], gpus[0]).empty());
  EXPECT_FALSE(p->sealed());
  p->seal();
  EXPECT_TRUE(p->sealed());
  for (const auto& ab : pairs) {
    const TopoPath& tp = t.path(ab.first, ab.second);
    const std::vector<int>& r = p->route(ab.first, ab.second);
    EXPECT_EQ(r, tp.links);
    std::vector<s4u::Link*> got;
    double latency = 0;
    p->gpu_host(ab.first)->route_to(p->gpu_host(ab.second), got, &latency);
    std::vector<s4u::Link*> want;
    double lat_want = 0, ports = 0;  // ports: NIC port links crossed, each with half of net_message
    for (int l : tp.links) {
      want.push_back(p->link(l));
      lat_want += t.links[l].latency_us * 1e-6;
      const TopoNodeType ft = t.nodes[t.links[l].from].type, tt = t.nodes[t.links[l].to].type;
      if ((ft == TopoNodeType::kNic && tt == TopoNodeType::kNet) || (ft == TopoNodeType::kNet && tt == TopoNodeType::kNic))
        ports += 1;
    }
    const double message = ports * default_calibration().net_message_us / 2 * 1e-6;
    EXPECT_EQ(got, want) << t.nodes[ab.first].name << " -> " << t.nodes[ab.second].name;
    EXPECT_NEAR(latency, lat_want + message, 1e-15);
    EXPECT_NEAR(latency, tp.latency_us * 1e-6 + message, 1e-15);
  }
  // After seal: declared routes are still fine to ask for, new ones fail.
  ASSERT_TRUE(p->add_route(pairs[0].first, pairs[0].second, &err)) << err;
  int fresh_a = -1, fresh_b = -1;
  for (int a : gpus) {
    for (int b : gpus) {
      if (a != b && p->route(a, b).empty() && fresh_a < 0) fresh_a = a, fresh_b = b;
    }
  }
  if (fresh_a >= 0) {
    EXPECT_FALSE(p->add_route(fresh_a, fresh_b, &err));
    EXPECT_NE(err.find("sealed"), std::string::npos) << err;
    EXPECT_NE(err.find(t.nodes[fresh_a].name), std::string::npos) << err;
  }
}

std::vector<std::pair<int, int>> all_pairs(const Topology& t, int machine) {
  std::vector<std::pair<int, int>> v;
  for (int a : t.gpus(machine)) {
    for (int b : t.gpus(machine)) {
      if (a != b) v.push_back({a, b});
    }
  }
  return v;
}

TEST(Platform, EveryPresetBuildsWithItsRoutes) {
  for (const std::string& name : {std::string("dgx-h100"), std::string("dgx-a100"), std::string("pcie-4gpu"),
                                  std::string("pcie-8gpu-2socket"), std::string("nvlink-pairs")}) {
    SCOPED_TRACE(name);
    const Topology t = preset(name);
    EXPECT_IN_CHILD({ check_platform(t, all_pairs(t, 0)); });
  }
}

TEST(Platform, TwoMachinesCrossTheRailNicAndLeaf) {
  const Topology t = preset("dgx-h100", 2);
  std::vector<std::pair<int, int>> pairs = all_pairs(t, 0);
  for (int d = 0; d < 8; ++d) {
    pairs.push_back({t.gpu_node(0, d), t.gpu_node(1, d)});
    pairs.push_back({t.gpu_node(1, d), t.gpu_node(0, (d + 1) % 8)});
  }
  EXPECT_IN_CHILD({ check_platform(t, pairs); });

  // m0.gpu3 -> m1.gpu3: PCIe up to the switch, its rail's NIC, the leaf of rail 3, down the same
  // way on machine 1.
  const int a = t.gpu_node(0, 3), b = t.gpu_node(1, 3);
  std::vector<std::string> names;
  for (int l : t.path(a, b).links) names.push_back(link_name(t, l));
  const std::vector<std::string> want = {"m0.gpu3->m0.pci1",  "m0.pci1->m0.nic3",
                                         "m0.nic3->m0.net3",  "m0.net3->fabric.leaf.r3.0",
                                         "fabric.leaf.r3.0->m1.net3", "m1.net3->m1.nic3",
                                         "m1.nic3->m1.pci1",  "m1.pci1->m1.gpu3"};
  EXPECT_EQ(names, want);
}

TEST(Platform, RoutesAreTheModelsPaths) {
  // dgx-h100: GPU -> NVSwitch -> GPU, two NVLink links of the widest switch (5 links, 125 GB/s).
  const Topology h = preset("dgx-h100");
  const TopoPath& nv = h.path(h.gpu_node(0, 0), h.gpu_node(0, 1));
  ASSERT_EQ(nv.links.size(), 2u);
  EXPECT_EQ(link_name(h, nv.links[0]), "m0.gpu0->m0.nvs0");
  EXPECT_EQ(link_name(h, nv.links[1]), "m0.nvs0->m0.gpu1");
  EXPECT_EQ(h.links[nv.links[0]].bw, 125);
  // pcie-8gpu-2socket: across sockets through the UPI link.
  const Topology s = preset("pcie-8gpu-2socket");
  std::vector<std::string> names;
  for (int l : s.path(s.gpu_node(0, 0), s.gpu_node(0, 4)).links) names.push_back(link_name(s, l));
  const std::vector<std::string> want = {"m0.gpu0->m0.pci0", "m0.pci0->m0.cpu0", "m0.cpu0->m0.cpu1",
                                         "m0.cpu1->m0.pci2", "m0.pci2->m0.gpu4"};
  EXPECT_EQ(names, want);
  EXPECT_IN_CHILD({
    s4u::Engine* e = new_engine();
    std::unique_ptr<Platform> p = build(e, s);
    ASSERT_TRUE(p);
    std::string err;
    const int a = s.gpu_node(0, 0), b = s.gpu_node(0, 4);
    ASSERT_TRUE(p->add_route(a, b, &err)) << err;
    p->seal();
    std::vector<s4u::Link*> got;
    double lat = 0;
    p->gpu_host(a)->route_to(p->gpu_host(b), got, &lat);
    ASSERT_EQ(got.size(), 5u);
    EXPECT_EQ(got[2]->get_name(), "m0.cpu0->m0.cpu1");
    EXPECT_DOUBLE_EQ(got[2]->get_bandwidth(), 3 * 22.4e9 * 0.6);
    EXPECT_DOUBLE_EQ(got[0]->get_bandwidth(), 31.5e9 * 0.8);
    EXPECT_NEAR(lat, (4 * 0.1 + 0.2) * 1e-6, 1e-15);
  });
}

TEST(Platform, Errors) {
  // No GPUs.
  EXPECT_IN_CHILD({
    s4u::Engine* e = new_engine();
    Topology t;
    TopoNode cpu;
    cpu.type = TopoNodeType::kCpu;
    cpu.name = "m0.cpu0";
    t.add_node(cpu);
    t.compute_paths();
    std::unique_ptr<Platform> p;
    std::string err;
    EXPECT_FALSE(Platform::build(*e, t, default_calibration(), &p, &err));
    EXPECT_NE(err.find("no GPUs"), std::string::npos) << err;
  });
  // Disconnected GPUs; a second platform in the same engine; a GPU that is not a GPU.
  EXPECT_IN_CHILD({
    s4u::Engine* e = new_engine();
    Topology t;
    for (int i = 0; i < 2; ++i) {
      TopoNode g;
      g.type = TopoNodeType::kGpu;
      g.dev = i;
      g.sm = 80;
      g.name = "m0.gpu" + std::to_string(i);
      t.add_node(g);
    }
    TopoNode cpu;
    cpu.type = TopoNodeType::kCpu;
    cpu.name = "m0.cpu0";
    const int c = t.add_node(cpu);
    t.connect(0, c, LinkType::kPci, 24, 0.1);
    t.compute_paths();
    ASSERT_EQ(t.path(0, 1).type, PathType::kDis);
    std::unique_ptr<Platform> p = build(e, t);
    ASSERT_TRUE(p);
    std::string err;
    EXPECT_FALSE(p->add_route(0, 1, &err));
    EXPECT_NE(err.find("m0.gpu0"), std::string::npos) << err;
    EXPECT_NE(err.find("m0.gpu1"), std::string::npos) << err;
    EXPECT_NE(err.find("no path"), std::string::npos) << err;
    EXPECT_FALSE(p->add_route(0, c, &err));
    EXPECT_NE(err.find("m0.cpu0"), std::string::npos) << err;
    EXPECT_NE(err.find("not a GPU"), std::string::npos) << err;
    EXPECT_FALSE(p->add_route(0, 99, &err));
    EXPECT_TRUE(p->route(0, 1).empty());
    std::unique_ptr<Platform> q;
    EXPECT_FALSE(Platform::build(*e, t, default_calibration(), &q, &err));
    EXPECT_NE(err.find("already has a platform"), std::string::npos) << err;
  });
  // A link of zero bandwidth may exist, but no route may cross it (pcie-4gpu: PCIe links only).
  EXPECT_IN_CHILD({
    s4u::Engine* e = new_engine();
    Topology t = preset("pcie-4gpu");
    const int g0 = t.gpu_node(0, 0), g1 = t.gpu_node(0, 1);
    const int l = t.links[t.path(g0, g1).links.back()].from == g1 ? -1 : t.path(g0, g1).links.back();
    ASSERT_GE(l, 0);
    const std::string lname = t.nodes[t.links[l].from].name + "->" + t.nodes[t.links[l].to].name;
    t.links[l].bw = 0;  // model_bw stays: the path still takes it
    t.compute_paths();
    std::unique_ptr<Platform> p = build(e, t);
    ASSERT_TRUE(p);
    EXPECT_EQ(p->link_rate(l), 0);
    std::string err;
    EXPECT_FALSE(p->add_route(g0, g1, &err));
    EXPECT_NE(err.find(lname), std::string::npos) << err;
    EXPECT_NE(err.find("no bandwidth"), std::string::npos) << err;
    EXPECT_TRUE(p->add_route(g1, g0, &err)) << err;
  });
}

// ---- simulation: full duplex, max-min sharing, time = latency + bytes / rate -------------------

TEST(Platform, FullDuplexAndMaxMinSharing) {
  EXPECT_IN_CHILD({
    s4u::Engine* e = new_engine();
    const Topology t = preset("dgx-h100");
    std::unique_ptr<Platform> p = build(e, t);
    ASSERT_TRUE(p);
    const int g0 = t.gpu_node(0, 0), g1 = t.gpu_node(0, 1), g2 = t.gpu_node(0, 2);
    std::string err;
    for (auto ab : {std::pair<int, int>{g0, g1}, {g1, g0}, {g0, g2}}) {
      ASSERT_TRUE(p->add_route(ab.first, ab.second, &err)) << err;
    }
    p->seal();
    // gpu0 -> NVSwitch crossbar -> gpu1 and back: 18 NVLinks (450 GB/s) x 0.85 each way, 0.3 us.
    const double rate = 450e9 * 0.85, lat = 0.3e-6;
    const double bytes = 1e9;
    for (int a : {g0, g1}) {
      for (int b : {g0, g1, g2}) {
        if (a == b || (a == g1 && b == g2)) continue;
        double min_rate = 1e300, sum_lat = 0;
        for (int l : p->route(a, b)) {
          min_rate = std::min(min_rate, p->link_rate(l));
          sum_lat += t.links[l].latency_us * 1e-6;
        }
        EXPECT_DOUBLE_EQ(min_rate, rate);
        EXPECT_NEAR(sum_lat, lat, 1e-15);
      }
    }
    // Phases start 1 s apart (each lasts ~20 ms): alone; both directions; two flows out of gpu0.
    struct Flow {
      int from, to;
      double start;
      double end = -1;
    };
    std::vector<Flow> flows = {{g0, g1, 0.0}, {g0, g1, 1.0}, {g1, g0, 1.0}, {g0, g1, 2.0}, {g0, g2, 2.0}};
    for (Flow& f : flows) {
      Flow* fp = &f;
      s4u::Actor::create("flow", p->gpu_host(f.from), [fp, &p, bytes] {
        s4u::this_actor::sleep_until(fp->start);
        s4u::Comm::sendto(p->gpu_host(fp->from), p->gpu_host(fp->to), static_cast<uint64_t>(bytes));
        fp->end = s4u::Engine::get_clock();
      });
    }
    e->run();
    const double alone = lat + bytes / rate;
    auto rel = [](double got, double want) { return std::fabs(got - want) / want; };
    std::vector<double> took;
    for (const Flow& f : flows) took.push_back(f.end - f.start);
    EXPECT_LT(rel(took[0], alone), 1e-9) << took[0] << " vs " << alone;
    EXPECT_LT(rel(took[1], alone), 1e-9) << "full duplex: " << took[1] << " vs " << alone;
    EXPECT_LT(rel(took[2], alone), 1e-9) << "full duplex: " << took[2] << " vs " << alone;
    const double shared = lat + bytes / (rate / 2);  // gpu0 -> nvs0 carries both
    EXPECT_LT(rel(took[3], shared), 1e-9) << took[3] << " vs " << shared;
    EXPECT_LT(rel(took[4], shared), 1e-9) << took[4] << " vs " << shared;
  });
}

// One flow from m0.gpu5 to m1.gpu5 takes latency + bytes / (the bottleneck's rate), also with long
// routes (CM02 would otherwise cap a flow at TCP-gamma / (2 x latency): 4 MiB / 800 us = 5 GB/s here).
void check_cross_machine_flow(const Topology& t, double want_bottleneck) {
  s4u::Engine* e = new_engine();
  std::unique_ptr<Platform> p = build(e, t);
  ASSERT_TRUE(p);
  const int a = t.gpu_node(0, 5), b = t.gpu_node(1, 5);
  std::string err;
  ASSERT_TRUE(p->add_route(a, b, &err)) << err;
  p->seal();
  double min_rate = 1e300, lat = 0;
  for (int l : p->route(a, b)) {
    min_rate = std::min(min_rate, p->link_rate(l));
    lat += p->link(l)->get_latency();  // the cable's, plus net_message / 2 on a NIC port (checked above)
  }
  EXPECT_DOUBLE_EQ(min_rate, want_bottleneck);
  const double bytes = 1e9;
  double end = -1;
  s4u::Actor::create("flow", p->gpu_host(a), [&] {
    s4u::Comm::sendto(p->gpu_host(a), p->gpu_host(b), static_cast<uint64_t>(bytes));
    end = s4u::Engine::get_clock();
  });
  e->run();
  const double want = lat + bytes / min_rate;
  EXPECT_LT(std::fabs(end - want) / want, 1e-9) << end << " vs " << want;
}

TEST(Platform, CrossMachineFlowTime) {
  const Topology t = preset("dgx-h100", 2);
  EXPECT_IN_CHILD({ check_cross_machine_flow(t, 50e9 * default_calibration().efficiency.net); });  // the NDR port, not PCIe (63 x 0.8)
  Topology slow = t;
  WhatIf w;
  w.link_latency_us = 100;
  std::string err;
  ASSERT_TRUE(apply_what_if(w, &slow, &err)) << err;
  ASSERT_EQ(slow.path(slow.gpu_node(0, 5), slow.gpu_node(1, 5)).hops(), 8);
  EXPECT_IN_CHILD({ check_cross_machine_flow(slow, 50e9 * default_calibration().efficiency.net); });
}

// ---- scale --------------------------------------------------------------------------------------

TEST(Platform, ThousandGpusBuildQuickly) {
  EXPECT_IN_CHILD({
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    const Topology t = preset("dgx-h100", 128);
    const auto t1 = clock::now();
    s4u::Engine* e = new_engine();
    std::unique_ptr<Platform> p = build(e, t);
    ASSERT_TRUE(p);
    const auto t2 = clock::now();
    const std::vector<int> gpus = t.gpus();
    ASSERT_EQ(gpus.size(), 1024u);
    std::string err;
    for (size_t i = 0; i < gpus.size(); ++i) {
      ASSERT_TRUE(p->add_route(gpus[i], gpus[(i + 1) % gpus.size()], &err)) << err;
      ASSERT_TRUE(p->add_route(gpus[(i + 1) % gpus.size()], gpus[i], &err)) << err;
    }
    const auto t3 = clock::now();
    p->seal();
    const auto t4 = clock::now();
    auto s = [](clock::time_point a, clock::time_point b) {
      return std::chrono::duration<double>(b - a).count();
    };
    printf("dgx-h100:128 (%zu nodes, %zu links): model %.3f s, platform %.3f s, 2048 routes %.3f s, seal %.3f s\n",
           t.nodes.size(), t.links.size(), s(t0, t1), s(t1, t2), s(t2, t3), s(t3, t4));
    EXPECT_EQ(e->get_host_count(), 1024u);
    EXPECT_EQ(p->link_count(), static_cast<int>(t.links.size()));
    EXPECT_LT(s(t1, t4), 20.0);
    // One cross-machine hop of the ring, as SimGrid resolves it.
    const int a = t.gpu_node(0, 7), b = t.gpu_node(1, 0);
    std::vector<s4u::Link*> got;
    double lat = 0;
    p->gpu_host(a)->route_to(p->gpu_host(b), got, &lat);
    EXPECT_EQ(got.size(), p->route(a, b).size());
    EXPECT_GE(got.size(), 8u);
  });
}

}  // namespace
}  // namespace sim
}  // namespace cclab
