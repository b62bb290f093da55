// tests/tuner/algo_proto_test.cc - NCCL_ALGO / NCCL_PROTO parsing into the enable table: the strings
// NCCL's docs, source comments and users' issues use, exact tables, and every kind of invalid string.
#include "graph/algo_proto.h"

#include <gtest/gtest.h>

#include <array>
#include <string>

namespace cclab {
namespace {

// Rows as bit masks (bit i = index i enabled) so a whole table is one readable array.
constexpr int kTree = 1 << 0, kRing = 1 << 1, kCnD = 1 << 2, kCnC = 1 << 3, kNvls = 1 << 4, kNvlsTree = 1 << 5,
              kPat = 1 << 6, kAllAlgos = 0x7f;
constexpr int kLL = 1 << 0, kLL128 = 1 << 1, kSimple = 1 << 2, kAllProtos = 0x7;

// Order of the expected arrays: CollKind order.
using Rows = std::array<int, kNumColls>;
constexpr int AR = 0, BC = 1, RD = 2, AG = 3, RS = 4;

Rows algo_rows(const AlgoProtoEnable& t) {
  Rows rows{};
  for (int c = 0; c < kNumColls; c++)
    for (int a = 0; a < kNumAlgos; a++) rows[c] |= t.algo[c][a] ? 1 << a : 0;
  return rows;
}

Rows proto_rows(const AlgoProtoEnable& t) {
  Rows rows{};
  for (int c = 0; c < kNumColls; c++)
    for (int p = 0; p < kNumProtos; p++) rows[c] |= t.proto[c][p] ? 1 << p : 0;
  return rows;
}

Rows same(int mask) { return Rows{mask, mask, mask, mask, mask}; }

std::array<bool, kNumColls> algo_env_rows(const AlgoProtoEnable& t) {
  std::array<bool, kNumColls> r{};
  for (int c = 0; c < kNumColls; c++) r[c] = t.algo_from_env[c];
  return r;
}

std::array<bool, kNumColls> proto_env_rows(const AlgoProtoEnable& t) {
  std::array<bool, kNumColls> r{};
  for (int c = 0; c < kNumColls; c++) r[c] = t.proto_from_env[c];
  return r;
}

Rows parse_algo_ok(const char* value) {
  AlgoProtoEnable t;
  std::string error;
  EXPECT_EQ(parse_algo_env(value, &t, &error), ncclSuccess) << value << ": " << error;
  EXPECT_EQ(proto_rows(t), same(kAllProtos)) << "NCCL_ALGO must not touch the protocol rows";
  return algo_rows(t);
}

Rows parse_proto_ok(const char* value) {
  AlgoProtoEnable t;
  std::string error;
  EXPECT_EQ(parse_proto_env(value, &t, &error), ncclSuccess) << value << ": " << error;
  EXPECT_EQ(algo_rows(t), same(kAllAlgos)) << "NCCL_PROTO must not touch the algorithm rows";
  return proto_rows(t);
}

// ---- Enums, names -------------------------------------------------------------------------------

TEST(AlgoProtoNames, IndicesMatchNccl) {
  EXPECT_EQ(static_cast<int>(AlgoKind::kTree), 0);
  EXPECT_EQ(static_cast<int>(AlgoKind::kRing), 1);
  EXPECT_EQ(static_cast<int>(AlgoKind::kCollNetDirect), 2);
  EXPECT_EQ(static_cast<int>(AlgoKind::kCollNetChain), 3);
  EXPECT_EQ(static_cast<int>(AlgoKind::kNvls), 4);
  EXPECT_EQ(static_cast<int>(AlgoKind::kNvlsTree), 5);
  EXPECT_EQ(static_cast<int>(AlgoKind::kPat), 6);
  EXPECT_EQ(static_cast<int>(ProtoKind::kLL), 0);
  EXPECT_EQ(static_cast<int>(ProtoKind::kLL128), 1);
  EXPECT_EQ(static_cast<int>(ProtoKind::kSimple), 2);
  EXPECT_EQ(coll_index(CollKind::kAllReduce), AR);
  EXPECT_EQ(coll_index(CollKind::kReduceScatter), RS);
}

TEST(AlgoProtoNames, NcclSpellings) {
  const char* algos[] = {"Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"};
  for (int a = 0; a < kNumAlgos; a++) EXPECT_STREQ(algo_name(static_cast<AlgoKind>(a)), algos[a]);
  EXPECT_STREQ(algo_name(AlgoKind::kCustom), "Custom");  // a plugin's algorithm (graph/custom_algo.h)
  EXPECT_STREQ(algo_name(static_cast<AlgoKind>(8)), "Unknown");
  EXPECT_STREQ(algo_name(static_cast<AlgoKind>(-1)), "Unknown");
  EXPECT_STREQ(proto_name(ProtoKind::kLL), "LL");
  EXPECT_STREQ(proto_name(ProtoKind::kLL128), "LL128");
  EXPECT_STREQ(proto_name(ProtoKind::kSimple), "Simple");
  EXPECT_STREQ(proto_name(static_cast<ProtoKind>(-1)), "Unknown");
  EXPECT_STREQ(coll_name(CollKind::kAllReduce), "AllReduce");
  EXPECT_STREQ(coll_name(CollKind::kBroadcast), "Broadcast");
  EXPECT_STREQ(coll_name(CollKind::kReduce), "Reduce");
  EXPECT_STREQ(coll_name(CollKind::kAllGather), "AllGather");
  EXPECT_STREQ(coll_name(CollKind::kReduceScatter), "ReduceScatter");
  EXPECT_STREQ(coll_name(CollKind::kSendRecv), "Unknown");
}

TEST(AlgoProtoNames, LookupIsCaseInsensitive) {
  AlgoKind a = AlgoKind::kTree;
  EXPECT_TRUE(algo_from_name("nvlstree", &a));
  EXPECT_EQ(a, AlgoKind::kNvlsTree);
  EXPECT_TRUE(algo_from_name("COLLNETCHAIN", &a));
  EXPECT_EQ(a, AlgoKind::kCollNetChain);
  EXPECT_FALSE(algo_from_name("collnet", &a));  // the pre-2.14 name is gone
  EXPECT_FALSE(algo_from_name(nullptr, &a));
  ProtoKind p = ProtoKind::kLL;
  EXPECT_TRUE(proto_from_name("simple", &p));
  EXPECT_EQ(p, ProtoKind::kSimple);
  EXPECT_TRUE(proto_from_name("ll128", &p));
  EXPECT_EQ(p, ProtoKind::kLL128);
  EXPECT_FALSE(proto_from_name("LL64", &p));
  CollKind c = CollKind::kAllReduce;
  EXPECT_TRUE(coll_from_name("reducescatter", &c));
  EXPECT_EQ(c, CollKind::kReduceScatter);
  EXPECT_FALSE(coll_from_name("all_reduce", &c));
  EXPECT_FALSE(coll_from_name("sendrecv", &c));
}

// ---- Valid NCCL_ALGO ----------------------------------------------------------------------------

TEST(ParseAlgo, UnsetAndEmptyEnableEverything) {
  EXPECT_EQ(parse_algo_ok(nullptr), same(kAllAlgos));
  EXPECT_EQ(parse_algo_ok(""), same(kAllAlgos));
  AlgoProtoEnable t;
  ASSERT_EQ(parse_algo_env("tree", &t, nullptr), ncclSuccess);
  ASSERT_EQ(parse_algo_env(nullptr, &t, nullptr), ncclSuccess);  // resets an earlier setting
  EXPECT_EQ(algo_rows(t), same(kAllAlgos));
  EXPECT_EQ(algo_env_rows(t), (std::array<bool, kNumColls>{}));
}

TEST(ParseAlgo, SingleNames) {
  EXPECT_EQ(parse_algo_ok("Ring"), same(kRing));
  EXPECT_EQ(parse_algo_ok("Tree"), same(kTree));
  EXPECT_EQ(parse_algo_ok("NVLS"), same(kNvls));
  EXPECT_EQ(parse_algo_ok("NVLSTree"), same(kNvlsTree));
  EXPECT_EQ(parse_algo_ok("PAT"), same(kPat));
  EXPECT_EQ(parse_algo_ok("CollNetDirect"), same(kCnD));
  EXPECT_EQ(parse_algo_ok("CollNetChain"), same(kCnC));
}

TEST(ParseAlgo, CaseVariations) {
  for (const char* v : {"ring", "RING", "Ring", "rInG"}) EXPECT_EQ(parse_algo_ok(v), same(kRing)) << v;
  EXPECT_EQ(parse_algo_ok("nvls,nvlstree"), same(kNvls | kNvlsTree));
  EXPECT_EQ(parse_algo_ok("collnetdirect,COLLNETCHAIN"), same(kCnD | kCnC));
  EXPECT_EQ(parse_algo_ok("ALLREDUCE:TREE"), (Rows{kTree, kAllAlgos, kAllAlgos, kAllAlgos, kAllAlgos}));
}

TEST(ParseAlgo, Lists) {
  EXPECT_EQ(parse_algo_ok("ring,tree"), same(kRing | kTree));
  EXPECT_EQ(parse_algo_ok("Tree,Ring"), same(kRing | kTree));
  EXPECT_EQ(parse_algo_ok("NVLS,Ring,Tree"), same(kNvls | kRing | kTree));
  EXPECT_EQ(parse_algo_ok("ring,ring"), same(kRing));  // duplicates are harmless, as in NCCL
  EXPECT_EQ(parse_algo_ok("Tree,Ring,CollNetDirect,CollNetChain,NVLS,NVLSTree,PAT"), same(kAllAlgos));
}

TEST(ParseAlgo, Exclusion) {
  EXPECT_EQ(parse_algo_ok("^Tree"), same(kAllAlgos & ~kTree));
  EXPECT_EQ(parse_algo_ok("^NVLS,NVLSTree"), same(kAllAlgos & ~(kNvls | kNvlsTree)));
  EXPECT_EQ(parse_algo_ok("^collnetdirect,collnetchain"), same(kTree | kRing | kNvls | kNvlsTree | kPat));
  EXPECT_EQ(parse_algo_ok("^pat"), same(kAllAlgos & ~kPat));
  EXPECT_EQ(parse_algo_ok("^Tree,Ring,CollNetDirect,CollNetChain,NVLS,NVLSTree,PAT"), same(0));
}

TEST(ParseAlgo, PerCollectiveSections) {
  EXPECT_EQ(parse_algo_ok("allreduce:tree;allgather:ring"), (Rows{kTree, kAllAlgos, kAllAlgos, kRing, kAllAlgos}));
  EXPECT_EQ(parse_algo_ok("allreduce:tree,ring;allgather:ring"),
            (Rows{kTree | kRing, kAllAlgos, kAllAlgos, kRing, kAllAlgos}));
  EXPECT_EQ(parse_algo_ok("broadcast:ring;reduce:ring;reducescatter:pat"),
            (Rows{kAllAlgos, kRing, kRing, kAllAlgos, kPat}));
  EXPECT_EQ(parse_algo_ok("AllReduce:^NVLS"), (Rows{kAllAlgos & ~kNvls, kAllAlgos, kAllAlgos, kAllAlgos, kAllAlgos}));
  EXPECT_EQ(parse_algo_ok("ReduceScatter:^PAT;AllGather:^PAT"),
            (Rows{kAllAlgos, kAllAlgos, kAllAlgos, kAllAlgos & ~kPat, kAllAlgos & ~kPat}));
}

TEST(ParseAlgo, FirstSectionWithoutPrefixAppliesToAllThenPrefixesReplaceTheirRow) {
  // The example in NCCL's parseList comment.
  EXPECT_EQ(parse_algo_ok("ring,collnetdirect;allreduce:tree,collnetdirect;broadcast:ring"),
            (Rows{kTree | kCnD, kRing, kRing | kCnD, kRing | kCnD, kRing | kCnD}));
  EXPECT_EQ(parse_algo_ok("ring;allreduce:tree"), (Rows{kTree, kRing, kRing, kRing, kRing}));
  // A prefixed section replaces the row, it does not add to it.
  EXPECT_EQ(parse_algo_ok("ring,tree;allreduce:nvls"), (Rows{kNvls, kRing | kTree, kRing | kTree, kRing | kTree,
                                                             kRing | kTree}));
  EXPECT_EQ(parse_algo_ok("^tree;allgather:^ring"),
            (Rows{kAllAlgos & ~kTree, kAllAlgos & ~kTree, kAllAlgos & ~kTree, kAllAlgos & ~kRing, kAllAlgos & ~kTree}));
  // The same collective twice: the later section wins.
  EXPECT_EQ(parse_algo_ok("allreduce:tree;allreduce:ring"), (Rows{kRing, kAllAlgos, kAllAlgos, kAllAlgos, kAllAlgos}));
}

TEST(ParseAlgo, RecordsWhichCollectivesTheVariableSet) {
  AlgoProtoEnable t;
  ASSERT_EQ(parse_algo_env("allreduce:tree;allgather:ring", &t, nullptr), ncclSuccess);
  EXPECT_EQ(algo_env_rows(t), (std::array<bool, kNumColls>{true, false, false, true, false}));
  EXPECT_EQ(proto_env_rows(t), (std::array<bool, kNumColls>{}));
  ASSERT_EQ(parse_algo_env("^ring", &t, nullptr), ncclSuccess);
  EXPECT_EQ(algo_env_rows(t), (std::array<bool, kNumColls>{true, true, true, true, true}));
}

// ---- Valid NCCL_PROTO ---------------------------------------------------------------------------

TEST(ParseProto, UnsetAndEmptyEnableEverything) {
  EXPECT_EQ(parse_proto_ok(nullptr), same(kAllProtos));
  EXPECT_EQ(parse_proto_ok(""), same(kAllProtos));
}

TEST(ParseProto, NamesListsAndCase) {
  EXPECT_EQ(parse_proto_ok("Simple"), same(kSimple));
  EXPECT_EQ(parse_proto_ok("simple"), same(kSimple));
  EXPECT_EQ(parse_proto_ok("SIMPLE"), same(kSimple));
  EXPECT_EQ(parse_proto_ok("LL"), same(kLL));
  EXPECT_EQ(parse_proto_ok("ll"), same(kLL));
  EXPECT_EQ(parse_proto_ok("LL128"), same(kLL128));
  EXPECT_EQ(parse_proto_ok("ll128"), same(kLL128));
  EXPECT_EQ(parse_proto_ok("LL,Simple"), same(kLL | kSimple));
  EXPECT_EQ(parse_proto_ok("LL,LL128,Simple"), same(kAllProtos));
  EXPECT_EQ(parse_proto_ok("LL128,Simple"), same(kLL128 | kSimple));
}

TEST(ParseProto, Exclusion) {
  EXPECT_EQ(parse_proto_ok("^LL128"), same(kLL | kSimple));
  EXPECT_EQ(parse_proto_ok("^ll128"), same(kLL | kSimple));
  EXPECT_EQ(parse_proto_ok("^LL"), same(kLL128 | kSimple));  // "^LL" does not also exclude LL128
  EXPECT_EQ(parse_proto_ok("^LL,LL128"), same(kSimple));
  EXPECT_EQ(parse_proto_ok("^Simple"), same(kLL | kLL128));
}

TEST(ParseProto, PerCollectiveSections) {
  EXPECT_EQ(parse_proto_ok("allreduce:^LL"), (Rows{kLL128 | kSimple, kAllProtos, kAllProtos, kAllProtos, kAllProtos}));
  EXPECT_EQ(parse_proto_ok("allreduce:simple;allgather:ll"),
            (Rows{kSimple, kAllProtos, kAllProtos, kLL, kAllProtos}));
  // The two examples in NCCL's parseList comment.
  EXPECT_EQ(parse_proto_ok("LL,Simple;allreduce:^LL"),
            (Rows{kLL128 | kSimple, kLL | kSimple, kLL | kSimple, kLL | kSimple, kLL | kSimple}));
  EXPECT_EQ(parse_proto_ok("^LL128;allreduce:LL128"),
            (Rows{kLL128, kLL | kSimple, kLL | kSimple, kLL | kSimple, kLL | kSimple}));
  EXPECT_EQ(parse_proto_ok("Simple;Broadcast:LL;Reduce:LL;ReduceScatter:LL128,Simple"),
            (Rows{kSimple, kLL, kLL, kSimple, kLL128 | kSimple}));
}

TEST(ParseProto, BothVariablesShareOneTable) {
  AlgoProtoEnable t;
  ASSERT_EQ(parse_algo_env("ring", &t, nullptr), ncclSuccess);
  ASSERT_EQ(parse_proto_env("allreduce:simple", &t, nullptr), ncclSuccess);
  EXPECT_EQ(algo_rows(t), same(kRing));
  EXPECT_EQ(proto_rows(t), (Rows{kSimple, kAllProtos, kAllProtos, kAllProtos, kAllProtos}));
  EXPECT_EQ(algo_env_rows(t), (std::array<bool, kNumColls>{true, true, true, true, true}));
  EXPECT_EQ(proto_env_rows(t), (std::array<bool, kNumColls>{true, false, false, false, false}));
  EXPECT_TRUE(t.algo[coll_index(CollKind::kAllReduce)][static_cast<int>(AlgoKind::kRing)]);
  EXPECT_FALSE(t.proto[coll_index(CollKind::kAllReduce)][static_cast<int>(ProtoKind::kLL)]);
}

// ---- Invalid strings ----------------------------------------------------------------------------

// Parses an invalid value into a table that already holds a setting: the result must be
// ncclInvalidArgument, the table untouched, and the message must contain every fragment.
void expect_invalid(bool algo, const char* value, std::initializer_list<const char*> fragments) {
  AlgoProtoEnable t;
  ASSERT_EQ(parse_algo_env("allreduce:tree", &t, nullptr), ncclSuccess);
  ASSERT_EQ(parse_proto_env("^LL128", &t, nullptr), ncclSuccess);
  Rows algo_before = algo_rows(t), proto_before = proto_rows(t);
  auto algo_env_before = algo_env_rows(t), proto_env_before = proto_env_rows(t);
  std::string error;
  ncclResult_t r = algo ? parse_algo_env(value, &t, &error) : parse_proto_env(value, &t, &error);
  EXPECT_EQ(r, ncclInvalidArgument) << value;
  EXPECT_EQ(algo_rows(t), algo_before) << value;
  EXPECT_EQ(proto_rows(t), proto_before) << value;
  EXPECT_EQ(algo_env_rows(t), algo_env_before) << value;
  EXPECT_EQ(proto_env_rows(t), proto_env_before) << value;
  std::string var = std::string(algo ? "NCCL_ALGO" : "NCCL_PROTO") + "=\"" + value + "\"";
  EXPECT_NE(error.find(var), std::string::npos) << "error: " << error;
  for (const char* f : fragments) EXPECT_NE(error.find(f), std::string::npos) << "missing '" << f << "' in: " << error;
  // A null error pointer is allowed.
  EXPECT_EQ(algo ? parse_algo_env(value, &t, nullptr) : parse_proto_env(value, &t, nullptr), ncclInvalidArgument);
}

constexpr const char* kValidAlgos = "valid algorithms are Tree, Ring, CollNetDirect, CollNetChain, NVLS, NVLSTree, PAT";
constexpr const char* kValidProtos = "valid protocols are LL, LL128, Simple";
constexpr const char* kValidColls = "valid collectives are AllReduce, Broadcast, Reduce, AllGather, ReduceScatter";

TEST(ParseInvalid, UnknownName) {
  expect_invalid(true, "rings", {"unknown algorithm \"rings\"", kValidAlgos});
  // A custom algorithm's name (lab 8's MyAllReduce) is unknown until its plugin is loaded: say how.
  expect_invalid(true, "MyAllReduce", {"unknown algorithm \"MyAllReduce\"", "once CCLAB_ALGO_PLUGIN loads it"});
  expect_invalid(true, "ring,foo", {"unknown algorithm \"foo\"", kValidAlgos});
  expect_invalid(true, "collnet", {"unknown algorithm \"collnet\"", kValidAlgos});  // pre-2.14 name
  expect_invalid(true, "nvls_tree", {"unknown algorithm \"nvls_tree\"", kValidAlgos});
  expect_invalid(true, "LL", {"unknown algorithm \"LL\"", kValidAlgos});  // a protocol in NCCL_ALGO
  expect_invalid(true, "ring, tree", {"unknown algorithm \" tree\"", kValidAlgos});  // no trimming, as NCCL
  expect_invalid(true, "^ring,^tree", {"unknown algorithm \"^tree\"", kValidAlgos});  // '^' only leads
  expect_invalid(true, "allreduce:tree;allgather:rng", {"unknown algorithm \"rng\"", kValidAlgos});
  expect_invalid(false, "LL64", {"unknown protocol \"LL64\"", kValidProtos});
  expect_invalid(false, "Ring", {"unknown protocol \"Ring\"", kValidProtos});
  expect_invalid(false, "^LL128,simpl", {"unknown protocol \"simpl\"", kValidProtos});
}

TEST(ParseInvalid, UnknownCollective) {
  expect_invalid(true, "all_reduce:tree", {"unknown collective \"all_reduce\"", kValidColls});
  expect_invalid(true, "sendrecv:ring", {"unknown collective \"sendrecv\"", kValidColls});
  expect_invalid(true, "alltoall:ring", {"unknown collective \"alltoall\"", kValidColls});
  expect_invalid(false, "simple;allgatherv:LL", {"unknown collective \"allgatherv\"", kValidColls});
}

TEST(ParseInvalid, EmptyItems) {
  expect_invalid(true, "ring,,tree", {"empty algorithm name in section \"ring,,tree\"", kValidAlgos});
  expect_invalid(true, "ring,", {"empty algorithm name", kValidAlgos});
  expect_invalid(true, ",ring", {"empty algorithm name", kValidAlgos});
  expect_invalid(true, "ring;", {"empty section 2 of 2", kValidAlgos});
  expect_invalid(true, ";allreduce:ring", {"empty section 1 of 2", kValidAlgos});
  expect_invalid(true, "ring;;allreduce:tree", {"empty section 2 of 3", kValidAlgos});
  expect_invalid(true, ";", {"empty section 1 of 2", kValidAlgos});
  expect_invalid(false, "LL,,Simple", {"empty protocol name", kValidProtos});
  expect_invalid(true, ":ring", {"empty collective before ':' in section \":ring\"", kValidColls});
  expect_invalid(true, "allreduce:", {"no algorithms after \"allreduce:\"", kValidAlgos});
  expect_invalid(false, "simple;allreduce:", {"no protocols after \"allreduce:\"", kValidProtos});
}

TEST(ParseInvalid, CaretAlone) {
  expect_invalid(true, "^", {"'^' in section \"^\" must be followed by the algorithms to exclude", kValidAlgos});
  expect_invalid(false, "^", {"'^' in section \"^\" must be followed by the protocols to exclude", kValidProtos});
  expect_invalid(false, "allreduce:^", {"'^' in section \"allreduce:^\"", kValidProtos});
  expect_invalid(true, "^,ring", {"empty algorithm name", kValidAlgos});
}

TEST(ParseInvalid, PrefixRules) {
  // NCCL: "All entries except the first must have a prefix".
  expect_invalid(true, "allreduce:tree;ring",
                 {"section \"ring\" has no collective prefix; only the first section may omit it", kValidColls});
  expect_invalid(true, "ring;tree", {"section \"tree\" has no collective prefix", kValidColls});
  expect_invalid(true, "allreduce:tree:ring", {"section \"allreduce:tree:ring\" has more than one ':'", kValidColls});
}

// ---- Rendering ----------------------------------------------------------------------------------

TEST(Describe, AlgoTable) {
  AlgoProtoEnable t;
  const char* v = "ring;allreduce:tree,ring;allgather:^ring";
  ASSERT_EQ(parse_algo_env(v, &t, nullptr), ncclSuccess);
  EXPECT_EQ(describe_algo_enable(t, v),
            "NCCL_ALGO=ring;allreduce:tree,ring;allgather:^ring enables AllReduce: Tree Ring; Broadcast: Ring; "
            "Reduce: Ring; AllGather: Tree CollNetDirect CollNetChain NVLS NVLSTree PAT; ReduceScatter: Ring");
}

TEST(Describe, ProtoTableAndEdgeCases) {
  AlgoProtoEnable t;
  EXPECT_EQ(describe_proto_enable(t, nullptr),
            "NCCL_PROTO=(unset) enables AllReduce: LL LL128 Simple; Broadcast: LL LL128 Simple; "
            "Reduce: LL LL128 Simple; AllGather: LL LL128 Simple; ReduceScatter: LL LL128 Simple");
  const char* v = "^LL128;allreduce:^LL,LL128,Simple";
  ASSERT_EQ(parse_proto_env(v, &t, nullptr), ncclSuccess);
  EXPECT_EQ(describe_proto_enable(t, v),
            "NCCL_PROTO=^LL128;allreduce:^LL,LL128,Simple enables AllReduce: none; Broadcast: LL Simple; "
            "Reduce: LL Simple; AllGather: LL Simple; ReduceScatter: LL Simple");
}

}  // namespace
}  // namespace cclab
