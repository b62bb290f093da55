// runtime/cli/perf_launch.cc - single process, --nprocs (fork + exec of ourselves) and mpirun.
#include "perf_launch.h"

#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cclab/cclab.h"
#include "perf_run.h"

#ifdef CCLAB_HAVE_MPI
// The C API only: the deprecated C++ bindings would need libmpi_cxx at link time.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

extern char** environ;

namespace cclab {
namespace {

std::string id_to_hex(const ncclUniqueId& id) {
  static const char kDigits[] = "0123456789abcdef";
  std::string hex;
  for (unsigned char byte : id.internal) {
    hex += kDigits[byte >> 4];
    hex += kDigits[byte & 15];
  }
  return hex;
}

bool id_from_hex(const std::string& hex, ncclUniqueId* id) {
  if (hex.size() != 2 * sizeof(id->internal)) return false;
  const auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  };
  for (size_t i = 0; i < sizeof(id->internal); ++i) {
    const int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    id->internal[i] = static_cast<char>(hi << 4 | lo);
  }
  return true;
}

bool env_int(const char* name, int* value) {
  const char* s = std::getenv(name);
  if (s == nullptr || *s == '\0') return false;
  char* end = nullptr;
  const long v = std::strtol(s, &end, 10);
  if (*end != '\0' || v < 0 || v > (1 << 30)) return false;
  *value = static_cast<int>(v);
  return true;
}

// After a fatal error the other ranks would block forever: leave now. stdout is flushed so the rows
// printed so far survive.
void exit_process(int status) {
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(status);
}

// The memory --nprocs processes exchange their bookkeeping through (ProcessContext::exchange): a
// process-shared barrier, then one slot per process of kPerfMaxRecordBytes per rank. The parent makes
// it an anonymous memfd that its children inherit across exec, so nothing is left in /dev/shm however
// the run ends.
struct SharedControl {
  pthread_barrier_t barrier;
};
constexpr size_t kControlHeader = 256;
static_assert(sizeof(SharedControl) <= kControlHeader, "the barrier fits the header");

size_t control_slot_bytes(const PerfOptions& options) {
  return kPerfMaxRecordBytes * static_cast<size_t>(options.ranks_per_process());
}
size_t control_bytes(const PerfOptions& options) {
  return kControlHeader + control_slot_bytes(options) * static_cast<size_t>(options.nprocs);
}

// The parent's side: the memfd with its barrier initialised for nprocs processes; -1 on failure (said).
int make_control(const PerfOptions& options) {
  const int fd = memfd_create("cclab-perf-control", 0);  // no MFD_CLOEXEC: the children inherit it
  if (fd < 0 || ftruncate(fd, static_cast<off_t>(control_bytes(options))) != 0) {
    std::fprintf(stderr, "cclab perf: shared memory for %d processes' bookkeeping: %s\n", options.nprocs,
                 std::strerror(errno));
    if (fd >= 0) close(fd);
    return -1;
  }
  void* p = mmap(nullptr, kControlHeader, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    std::fprintf(stderr, "cclab perf: mmap of the bookkeeping memory: %s\n", std::strerror(errno));
    close(fd);
    return -1;
  }
  pthread_barrierattr_t attr;
  pthread_barrierattr_init(&attr);
  pthread_barrierattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  pthread_barrier_init(&static_cast<SharedControl*>(p)->barrier, &attr, static_cast<unsigned>(options.nprocs));
  pthread_barrierattr_destroy(&attr);
  munmap(p, kControlHeader);
  return fd;
}

// A child's side: maps the inherited memfd and sets ctx->exchange. False (said) when it cannot.
bool attach_control(const PerfOptions& options, ProcessContext* ctx) {
  int fd = -1;
  const char* s = std::getenv(kPerfControlFdEnv);
  char* end = nullptr;
  if (s != nullptr) fd = static_cast<int>(std::strtol(s, &end, 10));
  struct stat st;
  if (s == nullptr || *end != '\0' || fd < 0 || fstat(fd, &st) != 0 ||
      static_cast<size_t>(st.st_size) != control_bytes(options)) {
    std::fprintf(stderr, "cclab perf: bad %s in the environment of a --nprocs child\n", kPerfControlFdEnv);
    return false;
  }
  void* p = mmap(nullptr, control_bytes(options), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    std::fprintf(stderr, "cclab perf: mmap of the bookkeeping memory: %s\n", std::strerror(errno));
    return false;
  }
  auto* base = static_cast<unsigned char*>(p);  // mapped for the life of the process
  const size_t slot = control_slot_bytes(options);
  const int nprocs = ctx->nprocs, proc = ctx->proc;
  ctx->exchange = [base, slot, nprocs, proc](const void* in, void* out, size_t bytes) {
    auto* control = reinterpret_cast<SharedControl*>(base);
    unsigned char* slots = base + kControlHeader;
    if (bytes > slot) {
      std::fprintf(stderr, "cclab perf: internal error: %zu bytes to exchange, slots hold %zu\n", bytes, slot);
      exit_process(kPerfExitRuntime);
    }
    std::memcpy(slots + slot * proc, in, bytes);
    pthread_barrier_wait(&control->barrier);  // every slot written
    for (int q = 0; q < nprocs; ++q) std::memcpy(static_cast<unsigned char*>(out) + bytes * q, slots + slot * q, bytes);
    pthread_barrier_wait(&control->barrier);  // every slot read: the next exchange may overwrite them
  };
  return true;
}

int get_unique_id(ncclUniqueId* id) {
  const ncclResult_t r = ncclGetUniqueId(id);
  if (r == ncclSuccess) return kPerfExitOk;
  std::fprintf(stderr, "cclab perf: ncclGetUniqueId failed: %s: %s\n", ncclGetErrorString(r),
               ncclGetLastError(nullptr));
  return kPerfExitRuntime;
}

int run_single(const PerfOptions& options) {
  ProcessContext ctx;
  if (int s = get_unique_id(&ctx.id)) return s;
  ctx.abort = exit_process;
  return run_perf(options, ctx);
}

// A --nprocs child: the parent passed the id and our index.
int run_child(const PerfOptions& options) {
  ProcessContext ctx;
  int nprocs = 0;
  const char* hex = std::getenv(kPerfIdEnv);
  if (hex == nullptr || !id_from_hex(hex, &ctx.id) || !env_int(kPerfProcEnv, &ctx.proc) ||
      !env_int(kPerfNprocsEnv, &nprocs) || nprocs != options.nprocs || ctx.proc >= nprocs) {
    std::fprintf(stderr, "cclab perf: bad %s/%s/%s in the environment of a --nprocs child\n", kPerfIdEnv, kPerfProcEnv,
                 kPerfNprocsEnv);
    return kPerfExitUsage;
  }
  ctx.nprocs = nprocs;
  ctx.abort = exit_process;
  if (!attach_control(options, &ctx)) return kPerfExitUsage;
  return run_perf(options, ctx);
}

// The --nprocs parent: one unique id for everybody, N clean processes (exec, not just fork, so no
// thread or runtime state of ours leaks into them), then wait. The parent stays alive throughout: the
// bootstrap root that ncclGetUniqueId started lives in this process.
int run_parent(const PerfOptions& options, char** argv) {
  ncclUniqueId id;
  if (int s = get_unique_id(&id)) return s;
  const std::string id_env = std::string(kPerfIdEnv) + "=" + id_to_hex(id);
  const std::string nprocs_env = std::string(kPerfNprocsEnv) + "=" + std::to_string(options.nprocs);

  // Build every child's environment before forking: between fork and exec only async-signal-safe
  // calls are allowed in a threaded process.
  std::vector<std::string> base;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    if (entry.rfind("CCLAB_PERF_", 0) == 0) continue;
    if (options.hosts > 0 && entry.rfind("NCCL_HOSTID=", 0) == 0) continue;  // --hosts gives each its own
    base.push_back(entry);
  }
  const int control = make_control(options);
  if (control < 0) return kPerfExitRuntime;
  base.push_back(id_env);
  base.push_back(nprocs_env);
  base.push_back(std::string(kPerfControlFdEnv) + "=" + std::to_string(control));
  std::vector<std::vector<std::string>> envs(options.nprocs, base);
  std::vector<std::vector<char*>> envps(options.nprocs);
  // --hosts H: process p plays host p * H / nprocs, named after this host, so the processes of one
  // "host" share memory (SHM) and NET/Socket joins the hosts, as on a cluster.
  char hostname[256] = "cclab";
  gethostname(hostname, sizeof hostname - 1);
  hostname[sizeof hostname - 1] = '\0';
  for (int p = 0; p < options.nprocs; ++p) {
    envs[p].push_back(std::string(kPerfProcEnv) + "=" + std::to_string(p));
    if (options.hosts > 0)
      envs[p].push_back(std::string("NCCL_HOSTID=") + hostname + "-host" +
                        std::to_string(p * options.hosts / options.nprocs));
    for (auto& entry : envs[p]) envps[p].push_back(entry.data());
    envps[p].push_back(nullptr);
  }

  std::fflush(stdout);
  std::fflush(stderr);
  std::vector<pid_t> children;
  for (int p = 0; p < options.nprocs; ++p) {
    const pid_t pid = fork();
    if (pid < 0) {
      std::fprintf(stderr, "cclab perf: fork failed for process %d: %s\n", p, std::strerror(errno));
      for (pid_t c : children) kill(c, SIGTERM);
      for (pid_t c : children) waitpid(c, nullptr, 0);
      close(control);
      return kPerfExitRuntime;
    }
    if (pid == 0) {
      execve("/proc/self/exe", argv, envps[p].data());
      static const char kMsg[] = "cclab perf: exec of /proc/self/exe failed in a --nprocs child\n";
      (void)!write(2, kMsg, sizeof(kMsg) - 1);
      _exit(127);
    }
    children.push_back(pid);
  }

  int status = kPerfExitOk;
  size_t remaining = children.size();
  bool stopping = false;
  while (remaining > 0) {
    int ws = 0;
    const pid_t pid = waitpid(-1, &ws, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;
    }
    size_t index = 0;
    while (index < children.size() && children[index] != pid) ++index;
    if (index == children.size()) continue;  // not one of ours
    children[index] = -1;
    --remaining;
    int child_status = kPerfExitOk;
    if (WIFEXITED(ws)) {
      child_status = WEXITSTATUS(ws);
    } else if (WIFSIGNALED(ws)) {
      child_status = kPerfExitRuntime;
      if (!stopping) {
        std::fprintf(stderr, "cclab perf: process %zu (pid %d) was killed by signal %d\n", index, static_cast<int>(pid),
                     WTERMSIG(ws));
      }
    }
    if (child_status == kPerfExitOk || stopping) continue;
    // Wrong values are reported by every process alike; anything else leaves the others waiting for
    // the failed ranks, so they are stopped.
    if (status == kPerfExitOk) status = child_status;
    if (child_status != kPerfExitWrong) {
      stopping = true;
      std::fprintf(stderr, "cclab perf: process %zu (pid %d) failed with status %d; stopping the others\n", index,
                   static_cast<int>(pid), child_status);
      for (pid_t c : children) {
        if (c > 0) kill(c, SIGTERM);
      }
    }
  }
  close(control);
  return status;
}

#ifdef CCLAB_HAVE_MPI
void mpi_abort(int status) {
  std::fflush(stdout);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, status);
  std::_Exit(status);
}

int run_mpi(const PerfOptions& options) {
  // MPI needs none of our arguments. The bookkeeping's MPI_Allgather is called by one rank thread of
  // the process at a time (never the main thread): MPI_THREAD_SERIALIZED.
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
  ProcessContext ctx;
  MPI_Comm_size(MPI_COMM_WORLD, &ctx.nprocs);
  MPI_Comm_rank(MPI_COMM_WORLD, &ctx.proc);
  int s = kPerfExitOk;
  if (ctx.proc == 0) s = get_unique_id(&ctx.id);
  MPI_Bcast(&s, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (s != kPerfExitOk) {
    MPI_Finalize();
    return s;
  }
  MPI_Bcast(&ctx.id, sizeof(ctx.id), MPI_BYTE, 0, MPI_COMM_WORLD);
  ctx.abort = mpi_abort;
  if (provided < MPI_THREAD_SERIALIZED && ctx.proc == 0)
    std::fprintf(stderr, "cclab perf: warning: this MPI offers thread level %d, below MPI_THREAD_SERIALIZED; the "
                 "bookkeeping calls MPI from one rank thread at a time anyway\n", provided);
  ctx.exchange = [](const void* in, void* out, size_t bytes) {
    MPI_Allgather(in, static_cast<int>(bytes), MPI_BYTE, out, static_cast<int>(bytes), MPI_BYTE, MPI_COMM_WORLD);
  };
  s = run_perf(options, ctx);
  MPI_Finalize();
  return s;
}
#endif

}  // namespace

bool under_mpi_launcher(int* world_rank, int* world_size) {
  *world_rank = 0;
  *world_size = 1;
  if (env_int("OMPI_COMM_WORLD_SIZE", world_size)) {
    env_int("OMPI_COMM_WORLD_RANK", world_rank);
    return true;
  }
  if (env_int("PMI_SIZE", world_size)) {
    env_int("PMI_RANK", world_rank);
    return true;
  }
  return false;
}

int launch_perf(const PerfOptions& options, char** argv) {
  int world_rank = 0, world_size = 1;
  const bool mpi = under_mpi_launcher(&world_rank, &world_size);
  if (options.nprocs > 0) {
    if (mpi && world_size > 1) {
      if (world_rank == 0) {
        std::fprintf(stderr,
                     "cclab perf: --nprocs spawns processes itself; do not combine it with mpirun "
                     "(%d MPI processes)\n",
                     world_size);
      }
      return kPerfExitUsage;
    }
    return std::getenv(kPerfIdEnv) != nullptr ? run_child(options) : run_parent(options, argv);
  }
  if (mpi && world_size > 1) {
#ifdef CCLAB_HAVE_MPI
    return run_mpi(options);
#else
    if (world_rank == 0) {
      std::fprintf(stderr,
                   "cclab perf: started by an MPI launcher (%d processes), but this cclab was built without MPI "
                   "support. Rebuild with MPI installed (CMake finds it and defines CCLAB_HAVE_MPI), or run "
                   "without mpirun: `cclab perf ... --nprocs %d`\n",
                   world_size, world_size);
    }
    return kPerfExitUsage;
#endif
  }
  return run_single(options);
}

}  // namespace cclab
