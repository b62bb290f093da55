// ncclCommSplit and ncclCommShrink: who ends up in which communicator with which rank, and that the
// new communicators work, independently of each other and of their parent.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "comm_fixture.h"

using cclab_test::Comms;
using cclab_test::run_ranks;

namespace {

// Sums `value(rank in comm)` over comm with an AllReduce of `count` floats; returns what arrived.
std::vector<float> allreduce_of(ncclComm_t comm, size_t count, float value, ncclResult_t* res) {
  std::vector<float> in(count, value), out(count, -1.0f);
  *res = ncclAllReduce(in.data(), out.data(), count, ncclFloat, ncclSum, comm, nullptr);
  return out;
}

// Even and odd ranks form two communicators; keys = -rank reverse the order inside each.
TEST(Split, ColorsAndReversingKeys) {
  const int n = 6;
  Comms parent(n, 2);
  std::vector<ncclComm_t> sub(n, nullptr);
  std::vector<ncclResult_t> res(n);
  run_ranks(n, [&](int r) { res[r] = ncclCommSplit(parent[r], r % 2, -r, &sub[r], nullptr); });
  for (int r = 0; r < n; ++r) ASSERT_EQ(res[r], ncclSuccess) << "rank " << r;

  // Color c holds ranks c, c+2, c+4; the largest key goes last, so rank 4 (key -4) is first.
  for (int r = 0; r < n; ++r) {
    ASSERT_NE(sub[r], nullptr);
    int count = -1, rank = -1;
    NCCL_OK(ncclCommCount(sub[r], &count));
    NCCL_OK(ncclCommUserRank(sub[r], &rank));
    EXPECT_EQ(count, 3) << "rank " << r;
    EXPECT_EQ(rank, (n - 1 - r) / 2) << "parent rank " << r;
  }

  // Both sub-communicators reduce at the same time; each sees only its own members. The count
  // spans several FIFO chunks, so the two really run concurrently for a while.
  const size_t count = (5 << 20) / 4 + 3;
  std::vector<std::vector<float>> got(n);
  run_ranks(n, [&](int r) { got[r] = allreduce_of(sub[r], count, static_cast<float>(1 << r), &res[r]); });
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(res[r], ncclSuccess) << "rank " << r << ": " << ncclGetLastError(sub[r]);
    const float want = r % 2 == 0 ? 1 + 4 + 16 : 2 + 8 + 32;
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(got[r][i], want) << "rank " << r << " element " << i;
  }
  // The parent still works and still spans every rank.
  run_ranks(n, [&](int r) { got[r] = allreduce_of(parent[r], 1000, 1.0f, &res[r]); });
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(res[r], ncclSuccess);
    EXPECT_EQ(got[r], std::vector<float>(1000, static_cast<float>(n)));
  }
  for (ncclComm_t c : sub) NCCL_OK(ncclCommDestroy(c));
}

// Equal keys keep the parent's order; NCCL_SPLIT_NOCOLOR gives no communicator at all.
TEST(Split, NoColorGivesNull) {
  const int n = 4;
  Comms parent(n, 1);
  std::vector<ncclComm_t> sub(n, reinterpret_cast<ncclComm_t>(0x1));
  std::vector<ncclResult_t> res(n);
  run_ranks(n, [&](int r) {
    res[r] = ncclCommSplit(parent[r], r == 1 ? NCCL_SPLIT_NOCOLOR : 7, 0, &sub[r], nullptr);
  });
  for (int r = 0; r < n; ++r) ASSERT_EQ(res[r], ncclSuccess) << "rank " << r;
  EXPECT_EQ(sub[1], nullptr);
  const int want_rank[] = {0, -1, 1, 2};
  for (int r : {0, 2, 3}) {
    ASSERT_NE(sub[r], nullptr);
    int count = -1, rank = -1;
    NCCL_OK(ncclCommCount(sub[r], &count));
    NCCL_OK(ncclCommUserRank(sub[r], &rank));
    EXPECT_EQ(count, 3);
    EXPECT_EQ(rank, want_rank[r]);
  }
  std::vector<std::vector<float>> got(n);
  run_ranks(n, [&](int r) {
    if (sub[r]) got[r] = allreduce_of(sub[r], 4099, static_cast<float>(r), &res[r]);
  });
  for (int r : {0, 2, 3}) {
    ASSERT_EQ(res[r], ncclSuccess);
    EXPECT_EQ(got[r], std::vector<float>(4099, 5.0f)) << "rank " << r;
  }
  for (int r : {0, 2, 3}) NCCL_OK(ncclCommDestroy(sub[r]));
}

TEST(Split, InvalidColor) {
  const int n = 2;
  Comms parent(n, 1);
  ncclComm_t sub = nullptr;
  EXPECT_EQ(ncclCommSplit(parent[0], -5, 0, &sub, nullptr), ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("color"), std::string::npos);
  EXPECT_EQ(ncclCommSplit(parent[0], 0, 0, nullptr, nullptr), ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("newcomm"), std::string::npos);
}

// Shrink: the remaining ranks build a communicator without rank 1, which (as in NCCL) does not take
// part: it may be dead. They keep their order.
TEST(Shrink, ExcludingARank) {
  const int n = 4;
  Comms parent(n, 2);
  std::vector<ncclComm_t> sub(n, nullptr);
  std::vector<ncclResult_t> res(n, ncclSuccess);
  int exclude[] = {1};
  run_ranks(n, [&](int r) {
    if (r != 1) res[r] = ncclCommShrink(parent[r], exclude, 1, &sub[r], nullptr, NCCL_SHRINK_DEFAULT);
  });
  const int want_rank[] = {0, -1, 1, 2};
  for (int r : {0, 2, 3}) {
    ASSERT_EQ(res[r], ncclSuccess) << "rank " << r << ": " << ncclGetLastError(parent[r]);
    ASSERT_NE(sub[r], nullptr);
    int count = -1, rank = -1;
    NCCL_OK(ncclCommCount(sub[r], &count));
    NCCL_OK(ncclCommUserRank(sub[r], &rank));
    EXPECT_EQ(count, 3);
    EXPECT_EQ(rank, want_rank[r]);
  }
  const size_t count = (3 << 20) / 4 + 1;
  std::vector<std::vector<float>> got(n);
  run_ranks(n, [&](int r) {
    if (sub[r]) got[r] = allreduce_of(sub[r], count, static_cast<float>(10 * r), &res[r]);
  });
  for (int r : {0, 2, 3}) {
    ASSERT_EQ(res[r], ncclSuccess);
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(got[r][i], 50.0f) << "rank " << r << " element " << i;
  }
  // A second shrink of the same parent (now also without rank 3) works too.
  std::vector<ncclComm_t> sub2(n, nullptr);
  int exclude2[] = {3, 1};  // unsorted on purpose
  run_ranks(n, [&](int r) {
    if (r == 0 || r == 2) res[r] = ncclCommShrink(parent[r], exclude2, 2, &sub2[r], nullptr, NCCL_SHRINK_DEFAULT);
  });
  for (int r : {0, 2}) {
    ASSERT_EQ(res[r], ncclSuccess) << ncclGetLastError(parent[r]);
    int count2 = -1;
    NCCL_OK(ncclCommCount(sub2[r], &count2));
    EXPECT_EQ(count2, 2);
  }
  run_ranks(n, [&](int r) {
    if (sub2[r]) got[r] = allreduce_of(sub2[r], 100, static_cast<float>(r + 1), &res[r]);
  });
  for (int r : {0, 2}) {
    ASSERT_EQ(res[r], ncclSuccess);
    EXPECT_EQ(got[r], std::vector<float>(100, 4.0f));
  }
  for (ncclComm_t c : sub) if (c) NCCL_OK(ncclCommDestroy(c));
  for (ncclComm_t c : sub2) if (c) NCCL_OK(ncclCommDestroy(c));
}

TEST(Shrink, BadArguments) {
  const int n = 2;
  Comms parent(n, 1);
  ncclComm_t sub = nullptr;
  int self[] = {0};
  EXPECT_EQ(ncclCommShrink(parent[0], self, 1, &sub, nullptr, NCCL_SHRINK_DEFAULT), ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("exclude"), std::string::npos) << ncclGetLastError(nullptr);
  int out_of_range[] = {2};
  EXPECT_EQ(ncclCommShrink(parent[0], out_of_range, 1, &sub, nullptr, NCCL_SHRINK_DEFAULT), ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("rank 2"), std::string::npos);
  int one[] = {1};
  EXPECT_EQ(ncclCommShrink(parent[0], one, 1, &sub, nullptr, 0x40), ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("shrinkFlags"), std::string::npos);
  EXPECT_EQ(ncclCommShrink(parent[0], nullptr, 1, &sub, nullptr, NCCL_SHRINK_DEFAULT), ncclInvalidArgument);
  EXPECT_EQ(sub, nullptr);
}

// NCCL_SHRINK_ABORT: the parent has an operation stuck on the excluded (dead) rank; the shrink
// aborts it and the survivors carry on.
TEST(Shrink, AbortFlagUnblocksTheParent) {
  const int n = 3;
  Comms parent(n, 1);
  std::vector<cudaStream_t> streams(n);
  for (auto& s : streams) NCCL_OK(cclabStreamCreate(&s));
  // Ranks 0 and 2 start an AllReduce that rank 1 (dead) never joins.
  std::vector<float> in(1000, 1.0f), out0(1000), out2(1000);
  NCCL_OK(ncclAllReduce(in.data(), out0.data(), 1000, ncclFloat, ncclSum, parent[0], streams[0]));
  NCCL_OK(ncclAllReduce(in.data(), out2.data(), 1000, ncclFloat, ncclSum, parent[2], streams[2]));
  EXPECT_EQ(cclabStreamQuery(streams[0]), ncclInProgress);
  std::vector<ncclComm_t> sub(n, nullptr);
  std::vector<ncclResult_t> res(n, ncclSuccess);
  int exclude[] = {1};
  const double t0 = cclab_test::now_s();
  run_ranks(n, [&](int r) {
    if (r != 1) res[r] = ncclCommShrink(parent[r], exclude, 1, &sub[r], nullptr, NCCL_SHRINK_ABORT);
  });
  EXPECT_LT(cclab_test::now_s() - t0, 5.0) << "the stuck AllReduce must be aborted, not waited for";
  for (int r : {0, 2}) {
    ASSERT_EQ(res[r], ncclSuccess) << ncclGetLastError(parent[r]);
    EXPECT_NE(cclabStreamSynchronize(streams[r]), ncclSuccess) << "the aborted AllReduce reports an error";
  }
  std::vector<std::vector<float>> got(n);
  run_ranks(n, [&](int r) {
    if (sub[r]) got[r] = allreduce_of(sub[r], 333, static_cast<float>(r), &res[r]);
  });
  for (int r : {0, 2}) {
    ASSERT_EQ(res[r], ncclSuccess);
    EXPECT_EQ(got[r], std::vector<float>(333, 2.0f));
    NCCL_OK(ncclCommDestroy(sub[r]));
  }
  for (auto& s : streams) NCCL_OK(cclabStreamDestroy(s));
  for (int r = 0; r < n; ++r) {
    NCCL_OK(ncclCommAbort(parent.comms[r]));
    parent.comms[r] = nullptr;
  }
}

}  // namespace
