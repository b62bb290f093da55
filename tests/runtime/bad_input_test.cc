// Bad input: every API argument error returns ncclInvalidArgument or ncclInvalidUsage at once (no
// crash, no hang, nothing launched) and ncclGetLastError names the offending argument. Ranks that
// disagree on a count fail with an error instead of hanging (CCLAB_TIMEOUT bounds it, set by ctest).
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "comm_fixture.h"

using cclab_test::Comms;
using cclab_test::run_ranks;

namespace {

// Asserts that `call` failed with `code` and that the thread's last error contains every one of
// `words` (the argument's name and, where useful, its value).
#define EXPECT_BAD(call, code, ...)                                                        \
  do {                                                                                     \
    ncclResult_t _r = (call);                                                              \
    EXPECT_EQ(_r, code) << #call;                                                          \
    const std::string _msg = ncclGetLastError(nullptr);                                    \
    for (const char* _w : {__VA_ARGS__})                                                   \
      EXPECT_NE(_msg.find(_w), std::string::npos) << #call << ": \"" << _msg << "\" lacks \"" << _w << "\""; \
  } while (0)

class BadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    comms_ = std::make_unique<Comms>(2, 1);
    for (int r = 0; r < 2; ++r) ASSERT_NE((*comms_)[r], nullptr);
    c0_ = (*comms_)[0];
  }
  std::unique_ptr<Comms> comms_;
  ncclComm_t c0_ = nullptr;
  std::vector<float> a_ = std::vector<float>(4096, 1.0f), b_ = std::vector<float>(4096, 0.0f);
};

TEST_F(BadInput, NullBuffers) {
  EXPECT_BAD(ncclAllReduce(nullptr, b_.data(), 16, ncclFloat, ncclSum, c0_, nullptr), ncclInvalidArgument,
             "ncclAllReduce", "sendbuff");
  EXPECT_BAD(ncclAllReduce(a_.data(), nullptr, 16, ncclFloat, ncclSum, c0_, nullptr), ncclInvalidArgument,
             "recvbuff");
  EXPECT_BAD(ncclAllGather(nullptr, b_.data(), 16, ncclFloat, c0_, nullptr), ncclInvalidArgument, "ncclAllGather",
             "sendbuff");
  EXPECT_BAD(ncclReduceScatter(a_.data(), nullptr, 16, ncclFloat, ncclSum, c0_, nullptr), ncclInvalidArgument,
             "ncclReduceScatter", "recvbuff");
  EXPECT_BAD(ncclReduce(nullptr, b_.data(), 16, ncclFloat, ncclSum, 0, c0_, nullptr), ncclInvalidArgument,
             "sendbuff");
  // The root's sendbuff is what a Broadcast reads (rank 0 is the root here).
  EXPECT_BAD(ncclBroadcast(nullptr, b_.data(), 16, ncclFloat, 0, c0_, nullptr), ncclInvalidArgument, "sendbuff");
  EXPECT_BAD(ncclSend(nullptr, 16, ncclFloat, 1, c0_, nullptr), ncclInvalidArgument, "ncclSend", "sendbuff");
  EXPECT_BAD(ncclRecv(nullptr, 16, ncclFloat, 1, c0_, nullptr), ncclInvalidArgument, "ncclRecv", "recvbuff");
}

TEST_F(BadInput, InvalidDatatypeAndOp) {
  EXPECT_BAD(ncclAllReduce(a_.data(), b_.data(), 16, static_cast<ncclDataType_t>(99), ncclSum, c0_, nullptr),
             ncclInvalidArgument, "datatype", "99");
  EXPECT_BAD(ncclAllReduce(a_.data(), b_.data(), 16, static_cast<ncclDataType_t>(-1), ncclSum, c0_, nullptr),
             ncclInvalidArgument, "datatype", "-1");
  EXPECT_BAD(ncclAllGather(a_.data(), b_.data(), 16, static_cast<ncclDataType_t>(99), c0_, nullptr),
             ncclInvalidArgument, "datatype");
  EXPECT_BAD(ncclSend(a_.data(), 16, static_cast<ncclDataType_t>(99), 1, c0_, nullptr), ncclInvalidArgument,
             "datatype");
  EXPECT_BAD(ncclAllReduce(a_.data(), b_.data(), 16, ncclFloat, static_cast<ncclRedOp_t>(77), c0_, nullptr),
             ncclInvalidArgument, "op 77");
  EXPECT_BAD(ncclReduce(a_.data(), b_.data(), 16, ncclFloat, static_cast<ncclRedOp_t>(-3), 0, c0_, nullptr),
             ncclInvalidArgument, "op -3");
  EXPECT_BAD(ncclReduceScatter(a_.data(), b_.data(), 16, ncclFloat, static_cast<ncclRedOp_t>(77), c0_, nullptr),
             ncclInvalidArgument, "op 77");
}

TEST_F(BadInput, PreMulSumWithAnotherDatatype) {
  float scalar = 2.0f;
  ncclRedOp_t op;
  NCCL_OK(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat32, ncclScalarHostImmediate, c0_));
  EXPECT_BAD(ncclAllReduce(a_.data(), b_.data(), 16, ncclInt32, op, c0_, nullptr), ncclInvalidArgument, "datatype");
  EXPECT_BAD(ncclAllReduce(a_.data(), b_.data(), 16, ncclFloat64, op, c0_, nullptr), ncclInvalidArgument,
             "datatype");
  NCCL_OK(ncclRedOpDestroy(op, c0_));
  // Destroyed, the op is no longer valid even with its own datatype.
  EXPECT_BAD(ncclAllReduce(a_.data(), b_.data(), 16, ncclFloat32, op, c0_, nullptr), ncclInvalidArgument, "op");
  // An op created on one communicator means nothing on another.
  NCCL_OK(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat32, ncclScalarHostImmediate, c0_));
  EXPECT_BAD(ncclAllReduce(a_.data(), b_.data(), 16, ncclFloat32, op, (*comms_)[1], nullptr), ncclInvalidArgument,
             "op");
  NCCL_OK(ncclRedOpDestroy(op, c0_));
  // A datatype or residence that is not one.
  EXPECT_BAD(ncclRedOpCreatePreMulSum(&op, &scalar, static_cast<ncclDataType_t>(99), ncclScalarHostImmediate, c0_),
             ncclInvalidArgument, "datatype 99");
  EXPECT_BAD(ncclRedOpCreatePreMulSum(&op, &scalar, ncclFloat32, static_cast<ncclScalarResidence_t>(7), c0_),
             ncclInvalidArgument, "residence 7");
}

TEST_F(BadInput, NegativeCounts) {
  // A negative int passed as the size_t count becomes huge; the buffers are valid pointers, so only
  // the count can be blamed.
  for (size_t count : {static_cast<size_t>(-1), static_cast<size_t>(-4096)}) {
    SCOPED_TRACE(count);
    EXPECT_BAD(ncclAllReduce(a_.data(), b_.data(), count, ncclFloat, ncclSum, c0_, nullptr), ncclInvalidArgument,
               "count");
    EXPECT_BAD(ncclBroadcast(a_.data(), b_.data(), count, ncclInt8, 0, c0_, nullptr), ncclInvalidArgument, "count");
    EXPECT_BAD(ncclReduce(a_.data(), b_.data(), count, ncclUint8, ncclMax, 0, c0_, nullptr), ncclInvalidArgument,
               "count");
    EXPECT_BAD(ncclAllGather(a_.data(), b_.data(), count, ncclInt8, c0_, nullptr), ncclInvalidArgument, "count");
    EXPECT_BAD(ncclReduceScatter(a_.data(), b_.data(), count, ncclFloat64, ncclSum, c0_, nullptr),
               ncclInvalidArgument, "count");
    EXPECT_BAD(ncclSend(a_.data(), count, ncclFloat, 1, c0_, nullptr), ncclInvalidArgument, "count");
    EXPECT_BAD(ncclRecv(b_.data(), count, ncclFloat, 1, c0_, nullptr), ncclInvalidArgument, "count");
    EXPECT_BAD(ncclAlltoAll(a_.data(), b_.data(), count, ncclFloat, c0_, nullptr), ncclInvalidArgument, "count");
  }
  // The largest count that is still a sane byte size times nranks passes the check only when the
  // product does not overflow: 2^61 int8 elements times 2 ranks is 2^62 bytes, the limit.
  EXPECT_BAD(ncclAllGather(a_.data(), b_.data(), (static_cast<size_t>(1) << 61) + 1, ncclInt8, c0_, nullptr),
             ncclInvalidArgument, "count");
}

TEST_F(BadInput, RootAndPeerOutOfRange) {
  EXPECT_BAD(ncclBroadcast(a_.data(), b_.data(), 16, ncclFloat, 2, c0_, nullptr), ncclInvalidArgument, "root 2",
             "nranks 2");
  EXPECT_BAD(ncclBroadcast(a_.data(), b_.data(), 16, ncclFloat, -1, c0_, nullptr), ncclInvalidArgument, "root -1");
  EXPECT_BAD(ncclBcast(a_.data(), 16, ncclFloat, 7, c0_, nullptr), ncclInvalidArgument, "root 7");
  EXPECT_BAD(ncclReduce(a_.data(), b_.data(), 16, ncclFloat, ncclSum, 2, c0_, nullptr), ncclInvalidArgument,
             "root 2");
  EXPECT_BAD(ncclGather(a_.data(), b_.data(), 16, ncclFloat, 5, c0_, nullptr), ncclInvalidArgument, "root 5");
  EXPECT_BAD(ncclScatter(a_.data(), b_.data(), 16, ncclFloat, -2, c0_, nullptr), ncclInvalidArgument, "root -2");
  EXPECT_BAD(ncclSend(a_.data(), 16, ncclFloat, 2, c0_, nullptr), ncclInvalidArgument, "peer 2");
  EXPECT_BAD(ncclRecv(b_.data(), 16, ncclFloat, -1, c0_, nullptr), ncclInvalidArgument, "peer -1");
}

// In-place AlltoAll: refused with several ranks (blocks for other ranks would be overwritten while
// they are sent), naming the rank count; with one rank the only block is the rank's own and the call
// runs (nccl-tests' alltoall_perf calls it in place on one GPU), leaving the buffer as it was.
TEST_F(BadInput, InPlaceAlltoAllNeedsOneRank) {
  EXPECT_BAD(ncclAlltoAll(a_.data(), a_.data(), 16, ncclFloat, c0_, nullptr), ncclInvalidArgument, "in-place",
             "2 ranks");
  Comms one(1, 1);
  ASSERT_NE(one[0], nullptr);
  std::vector<float> buf(64);
  for (size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<float>(i) * 0.5f;
  const std::vector<float> before = buf;
  NCCL_OK(ncclAlltoAll(buf.data(), buf.data(), buf.size(), ncclFloat, one[0], nullptr));
  EXPECT_EQ(buf, before);
}

// Buffers that overlap but are not in place as NCCL defines it are refused, naming both buffers and
// the rule; in place itself, and buffers side by side, are accepted (checked before anything runs, so
// one rank of two can be asked alone).
TEST_F(BadInput, OverlappingBuffersThatAreNotInPlace) {
  float* a = a_.data();  // 4096 floats; the communicator has 2 ranks, this is rank 0
  // ReduceScatter of 16: in place is recvbuff == sendbuff + 0 x 16 for rank 0; one float later overlaps.
  EXPECT_BAD(ncclReduceScatter(a, a + 1, 16, ncclFloat, ncclSum, c0_, nullptr), ncclInvalidArgument, "ncclReduceScatter",
             "overlap", "not in place", "recvbuff == sendbuff + rank");
  // AllGather: rank 0's sendbuff must be recvbuff + 0; inside the output elsewhere is refused.
  EXPECT_BAD(ncclAllGather(a + 16, a, 16, ncclFloat, c0_, nullptr), ncclInvalidArgument, "ncclAllGather", "overlap",
             "sendbuff == recvbuff + rank");
  // AllReduce, Broadcast at the root, Reduce at the root: shifted by one element.
  EXPECT_BAD(ncclAllReduce(a, a + 1, 16, ncclFloat, ncclSum, c0_, nullptr), ncclInvalidArgument, "ncclAllReduce",
             "overlap", "sendbuff == recvbuff");
  EXPECT_BAD(ncclBroadcast(a + 1, a, 16, ncclFloat, 0, c0_, nullptr), ncclInvalidArgument, "ncclBroadcast", "overlap");
  EXPECT_BAD(ncclReduce(a, a + 8, 16, ncclFloat, ncclSum, 0, c0_, nullptr), ncclInvalidArgument, "ncclReduce",
             "overlap");
  // Accepted (and run, with rank 1 calling the same): in place, and adjacent buffers.
  run_ranks(2, [&](int r) {
    ncclComm_t c = (*comms_)[r];
    std::vector<float> buf(64, 1.0f);
    float* b = buf.data();
    NCCL_OK(ncclReduceScatter(b, b + r * 16, 16, ncclFloat, ncclSum, c, nullptr));   // in place
    NCCL_OK(ncclAllGather(b + r * 16, b, 16, ncclFloat, c, nullptr));                // in place
    NCCL_OK(ncclAllReduce(b, b + 16, 16, ncclFloat, ncclSum, c, nullptr));          // side by side
    NCCL_OK(ncclReduce(b, b, 16, ncclFloat, ncclSum, 0, c, nullptr));               // in place
  });
}

// A send and its receive of different sizes: the receiver stops at its first slice with a size mismatch
// naming both sizes (every slice records the whole send's size, ConnFifoHeader::xfers), whichever is
// larger, on several channels and on one; nothing waits for a time-out. Before, a send larger than its
// receive returned success on both ranks and left the rest in the FIFO.
TEST_F(BadInput, SendAndReceiveOfDifferentSizesFail) {
  for (int nch : {1, 2})
    for (const auto& sz : {std::pair<size_t, size_t>{2 << 20, 1 << 20}, {1 << 20, 2 << 20}, {1000, 1 << 20}}) {
      SCOPED_TRACE(std::to_string(nch) + " channels, send " + std::to_string(sz.first) + " B, receive " +
                   std::to_string(sz.second) + " B");
      Comms two(2, nch);
      std::vector<std::vector<char>> buf(2, std::vector<char>(std::max(sz.first, sz.second), 1));
      std::vector<ncclResult_t> res(2, ncclSuccess);
      std::string msg;
      const double t0 = cclab_test::now_s();
      run_ranks(2, [&](int r) {
        res[r] = r == 0 ? ncclSend(buf[0].data(), sz.first, ncclUint8, 1, two[0], nullptr)
                        : ncclRecv(buf[1].data(), sz.second, ncclUint8, 0, two[1], nullptr);
        if (r == 1) msg = ncclGetLastError(two[1]);
      });
      EXPECT_LT(cclab_test::now_s() - t0, 20.0) << "a time-out, not the size check, ended it";
      EXPECT_EQ(res[1], ncclInvalidUsage) << msg;
      const std::string want = "expected " + std::to_string(sz.second) + " bytes from rank 0";
      EXPECT_NE(msg.find(want), std::string::npos) << msg;
      EXPECT_NE(msg.find("received " + std::to_string(sz.first)), std::string::npos) << msg;
      EXPECT_NE(msg.find("same count and datatype"), std::string::npos) << msg;
    }
}

TEST_F(BadInput, NullCommAndInvalidStream) {
  EXPECT_BAD(ncclAllReduce(a_.data(), b_.data(), 16, ncclFloat, ncclSum, nullptr, nullptr), ncclInvalidArgument,
             "comm", "NULL");
  EXPECT_BAD(ncclBroadcast(a_.data(), b_.data(), 16, ncclFloat, 0, nullptr, nullptr), ncclInvalidArgument, "comm");
  EXPECT_BAD(ncclSend(a_.data(), 16, ncclFloat, 0, nullptr, nullptr), ncclInvalidArgument, "comm");
  int v = 0;
  EXPECT_BAD(ncclCommCount(nullptr, &v), ncclInvalidArgument, "comm");
  EXPECT_BAD(ncclCommUserRank(nullptr, &v), ncclInvalidArgument, "comm");
  // A pointer that is no communicator at all is refused without being dereferenced for anything
  // but a registry lookup.
  EXPECT_BAD(ncclAllReduce(a_.data(), b_.data(), 16, ncclFloat, ncclSum, reinterpret_cast<ncclComm_t>(a_.data()),
                           nullptr),
             ncclInvalidArgument, "comm", "not a valid communicator");

  auto bogus = reinterpret_cast<cudaStream_t>(static_cast<uintptr_t>(0x1234));
  EXPECT_BAD(ncclAllReduce(a_.data(), b_.data(), 16, ncclFloat, ncclSum, c0_, bogus), ncclInvalidArgument, "stream");
  EXPECT_BAD(ncclSend(a_.data(), 16, ncclFloat, 1, c0_, bogus), ncclInvalidArgument, "stream");
  EXPECT_BAD(cclabStreamSynchronize(bogus), ncclInvalidArgument, "stream");
  // A destroyed stream is as invalid as a made-up one.
  cudaStream_t s;
  NCCL_OK(cclabStreamCreate(&s));
  NCCL_OK(cclabStreamDestroy(s));
  EXPECT_BAD(ncclAllReduce(a_.data(), b_.data(), 16, ncclFloat, ncclSum, c0_, s), ncclInvalidArgument, "stream");
}

TEST(BadInit, NranksAndRank) {
  ncclUniqueId id;
  NCCL_OK(ncclGetUniqueId(&id));
  ncclComm_t c = reinterpret_cast<ncclComm_t>(0x1);
  EXPECT_BAD(ncclCommInitRank(&c, 0, id, 0), ncclInvalidArgument, "nranks", "0");
  EXPECT_EQ(c, nullptr) << "a failed init must leave *comm NULL";
  EXPECT_BAD(ncclCommInitRank(&c, -3, id, 0), ncclInvalidArgument, "nranks", "-3");
  EXPECT_BAD(ncclCommInitRank(&c, 2, id, 2), ncclInvalidArgument, "rank 2", "nranks 2");
  EXPECT_BAD(ncclCommInitRank(&c, 2, id, -1), ncclInvalidArgument, "rank -1");
  EXPECT_BAD(ncclCommInitRank(nullptr, 2, id, 0), ncclInvalidArgument, "comm");
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  EXPECT_BAD(ncclCommInitRankConfig(&c, 4, id, 4, &cfg), ncclInvalidArgument, "rank 4");
  cfg.blocking = 7;
  EXPECT_BAD(ncclCommInitRankConfig(&c, 1, id, 0, &cfg), ncclInvalidArgument, "blocking");

  ncclComm_t comms[2];
  EXPECT_BAD(ncclCommInitAll(comms, 0, nullptr), ncclInvalidArgument, "ndev", "0");
  EXPECT_BAD(ncclCommInitAll(comms, -1, nullptr), ncclInvalidArgument, "ndev");
  EXPECT_BAD(ncclCommInitAll(nullptr, 2, nullptr), ncclInvalidArgument, "comms");
  const int dup[2] = {1, 1};
  EXPECT_BAD(ncclCommInitAll(comms, 2, dup), ncclInvalidUsage, "devlist");
}

TEST(BadInit, UseAfterDestroy) {
  ncclComm_t c;
  NCCL_OK(ncclCommInitAll(&c, 1, nullptr));
  std::vector<float> a(16, 1.0f), b(16, 0.0f);
  NCCL_OK(ncclAllReduce(a.data(), b.data(), 16, ncclFloat, ncclSum, c, nullptr));
  EXPECT_EQ(b[3], 1.0f);
  NCCL_OK(ncclCommDestroy(c));
  EXPECT_BAD(ncclAllReduce(a.data(), b.data(), 16, ncclFloat, ncclSum, c, nullptr), ncclInvalidArgument, "comm",
             "destroyed");
  EXPECT_BAD(ncclSend(a.data(), 16, ncclFloat, 0, c, nullptr), ncclInvalidArgument, "comm");
  int n = 0;
  EXPECT_BAD(ncclCommCount(c, &n), ncclInvalidArgument, "comm");
  EXPECT_BAD(ncclCommDestroy(c), ncclInvalidArgument, "comm");
  EXPECT_BAD(ncclCommFinalize(c), ncclInvalidArgument, "comm");
}

// An argument error inside a group fails the group: ncclGroupEnd returns it and nothing runs, so the
// valid operation queued before it never touches its buffers.
TEST_F(BadInput, ErrorInsideGroupLaunchesNothing) {
  std::vector<float> out0(16, -7.0f), out1(16, -7.0f);
  NCCL_OK(ncclGroupStart());
  EXPECT_EQ(ncclAllReduce(a_.data(), out0.data(), 16, ncclFloat, ncclSum, c0_, nullptr), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(a_.data(), out1.data(), 16, ncclFloat, ncclSum, (*comms_)[1], nullptr), ncclSuccess);
  EXPECT_EQ(ncclAllReduce(a_.data(), nullptr, 16, ncclFloat, ncclSum, c0_, nullptr), ncclInvalidArgument);
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidArgument);
  EXPECT_EQ(out0, std::vector<float>(16, -7.0f));
  EXPECT_EQ(out1, std::vector<float>(16, -7.0f));
  // The failure does not stick to the next group.
  NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclAllReduce(a_.data(), out0.data(), 16, ncclFloat, ncclSum, c0_, nullptr));
  NCCL_OK(ncclAllReduce(a_.data(), out1.data(), 16, ncclFloat, ncclSum, (*comms_)[1], nullptr));
  NCCL_OK(ncclGroupEnd());
  EXPECT_EQ(out0, std::vector<float>(16, 2.0f));
  EXPECT_EQ(out1, std::vector<float>(16, 2.0f));
}

// Rank 0 passes 1000 elements, rank 1 2000, to the same AllReduce. Both calls must return an error
// (not hang, not crash), at once: the slices disagree in size, which the receiver sees in the FIFO's
// size table, and the rank that saw it stops the other (core/comm.h, poison_connections), which names it;
// failing that, CCLAB_TIMEOUT ends the wait and names the step.
TEST_F(BadInput, MismatchedCountsAcrossRanks) {
  std::vector<ncclResult_t> res(2, ncclSuccess);
  std::vector<std::string> msg(2);
  std::vector<std::vector<float>> in(2, std::vector<float>(2000, 1.0f)), out(2, std::vector<float>(2000, 0.0f));
  const double t0 = cclab_test::now_s();
  run_ranks(2, [&](int r) {
    res[r] = ncclAllReduce(in[r].data(), out[r].data(), r == 0 ? 1000 : 2000, ncclFloat, ncclSum, (*comms_)[r],
                           nullptr);
    msg[r] = ncclGetLastError((*comms_)[r]);
  });
  EXPECT_LT(cclab_test::now_s() - t0, 5.0) << "a detected mismatch must not leave the other rank waiting";
  for (int r = 0; r < 2; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r) + ": " + msg[r]);
    EXPECT_NE(res[r], ncclSuccess);
    const bool mismatch = msg[r].find("same count") != std::string::npos && msg[r].find("bytes") != std::string::npos;
    const bool stopped = msg[r].find("rank " + std::to_string(1 - r) + " failed in this operation and stopped it") !=
                         std::string::npos;
    EXPECT_TRUE(mismatch || stopped);
    EXPECT_NE(msg[r].find("step"), std::string::npos);
    EXPECT_NE(msg[r].find("rank " + std::to_string(r)), std::string::npos);
    ncclResult_t async = ncclSuccess;
    NCCL_OK(ncclCommGetAsyncError((*comms_)[r], &async));
    EXPECT_EQ(async, res[r]) << "the failure is also the communicator's asynchronous error";
  }
  // At least one rank must have seen the real cause rather than only the other's silence.
  EXPECT_TRUE(msg[0].find("same count") != std::string::npos || msg[1].find("same count") != std::string::npos)
      << msg[0] << " / " << msg[1];
}

TEST(Errors, ErrorStringForEveryResult) {
  std::set<std::string> seen;
  for (int r = ncclSuccess; r < ncclNumResults; ++r) {
    const char* s = ncclGetErrorString(static_cast<ncclResult_t>(r));
    ASSERT_NE(s, nullptr) << r;
    EXPECT_STRNE(s, "") << r;
    EXPECT_STRNE(s, "unknown result code") << r;
    EXPECT_TRUE(seen.insert(s).second) << "result " << r << " shares its string \"" << s << "\"";
  }
  EXPECT_STREQ(ncclGetErrorString(ncclSuccess), "no error");
  EXPECT_NE(std::string(ncclGetErrorString(ncclInvalidArgument)).find("invalid argument"), std::string::npos);
  EXPECT_NE(std::string(ncclGetErrorString(ncclInvalidUsage)).find("invalid usage"), std::string::npos);
  EXPECT_NE(std::string(ncclGetErrorString(ncclInProgress)).find("in progress"), std::string::npos);
  EXPECT_STREQ(ncclGetErrorString(ncclNumResults), "unknown result code");
  EXPECT_STREQ(ncclGetErrorString(static_cast<ncclResult_t>(-1)), "unknown result code");
  EXPECT_STREQ(ncclGetErrorString(static_cast<ncclResult_t>(1000)), "unknown result code");
}

TEST(Errors, Version) {
  int v = 0;
  NCCL_OK(ncclGetVersion(&v));
  EXPECT_EQ(v, NCCL_VERSION_CODE);
  EXPECT_EQ(v, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH));
  EXPECT_EQ(v, NCCL_VERSION(2, 28, 9));
  EXPECT_BAD(ncclGetVersion(nullptr), ncclInvalidArgument, "version");
}

// cclabGetDeviceCount / cclabGetDeviceName: the host backend has no devices to choose (0), names its
// "device" "cclab host" with no bus id; bad arguments are errors naming the argument.
TEST(Devices, HostBackendReportsNoDevices) {
  cclabBackend_t b = cclabBackendCuda;
  NCCL_OK(cclabGetBackend(&b));
  ASSERT_EQ(b, cclabBackendHost) << "ctest pins CCLAB_BACKEND=host";
  int n = -1;
  NCCL_OK(cclabGetDeviceCount(&n));
  EXPECT_EQ(n, 0);
  char name[32], bus[16];
  std::memset(bus, 'x', sizeof(bus));
  NCCL_OK(cclabGetDeviceName(3, name, sizeof(name), bus, sizeof(bus)));
  EXPECT_STREQ(name, "cclab host");
  EXPECT_STREQ(bus, "");
  char tiny[6];
  NCCL_OK(cclabGetDeviceName(0, tiny, sizeof(tiny), nullptr, 0));
  EXPECT_STREQ(tiny, "cclab") << "cut to fit, NUL-terminated";
  NCCL_OK(cclabSetDevice(7));  // nothing to choose: accepted and ignored
  EXPECT_BAD(cclabGetDeviceCount(nullptr), ncclInvalidArgument, "cclabGetDeviceCount", "count");
  EXPECT_BAD(cclabGetDeviceName(-1, name, sizeof(name), bus, sizeof(bus)), ncclInvalidArgument, "device -1");
  EXPECT_BAD(cclabGetDeviceName(0, nullptr, 8, bus, sizeof(bus)), ncclInvalidArgument, "name");
  EXPECT_BAD(cclabGetDeviceName(0, name, sizeof(name), nullptr, 4), ncclInvalidArgument, "pciBusId");
  EXPECT_BAD(cclabGetDeviceName(0, name, -2, bus, sizeof(bus)), ncclInvalidArgument, "name", "-2");
  EXPECT_BAD(cclabSetDevice(-1), ncclInvalidArgument, "device -1");
}

// The CUDA backend reports the machine's GPUs; where it cannot run (no GPU, as in CI, or built without
// CUDA) asking for it is an error that says why, and the host backend's answers stand.
TEST(Devices, CudaBackendCountsTheGpusOrSaysWhyNot) {
  const ncclResult_t r = cclabSetBackend(cclabBackendCuda);
  int n = -1;
  char name[128] = {}, bus[32] = {};
  if (r == ncclSuccess) {
    NCCL_OK(cclabGetDeviceCount(&n));
    EXPECT_GE(n, 1);
    NCCL_OK(cclabGetDeviceName(0, name, sizeof(name), bus, sizeof(bus)));
    EXPECT_STRNE(name, "");
    EXPECT_EQ(std::strlen(bus), 12u) << bus << ": a PCI bus id is dddd:bb:dd.f";
    EXPECT_BAD(cclabGetDeviceName(n, name, sizeof(name), bus, sizeof(bus)), ncclInvalidArgument, "does not exist");
  } else {
    EXPECT_EQ(r, ncclInvalidArgument);
    const std::string why = ncclGetLastError(nullptr);
    EXPECT_NE(why.find("CUDA backend cannot run here"), std::string::npos) << why;
    NCCL_OK(cclabGetDeviceCount(&n));
    EXPECT_EQ(n, 0);
  }
  NCCL_OK(cclabSetBackend(cclabBackendHost));
  NCCL_OK(cclabGetDeviceCount(&n));
  EXPECT_EQ(n, 0);
}

}  // namespace
