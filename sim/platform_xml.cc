// sim/platform_xml.cc - the SimGrid platform XML of a topology model (platform_xml.h).
#include "sim/platform_xml.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <set>
#include <utility>

namespace cclab {
namespace sim {

namespace {

// Shortest decimal that reads back as `v` (std::to_chars' round-trip guarantee).
std::string number(double v) {
  if (v == 0) return "0";  // also -0
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

// XML attribute value: the graph layer's xml_escape.
std::string attr(const std::string& s) { return xml_escape(s); }

// Text inside an XML comment: no "--" (nor a trailing '-').
std::string comment_text(std::string s) {
  for (size_t p = s.find("--"); p != std::string::npos; p = s.find("--", p)) s.replace(p, 2, "- ");
  if (!s.empty() && s.back() == '-') s += ' ';
  return s;
}

bool fail(std::string* error, const std::string& msg) {
  if (error) *error = msg;
  return false;
}

}  // namespace

std::string simgrid_bandwidth_string(double gbs) { return number(gbs) + "GBps"; }
std::string simgrid_latency_string(double us) { return number(us) + "us"; }
std::string simgrid_speed_string(double gflops) { return number(gflops) + "Gf"; }

double simgrid_link_rate_gbs(const TopoLink& link, const Calibration& cal) {
  const LinkEfficiency& e = cal.efficiency;
  double eff = 1;
  switch (link.type) {
    case LinkType::kNvl:
    case LinkType::kC2c: eff = e.nvlink; break;
    case LinkType::kPci: eff = e.pcie; break;
    case LinkType::kSys: eff = e.sys; break;
    case LinkType::kNet: eff = e.net; break;
    case LinkType::kLoc: eff = e.loc; break;
  }
  return link.bw * eff;
}

std::vector<int> smpi_rank_gpus(const Topology& topo) {
  std::vector<int> gpus = topo.gpus();
  // Index order is machine-major and dev order on a machine for presets and XML models; sort anyway
  // so that a hand-built model with GPUs added out of order gets the same rank order.
  std::stable_sort(gpus.begin(), gpus.end(), [&](int a, int b) {
    const TopoNode& x = topo.nodes[a];
    const TopoNode& y = topo.nodes[b];
    return std::make_pair(x.machine, x.dev) < std::make_pair(y.machine, y.dev);
  });
  return gpus;
}

std::vector<std::string> simgrid_link_ids(const Topology& topo) {
  std::vector<std::string> ids(topo.links.size());
  std::map<std::pair<int, int>, int> seen;  // (from, to) -> links so far
  for (size_t i = 0; i < topo.links.size(); ++i) {
    const TopoLink& l = topo.links[i];
    int k = ++seen[{l.from, l.to}];
    ids[i] = topo.nodes[l.from].name + "_to_" + topo.nodes[l.to].name;
    if (k > 1) ids[i] += "_" + std::to_string(k);
  }
  return ids;
}

bool simgrid_platform_xml_string(const Topology& topo, const Calibration& cal, std::string* out,
                                 std::string* error, bool all_pairs) {
  const std::vector<int> gpus = smpi_rank_gpus(topo);
  const int n = static_cast<int>(gpus.size());
  if (n == 0) return fail(error, "SimGrid platform of '" + topo.name + "': the model has no GPU");
  if (all_pairs && n > kSimgridAllPairsMaxGpus) {
    return fail(error, "SimGrid platform of '" + topo.name + "': all-pairs routes need at most " +
                           std::to_string(kSimgridAllPairsMaxGpus) + " GPUs, the model has " + std::to_string(n));
  }
  for (size_t i = 0; i < topo.links.size(); ++i) {
    const TopoLink& l = topo.links[i];
    if (l.from < 0 || l.to < 0 || l.from >= static_cast<int>(topo.nodes.size()) ||
        l.to >= static_cast<int>(topo.nodes.size())) {
      return fail(error, "SimGrid platform of '" + topo.name + "': link " + std::to_string(i) +
                             " joins nodes that do not exist");
    }
  }

  // The GPU pairs that get a route, in the order they are written (rank order of the source).
  std::vector<std::pair<int, int>> pairs;  // ranks
  if (all_pairs) {
    for (int a = 0; a < n; ++a)
      for (int b = 0; b < n; ++b)
        if (a != b) pairs.push_back({a, b});
  } else {
    std::set<std::pair<int, int>> have;
    for (int a = 0; a < n; ++a) {
      for (int b : {(a + 1) % n, (a + n - 1) % n}) {
        if (a != b && have.insert({a, b}).second) pairs.push_back({a, b});
      }
    }
  }

  const std::vector<std::string> ids = simgrid_link_ids(topo);
  std::string s;
  s.reserve(256 + 64 * n + 120 * topo.links.size() + 200 * pairs.size());
  s += "<?xml version='1.0'?>\n";
  s += "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n";
  s += "<!-- cclab sim platform of '" + comment_text(topo.name) + "'";
  if (!topo.description.empty()) s += " (" + comment_text(topo.description) + ")";
  s += ", " + std::to_string(topo.machines) + " machine(s): " + std::to_string(n) + " GPU hosts, " +
       std::to_string(topo.links.size()) + " links, " + std::to_string(pairs.size()) + " routes (" +
       (all_pairs ? "all GPU pairs" : "ring neighbours in rank order") +
       ").\n     Written by sim/platform_xml.cc. smpirun sets network/model on its own command line, which "
       "wins over\n     this file: give smpirun the cfg network/model:CM02 as well. -->\n";
  s += "<platform version=\"4.1\">\n";
  s += "  <config>\n";
  s += "    <prop id=\"network/model\" value=\"CM02\"/>\n";
  s += "    <prop id=\"network/crosstraffic\" value=\"0\"/>\n";
  s += "  </config>\n";
  s += "  <zone id=\"" + attr(topo.name.empty() ? std::string("cclab") : topo.name) + "\" routing=\"Full\">\n";
  for (int node : gpus) {
    const TopoNode& g = topo.nodes[node];
    const GpuModel& m = cal.gpu(g.sm);
    if (!(m.sm_copy_gbs > 0) || m.sms < 1) {
      return fail(error, "SimGrid platform of '" + topo.name + "': the calibration has no usable GPU model for " +
                             g.name + " (sm " + std::to_string(g.sm) + ")");
    }
    s += "    <host id=\"" + attr(g.name) + "\" speed=\"" + simgrid_speed_string(m.sm_copy_gbs) + "\" core=\"" +
         std::to_string(m.sms) + "\"/>\n";
  }
  for (size_t i = 0; i < topo.links.size(); ++i) {
    const TopoLink& l = topo.links[i];
    double rate = simgrid_link_rate_gbs(l, cal);
    // SimGrid refuses a link of zero bandwidth; one that no route crosses is written with a token
    // 1 B/s so that the file still lists every link, and one on a route is an error (below).
    s += "    <link id=\"" + attr(ids[i]) + "\" bandwidth=\"" +
         (rate > 0 ? simgrid_bandwidth_string(rate) : std::string("1Bps")) + "\" latency=\"" +
         simgrid_latency_string(l.latency_us > 0 ? l.latency_us : 0) + "\" sharing_policy=\"SHARED\"/>\n";
  }
  for (const auto& pr : pairs) {
    const int a = gpus[pr.first], b = gpus[pr.second];
    const TopoPath& path = topo.path(a, b);
    if (path.type == PathType::kDis || path.links.empty()) {
      return fail(error, "SimGrid platform of '" + topo.name + "': no path from " + topo.nodes[a].name + " to " +
                             topo.nodes[b].name);
    }
    s += "    <route src=\"" + attr(topo.nodes[a].name) + "\" dst=\"" + attr(topo.nodes[b].name) +
         "\" symmetrical=\"NO\">";
    for (int li : path.links) {
      if (li < 0 || li >= static_cast<int>(topo.links.size())) {
        return fail(error, "SimGrid platform of '" + topo.name + "': the path from " + topo.nodes[a].name +
                               " to " + topo.nodes[b].name + " names link " + std::to_string(li) +
                               ", which does not exist");
      }
      if (!(simgrid_link_rate_gbs(topo.links[li], cal) > 0)) {
        return fail(error, "SimGrid platform of '" + topo.name + "': link " + ids[li] + " on the route from " +
                               topo.nodes[a].name + " to " + topo.nodes[b].name + " has no bandwidth");
      }
      s += "<link_ctn id=\"" + attr(ids[li]) + "\"/>";
    }
    s += "</route>\n";
  }
  s += "  </zone>\n";
  s += "</platform>\n";
  *out = std::move(s);
  return true;
}

bool write_simgrid_platform_xml(const Topology& topo, const Calibration& cal, const std::string& path,
                                std::string* error, bool all_pairs) {
  std::string text;
  if (!simgrid_platform_xml_string(topo, cal, &text, error, all_pairs)) return false;
  return write_text_file(path, text, error);
}

std::string smpi_hostfile_string(const Topology& topo) {
  std::string s;
  for (int node : smpi_rank_gpus(topo)) s += topo.nodes[node].name + "\n";
  return s;
}

bool write_smpi_hostfile(const Topology& topo, const std::string& path, std::string* error) {
  return write_text_file(path, smpi_hostfile_string(topo), error);
}

}  // namespace sim
}  // namespace cclab
