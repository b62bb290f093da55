// Observer hooks (cclabCommSetObserver): the executor reports every primitive step, and for a ring
// AllReduce that stream must be exactly NCCL's ring schedule. The expectation is derived here from
// NCCL's runRing and the Simple protocol's slicing, independently of kernels/ring.h:
//   per loop of k chunks, per rank and channel:
//     send, (k-2) x recvReduceSend, recvReduceCopySend, (k-2) x recvCopySend, recv
//   each primitive in SLICESTEPS-sized slices (2 per chunk for AllReduce), each slice 2 FIFO steps.
// ctest sets NCCL_BUFFSIZE=65536: 8 KiB slots, 32 KiB chunks, so a modest count takes several loops.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <algorithm>
#include <mutex>
#include <numeric>
#include <string>
#include <vector>

#include "comm_fixture.h"

using cclab_test::Comms;
using cclab_test::run_ranks;

namespace {

constexpr int kRanks = 3;
constexpr int kChannels = 2;
// The schedules below split a call over channels by the 64 KiB rule (CCLAB_MIN_CHANNEL_BYTES), which
// the host model's own choice of channels would otherwise replace. Set before any communicator exists.
const bool kChannelRule = setenv("CCLAB_MIN_CHANNEL_BYTES", "65536", 1) == 0;
constexpr size_t kBuffBytes = 65536;         // NCCL_BUFFSIZE set by ctest
constexpr size_t kSlotBytes = kBuffBytes / 8;  // NCCL_STEPS = 8
constexpr size_t kChunkBytes = 4 * kSlotBytes;  // Ring/Simple AllReduce: CHUNKSTEPS = 4 slots
constexpr int kSlicesPerChunk = 2;           // SLICESTEPS = 2 -> 2 slices of 2 steps
constexpr int kStepsPerSlice = 2;
constexpr size_t kGrainBytes = 512;          // Simple's alignment of chunks, slices and channel splits

struct Event {
  int prim;
  size_t bytes;
  int send_peer, recv_peer;
  uint64_t step;
  bool operator==(const Event& o) const {
    return prim == o.prim && bytes == o.bytes && send_peer == o.send_peer && recv_peer == o.recv_peer &&
           step == o.step;
  }
};
std::ostream& operator<<(std::ostream& os, const Event& e) {
  return os << "{prim " << e.prim << ", " << e.bytes << " B, send " << e.send_peer << ", recv " << e.recv_peer
            << ", step " << e.step << "}";
}

size_t div_up(size_t a, size_t b) { return (a + b - 1) / b; }
size_t round_up(size_t a, size_t b) { return div_up(a, b) * b; }

// Expected step events of one rank and channel for a float AllReduce of `count` elements, with
// both ring connections at step `step0` before it.
struct Expect {
  std::vector<Event> events;
  size_t sent_bytes = 0;     // bytes this rank puts on its send connection
  size_t channel_bytes = 0;  // bytes of the buffer this channel handles
};
Expect expect_allreduce(size_t count, int rank, int channel, int nch, uint64_t step0) {
  const size_t esz = sizeof(float), grain = kGrainBytes / esz, chunk = kChunkBytes / esz;
  const int k = kRanks, next = (rank + 1) % k, prev = (rank + k - 1) % k;
  // The channel's share of the buffer, in grains.
  const size_t per = round_up(div_up(count, nch), grain);
  const size_t lo = std::min(count, per * channel), hi = std::min(count, lo + per), size = hi - lo;
  Expect x;
  x.channel_bytes = size * esz;
  uint64_t send_step = step0, recv_step = step0;
  // One primitive on n elements: its slices, each an event.
  auto prim = [&](cclabPrim_t p, size_t n, bool sends, bool recvs) {
    const size_t slice = round_up(div_up(n, kSlicesPerChunk), grain);
    size_t done = 0;
    for (int s = 0; s < kSlicesPerChunk; ++s) {
      const size_t m = std::min(slice, n - done);
      x.events.push_back(Event{p, m * esz, sends ? next : -1, recvs ? prev : -1, sends ? send_step : recv_step});
      if (sends) send_step += kStepsPerSlice, x.sent_bytes += m * esz;
      if (recvs) recv_step += kStepsPerSlice;
      done += m;
    }
  };
  const size_t loop = k * chunk;
  for (size_t base = 0; base < size; base += loop) {
    // The loop's k chunks (the last loop's are smaller, rounded to the grain); chunk c belongs to
    // the rank at ring position c, and the ring is 0, 1, ..., k-1.
    const size_t real = std::min(chunk, round_up(div_up(std::min(loop, size - base), k), grain));
    auto len = [&](int c) {
      const size_t o = base + c * real;
      return o < size ? std::min(real, size - o) : 0;
    };
    auto at = [&](int i) { return (rank + i) % k; };  // the i-th rank after this one
    prim(cclabPrimSend, len(at(k - 1)), true, false);
    for (int j = 2; j < k; ++j) prim(cclabPrimRecvReduceSend, len(at(k - j)), true, true);
    prim(cclabPrimRecvReduceCopySend, len(at(0)), true, true);
    for (int j = 1; j < k - 1; ++j) prim(cclabPrimRecvCopySend, len(at(k - j)), true, true);
    prim(cclabPrimRecv, len(at(1)), false, true);
  }
  return x;
}

struct Recorder : cclab_test::EventRecorder {
  // This rank's events on `channel`, in the order they were reported.
  std::vector<Event> of(int channel, uint64_t op_count) {
    std::vector<Event> v;
    for (const auto& e : events)
      if (e.channel == channel && e.opCount == op_count)
        v.push_back(Event{e.prim, e.bytes, e.sendPeer, e.recvPeer, e.step});
    return v;
  }
};

std::vector<float> run_allreduce(const Comms& comms, size_t count) {
  std::vector<std::vector<float>> in(kRanks, std::vector<float>(count)), out(kRanks, std::vector<float>(count));
  for (int r = 0; r < kRanks; ++r)
    for (size_t i = 0; i < count; ++i) in[r][i] = static_cast<float>((i + r) % 100);
  run_ranks(kRanks, [&](int r) {
    EXPECT_EQ(ncclAllReduce(in[r].data(), out[r].data(), count, ncclFloat, ncclSum, comms[r], nullptr), ncclSuccess);
  });
  for (int r = 1; r < kRanks; ++r) EXPECT_TRUE(out[r] == out[0]);
  for (size_t i = 0; i < count; ++i) {
    const float want = static_cast<float>(i % 100 + (i + 1) % 100 + (i + 2) % 100);
    if (out[0][i] != want) {
      ADD_FAILURE() << "element " << i << " = " << out[0][i] << ", want " << want;
      break;
    }
  }
  return out[0];
}

TEST(Observer, AllReduceFollowsTheRingSchedule) {
  ASSERT_TRUE(kChannelRule);
  Comms comms(kRanks, kChannels);
  int nch = 0;
  NCCL_OK(cclabCommChannels(comms[0], &nch));
  ASSERT_EQ(nch, kChannels);
  std::vector<Recorder> rec(kRanks);
  for (int r = 0; r < kRanks; ++r) NCCL_OK(cclabCommSetObserver(comms[r], Recorder::fn, &rec[r]));

  // 100003 floats: channel 0 takes 50048 (a multiple of the 128-float grain), channel 1 the other
  // 49955; each channel runs three loops of 3 x 8192-float chunks, the last loop a short, uneven one.
  const size_t count = 100003;
  run_allreduce(comms, count);
  for (int r = 0; r < kRanks; ++r) {
    std::lock_guard<std::mutex> lk(rec[r].mu);
    size_t total = 0;
    for (const auto& e : rec[r].events) {
      EXPECT_EQ(e.rank, r);
      EXPECT_EQ(e.coll, cclabCollAllReduce);
      EXPECT_EQ(e.opCount, 0u);
      EXPECT_LE(e.beginUs, e.endUs);
      EXPECT_TRUE(e.channel >= 0 && e.channel < kChannels) << e.channel;
    }
    size_t sent_all_channels = 0;
    for (int c = 0; c < kChannels; ++c) {
      SCOPED_TRACE("rank " + std::to_string(r) + " channel " + std::to_string(c));
      const Expect x = expect_allreduce(count, r, c, kChannels, 0);
      const std::vector<Event> got = rec[r].of(c, 0);
      total += got.size();
      ASSERT_EQ(got.size(), x.events.size());
      for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], x.events[i]) << "event " << i;

      // The primitive sequence per chunk, spelled out for k = 3 (2 slices each).
      const int chunk_seq[] = {cclabPrimSend, cclabPrimSend, cclabPrimRecvReduceSend, cclabPrimRecvReduceSend,
                               cclabPrimRecvReduceCopySend, cclabPrimRecvReduceCopySend, cclabPrimRecvCopySend,
                               cclabPrimRecvCopySend, cclabPrimRecv, cclabPrimRecv};
      ASSERT_EQ(got.size() % 10, 0u);
      EXPECT_EQ(got.size() / 10, 3u) << "three loops per channel";
      for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].prim, chunk_seq[i % 10]) << "event " << i;

      // Steps grow by one slice (2 steps) at a time on each connection.
      uint64_t last_send = 0, last_recv = 0;
      bool first_send = true, first_recv = true;
      for (const Event& e : got) {
        if (e.send_peer >= 0) {
          if (!first_send) {
            EXPECT_EQ(e.step, last_send + kStepsPerSlice);
          }
          last_send = e.step, first_send = false;
        } else {
          if (!first_recv) {
            EXPECT_GT(e.step, last_recv);
          }
          last_recv = e.step, first_recv = false;
        }
      }

      // Bytes: the ring moves 2(k-1)/k of the channel's share, up to the grain rounding of the
      // last loop. The exact figure: per loop, every chunk but mine (reduce phase) plus every chunk
      // but next's (gather phase).
      size_t sent = 0;
      for (const Event& e : got)
        if (e.send_peer >= 0) sent += e.bytes;
      EXPECT_EQ(sent, x.sent_bytes);
      const double ideal = 2.0 * (kRanks - 1) / kRanks * static_cast<double>(x.channel_bytes);
      EXPECT_NEAR(static_cast<double>(sent), ideal, 2.0 * kGrainBytes * kRanks);
      sent_all_channels += sent;
    }
    EXPECT_EQ(total, rec[r].events.size()) << "events on channels other than 0 and 1";
    // Over both channels, exactly: every chunk but one's own twice, summed over the loops.
    size_t want = 0;
    for (int c = 0; c < kChannels; ++c) want += expect_allreduce(count, r, c, kChannels, 0).sent_bytes;
    EXPECT_EQ(sent_all_channels, want);
  }

  // A second AllReduce continues on the same connections: its steps start where the first ended.
  for (auto& x : rec) x.events.clear();
  run_allreduce(comms, count);
  for (int r = 0; r < kRanks; ++r) {
    for (int c = 0; c < kChannels; ++c) {
      const Expect first = expect_allreduce(count, r, c, kChannels, 0);
      const uint64_t step0 = first.events.back().step + kStepsPerSlice;
      const Expect x = expect_allreduce(count, r, c, kChannels, step0);
      const std::vector<Event> got = rec[r].of(c, 1);
      ASSERT_EQ(got.size(), x.events.size()) << "rank " << r << " channel " << c;
      for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], x.events[i]) << r << "/" << c << " event " << i;
    }
  }
}

// A small AllReduce uses one channel (below CCLAB_MIN_CHANNEL_BYTES per channel), one loop, and
// chunks rounded to the grain with the last ones short or empty: empty slices are reported too.
TEST(Observer, SmallAllReduceOneChannelUnevenChunks) {
  Comms comms(kRanks, kChannels);
  std::vector<Recorder> rec(kRanks);
  for (int r = 0; r < kRanks; ++r) NCCL_OK(cclabCommSetObserver(comms[r], Recorder::fn, &rec[r]));
  const size_t count = 300;  // chunks of 128, 128, 44 floats; slices of 128 + 0 and 44 + 0
  run_allreduce(comms, count);
  for (int r = 0; r < kRanks; ++r) {
    const Expect x = expect_allreduce(count, r, 0, 1, 0);
    EXPECT_EQ(rec[r].of(1, 0).size(), 0u) << "a 1200-byte AllReduce must not use channel 1";
    const std::vector<Event> got = rec[r].of(0, 0);
    ASSERT_EQ(got.size(), x.events.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], x.events[i]) << "rank " << r << " event " << i;
    size_t sent = 0;
    for (const Event& e : got)
      if (e.send_peer >= 0) sent += e.bytes;
    // Every chunk but mine, plus every chunk but next's.
    const size_t lens[3] = {128, 128, 44};
    EXPECT_EQ(sent, (2 * (128 + 128 + 44) - lens[r] - lens[(r + 1) % 3]) * sizeof(float));
  }
}

// A Broadcast moves 1-step slices and may leave a ring connection on an odd step; the AllReduce after
// it moves 2-step slices, which must still start on a slice boundary: a slice never wraps around the
// FIFO (it would write past the last slot). The results are checked too.
TEST(Observer, SlicesNeverWrapAfterABroadcast) {
  Comms comms(kRanks, 1);
  std::vector<Recorder> rec(kRanks);
  for (int r = 0; r < kRanks; ++r) NCCL_OK(cclabCommSetObserver(comms[r], Recorder::fn, &rec[r]));
  const size_t bcast_count = 3 * kSlotBytes / sizeof(float);  // three 1-slot chunks: three steps
  std::vector<std::vector<float>> bufs(kRanks, std::vector<float>(bcast_count));
  for (size_t i = 0; i < bcast_count; ++i) bufs[0][i] = static_cast<float>(i);
  run_ranks(kRanks, [&](int r) {
    EXPECT_EQ(ncclBroadcast(bufs[r].data(), bufs[r].data(), bcast_count, ncclFloat, 0, comms[r], nullptr),
              ncclSuccess);
  });
  for (int r = 1; r < kRanks; ++r) EXPECT_TRUE(bufs[r] == bufs[0]) << "rank " << r;
  uint64_t last_bcast_step = 0;
  for (const auto& e : rec[1].events) last_bcast_step = std::max<uint64_t>(last_bcast_step, e.step + 1);
  EXPECT_EQ(last_bcast_step % kStepsPerSlice, 1u) << "the Broadcast should end on an odd step";
  for (auto& x : rec) x.events.clear();
  run_allreduce(comms, 50000);
  for (int r = 0; r < kRanks; ++r) {
    ASSERT_FALSE(rec[r].events.empty());
    for (const auto& e : rec[r].events)
      EXPECT_LE(e.step % 8 + kStepsPerSlice, 8u) << "rank " << r << ": a slice from step " << e.step << " wraps";
  }
}

TEST(Observer, NothingIsCalledWithoutAnObserver) {
  Comms comms(kRanks, kChannels);
  std::vector<Recorder> rec(kRanks);
  // Only rank 1 observes: the others' steps must not show up anywhere.
  NCCL_OK(cclabCommSetObserver(comms[1], Recorder::fn, &rec[1]));
  run_allreduce(comms, 20000);
  EXPECT_GT(rec[1].events.size(), 0u);
  for (const auto& e : rec[1].events) EXPECT_EQ(e.rank, 1);
  for (int r : {0, 2}) EXPECT_EQ(rec[r].events.size(), 0u);
  // Cleared, rank 1's observer is called no more.
  NCCL_OK(cclabCommSetObserver(comms[1], nullptr, nullptr));
  const size_t before = rec[1].events.size();
  run_allreduce(comms, 20000);
  EXPECT_EQ(rec[1].events.size(), before);
  EXPECT_EQ(cclabCommSetObserver(nullptr, Recorder::fn, &rec[0]), ncclInvalidArgument);
}

}  // namespace
