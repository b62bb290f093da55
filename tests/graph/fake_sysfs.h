// tests/graph/fake_sysfs.h - fake Linux sysfs trees and a fake NVML, for topology detection tests
// (graph/detect.h). A FakeSysfs is a temporary directory laid out as /sys is: real device directories
// under devices/pci<domain:bus>/..., bus/pci/devices/<busid> as relative symlinks into them,
// class/infiniband and class/net entries whose `device` links point at their PCI function, NUMA nodes
// under devices/system/node, and a cpuinfo file at the root. The machines below mirror the presets
// (topo_presets.cc) at the level sysfs shows: root ports, switch upstream and downstream ports, then
// the devices.
#pragma once

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "graph/detect.h"

namespace cclab_test {

// Attributes of one PCI function, as its sysfs directory holds them; empty ones are not written.
struct PciAttrs {
  std::string cls, vendor, device, subsystem_vendor, subsystem_device;
  std::string speed, width;  // max_link_speed ("32.0 GT/s PCIe"), max_link_width ("16")
  std::string numa = "0";    // numa_node
};

inline std::string bdf(int bus, int dev = 0, int fn = 0) {
  char b[32];
  snprintf(b, sizeof b, "0000:%02x:%02x.%x", bus, dev, fn);
  return b;
}

inline std::string gen_speed(int gen) {
  return gen >= 5 ? "32.0 GT/s PCIe" : gen == 4 ? "16.0 GT/s PCIe" : "8.0 GT/s PCIe";
}

class FakeSysfs {
 public:
  FakeSysfs() {
    const char* tmp = getenv("TMPDIR");
    std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/cclab-sysfs-XXXXXX";
    std::vector<char> buf(templ.begin(), templ.end());
    buf.push_back('\0');
    if (mkdtemp(buf.data()) != nullptr) root_ = buf.data();
    mkdirs("devices");
    mkdirs("bus/pci/devices");
  }
  ~FakeSysfs() {
    if (!root_.empty()) {
      nftw(root_.c_str(), [](const char* p, const struct stat*, int, struct FTW*) { return remove(p); }, 16,
           FTW_DEPTH | FTW_PHYS);
    }
  }
  FakeSysfs(const FakeSysfs&) = delete;
  FakeSysfs& operator=(const FakeSysfs&) = delete;

  const std::string& root() const { return root_; }
  std::string path(const std::string& rel) const { return root_ + "/" + rel; }

  void mkdirs(const std::string& rel) {
    std::string p = root_;
    size_t start = 0;
    while (start <= rel.size()) {
      size_t slash = rel.find('/', start);
      if (slash == std::string::npos) slash = rel.size();
      p += "/" + rel.substr(start, slash - start);
      mkdir(p.c_str(), 0755);
      start = slash + 1;
    }
  }
  void write(const std::string& rel, const std::string& text) {
    const size_t slash = rel.rfind('/');
    if (slash != std::string::npos) mkdirs(rel.substr(0, slash));
    std::ofstream(path(rel)) << text << "\n";
  }
  // A symlink at `rel` whose content is `target` (relative targets are relative to rel's directory).
  void link(const std::string& rel, const std::string& target) {
    const size_t slash = rel.rfind('/');
    if (slash != std::string::npos) mkdirs(rel.substr(0, slash));
    unlink(path(rel).c_str());
    if (symlink(target.c_str(), path(rel).c_str()) != 0) perror("symlink");
  }
  // "../../../devices/<dev_rel>" as seen from a directory `depth` levels below the root.
  static std::string up_to_root(int depth, const std::string& devices_rel) {
    std::string s;
    for (int i = 0; i < depth; ++i) s += "../";
    return s + "devices/" + devices_rel;
  }

  // A host bridge: devices/pci<domain>:<bus>; returns its devices-relative path.
  std::string host_bridge(int bus) {
    char b[32];
    snprintf(b, sizeof b, "pci0000:%02x", bus);
    mkdirs(std::string("devices/") + b);
    return b;
  }
  // A PCI function `id` under `parent` (devices-relative), with its attributes and its
  // bus/pci/devices link; returns its devices-relative path.
  std::string function(const std::string& parent, const std::string& id, const PciAttrs& a) {
    const std::string rel = parent + "/" + id;
    const std::string d = "devices/" + rel + "/";
    mkdirs("devices/" + rel);
    auto put = [&](const char* file, const std::string& v) {
      if (!v.empty()) write(d + file, v);
    };
    put("class", a.cls);
    put("vendor", a.vendor);
    put("device", a.device);
    put("subsystem_vendor", a.subsystem_vendor);
    put("subsystem_device", a.subsystem_device);
    put("max_link_speed", a.speed);
    put("max_link_width", a.width);
    put("numa_node", a.numa);
    link("bus/pci/devices/" + id, up_to_root(3, rel));
    return rel;
  }
  // A CPU root port (bus:dev.0 on the host bridge's bus) of the given generation and width 16.
  std::string root_port(const std::string& host, int bus, int dev, int gen, const std::string& numa) {
    return function(host, bdf(bus, dev), PciAttrs{"0x060400", "0x8086", "0x352a", "", "", gen_speed(gen), "16", numa});
  }
  // A PCIe switch below `port` (a root port or another switch's downstream port): its upstream port
  // on `bus` and, lazily, downstream ports on bus + 1. Returns the upstream port's path.
  std::string pcie_switch(const std::string& port, int bus, int gen, const std::string& numa,
                          const std::string& vendor = "0x1000", const std::string& device = "0xc030",
                          const std::string& subsystem_vendor = "0x10de") {
    return function(port, bdf(bus), PciAttrs{"0x060400", vendor, device, subsystem_vendor, "0x0001", gen_speed(gen),
                                              "16", numa});
  }
  // Downstream port number `n` of the switch whose upstream port is `up` (on bus b: b+1:n.0).
  std::string downstream(const std::string& up, int n, int gen, const std::string& numa) {
    const std::string id = up.substr(up.rfind('/') + 1);
    const int bus = static_cast<int>(strtol(id.substr(5, 2).c_str(), nullptr, 16));
    const PciAttrs a{"0x060400", attr(up, "vendor"), attr(up, "device"), attr(up, "subsystem_vendor"), "0x0001",
                     gen_speed(gen), "16", numa};
    return function(up, bdf(bus + 1, n), a);
  }
  std::string attr(const std::string& rel, const char* file) const {
    std::ifstream f(root_ + "/devices/" + rel + "/" + file);
    std::string s;
    std::getline(f, s);
    return s;
  }
  std::string gpu(const std::string& port, int bus, const std::string& device, int gen, const std::string& numa) {
    return function(port, bdf(bus), PciAttrs{"0x030200", "0x10de", device, "0x10de", "0x1234", gen_speed(gen), "16", numa});
  }
  std::string nic_function(const std::string& port, int bus, int fn, int gen, const std::string& numa,
                           const std::string& cls = "0x020700") {
    return function(port, bdf(bus, 0, fn), PciAttrs{cls, "0x15b3", "0x1021", "0x15b3", "0x0041", gen_speed(gen), "16", numa});
  }
  // An InfiniBand device on PCI function `fn_rel` with `ports` ports at `rate` ("400 Gb/sec (4X NDR)").
  void ib(const std::string& name, const std::string& fn_rel, const std::string& rate,
          const std::string& state = "4: ACTIVE", const std::string& layer = "InfiniBand", int ports = 1) {
    const std::string d = "class/infiniband/" + name;
    mkdirs(d);
    link(d + "/device", up_to_root(3, fn_rel));
    for (int p = 1; p <= ports; ++p) {
      const std::string pd = d + "/ports/" + std::to_string(p) + "/";
      write(pd + "state", state);
      write(pd + "rate", rate);
      write(pd + "link_layer", layer);
    }
  }
  // An Ethernet interface; `dev_rel` "" for a virtual one (no device link).
  void eth(const std::string& name, const std::string& dev_rel, const std::string& speed,
           const std::string& operstate = "up") {
    const std::string d = "class/net/" + name;
    mkdirs(d);
    if (!dev_rel.empty()) link(d + "/device", up_to_root(3, dev_rel));
    write(d + "/speed", speed);
    write(d + "/operstate", operstate);
  }
  void numa_node(int n, const std::string& cpumap, const std::string& cpulist) {
    const std::string d = "devices/system/node/node" + std::to_string(n) + "/";
    write(d + "cpumap", cpumap);
    write(d + "cpulist", cpulist);
  }
  void cpuinfo(const std::string& vendor, int family, int model) {
    std::string text;
    for (int cpu = 0; cpu < 2; ++cpu) {
      text += "processor\t: " + std::to_string(cpu) + "\nvendor_id\t: " + vendor +
              "\ncpu family\t: " + std::to_string(family) + "\nmodel\t\t: " + std::to_string(model) +
              "\nmodel name\t: a test CPU\n\n";
    }
    write("cpuinfo", text);
  }
  void gpudirect() { mkdirs("module/nvidia_peermem"); }

 private:
  std::string root_;
};

// NVML that knows the GPUs a test gives it: per bus id, a compute capability and NVLinks (each to a
// remote bus id as NVML spells it, "00000000:07:00.0"), with switches to make calls fail.
class FakeNvml : public cclab::NvmlApi {
 public:
  struct Link {
    std::string remote;
    bool p2p = true, active = true, remote_fails = false;
  };
  struct Gpu {
    int major = 9, minor = 0;
    bool cc_fails = false;
    std::vector<Link> links;
  };
  std::map<int64_t, Gpu> gpus;  // by bus id
  int handle_calls = 0;

  static std::string nvml_busid(int64_t busid) {  // NVML's 8-digit domain
    return "0000" + cclab::pci_busid_string(busid);
  }
  // `count` links from `gpu` to `remote` (appended).
  void connect(int64_t gpu, int64_t remote, int count) {
    for (int i = 0; i < count; ++i) gpus[gpu].links.push_back(Link{nvml_busid(remote)});
  }

  std::string name() const override { return "fake"; }
  bool device_handle(const std::string& busid, int* dev, std::string* why) override {
    ++handle_calls;
    int64_t id = 0;
    if (!cclab::parse_pci_busid(busid.c_str(), &id) || !gpus.count(id)) {
      *why = "nvmlDeviceGetHandleByPciBusId_v2: Not Found";
      return false;
    }
    handles_.push_back(id);
    *dev = static_cast<int>(handles_.size()) - 1;
    return true;
  }
  bool compute_capability(int dev, int* major, int* minor, std::string* why) override {
    const Gpu& g = gpus.at(handles_.at(static_cast<size_t>(dev)));
    if (g.cc_fails) {
      *why = "nvmlDeviceGetCudaComputeCapability: Unknown Error";
      return false;
    }
    *major = g.major;
    *minor = g.minor;
    return true;
  }
  bool nvlink_p2p_supported(int dev, unsigned link, bool* supported, std::string* why) override {
    const Link* l = find(dev, link, why);
    if (l) *supported = l->p2p;
    return l != nullptr;
  }
  bool nvlink_active(int dev, unsigned link, bool* active, std::string* why) override {
    const Link* l = find(dev, link, why);
    if (l) *active = l->active;
    return l != nullptr;
  }
  bool nvlink_remote_busid(int dev, unsigned link, std::string* busid, std::string* why) override {
    const Link* l = find(dev, link, why);
    if (l && l->remote_fails) {
      *why = "nvmlDeviceGetNvLinkRemotePciInfo_v2: Unknown Error";
      return false;
    }
    if (l) *busid = l->remote;
    return l != nullptr;
  }

 private:
  const Link* find(int dev, unsigned link, std::string* why) const {
    const Gpu& g = gpus.at(handles_.at(static_cast<size_t>(dev)));
    if (link >= g.links.size()) {
      *why = "Not Supported";  // NVML's answer for a link the GPU does not have
      return nullptr;
    }
    return &g.links[link];
  }
  std::vector<int64_t> handles_;
};

// ---- machines ------------------------------------------------------------------------------------
// Bus ids, devices, CPUs and NICs as the presets of the same name (topo_presets.cc).

inline int64_t bus_of(int bus) { return static_cast<int64_t>(bus) << 12; }

// DGX H100: 2 Sapphire Rapids sockets; 4 PCIe Gen5 switches (2 per socket), each with 2 H100 SXM5 and
// 2 ConnectX-7 NDR ports; 18 NVLinks per GPU to 4 NVSwitches (5/4/4/5). The NVSwitches are PCI
// devices sysfs knows (class 0x068000), so their class is read, not assumed.
inline void make_dgx_h100(FakeSysfs& fs, FakeNvml& nvml) {
  fs.cpuinfo("GenuineIntel", 6, 0x8f);
  fs.numa_node(0, "00000000,00ffffff,ffffffff,00000000,00ffffff,ffffffff", "0-55,112-167");
  fs.numa_node(1, "ffffffff,ff000000,00000000,ffffffff,ff000000,00000000", "56-111,168-223");
  fs.gpudirect();
  const int gpu_bus[8] = {0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb};
  const int nic_bus[8] = {0x19, 0x29, 0x3b, 0x5e, 0x9b, 0xaa, 0xbb, 0xdc};
  const int sw_bus[4] = {0x15, 0x37, 0x97, 0xb7};
  for (int s = 0; s < 4; ++s) {
    const std::string numa = std::to_string(s / 2);
    const std::string hb = fs.host_bridge(sw_bus[s] - 1);
    const std::string rp = fs.root_port(hb, sw_bus[s] - 1, 1, 5, numa);
    const std::string up = fs.pcie_switch(rp, sw_bus[s], 5, numa);
    for (int k = 0; k < 2; ++k) {
      fs.gpu(fs.downstream(up, 2 * k, 5, numa), gpu_bus[2 * s + k], "0x2330", 5, numa);
      const std::string nic = fs.nic_function(fs.downstream(up, 2 * k + 1, 5, numa), nic_bus[2 * s + k], 0, 5, numa);
      fs.ib("mlx5_" + std::to_string(2 * s + k), nic, "400 Gb/sec (4X NDR)");
    }
  }
  const std::string hb = fs.host_bridge(0x00);
  const int nvs_bus[4] = {0x05, 0x06, 0x07, 0x08};
  for (int i = 0; i < 4; ++i) {
    fs.function(hb, bdf(nvs_bus[i]), PciAttrs{"0x068000", "0x10de", "0x22a3", "", "", "", "", "0"});
  }
  const int split[4] = {5, 4, 4, 5};
  for (int g = 0; g < 8; ++g) {
    nvml.gpus[bus_of(gpu_bus[g])].major = 9;
    for (int i = 0; i < 4; ++i) nvml.connect(bus_of(gpu_bus[g]), bus_of(nvs_bus[i]), split[i]);
  }
}

// DGX A100: 2 EPYC 7742 sockets; 4 PCIe Gen4 switches (2 per socket) with 2 A100 SXM4 and 2 HDR NICs
// each; 12 NVLinks per GPU, 2 to each of 6 NVSwitches whose bus ids sysfs does not know (as in a VM):
// taken as NVSwitches by NCCL's rule.
inline void make_dgx_a100(FakeSysfs& fs, FakeNvml& nvml) {
  fs.cpuinfo("AuthenticAMD", 0x17, 0x31);
  fs.numa_node(0, "ffffffff,ffffffff,00000000,00000000,ffffffff,ffffffff", "0-63,128-191");
  fs.numa_node(1, "00000000,00000000,ffffffff,ffffffff,00000000,00000000", "64-127,192-255");
  fs.gpudirect();
  const int gpu_bus[8] = {0x07, 0x0f, 0x47, 0x4e, 0x87, 0x90, 0xb7, 0xbd};
  const int nic_bus[8] = {0x0c, 0x12, 0x4b, 0x54, 0x8d, 0x94, 0xba, 0xcc};
  const int sw_bus[4] = {0x03, 0x43, 0x83, 0xb3};
  for (int s = 0; s < 4; ++s) {
    const std::string numa = std::to_string(s / 2);
    const std::string hb = fs.host_bridge(sw_bus[s] - 2);
    const std::string rp = fs.root_port(hb, sw_bus[s] - 2, 3, 4, numa);
    const std::string up = fs.pcie_switch(rp, sw_bus[s], 4, numa, "0x1000", "0xc010", "0x10de");
    for (int k = 0; k < 2; ++k) {
      fs.gpu(fs.downstream(up, k, 4, numa), gpu_bus[2 * s + k], "0x20b0", 4, numa);
      const std::string nic = fs.nic_function(fs.downstream(up, 8 + k, 4, numa), nic_bus[2 * s + k], 0, 4, numa);
      fs.ib("mlx5_" + std::to_string(2 * s + k), nic, "200 Gb/sec (4X HDR)");
    }
  }
  for (int g = 0; g < 8; ++g) {
    nvml.gpus[bus_of(gpu_bus[g])].major = 8;
    for (int i = 0; i < 6; ++i) nvml.connect(bus_of(gpu_bus[g]), (int64_t{0xff} << 20) | bus_of(0x10 + i), 2);
  }
}

// nvlink-pairs: one EPYC 7443; 2 PCIe Gen4 switches with 2 RTX A6000 each, NVLink bridges (4 links)
// between GPUs 0-1 and 2-3; a 100 Gb/s NIC on a CPU root port.
inline void make_nvlink_pairs(FakeSysfs& fs, FakeNvml& nvml) {
  fs.cpuinfo("AuthenticAMD", 0x19, 0x01);
  fs.numa_node(0, "ffffffff", "0-31");
  const int gpu_bus[4] = {0x21, 0x22, 0x41, 0x42};
  const int sw_bus[2] = {0x1f, 0x3f};
  const std::string hb = fs.host_bridge(0x00);
  for (int s = 0; s < 2; ++s) {
    const std::string up = fs.pcie_switch(fs.root_port(hb, 0x00, 1 + s, 4, "0"), sw_bus[s], 4, "0");
    for (int k = 0; k < 2; ++k) fs.gpu(fs.downstream(up, k, 4, "0"), gpu_bus[2 * s + k], "0x2230", 4, "0");
  }
  const std::string nic = fs.nic_function(fs.root_port(hb, 0x00, 3, 4, "0"), 0x61, 0, 4, "0");
  fs.ib("mlx5_0", nic, "100 Gb/sec (4X EDR)");
  for (int g = 0; g < 4; ++g) {
    nvml.gpus[bus_of(gpu_bus[g])].major = 8;
    nvml.gpus[bus_of(gpu_bus[g])].minor = 6;
    nvml.connect(bus_of(gpu_bus[g]), bus_of(gpu_bus[g ^ 1]), 4);
  }
}

// pcie-8gpu-2socket: 2 Xeon 8380 sockets, each with 2 PCIe Gen4 switches of 2 A100 PCIe, a 100 Gb/s
// NIC on each socket's first switch; no NVLink (the fake NVML knows the GPUs, with no links).
inline void make_pcie_8gpu_2socket(FakeSysfs& fs, FakeNvml& nvml) {
  fs.cpuinfo("GenuineIntel", 6, 0x6a);
  fs.numa_node(0, "00000000,ffffffff", "0-31");
  fs.numa_node(1, "ffffffff,00000000", "32-63");
  const int gpu_bus[8] = {0x1b, 0x1c, 0x3d, 0x3e, 0x9b, 0x9c, 0xbd, 0xbe};
  const int sw_bus[4] = {0x19, 0x3b, 0x99, 0xbb};
  const int nic_bus[2] = {0x1d, 0x9d};
  for (int s = 0; s < 4; ++s) {
    const std::string numa = std::to_string(s / 2);
    const std::string hb = fs.host_bridge(sw_bus[s] - 2);
    const std::string up = fs.pcie_switch(fs.root_port(hb, sw_bus[s] - 2, 1, 4, numa), sw_bus[s], 4, numa,
                                          "0x10b5", "0x8747", "0x10b5");
    for (int k = 0; k < 2; ++k) {
      fs.gpu(fs.downstream(up, k, 4, numa), gpu_bus[2 * s + k], "0x20f1", 4, numa);
      nvml.gpus[bus_of(gpu_bus[2 * s + k])].major = 8;
    }
    if (s % 2 == 0) {
      const std::string nic = fs.nic_function(fs.downstream(up, 4, 4, numa), nic_bus[s / 2], 0, 4, numa);
      fs.ib("mlx5_" + std::to_string(s / 2), nic, "100 Gb/sec (4X EDR)");
    }
  }
}

// A VM without GPU, as this project's build machines are: one NUMA node of 2 CPUs, a virtio NIC
// (eth0, not a PCI function itself, speed -1) and a virtio display controller (not NVIDIA).
inline void make_gpuless_vm(FakeSysfs& fs) {
  fs.cpuinfo("AuthenticAMD", 25, 1);
  fs.numa_node(0, "00000003", "0-1");
  fs.mkdirs("devices/pci0000:00/0000:00:03.0/virtio2");
  fs.eth("eth0", "pci0000:00/0000:00:03.0/virtio2", "-1");
  fs.function("pci0000:00", bdf(0, 2), PciAttrs{"0x030000", "0x1af4", "0x1050", "", "", "", "", "-1"});
}

// The project's lent GPU machines (Firecracker VMs with one H200 or one H100), as scripts/sysfs_capture.sh
// read them there on 2026-11-26 and 2026-11-27: the GPU (class 0x030200) sits on the root bus with no bridge or switch
// above it (devices/pci0000:00/0000:00:06.0), PCIe Gen5 x16, numa_node -1; the NIC is virtio-net
// (eth0 under 0000:00:03.0/virtio2, speed -1); one NUMA node with 16 CPUs; an Intel family 6 model 207
// CPU. NVML reports sm 9.0 and no NVLink. (Serial numbers and UUIDs are not among what detection reads.)
inline void make_lent_vm(FakeSysfs& fs, FakeNvml& nvml, const char* gpu_device, const char* gpu_subsystem) {
  fs.cpuinfo("GenuineIntel", 6, 207);
  fs.numa_node(0, "ffff", "0-15");
  fs.function("pci0000:00", bdf(0, 3), PciAttrs{"0x020000", "0x1af4", "0x1041", "0x1af4", "0x1041", "", "", "-1"});
  fs.mkdirs("devices/pci0000:00/0000:00:03.0/virtio2");
  fs.eth("eth0", "pci0000:00/0000:00:03.0/virtio2", "-1");
  fs.function("pci0000:00", bdf(0, 6),
              PciAttrs{"0x030200", "0x10de", gpu_device, "0x10de", gpu_subsystem, "32.0 GT/s PCIe", "16", "-1"});
  nvml.gpus[0x60].major = 9;  // NCCL's int64 bus id of 0000:00:06.0
  nvml.gpus[0x60].minor = 0;
}
// The H200 (0x2335) lent on 2026-11-26, and the H100 80GB HBM3 (0x2330) lent on 2026-11-27: the same VM
// but for the GPU's PCI device and subsystem ids.
inline void make_lent_h200_vm(FakeSysfs& fs, FakeNvml& nvml) { make_lent_vm(fs, nvml, "0x2335", "0x18bf"); }
inline void make_lent_h100_vm(FakeSysfs& fs, FakeNvml& nvml) { make_lent_vm(fs, nvml, "0x2330", "0x16c1"); }

// A plain 2-GPU PCIe box: one CPU; GPUs 0000:06:00.0 and 0000:09:00.0 each behind its own second-level
// PCIe switch (0x04, 0x07) under one top switch (0x02): PXB between them; a 2-port 100 Gb/s NIC
// (functions .0 and .1 of 0000:0b:00) on a CPU root port; an NVLink bridge of `bridge_links` links
// between the GPUs (sm 8.6). `broadcom` makes all three switches Broadcom PEX Gen4 in base mode, which
// NCCL flattens into one.
inline void make_two_gpu_box(FakeSysfs& fs, FakeNvml& nvml, int bridge_links, bool broadcom = false) {
  fs.cpuinfo("GenuineIntel", 6, 0x55);
  fs.numa_node(0, "0000ffff", "0-15");
  const std::string hb = fs.host_bridge(0x00);
  const std::string vendor = broadcom ? "0x1000" : "0x10b5", device = broadcom ? "0xc010" : "0x8796",
                    subvendor = broadcom ? "0x1000" : "0x10b5";
  const std::string top = fs.pcie_switch(fs.root_port(hb, 0x00, 1, 4, "0"), 0x02, 4, "0", vendor, device, subvendor);
  const std::string s1 = fs.pcie_switch(fs.downstream(top, 8, 4, "0"), 0x04, 4, "0", vendor, device, subvendor);
  const std::string s2 = fs.pcie_switch(fs.downstream(top, 16, 4, "0"), 0x07, 4, "0", vendor, device, subvendor);
  fs.gpu(fs.downstream(s1, 0, 4, "0"), 0x06, "0x2204", 4, "0");
  fs.gpu(fs.downstream(s2, 0, 4, "0"), 0x09, "0x2204", 4, "0");
  const std::string rp = fs.root_port(hb, 0x00, 2, 4, "0");
  fs.ib("mlx5_0", fs.nic_function(rp, 0x0b, 0, 4, "0"), "100 Gb/sec (4X EDR)");
  fs.ib("mlx5_1", fs.nic_function(rp, 0x0b, 1, 4, "0"), "100 Gb/sec (4X EDR)");
  for (int bus : {0x06, 0x09}) {
    nvml.gpus[bus_of(bus)].major = 8;
    nvml.gpus[bus_of(bus)].minor = 6;
  }
  nvml.connect(bus_of(0x06), bus_of(0x09), bridge_links);
  nvml.connect(bus_of(0x09), bus_of(0x06), bridge_links);
}

}  // namespace cclab_test
