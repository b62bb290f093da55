// tests/sim/platform_xml_test.cc - the SimGrid platform XML export (sim/platform_xml.h): the file for
// dgx-h100 parses, has one host per GPU in rank order, one link per directed TopoLink with the
// calibrated rate and the model's latency, and ring routes equal to Topology::path; and SimGrid 3.32
// itself loads it with the same hosts, links and routes (in a forked child: one engine per process).
#include "sim/platform_xml.h"

#include <gtest/gtest.h>
#include <pugixml.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/s4u/Link.hpp>
#include <sys/wait.h>
#include <unistd.h>
#include <xbt/config.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "graph/topo.h"
#include "sim/calibration.h"

namespace cclab {
namespace sim {
namespace {

Topology preset(const std::string& name, int machines) {
  Topology t;
  std::string err;
  EXPECT_TRUE(make_preset_topology(name, machines, FabricSpec{}, &t, &err)) << err;
  return t;
}

// The efficiency the calibration gives a link type (written out here, not taken from the writer).
double efficiency(const Calibration& cal, LinkType t) {
  switch (t) {
    case LinkType::kNvl:
    case LinkType::kC2c: return cal.efficiency.nvlink;
    case LinkType::kPci: return cal.efficiency.pcie;
    case LinkType::kSys: return cal.efficiency.sys;
    case LinkType::kNet: return cal.efficiency.net;
    case LinkType::kLoc: return cal.efficiency.loc;
  }
  return 0;
}

// "425GBps" -> 425 (checks the unit); NaN when the unit is not `unit`.
double value_with_unit(const char* s, const char* unit) {
  char* end = nullptr;
  double v = std::strtod(s, &end);
  if (end == s || std::strcmp(end, unit) != 0) return NAN;
  return v;
}

bool near_equal(double a, double b) { return std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b)) + 1e-15; }

std::string temp_path(const char* what) {
  char buf[] = "/tmp/cclab_platform_xml_XXXXXX";
  int fd = mkstemp(buf);
  EXPECT_GE(fd, 0);
  if (fd >= 0) close(fd);
  return std::string(buf) + what;
}

TEST(PlatformXml, DgxH100HostsLinksRoutes) {
  const Topology t = preset("dgx-h100", 1);
  const Calibration& cal = default_calibration();
  std::string xml, err;
  ASSERT_TRUE(simgrid_platform_xml_string(t, cal, &xml, &err)) << err;
  EXPECT_NE(xml.find("<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">"), std::string::npos);

  pugi::xml_document doc;
  pugi::xml_parse_result pr = doc.load_string(xml.c_str());
  ASSERT_TRUE(pr) << pr.description() << " at offset " << pr.offset;
  pugi::xml_node plat = doc.child("platform");
  ASSERT_TRUE(plat);
  EXPECT_STREQ(plat.attribute("version").value(), "4.1");
  // <config> first: CM02 without cross-traffic.
  pugi::xml_node config = plat.first_child();
  ASSERT_STREQ(config.name(), "config");
  EXPECT_STREQ(config.find_child_by_attribute("prop", "id", "network/model").attribute("value").value(), "CM02");
  EXPECT_STREQ(config.find_child_by_attribute("prop", "id", "network/crosstraffic").attribute("value").value(), "0");

  pugi::xml_node zone = plat.child("zone");
  ASSERT_TRUE(zone);
  EXPECT_STREQ(zone.attribute("routing").value(), "Full");
  EXPECT_FALSE(zone.next_sibling("zone"));

  // Hosts: the 8 GPUs in dev order, each with the calibrated per-SM speed and SM count.
  std::vector<std::string> hosts;
  for (pugi::xml_node h : zone.children("host")) {
    hosts.push_back(h.attribute("id").value());
    const int node = t.find(hosts.back());
    ASSERT_GE(node, 0) << hosts.back();
    const GpuModel& m = cal.gpu(t.nodes[node].sm);
    EXPECT_TRUE(near_equal(value_with_unit(h.attribute("speed").value(), "Gf"), m.sm_copy_gbs)) << h.attribute("speed").value();
    EXPECT_EQ(h.attribute("core").as_int(), m.sms);
  }
  ASSERT_EQ(hosts.size(), 8u);
  for (int d = 0; d < 8; ++d) EXPECT_EQ(hosts[d], "m0.gpu" + std::to_string(d));

  // Links: one per directed TopoLink, in index order, unique XML-friendly ids, rate and latency.
  const std::vector<std::string> ids = simgrid_link_ids(t);
  std::vector<pugi::xml_node> links;
  for (pugi::xml_node l : zone.children("link")) links.push_back(l);
  ASSERT_EQ(links.size(), t.links.size());
  std::set<std::string> unique;
  for (size_t i = 0; i < t.links.size(); ++i) {
    const TopoLink& tl = t.links[i];
    const pugi::xml_node l = links[i];
    EXPECT_EQ(ids[i], l.attribute("id").value());
    EXPECT_TRUE(unique.insert(ids[i]).second) << ids[i];
    EXPECT_EQ(ids[i].find('>'), std::string::npos) << ids[i];
    EXPECT_EQ(ids[i].rfind(t.nodes[tl.from].name + "_to_" + t.nodes[tl.to].name, 0), 0u) << ids[i];
    EXPECT_TRUE(near_equal(value_with_unit(l.attribute("bandwidth").value(), "GBps"), tl.bw * efficiency(cal, tl.type)))
        << ids[i] << " " << l.attribute("bandwidth").value();
    EXPECT_TRUE(near_equal(value_with_unit(l.attribute("latency").value(), "us"), tl.latency_us))
        << ids[i] << " " << l.attribute("latency").value();
    EXPECT_STREQ(l.attribute("sharing_policy").value(), "SHARED");
  }
  // The documented spelling for a GPU's first NVLink edge.
  EXPECT_NE(unique.count("m0.gpu0_to_m0.nvs0"), 0u);

  // Routes: ring neighbours in both directions, 16 for 8 GPUs, each = Topology::path.
  std::set<std::pair<std::string, std::string>> routes;
  for (pugi::xml_node r : zone.children("route")) {
    const std::string src = r.attribute("src").value(), dst = r.attribute("dst").value();
    EXPECT_STREQ(r.attribute("symmetrical").value(), "NO");
    EXPECT_TRUE(routes.insert({src, dst}).second) << src << " -> " << dst;
    const int a = t.find(src), b = t.find(dst);
    ASSERT_GE(a, 0);
    ASSERT_GE(b, 0);
    const int da = t.nodes[a].dev, db = t.nodes[b].dev;
    EXPECT_TRUE(db == (da + 1) % 8 || db == (da + 7) % 8) << src << " -> " << dst;
    std::vector<std::string> got, want;
    for (pugi::xml_node c : r.children("link_ctn")) got.push_back(c.attribute("id").value());
    for (int li : t.path(a, b).links) want.push_back(ids[li]);
    EXPECT_FALSE(want.empty());
    EXPECT_EQ(got, want) << src << " -> " << dst;
  }
  EXPECT_EQ(routes.size(), 16u);

  // The hostfile lists the same hosts in the same order.
  std::string expected;
  for (const std::string& h : hosts) expected += h + "\n";
  EXPECT_EQ(smpi_hostfile_string(t), expected);
}

TEST(PlatformXml, AllPairsAndLimits) {
  const Calibration& cal = default_calibration();
  std::string xml, err;
  const Topology t = preset("dgx-h100", 1);
  ASSERT_TRUE(simgrid_platform_xml_string(t, cal, &xml, &err, /*all_pairs=*/true)) << err;
  pugi::xml_document doc;
  ASSERT_TRUE(doc.load_string(xml.c_str()));
  size_t n = 0;
  for (pugi::xml_node r : doc.child("platform").child("zone").children("route")) {
    (void)r;
    ++n;
  }
  EXPECT_EQ(n, 56u);

  // 128 GPUs: ring routes fine, all pairs refused with a message that says why.
  const Topology big = preset("dgx-h100", 16);
  EXPECT_TRUE(simgrid_platform_xml_string(big, cal, &xml, &err)) << err;
  err.clear();
  EXPECT_FALSE(simgrid_platform_xml_string(big, cal, &xml, &err, true));
  EXPECT_NE(err.find("64"), std::string::npos) << err;

  // No GPU: an error, not an empty platform.
  Topology empty;
  empty.name = "empty";
  err.clear();
  EXPECT_FALSE(simgrid_platform_xml_string(empty, cal, &xml, &err));
  EXPECT_NE(err.find("no GPU"), std::string::npos) << err;

  // Writing to a directory that does not exist fails with the path in the message.
  err.clear();
  EXPECT_FALSE(write_simgrid_platform_xml(t, cal, "/nonexistent-dir/p.xml", &err));
  EXPECT_NE(err.find("/nonexistent-dir/p.xml"), std::string::npos) << err;
}

TEST(PlatformXml, TwoMachinesRingCrossesTheFabric) {
  const Topology t = preset("dgx-h100", 2);
  const Calibration& cal = default_calibration();
  std::string xml, err;
  ASSERT_TRUE(simgrid_platform_xml_string(t, cal, &xml, &err)) << err;
  pugi::xml_document doc;
  ASSERT_TRUE(doc.load_string(xml.c_str()));
  pugi::xml_node zone = doc.child("platform").child("zone");
  const std::vector<int> gpus = smpi_rank_gpus(t);
  ASSERT_EQ(gpus.size(), 16u);
  EXPECT_EQ(t.nodes[gpus[8]].name, "m1.gpu0");
  const std::vector<std::string> ids = simgrid_link_ids(t);
  // m0.gpu7 -> m1.gpu0 is rank 7 -> 8: through the NICs and the fabric.
  pugi::xml_node r = zone.find_child_by_attribute("route", "src", "m0.gpu7");
  while (r && std::strcmp(r.attribute("dst").value(), "m1.gpu0") != 0) r = r.next_sibling("route");
  ASSERT_TRUE(r);
  std::vector<std::string> got, want;
  for (pugi::xml_node c : r.children("link_ctn")) got.push_back(c.attribute("id").value());
  const TopoPath& p = t.path(gpus[7], gpus[8]);
  EXPECT_EQ(p.type, PathType::kNet);
  for (int li : p.links) want.push_back(ids[li]);
  EXPECT_EQ(got, want);
  bool fabric = false;
  for (const std::string& id : got) fabric = fabric || id.find("fabric.") != std::string::npos;
  EXPECT_TRUE(fabric);
  // And the wrap-around: rank 15 -> rank 0.
  r = zone.find_child_by_attribute("route", "src", "m1.gpu7");
  while (r && std::strcmp(r.attribute("dst").value(), "m0.gpu0") != 0) r = r.next_sibling("route");
  EXPECT_TRUE(r);
}

// Runs in a forked child: loads `path` in a SimGrid engine and checks it against `t`. Returns the
// problems found, one per line (empty: none).
std::string check_in_simgrid(const Topology& t, const Calibration& cal, const std::string& path) {
  std::ostringstream bad;
  int argc = 2;
  char arg0[] = "platform_xml_test";
  char arg1[] = "--log=root.thres:critical";
  char* argv[] = {arg0, arg1, nullptr};
  simgrid::s4u::Engine e(&argc, argv);
  e.load_platform(path);
  const std::string model = simgrid::config::get_value<std::string>("network/model");
  if (model != "CM02") bad << "network/model is " << model << ", not CM02\n";
  const std::vector<int> gpus = smpi_rank_gpus(t);
  if (e.get_host_count() != gpus.size()) bad << "host count " << e.get_host_count() << " != " << gpus.size() << "\n";
  if (e.get_link_count() < t.links.size()) bad << "link count " << e.get_link_count() << " < " << t.links.size() << "\n";
  const std::vector<std::string> ids = simgrid_link_ids(t);
  const int n = static_cast<int>(gpus.size());
  for (int i = 0; i < n; ++i) {
    for (int j : {(i + 1) % n, (i + n - 1) % n}) {
      const std::string a = t.nodes[gpus[i]].name, b = t.nodes[gpus[j]].name;
      simgrid::s4u::Host* ha = e.host_by_name_or_null(a);
      simgrid::s4u::Host* hb = e.host_by_name_or_null(b);
      if (ha == nullptr || hb == nullptr) {
        bad << "host " << a << " or " << b << " missing\n";
        continue;
      }
      if (ha->get_core_count() != cal.gpu(t.nodes[gpus[i]].sm).sms) bad << a << ": core count " << ha->get_core_count() << "\n";
      if (!near_equal(ha->get_speed(), cal.gpu(t.nodes[gpus[i]].sm).sm_copy_gbs * 1e9)) bad << a << ": speed " << ha->get_speed() << "\n";
      std::vector<simgrid::s4u::Link*> links;
      double latency = 0;
      ha->route_to(hb, links, &latency);
      const TopoPath& p = t.path(gpus[i], gpus[j]);
      std::vector<std::string> got, want;
      double want_lat = 0;
      for (simgrid::s4u::Link* l : links) got.push_back(l->get_name());
      for (int li : p.links) {
        want.push_back(ids[li]);
        want_lat += t.links[li].latency_us * 1e-6;
        simgrid::s4u::Link* l = e.link_by_name_or_null(ids[li]);
        if (l == nullptr) {
          bad << "link " << ids[li] << " missing\n";
          continue;
        }
        const double rate = t.links[li].bw * efficiency(cal, t.links[li].type) * 1e9;
        if (!near_equal(l->get_bandwidth(), rate)) bad << ids[li] << ": bandwidth " << l->get_bandwidth() << " != " << rate << "\n";
        if (l->get_sharing_policy() != simgrid::s4u::Link::SharingPolicy::SHARED) bad << ids[li] << ": not SHARED\n";
      }
      if (got != want) bad << a << " -> " << b << ": SimGrid's route differs from Topology::path\n";
      if (!near_equal(latency, want_lat)) bad << a << " -> " << b << ": latency " << latency << " != " << want_lat << "\n";
    }
  }
  return bad.str();
}

void load_in_simgrid(const std::string& preset_name, int machines) {
  const Topology t = preset(preset_name, machines);
  const Calibration& cal = default_calibration();
  const std::string path = temp_path(".xml");
  std::string err;
  ASSERT_TRUE(write_simgrid_platform_xml(t, cal, path, &err)) << err;
  std::fflush(nullptr);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::string bad = check_in_simgrid(t, cal, path);
    if (!bad.empty()) std::fprintf(stderr, "%s", bad.c_str());
    std::fflush(nullptr);
    _exit(bad.empty() ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  std::remove(path.c_str());
  std::remove(path.substr(0, path.size() - 4).c_str());
  ASSERT_TRUE(WIFEXITED(status)) << "SimGrid child died (signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0)
                                 << ") loading the platform of " << preset_name << ":" << machines;
  EXPECT_EQ(WEXITSTATUS(status), 0) << "SimGrid disagrees with the model of " << preset_name << ":" << machines
                                    << " (the child printed what)";
}

TEST(PlatformXml, LoadsInSimGridDgxH100) { load_in_simgrid("dgx-h100", 1); }
TEST(PlatformXml, LoadsInSimGridDgxH100TwoMachines) { load_in_simgrid("dgx-h100", 2); }

}  // namespace
}  // namespace sim
}  // namespace cclab
