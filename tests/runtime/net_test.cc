// NET/Socket between ranks on different hosts. The hosts are played by processes of this machine with
// different NCCL_HOSTID values (NCCL's override of the host identity), so every connection between
// two "hosts" is a TCP connection over NCCL_SOCKET_IFNAME=lo driven by proxy threads, and connections
// inside a host stay on SHM. Children as in child_procs.h.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "../base/test_env.h"
#include "child_procs.h"

namespace {

using namespace cclab_test;
using cclab::testing_env::read_file;
using cclab::testing_env::ScopedEnv;
using cclab::testing_env::TempDir;

// How many ranks share each "host": 2 ranks = 1 + 1 (every connection NET), 4 ranks = 2 + 2 (SHM inside
// a host, NET between).
struct Layout {
  int nranks;
  int per_host;
  const char* proto;  // NCCL_PROTO for every call ("" = the tuner's choice)
};

std::string host_of(int rank, int per_host) { return "cclab-test-host-" + std::to_string(rank / per_host); }

// The child's environment: its host, its log in `dir` (INIT and NET at INFO), and the protocol. The
// parameter and log caches start afresh (the parent's ncclGetUniqueId of an earlier test filled them).
std::string child_log(const std::string& dir, int rank) { return dir + "/rank" + std::to_string(rank) + ".log"; }
void child_env(ScopedEnv* env, const std::string& dir, int rank, int per_host, const char* proto) {
  env->set("NCCL_HOSTID", host_of(rank, per_host));
  env->set("NCCL_SOCKET_IFNAME", "lo");  // traffic stays on this machine
  env->set("NCCL_DEBUG", "INFO");
  env->set("NCCL_DEBUG_SUBSYS", "INIT,NET");
  env->set("NCCL_DEBUG_FILE", child_log(dir, rank));
  if (proto && *proto) env->set("NCCL_PROTO", proto);
}

// Every ring connection of `rank` says which transport it takes: NET to a rank of another host, SHM
// to one of the same host ("Channel 00/0 : 0[0] -> 1[1] via NET/Socket/0").
std::string check_transports(const std::string& log, int rank, int n, int per_host) {
  size_t lines = 0;
  for (size_t pos = log.find("Channel "); pos != std::string::npos; pos = log.find("Channel ", pos + 1)) {
    const size_t eol = log.find('\n', pos);
    const std::string line = log.substr(pos, eol - pos);
    int c = 0, x = 0, me = -1, dme = 0, peer = -1, dpeer = 0;
    char via[64] = "";
    if (sscanf(line.c_str(), "Channel %d/%d : %d[%d] -> %d[%d] via %63s", &c, &x, &me, &dme, &peer, &dpeer, via) != 7)
      continue;
    if (me != rank || peer < 0 || peer >= n) return "unexpected log line: " + line;
    const bool same_host = me / per_host == peer / per_host;
    const std::string want = same_host ? "SHM" : "NET/Socket/0";
    if (via != want) return "rank " + std::to_string(me) + " -> " + std::to_string(peer) + " via " + via + ", want " + want;
    ++lines;
  }
  if (lines == 0) return "no 'Channel .. via' line in the log:\n" + log;
  if ((n + per_host - 1) / per_host > 1 && log.find("NET/Socket : Using [0]lo:") == std::string::npos)
    return "the log does not say NET/Socket uses lo:\n" + log;
  return "";
}

class NetAcrossHosts : public ::testing::TestWithParam<Layout> {};

// Every collective of child_procs.h's set (AllReduce of 12 MiB, AllGather, Broadcast, ReduceScatter,
// a Send/Recv ring of 5 MiB messages), on a stream and on the NULL stream, byte for byte.
TEST_P(NetAcrossHosts, CollectivesAreByteExact) {
  const Layout l = GetParam();
  TempDir tmp;
  const std::string dir = tmp.path();
  ncclUniqueId id;
  std::vector<ChildResult> res = run_children(
      l.nranks,
      [&](int rank, const ncclUniqueId& uid) -> std::string {
        ScopedEnv env;
        child_env(&env, dir, rank, l.per_host, l.proto);
        ncclComm_t comm = nullptr;
        CHILD_OK(ncclCommInitRank(&comm, l.nranks, uid, rank));
        std::string e = check_transports(read_file(child_log(dir, rank)), rank, l.nranks, l.per_host);
        if (!e.empty()) return e;
        cudaStream_t s;
        CHILD_OK(cclabStreamCreate(&s));
        if (!(e = run_collectives(comm, l.nranks, rank, s)).empty()) return "host stream: " + e;
        if (!(e = run_collectives(comm, l.nranks, rank, nullptr)).empty()) return "NULL stream: " + e;
        CHILD_OK(cclabStreamDestroy(s));
        CHILD_OK(ncclCommDestroy(comm));
        // Ranks destroy at different times; the goodbye on each connection keeps that quiet.
        const std::string log = read_file(child_log(dir, rank));
        if (log.find(" WARN ") != std::string::npos) return "a warning in the log:\n" + log;
        return "";
      },
      &id);
  for (const ChildResult& c : res) EXPECT_TRUE(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0) << describe(c);
}

INSTANTIATE_TEST_SUITE_P(Layouts, NetAcrossHosts,
                         ::testing::Values(Layout{2, 1, ""}, Layout{4, 2, ""}, Layout{3, 1, "LL"},
                                           Layout{4, 2, "LL128"}, Layout{3, 2, "Simple"}),
                         [](const ::testing::TestParamInfo<Layout>& i) {
                           return std::to_string(i.param.nranks) + "ranks_" + std::to_string(i.param.per_host) +
                                  "perhost" + (*i.param.proto ? std::string("_") + i.param.proto : "");
                         });

// A rank about to die must not go before the others have all of its data: it waits until they say
// so through a pipe the test made before forking (each survivor writes a byte).
struct DeathPact {
  int fds[2] = {-1, -1};
  DeathPact() { EXPECT_EQ(pipe(fds), 0); }
  ~DeathPact() {
    close(fds[0]);
    close(fds[1]);
  }
  void survived() const { EXPECT_EQ(write(fds[1], "x", 1), 1); }
  void die_after(int survivors) const {
    char c;
    for (int i = 0; i < survivors; ++i)
      if (read(fds[0], &c, 1) != 1) break;
    _exit(0);  // without a word: no destroy, no abort
  }
};

// Runs body(rank, id) in `n` child processes, each a host of its own, with `settings` in their
// environment, and expects all to pass.
void on_hosts(int n, const std::vector<std::pair<std::string, std::string>>& settings,
              const std::function<std::string(int, const ncclUniqueId&)>& body) {
  TempDir tmp;
  const std::string dir = tmp.path();
  ncclUniqueId id;
  std::vector<ChildResult> res = run_children(
      n,
      [&](int rank, const ncclUniqueId& uid) -> std::string {
        ScopedEnv env;
        child_env(&env, dir, rank, 1, "");
        for (const auto& kv : settings) env.set(kv.first, kv.second);
        return body(rank, uid);
      },
      &id);
  for (const ChildResult& c : res) EXPECT_TRUE(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0) << describe(c);
}

// A survivor's side of a broken connection: an all_reduce fails with ncclRemoteError (also the
// communicator's async error) within 10 s, naming a NET connection (with `peer`, unless nullptr).
// With `abort`, aborts the communicator after.
std::string expect_remote_error(ncclComm_t comm, size_t count, const char* peer, bool abort = true) {
  std::vector<float> buf(count, 1.0f);
  const double t0 = now_s();
  const ncclResult_t r = ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat, ncclSum, comm, nullptr);
  const double took = now_s() - t0;
  const std::string msg = ncclGetLastError(comm);
  ncclResult_t async = ncclSuccess;
  CHILD_OK(ncclCommGetAsyncError(comm, &async));
  if (abort) ncclCommAbort(comm);
  if (r != ncclRemoteError) return std::string("the call returned ") + ncclGetErrorString(r) + ": " + msg;
  if (async != ncclRemoteError) return std::string("async error ") + ncclGetErrorString(async);
  if (took > 10) return "the failure took " + std::to_string(took) + " s";
  if (msg.find("NET/Socket") == std::string::npos || (peer && msg.find(peer) == std::string::npos))
    return std::string("the message does not name ") + (peer ? peer : "") + "'s NET connection: " + msg;
  return "";
}

// A peer process that dies (no ncclCommDestroy, no abort: its sockets just close) makes the next
// collective fail with ncclRemoteError naming it, quickly, and not through CCLAB_TIMEOUT (off).
TEST(NetFailures, DeadPeerIsARemoteErrorNotAHang) {
  DeathPact pact;
  on_hosts(2, {{"CCLAB_TIMEOUT", "0"}}, [&](int rank, const ncclUniqueId& uid) -> std::string {
    ncclComm_t comm = nullptr;
    CHILD_OK(ncclCommInitRank(&comm, 2, uid, rank));
    std::vector<float> buf(1 << 20, 1.0f);
    CHILD_OK(ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat, ncclSum, comm, nullptr));
    if (rank == 1) pact.die_after(1);
    pact.survived();
    return expect_remote_error(comm, 1 << 20, "rank 1");
  });
}

// A peer that aborts its communicator instead of joining a collective releases the rank waiting
// for it, with ncclRemoteError.
TEST(NetFailures, AbortedPeerReleasesTheWaitingRank) {
  on_hosts(2, {{"CCLAB_TIMEOUT", "0"}}, [](int rank, const ncclUniqueId& uid) -> std::string {
    ncclComm_t comm = nullptr;
    CHILD_OK(ncclCommInitRank(&comm, 2, uid, rank));
    if (rank == 0) return expect_remote_error(comm, 1 << 16, "rank 1");
    usleep(300 * 1000);  // rank 0 is waiting by now
    CHILD_OK(ncclCommAbort(comm));
    return "";
  });
}

// The survivors of a dead peer (one of 3 hosts) both learn of it - the one that talks to it from
// the closed socket, the other because the first one's stopped communicator closes its connections
// too - and carry on without it: ncclCommShrink(NCCL_SHRINK_ABORT) gives them a communicator of two,
// whose all_reduce is byte-exact.
TEST(NetFailures, SurvivorsShrinkPastADeadPeer) {
  const int n = 3;
  DeathPact pact;
  on_hosts(n, {{"CCLAB_TIMEOUT", "0"}}, [&](int rank, const ncclUniqueId& uid) -> std::string {
    ncclComm_t comm = nullptr;
    CHILD_OK(ncclCommInitRank(&comm, n, uid, rank));
    std::vector<float> buf(1 << 18, 1.0f);
    CHILD_OK(ncclAllReduce(buf.data(), buf.data(), buf.size(), ncclFloat, ncclSum, comm, nullptr));
    if (rank == 2) pact.die_after(2);
    pact.survived();
    std::string e = expect_remote_error(comm, 1 << 18, nullptr, /*abort=*/false);
    if (!e.empty()) return e;
    // Stopped, not usable: a further call says why.
    if (ncclAllReduce(buf.data(), buf.data(), 1, ncclFloat, ncclSum, comm, nullptr) == ncclSuccess)
      return "a call on the stopped communicator succeeded";
    const std::string why = ncclGetLastError(comm);
    if (why.find("was stopped") == std::string::npos || why.find("NET/Socket") == std::string::npos ||
        why.find("ncclCommShrink") == std::string::npos)
      return "a call on the stopped communicator does not say what to do: " + why;
    int dead = 2;
    ncclComm_t small = nullptr;
    CHILD_OK(ncclCommShrink(comm, &dead, 1, &small, nullptr, NCCL_SHRINK_ABORT));
    int count = 0;
    CHILD_OK(ncclCommCount(small, &count));
    if (count != 2) return "the shrunk communicator has " + std::to_string(count) + " ranks";
    std::vector<float> in(1 << 16), out(1 << 16, -1.0f), want(1 << 16);
    for (size_t i = 0; i < in.size(); ++i) {
      in[i] = value(rank, i);
      want[i] = value(0, i) + value(1, i);
    }
    CHILD_OK(ncclAllReduce(in.data(), out.data(), in.size(), ncclFloat, ncclSum, small, nullptr));
    if (!(e = compare("AllReduce after the shrink", out, want)).empty()) return e;
    CHILD_OK(ncclCommDestroy(small));
    // The parent stays stopped after the shrink: work on it is refused, it does not hang.
    if (ncclAllReduce(buf.data(), buf.data(), 1, ncclFloat, ncclSum, comm, nullptr) == ncclSuccess)
      return "a call on the shrunk parent succeeded";
    CHILD_OK(ncclCommDestroy(comm));
    return "";
  });
}

// A connection made on first use (here a send/recv pair) waits for the peer's first use as long as
// CCLAB_TIMEOUT allows, as P2P and SHM connections do, not only CCLAB_BOOTSTRAP_TIMEOUT.
TEST(NetTransport, FirstUseWaitsForALatePeerUpToCclabTimeout) {
  on_hosts(2, {{"CCLAB_BOOTSTRAP_TIMEOUT", "3"}, {"CCLAB_TIMEOUT", "30"}},
               [](int rank, const ncclUniqueId& uid) -> std::string {
                 ncclComm_t comm = nullptr;
                 CHILD_OK(ncclCommInitRank(&comm, 2, uid, rank));
                 std::vector<int32_t> buf(4099), want(4099);
                 for (size_t i = 0; i < buf.size(); ++i) want[i] = static_cast<int32_t>(i * 2654435761u);
                 if (rank == 0) {
                   buf = want;
                   CHILD_OK(ncclSend(buf.data(), buf.size(), ncclInt32, 1, comm, nullptr));
                 } else {
                   usleep(4500 * 1000);  // longer than CCLAB_BOOTSTRAP_TIMEOUT
                   CHILD_OK(ncclRecv(buf.data(), buf.size(), ncclInt32, 0, comm, nullptr));
                 }
                 std::string e = compare("the message", buf, want);
                 CHILD_OK(ncclCommDestroy(comm));
                 return e;
               });
}

// Destroying a communicator whose send proxies cannot deliver (the peer never takes the data) waits
// for all of them together, at most min(CCLAB_TIMEOUT, 30 s) in all - not that long per connection.
TEST(NetTransport, DestroyDrainsAllConnectionsAtOnce) {
  on_hosts(2, {{"CCLAB_TIMEOUT", "1"}, {"NCCL_MIN_NCHANNELS", "4"}, {"NCCL_MAX_NCHANNELS", "4"},
                {"NCCL_PROTO", "Simple"}},
               [](int rank, const ncclUniqueId& uid) -> std::string {
                 ncclComm_t comm = nullptr;
                 CHILD_OK(ncclCommInitRank(&comm, 2, uid, rank));
                 if (rank == 1) {  // takes no part, and stays up while rank 0 gives up
                   usleep(5 * 1000 * 1000);
                   ncclCommAbort(comm);
                   return "";
                 }
                 // More than the 4 connections hold (FIFOs at both ends, socket buffers: ~44 MiB each here).
                 std::vector<char> buf(size_t{512} << 20, 7);
                 int nch = 0;
                 CHILD_OK(cclabCommChannels(comm, &nch));
                 if (nch != 4) return "the communicator has " + std::to_string(nch) + " channels, not 4";
                 if (ncclBroadcast(buf.data(), buf.data(), buf.size(), ncclChar, 0, comm, nullptr) == ncclSuccess)
                   return "the broadcast to a rank that takes no part succeeded";
                 const double t0 = now_s();
                 CHILD_OK(ncclCommDestroy(comm));
                 const double took = now_s() - t0;
                 if (took > 2.5) return "destroy took " + std::to_string(took) + " s (4 channels, CCLAB_TIMEOUT=1)";
                 return "";
               });
}

// NCCL_NET naming a network cclab does not build fails init on every rank, saying why.
TEST(NetFailures, UnknownNcclNetIsRefusedAtInit) {
  on_hosts(2, {{"NCCL_NET", "IB"}}, [](int rank, const ncclUniqueId& uid) -> std::string {
    ncclComm_t comm = nullptr;
    const ncclResult_t r = ncclCommInitRank(&comm, 2, uid, rank);
    const std::string msg = ncclGetLastError(nullptr);
    if (r == ncclSuccess) {
      ncclCommDestroy(comm);
      return "init succeeded with NCCL_NET=IB";
    }
    if (msg.find("NCCL_NET=IB") == std::string::npos) return "the error does not name NCCL_NET=IB: " + msg;
    return "";
  });
}

}  // namespace
