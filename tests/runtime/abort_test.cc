// Communicator life cycle beyond the happy path: ncclCommAbort unblocks a rank stuck waiting for a
// peer that never comes, ncclCommRevoke / CCLAB_TIMEOUT leave the error in ncclCommGetAsyncError,
// ncclCommFinalize + ncclCommDestroy, and non-blocking init (ncclInProgress until ready).
// ctest sets CCLAB_TIMEOUT=5: long enough that an abort that works is clearly faster.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "comm_fixture.h"

using cclab_test::Comms;
using cclab_test::now_s;
using cclab_test::run_ranks;

namespace {

// The message ncclGetLastError(comm) gives a thread that has no error of its own: the
// communicator's asynchronous error message. (A thread's own last error comes first, as the
// failure of a stream operation is reported on the stream's worker thread, not this one.)
std::string comm_message(ncclComm_t comm) {
  std::string msg;
  std::thread([&] { msg = ncclGetLastError(comm); }).join();
  return msg;
}

// Rank 0 of a 2-rank communicator runs an AllReduce on a host stream; rank 1 never joins. Another
// thread's ncclCommAbort must end the wait within a short time and the stream report an error.
TEST(Abort, AbortFromAnotherThreadUnblocksAStuckRank) {
  Comms comms(2, 1);
  cudaStream_t s;
  NCCL_OK(cclabStreamCreate(&s));
  std::vector<float> in(1 << 16, 1.0f), out(1 << 16, 0.0f);
  NCCL_OK(ncclAllReduce(in.data(), out.data(), in.size(), ncclFloat, ncclSum, comms[0], s));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(cclabStreamQuery(s), ncclInProgress) << "rank 0 cannot finish without rank 1";
  ncclResult_t async = ncclInternalError;
  NCCL_OK(ncclCommGetAsyncError(comms[0], &async));
  EXPECT_EQ(async, ncclSuccess) << "waiting is not an error (yet)";

  double aborted_at = 0, abort_returned_at = 0;
  ncclResult_t abort_res = ncclInternalError;
  std::thread aborter([&] {
    aborted_at = now_s();
    abort_res = ncclCommAbort(comms[0]);
    abort_returned_at = now_s();
  });
  const ncclResult_t sync = cclabStreamSynchronize(s);
  const double unblocked_at = now_s();
  aborter.join();
  comms.comms[0] = nullptr;
  EXPECT_EQ(abort_res, ncclSuccess);
  EXPECT_NE(sync, ncclSuccess) << "the aborted AllReduce must report an error on its stream";
  EXPECT_LT(unblocked_at - aborted_at, 2.0);
  EXPECT_LT(abort_returned_at - aborted_at, 2.0);
  // The error is gone once reported; the stream itself is fine.
  EXPECT_EQ(cclabStreamSynchronize(s), ncclSuccess);
  NCCL_OK(cclabStreamDestroy(s));
}

// The same on the NULL stream: the rank's own thread is blocked inside ncclAllReduce.
TEST(Abort, AbortUnblocksABlockingCall) {
  Comms comms(2, 1);
  std::vector<float> in(1 << 16, 1.0f), out(1 << 16, 0.0f);
  std::atomic<double> returned_at{0};
  ncclResult_t res = ncclSuccess;
  std::thread rank0([&] {
    res = ncclAllReduce(in.data(), out.data(), in.size(), ncclFloat, ncclSum, comms[0], nullptr);
    returned_at = now_s();
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(returned_at.load(), 0.0) << "the AllReduce returned without its peer";
  const double t0 = now_s();
  NCCL_OK(ncclCommAbort(comms[0]));
  comms.comms[0] = nullptr;
  rank0.join();
  EXPECT_NE(res, ncclSuccess);
  EXPECT_LT(returned_at.load() - t0, 2.0);
}

// ncclCommRevoke stops the stuck operation but keeps the communicator, so its asynchronous error
// and message can be read afterwards.
TEST(Abort, RevokeLeavesTheErrorInGetAsyncError) {
  Comms comms(2, 1);
  cudaStream_t s;
  NCCL_OK(cclabStreamCreate(&s));
  std::vector<float> in(1000, 1.0f), out(1000, 0.0f);
  NCCL_OK(ncclAllReduce(in.data(), out.data(), in.size(), ncclFloat, ncclSum, comms[0], s));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const double t0 = now_s();
  NCCL_OK(ncclCommRevoke(comms[0], NCCL_REVOKE_DEFAULT));
  EXPECT_NE(cclabStreamSynchronize(s), ncclSuccess);
  EXPECT_LT(now_s() - t0, 2.0);
  ncclResult_t async = ncclSuccess;
  NCCL_OK(ncclCommGetAsyncError(comms[0], &async));
  EXPECT_NE(async, ncclSuccess);
  EXPECT_NE(async, ncclInProgress);
  // The message says where the rank was stuck: waiting for rank 1, on channel 0.
  const std::string msg = comm_message(comms[0]);
  EXPECT_NE(msg.find("abort"), std::string::npos) << msg;
  EXPECT_NE(msg.find("rank 0 channel 0"), std::string::npos) << msg;
  EXPECT_NE(msg.find("rank 1"), std::string::npos) << msg;
  // A revoked communicator takes no new work.
  EXPECT_EQ(ncclAllReduce(in.data(), out.data(), in.size(), ncclFloat, ncclSum, comms[0], s), ncclInvalidUsage);
  NCCL_OK(cclabStreamDestroy(s));
}

// Without anyone aborting, CCLAB_TIMEOUT (5 s here) ends the wait and the communicator keeps the
// error, so a watchdog polling ncclCommGetAsyncError sees it.
TEST(Abort, TimeoutShowsInGetAsyncError) {
  Comms comms(2, 1);
  cudaStream_t s;
  NCCL_OK(cclabStreamCreate(&s));
  std::vector<float> in(1000, 1.0f), out(1000, 0.0f);
  const double t0 = now_s();
  NCCL_OK(ncclAllReduce(in.data(), out.data(), in.size(), ncclFloat, ncclSum, comms[0], s));
  ncclResult_t async = ncclSuccess;
  while (async == ncclSuccess && now_s() - t0 < 15) {
    NCCL_OK(ncclCommGetAsyncError(comms[0], &async));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  const double waited = now_s() - t0;
  EXPECT_NE(async, ncclSuccess);
  EXPECT_GT(waited, 4.0);
  EXPECT_LT(waited, 10.0);
  EXPECT_EQ(cclabStreamSynchronize(s), async);
  const std::string msg = comm_message(comms[0]);
  EXPECT_NE(msg.find("CCLAB_TIMEOUT"), std::string::npos) << msg;
  EXPECT_NE(msg.find("rank 0 channel 0"), std::string::npos) << msg;
  NCCL_OK(cclabStreamDestroy(s));
}

// The normal end: finalize waits for queued work, after which the results are there, new work is
// refused, and destroy releases the communicator.
TEST(Lifecycle, FinalizeThenDestroy) {
  const int n = 3;
  ncclComm_t comms[n];
  NCCL_OK(ncclCommInitAll(comms, n, nullptr));
  const size_t count = (2 << 20) + 3;  // 8 MiB of floats: still running when finalize is called
  std::vector<std::vector<float>> in(n, std::vector<float>(count)), out(n, std::vector<float>(count, -1.0f));
  std::vector<ncclResult_t> fin(n), after(n), destroy(n);
  run_ranks(n, [&](int r) {
    for (size_t i = 0; i < count; ++i) in[r][i] = static_cast<float>(i % 4096 + r);
    cudaStream_t s;
    if (cclabStreamCreate(&s) != ncclSuccess) return;
    EXPECT_EQ(ncclAllReduce(in[r].data(), out[r].data(), count, ncclFloat, ncclSum, comms[r], s), ncclSuccess);
    fin[r] = ncclCommFinalize(comms[r]);
    // Finalize returned: the AllReduce is complete without a stream synchronize.
    for (size_t i = 0; i < count; ++i)
      if (out[r][i] != static_cast<float>(3 * (i % 4096) + 3)) {
        ADD_FAILURE() << "rank " << r << " element " << i << " = " << out[r][i];
        break;
      }
    after[r] = ncclAllReduce(in[r].data(), out[r].data(), count, ncclFloat, ncclSum, comms[r], s);
    EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("finalized"), std::string::npos);
    EXPECT_EQ(cclabStreamSynchronize(s), ncclSuccess);
    cclabStreamDestroy(s);
    destroy[r] = ncclCommDestroy(comms[r]);
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(fin[r], ncclSuccess);
    EXPECT_EQ(after[r], ncclInvalidUsage);
    EXPECT_EQ(destroy[r], ncclSuccess);
  }
  int c = 0;
  EXPECT_EQ(ncclCommCount(comms[0], &c), ncclInvalidArgument) << "destroyed";
  EXPECT_EQ(ncclCommDestroy(nullptr), ncclSuccess) << "as in NCCL, destroying NULL is a no-op";
  EXPECT_EQ(ncclCommAbort(nullptr), ncclSuccess);
}

// Non-blocking init: ncclCommInitRankConfig returns ncclInProgress at once, and
// ncclCommGetAsyncError moves from ncclInProgress to ncclSuccess once every rank has joined.
TEST(Lifecycle, NonBlockingInit) {
  const int n = 3;
  ncclUniqueId id;
  NCCL_OK(ncclGetUniqueId(&id));
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  std::vector<ncclComm_t> comms(n, nullptr);
  // One thread initialises every rank in turn: only possible because the calls do not block.
  EXPECT_EQ(ncclCommInitRankConfig(&comms[0], n, id, 0, &cfg), ncclInProgress);
  ASSERT_NE(comms[0], nullptr);
  ncclResult_t st = ncclSuccess;
  NCCL_OK(ncclCommGetAsyncError(comms[0], &st));
  EXPECT_EQ(st, ncclInProgress) << "rank 0 cannot be ready before ranks 1 and 2 join";
  std::vector<float> in(1000, 1.0f), out(1000, 0.0f);
  EXPECT_EQ(ncclAllReduce(in.data(), out.data(), 1000, ncclFloat, ncclSum, comms[0], nullptr), ncclInvalidUsage);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("initialising"), std::string::npos);
  for (int r = 1; r < n; ++r) EXPECT_EQ(ncclCommInitRankConfig(&comms[r], n, id, r, &cfg), ncclInProgress);

  const double t0 = now_s();
  for (int r = 0; r < n; ++r) {
    do {
      NCCL_OK(ncclCommGetAsyncError(comms[r], &st));
      if (st == ncclInProgress) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    } while (st == ncclInProgress && now_s() - t0 < 20);
    EXPECT_EQ(st, ncclSuccess) << "rank " << r << ": " << ncclGetLastError(comms[r]);
  }
  // Ready: collectives work, all ranks driven from this one thread.
  std::vector<std::vector<float>> outs(n, std::vector<float>(5000, 0.0f));
  std::vector<float> ins(5000, 2.0f);
  NCCL_OK(ncclGroupStart());
  for (int r = 0; r < n; ++r)
    NCCL_OK(ncclAllReduce(ins.data(), outs[r].data(), 5000, ncclFloat, ncclSum, comms[r], nullptr));
  NCCL_OK(ncclGroupEnd());
  for (int r = 0; r < n; ++r) EXPECT_EQ(outs[r], std::vector<float>(5000, 6.0f)) << "rank " << r;
  int rank = -1;
  NCCL_OK(ncclCommUserRank(comms[2], &rank));
  EXPECT_EQ(rank, 2);
  for (ncclComm_t c : comms) NCCL_OK(ncclCommDestroy(c));
}

// A non-blocking init that cannot complete (rank 1 never joins) stays ncclInProgress; aborting the
// communicator ends the waiting init promptly instead of hanging in ncclCommAbort.
TEST(Lifecycle, NonBlockingInitAbortedWhileWaiting) {
  ncclUniqueId id;
  NCCL_OK(ncclGetUniqueId(&id));
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  ncclComm_t c = nullptr;
  EXPECT_EQ(ncclCommInitRankConfig(&c, 2, id, 0, &cfg), ncclInProgress);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ncclResult_t st = ncclSuccess;
  NCCL_OK(ncclCommGetAsyncError(c, &st));
  EXPECT_EQ(st, ncclInProgress);
  // Abort a communicator whose init is still waiting for rank 1: it returns promptly.
  const double t0 = now_s();
  NCCL_OK(ncclCommAbort(c));
  EXPECT_LT(now_s() - t0, 2.0);
}

}  // namespace
