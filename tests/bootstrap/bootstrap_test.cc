// tests/bootstrap/bootstrap_test.cc - the rendezvous, all-gather, barrier and tagged messages, with
// ranks as threads of this process and as forked processes; and the failures users meet: a missing
// interface, a rank that never shows up, an abort, ranks that disagree on nranks.
//
// Every test runs on 127.0.0.1 (NCCL_SOCKET_IFNAME=lo, NCCL_SOCKET_FAMILY=AF_INET).
#include "bootstrap/bootstrap.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "base/log.h"
#include "test_env.h"

namespace cclab {
namespace {

using testing_env::read_file;
using testing_env::ScopedEnv;
using testing_env::TempDir;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

class BootstrapTest : public ::testing::Test {
 protected:
  void SetUp() override {
    env_.set("NCCL_SOCKET_IFNAME", "lo");
    env_.set("NCCL_SOCKET_FAMILY", "AF_INET");
    env_.set("CCLAB_BOOTSTRAP_TIMEOUT", "10");  // a broken test fails in 10 s, not 120
    env_.unset("NCCL_COMM_ID");
    env_.unset("NCCL_DEBUG");
  }
  ScopedEnv env_;
};

struct RankResult {
  ncclResult_t create = ncclInternalError;
  ncclResult_t body = ncclInternalError;
  std::string error;
  double seconds = 0;
};

// Runs `body` as ranks [0, nranks) of one group, one thread per rank in `ranks` (default: all).
std::vector<RankResult> run_threads(const ncclUniqueId& id, int nranks,
                                    const std::function<ncclResult_t(Bootstrap&)>& body, std::vector<int> ranks = {},
                                    const std::atomic<int>* abort_flag = nullptr,
                                    std::function<int(int)> claimed_nranks = nullptr) {
  if (ranks.empty()) {
    for (int r = 0; r < nranks; ++r) ranks.push_back(r);
  }
  std::vector<RankResult> results(ranks.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < ranks.size(); ++i) {
    threads.emplace_back([&, i] {
      auto t0 = Clock::now();
      set_log_rank(ranks[i]);
      std::unique_ptr<Bootstrap> b;
      int n = claimed_nranks ? claimed_nranks(ranks[i]) : nranks;
      results[i].create = Bootstrap::create(id, ranks[i], n, abort_flag, &b);
      if (results[i].create == ncclSuccess) {
        results[i].body = body(*b);
      }
      results[i].error = last_error();
      results[i].seconds = seconds_since(t0);
    });
  }
  for (auto& t : threads) t.join();
  return results;
}

// Fills slot `rank` of an allgather buffer with a pattern that names rank and byte.
void fill_slot(std::vector<unsigned char>* buf, size_t bytes, int rank) {
  for (size_t i = 0; i < bytes; ++i) (*buf)[rank * bytes + i] = static_cast<unsigned char>(rank * 31 + i * 7 + 1);
}
bool check_all_slots(const std::vector<unsigned char>& buf, size_t bytes, int nranks) {
  for (int r = 0; r < nranks; ++r) {
    for (size_t i = 0; i < bytes; ++i) {
      if (buf[r * bytes + i] != static_cast<unsigned char>(r * 31 + i * 7 + 1)) return false;
    }
  }
  return true;
}

ncclResult_t allgather_check(Bootstrap& b, size_t bytes) {
  std::vector<unsigned char> buf(bytes * b.nranks(), 0);
  fill_slot(&buf, bytes, b.rank());
  ncclResult_t res = b.allgather(buf.data(), bytes);
  if (res != ncclSuccess) return res;
  return check_all_slots(buf, bytes, b.nranks()) ? ncclSuccess : ncclInternalError;
}

// ---- Success paths -------------------------------------------------------------------------------

class AllgatherThreads : public BootstrapTest, public ::testing::WithParamInterface<int> {};

TEST_P(AllgatherThreads, EveryRankGetsEverySlot) {
  const int n = GetParam();
  ncclUniqueId id;
  ASSERT_EQ(bootstrap_get_unique_id(&id), ncclSuccess) << last_error();
  auto results = run_threads(id, n, [](Bootstrap& b) -> ncclResult_t {
    for (size_t bytes : {size_t{4}, size_t{37}, size_t{0}, size_t{100000}}) {
      ncclResult_t r = allgather_check(b, bytes);
      if (r != ncclSuccess) return r;
    }
    return b.barrier();
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(results[r].create, ncclSuccess) << "rank " << r << ": " << results[r].error;
    EXPECT_EQ(results[r].body, ncclSuccess) << "rank " << r << ": " << results[r].error;
  }
}

INSTANTIATE_TEST_SUITE_P(Sizes, AllgatherThreads, ::testing::Values(1, 2, 3, 8));

TEST_F(BootstrapTest, UniqueIdHoldsLoopbackRoot) {
  ncclUniqueId id;
  ASSERT_EQ(bootstrap_get_unique_id(&id), ncclSuccess) << last_error();
  SocketAddress root;
  uint64_t secret = 0;
  ASSERT_EQ(bootstrap_decode_unique_id(id, &root, &secret), ncclSuccess);
  EXPECT_EQ(socket_address_ip(root), "127.0.0.1");
  EXPECT_NE(socket_address_port(root), 0);
  EXPECT_NE(secret, 0u);
  ncclUniqueId id2;
  ASSERT_EQ(bootstrap_get_unique_id(&id2), ncclSuccess);
  uint64_t secret2 = 0;
  ASSERT_EQ(bootstrap_decode_unique_id(id2, nullptr, &secret2), ncclSuccess);
  EXPECT_NE(secret, secret2);
  // Use both so their roots exit.
  for (const ncclUniqueId* i : {&id, &id2}) {
    auto results = run_threads(*i, 2, [](Bootstrap& b) {
      return socket_address_ip(b.peer_address(1 - b.rank())) == "127.0.0.1" ? ncclSuccess : ncclInternalError;
    });
    for (const auto& r : results) EXPECT_EQ(r.body, ncclSuccess) << r.error;
  }
}

TEST_F(BootstrapTest, BarrierWaitsForEveryRank) {
  const int n = 4;
  ncclUniqueId id;
  ASSERT_EQ(bootstrap_get_unique_id(&id), ncclSuccess);
  std::atomic<int> entered{0};
  std::atomic<int> early_exits{0};
  auto results = run_threads(id, n, [&](Bootstrap& b) {
    std::this_thread::sleep_for(std::chrono::milliseconds(40 * b.rank()));
    entered.fetch_add(1);
    ncclResult_t r = b.barrier();
    if (entered.load() != n) early_exits.fetch_add(1);
    return r;
  });
  for (const auto& r : results) EXPECT_EQ(r.body, ncclSuccess) << r.error;
  EXPECT_EQ(early_exits.load(), 0);
}

TEST_F(BootstrapTest, TaggedSendRecvOutOfOrder) {
  const int n = 3;
  ncclUniqueId id;
  ASSERT_EQ(bootstrap_get_unique_id(&id), ncclSuccess);
  auto results = run_threads(id, n, [&](Bootstrap& b) -> ncclResult_t {
    const int me = b.rank();
    // Everyone sends tags 1..3 to everyone else (and itself), in order...
    for (int peer = 0; peer < n; ++peer) {
      for (int tag = 1; tag <= 3; ++tag) {
        int value = me * 100 + peer * 10 + tag;
        ncclResult_t r = b.send(peer, tag, &value, sizeof(value));
        if (r != ncclSuccess) return r;
      }
    }
    // ...and receives them in reverse tag order, which forces queueing of unexpected tags.
    for (int peer = n - 1; peer >= 0; --peer) {
      for (int tag = 3; tag >= 1; --tag) {
        int value = -1;
        ncclResult_t r = b.recv(peer, tag, &value, sizeof(value));
        if (r != ncclSuccess) return r;
        if (value != peer * 100 + me * 10 + tag) return report_error(ncclInternalError, "wrong value %d", value);
      }
    }
    // Repeated tags are delivered in order.
    for (int i = 0; i < 3; ++i) {
      int v = i;
      CCLAB_CHECK(b.send((me + 1) % n, 7, &v, sizeof(v)));
    }
    for (int i = 0; i < 3; ++i) {
      int v = -1;
      CCLAB_CHECK(b.recv((me + n - 1) % n, 7, &v, sizeof(v)));
      if (v != i) return report_error(ncclInternalError, "repeated tag out of order: %d", v);
    }
    return b.barrier();
  });
  for (const auto& r : results) {
    EXPECT_EQ(r.create, ncclSuccess) << r.error;
    EXPECT_EQ(r.body, ncclSuccess) << r.error;
  }
}

TEST_F(BootstrapTest, LargeMessagesAndInterleavedCollectives) {
  ncclUniqueId id;
  ASSERT_EQ(bootstrap_get_unique_id(&id), ncclSuccess);
  auto results = run_threads(id, 2, [&](Bootstrap& b) -> ncclResult_t {
    const int peer = 1 - b.rank();
    std::vector<char> out(1 << 20, static_cast<char>('A' + b.rank())), in(1 << 20);
    // Rank 0 sends first, rank 1 receives first: no deadlock even though 1 MiB exceeds small buffers.
    if (b.rank() == 0) {
      CCLAB_CHECK(b.send(peer, 1, out.data(), out.size()));
      CCLAB_CHECK(b.recv(peer, 1, in.data(), in.size()));
    } else {
      CCLAB_CHECK(b.recv(peer, 1, in.data(), in.size()));
      CCLAB_CHECK(b.send(peer, 1, out.data(), out.size()));
    }
    if (in != std::vector<char>(1 << 20, static_cast<char>('A' + peer))) return ncclInternalError;
    CCLAB_CHECK(allgather_check(b, 8));
    CCLAB_CHECK(b.send(peer, 2, nullptr, 0));  // empty messages are messages too
    CCLAB_CHECK(b.recv(peer, 2, nullptr, 0));
    return b.barrier();
  });
  for (const auto& r : results) EXPECT_EQ(r.body, ncclSuccess) << r.error;
}

TEST_F(BootstrapTest, RecvSizeMismatchIsInvalidUsage) {
  ncclUniqueId id;
  ASSERT_EQ(bootstrap_get_unique_id(&id), ncclSuccess);
  auto results = run_threads(id, 2, [&](Bootstrap& b) -> ncclResult_t {
    if (b.rank() == 0) {
      int64_t v = 1;
      CCLAB_CHECK(b.send(1, 4, &v, sizeof(v)));
      return b.barrier();
    }
    int32_t small = 0;
    ncclResult_t r = b.recv(0, 4, &small, sizeof(small));
    std::string err = last_error();
    CCLAB_CHECK(b.barrier());
    set_last_error(err.c_str());
    return r;
  });
  EXPECT_EQ(results[0].body, ncclSuccess) << results[0].error;
  EXPECT_EQ(results[1].body, ncclInvalidUsage);
  EXPECT_NE(results[1].error.find("expected 4 bytes with tag 4 from rank 0"), std::string::npos) << results[1].error;
  EXPECT_NE(results[1].error.find("8 were sent"), std::string::npos) << results[1].error;
}

TEST_F(BootstrapTest, MismatchedRingCallsAreReported) {
  ncclUniqueId id;
  ASSERT_EQ(bootstrap_get_unique_id(&id), ncclSuccess);
  auto results = run_threads(id, 2, [&](Bootstrap& b) -> ncclResult_t {
    return b.rank() == 0 ? allgather_check(b, 8) : allgather_check(b, 16);
  });
  for (const auto& r : results) {
    EXPECT_EQ(r.body, ncclInvalidUsage) << r.error;
    EXPECT_NE(r.error.find("every rank must make the same bootstrap calls"), std::string::npos) << r.error;
  }
}

TEST_F(BootstrapTest, LogsInterfaceAndTimings) {
  TempDir dir;
  env_.set("NCCL_DEBUG", "INFO");
  env_.set("NCCL_DEBUG_SUBSYS", "INIT,BOOTSTRAP");
  env_.set("NCCL_DEBUG_FILE", dir.path() + "/boot.log");
  ncclUniqueId id;
  ASSERT_EQ(bootstrap_get_unique_id(&id), ncclSuccess);
  auto results = run_threads(id, 2, [](Bootstrap& b) { return b.barrier(); });
  for (const auto& r : results) EXPECT_EQ(r.body, ncclSuccess) << r.error;
  reset_log_for_testing();
  std::string log = read_file(dir.path() + "/boot.log");
  EXPECT_NE(log.find("[0] NCCL INFO Bootstrap : Using [0]lo:127.0.0.1<0>"), std::string::npos) << log;
  EXPECT_NE(log.find("[1] NCCL INFO Bootstrap timings rank 1/2 total"), std::string::npos) << log;
}

TEST_F(BootstrapTest, CommIdNamesTheRoot) {
  // A port that is free now.
  SocketAddress any;
  ASSERT_EQ(socket_address_from_string("127.0.0.1:1", &any), ncclSuccess);
  socket_address_set_port(&any, 0);
  SocketAddress bound;
  {
    Socket l;
    ASSERT_TRUE(Socket::listen(any, &l, &bound).ok());
  }
  std::string comm_id = socket_address_to_string(bound);
  env_.set("NCCL_COMM_ID", comm_id);

  // (a) ncclGetUniqueId encodes NCCL_COMM_ID and starts the root there.
  ncclUniqueId id;
  ASSERT_EQ(bootstrap_get_unique_id(&id), ncclSuccess) << last_error();
  SocketAddress root;
  ASSERT_EQ(bootstrap_decode_unique_id(id, &root, nullptr), ncclSuccess);
  EXPECT_EQ(socket_address_to_string(root), comm_id);
  auto results = run_threads(id, 3, [](Bootstrap& b) { return allgather_check(b, 12); });
  for (const auto& r : results) EXPECT_EQ(r.body, ncclSuccess) << r.error;

  // (b) No id exchanged at all: an all-zero id, and rank 0 starts the root.
  ncclUniqueId zero;
  memset(&zero, 0, sizeof(zero));
  results = run_threads(zero, 3, [](Bootstrap& b) { return allgather_check(b, 12); });
  for (const auto& r : results) EXPECT_EQ(r.body, ncclSuccess) << r.error;
}

TEST_F(BootstrapTest, ZeroIdWithoutCommIdIsInvalidArgument) {
  ncclUniqueId zero;
  memset(&zero, 0, sizeof(zero));
  std::unique_ptr<Bootstrap> b;
  EXPECT_EQ(Bootstrap::create(zero, 0, 1, nullptr, &b), ncclInvalidArgument);
  EXPECT_NE(std::string(last_error()).find("NCCL_COMM_ID"), std::string::npos) << last_error();
  EXPECT_EQ(Bootstrap::create(zero, 3, 2, nullptr, &b), ncclInvalidArgument);
  EXPECT_NE(std::string(last_error()).find("rank 3 is out of range for nranks=2"), std::string::npos) << last_error();
}

// ---- Forked processes ----------------------------------------------------------------------------

// The child's whole life: no gtest assertions (they would report in the wrong process), just an exit
// code; _exit skips the static destructors that belong to the parent's threads.
[[noreturn]] void child_rank(const ncclUniqueId& id, int rank, int nranks) {
  std::unique_ptr<Bootstrap> b;
  ncclResult_t r = Bootstrap::create(id, rank, nranks, nullptr, &b);
  if (r == ncclSuccess) r = allgather_check(*b, 64);
  if (r == ncclSuccess) {
    int next = (rank + 1) % nranks, prev = (rank + nranks - 1) % nranks;
    int v = rank * 7;
    r = b->send(next, 42, &v, sizeof(v));
    if (r == ncclSuccess) r = b->recv(prev, 42, &v, sizeof(v));
    if (r == ncclSuccess && v != prev * 7) r = ncclInternalError;
  }
  if (r == ncclSuccess) r = b->barrier();
  if (r != ncclSuccess) fprintf(stderr, "child rank %d failed (%d): %s\n", rank, r, last_error());
  fflush(stderr);
  _exit(r == ncclSuccess ? 0 : 10 + r);
}

TEST_F(BootstrapTest, RanksAsForkedProcesses) {
  const int n = 4;
  ncclUniqueId id;
  ASSERT_EQ(bootstrap_get_unique_id(&id), ncclSuccess);  // the root thread stays in this process
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) child_rank(id, r, n);
    pids.push_back(pid);
  }
  auto t0 = Clock::now();
  for (int r = 0; r < n; ++r) {
    int status = 0;
    pid_t got = 0;
    while ((got = waitpid(pids[r], &status, WNOHANG)) == 0 && seconds_since(t0) < 15) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (got == 0) {
      kill(pids[r], SIGKILL);
      waitpid(pids[r], &status, 0);
      ADD_FAILURE() << "rank " << r << " hung";
      continue;
    }
    ASSERT_TRUE(WIFEXITED(status)) << "rank " << r;
    EXPECT_EQ(WEXITSTATUS(status), 0) << "rank " << r;
  }
}

// ---- Failures ------------------------------------------------------------------------------------

TEST_F(BootstrapTest, MissingInterfaceIsAClearError) {
  env_.set("NCCL_SOCKET_IFNAME", "doesnotexist0");
  ncclUniqueId id;
  EXPECT_EQ(bootstrap_get_unique_id(&id), ncclInvalidUsage);
  std::string err = last_error();
  EXPECT_NE(err.find("NCCL_SOCKET_IFNAME=doesnotexist0"), std::string::npos) << err;
  EXPECT_NE(err.find("interfaces present: "), std::string::npos) << err;
  EXPECT_NE(err.find("lo (127.0.0.1"), std::string::npos) << err;
}

TEST_F(BootstrapTest, MissingRankFailsOthersWithinTimeout) {
  env_.set("CCLAB_BOOTSTRAP_TIMEOUT", "2");
  ncclUniqueId id;
  ASSERT_EQ(bootstrap_get_unique_id(&id), ncclSuccess);
  auto t0 = Clock::now();
  auto results = run_threads(id, 3, [](Bootstrap& b) { return b.barrier(); }, /*ranks=*/{0, 1});
  double dt = seconds_since(t0);
  EXPECT_LT(dt, 4.5);
  for (const auto& r : results) {
    EXPECT_EQ(r.create, ncclRemoteError) << r.error;
    EXPECT_NE(r.error.find("2 of 3 arrived; missing rank 2"), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("timed out after 2 s"), std::string::npos) << r.error;
  }
}

TEST_F(BootstrapTest, RootGoneIsConnectionRefused) {
  env_.set("CCLAB_BOOTSTRAP_TIMEOUT", "1");
  ncclUniqueId id;
  ASSERT_EQ(bootstrap_get_unique_id(&id), ncclSuccess);
  SocketAddress root;
  ASSERT_EQ(bootstrap_decode_unique_id(id, &root, nullptr), ncclSuccess);
  bootstrap_stop_roots();  // closes the root's listener: nothing answers at that address now
  std::unique_ptr<Bootstrap> b;
  auto t0 = Clock::now();
  EXPECT_EQ(Bootstrap::create(id, 1, 2, nullptr, &b), ncclSystemError);
  EXPECT_LT(seconds_since(t0), 2.0);
  EXPECT_EQ(std::string(last_error()), "bootstrap: rank 1 could not connect to root " + socket_address_to_string(root) +
                                           ": Connection refused (retried for 1 s)");
}

TEST_F(BootstrapTest, AbortFlagUnblocksWaitingRank) {
  ncclUniqueId id;
  ASSERT_EQ(bootstrap_get_unique_id(&id), ncclSuccess);
  std::atomic<int> abort_flag{0};
  std::thread raiser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    abort_flag.store(1);
  });
  // Rank 1 never comes: rank 0 waits for the address table until the flag goes up.
  auto results = run_threads(
      id, 2, [](Bootstrap& b) { return b.barrier(); }, {0}, &abort_flag);
  raiser.join();
  EXPECT_EQ(results[0].create, ncclInternalError) << results[0].error;
  EXPECT_LT(results[0].seconds, 0.3 + 0.35);
  EXPECT_NE(results[0].error.find("aborted"), std::string::npos) << results[0].error;
}

TEST_F(BootstrapTest, AbortFlagUnblocksRecv) {
  ncclUniqueId id;
  ASSERT_EQ(bootstrap_get_unique_id(&id), ncclSuccess);
  std::atomic<int> abort_flag{0};
  std::atomic<int> created{0};
  std::thread raiser([&] {
    while (created.load() < 2) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    abort_flag.store(1);
  });
  std::vector<double> waited(2);
  auto results = run_threads(
      id, 2,
      [&](Bootstrap& b) {
        created.fetch_add(1);
        auto t0 = Clock::now();
        int v = 0;
        // Both wait for a message the other never sends.
        ncclResult_t r = b.recv(1 - b.rank(), 9, &v, sizeof(v));
        waited[b.rank()] = seconds_since(t0);
        return r;
      },
      {}, &abort_flag);
  raiser.join();
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(results[r].body, ncclInternalError) << results[r].error;
    EXPECT_LT(waited[r], 0.2 + 0.35);
    EXPECT_NE(results[r].error.find("was aborted"), std::string::npos) << results[r].error;
  }
}

TEST_F(BootstrapTest, MismatchedNranksIsInvalidUsage) {
  ncclUniqueId id;
  ASSERT_EQ(bootstrap_get_unique_id(&id), ncclSuccess);
  auto results = run_threads(
      id, 2, [](Bootstrap& b) { return b.barrier(); }, {0, 1}, nullptr, [](int rank) { return rank == 0 ? 2 : 3; });
  for (const auto& r : results) {
    EXPECT_EQ(r.create, ncclInvalidUsage) << r.error;
    // Whichever arrived second is named as disagreeing with the first.
    EXPECT_NE(r.error.find("says nranks="), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("nranks=2"), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("nranks=3"), std::string::npos) << r.error;
  }
}

TEST_F(BootstrapTest, DuplicateRankIsInvalidUsage) {
  ncclUniqueId id;
  ASSERT_EQ(bootstrap_get_unique_id(&id), ncclSuccess);
  auto results = run_threads(id, 2, [](Bootstrap& b) { return b.barrier(); }, {1, 1});
  for (const auto& r : results) {
    EXPECT_EQ(r.create, ncclInvalidUsage) << r.error;
    EXPECT_NE(r.error.find("rank 1 joined twice"), std::string::npos) << r.error;
  }
}

TEST_F(BootstrapTest, StrayConnectionsAreRejected) {
  ncclUniqueId id;
  ASSERT_EQ(bootstrap_get_unique_id(&id), ncclSuccess);
  SocketAddress root;
  ASSERT_EQ(bootstrap_decode_unique_id(id, &root, nullptr), ncclSuccess);
  {
    // Garbage, then a connection that hangs up at once.
    Socket s;
    ASSERT_TRUE(Socket::connect(root, Deadline(5, nullptr), &s).ok());
    std::vector<char> junk(256, 'x');
    ASSERT_TRUE(s.send_all(junk.data(), junk.size(), Deadline(5, nullptr)).ok());
    Socket t;
    ASSERT_TRUE(Socket::connect(root, Deadline(5, nullptr), &t).ok());
  }
  // A rank holding the right address but the wrong secret (another job's id, say).
  ncclUniqueId wrong = id;
  wrong.internal[8] ^= 0x5a;
  std::unique_ptr<Bootstrap> stray;
  ncclResult_t stray_result = Bootstrap::create(wrong, 0, 2, nullptr, &stray);
  std::string stray_error = last_error();
  EXPECT_EQ(stray_result, ncclRemoteError);
  EXPECT_NE(stray_error.find("closed"), std::string::npos) << stray_error;
  // The real ranks are unaffected.
  auto results = run_threads(id, 2, [](Bootstrap& b) { return allgather_check(b, 16); });
  for (const auto& r : results) EXPECT_EQ(r.body, ncclSuccess) << r.error;
}

TEST_F(BootstrapTest, CorruptIdIsInvalidArgument) {
  ncclUniqueId id;
  memset(&id, 0, sizeof(id));
  id.internal[0] = 1;
  std::unique_ptr<Bootstrap> b;
  EXPECT_EQ(Bootstrap::create(id, 0, 1, nullptr, &b), ncclInvalidArgument);
  EXPECT_NE(std::string(last_error()).find("not made by ncclGetUniqueId"), std::string::npos) << last_error();
}

TEST_F(BootstrapTest, IPv6LoopbackWorks) {
  bool have_v6_lo = false;
  for (const auto& i : list_interfaces(AF_INET6)) have_v6_lo = have_v6_lo || i.name == "lo";
  if (!have_v6_lo) GTEST_SKIP() << "no IPv6 address on lo";
  env_.set("NCCL_SOCKET_FAMILY", "AF_INET6");
  ncclUniqueId id;
  ASSERT_EQ(bootstrap_get_unique_id(&id), ncclSuccess) << last_error();
  SocketAddress root;
  ASSERT_EQ(bootstrap_decode_unique_id(id, &root, nullptr), ncclSuccess);
  EXPECT_EQ(socket_address_ip(root), "::1");
  auto results = run_threads(id, 3, [](Bootstrap& b) { return allgather_check(b, 5); });
  for (const auto& r : results) EXPECT_EQ(r.body, ncclSuccess) << r.error;
}

TEST_F(BootstrapTest, RootsExitOnceDone) {
  ncclUniqueId id;
  ASSERT_EQ(bootstrap_get_unique_id(&id), ncclSuccess);
  auto results = run_threads(id, 2, [](Bootstrap& b) { return b.barrier(); });
  for (const auto& r : results) EXPECT_EQ(r.body, ncclSuccess) << r.error;
  // Roots of earlier tests may still wait (the missing-rank one until its timeout); stop them all.
  bootstrap_stop_roots();
  EXPECT_EQ(bootstrap_active_roots(), 0);
  // An unused id's root does not keep the process alive either: it is stopped at exit.
  ASSERT_EQ(bootstrap_get_unique_id(&id), ncclSuccess);
  EXPECT_EQ(bootstrap_active_roots(), 1);
}

// A forked child drops the roots it inherited (their threads stayed in the parent) and reaps the ones it
// starts itself once they are done, as any process does: a launcher that forks workers after using
// cclab must not pile up finished root threads in them.
TEST_F(BootstrapTest, ForkedChildReapsItsOwnRoots) {
#ifdef CCLAB_TSAN
  GTEST_SKIP() << "ThreadSanitizer cannot start threads in a child forked from a multi-threaded process";
#endif
  ncclUniqueId unused;
  ASSERT_EQ(bootstrap_get_unique_id(&unused), ncclSuccess);  // a root the child inherits, never used
  ASSERT_GE(bootstrap_active_roots(), 1);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int code = 0;
    for (int round = 0; round < 3 && code == 0; ++round) {
      ncclUniqueId id;
      if (bootstrap_get_unique_id(&id) != ncclSuccess) code = 2;
      for (const auto& r : run_threads(id, 2, [](Bootstrap& b) { return b.barrier(); }))
        if (r.body != ncclSuccess) code = 3;
    }
    // Every root this child started has served its ranks and exits; none of the parent's is counted.
    const auto t0 = Clock::now();
    while (code == 0 && bootstrap_active_roots() != 0) {
      if (seconds_since(t0) > 10) code = 4;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    _exit(code);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: no unique id, 3: a bootstrap failed, 4: roots still counted";
  EXPECT_GE(bootstrap_active_roots(), 1);  // the parent's unused root is still its own
  bootstrap_stop_roots();
}

}  // namespace
}  // namespace cclab
