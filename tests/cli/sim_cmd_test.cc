// Tests of `cclab sim`: its flags (every one, the defaults, the errors, --compare and the NCCL_*
// environment fallbacks), its reports on fabricated SimResults (table, footer, links, CSV, JSON, the
// compare table) and, when the executable is built, the tool itself on the simulator (CCLAB_CLI_PATH).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <map>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_test_util.h"
#include "perf_report.h"
#include "perf_options.h"
#include "sim_cmd.h"

namespace cclab {
namespace {

using cli_test::fields_of;
using cli_test::lines_of;
using cli_test::read_file;
using cli_test::RunResult;
using cli_test::table_rows;

using sim::SimConfig;
using sim::SimLevel;
using sim::SimResult;
using sim::SimSizeResult;
using sim::SimType;

constexpr size_t KiB = 1024, MiB = KiB * 1024, GiB = MiB * 1024;

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> f;
  std::string cur;
  for (char c : line) {
    if (c == ',') {
      f.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  f.push_back(cur);
  return f;
}

bool contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

SimCmdParse parse(const std::vector<std::string>& args, const SimEnv& env = SimEnv{}) {
  return parse_sim_options(args, env);
}

// ---- flags -------------------------------------------------------------------------------------------
TEST(SimFlags, Defaults) {
  const SimCmdParse p = parse({"all_reduce"});
  ASSERT_TRUE(p.ok) << p.message;
  const SimCmdOptions& o = p.options;
  const SimConfig& c = o.run.config;
  EXPECT_FALSE(p.help);
  EXPECT_EQ(o.coll_arg, "all_reduce");
  EXPECT_EQ(c.coll, CollKind::kAllReduce);
  EXPECT_EQ(c.topo, "dgx-h100");
  EXPECT_TRUE(c.topo_xml.empty());
  EXPECT_EQ(o.run.topo_label, "dgx-h100");
  EXPECT_EQ(c.machines, 1);
  EXPECT_EQ(c.nranks, 0);
  EXPECT_EQ(c.min_bytes, 8u);
  EXPECT_EQ(c.max_bytes, 8u);
  EXPECT_EQ(c.factor, 2.0);
  EXPECT_EQ(c.increment, 0u);
  EXPECT_EQ(c.iters, 1);
  EXPECT_EQ(c.warmup, 0);
  EXPECT_EQ(c.type, SimType::kFloat32);
  EXPECT_EQ(c.op, RedOpKind::kSum);
  EXPECT_EQ(c.root, 0);
  EXPECT_EQ(c.algo, "");
  EXPECT_EQ(c.proto, "");
  EXPECT_EQ(o.run.algo_source, "");
  EXPECT_EQ(c.min_channels, 0);
  EXPECT_EQ(c.max_channels, 0);
  EXPECT_FALSE(c.payload);
  EXPECT_EQ(c.level, SimLevel::kAuto);
  EXPECT_EQ(c.step_limit, 300000u);
  EXPECT_FALSE(c.record_events);
  EXPECT_EQ(c.what_if.nvlink_bw, 0);
  EXPECT_EQ(c.what_if.nic_bw, 0);
  EXPECT_EQ(c.what_if.nics_per_machine, 0);
  EXPECT_LT(c.what_if.link_latency_us, 0);
  EXPECT_EQ(c.what_if.oversubscription, 0);
  EXPECT_FALSE(o.compare);
  EXPECT_TRUE(o.csv_path.empty());
  EXPECT_TRUE(o.json_path.empty());
  EXPECT_TRUE(o.events_path.empty());
  EXPECT_EQ(o.links, 0);
  EXPECT_FALSE(o.calibration);
  EXPECT_TRUE(o.progress);
}

TEST(SimFlags, EveryFlag) {
  const SimCmdParse p = parse({"reduce",        "--topo",          "dgx-a100:4",  "--ranks",        "16",
                               "-b",            "1K",              "-e",          "2G",             "-f",
                               "4",             "-n",              "3",           "-w",             "2",
                               "-d",            "bfloat16",        "-o",          "max",            "-r",
                               "5",             "--payload",       "--level",     "flow",           "--step-limit",
                               "1000",          "--algo",          "ring",        "--proto",        "^LL128",
                               "--min-channels", "2",              "--max-channels", "8",           "--nvlink-bw",
                               "450",           "--nic-bw",        "25.5",        "--nics-per-node", "4",
                               "--link-latency", "0",              "--oversubscription", "2",      "--csv",
                               "out.csv",       "--json",          "-",           "--events",       "ev.txt",
                               "--links",       "10",              "--no-progress"});
  ASSERT_TRUE(p.ok) << p.message;
  const SimCmdOptions& o = p.options;
  const SimConfig& c = o.run.config;
  EXPECT_EQ(c.coll, CollKind::kReduce);
  EXPECT_EQ(c.topo, "dgx-a100");
  EXPECT_EQ(c.machines, 4);
  EXPECT_EQ(o.run.topo_label, "dgx-a100:4");
  EXPECT_EQ(c.nranks, 16);
  EXPECT_EQ(c.min_bytes, 1 * KiB);
  EXPECT_EQ(c.max_bytes, 2 * GiB);
  EXPECT_EQ(c.factor, 4.0);
  EXPECT_EQ(c.increment, 0u);
  EXPECT_EQ(c.iters, 3);
  EXPECT_EQ(c.warmup, 2);
  EXPECT_EQ(c.type, SimType::kBfloat16);
  EXPECT_EQ(c.op, RedOpKind::kMax);
  EXPECT_EQ(c.root, 5);
  EXPECT_TRUE(c.payload);
  EXPECT_EQ(c.level, SimLevel::kFlow);
  EXPECT_EQ(c.step_limit, 1000u);
  EXPECT_EQ(c.algo, "ring");
  EXPECT_EQ(o.run.algo_source, "--algo");
  EXPECT_EQ(c.proto, "^LL128");
  EXPECT_EQ(o.run.proto_source, "--proto");
  EXPECT_EQ(c.min_channels, 2);
  EXPECT_EQ(c.max_channels, 8);
  EXPECT_EQ(c.what_if.nvlink_bw, 450);
  EXPECT_EQ(c.what_if.nic_bw, 25.5);
  EXPECT_EQ(c.what_if.nics_per_machine, 4);
  EXPECT_EQ(c.what_if.link_latency_us, 0);
  EXPECT_EQ(c.what_if.oversubscription, 2);
  EXPECT_EQ(c.fabric.oversubscription, 2);
  EXPECT_TRUE(c.record_events);  // --events records them
  EXPECT_EQ(o.csv_path, "out.csv");
  EXPECT_EQ(o.json_path, "-");
  EXPECT_EQ(o.events_path, "ev.txt");
  EXPECT_EQ(o.links, 10);
  EXPECT_FALSE(o.progress);
  EXPECT_FALSE(o.compare);
}

TEST(SimFlags, LongSpellingsAndEqualsForm) {
  const SimCmdParse p = parse({"all_gather", "--minbytes=64K", "--maxbytes", "1M", "--stepfactor=2", "--iters", "2",
                               "--warmup_iters", "1", "--datatype", "half", "--op", "avg", "--root=1", "--xml",
                               "/tmp/x.xml", "--nodes", "2", "--level=step"});
  ASSERT_TRUE(p.ok) << p.message;
  const SimConfig& c = p.options.run.config;
  EXPECT_EQ(c.coll, CollKind::kAllGather);
  EXPECT_EQ(c.min_bytes, 64 * KiB);
  EXPECT_EQ(c.max_bytes, 1 * MiB);
  EXPECT_EQ(c.iters, 2);
  EXPECT_EQ(c.warmup, 1);
  EXPECT_EQ(c.type, SimType::kFloat16);
  EXPECT_EQ(c.op, RedOpKind::kSumPostDiv);
  EXPECT_EQ(c.root, 1);
  EXPECT_EQ(c.topo_xml, "/tmp/x.xml");
  EXPECT_EQ(c.machines, 2);
  EXPECT_EQ(p.options.run.topo_label, "/tmp/x.xml");
  EXPECT_EQ(c.level, SimLevel::kStep);
}

TEST(SimFlags, CollectivesAndTheirNames) {
  const struct {
    const char* name;
    CollKind coll;
  } cases[] = {{"all_reduce", CollKind::kAllReduce},
               {"all_gather", CollKind::kAllGather},
               {"reduce_scatter", CollKind::kReduceScatter},
               {"broadcast", CollKind::kBroadcast},
               {"reduce", CollKind::kReduce}};
  for (const auto& k : cases) {
    const SimCmdParse p = parse({"-b", "1M", k.name});  // the collective anywhere
    ASSERT_TRUE(p.ok) << k.name << ": " << p.message;
    EXPECT_EQ(p.options.run.config.coll, k.coll);
    EXPECT_STREQ(sim_collective_name(k.coll), k.name);
  }
  EXPECT_EQ(sim_collective_names(),
            "all_reduce, all_gather, reduce_scatter, broadcast, reduce, alltoall, gather, scatter, sendrecv");
  // The point-to-point collectives: sends and receives (kSendRecv) in kernels/p2p.h's pattern.
  const struct {
    const char* name;
    P2pPattern p2p;
    PerfCollective perf;
  } p2p_cases[] = {{"alltoall", P2pPattern::kAllToAll, PerfCollective::kAllToAll},
                   {"gather", P2pPattern::kGather, PerfCollective::kGather},
                   {"scatter", P2pPattern::kScatter, PerfCollective::kScatter},
                   {"sendrecv", P2pPattern::kSendRecv, PerfCollective::kSendRecv}};
  for (const auto& k : p2p_cases) {
    const SimCmdParse p = parse({k.name, "-r", "2"});
    ASSERT_TRUE(p.ok) << k.name << ": " << p.message;
    EXPECT_EQ(p.options.run.config.coll, CollKind::kSendRecv);
    EXPECT_EQ(p.options.run.config.p2p, k.p2p);
    EXPECT_STREQ(sim_collective_name(p.options.run.config), k.name);
    PerfCollective pc;
    ASSERT_TRUE(sim_perf_collective(p.options.run.config, &pc));
    EXPECT_EQ(pc, k.perf);
  }
  SimCmdParse p = parse({"allreduc"});
  EXPECT_FALSE(p.ok);
  EXPECT_TRUE(contains(p.message, "unknown collective 'allreduc'")) << p.message;
  p = parse({});
  EXPECT_FALSE(p.ok);
  EXPECT_TRUE(contains(p.message, "missing COLLECTIVE")) << p.message;
  p = parse({"all_reduce", "broadcast"});
  EXPECT_FALSE(p.ok);
  EXPECT_TRUE(contains(p.message, "unexpected argument 'broadcast'")) << p.message;
}

TEST(SimFlags, Sizes) {
  // -b alone: -e follows it (nccl-tests).
  SimCmdParse p = parse({"all_reduce", "-b", "32M"});
  ASSERT_TRUE(p.ok) << p.message;
  EXPECT_EQ(p.options.run.config.min_bytes, 32 * MiB);
  EXPECT_EQ(p.options.run.config.max_bytes, 32 * MiB);
  // -e alone: -b stays 8.
  p = parse({"all_reduce", "-e", "1.5K"});
  ASSERT_TRUE(p.ok) << p.message;
  EXPECT_EQ(p.options.run.config.min_bytes, 8u);
  EXPECT_EQ(p.options.run.config.max_bytes, 1536u);
  // -i alone: by increment.
  p = parse({"all_reduce", "-b", "1M", "-e", "4M", "-i", "1M"});
  ASSERT_TRUE(p.ok) << p.message;
  EXPECT_EQ(p.options.run.config.increment, 1 * MiB);
  EXPECT_EQ(p.options.run.config.factor, 1.0);
  // -f > 1 overrides -i (nccl-tests).
  p = parse({"all_reduce", "-b", "1M", "-e", "4M", "-i", "1M", "-f", "2"});
  ASSERT_TRUE(p.ok) << p.message;
  EXPECT_EQ(p.options.run.config.increment, 0u);
  EXPECT_EQ(p.options.run.config.factor, 2.0);
  // -f 1 with -i: by increment.
  p = parse({"all_reduce", "-b", "1M", "-e", "4M", "-i", "512K", "-f", "1"});
  ASSERT_TRUE(p.ok) << p.message;
  EXPECT_EQ(p.options.run.config.increment, 512 * KiB);
  // Equal -b and -e need no step.
  p = parse({"all_reduce", "-b", "1G", "-e", "1G", "-f", "1"});
  ASSERT_TRUE(p.ok) << p.message;
  p = parse({"all_reduce", "-b", "1g", "-e", "2g", "-f", "1.5"});
  ASSERT_TRUE(p.ok) << p.message;
  EXPECT_EQ(p.options.run.config.factor, 1.5);
}

// Every bad value is refused with a message that names the flag and the value.
TEST(SimFlags, ErrorsNameTheFlagAndValue) {
  const struct {
    std::vector<std::string> args;
    std::vector<std::string> want;
  } cases[] = {
      {{"all_reduce", "-b", "12Q"}, {"-b/--minbytes", "12Q"}},
      {{"all_reduce", "-e", "-5"}, {"-e/--maxbytes", "-5"}},
      {{"all_reduce", "-b", "4M", "-e", "1M"}, {"-b/--minbytes 4194304", "-e/--maxbytes 1048576"}},
      {{"all_reduce", "-f", "0.5"}, {"-f/--stepfactor", "0.5"}},
      {{"all_reduce", "-b", "1M", "-e", "2M", "-f", "1"}, {"-f/--stepfactor 1"}},
      {{"all_reduce", "-b", "0", "-e", "2M"}, {"-b/--minbytes 0"}},
      {{"all_reduce", "-b", "1M", "-e", "2M", "-i", "0"}, {"-i/--stepbytes 0"}},
      {{"all_reduce", "-i", "x"}, {"-i/--stepbytes", "'x'"}},
      {{"all_reduce", "-n", "0"}, {"-n/--iters", "'0'"}},
      {{"all_reduce", "-w", "-1"}, {"-w/--warmup_iters", "'-1'"}},
      {{"all_reduce", "-d", "float3"}, {"-d/--datatype", "float3"}},
      {{"all_reduce", "-d", "all"}, {"-d/--datatype all"}},
      {{"all_reduce", "-o", "xor"}, {"-o/--op", "xor"}},
      {{"all_reduce", "-o", "all"}, {"-o/--op", "all"}},
      {{"broadcast", "-r", "-1"}, {"-r/--root", "'-1'"}},
      {{"all_reduce", "--topo", "dgx-z100"}, {"--topo", "dgx-z100"}},
      {{"all_reduce", "--topo", "dgx-h100:0"}, {"--topo", "dgx-h100:0"}},
      {{"all_reduce", "--topo", "dgx-h100", "--xml", "a.xml"}, {"--topo", "--xml"}},
      {{"all_reduce", "--nodes", "two"}, {"--nodes", "two"}},
      {{"all_reduce", "--ranks", "0"}, {"--ranks", "'0'"}},
      {{"all_reduce", "--level", "slice"}, {"--level", "slice"}},
      {{"all_reduce", "--step-limit", "0"}, {"--step-limit", "'0'"}},
      {{"all_reduce", "--algo", "rong"}, {"--algo", "rong"}},
      {{"all_reduce", "--proto", "LL256"}, {"--proto", "LL256"}},
      {{"all_reduce", "--min-channels", "0"}, {"--min-channels", "'0'"}},
      {{"all_reduce", "--max-channels", "x"}, {"--max-channels", "'x'"}},
      {{"all_reduce", "--min-channels", "8", "--max-channels", "4"}, {"--min-channels", "8", "4"}},
      {{"all_reduce", "--nvlink-bw", "0"}, {"--nvlink-bw", "'0'"}},
      {{"all_reduce", "--nic-bw", "-3"}, {"--nic-bw", "'-3'"}},
      {{"all_reduce", "--nics-per-node", "0"}, {"--nics-per-node", "'0'"}},
      {{"all_reduce", "--link-latency", "-1"}, {"--link-latency", "'-1'"}},
      {{"all_reduce", "--oversubscription", "abc"}, {"--oversubscription", "abc"}},
      {{"all_reduce", "--links", "0"}, {"--links", "'0'"}},
      {{"all_reduce", "--csv", "-", "--json", "-"}, {"stdout"}},
      {{"all_reduce", "--frobnicate"}, {"unknown flag '--frobnicate'"}},
      {{"all_reduce", "-b"}, {"-b/--minbytes needs a value"}},
      {{"all_reduce", "--payload=1"}, {"--payload takes no value"}},
      {{"all_reduce", "--compare", "--algo ring"}, {"--compare needs two values"}},
  };
  for (const auto& k : cases) {
    const SimCmdParse p = parse(k.args);
    std::string joined;
    for (const auto& a : k.args) joined += a + " ";
    EXPECT_FALSE(p.ok) << joined;
    EXPECT_EQ(p.message.rfind("cclab sim: ", 0), 0u) << p.message;
    for (const auto& w : k.want) EXPECT_TRUE(contains(p.message, w)) << joined << "-> " << p.message;
  }
}

// A pasted nccl-tests line runs: every flag `cclab perf` documents (its usage text, so a flag added there
// and not here fails) is accepted by `cclab sim` with a value both take.
TEST(SimFlags, EveryNcclTestsFlagOfPerf) {
  const std::map<std::string, std::string> value = {
      {"-b", "8"}, {"-e", "1M"}, {"-i", "1M"}, {"-f", "2"}, {"-n", "5"}, {"-w", "1"}, {"-m", "1"}, {"-c", "1"},
      {"-o", "sum"}, {"-d", "float"}, {"-r", "0"}, {"-t", "2"}, {"-g", "2"}, {"-z", "1"}, {"-a", "1"}, {"--nprocs", "2"}};
  std::istringstream usage(cclab::perf_usage());
  std::string line;
  int checked = 0;
  while (std::getline(usage, line)) {
    std::string flag;
    if (line.rfind("  -", 0) == 0 && line.size() > 4 && line[4] == ',') flag = line.substr(2, 2);  // "  -b, --..."
    if (line.rfind("      --nprocs", 0) == 0) flag = "--nprocs";
    if (flag.empty() || flag == "-h") continue;
    auto v = value.find(flag);
    ASSERT_NE(v, value.end()) << "cclab perf documents " << flag << ": give it a value here and accept it in cclab sim";
    const SimCmdParse p = parse({"all_reduce", flag, v->second});
    EXPECT_TRUE(p.ok) << flag << " " << v->second << ": " << p.message;
    ++checked;
  }
  EXPECT_GE(checked, 16);
  // What they mean in a simulation.
  SimCmdParse p = parse({"all_reduce", "-c", "1"});
  ASSERT_TRUE(p.ok) << p.message;
  EXPECT_TRUE(p.options.run.config.payload);
  p = parse({"all_reduce", "-c", "0"});
  ASSERT_TRUE(p.ok) << p.message;
  EXPECT_FALSE(p.options.run.config.payload);
  p = parse({"all_reduce", "-t", "2", "-g", "2", "--nprocs", "2"});
  ASSERT_TRUE(p.ok) << p.message;
  EXPECT_EQ(p.options.run.config.nranks, 8);
  p = parse({"all_reduce", "-g", "4", "--ranks", "4"});
  EXPECT_TRUE(p.ok) << p.message;
  EXPECT_EQ(p.options.run.config.gpus_per_thread, 4);  // one thread issues on 4 GPUs: the host's cost x 4
  p = parse({"all_reduce", "--nprocs", "8"});
  ASSERT_TRUE(p.ok) << p.message;
  EXPECT_EQ(p.options.run.config.gpus_per_thread, 1);
  // --calib sets the calibration's constants by their table names, also inside --compare.
  p = parse({"all_reduce", "--calib", "launch=6.5,host_issue=3"});
  ASSERT_TRUE(p.ok) << p.message;
  EXPECT_EQ(p.options.run.config.calibration.launch_us, 6.5);
  EXPECT_EQ(p.options.run.config.calibration.host_issue_us, 3);
  p = parse({"all_reduce", "--compare", "--calib launch=2", "--calib launch=8"});
  ASSERT_TRUE(p.ok) << p.message;
  EXPECT_EQ(p.options.compare_runs[0].config.calibration.launch_us, 2);
  EXPECT_EQ(p.options.compare_runs[1].config.calibration.launch_us, 8);
  p = parse({"all_reduce", "--calib", "lunch=4"});
  EXPECT_FALSE(p.ok);
  EXPECT_NE(p.message.find("--calib: unknown calibration constant 'lunch'"), std::string::npos) << p.message;
  p = parse({"--calibration", "--calib", "launch=9"});
  ASSERT_TRUE(p.ok) << p.message;
  EXPECT_EQ(p.options.run.config.calibration.launch_us, 9);
  const struct {
    std::vector<std::string> args;
    const char* want;
  } bad[] = {
      {{"all_reduce", "-t", "2", "--ranks", "8"}, "--ranks 8 disagrees with -t x -g x --nprocs = 2"},
      {{"all_reduce", "-c", "0", "--payload"}, "-c/--check 0 disagrees with --payload"},
      {{"all_reduce", "-m", "4"}, "-m/--agg_iters 4"},
      {{"all_reduce", "-a", "4"}, "-a/--average"},
      {{"all_reduce", "-z", "2"}, "-z/--blocking"},
      {{"all_reduce", "-t", "0"}, "-t/--nthreads"},
  };
  for (const auto& k : bad) {
    p = parse(k.args);
    EXPECT_FALSE(p.ok) << k.want;
    EXPECT_TRUE(contains(p.message, k.want)) << p.message;
  }
}

TEST(SimFlags, NodesAndPresetCount) {
  SimCmdParse p = parse({"all_reduce", "--topo", "dgx-h100", "--nodes", "4"});
  ASSERT_TRUE(p.ok) << p.message;
  EXPECT_EQ(p.options.run.config.machines, 4);
  EXPECT_EQ(p.options.run.config.topo, "dgx-h100");
  EXPECT_EQ(p.options.run.topo_label, "dgx-h100:4");
  p = parse({"all_reduce", "--topo", "dgx-h100:2"});
  ASSERT_TRUE(p.ok) << p.message;
  EXPECT_EQ(p.options.run.config.machines, 2);
  p = parse({"all_reduce", "--topo", "dgx-h100:2", "--nodes", "2"});  // agreeing is fine
  ASSERT_TRUE(p.ok) << p.message;
  EXPECT_EQ(p.options.run.config.machines, 2);
  p = parse({"all_reduce", "--nodes", "8"});  // the default preset
  ASSERT_TRUE(p.ok) << p.message;
  EXPECT_EQ(p.options.run.config.machines, 8);
  p = parse({"all_reduce", "--topo", "dgx-h100:2", "--nodes", "4"});
  EXPECT_FALSE(p.ok);
  EXPECT_EQ(p.message, "cclab sim: --topo dgx-h100:2 says 2 machine(s) but --nodes says 4");
}

TEST(SimFlags, EnvironmentFallbacks) {
  SimEnv env;
  env.algo = "ring";
  env.proto = "Simple";
  env.min_channels = "2";
  env.max_channels = "4";
  SimCmdParse p = parse({"all_reduce"}, env);
  ASSERT_TRUE(p.ok) << p.message;
  EXPECT_EQ(p.options.run.config.algo, "ring");
  EXPECT_EQ(p.options.run.algo_source, "NCCL_ALGO");
  EXPECT_EQ(p.options.run.config.proto, "Simple");
  EXPECT_EQ(p.options.run.proto_source, "NCCL_PROTO");
  EXPECT_EQ(p.options.run.config.min_channels, 2);
  EXPECT_EQ(p.options.run.config.max_channels, 4);
  // Flags win over the environment.
  p = parse({"all_reduce", "--algo", "tree", "--proto", "LL", "--min-channels", "1", "--max-channels", "8"}, env);
  ASSERT_TRUE(p.ok) << p.message;
  EXPECT_EQ(p.options.run.config.algo, "tree");
  EXPECT_EQ(p.options.run.algo_source, "--algo");
  EXPECT_EQ(p.options.run.config.proto, "LL");
  EXPECT_EQ(p.options.run.config.min_channels, 1);
  EXPECT_EQ(p.options.run.config.max_channels, 8);
  // A bad variable is named.
  SimEnv bad;
  bad.algo = "rong";
  p = parse({"all_reduce"}, bad);
  EXPECT_FALSE(p.ok);
  EXPECT_TRUE(contains(p.message, "NCCL_ALGO")) << p.message;
  EXPECT_TRUE(contains(p.message, "rong")) << p.message;
  bad = SimEnv{};
  bad.proto = "^";
  p = parse({"all_reduce"}, bad);
  EXPECT_FALSE(p.ok);
  EXPECT_TRUE(contains(p.message, "NCCL_PROTO")) << p.message;
  bad = SimEnv{};
  bad.max_channels = "lots";
  p = parse({"all_reduce"}, bad);
  EXPECT_FALSE(p.ok);
  EXPECT_TRUE(contains(p.message, "NCCL_MAX_NCHANNELS")) << p.message;
  // ... but a flag makes a bad variable irrelevant.
  bad = SimEnv{};
  bad.algo = "rong";
  p = parse({"all_reduce", "--algo", "ring"}, bad);
  EXPECT_TRUE(p.ok) << p.message;
  // The process environment (the one-argument form).
  ::setenv("NCCL_ALGO", "tree", 1);
  p = parse_sim_options({"all_reduce"});
  ::unsetenv("NCCL_ALGO");
  ASSERT_TRUE(p.ok) << p.message;
  EXPECT_EQ(p.options.run.config.algo, "tree");
  EXPECT_EQ(p.options.run.algo_source, "NCCL_ALGO");
}

TEST(SimFlags, HelpAndCalibration) {
  SimCmdParse p = parse({"--help"});
  EXPECT_TRUE(p.ok);
  EXPECT_TRUE(p.help);
  p = parse({"all_reduce", "-h"});
  EXPECT_TRUE(p.help);
  p = parse({"--calibration"});
  ASSERT_TRUE(p.ok) << p.message;
  EXPECT_TRUE(p.options.calibration);
  p = parse({"all_reduce", "--calibration"});
  ASSERT_TRUE(p.ok) << p.message;
  EXPECT_TRUE(p.options.calibration);
  const std::string usage = sim_usage();
  for (const char* flag : {"--topo", "--xml", "--nodes", "--ranks", "-b,", "-e,", "-f,", "-i,", "-n,", "-w,", "-d,",
                           "-o,", "-r,", "--payload", "--level", "--step-limit", "--algo", "--proto", "--min-channels",
                           "--max-channels", "--nvlink-bw", "--nic-bw", "--nics-per-node", "--link-latency",
                           "--oversubscription", "--csv", "--json", "--events", "--links", "--calibration",
                           "--no-progress", "--compare"}) {
    EXPECT_TRUE(contains(usage, flag)) << flag;
  }
}

TEST(SimFlags, SplitFlags) {
  EXPECT_EQ(split_flags("--nvlink-bw 450"), (std::vector<std::string>{"--nvlink-bw", "450"}));
  EXPECT_EQ(split_flags("  --algo   ring\t--proto Simple "),
            (std::vector<std::string>{"--algo", "ring", "--proto", "Simple"}));
  EXPECT_EQ(split_flags("--xml 'my file.xml' --algo \"a b\""),
            (std::vector<std::string>{"--xml", "my file.xml", "--algo", "a b"}));
  EXPECT_EQ(split_flags("--algo ''"), (std::vector<std::string>{"--algo", ""}));
  EXPECT_TRUE(split_flags("").empty());
}

TEST(SimFlags, Compare) {
  SimCmdParse p = parse({"all_reduce", "--topo", "dgx-h100", "-b", "1M", "-e", "4M", "--algo", "ring", "--compare",
                         "--nvlink-bw 450", "--nvlink-bw 900 --algo tree"});
  ASSERT_TRUE(p.ok) << p.message;
  const SimCmdOptions& o = p.options;
  ASSERT_TRUE(o.compare);
  EXPECT_EQ(o.compare_flags[0], "--nvlink-bw 450");
  EXPECT_EQ(o.compare_flags[1], "--nvlink-bw 900 --algo tree");
  for (int k = 0; k < 2; ++k) {
    EXPECT_EQ(o.compare_runs[k].config.min_bytes, 1 * MiB);  // the base flags apply to both
    EXPECT_EQ(o.compare_runs[k].config.max_bytes, 4 * MiB);
    EXPECT_EQ(o.compare_runs[k].config.topo, "dgx-h100");
  }
  EXPECT_EQ(o.compare_runs[0].config.what_if.nvlink_bw, 450);
  EXPECT_EQ(o.compare_runs[1].config.what_if.nvlink_bw, 900);
  EXPECT_EQ(o.compare_runs[0].config.algo, "ring");  // the string's flags override
  EXPECT_EQ(o.compare_runs[1].config.algo, "tree");
  EXPECT_EQ(o.run.config.what_if.nvlink_bw, 0);

  // The flag may come first; a string may change the model (PRESET:N replaces a base --nodes).
  p = parse({"--compare", "--topo dgx-a100:2", "--topo dgx-h100", "--nodes", "4", "broadcast"});
  ASSERT_TRUE(p.ok) << p.message;
  EXPECT_EQ(p.options.compare_runs[0].config.topo, "dgx-a100");
  EXPECT_EQ(p.options.compare_runs[0].config.machines, 2);
  EXPECT_EQ(p.options.compare_runs[1].config.topo, "dgx-h100");
  EXPECT_EQ(p.options.compare_runs[1].config.machines, 4);
  EXPECT_EQ(p.options.run.config.coll, CollKind::kBroadcast);

  // Errors say which string.
  p = parse({"all_reduce", "--compare", "--nvlink-bw 450", "--nvlink-bw fast"});
  EXPECT_FALSE(p.ok);
  EXPECT_TRUE(contains(p.message, "--compare B '--nvlink-bw fast'")) << p.message;
  EXPECT_TRUE(contains(p.message, "invalid value 'fast' for --nvlink-bw")) << p.message;
  p = parse({"all_reduce", "--compare", "--csv x.csv", "--algo ring"});
  EXPECT_FALSE(p.ok);
  EXPECT_TRUE(contains(p.message, "--compare A")) << p.message;
  EXPECT_TRUE(contains(p.message, "--csv cannot appear in --compare")) << p.message;
  p = parse({"all_reduce", "--compare", "ring", "tree"});
  EXPECT_FALSE(p.ok);
  EXPECT_TRUE(contains(p.message, "unexpected argument 'ring' in --compare")) << p.message;
  p = parse({"all_reduce", "--compare", "--algo ring", "--algo tree", "--events", "e.txt"});
  EXPECT_FALSE(p.ok);
  EXPECT_TRUE(contains(p.message, "--events cannot be used with --compare")) << p.message;
}

// ---- reports on fabricated results --------------------------------------------------------------------
SimRun fake_run(bool payload) {
  SimCmdParse p = parse({"all_reduce", "--topo", "dgx-h100", "-b", "1M", "-e", "4M", "--nvlink-bw", "450"});
  EXPECT_TRUE(p.ok) << p.message;
  SimRun run = p.options.run;
  run.config.payload = payload;
  return run;
}

SimResult fake_result(bool payload) {
  SimResult r;
  r.topo_description = "8x H100 SXM, 4 NVSwitch, 8x NDR 400G";
  r.nranks = 8;
  r.machines = 1;
  r.wall_s = 1.25;
  r.peak_rss_mib = 123.4;
  const double times[3] = {20.5, 35.25, 60};
  for (int i = 0; i < 3; ++i) {
    SimSizeResult s;
    s.bytes = (size_t{1} << 20) << i;
    s.count = s.bytes / 4;
    s.algo = i == 0 ? AlgoKind::kTree : AlgoKind::kRing;
    s.proto = i == 0 ? ProtoKind::kLL128 : ProtoKind::kSimple;
    s.nchannels = 16 + i;
    s.nthreads = 512 + 32 * i;
    s.level = i == 2 ? SimLevel::kFlow : SimLevel::kStep;
    s.time_us = times[i];
    s.algbw = s.bytes / 1e3 / s.time_us;
    s.busbw = s.algbw * 2 * 7 / 8;
    s.predicted_us = s.time_us * 0.9;
    s.wrong = payload ? (i == 1 ? 3 : 0) : -1;
    s.slices = 1000 * (i + 1);
    r.sizes.push_back(s);
  }
  sim::SimLinkLoad a, b, c;
  a.link = 0, a.name = "m0.gpu0->m0.nvs0", a.bytes = 2e6, a.busy_us = 50;
  b.link = 1, b.name = "m0.gpu1->m0.nvs0", b.bytes = 5e6, b.busy_us = 100;
  c.link = 2, c.name = "m0.nvs0->m0.gpu2", c.bytes = 1e6, c.busy_us = 0;
  r.links = {a, b, c};
  return r;
}

TEST(SimReport, BannerTableFooter) {
  const SimRun run = fake_run(false);
  const SimResult res = fake_result(false);
  const std::string out = format_sim_report(run, res);
  const auto lines = lines_of(out);
  ASSERT_GE(lines.size(), 5u);
  EXPECT_EQ(lines[0], "# cclab sim: all_reduce on dgx-h100 (8 GPUs, 1 machine) - simulated, timing only");
  EXPECT_EQ(lines[1], "# 8x H100 SXM, 4 NVSwitch, 8x NDR 400G");
  EXPECT_TRUE(contains(out, "# minBytes 1048576 maxBytes 4194304 step: 2(factor) warmup iters: 0 iters: 1")) << out;
  EXPECT_TRUE(contains(out, "# what-if: nvlink-bw 450 GB/s\n")) << out;
  EXPECT_TRUE(contains(out, "# Using level auto")) << out;
  EXPECT_TRUE(contains(out, "algorithm: the tuner's choice (NCCL_ALGO unset)")) << out;

  const auto rows = table_rows(out);
  ASSERT_EQ(rows.size(), 3u) << out;
  // size count type redop root time algbw busbw #wrong algo proto nch predicted level
  const std::vector<std::string> r0 = {"1048576", "262144", "float", "sum", "-1",    "20.50", "51.15",
                                       "89.51",   "N/A",    "Tree",  "LL128", "16", "18.45", "step"};
  EXPECT_EQ(rows[0], r0);
  EXPECT_EQ(rows[2][0], "4194304");
  EXPECT_EQ(rows[2][5], "60.00");
  EXPECT_EQ(rows[2][9], "Ring");
  EXPECT_EQ(rows[2][10], "Simple");
  EXPECT_EQ(rows[2][11], "18");
  EXPECT_EQ(rows[2][13], "flow");

  // Columns line up with the header: each header name ends where its values end.
  std::string header, row0;
  for (const auto& l : lines) {
    if (header.empty() && contains(l, "#wrong")) header = l;
    if (row0.empty() && !l.empty() && l[0] != '#') row0 = l;
  }
  ASSERT_FALSE(header.empty());
  const auto end_of = [](const std::string& line, const std::string& word) {
    return line.find(word) == std::string::npos ? std::string::npos : line.find(word) + word.size();
  };
  EXPECT_EQ(end_of(header, " size"), end_of(row0, "1048576"));
  EXPECT_EQ(end_of(header, "count"), end_of(row0, "262144"));
  EXPECT_EQ(end_of(header, "time"), end_of(row0, "20.50"));
  EXPECT_EQ(end_of(header, "algbw"), end_of(row0, "51.15"));
  EXPECT_EQ(end_of(header, "  busbw"), end_of(row0, "89.51"));
  EXPECT_EQ(end_of(header, "algo"), end_of(row0, "Tree"));
  EXPECT_EQ(end_of(header, "proto"), end_of(row0, "LL128"));
  EXPECT_EQ(end_of(header, "predicted"), end_of(row0, "18.45"));
  EXPECT_EQ(end_of(header, "level"), end_of(row0, "step"));
  // The nccl-tests part is exactly perf's: format_row_start + format_row_half.
  EXPECT_EQ(row0.substr(0, format_row_start(1, 1, "float", "sum", -1).size() + format_row_half(0, 0, 0, -1).size()),
            format_row_start(1048576, 262144, "float", "sum", -1) + format_row_half(20.5, res.sizes[0].algbw,
                                                                                    res.sizes[0].busbw, -1));

  const double avg = (res.sizes[0].busbw + res.sizes[1].busbw + res.sizes[2].busbw) / 3;
  EXPECT_DOUBLE_EQ(sim_avg_busbw(res), avg);
  char want[128];
  std::snprintf(want, sizeof(want), "# Avg bus bandwidth    : %g \n", avg);
  EXPECT_TRUE(contains(out, want)) << out;
  EXPECT_FALSE(contains(out, "Out of bounds")) << "timing-only runs check nothing";
  EXPECT_TRUE(contains(out, "# Simulated in 1.25 s wall, peak memory 123.4 MiB\n")) << out;
}

// A PAT size the flow level ran at its static shares gets a note (an upper bound behind a spine); a ring
// at static shares (in lockstep, as the step level) and a refined PAT size do not.
TEST(SimReport, PatStaticSharesNote) {
  SimResult res = fake_result(false);
  res.sizes[1].algo = AlgoKind::kPat;  // refined: no note
  res.sizes[2].static_shares = true;   // a ring: no note
  EXPECT_FALSE(contains(format_sim_footer(res), "static shares")) << format_sim_footer(res);
  res.sizes[1].static_shares = true;
  const std::string out = format_sim_footer(res);
  EXPECT_TRUE(contains(out, "# note: PAT at 2097152 B ran at the flow level's static shares")) << out;
  EXPECT_FALSE(contains(out, "4194304 B")) << out;
}

TEST(SimReport, PayloadWrongColumnAndRootColumn) {
  SimRun run = fake_run(true);
  const SimResult res = fake_result(true);
  std::string out = format_sim_report(run, res);
  EXPECT_TRUE(contains(out, "- simulated, payload checked")) << out;
  auto rows = table_rows(out);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0][8], "0");
  EXPECT_EQ(rows[1][8], "3");
  EXPECT_EQ(sim_wrong_total(res), 3);
  EXPECT_EQ(sim_wrong_total(fake_result(false)), -1);
  EXPECT_TRUE(contains(out, "# Out of bounds values : 3 FAILED")) << out;
  // broadcast: no op, a root; all_gather: neither.
  run.config.coll = CollKind::kBroadcast;
  run.config.root = 3;
  rows = table_rows(format_sim_table(run.config, res));
  EXPECT_EQ(rows[0][3], "none");
  EXPECT_EQ(rows[0][4], "3");
  run.config.coll = CollKind::kReduce;
  run.config.op = RedOpKind::kPreMulSum;
  rows = table_rows(format_sim_table(run.config, res));
  EXPECT_EQ(rows[0][3], "mulsum");
  EXPECT_EQ(rows[0][4], "3");
  run.config.coll = CollKind::kAllGather;
  run.config.type = SimType::kFloat16;
  rows = table_rows(format_sim_table(run.config, res));
  EXPECT_EQ(rows[0][2], "half");
  EXPECT_EQ(rows[0][3], "none");
  EXPECT_EQ(rows[0][4], "-1");
}

TEST(SimReport, Links) {
  const SimRun run = fake_run(false);
  const SimResult res = fake_result(false);
  const std::string out = format_sim_links(run.config, res, 2);
  const auto rows = table_rows(out);
  ASSERT_EQ(rows.size(), 2u) << out;
  EXPECT_EQ(rows[0][0], "m0.gpu1->m0.nvs0");  // the busiest first
  EXPECT_EQ(rows[0][1], "0.005000");          // GB
  // Average over the run: 5e6 bytes over (20.5 + 35.25 + 60) us x (1 iter + 0 warmup) = 43.20 GB/s.
  EXPECT_EQ(rows[0][2], "43.20");
  EXPECT_EQ(rows[0][3], "50.00");  // while busy: 5e6 B / 100 us
  EXPECT_EQ(rows[0][4], "86.39");  // busy 100 of 115.75 us
  EXPECT_EQ(rows[1][0], "m0.gpu0->m0.nvs0");
  EXPECT_TRUE(contains(out, "(2 of 3;")) << out;
  EXPECT_EQ(table_rows(format_sim_links(run.config, res, 10)).size(), 3u);
  EXPECT_EQ(table_rows(format_sim_links(run.config, res, 10))[2][3], "N/A");  // never busy at step level
}

TEST(SimReport, Csv) {
  const SimRun run = fake_run(true);
  const SimResult res = fake_result(true);
  const std::string csv = format_sim_csv(run.config, res);
  const auto lines = lines_of(csv);
  ASSERT_EQ(lines.size(), 4u) << csv;
  EXPECT_EQ(lines[0],
            "bytes,count,type,op,root,time_us,algbw,busbw,wrong,algo,proto,nchannels,level,predicted_us,slices,nthreads");
  for (const auto& l : lines) EXPECT_EQ(split_csv(l).size(), 16u) << l;
  const auto f = split_csv(lines[2]);
  EXPECT_EQ(f[0], "2097152");
  EXPECT_EQ(f[1], "524288");
  EXPECT_EQ(f[2], "float");
  EXPECT_EQ(f[3], "sum");
  EXPECT_EQ(f[4], "-1");
  EXPECT_DOUBLE_EQ(std::stod(f[5]), 35.25);
  EXPECT_NEAR(std::stod(f[6]), res.sizes[1].algbw, 1e-6);
  EXPECT_NEAR(std::stod(f[7]), res.sizes[1].busbw, 1e-6);
  EXPECT_EQ(f[8], "3");
  EXPECT_EQ(f[9], "Ring");
  EXPECT_EQ(f[10], "Simple");
  EXPECT_EQ(f[11], "17");
  EXPECT_EQ(f[12], "step");
  EXPECT_NEAR(std::stod(f[13]), 35.25 * 0.9, 1e-6);
  EXPECT_EQ(f[14], "2000");
  EXPECT_EQ(f[15], "544");
  // Timing only: wrong is -1.
  EXPECT_EQ(split_csv(lines_of(format_sim_csv(run.config, fake_result(false)))[1])[8], "-1");
  // Compare: a variant column, one header.
  const std::string both = format_sim_csv(run.config, res, "A") + format_sim_csv(run.config, res, "B", false);
  const auto bl = lines_of(both);
  ASSERT_EQ(bl.size(), 7u);
  EXPECT_EQ(bl[0], "variant," + lines[0]);
  EXPECT_EQ(split_csv(bl[1])[0], "A");
  EXPECT_EQ(split_csv(bl[6])[0], "B");
  EXPECT_EQ(split_csv(bl[6]).size(), 17u);
}

TEST(SimReport, Json) {
  const SimRun run = fake_run(true);
  const SimResult res = fake_result(true);
  const nlohmann::json j = nlohmann::json::parse(format_sim_json(run, res));
  EXPECT_EQ(j["collective"], "all_reduce");
  EXPECT_EQ(j["topo"], "dgx-h100");
  EXPECT_EQ(j["topo_description"], "8x H100 SXM, 4 NVSwitch, 8x NDR 400G");
  EXPECT_EQ(j["machines"], 1);
  EXPECT_EQ(j["nranks"], 8);
  EXPECT_EQ(j["payload"], true);
  EXPECT_EQ(j["level"], "auto");
  EXPECT_EQ(j["type"], "float");
  EXPECT_EQ(j["op"], "sum");
  EXPECT_EQ(j["min_bytes"], 1048576);
  EXPECT_EQ(j["max_bytes"], 4194304);
  EXPECT_EQ(j["what_if"]["nvlink_bw"], 450.0);
  EXPECT_EQ(j["what_if"]["nic_bw"], 0.0);
  EXPECT_EQ(j["what_if"]["nics_per_node"], 0);
  EXPECT_LT(j["what_if"]["link_latency_us"].get<double>(), 0);
  ASSERT_TRUE(j.contains("calibration"));
  EXPECT_TRUE(j["calibration"].contains("launch_us"));
  EXPECT_TRUE(j["calibration"]["step_overhead_us"].contains("Simple"));
  EXPECT_EQ(j["calibration"]["gpus"].size(), run.config.calibration.gpus.size());
  EXPECT_DOUBLE_EQ(j["wall_s"].get<double>(), 1.25);
  ASSERT_EQ(j["rows"].size(), 3u);
  const auto& r = j["rows"][1];
  for (const char* key : {"bytes", "count", "type", "op", "root", "time_us", "algbw", "busbw", "wrong", "algo", "proto",
                          "nchannels", "nthreads", "level", "predicted_us", "slices"}) {
    EXPECT_TRUE(r.contains(key)) << key;
  }
  EXPECT_EQ(r["bytes"], 2097152);
  EXPECT_EQ(r["count"], 524288);
  EXPECT_DOUBLE_EQ(r["time_us"].get<double>(), 35.25);
  EXPECT_DOUBLE_EQ(r["busbw"].get<double>(), res.sizes[1].busbw);
  EXPECT_EQ(r["wrong"], 3);
  EXPECT_EQ(r["algo"], "Ring");
  EXPECT_EQ(r["proto"], "Simple");
  EXPECT_EQ(r["nchannels"], 17);
  EXPECT_EQ(r["nthreads"], 544);
  EXPECT_EQ(r["level"], "step");
  EXPECT_EQ(r["slices"], 2000);
  ASSERT_EQ(j["links"].size(), 3u);
  EXPECT_EQ(j["links"][1]["name"], "m0.gpu1->m0.nvs0");
  EXPECT_DOUBLE_EQ(j["links"][1]["bytes"].get<double>(), 5e6);
}

TEST(SimReport, CompareTableAndJson) {
  SimCmdParse p = parse({"all_reduce", "-b", "1M", "-e", "4M", "--compare", "--nvlink-bw 450", "--nvlink-bw 900"});
  ASSERT_TRUE(p.ok) << p.message;
  SimResult a = fake_result(false), b = fake_result(false);
  for (auto& s : b.sizes) {  // B: twice as fast at every size but the first
    if (s.bytes == 1 * MiB) continue;
    s.time_us /= 2;
    s.algbw *= 2;
    s.busbw *= 2;
    s.algo = AlgoKind::kTree;
  }
  b.sizes.pop_back();  // and B lacks 4M
  const std::string out = format_sim_compare(p.options, a, b);
  EXPECT_TRUE(contains(out, "# A: \"--nvlink-bw 450\"")) << out;
  EXPECT_TRUE(contains(out, "# B: \"--nvlink-bw 900\"")) << out;
  EXPECT_TRUE(contains(out, "what-if: nvlink-bw 900 GB/s")) << out;
  const auto rows = table_rows(out);
  ASSERT_EQ(rows.size(), 3u) << out;
  // size, A: time algbw busbw algo/proto/nch, B: the same, B/A busbw, B/A time
  ASSERT_EQ(rows[0].size(), 11u) << out;
  EXPECT_EQ(rows[0][0], "1048576");
  EXPECT_EQ(rows[0][4], "Tree/LL128/16");
  EXPECT_EQ(rows[0][9], "1.00");
  EXPECT_EQ(rows[0][10], "1.00");
  EXPECT_EQ(rows[1][0], "2097152");
  EXPECT_EQ(rows[1][1], "35.25");
  EXPECT_EQ(rows[1][5], "17.62");
  EXPECT_EQ(rows[1][8], "Tree/Simple/17");
  EXPECT_EQ(rows[1][9], "2.00");
  EXPECT_EQ(rows[1][10], "0.50");
  EXPECT_EQ(rows[2][0], "4194304");
  EXPECT_EQ(rows[2][5], "-");
  EXPECT_EQ(rows[2][9], "N/A");
  EXPECT_TRUE(contains(out, "(B/A 1.5 on average)")) << out;

  const nlohmann::json j = nlohmann::json::parse(format_sim_compare_json(p.options, a, b));
  EXPECT_EQ(j["compare"], true);
  EXPECT_EQ(j["a"]["flags"], "--nvlink-bw 450");
  EXPECT_EQ(j["b"]["flags"], "--nvlink-bw 900");
  EXPECT_EQ(j["a"]["what_if"]["nvlink_bw"], 450.0);
  EXPECT_EQ(j["b"]["what_if"]["nvlink_bw"], 900.0);
  EXPECT_EQ(j["a"]["rows"].size(), 3u);
  EXPECT_EQ(j["b"]["rows"].size(), 2u);
}

TEST(SimReport, DegradedFabric) {
  SimCmdParse p = parse({"all_reduce", "--degrade", "m0.nic3=0.5", "--degrade=m0.gpu1-m0.nvs0=0.25@2ms", "--fail",
                         "m1.nic0@100us", "--straggler", "3=2", "--jitter", "10,seed=4"});
  ASSERT_TRUE(p.ok) << p.message;
  const sim::Degradation& d = p.options.run.config.degrade;
  ASSERT_EQ(d.links.size(), 3u);  // --degrade adds up
  EXPECT_EQ(d.links[1].target, "m0.gpu1-m0.nvs0");
  EXPECT_DOUBLE_EQ(d.links[1].at_us, 2000);
  EXPECT_TRUE(d.links[2].fail);
  EXPECT_DOUBLE_EQ(d.stragglers.at(3), 2);
  EXPECT_EQ(d.jitter_seed, 4u);
  p = parse({"all_reduce", "--degrade", "m0.nic3=half"});
  EXPECT_FALSE(p.ok);
  EXPECT_TRUE(contains(p.message, "--degrade 'm0.nic3=half': bad factor 'half'")) << p.message;
  p = parse({"all_reduce", "--level", "flow", "--fail", "m0.nic3"});
  EXPECT_FALSE(p.ok);
  EXPECT_TRUE(contains(p.message, "needs the step level")) << p.message;
  p = parse({"all_reduce", "--compare", "", "--degrade m0.nic3=0.5@1ms"});
  ASSERT_TRUE(p.ok) << p.message;
  EXPECT_FALSE(p.options.compare_runs[0].config.degrade.any());
  EXPECT_EQ(p.options.compare_runs[1].config.degrade.links.size(), 1u);

  // The report: a line per element with its carriers and the largest size's busbw, then every size.
  SimResult healthy = fake_result(false), slow = fake_result(false);
  for (auto& s : slow.sizes) s.busbw *= 0.5, s.time_us *= 2;
  sim::SimDegraded e;
  e.label = "m0.nic3 at 50% from 0 us";
  e.links = {7, 8};
  e.carriers.push_back({"ring", 3, 4, {3, 11}});
  e.carriers.push_back({"tree", 4, 3, {3}});
  e.carriers.push_back({"tree", 3, 4, {0, 1, 2, 3, 5, 7, 8}});
  slow.degraded.push_back(e);
  sim::SimDegraded unused;
  unused.label = "m0.nic5 at 10% from 0 us";
  unused.links = {9};
  slow.degraded.push_back(unused);
  const std::string out = format_sim_degraded(slow, &healthy);
  const SimSizeResult& last = healthy.sizes.back();
  char busbw[96], size[32];
  snprintf(busbw, sizeof busbw, "%.1f -> %.1f GB/s (-50%%)", last.busbw, last.busbw * 0.5);
  snprintf(size, sizeof size, "# %10zu", last.bytes);
  EXPECT_TRUE(contains(out, "#   m0.nic3 at 50% from 0 us: carried by ring channels 3, 11 (rank 3 -> 4); tree channel 3 "
                            "(rank 4 -> 3); tree channels 0-3, 5, 7, 8 (rank 3 -> 4): busbw " + std::string(busbw)))
      << out;
  EXPECT_TRUE(contains(out, "#   m0.nic5 at 10% from 0 us: no connection of the collective crosses it")) << out;
  // The algorithm that ran names its edges first.
  EXPECT_EQ(format_sim_carriers(e, "Tree").rfind(": carried by tree channel 3 (rank 4 -> 3); tree channels 0-3, 5, 7, 8 "
                                                  "(rank 3 -> 4); ring channels 3, 11 (rank 3 -> 4)", 0),
            0u)
      << format_sim_carriers(e, "Tree");
  EXPECT_TRUE(contains(format_sim_carriers(e, "NVLS"), "; NVLS ran, whose own transfers are not listed"))
      << format_sim_carriers(e, "NVLS");
  EXPECT_TRUE(contains(out, size)) << out;
  EXPECT_TRUE(contains(out, "-50.0%")) << out;
  EXPECT_TRUE(format_sim_degraded(healthy, &healthy).empty());
}

#ifdef CCLAB_CLI_PATH
// ---- the executable on the simulator ------------------------------------------------------------------
std::string temp_path(const std::string& stem) { return cli_test::temp_path("cclab_sim_cmd", stem); }

RunResult run(const std::string& args) { return cli_test::run_command(CCLAB_CLI_PATH, args, "", "cclab_sim_cmd"); }

TEST(SimCli, AllReduceThreeSizesCsvJson) {
  const std::string csv = temp_path("out.csv"), json = temp_path("out.json");
  const RunResult r =
      run("sim all_reduce --topo dgx-h100 -b 1M -e 4M -f 2 --links 3 --csv " + csv + " --json " + json);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_TRUE(r.err.empty()) << "no progress line when stderr is not a terminal: " << r.err;
  EXPECT_EQ(lines_of(r.out)[0], "# cclab sim: all_reduce on dgx-h100 (8 GPUs, 1 machine) - simulated, timing only")
      << r.out;
  auto rows = table_rows(r.out);
  // Three sizes, then three links.
  ASSERT_EQ(rows.size(), 6u) << r.out;
  const size_t sizes[3] = {1 * MiB, 2 * MiB, 4 * MiB};
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(rows[i].size(), 14u) << r.out;
    EXPECT_EQ(rows[i][0], std::to_string(sizes[i]));
    EXPECT_EQ(rows[i][1], std::to_string(sizes[i] / 4));
    EXPECT_GT(std::stod(rows[i][5]), 0) << r.out;  // time
    EXPECT_GT(std::stod(rows[i][7]), 0) << r.out;  // busbw
    EXPECT_EQ(rows[i][8], "N/A");
  }
  EXPECT_TRUE(contains(r.out, "# Avg bus bandwidth")) << r.out;
  EXPECT_TRUE(contains(r.out, "# Simulated in")) << r.out;
  EXPECT_TRUE(contains(r.out, "# Busiest links (3 of")) << r.out;
  const auto csv_lines = lines_of(read_file(csv));
  EXPECT_EQ(csv_lines.size(), 4u);
  const nlohmann::json j = nlohmann::json::parse(read_file(json));
  EXPECT_EQ(j["nranks"], 8);
  EXPECT_EQ(j["rows"].size(), 3u);
  EXPECT_GT(j["rows"][2]["busbw"].get<double>(), 0);
  std::remove(csv.c_str());
  std::remove(json.c_str());
}

TEST(SimCli, PayloadIsChecked) {
  const RunResult r = run("sim all_reduce --topo dgx-h100 -b 64K -e 256K -f 4 --payload");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const auto rows = table_rows(r.out);
  ASSERT_EQ(rows.size(), 2u) << r.out;
  for (const auto& row : rows) EXPECT_EQ(row[8], "0") << r.out;
  EXPECT_TRUE(contains(r.out, "# Out of bounds values : 0 OK")) << r.out;
}

// alltoall, gather, scatter and sendrecv: nccl-tests' sizes and counts (cclab perf's coll_counts), its
// bandwidths (cclab perf's compute_bandwidth on the simulated time), NCCL's SendRecv kernel on Simple with
// no prediction, and with --payload every byte right, on one machine and across two.
TEST(SimCli, PointToPointCollectives) {
  for (const char* topo : {"dgx-h100", "dgx-h100:2"}) {
    const int n = std::string(topo) == "dgx-h100" ? 8 : 16;
    for (const char* name : {"alltoall", "gather", "scatter", "sendrecv"}) {
      const std::string csv = temp_path(std::string(name) + ".csv");
      const RunResult r = run(std::string("sim ") + name + " --topo " + topo + " -b 1000000 -e 4M -f 4 -r 1 -c 1 --csv " + csv);
      ASSERT_EQ(r.status, 0) << name << " " << topo << "\n" << r.out << r.err;
      EXPECT_TRUE(contains(r.out, "# point-to-point: ")) << r.out;
      const auto rows = table_rows(r.out);
      ASSERT_EQ(rows.size(), 2u) << r.out;
      PerfCollective pc;
      ASSERT_TRUE(collective_from_name(name, &pc));
      const size_t sizes[2] = {1000000, 4000000};
      for (int i = 0; i < 2; ++i) {
        const CollCounts c = coll_counts(pc, sizes[i], 4, n);
        EXPECT_EQ(rows[i][0], std::to_string(reported_bytes(c, 4))) << name << " " << topo;
        EXPECT_EQ(rows[i][1], std::to_string(std::max(c.send_count, c.recv_count))) << name;
        EXPECT_EQ(rows[i][3], collective_prints_op(pc) ? "sum" : "none") << name;
        EXPECT_EQ(rows[i][4], collective_has_root(pc) ? "1" : "-1") << name;
        EXPECT_EQ(rows[i][8], "0") << name << " " << topo << " payload\n" << r.out;
        EXPECT_EQ(rows[i][9], "SendRecv");
        EXPECT_EQ(rows[i][10], "Simple");
        EXPECT_EQ(rows[i][12], "-") << "the tuner predicts no point-to-point work";
        EXPECT_EQ(rows[i][13], "step");
      }
      // The bandwidths are cclab perf's formulas on the simulated time (CSV: full precision).
      const auto lines = lines_of(read_file(csv));
      ASSERT_EQ(lines.size(), 3u);
      for (int i = 0; i < 2; ++i) {
        std::vector<std::string> f;
        std::stringstream ss(lines[i + 1]);
        for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
        ASSERT_GE(f.size(), 9u);
        const double t_us = std::stod(f[5]);
        const CollCounts c = coll_counts(pc, sizes[i], 4, n);
        const Bandwidth bw = compute_bandwidth(pc, c.param_count, 4, n, t_us * 1e-6);
        EXPECT_NEAR(std::stod(f[6]), bw.algbw, 1e-6 * bw.algbw) << name;
        EXPECT_NEAR(std::stod(f[7]), bw.busbw, 1e-6 * bw.busbw) << name;
        EXPECT_GT(bw.busbw, 0);
      }
      std::remove(csv.c_str());
    }
  }
  // Point-to-point work is simulated step by step: the flow level replays ring and tree channels only.
  const RunResult flow = run("sim alltoall --topo dgx-h100 -b 1M --level flow");
  EXPECT_EQ(flow.status, 3) << flow.out << flow.err;
  EXPECT_TRUE(contains(flow.err, "alltoall runs at step level only")) << flow.err;
}

// `cclab tune` and `cclab sim` describe one plan: for every size the algorithm, protocol, channels,
// threads per channel and predicted time the tuner's table chooses are what the simulator ran (CSV), on every preset
// family, one machine and several, with NCCL_MAX_NCHANNELS / --min-channels bounding both. (Before,
// tune priced the searched graph's channels, 8 on dgx-h100:4, where the simulator ran NCCL's doubled
// 16, ignored NCCL_MIN/MAX_NCHANNELS, and searched its tree graph without the ring's channel count.)
TEST(SimCli, ChannelsAndThreadsAreTheTunersChoice) {
  for (const char* topo : {"dgx-h100", "dgx-h100:4", "dgx-a100:2", "pcie-4gpu:2", "nvlink-pairs", "pcie-8gpu-2socket:2"}) {
    for (const char* bound : {"", "NCCL_MAX_NCHANNELS=4", "--min-channels 40"}) {
      SCOPED_TRACE(std::string(topo) + " " + bound);
      const std::string env = bound[0] == 'N' ? bound : "", flag = bound[0] == '-' ? bound : "";
      const std::string sizes = " all_reduce -b 8 -e 1G -f 8 " + flag;
      const RunResult t = cli_test::run_command(CCLAB_CLI_PATH, std::string("tune --topo ") + topo + sizes, env,
                                                "cclab_sim_cmd");
      const RunResult s = cli_test::run_command(
          CCLAB_CLI_PATH, std::string("sim --topo ") + topo + sizes + " --level flow --csv -", env, "cclab_sim_cmd");
      ASSERT_EQ(t.status, 0) << t.err;
      ASSERT_EQ(s.status, 0) << s.err;
      const auto rows = table_rows(t.out);
      const auto csv = lines_of(s.out);
      ASSERT_EQ(rows.size(), 10u) << t.out;
      ASSERT_EQ(csv.size(), rows.size() + 1) << s.out;
      for (size_t i = 0; i < rows.size(); ++i) {
        const auto f = split_csv(csv[i + 1]);
        ASSERT_EQ(f.size(), 16u) << csv[i + 1];
        EXPECT_EQ(f[0], rows[i][0]);
        EXPECT_EQ(f[9] + "/" + f[10], rows[i][9]) << "size " << f[0];
        EXPECT_EQ(f[11], rows[i][10]) << "channels at size " << f[0];
        EXPECT_EQ(f[15], rows[i][11]) << "threads at size " << f[0];
        for (int k = 1; k <= 8; ++k)  // the starred prediction is the simulator's `predicted`
          if (rows[i][k].back() == '*') {
            EXPECT_NEAR(std::stod(f[13]), std::stod(rows[i][k]), 0.006) << "size " << f[0];
          }
      }
    }
  }
}

TEST(SimCli, CompareNvlinkBandwidth) {
  const RunResult r = run("sim all_reduce --topo dgx-h100 -b 1M -e 4M --compare \"--nvlink-bw 450\" \"--nvlink-bw 900\"");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const auto rows = table_rows(r.out);
  ASSERT_EQ(rows.size(), 3u) << r.out;
  EXPECT_EQ(rows[2][0], "4194304");
  EXPECT_GT(std::stod(rows[2][9]), 1.0) << "twice the NVLink bandwidth moves 4M faster:\n" << r.out;
  EXPECT_LT(std::stod(rows[2][10]), 1.0) << r.out;
}

TEST(SimCli, JsonToStdoutMovesTheReportToStderr) {
  const RunResult r = run("sim all_gather -b 1M --json -");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);  // stdout is the JSON alone
  EXPECT_EQ(j["collective"], "all_gather");
  ASSERT_EQ(j["rows"].size(), 1u);
  EXPECT_EQ(j["rows"][0]["bytes"], 1048576);
  EXPECT_EQ(j["rows"][0]["op"], "none");
  EXPECT_TRUE(contains(r.err, "# cclab sim: all_gather on dgx-h100")) << r.err;
}

TEST(SimCli, EventsFile) {
  const std::string ev = temp_path("events.txt");
  const RunResult r = run("sim broadcast --topo dgx-h100 -b 64K --events " + ev);
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  const auto lines = lines_of(read_file(ev));
  EXPECT_FALSE(lines.empty());
  if (!lines.empty()) {
    EXPECT_TRUE(contains(lines[0], " r")) << lines[0];
  }
  std::remove(ev.c_str());
}

TEST(SimCli, UsageErrorsAndCalibration) {
  RunResult r = run("sim all_reduce --nvlink-bw fast");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "invalid value 'fast' for --nvlink-bw")) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  r = run("sim all_to_all");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "unknown collective 'all_to_all'")) << r.err;
  r = run("sim all_reduce --topo dgx-h100:2 --nodes 3");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "--nodes says 3")) << r.err;
  r = run("sim all_reduce --xml /nonexistent/cclab.xml");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "/nonexistent/cclab.xml")) << r.err;
  r = run("sim --help");
  EXPECT_EQ(r.status, 0);
  EXPECT_TRUE(contains(r.out, "usage: cclab sim")) << r.out;
  r = run("sim --calibration");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_FALSE(r.out.empty());
  r = run("--help");
  EXPECT_TRUE(contains(r.out, "sim COLLECTIVE")) << r.out;
}

TEST(SimCli, SimulationFailureExits3) {
  // More ranks than the model has GPUs: the flags are well formed, the simulator refuses.
  const RunResult r = run("sim all_reduce --topo dgx-h100 --ranks 64");
  EXPECT_EQ(r.status, 3) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "cclab sim: ")) << r.err;
}
// Two machines with one NIC each: halving m0's NIC halves the ring; the same flags print the same report;
// a bad name is a usage error listing the closest names; a failed link exits 3 naming the stuck waits.
TEST(SimCli, DegradedFabric) {
  const std::string flags = "sim all_reduce --topo dgx-h100:2 --nics-per-node 1 -b 64M --algo ring --proto simple";
  RunResult r = run(flags + " --degrade m0.nic0=0.5 --links 100");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  int marked = 0;  // --links marks the degraded links, and only those
  for (const std::string& l : lines_of(r.out))
    if (contains(l, "x0.5 from 0 us") && !contains(l, "#")) {
      EXPECT_TRUE(contains(l, "m0.nic0")) << l;
      ++marked;
    }
  EXPECT_EQ(marked, 4) << r.out;
  EXPECT_TRUE(contains(r.out, "# degraded: m0.nic0 x0.5 from 0 us")) << r.out;
  EXPECT_TRUE(contains(r.out, "#   m0.nic0 at 50% from 0 us: carried by ring channel")) << r.out;
  const size_t at = r.out.find("GB/s (-");
  ASSERT_NE(at, std::string::npos) << r.out;
  const int drop = std::atoi(r.out.c_str() + at + 7);
  EXPECT_GE(drop, 40) << r.out;
  EXPECT_LE(drop, 55) << r.out;
  const auto without_wall = [](const std::string& s) {
    std::string o;
    for (const std::string& l : lines_of(s))
      if (!contains(l, "Simulated in")) o += l + "\n";
    return o;
  };
  const RunResult again = run(flags + " --degrade m0.nic0=0.5 --links 100");
  EXPECT_EQ(without_wall(again.out), without_wall(r.out));

  // --json: the degradation, its elements and the healthy twin's rows.
  const std::string json = temp_path("degraded.json");
  r = run(flags + " --degrade m0.nic0=0.5 --json " + json);
  ASSERT_EQ(r.status, 0) << r.err;
  std::ifstream jf(json);
  const nlohmann::json j = nlohmann::json::parse(jf);
  EXPECT_EQ(j["degrade"]["links"][0]["target"], "m0.nic0");
  EXPECT_EQ(j["degrade"]["links"][0]["factor"], 0.5);
  EXPECT_FALSE(j["degrade"]["elements"][0]["carriers"].empty());
  ASSERT_EQ(j["degrade"]["healthy_rows"].size(), 1u);
  const double hb = j["degrade"]["healthy_rows"][0]["busbw"], db = j["rows"][0]["busbw"];
  EXPECT_GT(db / hb, 0.45);
  EXPECT_LT(db / hb, 0.6);

  r = run(flags + " --degrade m0.nic9=0.5");
  EXPECT_EQ(r.status, 2) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "no link or node named 'm0.nic9'")) << r.err;
  EXPECT_TRUE(contains(r.err, "closest: m0.nic0")) << r.err;

  r = run(flags + " --fail m1.nic0@30us");
  EXPECT_EQ(r.status, 3) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "m1.nic0")) << r.err;
  EXPECT_TRUE(contains(r.err, "waiting for data from rank")) << r.err;

  r = run(flags + " --compare \"\" \"--degrade m0.nic0=0.5\"");
  ASSERT_EQ(r.status, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "degraded: m0.nic0 x0.5 from 0 us")) << r.out;
  EXPECT_TRUE(contains(r.out, "#\n# B: Degraded fabric:\n#   m0.nic0 at 50% from 0 us: carried by")) << r.out;
  const auto rows = table_rows(r.out);
  ASSERT_FALSE(rows.empty()) << r.out;
  const double ratio = std::atof(rows[0][9].c_str());
  EXPECT_GT(ratio, 0.45) << r.out;
  EXPECT_LT(ratio, 0.6) << r.out;
}
#endif  // CCLAB_CLI_PATH

}  // namespace
}  // namespace cclab
