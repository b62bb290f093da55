// Tests of `cclab topo --detect` and `cclab tune --detect`: the model built from a fake sysfs tree
// (tests/graph/fake_sysfs.h) through build_topology, the report's detection section, the flags, and,
// when the executable is built, the tool run as a user would on a fake DGX H100, on a machine without
// GPU, and on bad roots. NVML is whatever this machine has (none here): the fake GPUs are then PCIe
// only, and the report says why.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "../graph/fake_sysfs.h"
#include "cli_test_util.h"
#include "topo_cmd.h"
#include "tune_cmd.h"

namespace cclab {
namespace {

using cclab_test::FakeNvml;
using cclab_test::FakeSysfs;
using cli_test::RunResult;

bool contains(const std::string& hay, const std::string& needle) { return hay.find(needle) != std::string::npos; }

TEST(TopoDetect, BuildTopologyFromAFakeDgxH100) {
  FakeSysfs fs;
  FakeNvml unused;
  cclab_test::make_dgx_h100(fs, unused);
  TopoSource s;
  s.detect = true;
  s.sysfs_root = fs.root();
  s.nodes = 2;
  Topology t;
  DetectResult d;
  std::string err;
  ASSERT_TRUE(build_topology(s, &t, &err, &d)) << err;
  EXPECT_EQ(t.machines, 2);
  EXPECT_EQ(t.gpus(0).size(), 8u);
  EXPECT_EQ(t.nets(1).size(), 8u);
  EXPECT_EQ(t.nodes_of(TopoNodeType::kPci, 0).size(), 4u);
  EXPECT_EQ(t.name, "detected");
  // PCIe only without NVML: GPUs of one switch are PIX, of one socket PHB, across sockets SYS.
  EXPECT_EQ(t.path(t.gpu_node(0, 0), t.gpu_node(0, 1)).type, PathType::kPix);
  EXPECT_EQ(t.path(t.gpu_node(0, 0), t.gpu_node(0, 2)).type, PathType::kPhb);
  EXPECT_EQ(t.path(t.gpu_node(0, 0), t.gpu_node(0, 4)).type, PathType::kSys);
  const std::string report = format_detect_report(d, fs.root());
  EXPECT_EQ(report.rfind("## Detected (sysfs root " + fs.root() + "; NVML: ", 0), 0u) << report;
  EXPECT_TRUE(contains(report, "gpu    0000:5d:00.0  dev 3  sm")) << report;
  EXPECT_TRUE(contains(report, "nic    0000:5e:00.0  mlx5_3 port 1  InfiniBand 400000 Mb/s")) << report;
  EXPECT_FALSE(contains(report, "No GPU found")) << report;

  // One source only; --sysfs needs --detect.
  s.preset_spec = "dgx-h100";
  EXPECT_FALSE(build_topology(s, &t, &err));
  EXPECT_TRUE(contains(err, "give one of --topo, --xml and --detect, not several")) << err;
  TopoCmdParse p = parse_topo_cmd({"--sysfs", "/x"});
  EXPECT_FALSE(p.ok);
  EXPECT_TRUE(contains(p.message, "--sysfs goes with --detect")) << p.message;
  p = parse_topo_cmd({"--detect", "--sysfs", "/x"});
  ASSERT_TRUE(p.ok) << p.message;
  EXPECT_TRUE(p.options.source.detect);
  EXPECT_EQ(p.options.source.sysfs_root, "/x");
  TuneCmdParse q = parse_tune_cmd({"all_reduce", "--detect"});
  EXPECT_TRUE(q.ok) << q.message;
  q = parse_tune_cmd({"all_reduce", "--sysfs", "/x"});
  EXPECT_FALSE(q.ok);
}

TEST(TopoDetect, NoGpuReportListsWhatWasFound) {
  FakeSysfs fs;
  cclab_test::make_gpuless_vm(fs);
  TopoSource s;
  s.detect = true;
  s.sysfs_root = fs.root();
  Topology t;
  DetectResult d;
  std::string err;
  EXPECT_FALSE(build_topology(s, &t, &err, &d));
  EXPECT_TRUE(contains(err, "no GPU found")) << err;
  ASSERT_FALSE(d.xml.empty());
  const std::string report = format_detect_report(d, fs.root());
  EXPECT_TRUE(contains(report, "cpu  NUMA 0  x86_64 AuthenticAMD family 25 model 1  cpus 0-1")) << report;
  EXPECT_TRUE(contains(report, "nic  (not on PCI)  eth0  Ethernet 10000 Mb/s  NUMA 0")) << report;
  EXPECT_TRUE(contains(report, "note: eth0: speed -1, taking NCCL's default 10000 Mb/s")) << report;
  EXPECT_TRUE(contains(report, "No GPU found, so there is no model to show")) << report;
}

#ifdef CCLAB_CLI_PATH
RunResult run(const std::string& args, const std::string& env = "") {
  return cli_test::run_command(CCLAB_CLI_PATH, args, env, "cclab_topo_detect");
}

TEST(TopoDetectCli, FakeDgxH100) {
  FakeSysfs fs;
  FakeNvml unused;
  cclab_test::make_dgx_h100(fs, unused);
  const std::string dump = cli_test::temp_path("cclab_topo_detect", "dump.xml");
  RunResult r = run("topo --detect --sysfs " + fs.root() + " --dump-xml " + dump);
  ASSERT_EQ(r.status, 0) << r.err;
  // Detection first, then the model report as for a preset.
  EXPECT_EQ(r.out.rfind("## Detected (sysfs root " + fs.root() + "; NVML: ", 0), 0u) << r.out;
  EXPECT_TRUE(contains(r.out, "pci  0000:15:00.0  switch 0x1000:0xc030  32.0 GT/s PCIe x16  NUMA 0")) << r.out;
  EXPECT_TRUE(contains(r.out, "gpu    0000:db:00.0  dev 7  sm")) << r.out;
  EXPECT_TRUE(contains(r.out, "## Model\nTopology detected: 8 GPUs (sm")) << r.out;
  EXPECT_TRUE(contains(r.out, "## Paths (machine 0)")) << r.out;
  EXPECT_TRUE(contains(r.out, "## Ring graph\nPattern 4")) << r.out;
  // The dump is the model, and reads back (as NCCL_TOPO_FILE would).
  Topology t;
  std::string err;
  ASSERT_TRUE(read_topology_xml(dump, &t, &err)) << err;
  EXPECT_EQ(t.gpus(0).size(), 8u);
  std::remove(dump.c_str());
  // The environment names the root too, and tune takes --detect.
  r = run("topo --detect", "CCLAB_SYSFS_ROOT=" + fs.root());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "gpu    0000:18:00.0  dev 0")) << r.out;
  r = run("tune --detect --sysfs " + fs.root() + " all_reduce -b 1M -e 1M");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "on detected (8 GPUs")) << r.out;
}

// This machine's own /sys, GPUs or not: the detection section comes first and the tool succeeds (a
// machine without GPU says so; one with GPUs goes on to the model).
TEST(TopoDetectCli, ThisMachine) {
  if (access("/sys/devices", R_OK) != 0) GTEST_SKIP() << "no readable /sys/devices here";
  const RunResult r = run("topo --detect", "CCLAB_SYSFS_ROOT=");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out.rfind("## Detected (sysfs root /sys; NVML: ", 0), 0u) << r.out;
  EXPECT_TRUE(contains(r.out, "no GPU found") || contains(r.out, "## Model")) << r.out;
}

TEST(TopoDetectCli, NoGpuAndBadRoots) {
  FakeSysfs fs;
  fs.cpuinfo("GenuineIntel", 6, 0x55);
  fs.numa_node(0, "0000ffff", "0-15");
  const std::string nic = fs.nic_function(fs.root_port(fs.host_bridge(0), 0, 1, 3, "0"), 0x3b, 0, 3, "0");
  fs.ib("mlx5_0", nic, "100 Gb/sec (4X EDR)");
  RunResult r = run("topo --detect --sysfs " + fs.root());
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "cpu  NUMA 0  x86_64 GenuineIntel family 6 model 85  cpus 0-15")) << r.out;
  EXPECT_TRUE(contains(r.out, "nic  0000:3b:00.0  mlx5_0 port 1  InfiniBand 100000 Mb/s  8.0 GT/s PCIe x16  NUMA 0"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "no GPU found")) << r.out;
  EXPECT_FALSE(contains(r.out, "## Model")) << r.out;

  r = run("topo --detect --sysfs /nonexistent/cclab");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "cclab topo: sysfs root /nonexistent/cclab: cannot resolve")) << r.err;
  r = run("topo --sysfs /sys");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "--sysfs goes with --detect")) << r.err;
  r = run("tune --detect --sysfs " + fs.root() + " all_reduce");
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "cclab tune: no GPU found under " + fs.root())) << r.err;
}
#endif  // CCLAB_CLI_PATH

}  // namespace
}  // namespace cclab
