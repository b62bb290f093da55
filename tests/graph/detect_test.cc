// Tests of detect.cc: topology detection from fake sysfs trees and a fake NVML (fake_sysfs.h).
//   - machines that mirror the presets (DGX H100 with 18 NVLinks per GPU to 4 NVSwitches, DGX A100,
//     nvlink-pairs, pcie-8gpu-2socket): the detected model has the preset's nodes, links (type, lanes,
//     bandwidths), GPU<->GPU and GPU->NET paths (NVL, PIX, PHB, SYS with NCCL's bandwidths);
//   - a 2-GPU PCIe box: PXB between GPUs behind different second-level switches, NVL with an NVLink
//     bridge, PIX once Broadcom switches are flattened; a two-function NIC is one NIC with two ports;
//   - what NCCL's rules say about NVLink far ends (sysfs class, unknown = NVSwitch, GPUs outside the
//     model dropped), inactive links and ports, Ethernet when no InfiniBand port is up, virtio NICs;
//   - bad input: missing root, unknown or dangling GPU paths, paths outside the root, garbage files
//     (warnings naming the file, NCCL's defaults), NVML failures; never a crash;
//   - the XML round trip: what detection writes reads back to the same model, and the model's own
//     dump (NCCL_TOPO_DUMP_FILE) reads back to it too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "fake_sysfs.h"
#include "graph/detect.h"
#include "graph/topo.h"

namespace cclab {
namespace {

using cclab_test::bus_of;
using cclab_test::FakeNvml;
using cclab_test::FakeSysfs;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

bool any_contains(const std::vector<std::string>& lines, const std::string& part) {
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& l) { return contains(l, part); });
}

std::string joined(const std::vector<std::string>& lines) {
  std::string s;
  for (const auto& l : lines) s += l + "\n";
  return s;
}

Topology detect_ok(const FakeSysfs& fs, NvmlApi* nvml, DetectResult* r, std::vector<DetectGpu> gpus = {}) {
  DetectOptions o;
  o.sysfs_root = fs.root();
  o.nvml = nvml;
  o.use_nvml = nvml != nullptr;
  o.gpus = std::move(gpus);
  Topology t;
  std::string err;
  EXPECT_TRUE(detect_topology(o, &t, r, &err)) << err << "\n" << joined(r->warnings);
  return t;
}

Topology preset(const std::string& name) {
  Topology t;
  std::string err;
  EXPECT_TRUE(make_preset_topology(name, 1, FabricSpec{}, &t, &err)) << err;
  return t;
}

std::map<TopoNodeType, int> type_counts(const Topology& t) {
  std::map<TopoNodeType, int> c;
  for (const TopoNode& n : t.nodes) ++c[n.type];
  return c;
}

// The links leaving node `i`, order-free: type, far end's type, lanes, model and physical bandwidth,
// generation. SYS links keep only their model bandwidth: sysfs does not say how many UPI/xGMI links
// there are nor how fast, so the detected link is one lane at NCCL's number where the presets have the
// vendor's figures.
std::vector<std::string> link_sigs(const Topology& t, int i) {
  std::vector<std::string> out;
  for (int l : t.nodes[i].out) {
    const TopoLink& k = t.links[l];
    std::ostringstream o;
    o << link_type_name(k.type) << "->" << topo_node_type_name(t.nodes[k.to].type) << " model " << k.model_bw;
    if (k.type != LinkType::kSys) o << " x" << k.lanes << " phys " << k.bw << " gen " << k.generation;
    out.push_back(o.str());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// What detection must reproduce of a preset: node counts; per GPU its bus id, sm and links; per NET
// its speed; every GPU<->GPU and GPU->NET path's type and model bandwidth (and physical bandwidth where
// no SYS link is on the way); the CPUs' identity and links.
void expect_same_machine(const Topology& got, const Topology& want) {
  EXPECT_EQ(type_counts(got), type_counts(want));
  const std::vector<int> gg = got.gpus(0), wg = want.gpus(0), gn = got.nets(0), wn = want.nets(0);
  ASSERT_EQ(gg.size(), wg.size());
  ASSERT_EQ(gn.size(), wn.size());
  for (size_t i = 0; i < gg.size(); ++i) {
    const TopoNode &a = got.nodes[gg[i]], &b = want.nodes[wg[i]];
    EXPECT_EQ(a.busid, b.busid) << "GPU " << i;
    EXPECT_EQ(a.sm, b.sm) << "GPU " << i;
    EXPECT_EQ(link_sigs(got, gg[i]), link_sigs(want, wg[i])) << "GPU " << i;
    for (size_t j = 0; j < gg.size(); ++j) {
      const TopoPath &p = got.path(gg[i], gg[j]), &q = want.path(wg[i], wg[j]);
      EXPECT_EQ(path_type_name(p.type), std::string(path_type_name(q.type))) << "GPU" << i << "->GPU" << j;
      EXPECT_DOUBLE_EQ(p.bw, q.bw) << "GPU" << i << "->GPU" << j;
      if (q.type != PathType::kSys) {
        EXPECT_DOUBLE_EQ(p.bw_physical, q.bw_physical) << "GPU" << i << "->GPU" << j;
      }
    }
    for (size_t j = 0; j < gn.size(); ++j) {
      const TopoPath &p = got.path(gg[i], gn[j]), &q = want.path(wg[i], wn[j]);
      EXPECT_EQ(path_type_name(p.type), std::string(path_type_name(q.type))) << "GPU" << i << "->NET" << j;
      EXPECT_DOUBLE_EQ(p.bw, q.bw) << "GPU" << i << "->NET" << j;
    }
  }
  for (size_t j = 0; j < gn.size(); ++j) {
    EXPECT_EQ(got.nodes[gn[j]].net_speed_mbps, want.nodes[wn[j]].net_speed_mbps) << "NET " << j;
    EXPECT_EQ(got.nodes[gn[j]].net_name, want.nodes[wn[j]].net_name) << "NET " << j;
  }
  const std::vector<int> gc = got.nodes_of(TopoNodeType::kCpu), wc = want.nodes_of(TopoNodeType::kCpu);
  ASSERT_EQ(gc.size(), wc.size());
  for (size_t i = 0; i < gc.size(); ++i) {
    const TopoNode &a = got.nodes[gc[i]], &b = want.nodes[wc[i]];
    EXPECT_EQ(a.dev, b.dev);
    EXPECT_EQ(a.arch, b.arch);
    EXPECT_EQ(a.vendor, b.vendor);
    EXPECT_EQ(a.modelid, b.modelid);
    EXPECT_EQ(a.affinity, b.affinity);
    EXPECT_EQ(link_sigs(got, gc[i]), link_sigs(want, wc[i])) << "CPU " << i;
  }
}

// ---- the presets' machines ------------------------------------------------------------------------

// Detects the fake machine `make` builds (with its fake NVML): no warnings, and the preset's machine.
Topology detect_preset_like(void (*make)(FakeSysfs&, FakeNvml&), const std::string& preset_name, DetectResult* r) {
  FakeSysfs fs;
  FakeNvml nvml;
  make(fs, nvml);
  Topology t = detect_ok(fs, &nvml, r);
  EXPECT_TRUE(r->warnings.empty()) << joined(r->warnings);
  expect_same_machine(t, preset(preset_name));
  return t;
}

TEST(Detect, DgxH100MatchesThePreset) {
  DetectResult r;
  Topology t = detect_preset_like(cclab_test::make_dgx_h100, "dgx-h100", &r);
  // Spelled out: 4 NVSwitches (read as such from sysfs) carrying 5/4/4/5 links of every GPU; a GPU pair
  // is NVL at 18 x 20.6; GPU d reaches NET d through its switch (PIX 48), the other switch of its
  // socket through the CPU (PHB), the other socket across UPI (SYS 22).
  EXPECT_EQ(t.nodes_of(TopoNodeType::kNvs).size(), 4u);
  std::vector<int> lanes;
  for (int l : t.nodes[t.gpu_node(0, 0)].out)
    if (t.links[l].type == LinkType::kNvl) lanes.push_back(t.links[l].lanes);
  EXPECT_EQ(lanes, (std::vector<int>{5, 4, 4, 5}));
  const int g0 = t.gpu_node(0, 0), g7 = t.gpu_node(0, 7);
  EXPECT_EQ(t.path(g0, g7).type, PathType::kNvl);
  EXPECT_NEAR(t.path(g0, g7).bw, 370.8, 1e-9);
  const std::vector<int> nets = t.nets(0);
  EXPECT_EQ(t.path(g0, nets[0]).type, PathType::kPix);
  EXPECT_DOUBLE_EQ(t.path(g0, nets[0]).bw, 48.0);
  EXPECT_EQ(t.path(g0, nets[2]).type, PathType::kPhb);
  EXPECT_EQ(t.path(g0, nets[4]).type, PathType::kSys);
  EXPECT_DOUBLE_EQ(t.path(g0, nets[4]).bw, 22.0);
  EXPECT_EQ(t.nodes[nets[3]].net_speed_mbps, 400000);
  EXPECT_TRUE(t.nodes[nets[3]].gdr);  // nvidia_peermem is loaded
  EXPECT_EQ(t.name, "detected");
  EXPECT_EQ(t.description, "8 GPUs (sm90), 4 NVSwitch, 8 NIC ports (400 Gb/s), 2 CPUs");
  EXPECT_EQ(r.gpu_busids.size(), 8u);
  EXPECT_EQ(r.gpu_busids[1], bus_of(0x2a));
  EXPECT_EQ(r.numa_nodes, 2);
  EXPECT_EQ(r.nets, 8);
  EXPECT_EQ(r.nvml, "fake");
  // The summary names what was found: the 4 switches, every GPU with its NVLinks, every NIC port.
  EXPECT_TRUE(contains(r.summary, "cpu  NUMA 1  x86_64 GenuineIntel family 6 model 143  cpus 56-111,168-223"))
      << r.summary;
  EXPECT_TRUE(contains(r.summary, "pci  0000:97:00.0  switch 0x1000:0xc030  32.0 GT/s PCIe x16  NUMA 1"))
      << r.summary;
  EXPECT_TRUE(contains(r.summary, "gpu    0000:18:00.0  dev 0  sm90  0x10de:0x2330  32.0 GT/s PCIe x16  NVLink x18 "
                                  "to 4 NVSwitch"))
      << r.summary;
  EXPECT_TRUE(contains(r.summary, "nic    0000:dc:00.0  mlx5_7 port 1  InfiniBand 400000 Mb/s")) << r.summary;
}

TEST(Detect, DgxA100MatchesThePresetWithUnknownNvSwitches) {
  DetectResult r;
  Topology t = detect_preset_like(cclab_test::make_dgx_a100, "dgx-a100", &r);
  // The far ends sysfs does not know became the 6 NVSwitches, 2 links from every GPU to each.
  EXPECT_TRUE(contains(r.xml, "<nvlink target=\"00ff:10:00.0\" count=\"2\" tclass=\"0x068000\" />")) << r.xml;
  EXPECT_EQ(t.path(t.gpu_node(0, 0), t.gpu_node(0, 5)).type, PathType::kNvl);
  EXPECT_DOUBLE_EQ(t.path(t.gpu_node(0, 0), t.gpu_node(0, 5)).bw, 240.0);
  EXPECT_DOUBLE_EQ(t.path(t.gpu_node(0, 0), t.nets(0)[7]).bw, 16.0);  // SYS: AMD
}

TEST(Detect, NvlinkPairsMatchesThePreset) {
  DetectResult r;
  Topology t = detect_preset_like(cclab_test::make_nvlink_pairs, "nvlink-pairs", &r);
  EXPECT_EQ(t.path(t.gpu_node(0, 0), t.gpu_node(0, 1)).type, PathType::kNvl);
  EXPECT_DOUBLE_EQ(t.path(t.gpu_node(0, 0), t.gpu_node(0, 1)).bw, 48.0);
  EXPECT_EQ(t.path(t.gpu_node(0, 1), t.gpu_node(0, 2)).type, PathType::kPhb);
  EXPECT_EQ(t.path(t.gpu_node(0, 0), t.nets(0)[0]).type, PathType::kPhb);
}

TEST(Detect, TwoSocketPcieMatchesThePreset) {
  DetectResult r;
  Topology t = detect_preset_like(cclab_test::make_pcie_8gpu_2socket, "pcie-8gpu-2socket", &r);
  const int g0 = t.gpu_node(0, 0);
  EXPECT_EQ(t.path(g0, t.gpu_node(0, 1)).type, PathType::kPix);
  EXPECT_EQ(t.path(g0, t.gpu_node(0, 2)).type, PathType::kPhb);
  EXPECT_EQ(t.path(g0, t.gpu_node(0, 4)).type, PathType::kSys);
  EXPECT_DOUBLE_EQ(t.path(g0, t.gpu_node(0, 4)).bw, 10.0);
}

// ---- a 2-GPU PCIe box ------------------------------------------------------------------------------

TEST(Detect, TwoGpuBoxPathTypes) {
  {  // NVLink bridge: NVL; the two NIC functions are one NIC with two NET ports, both PHB from a GPU
    FakeSysfs fs;
    FakeNvml nvml;
    cclab_test::make_two_gpu_box(fs, nvml, 4);
    DetectResult r;
    Topology t = detect_ok(fs, &nvml, &r);
    EXPECT_TRUE(r.warnings.empty()) << joined(r.warnings);
    const int g0 = t.gpu_node(0, 0), g1 = t.gpu_node(0, 1);
    EXPECT_EQ(t.path(g0, g1).type, PathType::kNvl);
    EXPECT_DOUBLE_EQ(t.path(g0, g1).bw, 48.0);  // 4 x SM86_NVLINK_BW
    EXPECT_EQ(t.nodes_of(TopoNodeType::kNic).size(), 1u);
    ASSERT_EQ(t.nets(0).size(), 2u);
    EXPECT_EQ(t.nodes[t.nets(0)[1]].net_name, "mlx5_1");
    EXPECT_EQ(t.path(g0, t.nets(0)[1]).type, PathType::kPhb);
    EXPECT_EQ(t.nodes_of(TopoNodeType::kPci).size(), 3u);  // the top switch and two below it
    EXPECT_FALSE(t.nodes[t.nets(0)[0]].gdr);               // no nvidia_peermem
    EXPECT_EQ(t.nodes[g0].sm, 86);
  }
  {  // without NVML: PCIe only; the GPUs' sm is unknown and says so
    FakeSysfs fs;
    FakeNvml nvml;
    cclab_test::make_two_gpu_box(fs, nvml, 4);
    DetectResult r;
    Topology t = detect_ok(fs, nullptr, &r);
    EXPECT_EQ(t.path(t.gpu_node(0, 0), t.gpu_node(0, 1)).type, PathType::kPxb);
    EXPECT_DOUBLE_EQ(t.path(t.gpu_node(0, 0), t.gpu_node(0, 1)).bw, 24.0);
    EXPECT_TRUE(any_contains(r.warnings, "compute capability unknown without NVML, taking sm 80 for GPU "
                                         "0000:06:00.0, 0000:09:00.0"))
        << joined(r.warnings);
    EXPECT_EQ(r.nvml, "not used");
  }
  {  // Broadcom PEX Gen4 switches in base mode: flattened into the top one, so the GPUs are PIX
    FakeSysfs fs;
    FakeNvml nvml;
    cclab_test::make_two_gpu_box(fs, nvml, 0, true);
    DetectResult r;
    Topology t = detect_ok(fs, &nvml, &r);
    EXPECT_EQ(t.nodes_of(TopoNodeType::kPci).size(), 1u);
    EXPECT_EQ(t.path(t.gpu_node(0, 0), t.gpu_node(0, 1)).type, PathType::kPix);
    EXPECT_TRUE(any_contains(r.notes, "0000:04:00.0: Broadcom sub-switch merged into 0000:02:00.0")) << joined(r.notes);
  }
}

// ---- NCCL's rules ----------------------------------------------------------------------------------

TEST(Detect, GivenGpusOnlyAndNvlinksToOthersDropped) {
  FakeSysfs fs;
  FakeNvml nvml;
  cclab_test::make_nvlink_pairs(fs, nvml);
  DetectResult r;
  // The CUDA backend's view: two GPUs, sm given, so NVML is not asked (it would say 8.0 here).
  nvml.gpus[bus_of(0x22)].minor = 0;
  Topology t = detect_ok(fs, &nvml, &r, {{bus_of(0x41), 86}, {bus_of(0x22), 86}});
  ASSERT_EQ(t.gpus(0).size(), 2u);
  EXPECT_EQ(r.gpu_busids, (std::vector<int64_t>{bus_of(0x22), bus_of(0x41)}));  // dev = bus order
  EXPECT_EQ(t.nodes[t.gpu_node(0, 0)].sm, 86);
  EXPECT_EQ(t.path(t.gpu_node(0, 0), t.gpu_node(0, 1)).type, PathType::kPhb);
  EXPECT_TRUE(any_contains(r.notes, "GPU 0000:22:00.0: 4 NVLink(s) to GPU 0000:21:00.0, which is not modelled: ignored"))
      << joined(r.notes);
  EXPECT_FALSE(contains(r.xml, "<nvlink")) << r.xml;
}

TEST(Detect, InactiveLinksAndUnknownFarEnds) {
  FakeSysfs fs;
  FakeNvml nvml;
  cclab_test::make_dgx_h100(fs, nvml);
  auto& links = nvml.gpus[bus_of(0x18)].links;
  links[0].active = false;                 // 17 active links left ...
  links[1].p2p = false;                    // ... 16 that carry P2P
  links[2].remote = "not-a-bus-id";        // one to a far end NVML cannot name: a stand-in NVSwitch
  links[3].remote_fails = true;            // one whose far end NVML fails on: ignored
  DetectResult r;
  Topology t = detect_ok(fs, &nvml, &r);
  int total = 0;
  for (int l : t.nodes[t.gpu_node(0, 0)].out)
    if (t.links[l].type == LinkType::kNvl) total += t.links[l].lanes;
  EXPECT_EQ(total, 15);
  EXPECT_EQ(t.nodes_of(TopoNodeType::kNvs).size(), 5u);
  EXPECT_TRUE(contains(r.xml, "<nvlink target=\"ffff:ff:1f.7\" count=\"1\" tclass=\"0x068000\" />")) << r.xml;
  EXPECT_TRUE(any_contains(r.notes, "far end \"not-a-bus-id\" is not a PCI bus id: taken as an NVSwitch"));
  EXPECT_TRUE(any_contains(r.warnings, "GPU 0000:18:00.0 NVLink 3: remote unknown (nvmlDeviceGetNvLinkRemotePciInfo_v2"))
      << joined(r.warnings);
}

TEST(Detect, NvmlFailuresAreWarnings) {
  FakeSysfs fs;
  FakeNvml nvml;
  cclab_test::make_nvlink_pairs(fs, nvml);
  nvml.gpus.erase(bus_of(0x42));           // NVML does not know GPU 3
  nvml.gpus[bus_of(0x41)].cc_fails = true;  // nor GPU 2's compute capability
  DetectResult r;
  Topology t = detect_ok(fs, &nvml, &r);
  EXPECT_TRUE(any_contains(r.warnings, "NVML does not know GPU 0000:42:00.0 (nvmlDeviceGetHandleByPciBusId_v2: Not "
                                       "Found): its NVLinks are not detected"))
      << joined(r.warnings);
  EXPECT_TRUE(any_contains(r.warnings, "GPU 0000:41:00.0: compute capability unknown (nvmlDeviceGetCudaComputeCapability"))
      << joined(r.warnings);
  EXPECT_TRUE(any_contains(r.warnings, "compute capability unknown without NVML, taking sm 80 for GPU 0000:42:00.0"))
      << joined(r.warnings);
  EXPECT_EQ(t.nodes[t.gpu_node(0, 2)].sm, 80);
  EXPECT_EQ(t.nodes[t.gpu_node(0, 3)].sm, 80);
  // GPU 2 (sm80 by default) still sees its 4 links to GPU 3; GPU 3 has none of its own: the link
  // stands, described from GPU 2's side.
  EXPECT_EQ(t.path(t.gpu_node(0, 2), t.gpu_node(0, 3)).type, PathType::kNvl);
}

TEST(Detect, EthernetWhenNoInfinibandPortIsUp) {
  FakeSysfs fs;
  FakeNvml nvml;
  cclab_test::make_two_gpu_box(fs, nvml, 0);
  // Both IB ports down; an Ethernet NIC on its own root port, a virtio NIC (not a PCI function), a
  // bridge without a device link and a down interface.
  for (const char* dev : {"mlx5_0", "mlx5_1"}) fs.write(std::string("class/infiniband/") + dev + "/ports/1/state", "1: DOWN");
  const std::string hb = "pci0000:00";
  const std::string eth = fs.nic_function(fs.root_port(hb, 0x00, 5, 4, "0"), 0x31, 0, 4, "0", "0x020000");
  fs.eth("enp49s0", eth, "25000");
  fs.mkdirs("devices/pci0000:00/0000:00:03.0/virtio2");
  fs.eth("eth0", "pci0000:00/0000:00:03.0/virtio2", "-1");
  fs.eth("br0", "", "10000");
  fs.eth("enp50s0", eth, "25000", "down");
  DetectResult r;
  Topology t = detect_ok(fs, &nvml, &r);
  const std::vector<int> nets = t.nets(0);
  ASSERT_EQ(nets.size(), 2u) << r.xml;
  EXPECT_EQ(t.nodes[nets[0]].net_name, "enp49s0");
  EXPECT_EQ(t.nodes[nets[0]].net_speed_mbps, 25000);
  EXPECT_EQ(t.nodes[nets[1]].net_name, "eth0");
  EXPECT_EQ(t.nodes[nets[1]].net_speed_mbps, 10000);  // -1: NCCL's default
  EXPECT_EQ(t.path(t.gpu_node(0, 0), nets[0]).type, PathType::kPhb);
  EXPECT_TRUE(contains(r.xml, "<nic>\n      <net name=\"eth0\"")) << r.xml;  // directly on the CPU
  EXPECT_TRUE(any_contains(r.notes, "mlx5_0 port 1 is not active (1: DOWN): skipped"));
  EXPECT_TRUE(any_contains(r.notes, "enp50s0 is down: skipped"));
  EXPECT_TRUE(any_contains(r.notes, "eth0: speed -1, taking NCCL's default 10000 Mb/s"));
}

// ---- no GPU ----------------------------------------------------------------------------------------

TEST(Detect, NoGpuStillReportsCpusAndNics) {
  FakeSysfs fs;
  cclab_test::make_gpuless_vm(fs);
  DetectOptions o;
  o.sysfs_root = fs.root();
  o.use_nvml = false;
  DetectResult r;
  std::string err;
  ASSERT_TRUE(detect_system(o, &r, &err)) << err;
  EXPECT_TRUE(r.gpu_busids.empty());
  EXPECT_TRUE(contains(r.summary, "cpu  NUMA 0  x86_64 AuthenticAMD family 25 model 1  cpus 0-1")) << r.summary;
  EXPECT_TRUE(contains(r.summary, "nic  (not on PCI)  eth0  Ethernet 10000 Mb/s  NUMA 0")) << r.summary;
  EXPECT_TRUE(contains(r.summary, "no GPU found")) << r.summary;
  Topology t;
  EXPECT_FALSE(detect_topology(o, &t, &r, &err));
  EXPECT_TRUE(contains(err, "no GPU found under " + fs.root())) << err;
  EXPECT_FALSE(r.xml.empty());  // what was found is still there
}

// ---- a real machine --------------------------------------------------------------------------------

// The lent H200 VM (make_lent_h200_vm, captured there): detection on the fake tree gives what it gave
// on the machine itself - the summary lines cclab topo --detect printed there, and the machine of the
// topology XML NCCL_TOPO_DUMP_FILE wrote there (tests/graph/data/lent_h200_vm_dump.xml). Unlike the
// presets' fake trees, the GPU has no bridge or switch above it, no NUMA information and a virtio NIC.
// What detection printed on the lent machines (scripts/gpu_lease.sh's detect step), and the machine of
// the XML NCCL_TOPO_DUMP_FILE wrote there.
void expect_lent_vm(void (*make)(FakeSysfs&, FakeNvml&), const char* gpu_line, const char* dump) {
  FakeSysfs fs;
  FakeNvml nvml;
  make(fs, nvml);
  DetectResult r;
  Topology t = detect_ok(fs, &nvml, &r);
  for (const char* line : {"cpu  NUMA 0  x86_64 GenuineIntel family 6 model 207  cpus 0-15", gpu_line,
                           "nic  (not on PCI)  eth0  Ethernet 10000 Mb/s  NUMA 0"})
    EXPECT_TRUE(contains(r.summary, line)) << "missing: " << line << "\n" << r.summary;
  EXPECT_TRUE(any_contains(r.notes, "numa_node is -1 (no NUMA information): taking NUMA node 0")) << joined(r.notes);
  EXPECT_TRUE(any_contains(r.notes, "eth0: speed -1, taking NCCL's default 10000 Mb/s")) << joined(r.notes);
  EXPECT_TRUE(any_contains(r.notes, "virtio2 is not a PCI function: attached to CPU 0")) << joined(r.notes);
  const char* dir = std::getenv("CCLAB_TEST_DATA");
  Topology dumped;
  std::string err;
  ASSERT_TRUE(read_topology_xml(std::string(dir ? dir : "tests/graph/data") + "/" + dump, &dumped, &err)) << err;
  expect_same_machine(t, dumped);
}

TEST(Detect, LentH200VmMatchesTheRealMachine) {
  expect_lent_vm(cclab_test::make_lent_h200_vm,
                 "gpu  0000:00:06.0  dev 0  sm90  0x10de:0x2335  32.0 GT/s PCIe x16  NUMA 0  no NVLink",
                 "lent_h200_vm_dump.xml");
}

TEST(Detect, LentH100VmMatchesTheRealMachine) {
  expect_lent_vm(cclab_test::make_lent_h100_vm,
                 "gpu  0000:00:06.0  dev 0  sm90  0x10de:0x2330  32.0 GT/s PCIe x16  NUMA 0  no NVLink",
                 "lent_h100_vm_dump.xml");
}

// ---- bad input -------------------------------------------------------------------------------------

TEST(Detect, MissingRootOrTreeIsAnError) {
  DetectOptions o;
  o.use_nvml = false;
  o.sysfs_root = "/nonexistent/cclab-sysfs";
  DetectResult r;
  std::string err;
  EXPECT_FALSE(detect_system(o, &r, &err));
  EXPECT_TRUE(contains(err, "sysfs root /nonexistent/cclab-sysfs: cannot resolve: No such file or directory")) << err;
  FakeSysfs empty;
  rmdir(empty.path("devices").c_str());
  o.sysfs_root = empty.root();
  EXPECT_FALSE(detect_system(o, &r, &err));
  EXPECT_TRUE(contains(err, "has no devices/ directory")) << err;
}

TEST(Detect, GpuWhosePathCannotBeResolvedIsAnError) {
  FakeSysfs fs;
  FakeNvml nvml;
  cclab_test::make_nvlink_pairs(fs, nvml);
  DetectOptions o;
  o.sysfs_root = fs.root();
  o.use_nvml = false;
  DetectResult r;
  std::string err;
  o.gpus = {{bus_of(0x77), 80}};  // no such device
  EXPECT_FALSE(detect_system(o, &r, &err));
  EXPECT_TRUE(contains(err, "GPU 0000:77:00.0: its PCI path " + fs.root() + "/bus/pci/devices/0000:77:00.0: cannot "
                            "resolve"))
      << err;
  fs.link("bus/pci/devices/0000:77:00.0", "../../../devices/pci0000:00/gone/0000:77:00.0");  // dangling
  EXPECT_FALSE(detect_system(o, &r, &err));
  EXPECT_TRUE(contains(err, "cannot resolve: No such file or directory")) << err;
  // A link out of the tree (to a real directory elsewhere).
  fs.link("bus/pci/devices/0000:77:00.0", "/tmp");
  EXPECT_FALSE(detect_system(o, &r, &err));
  EXPECT_TRUE(contains(err, "is not under " + fs.root() + "/devices/")) << err;
  // A link to a device that is not a PCI function.
  fs.mkdirs("devices/platform/serial0");
  fs.link("bus/pci/devices/0000:77:00.0", "../../../devices/platform/serial0");
  EXPECT_FALSE(detect_system(o, &r, &err));
  EXPECT_TRUE(contains(err, "is not a PCI device")) << err;
  // The same GPU twice.
  o.gpus = {{bus_of(0x21), 86}, {bus_of(0x21), 86}};
  EXPECT_FALSE(detect_system(o, &r, &err));
  EXPECT_TRUE(contains(err, "GPU 0000:21:00.0 is listed twice")) << err;
}

TEST(Detect, GarbageFilesAreWarningsAndDefaults) {
  FakeSysfs fs;
  FakeNvml nvml;
  cclab_test::make_nvlink_pairs(fs, nvml);
  const std::string gpu1 = "devices/pci0000:00/0000:00:01.0/0000:1f:00.0/0000:20:01.0/0000:22:00.0/";
  fs.write(gpu1 + "max_link_width", "wide");
  fs.write(gpu1 + "max_link_speed", "fast");
  fs.write("devices/pci0000:00/0000:00:01.0/0000:1f:00.0/numa_node", "seven");
  fs.write("class/infiniband/mlx5_0/ports/1/rate", "lots");
  fs.write("cpuinfo", "vendor_id : AuthenticAMD\ncpu family : twenty\nmodel : 1\n");
  DetectResult r;
  Topology t = detect_ok(fs, &nvml, &r);
  const std::string w = joined(r.warnings);
  EXPECT_TRUE(contains(w, fs.root() + "/" + gpu1 + "max_link_width: \"wide\" is not a PCIe link width (ignored)")) << w;
  EXPECT_TRUE(contains(w, fs.root() + "/" + gpu1 + "max_link_speed: \"fast\" is not a PCIe speed (ignored)")) << w;
  EXPECT_TRUE(contains(w, "0000:1f:00.0/numa_node: \"seven\" is not a NUMA node: taking 0")) << w;
  EXPECT_TRUE(contains(w, "ports/1/rate: \"lots\" is not a rate in Gb/sec: taking 10000 Mb/s")) << w;
  EXPECT_TRUE(contains(w, "cpuinfo: cpu family \"twenty\" is not a number")) << w;
  // The GPU's link falls back to its upstream port's values (Gen4 x16), the NIC to NCCL's 10 Gb/s.
  const TopoNode& g1 = t.nodes[t.gpu_node(0, 1)];
  EXPECT_EQ(g1.link_speed, "16.0 GT/s PCIe");
  EXPECT_EQ(g1.link_width, 16);
  EXPECT_EQ(t.nodes[t.nets(0)[0]].net_speed_mbps, 10000);
  // A GPU class that is garbage: scanning cannot tell it is a GPU and skips it; named explicitly (as the
  // CUDA backend does) it is taken as a GPU.
  fs.write(gpu1 + "class", "0xzz");
  t = detect_ok(fs, &nvml, &r);
  EXPECT_EQ(t.gpus(0).size(), 3u);
  EXPECT_TRUE(any_contains(r.warnings, "0000:22:00.0/class: unreadable or not a PCI class code (device skipped)"))
      << joined(r.warnings);
  t = detect_ok(fs, &nvml, &r, {{bus_of(0x21), 86}, {bus_of(0x22), 86}});
  EXPECT_EQ(t.nodes[t.gpu_node(0, 1)].pci_class, 0x030200);
  EXPECT_TRUE(any_contains(r.warnings, gpu1 + "class: \"0xzz\" is not a PCI class code: taking 0x030200 (GPU)"))
      << joined(r.warnings);
  // A missing cpuinfo and a missing NUMA directory.
  std::remove(fs.path("cpuinfo").c_str());
  std::remove(fs.path("devices/system/node/node0/cpumap").c_str());
  t = detect_ok(fs, &nvml, &r);
  EXPECT_TRUE(any_contains(r.warnings, fs.root() + "/cpuinfo: cannot open: No such file or directory: CPU vendor and model unknown"))
      << joined(r.warnings);
  EXPECT_TRUE(any_contains(r.warnings, "node0/cpumap: cannot open: No such file or directory (CPU 0 has no affinity)"))
      << joined(r.warnings);
  EXPECT_EQ(t.nodes[t.nodes_of(TopoNodeType::kCpu)[0]].vendor, CpuVendor::kUnknown);
}

TEST(Detect, OpenNvmlWithoutTheLibrarySaysWhy) {
  std::string why;
  std::unique_ptr<NvmlApi> n = open_nvml(&why);
  if (n != nullptr) GTEST_SKIP() << "libnvidia-ml.so.1 is present here (" << n->name() << ")";
  EXPECT_TRUE(contains(why, "libnvidia-ml.so.1")) << why;
}

// ---- the XML ---------------------------------------------------------------------------------------

TEST(Detect, XmlRoundTrips) {
  FakeSysfs fs;
  FakeNvml nvml;
  cclab_test::make_dgx_h100(fs, nvml);
  DetectResult r;
  Topology t = detect_ok(fs, &nvml, &r);
  // NCCL's elements and attributes, as topo_xml.cc reads them.
  EXPECT_TRUE(contains(r.xml, "<system version=\"1\" name=\"detected\"")) << r.xml;
  EXPECT_TRUE(contains(r.xml, "<cpu numaid=\"1\" affinity=\"ffffffff,ff000000,00000000,ffffffff,ff000000,00000000\" "
                              "arch=\"x86_64\" vendor=\"GenuineIntel\" familyid=\"6\" modelid=\"143\">"))
      << r.xml;
  EXPECT_TRUE(contains(r.xml, "<pci busid=\"0000:18:00.0\" class=\"0x030200\" vendor=\"0x10de\" device=\"0x2330\" "
                              "subsystem_vendor=\"0x10de\" subsystem_device=\"0x1234\" link_speed=\"32.0 GT/s PCIe\" "
                              "link_width=\"16\">"))
      << r.xml;
  EXPECT_TRUE(contains(r.xml, "<gpu dev=\"0\" sm=\"90\" gdr=\"1\">")) << r.xml;
  EXPECT_TRUE(contains(r.xml, "<nvlink target=\"0000:05:00.0\" count=\"5\" tclass=\"0x068000\" />")) << r.xml;
  EXPECT_TRUE(contains(r.xml, "<net name=\"mlx5_0\" dev=\"0\" speed=\"400000\" port=\"1\" latency=\"0\" "
                              "maxconn=\"131072\" gdr=\"1\" coll=\"0\" />"))
      << r.xml;
  // What NCCL_TOPO_DUMP_FILE writes of the model reads back to the same paths.
  Topology back;
  std::string err;
  ASSERT_TRUE(read_topology_xml_string(topology_xml_string(t), "dump", &back, &err)) << err;
  expect_same_machine(back, t);
  EXPECT_EQ(topology_xml_string(back), topology_xml_string(t));
}

}  // namespace
}  // namespace cclab
