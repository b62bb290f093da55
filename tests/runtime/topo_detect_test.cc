// Topology detection in communicator init (comm_topo.cc), on the host backend through
// CCLAB_TOPO=detect with CCLAB_SYSFS_ROOT pointing at a fake sysfs tree (tests/graph/fake_sysfs.h):
//   - the communicator models the detected machine (NCCL_TOPO_DUMP_FILE writes it: the fake DGX H100's
//     GPUs, switches and NICs, ranks in bus id order), and collectives on it give exact results;
//   - a root without GPUs, or more ranks than GPUs, fails init with a message that says so;
//   - detection_gpus, the CUDA backend's choice of GPUs from the peer table (bus ids per rank), on
//     made-up peer tables: one host, two hosts, a GPU shared by two ranks, a rank without bus id.
// The CUDA backend's own path (bus ids from cudaDeviceGetPCIBusId, detection without CCLAB_TOPO, the
// fallback warning) needs a GPU and is not run here.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "../graph/fake_sysfs.h"
#include "base/param.h"
#include "core/comm.h"
#include "../base/test_env.h"
#include "comm_fixture.h"
#include "graph/topo.h"

using cclab_test::Comms;
using cclab_test::run_ranks;

namespace {

// Variables set for the object's lifetime, restored after (tests/base/test_env.h).
using Env = cclab::testing_env::ScopedEnv;

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(TopoDetectInit, CommunicatorModelsTheDetectedMachine) {
  cclab_test::FakeSysfs fs;
  cclab_test::FakeNvml unused;
  cclab_test::make_dgx_h100(fs, unused);
  const std::string dump = fs.root() + "-dump.xml";
  Env env{{"CCLAB_TOPO", "detect"}, {"CCLAB_SYSFS_ROOT", fs.root()}, {"NCCL_TOPO_DUMP_FILE", dump},
          {"CCLAB_TIMEOUT", "30"}};
  const int n = 8;
  {
    Comms comms(n, 2);
    ASSERT_NE(comms[0], nullptr);
    // An all_reduce over the detected machine's rings: every rank ends with the exact sum.
    const size_t count = 4099;
    std::vector<std::vector<float>> buf(n, std::vector<float>(count));
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < count; ++i) buf[r][i] = static_cast<float>((r + 1) * (i % 97));
    run_ranks(n, [&](int r) {
      EXPECT_EQ(ncclAllReduce(buf[r].data(), buf[r].data(), count, ncclFloat, ncclSum, comms[r], nullptr), ncclSuccess);
    });
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < count; ++i) ASSERT_EQ(buf[r][i], static_cast<float>(36 * (i % 97))) << r << " " << i;
  }
  // The dump is the detected machine with the ranks on it: GPU d (bus id order) plays rank d.
  cclab::Topology t;
  std::string err;
  ASSERT_TRUE(cclab::read_topology_xml(dump, &t, &err)) << err;
  std::remove(dump.c_str());
  EXPECT_EQ(t.name, "detected");
  ASSERT_EQ(t.gpus(0).size(), 8u);
  EXPECT_EQ(t.nets(0).size(), 8u);
  EXPECT_EQ(t.nodes_of(cclab::TopoNodeType::kPci).size(), 4u);
  EXPECT_EQ(t.nodes_of(cclab::TopoNodeType::kCpu).size(), 2u);
  const int64_t bus[8] = {0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb};
  for (int d = 0; d < 8; ++d) {
    const cclab::TopoNode& g = t.nodes[t.gpu_node(0, d)];
    EXPECT_EQ(g.busid, bus[d] << 12) << d;
    EXPECT_EQ(g.rank, d);
  }
  EXPECT_EQ(t.path(t.gpu_node(0, 0), t.gpu_node(0, 4)).type, cclab::PathType::kSys);
}

TEST(TopoDetectInit, NoGpuOrTooFewGpusFailInit) {
  {
    cclab_test::FakeSysfs fs;
    fs.cpuinfo("GenuineIntel", 6, 0x55);
    Env env{{"CCLAB_TOPO", "detect"}, {"CCLAB_SYSFS_ROOT", fs.root()}};
    ncclComm_t comm = nullptr;
    EXPECT_EQ(ncclCommInitAll(&comm, 1, nullptr), ncclInvalidArgument);
    EXPECT_TRUE(contains(ncclGetLastError(nullptr), "CCLAB_TOPO=detect: no GPU found under " + fs.root()))
        << ncclGetLastError(nullptr);
  }
  {
    cclab_test::FakeSysfs fs;
    cclab_test::FakeNvml unused;
    cclab_test::make_nvlink_pairs(fs, unused);  // 4 GPUs
    Env env{{"CCLAB_TOPO", "detect"}, {"CCLAB_SYSFS_ROOT", fs.root()}};
    std::vector<ncclComm_t> comms(6, nullptr);
    EXPECT_EQ(ncclCommInitAll(comms.data(), 6, nullptr), ncclInvalidArgument);
    EXPECT_TRUE(contains(ncclGetLastError(nullptr), "CCLAB_TOPO=detect: a host runs 6 ranks but has 4 GPU(s)"))
        << ncclGetLastError(nullptr);
  }
}

cclab::PeerInfo peer(uint64_t host, int64_t bus, int sm) {
  cclab::PeerInfo p{};
  p.host_hash = host;
  p.gpu_busid = bus;
  p.gpu_sm = sm;
  return p;
}

TEST(TopoDetectInit, DetectionGpusFromThePeerTable) {
  std::vector<cclab::DetectGpu> gpus;
  // Two hosts of two ranks: each host's bus ids, in rank order.
  std::vector<cclab::PeerInfo> peers = {peer(1, 0x9a000, 90), peer(1, 0x18000, 90), peer(2, 0x18000, 90),
                                        peer(2, 0x2a000, 90)};
  EXPECT_EQ(cclab::detection_gpus(peers, 0, &gpus), "");
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[0].busid, 0x9a000);
  EXPECT_EQ(gpus[1].busid, 0x18000);
  EXPECT_EQ(gpus[1].sm, 90);
  EXPECT_EQ(cclab::detection_gpus(peers, 3, &gpus), "");
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_EQ(gpus[1].busid, 0x2a000);
  // No bus ids (host backend): no GPUs given, detection scans.
  const std::vector<cclab::PeerInfo> none = {peer(1, -1, 0), peer(1, -1, 0)};
  EXPECT_EQ(cclab::detection_gpus(none, 1, &gpus), "");
  EXPECT_TRUE(gpus.empty());
  // Two ranks of one host on one GPU; a rank without bus id among ranks with one.
  peers[1].gpu_busid = 0x9a000;
  EXPECT_EQ(cclab::detection_gpus(peers, 2, &gpus),
            "ranks 0 and 1 share the GPU 0000:9a:00.0, and a model GPU plays one rank");
  peers[1].gpu_busid = -1;
  EXPECT_EQ(cclab::detection_gpus(peers, 0, &gpus), "1 rank(s) have no GPU bus id (see their log)");
}

}  // namespace
