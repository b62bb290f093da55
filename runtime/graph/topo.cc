// runtime/graph/topo.cc - Topology: building and simple queries, names of NCCL's enums.
// Paths (compute_paths, path) are in topo_paths.cc, presets in topo_presets.cc, XML in topo_xml.cc.
#include "graph/topo.h"

#include <strings.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace cclab {

const char* topo_node_type_name(TopoNodeType t) {
  switch (t) {
    case TopoNodeType::kGpu: return "GPU";
    case TopoNodeType::kPci: return "PCI";
    case TopoNodeType::kNvs: return "NVS";
    case TopoNodeType::kCpu: return "CPU";
    case TopoNodeType::kNic: return "NIC";
    case TopoNodeType::kNet: return "NET";
    case TopoNodeType::kNetSwitch: return "SWITCH";
  }
  return "UNKNOWN";
}

const char* link_type_name(LinkType t) {
  switch (t) {
    case LinkType::kLoc: return "LOC";
    case LinkType::kNvl: return "NVL";
    case LinkType::kC2c: return "C2C";
    case LinkType::kPci: return "PCI";
    case LinkType::kSys: return "SYS";
    case LinkType::kNet: return "NET";
  }
  return "UNKNOWN";
}

namespace {
const char* const kPathNames[] = {"LOC", "NVL", "NVB", "C2C", "PIX", "PXB",
                                  "P2C", "PXN", "PHB", "SYS", "NET", "DIS"};
}

const char* path_type_name(PathType t) {
  int i = static_cast<int>(t);
  return i >= 0 && i <= 11 ? kPathNames[i] : "UNKNOWN";
}

bool path_type_from_name(const char* name, PathType* out) {
  if (name == nullptr) return false;
  for (int i = 0; i <= 11; ++i) {
    if (strcasecmp(name, kPathNames[i]) == 0) {
      *out = static_cast<PathType>(i);
      return true;
    }
  }
  return false;
}

bool write_text_file(const std::string& path, const std::string& text, std::string* error) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) {
    if (error) *error = path + ": cannot create: " + strerror(errno);
    return false;
  }
  f << text;
  f.close();
  if (!f) {
    if (error) *error = path + ": write error";
    return false;
  }
  return true;
}

bool read_text_file(const std::string& path, std::string* text, std::string* error) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    if (error) *error = path + ": cannot open: " + strerror(errno);
    return false;
  }
  std::stringstream ss;
  ss << f.rdbuf();
  if (f.bad()) {
    if (error) *error = path + ": read error";
    return false;
  }
  *text = ss.str();
  return true;
}

int Topology::add_node(TopoNode node) {
  node.out.clear();
  nodes.push_back(std::move(node));
  paths_.clear();
  return static_cast<int>(nodes.size()) - 1;
}

int Topology::connect(int a, int b, LinkType type, double bw, double latency_us, int lanes,
                      int generation, double model_bw) {
  TopoLink ab;
  ab.from = a;
  ab.to = b;
  ab.type = type;
  ab.bw = bw;
  ab.model_bw = model_bw < 0 ? bw : model_bw;
  ab.latency_us = latency_us;
  ab.lanes = lanes;
  ab.generation = generation;
  TopoLink ba = ab;
  ba.from = b;
  ba.to = a;
  int iab = static_cast<int>(links.size());
  ab.reverse = iab + 1;
  ba.reverse = iab;
  links.push_back(ab);
  links.push_back(ba);
  nodes[a].out.push_back(iab);
  nodes[b].out.push_back(iab + 1);
  paths_.clear();
  return iab;
}

std::vector<int> Topology::nodes_of(TopoNodeType type, int machine) const {
  std::vector<int> out;
  for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
    if (nodes[i].type == type && (machine < 0 || nodes[i].machine == machine)) out.push_back(i);
  }
  return out;
}

int Topology::gpus_per_machine() const { return static_cast<int>(gpus(0).size()); }

int Topology::find(const std::string& node_name) const {
  for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
    if (nodes[i].name == node_name) return i;
  }
  return -1;
}

int Topology::gpu_node(int machine, int dev) const {
  for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
    const TopoNode& n = nodes[i];
    if (n.type == TopoNodeType::kGpu && n.machine == machine && n.dev == dev) return i;
  }
  return -1;
}

int Topology::net_node(int machine, int dev) const {
  for (int i = 0; i < static_cast<int>(nodes.size()); ++i) {
    const TopoNode& n = nodes[i];
    if (n.type == TopoNodeType::kNet && n.machine == machine && n.dev == dev) return i;
  }
  return -1;
}

int Topology::link_between(int a, int b) const {
  if (a < 0 || a >= static_cast<int>(nodes.size())) return -1;
  for (int l : nodes[a].out) {
    if (links[l].to == b) return l;
  }
  return -1;
}

}  // namespace cclab
