// The correctness matrix: every collective x datatype x op x rank count x count x in/out-of-place x
// channel count, byte-exact against a simple reference that folds the ranks' inputs in rank order.
// Inputs are chosen so every reduction order gives the same bits (small integers for sums, +-1 and a
// few 2s for products, one non-zero contribution per element for averages and pre-multiplied sums),
// so the reference's order and the ring's order must agree exactly.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <tuple>

#include <strings.h>

#include "comm_fixture.h"
#include "kernels/dtypes.h"
#include "kernels/reduce_ops.h"

using cclab_test::Comms;

namespace {

enum class Coll { kAllReduce, kBroadcast, kBcast, kReduce, kAllGather, kReduceScatter, kAlltoAll, kGather, kScatter,
                  kSendRecv };
const char* coll_name(Coll c) {
  static const char* names[] = {"AllReduce", "Broadcast", "Bcast", "Reduce", "AllGather", "ReduceScatter",
                                "AlltoAll", "Gather", "Scatter", "SendRecv"};
  return names[static_cast<int>(c)];
}
bool reduces(Coll c) { return c == Coll::kAllReduce || c == Coll::kReduce || c == Coll::kReduceScatter; }

// Test ops: the five built-ins and a PreMulSum created per communicator.
enum TestOp { kSum = 0, kProd, kMax, kMin, kAvg, kPreMulSum, kNumTestOps };
const char* op_name(int o) {
  static const char* names[] = {"sum", "prod", "max", "min", "avg", "premulsum"};
  return names[o];
}

const ncclDataType_t kTypes[] = {ncclInt8,   ncclUint8,   ncclInt32,    ncclUint32,     ncclInt64,     ncclUint64,
                                 ncclFloat16, ncclFloat32, ncclFloat64, ncclBfloat16, ncclFloat8e4m3, ncclFloat8e5m2};

bool is_float(ncclDataType_t t) { return t >= ncclFloat16; }
bool is_unsigned(ncclDataType_t t) { return t == ncclUint8 || t == ncclUint32 || t == ncclUint64; }

// What rank r contributes at element e: order-independent by construction (see file comment).
double gen(ncclDataType_t t, int op, int r, int nranks, size_t e) {
  uint64_t h = (e + 1) * 0x9e3779b97f4a7c15ull ^ (static_cast<uint64_t>(r) + 7) * 0xc2b2ae3d27d4eb4full;
  h ^= h >> 29;
  const int small = static_cast<int>(h % 9) - 4;  // -4..4
  const bool fp8 = t == ncclFloat8e4m3 || t == ncclFloat8e5m2;
  switch (op) {
    case kSum:
      if (is_unsigned(t)) return h % 4;
      return fp8 ? (small % 2) : small;  // fp8: -1..1 keeps every partial sum exact
    case kProd:
      if (h % 11 == 0) return 2;
      return (!is_unsigned(t) && h % 3 == 0) ? -1 : 1;
    case kMax:
    case kMin:
      return is_unsigned(t) ? h % 200 : static_cast<double>(static_cast<int>(h % 201) - 100);
    default:  // kAvg, kPreMulSum
      if (!is_float(t)) return is_unsigned(t) ? h % 4 : small;
      return (e % nranks == static_cast<size_t>(r)) ? (small == 0 ? 1 : small) : 0;
  }
}

template <typename T>
T from_double(double v) {
  return cclab::from_compute<T>(static_cast<cclab::ComputeType<T>>(v));
}

// A per-comm PreMulSum scalar of 3 (in the datatype).
template <typename T>
T premul_scalar() { return from_double<T>(3.0); }

cclab::RedOpArg redop_arg(ncclDataType_t t, int op, int nranks) {
  using cclab::RedOpKind;
  switch (op) {
    case kSum: return {RedOpKind::kSum, 0, nranks};
    case kProd: return {RedOpKind::kProd, 0, nranks};
    case kMax: return {RedOpKind::kMax, 0, nranks};
    case kMin: return {RedOpKind::kMin, 0, nranks};
    default: return {RedOpKind::kSum, 0, nranks};  // built below for avg / premulsum
  }
}

// Reference reduction of element values v[0..n) (one per rank) in rank order.
template <typename T>
T fold(ncclDataType_t t, int op, const std::vector<T>& v) {
  const int n = static_cast<int>(v.size());
  cclab::RedOpArg arg = redop_arg(t, op, n);
  if (op == kAvg) {
    if (is_float(t))
      arg = {cclab::RedOpKind::kPreMulSum, cclab::scalar_to_bits(from_double<T>(1.0 / n)), n};
    else
      arg = {cclab::RedOpKind::kSumPostDiv, 0, n};
  } else if (op == kPreMulSum) {
    arg = {cclab::RedOpKind::kPreMulSum, cclab::scalar_to_bits(premul_scalar<T>()), n};
  }
  const cclab::RedOp<T> f(arg);
  T acc = f.pre_op(v[0]);
  for (int r = 1; r < n; ++r) acc = f(acc, f.pre_op(v[r]));
  return f.post_op(acc);
}

struct Case {
  Coll coll;
  ncclDataType_t type;
  int op;
  size_t count;
  bool in_place;
  int root;
};

std::string describe(const Case& c, int nranks, int nch) {
  std::ostringstream os;
  os << coll_name(c.coll) << " type=" << c.type << " op=" << (reduces(c.coll) ? op_name(c.op) : "-")
     << " count=" << c.count << (c.in_place ? " in-place" : " out-of-place") << " root=" << c.root
     << " nranks=" << nranks << " nchannels=" << nch;
  return os.str();
}

// Runs one case on all ranks (grouped from this thread, NULL streams) and checks every byte of
// every rank's receive buffer. Returns "" or a description of the first mismatch.
template <typename T>
std::string run_case(const Comms& comms, int nch, const Case& c) {
  const int n = comms.size();
  const size_t count = c.count;
  // Buffer sizes in elements.
  size_t send_elems = count, recv_elems = count;
  switch (c.coll) {
    case Coll::kAllGather: recv_elems = count * n; break;
    case Coll::kReduceScatter: send_elems = count * n; break;
    case Coll::kAlltoAll: send_elems = recv_elems = count * n; break;
    case Coll::kGather: recv_elems = count * n; break;
    case Coll::kScatter: send_elems = count * n; break;
    default: break;
  }
  const uint8_t kSentinel = 0xA5;
  std::vector<std::vector<T>> input(n), sendb(n), recvb(n);
  for (int r = 0; r < n; ++r) {
    input[r].resize(send_elems);
    for (size_t e = 0; e < send_elems; ++e) input[r][e] = from_double<T>(gen(c.type, c.op, r, n, e));
    recvb[r].resize(recv_elems + 1);  // +1: a guard element that nothing may touch
    memset(recvb[r].data(), kSentinel, recvb[r].size() * sizeof(T));
    sendb[r] = input[r];
  }
  // In place: the send buffer lives inside the receive buffer where NCCL defines it.
  std::vector<const void*> sp(n);
  std::vector<void*> rp(n);
  for (int r = 0; r < n; ++r) {
    rp[r] = recvb[r].data();
    sp[r] = sendb[r].data();
    if (!c.in_place) continue;
    T* rbase = recvb[r].data();
    switch (c.coll) {
      case Coll::kAllReduce: case Coll::kBroadcast: case Coll::kBcast: case Coll::kReduce: case Coll::kSendRecv:
        std::copy(input[r].begin(), input[r].end(), rbase);
        sp[r] = rbase;
        break;
      case Coll::kAllGather: case Coll::kGather:
        std::copy(input[r].begin(), input[r].end(), rbase + r * count);
        sp[r] = rbase + r * count;
        break;
      case Coll::kReduceScatter: case Coll::kScatter:
        // recvbuff = sendbuff + rank * count
        sendb[r].resize(send_elems);
        rp[r] = sendb[r].data() + r * count;
        break;
      default: break;
    }
  }
  std::vector<ncclRedOp_t> ops(n, ncclSum);
  T scalar = premul_scalar<T>();
  for (int r = 0; r < n; ++r) {
    if (c.op == kPreMulSum && reduces(c.coll)) {
      if (ncclRedOpCreatePreMulSum(&ops[r], &scalar, c.type, ncclScalarHostImmediate, comms[r]) != ncclSuccess)
        return std::string("ncclRedOpCreatePreMulSum failed: ") + ncclGetLastError(nullptr);
    } else {
      ops[r] = static_cast<ncclRedOp_t>(c.op < kPreMulSum ? c.op : 0);
    }
  }
  if (ncclGroupStart() != ncclSuccess) return "ncclGroupStart failed";
  for (int r = 0; r < n; ++r) {
    ncclResult_t res = ncclSuccess;
    ncclComm_t cm = comms[r];
    switch (c.coll) {
      case Coll::kAllReduce: res = ncclAllReduce(sp[r], rp[r], count, c.type, ops[r], cm, nullptr); break;
      case Coll::kBroadcast: res = ncclBroadcast(sp[r], rp[r], count, c.type, c.root, cm, nullptr); break;
      case Coll::kBcast:
        if (!c.in_place) std::copy(input[r].begin(), input[r].end(), recvb[r].data());
        res = ncclBcast(rp[r], count, c.type, c.root, cm, nullptr);
        break;
      case Coll::kReduce: res = ncclReduce(sp[r], rp[r], count, c.type, ops[r], c.root, cm, nullptr); break;
      case Coll::kAllGather: res = ncclAllGather(sp[r], rp[r], count, c.type, cm, nullptr); break;
      case Coll::kReduceScatter: res = ncclReduceScatter(sp[r], rp[r], count, c.type, ops[r], cm, nullptr); break;
      case Coll::kAlltoAll: res = ncclAlltoAll(sp[r], rp[r], count, c.type, cm, nullptr); break;
      case Coll::kGather: res = ncclGather(sp[r], rp[r], count, c.type, c.root, cm, nullptr); break;
      case Coll::kScatter: res = ncclScatter(sp[r], rp[r], count, c.type, c.root, cm, nullptr); break;
      case Coll::kSendRecv:
        res = ncclSend(sp[r], count, c.type, (r + 1) % n, cm, nullptr);
        if (res == ncclSuccess) res = ncclRecv(rp[r], count, c.type, (r - 1 + n) % n, cm, nullptr);
        break;
    }
    if (res != ncclSuccess) {
      ncclGroupEnd();
      return std::string("call failed on rank ") + std::to_string(r) + ": " + ncclGetLastError(nullptr);
    }
  }
  if (ncclGroupEnd() != ncclSuccess) return std::string("ncclGroupEnd failed: ") + ncclGetLastError(nullptr);
  for (int r = 0; r < n; ++r)
    if (c.op == kPreMulSum && reduces(c.coll)) ncclRedOpDestroy(ops[r], comms[r]);

  // Expected receive buffers.
  std::vector<T> vals(n);
  for (int r = 0; r < n; ++r) {
    // The bytes this rank's receive region must hold; nullopt-like: defined[e] == false means untouched.
    const T* got = static_cast<const T*>(rp[r]);
    auto expect_at = [&](size_t e, T want) -> std::string {
      if (memcmp(&got[e], &want, sizeof(T)) != 0) {
        std::ostringstream os;
        os << "rank " << r << " element " << e << ": got bits 0x" << std::hex;
        uint64_t g = 0, w = 0;
        memcpy(&g, &got[e], sizeof(T));
        memcpy(&w, &want, sizeof(T));
        os << g << " want 0x" << w;
        return os.str();
      }
      return "";
    };
    std::string err;
    switch (c.coll) {
      case Coll::kAllReduce:
      case Coll::kReduce:
        if (c.coll == Coll::kReduce && r != c.root) break;
        for (size_t e = 0; e < count && err.empty(); ++e) {
          for (int q = 0; q < n; ++q) vals[q] = input[q][e];
          err = expect_at(e, fold(c.type, c.op, vals));
        }
        break;
      case Coll::kBroadcast: case Coll::kBcast:
        for (size_t e = 0; e < count && err.empty(); ++e) err = expect_at(e, input[c.root][e]);
        break;
      case Coll::kAllGather:
        for (size_t e = 0; e < count * n && err.empty(); ++e) err = expect_at(e, input[e / count][e % count]);
        break;
      case Coll::kReduceScatter:
        for (size_t e = 0; e < count && err.empty(); ++e) {
          for (int q = 0; q < n; ++q) vals[q] = input[q][r * count + e];
          err = expect_at(e, fold(c.type, c.op, vals));
        }
        break;
      case Coll::kAlltoAll:
        for (size_t e = 0; e < count * n && err.empty(); ++e)
          err = expect_at(e, input[e / count][r * count + e % count]);
        break;
      case Coll::kGather:
        if (r != c.root) break;
        for (size_t e = 0; e < count * n && err.empty(); ++e) err = expect_at(e, input[e / count][e % count]);
        break;
      case Coll::kScatter:
        for (size_t e = 0; e < count && err.empty(); ++e) err = expect_at(e, input[c.root][r * count + e]);
        break;
      case Coll::kSendRecv:
        for (size_t e = 0; e < count && err.empty(); ++e) err = expect_at(e, input[(r - 1 + n) % n][e]);
        break;
    }
    if (!err.empty()) return err;
    // Nothing outside the defined region may change: the guard element, and the whole buffer on
    // ranks that receive nothing (non-root Reduce / Gather).
    if (!c.in_place) {
      const bool untouched = (c.coll == Coll::kReduce || c.coll == Coll::kGather) && r != c.root;
      const size_t from = untouched ? 0 : recv_elems;
      const auto* bytes = reinterpret_cast<const uint8_t*>(recvb[r].data());
      for (size_t b = from * sizeof(T); b < recvb[r].size() * sizeof(T); ++b)
        if (bytes[b] != kSentinel) return "rank " + std::to_string(r) + " wrote outside its receive region at byte " +
                                          std::to_string(b);
      if (send_elems > 0 && memcmp(sendb[r].data(), input[r].data(), send_elems * sizeof(T)) != 0)
        return "rank " + std::to_string(r) + " send buffer was modified";
    }
  }
  return "";
}

std::string run_typed_case(const Comms& comms, int nch, const Case& c) {
  switch (c.type) {
    case ncclInt8: return run_case<int8_t>(comms, nch, c);
    case ncclUint8: return run_case<uint8_t>(comms, nch, c);
    case ncclInt32: return run_case<int32_t>(comms, nch, c);
    case ncclUint32: return run_case<uint32_t>(comms, nch, c);
    case ncclInt64: return run_case<int64_t>(comms, nch, c);
    case ncclUint64: return run_case<uint64_t>(comms, nch, c);
    case ncclFloat16: return run_case<cclab::half_t>(comms, nch, c);
    case ncclFloat32: return run_case<float>(comms, nch, c);
    case ncclFloat64: return run_case<double>(comms, nch, c);
    case ncclBfloat16: return run_case<cclab::bfloat16_t>(comms, nch, c);
    case ncclFloat8e4m3: return run_case<cclab::fp8_e4m3_t>(comms, nch, c);
    default: return run_case<cclab::fp8_e5m2_t>(comms, nch, c);
  }
}

// NCCL_ALGO=PAT (the PAT variant of this matrix): NCCL's PAT ReduceScatter does not run scaling
// reductions (ncclAvg, PreMulSum), so with nothing else enabled such a call is refused on more than one
// rank, as NCCL refuses it; everything else must run and match.
bool pat_only() {
  const char* a = std::getenv("NCCL_ALGO");
  return a != nullptr && strcasecmp(a, "PAT") == 0;
}

std::string run_typed(const Comms& comms, int nch, const Case& c) {
  if (pat_only() && c.coll == Coll::kReduceScatter && (c.op == kAvg || c.op == kPreMulSum) && comms.size() > 1) {
    const std::string err = run_typed_case(comms, nch, c);
    if (err.find("no algorithm/protocol is available") == std::string::npos)
      return "PAT-only ReduceScatter with a scaling op was not refused: " + (err.empty() ? "it ran" : err);
    return "";
  }
  return run_typed_case(comms, nch, c);
}

const Coll kColls[] = {Coll::kAllReduce, Coll::kBroadcast, Coll::kBcast,    Coll::kReduce,  Coll::kAllGather,
                       Coll::kReduceScatter, Coll::kAlltoAll, Coll::kGather, Coll::kScatter, Coll::kSendRecv};

bool supports_in_place(Coll c) { return c != Coll::kAlltoAll && c != Coll::kSendRecv; }

// CCLAB_TEST_COLLS=AllReduce,Reduce restricts the matrix to those collectives (the tree variants
// run AllReduce only: the other collectives have no tree and their ring runs are covered already).
bool coll_selected(Coll c) {
  const char* env = std::getenv("CCLAB_TEST_COLLS");
  if (env == nullptr || *env == '\0') return true;
  const std::string list = std::string(",") + env + ",";
  return list.find(std::string(",") + coll_name(c) + ",") != std::string::npos;
}

class SmallMatrix : public ::testing::TestWithParam<std::tuple<int, int>> {};

// Every collective x datatype x op x in/out-of-place at counts 0, 1, 7 and 4099 (which spreads over
// several channels with CCLAB_MIN_CHANNEL_BYTES=512), for one (nranks, nchannels) pair.
TEST_P(SmallMatrix, ByteExact) {
  const int n = std::get<0>(GetParam()), nch = std::get<1>(GetParam());
  Comms comms(n, nch);
  int cases = 0, failures = 0;
  for (Coll coll : kColls)
    if (coll_selected(coll))
    for (ncclDataType_t t : kTypes)
      for (int op = 0; op < (reduces(coll) ? kNumTestOps : 1); ++op)
        for (size_t count : {size_t{0}, size_t{1}, size_t{7}, size_t{4099}})
          for (int ip = 0; ip < (supports_in_place(coll) ? 2 : 1); ++ip) {
            Case c{coll, t, op, count, ip == 1, (cases * 7 + 3) % n};
            std::string err = run_typed(comms, nch, c);
            ++cases;
            if (!err.empty() && ++failures <= 10) ADD_FAILURE() << describe(c, n, nch) << ": " << err;
          }
  EXPECT_EQ(failures, 0) << "of " << cases << " cases";
}

INSTANTIATE_TEST_SUITE_P(Ranks, SmallMatrix,
                         ::testing::Combine(::testing::Values(1, 2, 3, 4, 5, 8), ::testing::Values(1, 2, 4)),
                         [](const auto& info) {
                           return "n" + std::to_string(std::get<0>(info.param)) + "_ch" +
                                  std::to_string(std::get<1>(info.param));
                         });

// Large counts (a prime near 1e6 and 1<<20): a rotation through collectives, types, ops, rank
// counts, channel counts and in-place, so every value of every axis appears at a large count.
TEST(LargeMatrix, ByteExact) {
  const int kRanks[] = {2, 3, 4, 5, 8};
  const int kChannels[] = {1, 2, 4};
  std::map<std::pair<int, int>, std::unique_ptr<Comms>> pool;
  int failures = 0;
  const int kCases = 40;
  for (int i = 0; i < kCases; ++i) {
    const Coll coll = kColls[i % 10];
    if (!coll_selected(coll)) continue;
    const ncclDataType_t t = kTypes[(i * 5) % 12];
    const int op = reduces(coll) ? (i / 2) % kNumTestOps : 0;
    const int n = kRanks[i % 5], nch = kChannels[(i / 5) % 3];
    const size_t count = (i / 10) % 2 ? (size_t{1} << 20) : size_t{999983};
    const bool ip = supports_in_place(coll) && (i / 3) % 2;
    auto& comms = pool[{n, nch}];
    if (!comms) comms = std::make_unique<Comms>(n, nch);
    Case c{coll, t, op, count, ip, i % n};
    std::string err = run_typed(*comms, nch, c);
    if (!err.empty() && ++failures <= 10) ADD_FAILURE() << describe(c, n, nch) << ": " << err;
  }
  EXPECT_EQ(failures, 0);
}

// ncclScalarDevice: the PreMulSum scalar is read where and when the operation runs (on a GPU, by the
// kernel, after what the stream ran before it), not when it is enqueued. Ranks 0 and 1 enqueue a
// plain all_reduce and then the PreMulSum one on their streams; the first cannot finish before rank 2
// joins it, so the second has not started when the scalar changes from 3 to 5. Only then does rank 2
// enqueue both. Every rank must pre-multiply by 5.
TEST(PreMulSum, ScalarInMemoryIsReadWhenTheOperationRuns) {
  const int n = 3;
  const size_t count = 4099;
  Comms comms(n, 2);
  float* scalar = nullptr;
  ASSERT_EQ(ncclMemAlloc(reinterpret_cast<void**>(&scalar), sizeof(float)), ncclSuccess);
  *scalar = 3.0f;
  std::vector<ncclRedOp_t> ops(n);
  std::vector<cudaStream_t> streams(n);
  std::vector<std::vector<float>> in(n, std::vector<float>(count)), first(n, std::vector<float>(count)),
      second(n, std::vector<float>(count));
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(ncclRedOpCreatePreMulSum(&ops[r], scalar, ncclFloat32, ncclScalarDevice, comms[r]), ncclSuccess);
    ASSERT_EQ(cclabStreamCreate(&streams[r]), ncclSuccess);
    for (size_t i = 0; i < count; ++i) in[r][i] = static_cast<float>((i + r) % 7);
  }
  auto enqueue = [&](int r) {
    EXPECT_EQ(ncclAllReduce(in[r].data(), first[r].data(), count, ncclFloat32, ncclSum, comms[r], streams[r]),
              ncclSuccess);
    EXPECT_EQ(ncclAllReduce(in[r].data(), second[r].data(), count, ncclFloat32, ops[r], comms[r], streams[r]),
              ncclSuccess);
  };
  enqueue(0);
  enqueue(1);
  *scalar = 5.0f;
  enqueue(2);
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(cclabStreamSynchronize(streams[r]), ncclSuccess) << ncclGetLastError(comms[r]);
    EXPECT_EQ(cclabStreamDestroy(streams[r]), ncclSuccess);
    EXPECT_EQ(ncclRedOpDestroy(ops[r], comms[r]), ncclSuccess);
  }
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < count; ++i) {
      const float sum = static_cast<float>(i % 7 + (i + 1) % 7 + (i + 2) % 7);
      ASSERT_EQ(first[r][i], sum) << "rank " << r << " element " << i;
      ASSERT_EQ(second[r][i], 5.0f * sum) << "rank " << r << " element " << i;
    }
  EXPECT_EQ(ncclMemFree(scalar), ncclSuccess);
}

}  // namespace
