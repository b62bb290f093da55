// runtime/graph/topo_xml.cc - NCCL's topology XML: reading it into a Topology, writing one back.
//
// [SECTION] The format (NCCL 2.28.9 src/graph/xml.cc, topo.cc), as read here
//   <system version="1" [name] [description]>           version must be 1; name -> Topology::name
//     <cpu numaid [affinity host_hash arch vendor familyid modelid]> -> kCpu (dev = numaid); CPUs are
//                                  joined by SYS links only when their host_hash (hex, NCCL's) is equal
//       <pci busid class [vendor device subsystem_vendor subsystem_device link_speed link_width]>
//         <pci ...> ...                                  nested bridges/switches -> kPci
//         <pci class="0x03...">  <gpu dev sm [rank gdr]>  -> kGpu
//                                  <nvlink target count [tclass]/>   NVLink to a GPU or an NVSwitch
//                                  <c2c count bw/>                   C2C to the local CPU (Grace)
//                                </gpu></pci>
//         <pci class="0x02..."><nic><net dev [name speed port latency guid maxconn gdr coll]/>...</nic></pci>
//                                                        -> kNic, and one kNet per <net>
//         <pci class="0x068000"/>                        an NVSwitch on PCIe -> kNvs
//         <pcilink target/>                              NCCL's P2P link between two PCI switches
//       <nic>...</nic>                                   a NIC without PCI identity, directly on the CPU
//     </cpu>
//     <fabric machines [oversubscription machines_per_leaf switch_latency_us cable_latency_us]/>  (cclab)
//   </system>
// Unknown elements are errors (NCCL skips them; a typo should not silently drop a GPU); unknown
// attributes are ignored, as NCCL does.
//
// [SECTION] Decisions where NCCL's reading is not cclab's
//   - NVSwitches: NCCL folds every NVLink whose target is not a GPU into one NVS node. cclab keeps one
//     kNvs per distinct target bus id, so the simulator sees each switch and its load.
//   - PCI-only skeletons (AWS p4d, Azure ndv4 files): a <pci> of class 0x03xxxx without a <gpu> child, or
//     0x02xxxx without a <nic> child, is ignored by NCCL (it fuses the file with what it detects). cclab
//     has nothing to detect, so such a device becomes a GPU (sm 80, gdr 1, rank -1) or a one-port NIC
//     (NCCL's default speed, 10000 Mb/s), numbered after the explicit devs in document order.
//   - A GPU-to-GPU NVLink is one bidirectional cclab link; each <nvlink> element describes its own
//     direction. Several <nvlink> elements to the same target add up (count and bandwidth), as in NCCL.
//
// [SECTION] Bandwidths (GB/s per direction). model_bw is NCCL's number, bw the physical rate.
//   NVLink  model: count x 18 (sm60) / 20 (sm70, sm80) / 12 (sm86) / 20.6 (sm90) / 40.1 (sm100)
//           phys:  count x 20 (NVLink1) / 25 (NVLink2, 3, 4) / 14.0625 (sm86, NVLink3 bridge) / 50 (NVLink5)
//   PCIe    model: width x speed / 80 with speed 15, 30, 60, 120, 240, 480 (x100 Mb/s per lane) for
//                  2.5 ... 64 GT/s; width 0 reads as 16 and an unknown speed as 8 GT/s (NCCL's fallbacks)
//           phys:  width x per-lane rate after 8b/10b or 128b/130b encoding: 0.25, 0.5, 0.984375,
//                  1.96875, 3.9375, 7.875 (x16 Gen3/4/5: 15.75, 31.5, 63, as the presets)
//   SYS     model: NCCL's inter-CPU constants (Intel BDW 6, SKL 10, SPR 22, ERP 40; AMD 16; Zhaoxin 6/9;
//                  Power9 32; Arm 6; otherwise 5000)
//           phys:  the same number (cclab has no better source for UPI/xGMI rates)
//   NIC->NET (kLoc) and NIC on CPU without PCI (kPci): speed / 8000, and 5000 (NCCL's LOC_BW).
//   C2C     model = phys = count x bw / 1000.
// Where a link of the model differs from what the attributes above give (a preset's measured latency,
// a physical rate), the writer adds cclab attributes on the element that carries the link, and the
// reader applies them: link_bw (physical), link_model_bw, link_latency (µs), link_lanes, link_gen; SYS
// links take sys_bw, sys_model_bw, sys_latency, sys_lanes, sys_gen on the <cpu> they leave. NCCL
// ignores attributes it does not know. Latency defaults are the presets' figures: NVLink 0.15, PCIe
// 0.1, SYS 0.2, NIC port 0.5.
#include <errno.h>
#include <string.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <pugixml.hpp>
#include <set>
#include <utility>

#include "graph/topo.h"

namespace cclab {

double nvlink_model_bw(int sm) {  // ncclTopoNVLinkBw
  return sm >= 100 ? 40.1 : sm >= 90 ? 20.6 : sm == 86 ? 12.0 : sm >= 80 ? 20.0 : sm >= 70 ? 20.0
       : sm >= 60 ? 18.0 : 20.0;
}

namespace {

// ---- constants --------------------------------------------------------------------------------------

constexpr double kLocBw = 5000.0;  // NCCL's LOC_BW
constexpr int kNcclDefaultNetMbps = 10000;
constexpr int kDefaultSkeletonSm = 80;
// Latencies (µs) of the links derived from XML; the file carries none, so these are the presets'
// order-of-magnitude figures (topo_presets.cc): NVLink hop, PCIe link, inter-socket link, NIC to port.
constexpr double kNvlLatencyUs = 0.15;
constexpr double kPciLatencyUs = 0.1;
constexpr double kSysLatencyUs = 0.2;
constexpr double kC2cLatencyUs = 0.15;
constexpr double kNicPortLatencyUs = 0.5;
constexpr int kPciClassNvSwitch = 0x068000;
constexpr int kPciClassNvlCpu = 0x068001;
constexpr int kPciClassBridge = 0x060400;

double nvlink_phys_bw(int sm) {
  return sm >= 100 ? 50.0 : sm == 86 ? 14.0625 : sm >= 70 ? 25.0 : sm >= 60 ? 20.0 : 25.0;
}
int nvlink_generation(int sm) {
  return sm >= 100 ? 5 : sm >= 90 ? 4 : sm >= 80 ? 3 : sm >= 70 ? 2 : sm >= 60 ? 1 : 3;
}

struct PciGen {
  const char* speed;
  int nccl_speed;   // x100 Mb/s per lane, NCCL's kvDictPciGen
  double lane_gbs;  // physical GB/s per lane after line encoding
  int generation;
};
const PciGen kPciGens[] = {
    {"2.5 GT/s", 15, 0.25, 1},           {"5 GT/s", 30, 0.5, 2},
    {"8 GT/s", 60, 0.984375, 3},         {"16 GT/s", 120, 1.96875, 4},
    {"32 GT/s", 240, 3.9375, 5},         {"2.5 GT/s PCIe", 15, 0.25, 1},
    {"5.0 GT/s PCIe", 30, 0.5, 2},       {"8.0 GT/s PCIe", 60, 0.984375, 3},
    {"16.0 GT/s PCIe", 120, 1.96875, 4}, {"32.0 GT/s PCIe", 240, 3.9375, 5},
    {"64.0 GT/s PCIe", 480, 7.875, 6},
};
const PciGen kPciFallback = {"", 60, 0.984375, 3};

const PciGen& pci_gen(const std::string& speed) {
  for (const PciGen& g : kPciGens) {
    if (speed == g.speed) return g;
  }
  return kPciFallback;
}

// The PCIe link from a node to its parent, derived from the node's link_speed and link_width.
struct LinkValues {
  double bw = 0, model_bw = 0, latency_us = 0;
  int lanes = 1, generation = 0;
};

LinkValues pci_link_values(const TopoNode& n) {
  const PciGen& g = pci_gen(n.link_speed);
  int width = n.link_width == 0 ? 16 : n.link_width;
  LinkValues v;
  v.model_bw = width * g.nccl_speed / 80.0;
  v.bw = width * g.lane_gbs;
  v.latency_us = kPciLatencyUs;
  v.lanes = width;
  v.generation = g.generation;
  return v;
}

LinkValues nvlink_values(int sm, int count) {
  LinkValues v;
  v.model_bw = count * nvlink_model_bw(sm);
  v.bw = count * nvlink_phys_bw(sm);
  v.latency_us = kNvlLatencyUs;
  v.lanes = count;
  v.generation = nvlink_generation(sm);
  return v;
}

double inter_cpu_bw(const TopoNode& cpu) {  // ncclTopoGetInterCpuBw
  switch (cpu.arch) {
    case CpuArch::kPower: return 32.0;
    case CpuArch::kArm: return 6.0;
    case CpuArch::kX86:
      if (cpu.vendor == CpuVendor::kIntel) {
        if (cpu.familyid == 6 && cpu.modelid >= 0xCF) return 40.0;
        if (cpu.familyid == 6 && cpu.modelid >= 0x8F) return 22.0;
        if (cpu.familyid == 6 && cpu.modelid >= 0x55) return 10.0;
        return 6.0;
      }
      if (cpu.vendor == CpuVendor::kAmd) return 16.0;
      if (cpu.vendor == CpuVendor::kZhaoxin) return cpu.familyid == 7 && cpu.modelid == 0x5B ? 9.0 : 6.0;
      return kLocBw;
    case CpuArch::kUnknown: break;
  }
  return kLocBw;
}

LinkValues sys_values(const TopoNode& cpu) {
  LinkValues v;
  v.model_bw = v.bw = inter_cpu_bw(cpu);
  v.latency_us = kSysLatencyUs;
  return v;
}

LinkValues nic_port_values(const TopoNode& net) {
  LinkValues v;
  v.model_bw = v.bw = net.net_speed_mbps / 8000.0;
  v.latency_us = kNicPortLatencyUs;
  return v;
}

LinkValues cpu_nic_values() {
  LinkValues v;
  v.model_bw = v.bw = kLocBw;
  v.latency_us = kPciLatencyUs;
  return v;
}

// ---- small helpers ----------------------------------------------------------------------------------

std::string fmt_double(double x) {  // shortest text that reads back as the same double
  char buf[64];
  if (x == std::floor(x) && std::fabs(x) < 1e15) {  // integers as integers: NCCL reads some with strtol
    snprintf(buf, sizeof buf, "%.0f", x);
    return buf;
  }
  for (int prec = 6; prec <= 17; ++prec) {
    snprintf(buf, sizeof buf, "%.*g", prec, x);
    if (strtod(buf, nullptr) == x) break;
  }
  return buf;
}

std::string fmt_hex(uint64_t x, int width = 0) {
  char buf[32];
  snprintf(buf, sizeof buf, "0x%0*llx", width, static_cast<unsigned long long>(x));
  return buf;
}

bool is_hex(char c) { return isxdigit(static_cast<unsigned char>(c)) != 0; }
int hex_value(char c) { return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10; }

}  // namespace

std::string pci_busid_string(int64_t id) {  // NCCL's int64ToBusId
  char buf[40];
  snprintf(buf, sizeof buf, "%04llx:%02llx:%02llx.%01llx", static_cast<unsigned long long>(id >> 20),
           static_cast<unsigned long long>((id & 0xff000) >> 12),
           static_cast<unsigned long long>((id & 0xff0) >> 4), static_cast<unsigned long long>(id & 0xf));
  return buf;
}

// "dddd:bb:dd.f" (domain of 1-8 hex digits) -> NCCL's packed int64. False when malformed.
bool parse_pci_busid(const char* s, int64_t* out) {
  const char* p = s;
  int64_t v = 0;
  int n = 0;
  while (is_hex(*p) && n < 8) v = v * 16 + hex_value(*p++), ++n;
  if (n == 0 || *p++ != ':') return false;
  for (int part = 0; part < 3; ++part) {
    int digits = part == 2 ? 1 : 2;
    for (int i = 0; i < digits; ++i) {
      if (!is_hex(*p)) return false;
      v = v * 16 + hex_value(*p++);
    }
    if (part == 0 && *p++ != ':') return false;
    if (part == 1 && *p++ != '.') return false;
  }
  if (*p != '\0') return false;
  *out = v;
  return true;
}

namespace {

bool parse_int64(const char* s, int64_t* out) {
  if (s == nullptr || *s == '\0') return false;
  const char* p = s;
  while (*p == ' ') ++p;
  bool neg = *p == '-';
  const char* digits = neg || *p == '+' ? p + 1 : p;
  int base = (digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X')) ? 16 : 10;
  if (!is_hex(digits[base == 16 ? 2 : 0])) return false;
  errno = 0;
  char* end = nullptr;
  long long v = strtoll(p, &end, base);
  while (*end == ' ') ++end;
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
}

bool parse_uint64_hex(const char* s, uint64_t* out) {  // NCCL reads guid with base 16
  if (s == nullptr || *s == '\0') return false;
  errno = 0;
  char* end = nullptr;
  unsigned long long v = strtoull(s, &end, 16);
  if (errno != 0 || end == s || *end != '\0') return false;
  *out = v;
  return true;
}

bool parse_double(const char* s, double* out) {
  if (s == nullptr || *s == '\0') return false;
  errno = 0;
  char* end = nullptr;
  double v = strtod(s, &end);
  while (*end == ' ') ++end;
  if (errno != 0 || end == s || *end != '\0' || !std::isfinite(v)) return false;
  *out = v;
  return true;
}


const char* arch_string(CpuArch a) {
  switch (a) {
    case CpuArch::kX86: return "x86_64";
    case CpuArch::kArm: return "arm64";
    case CpuArch::kPower: return "ppc64";
    case CpuArch::kUnknown: break;
  }
  return "unknown";
}
const char* vendor_string(CpuVendor v) {
  switch (v) {
    case CpuVendor::kIntel: return "GenuineIntel";
    case CpuVendor::kAmd: return "AuthenticAMD";
    case CpuVendor::kZhaoxin: return "CentaurHauls";
    case CpuVendor::kUnknown: break;
  }
  return "unknown";
}

// ---- reading ----------------------------------------------------------------------------------------

class XmlTopoReader {
 public:
  XmlTopoReader(const std::string& text, const std::string& file) : text_(text), file_(file) {}

  bool read(Topology* out, std::string* error);

 private:
  // Error reporting: "FILE:LINE: what". Always returns false.
  bool fail_at(ptrdiff_t offset, const std::string& what) {
    if (error_.empty()) error_ = file_ + ":" + std::to_string(line_of(offset)) + ": " + what;
    return false;
  }
  bool fail(pugi::xml_node n, const std::string& what) { return fail_at(n.offset_debug(), what); }
  int line_of(ptrdiff_t offset) const {
    if (offset < 0) return 1;
    size_t end = std::min(static_cast<size_t>(offset), text_.size());
    return 1 + static_cast<int>(std::count(text_.begin(), text_.begin() + end, '\n'));
  }
  int line(pugi::xml_node n) const { return line_of(n.offset_debug()); }

  // Attribute access with errors naming the element and the attribute.
  const char* attr(pugi::xml_node n, const char* name) {
    pugi::xml_attribute a = n.attribute(name);
    return a ? a.value() : nullptr;
  }
  bool req_str(pugi::xml_node n, const char* name, std::string* out) {
    const char* v = attr(n, name);
    if (v == nullptr) return fail(n, std::string("<") + n.name() + "> lacks the required attribute " + name);
    *out = v;
    return true;
  }
  bool get_int(pugi::xml_node n, const char* name, bool required, int64_t def, int64_t* out) {
    const char* v = attr(n, name);
    if (v == nullptr) {
      if (required) return fail(n, std::string("<") + n.name() + "> lacks the required attribute " + name);
      *out = def;
      return true;
    }
    if (!parse_int64(v, out)) {
      return fail(n, std::string("<") + n.name() + "> attribute " + name + "=\"" + v + "\" is not an integer");
    }
    return true;
  }
  bool get_int(pugi::xml_node n, const char* name, bool required, int def, int* out) {
    int64_t v = 0;
    if (!get_int(n, name, required, static_cast<int64_t>(def), &v)) return false;
    if (v < INT32_MIN || v > INT32_MAX) {
      return fail(n, std::string("<") + n.name() + "> attribute " + name + " is out of range");
    }
    *out = static_cast<int>(v);
    return true;
  }
  bool get_double(pugi::xml_node n, const char* name, bool required, double def, double* out) {
    const char* v = attr(n, name);
    if (v == nullptr) {
      if (required) return fail(n, std::string("<") + n.name() + "> lacks the required attribute " + name);
      *out = def;
      return true;
    }
    if (!parse_double(v, out)) {
      return fail(n, std::string("<") + n.name() + "> attribute " + name + "=\"" + v + "\" is not a number");
    }
    return true;
  }
  bool get_busid(pugi::xml_node n, const char* name, int64_t* out) {
    std::string s;
    if (!req_str(n, name, &s)) return false;
    if (!parse_pci_busid(s.c_str(), out)) {
      return fail(n, std::string("<") + n.name() + "> attribute " + name + "=\"" + s +
                         "\" is not a PCI bus id (dddd:bb:dd.f)");
    }
    return true;
  }
  bool get_class(pugi::xml_node n, const char* name, int* out) {
    std::string s;
    if (!req_str(n, name, &s)) return false;
    int64_t v = 0;
    if (!parse_int64(s.c_str(), &v) || v < 0 || v > 0xffffff) {
      return fail(n, std::string("<") + n.name() + "> attribute " + name + "=\"" + s +
                         "\" is not a PCI class code (0xCCSSPP)");
    }
    *out = static_cast<int>(v);
    return true;
  }
  // cclab's override attributes for one direction of a link (see the header comment).
  bool get_overrides(pugi::xml_node n, const char* prefix, LinkValues* v);

  bool read_system(pugi::xml_node sys);
  bool read_cpu(pugi::xml_node cpu);
  bool read_pci(pugi::xml_node pci, int parent, int cpu);
  bool read_gpu(pugi::xml_node gpu, int node);
  bool read_nic(pugi::xml_node nic, int node);
  bool read_net(pugi::xml_node net, int nic);
  bool read_fabric(pugi::xml_node fabric);
  bool add_nvlinks();
  bool add_c2c_and_pcilinks();
  void add_sys_links();
  // Every node is added with the CPU whose PCI tree holds it (-1: none), for C2C and NVLink-to-CPU.
  int add_node(TopoNode n, int cpu) {
    cpu_of_.push_back(cpu);
    return t_.add_node(std::move(n));
  }
  int connect(int a, int b, LinkType type, const LinkValues& v) {
    return t_.connect(a, b, type, v.bw, v.latency_us, v.lanes, v.generation, v.model_bw);
  }
  static void set_direction(TopoLink* l, const LinkValues& v) {
    l->bw = v.bw;
    l->model_bw = v.model_bw;
    l->latency_us = v.latency_us;
    l->lanes = v.lanes;
    l->generation = v.generation;
  }
  std::string mname(const char* kind, int index) const { return "m0." + std::string(kind) + std::to_string(index); }

  const std::string& text_;
  const std::string& file_;
  std::string error_;
  Topology t_;

  struct Pending {
    pugi::xml_node xml;
    int node;  // the GPU (nvlink, c2c) or PCI switch (pcilink) it belongs to
  };
  std::vector<Pending> nvlinks_, c2cs_, pcilinks_;
  std::map<int64_t, std::pair<int, int>> busids_;  // bus id -> (node, line)
  std::map<int, int> gpu_devs_, net_devs_;          // dev -> line
  std::vector<int> skeleton_gpus_, skeleton_nics_;  // nodes whose dev is assigned at the end
  std::vector<int> cpu_of_;                         // node -> its CPU node (PCI tree only)
  std::map<int, LinkValues> sys_overrides_;         // CPU node -> its outgoing SYS links
  int npci_ = 0, nnvs_ = 0, nnic_ = 0;
  bool has_fabric_ = false;
  FabricSpec fabric_;
};

bool XmlTopoReader::get_overrides(pugi::xml_node n, const char* prefix, LinkValues* v) {
  std::string p = prefix;
  return get_double(n, (p + "bw").c_str(), false, v->bw, &v->bw) &&
         get_double(n, (p + "model_bw").c_str(), false, v->model_bw, &v->model_bw) &&
         get_double(n, (p + "latency").c_str(), false, v->latency_us, &v->latency_us) &&
         get_int(n, (p + "lanes").c_str(), false, v->lanes, &v->lanes) &&
         get_int(n, (p + "gen").c_str(), false, v->generation, &v->generation);
}

bool XmlTopoReader::read(Topology* out, std::string* error) {
  pugi::xml_document doc;
  pugi::xml_parse_result r = doc.load_buffer(text_.data(), text_.size(), pugi::parse_default, pugi::encoding_utf8);
  if (!r) {
    bool at_end = static_cast<size_t>(r.offset) >= text_.size() ||
                  text_.find_first_not_of(" \t\r\n", r.offset) == std::string::npos;
    // At the end of the text, name the last line that has something on it (where the cut is).
    ptrdiff_t where = at_end ? static_cast<ptrdiff_t>(text_.find_last_not_of(" \t\r\n")) : r.offset;
    fail_at(where, std::string(at_end ? "truncated XML (unexpected end of file): " : "malformed XML: ") +
                       r.description());
    if (error) *error = error_;
    return false;
  }
  pugi::xml_node root;
  for (pugi::xml_node n = doc.first_child(); n; n = n.next_sibling()) {
    if (n.type() != pugi::node_element) continue;
    if (root) {
      fail(n, std::string("a second top-level element <") + n.name() + ">");
      if (error) *error = error_;
      return false;
    }
    root = n;
  }
  bool ok = true;
  if (!root) {
    ok = fail_at(0, "no <system> element");
  } else if (strcmp(root.name(), "system") != 0) {
    ok = fail(root, std::string("expected <system>, found <") + root.name() + ">");
  } else {
    ok = read_system(root);
  }
  if (ok && has_fabric_ && fabric_.machines > 1) {
    std::string why;
    if (!replicate_machines(&t_, fabric_.machines, fabric_, &why)) {
      ok = fail(root.child("fabric"), "<fabric>: " + why);
    }
  }
  if (ok && !t_.validate(&error_)) {
    error_ = file_ + ": inconsistent topology: " + error_;
    ok = false;
  }
  if (!ok) {
    if (error) *error = error_;
    return false;
  }
  if (!(has_fabric_ && fabric_.machines > 1)) t_.compute_paths();  // replicate_machines computed them
  *out = std::move(t_);
  return true;
}

bool XmlTopoReader::read_system(pugi::xml_node sys) {
  int version = 0;
  if (!get_int(sys, "version", true, 0, &version)) return false;
  if (version != 1) return fail(sys, "<system> version " + std::to_string(version) + " is not supported (need 1)");
  const char* name = attr(sys, "name");
  t_.name = name ? name : file_;
  const char* desc = attr(sys, "description");
  if (desc) t_.description = desc;
  for (pugi::xml_node c = sys.first_child(); c; c = c.next_sibling()) {
    if (c.type() != pugi::node_element) continue;
    if (strcmp(c.name(), "cpu") == 0) {
      if (!read_cpu(c)) return false;
    } else if (strcmp(c.name(), "fabric") == 0) {
      if (has_fabric_) return fail(c, "a second <fabric>");
      if (!read_fabric(c)) return false;
    } else {
      return fail(c, std::string("unknown element <") + c.name() + "> in <system> (expected <cpu> or <fabric>)");
    }
  }
  // Devices without explicit devs (PCI-only skeletons) take the next free numbers in document order.
  int next = 0;
  for (int g : skeleton_gpus_) {
    while (gpu_devs_.count(next)) ++next;
    t_.nodes[g].dev = next;
    t_.nodes[g].name = mname("gpu", next);
    gpu_devs_[next] = 0;
  }
  next = 0;
  for (int nic : skeleton_nics_) {
    while (net_devs_.count(next)) ++next;
    TopoNode net;
    net.type = TopoNodeType::kNet;
    net.dev = next;
    net.name = mname("net", next);
    net.net_speed_mbps = kNcclDefaultNetMbps;
    net.port = 1;
    net.gdr = false;
    t_.nodes[nic].net_speed_mbps = net.net_speed_mbps;
    int ni = add_node(net, -1);
    connect(nic, ni, LinkType::kLoc, nic_port_values(t_.nodes[ni]));
    net_devs_[next] = 0;
  }
  if (!add_nvlinks() || !add_c2c_and_pcilinks()) return false;
  add_sys_links();
  t_.machines = 1;
  if (has_fabric_) t_.fabric = fabric_;
  t_.fabric.machines = 1;
  return true;
}

bool XmlTopoReader::read_fabric(pugi::xml_node f) {
  has_fabric_ = true;
  FabricSpec d;
  if (!get_int(f, "machines", true, 1, &fabric_.machines) ||
      !get_double(f, "oversubscription", false, d.oversubscription, &fabric_.oversubscription) ||
      !get_int(f, "machines_per_leaf", false, d.machines_per_leaf, &fabric_.machines_per_leaf) ||
      !get_double(f, "switch_latency_us", false, d.switch_latency_us, &fabric_.switch_latency_us) ||
      !get_double(f, "cable_latency_us", false, d.cable_latency_us, &fabric_.cable_latency_us)) {
    return false;
  }
  if (fabric_.machines < 1) return fail(f, "<fabric> machines must be at least 1");
  if (fabric_.oversubscription <= 0) return fail(f, "<fabric> oversubscription must be positive");
  if (fabric_.machines_per_leaf < 1) return fail(f, "<fabric> machines_per_leaf must be at least 1");
  if (f.first_child().type() == pugi::node_element) return fail(f.first_child(), "<fabric> takes no children");
  return true;
}

bool XmlTopoReader::read_cpu(pugi::xml_node x) {
  TopoNode cpu;
  cpu.type = TopoNodeType::kCpu;
  if (!get_int(x, "numaid", true, 0, &cpu.dev)) return false;
  for (int c : t_.nodes_of(TopoNodeType::kCpu)) {
    if (t_.nodes[c].dev == cpu.dev) return fail(x, "duplicate <cpu numaid=\"" + std::to_string(cpu.dev) + "\">");
  }
  cpu.name = mname("cpu", cpu.dev);
  const char* s = attr(x, "affinity");
  if (s) cpu.affinity = s;
  s = attr(x, "host_hash");
  if (s && !parse_uint64_hex(s, &cpu.host_hash)) {
    return fail(x, std::string("<cpu> host_hash \"") + s + "\" is not a hexadecimal number");
  }
  s = attr(x, "arch");
  if (s) {
    cpu.arch = strcmp(s, "x86_64") == 0 ? CpuArch::kX86 : strcmp(s, "arm64") == 0 ? CpuArch::kArm
             : strcmp(s, "ppc64") == 0 ? CpuArch::kPower : CpuArch::kUnknown;
  }
  s = attr(x, "vendor");
  if (s) {
    cpu.vendor = strcmp(s, "GenuineIntel") == 0 ? CpuVendor::kIntel
               : strcmp(s, "AuthenticAMD") == 0 ? CpuVendor::kAmd
               : (strcmp(s, "CentaurHauls") == 0 || strcmp(s, "  Shanghai  ") == 0) ? CpuVendor::kZhaoxin
               : CpuVendor::kUnknown;
  }
  if (!get_int(x, "familyid", false, 0, &cpu.familyid) || !get_int(x, "modelid", false, 0, &cpu.modelid)) {
    return false;
  }
  LinkValues sys = sys_values(cpu);
  if (!get_overrides(x, "sys_", &sys)) return false;
  int ci = add_node(cpu, static_cast<int>(t_.nodes.size()));
  sys_overrides_[ci] = sys;
  int direct_nic = -1;
  for (pugi::xml_node c = x.first_child(); c; c = c.next_sibling()) {
    if (c.type() != pugi::node_element) continue;
    if (strcmp(c.name(), "pci") == 0) {
      if (!read_pci(c, ci, ci)) return false;
    } else if (strcmp(c.name(), "nic") == 0) {
      // NCCL merges every <nic> directly under one CPU into one NIC node linked to the CPU at LOC_BW.
      if (direct_nic < 0) {
        TopoNode nic;
        nic.type = TopoNodeType::kNic;
        nic.dev = nnic_;
        nic.name = mname("nic", nnic_++);
        direct_nic = add_node(nic, ci);
        LinkValues v = cpu_nic_values();
        if (!get_overrides(c, "link_", &v)) return false;
        connect(ci, direct_nic, LinkType::kPci, v);
      }
      if (!read_nic(c, direct_nic)) return false;
    } else {
      return fail(c, std::string("unknown element <") + c.name() + "> in <cpu> (expected <pci> or <nic>)");
    }
  }
  return true;
}

bool XmlTopoReader::read_pci(pugi::xml_node x, int parent, int cpu) {
  TopoNode n;
  if (!get_busid(x, "busid", &n.busid) || !get_class(x, "class", &n.pci_class)) return false;
  auto dup = busids_.find(n.busid);
  if (dup != busids_.end()) {
    // A bus id seen before: either one of this element's ancestors (the nesting loops back on itself)
    // or another device.
    for (pugi::xml_node a = x.parent(); a; a = a.parent()) {
      const char* b = a.attribute("busid").value();
      int64_t id = 0;
      if (strcmp(a.name(), "pci") == 0 && parse_pci_busid(b, &id) && id == n.busid) {
        return fail(x, "PCI cycle: bus id " + pci_busid_string(n.busid) + " is nested inside itself (line " +
                           std::to_string(line(a)) + ")");
      }
    }
    return fail(x, "duplicate PCI bus id " + pci_busid_string(n.busid) + " (first at line " +
                       std::to_string(dup->second.second) + ")");
  }
  const char* s;
  if ((s = attr(x, "vendor"))) n.vendor_id = s;
  if ((s = attr(x, "device"))) n.device_id = s;
  if ((s = attr(x, "subsystem_vendor"))) n.subsystem_vendor = s;
  if ((s = attr(x, "subsystem_device"))) n.subsystem_device = s;
  if ((s = attr(x, "link_speed"))) n.link_speed = s;
  if (!get_int(x, "link_width", false, 0, &n.link_width)) return false;
  if (n.link_width < 0) return fail(x, "<pci> link_width must not be negative");

  pugi::xml_node gpu, nic;
  for (pugi::xml_node c = x.first_child(); c; c = c.next_sibling()) {
    if (c.type() != pugi::node_element) continue;
    const char* cn = c.name();
    if (strcmp(cn, "gpu") == 0) {
      if (gpu) return fail(c, "a second <gpu> in one <pci>");
      gpu = c;
    } else if (strcmp(cn, "nic") == 0) {
      if (nic) return fail(c, "a second <nic> in one <pci>");
      nic = c;
    } else if (strcmp(cn, "pci") != 0 && strcmp(cn, "pcilink") != 0) {
      return fail(c, std::string("unknown element <") + cn + "> in <pci> (expected <pci>, <gpu>, <nic> or <pcilink>)");
    }
  }
  if (gpu && nic) return fail(nic, "a <pci> holds both a <gpu> and a <nic>");
  int cls = n.pci_class >> 16;
  bool skeleton_gpu = !gpu && !nic && cls == 0x03;
  bool skeleton_nic = !gpu && !nic && cls == 0x02;
  if (gpu || skeleton_gpu) {
    n.type = TopoNodeType::kGpu;
  } else if (nic || skeleton_nic) {
    n.type = TopoNodeType::kNic;
    n.dev = nnic_;
    n.name = mname("nic", nnic_++);
  } else if (n.pci_class == kPciClassNvSwitch) {
    n.type = TopoNodeType::kNvs;
    n.dev = nnvs_;
    n.name = mname("nvs", nnvs_++);
  } else {
    n.type = TopoNodeType::kPci;
    n.dev = npci_;
    n.name = mname("pci", npci_++);
  }
  if (skeleton_gpu) {
    n.sm = kDefaultSkeletonSm;
    n.gdr = true;
    n.rank = -1;
  }
  LinkValues up = pci_link_values(n);
  if (!get_overrides(x, "link_", &up)) return false;
  int ni = add_node(n, cpu);
  busids_[n.busid] = {ni, line(x)};
  connect(parent, ni, LinkType::kPci, up);
  if (skeleton_gpu) skeleton_gpus_.push_back(ni);
  if (skeleton_nic) skeleton_nics_.push_back(ni);
  if (gpu && !read_gpu(gpu, ni)) return false;
  if (nic && !read_nic(nic, ni)) return false;
  for (pugi::xml_node c = x.first_child(); c; c = c.next_sibling()) {
    if (c.type() != pugi::node_element) continue;
    if (strcmp(c.name(), "pci") == 0) {
      if (n.type != TopoNodeType::kPci) {
        return fail(c, std::string("a <pci> nested in a ") + topo_node_type_name(n.type) +
                           " device (only bridges and switches hold <pci>)");
      }
      if (!read_pci(c, ni, cpu)) return false;
    } else if (strcmp(c.name(), "pcilink") == 0) {
      if (n.type != TopoNodeType::kPci) return fail(c, "<pcilink> outside a PCI switch");
      pcilinks_.push_back({c, ni});
    }
  }
  return true;
}

bool XmlTopoReader::read_gpu(pugi::xml_node x, int ni) {
  TopoNode& n = t_.nodes[ni];
  int gdr = 1;
  if (!get_int(x, "dev", true, 0, &n.dev) || !get_int(x, "sm", true, 0, &n.sm) ||
      !get_int(x, "rank", false, -1, &n.rank) || !get_int(x, "gdr", false, 1, &gdr)) {
    return false;
  }
  n.gdr = gdr != 0;
  if (n.dev < 0) return fail(x, "<gpu> dev must not be negative");
  if (n.sm <= 0) return fail(x, "<gpu> sm must be positive (compute capability x10, e.g. 90)");
  auto dup = gpu_devs_.find(n.dev);
  if (dup != gpu_devs_.end()) {
    return fail(x, "duplicate <gpu dev=\"" + std::to_string(n.dev) + "\"> (first at line " +
                       std::to_string(dup->second) + ")");
  }
  gpu_devs_[n.dev] = line(x);
  n.name = mname("gpu", n.dev);
  for (pugi::xml_node c = x.first_child(); c; c = c.next_sibling()) {
    if (c.type() != pugi::node_element) continue;
    if (strcmp(c.name(), "nvlink") == 0) {
      nvlinks_.push_back({c, ni});
    } else if (strcmp(c.name(), "c2c") == 0) {
      c2cs_.push_back({c, ni});
    } else {
      return fail(c, std::string("unknown element <") + c.name() + "> in <gpu> (expected <nvlink> or <c2c>)");
    }
  }
  return true;
}

bool XmlTopoReader::read_nic(pugi::xml_node x, int nic) {
  for (pugi::xml_node c = x.first_child(); c; c = c.next_sibling()) {
    if (c.type() != pugi::node_element) continue;
    if (strcmp(c.name(), "net") != 0) {
      return fail(c, std::string("unknown element <") + c.name() + "> in <nic> (expected <net>)");
    }
    if (!read_net(c, nic)) return false;
  }
  return true;
}

bool XmlTopoReader::read_net(pugi::xml_node x, int nic) {
  TopoNode n;
  n.type = TopoNodeType::kNet;
  int gdr = 0, coll = 0;
  double mbps = 0;
  if (!get_int(x, "dev", true, 0, &n.dev) || !get_double(x, "speed", false, 0, &mbps) ||
      !get_int(x, "port", false, 0, &n.port) || !get_double(x, "latency", false, 0, &n.net_latency_us) ||
      !get_int(x, "maxconn", false, 0, &n.maxconn) || !get_int(x, "gdr", false, 0, &gdr) ||
      !get_int(x, "coll", false, 0, &coll)) {
    return false;
  }
  if (n.dev < 0) return fail(x, "<net> dev must not be negative");
  auto dup = net_devs_.find(n.dev);
  if (dup != net_devs_.end()) {
    return fail(x, "duplicate <net dev=\"" + std::to_string(n.dev) + "\"> (first at line " +
                       std::to_string(dup->second) + ")");
  }
  net_devs_[n.dev] = line(x);
  const char* g = attr(x, "guid");
  if (g && !parse_uint64_hex(g, &n.guid)) {
    return fail(x, std::string("<net> attribute guid=\"") + g + "\" is not a hexadecimal number");
  }
  const char* s = attr(x, "name");
  if (s) n.net_name = s;
  n.net_speed_mbps = mbps <= 0 ? kNcclDefaultNetMbps : mbps;  // NCCL: some NICs report -1
  n.gdr = gdr != 0;
  n.coll = coll != 0;
  n.name = mname("net", n.dev);
  LinkValues v = nic_port_values(n);
  if (!get_overrides(x, "link_", &v)) return false;
  // The NIC node carries its first port's name and speed, as the presets build it.
  TopoNode& nn = t_.nodes[nic];
  if (nn.net_name.empty() && nn.net_speed_mbps == 0) {
    nn.net_name = n.net_name;
    nn.net_speed_mbps = n.net_speed_mbps;
  }
  int ni = add_node(n, -1);
  connect(nic, ni, LinkType::kLoc, v);
  return true;
}

bool XmlTopoReader::add_nvlinks() {
  // Which bus ids are GPUs, which NVSwitches on PCIe.
  std::map<int64_t, int> gpu_by_bus, nvs_by_bus;
  for (auto& [bus, where] : busids_) {
    TopoNodeType ty = t_.nodes[where.first].type;
    if (ty == TopoNodeType::kGpu) gpu_by_bus[bus] = where.first;
    if (ty == TopoNodeType::kNvs) nvs_by_bus[bus] = where.first;
  }
  // GPU-to-GPU directions (from, to) already given by an element, and its last element (for errors).
  std::map<std::pair<int, int>, pugi::xml_node> gpu_pair_xml;
  for (const Pending& p : nvlinks_) {
    pugi::xml_node x = p.xml;
    int64_t target = 0;
    int count = 0;
    if (!get_busid(x, "target", &target) || !get_int(x, "count", true, 0, &count)) return false;
    if (count <= 0) return fail(x, "<nvlink> count must be positive");
    const char* tc = attr(x, "tclass");
    int tclass = -1;
    if (tc) {
      int64_t v = 0;
      if (!parse_int64(tc, &v) || v < 0 || v > 0xffffff) {
        return fail(x, std::string("<nvlink> attribute tclass=\"") + tc + "\" is not a PCI class code");
      }
      tclass = static_cast<int>(v);
    }
    const TopoNode& gpu = t_.nodes[p.node];
    LinkValues v = nvlink_values(gpu.sm, count);
    if (!get_overrides(x, "link_", &v)) return false;
    int remote = -1;
    bool to_gpu = false;
    if (tclass == kPciClassNvlCpu) {
      remote = cpu_of_[p.node];
    } else if (tclass == kPciClassNvSwitch || (tclass < 0 && nvs_by_bus.count(target))) {
      if (gpu_by_bus.count(target)) {
        return fail(x, "NVLink target " + pci_busid_string(target) + " is a GPU but tclass says NVSwitch");
      }
      auto it = nvs_by_bus.find(target);
      if (it == nvs_by_bus.end()) {
        TopoNode nvs;
        nvs.type = TopoNodeType::kNvs;
        nvs.busid = target;
        nvs.pci_class = kPciClassNvSwitch;
        nvs.dev = nnvs_;
        nvs.name = mname("nvs", nnvs_++);
        it = nvs_by_bus.emplace(target, add_node(nvs, -1)).first;
      }
      remote = it->second;
    } else if (tclass < 0 || (tclass >> 16) == 0x03) {
      auto it = gpu_by_bus.find(target);
      if (it == gpu_by_bus.end()) {
        return fail(x, "dangling NVLink target " + pci_busid_string(target) +
                           ": no GPU has that bus id and tclass does not mark it an NVSwitch (0x068000)");
      }
      remote = it->second;
      to_gpu = true;
      if (remote == p.node) return fail(x, "an NVLink from a GPU to itself");
    } else {
      return fail(x, std::string("<nvlink> tclass=\"") + tc +
                         "\" is neither a GPU (0x03xxxx), an NVSwitch (0x068000) nor a CPU (0x068001)");
    }
    int l = t_.link_between(p.node, remote);
    if (l >= 0 && t_.links[l].type != LinkType::kNvl) l = -1;
    if (l < 0) {
      connect(p.node, remote, LinkType::kNvl, v);
    } else if (to_gpu && !gpu_pair_xml.count({p.node, remote})) {
      // The other GPU's element created this link; this element describes our direction.
      set_direction(&t_.links[l], v);
    } else {
      // Several elements to one target add up, as NCCL's ncclTopoConnectNodes does.
      for (int li : {l, t_.links[l].reverse}) {
        if (!to_gpu || li == l) {
          TopoLink& k = t_.links[li];
          k.bw += v.bw;
          k.model_bw += v.model_bw;
          k.lanes += v.lanes;
        }
      }
    }
    if (to_gpu) gpu_pair_xml[{p.node, remote}] = x;
  }
  // A GPU-to-GPU NVLink has one count and one generation both ways: when both GPUs describe it, they
  // must agree (the model's link and its reverse are mirrors; Topology::validate would otherwise refuse
  // it without saying which element is wrong).
  for (const auto& [pair, x] : gpu_pair_xml) {
    const int l = t_.link_between(pair.first, pair.second);
    if (l < 0 || t_.links[l].type != LinkType::kNvl) continue;
    const auto back = gpu_pair_xml.find({pair.second, pair.first});
    if (back == gpu_pair_xml.end()) {
      // Only this GPU describes the link: the other direction is the same (with every element to that
      // target added up, as this direction has).
      TopoLink& r = t_.links[t_.links[l].reverse];
      const TopoLink& k = t_.links[l];
      r.bw = k.bw;
      r.model_bw = k.model_bw;
      r.latency_us = k.latency_us;
      r.lanes = k.lanes;
      r.generation = k.generation;
      continue;
    }
    if (pair.first > pair.second) continue;
    const TopoLink& k = t_.links[l];
    const TopoLink& r = t_.links[k.reverse];
    const TopoNode& a = t_.nodes[pair.first];
    const TopoNode& b = t_.nodes[pair.second];
    if (k.lanes != r.lanes) {
      return fail(back->second, "the NVLinks between GPUs " + pci_busid_string(a.busid) + " and " +
                                    pci_busid_string(b.busid) + " have count " + std::to_string(k.lanes) +
                                    " one way and " + std::to_string(r.lanes) +
                                    " the other (a link has one count both ways)");
    }
    if (k.generation != r.generation) {
      return fail(back->second, "an NVLink between GPUs " + pci_busid_string(a.busid) + " (sm " +
                                    std::to_string(a.sm) + ") and " + pci_busid_string(b.busid) + " (sm " +
                                    std::to_string(b.sm) + ") of different NVLink generations");
    }
  }
  return true;
}

bool XmlTopoReader::add_c2c_and_pcilinks() {
  for (const Pending& p : c2cs_) {
    int count = 0;
    double bw = 0;
    if (!get_int(p.xml, "count", true, 0, &count) || !get_double(p.xml, "bw", true, 0, &bw)) return false;
    if (count <= 0 || bw <= 0) return fail(p.xml, "<c2c> count and bw must be positive");
    LinkValues v;
    v.model_bw = v.bw = count * bw / 1000.0;
    v.latency_us = kC2cLatencyUs;
    v.lanes = count;
    if (!get_overrides(p.xml, "link_", &v)) return false;
    connect(p.node, cpu_of_[p.node], LinkType::kC2c, v);
  }
  for (const Pending& p : pcilinks_) {
    int64_t target = 0;
    if (!get_busid(p.xml, "target", &target)) return false;
    auto it = busids_.find(target);
    if (it == busids_.end() || t_.nodes[it->second.first].type != TopoNodeType::kPci) {
      return fail(p.xml, "<pcilink> target " + pci_busid_string(target) + " is not a PCI switch of this file");
    }
    int remote = it->second.first;
    if (remote == p.node) return fail(p.xml, "a <pcilink> from a switch to itself");
    if (t_.link_between(p.node, remote) >= 0) continue;  // listed on both sides
    LinkValues v;
    v.model_bw = v.bw = kLocBw;
    if (!get_overrides(p.xml, "link_", &v)) return false;
    connect(p.node, remote, LinkType::kLoc, v);
  }
  return true;
}

void XmlTopoReader::add_sys_links() {
  std::vector<int> cpus = t_.nodes_of(TopoNodeType::kCpu);
  for (size_t i = 0; i < cpus.size(); ++i) {
    for (size_t j = i + 1; j < cpus.size(); ++j) {
      if (t_.nodes[cpus[i]].host_hash != t_.nodes[cpus[j]].host_hash) continue;  // other hosts: no SYS link
      int l = connect(cpus[i], cpus[j], LinkType::kSys, sys_overrides_[cpus[i]]);
      set_direction(&t_.links[t_.links[l].reverse], sys_overrides_[cpus[j]]);
    }
  }
}

// ---- writing ----------------------------------------------------------------------------------------

class XmlTopoWriter {
 public:
  explicit XmlTopoWriter(const Topology& t) : t_(t) {}
  std::string write();

 private:
  struct Element {  // one line being built: <name a="v" ...
    std::string text;
    Element(const char* name) : text(std::string("<") + name) {}
    Element& a(const char* k, const std::string& v) {
      text += std::string(" ") + k + "=\"" + xml_escape(v) + "\"";
      return *this;
    }
    Element& a(const char* k, long long v) { return a(k, std::to_string(v)); }
  };
  void open(int depth, const Element& e) { out_ += std::string(depth * 2, ' ') + e.text + ">\n"; }
  void leaf(int depth, const Element& e) { out_ += std::string(depth * 2, ' ') + e.text + "/>\n"; }
  void close(int depth, const char* name) { out_ += std::string(depth * 2, ' ') + "</" + name + ">\n"; }
  // Adds the override attributes for the values of link l that differ from what the reader derives.
  static void overrides(Element& e, const char* prefix, const TopoLink& l, const LinkValues& d) {
    std::string p = prefix;
    if (l.bw != d.bw) e.a((p + "bw").c_str(), fmt_double(l.bw));
    if (l.model_bw != d.model_bw) e.a((p + "model_bw").c_str(), fmt_double(l.model_bw));
    if (l.latency_us != d.latency_us) e.a((p + "latency").c_str(), fmt_double(l.latency_us));
    if (l.lanes != d.lanes) e.a((p + "lanes").c_str(), l.lanes);
    if (l.generation != d.generation) e.a((p + "gen").c_str(), l.generation);
  }

  void assign_busids();
  void write_cpu(int cpu);
  void write_pci(int node, int link_from_parent, int depth);
  void write_gpu(int node, int depth);
  void write_nic_ports(int nic, int depth);
  bool in_tree(int node) const {
    const TopoNode& n = t_.nodes[node];
    return n.machine == 0 && !visited_[node] &&
           (n.type == TopoNodeType::kPci || n.type == TopoNodeType::kGpu || n.type == TopoNodeType::kNic ||
            n.type == TopoNodeType::kNvs);
  }

  const Topology& t_;
  std::string out_;
  std::vector<int64_t> busid_;  // node -> bus id written (the node's own, or an invented one)
  std::vector<bool> visited_;
};

void XmlTopoWriter::assign_busids() {
  busid_.assign(t_.nodes.size(), -1);
  std::set<int64_t> used;
  for (const TopoNode& n : t_.nodes) {
    if (n.machine == 0 && n.busid >= 0) used.insert(n.busid);
  }
  // Invented ids live in PCI domain 0x0cc1 (unlikely on a real machine), one bus per device.
  int64_t next = int64_t{0x0cc1} << 20;
  for (size_t i = 0; i < t_.nodes.size(); ++i) {
    const TopoNode& n = t_.nodes[i];
    if (n.machine != 0) continue;
    if (n.busid >= 0) {
      busid_[i] = n.busid;
    } else if (n.type == TopoNodeType::kPci || n.type == TopoNodeType::kGpu || n.type == TopoNodeType::kNic ||
               n.type == TopoNodeType::kNvs ||
               (n.type == TopoNodeType::kCpu && std::any_of(n.out.begin(), n.out.end(), [&](int l) {
                  return t_.links[l].type == LinkType::kNvl;  // the target of a GPU's NVLink to its CPU
                }))) {
      while (used.count(next)) next += 0x1000;
      busid_[i] = next;
      used.insert(next);
    }
  }
}

std::string XmlTopoWriter::write() {
  assign_busids();
  visited_.assign(t_.nodes.size(), false);
  Element sys("system");
  sys.a("version", 1);
  if (!t_.name.empty()) sys.a("name", t_.name);
  if (!t_.description.empty()) sys.a("description", t_.description);
  open(0, sys);
  for (int cpu : t_.nodes_of(TopoNodeType::kCpu, 0)) write_cpu(cpu);
  FabricSpec d;
  const FabricSpec& fs = t_.fabric;
  if (t_.machines > 1 || fs.oversubscription != d.oversubscription || fs.machines_per_leaf != d.machines_per_leaf ||
      fs.switch_latency_us != d.switch_latency_us || fs.cable_latency_us != d.cable_latency_us) {
    Element f("fabric");
    f.a("machines", t_.machines)
        .a("oversubscription", fmt_double(t_.fabric.oversubscription))
        .a("machines_per_leaf", t_.fabric.machines_per_leaf)
        .a("switch_latency_us", fmt_double(t_.fabric.switch_latency_us))
        .a("cable_latency_us", fmt_double(t_.fabric.cable_latency_us));
    leaf(1, f);
  }
  close(0, "system");
  return out_;
}

void XmlTopoWriter::write_cpu(int ci) {
  const TopoNode& c = t_.nodes[ci];
  visited_[ci] = true;
  Element e("cpu");
  e.a("numaid", c.dev);
  if (!c.affinity.empty()) e.a("affinity", c.affinity);
  if (c.host_hash != 0) {
    char hash[24];
    snprintf(hash, sizeof hash, "%#llx", static_cast<unsigned long long>(c.host_hash));
    e.a("host_hash", hash);
  }
  e.a("arch", arch_string(c.arch));
  if (c.vendor != CpuVendor::kUnknown) e.a("vendor", vendor_string(c.vendor));
  e.a("familyid", c.familyid).a("modelid", c.modelid);
  for (int l : c.out) {
    const TopoLink& k = t_.links[l];
    if (k.type == LinkType::kSys && t_.nodes[k.to].machine == 0) {
      TopoNode probe = c;
      LinkValues d = sys_values(probe);
      overrides(e, "sys_", k, d);
      break;
    }
  }
  open(1, e);
  bool direct_nic_written = false;
  for (int l : c.out) {
    const TopoLink& k = t_.links[l];
    if (k.type != LinkType::kPci || !in_tree(k.to)) continue;
    const TopoNode& n = t_.nodes[k.to];
    if (n.type == TopoNodeType::kNic && n.busid < 0 && !direct_nic_written) {
      // A NIC without PCI identity: NCCL's <nic> directly under the <cpu>.
      direct_nic_written = true;
      visited_[k.to] = true;
      Element nic("nic");
      overrides(nic, "link_", k, cpu_nic_values());
      open(2, nic);
      write_nic_ports(k.to, 3);
      close(2, "nic");
      continue;
    }
    write_pci(k.to, l, 2);
  }
  close(1, "cpu");
}

void XmlTopoWriter::write_pci(int ni, int up, int depth) {
  const TopoNode& n = t_.nodes[ni];
  visited_[ni] = true;
  int cls = n.pci_class;
  if (n.type == TopoNodeType::kNvs) cls = kPciClassNvSwitch;
  if (n.type == TopoNodeType::kPci && ((cls >> 16) == 0x02 || (cls >> 16) == 0x03 || cls == kPciClassNvSwitch)) {
    cls = kPciClassBridge;  // would read back as a device, not as a switch
  }
  Element e("pci");
  e.a("busid", pci_busid_string(busid_[ni])).a("class", fmt_hex(static_cast<uint64_t>(cls), 6));
  if (!n.vendor_id.empty()) e.a("vendor", n.vendor_id);
  if (!n.device_id.empty()) e.a("device", n.device_id);
  if (!n.subsystem_vendor.empty()) e.a("subsystem_vendor", n.subsystem_vendor);
  if (!n.subsystem_device.empty()) e.a("subsystem_device", n.subsystem_device);
  e.a("link_speed", n.link_speed).a("link_width", n.link_width);
  overrides(e, "link_", t_.links[up], pci_link_values(n));
  switch (n.type) {
    case TopoNodeType::kGpu:
      open(depth, e);
      write_gpu(ni, depth + 1);
      close(depth, "pci");
      return;
    case TopoNodeType::kNic:
      open(depth, e);
      if (std::none_of(n.out.begin(), n.out.end(), [&](int l) {
            return t_.nodes[t_.links[l].to].type == TopoNodeType::kNet;
          })) {
        leaf(depth + 1, Element("nic"));
      } else {
        open(depth + 1, Element("nic"));
        write_nic_ports(ni, depth + 2);
        close(depth + 1, "nic");
      }
      close(depth, "pci");
      return;
    case TopoNodeType::kPci: {
      std::vector<int> kids, peers;
      for (int l : n.out) {
        const TopoLink& k = t_.links[l];
        if (k.type == LinkType::kPci && in_tree(k.to) && t_.nodes[k.to].type != TopoNodeType::kCpu) {
          kids.push_back(l);
          visited_[k.to] = true;  // claimed here, written below
        }
        if (k.type == LinkType::kLoc && t_.nodes[k.to].type == TopoNodeType::kPci && t_.nodes[k.to].machine == 0) {
          peers.push_back(k.to);
        }
      }
      if (kids.empty() && peers.empty()) {
        leaf(depth, e);
        return;
      }
      open(depth, e);
      for (int l : kids) {
        visited_[t_.links[l].to] = false;
        write_pci(t_.links[l].to, l, depth + 1);
      }
      for (int p : peers) leaf(depth + 1, Element("pcilink").a("target", pci_busid_string(busid_[p])));
      close(depth, "pci");
      return;
    }
    default:
      leaf(depth, e);
      return;
  }
}

void XmlTopoWriter::write_gpu(int gi, int depth) {
  const TopoNode& g = t_.nodes[gi];
  Element e("gpu");
  e.a("dev", g.dev).a("sm", g.sm).a("rank", g.rank).a("gdr", g.gdr ? 1 : 0);
  // NVLinks sorted by target bus id, so the order does not depend on the order links were made in.
  std::vector<std::pair<int64_t, int>> nvl;
  std::vector<int> c2c;
  for (int l : g.out) {
    const TopoLink& k = t_.links[l];
    const TopoNode& r = t_.nodes[k.to];
    if (r.machine != 0) continue;
    if (k.type == LinkType::kNvl &&
        (r.type == TopoNodeType::kGpu || r.type == TopoNodeType::kNvs || r.type == TopoNodeType::kCpu)) {
      nvl.push_back({busid_[k.to], l});
    }
    if (k.type == LinkType::kC2c && r.type == TopoNodeType::kCpu) c2c.push_back(l);
  }
  std::stable_sort(nvl.begin(), nvl.end(), [](const std::pair<int64_t, int>& a, const std::pair<int64_t, int>& b) {
    return a.first < b.first;
  });
  if (nvl.empty() && c2c.empty()) {
    leaf(depth, e);
    return;
  }
  open(depth, e);
  for (auto& [bus, l] : nvl) {
    const TopoLink& k = t_.links[l];
    const TopoNode& r = t_.nodes[k.to];
    int tclass = r.type == TopoNodeType::kNvs   ? kPciClassNvSwitch
                 : r.type == TopoNodeType::kCpu ? kPciClassNvlCpu
                 : (r.pci_class >> 16) == 0x03  ? r.pci_class
                                                : 0x030200;
    Element n("nvlink");
    n.a("target", pci_busid_string(bus)).a("count", k.lanes).a("tclass", fmt_hex(static_cast<uint64_t>(tclass), 6));
    overrides(n, "link_", k, nvlink_values(g.sm, k.lanes));
    leaf(depth + 1, n);
  }
  for (int l : c2c) {
    const TopoLink& k = t_.links[l];
    int count = std::max(k.lanes, 1);
    LinkValues d;
    double per_link_mbs = k.model_bw * 1000.0 / count;
    d.model_bw = d.bw = count * per_link_mbs / 1000.0;
    d.latency_us = kC2cLatencyUs;
    d.lanes = count;
    Element c("c2c");
    c.a("count", count).a("bw", fmt_double(per_link_mbs));
    overrides(c, "link_", k, d);
    leaf(depth + 1, c);
  }
  close(depth, "gpu");
}

void XmlTopoWriter::write_nic_ports(int nic, int depth) {
  for (int l : t_.nodes[nic].out) {
    const TopoLink& k = t_.links[l];
    const TopoNode& n = t_.nodes[k.to];
    if (n.type != TopoNodeType::kNet || n.machine != 0) continue;
    Element e("net");
    if (!n.net_name.empty()) e.a("name", n.net_name);
    e.a("dev", n.dev)
        .a("speed", fmt_double(n.net_speed_mbps))
        .a("port", n.port)
        .a("latency", fmt_double(n.net_latency_us))
        .a("guid", fmt_hex(n.guid))
        .a("maxconn", n.maxconn)
        .a("gdr", n.gdr ? 1 : 0)
        .a("coll", n.coll ? 1 : 0);
    overrides(e, "link_", k, nic_port_values(n));
    leaf(depth, e);
  }
}

}  // namespace

// ---- public entry points --------------------------------------------------------------------------

bool read_topology_xml_string(const std::string& text, const std::string& name_for_errors, Topology* out,
                              std::string* error) {
  XmlTopoReader r(text, name_for_errors);
  return r.read(out, error);
}

bool read_topology_xml(const std::string& path, Topology* out, std::string* error) {
  std::string text;
  if (!read_text_file(path, &text, error)) return false;
  return read_topology_xml_string(text, path, out, error);
}

std::string topology_xml_string(const Topology& topo) { return XmlTopoWriter(topo).write(); }

bool write_topology_xml(const Topology& topo, const std::string& path, std::string* error) {
  return write_text_file(path, topology_xml_string(topo), error);
}

std::string xml_escape(const std::string& s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&apos;"; break;
      default: o += c;
    }
  }
  return o;
}

}  // namespace cclab
