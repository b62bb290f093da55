// Groups (ncclGroupStart/End): why a ring of large sends needs one, one thread driving several
// communicators, nesting, and the errors. ctest sets CCLAB_TIMEOUT=2, so the ungrouped ring that
// cannot complete fails after two seconds instead of hanging.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "comm_fixture.h"
#include "core/comm.h"

using cclab_test::Comms;
using cclab_test::run_ranks;

namespace {

constexpr size_t kFifoBytes = 4 << 20;         // the default NCCL_BUFFSIZE
constexpr size_t kBigBytes = 16 << 20;         // a message four times the FIFO
constexpr size_t kSlotBytes = kFifoBytes / 8;  // one of NCCL_STEPS slots: a point-to-point chunk

// Rank r's byte at offset i: differs per rank and per position, so a misrouted or shifted byte shows.
uint8_t pattern(int r, size_t i) {
  return static_cast<uint8_t>((i * 131 + static_cast<size_t>(r) * 17 + (i >> 12)) & 0xff);
}

std::vector<uint8_t> payload(int r, size_t bytes) {
  std::vector<uint8_t> v(bytes);
  for (size_t i = 0; i < bytes; ++i) v[i] = pattern(r, i);
  return v;
}

// Each rank sends to next and receives from prev. Outside a group, each rank's send alone must push
// 16 MiB into a 4 MiB FIFO whose reader is itself blocked in a send: no rank ever reaches its
// receive. With CCLAB_TIMEOUT=2 every send fails, naming where it was stuck.
TEST(Group, UngroupedRingOfLargeMessagesDoesNotComplete) {
  const int n = 3;
  Comms comms(n, 1);
  // Connections are made on first use; make them now (a small grouped ring) so that the large send
  // below gets as far as the FIFO and stalls there, on a known step.
  const size_t small = 1024;
  run_ranks(n, [&](int r) {
    std::vector<uint8_t> s = payload(r, small), d(small, 0);
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    ASSERT_EQ(ncclSend(s.data(), small, ncclUint8, (r + 1) % n, comms[r], nullptr), ncclSuccess);
    ASSERT_EQ(ncclRecv(d.data(), small, ncclUint8, (r + n - 1) % n, comms[r], nullptr), ncclSuccess);
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess);
    EXPECT_EQ(d, payload((r + n - 1) % n, small));
  });

  std::vector<ncclResult_t> res(n, ncclSuccess);
  std::vector<std::string> msg(n);
  std::vector<double> took(n);
  run_ranks(n, [&](int r) {
    std::vector<uint8_t> s = payload(r, kBigBytes), d(kBigBytes, 0);
    const double t0 = cclab_test::now_s();
    res[r] = ncclSend(s.data(), kBigBytes, ncclUint8, (r + 1) % n, comms[r], nullptr);
    took[r] = cclab_test::now_s() - t0;
    msg[r] = ncclGetLastError(comms[r]);
    if (res[r] == ncclSuccess)  // only if the send (wrongly) completed: keep the ring from hanging
      res[r] = ncclRecv(d.data(), kBigBytes, ncclUint8, (r + n - 1) % n, comms[r], nullptr);
  });
  for (int r = 0; r < n; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r) + ": " + msg[r]);
    EXPECT_NE(res[r], ncclSuccess);
    EXPECT_GE(took[r], 1.5) << "the send should wait for CCLAB_TIMEOUT=2 s";
    EXPECT_LT(took[r], 10.0);
    // The warm-up left the connection at step 1. The big send writes one slot per step: steps 1..8
    // fill the FIFO (4 MiB), and the slice that would end at step 10 waits for the receiver to
    // free a slot, which it never does.
    const uint64_t stuck_step = 1 + kFifoBytes / kSlotBytes + 1;
    EXPECT_NE(msg[r].find("ncclSend"), std::string::npos);
    // The first rank to time out stops the others at once (core/comm.h, poison_connections): they name it.
    EXPECT_TRUE(msg[r].find("timed out") != std::string::npos ||
                msg[r].find("failed in this operation and stopped it") != std::string::npos);
    EXPECT_NE(msg[r].find("rank " + std::to_string(r) + " channel 0"), std::string::npos);
    EXPECT_NE(msg[r].find("from rank " + std::to_string((r + 1) % n)), std::string::npos) << "the peer";
    EXPECT_NE(msg[r].find("step " + std::to_string(stuck_step)), std::string::npos);
    EXPECT_NE(msg[r].find("credits"), std::string::npos) << "a sender waits for FIFO credits";
  }
  int timed_out = 0;
  for (int r = 0; r < n; ++r) timed_out += msg[r].find("timed out") != std::string::npos;
  EXPECT_GE(timed_out, 1) << "some rank's own wait timed out";
  // The communicators' FIFOs hold half-sent messages now: abort them rather than destroy.
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(ncclCommAbort(comms.comms[r]), ncclSuccess);
    comms.comms[r] = nullptr;
  }
}

// The same ring on communicators that have never connected: the first send waits for its peer to
// set up the receiving end, and the timeout names both ranks.
TEST(Group, UngroupedRingFailsAtConnectNamingTheRanks) {
  const int n = 2;
  Comms comms(n, 1);
  std::vector<ncclResult_t> res(n, ncclSuccess);
  std::vector<std::string> msg(n);
  run_ranks(n, [&](int r) {
    std::vector<uint8_t> s = payload(r, kBigBytes);
    res[r] = ncclSend(s.data(), kBigBytes, ncclUint8, (r + 1) % n, comms[r], nullptr);
    msg[r] = ncclGetLastError(comms[r]);
  });
  for (int r = 0; r < n; ++r) {
    SCOPED_TRACE(msg[r]);
    EXPECT_NE(res[r], ncclSuccess);
    EXPECT_NE(msg[r].find("rank " + std::to_string(r)), std::string::npos);
    EXPECT_NE(msg[r].find("rank " + std::to_string((r + 1) % n)), std::string::npos);
  }
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(ncclCommAbort(comms.comms[r]), ncclSuccess);
    comms.comms[r] = nullptr;
  }
}

// Inside a group the sends and receives of each rank run together, so the ring completes.
TEST(Group, GroupedRingOfLargeMessagesCompletes) {
  for (int n : {2, 3, 4}) {
    SCOPED_TRACE(n);
    Comms comms(n, 1);
    std::vector<std::vector<uint8_t>> got(n);
    std::vector<ncclResult_t> res(n);
    run_ranks(n, [&](int r) {
      std::vector<uint8_t> s = payload(r, kBigBytes);
      got[r].assign(kBigBytes, 0);
      ncclResult_t e = ncclGroupStart();
      if (e == ncclSuccess) e = ncclSend(s.data(), kBigBytes, ncclUint8, (r + 1) % n, comms[r], nullptr);
      if (e == ncclSuccess) e = ncclRecv(got[r].data(), kBigBytes, ncclUint8, (r + n - 1) % n, comms[r], nullptr);
      ncclResult_t end = ncclGroupEnd();
      res[r] = e != ncclSuccess ? e : end;
    });
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(res[r], ncclSuccess) << "rank " << r;
      EXPECT_TRUE(got[r] == payload((r + n - 1) % n, kBigBytes)) << "rank " << r << " received wrong bytes";
    }
  }
}

// A send is split into parts on several p2p channels, as NCCL 2.28.9 splits it (kernels/p2p.h
// p2p_nparts; on the host's virtual machine the peers are PCIe peers, 2 channels each as in NCCL, so 8
// channels give a 1 MiB send 2 parts of 4 KiB multiples): sizes that leave a short last part, an empty
// one, one byte, and several sends to one peer in a group all arrive byte-exact.
TEST(Group, SendsSplitOverP2pChannelsAreExact) {
  const int n = 2;
  Comms comms(n, 8);
  const size_t sizes[] = {1, 4095, 4097, 100 << 10, (1 << 20) + 3, (3 << 20) + 12345};
  EXPECT_EQ(comms[0]->p2p.per_peer, 2);
  EXPECT_EQ(cclab::p2p_nparts(comms[0]->p2p, n, (1 << 20) + 3), 2) << "the host splits a 1 MiB send";
  std::vector<std::vector<std::vector<uint8_t>>> got(n);
  std::vector<ncclResult_t> res(n);
  run_ranks(n, [&](int r) {
    std::vector<std::vector<uint8_t>> sent;
    got[r].clear();
    for (size_t b : sizes) {
      sent.push_back(payload(r + static_cast<int>(b % 7), b));
      got[r].emplace_back(b, 0);
    }
    ncclResult_t e = ncclGroupStart();
    for (size_t k = 0; k < sent.size() && e == ncclSuccess; ++k) {
      e = ncclSend(sent[k].data(), sizes[k], ncclUint8, (r + 1) % n, comms[r], nullptr);
      if (e == ncclSuccess) e = ncclRecv(got[r][k].data(), sizes[k], ncclUint8, (r + n - 1) % n, comms[r], nullptr);
    }
    const ncclResult_t end = ncclGroupEnd();
    res[r] = e != ncclSuccess ? e : end;
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(res[r], ncclSuccess) << "rank " << r;
    const int prev = (r + n - 1) % n;
    for (size_t k = 0; k < got[r].size(); ++k)
      EXPECT_TRUE(got[r][k] == payload(prev + static_cast<int>(sizes[k] % 7), sizes[k]))
          << "rank " << r << " size " << sizes[k] << " received wrong bytes";
  }
}

// One thread issues the operations of every rank in one group (NULL streams): the group runs each
// communicator's work concurrently, or the ring could not complete.
TEST(Group, OneThreadDrivesSeveralComms) {
  const int n = 4;
  Comms comms(n, 2);
  const size_t count = (3 << 20) / 4 + 5;  // 3 MiB of floats: several FIFO chunks per channel
  std::vector<std::vector<float>> in(n), out(n, std::vector<float>(count, -1.0f));
  for (int r = 0; r < n; ++r) {
    in[r].resize(count);
    for (size_t i = 0; i < count; ++i) in[r][i] = static_cast<float>((i % 1000) * (r + 1));
  }
  NCCL_OK(ncclGroupStart());
  for (int r = 0; r < n; ++r)
    NCCL_OK(ncclAllReduce(in[r].data(), out[r].data(), count, ncclFloat, ncclSum, comms[r], nullptr));
  NCCL_OK(ncclGroupEnd());
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < count; ++i)
      ASSERT_EQ(out[r][i], static_cast<float>((i % 1000) * 10)) << "rank " << r << " element " << i;

  // A ring of large point-to-point messages, all ranks from this one thread.
  std::vector<std::vector<uint8_t>> send(n), recv(n, std::vector<uint8_t>(kBigBytes, 0));
  for (int r = 0; r < n; ++r) send[r] = payload(r, kBigBytes);
  NCCL_OK(ncclGroupStart());
  for (int r = 0; r < n; ++r) {
    NCCL_OK(ncclSend(send[r].data(), kBigBytes, ncclUint8, (r + 1) % n, comms[r], nullptr));
    NCCL_OK(ncclRecv(recv[r].data(), kBigBytes, ncclUint8, (r + n - 1) % n, comms[r], nullptr));
  }
  NCCL_OK(ncclGroupEnd());
  for (int r = 0; r < n; ++r) EXPECT_TRUE(recv[r] == send[(r + n - 1) % n]) << "rank " << r;
}

// Nested groups launch at the outermost ncclGroupEnd only.
TEST(Group, NestedGroupsLaunchAtTheOutermostEnd) {
  const int n = 2;
  Comms comms(n, 1);
  const size_t count = 1000;
  std::vector<std::vector<float>> in(n, std::vector<float>(count)), out(n, std::vector<float>(count, -1.0f));
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < count; ++i) in[r][i] = static_cast<float>(i + r);
  NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclAllReduce(in[0].data(), out[0].data(), count, ncclFloat, ncclSum, comms[0], nullptr));
  NCCL_OK(ncclGroupEnd());
  // The inner end must not have launched anything: rank 0's AllReduce alone would wait for rank 1.
  EXPECT_EQ(out[0], std::vector<float>(count, -1.0f));
  NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclAllReduce(in[1].data(), out[1].data(), count, ncclFloat, ncclSum, comms[1], nullptr));
  NCCL_OK(ncclGroupEnd());
  EXPECT_EQ(out[1], std::vector<float>(count, -1.0f));
  NCCL_OK(ncclGroupEnd());
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(out[r][i], static_cast<float>(2 * i + 1)) << r << " " << i;
}

TEST(Group, EndWithoutStartIsInvalidUsage) {
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage);
  const std::string msg = ncclGetLastError(nullptr);
  EXPECT_NE(msg.find("ncclGroupEnd"), std::string::npos) << msg;
  EXPECT_NE(msg.find("ncclGroupStart"), std::string::npos) << msg;
  // One group too many closed after a balanced pair is just as wrong.
  NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclGroupEnd());
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidUsage);
}

// An argument error inside a group: the call returns it, ncclGroupEnd returns it too, and no
// operation of the group runs (on any communicator), so no rank is left waiting for another.
TEST(Group, ArgumentErrorInsideGroupLaunchesNothing) {
  const int n = 3;
  Comms comms(n, 1);
  const size_t count = 4096;
  std::vector<std::vector<float>> in(n, std::vector<float>(count, 1.0f)),
      out(n, std::vector<float>(count, -1.0f));
  std::vector<uint8_t> p2p_out(64, 0xee), p2p_in(64, 0x11);
  NCCL_OK(ncclGroupStart());
  for (int r = 0; r < n; ++r)
    NCCL_OK(ncclAllReduce(in[r].data(), out[r].data(), count, ncclFloat, ncclSum, comms[r], nullptr));
  NCCL_OK(ncclSend(p2p_in.data(), 64, ncclUint8, 1, comms[0], nullptr));
  NCCL_OK(ncclRecv(p2p_out.data(), 64, ncclUint8, 0, comms[1], nullptr));
  EXPECT_EQ(ncclAllReduce(in[2].data(), out[2].data(), count, static_cast<ncclDataType_t>(99), ncclSum, comms[2],
                          nullptr),
            ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(nullptr)).find("datatype"), std::string::npos);
  EXPECT_EQ(ncclGroupEnd(), ncclInvalidArgument);
  for (int r = 0; r < n; ++r) EXPECT_EQ(out[r], std::vector<float>(count, -1.0f)) << "rank " << r << " ran";
  EXPECT_EQ(p2p_out, std::vector<uint8_t>(64, 0xee));

  // The communicators are untouched and the next group works.
  NCCL_OK(ncclGroupStart());
  for (int r = 0; r < n; ++r)
    NCCL_OK(ncclAllReduce(in[r].data(), out[r].data(), count, ncclFloat, ncclSum, comms[r], nullptr));
  NCCL_OK(ncclGroupEnd());
  for (int r = 0; r < n; ++r) EXPECT_EQ(out[r], std::vector<float>(count, 3.0f)) << "rank " << r;
}

}  // namespace
