// NVLS-Tree on the host backend (kernels/nvls.h, run_nvls_tree_channel): with CCLAB_TOPO=dgx-h100:M (NVSwitch
// machines of sm90 with a NIC per GPU) and NCCL_ALGO=NVLSTree, AllReduce runs NCCL's NVLS-Tree - every rank
// scatters into its machine's NVLS memory, each head load-reduces its part over its machine, the heads of a
// part reduce up and broadcast down the channel's tree of machines, and multicast the result back into
// their machine - and the results are byte-exact for every datatype and op NVLS supports, odd counts, in
// place and out of place, 2 and 3 machines, one and two channels (the two trees of the double binary tree),
// with a small NCCL_NVLS_CHUNKSIZE so that a call wraps the FIFOs many times. Inputs are small integers, so
// every order of the reduction gives the same bits. Also: the default choice on dgx-h100:2 is NVLS-Tree for
// a large AllReduce (NCCL's), and a call NVLS cannot reduce (a product) leaves NCCL_ALGO=NVLSTree nothing.
#include <gtest/gtest.h>

#include <map>

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <regex>
#include <string>
#include <vector>

#include "../base/test_env.h"
#include "comm_fixture.h"
#include "graph/topo.h"
#include "kernels/dtypes.h"

using cclab_test::Comms;
using cclab_test::run_ranks;

namespace {

using Env = cclab::testing_env::ScopedEnv;

template <typename T>
T make(int v) {
  if constexpr (std::is_same<T, cclab::half_t>::value || std::is_same<T, cclab::bfloat16_t>::value)
    return cclab::from_float<T>(static_cast<float>(v));
  else
    return static_cast<T>(v);
}

// Rank r's value at element e: -4..4 (0..3 for unsigned types): every partial sum of 24 ranks is exact.
template <typename T>
int gen(int r, size_t e) {
  const uint64_t h = ((e + 1) * 0x9e3779b97f4a7c15ull) ^ ((static_cast<uint64_t>(r) + 7) * 0xc2b2ae3d27d4eb4full);
  const int v = static_cast<int>((h ^ (h >> 29)) % 9) - 4;
  return std::is_unsigned<T>::value ? (v + 4) % 4 : v;
}

int fold(ncclRedOp_t op, int a, int b) { return op == ncclSum ? a + b : op == ncclMax ? (a > b ? a : b) : (a < b ? a : b); }

// One AllReduce on every rank; "" or what went wrong. Checks every rank's bytes and that NVLS-Tree ran:
// a head sent its part to another machine (a step whose peer is on another machine).
template <typename T>
std::string run_case(const Comms& comms, int per_machine, ncclDataType_t type, ncclRedOp_t op, size_t count,
                     bool in_place) {
  const int n = comms.size();
  std::vector<std::vector<T>> in(n, std::vector<T>(count)), out(n, std::vector<T>(count, make<T>(99)));
  for (int r = 0; r < n; ++r)
    for (size_t e = 0; e < count; ++e) in[r][e] = make<T>(gen<T>(r, e));
  std::vector<cclab_test::EventRecorder> rec(n);
  for (int r = 0; r < n; ++r) cclabCommSetObserver(comms[r], cclab_test::EventRecorder::fn, &rec[r]);
  std::vector<ncclResult_t> res(n, ncclSuccess);
  run_ranks(n, [&](int r) {
    if (in_place) std::memcpy(out[r].data(), in[r].data(), count * sizeof(T));
    res[r] = ncclAllReduce(in_place ? out[r].data() : in[r].data(), out[r].data(), count, type, op, comms[r], nullptr);
  });
  for (int r = 0; r < n; ++r) cclabCommSetObserver(comms[r], nullptr, nullptr);
  for (int r = 0; r < n; ++r)
    if (res[r] != ncclSuccess) return "rank " + std::to_string(r) + ": " + ncclGetLastError(nullptr);
  for (size_t e = 0; e < count; ++e) {
    int want = gen<T>(0, e);
    for (int q = 1; q < n; ++q) want = fold(op, want, gen<T>(q, e));
    const T w = make<T>(want);
    for (int r = 0; r < n; ++r)
      if (std::memcmp(&out[r][e], &w, sizeof(T)) != 0)
        return "rank " + std::to_string(r) + " element " + std::to_string(e) + ": wrong bytes (want " +
               std::to_string(want) + ")";
  }
  bool across = false;
  for (const cclabStepEvent_t& ev : rec[0].events)
    across |= ev.sendPeer >= 0 && ev.sendPeer / per_machine != 0;
  if (count > 0 && !across) return "rank 0 sent nothing to another machine (not NVLS-Tree?)";
  return "";
}

std::string dispatch(const Comms& comms, int pm, ncclDataType_t t, ncclRedOp_t op, size_t count, bool ip) {
  switch (t) {
    case ncclInt32: return run_case<int32_t>(comms, pm, t, op, count, ip);
    case ncclUint32: return run_case<uint32_t>(comms, pm, t, op, count, ip);
    case ncclInt64: return run_case<int64_t>(comms, pm, t, op, count, ip);
    case ncclUint64: return run_case<uint64_t>(comms, pm, t, op, count, ip);
    case ncclFloat16: return run_case<cclab::half_t>(comms, pm, t, op, count, ip);
    case ncclFloat32: return run_case<float>(comms, pm, t, op, count, ip);
    case ncclFloat64: return run_case<double>(comms, pm, t, op, count, ip);
    case ncclBfloat16: return run_case<cclab::bfloat16_t>(comms, pm, t, op, count, ip);
    default: return "unknown type";
  }
}

struct TypeCase {
  ncclDataType_t type;
  bool minmax;  // NVLS reduces min and max too (not float / double)
};
const TypeCase kReducing[] = {{ncclInt32, true}, {ncclUint32, true}, {ncclInt64, true}, {ncclUint64, true},
                              {ncclFloat16, true}, {ncclBfloat16, true}, {ncclFloat32, false}, {ncclFloat64, false}};

class NvlsTreeMatrix : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(NvlsTreeMatrix, ByteExact) {
  const int machines = std::get<0>(GetParam()), nch = std::get<1>(GetParam());
  Env env{{"CCLAB_TOPO", "dgx-h100:" + std::to_string(machines)}, {"NCCL_ALGO", "NVLSTree"},
          {"NCCL_NVLS_CHUNKSIZE", "4096"}, {"CCLAB_MIN_CHANNEL_BYTES", "512"}, {"CCLAB_TIMEOUT", "120"}};
  const int n = 8 * machines;
  Comms comms(n, nch);
  ASSERT_NE(comms[0], nullptr);
  int cases = 0, failures = 0;
  for (size_t count : {size_t{1}, size_t{7}, size_t{4099}, size_t{100003}})
    for (bool ip : {false, true})
      for (const TypeCase& tc : kReducing)
        for (ncclRedOp_t op : {ncclSum, ncclMax, ncclMin}) {
          if (op != ncclSum && !tc.minmax) continue;
          // The large count on a few types only: the schedule is the same for every type.
          if (count > 5000 && tc.type != ncclFloat32 && tc.type != ncclBfloat16 && tc.type != ncclUint64) continue;
          ++cases;
          const std::string err = dispatch(comms, 8, tc.type, op, count, ip);
          if (!err.empty() && ++failures <= 10)
            ADD_FAILURE() << "type " << tc.type << " op " << op << " count " << count << (ip ? " in place" : "")
                          << " machines " << machines << " ch " << nch << ": " << err;
        }
  EXPECT_EQ(failures, 0) << "of " << cases << " cases";
}

INSTANTIATE_TEST_SUITE_P(Machines, NvlsTreeMatrix, ::testing::Combine(::testing::Values(2, 3), ::testing::Values(1, 2)),
                         [](const auto& info) {
                           return "m" + std::to_string(std::get<0>(info.param)) + "_ch" +
                                  std::to_string(std::get<1>(info.param));
                         });

// Two DGX H100 with 4 NICs each (the second NIC of every PCIe switch removed from the preset's XML): NCCL
// runs NVLS-Tree with a head per NIC, 4 of each machine's 8 ranks (the GPUs the NVLS search pairs with a
// NIC). The others only scatter into and gather from the heads' FIFOs; results are byte-exact, only heads
// send across machines, and every head does.
TEST(NvlsTree, FewerNicsThanGpus) {
  cclab::Topology topo;
  std::string err;
  ASSERT_TRUE(cclab::make_preset_topology("dgx-h100", 2, cclab::FabricSpec{}, &topo, &err)) << err;
  const std::string full = "/tmp/cclab_nvls_nics8_" + std::to_string(getpid()) + ".xml";
  ASSERT_TRUE(cclab::write_topology_xml(topo, full, &err)) << err;
  std::string xml;
  {
    FILE* f = std::fopen(full.c_str(), "r");
    ASSERT_NE(f, nullptr);
    char buf[4096];
    for (size_t k; (k = std::fread(buf, 1, sizeof buf, f)) > 0;) xml.append(buf, k);
    std::fclose(f);
    std::remove(full.c_str());
  }
  const std::regex second_nic(R"(\n *<pci [^>]*class="0x020700"[^>]*>\n *<nic>\n *<net name="mlx5_[1357]"[^\n]*\n *</nic>\n *</pci>)");
  const std::string four = std::regex_replace(xml, second_nic, "");
  size_t nics = 0;
  for (size_t at = four.find("<nic>"); at != std::string::npos; at = four.find("<nic>", at + 1)) ++nics;
  ASSERT_EQ(nics, 4u) << "the preset's XML changed shape";
  const std::string path = "/tmp/cclab_nvls_nics4_" + std::to_string(getpid()) + ".xml";
  {
    FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fwrite(four.data(), 1, four.size(), f);
    std::fclose(f);
  }
  Env env{{"NCCL_TOPO_FILE", path}, {"NCCL_ALGO", "NVLSTree"}, {"NCCL_NVLS_CHUNKSIZE", "4096"},
          {"CCLAB_MIN_CHANNEL_BYTES", "512"}, {"CCLAB_TIMEOUT", "120"}};
  for (int nch : {1, 2}) {
    Comms comms(16, nch);
    ASSERT_NE(comms[0], nullptr);
    for (size_t count : {size_t{7}, size_t{100003}})
      for (bool ip : {false, true}) {
        EXPECT_EQ(run_case<float>(comms, 8, ncclFloat32, ncclSum, count, ip), "") << "count " << count << " ch " << nch;
        EXPECT_EQ(run_case<int32_t>(comms, 8, ncclInt32, ncclMax, count, ip), "") << "count " << count << " ch " << nch;
      }
    // Who crosses machines: record one more call on every rank.
    const size_t count = 50001;
    std::vector<std::vector<cclab::bfloat16_t>> buf(16, std::vector<cclab::bfloat16_t>(count, make<cclab::bfloat16_t>(1)));
    std::vector<cclab_test::EventRecorder> rec(16);
    for (int r = 0; r < 16; ++r) cclabCommSetObserver(comms[r], cclab_test::EventRecorder::fn, &rec[r]);
    run_ranks(16, [&](int r) {
      NCCL_OK(ncclAllReduce(buf[r].data(), buf[r].data(), count, ncclBfloat16, ncclSum, comms[r], nullptr));
    });
    int heads = 0;
    for (int r = 0; r < 16; ++r) {
      cclabCommSetObserver(comms[r], nullptr, nullptr);
      EXPECT_EQ(cclab::to_float(buf[r][count - 1]), 16.0f) << "rank " << r;
      bool across = false;
      for (const cclabStepEvent_t& ev : rec[r].events)
        across |= ev.sendPeer >= 0 && ev.sendPeer / 8 != r / 8;
      heads += across ? 1 : 0;
      // The GPUs the search pairs with the remaining NICs (mlx5_0, 2, 4, 6): 0, 2, 4, 6 of each machine.
      EXPECT_EQ(across, r % 2 == 0) << "rank " << r << (across ? " crossed machines" : " did not cross machines");
    }
    EXPECT_EQ(heads, 8);
  }
  std::remove(path.c_str());
}

// NCCL's choice on two DGX H100: Tree/LL128 at 1 MiB, NVLS-Tree at 16 MiB (float sum).
TEST(NvlsTree, DefaultChoiceOnTwoDgxH100) {
  Env env{{"CCLAB_TOPO", "dgx-h100:2"}, {"CCLAB_TIMEOUT", "120"}};
  Comms comms(16, 2);
  for (size_t count : {size_t{1} << 18, size_t{4} << 20}) {
    std::vector<std::vector<float>> buf(16, std::vector<float>(count, 1.0f));
    std::vector<cclab_test::EventRecorder> rec(16);
    for (int r = 0; r < 16; ++r) cclabCommSetObserver(comms[r], cclab_test::EventRecorder::fn, &rec[r]);
    run_ranks(16, [&](int r) {
      NCCL_OK(ncclAllReduce(buf[r].data(), buf[r].data(), count, ncclFloat32, ncclSum, comms[r], nullptr));
    });
    for (int r = 0; r < 16; ++r) cclabCommSetObserver(comms[r], nullptr, nullptr);
    EXPECT_EQ(buf[11][count - 1], 16.0f);
    // NVLS-Tree scatters into the machine's NVLS FIFOs: local copies (the switch's multicast is part of
    // the head's tree step; Tree has no local copy, and NVLS alone does not span two machines).
    bool mc = false;
    for (const cclabStepEvent_t& e : rec[3].events) mc |= e.prim == cclabPrimLocalCopy && e.sendPeer < 0 && e.recvPeer < 0;
    EXPECT_EQ(mc, count > (size_t{1} << 18)) << "count " << count;
  }
}

// NVLS-Tree's last loop is cut as NCCL's NVLS_TREE kernel cuts it (all_reduce.h lastChunkCount): parts
// aligned to 16 bytes, not to NVLS's 16 KiB. 1100 floats on two DGX H100, one channel: one loop of 4400
// bytes over 8 heads, so every rank scatters (and gathers) 560 bytes to each of heads 0-6 and 480 to head 7 (with
// 512-byte parts: 1024 to heads 0-3, 304 to head 4, none to 5-7). Byte-exact as ever.
TEST(NvlsTree, LastLoopSplitsIn16ByteParts) {
  Env env{{"CCLAB_TOPO", "dgx-h100:2"}, {"NCCL_ALGO", "NVLSTree"}, {"CCLAB_TIMEOUT", "120"}};
  Comms comms(16, 1);
  ASSERT_NE(comms[0], nullptr);
  const std::string err = dispatch(comms, 8, ncclFloat32, ncclSum, 1100, false);
  ASSERT_EQ(err, "");
  std::vector<cclab_test::EventRecorder> rec(16);
  std::vector<std::vector<float>> buf(16, std::vector<float>(1100, 1.0f));
  for (int r = 0; r < 16; ++r) cclabCommSetObserver(comms[r], cclab_test::EventRecorder::fn, &rec[r]);
  run_ranks(16, [&](int r) {
    NCCL_OK(ncclAllReduce(buf[r].data(), buf[r].data(), 1100, ncclFloat32, ncclSum, comms[r], nullptr));
  });
  for (int r = 0; r < 16; ++r) cclabCommSetObserver(comms[r], nullptr, nullptr);
  EXPECT_EQ(buf[9][1099], 16.0f);
  for (int r : {0, 13}) {
    // The copies into the heads' FIFOs (scatter) and out of them (gather), a pair per head part, by offset.
    std::map<uint64_t, std::vector<size_t>> copies;
    for (const cclabStepEvent_t& e : rec[r].events)
      if (e.prim == cclabPrimLocalCopy && e.sendPeer < 0 && e.recvPeer < 0) copies[e.offset].push_back(e.bytes);
    std::vector<size_t> parts;
    for (const auto& c : copies) {
      EXPECT_EQ(c.second.size(), 2u) << "rank " << r << " offset " << c.first;
      EXPECT_EQ(c.second.front(), c.second.back()) << "rank " << r << " offset " << c.first;
      parts.push_back(c.second.front());
    }
    EXPECT_EQ(parts, (std::vector<size_t>{560, 560, 560, 560, 560, 560, 560, 480})) << "rank " << r;
  }
}

// A product has no multimem reduction: with NCCL_ALGO=NVLSTree nothing is left to run.
TEST(NvlsTree, UnsupportedOpLeavesNothingToRun) {
  Env env{{"CCLAB_TOPO", "dgx-h100:2"}, {"NCCL_ALGO", "NVLSTree"}, {"CCLAB_TIMEOUT", "30"}};
  Comms comms(16, 1);
  std::vector<float> a(64, 1.0f), b(64);
  std::vector<ncclResult_t> res(16);
  run_ranks(16, [&](int r) { res[r] = ncclAllReduce(a.data(), b.data(), 64, ncclFloat32, ncclProd, comms[r], nullptr); });
  EXPECT_EQ(res[0], ncclInvalidUsage);
}

}  // namespace
