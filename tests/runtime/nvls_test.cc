// NVLS on the host backend (kernels/nvls.h): with CCLAB_TOPO=dgx-h100 (an NVSwitch machine of sm90) and
// NCCL_ALGO=NVLS, AllReduce, ReduceScatter and AllGather run the NVLS schedule - every rank scatters into
// the NVLS memory, each head load-reduces its part over every rank's copy and multicasts it, every rank
// gathers - and their results are byte-exact for every datatype and op NVLS supports (NCCL's
// ncclNvlsSupported; AllGather every type), odd counts, in place and out of place, one and several
// channels, with a small NCCL_NVLS_CHUNKSIZE so that a call wraps the FIFOs many times. The reference
// folds the ranks in rank order, as the emulated switch does, on inputs whose every order gives the same
// bits. Also: unsupported ops and NCCL_NVLS_ENABLE=0 leave NCCL_ALGO=NVLS nothing to run (a clear error),
// and the default choice on dgx-h100 is NVLS for a large AllReduce, as NCCL's.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "base/param.h"
#include "../base/test_env.h"
#include "comm_fixture.h"
#include "kernels/dtypes.h"
#include "kernels/reduce_ops.h"

using cclab_test::Comms;
using cclab_test::run_ranks;

namespace {

// Variables set for the object's lifetime, restored after (tests/base/test_env.h).
using Env = cclab::testing_env::ScopedEnv;

// One element of type T from a small integer (exact in every type NVLS reduces).
template <typename T>
T make(int v) {
  if constexpr (std::is_same<T, cclab::half_t>::value || std::is_same<T, cclab::bfloat16_t>::value ||
                std::is_same<T, cclab::fp8_e4m3_t>::value || std::is_same<T, cclab::fp8_e5m2_t>::value)
    return cclab::from_float<T>(static_cast<float>(v));
  else
    return static_cast<T>(v);
}

// Rank r's value at element e: -4..4 (0..3 for unsigned types), so every partial sum is exact.
template <typename T>
int gen(int r, size_t e) {
  const uint64_t h = ((e + 1) * 0x9e3779b97f4a7c15ull) ^ ((static_cast<uint64_t>(r) + 7) * 0xc2b2ae3d27d4eb4full);
  const int v = static_cast<int>((h ^ (h >> 29)) % 9) - 4;
  if (std::is_same<T, cclab::fp8_e4m3_t>::value || std::is_same<T, cclab::fp8_e5m2_t>::value) return v % 2;
  return std::is_unsigned<T>::value ? (v + 4) % 4 : v;
}

enum class Coll { kAllReduce, kReduceScatter, kAllGather };
const char* name_of(Coll c) { return c == Coll::kAllReduce ? "AllReduce" : c == Coll::kReduceScatter ? "ReduceScatter" : "AllGather"; }

int fold(ncclRedOp_t op, int a, int b) { return op == ncclSum ? a + b : op == ncclMax ? (a > b ? a : b) : (a < b ? a : b); }

// Runs one case on every rank; returns "" or what went wrong. Checks the bytes of every rank's output
// and that the NVLS schedule ran (a head step of this rank's own part: sendPeer == recvPeer == rank for
// AllReduce, the head's load-reduce for ReduceScatter, its multicast for AllGather).
template <typename T>
std::string run_case(const Comms& comms, ncclDataType_t type, Coll coll, ncclRedOp_t op, size_t count, bool in_place,
                     int heads) {
  const int n = comms.size();
  const size_t in_elems = coll == Coll::kReduceScatter ? count * n : count;
  const size_t out_elems = coll == Coll::kAllGather ? count * n : count;
  const size_t buf_elems = in_elems > out_elems ? in_elems : out_elems;
  std::vector<std::vector<T>> in(n, std::vector<T>(in_elems)), buf(n, std::vector<T>(buf_elems, make<T>(99)));
  for (int r = 0; r < n; ++r)
    for (size_t e = 0; e < in_elems; ++e) in[r][e] = make<T>(gen<T>(r, e));
  std::vector<cclab_test::EventRecorder> rec(n);
  for (int r = 0; r < n; ++r) cclabCommSetObserver(comms[r], cclab_test::EventRecorder::fn, &rec[r]);
  std::vector<ncclResult_t> res(n, ncclSuccess);
  run_ranks(n, [&](int r) {
    T* out = buf[r].data();
    const T* src = in[r].data();
    if (in_place) {
      // NCCL's in-place layouts: AllGather's input is the rank's block of the output, ReduceScatter's
      // output the rank's block of the input.
      T* place = coll == Coll::kAllGather ? out + static_cast<size_t>(r) * count : out;
      std::memcpy(place, src, in_elems * sizeof(T));
      src = place;
      if (coll == Coll::kReduceScatter) out = buf[r].data() + static_cast<size_t>(r) * count;
    }
    if (coll == Coll::kAllReduce) res[r] = ncclAllReduce(src, out, count, type, op, comms[r], nullptr);
    else if (coll == Coll::kReduceScatter) res[r] = ncclReduceScatter(src, out, count, type, op, comms[r], nullptr);
    else res[r] = ncclAllGather(src, out, count, type, comms[r], nullptr);
  });
  for (int r = 0; r < n; ++r) cclabCommSetObserver(comms[r], nullptr, nullptr);
  for (int r = 0; r < n; ++r)
    if (res[r] != ncclSuccess) return "rank " + std::to_string(r) + ": " + ncclGetErrorString(res[r]);
  for (int r = 0; r < n; ++r) {
    const T* out = buf[r].data() + (in_place && coll == Coll::kReduceScatter ? static_cast<size_t>(r) * count : 0);
    for (size_t e = 0; e < out_elems; ++e) {
      int want;
      if (coll == Coll::kAllGather) {
        want = gen<T>(static_cast<int>(e / count), e % count);
      } else {
        const size_t at = coll == Coll::kReduceScatter ? static_cast<size_t>(r) * count + e : e;
        want = gen<T>(0, at);
        for (int q = 1; q < n; ++q) want = fold(op, want, gen<T>(q, at));
      }
      const T w = make<T>(want);
      if (std::memcmp(&out[e], &w, sizeof(T)) != 0)
        return "rank " + std::to_string(r) + " element " + std::to_string(e) + ": wrong bytes (want " +
               std::to_string(want) + ")";
    }
    bool head = false;
    for (const cclabStepEvent_t& ev : rec[r].events) {
      if (coll == Coll::kAllReduce) head |= ev.prim == cclabPrimRecvReduceCopySend && ev.sendPeer == r && ev.recvPeer == r;
      if (coll == Coll::kReduceScatter) head |= ev.prim == cclabPrimRecvReduceCopy && ev.recvPeer == r;
      if (coll == Coll::kAllGather) head |= ev.prim == cclabPrimCopySend && ev.sendPeer == r;
    }
    if (count > 0 && head != (r < heads))
      return "rank " + std::to_string(r) + (head ? " ran an NVLS head step" : " ran no NVLS head step");
  }
  return "";
}

struct TypeCase {
  ncclDataType_t type;
  bool minmax;  // NVLS reduces min and max too (not float / double)
};
const TypeCase kReducing[] = {{ncclInt32, true}, {ncclUint32, true}, {ncclInt64, true}, {ncclUint64, true},
                              {ncclFloat16, true}, {ncclBfloat16, true}, {ncclFloat32, false}, {ncclFloat64, false}};
const ncclDataType_t kAllTypes[] = {ncclInt8,    ncclUint8,   ncclInt32,   ncclUint32,    ncclInt64,      ncclUint64,
                                    ncclFloat16, ncclFloat32, ncclFloat64, ncclBfloat16, ncclFloat8e4m3, ncclFloat8e5m2};

// heads: the ranks 0 .. heads-1 that take the heads' steps (every rank where the machine has 32 GPUs or fewer).
std::string dispatch(const Comms& comms, ncclDataType_t t, Coll coll, ncclRedOp_t op, size_t count, bool ip,
                     int heads = 32) {
  switch (t) {
    case ncclInt8: return run_case<int8_t>(comms, t, coll, op, count, ip, heads);
    case ncclUint8: return run_case<uint8_t>(comms, t, coll, op, count, ip, heads);
    case ncclInt32: return run_case<int32_t>(comms, t, coll, op, count, ip, heads);
    case ncclUint32: return run_case<uint32_t>(comms, t, coll, op, count, ip, heads);
    case ncclInt64: return run_case<int64_t>(comms, t, coll, op, count, ip, heads);
    case ncclUint64: return run_case<uint64_t>(comms, t, coll, op, count, ip, heads);
    case ncclFloat16: return run_case<cclab::half_t>(comms, t, coll, op, count, ip, heads);
    case ncclFloat32: return run_case<float>(comms, t, coll, op, count, ip, heads);
    case ncclFloat64: return run_case<double>(comms, t, coll, op, count, ip, heads);
    case ncclBfloat16: return run_case<cclab::bfloat16_t>(comms, t, coll, op, count, ip, heads);
    case ncclFloat8e4m3: return run_case<cclab::fp8_e4m3_t>(comms, t, coll, op, count, ip, heads);
    case ncclFloat8e5m2: return run_case<cclab::fp8_e5m2_t>(comms, t, coll, op, count, ip, heads);
    default: return "unknown type";
  }
}

class NvlsMatrix : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(NvlsMatrix, ByteExact) {
  Env env{{"CCLAB_TOPO", "dgx-h100"}, {"NCCL_ALGO", "NVLS"}, {"NCCL_NVLS_CHUNKSIZE", "4096"},
          {"CCLAB_MIN_CHANNEL_BYTES", "512"}, {"CCLAB_TIMEOUT", "60"}};
  const int n = std::get<0>(GetParam()), nch = std::get<1>(GetParam());
  Comms comms(n, nch);
  ASSERT_NE(comms[0], nullptr);
  int cases = 0, failures = 0;
  auto one = [&](ncclDataType_t t, Coll coll, ncclRedOp_t op, size_t count, bool ip) {
    ++cases;
    const std::string err = dispatch(comms, t, coll, op, count, ip);
    if (!err.empty() && ++failures <= 10)
      ADD_FAILURE() << name_of(coll) << " type " << t << " op " << op << " count " << count << (ip ? " in place" : "")
                    << " n " << n << " ch " << nch << ": " << err;
  };
  for (size_t count : {size_t{1}, size_t{7}, size_t{4099}, size_t{100003}})
    for (bool ip : {false, true}) {
      for (const TypeCase& tc : kReducing)
        for (ncclRedOp_t op : {ncclSum, ncclMax, ncclMin}) {
          if (op != ncclSum && !tc.minmax) continue;
          one(tc.type, Coll::kAllReduce, op, count, ip);
          one(tc.type, Coll::kReduceScatter, op, count, ip);
        }
      for (ncclDataType_t t : kAllTypes) one(t, Coll::kAllGather, ncclSum, count, ip);
    }
  EXPECT_EQ(failures, 0) << "of " << cases << " cases";
}

INSTANTIATE_TEST_SUITE_P(Ranks, NvlsMatrix, ::testing::Combine(::testing::Values(2, 3, 8), ::testing::Values(1, 2)),
                         [](const auto& info) {
                           return "n" + std::to_string(std::get<0>(info.param)) + "_ch" +
                                  std::to_string(std::get<1>(info.param));
                         });

// NVLS has no multimem reduction for products, averages, float min/max or 8-bit types (NCCL's
// ncclNvlsSupported): with NCCL_ALGO=NVLS nothing is left to run, and the call says so.
TEST(Nvls, UnsupportedOpsLeaveNothingToRun) {
  Env env{{"CCLAB_TOPO", "dgx-h100"}, {"NCCL_ALGO", "NVLS"}, {"CCLAB_TIMEOUT", "30"}};
  Comms comms(2, 1);
  std::vector<float> a(64, 1.0f), b(64);
  std::vector<int8_t> c(64, 1), d(64);
  std::vector<ncclResult_t> res(2);
  std::vector<std::string> msg(2);
  run_ranks(2, [&](int r) {
    res[r] = ncclAllReduce(a.data(), b.data(), 64, ncclFloat32, ncclProd, comms[r], nullptr);
    msg[r] = ncclGetLastError(nullptr);  // the error of this rank's thread
  });
  EXPECT_EQ(res[0], ncclInvalidUsage);
  EXPECT_NE(msg[0].find("no algorithm"), std::string::npos) << msg[0];
  run_ranks(2, [&](int r) { res[r] = ncclAllReduce(c.data(), d.data(), 64, ncclInt8, ncclSum, comms[r], nullptr); });
  EXPECT_EQ(res[0], ncclInvalidUsage);
  // AllGather needs no reduction: every type runs.
  run_ranks(2, [&](int r) { res[r] = ncclAllGather(c.data(), d.data(), 32, ncclInt8, comms[r], nullptr); });
  EXPECT_EQ(res[0], ncclSuccess) << ncclGetLastError(nullptr);
  EXPECT_EQ(res[1], ncclSuccess);
}

// NCCL_NVLS_ENABLE=0 turns NVLS off; a machine without NVSwitch (dgx-a100 is sm80) has none.
TEST(Nvls, DisabledOrAbsentLeavesNothingToRun) {
  for (const char* setup : {"off", "a100"}) {
    Env env{{"CCLAB_TOPO", setup[0] == 'o' ? "dgx-h100" : "dgx-a100"},
            {"NCCL_NVLS_ENABLE", setup[0] == 'o' ? "0" : "2"},
            {"NCCL_ALGO", "NVLS"},
            {"CCLAB_TIMEOUT", "30"}};
    Comms comms(2, 1);
    std::vector<float> a(64, 1.0f), b(64);
    std::vector<ncclResult_t> res(2);
    run_ranks(2, [&](int r) { res[r] = ncclAllReduce(a.data(), b.data(), 64, ncclFloat32, ncclSum, comms[r], nullptr); });
    EXPECT_EQ(res[0], ncclInvalidUsage) << setup;
  }
}

// The default choice on dgx-h100: a 64 MiB float sum all_reduce runs NVLS (NCCL's choice from a few MiB
// on), a 64 KiB one does not.
TEST(Nvls, DefaultChoiceOnDgxH100) {
  Env env{{"CCLAB_TOPO", "dgx-h100"}, {"CCLAB_TIMEOUT", "60"}};
  Comms comms(8, 2);
  for (size_t count : {size_t{16384}, size_t{16} << 20}) {
    std::vector<std::vector<float>> buf(8, std::vector<float>(count, 1.0f));
    std::vector<cclab_test::EventRecorder> rec(8);
    for (int r = 0; r < 8; ++r) cclabCommSetObserver(comms[r], cclab_test::EventRecorder::fn, &rec[r]);
    run_ranks(8, [&](int r) {
      NCCL_OK(ncclAllReduce(buf[r].data(), buf[r].data(), count, ncclFloat32, ncclSum, comms[r], nullptr));
    });
    for (int r = 0; r < 8; ++r) cclabCommSetObserver(comms[r], nullptr, nullptr);
    EXPECT_EQ(buf[5][count - 1], 8.0f);
    bool nvls = false;
    for (const cclabStepEvent_t& e : rec[0].events)
      nvls |= e.prim == cclabPrimRecvReduceCopySend && e.sendPeer == 0 && e.recvPeer == 0;
    EXPECT_EQ(nvls, count > 16384) << "count " << count;
  }
}

// The last loop of an NVLS AllReduce (what is left of a channel's share after whole loops of heads x
// chunk) is cut as NCCL's lastChunkSize on one machine: parts of 16 KiB (all_reduce.h), so the first heads
// take 16 KiB each and the last ones less or nothing. 20000 floats on 8 heads, one channel: a 16 KiB chunk,
// 80000 bytes in the only loop, heads 0-3 reduce 16384 bytes, head 4 14464 and heads 5-7 none (with parts
// of 512 bytes, as before, 10240 each and 8320 for head 7). Byte-exact as ever.
TEST(Nvls, LastLoopSplitsIn16KiBParts) {
  Env env{{"CCLAB_TOPO", "dgx-h100"}, {"NCCL_ALGO", "NVLS"}, {"CCLAB_TIMEOUT", "60"}};
  Comms comms(8, 1);
  ASSERT_NE(comms[0], nullptr);
  const size_t count = 20000;
  std::vector<std::vector<float>> buf(8, std::vector<float>(count));
  for (int r = 0; r < 8; ++r)
    for (size_t e = 0; e < count; ++e) buf[r][e] = static_cast<float>((e + static_cast<size_t>(r)) % 5);
  std::vector<cclab_test::EventRecorder> rec(8);
  for (int r = 0; r < 8; ++r) cclabCommSetObserver(comms[r], cclab_test::EventRecorder::fn, &rec[r]);
  run_ranks(8, [&](int r) {
    NCCL_OK(ncclAllReduce(buf[r].data(), buf[r].data(), count, ncclFloat32, ncclSum, comms[r], nullptr));
  });
  for (int r = 0; r < 8; ++r) cclabCommSetObserver(comms[r], nullptr, nullptr);
  for (size_t e = 0; e < count; ++e) {
    float want = 0;
    for (int q = 0; q < 8; ++q) want += static_cast<float>((e + static_cast<size_t>(q)) % 5);
    ASSERT_EQ(buf[3][e], want) << "element " << e;
  }
  const size_t want_bytes[8] = {16384, 16384, 16384, 16384, 14464, 0, 0, 0};
  for (int r = 0; r < 8; ++r) {
    size_t bytes = 0;
    int steps = 0;
    for (const cclabStepEvent_t& e : rec[r].events)
      if (e.prim == cclabPrimRecvReduceCopySend && e.sendPeer == r && e.recvPeer == r) {
        bytes += e.bytes;
        ++steps;
      }
    EXPECT_EQ(steps, 1) << "rank " << r;
    EXPECT_EQ(bytes, want_bytes[r]) << "rank " << r << "'s part of the loop";
  }
}

}  // namespace

// A 72-GPU NVLink domain (gb200-nvl72): NCCL runs NVLS AllReduce with 32 heads (NCCL_MAX_NVLS_ARITY), ranks
// 0..31; the other 40 scatter into and gather from the heads' FIFOs only. Byte-exact over odd counts, in
// place and out of place, one and two channels; exactly the 32 heads take switch steps (a reduce-and-
// multicast step with the rank as its own peer). AllGather and ReduceScatter have no NVLS beyond 32 ranks
// (NCCL's rule): NCCL_ALGO=NVLS leaves them nothing to run.
TEST(Nvls, ThirtyTwoHeadsOverSeventyTwoRanks) {
  Env env{{"CCLAB_TOPO", "gb200-nvl72"}, {"NCCL_ALGO", "NVLS"}, {"NCCL_NVLS_CHUNKSIZE", "4096"},
          {"CCLAB_MIN_CHANNEL_BYTES", "512"}, {"CCLAB_TIMEOUT", "120"}};
  const int n = 72;
  for (int nch : {1, 2}) {
    Comms comms(n, nch);
    ASSERT_NE(comms[0], nullptr);
    for (size_t count : {size_t{5}, size_t{40009}})
      for (bool ip : {false, true}) {
        EXPECT_EQ(dispatch(comms, ncclFloat32, Coll::kAllReduce, ncclSum, count, ip), "") << count << " ch " << nch;
        EXPECT_EQ(dispatch(comms, ncclInt64, Coll::kAllReduce, ncclMin, count, ip), "") << count << " ch " << nch;
      }
    const size_t count = 70001;
    std::vector<std::vector<float>> buf(n, std::vector<float>(count, 1.0f));
    std::vector<cclab_test::EventRecorder> rec(n);
    for (int r = 0; r < n; ++r) cclabCommSetObserver(comms[r], cclab_test::EventRecorder::fn, &rec[r]);
    run_ranks(n, [&](int r) {
      NCCL_OK(ncclAllReduce(buf[r].data(), buf[r].data(), count, ncclFloat32, ncclSum, comms[r], nullptr));
    });
    for (int r = 0; r < n; ++r) {
      cclabCommSetObserver(comms[r], nullptr, nullptr);
      EXPECT_EQ(buf[r][count - 1], 72.0f) << "rank " << r;
      bool head = false;
      for (const cclabStepEvent_t& e : rec[r].events)
        head |= e.prim == cclabPrimRecvReduceCopySend && e.sendPeer == r && e.recvPeer == r;
      EXPECT_EQ(head, r < 32) << "rank " << r;
    }
    std::vector<float> a(n * 8, 1.0f), b(n * 8);
    std::vector<ncclResult_t> res(n);
    run_ranks(n, [&](int r) { res[r] = ncclAllGather(a.data(), b.data(), 8, ncclFloat32, comms[r], nullptr); });
    for (int r = 0; r < n; ++r) EXPECT_EQ(res[r], ncclInvalidUsage) << "rank " << r;
  }
}
