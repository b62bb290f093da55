#include "transport/transport.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "base/log.h"
#include "kernels/fifo.h"
#include "base/sync.h"

namespace cclab {
namespace {

class HeapSegment : public Segment {
 public:
  explicit HeapSegment(size_t bytes) {
    base_ = aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
    size_ = bytes;
    if (base_) memset(base_, 0, size_);
  }
  ~HeapSegment() override { free(base_); }
};

class ShmSegment : public Segment {
 public:
  ShmSegment(void* base, size_t bytes, std::string name, bool owner)
      : name_(std::move(name)), owner_(owner) {
    base_ = base;
    size_ = bytes;
  }
  ~ShmSegment() override {
    if (owner_) {
      // The sender unlinks the name once it has mapped it; if it never came, the owner does.
      auto* hdr = static_cast<ConnFifoHeader*>(base_);
      if (!__atomic_load_n(&hdr->sender_attached, __ATOMIC_ACQUIRE)) shm_unlink(name_.c_str());
    }
    munmap(base_, size_);
  }

 private:
  std::string name_;
  bool owner_;
};

struct Registry {
  std::mutex mu;
  std::condition_variable cv;
  // A published segment and how many openers may still take it.
  std::map<std::string, std::pair<std::shared_ptr<Segment>, int>> published;
};
Registry& registry() {
  static Registry* r = new Registry;  // never destroyed: threads may still use it at exit
  return *r;
}

void mark_ready(void* base) {
  auto* hdr = static_cast<ConnFifoHeader*>(base);
  __atomic_store_n(&hdr->ready, 1u, __ATOMIC_RELEASE);
}

ncclResult_t shm_create(const std::string& name, size_t bytes, std::shared_ptr<Segment>* out) {
  int fd = shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0 && errno == EEXIST) {
    // A stale object from a crashed run with the same (random) id is practically impossible;
    // a live one means two communicators collide. Refuse rather than share.
    return report_error(ncclSystemError, "SHM: shared memory object %s already exists", name.c_str());
  }
  if (fd < 0)
    return report_error(ncclSystemError, "SHM: shm_open(%s) failed: %s", name.c_str(), strerror(errno));
  // Reserve the pages now: ftruncate alone would succeed on a full /dev/shm and the first touch of
  // a missing page would kill the process with SIGBUS.
  int rc = posix_fallocate(fd, 0, static_cast<off_t>(bytes));
  if (rc != 0) {
    struct statvfs vfs;
    unsigned long long avail = 0, total = 0;
    if (statvfs("/dev/shm", &vfs) == 0) {
      avail = static_cast<unsigned long long>(vfs.f_bavail) * vfs.f_frsize;
      total = static_cast<unsigned long long>(vfs.f_blocks) * vfs.f_frsize;
    }
    close(fd);
    shm_unlink(name.c_str());
    return report_error(ncclSystemError,
                        "SHM: cannot allocate %zu bytes of shared memory for %s: %s. /dev/shm has %llu of %llu "
                        "bytes free; enlarge it (e.g. docker run --shm-size=1g) or lower NCCL_BUFFSIZE / "
                        "NCCL_MAX_NCHANNELS",
                        bytes, name.c_str(), strerror(rc), avail, total);
  }
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (base == MAP_FAILED) {
    shm_unlink(name.c_str());
    return report_error(ncclSystemError, "SHM: mmap of %zu bytes for %s failed: %s", bytes, name.c_str(),
                        strerror(errno));
  }
  mark_ready(base);
  *out = std::make_shared<ShmSegment>(base, bytes, name, true);
  return ncclSuccess;
}

// Polls `watch` (when given) every kWatchEveryUs of a connection wait; a non-zero code ends the wait.
constexpr double kWatchEveryUs = 250e3;
ncclResult_t poll_watch(const ConnectWatch& watch, double start, double* next) {
  if (!watch) return ncclSuccess;
  const double waited = now_us() - start;
  if (waited < *next) return ncclSuccess;
  *next = waited + kWatchEveryUs;
  std::string why;
  if (const int code = watch(waited, &why)) return report_error(static_cast<ncclResult_t>(code), "%s", why.c_str());
  return ncclSuccess;
}

ncclResult_t shm_open_wait(const std::string& name, size_t bytes, const std::atomic<int>* abort, double timeout_s,
                           std::shared_ptr<Segment>* out, const ConnectWatch& watch, int openers) {
  const double start = now_us(), deadline = start + timeout_s * 1e6;
  double next_watch = kWatchEveryUs;
  for (;;) {
    int fd = shm_open(name.c_str(), O_RDWR, 0600);
    if (fd >= 0) {
      struct stat st;
      if (fstat(fd, &st) == 0 && static_cast<size_t>(st.st_size) >= bytes) {
        void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        close(fd);
        if (base == MAP_FAILED)
          return report_error(ncclSystemError, "SHM: mmap of %s failed: %s", name.c_str(), strerror(errno));
        auto* hdr = static_cast<ConnFifoHeader*>(base);
        while (!__atomic_load_n(&hdr->ready, __ATOMIC_ACQUIRE)) std::this_thread::yield();
        // The last of the openers unlinks the name (one for a connection).
        if (__atomic_add_fetch(&hdr->sender_attached, 1u, __ATOMIC_ACQ_REL) >= static_cast<uint32_t>(openers))
          shm_unlink(name.c_str());
        *out = std::make_shared<ShmSegment>(base, bytes, name, false);
        return ncclSuccess;
      }
      close(fd);
    } else if (errno != ENOENT) {
      return report_error(ncclSystemError, "SHM: shm_open(%s) failed: %s", name.c_str(), strerror(errno));
    }
    if (abort && abort->load()) return report_error(ncclInternalError, "SHM: connecting %s aborted", name.c_str());
    if (const ncclResult_t w = poll_watch(watch, start, &next_watch)) return w;
    if (now_us() > deadline)
      return report_error(ncclSystemError, "SHM: peer never created %s (waited %.0f s)", name.c_str(), timeout_s);
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
}

}  // namespace

const char* transport_name(TransportKind k) {
  return k == TransportKind::kP2p ? "P2P/direct pointer" : k == TransportKind::kShm ? "SHM" : "NET/Socket/0";
}

ncclResult_t segment_create(TransportKind kind, const std::string& name, size_t bytes, std::shared_ptr<Segment>* out,
                            int openers) {
  if (kind == TransportKind::kShm) return shm_create(name, bytes, out);
  auto seg = std::make_shared<HeapSegment>(bytes);
  if (!seg->base()) return report_error(ncclSystemError, "P2P: cannot allocate %zu bytes for %s", bytes, name.c_str());
  mark_ready(seg->base());
  Registry& r = registry();
  {
    std::lock_guard<std::mutex> lk(r.mu);
    if (!r.published.emplace(name, std::make_pair(seg, openers < 1 ? 1 : openers)).second)
      return report_error(ncclInternalError, "P2P: connection %s created twice", name.c_str());
  }
  r.cv.notify_all();
  *out = seg;
  return ncclSuccess;
}

ncclResult_t segment_open(TransportKind kind, const std::string& name, size_t bytes, const std::atomic<int>* abort,
                          double timeout_s, std::shared_ptr<Segment>* out, const ConnectWatch& watch, int openers) {
  if (kind == TransportKind::kShm) return shm_open_wait(name, bytes, abort, timeout_s, out, watch, openers < 1 ? 1 : openers);
  Registry& r = registry();
  std::unique_lock<std::mutex> lk(r.mu);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  const double start = now_us();
  double next_watch = kWatchEveryUs;
  for (;;) {
    auto it = r.published.find(name);
    if (it != r.published.end()) {
      *out = it->second.first;
      if (--it->second.second <= 0) r.published.erase(it);
      auto* hdr = static_cast<ConnFifoHeader*>((*out)->base());
      __atomic_add_fetch(&hdr->sender_attached, 1u, __ATOMIC_ACQ_REL);
      return ncclSuccess;
    }
    if (abort && abort->load()) return report_error(ncclInternalError, "P2P: connecting %s aborted", name.c_str());
    if (watch) {
      lk.unlock();  // the watcher reads the board and may print: not under the registry's lock
      const ncclResult_t w = poll_watch(watch, start, &next_watch);
      lk.lock();
      if (w != ncclSuccess) return w;
    }
    if (std::chrono::steady_clock::now() > deadline)
      return report_error(ncclSystemError, "P2P: peer never created %s (waited %.0f s)", name.c_str(), timeout_s);
    r.cv.wait_for(lk, std::chrono::milliseconds(10));
  }
}

}  // namespace cclab
