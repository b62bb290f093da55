// tests/base/log_test.cc - NCCL_DEBUG, NCCL_DEBUG_SUBSYS, NCCL_DEBUG_FILE, the line format and the
// last error.
#include "base/log.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <thread>
#include <vector>

#include "test_env.h"

namespace cclab {
namespace {

using testing_env::CaptureFd;
using testing_env::read_file;
using testing_env::ScopedEnv;
using testing_env::TempDir;

int gettid_for_test() { return static_cast<int>(syscall(SYS_gettid)); }

std::string prefix(int rank) {
  return log_host_name() + ":" + std::to_string(getpid()) + ":" + std::to_string(gettid_for_test()) + " [" +
         (rank >= 0 ? std::to_string(rank) : std::string("?")) + "] ";
}

TEST(LogLevel, ParsesNamesCaseInsensitively) {
  bool ok = false;
  EXPECT_EQ(parse_log_level("VERSION", &ok), LogLevel::kVersion);
  EXPECT_TRUE(ok);
  EXPECT_EQ(parse_log_level("warn"), LogLevel::kWarn);
  EXPECT_EQ(parse_log_level("Info"), LogLevel::kInfo);
  EXPECT_EQ(parse_log_level("ABORT"), LogLevel::kAbort);
  EXPECT_EQ(parse_log_level("trace"), LogLevel::kTrace);
  EXPECT_EQ(parse_log_level(nullptr, &ok), LogLevel::kNone);
  EXPECT_TRUE(ok);
  EXPECT_EQ(parse_log_level("LOUD", &ok), LogLevel::kNone);
  EXPECT_FALSE(ok);
}

TEST(LogLevel, EnvironmentSelectsLevel) {
  ScopedEnv env;
  env.unset("NCCL_DEBUG");
  EXPECT_EQ(log_level(), LogLevel::kNone);
  EXPECT_FALSE(log_enabled(LogLevel::kWarn, kLogAll));
  env.set("NCCL_DEBUG", "info");
  EXPECT_EQ(log_level(), LogLevel::kInfo);
  EXPECT_TRUE(log_enabled(LogLevel::kWarn, kLogInit));
  EXPECT_TRUE(log_enabled(LogLevel::kInfo, kLogInit));
  EXPECT_FALSE(log_enabled(LogLevel::kTrace, kLogInit));
  EXPECT_FALSE(log_enabled(LogLevel::kInfo, kLogColl));  // not in the default subsystems
}

TEST(LogSubsys, DefaultIsInitBootstrapEnv) {
  EXPECT_EQ(parse_log_subsys(nullptr), kLogInit | kLogBootstrap | kLogEnv);
  ScopedEnv env;
  env.unset("NCCL_DEBUG_SUBSYS");
  EXPECT_EQ(log_subsys_mask(), kLogInit | kLogBootstrap | kLogEnv);
}

TEST(LogSubsys, ListsAndInversion) {
  EXPECT_EQ(parse_log_subsys("COLL,p2p"), kLogColl | kLogP2p);
  EXPECT_EQ(parse_log_subsys("ALL"), kLogAll);
  EXPECT_EQ(parse_log_subsys("^COLL,NET"), kLogAll & ~(kLogColl | kLogNet));
  EXPECT_EQ(parse_log_subsys("^ALL"), 0u);
  // A list replaces the default rather than adding to it, as in NCCL.
  EXPECT_EQ(parse_log_subsys("GRAPH"), static_cast<uint64_t>(kLogGraph));
  std::string unknown;
  EXPECT_EQ(parse_log_subsys("INIT,BOGUS,TUNING,nope", &unknown), kLogInit | kLogTuning);
  EXPECT_EQ(unknown, "BOGUS,nope");
  const char* names[] = {"INIT",  "COLL", "P2P",   "SHM",       "NET", "GRAPH",   "TUNING", "ENV",
                         "ALLOC", "CALL", "PROXY", "BOOTSTRAP", "REG", "PROFILE", "RAS",    "NVLS"};
  uint64_t all = 0;
  for (const char* n : names) {
    uint64_t m = parse_log_subsys(n);
    EXPECT_NE(m, 0u) << n;
    EXPECT_EQ(all & m, 0u) << n << " overlaps another subsystem";
    all |= m;
  }
}

TEST(LogSubsys, EnvironmentMaskFilters) {
  ScopedEnv env;
  env.set("NCCL_DEBUG", "INFO");
  env.set("NCCL_DEBUG_SUBSYS", "^INIT");
  EXPECT_FALSE(log_enabled(LogLevel::kInfo, kLogInit));
  EXPECT_TRUE(log_enabled(LogLevel::kInfo, kLogColl));
  EXPECT_TRUE(log_enabled(LogLevel::kInfo, kLogInit | kLogColl));  // any bit in the mask prints
}

TEST(LogFile, ExpandsHostAndPidAndWritesExactLines) {
  TempDir dir;
  ScopedEnv env;
  env.set("NCCL_DEBUG", "INFO");
  env.set("NCCL_DEBUG_SUBSYS", "INIT,COLL");
  env.set("NCCL_DEBUG_FILE", dir.path() + "/nccl.%h.%p.log");
  set_log_rank(3);
  CCLAB_INFO(kLogInit, "hello %d", 42);
  CCLAB_INFO(kLogNet, "filtered out");
  set_log_rank(-1);
  CCLAB_INFO(kLogColl, "no rank");
  int warn_line = __LINE__ + 1;
  CCLAB_WARN("bad thing %s", "happened");
  std::string expected = prefix(3) + "NCCL INFO hello 42\n" + prefix(-1) + "NCCL INFO no rank\n" + prefix(-1) +
                         "log_test.cc:" + std::to_string(warn_line) + " NCCL WARN bad thing happened\n";
  std::string path = dir.path() + "/nccl." + log_host_name() + "." + std::to_string(getpid()) + ".log";
  reset_log_for_testing();  // closes the file
  EXPECT_EQ(read_file(path), expected);
}

TEST(LogFile, PercentPercentAndUnknownEscapes) {
  TempDir dir;
  ScopedEnv env;
  env.set("NCCL_DEBUG", "WARN");
  env.set("NCCL_DEBUG_FILE", dir.path() + "/a%%b%zc");
  CCLAB_WARN("x");
  reset_log_for_testing();
  EXPECT_NE(read_file(dir.path() + "/a%b%zc").find("NCCL WARN x\n"), std::string::npos);
}

TEST(LogFile, UnopenableFileFallsBackToStderrWithWarning) {
  ScopedEnv env;
  env.set("NCCL_DEBUG", "INFO");
  env.set("NCCL_DEBUG_FILE", "/nonexistent-dir-cclab/log.%p");
  CaptureFd err(STDERR_FILENO);
  CCLAB_INFO(kLogInit, "still logged");
  std::string text = err.text();
  EXPECT_NE(text.find("cannot open '/nonexistent-dir-cclab/log." + std::to_string(getpid()) + "'"), std::string::npos)
      << text;
  EXPECT_NE(text.find("NCCL INFO still logged\n"), std::string::npos) << text;
}

TEST(LogFile, LinesFromThreadsDoNotInterleave) {
  TempDir dir;
  ScopedEnv env;
  env.set("NCCL_DEBUG", "INFO");
  env.set("NCCL_DEBUG_FILE", dir.path() + "/threads.log");
  const std::string payload(300, 'x');
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      set_log_rank(t);
      for (int i = 0; i < 200; ++i) CCLAB_INFO(kLogInit, "line %d %s end", i, payload.c_str());
    });
  }
  for (auto& th : threads) th.join();
  reset_log_for_testing();
  std::string text = read_file(dir.path() + "/threads.log");
  size_t lines = 0, start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    ASSERT_NE(end, std::string::npos);
    std::string line = text.substr(start, end - start);
    EXPECT_NE(line.find("NCCL INFO line "), std::string::npos);
    EXPECT_EQ(line.substr(line.size() - 4), " end");
    ++lines;
    start = end + 1;
  }
  EXPECT_EQ(lines, 800u);
}

TEST(LogFile, ForkedChildLinesCarryTheChildPid) {
  TempDir dir;
  ScopedEnv env;
  env.set("NCCL_DEBUG", "INFO");
  env.set("NCCL_DEBUG_FILE", dir.path() + "/fork.log");
  CCLAB_INFO(kLogInit, "parent line");  // initializes (and caches pid and tid) before the fork
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    CCLAB_INFO(kLogInit, "child line");
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  std::string host = log_host_name();
  reset_log_for_testing();
  std::string text = read_file(dir.path() + "/fork.log");
  std::string child_id = std::to_string(child);
  EXPECT_NE(text.find(host + ":" + child_id + ":" + child_id + " [?] NCCL INFO child line\n"), std::string::npos)
      << text;
}

TEST(LogVersion, VersionLevelPrintsBareLineOnce) {
  ScopedEnv env;
  env.set("NCCL_DEBUG", "VERSION");
  CaptureFd out(STDOUT_FILENO);
  print_version_once();
  print_version_once();
  CCLAB_WARN("not printed at VERSION");
  CCLAB_INFO(kLogInit, "not printed either");
  EXPECT_EQ(out.text(), "NCCL version 2.28.9+cclab\n");
  EXPECT_STREQ(version_string(), "2.28.9+cclab");
}

TEST(LogVersion, InfoLevelPrintsInfoLine) {
  ScopedEnv env;
  env.set("NCCL_DEBUG", "INFO");
  CaptureFd out(STDOUT_FILENO);
  print_version_once();
  EXPECT_EQ(out.text(), prefix(-1) + "NCCL INFO NCCL version 2.28.9+cclab\n");
}

TEST(LogVersion, OffPrintsNothing) {
  ScopedEnv env;
  env.unset("NCCL_DEBUG");
  CaptureFd out(STDOUT_FILENO);
  print_version_once();
  EXPECT_EQ(out.text(), "");
}

TEST(LogHost, HostIdOverridesHostName) {
  ScopedEnv env;
  env.set("NCCL_HOSTID", "node7");
  EXPECT_EQ(log_host_name(), "node7");
}

TEST(LastError, StoredForEveryWarnEvenWhenNotPrinted) {
  ScopedEnv env;
  env.unset("NCCL_DEBUG");
  set_last_error("");
  EXPECT_STREQ(last_error(), "");
  CCLAB_WARN("disk %d is on fire", 2);
  EXPECT_STREQ(last_error(), "disk 2 is on fire");
  CCLAB_INFO(kLogInit, "infos do not count");
  EXPECT_STREQ(last_error(), "disk 2 is on fire");
}

TEST(LastError, ReportErrorReturnsCodeAndSetsMessage) {
  ScopedEnv env;
  env.unset("NCCL_DEBUG");
  ncclResult_t r = report_error(ncclInvalidArgument, "ncclAllReduce: invalid datatype %d", 99);
  EXPECT_EQ(r, ncclInvalidArgument);
  EXPECT_STREQ(last_error(), "ncclAllReduce: invalid datatype 99");
}

TEST(LastError, IsPerThread) {
  set_last_error("main thread error");
  std::string seen_in_thread = "unset";
  std::thread t([&] {
    seen_in_thread = last_error();
    report_error(ncclSystemError, "thread error");
  });
  t.join();
  EXPECT_EQ(seen_in_thread, "");
  EXPECT_STREQ(last_error(), "main thread error");
}

TEST(LastError, ReportErrorPrintsWarnWithoutFileLine) {
  TempDir dir;
  ScopedEnv env;
  env.set("NCCL_DEBUG", "WARN");
  env.set("NCCL_DEBUG_FILE", dir.path() + "/warn.log");
  report_error(ncclRemoteError, "peer %d went away", 5);
  std::string expected = prefix(-1) + "NCCL WARN peer 5 went away\n";
  reset_log_for_testing();  // closes the file; computing prefix() after this would reopen (truncate) it
  EXPECT_EQ(read_file(dir.path() + "/warn.log"), expected);
}

ncclResult_t failing_call() { return ncclSystemError; }
ncclResult_t calls_failing() {
  CCLAB_CHECK(failing_call());
  return ncclSuccess;
}

TEST(LogCheck, PropagatesCodeAndLogsBreadcrumb) {
  TempDir dir;
  ScopedEnv env;
  env.set("NCCL_DEBUG", "INFO");
  env.set("NCCL_DEBUG_FILE", dir.path() + "/check.log");
  EXPECT_EQ(calls_failing(), ncclSystemError);
  reset_log_for_testing();
  EXPECT_NE(read_file(dir.path() + "/check.log").find("log_test.cc:"), std::string::npos);
}

}  // namespace
}  // namespace cclab
