// tests/viz/viz_cli_test.cc - `cclab viz` errors that need no display: bad flags (exit 2), a missing or
// corrupt trace (read_trace's message, exit 1), a malformed curves file (exit 1), no display (a message
// suggesting xvfb-run, exit 1).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "synth.h"
#include "viz/viz.h"

namespace cclab {
namespace viz {
namespace {

struct Scratch {
  std::string dir;
  ~Scratch() {
    if (!dir.empty() && dir != "/tmp") std::filesystem::remove_all(dir);
  }
};

std::string tmp(const std::string& name) {
  static Scratch scratch;
  if (scratch.dir.empty()) {
    char tmpl[] = "/tmp/cclab_viz_cli_XXXXXX";
    const char* d = mkdtemp(tmpl);
    scratch.dir = d ? d : "/tmp";
  }
  return scratch.dir + "/" + name;
}

int run(const std::vector<std::string>& args, std::string* err) {
  testing::internal::CaptureStderr();
  const int rc = viz_main(args);
  *err = testing::internal::GetCapturedStderr();
  return rc;
}

TEST(VizCli, BadFlagsExit2) {
  std::string err;
  EXPECT_EQ(run({"--frobnicate"}, &err), 2);
  EXPECT_NE(err.find("unknown flag '--frobnicate'"), std::string::npos) << err;
  EXPECT_EQ(run({}, &err), 2);
  EXPECT_NE(err.find("no trace"), std::string::npos) << err;
  EXPECT_EQ(run({"x.cctrace", "--view", "nope"}, &err), 2);
  EXPECT_EQ(run({"x.cctrace", "--size", "0x0"}, &err), 2);
  testing::internal::CaptureStdout();
  EXPECT_EQ(viz_main({"--help"}), 0);
  const std::string out = testing::internal::GetCapturedStdout();
  EXPECT_NE(out.find("--screenshot"), std::string::npos);
}

TEST(VizCli, MissingAndCorruptTraceExit1) {
  std::string err;
  EXPECT_EQ(run({tmp("does-not-exist.cctrace"), "--screenshot", tmp("x.png")}, &err), 1);
  EXPECT_NE(err.find("does-not-exist.cctrace"), std::string::npos) << err;
  // Not a trace.
  std::ofstream(tmp("junk.cctrace")) << "this is not a trace";
  EXPECT_EQ(run({tmp("junk.cctrace"), "--screenshot", tmp("x.png")}, &err), 1);
  EXPECT_NE(err.find("junk.cctrace"), std::string::npos) << err;
  // A truncated real trace: read_trace's message.
  std::string e2;
  const std::string good = tmp("good.cctrace");
  ASSERT_TRUE(trace::write_trace(good, viz_test::small_trace(), &e2)) << e2;
  std::ifstream in(good, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::ofstream(tmp("cut.cctrace"), std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  trace::Trace t;
  std::string expected;
  ASSERT_FALSE(trace::read_trace(tmp("cut.cctrace"), &t, &expected));
  EXPECT_EQ(run({tmp("cut.cctrace"), "--screenshot", tmp("x.png")}, &err), 1);
  EXPECT_NE(err.find(expected), std::string::npos) << err << " vs " << expected;
}

TEST(VizCli, MalformedCurvesExit1) {
  std::ofstream(tmp("bad.csv")) << "bytes,busbw\n1024,fast\n";
  std::string err;
  EXPECT_EQ(run({"--curves", tmp("bad.csv"), "--screenshot", tmp("x.png")}, &err), 1);
  EXPECT_NE(err.find("bad.csv:2: busbw \"fast\" is not a number"), std::string::npos) << err;
}

TEST(VizCli, NoDisplaySuggestsXvfb) {
  std::string e2;
  const std::string good = tmp("good2.cctrace");
  ASSERT_TRUE(trace::write_trace(good, viz_test::small_trace(), &e2)) << e2;
  const char* d = std::getenv("DISPLAY");
  const std::string saved = d ? d : "";
  unsetenv("DISPLAY");
  unsetenv("WAYLAND_DISPLAY");
  std::string err;
  EXPECT_EQ(run({good, "--screenshot", tmp("x.png")}, &err), 1);
  EXPECT_NE(err.find("xvfb-run"), std::string::npos) << err;
  EXPECT_NE(err.find("DISPLAY"), std::string::npos) << err;
  if (!saved.empty()) setenv("DISPLAY", saved.c_str(), 1);
}

}  // namespace
}  // namespace viz
}  // namespace cclab
