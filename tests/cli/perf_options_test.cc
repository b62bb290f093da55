// Tests of `cclab perf` flag parsing: nccl-tests' defaults, size suffixes, the size sweep, and error
// messages that name the flag.
#include "perf_options.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace cclab {
namespace {

PerfParse parse(std::vector<std::string> args) { return parse_perf_options(args); }

// Asserts that parsing fails with a message containing every one of `needles`.
void expect_error(const std::vector<std::string>& args, const std::vector<std::string>& needles) {
  const PerfParse p = parse_perf_options(args);
  ASSERT_FALSE(p.ok) << "expected a parse error";
  for (const auto& needle : needles) {
    EXPECT_NE(p.message.find(needle), std::string::npos) << "message '" << p.message << "' lacks '" << needle << "'";
  }
}

TEST(PerfOptions, DefaultsMatchNcclTests) {
  const PerfParse p = parse({"all_reduce"});
  ASSERT_TRUE(p.ok) << p.message;
  const PerfOptions& o = p.options;
  EXPECT_EQ(o.collective, PerfCollective::kAllReduce);
  EXPECT_EQ(o.min_bytes, size_t{32} << 20);
  EXPECT_EQ(o.max_bytes, size_t{32} << 20);
  EXPECT_EQ(o.step_bytes, size_t{1} << 20);
  EXPECT_EQ(o.step_factor, 1u);
  EXPECT_EQ(o.iters, 20);
  EXPECT_EQ(o.warmup_iters, 1);
  EXPECT_EQ(o.check_iters, 1);
  EXPECT_EQ(o.agg_iters, 1);
  EXPECT_EQ(o.ops, std::vector<PerfOp>{PerfOp::kSum});
  EXPECT_EQ(o.types, std::vector<ncclDataType_t>{ncclFloat32});
  EXPECT_EQ(o.root, 0);
  EXPECT_EQ(o.ranks_per_process(), 1);
  EXPECT_EQ(o.blocking, 0);
  EXPECT_EQ(o.average, 1);
  EXPECT_EQ(o.nprocs, 0);
  EXPECT_EQ(o.hosts, 0);
}

TEST(PerfOptions, EveryFlag) {
  const PerfParse p = parse({"reduce", "-b", "8",  "-e", "128M", "-i", "4K", "-f",  "2",  "-n",       "5",
                             "-w",     "3",  "-m", "4",  "-c",   "0",  "-o", "max", "-d", "bfloat16", "-r",
                             "3",      "-t", "2",  "-g", "4",    "-z", "1",  "-a",  "3",  "--nprocs", "2",
                             "--hosts", "2"});
  ASSERT_TRUE(p.ok) << p.message;
  const PerfOptions& o = p.options;
  EXPECT_EQ(o.collective, PerfCollective::kReduce);
  EXPECT_EQ(o.min_bytes, 8u);
  EXPECT_EQ(o.max_bytes, size_t{128} << 20);
  EXPECT_EQ(o.step_bytes, 4096u);
  EXPECT_EQ(o.step_factor, 2u);
  EXPECT_EQ(o.iters, 5);
  EXPECT_EQ(o.warmup_iters, 3);
  EXPECT_EQ(o.agg_iters, 4);
  EXPECT_EQ(o.check_iters, 0);
  EXPECT_EQ(o.ops, std::vector<PerfOp>{PerfOp::kMax});
  EXPECT_EQ(o.types, std::vector<ncclDataType_t>{ncclBfloat16});
  EXPECT_EQ(o.root, 3);
  EXPECT_EQ(o.ranks_per_process(), 8);
  EXPECT_EQ(o.blocking, 1);
  EXPECT_EQ(o.average, 3);
  EXPECT_EQ(o.nprocs, 2);
  EXPECT_EQ(o.hosts, 2);
}

TEST(PerfOptions, LongFlagsAttachedValuesAndAnyOrder) {
  const PerfParse p = parse({"--minbytes=1K", "-e4K", "--datatype", "float16", "alltoall", "--op=prod", "-r", "-1"});
  ASSERT_TRUE(p.ok) << p.message;
  EXPECT_EQ(p.options.collective, PerfCollective::kAllToAll);
  EXPECT_EQ(p.options.min_bytes, 1024u);
  EXPECT_EQ(p.options.max_bytes, 4096u);
  EXPECT_EQ(p.options.types, std::vector<ncclDataType_t>{ncclFloat16});
  EXPECT_EQ(p.options.ops, std::vector<PerfOp>{PerfOp::kProd});
  EXPECT_EQ(p.options.root, -1);
}

TEST(PerfOptions, SizeSuffixesArePowersOf1024) {
  EXPECT_EQ(parse_size("0", "-b"), 0u);
  EXPECT_EQ(parse_size("8", "-b"), 8u);
  EXPECT_EQ(parse_size("1K", "-b"), 1024u);
  EXPECT_EQ(parse_size("64k", "-b"), 65536u);
  EXPECT_EQ(parse_size("32M", "-b"), size_t{32} << 20);
  EXPECT_EQ(parse_size("2G", "-b"), size_t{2} << 30);
  EXPECT_EQ(parse_size("1.5K", "-b"), 1536u);
  for (const char* bad : {"12Q", "", "M", "-8", "+8", "1KB", "0x10", "1e3", "inf", "8 M", "abc"}) {
    EXPECT_THROW(parse_size(bad, "-b/--minbytes"), std::invalid_argument) << bad;
  }
  try {
    parse_size("12Q", "-e/--maxbytes");
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("-e/--maxbytes"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'12Q'"), std::string::npos) << e.what();
  }
}

TEST(PerfOptions, ErrorsNameTheFlagAndTheValue) {
  expect_error({"all_reduce", "-b", "12Q"}, {"-b/--minbytes", "12Q"});
  expect_error({"all_reduce", "-e", "12Q"}, {"-e/--maxbytes", "12Q"});
  expect_error({"all_reduce", "-i", "x"}, {"-i/--stepbytes", "'x'"});
  expect_error({"allreduce"}, {"unknown collective 'allreduce'", "all_reduce"});
  expect_error({"all_reduce", "-d", "float8"}, {"unknown datatype 'float8'", "-d/--datatype", "bfloat16"});
  expect_error({"all_reduce", "-o", "mean"}, {"unknown op 'mean'", "-o/--op", "mulsum"});
  expect_error({"all_reduce", "-n", "abc"}, {"-n/--iters", "'abc'"});
  expect_error({"all_reduce", "-n", "0"}, {"-n/--iters", "out of range"});
  expect_error({"all_reduce", "-f", "0"}, {"-f/--stepfactor"});
  expect_error({"all_reduce", "-z", "2"}, {"-z/--blocking"});
  expect_error({"all_reduce", "-a", "4"}, {"-a/--average"});
  expect_error({"all_reduce", "-g", "0"}, {"-g/--ngpus"});
  expect_error({"all_reduce", "--nprocs", "0"}, {"--nprocs"});
  expect_error({"all_reduce", "--hosts", "2"}, {"--hosts", "--nprocs", "NCCL_HOSTID"});
  expect_error({"all_reduce", "--hosts", "3", "--nprocs", "2"}, {"--hosts 3", "--nprocs 2"});
  expect_error({"all_reduce", "--hosts", "0", "--nprocs", "2"}, {"--hosts"});
  expect_error({"all_reduce", "-Q", "3"}, {"unknown flag '-Q'"});
  expect_error({"all_reduce", "extra"}, {"unexpected argument 'extra'"});
  expect_error({}, {"missing COLLECTIVE"});
  expect_error({"all_reduce", "-b"}, {"minbytes"});
  expect_error({"all_reduce", "-b", "1M", "-e", "1K"}, {"-b/--minbytes", "-e/--maxbytes"});
  expect_error({"all_reduce", "-b", "0", "-e", "1K", "-f", "2"}, {"-f/--stepfactor"});
  expect_error({"all_reduce", "-b", "0", "-e", "1K", "-i", "0"}, {"-i/--stepbytes"});
}

TEST(PerfOptions, HelpIsNotAnError) {
  const PerfParse p = parse({"--help"});
  EXPECT_TRUE(p.ok);
  EXPECT_TRUE(p.help);
  EXPECT_NE(perf_usage().find("-b, --minbytes"), std::string::npos);
}

TEST(PerfOptions, AllTypesAndOpsInNcclTestsOrder) {
  const PerfParse p = parse({"all_reduce", "-d", "all", "-o", "all"});
  ASSERT_TRUE(p.ok) << p.message;
  const std::vector<ncclDataType_t> types{ncclInt8,    ncclUint8,    ncclInt32,      ncclUint32,
                                          ncclInt64,   ncclUint64,   ncclFloat16,    ncclFloat32,
                                          ncclFloat64, ncclBfloat16, ncclFloat8e4m3, ncclFloat8e5m2};
  EXPECT_EQ(p.options.types, types);
  const std::vector<PerfOp> ops{PerfOp::kSum, PerfOp::kProd, PerfOp::kMax, PerfOp::kMin, PerfOp::kAvg, PerfOp::kMulSum};
  EXPECT_EQ(p.options.ops, ops);
}

TEST(PerfOptions, NamesRoundTrip) {
  for (const char* name : {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall", "gather",
                           "scatter", "sendrecv"}) {
    PerfCollective c;
    ASSERT_TRUE(collective_from_name(name, &c)) << name;
    EXPECT_STREQ(collective_name(c), name);
  }
  const struct {
    const char* name;
    ncclDataType_t type;
    size_t size;
  } types[] = {{"int8", ncclInt8, 1},         {"uint8", ncclUint8, 1},       {"int32", ncclInt32, 4},
               {"uint32", ncclUint32, 4},     {"int64", ncclInt64, 8},       {"uint64", ncclUint64, 8},
               {"half", ncclFloat16, 2},      {"float", ncclFloat32, 4},     {"double", ncclFloat64, 8},
               {"bfloat16", ncclBfloat16, 2}, {"f8e4m3", ncclFloat8e4m3, 1}, {"f8e5m2", ncclFloat8e5m2, 1}};
  for (const auto& t : types) {
    ncclDataType_t parsed;
    ASSERT_TRUE(datatype_from_name(t.name, &parsed)) << t.name;
    EXPECT_EQ(parsed, t.type);
    EXPECT_STREQ(datatype_name(t.type), t.name);
    EXPECT_EQ(datatype_size(t.type), t.size);
  }
  ncclDataType_t alias;
  ASSERT_TRUE(datatype_from_name("float16", &alias));
  EXPECT_EQ(alias, ncclFloat16);
  ASSERT_TRUE(datatype_from_name("float32", &alias));
  EXPECT_EQ(alias, ncclFloat32);
  ASSERT_TRUE(datatype_from_name("float64", &alias));
  EXPECT_EQ(alias, ncclFloat64);
  for (const char* name : {"sum", "prod", "max", "min", "avg", "mulsum"}) {
    PerfOp op;
    ASSERT_TRUE(op_from_name(name, &op)) << name;
    EXPECT_STREQ(op_name(op), name);
  }
}

TEST(PerfOptions, SizeSweepByFactor) {
  const PerfParse p = parse({"all_reduce", "-b", "8", "-e", "128M", "-f", "2"});
  ASSERT_TRUE(p.ok) << p.message;
  const std::vector<size_t> sizes = size_sweep(p.options);
  ASSERT_EQ(sizes.size(), 25u);  // 2^3 .. 2^27
  for (size_t i = 0; i < sizes.size(); ++i) EXPECT_EQ(sizes[i], size_t{8} << i);
}

TEST(PerfOptions, SizeSweepByStep) {
  PerfParse p = parse({"all_reduce", "-b", "1M", "-e", "4M"});
  ASSERT_TRUE(p.ok) << p.message;
  EXPECT_EQ(size_sweep(p.options), (std::vector<size_t>{1 << 20, 2 << 20, 3 << 20, 4 << 20}));

  p = parse({"all_reduce", "-b", "1", "-e", "11", "-i", "3"});
  ASSERT_TRUE(p.ok) << p.message;
  EXPECT_EQ(size_sweep(p.options), (std::vector<size_t>{1, 4, 7, 10}));  // 13 would pass -e

  p = parse({"all_reduce", "-b", "5", "-e", "100", "-f", "3", "-i", "1"});  // -f overrides -i
  ASSERT_TRUE(p.ok) << p.message;
  EXPECT_EQ(size_sweep(p.options), (std::vector<size_t>{5, 15, 45}));

  p = parse({"all_reduce", "-b", "8", "-e", "64", "-f", "1", "-i", "8"});  // -f 1 means "use -i"
  ASSERT_TRUE(p.ok) << p.message;
  EXPECT_EQ(size_sweep(p.options), (std::vector<size_t>{8, 16, 24, 32, 40, 48, 56, 64}));

  p = parse({"all_reduce"});
  EXPECT_EQ(size_sweep(p.options), (std::vector<size_t>{size_t{32} << 20}));

  p = parse({"all_reduce", "-b", "0", "-e", "0", "-f", "2"});  // a single zero-byte size is fine
  ASSERT_TRUE(p.ok) << p.message;
  EXPECT_EQ(size_sweep(p.options), (std::vector<size_t>{0}));
}

TEST(PerfOptions, CollectiveProperties) {
  EXPECT_TRUE(collective_reduces(PerfCollective::kAllReduce));
  EXPECT_TRUE(collective_reduces(PerfCollective::kReduceScatter));
  EXPECT_TRUE(collective_reduces(PerfCollective::kReduce));
  EXPECT_FALSE(collective_reduces(PerfCollective::kSendRecv));
  EXPECT_TRUE(collective_prints_op(PerfCollective::kSendRecv));
  EXPECT_FALSE(collective_prints_op(PerfCollective::kAllGather));
  for (PerfCollective c :
       {PerfCollective::kBroadcast, PerfCollective::kReduce, PerfCollective::kGather, PerfCollective::kScatter}) {
    EXPECT_TRUE(collective_has_root(c));
  }
  for (PerfCollective c : {PerfCollective::kAllReduce, PerfCollective::kAllGather, PerfCollective::kReduceScatter,
                           PerfCollective::kAllToAll, PerfCollective::kSendRecv}) {
    EXPECT_FALSE(collective_has_root(c));
  }
}

}  // namespace
}  // namespace cclab
