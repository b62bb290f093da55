// tests/tuner/tuning_test.cc - NCCL's cost model (runtime/graph/tuning.*) on hand-built graphs:
// exact latencies and bandwidths worked out from NCCL 2.28.9's formulas (the arithmetic is in the
// comments), the choices NCCL makes across sizes, NCCL_ALGO / NCCL_PROTO, LL128's default rule, and
// the channel/thread trimming for small sizes.
//
// The graphs are what NCCL's search (search.cc) gives on these machines:
//  - 8x H100 SXM, NVSwitch: 18 NVLinks x 20.6 GB/s = 370.8 GB/s per GPU. The sm90 intra ladder
//    (60, 50, 40, 30, ...) first fits floor(370.8 / 60) = 6 channels at 60 GB/s; 7 x 50, 9 x 40 and
//    12 x 30 are no better than 6 x 60 = 360, so 6 x 60 stays; ncclTopoDupChannels doubles it (bwIntra
//    60 >= 50) to 12 channels x 30 GB/s, and the communicator doubles the channels again: 24 (the
//    "24 coll channels" of NCCL's logs on DGX H100). Type NVL.
//  - 8x A100 SXM, NVSwitch: 12 NVLinks x 20 GB/s = 240 GB/s; the ladder (40, 30, 20, ...) gives 6 x 40
//    = 240 (optimal), duplicated (sm80 is not > 80) to 12 x 20 GB/s; 24 communicator channels.
//  - N x (8x H100 + 8 NDR NICs, one per GPU behind a Gen5 x16 switch): GPU->NIC is min(PCIe Gen5 x16
//    48, NDR 50) = 48 GB/s, so the sm90 inter ladder's first entry, 48, fits one channel per NIC: 8
//    channels x 48 GB/s, not duplicated (sm90, bw < 50 and more than 4 channels); 16 comm channels.
#include "graph/tuning.h"

#include <gtest/gtest.h>

#include <string>

namespace cclab {
namespace {

constexpr CollKind AR = CollKind::kAllReduce, BC = CollKind::kBroadcast, RD = CollKind::kReduce,
                   AG = CollKind::kAllGather, RS = CollKind::kReduceScatter;
constexpr AlgoKind TREE = AlgoKind::kTree, RING = AlgoKind::kRing, NVLS = AlgoKind::kNvls, PAT = AlgoKind::kPat,
                   CND = AlgoKind::kCollNetDirect;
constexpr ProtoKind LL = ProtoKind::kLL, LL128 = ProtoKind::kLL128, SIMPLE = ProtoKind::kSimple;
constexpr size_t KiB = 1024, MiB = 1024 * 1024, GiB = 1024 * MiB;

TopoGraph make_graph(int id, GraphPattern pattern, int nch, double bw, PathType intra, PathType inter) {
  TopoGraph g;
  g.id = id;
  g.pattern = pattern;
  g.nchannels = nch;
  g.bw_intra = g.bw_inter = bw;
  g.type_intra = intra;
  g.type_inter = inter;
  return g;
}

// A machine set-up: the graphs live here so TunerInput's pointers stay valid.
struct System {
  TopoGraph ring, tree;
  TunerInput in;
  CostModel model;

  System(int nnodes, int ppn, int sm, int nch, double bw, PathType intra, PathType inter, int comm_channels)
      : ring(make_graph(0, GraphPattern::kRing, nch, bw, intra, inter)),
        tree(make_graph(1, GraphPattern::kBalancedTree, nch, bw, intra, inter)) {
    in.nranks = nnodes * ppn;
    in.nnodes = nnodes;
    in.sm_min = in.sm_max = sm;
    in.cpu_arch = CpuArch::kX86;
    in.cpu_vendor = CpuVendor::kIntel;
    in.ring_channels = in.tree_channels = comm_channels;
    wire();
  }
  System(const System&) = delete;

  void wire() {
    in.ring = &ring;
    in.tree = &tree;
  }
  // Re-run init after changing in / the graphs.
  void init() {
    wire();
    std::string error;
    ASSERT_TRUE(model.init(in, &error)) << error;
  }
  void set_algo(const char* value) {
    std::string error;
    ASSERT_EQ(parse_algo_env(value, &in.enable, &error), ncclSuccess) << error;
    init();
  }
  void set_proto(const char* value) {
    std::string error;
    ASSERT_EQ(parse_proto_env(value, &in.enable, &error), ncclSuccess) << error;
    init();
  }
};

struct H100x8 : System {
  H100x8() : System(1, 8, 90, 12, 30.0, PathType::kNvl, PathType::kPix, 24) { init(); }
};
struct A100x8 : System {
  A100x8() : System(1, 8, 80, 12, 20.0, PathType::kNvl, PathType::kPix, 24) { init(); }
};
struct H100Nodes : System {
  explicit H100Nodes(int nnodes) : System(nnodes, 8, 90, 8, 48.0, PathType::kNvl, PathType::kPix, 16) { init(); }
};

std::string choice_str(const TunerChoice& c) {
  if (!c.valid) return "invalid";
  return std::string(algo_name(c.algo)) + "/" + proto_name(c.proto);
}

// ---------------------------------------------------------------------------------------------------
// 8x H100, one machine
// ---------------------------------------------------------------------------------------------------

TEST(TunerH100, AllReduceTableByHand) {
  H100x8 s;
  // Hopper, 1 node: llMaxBw = llMaxBws[Hopper][N1] = 141, perChMaxRingLL128 36.7, perChMaxTree 38.7,
  // perChMaxTreeLL128 36.7. busBw = 12 ch x 30 = 360. AllReduce: nsteps = 2 x 7 = 14, ratio 8/14.
  // typeIntra NVL -> NVLink hw latencies; one node -> no net overhead, no inter steps.
  //   Ring/LL:     lat 6.6 + 14 x 0.6 = 15.0;  bw min(141, 0.5 x 360) = 141 -> x 8/14 = 80.571
  //   Ring/LL128:  lat 14 + 14 x 1.9 = 40.6;   bw min(0.92 x 360 = 331.2, 12 x 36.7 = 440.4) -> x 8/14 = 189.257
  //   Ring/Simple: lat 8.4 + 14 x 3.4 = 56.0;  bw 360 x 8/14 = 205.714
  EXPECT_NEAR(s.model.latency_us(AR, RING, LL), 15.0, 1e-9);
  EXPECT_NEAR(s.model.latency_us(AR, RING, LL128), 40.6, 1e-9);
  EXPECT_NEAR(s.model.latency_us(AR, RING, SIMPLE), 56.0, 1e-9);
  EXPECT_NEAR(s.model.bandwidth(AR, RING, LL), 141.0 * 8 / 14, 1e-9);
  EXPECT_NEAR(s.model.bandwidth(AR, RING, LL128), 331.2 * 8 / 14, 1e-9);
  EXPECT_NEAR(s.model.bandwidth(AR, RING, SIMPLE), 360.0 * 8 / 14, 1e-9);
  // Tree AllReduce: busBw = min(0.92 x 360 = 331.2, 12 x 38.7 = 464.4) = 331.2, then per protocol,
  // then x 0.5. Latency base + 2 x (ppn-1) x intraLat (log2(1) = 0 network levels).
  //   Tree/LL:     lat 6.8 + 2 x 7 x 0.6 = 15.2;   bw min(331.2/3.8 = 87.158, 141) x 0.5 = 43.579
  //   Tree/LL128:  lat 14 + 2 x 7 x 1.25 = 31.5;   bw min(331.2 x 7/9 = 257.6, 12 x 36.7) x 0.5 = 128.8
  //   Tree/Simple: lat 8.4 + 2 x 7 x 4.0 = 64.4;   bw 331.2 x 0.5 = 165.6
  EXPECT_NEAR(s.model.latency_us(AR, TREE, LL), 15.2, 1e-9);
  EXPECT_NEAR(s.model.latency_us(AR, TREE, LL128), 31.5, 1e-9);
  EXPECT_NEAR(s.model.latency_us(AR, TREE, SIMPLE), 64.4, 1e-9);
  EXPECT_NEAR(s.model.bandwidth(AR, TREE, LL), 331.2 / 3.8 * 0.5, 1e-9);
  EXPECT_NEAR(s.model.bandwidth(AR, TREE, LL128), 128.8, 1e-9);
  EXPECT_NEAR(s.model.bandwidth(AR, TREE, SIMPLE), 165.6, 1e-9);
}

TEST(TunerH100, OtherCollectivesByHand) {
  H100x8 s;
  // Broadcast/Reduce: nsteps = nRanks = 8 (ratio 1); latency base + one hop (same channels).
  //   Ring/LL: 6.6 + 0.6 = 7.2, bw 141;  Ring/Simple: 8.4 + 3.4 = 11.8, bw 360;  LL128 14 + 1.9 = 15.9, 331.2
  for (CollKind c : {BC, RD}) {
    EXPECT_NEAR(s.model.latency_us(c, RING, LL), 7.2, 1e-9);
    EXPECT_NEAR(s.model.latency_us(c, RING, SIMPLE), 11.8, 1e-9);
    EXPECT_NEAR(s.model.latency_us(c, RING, LL128), 15.9, 1e-9);
    EXPECT_NEAR(s.model.bandwidth(c, RING, LL), 141.0, 1e-9);
    EXPECT_NEAR(s.model.bandwidth(c, RING, SIMPLE), 360.0, 1e-9);
  }
  // AllGather/ReduceScatter: nsteps = 7, ratio 8/7. Ring/LL 6.6 + 7 x 0.6 = 10.8, bw 141 x 8/7 = 161.14;
  // Ring/Simple 8.4 + 7 x 3.4 = 32.2, bw 360 x 8/7 = 411.43.
  for (CollKind c : {AG, RS}) {
    EXPECT_NEAR(s.model.latency_us(c, RING, LL), 10.8, 1e-9);
    EXPECT_NEAR(s.model.bandwidth(c, RING, LL), 141.0 * 8 / 7, 1e-9);
    EXPECT_NEAR(s.model.latency_us(c, RING, SIMPLE), 32.2, 1e-9);
    EXPECT_NEAR(s.model.bandwidth(c, RING, SIMPLE), 360.0 * 8 / 7, 1e-9);
  }
  // Tree exists for AllReduce only.
  for (CollKind c : {BC, RD, AG, RS}) {
    for (ProtoKind p : {LL, LL128, SIMPLE}) EXPECT_FALSE(s.model.enabled(c, TREE, p));
    EXPECT_EQ(s.model.time_us(c, MiB, TREE, SIMPLE), -1);
  }
}

TEST(TunerH100, ChoicesAcrossSizes) {
  H100x8 s;
  // Small: Ring/LL everywhere. Ring/LL (15.0 us + x/80.57) beats Tree/LL (15.2 us + x/(43.58 x corr)).
  for (size_t b : {size_t(8), size_t(1) * KiB, size_t(64) * KiB, size_t(1) * MiB, size_t(2) * MiB})
    EXPECT_EQ(choice_str(s.model.choose(AR, b)), "Ring/LL") << b;
  // Ring/LL -> Ring/LL128 where 15.0 + x/80571 = 40.6 + x/189257 (µs, x in bytes):
  //   x = 25.6 / (1/80571 - 1/189257) = 25.6 / 7.1276e-6 = 3.592e6 B.
  EXPECT_EQ(choice_str(s.model.choose(AR, 3500000)), "Ring/LL");
  EXPECT_EQ(choice_str(s.model.choose(AR, 3700000)), "Ring/LL128");
  // LL128 on NVLink for mid sizes; Ring/LL128 -> Ring/Simple where 40.6 + x/189257 = 56.0 + x/205714:
  //   x = 15.4 / (1/189257 - 1/205714) = 15.4 / 4.2271e-7 = 36.43e6 B.
  EXPECT_EQ(choice_str(s.model.choose(AR, 16 * MiB)), "Ring/LL128");
  EXPECT_EQ(choice_str(s.model.choose(AR, 36000000)), "Ring/LL128");
  EXPECT_EQ(choice_str(s.model.choose(AR, 37000000)), "Ring/Simple");
  // Large: Ring/Simple on one machine.
  for (size_t b : {size_t(64) * MiB, size_t(1) * GiB, size_t(8) * GiB})
    EXPECT_EQ(choice_str(s.model.choose(AR, b)), "Ring/Simple") << b;
  // Time at 64 KiB: Ring/LL 15.0 + 65536 / (1000 x 80.571) = 15.0 + 0.8134 = 15.813 us.
  TunerChoice c = s.model.choose(AR, 64 * KiB);
  EXPECT_NEAR(c.time_us, 15.0 + 65536.0 / (1000.0 * 141.0 * 8 / 14), 1e-9);
}

TEST(TunerH100, CalibrationCrossChecks) {
  H100x8 s;
  // calibration.md: 8x H200 (sm90, NVLink4 as H100) runs Ring/LL up to ~1 MiB. The model agrees for
  // every size up to 1 MiB; above it NCCL switches to NVLS (this hand-made system has no NVLS graph:
  // nvls_tuning_test.cc covers it), where the model without NVLS stays on Ring/LL until 3.6 MB and then
  // LL128.
  for (size_t b = 8; b <= MiB; b *= 2) EXPECT_EQ(choice_str(s.model.choose(AR, b)), "Ring/LL") << b;
  // calibration.md: ~370 GB/s busbw for Ring at >= 1 GiB on 8x H100. The model's Ring/Simple bus
  // bandwidth is algbw x 2(n-1)/n = 205.714 x 14/8 = 360 GB/s (12 ch x 30), within 3%.
  double busbw = s.model.bandwidth(AR, RING, SIMPLE) * 14 / 8;
  EXPECT_NEAR(busbw, 360.0, 1e-9);
  EXPECT_NEAR(busbw / 370.0, 1.0, 0.03);
}

TEST(TunerH100, TreeCorrectionFactorAndPipeOps) {
  H100x8 s;
  // 64 KiB: log2(65536/64) = 10 -> treeCorrectionFactor[LL][10] = 0.6.
  //   Tree/LL time = 15.2 + 65536 / (1000 x 43.579 x 0.6) = 15.2 + 2.5064 = 17.706 us
  double bw = 331.2 / 3.8 * 0.5;
  EXPECT_NEAR(s.model.time_us(AR, 64 * KiB, TREE, LL), 15.2 + 65536.0 / (1000.0 * bw * 0.6), 1e-9);
  // 32 B: log2(0) = -1 -> no correction.  64 B: index 0, LL factor 1.0; Simple 0.9.
  EXPECT_NEAR(s.model.time_us(AR, 32, TREE, LL), 15.2 + 32.0 / (1000.0 * bw), 1e-9);
  EXPECT_NEAR(s.model.time_us(AR, 64, TREE, SIMPLE), 64.4 + 64.0 / (1000.0 * 165.6 * 0.9), 1e-9);
  // 512 MiB: index 23 is beyond the table -> no correction.
  EXPECT_NEAR(s.model.time_us(AR, 512 * MiB, TREE, SIMPLE), 64.4 + 536870912.0 / (1000.0 * 165.6), 1e-6);
  // numPipeOps: Ring pays its latency per op, Tree per batch of NCCL_MAX_DEV_WORK_BATCH_COLLS = 10.
  EXPECT_NEAR(s.model.time_us(AR, 0, RING, LL, 4), 4 * 15.0, 1e-9);
  EXPECT_NEAR(s.model.time_us(AR, 0, TREE, LL, 10), 15.2, 1e-9);
  EXPECT_NEAR(s.model.time_us(AR, 0, TREE, LL, 11), 2 * 15.2, 1e-9);
}

TEST(TunerH100, TrimmingForSmallSizes) {
  H100x8 s;
  // Ring/LL: threshold 8 x nRanks = 64 B per thread; nc starts at 24, nt at 512.
  //   1 KiB: 1024 < nc x 512 x 64 for every nc -> nc = 1; then nt 512 -> 256 -> 128 -> 64 (64 % 128 != 0
  //   stops); 64 threads < 3 warps -> 96.
  TunerChoice c = s.model.choose(AR, KiB);
  EXPECT_EQ(c.nchannels, 1);
  EXPECT_EQ(c.nthreads, 96);
  //   8 KiB: nc = 1; nt: 8192 < 512 x 64 -> 256; 8192 < 256 x 64 -> 128; 8192 = 128 x 64 stops -> 128.
  c = s.model.choose(AR, 8 * KiB);
  EXPECT_EQ(c.nchannels, 1);
  EXPECT_EQ(c.nthreads, 128);
  //   64 KiB: 65536 / (512 x 64) = 2 channels, full threads; 256 KiB: 8; 1 MiB: 32 > 24 -> 24.
  c = s.model.choose(AR, 64 * KiB);
  EXPECT_EQ(c.nchannels, 2);
  EXPECT_EQ(c.nthreads, 512);
  EXPECT_EQ(s.model.choose(AR, 256 * KiB).nchannels, 8);
  EXPECT_EQ(s.model.choose(AR, MiB).nchannels, 24);
  // Ring/Simple: 512 threads + 1 sync warp = 544 at full size.
  c = s.model.choose(AR, GiB);
  EXPECT_EQ(c.nchannels, 24);
  EXPECT_EQ(c.nthreads, 544);
  // Ring/LL128 at 40 KiB (forced): threshold 8: 40960 / (640 x 8) = 8 channels, 640 threads.
  s.set_proto("LL128");
  s.set_algo("Ring");
  c = s.model.choose(AR, 40 * KiB);
  EXPECT_EQ(choice_str(c), "Ring/LL128");
  EXPECT_EQ(c.nchannels, 8);
  EXPECT_EQ(c.nthreads, 640);
  // Simple forced at 1 KiB: nc = 1, nt 512 -> 64 (1024 < 128 x 64), + 32 = 96.
  s.set_proto("Simple");
  c = s.model.choose(AR, KiB);
  EXPECT_EQ(choice_str(c), "Ring/Simple");
  EXPECT_EQ(c.nchannels, 1);
  EXPECT_EQ(c.nthreads, 96);
  // Tree always runs 640 threads (NCCL_MAX_NTHREADS), channels trimmed as Ring's.
  s.set_algo("Tree");
  c = s.model.choose(AR, KiB);
  EXPECT_EQ(choice_str(c), "Tree/Simple");
  EXPECT_EQ(c.nchannels, 1);
  EXPECT_EQ(c.nthreads, 640);
}

TEST(TunerH100, AlgoAndProtoEnvChangeTheChoice) {
  H100x8 s;
  // NCCL_ALGO=tree: small AllReduce becomes Tree/LL; AllGather has no tree at all -> nothing valid.
  s.set_algo("tree");
  EXPECT_EQ(choice_str(s.model.choose(AR, 64 * KiB)), "Tree/LL");
  EXPECT_FALSE(s.model.choose(AG, 64 * KiB).valid);
  EXPECT_FALSE(s.model.enabled(AR, RING, SIMPLE));
  // NCCL_ALGO=ring;allreduce:tree leaves AllGather on Ring.
  s.in.enable = AlgoProtoEnable();
  s.set_algo("ring;allreduce:tree");
  EXPECT_EQ(choice_str(s.model.choose(AG, 64 * KiB)), "Ring/LL");
  EXPECT_EQ(choice_str(s.model.choose(AR, 64 * KiB)), "Tree/LL");
  // NCCL_PROTO=^LL,LL128: Simple only, even for a tiny AllReduce (Ring 56.0 us beats Tree 64.4 us).
  s.in.enable = AlgoProtoEnable();
  s.set_proto("^LL,LL128");
  TunerChoice c = s.model.choose(AR, 8);
  EXPECT_EQ(choice_str(c), "Ring/Simple");
  EXPECT_NEAR(c.time_us, 56.0 + 8.0 / (1000.0 * 360.0 * 8 / 14), 1e-9);
  // NCCL_PROTO=^LL: small sizes go LL128, and on Tree: Tree/LL128's latency (14 + 2 x 7 x 1.25 = 31.5)
  // is below Ring/LL128's (14 + 14 x 1.9 = 40.6). At 64 KiB: Tree 31.5 + 65536 / (128800 x 0.6) = 32.35
  // us, Ring 40.6 + 65536 / 189257 = 40.95 us. With NCCL_ALGO=ring as well, Ring/LL128.
  s.in.enable = AlgoProtoEnable();
  s.set_proto("^LL");
  EXPECT_EQ(choice_str(s.model.choose(AR, 64 * KiB)), "Tree/LL128");
  EXPECT_NEAR(s.model.choose(AR, 64 * KiB).time_us, 31.5 + 65536.0 / (1000 * 128.8 * 0.6), 1e-9);
  s.set_algo("ring");
  EXPECT_EQ(choice_str(s.model.choose(AR, 64 * KiB)), "Ring/LL128");
  // Everything off for a collective: ring and tree disabled -> only CollNet/NVLS/PAT, which cclab
  // does not model or (NVLS) this system has no graph for -> valid = false.
  s.in.enable = AlgoProtoEnable();
  s.set_algo("^ring,tree");
  for (CollKind coll : {AR, BC, RD, AG, RS}) EXPECT_FALSE(s.model.choose(coll, MiB).valid);
  // Same through NCCL_PROTO naming only a collective's row: allreduce:LL with NCCL_ALGO=allreduce:nvls.
  s.in.enable = AlgoProtoEnable();
  s.set_algo("allreduce:nvls");
  EXPECT_FALSE(s.model.choose(AR, MiB).valid);
  EXPECT_TRUE(s.model.choose(BC, MiB).valid);
}

// Without an NVLS graph (TunerInput::nvls null, as here) NVLS is unavailable too.
TEST(TunerH100, UnmodelledAlgorithmsAreUnavailable) {
  H100x8 s;
  for (CollKind coll : {AR, BC, RD, AG, RS})
    for (AlgoKind a : {CND, AlgoKind::kCollNetChain, NVLS, AlgoKind::kNvlsTree, PAT})  // PAT: 8 GPUs per node
      for (ProtoKind p : {LL, LL128, SIMPLE}) {
        EXPECT_EQ(s.model.bandwidth(coll, a, p), 0);
        EXPECT_EQ(s.model.time_us(coll, MiB, a, p), -1);
        EXPECT_FALSE(s.model.enabled(coll, a, p));
      }
  EXPECT_NE(s.model.explain(AR, MiB, NVLS, SIMPLE).find("NVLink SHARP"), std::string::npos);
  EXPECT_NE(s.model.explain(AR, MiB, CND, SIMPLE).find("SHARP"), std::string::npos);
  EXPECT_NE(s.model.explain(AG, MiB, PAT, SIMPLE).find("one GPU per node"), std::string::npos);
  EXPECT_NE(s.model.explain(AR, MiB, PAT, SIMPLE).find("AllGather and ReduceScatter only"), std::string::npos);
  EXPECT_NE(s.model.explain(AG, MiB, TREE, LL).find("no Tree"), std::string::npos);
}

// PAT at one GPU per node (pcie-1gpu:8: tree graph 2 channels x 24 GB/s, PIX to the NIC, Intel, sm90):
//   latency   = base 8 + log2(8) x interLat 14 / 3.5 + 2.8 x 8 ranks = 8 + 12 + 22.4 = 42.4 us
//   bandwidth = 2 ch x bwInter 24 x 0.75 = 36 GB/s, no bus-to-algorithm ratio for AllGather/ReduceScatter
// Ring/LL AllGather: 6.6 + 7 inter steps x 5.0 = 41.6 us at min(llMaxBw 20.4, 0.5 x 48) x 8/7 = 23.31 GB/s.
// So at 64 KiB PAT (42.4 + 1.82 = 44.22 us) beats Ring/LL (41.6 + 2.81 = 44.41 us); at 8 KiB Ring/LL wins.
TEST(TunerPat, OneGpuPerNodeCostsAndChoices) {
  System s(8, 1, 90, 2, 24, PathType::kLoc, PathType::kPix, 4);
  s.init();
  for (CollKind coll : {AG, RS}) {
    EXPECT_NEAR(s.model.latency_us(coll, PAT, SIMPLE), 42.4, 1e-9);
    EXPECT_NEAR(s.model.bandwidth(coll, PAT, SIMPLE), 36.0, 1e-9);
    EXPECT_EQ(s.model.bandwidth(coll, PAT, LL), 0);
    EXPECT_EQ(s.model.bandwidth(coll, PAT, LL128), 0);
    EXPECT_NEAR(s.model.time_us(coll, 64 * KiB, PAT, SIMPLE), 42.4 + 65536.0 / 36000, 1e-9);
    EXPECT_EQ(choice_str(s.model.choose(coll, 8 * KiB)), "Ring/LL");
    const TunerChoice c = s.model.choose(coll, 64 * KiB);
    EXPECT_EQ(choice_str(c), "PAT/Simple");
    EXPECT_EQ(c.nthreads, 640);  // Tree and PAT always run NCCL_MAX_NTHREADS
    EXPECT_EQ(c.nchannels, 1);   // 64 KiB < 2 x 640 x 64: trimmed to one channel
    // A scaling reduction (ncclAvg, PreMulSum) never takes PAT (updateCollCostTable).
    EXPECT_NE(s.model.choose(coll, 64 * KiB, 1, false).algo, PAT);
  }
  for (CollKind coll : {AR, BC, RD}) EXPECT_EQ(s.model.bandwidth(coll, PAT, SIMPLE), 0);
  // Large sizes go back to the ring: its bandwidth 2 x 24 x 8/7 = 54.9 GB/s beats PAT's 36.
  EXPECT_EQ(choice_str(s.model.choose(AG, 64 * MiB)), "Ring/Simple");
  // NCCL_PAT_ENABLE: 0 turns it off; NCCL_ALGO=PAT leaves nothing else.
  s.in.pat_enable = 0;
  s.init();
  EXPECT_EQ(s.model.bandwidth(AG, PAT, SIMPLE), 0);
  EXPECT_NE(s.model.explain(AG, MiB, PAT, SIMPLE).find("NCCL_PAT_ENABLE=0"), std::string::npos);
  s.in.pat_enable = 2;
  s.set_algo("PAT");
  EXPECT_EQ(choice_str(s.model.choose(RS, 8 * KiB)), "PAT/Simple");
  EXPECT_FALSE(s.model.choose(AR, 8 * KiB).valid);
  EXPECT_FALSE(s.model.choose(RS, 8 * KiB, 1, false).valid);
  // Before sm60 (no CUDA atomics) PAT is off whatever NCCL_PAT_ENABLE says.
  s.in.sm_min = s.in.sm_max = 52;
  s.in.pat_enable = 1;
  s.init();
  EXPECT_EQ(s.model.bandwidth(AG, PAT, SIMPLE), 0);
}

// Two GPUs per node: off by NCCL's rule, on with NCCL_PAT_ENABLE=1 (then log2(4 nodes) = 2 levels and
// 8 ranks: 8 + 2 x 14 / 3.5 + 22.4 = 38.4 us).
TEST(TunerPat, SeveralGpusPerNodeNeedsPatEnable) {
  System s(4, 2, 90, 2, 24, PathType::kNvl, PathType::kPix, 4);
  s.init();
  EXPECT_EQ(s.model.bandwidth(AG, PAT, SIMPLE), 0);
  EXPECT_NE(s.model.explain(AG, MiB, PAT, SIMPLE).find("one GPU per node (8 ranks on 4 nodes"), std::string::npos)
      << s.model.explain(AG, MiB, PAT, SIMPLE);
  s.in.pat_enable = 1;
  s.init();
  EXPECT_NEAR(s.model.latency_us(AG, PAT, SIMPLE), 38.4, 1e-9);
  EXPECT_GT(s.model.bandwidth(AG, PAT, SIMPLE), 0);
}

TEST(TunerH100, ExplainShowsTheDerivation) {
  H100x8 s;
  std::string e = s.model.explain(AR, 64 * KiB, RING, LL);
  EXPECT_NE(e.find("AllReduce 65536 B, Ring/LL: 15.8 us = latency 15.0 us"), std::string::npos) << e;
  EXPECT_NE(e.find("base 6.6 + 14 intra steps x NVLink 0.6"), std::string::npos) << e;
  EXPECT_NE(e.find("+ 0.8 us for 65536 B at 80.6 GB/s"), std::string::npos) << e;
  EXPECT_NE(e.find("min(llMaxBw 141, 0.5 x bus 180)"), std::string::npos) << e;
  EXPECT_NE(e.find("chosen, on 2 channels x 512 threads; runner-up Tree/LL 17.7 us"), std::string::npos) << e;
  e = s.model.explain(AR, 64 * KiB, TREE, LL);
  EXPECT_NE(e.find("17.7 us = latency 15.2 us"), std::string::npos) << e;
  EXPECT_NE(e.find("tree correction 0.6"), std::string::npos) << e;
  EXPECT_NE(e.find("not chosen: Ring/LL 15.8 us is lower"), std::string::npos) << e;
  s.set_proto("^LL128");
  e = s.model.explain(AR, MiB, RING, LL128);
  EXPECT_NE(e.find("disabled by NCCL_PROTO"), std::string::npos) << e;
}

TEST(TunerH100, DescribeIsNcclsTuningTable) {
  H100x8 s;
  std::string d = s.model.describe();
  // NCCL's layout: "%8.1f/%6.1f |" per protocol, Tree block first, rows in ncclFunc_t order.
  EXPECT_NE(d.find("    AllReduce |    15.2/  43.6 |    31.5/ 128.8 |    64.4/ 165.6 |    15.0/  80.6 |"
                   "    40.6/ 189.3 |    56.0/ 205.7 |"),
            std::string::npos)
      << d;
  EXPECT_NE(d.find("    Broadcast |     0.0/   0.0 |"), std::string::npos) << d;
  EXPECT_NE(d.find(" Max NThreads |            512 |            640 |            512 |            512 |"),
            std::string::npos)
      << d;
  EXPECT_LT(d.find("    Broadcast |"), d.find("    AllReduce |"));
  EXPECT_NE(d.find("not modelled by cclab"), std::string::npos) << d;
  EXPECT_NE(d.find("threadThresholds 8/8/64 | 64/8/64"), std::string::npos) << d;
}

// ---------------------------------------------------------------------------------------------------
// 8x A100, one machine
// ---------------------------------------------------------------------------------------------------

TEST(TunerA100, TableAndChoices) {
  A100x8 s;
  // Ampere, 1 node: llMaxBw 87.7, perChMaxRingLL128 20, perChMaxTree 24. busBw 12 x 20 = 240.
  //   Ring/LL: min(87.7, 120) x 8/14 = 50.114;  Ring/LL128: min(220.8, 12 x 20 = 240) x 8/14 = 126.171;
  //   Ring/Simple: 240 x 8/14 = 137.143.  Latencies as H100 (NVLink): 15.0 / 40.6 / 56.0.
  //   Tree: min(220.8, 12 x 24 = 288) = 220.8; LL min(58.105, 87.7) x .5 = 29.053; Simple 110.4.
  EXPECT_NEAR(s.model.bandwidth(AR, RING, LL), 87.7 * 8 / 14, 1e-9);
  EXPECT_NEAR(s.model.bandwidth(AR, RING, LL128), 220.8 * 8 / 14, 1e-9);
  EXPECT_NEAR(s.model.bandwidth(AR, RING, SIMPLE), 240.0 * 8 / 14, 1e-9);
  EXPECT_NEAR(s.model.bandwidth(AR, TREE, LL), 220.8 / 3.8 * 0.5, 1e-9);
  EXPECT_NEAR(s.model.bandwidth(AR, TREE, SIMPLE), 110.4, 1e-9);
  EXPECT_NEAR(s.model.latency_us(AR, RING, LL), 15.0, 1e-9);
  // Crossovers: LL -> LL128 at 25.6 / (1/50114 - 1/126171) = 2.128e6 B;
  //             LL128 -> Simple at 15.4 / (1/126171 - 1/137143) = 24.29e6 B.
  EXPECT_EQ(choice_str(s.model.choose(AR, 64 * KiB)), "Ring/LL");
  EXPECT_EQ(choice_str(s.model.choose(AR, 2000000)), "Ring/LL");
  EXPECT_EQ(choice_str(s.model.choose(AR, 2300000)), "Ring/LL128");
  EXPECT_EQ(choice_str(s.model.choose(AR, 24000000)), "Ring/LL128");
  EXPECT_EQ(choice_str(s.model.choose(AR, 25000000)), "Ring/Simple");
  EXPECT_EQ(choice_str(s.model.choose(AR, GiB)), "Ring/Simple");
  // calibration.md: ~230-235 GB/s busbw on 8x A100; the model's Ring/Simple busbw is 240.
  EXPECT_NEAR(s.model.bandwidth(AR, RING, SIMPLE) * 14 / 8, 240.0, 1e-9);
}

// ---------------------------------------------------------------------------------------------------
// Several machines, NDR NICs
// ---------------------------------------------------------------------------------------------------

TEST(TunerMultiNode, TwoNodesByHand) {
  H100Nodes s(2);
  // 16 ranks, 2 nodes, Intel: llMaxBw = llMaxBws[0 (Intel row)][N2] = 39; Hopper N2 caps: ring LL128
  // 36.7, tree 41.4, tree LL128 36.7. nNodes <= 2 -> bwIntra: busBw 8 x 48 = 384.
  // Ring AllReduce: nsteps 30, nInterSteps 2, netOverhead 1 (x3 = 3 for Simple):
  //   LL:     6.6 + 28 x max(0.6, 1) + 2 x 2.7 = 40.0;      bw min(39, 192) x 16/30 = 20.8
  //   LL128:  14 + 28 x max(1.9, 1) + 2 x 4.0 = 75.2;        bw min(353.28, 8 x 36.7 = 293.6) x 16/30 = 156.587
  //   Simple: 8.4 + 28 x max(3.4, 3) + 2 x 14 = 131.6;       bw 384 x 16/30 = 204.8
  EXPECT_NEAR(s.model.latency_us(AR, RING, LL), 40.0, 1e-9);
  EXPECT_NEAR(s.model.latency_us(AR, RING, LL128), 75.2, 1e-9);
  EXPECT_NEAR(s.model.latency_us(AR, RING, SIMPLE), 131.6, 1e-9);
  EXPECT_NEAR(s.model.bandwidth(AR, RING, LL), 20.8, 1e-9);
  EXPECT_NEAR(s.model.bandwidth(AR, RING, LL128), 293.6 * 16 / 30, 1e-9);
  EXPECT_NEAR(s.model.bandwidth(AR, RING, SIMPLE), 204.8, 1e-9);
  // Tree AllReduce (tree intraLat has no net-overhead floor): busBw min(353.28, 8 x 41.4 = 331.2) = 331.2
  //   LL:     6.8 + 2 x (7 x 0.6 + 1 x 5.0) = 25.2;          bw min(87.158, 39) x .5 = 19.5
  //   LL128:  14 + 2 x (7 x 1.25 + 8.5) = 48.5;             bw min(331.2 x 120/128 = 310.5, 293.6) x .5 = 146.8
  //   Simple: 8.4 + 2 x (7 x 4 + 14) = 92.4;                bw 331.2 x .5 = 165.6
  EXPECT_NEAR(s.model.latency_us(AR, TREE, LL), 25.2, 1e-9);
  EXPECT_NEAR(s.model.latency_us(AR, TREE, LL128), 48.5, 1e-9);
  EXPECT_NEAR(s.model.latency_us(AR, TREE, SIMPLE), 92.4, 1e-9);
  EXPECT_NEAR(s.model.bandwidth(AR, TREE, LL), 19.5, 1e-9);
  EXPECT_NEAR(s.model.bandwidth(AR, TREE, LL128), 146.8, 1e-9);
  EXPECT_NEAR(s.model.bandwidth(AR, TREE, SIMPLE), 165.6, 1e-9);
  // Small AllReduce across nodes: Tree/LL (25.2 us vs Ring/LL 40.0 us).
  EXPECT_EQ(choice_str(s.model.choose(AR, 8)), "Tree/LL");
  EXPECT_EQ(choice_str(s.model.choose(AR, 64 * KiB)), "Tree/LL");
  EXPECT_EQ(choice_str(s.model.choose(AR, MiB)), "Tree/LL128");
  EXPECT_EQ(choice_str(s.model.choose(AR, 64 * MiB)), "Ring/LL128");
  // Large: Ring/Simple (204.8 GB/s beats Tree/Simple's 165.6 even with the 1.4 plateau factor).
  EXPECT_EQ(choice_str(s.model.choose(AR, GiB)), "Ring/Simple");
}

TEST(TunerMultiNode, RingPlateauFactor) {
  H100Nodes s(2);
  // Multi-node Ring/Simple AllReduce latency x 1.4 once nBytes / (comm channels 16 x nRanks 16) >= 64,
  // i.e. from 16384 B.
  double bw = 204.8;
  EXPECT_NEAR(s.model.time_us(AR, 16383, RING, SIMPLE), 131.6 + 16383.0 / (1000 * bw), 1e-9);
  EXPECT_NEAR(s.model.time_us(AR, 16384, RING, SIMPLE), 131.6 * 1.4 + 16384.0 / (1000 * bw), 1e-9);
  // Not for other collectives, and x 1.9 before sm80.
  EXPECT_NEAR(s.model.time_us(AG, 16384, RING, SIMPLE), s.model.latency_us(AG, RING, SIMPLE) +
                                                             16384.0 / (1000 * s.model.bandwidth(AG, RING, SIMPLE)),
              1e-9);
  s.in.sm_min = s.in.sm_max = 70;
  s.init();
  double lat = s.model.latency_us(AR, RING, SIMPLE);
  EXPECT_NEAR(s.model.time_us(AR, 16384, RING, SIMPLE),
              lat * 1.9 + 16384.0 / (1000 * s.model.bandwidth(AR, RING, SIMPLE)), 1e-9);
}

TEST(TunerMultiNode, ManyNodesTreeThenRing) {
  H100Nodes s(16);
  // 128 ranks, 16 nodes: nodes index 2 (more than 2), bwInter 48: busBw 384.
  //   Ring/Simple: 8.4 + (254 - 30) x 3.4 + 30 x 14 = 1190.0 us;  bw 384 x 128/254 = 193.512
  //   Tree/Simple: 8.4 + 2 x (7 x 4 + log2(16) = 4 x 14) = 176.4;  bw min(353.28, 8 x 36 = 288) x .5 = 144
  EXPECT_NEAR(s.model.latency_us(AR, RING, SIMPLE), 1190.0, 1e-9);
  EXPECT_NEAR(s.model.bandwidth(AR, RING, SIMPLE), 384.0 * 128 / 254, 1e-9);
  EXPECT_NEAR(s.model.latency_us(AR, TREE, SIMPLE), 176.4, 1e-9);
  EXPECT_NEAR(s.model.bandwidth(AR, TREE, SIMPLE), 144.0, 1e-9);
  // 128 MiB: tree factor[Simple][21] = 0.9: 176.4 + 134217728 / 129600 = 1212.03 us; ring
  // 1190 x 1.4 + 134217728 / 193512 = 1666 + 693.6 = 2359.6 -> Tree/Simple.
  EXPECT_EQ(choice_str(s.model.choose(AR, 128 * MiB)), "Tree/Simple");
  EXPECT_NEAR(s.model.choose(AR, 128 * MiB).time_us, 176.4 + 134217728.0 / (1000 * 144.0 * 0.9), 1e-6);
  // 1 GiB (beyond the correction table): tree 176.4 + 7456.5 = 7632.9; ring 1666 + 5548.7 = 7214.7 -> Ring.
  EXPECT_EQ(choice_str(s.model.choose(AR, GiB)), "Ring/Simple");
  EXPECT_NEAR(s.model.choose(AR, GiB).time_us, 1190.0 * 1.4 + 1073741824.0 / (1000 * 384.0 * 128 / 254), 1e-6);
  // Small: Tree/LL (6.8 + 2 x (4.2 + 4 x 5) = 55.2 us).
  EXPECT_EQ(choice_str(s.model.choose(AR, KiB)), "Tree/LL");
  EXPECT_NEAR(s.model.latency_us(AR, TREE, LL), 55.2, 1e-9);
  // NCCL_ALGO=ring keeps it on Ring, where 128 MiB is Ring/LL128: 559.6 + 134217728 / 148000 = 1466.5 us
  // (LL128 bw min(353.28, 8 x 36.7 = 293.6) x 128/254 = 147.96) against Ring/Simple's 2359.6 us.
  s.set_algo("ring");
  EXPECT_EQ(choice_str(s.model.choose(AR, 128 * MiB)), "Ring/LL128");
  EXPECT_EQ(choice_str(s.model.choose(AR, 4 * GiB)), "Ring/Simple");
  EXPECT_EQ(choice_str(s.model.choose(AR, KiB)), "Ring/LL");
}

TEST(TunerMultiNode, AmdCpuNetOverheadAndLatencyInter) {
  H100Nodes s(2);
  s.in.cpu_vendor = CpuVendor::kAmd;
  s.init();
  // AMD: netOverhead 2 (Simple 6), llMaxBw = llMaxBws[1 (AMD row)][N2] = 22.5.
  //   Ring/LL:     6.6 + 28 x max(0.6, 2) + 2 x 2.7 = 68.0;  bw min(22.5, 192) x 16/30 = 12.0
  //   Ring/Simple: 8.4 + 28 x max(3.4, 6) + 2 x 14 = 204.4
  EXPECT_NEAR(s.model.latency_us(AR, RING, LL), 68.0, 1e-9);
  EXPECT_NEAR(s.model.bandwidth(AR, RING, LL), 12.0, 1e-9);
  EXPECT_NEAR(s.model.latency_us(AR, RING, SIMPLE), 204.4, 1e-9);
  // NCCL_NET_OVERHEAD given (µs here): 0 leaves the hw latency.
  s.in.net_overhead_us = 0;
  s.init();
  EXPECT_NEAR(s.model.latency_us(AR, RING, LL), 6.6 + 28 * 0.6 + 2 * 2.7, 1e-9);
  // latencyInter = 2 us: interLat LL 2.7 + 2; Simple 14 + 2 + 2 (flush).
  s.in.cpu_vendor = CpuVendor::kIntel;
  s.in.net_overhead_us = -1;
  s.ring.latency_inter = 2;
  s.init();
  EXPECT_NEAR(s.model.latency_us(AR, RING, LL), 6.6 + 28 * 1.0 + 2 * 4.7, 1e-9);      // 44.0
  EXPECT_NEAR(s.model.latency_us(AR, RING, SIMPLE), 8.4 + 28 * 3.4 + 2 * 18.0, 1e-9);  // 139.6
}

TEST(TunerMultiNode, OneGpuPerNodeUsesTreeNetLatency) {
  // 4 nodes x 1 GPU: ppn = 1 -> interLat from the Tree row (LL 5.0); typeIntra LOC -> PCI class.
  System s(4, 1, 90, 8, 48.0, PathType::kLoc, PathType::kPix, 16);
  s.init();
  // Ring AllReduce: nsteps 6, all of them inter-node: 6.6 + 0 + 6 x 5.0 = 36.6
  EXPECT_NEAR(s.model.latency_us(AR, RING, LL), 36.6, 1e-9);
  // Tree: 6.8 + 2 x (0 + log2(4) = 2 x 5.0) = 26.8
  EXPECT_NEAR(s.model.latency_us(AR, TREE, LL), 26.8, 1e-9);
}

// ---------------------------------------------------------------------------------------------------
// LL128's default rule, link classes, CPU and generation specifics
// ---------------------------------------------------------------------------------------------------

TEST(TunerRules, LL128DefaultRule) {
  // PCIe-only machine (typeIntra PXB): LL128 off by default...
  System s(1, 4, 80, 2, 12.0, PathType::kPxb, PathType::kPix, 2);
  s.init();
  EXPECT_FALSE(s.model.enabled(AR, RING, LL128));
  EXPECT_NE(s.model.explain(AR, MiB, RING, LL128).find("typeIntra PXB is beyond NVB"), std::string::npos);
  // ...but a NCCL_PROTO section naming the collective turns it on regardless (even "^LL").
  s.set_proto("^LL");
  EXPECT_TRUE(s.model.enabled(AR, RING, LL128));
  s.in.enable = AlgoProtoEnable();
  s.set_proto("broadcast:LL128");
  EXPECT_TRUE(s.model.enabled(BC, RING, LL128));
  EXPECT_FALSE(s.model.enabled(AR, RING, LL128));

  // typeInter PXN: off before sm90, on from sm90 (NCCL_LL128_C2C defaults to 1).
  System a(2, 8, 80, 8, 24.0, PathType::kNvl, PathType::kPxn, 16);
  a.init();
  EXPECT_FALSE(a.model.enabled(AR, RING, LL128));
  System h(2, 8, 90, 8, 48.0, PathType::kNvl, PathType::kPxn, 16);
  h.init();
  EXPECT_TRUE(h.model.enabled(AR, RING, LL128));
  h.ring.type_inter = PathType::kPhb;
  h.init();
  EXPECT_FALSE(h.model.enabled(AR, RING, LL128));
  EXPECT_TRUE(h.model.enabled(AR, TREE, LL128));  // per graph: the tree still goes through PXN

  // Mixed GPUs and old GPUs.
  H100x8 m;
  m.in.sm_min = 80;
  m.init();
  EXPECT_FALSE(m.model.enabled(AR, RING, LL128));
  m.in.sm_min = m.in.sm_max = 60;
  m.init();
  EXPECT_FALSE(m.model.enabled(AR, RING, LL128));
}

TEST(TunerRules, LinkClassAndSlowRings) {
  // typeIntra NVB (NVLink through a GPU) is not PATH_NVL: NCCL takes PCI latencies (intraHw compares
  // with LINK_NVL). Ring/LL AllReduce on 8 GPUs: 6.6 + 14 x 1.0 = 20.6; Simple 8.4 + 14 x 5.7 = 88.2.
  System s(1, 8, 80, 4, 20.0, PathType::kNvb, PathType::kPix, 8);
  s.init();
  EXPECT_NEAR(s.model.latency_us(AR, RING, LL), 20.6, 1e-9);
  EXPECT_NEAR(s.model.latency_us(AR, RING, SIMPLE), 88.2, 1e-9);
  // A ring of 1 channel x 12 GB/s (<= PCI_BW) runs Simple with 256 threads (+ 32): 288.
  System p(1, 4, 80, 1, 12.0, PathType::kPxb, PathType::kPix, 1);
  p.init();
  p.set_proto("Simple");
  p.set_algo("Ring");
  TunerChoice c = p.model.choose(AR, GiB);
  EXPECT_EQ(c.nthreads, 288);
  // Power CPUs: Tree/Simple PCI latency takes Ring/Simple's 5.7: 8.4 + 2 x 3 x 5.7 = 42.6.
  System w(1, 4, 70, 2, 12.0, PathType::kPxb, PathType::kPix, 2);
  w.in.cpu_arch = CpuArch::kPower;
  w.in.cpu_vendor = CpuVendor::kUnknown;
  w.init();
  EXPECT_NEAR(w.model.latency_us(AR, TREE, SIMPLE), 8.4 + 2 * 3 * 5.7, 1e-9);
}

TEST(TunerRules, BroadcastWithDifferentChannels) {
  H100x8 s;
  s.ring.same_channels = false;
  s.init();
  // Channels differ: nsteps (8) hops; Simple takes Tree's hop latency: LL 6.6 + 8 x 0.6 = 11.4,
  // Simple 8.4 + 8 x 4.0 = 40.4.
  EXPECT_NEAR(s.model.latency_us(BC, RING, LL), 11.4, 1e-9);
  EXPECT_NEAR(s.model.latency_us(BC, RING, SIMPLE), 40.4, 1e-9);
}

TEST(TunerRules, SimpleTreePatternAndBlackwell) {
  H100x8 s;
  s.tree.pattern = GraphPattern::kTree;
  s.init();
  // NCCL_TOPO_PATTERN_TREE: x 0.85 -> Tree/Simple 331.2 x .85 x .5 = 140.76.
  EXPECT_NEAR(s.model.bandwidth(AR, TREE, SIMPLE), 331.2 * 0.85 * 0.5, 1e-9);
  // Blackwell, one node: llMaxBw 282 -> Ring/LL min(282, 0.5 x 12 x 30 = 180) = 180 x 8/14.
  s.in.sm_min = s.in.sm_max = 100;
  s.init();
  EXPECT_NEAR(s.model.bandwidth(AR, RING, LL), 180.0 * 8 / 14, 1e-9);
  // Multi-node Intel uses llMaxBws row 0 (Volta's numbers) whatever the GPU: 4 nodes -> 20.4.
  H100Nodes n(4);
  EXPECT_NEAR(n.model.bandwidth(AR, RING, LL), 20.4 * 32 / 62, 1e-9);
}

// ---------------------------------------------------------------------------------------------------
// Edge cases
// ---------------------------------------------------------------------------------------------------

TEST(TunerEdges, OneRank) {
  System s(1, 1, 90, 1, 40.0, PathType::kLoc, PathType::kPix, 1);
  s.init();
  TunerChoice c = s.model.choose(AR, MiB);
  EXPECT_TRUE(c.valid);
  EXPECT_EQ(choice_str(c), "Ring/Simple");
  EXPECT_EQ(c.time_us, 0);
}

TEST(TunerEdges, InitErrors) {
  TopoGraph g = make_graph(0, GraphPattern::kRing, 2, 20, PathType::kNvl, PathType::kPix);
  CostModel m;
  std::string error;
  TunerInput in;
  in.nranks = 8;
  in.nnodes = 1;
  EXPECT_FALSE(m.init(in, &error));  // no graph
  EXPECT_NE(error.find("no graph"), std::string::npos);
  in.ring = &g;
  in.nnodes = 9;  // more machines than ranks
  EXPECT_FALSE(m.init(in, &error));
  EXPECT_NE(error.find("nnodes 9"), std::string::npos);
  in.nnodes = 3;  // uneven machines are allowed (ppn rounds down)
  EXPECT_TRUE(m.init(in, &error)) << error;
  in.nnodes = 1;
  in.nranks = 0;
  EXPECT_FALSE(m.init(in, &error));
  in.nranks = 8;
  EXPECT_TRUE(m.init(in, &error)) << error;
  // Only a ring graph: Tree unavailable, explained.
  EXPECT_FALSE(m.enabled(AR, TREE, LL));
  EXPECT_NE(m.explain(AR, KiB, TREE, LL).find("no Tree graph"), std::string::npos);
  EXPECT_EQ(choice_str(m.choose(AR, KiB)), "Ring/LL");
}

}  // namespace
}  // namespace cclab

// ---------------------------------------------------------------------------------------------------
// The host model (HostCosts): the host backend without CCLAB_TOPO, CPU threads playing the GPUs. The
// decisions below are the fastest configurations measured on the reference host (2 cores, one process
// per rank and threads alike; docs/tuner.md section 6): timing stays in bench/, these check that the
// model keeps choosing them.
// ---------------------------------------------------------------------------------------------------

namespace cclab {
namespace {

// What comm_topo.cc passes: the virtual model's graphs (a PCIe switch: LL128 off by default), the
// communicator's channels, and the host.
struct HostSystem : System {
  HostSystem(int nranks, int cores, int channels)
      : System(1, nranks, 80, 1, 24.0, PathType::kPix, PathType::kPix, channels) {
    in.host = host_costs(cores, nranks, channels);
    init();
  }
};

std::string host_choice(const CostModel& m, CollKind coll, size_t bytes) {
  const TunerChoice c = m.choose(coll, bytes);
  return choice_str(c) + "/" + std::to_string(c.nchannels);
}

TEST(HostModel, TwoRanksOnTwoCores) {
  HostSystem s(2, 2, 2);
  ASSERT_TRUE(s.model.host_model());
  // LL's flagged lines hand a few bytes over fastest; its data loop (0.69 GB/s) loses from 256 B on.
  for (size_t b : {size_t{8}, size_t{64}}) EXPECT_EQ(host_choice(s.model, AR, b), "Ring/LL/1") << b;
  for (size_t b : {256 * size_t{1}, KiB, 4 * KiB}) EXPECT_EQ(host_choice(s.model, AR, b), "Tree/Simple/1") << b;
  // From 8 KiB the ring's smaller traffic wins; a second channel would put 4 threads on 2 cores.
  for (size_t b = 8 * KiB; b <= 64 * MiB; b *= 2) EXPECT_EQ(host_choice(s.model, AR, b), "Ring/Simple/1") << b;
}

TEST(HostModel, FourRanksOnTwoCores) {
  HostSystem s(4, 2, 2);
  // More rank threads than cores: every hop waits for the peer to be scheduled, and the tree's 2 hops
  // (a root with 3 children) beat the ring's 6 up to 64 KiB.
  for (size_t b = 8; b <= 64 * KiB; b *= 2) EXPECT_EQ(host_choice(s.model, AR, b), "Tree/Simple/1") << b;
  for (size_t b = 128 * KiB; b <= 64 * MiB; b *= 2) EXPECT_EQ(host_choice(s.model, AR, b), "Ring/Simple/1") << b;
  // No LL where its data loop shows: 256 KiB ran 1387 us on LL against 583 us at 512 KiB before the
  // host model. The ring's k-1 LL hops do win a few hundred bytes of the other collectives.
  for (size_t b = 4 * KiB; b <= 64 * MiB; b *= 2)
    for (CollKind coll : {AR, AG, RS, BC, RD}) EXPECT_EQ(s.model.choose(coll, b).proto, SIMPLE) << b;
  EXPECT_EQ(host_choice(s.model, AG, 256), "Ring/LL/1");
  EXPECT_EQ(host_choice(s.model, AG, 2 * KiB), "Ring/Simple/1");
}

TEST(HostModel, ArithmeticByHand) {
  HostSystem s(4, 2, 2);
  // Tree/Simple, 8 B, 1 channel: launch 0.33 + 2 hops x 1.78 (4 rank threads on 2 cores) + 8 B at
  // 10.11 GB/s (2 busy threads on 2 cores) / (depth 1 x (1 + 3 children)) = 2.5275 GB/s.
  EXPECT_NEAR(s.model.time_us(AR, 8, TREE, SIMPLE), 0.33 + 2 * 1.78 + 8 / 2527.5, 1e-9);
  // Ring/Simple, 1 MiB, 1 channel: launch 0.33 + 6 hops x 1.71 + 1 MiB x 2(k-1)/k at 10.11 x 2/4 GB/s.
  EXPECT_NEAR(s.model.time_us(AR, MiB, RING, SIMPLE), 0.33 + 6 * 1.71 + MiB * 1.5 / 5055.0, 1e-9);
  // 2 channels: + 1.66, 8 threads on 2 cores: the same rate, so one channel is the fastest.
  int nc = 0;
  s.model.time_us(AR, 64 * MiB, RING, SIMPLE, 1, &nc);
  EXPECT_EQ(nc, 1);
  // AllGather's nBytes is the total: (k-1)/k of it through each rank.
  EXPECT_NEAR(s.model.time_us(AG, MiB, RING, SIMPLE), 0.33 + 3 * 1.71 + MiB * 0.75 / 5055.0, 1e-9);
  // Broadcast hands one-slot slices on (Tree/Simple's hop), k-1 = 3 of them.
  EXPECT_NEAR(s.model.time_us(BC, 8, RING, SIMPLE), 0.33 + 3 * 1.78 + 8 / 5055.0, 1e-9);
  const std::string why = s.model.explain(AR, 8, TREE, SIMPLE);
  EXPECT_NE(why.find("2 hops x 1.78 (4 rank threads on 2 cores)"), std::string::npos) << why;
  EXPECT_NE(why.find("chosen, on 1 channel"), std::string::npos) << why;
  const std::string table = s.model.describe();
  EXPECT_NE(table.find("host model"), std::string::npos) << table;
  EXPECT_NE(table.find("nRanks 4 on 2 cores, 1..2 channels"), std::string::npos) << table;
  // Deeper trees: 13 ranks fill two levels under the root (1 + 3 + 9), 14 need a third.
  HostSystem t13(13, 2, 1), t14(14, 2, 1);
  EXPECT_NEAR(t13.model.latency_us(AR, TREE, SIMPLE), 0.33 + 4 * 1.78, 1e-9);
  EXPECT_NEAR(t14.model.latency_us(AR, TREE, SIMPLE), 0.33 + 6 * 1.78, 1e-9);
}

TEST(HostModel, CoresToSpareBuyChannels) {
  // 2 ranks on 16 cores: 4 channels keep 8 threads on cores of their own, and a large call's data
  // loops run 4x as fast; a small call stays on one channel (each further one costs 1.66 us).
  HostSystem s(2, 16, 4);
  EXPECT_EQ(host_choice(s.model, AR, 64 * MiB), "Ring/Simple/4");
  EXPECT_EQ(s.model.choose(AR, 8).nchannels, 1);
  // Not oversubscribed, even at 8 ranks: 2 x 8 = 16 threads; the tree is 2 deep (1 + 3 + 4 ranks).
  HostSystem t(8, 16, 2);
  EXPECT_NEAR(t.model.time_us(AR, 8, TREE, SIMPLE), 0.33 + 4 * 0.34 + 8 / (10110.0 / 8), 1e-9);
}

TEST(HostModel, NcclAlgoAndProtoStillNarrow) {
  HostSystem s(4, 2, 2);
  s.set_proto("LL");
  for (size_t b : {size_t{8}, KiB, MiB}) EXPECT_EQ(s.model.choose(AR, b).proto, LL) << b;
  EXPECT_EQ(choice_str(s.model.choose(AR, MiB)), "Ring/LL");
  s.set_proto("Simple");
  s.set_algo("Ring");
  EXPECT_EQ(host_choice(s.model, AR, 8), "Ring/Simple/1");
  s.set_algo("Tree");
  EXPECT_FALSE(s.model.choose(AG, 8).valid);  // no Tree for AllGather
}

TEST(HostModel, OneHostOnly) {
  HostSystem s(4, 2, 2);
  TunerInput in = s.in;
  in.nnodes = 2;
  CostModel m;
  std::string error;
  EXPECT_FALSE(m.init(in, &error));
  EXPECT_NE(error.find("one host"), std::string::npos) << error;
  // Without a host model the same input is NCCL's model, unchanged.
  in = s.in;
  in.host = HostCosts{};
  ASSERT_TRUE(m.init(in, &error)) << error;
  EXPECT_FALSE(m.host_model());
  EXPECT_NEAR(m.time_us(AR, 8, RING, LL), 6.6 + 6 * 1.0 + 8 / (1000 * m.bandwidth(AR, RING, LL)), 1e-9);
}

}  // namespace
}  // namespace cclab
