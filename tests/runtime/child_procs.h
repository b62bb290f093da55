// tests/runtime/child_procs.h - ranks as fork()ed child processes, for the multi-process tests
// (multiprocess_test.cc over SHM, net_test.cc over NET): run_children, the checks a child makes and
// reports back, and a set of collectives checked byte for byte.
//
// The test process forks one child per rank, then makes the ncclUniqueId and hands it to them (it
// never creates a communicator of its own, so the children inherit no communicator state and no
// cached parameters). A child never returns into gtest: it reports through a pipe and _exit()s with
// 0 (all checks passed) or 1. An alarm() kills a child that hangs; ctest's CCLAB_TIMEOUT /
// CCLAB_BOOTSTRAP_TIMEOUT turn a lost peer into an error first.
#pragma once

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "comm_fixture.h"

namespace cclab_test {

constexpr int kChildAlarmS = 45;      // a child still running after this is killed by SIGALRM
constexpr double kParentLimitS = 55;  // ... and the parent kills what is left after this

struct ChildResult {
  int rank;
  int status;           // waitpid status
  std::string message;  // what the child wrote: empty when all its checks passed
};

inline std::string describe(const ChildResult& c) {
  std::string s = "rank " + std::to_string(c.rank) + ": ";
  if (WIFEXITED(c.status))
    s += "exit " + std::to_string(WEXITSTATUS(c.status));
  else if (WIFSIGNALED(c.status))
    s += std::string("killed by signal ") + strsignal(WTERMSIG(c.status));
  else
    s += "status " + std::to_string(c.status);
  return s + (c.message.empty() ? "" : ": " + c.message);
}

inline void write_all(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    ssize_t w = write(fd, s.data() + done, s.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    done += static_cast<size_t>(w);
  }
}

// Threads of this process right now.
inline int thread_count() {
  int n = 0;
  if (DIR* d = opendir("/proc/self/task")) {
    while (dirent* ent = readdir(d)) n += ent->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

inline bool read_all(int fd, void* data, size_t bytes) {
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
inline std::vector<ChildResult> run_children(int n, const ChildBody& body, ncclUniqueId* made_id) {
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
inline std::string compare(const char* what, const std::vector<T>& got, const std::vector<T>& want) {
  if (got.size() == want.size() && memcmp(got.data(), want.data(), got.size() * sizeof(T)) == 0) return "";
  for (size_t i = 0; i < std::min(got.size(), want.size()); ++i)
    if (memcmp(&got[i], &want[i], sizeof(T)) != 0)
      return std::string(what) + ": element " + std::to_string(i) + " is " + std::to_string(got[i]) + ", want " +
             std::to_string(want[i]);
  return std::string(what) + ": size " + std::to_string(got.size()) + ", want " + std::to_string(want.size());
}

// Rank r's input at element i: small integers, so float sums are exact in any order.
inline float value(int r, size_t i) { return static_cast<float>((i * 7 + static_cast<size_t>(r) * 13) % 1024); }

// A stream op followed by a synchronize, or a NULL-stream op (complete when the call returns).
inline std::string finish(cudaStream_t s) {
  if (s) CHILD_OK(cclabStreamSynchronize(s));
  return "";
}

inline std::string run_collectives(ncclComm_t comm, int n, int rank, cudaStream_t s) {
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

}  // namespace cclab_test
