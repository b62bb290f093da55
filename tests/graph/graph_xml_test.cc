// Tests of graph_xml.cc: NCCL's graph XML (NCCL_GRAPH_DUMP_FILE / NCCL_GRAPH_FILE).
//   - the exact text written for a hand-made ring (NCCL's attribute order, "%#lx" devs);
//   - round trips: write -> read gives the same graphs and write again the same text, for hand-made
//     graphs, the data file and graphs searched on presets (one and several machines);
//   - reading fills only the graphs whose id is in the file, and checks the file against the topology:
//     each malformed input gives an error with the file name, the line and the problem, and leaves
//     the graphs untouched.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "graph/search.h"
#include "graph/topo.h"

namespace cclab {
namespace {

std::string data_path(const std::string& name) {
  const char* dir = std::getenv("CCLAB_TEST_DATA");
  return std::string(dir ? dir : "tests/graph/data") + "/" + name;
}

Topology preset(const std::string& name, int machines) {
  Topology t;
  std::string err;
  EXPECT_TRUE(make_preset_topology(name, machines, FabricSpec(), &t, &err)) << err;
  return t;
}

TopoGraph ring8() {
  TopoGraph g;
  g.id = 0;
  g.pattern = GraphPattern::kRing;
  g.nchannels = 2;
  g.bw_intra = 40;
  g.bw_inter = 40;
  g.type_intra = PathType::kNvl;
  g.type_inter = PathType::kLoc;
  g.same_channels = false;
  g.intra = {{0, 1, 2, 3, 4, 5, 6, 7}, {7, 6, 5, 4, 3, 2, 1, 0}};
  return g;
}

void expect_same_graph(const TopoGraph& a, const TopoGraph& b) {
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.pattern, b.pattern);
  EXPECT_EQ(a.cross_nic, b.cross_nic);
  EXPECT_EQ(a.nchannels, b.nchannels);
  EXPECT_EQ(a.bw_intra, b.bw_intra);
  EXPECT_EQ(a.bw_inter, b.bw_inter);
  EXPECT_EQ(a.latency_inter, b.latency_inter);
  EXPECT_EQ(a.type_intra, b.type_intra);
  EXPECT_EQ(a.type_inter, b.type_inter);
  EXPECT_EQ(a.same_channels, b.same_channels);
  EXPECT_EQ(a.intra, b.intra);
  EXPECT_EQ(a.inter, b.inter);
}

TEST(GraphXml, WritesNcclFormat) {
  TopoGraph g = ring8();
  g.nchannels = 1;
  g.intra.resize(1);
  g.intra[0] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17};
  g.bw_intra = 20.6;
  const std::string expected =
      "<graphs version=\"1\">\n"
      "  <graph id=\"0\" pattern=\"4\" crossnic=\"0\" nchannels=\"1\" speedintra=\"20.6\" speedinter=\"40\" "
      "latencyinter=\"0\" typeintra=\"NVL\" typeinter=\"LOC\" samechannels=\"0\">\n"
      "    <channel>\n"
      "      <gpu dev=\"0\"/>\n      <gpu dev=\"0x1\"/>\n      <gpu dev=\"0x2\"/>\n      <gpu dev=\"0x3\"/>\n"
      "      <gpu dev=\"0x4\"/>\n      <gpu dev=\"0x5\"/>\n      <gpu dev=\"0x6\"/>\n      <gpu dev=\"0x7\"/>\n"
      "      <gpu dev=\"0x8\"/>\n      <gpu dev=\"0x9\"/>\n      <gpu dev=\"0xa\"/>\n      <gpu dev=\"0xb\"/>\n"
      "      <gpu dev=\"0xc\"/>\n      <gpu dev=\"0xd\"/>\n      <gpu dev=\"0xe\"/>\n      <gpu dev=\"0xf\"/>\n"
      "      <gpu dev=\"0x10\"/>\n      <gpu dev=\"0x11\"/>\n"
      "    </channel>\n"
      "  </graph>\n"
      "</graphs>\n";
  EXPECT_EQ(graphs_xml_string({&g}), expected);
}

TEST(GraphXml, RoundTripHandMade) {
  Topology topo = preset("dgx-h100", 1);
  TopoGraph ring = ring8();
  TopoGraph tree = ring8();
  tree.id = 1;
  tree.pattern = GraphPattern::kBalancedTree;
  tree.bw_intra = 33.3333;
  tree.bw_inter = 12.5;
  tree.latency_inter = 1.5;
  tree.type_inter = PathType::kPix;
  tree.cross_nic = true;
  tree.same_channels = true;
  tree.inter = {{0, 0}, {7, 7}};  // entry and exit NET devs
  std::string x = graphs_xml_string({&ring, &tree});
  EXPECT_NE(x.find("<net dev=\"0x7\"/>"), std::string::npos) << x;

  TopoGraph r, t;
  r.id = 0;
  t.id = 1;
  std::string err;
  ASSERT_TRUE(read_graphs_xml_string(x, "hand.xml", topo, {&r, &t}, &err)) << err;
  expect_same_graph(ring, r);
  expect_same_graph(tree, t);
  EXPECT_EQ(graphs_xml_string({&r, &t}), x);

  // Only graphs whose id is in the file are filled; min/max channels (inputs) are not touched.
  TopoGraph other;
  other.id = 2;
  other.pattern = GraphPattern::kCollNetDirect;
  other.max_channels = 7;
  ASSERT_TRUE(read_graphs_xml_string(x, "hand.xml", topo, {&other, nullptr}, &err)) << err;
  EXPECT_EQ(other.nchannels, 0);
  EXPECT_EQ(other.pattern, GraphPattern::kCollNetDirect);
  TopoGraph ring_in;
  ring_in.max_channels = 7;
  ASSERT_TRUE(read_graphs_xml_string(x, "hand.xml", topo, {&ring_in}, &err)) << err;
  EXPECT_EQ(ring_in.max_channels, 7);
  EXPECT_EQ(ring_in.nchannels, 2);
}

TEST(GraphXml, NvlsChannelsListTheirFirstGpuOnly) {
  Topology topo = preset("dgx-h100", 1);
  TopoGraph g = ring8();
  g.id = 3;
  g.pattern = GraphPattern::kNvls;
  std::string x = graphs_xml_string({&g});
  EXPECT_EQ(x.find("<gpu dev=\"0x1\"/>"), std::string::npos) << x;
  TopoGraph back;
  back.id = 3;
  std::string err;
  ASSERT_TRUE(read_graphs_xml_string(x, "nvls.xml", topo, {&back}, &err)) << err;
  EXPECT_EQ(back.intra, (std::vector<std::vector<int>>{{0}, {7}}));
  EXPECT_EQ(graphs_xml_string({&back}), x);
}

TEST(GraphXml, DataFileAndFileIo) {
  Topology topo = preset("dgx-h100", 1);
  TopoGraph ring, tree;
  ring.id = 0;
  tree.id = 1;
  std::string err;
  ASSERT_TRUE(read_graphs_xml(data_path("graph_dgx_h100.xml"), topo, {&ring, &tree}, &err)) << err;
  EXPECT_EQ(ring.pattern, GraphPattern::kRing);
  EXPECT_EQ(ring.nchannels, 2);
  EXPECT_EQ(ring.intra[1], (std::vector<int>{0, 2, 4, 6, 1, 3, 5, 7}));
  EXPECT_DOUBLE_EQ(ring.bw_intra, 185.4);
  EXPECT_EQ(ring.type_intra, PathType::kNvl);
  EXPECT_EQ(tree.pattern, GraphPattern::kBalancedTree);
  EXPECT_EQ(tree.inter[0], (std::vector<int>{0, 0}));

  std::string path = testing::TempDir() + "/cclab_graph_xml_test.xml";
  ASSERT_TRUE(write_graphs_xml({&ring, &tree}, path, &err)) << err;
  TopoGraph ring2, tree2;
  ring2.id = 0;
  tree2.id = 1;
  ASSERT_TRUE(read_graphs_xml(path, topo, {&ring2, &tree2}, &err)) << err;
  expect_same_graph(ring, ring2);
  expect_same_graph(tree, tree2);
  std::remove(path.c_str());
  EXPECT_FALSE(read_graphs_xml(data_path("no_such_graph.xml"), topo, {&ring2}, &err));
  EXPECT_NE(err.find("no_such_graph.xml: cannot open"), std::string::npos) << err;
}

TEST(GraphXml, SearchedGraphsRoundTrip) {
  for (const char* name : {"dgx-h100", "pcie-8gpu-2socket", "nvlink-pairs"}) {
    for (int machines : {1, 2}) {
      SCOPED_TRACE(std::string(name) + ":" + std::to_string(machines));
      Topology topo = preset(name, machines);
      TopoGraph ring, tree;
      ring.id = 0;
      ring.pattern = GraphPattern::kRing;
      tree.id = 1;
      tree.pattern = GraphPattern::kBalancedTree;
      std::string err;
      ASSERT_TRUE(search_graph(topo, &ring, &err)) << err;
      tree.min_channels = tree.max_channels = ring.nchannels;
      ASSERT_TRUE(search_graph(topo, &tree, &err)) << err;
      std::string x = graphs_xml_string({&ring, &tree});
      TopoGraph r2, t2;
      r2.id = 0;
      t2.id = 1;
      ASSERT_TRUE(read_graphs_xml_string(x, "searched.xml", topo, {&r2, &t2}, &err)) << err << "\n" << x;
      std::vector<std::vector<int>> ring_intra(ring.intra.begin(), ring.intra.begin() + ring.nchannels);
      EXPECT_EQ(r2.intra, ring_intra);
      EXPECT_EQ(r2.nchannels, ring.nchannels);
      EXPECT_EQ(r2.bw_intra, ring.bw_intra);
      EXPECT_EQ(r2.type_intra, ring.type_intra);
      EXPECT_EQ(r2.type_inter, ring.type_inter);
      EXPECT_EQ(r2.inter.size(), machines > 1 ? static_cast<size_t>(ring.nchannels) : 0u);
      EXPECT_EQ(graphs_xml_string({&r2, &t2}), x);
    }
  }
}

TEST(GraphXml, ValidationErrorsNameFileLineAndProblem) {
  Topology topo = preset("dgx-h100", 1);
  const std::string head =
      "<graphs version=\"1\">\n"
      "  <graph id=\"0\" pattern=\"4\" crossnic=\"0\" nchannels=\"1\" speedintra=\"40\" speedinter=\"40\" "
      "latencyinter=\"0\" typeintra=\"NVL\" typeinter=\"PIX\" samechannels=\"1\">\n"
      "    <channel>\n";  // lines 1-3
  const std::string seven = "      <gpu dev=\"0\"/><gpu dev=\"1\"/><gpu dev=\"2\"/><gpu dev=\"3\"/>\n"
                            "      <gpu dev=\"4\"/><gpu dev=\"5\"/><gpu dev=\"6\"/>\n";  // lines 4-5
  const std::string tail = "    </channel>\n  </graph>\n</graphs>\n";
  struct Case {
    std::string xml;
    int line;
    const char* what;
  };
  const Case cases[] = {
      {head + seven + tail, 3, "lists 7 GPUs but the machine has 8 (missing: 7)"},
      {head + seven + "      <gpu dev=\"6\"/>\n" + tail, 6, "GPU 6 appears twice"},
      {head + seven + "      <gpu dev=\"0x8\"/>\n" + tail, 6, "the topology has no GPU 8"},
      {head + seven + "      <gpu dev=\"seven\"/>\n" + tail, 6, "is not a hexadecimal device number"},
      {head + seven + "      <gpu/>\n" + tail, 6, "<gpu> lacks the required attribute dev"},
      {head + seven + "      <cpu dev=\"7\"/>\n" + tail, 6, "unknown element <cpu>"},
      {head + "      <net dev=\"0x9\"/>\n" + seven + "      <gpu dev=\"7\"/>\n      <net dev=\"0\"/>\n" + tail, 4,
       "the topology has no NET 9"},
      {head + "      <net dev=\"0\"/>\n" + seven + "      <gpu dev=\"7\"/>\n" + tail, 3, "no exit <net>"},
      {"<graphs version=\"2\"/>\n", 1, "version 2 is not supported"},
      {"<system version=\"1\"/>\n", 1, "expected <graphs>"},
      {"<graphs version=\"1\">\n  <ring/>\n</graphs>\n", 2, "unknown element <ring>"},
      {head + seven + "      <gpu dev=\"7\"/>\n" + "    </channel>\n    <channel>\n", 8, "truncated"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.xml);
    TopoGraph g;
    g.nchannels = 99;
    std::string err;
    EXPECT_FALSE(read_graphs_xml_string(c.xml, "g.xml", topo, {&g}, &err));
    EXPECT_EQ(g.nchannels, 99);  // untouched
    EXPECT_EQ(err.rfind("g.xml:" + std::to_string(c.line) + ": ", 0), 0u) << err;
    EXPECT_NE(err.find(c.what), std::string::npos) << err;
  }
  // Errors in the <graph> element itself: line 2.
  const std::string ok_channel = "    <channel>\n" + seven + "      <gpu dev=\"7\"/>\n    </channel>\n";
  struct Attr {
    std::string from, to;
    const char* what;
  };
  const Attr attrs[] = {
      {"nchannels=\"1\"", "nchannels=\"2\"", "says nchannels=\"2\" but holds 1 <channel>"},
      {"typeintra=\"NVL\"", "typeintra=\"NVX\"", "typeintra=\"NVX\" is not a path type"},
      {"pattern=\"4\"", "pattern=\"9\"", "pattern 9 is not one of NCCL's patterns"},
      // Graph 0 is the ring graph, graph 1 the tree graph: another pattern would read its channels
      // differently (fuzz_graph_xml: an NVLS pattern on graph 0 made a ring of one GPU per channel).
      {"pattern=\"4\"", "pattern=\"5\"", "<graph id=\"0\"> (the ring graph) has pattern 5; NCCL's ring graph has pattern 4"},
      {"id=\"0\" pattern=\"4\"", "id=\"1\" pattern=\"4\"", "<graph id=\"1\"> (the tree graph) has pattern 4"},
      {"id=\"0\" pattern=\"4\"", "id=\"1\" pattern=\"6\"", "<graph id=\"1\"> (the tree graph) has pattern 6"},
      {"speedintra=\"40\"", "speedintra=\"fast\"", "speedintra=\"fast\" is not a number"},
      {" samechannels=\"1\"", "", "lacks the required attribute samechannels"},
  };
  for (const Attr& a : attrs) {
    std::string x = head.substr(0, head.find("    <channel>")) + ok_channel + "  </graph>\n</graphs>\n";
    x.replace(x.find(a.from), a.from.size(), a.to);
    SCOPED_TRACE(x);
    TopoGraph g;
    std::string err;
    EXPECT_FALSE(read_graphs_xml_string(x, "g.xml", topo, {&g}, &err));
    EXPECT_EQ(err.rfind("g.xml:2: ", 0), 0u) << err;
    EXPECT_NE(err.find(a.what), std::string::npos) << err;
  }
  // Two graphs with one id.
  std::string one = head.substr(head.find("  <graph"), head.find("    <channel>") - head.find("  <graph")) +
                    ok_channel + "  </graph>\n";
  std::string two = "<graphs version=\"1\">\n" + one + one + "</graphs>\n";
  TopoGraph g;
  std::string err;
  EXPECT_FALSE(read_graphs_xml_string(two, "g.xml", topo, {&g}, &err));
  EXPECT_NE(err.find("a second <graph id=\"0\">"), std::string::npos) << err;
}

}  // namespace
}  // namespace cclab
