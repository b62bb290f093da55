// What NCCL_DEBUG=INFO prints about communicator init, read back from NCCL_DEBUG_FILE: the rings,
// the transport of every connection, and the echo of parameters set in the environment. ctest sets
//   NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV NCCL_BUFFSIZE=1048576 NCCL_DEBUG_FILE=<dir>/cclab.%p.log
// Run by hand without them, the test sets the same itself (before the first cclab call, since the
// logger and the parameters read the environment once).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "comm_fixture.h"

using cclab_test::run_ranks;

namespace {

constexpr int kRanks = 4;

// The log file of this process: NCCL_DEBUG_FILE with %p replaced by the pid. Creates its folder.
std::string log_path() {
  if (getenv("NCCL_DEBUG_FILE") == nullptr) {
    char tmpl[] = "/tmp/cclab_log_test.XXXXXX";
    const char* dir = mkdtemp(tmpl);
    if (dir == nullptr) return "";
    setenv("NCCL_DEBUG_FILE", (std::string(dir) + "/cclab.%p.log").c_str(), 1);
    setenv("NCCL_DEBUG", "INFO", 1);
    setenv("NCCL_DEBUG_SUBSYS", "INIT,ENV", 1);
    setenv("NCCL_BUFFSIZE", "1048576", 1);
  }
  std::string pattern = getenv("NCCL_DEBUG_FILE");
  const size_t slash = pattern.rfind('/');
  if (slash != std::string::npos) mkdir(pattern.substr(0, slash).c_str(), 0755);  // ctest's folder
  const size_t p = pattern.find("%p");
  if (p != std::string::npos) pattern.replace(p, 2, std::to_string(getpid()));
  return pattern;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

size_t count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t at = hay.find(needle); at != std::string::npos; at = hay.find(needle, at + needle.size())) ++n;
  return n;
}

TEST(Log, InitPrintsRingsTransportsAndEnvironment) {
  const std::string path = log_path();
  ASSERT_FALSE(path.empty());
  unlink(path.c_str());
  ASSERT_STREQ(getenv("NCCL_DEBUG"), "INFO");

  // kRanks ranks of a new communicator, initialised together on their own threads, 2 channels.
  auto init_comms = [](std::vector<ncclComm_t>* comms) {
    comms->assign(kRanks, nullptr);
    ncclUniqueId id;
    NCCL_OK(ncclGetUniqueId(&id));
    run_ranks(kRanks, [&](int r) {
      ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
      cfg.minCTAs = cfg.maxCTAs = 2;
      EXPECT_EQ(ncclCommInitRankConfig(&(*comms)[r], kRanks, id, r, &cfg), ncclSuccess);
    });
    for (ncclComm_t c : *comms) ASSERT_NE(c, nullptr);
  };
  std::vector<ncclComm_t> comms, again;
  init_comms(&comms);
  if (HasFatalFailure()) return;
  // A second communicator of the same shape, made while the first one lives: its ranks take the graphs
  // the first search found.
  init_comms(&again);
  if (HasFatalFailure()) return;
  for (ncclComm_t c : again) NCCL_OK(ncclCommDestroy(c));
  // A collective logs under COLL, which NCCL_DEBUG_SUBSYS=INIT,ENV leaves out.
  std::vector<std::vector<float>> bufs(kRanks, std::vector<float>(1000, 1.0f));
  run_ranks(kRanks, [&](int r) {
    EXPECT_EQ(ncclAllReduce(bufs[r].data(), bufs[r].data(), 1000, ncclFloat, ncclSum, comms[r], nullptr),
              ncclSuccess);
  });
  EXPECT_EQ(bufs[3][999], 4.0f);
  for (ncclComm_t c : comms) NCCL_OK(ncclCommDestroy(c));

  const std::string log = read_file(path);
  ASSERT_FALSE(log.empty()) << "nothing in " << path;
  SCOPED_TRACE("log:\n" + log);

  // The version line and the rings (rank 0 prints each channel's ring once).
  EXPECT_TRUE(contains(log, "NCCL INFO NCCL version 2.28.9"));
  EXPECT_TRUE(contains(log, "[0] NCCL INFO Channel 00/02 : 0 1 2 3\n"));
  EXPECT_TRUE(contains(log, "[0] NCCL INFO Channel 01/02 : 0 1 2 3\n"));
  // Every rank's connection to its ring successor on both channels, with the transport.
  for (int r = 0; r < kRanks; ++r) {
    const int next = (r + 1) % kRanks;
    for (int c = 0; c < 2; ++c) {
      const std::string line = "[" + std::to_string(r) + "] NCCL INFO Channel 0" + std::to_string(c) + "/0 : " +
                               std::to_string(r) + "[" + std::to_string(r) + "] -> " + std::to_string(next) + "[" +
                               std::to_string(next) + "] via P2P/direct pointer\n";
      EXPECT_TRUE(contains(log, line)) << line;
    }
    EXPECT_TRUE(contains(log, "[" + std::to_string(r) + "] NCCL INFO Connected all rings"));
    EXPECT_TRUE(contains(log, "rank " + std::to_string(r) + " nRanks 4 nChannels 2 buffSize 1048576 pid " +
                                  std::to_string(getpid()) + " - Init COMPLETE"));
  }
  // The graph search runs once per topology and process: the four ranks that start together wait for
  // the first one's search (and never touch the cache at the same time), the other three and all four
  // ranks of the second communicator take its result.
  EXPECT_EQ(count(log, "Graphs for this topology searched in "), 1u);
  EXPECT_EQ(count(log, "Graphs for this topology taken from the process's cache\n"), 2u * kRanks - 1);
  // The environment echo, once per process (parameters are read once).
  const std::string echo = "NCCL INFO NCCL_BUFFSIZE set by environment to 1048576.\n";
  EXPECT_TRUE(contains(log, echo));
  EXPECT_EQ(log.find(echo), log.rfind(echo)) << "echoed more than once";
  // Subsystems not selected stay silent.
  EXPECT_FALSE(contains(log, "opCount")) << "COLL lines despite NCCL_DEBUG_SUBSYS=INIT,ENV";
  // Every line has NCCL's prefix: host:pid:tid [rank] NCCL INFO.
  std::istringstream lines(log);
  std::string l;
  const std::string pid = ":" + std::to_string(getpid()) + ":";
  while (std::getline(lines, l)) {
    EXPECT_TRUE(contains(l, pid)) << l;
    EXPECT_TRUE(contains(l, " NCCL INFO ")) << l;
  }
  // Keep a failing run's log for a look; a passing one leaves nothing behind.
  if (!::testing::Test::HasFailure()) unlink(path.c_str());
}

}  // namespace
