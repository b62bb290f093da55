// runtime/graph/detect.cc - topology detection (see detect.h): sysfs and NVML into NCCL's XML.
//
// [SECTION] index
//   files        reading one sysfs attribute, directories, real paths
//   Detector     the walk: GPUs, their PCI ancestors and CPU, NICs, NVLinks, then the XML
//   entry points detect_sysfs_root, detect_system, detect_topology
#include "graph/detect.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <pugixml.hpp>
#include <set>
#include <sstream>

namespace cclab {
namespace {

constexpr int kNcclDefaultNetMbps = 10000;  // NCCL's speed for a NIC that reports none
constexpr int kIbMaxConn = 131072;          // what the presets give an IB port (NCCL's IB plugin)
constexpr int kSocketMaxConn = 65536;       // NCCL's socket plugin
constexpr int kClassNvSwitch = 0x068000;
constexpr int kClassNvlCpu = 0x068001;      // IBM NPU: an NVLink to the CPU
constexpr int kClassBridge = 0x060400;
constexpr int kClassGpu = 0x030200;
constexpr int kClassEthernet = 0x020000;
constexpr int kClassInfiniband = 0x020700;
// Where NVML names a far end that is not a PCI bus id: one stand-in NVSwitch for all such links.
constexpr int64_t kUnknownNvSwitch = (int64_t{0xffff} << 20) | (0xff << 12) | (0x1f << 4) | 7;

// ---- files ------------------------------------------------------------------------------------------

std::string join(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  return a.back() == '/' ? a + b : a + "/" + b;
}

std::string trim(std::string s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  size_t e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

// The whole of a small file, trimmed; false with *why ("PATH: cannot open: No such file or directory").
bool read_text(const std::string& path, std::string* out, std::string* why) {
  if (!read_text_file(path, out, why)) return false;
  *out = trim(*out);
  return true;
}

bool exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

// The canonical path (symlinks resolved); false with *why naming the path when it cannot be resolved
// (missing, or a symlink that points nowhere).
bool real_path(const std::string& path, std::string* out, std::string* why) {
  char buf[PATH_MAX];
  if (realpath(path.c_str(), buf) == nullptr) {
    if (why) *why = path + ": cannot resolve: " + strerror(errno);
    return false;
  }
  *out = buf;
  return true;
}

// "mlx5_10" after "mlx5_2": digit runs compare as numbers.
bool natural_less(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (isdigit(static_cast<unsigned char>(a[i])) && isdigit(static_cast<unsigned char>(b[j]))) {
      size_t i2 = i, j2 = j;
      while (i2 < a.size() && isdigit(static_cast<unsigned char>(a[i2]))) ++i2;
      while (j2 < b.size() && isdigit(static_cast<unsigned char>(b[j2]))) ++j2;
      const std::string na = a.substr(i, i2 - i), nb = b.substr(j, j2 - j);
      if (na.size() != nb.size()) return na.size() < nb.size();
      if (na != nb) return na < nb;
      i = i2;
      j = j2;
    } else {
      if (a[i] != b[j]) return a[i] < b[j];
      ++i;
      ++j;
    }
  }
  return a.size() - i < b.size() - j;
}

// The entries of a directory (no "." or ".."), in natural order; false with *why when it cannot be read.
bool list_dir(const std::string& path, std::vector<std::string>* out, std::string* why) {
  out->clear();
  DIR* d = opendir(path.c_str());
  if (d == nullptr) {
    if (why) *why = path + ": " + strerror(errno);
    return false;
  }
  while (dirent* e = readdir(d)) {
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) out->push_back(e->d_name);
  }
  closedir(d);
  std::sort(out->begin(), out->end(), natural_less);
  return true;
}

// "0000:18:00.0": NCCL's checkBDFFormat (a path component that is a PCI function).
bool is_bdf(const std::string& s) {
  if (s.size() != 12 || s[4] != ':' || s[7] != ':' || s[10] != '.') return false;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9, 11}) {
    if (!isxdigit(static_cast<unsigned char>(s[i]))) return false;
  }
  return true;
}

std::string hex(int64_t v, int width) {
  char buf[32];
  snprintf(buf, sizeof buf, "0x%0*llx", width, static_cast<long long>(v));
  return buf;
}

bool parse_long(const std::string& s, int base, long long* out) {
  if (s.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const long long v = strtoll(s.c_str(), &end, base);
  if (errno != 0 || end == s.c_str() || *end != '\0') return false;
  *out = v;
  return true;
}

// "32.0 GT/s PCIe", "8 GT/s", "2.5 GT/s": the GT/s; false for anything else ("Unknown", garbage).
bool parse_gts(const std::string& s, double* gts) {
  char* end = nullptr;
  const double v = strtod(s.c_str(), &end);
  if (end == s.c_str() || !(v > 0) || !std::isfinite(v)) return false;
  while (*end == ' ') ++end;
  if (strncmp(end, "GT/s", 4) != 0) return false;
  *gts = v;
  return true;
}

// ---- the walk ---------------------------------------------------------------------------------------

enum class PciKind { kSwitch, kGpu, kNic };

struct NetPort {
  std::string name;  // "mlx5_0", "eth0"
  int port = 1;
  int dev = -1;      // NET dev: the order ports were found in
  double mbps = kNcclDefaultNetMbps;
  bool ib = false;
  std::string layer;  // "InfiniBand", "Ethernet"
};

struct PciNode {
  PciKind kind = PciKind::kSwitch;
  int64_t busid = -1;
  std::string path;  // its real sysfs directory
  int64_t parent = -1;  // the PCI node above, -1: the CPU
  int numa = -1;        // top nodes: the CPU (NUMA node) they hang from
  int cls = 0;
  std::string vendor, device, subsystem_vendor, subsystem_device, link_speed;
  int link_width = 0;
  // kGpu
  int sm = 0, dev = -1;
  std::map<int64_t, int> nvlinks;  // remote bus id -> links
  std::map<int64_t, int> tclass;   // remote bus id -> its PCI class
  // kNic
  std::vector<NetPort> ports;
};

class Detector {
 public:
  Detector(const DetectOptions& o, DetectResult* r) : o_(o), r_(r) {}
  bool run(std::string* error);

 private:
  void warn(const std::string& s) { r_->warnings.push_back(s); }
  void note(const std::string& s) { r_->notes.push_back(s); }
  bool fail(const std::string& s, std::string* error) {
    if (error) *error = s;
    return false;
  }
  std::string dev_link(int64_t busid) const { return join(root_, "bus/pci/devices/" + pci_busid_string(busid)); }

  bool scan_gpus(std::vector<DetectGpu>* out);
  bool add_device(const std::string& real, PciKind kind, int64_t busid, int64_t* node, std::string* error);
  void read_pci_attrs(PciNode* n);
  int read_class(const std::string& dir, int fallback, const char* what);
  int read_numa(const std::string& dir);
  void detect_nics();
  bool add_nic_port(const std::string& device_link, const NetPort& port, std::string* why);
  void detect_nvlinks();
  void read_cpus();
  std::string build_xml();
  std::string build_summary();

  const DetectOptions& o_;
  DetectResult* r_;
  std::string root_;                 // the real path of the sysfs root
  std::map<int64_t, PciNode> pci_;   // every PCI node of the tree, by bus id
  std::vector<int64_t> gpus_;        // dev order
  std::vector<std::pair<int, NetPort>> direct_nics_;  // NICs that are not PCI devices: (NUMA, port)
  struct Cpu {
    std::string affinity, cpulist, arch, vendor;
    int family = 0, model = 0;
  };
  std::map<int, Cpu> cpus_;  // NUMA id -> CPU, for every CPU something hangs from
  std::unique_ptr<NvmlApi> own_nvml_;
  NvmlApi* nvml_ = nullptr;
};

bool Detector::run(std::string* error) {
  std::string why;
  if (!real_path(o_.sysfs_root, &root_, &why)) return fail("sysfs root " + why, error);
  if (!exists(join(root_, "devices"))) {
    return fail("sysfs root " + o_.sysfs_root + " has no devices/ directory: not a sysfs tree", error);
  }
  if (o_.use_nvml) {
    nvml_ = o_.nvml;
    if (nvml_ == nullptr) {
      own_nvml_ = open_nvml(&why);
      nvml_ = own_nvml_.get();
      if (nvml_ == nullptr) r_->nvml = "unavailable (" + why + ")";
    }
    if (nvml_ != nullptr) r_->nvml = nvml_->name();
  } else {
    r_->nvml = "not used";
  }

  std::vector<DetectGpu> gpus = o_.gpus;
  if (gpus.empty() && !scan_gpus(&gpus)) return fail("cannot list " + join(root_, "bus/pci/devices"), error);
  std::sort(gpus.begin(), gpus.end(), [](const DetectGpu& a, const DetectGpu& b) { return a.busid < b.busid; });
  for (size_t i = 0; i < gpus.size(); ++i) {
    if (gpus[i].busid < 0) return fail("GPU with an invalid PCI bus id " + std::to_string(gpus[i].busid), error);
    if (i > 0 && gpus[i].busid == gpus[i - 1].busid) {
      return fail("GPU " + pci_busid_string(gpus[i].busid) + " is listed twice", error);
    }
  }
  for (const DetectGpu& g : gpus) {
    std::string real;
    if (!real_path(dev_link(g.busid), &real, &why)) {
      return fail("GPU " + pci_busid_string(g.busid) + ": its PCI path " + why, error);
    }
    int64_t node = -1;
    if (!add_device(real, PciKind::kGpu, g.busid, &node, error)) return false;
    PciNode& n = pci_[node];
    n.sm = g.sm;
    n.dev = static_cast<int>(gpus_.size());
    gpus_.push_back(node);
  }
  detect_nics();
  detect_nvlinks();
  read_cpus();
  r_->gpu_busids = gpus_;
  r_->xml = build_xml();
  r_->summary = build_summary();
  return true;
}

// Every NVIDIA display or 3D controller (vendor 0x10de, class 0x0300xx / 0x0302xx).
bool Detector::scan_gpus(std::vector<DetectGpu>* out) {
  const std::string dir = join(root_, "bus/pci/devices");
  std::vector<std::string> names;
  std::string why;
  if (!list_dir(dir, &names, &why)) {
    warn(why);
    return exists(dir) ? false : true;  // no PCI bus at all: no GPU
  }
  for (const std::string& name : names) {
    std::string vendor, cls;
    const std::string d = join(dir, name);
    if (!read_text(join(d, "vendor"), &vendor, &why)) {
      warn(why + " (device skipped)");
      continue;
    }
    if (vendor != "0x10de") continue;
    long long c = 0;
    if (!read_text(join(d, "class"), &cls, &why) || !parse_long(cls, 16, &c)) {
      warn(join(d, "class") + ": unreadable or not a PCI class code (device skipped)");
      continue;
    }
    if ((c >> 8) != 0x0300 && (c >> 8) != 0x0302) continue;
    int64_t id = 0;
    if (!parse_pci_busid(name.c_str(), &id)) {
      warn(d + ": an NVIDIA GPU whose name is not a PCI bus id (skipped)");
      continue;
    }
    out->push_back(DetectGpu{id, 0});
  }
  return true;
}

int Detector::read_class(const std::string& dir, int fallback, const char* what) {
  std::string s, why;
  long long v = 0;
  if (!read_text(join(dir, "class"), &s, &why)) {
    warn(why + ": taking class " + hex(fallback, 6) + " (" + what + ")");
    return fallback;
  }
  if (!parse_long(s, 16, &v) || v < 0 || v > 0xffffff) {
    warn(join(dir, "class") + ": \"" + s + "\" is not a PCI class code: taking " + hex(fallback, 6) + " (" + what +
         ")");
    return fallback;
  }
  return static_cast<int>(v);
}

int Detector::read_numa(const std::string& dir) {
  std::string s, why;
  long long v = -1;
  if (!read_text(join(dir, "numa_node"), &s, &why)) {
    note(why + ": NUMA node unknown, taking 0");
    return 0;
  }
  if (!parse_long(s, 10, &v) || v < -1 || v > 4095) {
    warn(join(dir, "numa_node") + ": \"" + s + "\" is not a NUMA node: taking 0");
    return 0;
  }
  if (v < 0) {
    note(join(dir, "numa_node") + " is -1 (no NUMA information): taking NUMA node 0");
    return 0;
  }
  return static_cast<int>(v);
}

// Identity and link of one PCI node from its directory; the link is the smaller of the node's own
// max_link_* and its upstream port's (the parent directory), as NCCL reads them.
void Detector::read_pci_attrs(PciNode* n) {
  auto opt = [&](const char* file, std::string* out) {
    std::string why;
    if (!read_text(join(n->path, file), out, &why)) out->clear();
  };
  opt("vendor", &n->vendor);
  opt("device", &n->device);
  opt("subsystem_vendor", &n->subsystem_vendor);
  opt("subsystem_device", &n->subsystem_device);
  const std::string up = n->path.substr(0, n->path.rfind('/'));
  double best = 0;
  for (const std::string& dir : {n->path, up}) {
    std::string s, why;
    double gts = 0;
    if (!read_text(join(dir, "max_link_speed"), &s, &why)) continue;  // a host bridge has none
    if (!parse_gts(s, &gts)) {
      warn(join(dir, "max_link_speed") + ": \"" + s + "\" is not a PCIe speed (ignored)");
      continue;
    }
    if (best == 0 || gts < best) {
      best = gts;
      n->link_speed = s;
    }
  }
  n->link_width = 0;
  for (const std::string& dir : {n->path, up}) {
    std::string s, why;
    long long w = 0;
    if (!read_text(join(dir, "max_link_width"), &s, &why)) continue;
    if (!parse_long(s, 10, &w) || w < 1 || w > 32) {
      warn(join(dir, "max_link_width") + ": \"" + s + "\" is not a PCIe link width (ignored)");
      continue;
    }
    if (n->link_width == 0 || w < n->link_width) n->link_width = static_cast<int>(w);
  }
  if (n->link_speed.empty()) note(n->path + ": no PCIe link speed (NCCL's default applies)");
}

bool is_bcm_base_switch(const PciNode& n) {  // Broadcom PEX Gen4 / Gen5 in base mode
  return n.vendor == "0x1000" && (n.device == "0xc010" || n.device == "0xc030") && n.subsystem_vendor == "0x1000";
}

// Adds the device at real sysfs path `real` and the PCI switches above it (NCCL's two-level walk, see
// detect.h); *node = the device's key in pci_. NICs are keyed by function 0 (one NIC, several ports).
bool Detector::add_device(const std::string& real, PciKind kind, int64_t busid, int64_t* node, std::string* error) {
  const std::string devices = join(root_, "devices") + "/";
  if (real.compare(0, devices.size(), devices) != 0) {
    return fail(real + " is not under " + devices + " (the sysfs root's device tree)", error);
  }
  // Components below devices/; the PCI functions are those after the last one that is not a bus id
  // (pci0000:00, or platform/... on some machines).
  std::vector<std::string> comps;
  std::stringstream ss(real.substr(devices.size()));
  for (std::string c; std::getline(ss, c, '/');) {
    if (!c.empty()) comps.push_back(c);
  }
  size_t first = comps.size();
  while (first > 0 && is_bdf(comps[first - 1])) --first;
  if (first == comps.size()) return fail(real + " is not a PCI device (its last path component is not a bus id)", error);
  auto dir_of = [&](size_t idx) {
    std::string p = join(root_, "devices");
    for (size_t i = 0; i <= idx; ++i) p += "/" + comps[i];
    return p;
  };
  // The device, then every second component above it while one exists.
  std::vector<size_t> chain;
  for (long i = static_cast<long>(comps.size()) - 1; i >= static_cast<long>(first); i -= 2) chain.push_back(i);
  std::vector<PciNode> nodes;
  for (size_t k = 0; k < chain.size(); ++k) {
    PciNode n;
    n.kind = k == 0 ? kind : PciKind::kSwitch;
    n.path = dir_of(chain[k]);
    if (!parse_pci_busid(comps[chain[k]].c_str(), &n.busid)) return fail(n.path + ": not a PCI bus id", error);
    if (k == 0 && busid >= 0 && n.busid != busid) {
      return fail(dev_link(busid) + " resolves to " + real + ", another device", error);
    }
    if (n.kind == PciKind::kNic) n.busid &= ~int64_t{0xf};
    read_pci_attrs(&n);
    nodes.push_back(std::move(n));
  }
  // Broadcom two-level switches: a sub-switch of the same device as its parent switch merges into it.
  for (size_t k = 1; k + 1 < nodes.size();) {
    if (is_bcm_base_switch(nodes[k]) && is_bcm_base_switch(nodes[k + 1]) && nodes[k].device == nodes[k + 1].device) {
      note(pci_busid_string(nodes[k].busid) + ": Broadcom sub-switch merged into " +
           pci_busid_string(nodes[k + 1].busid) + " (NCCL flattens BCM Gen4/Gen5 switches)");
      nodes.erase(nodes.begin() + static_cast<long>(k));
    } else {
      ++k;
    }
  }
  *node = nodes[0].busid;
  for (size_t k = 0; k < nodes.size(); ++k) {
    PciNode& n = nodes[k];
    auto it = pci_.find(n.busid);
    if (it != pci_.end()) {
      if (it->second.kind != n.kind) {
        return fail(n.path + " is both a " + (n.kind == PciKind::kSwitch ? "PCI switch" : "device") +
                        " and a " + (it->second.kind == PciKind::kSwitch ? "PCI switch" : "device") +
                        " of another device's path",
                    error);
      }
      return true;  // already known, and so is everything above it
    }
    if (n.kind == PciKind::kSwitch) {
      n.cls = read_class(n.path, kClassBridge, "PCI switch");
      if ((n.cls >> 16) == 0x02 || (n.cls >> 16) == 0x03 || n.cls == kClassNvSwitch) n.cls = kClassBridge;
    } else {
      n.cls = read_class(n.path, n.kind == PciKind::kGpu ? kClassGpu : kClassEthernet,
                         n.kind == PciKind::kGpu ? "GPU" : "NIC");
    }
    if (k + 1 < nodes.size()) {
      n.parent = nodes[k + 1].busid;
    } else {
      n.numa = read_numa(n.path);
    }
    pci_.emplace(n.busid, std::move(n));
  }
  return true;
}

// InfiniBand / RoCE ports (the IB plugin's devices), else Ethernet interfaces (the socket plugin's).
void Detector::detect_nics() {
  std::vector<std::string> names;
  std::string why;
  const std::string ib = join(root_, "class/infiniband");
  if (list_dir(ib, &names, &why)) {
    for (const std::string& dev : names) {
      const std::string d = join(ib, dev);
      std::vector<std::string> ports;
      if (!list_dir(join(d, "ports"), &ports, &why)) {
        warn(why + " (" + dev + " skipped)");
        continue;
      }
      for (const std::string& p : ports) {
        NetPort port;
        port.name = dev;
        port.ib = true;
        long long num = 0;
        const std::string pd = join(d, "ports/" + p);
        if (!parse_long(p, 10, &num) || num < 1 || num > 255) {
          warn(pd + ": not a port number (skipped)");
          continue;
        }
        port.port = static_cast<int>(num);
        std::string state, rate;
        if (!read_text(join(pd, "state"), &state, &why)) {
          warn(why + " (" + dev + " port " + p + " skipped)");
          continue;
        }
        if (state.find("ACTIVE") == std::string::npos) {
          note(dev + " port " + p + " is not active (" + state + "): skipped");
          continue;
        }
        if (!read_text(join(pd, "link_layer"), &port.layer, &why)) port.layer = "InfiniBand";
        double gbs = 0;
        char* end = nullptr;
        if (!read_text(join(pd, "rate"), &rate, &why)) {
          warn(why + ": " + dev + " port " + p + " speed unknown, taking " + std::to_string(kNcclDefaultNetMbps) +
               " Mb/s");
        } else if (gbs = strtod(rate.c_str(), &end), end == rate.c_str() || !(gbs > 0) || !std::isfinite(gbs)) {
          warn(join(pd, "rate") + ": \"" + rate + "\" is not a rate in Gb/sec: taking " +
               std::to_string(kNcclDefaultNetMbps) + " Mb/s");
        } else {
          port.mbps = gbs * 1000.0;
        }
        if (!add_nic_port(join(d, "device"), port, &why)) warn(why + " (" + dev + " skipped)");
      }
    }
  }
  if (r_->nets > 0) return;
  const std::string net = join(root_, "class/net");
  if (!list_dir(net, &names, &why)) return;
  for (const std::string& ifn : names) {
    if (ifn == "lo" || ifn.compare(0, 6, "docker") == 0 || ifn.compare(0, 5, "virbr") == 0 ||
        ifn.compare(0, 4, "veth") == 0) {
      continue;  // NCCL's socket plugin leaves these out by default
    }
    const std::string d = join(net, ifn);
    if (!exists(join(d, "device"))) continue;  // virtual (bonds, bridges, tunnels)
    std::string state, speed;
    if (read_text(join(d, "operstate"), &state, &why) && state != "up") {
      note(ifn + " is " + state + ": skipped");
      continue;
    }
    NetPort port;
    port.name = ifn;
    port.layer = "Ethernet";
    long long mbps = 0;
    if (!read_text(join(d, "speed"), &speed, &why) || !parse_long(speed, 10, &mbps) || mbps <= 0) {
      note(ifn + ": speed " + (speed.empty() ? "unreadable" : speed) + ", taking NCCL's default " +
           std::to_string(kNcclDefaultNetMbps) + " Mb/s");
    } else {
      port.mbps = static_cast<double>(mbps);
    }
    if (!add_nic_port(join(d, "device"), port, &why)) warn(why + " (" + ifn + " skipped)");
  }
}

bool Detector::add_nic_port(const std::string& device_link, const NetPort& found, std::string* why) {
  std::string real;
  if (!real_path(device_link, &real, why)) return false;
  NetPort port = found;
  port.dev = r_->nets;
  const std::string last = real.substr(real.rfind('/') + 1);
  if (!is_bdf(last)) {
    // Not a PCI function (virtio, usb): NCCL hangs such a NIC directly on the first CPU.
    const int numa = pci_.empty() ? 0 : [&] {
      int m = INT_MAX;
      for (auto& [id, n] : pci_) {
        if (n.parent < 0) m = std::min(m, n.numa);
      }
      return m;
    }();
    note(port.name + ": " + real + " is not a PCI function: attached to CPU " + std::to_string(numa));
    direct_nics_.push_back({numa, port});
    ++r_->nets;
    return true;
  }
  int64_t node = -1;
  if (!add_device(real, PciKind::kNic, -1, &node, why)) return false;
  pci_[node].ports.push_back(port);
  ++r_->nets;
  return true;
}

void Detector::detect_nvlinks() {
  std::set<int64_t> gpu_set(gpus_.begin(), gpus_.end());
  std::string sm_unknown;  // GPUs without a sm and without NVML: one warning for all
  for (int64_t g : gpus_) {
    PciNode& n = pci_[g];
    const std::string bus = pci_busid_string(g);
    int h = -1;
    std::string why;
    if (nvml_ != nullptr && !nvml_->device_handle(bus, &h, &why)) {
      warn("NVML does not know GPU " + bus + " (" + why + "): its NVLinks are not detected");
      h = -1;
    }
    if (n.sm <= 0) {
      int major = 0, minor = 0;
      n.sm = o_.default_sm;
      if (h < 0) {
        sm_unknown += (sm_unknown.empty() ? "" : ", ") + bus;
      } else if (nvml_->compute_capability(h, &major, &minor, &why) && major > 0) {
        n.sm = major * 10 + minor;
      } else {
        warn("GPU " + bus + ": compute capability unknown (" + why + "), taking sm " + std::to_string(o_.default_sm));
      }
    }
    if (h < 0) continue;
    const int max_links = n.sm < 60 ? 0 : n.sm < 70 ? 4 : n.sm < 80 ? 6 : n.sm < 90 ? 12 : 18;
    for (int l = 0; l < max_links; ++l) {
      bool p2p = false, active = false;
      std::string remote;
      if (!nvml_->nvlink_p2p_supported(h, static_cast<unsigned>(l), &p2p, &why) || !p2p) continue;
      if (!nvml_->nvlink_active(h, static_cast<unsigned>(l), &active, &why) || !active) continue;
      if (!nvml_->nvlink_remote_busid(h, static_cast<unsigned>(l), &remote, &why)) {
        warn("GPU " + bus + " NVLink " + std::to_string(l) + ": remote unknown (" + why + "), link ignored");
        continue;
      }
      int64_t rid = 0;
      if (!parse_pci_busid(remote.c_str(), &rid)) {
        note("GPU " + bus + " NVLink " + std::to_string(l) + ": far end \"" + remote +
             "\" is not a PCI bus id: taken as an NVSwitch");
        rid = kUnknownNvSwitch;
      }
      ++n.nvlinks[rid];
    }
    // What each far end is: a GPU of the model, one sysfs knows (its class), or an NVSwitch.
    for (auto it = n.nvlinks.begin(); it != n.nvlinks.end();) {
      const int64_t rid = it->first;
      int cls = kClassNvSwitch;
      if (gpu_set.count(rid)) {
        cls = pci_[rid].cls;
      } else if (rid != kUnknownNvSwitch && exists(dev_link(rid))) {
        cls = read_class(dev_link(rid), kClassNvSwitch, "NVLink far end");
      }
      if ((cls >> 16) == 0x03 && !gpu_set.count(rid)) {
        note("GPU " + bus + ": " + std::to_string(it->second) + " NVLink(s) to GPU " + pci_busid_string(rid) +
             ", which is not modelled: ignored");
        it = n.nvlinks.erase(it);
        continue;
      }
      if ((cls >> 16) != 0x03 && cls != kClassNvSwitch && cls != kClassNvlCpu) {
        warn("GPU " + bus + ": NVLink far end " + pci_busid_string(rid) + " has class " + hex(cls, 6) +
             ", neither a GPU, an NVSwitch nor a CPU: ignored");
        it = n.nvlinks.erase(it);
        continue;
      }
      n.tclass[rid] = cls;
      ++it;
    }
  }
  if (!sm_unknown.empty()) {
    warn("compute capability unknown without NVML, taking sm " + std::to_string(o_.default_sm) + " for GPU " +
         sm_unknown);
  }
}

// cpuinfo: vendor_id, cpu family, model (x86); CPU implementer (arm64); cpu : POWERn (ppc64).
void Detector::read_cpus() {
  std::set<int> numas;
  for (auto& [id, n] : pci_) {
    if (n.parent < 0) numas.insert(n.numa);
  }
  for (auto& [numa, port] : direct_nics_) numas.insert(numa);
  std::vector<std::string> nodes;
  std::string why;
  if (list_dir(join(root_, "devices/system/node"), &nodes, &why)) {
    for (const std::string& s : nodes) {
      if (s.compare(0, 4, "node") == 0 && s.size() > 4 && isdigit(static_cast<unsigned char>(s[4]))) ++r_->numa_nodes;
    }
  }
  std::string path = o_.cpuinfo;
  if (path.empty()) path = root_ == "/sys" ? "/proc/cpuinfo" : join(root_, "cpuinfo");
  Cpu proto;
#if defined(__aarch64__)
  proto.arch = "arm64";
#elif defined(__PPC__) || defined(__powerpc64__)
  proto.arch = "ppc64";
#else
  proto.arch = "x86_64";
#endif
  std::string text;
  if (!read_text(path, &text, &why)) {
    warn(why + ": CPU vendor and model unknown");
  } else {
    std::stringstream ss(text);
    for (std::string line; std::getline(ss, line);) {
      const size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      const std::string key = trim(line.substr(0, colon)), value = trim(line.substr(colon + 1));
      long long v = 0;
      if (key == "vendor_id" && proto.vendor.empty()) {
        proto.vendor = value;
        proto.arch = "x86_64";
      } else if (key == "cpu family" && proto.family == 0) {
        if (parse_long(value, 10, &v)) proto.family = static_cast<int>(v);
        else warn(path + ": cpu family \"" + value + "\" is not a number");
      } else if (key == "model" && proto.model == 0) {
        if (parse_long(value, 10, &v)) proto.model = static_cast<int>(v);
        else warn(path + ": model \"" + value + "\" is not a number");
      } else if (key == "CPU implementer") {
        proto.arch = "arm64";
      } else if (key == "cpu" && value.compare(0, 5, "POWER") == 0) {
        proto.arch = "ppc64";
      }
    }
  }
  for (int numa : numas) {
    Cpu c = proto;
    const std::string nd = join(root_, "devices/system/node/node" + std::to_string(numa));
    read_text(join(nd, "cpulist"), &c.cpulist, &why);
    if (!read_text(join(nd, "cpumap"), &c.affinity, &why)) {
      if (!exists(nd)) note("NUMA node " + std::to_string(numa) + ": " + nd + " does not exist (no CPU affinity)");
      else warn(why + " (CPU " + std::to_string(numa) + " has no affinity)");
    }
    cpus_[numa] = c;
  }
}

std::string Detector::build_xml() {
  pugi::xml_document doc;
  pugi::xml_node sys = doc.append_child("system");
  sys.append_attribute("version") = 1;
  sys.append_attribute("name") = "detected";
  // Description: "8 GPUs (sm90), 4 NVSwitch, 8 NIC ports (400 Gb/s), 2 CPUs".
  std::set<int> sms;
  std::set<int64_t> nvswitches;
  std::set<double> speeds;
  for (int64_t g : gpus_) {
    sms.insert(pci_[g].sm);
    for (auto& [rid, cls] : pci_[g].tclass) {
      if (cls == kClassNvSwitch) nvswitches.insert(rid);
    }
  }
  for (auto& [id, n] : pci_) {
    for (const NetPort& p : n.ports) speeds.insert(p.mbps);
  }
  for (auto& [numa, p] : direct_nics_) speeds.insert(p.mbps);
  std::string desc = std::to_string(gpus_.size()) + " GPU" + (gpus_.size() == 1 ? "" : "s");
  if (!sms.empty()) {
    desc += " (sm";
    for (int sm : sms) desc += (sm == *sms.begin() ? "" : "/") + std::to_string(sm);
    desc += ")";
  }
  if (!nvswitches.empty()) desc += ", " + std::to_string(nvswitches.size()) + " NVSwitch";
  desc += ", " + std::to_string(r_->nets) + " NIC port" + (r_->nets == 1 ? "" : "s");
  if (!speeds.empty()) {
    char b[64];
    desc += " (";
    for (double s : speeds) {
      snprintf(b, sizeof b, "%s%g Gb/s", s == *speeds.begin() ? "" : "/", s / 1000.0);
      desc += b;
    }
    desc += ")";
  }
  desc += ", " + std::to_string(cpus_.size()) + " CPU" + (cpus_.size() == 1 ? "" : "s");
  sys.append_attribute("description") = desc.c_str();

  const bool gdr = exists(join(root_, "module/nvidia_peermem")) || exists(join(root_, "module/nv_peer_mem"));
  auto add_net = [&](pugi::xml_node nic, const NetPort& p) {
    pugi::xml_node e = nic.append_child("net");
    e.append_attribute("name") = p.name.c_str();
    e.append_attribute("dev") = p.dev;
    e.append_attribute("speed") = static_cast<long long>(std::llround(p.mbps));
    e.append_attribute("port") = p.port;
    e.append_attribute("latency") = 0;
    e.append_attribute("maxconn") = p.ib ? kIbMaxConn : kSocketMaxConn;
    e.append_attribute("gdr") = p.ib && gdr ? 1 : 0;
    e.append_attribute("coll") = 0;
  };
  // Children of every PCI node and of every CPU, in bus id order (NCCL keeps them sorted).
  std::map<int64_t, std::vector<int64_t>> kids;
  std::map<int, std::vector<int64_t>> tops;
  for (auto& [id, n] : pci_) {
    if (n.parent >= 0) kids[n.parent].push_back(id);
    else tops[n.numa].push_back(id);
  }
  std::function<void(pugi::xml_node, int64_t)> write = [&](pugi::xml_node parent, int64_t id) {
    const PciNode& n = pci_[id];
    pugi::xml_node e = parent.append_child("pci");
    e.append_attribute("busid") = pci_busid_string(id).c_str();
    e.append_attribute("class") = hex(n.cls, 6).c_str();
    if (!n.vendor.empty()) e.append_attribute("vendor") = n.vendor.c_str();
    if (!n.device.empty()) e.append_attribute("device") = n.device.c_str();
    if (!n.subsystem_vendor.empty()) e.append_attribute("subsystem_vendor") = n.subsystem_vendor.c_str();
    if (!n.subsystem_device.empty()) e.append_attribute("subsystem_device") = n.subsystem_device.c_str();
    if (!n.link_speed.empty()) e.append_attribute("link_speed") = n.link_speed.c_str();
    if (n.link_width > 0) e.append_attribute("link_width") = n.link_width;
    if (n.kind == PciKind::kGpu) {
      pugi::xml_node g = e.append_child("gpu");
      g.append_attribute("dev") = n.dev;
      g.append_attribute("sm") = n.sm;
      g.append_attribute("gdr") = 1;
      for (auto& [rid, count] : n.nvlinks) {
        pugi::xml_node l = g.append_child("nvlink");
        l.append_attribute("target") = pci_busid_string(rid).c_str();
        l.append_attribute("count") = count;
        l.append_attribute("tclass") = hex(n.tclass.at(rid), 6).c_str();
      }
    } else if (n.kind == PciKind::kNic) {
      pugi::xml_node nic = e.append_child("nic");
      for (const NetPort& p : n.ports) add_net(nic, p);
    }
    for (int64_t k : kids[id]) write(e, k);
  };
  std::map<int, std::vector<NetPort>> direct;
  for (auto& [numa, p] : direct_nics_) direct[numa].push_back(p);
  for (auto& [numa, c] : cpus_) {
    pugi::xml_node e = sys.append_child("cpu");
    e.append_attribute("numaid") = numa;
    if (!c.affinity.empty()) e.append_attribute("affinity") = c.affinity.c_str();
    e.append_attribute("arch") = c.arch.c_str();
    if (!c.vendor.empty()) e.append_attribute("vendor") = c.vendor.c_str();
    e.append_attribute("familyid") = c.family;
    e.append_attribute("modelid") = c.model;
    for (int64_t id : tops[numa]) write(e, id);
    if (!direct[numa].empty()) {
      pugi::xml_node nic = e.append_child("nic");
      for (const NetPort& p : direct[numa]) add_net(nic, p);
    }
  }
  std::ostringstream out;
  doc.save(out, "  ", pugi::format_indent | pugi::format_no_declaration);
  return out.str();
}

std::string Detector::build_summary() {
  std::string s;
  char b[512];
  for (auto& [numa, c] : cpus_) {
    snprintf(b, sizeof b, "cpu  NUMA %d  %s %s family %d model %d%s%s\n", numa, c.arch.c_str(),
             c.vendor.empty() ? "(vendor unknown)" : c.vendor.c_str(), c.family, c.model,
             c.cpulist.empty() ? "" : "  cpus ", c.cpulist.c_str());
    s += b;
  }
  std::function<void(int64_t, int)> line = [&](int64_t id, int depth) {
    const PciNode& n = pci_[id];
    const std::string ind(2 * depth, ' ');
    const std::string link = (n.link_speed.empty() ? std::string("speed unknown") : n.link_speed) + " x" +
                             (n.link_width > 0 ? std::to_string(n.link_width) : std::string("?"));
    const std::string where = n.parent < 0 ? "  NUMA " + std::to_string(n.numa) : std::string();
    if (n.kind == PciKind::kSwitch) {
      snprintf(b, sizeof b, "pci  %s%s  switch %s:%s  %s%s\n", ind.c_str(), pci_busid_string(id).c_str(),
               n.vendor.c_str(), n.device.c_str(), link.c_str(), where.c_str());
      s += b;
    } else if (n.kind == PciKind::kGpu) {
      int links = 0;
      std::set<int64_t> sw;
      for (auto& [rid, count] : n.nvlinks) {
        links += count;
        if (n.tclass.at(rid) == kClassNvSwitch) sw.insert(rid);
      }
      std::string nvl = links == 0 ? "no NVLink" : "NVLink x" + std::to_string(links);
      if (!sw.empty()) nvl += " to " + std::to_string(sw.size()) + " NVSwitch";
      if (links > 0 && sw.size() < n.nvlinks.size()) nvl += " to " + std::to_string(n.nvlinks.size() - sw.size()) + " GPU/CPU";
      snprintf(b, sizeof b, "gpu  %s%s  dev %d  sm%d  %s:%s  %s%s  %s\n", ind.c_str(), pci_busid_string(id).c_str(),
               n.dev, n.sm, n.vendor.c_str(), n.device.c_str(), link.c_str(), where.c_str(), nvl.c_str());
      s += b;
    } else {
      for (const NetPort& p : n.ports) {
        snprintf(b, sizeof b, "nic  %s%s  %s port %d  %s %g Mb/s  %s%s\n", ind.c_str(), pci_busid_string(id).c_str(),
                 p.name.c_str(), p.port, p.layer.c_str(), p.mbps, link.c_str(), where.c_str());
        s += b;
      }
    }
    for (auto& [kid, k] : pci_) {
      if (k.parent == id) line(kid, depth + 1);
    }
  };
  for (auto& [id, n] : pci_) {
    if (n.parent < 0) line(id, 0);
  }
  for (auto& [numa, p] : direct_nics_) {
    snprintf(b, sizeof b, "nic  (not on PCI)  %s  %s %g Mb/s  NUMA %d\n", p.name.c_str(), p.layer.c_str(), p.mbps,
             numa);
    s += b;
  }
  if (gpus_.empty()) {
    s += "no GPU found: no NVIDIA display or 3D controller (vendor 0x10de, class 0x0300/0x0302) under " +
         join(root_, "bus/pci/devices") + "\n";
  }
  return s;
}

}  // namespace

std::string detect_sysfs_root() {
  const char* e = getenv("CCLAB_SYSFS_ROOT");
  return e != nullptr && *e != '\0' ? std::string(e) : std::string("/sys");
}

bool detect_system(const DetectOptions& options, DetectResult* result, std::string* error) {
  *result = DetectResult{};
  Detector d(options, result);
  return d.run(error);
}

bool detect_topology(const DetectOptions& options, Topology* out, DetectResult* result, std::string* error) {
  if (!detect_system(options, result, error)) return false;
  if (result->gpu_busids.empty()) {
    if (error) *error = "no GPU found under " + options.sysfs_root + " (a model needs at least one)";
    return false;
  }
  std::string why;
  Topology t;
  if (!read_topology_xml_string(result->xml, "detected", &t, &why)) {
    if (error) *error = "the detected topology is not a valid model: " + why;
    return false;
  }
  *out = std::move(t);
  return true;
}

}  // namespace cclab
