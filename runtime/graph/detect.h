// runtime/graph/detect.h - the topology of the machine cclab runs on, found the way NCCL's
// ncclTopoGetSystem finds it (NCCL 2.28.9 src/graph/xml.cc, topo.cc): Linux sysfs for the PCIe tree,
// NUMA nodes and NICs, NVML for NVLink. The result is NCCL's topology XML, which read_topology_xml
// turns into the same Topology the presets build, so a detected machine and a preset feed one model.
//
//   DetectOptions o;                       // sysfs root "/sys", every NVIDIA GPU found there
//   o.sysfs_root = "/tmp/fake-sys";        // or CCLAB_SYSFS_ROOT (detect_sysfs_root())
//   o.gpus = {{0x18000, 90}};              // or exactly these GPUs (bus id, sm), as the CUDA backend does
//   Topology t;
//   DetectResult r;
//   if (!detect_topology(o, &t, &r, &error)) ...  // r.xml, r.summary, r.warnings say what was found
//
// [SECTION] What is read (paths below the sysfs root)
//   bus/pci/devices/<busid>           symlink into devices/pci<domain:bus>/...: the device's real PCI path
//   <device>/class vendor device subsystem_vendor subsystem_device max_link_speed max_link_width numa_node
//   class/infiniband/<dev>/device     the HCA's PCI function; ports/<p>/{state,rate,link_layer}
//   class/net/<if>/{device,speed,operstate}   Ethernet NICs, used only when no InfiniBand/RoCE port is up
//   devices/system/node/node<N>/cpumap, cpulist       a CPU's affinity (and its CPUs, for the summary)
//   module/nvidia_peermem, module/nv_peer_mem          GPUDirect RDMA available (NET gdr="1")
//   cpuinfo (under the root; /proc/cpuinfo when the root is /sys)   CPU vendor, family, model, arch
// NVLink comes from NVML (libnvidia-ml.so.1, loaded with dlopen at run time; NvmlApi below).
//
// [SECTION] NCCL's rules, as applied here
//   - A GPU or NIC hangs below the PCI node two levels up its path: a PCIe switch is an upstream port
//     with downstream ports below it, and the upstream port stands for the whole switch; root ports
//     are skipped, and where the walk meets a path component that is not a bus id (devices/pci0000:00)
//     it reaches the CPU of the top node's numa_node.
//   - Broadcom PEX Gen4/Gen5 switches in base mode (vendor 0x1000, device 0xc010/0xc030, subsystem
//     vendor 0x1000) show two switch levels but switch at full bandwidth: a sub-switch of the same
//     kind is merged into its parent (NCCL's ncclTopoFlattenBcmSwitches).
//   - link_speed / link_width of a node: the smaller of its own max_link_* and its upstream port's.
//   - The PCI functions of one NIC (mlx5_0 on .0, mlx5_1 on .1) are one NIC with a NET per port;
//     ports that are not ACTIVE are skipped (NCCL's IB plugin).
//   - NVLink: per GPU, links 0 .. max-1 (max 4 for sm6x, 6 sm7x, 12 sm8x, 18 sm90+) that can carry
//     P2P and are active; links to the same remote bus id are one <nvlink count=...>. The remote's
//     class comes from sysfs; a remote sysfs does not know is an NVSwitch (tclass 0x068000), as in
//     NCCL. Links to GPUs outside the modelled set are dropped.
//   - GPUs are numbered (dev) in PCI bus id order; NET devs in InfiniBand device name order, ports
//     in order.
//
// Bad input never crashes: a missing sysfs root or a GPU whose PCI path cannot be resolved is an error
// naming the path; unreadable or garbage attribute files are warnings naming the file, and the value
// falls back to NCCL's default.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph/topo.h"

namespace cclab {

// NVML, as much of it as detection needs. Each call returns false when NVML answers with an error
// (*why: what failed). `dev` is an index handed out by device_handle.
class NvmlApi {
 public:
  virtual ~NvmlApi() = default;
  virtual std::string name() const = 0;  // for logs: "libnvidia-ml.so.1", "fake"
  virtual bool device_handle(const std::string& busid, int* dev, std::string* why) = 0;
  virtual bool compute_capability(int dev, int* major, int* minor, std::string* why) = 0;
  virtual bool nvlink_p2p_supported(int dev, unsigned link, bool* supported, std::string* why) = 0;
  virtual bool nvlink_active(int dev, unsigned link, bool* active, std::string* why) = 0;
  // The PCI bus id NVML reports for the far end of the link ("00000000:07:00.0").
  virtual bool nvlink_remote_busid(int dev, unsigned link, std::string* busid, std::string* why) = 0;
};

// libnvidia-ml.so.1 through dlopen, initialised; nullptr with *why when it cannot be loaded or
// initialised (no driver, no GPU). Only the few NVML types and functions detection calls are declared
// (detect_nvml.cc), so cclab needs neither nvml.h nor a link to the library.
std::unique_ptr<NvmlApi> open_nvml(std::string* why);

struct DetectGpu {
  int64_t busid = -1;  // NCCL's packed domain:bus:dev.fn
  int sm = 0;          // compute capability x10; 0 = ask NVML
};

struct DetectOptions {
  std::string sysfs_root = "/sys";
  std::string cpuinfo;          // "": /proc/cpuinfo when sysfs_root is /sys, else <sysfs_root>/cpuinfo
  std::vector<DetectGpu> gpus;  // the GPUs to model; empty: every NVIDIA GPU found under the root
  bool use_nvml = true;         // false: no NVLink detection
  NvmlApi* nvml = nullptr;      // nullptr (and use_nvml): open_nvml(); a test passes its fake
  int default_sm = 80;          // sm of a GPU neither `gpus` nor NVML gives one for (with a warning)
};

struct DetectResult {
  std::string xml;                    // NCCL topology XML of what was found
  std::string summary;                // one line per CPU, PCI switch, GPU and NIC port found
  std::vector<std::string> warnings;  // problems met (a file that could not be read, NVML errors)
  std::vector<std::string> notes;     // assumptions made (NUMA node unknown, speed unknown, ...)
  std::vector<int64_t> gpu_busids;    // the GPUs, in dev order
  std::string nvml;                   // the NVML used ("libnvidia-ml.so.1", "fake"), or why none
  int numa_nodes = 0, nets = 0;       // NUMA nodes under devices/system/node, NET ports found
};

// The sysfs root to use: $CCLAB_SYSFS_ROOT if set and not empty, else "/sys".
std::string detect_sysfs_root();

// Walks sysfs (and NVML) into NCCL's topology XML (*result). False with *error naming the path when
// the root cannot be read, a requested GPU's bus id is malformed or its PCI path cannot be resolved.
// Finding no GPU is not an error (result->gpu_busids is empty).
bool detect_system(const DetectOptions& options, DetectResult* result, std::string* error);

// detect_system, then read_topology_xml_string into *out (name "detected"). False with *error also
// when no GPU was found (a model needs one) or the XML does not make a valid model; *result is filled
// either way.
bool detect_topology(const DetectOptions& options, Topology* out, DetectResult* result, std::string* error);

}  // namespace cclab
