// Ranks as processes: the test process fork()s one child per rank, then makes the ncclUniqueId and
// hands it to them (it never creates a communicator of its own, so the children inherit no
// communicator state and no cached parameters). Each child joins with ncclCommInitRank, so its peers are other processes on
// this host and every connection goes through POSIX shared memory. A child never returns into
// gtest: it reports through a pipe and _exit()s with 0 (all checks passed) or 1. An alarm() kills a
// child that hangs; ctest's CCLAB_TIMEOUT / CCLAB_BOOTSTRAP_TIMEOUT turn a lost peer into an error
// first.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "comm_fixture.h"
#include "kernels/fifo.h"

namespace {

constexpr int kChildAlarmS = 45;      // a child still running after this is killed by SIGALRM
constexpr double kParentLimitS = 55;  // ... and the parent kills what is left after this

struct ChildResult {
  int rank;
  int status;           // waitpid status
  std::string message;  // what the child wrote: empty when all its checks passed
};

std::string describe(const ChildResult& c) {
  std::string s = "rank " + std::to_string(c.rank) + ": ";
  if (WIFEXITED(c.status))
    s += "exit " + std::to_string(WEXITSTATUS(c.status));
  else if (WIFSIGNALED(c.status))
    s += std::string("killed by signal ") + strsignal(WTERMSIG(c.status));
  else
    s += "status " + std::to_string(c.status);
  return s + (c.message.empty() ? "" : ": " + c.message);
}

void write_all(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    ssize_t w = write(fd, s.data() + done, s.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    done += static_cast<size_t>(w);
  }
}

// Threads of this process right now.
int thread_count() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* ent = readdir(d)) n += ent->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

bool read_all(int fd, void* data, size_t bytes) {
  size_t done = 0;
  while (done < bytes) {
    ssize_t got = read(fd, static_cast<char*>(data) + done, bytes - done);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    done += static_cast<size_t>(got);
  }
  return true;
}

using ChildBody = std::function<std::string(int rank, const ncclUniqueId& id)>;

// Forks `n` children; child r runs body(r, id) and exits 0 if it returns "" (else 1, with the text
// sent back). With `made_id`, the parent makes the ncclUniqueId (stored there) *after* forking and
// hands it to the children through a pipe: ncclGetUniqueId starts the bootstrap root's thread, and a child forked
// while another thread holds a lock (the allocator's, under sanitizers) would inherit it locked.
// For the same reason the parent first waits (briefly) for threads of earlier tests to end. Waits
// for all children, killing any still alive after kParentLimitS.
std::vector<ChildResult> run_children(int n, const ChildBody& body, ncclUniqueId* made_id) {
  const bool with_id = made_id != nullptr;
  for (int i = 0; i < 300 && thread_count() > 1; ++i) usleep(10000);
  std::vector<ChildResult> out(n);
  std::vector<pid_t> pids(n, -1);
  std::vector<int> fds(n, -1), id_fds(n, -1);
  for (int r = 0; r < n; ++r) {
    out[r].rank = r;
    out[r].status = -1;
    int p[2], q[2];
    if (pipe(p) != 0 || pipe(q) != 0) {
      out[r].message = "pipe failed";
      continue;
    }
    fflush(nullptr);  // nothing buffered may be written twice
    pid_t pid = fork();
    if (pid == 0) {
      close(p[0]);
      close(q[1]);
      for (int i = 0; i < r; ++i) close(id_fds[i]);  // earlier siblings' ends: their EOF must not wait on us
      alarm(kChildAlarmS);
      ncclUniqueId id;
      memset(&id, 0, sizeof id);
      std::string msg;
      if (with_id && !read_all(q[0], &id, sizeof id)) {
        msg = "no unique id from the parent";
      } else {
        try {
          msg = body(r, id);
        } catch (const std::exception& e) {
          msg = std::string("exception: ") + e.what();
        }
      }
      write_all(p[1], msg);
      _exit(msg.empty() ? 0 : 1);
    }
    close(p[1]);
    close(q[0]);
    if (pid < 0) {
      close(p[0]);
      close(q[1]);
      out[r].message = std::string("fork failed: ") + strerror(errno);
      continue;
    }
    pids[r] = pid;
    fds[r] = p[0];
    id_fds[r] = q[1];
    fcntl(fds[r], F_SETFL, O_NONBLOCK);
  }
  if (with_id) {
    memset(made_id, 0, sizeof *made_id);
    const bool ok = ncclGetUniqueId(made_id) == ncclSuccess;  // on failure the children read EOF
    for (int r = 0; r < n; ++r)
      if (ok && id_fds[r] >= 0)
        write_all(id_fds[r], std::string(reinterpret_cast<const char*>(made_id), sizeof *made_id));
  }
  for (int fd : id_fds)
    if (fd >= 0) close(fd);
  const double deadline = cclab_test::now_s() + kParentLimitS;
  int alive = 0;
  for (pid_t p : pids) alive += p > 0;
  while (alive > 0) {
    for (int r = 0; r < n; ++r) {
      if (fds[r] >= 0) {  // drain the pipe as we go, so a long message cannot block its writer
        char buf[4096];
        ssize_t got;
        while ((got = read(fds[r], buf, sizeof buf)) > 0) out[r].message.append(buf, static_cast<size_t>(got));
      }
      if (pids[r] > 0 && waitpid(pids[r], &out[r].status, WNOHANG) == pids[r]) {
        pids[r] = -1;
        --alive;
      }
    }
    if (alive > 0 && cclab_test::now_s() > deadline) {
      for (int r = 0; r < n; ++r)
        if (pids[r] > 0) {
          kill(pids[r], SIGKILL);
          waitpid(pids[r], &out[r].status, 0);
          out[r].message += " [killed by the test after " + std::to_string(static_cast<int>(kParentLimitS)) + " s]";
          pids[r] = -1;
        }
      alive = 0;
    }
    if (alive > 0) usleep(5000);
  }
  for (int r = 0; r < n; ++r) {
    if (fds[r] < 0) continue;
    char buf[4096];
    ssize_t got;
    while ((got = read(fds[r], buf, sizeof buf)) > 0) out[r].message.append(buf, static_cast<size_t>(got));
    close(fds[r]);
  }
  return out;
}

// ---- What a child checks -------------------------------------------------------------------------

#define CHILD_OK(call)                                                                                       \
  do {                                                                                                       \
    ncclResult_t _r = (call);                                                                                \
    if (_r != ncclSuccess)                                                                                   \
      return std::string(#call) + " failed: " + ncclGetErrorString(_r) + ": " + ncclGetLastError(nullptr); \
  } while (0)

// Byte-exact comparison; on a difference, says where.
template <typename T>
std::string compare(const char* what, const std::vector<T>& got, const std::vector<T>& want) {
  if (got.size() == want.size() && memcmp(got.data(), want.data(), got.size() * sizeof(T)) == 0) return "";
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i)
    if (memcmp(&got[i], &want[i], sizeof(T)) != 0)
      return std::string(what) + ": element " + std::to_string(i) + " is " + std::to_string(got[i]) + ", want " +
             std::to_string(want[i]);
  return std::string(what) + ": size " + std::to_string(got.size()) + ", want " + std::to_string(want.size());
}

// Rank r's input at element i: small integers, so float sums are exact in any order.
float value(int r, size_t i) { return static_cast<float>((i * 7 + static_cast<size_t>(r) * 13) % 1024); }

// A stream op followed by a synchronize, or a NULL-stream op (complete when the call returns).
std::string finish(cudaStream_t s) {
  if (s) CHILD_OK(cclabStreamSynchronize(s));
  return "";
}

std::string run_collectives(ncclComm_t comm, int n, int rank, cudaStream_t s) {
  std::string e;
  // AllReduce over several FIFO chunks per channel (3M + 7 floats = 12 MiB), out of place and in place.
  {
    const size_t count = (3u << 20) + 7;
    std::vector<float> in(count), out(count, -1.0f), want(count);
    for (size_t i = 0; i < count; ++i) {
      in[i] = value(rank, i);
      float sum = 0;
      for (int r = 0; r < n; ++r) sum += value(r, i);
      want[i] = sum;
    }
    CHILD_OK(ncclAllReduce(in.data(), out.data(), count, ncclFloat, ncclSum, comm, s));
    if (!(e = finish(s)).empty() || !(e = compare("AllReduce", out, want)).empty()) return e;
    CHILD_OK(ncclAllReduce(in.data(), in.data(), count, ncclFloat, ncclSum, comm, s));
    if (!(e = finish(s)).empty() || !(e = compare("AllReduce in place", in, want)).empty()) return e;
  }
  // AllGather: rank r's block lands at r * count everywhere.
  {
    const size_t count = (1u << 20) + 3;
    std::vector<float> in(count), out(count * n, -1.0f), want(count * n);
    for (size_t i = 0; i < count; ++i) in[i] = value(rank, i);
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < count; ++i) want[r * count + i] = value(r, i);
    CHILD_OK(ncclAllGather(in.data(), out.data(), count, ncclFloat, comm, s));
    if (!(e = finish(s)).empty() || !(e = compare("AllGather", out, want)).empty()) return e;
  }
  // Broadcast from the last rank.
  {
    const size_t count = (2u << 20) + 5;
    const int root = n - 1;
    std::vector<int32_t> in(count), out(count, -1), want(count);
    for (size_t i = 0; i < count; ++i) {
      in[i] = rank == root ? static_cast<int32_t>(i * 2654435761u) : 0;
      want[i] = static_cast<int32_t>(i * 2654435761u);
    }
    CHILD_OK(ncclBroadcast(in.data(), out.data(), count, ncclInt32, root, comm, s));
    if (!(e = finish(s)).empty() || !(e = compare("Broadcast", out, want)).empty()) return e;
  }
  // ReduceScatter: block b of everyone's input, summed, lands on rank b.
  {
    const size_t count = (1u << 20) + 1;
    std::vector<float> in(count * n), out(count, -1.0f), want(count);
    for (size_t i = 0; i < count * n; ++i) in[i] = value(rank, i);
    for (size_t i = 0; i < count; ++i) {
      float sum = 0;
      for (int r = 0; r < n; ++r) sum += value(r, rank * count + i);
      want[i] = sum;
    }
    CHILD_OK(ncclReduceScatter(in.data(), out.data(), count, ncclFloat, ncclSum, comm, s));
    if (!(e = finish(s)).empty() || !(e = compare("ReduceScatter", out, want)).empty()) return e;
  }
  // A Send/Recv ring of messages larger than the 4 MiB FIFO, in a group.
  {
    const size_t bytes = (5u << 20) + 3;
    const int next = (rank + 1) % n, prev = (rank + n - 1) % n;
    std::vector<uint8_t> in(bytes), out(bytes, 0), want(bytes);
    for (size_t i = 0; i < bytes; ++i) {
      in[i] = static_cast<uint8_t>(i * 31 + rank * 7 + (i >> 16));
      want[i] = static_cast<uint8_t>(i * 31 + prev * 7 + (i >> 16));
    }
    CHILD_OK(ncclGroupStart());
    CHILD_OK(ncclSend(in.data(), bytes, ncclUint8, next, comm, s));
    CHILD_OK(ncclRecv(out.data(), bytes, ncclUint8, prev, comm, s));
    CHILD_OK(ncclGroupEnd());
    if (!(e = finish(s)).empty() || !(e = compare("Send/Recv ring", out, want)).empty()) return e;
  }
  return "";
}

std::string child_main(const ncclUniqueId& id, int n, int rank) {
  ncclComm_t comm = nullptr;
  CHILD_OK(ncclCommInitRank(&comm, n, id, rank));
  int count = 0, me = -1;
  CHILD_OK(ncclCommCount(comm, &count));
  CHILD_OK(ncclCommUserRank(comm, &me));
  if (count != n || me != rank) return "ncclCommCount/UserRank disagree with the init arguments";
  cudaStream_t s;
  CHILD_OK(cclabStreamCreate(&s));
  std::string e = run_collectives(comm, n, rank, s);
  if (!e.empty()) return "host stream: " + e;
  e = run_collectives(comm, n, rank, nullptr);
  if (!e.empty()) return "NULL stream: " + e;
  CHILD_OK(cclabStreamDestroy(s));
  CHILD_OK(ncclCommFinalize(comm));
  CHILD_OK(ncclCommDestroy(comm));
  return "";
}

// The shared-memory objects of the communicator made from `id` are named "/cclab-<h>-..." where <h>
// is the first 12 hex digits of the FNV-1a hash of the id (comm.cc, conn_name). Lists those left.
std::vector<std::string> leftover_shm(const ncclUniqueId& id, const char* dir = "/dev/shm") {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < sizeof id.internal; ++i)
    h = (h ^ static_cast<unsigned char>(id.internal[i])) * 1099511628211ull;
  char hex[17];
  snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  const std::string prefix = std::string("cclab-") + std::string(hex).substr(0, 12) + "-";
  std::vector<std::string> left;
  if (DIR* d = opendir(dir)) {
    while (dirent* ent = readdir(d))
      if (strncmp(ent->d_name, prefix.c_str(), prefix.size()) == 0) left.push_back(ent->d_name);
    closedir(d);
  }
  return left;
}

// Every cclab object in `dir`, whoever made it.
std::vector<std::string> all_cclab_shm(const char* dir) {
  std::vector<std::string> left;
  if (DIR* d = opendir(dir)) {
    while (dirent* ent = readdir(d))
      if (strncmp(ent->d_name, "cclab-", 6) == 0) left.push_back(ent->d_name);
    closedir(d);
  }
  return left;
}

class MultiProcess : public ::testing::TestWithParam<int> {};

TEST_P(MultiProcess, CollectivesAcrossProcesses) {
  const int n = GetParam();
  ncclUniqueId id;
  const double t0 = cclab_test::now_s();
  std::vector<ChildResult> res =
      run_children(n, [&](int r, const ncclUniqueId& uid) { return child_main(uid, n, r); }, &id);
  const double took = cclab_test::now_s() - t0;
  for (const ChildResult& c : res) {
    EXPECT_TRUE(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0) << describe(c);
    EXPECT_TRUE(c.message.empty()) << describe(c);
  }
  RecordProperty("seconds", std::to_string(took));
  // The receivers created the FIFOs, the senders unlinked the names once mapped: nothing is left.
  const std::vector<std::string> left = leftover_shm(id);
  EXPECT_TRUE(left.empty()) << left.size() << " objects left in /dev/shm, e.g. " << left[0];
}

INSTANTIATE_TEST_SUITE_P(Ranks, MultiProcess, ::testing::Values(2, 3, 4),
                         [](const ::testing::TestParamInfo<int>& i) { return std::to_string(i.param) + "ranks"; });

// ---- /dev/shm too small --------------------------------------------------------------------------
// Docker's default /dev/shm is 64 MiB; a multi-process job that needs more must fail at init with a
// message that says so, not die of SIGBUS on first touch. To get a small /dev/shm without touching
// the machine's, a child makes a private mount namespace and mounts a 1 MiB tmpfs there (needs
// CAP_SYS_ADMIN); its rank processes inherit it. Without that capability, NCCL_BUFFSIZE=1 GiB does
// it, but only where /dev/shm has less than 1 GiB free.

constexpr int kNoNamespace = 77;  // the supervisor's exit status when it cannot make its namespace

// Rank body: init must fail, naming /dev/shm and the bytes one FIFO needs.
std::string expect_shm_failure(const ncclUniqueId& id, int n, int rank, size_t buff_bytes) {
  if (buff_bytes != 4u << 20) setenv("NCCL_BUFFSIZE", std::to_string(buff_bytes).c_str(), 1);
  ncclComm_t comm = nullptr;
  ncclResult_t r = ncclCommInitRank(&comm, n, id, rank);
  const std::string msg = ncclGetLastError(nullptr);
  if (r == ncclSuccess) {
    ncclCommDestroy(comm);
    return "ncclCommInitRank succeeded although /dev/shm cannot hold a FIFO";
  }
  if (comm != nullptr) return "a failed init left *comm set";
  const std::string size = std::to_string(cclab::fifo_total_bytes(buff_bytes));
  if (msg.find("/dev/shm") == std::string::npos || msg.find(size) == std::string::npos)
    return "the error does not name /dev/shm and the " + size + " bytes needed: \"" + msg + "\"";
  return "";
}

TEST(MultiProcessShm, TooSmallDevShmFailsInitWithAClearError) {
  const int n = 2;
  // The supervisor: own mount namespace with a 1 MiB /dev/shm, then the ranks as its children.
  std::vector<ChildResult> sup = run_children(1, [&](int, const ncclUniqueId&) -> std::string {
    if (unshare(CLONE_NEWNS) != 0) _exit(kNoNamespace);
    if (mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) _exit(kNoNamespace);  // no leaks out
    if (mount("tmpfs", "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "size=1m") != 0) _exit(kNoNamespace);
    ncclUniqueId id;
    std::vector<ChildResult> ranks = run_children(
        n, [&](int r, const ncclUniqueId& uid) { return expect_shm_failure(uid, n, r, 4u << 20); }, &id);
    std::string err;
    for (const ChildResult& c : ranks)
      if (!WIFEXITED(c.status) || WEXITSTATUS(c.status) != 0) err += describe(c) + "\n";
    // Everything in this /dev/shm is ours: a failed init must not leave objects behind.
    for (const std::string& f : all_cclab_shm("/dev/shm")) err += "left in /dev/shm: " + f + "\n";
    return err;
  }, nullptr);
  ASSERT_EQ(sup.size(), 1u);
  if (WIFEXITED(sup[0].status) && WEXITSTATUS(sup[0].status) == kNoNamespace) {
    // Plan B: a FIFO bigger than what /dev/shm has free.
    struct statvfs vfs;
    ASSERT_EQ(statvfs("/dev/shm", &vfs), 0) << strerror(errno);
    const unsigned long long avail = static_cast<unsigned long long>(vfs.f_bavail) * vfs.f_frsize;
    const size_t big = 1u << 30;
    if (avail >= cclab::fifo_total_bytes(big))
      GTEST_SKIP() << "cannot mount a small tmpfs on /dev/shm (no CAP_SYS_ADMIN for a private mount namespace), "
                   << "and /dev/shm has " << avail << " bytes free, more than the " << cclab::fifo_total_bytes(big)
                   << " bytes of a 1 GiB NCCL_BUFFSIZE FIFO: the too-small case cannot be provoked here";
    ncclUniqueId id2;
    std::vector<ChildResult> ranks = run_children(
        n, [&](int r, const ncclUniqueId& uid) { return expect_shm_failure(uid, n, r, big); }, &id2);
    for (const ChildResult& c : ranks) EXPECT_TRUE(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0) << describe(c);
    EXPECT_TRUE(leftover_shm(id2).empty());
    return;
  }
  EXPECT_TRUE(WIFEXITED(sup[0].status) && WEXITSTATUS(sup[0].status) == 0) << describe(sup[0]);
}

}  // namespace
