// tests/tuner/nvls_tuning_test.cc - NVLS in the model (runtime/graph/search.cc search_nvls_graph,
// channels.cc add_nvls, tuning.cc): the NVLS graph NCCL 2.28.9's search finds on the presets and on
// NCCL XML topologies with and without NVLS capability, the NVLS rows of the cost model worked out from
// NCCL's formulas, the enabling rules (NCCL_NVLS_ENABLE, Simple only, one machine, the op and datatype
// table, channels) and the choices on dgx-h100; NVLS-Tree across machines (the multi-machine NVLS graph,
// its rows from NCCL's formulas, its rules and NCCL's choices on dgx-h100:2 / :4 and dgx-b200:2).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "graph/channels.h"
#include "graph/search.h"
#include "graph/topo.h"
#include "graph/tuning.h"

namespace cclab {
namespace {

constexpr CollKind AR = CollKind::kAllReduce, AG = CollKind::kAllGather, RS = CollKind::kReduceScatter,
                   BC = CollKind::kBroadcast;
constexpr AlgoKind NVLS = AlgoKind::kNvls, NVLSTREE = AlgoKind::kNvlsTree;
constexpr ProtoKind LL = ProtoKind::kLL, LL128 = ProtoKind::kLL128, SIMPLE = ProtoKind::kSimple;
constexpr size_t MiB = 1024 * 1024, GiB = 1024 * MiB;

std::string data_path(const std::string& name) {
  const char* dir = std::getenv("CCLAB_TEST_DATA");
  return std::string(dir ? dir : "tests/graph/data") + "/" + name;
}

Topology preset(const std::string& name, int machines = 1) {
  Topology t;
  std::string err;
  EXPECT_TRUE(make_preset_topology(name, machines, FabricSpec{}, &t, &err)) << err;
  return t;
}

// The model as `cclab tune` builds it: searched graphs, NVLS per NCCL_NVLS_ENABLE.
struct Model {
  TopoGraph ring, tree, nvls;
  TunerInput in;
  CostModel model;
  Model(const Topology& t, int64_t nvls_enable = 2, int ranks = 0, int max_ctas = 0) {
    std::string err;
    EXPECT_TRUE(search_ring_and_tree(t, &ring, &tree, &err)) << err;
    const RankPlacement place = place_ranks(t, ranks > 0 ? ranks : static_cast<int>(t.gpus().size()));
    in = make_tuner_input(t, ring, tree, place, 0);
    add_nvls(t, nvls_enable, &nvls, &in, 0, 0, max_ctas);
    EXPECT_TRUE(model.init(in, &err)) << err;
  }
};

std::string choice_str(const TunerChoice& c) {
  return c.valid ? std::string(algo_name(c.algo)) + "/" + proto_name(c.proto) : "none";
}

// dgx-h100: 18 NVLinks x 20.6 GB/s = 370.8 GB/s between each GPU and the NVSwitches. One channel per
// GPU (8); 9 x 50 = 450 > 370.8 but 9 x 40 = 360 fits, so bwIntra 40; the second pass raises bwInter
// 40 -> 50 -> 60 (the ladder's top, < 2 x 40).
TEST(NvlsGraph, DgxH100) {
  TopoGraph g;
  std::string why;
  ASSERT_TRUE(search_nvls_graph(preset("dgx-h100"), &g, &why)) << why;
  EXPECT_EQ(g.id, 3);
  EXPECT_EQ(g.pattern, GraphPattern::kNvls);
  EXPECT_EQ(g.nchannels, 8);
  EXPECT_EQ(g.bw_intra, 40.0);
  EXPECT_EQ(g.bw_inter, 60.0);
  ASSERT_EQ(g.intra.size(), 8u);
  for (int c = 0; c < 8; ++c) EXPECT_EQ(g.intra[c][0], c) << "channel " << c << " is headed by GPU " << c;
  // Four of its GPUs: 4 channels; 5 x 60 = 300 fits, the ladder's top.
  ASSERT_TRUE(search_nvls_graph(preset("dgx-h100"), &g, &why, 4)) << why;
  EXPECT_EQ(g.nchannels, 4);
  EXPECT_EQ(g.bw_intra, 60.0);
}

TEST(NvlsGraph, NoneWithoutNvSwitchOrBeforeHopper) {
  TopoGraph g;
  std::string why;
  EXPECT_FALSE(search_nvls_graph(preset("dgx-a100"), &g, &why));  // NVSwitch, but sm80
  EXPECT_NE(why.find("sm90"), std::string::npos) << why;
  EXPECT_EQ(g.nchannels, 0);
  EXPECT_FALSE(search_nvls_graph(preset("pcie-4gpu"), &g, &why));
  EXPECT_FALSE(why.empty());
}

// NCCL XML: the DGX H100 dump (NVLinks to the NVSwitch, sm90) has NVLS; the same dump without its
// <nvlink> elements (8 sm90 GPUs on PCIe) and NVLink pairs of sm80 GPUs have none, each saying why.
TEST(NvlsGraph, FromNcclXml) {
  std::string err, why;
  Topology h100, h200vm, pairs;
  ASSERT_TRUE(read_topology_xml(data_path("dgx_h100_nccl.xml"), &h100, &err)) << err;
  std::ifstream f(data_path("dgx_h100_nccl.xml"));
  std::string text, line;
  while (std::getline(f, line))
    if (line.find("<nvlink") == std::string::npos) text += line + "\n";
  ASSERT_TRUE(read_topology_xml_string(text, "dgx_h100 without nvlink", &h200vm, &err)) << err;
  ASSERT_EQ(h200vm.gpus(0).size(), 8u);
  ASSERT_TRUE(read_topology_xml(data_path("nvlink_pairs_nccl.xml"), &pairs, &err)) << err;
  TopoGraph g;
  ASSERT_TRUE(search_nvls_graph(h100, &g, &why)) << why;
  EXPECT_EQ(g.nchannels, static_cast<int>(h100.gpus(0).size()));
  EXPECT_GT(g.bw_intra, 0);
  EXPECT_FALSE(search_nvls_graph(h200vm, &g, &why));
  EXPECT_NE(why.find("NVSwitch"), std::string::npos) << why;
  EXPECT_FALSE(search_nvls_graph(pairs, &g, &why));
  EXPECT_NE(why.find("sm90"), std::string::npos) << why;
  // And the model of each: NVLS rows only on the first.
  Model with(h100), without(h200vm);
  EXPECT_GT(with.model.bandwidth(AR, NVLS, SIMPLE), 0);
  EXPECT_EQ(without.model.bandwidth(AR, NVLS, SIMPLE), 0);
  EXPECT_NE(without.model.explain(AR, GiB, NVLS, SIMPLE).find("NVSwitch"), std::string::npos);
}

// NCCL's NVLS rows on dgx-h100 (tuning.cc): per channel min(40 x 0.85 x 7/8 x 2, bwInter 60) = 59.5 for
// AllReduce, busBw 8 x 59.5 = 476, algorithm bandwidth x 8/14 = 272; AllGather/ReduceScatter
// min(40 x 0.85 x 7/8 x 7/8, 60) = 26.03125, x 8 = 208.25, left as is. Latency: NVLink's 25 us, the base
// (0) replaced.
TEST(NvlsTuner, RowsOnDgxH100) {
  Model m(preset("dgx-h100"));
  EXPECT_NEAR(m.model.bandwidth(AR, NVLS, SIMPLE), 8 * 59.5 * 8 / 14, 1e-9);
  EXPECT_NEAR(m.model.bandwidth(AR, NVLS, SIMPLE) * 14 / 8, 476.0, 1e-9);  // calibration.md: 475-480 busbw
  EXPECT_NEAR(m.model.bandwidth(AG, NVLS, SIMPLE), 8 * 40 * 0.85 * 7 / 8 * 7 / 8, 1e-9);
  EXPECT_NEAR(m.model.bandwidth(RS, NVLS, SIMPLE), 8 * 40 * 0.85 * 7 / 8 * 7 / 8, 1e-9);
  EXPECT_NEAR(m.model.latency_us(AR, NVLS, SIMPLE), 25.0, 1e-12);
  for (ProtoKind p : {LL, LL128}) EXPECT_EQ(m.model.bandwidth(AR, NVLS, p), 0);
  EXPECT_EQ(m.model.bandwidth(BC, NVLS, SIMPLE), 0);
  EXPECT_NE(m.model.explain(AR, GiB, NVLS, LL).find("Simple protocol only"), std::string::npos);
  EXPECT_NEAR(m.model.time_us(AR, GiB, NVLS, SIMPLE), 25.0 + GiB / (1000.0 * 272.0), 1e-6);
}

// `cclab tune --topo dgx-h100 all_reduce`: Ring/LL to 1 MiB, NVLS/Simple from 2 MiB (25 + 2097152 /
// 272000 = 32.71 us against Ring/LL's 41.03) to 8 GiB, on NVLS_NCHANNELS = 16 channels of 640 threads.
// AllGather and ReduceScatter stay on Ring (208 GB/s against Ring's 411).
TEST(NvlsTuner, ChoicesOnDgxH100) {
  Model m(preset("dgx-h100"));
  EXPECT_EQ(choice_str(m.model.choose(AR, MiB)), "Ring/LL");
  for (size_t b = 2 * MiB; b <= 8 * GiB; b *= 2) {
    const TunerChoice c = m.model.choose(AR, b);
    EXPECT_EQ(choice_str(c), "NVLS/Simple") << b;
    EXPECT_EQ(c.nchannels, 16);
    EXPECT_EQ(c.nthreads, 640);
  }
  EXPECT_NEAR(m.model.choose(AR, 2 * MiB).time_us, 25.0 + 2097152.0 / 272000.0, 1e-9);
  for (CollKind coll : {AG, RS}) EXPECT_EQ(m.model.choose(coll, GiB).algo, AlgoKind::kRing);
  // A call NVLS cannot reduce (a product, int8, ...) goes to Ring: choose(..., nvls_ok = false).
  EXPECT_EQ(choice_str(m.model.choose(AR, GiB, 1, true, false)), "Ring/Simple");
  // NCCL_ALGO=NVLS forces it where it applies.
  m.in.enable = AlgoProtoEnable();
  std::string why;
  ASSERT_EQ(parse_algo_env("NVLS", &m.in.enable, &why), ncclSuccess) << why;
  std::string err;
  ASSERT_TRUE(m.model.init(m.in, &err)) << err;
  EXPECT_EQ(choice_str(m.model.choose(AG, 1024)), "NVLS/Simple");
  EXPECT_EQ(choice_str(m.model.choose(BC, 1024)), "none");
  EXPECT_EQ(choice_str(m.model.choose(AR, 1024, 1, true, false)), "none");
}

TEST(NvlsTuner, EnablingRules) {
  // NCCL_NVLS_ENABLE=0: no NVLS, and the explanation says so. 1 (forced) is 2 on a model.
  Model off(preset("dgx-h100"), 0), forced(preset("dgx-h100"), 1);
  EXPECT_EQ(off.model.bandwidth(AR, NVLS, SIMPLE), 0);
  EXPECT_NE(off.model.explain(AR, GiB, NVLS, SIMPLE).find("NCCL_NVLS_ENABLE=0"), std::string::npos);
  EXPECT_EQ(choice_str(off.model.choose(AR, GiB)), "Ring/Simple");
  EXPECT_EQ(choice_str(forced.model.choose(AR, GiB)), "NVLS/Simple");
  // Across machines NCCL runs NVLS only with CollNet (off): disabled, with the reason.
  Model two(preset("dgx-h100", 2));
  EXPECT_EQ(two.model.bandwidth(AR, NVLS, SIMPLE), 0);
  EXPECT_NE(two.model.explain(AR, GiB, NVLS, SIMPLE).find("CollNet"), std::string::npos);
  // Older GPUs on an NVSwitch: no NVLS.
  Model a100(preset("dgx-a100"));
  EXPECT_EQ(a100.model.bandwidth(AR, NVLS, SIMPLE), 0);
  // maxCTAs bounds the NVLS channels.
  Model capped(preset("dgx-h100"), 2, 0, 4);
  EXPECT_EQ(capped.model.choose(AR, GiB).nchannels, 4);
}

TEST(NvlsTuner, ChannelsAndOpTable) {
  EXPECT_EQ(nvls_default_channels(90, 1), 16);
  EXPECT_EQ(nvls_default_channels(100, 1), 24);
  EXPECT_EQ(nvls_default_channels(100, 2), 32);
  EXPECT_EQ(nvls_default_channels(90, 1, 8), 8);       // nvlsCTAs
  EXPECT_EQ(nvls_default_channels(90, 1, 0, 20), 20);  // minCTAs
  EXPECT_EQ(nvls_default_channels(90, 1, 0, 0, 2), 2);  // maxCTAs
  // ncclNvlsSupported: ncclDataType_t 0 int8 .. 11 fp8e5m2, ncclRedOp_t 0 sum 1 prod 2 max 3 min 4 avg.
  for (int t : {2, 3, 4, 5, 6, 9})
    for (int op : {0, 2, 3}) EXPECT_TRUE(nvls_op_supported(AR, t, op)) << t << " " << op;
  for (int t : {7, 8}) {
    EXPECT_TRUE(nvls_op_supported(AR, t, 0));
    EXPECT_FALSE(nvls_op_supported(AR, t, 2));
  }
  for (int t = 0; t < 12; ++t) {
    EXPECT_FALSE(nvls_op_supported(RS, t, 1)) << t;  // prod
    EXPECT_FALSE(nvls_op_supported(AR, t, 4)) << t;  // avg
    EXPECT_TRUE(nvls_op_supported(AG, t, 0)) << t;   // no reduction
  }
  for (int t : {0, 1, 10, 11}) EXPECT_FALSE(nvls_op_supported(AR, t, 0)) << t;
  EXPECT_DOUBLE_EQ(nvls_efficiency(90), 0.85);
  EXPECT_DOUBLE_EQ(nvls_efficiency(100), 0.74);
  EXPECT_DOUBLE_EQ(nvls_efficiency(80), 0.0);
}

// Across machines NCCL's NVLS search starts at the NETs: one head per NET's local GPU (dgx-h100: GPU i
// has NIC i, 8 heads), the inter speed ladder {48, 45, 42, 40, ...}: 9 x 48 = 432 > 370.8 GB/s of
// NVLinks to the switch, 9 x 40 = 360 fits, so bwIntra 40; pass 2 raises bwInter to 48, the most a
// 400 Gb/s NIC's path carries (< 2 x 40). dgx-b200 (sm100 ladder {96, 48, ...}): the NIC (50 GB/s)
// caps both at 48.
TEST(NvlsTreeGraph, AcrossMachines) {
  TopoGraph g;
  std::string why;
  ASSERT_TRUE(search_nvls_graph(preset("dgx-h100", 2), &g, &why)) << why;
  EXPECT_EQ(g.nchannels, 8);
  EXPECT_EQ(g.bw_intra, 40.0);
  EXPECT_EQ(g.bw_inter, 48.0);
  EXPECT_EQ(g.type_inter, PathType::kPix);
  for (int c = 0; c < 8; ++c) EXPECT_EQ(g.intra[c][0], c) << "head of channel " << c;
  ASSERT_TRUE(search_nvls_graph(preset("dgx-b200", 2), &g, &why)) << why;
  EXPECT_EQ(g.nchannels, 8);
  EXPECT_EQ(g.bw_intra, 48.0);
  EXPECT_EQ(g.bw_inter, 48.0);
}

// NCCL's NVLS-Tree rows (tuning.cc): per channel min(bwIntra x 0.85 x 7/8 x 2, bwInter x (2 on <= 2
// machines), perChMaxNVLSTreeBw), x 8 channels, x nRanks / (2 (nRanks - 1)); latency 0 + NVLink 25 +
// 2 log2(nNodes) x NET 20.9 (latencyInter 0 on the preset).
TEST(NvlsTreeTuner, RowsFromNcclsFormulas) {
  Model two(preset("dgx-h100", 2));
  // 2 machines: min(59.5, 96, 57.7) = 57.7 (Hopper N2 cap).
  EXPECT_NEAR(two.model.bandwidth(AR, NVLSTREE, SIMPLE), 8 * 57.7 * 16 / 30, 1e-4);
  EXPECT_NEAR(two.model.latency_us(AR, NVLSTREE, SIMPLE), 25 + 2 * 1 * 20.9, 1e-4);
  for (ProtoKind p : {LL, LL128}) EXPECT_EQ(two.model.bandwidth(AR, NVLSTREE, p), 0);
  for (CollKind c : {AG, RS, BC}) EXPECT_EQ(two.model.bandwidth(c, NVLSTREE, SIMPLE), 0);
  EXPECT_NE(two.model.explain(AR, GiB, NVLSTREE, LL).find("Simple protocol only"), std::string::npos);
  EXPECT_NE(two.model.explain(AR, GiB, NVLSTREE, SIMPLE).find("x 2 (2 machines)"), std::string::npos);
  // 4 machines: min(59.5, 48, 45.5) = 45.5 (Hopper N4 cap); 2 levels.
  Model four(preset("dgx-h100", 4));
  EXPECT_NEAR(four.model.bandwidth(AR, NVLSTREE, SIMPLE), 8 * 45.5 * 32 / 62, 1e-4);
  EXPECT_NEAR(four.model.latency_us(AR, NVLSTREE, SIMPLE), 25 + 2 * 2 * 20.9, 1e-4);
  // dgx-b200:2: min(48 x 0.74 x 7/8 x 2 = 62.16, 96, 96); 32 NVLS channels (ncclNvlsTreeSm100Tuning:
  // 2 machines, 50 GB/s NICs); the sm100 x86 tree correction applies to the time.
  Model b200(preset("dgx-b200", 2));
  EXPECT_NEAR(b200.model.bandwidth(AR, NVLSTREE, SIMPLE), 8 * 62.16 * 16 / 30, 1e-3);
  const double bw = b200.model.bandwidth(AR, NVLSTREE, SIMPLE);
  EXPECT_NEAR(b200.model.time_us(AR, 64 * MiB, NVLSTREE, SIMPLE),
              b200.model.latency_us(AR, NVLSTREE, SIMPLE) + 64.0 * MiB / (1000.0 * bw * 0.8), 1e-3);  // log2(64 MiB / 64) = 20: 0.8
  EXPECT_EQ(b200.model.choose(AR, GiB).nchannels, 32);
}

// NCCL's choices: dgx-h100:2 runs NVLS-Tree from 4 MiB up (83.8 us against Tree/LL128's 84.2), on the
// 16 NVLS channels of 640 threads; dgx-h100:4 from 16 MiB to 256 MiB and Ring/Simple beyond (364 GB/s
// bus against Ring's 384); dgx-b200:2 from 4 MiB up.
TEST(NvlsTreeTuner, ChoicesAcrossMachines) {
  Model two(preset("dgx-h100", 2));
  EXPECT_EQ(choice_str(two.model.choose(AR, 2 * MiB)), "Tree/LL128");
  for (size_t b = 4 * MiB; b <= 8 * GiB; b *= 4) {
    const TunerChoice c = two.model.choose(AR, b);
    EXPECT_EQ(choice_str(c), "NVLSTree/Simple") << b;
    EXPECT_EQ(c.nchannels, 16);
    EXPECT_EQ(c.nthreads, 640);
  }
  Model four(preset("dgx-h100", 4));
  EXPECT_EQ(choice_str(four.model.choose(AR, 4 * MiB)), "Tree/LL128");
  EXPECT_EQ(choice_str(four.model.choose(AR, 16 * MiB)), "NVLSTree/Simple");
  EXPECT_EQ(choice_str(four.model.choose(AR, 256 * MiB)), "NVLSTree/Simple");
  EXPECT_EQ(choice_str(four.model.choose(AR, GiB)), "Ring/Simple");
  Model b200(preset("dgx-b200", 2));
  EXPECT_EQ(choice_str(b200.model.choose(AR, 4 * MiB)), "NVLSTree/Simple");
  // No multimem reduction for the call (a product, an average, int8): not NVLS-Tree.
  EXPECT_EQ(two.model.choose(AR, GiB, 1, true, false).algo, AlgoKind::kRing);
}

TEST(NvlsTreeTuner, EnablingRules) {
  // One machine: NCCL disables NVLS-Tree (NVLS runs there).
  Model one(preset("dgx-h100"));
  EXPECT_EQ(one.model.bandwidth(AR, NVLSTREE, SIMPLE), 0);
  EXPECT_NE(one.model.explain(AR, GiB, NVLSTREE, SIMPLE).find("one machine"), std::string::npos);
  // NCCL_NVLS_ENABLE=0, and machines without NVLS (sm80): none.
  Model off(preset("dgx-h100", 2), 0), a100(preset("dgx-a100", 2));
  EXPECT_EQ(off.model.bandwidth(AR, NVLSTREE, SIMPLE), 0);
  EXPECT_NE(off.model.explain(AR, GiB, NVLSTREE, SIMPLE).find("NCCL_NVLS_ENABLE=0"), std::string::npos);
  EXPECT_EQ(a100.model.bandwidth(AR, NVLSTREE, SIMPLE), 0);
  // NCCL_ALGO: "NVLSTree" alone forces it, "^NVLSTree" removes it.
  Model two(preset("dgx-h100", 2));
  std::string why, err;
  for (const char* env : {"NVLSTree", "^NVLSTree"}) {
    two.in.enable = AlgoProtoEnable();
    ASSERT_EQ(parse_algo_env(env, &two.in.enable, &why), ncclSuccess) << why;
    ASSERT_TRUE(two.model.init(two.in, &err)) << err;
    const bool only = env[0] != '^';
    EXPECT_EQ(two.model.choose(AR, 1024).algo == NVLSTREE, only) << env;
    EXPECT_EQ(two.model.choose(AR, GiB).algo == NVLSTREE, only) << env;
    if (!only) {
      EXPECT_NE(two.model.explain(AR, GiB, NVLSTREE, SIMPLE).find("NCCL_ALGO"), std::string::npos);
    }
  }
  // A machine with one NIC has one head: NVLS-Tree needs two channels.
  EXPECT_EQ(nvls_default_channels(100, 4, 0, 0, 0, 50.0, 8), 24);
  EXPECT_EQ(nvls_default_channels(100, 2, 0, 0, 0, 50.0, 8), 32);
  EXPECT_EQ(nvls_default_channels(100, 4, 0, 0, 0, 100.0, 8), 24);
  EXPECT_EQ(nvls_default_channels(100, 4, 0, 0, 0, 100.0, 16), 32);
  EXPECT_EQ(nvls_default_channels(90, 4, 0, 0, 0, 50.0, 8), 16);
}

}  // namespace
}  // namespace cclab
