// Ranks as processes on this host (child_procs.h): each child joins with ncclCommInitRank, so its peers
// are other processes on this host and every connection goes through POSIX shared memory.
#include <dirent.h>
#include <errno.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/statvfs.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "child_procs.h"
#include "kernels/fifo.h"

namespace {

using namespace cclab_test;


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
