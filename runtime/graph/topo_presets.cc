// runtime/graph/topo_presets.cc - built-in machines, the multi-machine fabric, CCLAB_TOPO parsing.
//
// Every preset builds one machine (nodes "m0.*") and hands it to replicate_machines(), which copies it
// `machines` times and joins the copies with a rail-optimised fat tree (below), then computes paths.
//
// Two bandwidths per link (topo.h): `bw` is the physical rate per direction, for the simulator;
// `model_bw` is the number NCCL 2.28.9 would give the same link (src/graph/topo.h, topo.cc), for the
// search and tuner:
//   NVLink    model = links x SMxx_NVLINK_BW: sm80 20.0, sm86 12.0, sm90 20.6, sm100 40.1 (topo.h);
//             physical 25 GB/s per NVLink3/4 link per direction (A100: 12 links = 600 GB/s
//             bidirectional; H100: 18 links = 900 GB/s bidirectional, NVIDIA A100 / H100 datasheets),
//             50 GB/s per NVLink5 link per direction (B200: 18 links = 1.8 TB/s bidirectional, NVIDIA
//             DGX B200 and GB200 NVL72 datasheets), 14.0625 GB/s per link on the GA102 bridge
//             (RTX A6000: 4 links = 112.5 GB/s bidirectional, RTX A6000 datasheet).
//   PCIe      model = width x speed / 80 with speed from NCCL's kvDictPciGen (x100 Mb/s per lane:
//             Gen3 60, Gen4 120, Gen5 240; topo.cc ncclTopoAddPci): x16 Gen3 12, Gen4 24, Gen5 48 GB/s.
//             Physical = the x16 signalling rate after 128b/130b encoding (PCI Express Base
//             Specification 3.0/4.0/5.0): Gen3 15.75, Gen4 31.5, Gen5 63.0 GB/s per direction.
//   SYS       model = NCCL's ncclTopoGetInterCpuBw: AMD_BW 16, Intel Skylake..Ice Lake SKL_QPI_BW 10,
//             Sapphire Rapids SRP_QPI_BW 22. Physical = links x per-link rate (vendor figures, below).
//   NET       model = physical = speed (Mb/s) / 8000 (topo.cc ncclTopoAddNet): HDR 200 Gb/s 25 GB/s,
//             NDR 400 Gb/s 50 GB/s, 100 Gb/s 12.5 GB/s.
// Latencies are order-of-magnitude figures for the simulator, not measurements: an NVLink hop 0.15 us,
// a PCIe link 0.1 us, the inter-socket link 0.2 us, NIC to its port 0.5 us; fabric cable and switch
// latencies come from FabricSpec.
// PCIe bus ids grow with the GPU dev index as NCCL orders GPUs by bus id; GPU bus ids of the DGX
// presets are the ones nvidia-smi reports on those systems, the others are illustrative.
//
// The fabric (machines > 1). NET port d of every machine is rail d. Machines are grouped by
// FabricSpec::machines_per_leaf (group g = machines g*mpl .. g*mpl+mpl-1); each (rail, group) has a
// leaf switch "fabric.leaf.r<d>.<g>" (tier 0) and every NET port of that rail and group is cabled to
// it (one NET link at the port's rate). One spine node "fabric.spine.0" (tier 1) stands for the whole
// spine tier: each leaf has one NET link to it with lanes = its uplink ports (round(n / o), at least 1)
// and bw = model_bw = n x port rate / o, for n machines on that leaf and oversubscription o; so
// traffic between groups or rails is bounded by the leaf's aggregate uplink as on a real fat tree.
// Latency: a link into a switch costs the cable, a link out of a switch the cable plus the switch's
// port-to-port latency, so NET -> leaf -> NET is 2 cables + 1 switch and NET -> leaf -> spine -> leaf
// -> NET is 4 cables + 3 switches.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <vector>

#include "graph/topo.h"

namespace cclab {

namespace {

constexpr double kNvlLinkBw = 25.0;          // NVLink3/NVLink4, GB/s per link per direction
constexpr double kNvlSm80Model = 20.0;       // SM80_NVLINK_BW
constexpr double kNvlSm86Model = 12.0;       // SM86_NVLINK_BW
constexpr double kNvlSm90Model = 20.6;       // SM90_NVLINK_BW
constexpr double kNvl5LinkBw = 50.0;         // NVLink5, GB/s per link per direction
constexpr double kNvlSm100Model = 40.1;      // SM100_NVLINK_BW
constexpr double kNvlBridgeSm86Bw = 14.0625; // GA102 NVLink bridge, GB/s per link per direction
constexpr double kPciGen3Bw = 15.75, kPciGen3Model = 12.0;
constexpr double kPciGen4Bw = 31.5, kPciGen4Model = 24.0;
constexpr double kPciGen5Bw = 63.0, kPciGen5Model = 48.0;
constexpr double kNvlLat = 0.15, kPciLat = 0.1, kSysLat = 0.2, kNicLat = 0.5;

const char* pci_speed_name(int gen) {
  switch (gen) {
    case 3: return "8.0 GT/s PCIe";
    case 4: return "16.0 GT/s PCIe";
    case 5: return "32.0 GT/s PCIe";
  }
  return "";
}

// NCCL's packing of domain:bus:dev.fn (the hex digits of the string, read as one number).
int64_t busid(int bus, int dev = 0, int fn = 0) {
  return (static_cast<int64_t>(bus) << 12) | (static_cast<int64_t>(dev) << 4) | fn;
}

// Builds one machine (machine 0, names "m0.*").
class Machine {
 public:
  explicit Machine(Topology* t) : t_(t) {}

  int cpu(CpuVendor vendor, int familyid, int modelid, const std::string& affinity,
          CpuArch arch = CpuArch::kX86) {
    TopoNode n;
    n.type = TopoNodeType::kCpu;
    n.dev = ncpu_++;
    n.name = "m0.cpu" + std::to_string(n.dev);
    n.arch = arch;
    n.vendor = vendor;
    n.familyid = familyid;
    n.modelid = modelid;
    n.affinity = affinity;
    return t_->add_node(n);
  }
  void sys(int a, int b, double bw, int lanes, double model) {
    t_->connect(a, b, LinkType::kSys, bw, kSysLat, lanes, 0, model);
  }
  // A PCIe switch under `parent`, x16 uplink of the given generation.
  int pci_switch(int parent, int bus, int gen) {
    TopoNode n;
    n.type = TopoNodeType::kPci;
    n.dev = npci_++;
    n.name = "m0.pci" + std::to_string(n.dev);
    n.busid = busid(bus);
    n.pci_class = 0x060400;
    set_pci(&n, gen);
    int i = t_->add_node(n);
    pcie(parent, i, gen);
    return i;
  }
  int gpu(int parent, int bus, int sm, int gen, const std::string& device_id) {
    TopoNode n;
    n.type = TopoNodeType::kGpu;
    n.dev = ngpu_++;
    n.name = "m0.gpu" + std::to_string(n.dev);
    n.busid = busid(bus);
    n.sm = sm;
    n.pci_class = 0x030200;
    n.vendor_id = "0x10de";
    n.device_id = device_id;
    set_pci(&n, gen);
    int i = t_->add_node(n);
    pcie(parent, i, gen);
    return i;
  }
  int nvswitch() {
    TopoNode n;
    n.type = TopoNodeType::kNvs;
    n.dev = nnvs_++;
    n.name = "m0.nvs" + std::to_string(n.dev);
    n.pci_class = 0x068000;
    return t_->add_node(n);
  }
  // NVLink-C2C between a GPU and its CPU (Grace): model = physical, as NCCL reads it from NVML.
  void c2c(int gpu, int cpu, int links, double bw) {
    t_->connect(gpu, cpu, LinkType::kC2c, bw, kNvlLat, links, 0, bw);
  }
  void nvlink(int a, int b, int links, double per_link_bw, double per_link_model, int generation) {
    t_->connect(a, b, LinkType::kNvl, links * per_link_bw, kNvlLat, links, generation,
                links * per_link_model);
  }
  // A one-port NIC (ConnectX) under `parent` and its port; returns the NET node.
  int nic(int parent, int bus, int gen, double speed_mbps, const std::string& device_id) {
    TopoNode n;
    n.type = TopoNodeType::kNic;
    n.dev = nnic_;
    n.name = "m0.nic" + std::to_string(n.dev);
    n.busid = busid(bus);
    n.pci_class = 0x020700;
    n.vendor_id = "0x15b3";
    n.device_id = device_id;
    n.net_name = "mlx5_" + std::to_string(n.dev);
    n.net_speed_mbps = speed_mbps;
    set_pci(&n, gen);
    int nic_node = t_->add_node(n);
    pcie(parent, nic_node, gen);
    TopoNode p;
    p.type = TopoNodeType::kNet;
    p.dev = nnic_++;
    p.name = "m0.net" + std::to_string(p.dev);
    p.net_name = n.net_name;
    p.net_speed_mbps = speed_mbps;
    p.port = 1;
    p.guid = 0x0c42a10300000000ull + static_cast<uint64_t>(p.dev);
    p.maxconn = 131072;
    int net_node = t_->add_node(p);
    const double bw = speed_mbps / 8000.0;
    t_->connect(nic_node, net_node, LinkType::kLoc, bw, kNicLat, 1, 0, bw);
    return net_node;
  }

 private:
  void set_pci(TopoNode* n, int gen) {
    n->link_speed = pci_speed_name(gen);
    n->link_width = 16;
  }
  void pcie(int parent, int child, int gen) {
    double bw = gen == 5 ? kPciGen5Bw : gen == 4 ? kPciGen4Bw : kPciGen3Bw;
    double model = gen == 5 ? kPciGen5Model : gen == 4 ? kPciGen4Model : kPciGen3Model;
    t_->connect(parent, child, LinkType::kPci, bw, kPciLat, 16, gen, model);
  }
  Topology* t_;
  int ncpu_ = 0, npci_ = 0, ngpu_ = 0, nnvs_ = 0, nnic_ = 0;
};

// ---- the DGX layout -------------------------------------------------------------------------------
// DGX A100, H100 and B200 share one layout: 2 CPU sockets, 4 PCIe switches (2 per socket) each with
// 2 GPUs and 2 single-port compute NICs (NIC d is GPU d's rail), and NVSwitch chips with a bundle of
// NVLinks from every GPU to each chip. DgxSpec holds what differs.
struct DgxSpec {
  const char* name;
  const char* description;
  CpuVendor vendor;
  int familyid, modelid;
  const char* affinity[2];
  int upi_links;
  double upi_link_bw, sys_model;  // per link per direction (physical); NCCL's inter-CPU bandwidth
  int gpu_bus[8], nic_bus[8], sw_bus[4];
  int pci_gen, sm;
  const char* gpu_device;
  double nic_mbps;
  const char* nic_device;
  std::vector<int> nvlinks_per_switch;  // one entry per NVSwitch chip
  double nvl_link_bw, nvl_link_model;
  int nvl_generation;
};

void build_dgx(Topology* t, const DgxSpec& d) {
  Machine m(t);
  int cpu[2];
  for (int c = 0; c < 2; ++c) cpu[c] = m.cpu(d.vendor, d.familyid, d.modelid, d.affinity[c]);
  m.sys(cpu[0], cpu[1], d.upi_links * d.upi_link_bw, d.upi_links, d.sys_model);
  int gpus[8];
  for (int s = 0; s < 4; ++s) {
    int sw = m.pci_switch(cpu[s / 2], d.sw_bus[s], d.pci_gen);
    for (int k = 0; k < 2; ++k) gpus[2 * s + k] = m.gpu(sw, d.gpu_bus[2 * s + k], d.sm, d.pci_gen, d.gpu_device);
    for (int k = 0; k < 2; ++k) m.nic(sw, d.nic_bus[2 * s + k], d.pci_gen, d.nic_mbps, d.nic_device);
  }
  std::vector<int> nvs;
  for (size_t i = 0; i < d.nvlinks_per_switch.size(); ++i) nvs.push_back(m.nvswitch());
  for (int g = 0; g < 8; ++g) {
    for (size_t i = 0; i < nvs.size(); ++i) {
      m.nvlink(gpus[g], nvs[i], d.nvlinks_per_switch[i], d.nvl_link_bw, d.nvl_link_model, d.nvl_generation);
    }
  }
  t->name = d.name;
  t->description = d.description;
}

// ---- dgx-a100 -------------------------------------------------------------------------------------
// NVIDIA DGX A100 (DGX A100 User Guide; "NVIDIA DGX A100 System Architecture" whitepaper):
// 8x A100-SXM4 (sm80), 6 second-generation NVSwitch, 12 NVLink3 links per GPU, 2 to each NVSwitch
// (600 GB/s bidirectional per GPU); 4 PCIe Gen4 switches, each with 2 GPUs and 2 single-port
// ConnectX-6 HDR 200 Gb/s compute NICs; 2x AMD EPYC 7742 (Rome, family 0x17 model 0x31) joined by
// xGMI (4 x16 links at 16 GT/s: 4 x 32 GB/s per direction, AMD EPYC 7002 overview; NCCL AMD_BW 16).
// Not modelled: the two storage NICs, NVMe, the NPS4 NUMA split (one CPU node per socket here).
//
//        nvs0    nvs1    nvs2    nvs3    nvs4    nvs5       NVSwitch: 2 NVLink3 links from every
//          \______\_______\___ all-to-all ___/_______/        GPU to each switch (lanes 2, 50 GB/s,
//     +------+------+------+------+------+------+------+     model 40)
//    gpu0   gpu1   gpu2   gpu3   gpu4   gpu5   gpu6   gpu7   A100-SXM4, sm80
//     |      |      |      |      |      |      |      |
//     +-pci0-+      +-pci1-+      +-pci2-+      +-pci3-+     PCIe Gen4 x16 switches
//     |      |      |      |      |      |      |      |
//    nic0   nic1   nic2   nic3   nic4   nic5   nic6   nic7   ConnectX-6 HDR 200 Gb/s
//    net0   net1   net2   net3   net4   net5   net6   net7   port d = rail d
//         pci0 + pci1                pci2 + pci3
//             cpu0 ========= xGMI ========= cpu1              2x AMD EPYC 7742
const char kDgxA100[] =
    "       nvs0    nvs1    nvs2    nvs3    nvs4    nvs5       NVSwitch: 2 NVLink3 links from every\n"
    "         \\______\\_______\\___ all-to-all ___/_______/        GPU to each switch (lanes 2, 50 GB/s,\n"
    "    +------+------+------+------+------+------+------+     model 40)\n"
    "   gpu0   gpu1   gpu2   gpu3   gpu4   gpu5   gpu6   gpu7   A100-SXM4, sm80\n"
    "    |      |      |      |      |      |      |      |\n"
    "    +-pci0-+      +-pci1-+      +-pci2-+      +-pci3-+     PCIe Gen4 x16 switches\n"
    "    |      |      |      |      |      |      |      |\n"
    "   nic0   nic1   nic2   nic3   nic4   nic5   nic6   nic7   ConnectX-6 HDR 200 Gb/s\n"
    "   net0   net1   net2   net3   net4   net5   net6   net7   port d = rail d\n"
    "        pci0 + pci1                pci2 + pci3\n"
    "            cpu0 ========= xGMI ========= cpu1              2x AMD EPYC 7742\n";

void build_dgx_a100(Topology* t) {
  build_dgx(t, DgxSpec{"dgx-a100", "8x A100-SXM4, 6 NVSwitch, 8x HDR 200G, 2x EPYC 7742",
                       CpuVendor::kAmd, 0x17, 0x31,
                       {"ffffffff,ffffffff,00000000,00000000,ffffffff,ffffffff",
                        "00000000,00000000,ffffffff,ffffffff,00000000,00000000"},
                       4, 32.0, 16.0,
                       {0x07, 0x0f, 0x47, 0x4e, 0x87, 0x90, 0xb7, 0xbd},
                       {0x0c, 0x12, 0x4b, 0x54, 0x8d, 0x94, 0xba, 0xcc},
                       {0x03, 0x43, 0x83, 0xb3},
                       4, 80, "0x20b0", 200000, "0x101b",
                       {2, 2, 2, 2, 2, 2}, kNvlLinkBw, kNvlSm80Model, 3});
}

// ---- dgx-h100 -------------------------------------------------------------------------------------
// NVIDIA DGX H100 (DGX H100 User Guide; "NVIDIA DGX H100 System Architecture" / Hopper whitepaper):
// 8x H100-SXM5 (sm90), 4 NVSwitch chips (NVLink4), 18 NVLink4 links per GPU split 5/4/4/5 over the
// 4 chips (900 GB/s bidirectional per GPU = 18 x 25 GB/s per direction); 8 ConnectX-7 NDR 400 Gb/s
// compute ports, one per GPU, on PCIe Gen5 switches (4 switches x 2 GPUs + 2 NICs); 2x Intel Xeon
// Platinum 8480C (Sapphire Rapids, family 6 model 0x8F: NCCL SRP_QPI_BW 22) with 4 UPI 2.0 links at
// 16 GT/s (4 x 32 GB/s per direction, Intel product specifications).
// Not modelled: storage / in-band NICs, NVMe, the second PCIe level inside the switches.
//
//       nvs0 (5 links/GPU)  nvs1 (4)   nvs2 (4)   nvs3 (5)    NVLink4, 25 GB/s per link per
//          \_________\__________/__________/                  direction; model 20.6 per link
//     +------+------+------+------+------+------+------+     (18 links: 450 GB/s, model 370.8)
//    gpu0   gpu1   gpu2   gpu3   gpu4   gpu5   gpu6   gpu7   H100-SXM5, sm90
//     |      |      |      |      |      |      |      |
//     +-pci0-+      +-pci1-+      +-pci2-+      +-pci3-+     PCIe Gen5 x16 switches
//     |      |      |      |      |      |      |      |
//    nic0   nic1   nic2   nic3   nic4   nic5   nic6   nic7   ConnectX-7 NDR 400 Gb/s
//    net0   net1   net2   net3   net4   net5   net6   net7   port d = rail d
//         pci0 + pci1                pci2 + pci3
//             cpu0 ========= UPI ========== cpu1              2x Xeon Platinum 8480C
const char kDgxH100[] =
    "      nvs0 (5 links/GPU)  nvs1 (4)   nvs2 (4)   nvs3 (5)    NVLink4, 25 GB/s per link per\n"
    "         \\_________\\__________/__________/                  direction; model 20.6 per link\n"
    "    +------+------+------+------+------+------+------+     (18 links: 450 GB/s, model 370.8)\n"
    "   gpu0   gpu1   gpu2   gpu3   gpu4   gpu5   gpu6   gpu7   H100-SXM5, sm90\n"
    "    |      |      |      |      |      |      |      |\n"
    "    +-pci0-+      +-pci1-+      +-pci2-+      +-pci3-+     PCIe Gen5 x16 switches\n"
    "    |      |      |      |      |      |      |      |\n"
    "   nic0   nic1   nic2   nic3   nic4   nic5   nic6   nic7   ConnectX-7 NDR 400 Gb/s\n"
    "   net0   net1   net2   net3   net4   net5   net6   net7   port d = rail d\n"
    "        pci0 + pci1                pci2 + pci3\n"
    "            cpu0 ========= UPI ========== cpu1              2x Xeon Platinum 8480C\n";

void build_dgx_h100(Topology* t) {
  build_dgx(t, DgxSpec{"dgx-h100", "8x H100-SXM5, 4 NVSwitch, 8x NDR 400G, 2x Xeon 8480C",
                       CpuVendor::kIntel, 6, 0x8f,
                       {"00000000,00ffffff,ffffffff,00000000,00ffffff,ffffffff",
                        "ffffffff,ff000000,00000000,ffffffff,ff000000,00000000"},
                       4, 32.0, 22.0,
                       {0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb},
                       {0x19, 0x29, 0x3b, 0x5e, 0x9b, 0xaa, 0xbb, 0xdc},
                       {0x15, 0x37, 0x97, 0xb7},
                       5, 90, "0x2330", 400000, "0x1021",
                       {5, 4, 4, 5}, kNvlLinkBw, kNvlSm90Model, 4});
}

// ---- dgx-b200 -------------------------------------------------------------------------------------
// NVIDIA DGX B200 (DGX B200 User Guide, "Introduction to the NVIDIA DGX B200 System"): 8x B200
// (sm100), 2 NVLink5 NVSwitch chips, 18 NVLink5 links per GPU, 9 to each chip (1.8 TB/s
// bidirectional per GPU = 18 x 50 GB/s per direction; 14.4 TB/s for the system); 8 single-port
// ConnectX-7 400 Gb/s compute NICs, 2 GPUs and 2 NICs per PCIe Gen5 switch (nvidia-smi topo on a
// DGX B200: GPU0/1 PIX to NIC0/1, GPUs 0-3 and NICs 0-3 on NUMA node 0); 2x Intel Xeon Platinum 8570
// (Emerald Rapids, family 6 model 0xCF: NCCL ERP_QPI_BW 40) joined by 4 UPI links at 20 GT/s
// (4 x 40 GB/s per direction, Intel product specifications).
// Not modelled: the 2 BlueField-3 DPUs (storage / in-band), NVMe.
//
//          nvs0 (9 links/GPU)           nvs1 (9 links/GPU)    NVLink5, 50 GB/s per link per
//             \_________________________/                     direction; model 40.1 per link
//     +------+------+------+------+------+------+------+     (18 links: 900 GB/s, model 721.8)
//    gpu0   gpu1   gpu2   gpu3   gpu4   gpu5   gpu6   gpu7   B200, sm100
//     |      |      |      |      |      |      |      |
//     +-pci0-+      +-pci1-+      +-pci2-+      +-pci3-+     PCIe Gen5 x16 switches
//     |      |      |      |      |      |      |      |
//    nic0   nic1   nic2   nic3   nic4   nic5   nic6   nic7   ConnectX-7 400 Gb/s
//    net0   net1   net2   net3   net4   net5   net6   net7   port d = rail d
//         pci0 + pci1                pci2 + pci3
//             cpu0 ========= UPI ========== cpu1              2x Xeon Platinum 8570
const char kDgxB200[] =
    "         nvs0 (9 links/GPU)           nvs1 (9 links/GPU)    NVLink5, 50 GB/s per link per\n"
    "            \\_________________________/                     direction; model 40.1 per link\n"
    "    +------+------+------+------+------+------+------+     (18 links: 900 GB/s, model 721.8)\n"
    "   gpu0   gpu1   gpu2   gpu3   gpu4   gpu5   gpu6   gpu7   B200, sm100\n"
    "    |      |      |      |      |      |      |      |\n"
    "    +-pci0-+      +-pci1-+      +-pci2-+      +-pci3-+     PCIe Gen5 x16 switches\n"
    "    |      |      |      |      |      |      |      |\n"
    "   nic0   nic1   nic2   nic3   nic4   nic5   nic6   nic7   ConnectX-7 400 Gb/s\n"
    "   net0   net1   net2   net3   net4   net5   net6   net7   port d = rail d\n"
    "        pci0 + pci1                pci2 + pci3\n"
    "            cpu0 ========= UPI ========== cpu1              2x Xeon Platinum 8570\n";

void build_dgx_b200(Topology* t) {
  build_dgx(t, DgxSpec{"dgx-b200", "8x B200, 2 NVSwitch, 8x ConnectX-7 400G, 2x Xeon 8570",
                       CpuVendor::kIntel, 6, 0xcf,
                       {"00000000,00ffffff,ffffffff,00000000,00ffffff,ffffffff",
                        "ffffffff,ff000000,00000000,ffffffff,ff000000,00000000"},
                       4, 40.0, 40.0,
                       {0x1b, 0x43, 0x52, 0x61, 0x9d, 0xc3, 0xd1, 0xdf},
                       {0x1a, 0x3c, 0x4d, 0x5c, 0x9a, 0xbc, 0xcc, 0xdc},
                       {0x18, 0x4b, 0x98, 0xca},
                       5, 100, "0x2901", 400000, "0x1021",
                       {9, 9}, kNvl5LinkBw, kNvlSm100Model, 5});
}

// ---- gb200-nvl72 ----------------------------------------------------------------------------------
// NVIDIA GB200 NVL72, one rack as NCCL sees it with multi-node NVLink (MNNVL: the ranks of one NVLink
// clique fuse their topologies into one system, NCCL 2.28.9 src/graph/topo.cc ncclTopoGetSystem, so
// the rack is one node to the algorithms). NVIDIA's GB200 NVL72 specification and the "Multi-Node
// NVLink Systems" tuning guide: 18 compute trays, each 2 Grace CPUs (arm64) and 4 B200 (sm100), each
// Grace with 2 GPUs over NVLink-C2C (900 GB/s bidirectional per Grace, taken here as 225 GB/s per
// direction per GPU: an assumption, only NIC traffic crosses it) and 2 ConnectX-7 400 Gb/s NICs on its
// PCIe Gen5 root (4 per tray); 9 NVLink switch trays of 2 NVLink5 switch chips: every GPU has 18
// NVLink5 links, one to each of the 18 chips (1.8 TB/s bidirectional per GPU, 130 TB/s for the
// rack). The two Graces of a tray are one host (one SYS link, NCCL ARM_BW 6; physical 300 GB/s per
// direction is an assumption); trays share nothing but NVLink, as separate hosts do.
// Each GPU also sits in its Grace's PCI tree (x16 Gen5), as NCCL's XML lists it; its routes to the
// CPU and the NICs take the wider C2C link. Not modelled: the BlueField-3 DPUs, NVMe, NCCL's P2C path
// type (cclab reports PHB for GPU -> C2C -> Grace -> NIC).
//
//      nvs0  nvs1  nvs2  ...  nvs17             18 NVLink5 switch chips (9 switch trays); one link
//        \____\_____\__ all-to-all __/           from every GPU to every chip: 18 x 50 GB/s per
//     +------+------+------+--- ... ---+------+  direction, model 18 x 40.1
//    gpu0   gpu1   gpu2   gpu3  ...  gpu70  gpu71   B200, sm100; tray k = gpu 4k..4k+3
//     \ c2c /       \ c2c /           \ c2c /
//      cpu0          cpu1     ...      cpu35        Grace; cpu 2k, 2k+1 = tray k (one SYS link)
//     /    \        /    \            /    \      PCIe Gen5
//   nic0  nic1    nic2  nic3  ...  nic70  nic71     ConnectX-7 400 Gb/s on the Grace's PCIe Gen5
//   net0  net1    net2  net3       net70  net71     port d = rail d
const char kGb200Nvl72[] =
    "     nvs0  nvs1  nvs2  ...  nvs17             18 NVLink5 switch chips (9 switch trays); one link\n"
    "       \\____\\_____\\__ all-to-all __/           from every GPU to every chip: 18 x 50 GB/s per\n"
    "    +------+------+------+--- ... ---+------+  direction, model 18 x 40.1\n"
    "   gpu0   gpu1   gpu2   gpu3  ...  gpu70  gpu71   B200, sm100; tray k = gpu 4k..4k+3\n"
    "    \\ c2c /       \\ c2c /           \\ c2c /\n"
    "     cpu0          cpu1     ...      cpu35        Grace; cpu 2k, 2k+1 = tray k (one SYS link)\n"
    "    /    \\        /    \\            /    \\      PCIe Gen5\n"
    "  nic0  nic1    nic2  nic3  ...  nic70  nic71     ConnectX-7 400 Gb/s on the Grace's PCIe Gen5\n"
    "  net0  net1    net2  net3       net70  net71     port d = rail d\n";

void build_gb200_nvl72(Topology* t) {
  constexpr int kTrays = 18, kSwitchChips = 18;
  constexpr double kC2cPerGpuBw = 225.0;  // GB/s per direction (see above)
  constexpr double kGraceSysBw = 300.0;   // GB/s per direction (see above)
  Machine m(t);
  int gpus[4 * kTrays];
  for (int tray = 0; tray < kTrays; ++tray) {
    int cpus[2];
    for (int c = 0; c < 2; ++c) {
      // 72 Neoverse V2 cores per Grace; the affinity mask names this host's cores only.
      cpus[c] = m.cpu(CpuVendor::kUnknown, 0, 0, c == 0 ? "00000000,000000ff,ffffffff" : "ffffffff,ffffff00,00000000",
                      CpuArch::kArm);
    }
    for (int c = 0; c < 2; ++c) t->nodes[cpus[c]].host_hash = 0x6b200000ull + static_cast<uint64_t>(tray);
    m.sys(cpus[0], cpus[1], kGraceSysBw, 1, 6.0);
    for (int c = 0; c < 2; ++c) {
      for (int k = 0; k < 2; ++k) {
        const int local = 2 * c + k;
        // PCI domain = tray (bus ids 000k:b:00.0; bus values above 0xff carry the domain).
        const int g = m.gpu(cpus[c], (tray << 8) | (0x01 + 0x10 * local), 100, 5, "0x2941");
        m.c2c(g, cpus[c], 10, kC2cPerGpuBw);
        gpus[4 * tray + local] = g;
      }
      for (int k = 0; k < 2; ++k) m.nic(cpus[c], (tray << 8) | (0x03 + 0x10 * (2 * c + k)), 5, 400000, "0x1021");
    }
  }
  int nvs[kSwitchChips];
  for (int i = 0; i < kSwitchChips; ++i) nvs[i] = m.nvswitch();
  for (int g = 0; g < 4 * kTrays; ++g) {
    for (int i = 0; i < kSwitchChips; ++i) m.nvlink(gpus[g], nvs[i], 1, kNvl5LinkBw, kNvlSm100Model, 5);
  }
  t->name = "gb200-nvl72";
  t->description = "72x B200 in one NVLink domain (18 trays x 2 Grace + 4 GPUs, 18 NVSwitch chips), 72x ConnectX-7 400G";
}

// ---- pcie-4gpu ------------------------------------------------------------------------------------
// A PCIe box: 4x A100 PCIe (sm80, no NVLink bridges) on 2 PCIe Gen4 switches under one Intel Xeon
// (Ice Lake-SP, family 6 model 0x6A); one ConnectX-6 100 Gb/s NIC on a CPU root port (Gen4 x16).
//
//                 cpu0                     Xeon (Ice Lake-SP), PCIe Gen4 root
//            /     |      \                (PCIe Gen4 x16 links)
//         pci0    pci1    nic0 - net0      PCIe Gen4 x16 switches; NIC 100 Gb/s on the CPU
//         /  \    /  \    (2 GPUs per switch)
//      gpu0 gpu1 gpu2 gpu3                 A100 PCIe, sm80, no NVLink
const char kPcie4Gpu[] =
    "                cpu0                     Xeon (Ice Lake-SP), PCIe Gen4 root\n"
    "           /     |      \\                (PCIe Gen4 x16 links)\n"
    "        pci0    pci1    nic0 - net0      PCIe Gen4 x16 switches; NIC 100 Gb/s on the CPU\n"
    "        /  \\    /  \\    (2 GPUs per switch)\n"
    "     gpu0 gpu1 gpu2 gpu3                 A100 PCIe, sm80, no NVLink\n";

void build_pcie_4gpu(Topology* t) {
  Machine m(t);
  int cpu = m.cpu(CpuVendor::kIntel, 6, 0x6a, "ffffffff");
  const int gpu_bus[4] = {0x1b, 0x1c, 0x3d, 0x3e};
  const int sw_bus[2] = {0x19, 0x3b};
  for (int s = 0; s < 2; ++s) {
    int sw = m.pci_switch(cpu, sw_bus[s], 4);
    for (int k = 0; k < 2; ++k) m.gpu(sw, gpu_bus[2 * s + k], 80, 4, "0x20f1");
  }
  m.nic(cpu, 0x5e, 4, 100000, "0x101b");
  t->name = "pcie-4gpu";
  t->description = "4x A100 PCIe on 2 PCIe Gen4 switches, 1x 100G NIC on the CPU";
}

// ---- pcie-8gpu-2socket ----------------------------------------------------------------------------
// A two-socket PCIe server: 2x Intel Xeon Platinum 8380 (Ice Lake-SP, family 6 model 0x6A: NCCL's
// SKL_QPI_BW 10) joined by 3 UPI links at 11.2 GT/s (3 x 22.4 GB/s per direction, Intel product
// specifications); each socket has 2 PCIe Gen4 switches x 2 A100 PCIe (sm80) and one ConnectX-6
// 100 Gb/s NIC on its first switch.
//
//              cpu0 =========== UPI =========== cpu1          2x Xeon Platinum 8380
//             /    \                           /    \        (PCIe Gen4 x16 links)
//          pci0    pci1                     pci2    pci3      PCIe Gen4 x16 switches
//         / | \    /  \                    / | \    /  \    NIC on each socket's first switch
//     gpu0 gpu1 nic0 gpu2 gpu3         gpu4 gpu5 nic1 gpu6 gpu7
//                |                               |
//               net0                            net1          100 Gb/s, one per socket
const char kPcie8Gpu2Socket[] =
    "             cpu0 =========== UPI =========== cpu1          2x Xeon Platinum 8380\n"
    "            /    \\                           /    \\        (PCIe Gen4 x16 links)\n"
    "         pci0    pci1                     pci2    pci3      PCIe Gen4 x16 switches\n"
    "        / | \\    /  \\                    / | \\    /  \\    NIC on each socket's first switch\n"
    "    gpu0 gpu1 nic0 gpu2 gpu3         gpu4 gpu5 nic1 gpu6 gpu7\n"
    "               |                               |\n"
    "              net0                            net1          100 Gb/s, one per socket\n";

void build_pcie_8gpu_2socket(Topology* t) {
  Machine m(t);
  int cpu[2];
  cpu[0] = m.cpu(CpuVendor::kIntel, 6, 0x6a, "00000000,ffffffff");
  cpu[1] = m.cpu(CpuVendor::kIntel, 6, 0x6a, "ffffffff,00000000");
  m.sys(cpu[0], cpu[1], 3 * 22.4, 3, 10.0);
  const int gpu_bus[8] = {0x1b, 0x1c, 0x3d, 0x3e, 0x9b, 0x9c, 0xbd, 0xbe};
  const int sw_bus[4] = {0x19, 0x3b, 0x99, 0xbb};
  const int nic_bus[2] = {0x1d, 0x9d};
  for (int s = 0; s < 4; ++s) {
    int sw = m.pci_switch(cpu[s / 2], sw_bus[s], 4);
    for (int k = 0; k < 2; ++k) m.gpu(sw, gpu_bus[2 * s + k], 80, 4, "0x20f1");
    if (s % 2 == 0) m.nic(sw, nic_bus[s / 2], 4, 100000, "0x101b");
  }
  t->name = "pcie-8gpu-2socket";
  t->description = "8x A100 PCIe on 2 sockets x 2 PCIe Gen4 switches, 2x 100G NIC";
}

// ---- nvlink-pairs ---------------------------------------------------------------------------------
// A workstation-class PCIe box: 4x RTX A6000 (GA102, sm86) on 2 PCIe Gen4 switches under one AMD
// EPYC 7443 (Milan, family 0x19 model 0x01); NVLink bridges join GPUs 0-1 and 2-3 with 4 NVLink3
// links each (112.5 GB/s bidirectional per bridge = 4 x 14.0625 GB/s per direction, RTX A6000
// datasheet; NCCL model 4 x SM86_NVLINK_BW 12.0 = 48); one ConnectX-6 100 Gb/s NIC on the CPU.
//
//                 cpu0                     AMD EPYC 7443, PCIe Gen4 root
//            /     |      \                (PCIe Gen4 x16 links)
//         pci0    pci1    nic0 - net0      PCIe Gen4 x16 switches; NIC 100 Gb/s on the CPU
//         /  \    /  \    (2 GPUs per switch)
//      gpu0=gpu1 gpu2=gpu3                 RTX A6000, sm86; = NVLink bridge (4 links)
const char kNvlinkPairs[] =
    "                cpu0                     AMD EPYC 7443, PCIe Gen4 root\n"
    "           /     |      \\                (PCIe Gen4 x16 links)\n"
    "        pci0    pci1    nic0 - net0      PCIe Gen4 x16 switches; NIC 100 Gb/s on the CPU\n"
    "        /  \\    /  \\    (2 GPUs per switch)\n"
    "     gpu0=gpu1 gpu2=gpu3                 RTX A6000, sm86; = NVLink bridge (4 links)\n";

void build_nvlink_pairs(Topology* t) {
  Machine m(t);
  int cpu = m.cpu(CpuVendor::kAmd, 0x19, 0x01, "ffffffff");
  const int gpu_bus[4] = {0x21, 0x22, 0x41, 0x42};
  const int sw_bus[2] = {0x1f, 0x3f};
  int gpus[4];
  for (int s = 0; s < 2; ++s) {
    int sw = m.pci_switch(cpu, sw_bus[s], 4);
    for (int k = 0; k < 2; ++k) gpus[2 * s + k] = m.gpu(sw, gpu_bus[2 * s + k], 86, 4, "0x2230");
  }
  m.nvlink(gpus[0], gpus[1], 4, kNvlBridgeSm86Bw, kNvlSm86Model, 3);
  m.nvlink(gpus[2], gpus[3], 4, kNvlBridgeSm86Bw, kNvlSm86Model, 3);
  m.nic(cpu, 0x61, 4, 100000, "0x101b");
  t->name = "nvlink-pairs";
  t->description = "4x RTX A6000 on 2 PCIe Gen4 switches, NVLink bridges 0-1 and 2-3, 1x 100G NIC";
}

// ---- pcie-1gpu -----------------------------------------------------------------------------------
// One GPU per machine (the set-up where NCCL 2.28.9 turns PAT on by default): an H100 PCIe (sm90) and a
// ConnectX-7 NDR 400 Gb/s NIC on one PCIe Gen5 x16 switch under an Intel Xeon (Sapphire Rapids, family
// 6 model 0x8F). With PRESET:N, N such machines on the rail fabric.
//
//            cpu0               Xeon (Sapphire Rapids), PCIe Gen5 root
//             |
//            pci0               PCIe Gen5 x16 switch
//           /    \    two x16 ports
//        gpu0    nic0 - net0    H100 PCIe (sm90); ConnectX-7 400 Gb/s
const char kPcie1Gpu[] =
    "           cpu0               Xeon (Sapphire Rapids), PCIe Gen5 root\n"
    "            |\n"
    "           pci0               PCIe Gen5 x16 switch\n"
    "          /    \\\n"
    "       gpu0    nic0 - net0    H100 PCIe (sm90); ConnectX-7 400 Gb/s\n";

void build_pcie_1gpu(Topology* t) {
  Machine m(t);
  int cpu = m.cpu(CpuVendor::kIntel, 6, 0x8f, "ffffffff");
  int sw = m.pci_switch(cpu, 0x17, 5);
  m.gpu(sw, 0x19, 90, 5, "0x2331");
  m.nic(sw, 0x1a, 5, 400000, "0x1021");
  t->name = "pcie-1gpu";
  t->description = "1x H100 PCIe and 1x NDR 400G NIC on one PCIe Gen5 switch (one GPU per machine)";
}

struct Preset {
  const char* name;
  void (*build)(Topology*);
  const char* drawing;
};

const Preset kPresets[] = {
    {"dgx-a100", build_dgx_a100, kDgxA100},
    {"dgx-h100", build_dgx_h100, kDgxH100},
    {"dgx-b200", build_dgx_b200, kDgxB200},
    {"gb200-nvl72", build_gb200_nvl72, kGb200Nvl72},
    {"pcie-4gpu", build_pcie_4gpu, kPcie4Gpu},
    {"pcie-8gpu-2socket", build_pcie_8gpu_2socket, kPcie8Gpu2Socket},
    {"nvlink-pairs", build_nvlink_pairs, kNvlinkPairs},
    {"pcie-1gpu", build_pcie_1gpu, kPcie1Gpu},
};

const Preset* find_preset(const std::string& name) {
  for (const Preset& p : kPresets) {
    if (name == p.name) return &p;
  }
  return nullptr;
}

std::string preset_list() {
  std::string s;
  for (const Preset& p : kPresets) {
    if (!s.empty()) s += ", ";
    s += p.name;
  }
  return s;
}

constexpr int kMaxMachines = 4096;

std::string strip_machine_prefix(const std::string& name) {
  return name.compare(0, 3, "m0.") == 0 ? name.substr(3) : name;
}

std::string fmt(double v) {
  char b[32];
  snprintf(b, sizeof b, "%g", v);
  return b;
}

}  // namespace

bool replicate_machines(Topology* topo, int machines, const FabricSpec& fabric, std::string* error) {
  auto fail = [&](const std::string& why) {
    if (error) *error = why;
    return false;
  };
  if (machines < 1 || machines > kMaxMachines) {
    return fail("machine count " + std::to_string(machines) + " out of range 1.." +
                std::to_string(kMaxMachines));
  }
  if (!(fabric.oversubscription > 0) || !std::isfinite(fabric.oversubscription)) {
    return fail("fabric oversubscription must be > 0, got " + fmt(fabric.oversubscription));
  }
  if (fabric.machines_per_leaf < 1) {
    return fail("fabric machines_per_leaf must be >= 1, got " +
                std::to_string(fabric.machines_per_leaf));
  }
  if (!(fabric.switch_latency_us >= 0) || !(fabric.cable_latency_us >= 0)) {
    return fail("fabric latencies must be >= 0");
  }
  for (const TopoNode& n : topo->nodes) {
    if (n.machine != 0) {
      return fail("replicate_machines needs a one-machine model; node " + n.name + " is on machine " +
                  std::to_string(n.machine));
    }
  }
  const int nb = static_cast<int>(topo->nodes.size());
  const int lb = static_cast<int>(topo->links.size());
  for (TopoNode& n : topo->nodes) n.name = "m0." + strip_machine_prefix(n.name);
  const std::vector<TopoNode> base_nodes = topo->nodes;
  const std::vector<TopoLink> base_links = topo->links;
  for (int m = 1; m < machines; ++m) {
    const std::string prefix = "m" + std::to_string(m) + ".";
    for (int k = 0; k < nb; ++k) {
      TopoNode n = base_nodes[k];
      n.machine = m;
      n.rank = -1;
      n.name = prefix + n.name.substr(3);
      if (n.guid != 0) n.guid += static_cast<uint64_t>(m) << 16;
      topo->add_node(n);
    }
    const int off = m * nb;
    for (int l = 0; l < lb; ++l) {
      const TopoLink& a = base_links[l];
      if (a.reverse >= 0 && a.reverse < l) continue;  // added with its mirror
      int i = topo->connect(a.from + off, a.to + off, a.type, a.bw, a.latency_us, a.lanes,
                            a.generation, a.model_bw);
      if (a.reverse >= 0 && a.reverse < lb) {
        const TopoLink& r = base_links[a.reverse];
        TopoLink& rr = topo->links[topo->links[i].reverse];
        rr.bw = r.bw;
        rr.model_bw = r.model_bw;
        rr.latency_us = r.latency_us;
        rr.lanes = r.lanes;
      }
    }
  }
  topo->machines = machines;
  topo->fabric = fabric;
  topo->fabric.machines = machines;

  if (machines > 1) {
    // Rails: the NET devs of a machine; leaf per (rail, group); one spine node.
    std::map<int, std::vector<int>> rails;  // dev -> NET nodes, machine order
    for (int i = 0; i < static_cast<int>(topo->nodes.size()); ++i) {
      const TopoNode& n = topo->nodes[i];
      if (n.type == TopoNodeType::kNet) rails[n.dev].push_back(i);
    }
    if (rails.empty()) return fail("several machines need NET nodes to join them");
    const int mpl = fabric.machines_per_leaf;
    const int groups = (machines + mpl - 1) / mpl;
    const double cable = fabric.cable_latency_us, sw = fabric.switch_latency_us;
    int nswitch = 0;
    TopoNode spine;
    spine.type = TopoNodeType::kNetSwitch;
    spine.machine = -1;
    spine.tier = 1;
    spine.name = "fabric.spine.0";
    spine.dev = nswitch++;
    std::vector<std::pair<int, double>> leaves;  // leaf node, uplink bw
    std::vector<int> leaf_lanes;
    for (const auto& rail : rails) {
      for (int g = 0; g < groups; ++g) {
        TopoNode leaf;
        leaf.type = TopoNodeType::kNetSwitch;
        leaf.machine = -1;
        leaf.tier = 0;
        leaf.rail = rail.first;
        leaf.dev = nswitch++;
        leaf.name = "fabric.leaf.r" + std::to_string(rail.first) + "." + std::to_string(g);
        int li = topo->add_node(leaf);
        double down = 0;
        int members = 0;
        for (int net : rail.second) {
          const TopoNode& nn = topo->nodes[net];
          if (nn.machine / mpl != g) continue;
          double mbps = nn.net_speed_mbps > 0 ? nn.net_speed_mbps : 10000;  // NCCL's default
          double bw = mbps / 8000.0;
          int l = topo->connect(net, li, LinkType::kNet, bw, cable, 1, 0, bw);
          topo->links[topo->links[l].reverse].latency_us = cable + sw;
          down += bw;
          ++members;
        }
        const double up = down / fabric.oversubscription;
        leaves.push_back({li, up});
        leaf_lanes.push_back(
            std::max(1, static_cast<int>(std::lround(members / fabric.oversubscription))));
      }
    }
    int si = topo->add_node(spine);
    for (size_t k = 0; k < leaves.size(); ++k) {
      topo->connect(leaves[k].first, si, LinkType::kNet, leaves[k].second, cable + sw, leaf_lanes[k],
                    0, leaves[k].second);
    }
  }
  topo->compute_paths();
  return true;
}

bool make_preset_topology(const std::string& preset, int machines, const FabricSpec& fabric,
                          Topology* out, std::string* error) {
  const Preset* p = find_preset(preset);
  if (p == nullptr) {
    if (error) *error = "unknown topology preset '" + preset + "' (valid: " + preset_list() + ")";
    return false;
  }
  if (machines < 1) {
    if (error) *error = "machine count must be >= 1, got " + std::to_string(machines);
    return false;
  }
  Topology t;
  p->build(&t);
  if (!replicate_machines(&t, machines, fabric, error)) return false;
  if (machines > 1) {
    char buf[160];
    snprintf(buf, sizeof buf, " x %d machines, rail-optimised fat tree (%d per leaf, %g:1)", machines,
             fabric.machines_per_leaf, fabric.oversubscription);
    t.description += buf;
  }
  *out = std::move(t);
  return true;
}

std::vector<std::string> preset_names() {
  std::vector<std::string> v;
  for (const Preset& p : kPresets) v.push_back(p.name);
  return v;
}

std::string preset_drawing(const std::string& preset) {
  const Preset* p = find_preset(preset);
  if (p == nullptr) return "";
  Topology t;
  p->build(&t);
  return std::string(p->name) + ": " + t.description + "\n" + p->drawing;
}

bool parse_topo_spec(const std::string& spec, std::string* preset, int* machines, std::string* error) {
  auto fail = [&](const std::string& why) {
    if (error) *error = why;
    return false;
  };
  const size_t colon = spec.find(':');
  const std::string name = spec.substr(0, colon);
  if (find_preset(name) == nullptr) {
    return fail("unknown topology preset '" + name + "' in '" + spec + "' (valid: " + preset_list() +
                ")");
  }
  int count = 1;
  if (colon != std::string::npos) {
    const std::string num = spec.substr(colon + 1);
    bool digits = !num.empty() && num.size() <= 9;
    for (char c : num) digits = digits && c >= '0' && c <= '9';
    if (!digits) {
      return fail("bad machine count '" + num + "' in '" + spec + "' (expected PRESET or PRESET:N, " +
                  "N a whole number 1.." + std::to_string(kMaxMachines) + ")");
    }
    long v = std::strtol(num.c_str(), nullptr, 10);
    if (v < 1 || v > kMaxMachines) {
      return fail("machine count " + num + " in '" + spec + "' out of range 1.." +
                  std::to_string(kMaxMachines));
    }
    count = static_cast<int>(v);
  }
  if (preset) *preset = name;
  if (machines) *machines = count;
  return true;
}

Topology make_virtual_topology(int gpus, int machines) {
  gpus = std::max(gpus, 1);
  machines = std::max(1, std::min(machines, kMaxMachines));
  Topology t;
  Machine m(&t);
  int cpu = m.cpu(CpuVendor::kIntel, 6, 0x55, "ffffffff");
  int sw = m.pci_switch(cpu, 0x10, 4);
  for (int g = 0; g < gpus; ++g) m.gpu(sw, 0x11 + g, 80, 4, "");
  m.nic(sw, 0x11 + gpus, 4, 100000, "");
  t.name = "virtual";
  t.description = std::to_string(gpus) + "x virtual GPU (sm80) on one PCIe Gen4 switch, 1x 100G NIC";
  std::string error;
  FabricSpec fabric;
  replicate_machines(&t, machines, fabric, &error);  // cannot fail: valid fabric, counts clamped
  if (machines > 1) t.description += " x " + std::to_string(machines) + " machines";
  return t;
}

}  // namespace cclab
