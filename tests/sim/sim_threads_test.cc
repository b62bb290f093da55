// CCLAB_BACKEND=sim with a thread per rank, point-to-point operations, communicators of several sizes
// and every datatype. Each scenario runs in a forked child (a simulated world lives for the rest of
// its process, and its clock starts at zero there), which reports back through a pipe; the parent never
// touches the sim backend, so forking it is safe.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include "cclab/cclab.h"
#include "nccl.h"

namespace {

// Runs fn in a child process; returns what it wrote with report() (or "child failed: ...").
std::string g_report;
void report(const std::string& s) { g_report += s; }

std::string in_child(const std::function<void()>& fn) {
  int fds[2];
  if (pipe(fds) != 0) return "child failed: pipe";
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    g_report.clear();
    if (cclabSetBackend(cclabBackendSim) != ncclSuccess) _exit(3);
    fn();
    const char* p = g_report.data();
    size_t left = g_report.size();
    while (left > 0) {
      const ssize_t w = write(fds[1], p, left);
      if (w <= 0) _exit(4);
      p += w;
      left -= static_cast<size_t>(w);
    }
    close(fds[1]);
    _exit(0);
  }
  close(fds[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    return "child failed: status " + std::to_string(status) + " after: " + out;
  return out;
}

std::string bits_of(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof u);
  char b[64];
  snprintf(b, sizeof b, "%.6f us [%016llx]", d, static_cast<unsigned long long>(u));
  return b;
}

double sim_now() {
  double us = -1;
  if (cclabSimTime(&us) != ncclSuccess) return -1;
  return us;
}

#define CHILD_CHECK(cond, what)                                   \
  do {                                                            \
    if (!(cond)) {                                                \
      report(std::string("FAIL ") + (what) + ": " + ncclGetLastError(nullptr) + "\n"); \
      return;                                                     \
    }                                                             \
  } while (0)

// The program every scenario of the timing comparison runs: rank r's all_reduce of `count` floats and
// all_gather of `count / 4`, on its own stream, results checked byte for byte.
constexpr int kRanks = 4;
constexpr size_t kCount = 300000;

float input(int r, size_t i) { return static_cast<float>((r + 1) * static_cast<int>(i % 11)); }

struct RankBuffers {
  std::vector<float> in, out, gathered;
  RankBuffers(int r) : in(kCount), out(kCount, -1.0f), gathered(kCount / 4 * kRanks, -1.0f) {
    for (size_t i = 0; i < kCount; ++i) in[i] = input(r, i);
  }
  // "" when exact.
  std::string check(int r) const {
    for (size_t i = 0; i < kCount; ++i)
      if (out[i] != 10.0f * static_cast<float>(i % 11))
        return "rank " + std::to_string(r) + " all_reduce element " + std::to_string(i) + "\n";
    for (int q = 0; q < kRanks; ++q)
      for (size_t i = 0; i < kCount / 4; ++i)
        if (gathered[q * (kCount / 4) + i] != input(q, i))
          return "rank " + std::to_string(r) + " all_gather block " + std::to_string(q) + "\n";
    return "";
  }
};

// One thread drives every rank (ncclCommInitAll, a group per collective).
void single_thread_program() {
  ncclComm_t comms[kRanks];
  cudaStream_t streams[kRanks];
  CHILD_CHECK(ncclCommInitAll(comms, kRanks, nullptr) == ncclSuccess, "init");
  std::vector<RankBuffers> b;
  for (int r = 0; r < kRanks; ++r) {
    b.emplace_back(r);
    CHILD_CHECK(cclabStreamCreate(&streams[r]) == ncclSuccess, "stream");
  }
  ncclGroupStart();
  for (int r = 0; r < kRanks; ++r)
    ncclAllReduce(b[r].in.data(), b[r].out.data(), kCount, ncclFloat, ncclSum, comms[r], streams[r]);
  CHILD_CHECK(ncclGroupEnd() == ncclSuccess, "all_reduce");
  ncclGroupStart();
  for (int r = 0; r < kRanks; ++r)
    ncclAllGather(b[r].in.data(), b[r].gathered.data(), kCount / 4, ncclFloat, comms[r], streams[r]);
  CHILD_CHECK(ncclGroupEnd() == ncclSuccess, "all_gather");
  for (int r = 0; r < kRanks; ++r) CHILD_CHECK(cclabStreamSynchronize(streams[r]) == ncclSuccess, "sync");
  for (int r = 0; r < kRanks; ++r) report(b[r].check(r));
  report("time " + bits_of(sim_now()) + "\n");
}

// A thread per rank (ncclCommInitRank, its own stream, its own synchronisation).
void thread_per_rank_program(int skip_rank = -1) {
  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess) return report("FAIL id\n");
  std::vector<std::string> msgs(kRanks);
  std::vector<double> wall(kRanks, 0);
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r)
    threads.emplace_back([&, r] {
      ncclComm_t comm;
      cudaStream_t s;
      if (ncclCommInitRank(&comm, kRanks, id, r) != ncclSuccess || cclabStreamCreate(&s) != ncclSuccess) {
        msgs[r] = "FAIL init\n";
        return;
      }
      RankBuffers b(r);
      if (r != skip_rank) {
        const auto t0 = std::chrono::steady_clock::now();
        ncclResult_t e = ncclAllReduce(b.in.data(), b.out.data(), kCount, ncclFloat, ncclSum, comm, s);
        if (e == ncclSuccess) e = ncclAllGather(b.in.data(), b.gathered.data(), kCount / 4, ncclFloat, comm, s);
        if (e == ncclSuccess) e = cclabStreamSynchronize(s);
        wall[r] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        msgs[r] = e != ncclSuccess ? std::string("ERROR ") + ncclGetLastError(nullptr) + "\n" : b.check(r);
      }
      if (skip_rank < 0) ncclCommDestroy(comm);
    });
  for (auto& t : threads) t.join();
  for (int r = 0; r < kRanks; ++r) report(msgs[r]);
  double worst = 0;
  for (double w : wall) worst = std::max(worst, w);
  if (skip_rank >= 0) report("wall " + std::to_string(worst) + "\n");
  report("time " + bits_of(sim_now()) + "\n");
}

TEST(SimThreads, ThreadPerRankIsExactAndTimedAsOneThreadDrivingAllRanks) {
  const std::string one = in_child([] { single_thread_program(); });
  ASSERT_EQ(one.find("FAIL"), std::string::npos) << one;
  ASSERT_EQ(one.rfind("time ", 0), 0u) << one;  // no wrong element reported before the time
  for (int run = 0; run < 3; ++run) {
    const std::string threaded = in_child([] { thread_per_rank_program(); });
    // Same collectives, same simulated time, to the bit, however the threads were scheduled.
    EXPECT_EQ(threaded, one) << "run " << run;
  }
}

// Rank 3 skips both collectives and exits: the others' synchronisations fail at once, naming the
// stuck waits, instead of hanging.
TEST(SimThreads, ARankThatSkipsACollectiveFailsTheOthersWithTheStuckWaits) {
  const std::string out = in_child([] { thread_per_rank_program(3); });
  EXPECT_NE(out.find("ERROR"), std::string::npos) << out;
  EXPECT_NE(out.find("deadlocked"), std::string::npos) << out;
  // A stuck wait: rank, channel, peer, step.
  EXPECT_NE(out.find("rank 0 channel 0 waiting for data from rank 3 for step"), std::string::npos) << out;
  const size_t w = out.find("wall ");
  ASSERT_NE(w, std::string::npos) << out;
  EXPECT_LT(std::stod(out.substr(w + 5)), 5.0) << out;
}

// Rank 1's thread waits on the host for rank 0's all_reduce to return before it queues its own: the
// simulated clock cannot advance (rank 1 never waits in cclab), so after CCLAB_SIM_STALL_S rank 0's
// synchronisation fails naming the thread and rank that stayed out, instead of both hanging.
TEST(SimThreads, AHostWaitBetweenRankThreadsFailsInsteadOfHanging) {
  const std::string out = in_child([] {
    setenv("CCLAB_SIM_STALL_S", "1", 1);
    ncclUniqueId id;
    if (ncclGetUniqueId(&id) != ncclSuccess) return report("FAIL id\n");
    std::promise<void> rank0_done;
    std::shared_future<void> done = rank0_done.get_future().share();
    std::vector<std::string> msgs(2);
    double wall = 0;
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r)
      threads.emplace_back([&, r] {
        ncclComm_t comm;
        if (ncclCommInitRank(&comm, 2, id, r) != ncclSuccess) {
          msgs[r] = "FAIL init\n";
          if (r == 0) rank0_done.set_value();
          return;
        }
        std::vector<float> buf(1024, 1.0f);
        if (r == 1) done.wait();  // a host-side wait for the other rank
        const auto t0 = std::chrono::steady_clock::now();
        const ncclResult_t e = ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat, ncclSum, comm, nullptr);
        if (r == 0) {
          wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          rank0_done.set_value();
        }
        msgs[r] = "rank " + std::to_string(r) + (e == ncclSuccess ? " ok" : std::string(" ERROR ") + ncclGetLastError(nullptr)) + "\n";
      });
    for (auto& t : threads) t.join();
    report(msgs[0] + msgs[1] + "wall " + std::to_string(wall) + "\n");
  });
  EXPECT_NE(out.find("rank 0 ERROR"), std::string::npos) << out;
  EXPECT_NE(out.find("simulated clock is stuck"), std::string::npos) << out;
  EXPECT_NE(out.find("(rank 1)"), std::string::npos) << out;
  EXPECT_NE(out.find("rank 1 ERROR"), std::string::npos) << out;  // the world is unusable afterwards
  const size_t w = out.find("wall ");
  ASSERT_NE(w, std::string::npos) << out;
  EXPECT_LT(std::stod(out.substr(w + 5)), 5.0) << out;
}

// ncclSend/ncclRecv: a ring shift (each rank sends to the next, receives from the previous) and an
// all-to-all, both grouped from one thread, on the NULL stream and on streams.
TEST(SimThreads, SendRecvRingShiftAndAllToAllAreExact) {
  const std::string out = in_child([] {
    constexpr int n = 4;
    constexpr size_t count = 70001;  // several FIFO slots, not a multiple of anything
    ncclComm_t comms[n];
    cudaStream_t streams[n];
    CHILD_CHECK(ncclCommInitAll(comms, n, nullptr) == ncclSuccess, "init");
    for (auto& s : streams) CHILD_CHECK(cclabStreamCreate(&s) == ncclSuccess, "stream");
    auto value = [](int from, int to, size_t i) { return static_cast<int32_t>(from * 1000003 + to * 7919 + i); };
    // Ring shift.
    std::vector<std::vector<int32_t>> send(n, std::vector<int32_t>(count)), recv(n, std::vector<int32_t>(count, -1));
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < count; ++i) send[r][i] = value(r, (r + 1) % n, i);
    const double t0 = sim_now();
    ncclGroupStart();
    for (int r = 0; r < n; ++r) {
      ncclSend(send[r].data(), count, ncclInt32, (r + 1) % n, comms[r], nullptr);
      ncclRecv(recv[r].data(), count, ncclInt32, (r + n - 1) % n, comms[r], nullptr);
    }
    CHILD_CHECK(ncclGroupEnd() == ncclSuccess, "ring shift");
    CHILD_CHECK(sim_now() > t0, "ring shift takes simulated time");
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < count; ++i)
        CHILD_CHECK(recv[r][i] == value((r + n - 1) % n, r, i), "ring shift data");
    // All-to-all (every pair, itself included), on streams.
    std::vector<std::vector<int32_t>> a2a_in(n, std::vector<int32_t>(count * n)),
        a2a_out(n, std::vector<int32_t>(count * n, -1));
    for (int r = 0; r < n; ++r)
      for (int q = 0; q < n; ++q)
        for (size_t i = 0; i < count; ++i) a2a_in[r][q * count + i] = value(r, q, i);
    ncclGroupStart();
    for (int r = 0; r < n; ++r)
      for (int q = 0; q < n; ++q) {
        ncclSend(&a2a_in[r][q * count], count, ncclInt32, q, comms[r], streams[r]);
        ncclRecv(&a2a_out[r][q * count], count, ncclInt32, q, comms[r], streams[r]);
      }
    CHILD_CHECK(ncclGroupEnd() == ncclSuccess, "all-to-all");
    for (int r = 0; r < n; ++r) CHILD_CHECK(cclabStreamSynchronize(streams[r]) == ncclSuccess, "all-to-all sync");
    for (int r = 0; r < n; ++r)
      for (int q = 0; q < n; ++q)
        for (size_t i = 0; i < count; ++i)
          CHILD_CHECK(a2a_out[r][q * count + i] == value(q, r, i), "all-to-all data");
    report("ok\n");
  });
  EXPECT_EQ(out, "ok\n");
}

// ncclCommSplit of 8 thread-driven ranks into two halves, an all_reduce on each half at once; then
// ncclCommInitAll of 2 and of 8 in one thread: several communicator sizes in one world.
TEST(SimThreads, SplitAndSeveralSizesInOneProcess) {
  const std::string out = in_child([] {
    constexpr int n = 8;
    constexpr size_t count = 50000;
    ncclUniqueId id;
    CHILD_CHECK(ncclGetUniqueId(&id) == ncclSuccess, "id");
    std::vector<std::string> msgs(n);
    std::vector<std::thread> threads;
    for (int r = 0; r < n; ++r)
      threads.emplace_back([&, r] {
        ncclComm_t comm, half;
        cudaStream_t s;
        if (ncclCommInitRank(&comm, n, id, r) != ncclSuccess || cclabStreamCreate(&s) != ncclSuccess ||
            ncclCommSplit(comm, r / 4, r, &half, nullptr) != ncclSuccess) {
          msgs[r] = std::string("FAIL init/split ") + ncclGetLastError(nullptr) + "\n";
          return;
        }
        int hn = 0, hr = -1;
        ncclCommCount(half, &hn);
        ncclCommUserRank(half, &hr);
        std::vector<int64_t> x(count);
        for (size_t i = 0; i < count; ++i) x[i] = r * 100 + static_cast<int64_t>(i);
        if (ncclAllReduce(x.data(), x.data(), count, ncclInt64, ncclSum, half, s) != ncclSuccess ||
            cclabStreamSynchronize(s) != ncclSuccess) {
          msgs[r] = std::string("FAIL all_reduce ") + ncclGetLastError(nullptr) + "\n";
          return;
        }
        const int64_t base = r < 4 ? 0 + 100 + 200 + 300 : 400 + 500 + 600 + 700;
        for (size_t i = 0; i < count; ++i)
          if (x[i] != base + 4 * static_cast<int64_t>(i)) {
            msgs[r] = "FAIL rank " + std::to_string(r) + " element " + std::to_string(i) + "\n";
            return;
          }
        if (hn != 4 || hr != r % 4) msgs[r] = "FAIL split ranks\n";
        ncclCommDestroy(half);
        ncclCommDestroy(comm);
      });
    for (auto& t : threads) t.join();
    for (auto& m : msgs) report(m);
    // InitAll of 2, then of 8, from this thread.
    for (int size : {2, 8}) {
      std::vector<ncclComm_t> comms(size);
      CHILD_CHECK(ncclCommInitAll(comms.data(), size, nullptr) == ncclSuccess, "init all");
      std::vector<std::vector<uint32_t>> x(size, std::vector<uint32_t>(count));
      for (int r = 0; r < size; ++r)
        for (size_t i = 0; i < count; ++i) x[r][i] = static_cast<uint32_t>(r + i);
      ncclGroupStart();
      for (int r = 0; r < size; ++r) ncclAllReduce(x[r].data(), x[r].data(), count, ncclUint32, ncclMax, comms[r], nullptr);
      CHILD_CHECK(ncclGroupEnd() == ncclSuccess, "all_reduce of " + std::to_string(size));
      for (int r = 0; r < size; ++r)
        for (size_t i = 0; i < count; ++i) CHILD_CHECK(x[r][i] == static_cast<uint32_t>(size - 1 + i), "max");
      for (auto c : comms) ncclCommDestroy(c);
    }
    report("ok\n");
  });
  EXPECT_EQ(out, "ok\n");
}

// Small integers, exact in every type, as the type's bits: n in 0..8.
std::vector<unsigned char> encode(ncclDataType_t t, int n) {
  auto flt = [&](int ebits, int mbits, size_t bytes) {
    uint64_t bits = 0;
    if (n > 0) {
      const int e = static_cast<int>(std::floor(std::log2(n)));
      const uint64_t mant = static_cast<uint64_t>((n / std::ldexp(1.0, e) - 1.0) * std::ldexp(1.0, mbits));
      bits = (static_cast<uint64_t>(e + (1 << (ebits - 1)) - 1) << mbits) | mant;
    }
    std::vector<unsigned char> v(bytes);
    memcpy(v.data(), &bits, bytes);  // little endian
    return v;
  };
  auto integer = [&](size_t bytes) {
    uint64_t u = static_cast<uint64_t>(n);
    std::vector<unsigned char> v(bytes);
    memcpy(v.data(), &u, bytes);
    return v;
  };
  switch (t) {
    case ncclInt8: case ncclUint8: return integer(1);
    case ncclInt32: case ncclUint32: return integer(4);
    case ncclInt64: case ncclUint64: return integer(8);
    case ncclFloat16: return flt(5, 10, 2);
    case ncclBfloat16: return flt(8, 7, 2);
    case ncclFloat32: return flt(8, 23, 4);
    case ncclFloat64: return flt(11, 52, 8);
    case ncclFloat8e4m3: return flt(4, 3, 1);
    case ncclFloat8e5m2: return flt(5, 2, 1);
    default: return {};
  }
}

// All 12 datatypes: an all_reduce (sum) whose result is exact in every type, byte for byte.
TEST(SimThreads, EveryDatatypeAllReducesExactly) {
  const std::string out = in_child([] {
    constexpr int n = 4;
    constexpr size_t count = 20011;
    ncclComm_t comms[n];
    CHILD_CHECK(ncclCommInitAll(comms, n, nullptr) == ncclSuccess, "init");
    auto v = [](int r, size_t i) { return static_cast<int>(((r + i) % 4 == 0) + ((r + 2 * i) % 3 == 0)); };  // 0..2
    for (int t = 0; t < ncclNumTypes; ++t) {
      const auto type = static_cast<ncclDataType_t>(t);
      const size_t es = encode(type, 1).size();
      std::vector<std::vector<unsigned char>> buf(n, std::vector<unsigned char>(count * es));
      for (int r = 0; r < n; ++r)
        for (size_t i = 0; i < count; ++i) memcpy(&buf[r][i * es], encode(type, v(r, i)).data(), es);
      ncclGroupStart();
      for (int r = 0; r < n; ++r) ncclAllReduce(buf[r].data(), buf[r].data(), count, type, ncclSum, comms[r], nullptr);
      CHILD_CHECK(ncclGroupEnd() == ncclSuccess, "type " + std::to_string(t));
      for (int r = 0; r < n; ++r)
        for (size_t i = 0; i < count; ++i) {
          int sum = 0;
          for (int q = 0; q < n; ++q) sum += v(q, i);
          CHILD_CHECK(memcmp(&buf[r][i * es], encode(type, sum).data(), es) == 0,
                      "type " + std::to_string(t) + " rank " + std::to_string(r) + " element " + std::to_string(i));
        }
    }
    report("ok\n");
  });
  EXPECT_EQ(out, "ok\n");
}

// Ranks in separate processes (as an MPI launch would make them) fail at init, saying why.
TEST(SimThreads, RanksInSeparateProcessesFailAtInit) {
  ncclUniqueId id;
  ASSERT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  std::string outs[2];
  std::thread other([&] { outs[1] = in_child([&] {
                            ncclComm_t c;
                            if (ncclCommInitRank(&c, 2, id, 1) != ncclSuccess) report(ncclGetLastError(nullptr));
                          }); });
  outs[0] = in_child([&] {
    ncclComm_t c;
    if (ncclCommInitRank(&c, 2, id, 0) != ncclSuccess) report(ncclGetLastError(nullptr));
  });
  other.join();
  for (const std::string& o : outs) EXPECT_NE(o.find("needs every rank in one process"), std::string::npos) << o;
}

}  // namespace
