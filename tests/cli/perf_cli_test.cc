// End-to-end tests of the `cclab` executable: runs it as a user would and checks the exit status and
// the nccl-tests text, for every collective, datatype and op, threads and --nprocs processes, and a
// deliberately corrupted result (LD_PRELOAD shim) that must be reported as FAILED.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "perf_options.h"
#include "perf_report.h"

namespace cclab {
namespace {

struct RunResult {
  int status = -1;
  std::string output;  // stdout and stderr together
};

RunResult run(const std::string& args, const std::string& env = "") {
  const std::string cmd = env + (env.empty() ? "" : " ") + CCLAB_CLI_PATH + " " + args + " 2>&1";
  RunResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.output.append(buf, n);
  const int ws = pclose(p);
  r.status = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
  return r;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

// A result row split into its 13 whitespace-separated fields.
std::vector<std::vector<std::string>> rows_of(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& line : lines_of(text)) {
    if (line.empty() || line[0] == '#' || line.rfind("cclab", 0) == 0) continue;
    std::istringstream in(line);
    std::vector<std::string> fields;
    for (std::string f; in >> f;) fields.push_back(f);
    rows.push_back(fields);
  }
  return rows;
}

TEST(PerfCli, HelpVersionAndSubcommands) {
  RunResult r = run("");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.output.find("perf COLLECTIVE"), std::string::npos) << r.output;
  r = run("--version");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.output.find("cclab 0.1.0"), std::string::npos) << r.output;
  r = run("perf --help");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.output.find("--nprocs"), std::string::npos) << r.output;
  for (const char* sub : {"viz", "trace"}) {  // usage errors naming the subcommand
    r = run(sub);
    EXPECT_EQ(r.status, 2) << sub;
    EXPECT_NE(r.output.find(std::string("cclab ") + sub), std::string::npos) << r.output;
  }
  r = run("frobnicate");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("unknown subcommand 'frobnicate'"), std::string::npos) << r.output;
}

TEST(PerfCli, UsageErrorsExitWithStatus2) {
  RunResult r = run("perf all_reduce -b 12Q");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("-b/--minbytes"), std::string::npos) << r.output;
  r = run("perf broadcast -b 8 -e 8 -g 2 -r 5");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.output.find("-r/--root 5 is not a rank"), std::string::npos) << r.output;
}

TEST(PerfCli, OutputIsNcclTestsFormat) {
  const RunResult r = run("perf all_reduce -b 8 -e 1M -f 2 -g 2 -n 3");
  ASSERT_EQ(r.status, 0) << r.output;
  const auto lines = lines_of(r.output);
  ASSERT_GT(lines.size(), 10u);
  EXPECT_EQ(lines[1], "# Collective test starting: all_reduce");
  EXPECT_EQ(lines[2].rfind("# nThread 1 nGpus 2 minBytes 8 maxBytes 1048576 step: 2(factor) warmup iters: 1 "
                           "iters: 3 agg iters: 1 validation: 1",
                           0),
            0u)
      << lines[2];
  int rank_lines = 0;
  for (const auto& l : lines) rank_lines += l.rfind("#  Rank ", 0) == 0 && l.find("[cclab host]") != std::string::npos;
  EXPECT_EQ(rank_lines, 2);
  EXPECT_NE(r.output.find(format_column_header()), std::string::npos) << r.output;

  const auto rows = rows_of(r.output);
  ASSERT_EQ(rows.size(), 18u);  // 8 B .. 1 MiB
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& f = rows[i];
    ASSERT_EQ(f.size(), 13u);
    EXPECT_EQ(f[0], std::to_string(size_t{8} << i));
    EXPECT_EQ(f[1], std::to_string((size_t{8} << i) / 4));
    EXPECT_EQ(f[2], "float");
    EXPECT_EQ(f[3], "sum");
    EXPECT_EQ(f[4], "-1");
    EXPECT_EQ(f[8], "0");
    EXPECT_EQ(f[12], "0");
  }
  for (const auto& l : lines) {
    if (!l.empty() && l[0] != '#') {
      EXPECT_EQ(l.size(), 116u) << l;  // the header's width
    }
  }
  EXPECT_NE(r.output.find("# Out of bounds values : 0 OK\n# Avg bus bandwidth    : "), std::string::npos);
  EXPECT_NE(r.output.find("#\n# Collective test concluded: all_reduce\n#\n"), std::string::npos);
}

TEST(PerfCli, EveryCollectiveTypeAndOpIsCorrect) {
  for (const char* coll : {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "alltoall", "gather",
                           "scatter", "sendrecv"}) {
    PerfCollective c;
    ASSERT_TRUE(collective_from_name(coll, &c));
    const bool rooted = collective_has_root(c);
    const RunResult r =
        run(std::string("perf ") + coll + " -b 64 -e 4K -f 8 -g 3 -d all -o all -n 1 -w 0" + (rooted ? " -r -1" : ""));
    ASSERT_EQ(r.status, 0) << coll << "\n" << r.output;
    const auto rows = rows_of(r.output);
    const size_t ops = collective_prints_op(c) ? 6 : 1;
    EXPECT_EQ(rows.size(), 3u * 12u * ops * (rooted ? 3u : 1u)) << coll;
    for (const auto& f : rows) {
      ASSERT_EQ(f.size(), 13u) << coll;
      EXPECT_EQ(f[8], "0") << coll;
      const bool in_place_unchecked = c == PerfCollective::kAllToAll || c == PerfCollective::kSendRecv;
      EXPECT_EQ(f[12], in_place_unchecked ? "N/A" : "0") << coll;
      if (c == PerfCollective::kAllToAll) {
        EXPECT_EQ(f[9], "N/A");  // in-place alltoall is not run
      }
    }
    EXPECT_NE(r.output.find("# Out of bounds values : 0 OK"), std::string::npos) << coll;
  }
}

TEST(PerfCli, BlockingAggregatedAndRepeatedChecks) {
  const RunResult r = run("perf reduce_scatter -b 1K -e 16K -f 4 -g 4 -z 1 -m 3 -c 3 -o mulsum -d bfloat16 -a 3");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("# Blocking Enabled"), std::string::npos);
  EXPECT_EQ(rows_of(r.output).size(), 3u);
}

TEST(PerfCli, ProcessesSpawnedWithNprocs) {
  const RunResult r = run("perf all_gather -b 1K -e 8K -f 2 -g 2 --nprocs 2");
  ASSERT_EQ(r.status, 0) << r.output;
  std::set<std::string> pids;
  int rank_lines = 0;
  for (const auto& l : lines_of(r.output)) {
    if (l.rfind("#  Rank ", 0) != 0) continue;
    ++rank_lines;
    std::istringstream in(l);
    std::string word, pid;
    while (in >> word && word != "Pid") {
    }
    in >> pid;
    pids.insert(pid);
  }
  EXPECT_EQ(rank_lines, 4);
  EXPECT_EQ(pids.size(), 2u);
  EXPECT_EQ(rows_of(r.output).size(), 4u);
}

// --hosts 2: 4 processes as 2 hosts of 2, so each ring connection inside a host is SHM and each one
// between the hosts NET/Socket (docs/net.md); every value still right.
TEST(PerfCli, ProcessesSplitOverHostsConnectOverNet) {
  const RunResult r = run("perf all_reduce -b 1K -e 1M -f 32 --nprocs 4 --hosts 2",
                          "NCCL_SOCKET_IFNAME=lo NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("# Out of bounds values : 0 OK"), std::string::npos) << r.output;
  int shm = 0, net = 0;
  for (const auto& l : lines_of(r.output)) {
    int me = -1, peer = -1;
    const size_t at = l.find("Channel ");
    if (at == std::string::npos || sscanf(l.c_str() + at, "Channel %*d/%*d : %d[%*d] -> %d[%*d]", &me, &peer) != 2) continue;
    const bool same_host = me / 2 == peer / 2;
    const bool via_net = l.find("via NET/Socket/0") != std::string::npos;
    EXPECT_EQ(via_net, !same_host) << l;
    ++(via_net ? net : shm);
  }
  EXPECT_GT(shm, 0) << r.output;
  EXPECT_GT(net, 0) << r.output;
  // The log prefix names each process's host (NCCL_HOSTID).
  EXPECT_NE(r.output.find("-host0:"), std::string::npos);
  EXPECT_NE(r.output.find("-host1:"), std::string::npos);
}

// cclab perf's own bookkeeping (device report, barriers, combining times and #wrong) goes around the
// library: NCCL_ALGO=Tree leaves AllGather nothing to run, which failed the device report before the
// first size; now only the collective under test must be runnable.
TEST(PerfCli, BookkeepingDoesNotUseTheMeasuredLibrary) {
  for (const char* extra : {"", " --nprocs 2"}) {
    const RunResult r = run(std::string("perf all_reduce -b 8 -e 64K -f 8 -n 2 -g ") + (*extra ? "2" : "5") + extra,
                            "NCCL_ALGO=Tree");
    ASSERT_EQ(r.status, 0) << extra << "\n" << r.output;
    const auto rows = rows_of(r.output);
    ASSERT_EQ(rows.size(), 5u) << r.output;  // 8 B .. 32 KiB
    for (const auto& f : rows) {
      EXPECT_EQ(f[8], "0") << r.output;
      EXPECT_EQ(f[12], "0") << r.output;
    }
    int rank_lines = 0;
    for (const auto& l : lines_of(r.output)) rank_lines += l.rfind("#  Rank ", 0) == 0;
    EXPECT_EQ(rank_lines, *extra ? 4 : 5) << r.output;
    EXPECT_NE(r.output.find("# Out of bounds values : 0 OK"), std::string::npos) << r.output;
  }
  // LL on the ring for every collective: the report and the combining steps run as before.
  RunResult r = run("perf all_gather -b 64 -e 4K -f 8 -n 2 -g 3", "NCCL_ALGO=Ring NCCL_PROTO=LL");
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("# Out of bounds values : 0 OK"), std::string::npos) << r.output;
  // A collective the environment leaves nothing to run fails as itself, not in the device report.
  r = run("perf all_gather -b 64 -e 64 -g 2", "NCCL_ALGO=Tree");
  EXPECT_EQ(r.status, 3) << r.output;
  EXPECT_NE(r.output.find("AllGather: no algorithm/protocol is available"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("device report"), std::string::npos) << r.output;
  // The communicator runs the measured collectives and nothing else: per rank 1 warm-up, then per half
  // 1 data preparation run + 3 timed + 1 checked all_reduce (NCCL_DEBUG_SUBSYS=COLL logs each).
  r = run("perf all_reduce -b 1K -e 1K -n 3 -w 1 -c 1 -g 2", "NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL");
  ASSERT_EQ(r.status, 0) << r.output;
  int all_reduce = 0, other = 0;
  for (const auto& l : lines_of(r.output)) {
    if (l.find(": opCount ") == std::string::npos) continue;
    ++(l.find("AllReduce: opCount ") != std::string::npos ? all_reduce : other);
  }
  EXPECT_EQ(all_reduce, 2 * (1 + 2 * (1 + 3 + 1))) << r.output;
  EXPECT_EQ(other, 0) << r.output;
}

#ifdef CCLAB_FAULT_SHIM
TEST(PerfCli, WrongResultsAreReportedAndFail) {
  const RunResult r =
      run("perf all_reduce -b 1K -e 4K -f 2 -g 3 -z 1 -n 2", std::string("LD_PRELOAD=") + CCLAB_FAULT_SHIM);
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_NE(r.output.find("FAILED"), std::string::npos) << r.output;
  const auto rows = rows_of(r.output);
  ASSERT_EQ(rows.size(), 3u) << r.output;
  for (const auto& f : rows) {
    EXPECT_EQ(f[8], "1");  // one element of rank 1, out of place
    EXPECT_EQ(f[12], "1");
  }
  // One rank was wrong in each of the six checked halves.
  EXPECT_NE(r.output.find("# Out of bounds values : 6 FAILED"), std::string::npos) << r.output;
}
#endif

}  // namespace
}  // namespace cclab
