// Tests of `cclab topo` and `cclab tune`: their pure pieces (flags, sizes, the tuner's input, the table
// and tree text on hand-made graphs and on presets) and, when the executable is built, the tool itself
// run as a user would (CCLAB_CLI_PATH), checking exit status and real content.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "graph/search.h"
#include "graph/topo.h"
#include "graph/tuning.h"
#include "cli_test_util.h"
#include "topo_cmd.h"
#include "tune_cmd.h"

namespace cclab {
namespace {

using cli_test::fields_of;
using cli_test::lines_of;
using cli_test::RunResult;
using cli_test::table_rows;

constexpr size_t KiB = 1024, MiB = KiB * 1024, GiB = MiB * 1024;

// table_rows: the rows of `cclab tune` output, split into fields: size, 6 times, choice, channels, threads.

bool contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

std::string temp_path(const std::string& stem) { return cli_test::temp_path("cclab_topo_tune", stem); }

// ---- sizes and names ---------------------------------------------------------------------------------
TEST(TuneSizes, DefaultSweepIs8BytesTo8GiBByTwo) {
  const std::vector<size_t> s = tune_sizes(kTuneDefaultMinBytes, kTuneDefaultMaxBytes, 2);
  ASSERT_EQ(s.size(), 31u);
  EXPECT_EQ(s.front(), 8u);
  EXPECT_EQ(s.back(), 8 * GiB);
  for (size_t i = 1; i < s.size(); ++i) EXPECT_EQ(s[i], 2 * s[i - 1]);
  EXPECT_EQ(tune_sizes(1 * KiB, 1 * MiB, 4), (std::vector<size_t>{1024, 4096, 16384, 65536, 262144, 1048576}));
  EXPECT_EQ(tune_sizes(8, 8, 2), std::vector<size_t>{8});
  EXPECT_EQ(tune_sizes(100, 1000, 3), (std::vector<size_t>{100, 300, 900}));
  // No overflow near the top of size_t.
  const std::vector<size_t> top = tune_sizes(size_t{1} << 62, ~size_t{0}, 2);
  EXPECT_EQ(top, (std::vector<size_t>{size_t{1} << 62, size_t{1} << 63}));
}

TEST(TuneSizes, FormatBytes) {
  EXPECT_EQ(format_bytes(8), "8");
  EXPECT_EQ(format_bytes(1023), "1023");
  EXPECT_EQ(format_bytes(1024), "1K");
  EXPECT_EQ(format_bytes(1536), "1.5K");
  EXPECT_EQ(format_bytes(64 * MiB), "64M");
  EXPECT_EQ(format_bytes(8 * GiB), "8G");
}

TEST(TuneNames, CollectivesAsCclabPerfSpellsThem) {
  CollKind c;
  ASSERT_TRUE(tune_collective_from_name("all_reduce", &c));
  EXPECT_EQ(c, CollKind::kAllReduce);
  ASSERT_TRUE(tune_collective_from_name("all_gather", &c));
  EXPECT_EQ(c, CollKind::kAllGather);
  ASSERT_TRUE(tune_collective_from_name("reduce_scatter", &c));
  EXPECT_EQ(c, CollKind::kReduceScatter);
  ASSERT_TRUE(tune_collective_from_name("broadcast", &c));
  EXPECT_EQ(c, CollKind::kBroadcast);
  ASSERT_TRUE(tune_collective_from_name("reduce", &c));
  EXPECT_EQ(c, CollKind::kReduce);
  EXPECT_FALSE(tune_collective_from_name("alltoall", &c));  // no algorithm choice to tune
  EXPECT_FALSE(tune_collective_from_name("AllReduce", &c));
  EXPECT_FALSE(tune_collective_from_name("", &c));
}

// ---- flags -------------------------------------------------------------------------------------------
TEST(TuneFlags, DefaultsAndValues) {
  TuneCmdParse p = parse_tune_cmd({"--topo", "dgx-h100", "all_reduce"});
  ASSERT_TRUE(p.ok) << p.message;
  EXPECT_EQ(p.options.source.preset_spec, "dgx-h100");
  EXPECT_EQ(p.options.coll, CollKind::kAllReduce);
  EXPECT_EQ(p.options.min_bytes, 8u);
  EXPECT_EQ(p.options.max_bytes, 8 * GiB);
  EXPECT_EQ(p.options.factor, 2u);
  EXPECT_FALSE(p.options.explain);
  EXPECT_EQ(p.options.ranks, 0);

  p = parse_tune_cmd({"reduce_scatter", "--topo", "dgx-a100:2", "-b", "1K", "-e", "32M", "-f", "4", "--explain", "64K",
                      "--ranks", "8", "--nodes", "2", "--oversubscription", "2.5"});
  ASSERT_TRUE(p.ok) << p.message;
  EXPECT_EQ(p.options.coll, CollKind::kReduceScatter);
  EXPECT_EQ(p.options.min_bytes, 1 * KiB);
  EXPECT_EQ(p.options.max_bytes, 32 * MiB);
  EXPECT_EQ(p.options.factor, 4u);
  EXPECT_TRUE(p.options.explain);
  EXPECT_EQ(p.options.explain_bytes, 64 * KiB);
  EXPECT_EQ(p.options.ranks, 8);
  EXPECT_EQ(p.options.source.nodes, 2);
  EXPECT_DOUBLE_EQ(p.options.source.oversubscription, 2.5);

  p = parse_tune_cmd({"--help"});
  EXPECT_TRUE(p.ok && p.help);
  EXPECT_TRUE(contains(tune_usage(), "--explain SIZE"));
}

TEST(TuneFlags, ErrorsNameTheProblem) {
  struct Case {
    std::vector<std::string> args;
    const char* expect;
  };
  const Case cases[] = {
      {{"--topo", "dgx-h100"}, "missing COLLECTIVE"},
      {{"--topo", "dgx-h100", "alltoall"}, "unknown collective 'alltoall'"},
      {{"--topo", "dgx-h100", "all_reduce", "-b", "12Q"}, "invalid size '12Q' for -b/--minbytes"},
      {{"--topo", "dgx-h100", "all_reduce", "-e", "-5"}, "-e/--maxbytes"},
      {{"--topo", "dgx-h100", "all_reduce", "-b", "0"}, "at least 1 byte"},
      {{"--topo", "dgx-h100", "all_reduce", "-b", "1M", "-e", "1K"}, "larger than -e/--maxbytes"},
      {{"--topo", "dgx-h100", "all_reduce", "-f", "1"}, "-f/--stepfactor must be at least 2"},
      {{"--topo", "dgx-h100", "all_reduce", "-f", "x"}, "-f/--stepfactor"},
      {{"--topo", "dgx-h100", "all_reduce", "--explain", "abc"}, "--explain"},
      {{"--topo", "dgx-h100", "all_reduce", "--ranks", "0"}, "--ranks"},
      {{"--topo", "dgx-h100", "all_reduce", "--nodes", "two"}, "--nodes"},
      {{"--topo", "dgx-h100", "all_reduce", "--frob"}, "unknown flag '--frob'"},
      {{"all_reduce"}, "no topology"},
  };
  for (const auto& c : cases) {
    const TuneCmdParse p = parse_tune_cmd(c.args);
    EXPECT_FALSE(p.ok) << c.expect;
    EXPECT_TRUE(contains(p.message, c.expect)) << p.message;
    EXPECT_EQ(p.message.rfind("cclab tune: ", 0), 0u) << p.message;
  }
}

TEST(TopoFlags, ValuesAndErrors) {
  TopoCmdParse p = parse_topo_cmd(
      {"--topo", "dgx-h100:2", "--oversubscription", "4", "--dump-xml", "a.xml", "--dump-graph", "g.xml"});
  ASSERT_TRUE(p.ok) << p.message;
  EXPECT_EQ(p.options.source.preset_spec, "dgx-h100:2");
  EXPECT_DOUBLE_EQ(p.options.source.oversubscription, 4.0);
  EXPECT_EQ(p.options.dump_xml, "a.xml");
  EXPECT_EQ(p.options.dump_graph, "g.xml");
  p = parse_topo_cmd({"--list"});
  ASSERT_TRUE(p.ok) << p.message;
  EXPECT_TRUE(p.options.list);
  p = parse_topo_cmd({});
  EXPECT_FALSE(p.ok);
  EXPECT_TRUE(contains(p.message, "--topo PRESET")) << p.message;
  p = parse_topo_cmd({"--topo", "dgx-h100", "--nodes", "0"});
  EXPECT_FALSE(p.ok);
  EXPECT_TRUE(contains(p.message, "--nodes")) << p.message;
  p = parse_topo_cmd({"--topo", "dgx-h100", "--oversubscription", "-1"});
  EXPECT_FALSE(p.ok);
  EXPECT_TRUE(contains(p.message, "--oversubscription")) << p.message;
  p = parse_topo_cmd({"--topo", "dgx-h100", "extra"});
  EXPECT_FALSE(p.ok);
  EXPECT_TRUE(contains(p.message, "unexpected argument 'extra'")) << p.message;
}

// ---- building models ---------------------------------------------------------------------------------
TEST(BuildTopology, PresetsMachinesAndErrors) {
  Topology t;
  std::string err;
  TopoSource s;
  s.preset_spec = "dgx-h100";
  ASSERT_TRUE(build_topology(s, &t, &err)) << err;
  EXPECT_EQ(t.machines, 1);
  EXPECT_EQ(t.gpus_per_machine(), 8);

  s.preset_spec = "dgx-h100:2";
  ASSERT_TRUE(build_topology(s, &t, &err)) << err;
  EXPECT_EQ(t.machines, 2);
  s.nodes = 2;  // agreeing is fine
  ASSERT_TRUE(build_topology(s, &t, &err)) << err;
  s.nodes = 3;
  EXPECT_FALSE(build_topology(s, &t, &err));
  EXPECT_TRUE(contains(err, "--nodes")) << err;

  s = TopoSource{};
  s.preset_spec = "pcie-4gpu";
  s.nodes = 3;
  s.oversubscription = 2;
  ASSERT_TRUE(build_topology(s, &t, &err)) << err;
  EXPECT_EQ(t.machines, 3);
  EXPECT_DOUBLE_EQ(t.fabric.oversubscription, 2.0);

  s = TopoSource{};
  s.preset_spec = "no-such-machine";
  EXPECT_FALSE(build_topology(s, &t, &err));
  for (const auto& name : preset_names()) EXPECT_TRUE(contains(err, name)) << err;

  s = TopoSource{};
  EXPECT_FALSE(build_topology(s, &t, &err));
  EXPECT_TRUE(contains(err, "--topo")) << err;
  s.preset_spec = "dgx-h100";
  s.xml_path = "x.xml";
  EXPECT_FALSE(build_topology(s, &t, &err));
  EXPECT_TRUE(contains(err, "not several")) << err;
}

TEST(BuildTopology, XmlRoundTripAndMalformedFile) {
  Topology t;
  std::string err;
  TopoSource s;
  s.preset_spec = "pcie-8gpu-2socket";
  ASSERT_TRUE(build_topology(s, &t, &err)) << err;
  const std::string path = temp_path("topo.xml");
  ASSERT_TRUE(write_topology_xml(t, path, &err)) << err;

  TopoSource x;
  x.xml_path = path;
  x.nodes = 2;
  Topology back;
  ASSERT_TRUE(build_topology(x, &back, &err)) << err;
  EXPECT_EQ(back.machines, 2);
  EXPECT_EQ(back.gpus_per_machine(), t.gpus_per_machine());

  const std::string bad = temp_path("bad.xml");
  {
    std::ofstream f(bad);
    f << "<system version=\"1\">\n  <cpu numaid=\"0\"\n";  // truncated
  }
  x.nodes = 0;
  x.xml_path = bad;
  EXPECT_FALSE(build_topology(x, &back, &err));
  EXPECT_TRUE(contains(err, bad)) << err;
  x.xml_path = temp_path("missing.xml");
  EXPECT_FALSE(build_topology(x, &back, &err));
  std::remove(path.c_str());
  std::remove(bad.c_str());
}

// ---- rings and trees ---------------------------------------------------------------------------------
TEST(TopoReport, RingOrdersArePermutationsOfAllRanks) {
  Topology t;
  std::string err;
  TopoSource s;
  s.preset_spec = "dgx-h100:3";
  ASSERT_TRUE(build_topology(s, &t, &err)) << err;
  TopoGraph ring, tree;
  ASSERT_TRUE(search_ring_and_tree(t, &ring, &tree, &err)) << err;
  EXPECT_EQ(ring.id, 0);
  EXPECT_EQ(ring.pattern, GraphPattern::kRing);
  EXPECT_EQ(tree.id, 1);
  EXPECT_EQ(tree.pattern, GraphPattern::kBalancedTree);
  const std::string text = format_ring_orders(t, ring, 2);
  const std::vector<std::string> lines = lines_of(text);
  ASSERT_GE(lines.size(), 1u);
  for (int c = 0; c < std::min(2, ring.nchannels); ++c) {
    const std::string head = "Ring order, channel " + std::to_string(c) + ":";
    ASSERT_EQ(lines[c].rfind(head, 0), 0u) << lines[c];
    std::vector<std::string> f = fields_of(lines[c].substr(head.size()));
    std::set<int> seen;
    for (const auto& x : f) seen.insert(std::stoi(x));
    EXPECT_EQ(f.size(), 24u);
    EXPECT_EQ(seen.size(), 24u);
    EXPECT_EQ(*seen.begin(), 0);
    EXPECT_EQ(*seen.rbegin(), 23);
  }
}

// Every channel's tree spans all ranks: one root, each non-root's parent lists it as a child, and
// following parents from any rank reaches the root.
TEST(TopoReport, TreesAreConsistentSpanningTrees) {
  for (const char* spec : {"dgx-h100:4", "pcie-8gpu-2socket:3", "dgx-a100:1"}) {
    Topology t;
    std::string err;
    TopoSource s;
    s.preset_spec = spec;
    ASSERT_TRUE(build_topology(s, &t, &err)) << err;
    TopoGraph ring, tree;
    ASSERT_TRUE(search_ring_and_tree(t, &ring, &tree, &err)) << err;
    const int n = t.gpus_per_machine() * t.machines;
    for (int c = 0; c < 2 * tree.nchannels; ++c) {
      std::vector<int> up(n);
      std::vector<std::vector<int>> down(n);
      int roots = 0;
      for (int r = 0; r < n; ++r) {
        int d[3];
        tree_links_of(t, tree, c, r, &up[r], d);
        for (int x : d)
          if (x >= 0) down[r].push_back(x);
        if (up[r] < 0) ++roots;
      }
      EXPECT_EQ(roots, 1) << spec << " channel " << c;
      for (int r = 0; r < n; ++r) {
        if (up[r] >= 0) {
          EXPECT_NE(std::find(down[up[r]].begin(), down[up[r]].end(), r), down[up[r]].end())
              << spec << " channel " << c << " rank " << r;
        }
        int steps = 0;
        for (int x = r; up[x] >= 0 && steps <= n; x = up[x]) ++steps;
        EXPECT_LE(steps, n) << "cycle at rank " << r;
      }
    }
    // The two halves of the channels use different trees across machines (mirror / shift), with the
    // same chain inside each machine.
    if (t.machines > 2) {
      const std::string text = format_trees(t, tree, 1000);
      EXPECT_TRUE(contains(text, "rank 0: Trees [0] ")) << text;
      std::vector<int> up0(n), up1(n);
      int d[3];
      for (int r = 0; r < n; ++r) {
        tree_links_of(t, tree, 0, r, &up0[r], d);
        tree_links_of(t, tree, tree.nchannels, r, &up1[r], d);
        if (r % t.gpus_per_machine() != tree.intra[0][0]) {
          EXPECT_EQ(up0[r], up1[r]) << spec << " rank " << r;
        }
      }
      EXPECT_NE(up0, up1) << spec;
    }
  }
}

TEST(TopoReport, FormatTreesUsesNcclsLogFormat) {
  Topology t;
  std::string err;
  TopoSource s;
  s.preset_spec = "pcie-4gpu:2";
  ASSERT_TRUE(build_topology(s, &t, &err)) << err;
  TopoGraph ring, tree;
  ASSERT_TRUE(search_ring_and_tree(t, &ring, &tree, &err)) << err;
  const std::string text = format_trees(t, tree, 3);
  const std::vector<std::string> lines = lines_of(text);
  ASSERT_EQ(lines.size(), 4u) << text;  // 3 ranks, then "(5 more rank(s) not shown)"
  EXPECT_TRUE(contains(lines[3], "5 more rank(s)")) << text;
  // The head of machine 0 in channel 0 is the root of tree 0: no parent, the next machine's head below.
  const int head0 = tree.intra[0][0];
  int up, d[3];
  tree_links_of(t, tree, 0, head0, &up, d);
  EXPECT_EQ(up, -1);
  char expect[64];
  std::snprintf(expect, sizeof(expect), "[0] %d/%d/%d->%d->-1", d[0], d[1], d[2], head0);
  const std::string all = format_trees(t, tree, 100);
  EXPECT_TRUE(contains(all, expect)) << all;
  EXPECT_TRUE(contains(all, "4/") || contains(all, "/4")) << "machine 1's head appears as a child: " << all;
}

// ---- tuner input and table ---------------------------------------------------------------------------
TEST(TunerInputFromTopology, FillsRanksMachinesSmAndCpu) {
  Topology t;
  std::string err;
  TopoSource s;
  s.preset_spec = "dgx-h100:2";
  ASSERT_TRUE(build_topology(s, &t, &err)) << err;
  TopoGraph ring, tree;
  ASSERT_TRUE(search_ring_and_tree(t, &ring, &tree, &err)) << err;
  TunerInput in;
  ASSERT_TRUE(make_tuner_input(t, &ring, &tree, 0, nullptr, nullptr, &in, &err)) << err;
  EXPECT_EQ(in.nranks, 16);
  EXPECT_EQ(in.nnodes, 2);
  EXPECT_EQ(in.sm_min, 90);
  EXPECT_EQ(in.sm_max, 90);
  const std::vector<int> cpus = t.nodes_of(TopoNodeType::kCpu, 0);
  ASSERT_FALSE(cpus.empty());
  EXPECT_EQ(in.cpu_vendor, t.nodes[cpus[0]].vendor);
  EXPECT_EQ(in.cpu_arch, t.nodes[cpus[0]].arch);
  EXPECT_EQ(in.ring, &ring);
  EXPECT_EQ(in.tree, &tree);

  ASSERT_TRUE(make_tuner_input(t, &ring, &tree, 4, nullptr, nullptr, &in, &err)) << err;
  EXPECT_EQ(in.nranks, 4);
  EXPECT_FALSE(make_tuner_input(t, &ring, &tree, 3, nullptr, nullptr, &in, &err));  // not a multiple of 2
  EXPECT_TRUE(contains(err, "--ranks 3")) << err;
  EXPECT_FALSE(make_tuner_input(t, &ring, &tree, 32, nullptr, nullptr, &in, &err));  // more than 16 GPUs
  EXPECT_TRUE(contains(err, "--ranks 32")) << err;

  // NCCL_ALGO / NCCL_PROTO: the parser's own message, naming the variable.
  AlgoProtoEnable probe;
  std::string parser_msg;
  ASSERT_NE(parse_algo_env("bogus", &probe, &parser_msg), ncclSuccess);
  EXPECT_FALSE(make_tuner_input(t, &ring, &tree, 0, "bogus", nullptr, &in, &err));
  EXPECT_TRUE(err == parser_msg || err == "NCCL_ALGO: " + parser_msg) << err;
  EXPECT_EQ(err.rfind("NCCL_ALGO", 0), 0u) << err;
  ASSERT_NE(parse_proto_env("LL256", &probe, &parser_msg), ncclSuccess);
  EXPECT_FALSE(make_tuner_input(t, &ring, &tree, 0, nullptr, "LL256", &in, &err));
  EXPECT_TRUE(err == parser_msg || err == "NCCL_PROTO: " + parser_msg) << err;
  EXPECT_EQ(err.rfind("NCCL_PROTO", 0), 0u) << err;

  ASSERT_TRUE(make_tuner_input(t, &ring, &tree, 0, "ring", "^LL128", &in, &err)) << err;
  EXPECT_FALSE(in.enable.algo[coll_index(CollKind::kAllReduce)][static_cast<int>(AlgoKind::kTree)]);
  EXPECT_FALSE(in.enable.proto[coll_index(CollKind::kAllReduce)][static_cast<int>(ProtoKind::kLL128)]);
}

// A hand-made set-up (as the tuner's own tests build them): 2 machines x 8 GPUs, NVLink inside.
struct HandMade {
  TopoGraph ring, tree;
  TunerInput in;
  CostModel model;
  explicit HandMade(const char* algo = nullptr) {
    for (TopoGraph* g : {&ring, &tree}) {
      g->nchannels = 4;
      g->bw_intra = g->bw_inter = 20;
      g->type_intra = PathType::kNvl;
      g->type_inter = PathType::kPix;
    }
    ring.id = 0;
    ring.pattern = GraphPattern::kRing;
    tree.id = 1;
    tree.pattern = GraphPattern::kBalancedTree;
    in.nranks = 16;
    in.nnodes = 2;
    in.sm_min = in.sm_max = 90;
    in.ring = &ring;
    in.tree = &tree;
    std::string err;
    if (algo != nullptr) {
      EXPECT_EQ(parse_algo_env(algo, &in.enable, &err), ncclSuccess) << err;
    }
    EXPECT_TRUE(model.init(in, &err)) << err;
  }
};

TEST(TuneTable, OneRowPerSizeWithTheChoiceMarked) {
  HandMade h;
  const std::vector<size_t> sizes = tune_sizes(8, 1 * GiB, 8);
  const std::string text = format_tune_table(h.model, CollKind::kAllReduce, sizes);
  const std::vector<std::string> lines = lines_of(text);
  ASSERT_EQ(lines.size(), sizes.size() + 1);
  const std::vector<std::string> header = fields_of(lines[0]);
  const std::vector<std::string> want = {"#",          "size",        "Ring/LL", "Ring/LL128", "Ring/Simple", "Tree/LL",
                                         "Tree/LL128", "Tree/Simple", "NVLS/Simple", "NVLSTree/Simple", "choice",  "channels",   "threads"};
  EXPECT_EQ(header, want) << lines[0];
  const auto rows = table_rows(text);
  ASSERT_EQ(rows.size(), sizes.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    ASSERT_EQ(r.size(), 12u) << lines[i + 1];
    EXPECT_EQ(r[0], std::to_string(sizes[i]));
    const TunerChoice ch = h.model.choose(CollKind::kAllReduce, sizes[i]);
    ASSERT_TRUE(ch.valid);
    int marked = 0;
    for (size_t k = 0; k < tune_combinations().size(); ++k) {
      const std::string& cell = r[1 + k];
      const AlgoProto& c = tune_combinations()[k];
      const double t = h.model.time_us(CollKind::kAllReduce, sizes[i], c.algo, c.proto);
      if (t < 0) {
        EXPECT_EQ(cell, "-");
        continue;
      }
      const bool star = cell.back() == '*';
      marked += star ? 1 : 0;
      EXPECT_NEAR(std::stod(star ? cell.substr(0, cell.size() - 1) : cell), t, 0.006) << cell;
      EXPECT_EQ(star, c.algo == ch.algo && c.proto == ch.proto) << lines[i + 1];
    }
    EXPECT_EQ(marked, 1) << lines[i + 1];
    EXPECT_EQ(r[9], std::string(algo_name(ch.algo)) + "/" + proto_name(ch.proto));
    EXPECT_EQ(r[10], std::to_string(ch.nchannels));
    EXPECT_EQ(r[11], std::to_string(ch.nthreads));
  }
}

TEST(TuneTable, TreeColumnsAreDashesWhereTreeDoesNotApplyOrIsDisabled) {
  HandMade h;
  // AllGather shows Ring, PAT/Simple (which needs one GPU per node: HandMade has several per node) and
  // NVLS/Simple.
  const std::string ag = format_tune_table(h.model, CollKind::kAllGather, {1 * KiB, 1 * MiB});
  EXPECT_TRUE(contains(ag.substr(0, ag.find('\n')), "PAT/Simple")) << ag;
  const auto rows = table_rows(ag);
  ASSERT_EQ(rows.size(), 2u);
  for (const auto& r : rows) {
    ASSERT_EQ(r.size(), 9u);
    EXPECT_EQ(r[4], "-");
    EXPECT_EQ(r[5], "-");  // no NVLS graph
    EXPECT_EQ(r[6].rfind("Ring/", 0), 0u);
  }
  HandMade ring_only("ring");
  for (const auto& r : table_rows(format_tune_table(ring_only.model, CollKind::kAllReduce, {8, 1 * GiB}))) {
    EXPECT_EQ(r[4], "-");
    EXPECT_EQ(r[7], "-");  // no NVLS graph
    EXPECT_EQ(r[8], "-");  // nor NVLS-Tree
    EXPECT_EQ(r[9].rfind("Ring/", 0), 0u);
  }
  // Nothing enabled for AllGather: every cell "-", the choice "none".
  HandMade tree_only("tree");
  const auto none = table_rows(format_tune_table(tree_only.model, CollKind::kAllGather, {4096}));
  ASSERT_EQ(none.size(), 1u);
  for (int k = 1; k <= 5; ++k) EXPECT_EQ(none[0][k], "-");
  EXPECT_EQ(none[0][6], "none");
}

TEST(TuneExplain, EveryCombinationThenTheWinner) {
  HandMade h;
  const std::string text = format_explain(h.model, CollKind::kAllReduce, 64 * KiB);
  for (const auto& c : tune_combinations()) {
    EXPECT_TRUE(contains(text, h.model.explain(CollKind::kAllReduce, 64 * KiB, c.algo, c.proto))) << text;
  }
  const TunerChoice ch = h.model.choose(CollKind::kAllReduce, 64 * KiB);
  EXPECT_TRUE(contains(text, std::string("Chosen: ") + algo_name(ch.algo) + "/" + proto_name(ch.proto))) << text;
}

// On the real preset: small all_reduce goes LL (NCCL's latency-bound choice), 1 GiB goes Ring/Simple.
TEST(TuneTable, DgxH100AllReduceChoices) {
  Topology t;
  std::string err;
  TopoSource s;
  s.preset_spec = "dgx-h100";
  ASSERT_TRUE(build_topology(s, &t, &err)) << err;
  TopoGraph ring, tree;
  ASSERT_TRUE(search_ring_and_tree(t, &ring, &tree, &err)) << err;
  TunerInput in;
  ASSERT_TRUE(make_tuner_input(t, &ring, &tree, 0, nullptr, nullptr, &in, &err)) << err;
  CostModel model;
  ASSERT_TRUE(model.init(in, &err)) << err;
  const auto rows = table_rows(format_tune_table(model, CollKind::kAllReduce, {8, 1 * GiB}));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_TRUE(rows[0][9] == "Ring/LL" || rows[0][9] == "Tree/LL") << rows[0][9];
  EXPECT_EQ(rows[1][9], "Ring/Simple");
  EXPECT_EQ(rows[1][3].back(), '*');  // the Ring/Simple cell carries the mark
}

#ifdef CCLAB_CLI_PATH
// ---- the executable ----------------------------------------------------------------------------------
RunResult run(const std::string& args, const std::string& env = "") {
  return cli_test::run_command(CCLAB_CLI_PATH, args, env, "cclab_topo_tune");
}

TEST(ToolsCli, DispatchedAndListedInHelp) {
  RunResult r = run("--help");
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(contains(r.out, "topo --topo PRESET")) << r.out;
  EXPECT_TRUE(contains(r.out, "tune --topo PRESET COLL")) << r.out;
  // Without arguments, trace and viz are usage errors that say what they need.
  for (const char* sub : {"viz", "trace"}) {
    r = run(sub);
    EXPECT_EQ(r.status, 2) << sub;
    EXPECT_TRUE(contains(r.err, std::string("cclab ") + sub)) << r.err;
  }
  r = run("topo --help");
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(contains(r.out, "usage: cclab topo")) << r.out;
}

TEST(TuneCli, SmallAllReduceChoosesLL) {
  const RunResult r = run("tune --topo dgx-h100 all_reduce -b 8 -e 8");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto rows = table_rows(r.out);
  ASSERT_EQ(rows.size(), 1u) << r.out;
  EXPECT_EQ(rows[0][0], "8");
  EXPECT_EQ(rows[0][9].substr(rows[0][9].find('/')), "/LL") << r.out;
  int marked = 0;
  for (int k = 1; k <= 8; ++k) marked += rows[0][k].back() == '*' ? 1 : 0;
  EXPECT_EQ(marked, 1) << r.out;
  EXPECT_TRUE(contains(r.out, "# Ring graph: Pattern 4")) << r.out;
}

TEST(TuneCli, OneGiBAllReduceChoosesNvlsAndDefaultSweep) {
  RunResult r = run("tune --topo dgx-h100 all_reduce -b 1G -e 1G");
  ASSERT_EQ(r.status, 0) << r.err;
  auto rows = table_rows(r.out);
  ASSERT_EQ(rows.size(), 1u) << r.out;
  EXPECT_EQ(rows[0][0], "1073741824");
  EXPECT_EQ(rows[0][9], "NVLS/Simple") << r.out;
  r = run("tune --topo dgx-h100 all_reduce");
  ASSERT_EQ(r.status, 0) << r.err;
  rows = table_rows(r.out);
  ASSERT_EQ(rows.size(), 31u) << r.out;
  EXPECT_EQ(rows.front()[0], "8");
  EXPECT_EQ(rows.back()[0], "8589934592");
}

TEST(TuneCli, AllGatherHasNoTreeAndSaysWhatSizeMeans) {
  const RunResult r = run("tune --topo dgx-a100:2 all_gather -b 1K -e 1M -f 32");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "whole gathered buffer")) << r.out;
  const auto rows = table_rows(r.out);
  ASSERT_EQ(rows.size(), 3u) << r.out;
  for (const auto& row : rows) EXPECT_EQ(row[4], "-") << r.out;
}

TEST(TuneCli, ExplainNamesTheWinner) {
  const RunResult r = run("tune --topo dgx-h100 all_reduce --explain 64K");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "Chosen: ")) << r.out;
  EXPECT_TRUE(contains(r.out, "Ring/LL128")) << r.out;
  EXPECT_TRUE(table_rows(r.out).size() >= 6u);  // one explanation line per combination (at least)
}

TEST(TuneCli, EnvironmentRestrictsAndInvalidValuesExit2) {
  RunResult r = run("tune --topo dgx-h100 all_reduce -b 8 -e 1G -f 1024", "NCCL_PROTO=Simple");
  ASSERT_EQ(r.status, 0) << r.err;
  for (const auto& row : table_rows(r.out)) EXPECT_EQ(row[9].substr(row[9].find('/')), "/Simple") << r.out;

  AlgoProtoEnable probe;
  std::string parser_msg;
  ASSERT_NE(parse_algo_env("bogus", &probe, &parser_msg), ncclSuccess);
  r = run("tune --topo dgx-h100 all_reduce", "NCCL_ALGO=bogus");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "NCCL_ALGO")) << r.err;
  EXPECT_TRUE(contains(r.err, parser_msg)) << r.err << " vs " << parser_msg;
  EXPECT_TRUE(r.out.empty()) << r.out;
  r = run("tune --topo dgx-h100 all_reduce", "NCCL_PROTO='LL,,Simple'");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "NCCL_PROTO")) << r.err;
}

TEST(TuneCli, UsageErrorsExit2WithAMessage) {
  RunResult r = run("tune --topo no-such-machine all_reduce");
  EXPECT_EQ(r.status, 2);
  for (const auto& name : preset_names()) EXPECT_TRUE(contains(r.err, name)) << r.err;
  r = run("tune --topo dgx-h100 all_to_everyone");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "unknown collective 'all_to_everyone'")) << r.err;
  r = run("tune --topo dgx-h100 all_reduce -b 1X");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "invalid size '1X'")) << r.err;
  r = run("tune --topo dgx-h100:2 all_reduce --ranks 3");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "--ranks 3")) << r.err;
  r = run("tune --help");
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(contains(r.out, "usage: cclab tune")) << r.out;
}

TEST(TopoCli, DgxH100ShowsNvlinkPathsAndRings) {
  const RunResult r = run("topo --topo dgx-h100");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "## Paths (machine 0)")) << r.out;
  EXPECT_TRUE(contains(r.out, "NVL/")) << r.out;
  EXPECT_TRUE(contains(r.out, "## Ring graph\nPattern 4")) << r.out;
  EXPECT_TRUE(contains(r.out, "## Tree graph\nPattern 1")) << r.out;
  EXPECT_TRUE(contains(r.out, " 0 : GPU/")) << r.out;
  EXPECT_FALSE(contains(r.out, "Trees [")) << "one machine: no inter-machine trees";
}

TEST(TopoCli, MultiMachineShowsRingOrderAndTrees) {
  const RunResult r = run("topo --topo pcie-8gpu-2socket --nodes 2 --oversubscription 2");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "Ring order, channel 0:")) << r.out;
  EXPECT_TRUE(contains(r.out, "rank 0: Trees [0] ")) << r.out;
  EXPECT_TRUE(contains(r.out, "rank 15: Trees [0] ")) << r.out;
  EXPECT_TRUE(contains(r.out, "NET/")) << r.out;
}

TEST(TopoCli, ListAndDumps) {
  RunResult r = run("topo --list");
  ASSERT_EQ(r.status, 0) << r.err;
  // One paragraph per preset, its first line naming it, then its drawing.
  const std::vector<std::string> lines = lines_of(r.out);
  for (const auto& name : preset_names()) {
    const auto it =
        std::find_if(lines.begin(), lines.end(), [&](const std::string& l) { return l.rfind(name, 0) == 0; });
    ASSERT_NE(it, lines.end()) << name << "\n" << r.out;
    EXPECT_TRUE(*it == name || *it == lines_of(preset_drawing(name)).front()) << *it;
    ASSERT_NE(it + 1, lines.end());
    EXPECT_FALSE((it + 1)->empty()) << "a drawing follows " << name;
  }
  EXPECT_EQ(format_preset_list(), r.out);

  const std::string xml = temp_path("dump.xml"), graph = temp_path("graph.xml");
  r = run("topo --topo dgx-a100 --dump-xml " + xml + " --dump-graph " + graph);
  ASSERT_EQ(r.status, 0) << r.err;
  Topology back;
  std::string err;
  ASSERT_TRUE(read_topology_xml(xml, &back, &err)) << err;
  EXPECT_EQ(back.gpus_per_machine(), 8);
  TopoGraph ring, tree;
  ring.id = 0;
  tree.id = 1;
  tree.pattern = GraphPattern::kBalancedTree;
  ASSERT_TRUE(read_graphs_xml(graph, back, {&ring, &tree}, &err)) << err;
  EXPECT_GT(ring.nchannels, 0);
  EXPECT_GT(tree.nchannels, 0);
  // The dumped model reads back through --xml and gives the same searched rings.
  const RunResult a = run("topo --topo dgx-a100");
  const RunResult b = run("topo --xml " + xml);
  ASSERT_EQ(b.status, 0) << b.err;
  const auto ring_part = [](const std::string& s) { return s.substr(s.find("## Ring graph")); };
  EXPECT_EQ(ring_part(a.out), ring_part(b.out));
  std::remove(xml.c_str());
  std::remove(graph.c_str());

  r = run("topo --topo dgx-a100 --dump-xml /nonexistent-dir/x.xml");
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(contains(r.err, "--dump-xml")) << r.err;
}

TEST(TopoCli, ErrorsExit2) {
  RunResult r = run("topo --topo no-such-machine");
  EXPECT_EQ(r.status, 2);
  for (const auto& name : preset_names()) EXPECT_TRUE(contains(r.err, name)) << r.err;
  const std::string bad = temp_path("bad2.xml");
  {
    std::ofstream f(bad);
    f << "<system version=\"1\"><gpu dev=\"zero\"/></system>\n";
  }
  r = run("topo --xml " + bad);
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, bad)) << r.err;
  std::remove(bad.c_str());
  r = run("topo --xml /nonexistent/file.xml");
  EXPECT_EQ(r.status, 2);
  r = run("topo");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "--topo PRESET")) << r.err;
  r = run("topo --topo dgx-h100:0");
  EXPECT_EQ(r.status, 2);
  EXPECT_FALSE(r.err.empty());
}
#endif  // CCLAB_CLI_PATH

}  // namespace
}  // namespace cclab
