// tests/graph/topo_test.cc - the topology model: presets (counts, bandwidths), compute_paths (NCCL's
// path types and bottlenecks), cross-machine routes through the fabric, validate(), describe*, and
// CCLAB_TOPO parsing.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "graph/topo.h"

namespace cclab {
namespace {

Topology preset(const std::string& name, int machines = 1, FabricSpec fabric = FabricSpec()) {
  Topology t;
  std::string error;
  EXPECT_TRUE(make_preset_topology(name, machines, fabric, &t, &error)) << error;
  return t;
}

int count(const Topology& t, TopoNodeType type) {
  return static_cast<int>(t.nodes_of(type).size());
}

int node(const Topology& t, const std::string& name) {
  int i = t.find(name);
  EXPECT_GE(i, 0) << name;
  return i;
}

const TopoPath& gpu_path(const Topology& t, int a, int b, int ma = 0, int mb = 0) {
  return t.path(t.gpu_node(ma, a), t.gpu_node(mb, b));
}

std::vector<std::string> route(const Topology& t, const TopoPath& p) {
  std::vector<std::string> names;
  for (int l : p.links) names.push_back(t.nodes[t.links[l].to].name);
  return names;
}

// ---- presets: what is in them ---------------------------------------------------------------------

TEST(TopoPresets, NamesAndCounts) {
  EXPECT_EQ(preset_names(), (std::vector<std::string>{"dgx-a100", "dgx-h100", "dgx-b200", "gb200-nvl72",
                                                       "pcie-4gpu", "pcie-8gpu-2socket", "nvlink-pairs",
                                                       "pcie-1gpu"}));
  struct Expect {
    const char* name;
    int gpu, pci, nvs, cpu, nic, net, links;
  };
  const Expect expect[] = {
      {"dgx-a100", 8, 4, 6, 2, 8, 8, 154},
      {"dgx-h100", 8, 4, 4, 2, 8, 8, 122},
      // 1 UPI + 4 switch uplinks + 8 GPU + 8 NIC PCIe + 8 NIC ports + 8 x 2 NVLink bundles, both ways
      {"dgx-b200", 8, 4, 2, 2, 8, 8, 90},
      // 18 Grace pairs + 72 GPU + 72 NIC PCIe + 72 C2C + 72 NIC ports + 72 x 18 NVLinks, both ways
      {"gb200-nvl72", 72, 0, 18, 36, 72, 72, 3204},
      {"pcie-4gpu", 4, 2, 0, 1, 1, 1, 16},
      {"pcie-8gpu-2socket", 8, 4, 0, 2, 2, 2, 34},
      {"nvlink-pairs", 4, 2, 0, 1, 1, 1, 20},
      {"pcie-1gpu", 1, 1, 0, 1, 1, 1, 8},  // cpu-pci, pci-gpu, pci-nic, nic-net, both ways
  };
  for (const Expect& e : expect) {
    SCOPED_TRACE(e.name);
    Topology t = preset(e.name);
    EXPECT_EQ(t.name, e.name);
    EXPECT_EQ(t.machines, 1);
    EXPECT_EQ(count(t, TopoNodeType::kGpu), e.gpu);
    EXPECT_EQ(count(t, TopoNodeType::kPci), e.pci);
    EXPECT_EQ(count(t, TopoNodeType::kNvs), e.nvs);
    EXPECT_EQ(count(t, TopoNodeType::kCpu), e.cpu);
    EXPECT_EQ(count(t, TopoNodeType::kNic), e.nic);
    EXPECT_EQ(count(t, TopoNodeType::kNet), e.net);
    EXPECT_EQ(count(t, TopoNodeType::kNetSwitch), 0);
    EXPECT_EQ(static_cast<int>(t.links.size()), e.links);
    EXPECT_EQ(t.gpus_per_machine(), e.gpu);
    for (int dev = 0; dev < e.gpu; ++dev) {
      EXPECT_EQ(t.nodes[t.gpu_node(0, dev)].name, "m0.gpu" + std::to_string(dev));
    }
    // NCCL orders GPUs by PCI bus id; the presets number them in the same order.
    for (int dev = 1; dev < e.gpu; ++dev) {
      EXPECT_LT(t.nodes[t.gpu_node(0, dev - 1)].busid, t.nodes[t.gpu_node(0, dev)].busid);
    }
    std::string error;
    EXPECT_TRUE(t.validate(&error)) << error;
  }
}

TEST(TopoPresets, DgxA100Links) {
  Topology t = preset("dgx-a100");
  const int gpu0 = t.gpu_node(0, 0);
  for (int s = 0; s < 6; ++s) {
    int l = t.link_between(gpu0, node(t, "m0.nvs" + std::to_string(s)));
    ASSERT_GE(l, 0);
    EXPECT_EQ(t.links[l].type, LinkType::kNvl);
    EXPECT_EQ(t.links[l].lanes, 2);
    EXPECT_DOUBLE_EQ(t.links[l].bw, 50.0);
    EXPECT_DOUBLE_EQ(t.links[l].model_bw, 40.0);
    EXPECT_EQ(t.links[l].generation, 3);
  }
  int pci = t.link_between(gpu0, node(t, "m0.pci0"));
  ASSERT_GE(pci, 0);
  EXPECT_DOUBLE_EQ(t.links[pci].bw, 31.5);
  EXPECT_DOUBLE_EQ(t.links[pci].model_bw, 24.0);
  EXPECT_EQ(t.links[pci].generation, 4);
  int sys = t.link_between(node(t, "m0.cpu0"), node(t, "m0.cpu1"));
  ASSERT_GE(sys, 0);
  EXPECT_EQ(t.links[sys].type, LinkType::kSys);
  EXPECT_DOUBLE_EQ(t.links[sys].model_bw, 16.0);  // AMD_BW
  const TopoNode& cpu = t.nodes[node(t, "m0.cpu0")];
  EXPECT_EQ(cpu.vendor, CpuVendor::kAmd);
  EXPECT_EQ(cpu.arch, CpuArch::kX86);
  const TopoNode& net = t.nodes[node(t, "m0.net5")];
  EXPECT_EQ(net.net_speed_mbps, 200000);
  int loc = t.link_between(node(t, "m0.nic5"), node(t, "m0.net5"));
  ASSERT_GE(loc, 0);
  EXPECT_EQ(t.links[loc].type, LinkType::kLoc);
  EXPECT_DOUBLE_EQ(t.links[loc].bw, 25.0);
  EXPECT_DOUBLE_EQ(t.links[loc].model_bw, 25.0);
  for (int g : t.gpus()) EXPECT_EQ(t.nodes[g].sm, 80);
}

TEST(TopoPresets, DgxH100Links) {
  Topology t = preset("dgx-h100");
  const int lanes[4] = {5, 4, 4, 5};
  for (int g : t.gpus()) {
    EXPECT_EQ(t.nodes[g].sm, 90);
    int total = 0;
    for (int s = 0; s < 4; ++s) {
      int l = t.link_between(g, node(t, "m0.nvs" + std::to_string(s)));
      ASSERT_GE(l, 0);
      EXPECT_EQ(t.links[l].lanes, lanes[s]);
      EXPECT_DOUBLE_EQ(t.links[l].bw, 25.0 * lanes[s]);
      EXPECT_DOUBLE_EQ(t.links[l].model_bw, 20.6 * lanes[s]);
      EXPECT_EQ(t.links[l].generation, 4);
      // the reverse direction is the mirror
      const TopoLink& r = t.links[t.links[l].reverse];
      EXPECT_EQ(r.from, t.links[l].to);
      EXPECT_EQ(r.to, g);
      EXPECT_DOUBLE_EQ(r.model_bw, 20.6 * lanes[s]);
      total += lanes[s];
    }
    EXPECT_EQ(total, 18);
  }
  int pci = t.link_between(t.gpu_node(0, 3), node(t, "m0.pci1"));
  ASSERT_GE(pci, 0);
  EXPECT_DOUBLE_EQ(t.links[pci].bw, 63.0);
  EXPECT_DOUBLE_EQ(t.links[pci].model_bw, 48.0);
  int sys = t.link_between(node(t, "m0.cpu1"), node(t, "m0.cpu0"));
  ASSERT_GE(sys, 0);
  EXPECT_DOUBLE_EQ(t.links[sys].model_bw, 22.0);  // SRP_QPI_BW
  const TopoNode& cpu = t.nodes[node(t, "m0.cpu0")];
  EXPECT_EQ(cpu.vendor, CpuVendor::kIntel);
  EXPECT_EQ(cpu.familyid, 6);
  EXPECT_EQ(cpu.modelid, 0x8f);
  for (int n : t.nets()) {
    EXPECT_EQ(t.nodes[n].net_speed_mbps, 400000);
  }
}

// ---- paths inside a machine -----------------------------------------------------------------------

TEST(TopoPresets, DgxB200Links) {
  Topology t = preset("dgx-b200");
  for (int g : t.gpus()) {
    EXPECT_EQ(t.nodes[g].sm, 100);
    for (int s = 0; s < 2; ++s) {
      int l = t.link_between(g, node(t, "m0.nvs" + std::to_string(s)));
      ASSERT_GE(l, 0);
      EXPECT_EQ(t.links[l].lanes, 9);
      EXPECT_DOUBLE_EQ(t.links[l].bw, 9 * 50.0);         // NVLink5: 50 GB/s per link per direction
      EXPECT_DOUBLE_EQ(t.links[l].model_bw, 9 * 40.1);   // SM100_NVLINK_BW
      EXPECT_EQ(t.links[l].generation, 5);
    }
  }
  // Every GPU pair: NVL through the switches, 18 links (model 721.8, physical 900 GB/s per direction).
  const TopoPath& p = gpu_path(t, 0, 7);
  EXPECT_EQ(p.type, PathType::kNvl);
  EXPECT_NEAR(p.bw, 18 * 40.1, 1e-9);
  EXPECT_NEAR(p.bw_physical, 900.0, 1e-9);
  // A GPU's rail NIC shares its PCIe Gen5 switch (nvidia-smi topo on a DGX B200: PIX).
  const TopoPath& n = t.path(t.gpu_node(0, 5), node(t, "m0.net5"));
  EXPECT_EQ(n.type, PathType::kPix);
  int sys = t.link_between(node(t, "m0.cpu0"), node(t, "m0.cpu1"));
  ASSERT_GE(sys, 0);
  EXPECT_DOUBLE_EQ(t.links[sys].model_bw, 40.0);  // ERP_QPI_BW (Emerald Rapids)
  EXPECT_EQ(t.nodes[node(t, "m0.net0")].net_speed_mbps, 400000);
}

TEST(TopoPresets, Gb200Nvl72) {
  Topology t = preset("gb200-nvl72");
  // One NVLink domain: every GPU pair is NVL at 18 NVLink5 links, one through each switch chip.
  for (int b : {1, 4, 35, 71}) {
    const TopoPath& p = gpu_path(t, 0, b);
    EXPECT_EQ(p.type, PathType::kNvl) << b;
    EXPECT_NEAR(p.bw, 18 * 40.1, 1e-9) << b;
  }
  for (int g : t.gpus()) {
    EXPECT_EQ(t.nodes[g].sm, 100);
    int c2c = 0;
    for (int l : t.nodes[g].out) c2c += t.links[l].type == LinkType::kC2c;
    EXPECT_EQ(c2c, 1);
  }
  // Tray k: GPUs 4k..4k+3, Graces 2k and 2k+1, NICs 4k..4k+3. A GPU reaches its Grace's two NICs
  // (PHB), the other Grace's over the tray's SYS link (ARM_BW 6), and no NIC of another tray: the
  // trays are separate hosts joined only by NVLink.
  const int gpu5 = t.gpu_node(0, 5);  // tray 1, Grace 2
  const TopoPath& own = t.path(gpu5, node(t, "m0.net5"));
  EXPECT_EQ(own.type, PathType::kPhb);
  EXPECT_DOUBLE_EQ(own.bw, 48.0);
  EXPECT_EQ(route(t, own).front(), "m0.cpu2");
  EXPECT_EQ(t.links[own.links.front()].type, LinkType::kC2c);
  const TopoPath& other = t.path(gpu5, node(t, "m0.net6"));
  EXPECT_EQ(other.type, PathType::kSys);
  EXPECT_DOUBLE_EQ(other.bw, 6.0);
  EXPECT_EQ(t.path(gpu5, node(t, "m0.net0")).type, PathType::kDis);
  EXPECT_EQ(t.path(gpu5, node(t, "m0.net8")).type, PathType::kDis);
  const TopoNode& grace = t.nodes[node(t, "m0.cpu0")];
  EXPECT_EQ(grace.arch, CpuArch::kArm);
  // Bus ids are unique across the rack (the PCI domain is the tray).
  std::map<int64_t, std::string> ids;
  for (const TopoNode& n : t.nodes) {
    if (n.type != TopoNodeType::kGpu && n.type != TopoNodeType::kNic) continue;
    auto ins = ids.emplace(n.busid, n.name);
    EXPECT_TRUE(ins.second) << n.name << " has the bus id of " << ins.first->second;
  }
}

TEST(TopoPaths, DgxH100AllNvlink) {
  Topology t = preset("dgx-h100");
  for (int a = 0; a < 8; ++a) {
    for (int b = 0; b < 8; ++b) {
      const TopoPath& p = gpu_path(t, a, b);
      if (a == b) {
        EXPECT_EQ(p.type, PathType::kLoc);
        EXPECT_EQ(p.hops(), 0);
        continue;
      }
      EXPECT_EQ(p.type, PathType::kNvl) << a << "->" << b;
      EXPECT_NEAR(p.bw, 18 * 20.6, 1e-9);  // 370.8: NCCL's one NVS node carries all 18 links
      EXPECT_DOUBLE_EQ(p.bw_physical, 450.0);
      EXPECT_EQ(p.hops(), 2);
      // through the chip with the most links (5; nvs0 first)
      EXPECT_EQ(route(t, p), (std::vector<std::string>{"m0.nvs0", "m0.gpu" + std::to_string(b)}));
      EXPECT_NEAR(p.latency_us, 0.3, 1e-12);
    }
  }
}

TEST(TopoPaths, DgxH100GpuToNet) {
  Topology t = preset("dgx-h100");
  for (int g = 0; g < 8; ++g) {
    const int gpu = t.gpu_node(0, g);
    const int same_rail = node(t, "m0.net" + std::to_string(g));
    const TopoPath& p = t.path(gpu, same_rail);
    EXPECT_EQ(p.type, PathType::kPix) << g;
    EXPECT_DOUBLE_EQ(p.bw, 48.0);  // PCIe Gen5 x16 as NCCL models it (< 50 GB/s NDR)
    EXPECT_DOUBLE_EQ(p.bw_physical, 50.0);
    EXPECT_EQ(route(t, p), (std::vector<std::string>{"m0.pci" + std::to_string(g / 2),
                                                     "m0.nic" + std::to_string(g),
                                                     "m0.net" + std::to_string(g)}));
    // and back
    const TopoPath& back = t.path(same_rail, gpu);
    EXPECT_EQ(back.type, PathType::kPix);
    EXPECT_EQ(back.hops(), 3);
  }
  // other switch, same socket: through the CPU; other socket: across UPI
  EXPECT_EQ(t.path(t.gpu_node(0, 0), node(t, "m0.net2")).type, PathType::kPhb);
  EXPECT_DOUBLE_EQ(t.path(t.gpu_node(0, 0), node(t, "m0.net2")).bw, 48.0);
  const TopoPath& sys = t.path(t.gpu_node(0, 0), node(t, "m0.net7"));
  EXPECT_EQ(sys.type, PathType::kSys);
  EXPECT_DOUBLE_EQ(sys.bw, 22.0);
  EXPECT_DOUBLE_EQ(sys.bw_physical, 50.0);
  EXPECT_EQ(route(t, sys), (std::vector<std::string>{"m0.pci0", "m0.cpu0", "m0.cpu1", "m0.pci3",
                                                     "m0.nic7", "m0.net7"}));
  // GPU to CPU
  const TopoPath& cpu = t.path(t.gpu_node(0, 5), node(t, "m0.cpu1"));
  EXPECT_EQ(cpu.type, PathType::kPhb);
  EXPECT_EQ(cpu.hops(), 2);
}

TEST(TopoPaths, DgxA100) {
  Topology t = preset("dgx-a100");
  for (int a = 0; a < 8; ++a) {
    for (int b = 0; b < 8; ++b) {
      if (a == b) continue;
      const TopoPath& p = gpu_path(t, a, b);
      EXPECT_EQ(p.type, PathType::kNvl);
      EXPECT_DOUBLE_EQ(p.bw, 240.0);  // 12 x SM80_NVLINK_BW
      EXPECT_DOUBLE_EQ(p.bw_physical, 300.0);
    }
  }
  const TopoPath& pix = t.path(t.gpu_node(0, 6), node(t, "m0.net7"));
  EXPECT_EQ(pix.type, PathType::kPix);
  EXPECT_DOUBLE_EQ(pix.bw, 24.0);
  EXPECT_DOUBLE_EQ(pix.bw_physical, 25.0);
  const TopoPath& sys = t.path(t.gpu_node(0, 1), node(t, "m0.net4"));
  EXPECT_EQ(sys.type, PathType::kSys);
  EXPECT_DOUBLE_EQ(sys.bw, 16.0);
}

TEST(TopoPaths, Pcie4Gpu) {
  Topology t = preset("pcie-4gpu");
  EXPECT_EQ(gpu_path(t, 0, 1).type, PathType::kPix);
  EXPECT_EQ(gpu_path(t, 0, 1).hops(), 2);
  EXPECT_DOUBLE_EQ(gpu_path(t, 0, 1).bw, 24.0);
  EXPECT_DOUBLE_EQ(gpu_path(t, 0, 1).bw_physical, 31.5);
  EXPECT_EQ(gpu_path(t, 2, 3).type, PathType::kPix);
  for (int a : {0, 1}) {
    for (int b : {2, 3}) {
      EXPECT_EQ(gpu_path(t, a, b).type, PathType::kPhb);
      EXPECT_EQ(gpu_path(t, b, a).type, PathType::kPhb);
      EXPECT_EQ(gpu_path(t, a, b).hops(), 4);
      EXPECT_DOUBLE_EQ(gpu_path(t, a, b).bw, 24.0);
    }
  }
  const TopoPath& net = t.path(t.gpu_node(0, 3), node(t, "m0.net0"));
  EXPECT_EQ(net.type, PathType::kPhb);
  EXPECT_DOUBLE_EQ(net.bw, 12.5);  // 100000 Mb/s / 8000
  EXPECT_EQ(route(t, net), (std::vector<std::string>{"m0.pci1", "m0.cpu0", "m0.nic0", "m0.net0"}));
  EXPECT_NEAR(net.latency_us, 0.1 + 0.1 + 0.1 + 0.5, 1e-12);
}

TEST(TopoPaths, Pcie8Gpu2Socket) {
  Topology t = preset("pcie-8gpu-2socket");
  EXPECT_EQ(gpu_path(t, 0, 1).type, PathType::kPix);
  EXPECT_EQ(gpu_path(t, 0, 3).type, PathType::kPhb);
  EXPECT_EQ(gpu_path(t, 4, 7).type, PathType::kPhb);
  for (int a = 0; a < 4; ++a) {
    for (int b = 4; b < 8; ++b) {
      EXPECT_EQ(gpu_path(t, a, b).type, PathType::kSys);
      EXPECT_DOUBLE_EQ(gpu_path(t, a, b).bw, 10.0);  // SKL_QPI_BW
      EXPECT_DOUBLE_EQ(gpu_path(t, a, b).bw_physical, 31.5);
      EXPECT_EQ(gpu_path(t, a, b).hops(), 5);  // pci, cpu, cpu, pci, gpu
    }
  }
  EXPECT_EQ(t.path(t.gpu_node(0, 1), node(t, "m0.net0")).type, PathType::kPix);
  EXPECT_EQ(t.path(t.gpu_node(0, 2), node(t, "m0.net0")).type, PathType::kPhb);
  EXPECT_EQ(t.path(t.gpu_node(0, 2), node(t, "m0.net1")).type, PathType::kSys);
  EXPECT_EQ(t.path(t.gpu_node(0, 5), node(t, "m0.net1")).type, PathType::kPix);
}

TEST(TopoPaths, NvlinkPairs) {
  Topology t = preset("nvlink-pairs");
  for (auto pair : {std::make_pair(0, 1), std::make_pair(1, 0), std::make_pair(2, 3)}) {
    const TopoPath& p = gpu_path(t, pair.first, pair.second);
    EXPECT_EQ(p.type, PathType::kNvl);
    EXPECT_EQ(p.hops(), 1);
    EXPECT_DOUBLE_EQ(p.bw, 48.0);  // 4 x SM86_NVLINK_BW
    EXPECT_DOUBLE_EQ(p.bw_physical, 56.25);
  }
  for (auto pair : {std::make_pair(0, 2), std::make_pair(1, 3), std::make_pair(3, 0)}) {
    const TopoPath& p = gpu_path(t, pair.first, pair.second);
    EXPECT_EQ(p.type, PathType::kPhb);  // the two switches meet at the CPU
    EXPECT_EQ(p.hops(), 4);
    EXPECT_DOUBLE_EQ(p.bw, 24.0);
  }
}

// Three GPUs on one PCIe switch, NVLink 0-1 and 1-2: 0->2 has two 2-hop routes, PCIe (PIX, 24) and
// NVLink through GPU 1 (NVB, 40); the wider wins. A GPU is never crossed on the way to a non-GPU
// further than one hop.
Topology nvb_topology() {
  Topology t;
  TopoNode cpu;
  cpu.type = TopoNodeType::kCpu;
  cpu.name = "cpu0";
  cpu.dev = 0;
  int c = t.add_node(cpu);
  TopoNode sw;
  sw.type = TopoNodeType::kPci;
  sw.name = "pci0";
  int s = t.add_node(sw);
  sw.name = "pci1";
  int s1 = t.add_node(sw);
  t.connect(c, s, LinkType::kPci, 31.5, 0.1, 16, 4, 24);
  t.connect(c, s1, LinkType::kPci, 31.5, 0.1, 16, 4, 24);
  int g[4];
  for (int i = 0; i < 4; ++i) {
    TopoNode gpu;
    gpu.type = TopoNodeType::kGpu;
    gpu.dev = i;
    gpu.sm = 80;
    gpu.name = "gpu" + std::to_string(i);
    g[i] = t.add_node(gpu);
    t.connect(i < 3 ? s : s1, g[i], LinkType::kPci, 31.5, 0.1, 16, 4, 24);
  }
  t.connect(g[0], g[1], LinkType::kNvl, 50, 0.1, 2, 3, 40);
  t.connect(g[1], g[2], LinkType::kNvl, 50, 0.1, 2, 3, 40);
  t.connect(g[2], g[3], LinkType::kNvl, 50, 0.1, 2, 3, 40);
  TopoNode nic;
  nic.type = TopoNodeType::kNic;
  nic.dev = 0;
  nic.name = "nic0";
  int n = t.add_node(nic);
  t.connect(s1, n, LinkType::kPci, 31.5, 0.1, 16, 4, 24);
  TopoNode net;
  net.type = TopoNodeType::kNet;
  net.dev = 0;
  net.name = "net0";
  net.net_speed_mbps = 100000;
  int nt = t.add_node(net);
  t.connect(n, nt, LinkType::kLoc, 12.5, 0.5, 1, 0, 12.5);
  t.compute_paths();
  return t;
}

TEST(TopoPaths, NvbThroughOneGpuOnly) {
  Topology t = nvb_topology();
  std::string error;
  EXPECT_TRUE(t.validate(&error)) << error;
  const TopoPath& p = t.path(t.find("gpu0"), t.find("gpu2"));
  EXPECT_EQ(p.type, PathType::kNvb);
  EXPECT_DOUBLE_EQ(p.bw, 40.0);
  EXPECT_EQ(route(t, p), (std::vector<std::string>{"gpu1", "gpu2"}));
  // gpu0 -> gpu3: NVLink would need two GPUs in between; PCIe through the CPU instead.
  const TopoPath& q = t.path(t.find("gpu0"), t.find("gpu3"));
  EXPECT_EQ(q.type, PathType::kPhb);
  EXPECT_EQ(route(t, q), (std::vector<std::string>{"pci0", "cpu0", "pci1", "gpu3"}));
  // gpu2 -> net0: via gpu3 (NVL) then pci1, nic0, net0 would be 4 hops through a GPU: not allowed.
  const TopoPath& r = t.path(t.find("gpu2"), t.find("net0"));
  EXPECT_EQ(r.type, PathType::kPhb);
  EXPECT_EQ(route(t, r), (std::vector<std::string>{"pci0", "cpu0", "pci1", "nic0", "net0"}));
  // gpu2 -> pci1: GPU -NVL-> GPU -> one hop is allowed (2 hops, PIX) and shorter than via the CPU.
  const TopoPath& s = t.path(t.find("gpu2"), t.find("pci1"));
  EXPECT_EQ(s.type, PathType::kPix);
  EXPECT_EQ(route(t, s), (std::vector<std::string>{"gpu3", "pci1"}));
  // paths start only at GPUs and NETs
  EXPECT_EQ(t.path(t.find("cpu0"), t.find("gpu0")).type, PathType::kDis);
  // a change to the model drops the paths until they are computed again
  TopoNode extra;
  extra.type = TopoNodeType::kPci;
  extra.name = "pci9";
  t.add_node(extra);
  EXPECT_EQ(t.path(t.find("gpu0"), t.find("gpu2")).type, PathType::kDis);
  t.compute_paths();
  EXPECT_EQ(t.path(t.find("gpu0"), t.find("gpu2")).type, PathType::kNvb);
  EXPECT_EQ(t.path(t.find("gpu0"), t.find("pci9")).type, PathType::kDis);
}

// ---- across machines ------------------------------------------------------------------------------

TEST(TopoFabric, Structure) {
  FabricSpec f;
  f.machines_per_leaf = 2;
  f.oversubscription = 1;
  Topology t = preset("dgx-h100", 3, f);
  EXPECT_EQ(t.machines, 3);
  EXPECT_EQ(t.fabric.machines, 3);
  EXPECT_EQ(count(t, TopoNodeType::kGpu), 24);
  EXPECT_EQ(count(t, TopoNodeType::kNetSwitch), 8 * 2 + 1);  // 8 rails x 2 groups + the spine
  EXPECT_EQ(static_cast<int>(t.nodes.size()), 3 * 34 + 17);
  EXPECT_EQ(t.nodes[t.gpu_node(2, 5)].name, "m2.gpu5");
  EXPECT_EQ(t.nodes[t.gpu_node(2, 5)].busid, t.nodes[t.gpu_node(0, 5)].busid);
  const int leaf = node(t, "fabric.leaf.r3.1");
  EXPECT_EQ(t.nodes[leaf].tier, 0);
  EXPECT_EQ(t.nodes[leaf].rail, 3);
  EXPECT_EQ(t.nodes[leaf].machine, -1);
  const int spine = node(t, "fabric.spine.0");
  EXPECT_EQ(t.nodes[spine].tier, 1);
  // m2.net3 is on leaf r3.1 (group 1 = machines 2..3), one port at NDR rate
  int down = t.link_between(node(t, "m2.net3"), leaf);
  ASSERT_GE(down, 0);
  EXPECT_EQ(t.links[down].type, LinkType::kNet);
  EXPECT_DOUBLE_EQ(t.links[down].bw, 50.0);
  EXPECT_DOUBLE_EQ(t.links[down].latency_us, 0.05);
  EXPECT_DOUBLE_EQ(t.links[t.links[down].reverse].latency_us, 0.35);  // cable + switch
  EXPECT_LT(t.link_between(node(t, "m1.net3"), leaf), 0);
  // leaf r3.0 has 2 machines: 100 GB/s up at 1:1, over 2 ports; leaf r3.1 has one machine
  int up0 = t.link_between(node(t, "fabric.leaf.r3.0"), spine);
  ASSERT_GE(up0, 0);
  EXPECT_DOUBLE_EQ(t.links[up0].bw, 100.0);
  EXPECT_EQ(t.links[up0].lanes, 2);
  int up1 = t.link_between(leaf, spine);
  EXPECT_DOUBLE_EQ(t.links[up1].bw, 50.0);
  std::string error;
  EXPECT_TRUE(t.validate(&error)) << error;
}

TEST(TopoFabric, CrossMachinePaths) {
  FabricSpec f;
  f.machines_per_leaf = 2;
  Topology t = preset("dgx-h100", 4, f);
  // same rail, same leaf: GPU -> pci -> nic -> net -> leaf -> net -> nic -> pci -> GPU
  const TopoPath& p = gpu_path(t, 0, 0, 0, 1);
  EXPECT_EQ(p.type, PathType::kNet);
  EXPECT_DOUBLE_EQ(p.bw, 48.0);  // the PCIe Gen5 model, below the 50 GB/s NDR port
  EXPECT_DOUBLE_EQ(p.bw_physical, 50.0);
  EXPECT_EQ(route(t, p), (std::vector<std::string>{"m0.pci0", "m0.nic0", "m0.net0", "fabric.leaf.r0.0",
                                                   "m1.net0", "m1.nic0", "m1.pci0", "m1.gpu0"}));
  EXPECT_NEAR(p.latency_us, 0.1 + 0.1 + 0.5 + 0.05 + 0.35 + 0.5 + 0.1 + 0.1, 1e-12);
  // other group: up through the spine
  const TopoPath& q = gpu_path(t, 6, 6, 1, 3);
  EXPECT_EQ(q.type, PathType::kNet);
  EXPECT_EQ(route(t, q),
            (std::vector<std::string>{"m1.pci3", "m1.nic6", "m1.net6", "fabric.leaf.r6.0",
                                      "fabric.spine.0", "fabric.leaf.r6.1", "m3.net6", "m3.nic6",
                                      "m3.pci3", "m3.gpu6"}));
  EXPECT_DOUBLE_EQ(q.bw, 48.0);
  // other rail: the destination GPU's own NIC, through the spine
  const TopoPath& r = gpu_path(t, 1, 2, 0, 1);
  EXPECT_EQ(route(t, r),
            (std::vector<std::string>{"m0.pci0", "m0.nic1", "m0.net1", "fabric.leaf.r1.0",
                                      "fabric.spine.0", "fabric.leaf.r2.0", "m1.net2", "m1.nic2",
                                      "m1.pci1", "m1.gpu2"}));
  // NET to NET, NET to GPU, GPU to a switch
  const TopoPath& nn = t.path(node(t, "m0.net0"), node(t, "m3.net5"));
  EXPECT_EQ(nn.type, PathType::kNet);
  EXPECT_EQ(nn.hops(), 4);
  EXPECT_DOUBLE_EQ(nn.bw, 50.0);
  EXPECT_NEAR(nn.latency_us, 4 * 0.05 + 3 * 0.3, 1e-12);
  const TopoPath& ng = t.path(node(t, "m2.net4"), t.gpu_node(0, 4));
  EXPECT_EQ(ng.hops(), 7);
  EXPECT_EQ(t.path(t.gpu_node(1, 2), node(t, "fabric.spine.0")).hops(), 5);
  // the same GPU on another machine is a different path object with the same shape
  EXPECT_EQ(gpu_path(t, 0, 0, 2, 3).hops(), 8);
}

TEST(TopoFabric, OversubscriptionLimitsCrossGroupTraffic) {
  FabricSpec f;
  f.machines_per_leaf = 2;
  f.oversubscription = 4;  // 2 x 50 GB/s down, 25 GB/s up per leaf
  Topology t = preset("dgx-h100", 4, f);
  EXPECT_DOUBLE_EQ(gpu_path(t, 0, 0, 0, 1).bw, 48.0);  // same leaf: untouched
  EXPECT_DOUBLE_EQ(gpu_path(t, 0, 0, 0, 2).bw, 25.0);  // across the spine
  EXPECT_DOUBLE_EQ(gpu_path(t, 0, 0, 0, 2).bw_physical, 25.0);
  EXPECT_DOUBLE_EQ(gpu_path(t, 0, 3, 0, 1).bw, 25.0);  // other rail: through the spine too
  int up = t.link_between(node(t, "fabric.leaf.r0.0"), node(t, "fabric.spine.0"));
  EXPECT_EQ(t.links[up].lanes, 1);
  f.oversubscription = 1;
  Topology full = preset("dgx-h100", 4, f);
  EXPECT_DOUBLE_EQ(gpu_path(full, 0, 0, 0, 2).bw, 48.0);
}

TEST(TopoFabric, LargeModelAndCopies) {
  Topology t = preset("dgx-h100", 128);  // 32 machines per leaf: 4 groups
  EXPECT_EQ(count(t, TopoNodeType::kGpu), 1024);
  EXPECT_EQ(count(t, TopoNodeType::kNetSwitch), 8 * 4 + 1);
  std::string error;
  EXPECT_TRUE(t.validate(&error)) << error;
  const TopoPath& p = gpu_path(t, 0, 7, 0, 127);
  EXPECT_EQ(p.type, PathType::kNet);
  EXPECT_EQ(p.hops(), 10);
  EXPECT_DOUBLE_EQ(p.bw, 48.0);
  EXPECT_EQ(&gpu_path(t, 0, 7, 0, 127), &p);  // cached
  Topology copy = t;
  const TopoPath& c = gpu_path(copy, 0, 7, 0, 127);
  EXPECT_NE(&c, &p);
  EXPECT_EQ(c.links, p.links);
  // concurrent first use from several threads gives one path per pair
  std::vector<const TopoPath*> seen(8 * 64, nullptr);
  std::vector<std::thread> threads;
  for (int th = 0; th < 8; ++th) {
    threads.emplace_back([&, th] {
      for (int k = 0; k < 64; ++k) {
        seen[th * 64 + k] = &gpu_path(t, k % 8, (k + 3) % 8, 1, 2 + k);
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int th = 1; th < 8; ++th) {
    for (int k = 0; k < 64; ++k) EXPECT_EQ(seen[th * 64 + k], seen[k]);
  }
  EXPECT_EQ(seen[5]->type, PathType::kNet);
}

TEST(TopoFabric, VirtualTopology) {
  Topology t = make_virtual_topology(3, 1);
  EXPECT_EQ(t.name, "virtual");
  EXPECT_EQ(count(t, TopoNodeType::kGpu), 3);
  EXPECT_EQ(count(t, TopoNodeType::kNet), 1);
  EXPECT_EQ(count(t, TopoNodeType::kCpu), 1);
  EXPECT_EQ(count(t, TopoNodeType::kPci), 1);
  for (int a = 0; a < 3; ++a) {
    EXPECT_EQ(t.nodes[t.gpu_node(0, a)].sm, 80);
    EXPECT_EQ(t.path(t.gpu_node(0, a), node(t, "m0.net0")).type, PathType::kPix);
    for (int b = 0; b < 3; ++b) {
      if (a != b) {
        EXPECT_EQ(gpu_path(t, a, b).type, PathType::kPix);
      }
    }
  }
  Topology two = make_virtual_topology(2, 2);
  std::string error;
  EXPECT_TRUE(two.validate(&error)) << error;
  EXPECT_EQ(two.machines, 2);
  EXPECT_EQ(gpu_path(two, 1, 0, 0, 1).type, PathType::kNet);
  EXPECT_DOUBLE_EQ(gpu_path(two, 1, 0, 0, 1).bw, 12.5);
  Topology clamped = make_virtual_topology(0, 0);
  EXPECT_EQ(clamped.gpus_per_machine(), 1);
  EXPECT_EQ(clamped.machines, 1);
}

// ---- validate -------------------------------------------------------------------------------------

TEST(TopoValidate, AllPresetsPass) {
  for (const std::string& name : preset_names()) {
    for (int machines : {1, 3}) {
      Topology t = preset(name, machines);
      std::string error;
      EXPECT_TRUE(t.validate(&error)) << name << ":" << machines << ": " << error;
    }
  }
}

std::string broken(Topology t) {
  std::string error;
  EXPECT_FALSE(t.validate(&error));
  return error;
}

TEST(TopoValidate, CatchesBrokenModels) {
  const Topology good = preset("pcie-4gpu", 2);
  const int gpu1 = good.gpu_node(0, 1);
  // the pci0 -> gpu1 link (checked before its mirror gpu1 -> pci0)
  const int l = good.link_between(good.find("m0.pci0"), gpu1);
  ASSERT_GE(l, 0);
  ASSERT_EQ(good.links[l].reverse, l + 1);
  const std::string what = "link " + std::to_string(l) + " (m0.pci0 -> m0.gpu1)";
  {
    Topology t = good;
    t.links[l + 1].lanes = 8;
    EXPECT_EQ(broken(t), what + ": reverse link " + std::to_string(l + 1) + " is not its mirror");
  }
  {
    Topology t = good;
    t.links[l + 1].bw = 20;  // each direction has its own bandwidth
    t.links[l + 1].model_bw = 16;
    std::string error;
    EXPECT_TRUE(t.validate(&error)) << error;
  }
  {
    Topology t = good;
    t.links[l].reverse = -1;
    EXPECT_EQ(broken(t), what + ": no reverse link");
  }
  {
    Topology t = good;
    t.links[l].to = 999;
    EXPECT_EQ(broken(t), "link " + std::to_string(l) + " joins " + std::to_string(t.links[l].from) +
                             " -> 999: no such node");
  }
  {
    Topology t = good;
    t.links[l].model_bw = 0;
    EXPECT_EQ(broken(t), what + ": model bandwidth 0");
  }
  {
    Topology t = good;
    t.links[l].bw = -1;
    EXPECT_EQ(broken(t), what + ": bandwidth -1");
  }
  {
    Topology t = good;
    t.links[l].latency_us = -0.5;
    EXPECT_EQ(broken(t), what + ": latency -0.5");
  }
  {
    Topology t = good;
    t.connect(gpu1, gpu1, LinkType::kNvl, 50, 0.1, 2, 3, 40);
    EXPECT_NE(broken(t).find("a node linked to itself"), std::string::npos);
  }
  {
    Topology t = good;
    t.connect(gpu1, t.find("m0.nic0"), LinkType::kNvl, 50, 0.1, 2, 3, 40);
    EXPECT_NE(broken(t).find("a NVL link cannot join GPU and NIC"), std::string::npos);
  }
  {
    Topology t = good;
    t.connect(gpu1, t.find("m1.pci0"), LinkType::kPci, 31.5, 0.1, 16, 4, 24);
    EXPECT_NE(broken(t).find("joins two machines without a network link"), std::string::npos);
  }
  {
    Topology t = good;
    t.nodes[t.gpu_node(1, 3)].dev = 0;
    EXPECT_NE(broken(t).find("m1.gpu3: dev 0; the 4 GPUs of machine 1 must have devs 0..3 once each"),
              std::string::npos);
  }
  {
    Topology t = good;
    TopoNode extra = t.nodes[t.gpu_node(1, 3)];
    extra.dev = 4;
    extra.name = "m1.gpu4";
    t.add_node(extra);
    EXPECT_EQ(broken(t), "machine 1 has 5 GPUs, machine 0 has 4");
  }
  {
    Topology t = good;
    t.nodes[t.find("m1.cpu0")].name = "m0.cpu0";
    EXPECT_EQ(broken(t), "two nodes are named m0.cpu0");
  }
  {
    Topology t = good;
    t.nodes[t.find("m1.cpu0")].machine = 2;
    EXPECT_EQ(broken(t), "m1.cpu0: machine 2 outside 0..1");
  }
  {
    Topology t = good;
    t.nodes[gpu1].out.push_back(l);
    EXPECT_EQ(broken(t), "m0.gpu1: out link " + std::to_string(l) + " starts at node " +
                             std::to_string(t.find("m0.pci0")));
  }
}

// ---- describe -------------------------------------------------------------------------------------

TEST(TopoDescribe, PathMatrix) {
  Topology t = preset("pcie-4gpu");
  EXPECT_EQ(t.describe_paths(0),
            "Paths of machine 0 (type/bandwidth GB/s, NCCL's model; rows from, columns to)\n"
            "                GPU0         GPU1         GPU2         GPU3\n"
            "GPU0      LOC/5000.0     PIX/24.0     PHB/24.0     PHB/24.0\n"
            "GPU1        PIX/24.0   LOC/5000.0     PHB/24.0     PHB/24.0\n"
            "GPU2        PHB/24.0     PHB/24.0   LOC/5000.0     PIX/24.0\n"
            "GPU3        PHB/24.0     PHB/24.0     PIX/24.0   LOC/5000.0\n"
            "                NET0\n"
            "GPU0        PHB/12.5\n"
            "GPU1        PHB/12.5\n"
            "GPU2        PHB/12.5\n"
            "GPU3        PHB/12.5\n");
  Topology h = preset("dgx-h100");
  const std::string paths = h.describe_paths();
  EXPECT_NE(paths.find("GPU3       NVL/370.8    NVL/370.8    NVL/370.8   LOC/5000.0    NVL/370.8"),
            std::string::npos)
      << paths;
}

TEST(TopoDescribe, NodeListing) {
  Topology t = preset("dgx-h100");
  const std::string s = t.describe();
  EXPECT_EQ(s.rfind("Topology dgx-h100: 8x H100-SXM5, 4 NVSwitch, 8x NDR 400G, 2x Xeon 8480C; "
                    "1 machine(s), 34 nodes, 122 links\n",
                    0),
            0u)
      << s;
  EXPECT_NE(s.find("m0.gpu0                GPU    dev 0 sm 90 busid 18000\n"
                   "    + PCI x16 63/48 GB/s 0.1 us -> m0.pci0\n"
                   "    + NVL x5 125/103 GB/s 0.15 us -> m0.nvs0\n"
                   "    + NVL x4 100/82.4 GB/s 0.15 us -> m0.nvs1\n"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("m0.net7                NET    dev 7 mlx5_7 400000 Mb/s\n"), std::string::npos);
  Topology f = preset("pcie-4gpu", 2);
  const std::string fs = f.describe();
  EXPECT_NE(fs.find("  fabric: 32 per leaf, oversubscription 1:1, switch 0.3 us, cable 0.05 us\n"),
            std::string::npos)
      << fs;
  EXPECT_NE(fs.find("fabric.leaf.r0.0       SWITCH dev 1 tier 0 rail 0\n"), std::string::npos) << fs;
}

// ---- names and specs ------------------------------------------------------------------------------

TEST(TopoSpec, Parse) {
  std::string preset_name, error;
  int machines = 0;
  EXPECT_TRUE(parse_topo_spec("dgx-h100:4", &preset_name, &machines, &error)) << error;
  EXPECT_EQ(preset_name, "dgx-h100");
  EXPECT_EQ(machines, 4);
  EXPECT_TRUE(parse_topo_spec("pcie-8gpu-2socket", &preset_name, &machines, &error)) << error;
  EXPECT_EQ(preset_name, "pcie-8gpu-2socket");
  EXPECT_EQ(machines, 1);
  EXPECT_TRUE(parse_topo_spec("nvlink-pairs:4096", &preset_name, &machines, &error));
  EXPECT_EQ(machines, 4096);

  EXPECT_FALSE(parse_topo_spec("dgx-h200:2", &preset_name, &machines, &error));
  EXPECT_EQ(error,
            "unknown topology preset 'dgx-h200' in 'dgx-h200:2' (valid: dgx-a100, dgx-h100, "
            "dgx-b200, gb200-nvl72, pcie-4gpu, pcie-8gpu-2socket, nvlink-pairs, pcie-1gpu)");
  EXPECT_FALSE(parse_topo_spec("", &preset_name, &machines, &error));
  EXPECT_NE(error.find("unknown topology preset ''"), std::string::npos);
  EXPECT_FALSE(parse_topo_spec("dgx-h100:0", &preset_name, &machines, &error));
  EXPECT_EQ(error, "machine count 0 in 'dgx-h100:0' out of range 1..4096");
  EXPECT_FALSE(parse_topo_spec("dgx-h100:4097", &preset_name, &machines, &error));
  EXPECT_EQ(error, "machine count 4097 in 'dgx-h100:4097' out of range 1..4096");
  for (const char* bad : {"dgx-h100:", "dgx-h100:-1", "dgx-h100:2x", "dgx-h100: 2",
                          "dgx-h100:99999999999", "dgx-h100:2:3"}) {
    EXPECT_FALSE(parse_topo_spec(bad, &preset_name, &machines, &error)) << bad;
    EXPECT_EQ(error.rfind("bad machine count '", 0), 0u) << bad << ": " << error;
  }
  EXPECT_EQ(preset_name, "nvlink-pairs");  // untouched by failures
  EXPECT_EQ(machines, 4096);
}

TEST(TopoSpec, MakePresetErrors) {
  Topology t;
  std::string error;
  EXPECT_FALSE(make_preset_topology("dgx", 1, FabricSpec(), &t, &error));
  EXPECT_EQ(error, "unknown topology preset 'dgx' (valid: dgx-a100, dgx-h100, dgx-b200, gb200-nvl72, "
                   "pcie-4gpu, pcie-8gpu-2socket, nvlink-pairs, pcie-1gpu)");
  EXPECT_FALSE(make_preset_topology("dgx-a100", 0, FabricSpec(), &t, &error));
  EXPECT_EQ(error, "machine count must be >= 1, got 0");
  FabricSpec bad;
  bad.oversubscription = 0;
  EXPECT_FALSE(make_preset_topology("dgx-a100", 2, bad, &t, &error));
  EXPECT_EQ(error, "fabric oversubscription must be > 0, got 0");
  bad = FabricSpec();
  bad.machines_per_leaf = 0;
  EXPECT_FALSE(make_preset_topology("dgx-a100", 2, bad, &t, &error));
  EXPECT_EQ(error, "fabric machines_per_leaf must be >= 1, got 0");
  EXPECT_TRUE(t.nodes.empty());  // untouched
  // replicate_machines refuses a model that already has several machines
  Topology two = preset("pcie-4gpu", 2);
  EXPECT_FALSE(replicate_machines(&two, 2, FabricSpec(), &error));
  EXPECT_NE(error.find("needs a one-machine model"), std::string::npos);
}

TEST(TopoSpec, Drawings) {
  for (const std::string& name : preset_names()) {
    const std::string d = preset_drawing(name);
    EXPECT_EQ(d.rfind(name + ": ", 0), 0u) << d;
    EXPECT_NE(d.find("gpu0"), std::string::npos);
    EXPECT_EQ(d.back(), '\n');
  }
  EXPECT_NE(preset_drawing("dgx-h100").find("nvs0 (5 links/GPU)  nvs1 (4)   nvs2 (4)   nvs3 (5)"),
            std::string::npos);
  EXPECT_EQ(preset_drawing("nope"), "");
}

}  // namespace
}  // namespace cclab
