// runtime/graph/topo.h - the topology model: what is connected to what, how fast, how far.
//
// One data structure serves the channel search (search.h), the tuner (tuning.h), the simulator (sim/,
// which turns every node into a SimGrid host or router and every link into a SimGrid link) and the
// visualiser (which draws it). It is NCCL's ncclTopoSystem (src/graph/topo.h) with three additions:
//   - several machines ("nodes" in NCCL's vocabulary; "machine" here so that "node" can mean a vertex
//     of the graph) in one model, joined by network switches (kNetSwitch) of a rail-optimised fat tree;
//   - each link carries its physical rate, latency, lane count and generation (for the simulator) next
//     to the bandwidth NCCL's own model assigns it (model_bw, for the search and tuner, so that cclab's
//     choices are NCCL's choices);
//   - every physical link is two directed TopoLinks, one per direction, each with its own bandwidth.
//
// Numbering follows NCCL where NCCL has a number: node types GPU=0 PCI=1 NVS=2 CPU=3 NIC=4 NET=5,
// link types LOC=0 NVL=1 C2C=3 PCI=4 SYS=9 NET=10 and path types LOC=0 ... DIS=11 (NCCL 2.28.9,
// src/graph/topo.h), so logs and dumps compare with NCCL's line by line.
//
// Sources of a Topology: presets (topo_presets.cc), NCCL's topology XML (topo_xml.cc), the machine
// cclab runs on (detect.h, which writes that XML from sysfs and NVML), and the plain virtual machine
// the host backend uses when nothing else is asked for (make_virtual_topology).
//
// Units everywhere: bandwidth in GB/s (1e9 bytes/s) per direction, latency in microseconds.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace cclab {

enum class TopoNodeType : int {
  kGpu = 0,
  kPci = 1,        // PCIe switch or bridge (NCCL's PCI)
  kNvs = 2,        // NVSwitch
  kCpu = 3,        // a CPU socket / NUMA node with its PCIe root complex (NCCL's CPU)
  kNic = 4,        // the NIC's PCI function (NCCL's NIC)
  kNet = 5,        // a network port of a NIC (NCCL's NET): what leaves the machine
  kNetSwitch = 6,  // cclab: an InfiniBand/Ethernet switch of the fabric between machines
};
constexpr int kNumTopoNodeTypes = 7;

enum class LinkType : int {
  kLoc = 0,  // a node to itself / NIC function to its port
  kNvl = 1,  // NVLink (GPU-GPU bridge, GPU-NVSwitch)
  kC2c = 3,  // chip to chip (Grace-Hopper)
  kPci = 4,  // PCIe
  kSys = 9,  // the SMP interconnect between CPU sockets (QPI/UPI/xGMI)
  kNet = 10, // a network cable (NIC port to switch, switch to switch)
};

enum class PathType : int {
  kLoc = 0,  // same node
  kNvl = 1,  // NVLink only (directly or through NVSwitch)
  kNvb = 2,  // NVLink through an intermediate GPU
  kC2c = 3,
  kPix = 4,  // at most one PCIe bridge/switch
  kPxb = 5,  // several PCIe bridges, not the host bridge
  kP2c = 6,
  kPxn = 7,  // to a NIC through an intermediate GPU (NVLink then PCIe)
  kPhb = 8,  // through a PCIe host bridge (a CPU)
  kSys = 9,  // across the inter-socket link
  kNet = 10, // across the network (different machines)
  kDis = 11, // disconnected
};

// NCCL's spellings: "GPU", "PCI", "NVS", "CPU", "NIC", "NET", "SWITCH"; "LOC", "NVL", "C2C", "PCI",
// "SYS", "NET" for links; "LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS", "NET",
// "DIS" for paths.
const char* topo_node_type_name(TopoNodeType t);
const char* link_type_name(LinkType t);
const char* path_type_name(PathType t);
// One NVLink's bandwidth in NCCL's model, GB/s, for a GPU of compute capability sm (ncclTopoNVLinkBw:
// sm90 20.6, sm80 20.0, sm86 12.0, sm100 40.1).
double nvlink_model_bw(int sm);
// Case-insensitive; false when unknown. (NCCL_P2P_LEVEL and the graph XML use these names.)
bool path_type_from_name(const char* name, PathType* out);

// CPU identity, as NCCL's topology records it; the tuner needs vendor (net overhead) and the search
// the inter-socket bandwidth that follows from arch/vendor/model.
enum class CpuArch : int { kUnknown = 0, kX86 = 1, kPower = 2, kArm = 3 };
enum class CpuVendor : int { kUnknown = 0, kIntel = 1, kAmd = 2, kZhaoxin = 3 };

struct TopoNode {
  TopoNodeType type = TopoNodeType::kGpu;
  int machine = 0;        // which server; -1 for network switches
  int dev = -1;           // GPU: CUDA/NVML device index on its machine; NIC/NET: net device index;
                          // CPU: NUMA id; NVS/PCI/switch: index among its kind on the machine/fabric
  std::string name;       // unique and readable, e.g. "m0.gpu3", "m1.nvs2", "fabric.leaf.r3.0"
  int64_t busid = -1;     // PCI bus id as NCCL packs it (domain:bus:dev.fn -> 0xDDDDBBddf), -1 none

  // kGpu
  int rank = -1;          // the rank this GPU plays (-1: none); set when a communicator maps onto it
  int sm = 0;             // compute capability x10: 70, 80, 86, 90, 100
  bool gdr = true;        // GPUDirect RDMA to NICs on its machine

  // kNic / kNet
  double net_speed_mbps = 0;  // port line rate, Mb/s as in NCCL's XML (400000 for NDR)
  double net_latency_us = 0;
  int port = 1;
  uint64_t guid = 0;
  int maxconn = 0;
  bool coll = false;
  std::string net_name;   // "mlx5_0"

  // kCpu
  CpuArch arch = CpuArch::kUnknown;
  CpuVendor vendor = CpuVendor::kUnknown;
  int familyid = 0, modelid = 0;
  std::string affinity;   // hex mask as in the XML; informational
  uint64_t host_hash = 0; // the host this CPU belongs to (NCCL's <cpu host_hash>): CPUs of one machine
                          // model are joined by SYS links only within one host (ncclTopoConnectCpus), so
                          // a rack of hosts fused by multi-node NVLink (gb200-nvl72) keeps its trays apart

  // kPci / kGpu / kNic / kNvs: PCI identity, written back to XML as read
  int pci_class = 0;      // 0x060400 bridge, 0x030200 GPU, 0x020700 IB NIC, 0x068000 NVSwitch
  std::string link_speed; // "16.0 GT/s PCIe"
  int link_width = 0;     // lanes: 16
  std::string vendor_id, device_id, subsystem_vendor, subsystem_device;  // "0x10de"; may be empty

  // kNetSwitch
  int tier = 0;           // 0 = leaf (NICs attach), 1 = spine
  int rail = -1;          // leaf switches of a rail-optimised fabric: the rail they serve

  std::vector<int> out;   // indices into Topology::links of the links leaving this node
};

struct TopoLink {
  int from = -1, to = -1; // node indices
  int reverse = -1;       // index of the link in the opposite direction
  LinkType type = LinkType::kPci;
  double bw = 0;          // physical rate in this direction, GB/s (what the simulator uses)
  double model_bw = 0;    // the bandwidth NCCL's topology would give this link, GB/s (search/tuner)
  double latency_us = 0;  // one-way propagation + switching latency
  int lanes = 1;          // NVLink: links bundled into this edge; PCIe: width; network: 1
  int generation = 0;     // NVLink 1-5, PCIe 3-6, 0 when meaningless
};

// A route from one node to another: the links in order, its NCCL type and its bottleneck bandwidth
// (the minimum model_bw along it; bw_physical the minimum bw).
struct TopoPath {
  PathType type = PathType::kDis;
  double bw = 0;          // NCCL's model bandwidth of the bottleneck link
  double bw_physical = 0; // physical bandwidth of the bottleneck link
  double latency_us = 0;  // sum of the links' latencies
  std::vector<int> links; // link indices, from source to destination; empty for kLoc and kDis
  int hops() const { return static_cast<int>(links.size()); }
};

// The multi-machine fabric: NIC i of every machine plugs into a leaf switch of rail i (rail-optimised);
// leaves connect to a spine tier. oversubscription = (leaf down bandwidth) / (leaf up bandwidth).
struct FabricSpec {
  int machines = 1;
  double oversubscription = 1.0;
  int machines_per_leaf = 32;    // leaf radix / 2 for a non-blocking 64-port switch
  double switch_latency_us = 0.3;  // one IB switch hop (port to port), NDR class
  double cable_latency_us = 0.05;  // a few metres of cable
};

class Topology {
 public:
  std::vector<TopoNode> nodes;
  std::vector<TopoLink> links;
  int machines = 1;
  FabricSpec fabric;
  std::string name;        // "dgx-h100", "virtual", or the XML file it came from
  std::string description; // one line for logs: "8x H100 SXM, 4 NVSwitch, 8x NDR 400G"

  // Building. add_node returns the new node's index; connect adds both directions (bw per
  // direction; model_bw defaults to bw) and returns the index of the a->b link.
  int add_node(TopoNode node);
  int connect(int a, int b, LinkType type, double bw, double latency_us, int lanes = 1,
              int generation = 0, double model_bw = -1);

  // Queries. Lists are in index order, which for GPUs and NICs of one machine is dev order.
  std::vector<int> nodes_of(TopoNodeType type, int machine = -1) const;  // -1: every machine
  std::vector<int> gpus(int machine = -1) const { return nodes_of(TopoNodeType::kGpu, machine); }
  std::vector<int> nets(int machine = -1) const { return nodes_of(TopoNodeType::kNet, machine); }
  int gpus_per_machine() const;  // GPUs on machine 0 (every machine has the same count)
  int find(const std::string& name) const;  // -1 if none
  // GPU node of (machine, dev), -1 if none.
  int gpu_node(int machine, int dev) const;
  // NET node of (machine, dev) (NCCL's NET/dev: the port index on its machine), -1 if none.
  int net_node(int machine, int dev) const;
  int link_between(int a, int b) const;     // first a->b link index, -1 if none

  // Paths. compute_paths() finds, from every GPU and NET node, the best route to every GPU, NET and
  // CPU node (NCCL's ncclTopoComputePaths: fewest hops among the widest, NVLink through a GPU only as
  // NVB, PCIe classified PIX/PXB/PHB/SYS, different machines NET through the fabric). Must be called
  // after the last add_node/connect and before path(); the builders below call it.
  void compute_paths();
  // The route from node a to node b (a a GPU or NET node). A path of type kDis when none exists.
  const TopoPath& path(int a, int b) const;
  // The NET node by which traffic from or to node `node` crosses machines in path() (its default NIC:
  // for a GPU the NET of its rail, see topo_paths.cc), -1 when none.
  int exit_net(int node) const;
  // The route from GPU a to GPU b on another machine that leaves a's machine by NET node `exit` and
  // enters b's by NET node `entry` (-1: that end's exit_net, as path() takes): a -> exit within a's
  // machine, the fabric from exit to entry, entry -> b within b's machine; type NET. This is the route
  // of a network connection that NCCL opens on the NICs its channel search chose (a ring channel's
  // NET/n at both ends, ncclTopoGetNetDev). kDis when a NET is not on its end's machine or the parts
  // do not join; a and b on one machine: path(a, b), whatever the NETs.
  const TopoPath& path_via(int a, int b, int exit, int entry) const;
  // NCCL's PXN for a point-to-point send from GPU a to GPU b on another machine (ncclTopoGetNetDev): the
  // NIC closest to the GPU of a's machine with b's dev (b's rail), which a reaches
  //   level 2 (NCCL_P2P_PXN_LEVEL's default): through that NIC's local GPU when it is not a, reaches a
  //     over NVLink and its NIC within PCIe switches or C2C (NCCL_PXN_C2C 1);
  //   level 1 ("PXN if needed"): directly when a's own path to it stays within PCIe switches (PIX, PXB,
  //     P2C), else through the NIC's local GPU as above (NCCL's PATH_PXN, ncclTopoGetIntermediateRank).
  // Returns the intermediate GPU (-1: none) and sets *net to the NIC's NET node when the send leaves by
  // it; *net untouched and -1 when the send takes a's own NIC (same machine, b's rail is a's, no path).
  int pxn_via(int a, int b, int* net, int level = 2) const;
  // The NIC of GPU b's rail on GPU a's machine: the NET closest to the GPU of a's machine with b's dev
  // (ncclTopoGetLocalNet of that GPU). -1 on one machine or where there is none.
  int rail_net(int a, int b) const;

  // Consistency check: every link's reverse is its mirror, GPUs have dev 0..n-1 on every machine, every
  // machine has the same number of GPUs, NVLink targets exist ... false with *error describing the
  // first problem.
  bool validate(std::string* error) const;

  // Human-readable dump: one line per node with its links, then the GPU x GPU and GPU x NET path
  // matrices of machine 0 ("NVL/370.8"), as `cclab topo` prints and NCCL_DEBUG=INFO logs it.
  std::string describe() const;
  std::string describe_paths(int machine = 0) const;

 private:
  // Paths inside a machine are computed by compute_paths() for every GPU and NET source:
  // paths_[source][k] is the path to the k-th node of the source's machine (local_index_[dest] == k);
  // empty rows for nodes that are not sources. Paths that cross machines are composed on first use by
  // path() (GPU -> exit NET -> fabric -> entry NET -> destination) and kept in cache_; a 128 x 8 GPU
  // model would need ~10^7 precomputed paths otherwise. path() may run on several threads at once.
  std::vector<std::vector<TopoPath>> paths_;
  std::vector<int> local_index_;  // node -> its position among the nodes of its machine
  std::vector<int> exit_net_;     // node -> the NET node traffic from/to it crosses machines by, -1 none
  class PathCache {               // a copy of a Topology starts with an empty cache
   public:
    struct Impl;
    PathCache();
    PathCache(const PathCache&);
    PathCache& operator=(const PathCache&);
    ~PathCache();
    Impl* get() const { return impl_.get(); }
    void reset();
   private:
    std::unique_ptr<Impl> impl_;
  };
  PathCache cache_;
  TopoPath disconnected_;
  const TopoPath& remote_path(int a, int b) const;
  // a -> ea -> fabric -> eb -> b (eb == b when b is a network switch), cached.
  const TopoPath& compose_path(int a, int ea, int eb, int b) const;
};

// ---- sources ------------------------------------------------------------------------------------

// Built-in machines (topo_presets.cc): "dgx-a100", "dgx-h100", "pcie-4gpu", "pcie-8gpu-2socket",
// "nvlink-pairs". machines > 1 replicates the machine and joins the copies with the rail-optimised
// fat tree of `fabric` (its machines field is overwritten). Returns false with *error naming the
// presets when the name is unknown, or when machines < 1.
bool make_preset_topology(const std::string& preset, int machines, const FabricSpec& fabric,
                          Topology* out, std::string* error);
std::vector<std::string> preset_names();
// One paragraph per preset (the ASCII drawing of its doc comment), for `cclab topo --list`.
std::string preset_drawing(const std::string& preset);

// Parses "PRESET" or "PRESET:MACHINES" (CCLAB_TOPO's syntax).
bool parse_topo_spec(const std::string& spec, std::string* preset, int* machines, std::string* error);

// Turns a one-machine model (machine 0 only, e.g. as read from NCCL's XML) into `machines` copies of
// it joined by the rail-optimised fat tree of `fabric` (its machines field is overwritten), exactly as
// make_preset_topology does: node names get the prefix "m<i>." (an existing "m0." prefix is replaced),
// NET port d of every machine plugs into rail d's leaf. Ends with compute_paths(). False with *error
// when machines < 1, the fabric is invalid (oversubscription <= 0, machines_per_leaf < 1, negative
// latencies) or *topo already has several machines or network switches.
bool replicate_machines(Topology* topo, int machines, const FabricSpec& fabric, std::string* error);

// The host backend's default when no topology is asked for: `gpus` virtual GPUs per machine (sm 80,
// no NVLink) under one PCIe switch of one CPU, one NIC per machine, `machines` machines.
Topology make_virtual_topology(int gpus, int machines);

// NCCL topology XML (topo_xml.cc). read_topology_xml parses NCCL's format (one machine: <system
// version="1"> with <cpu>, <pci>, <gpu>, <nvlink>, <nic>, <net> elements; cclab adds an optional
// <fabric machines= oversubscription= .../> child of <system> for multi-machine models). Errors name
// file:line and what is wrong (truncated file, unknown element, bad number, dangling NVLink target,
// PCI cycle, ...); *out is untouched on error. write_topology_xml writes machine 0 (plus <fabric>
// when machines > 1) so that reading it back gives the same model.
bool read_topology_xml(const std::string& path, Topology* out, std::string* error);
bool read_topology_xml_string(const std::string& text, const std::string& name_for_errors,
                              Topology* out, std::string* error);
bool write_topology_xml(const Topology& topo, const std::string& path, std::string* error);
std::string topology_xml_string(const Topology& topo);

// PCI bus ids as NCCL writes them ("0000:18:00.0" from the packed int64 0x18000) and reads them
// ("dddd:bb:dd.f", a domain of 1 to 8 hex digits, any case); parse_pci_busid is false when malformed.
std::string pci_busid_string(int64_t busid);
bool parse_pci_busid(const char* text, int64_t* out);

// `s` as XML attribute or text content: & < > " ' as entities.
std::string xml_escape(const std::string& s);

// Writes `text` to `path` (created or truncated); false with *error = "PATH: what went wrong".
bool write_text_file(const std::string& path, const std::string& text, std::string* error);
// Reads the whole of `path` into *text; false with *error = "PATH: cannot open: No such file or
// directory" (or "PATH: read error").
bool read_text_file(const std::string& path, std::string* text, std::string* error);

}  // namespace cclab
