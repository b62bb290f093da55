// runtime/base/log.cc - NCCL_DEBUG-style logging and the per-thread last error.
//
// The configuration (level, subsystem mask, output file) is read on first use and cached in atomics,
// so a disabled log call costs two relaxed loads. Each line is formatted into one buffer and written
// with a single write(2), so lines from different threads and processes sharing a file never
// interleave mid-line.
#include "base/log.h"

#include <fcntl.h>
#include <pthread.h>
#include <strings.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "base/param.h"

namespace cclab {
namespace {

// ---- State ----------------------------------------------------------------------------------------
// Trivially destructible on purpose: background threads (the bootstrap root) may still log while
// static destructors run at exit.
//
// g_init_mutex serializes (re)initialization. g_output guards the output state below it: writers of
// log lines hold it shared, so reset_log_for_testing (exclusive) never closes a file under a write,
// and a descriptor number reused by a later open() never receives a stale line.
std::mutex g_init_mutex;
pthread_rwlock_t g_output = PTHREAD_RWLOCK_INITIALIZER;
std::atomic<int> g_level{-1};  // -1: not read yet; else a LogLevel
std::atomic<uint64_t> g_mask{0};
int g_fd = STDOUT_FILENO;                       // guarded by g_output
bool g_fd_owned = false;                        // g_fd is a file we opened (NCCL_DEBUG_FILE); guarded by g_output
char g_host[256] = "";                          // guarded by g_output
int g_pid = 0;                                  // guarded by g_output
std::chrono::steady_clock::time_point g_epoch;  // guarded by g_output
std::atomic<bool> g_version_printed{false};

thread_local int t_rank = -1;
thread_local int t_tid = -1;
thread_local std::string t_last_error;

class OutputLock {
 public:
  explicit OutputLock(bool exclusive) {
    if (exclusive) {
      pthread_rwlock_wrlock(&g_output);
    } else {
      pthread_rwlock_rdlock(&g_output);
    }
  }
  ~OutputLock() { pthread_rwlock_unlock(&g_output); }
  OutputLock(const OutputLock&) = delete;
  OutputLock& operator=(const OutputLock&) = delete;
};

// A forked child keeps the parent's cached pid and (in the forking thread) tid; its lines must carry
// its own. The child has a single thread here, so no lock is needed.
void on_fork_child() {
  g_pid = static_cast<int>(getpid());
  t_tid = -1;
}
[[maybe_unused]] const int g_atfork_registered = pthread_atfork(nullptr, nullptr, on_fork_child);

// Called with g_output held exclusively.
void close_output_locked() {
  if (g_fd_owned) ::close(g_fd);
  g_fd_owned = false;
  g_fd = STDOUT_FILENO;
}

struct SubsysName {
  const char* name;
  uint64_t mask;
};
constexpr SubsysName kSubsysNames[] = {
    {"INIT", kLogInit},
    {"COLL", kLogColl},
    {"P2P", kLogP2p},
    {"SHM", kLogShm},
    {"NET", kLogNet},
    {"GRAPH", kLogGraph},
    {"TUNING", kLogTuning},
    {"ENV", kLogEnv},
    {"ALLOC", kLogAlloc},
    {"CALL", kLogCall},
    {"PROXY", kLogProxy},
    {"NVLS", kLogNvls},
    {"BOOTSTRAP", kLogBootstrap},
    {"REG", kLogReg},
    {"PROFILE", kLogProfile},
    {"RAS", kLogRas},
    {"ALL", kLogAll},
};
constexpr uint64_t kDefaultSubsys = kLogInit | kLogBootstrap | kLogEnv;  // NCCL 2.28's default

std::string vformat(const char* fmt, va_list args) {
  char small[512];
  va_list copy;
  va_copy(copy, args);
  int n = vsnprintf(small, sizeof(small), fmt, copy);
  va_end(copy);
  if (n < 0) return std::string(fmt);
  if (static_cast<size_t>(n) < sizeof(small)) return std::string(small, n);
  std::string out(static_cast<size_t>(n) + 1, '\0');
  vsnprintf(&out[0], out.size(), fmt, args);
  out.resize(n);
  return out;
}

std::string format(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string format(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string s = vformat(fmt, args);
  va_end(args);
  return s;
}

// Writes all of `s` with as few write(2) calls as the kernel allows (one, for any sane line).
void write_fd(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;  // nowhere left to report a failing log write
    done += static_cast<size_t>(n);
  }
}

const char* base_name(const char* path) {
  if (path == nullptr) return "";
  const char* slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

std::string compute_host_name() {
  std::string value;
  if (param_lookup_quiet("NCCL_HOSTID", &value) != ParamSource::kUnset) return value;
  char buf[256] = "";
  if (gethostname(buf, sizeof(buf) - 1) != 0) snprintf(buf, sizeof(buf), "unknown");
  buf[sizeof(buf) - 1] = '\0';
  std::string host(buf);
  host = host.substr(0, host.find('.'));
  // These two would break NCCL_DEBUG_FILE paths built from %h.
  for (char& c : host) {
    if (c == '%' || c == '/') c = '-';
  }
  return host;
}

// Expands %h (host), %p (pid) and %% in an NCCL_DEBUG_FILE pattern; other % sequences stay as is.
std::string expand_file_name(const std::string& pattern, const char* host, int pid) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%' || i + 1 == pattern.size()) {
      out += pattern[i];
      continue;
    }
    char c = pattern[++i];
    if (c == 'h') {
      out += host;
    } else if (c == 'p') {
      out += std::to_string(pid);
    } else if (c == '%') {
      out += '%';
    } else {
      out += '%';
      out += c;
    }
  }
  return out;
}

// Reads the configuration. Called with g_init_mutex held; returns notes to print once it is released
// (logging from here would re-enter the lock).
std::string init_locked() {
  std::string notes;
  std::string value;
  LogLevel level = LogLevel::kNone;
  if (param_lookup_quiet("NCCL_DEBUG", &value) != ParamSource::kUnset) {
    bool ok = true;
    level = parse_log_level(value.c_str(), &ok);
    if (!ok) {
      // NCCL ignores an unknown level silently; say so once, on stderr since logging is now off.
      write_fd(STDERR_FILENO, format("NCCL_DEBUG=%s is not one of VERSION, WARN, INFO, ABORT, TRACE: logging is off\n",
                                     value.c_str()));
    }
  }
  uint64_t mask = kDefaultSubsys;
  if (param_lookup_quiet("NCCL_DEBUG_SUBSYS", &value) != ParamSource::kUnset) {
    std::string unknown;
    mask = parse_log_subsys(value.c_str(), &unknown);
    if (!unknown.empty()) notes += format("NCCL_DEBUG_SUBSYS: ignoring unknown subsystem(s) %s\n", unknown.c_str());
  }

  std::string host = compute_host_name();
  int pid = static_cast<int>(getpid());

  // As in NCCL, the file is only opened when there is more than the version line to write.
  int fd = STDOUT_FILENO;
  bool owned = false;
  if (level > LogLevel::kVersion && param_lookup_quiet("NCCL_DEBUG_FILE", &value) != ParamSource::kUnset) {
    std::string path = expand_file_name(value, host.c_str(), pid);
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_APPEND, 0644);
    owned = fd >= 0;
    if (fd < 0) {
      fd = STDERR_FILENO;
      notes +=
          format("NCCL_DEBUG_FILE: cannot open '%s' (%s); logging to stderr instead\n", path.c_str(), strerror(errno));
    }
  }
  OutputLock lock(/*exclusive=*/true);
  close_output_locked();
  g_fd = fd;
  g_fd_owned = owned;
  snprintf(g_host, sizeof(g_host), "%s", host.c_str());
  g_pid = pid;
  g_epoch = std::chrono::steady_clock::now();
  g_mask.store(mask, std::memory_order_relaxed);
  g_level.store(static_cast<int>(level), std::memory_order_release);
  return notes;
}

void ensure_init() {
  if (g_level.load(std::memory_order_acquire) >= 0) return;
  std::string notes;
  {
    std::lock_guard<std::mutex> lock(g_init_mutex);
    if (g_level.load(std::memory_order_acquire) >= 0) return;
    notes = init_locked();
  }
  // Each note is one line ending in '\n'.
  size_t start = 0;
  while (start < notes.size()) {
    size_t end = notes.find('\n', start);
    std::string line = notes.substr(start, end - start);
    log_message(LogLevel::kWarn, kLogAll, nullptr, 0, "%s", line.c_str());
    start = end + 1;
  }
}

int thread_id() {
  if (t_tid == -1) t_tid = static_cast<int>(syscall(SYS_gettid));
  return t_tid;
}

std::string rank_tag() { return t_rank >= 0 ? format("[%d]", t_rank) : std::string("[?]"); }

}  // namespace

// ---- Parsing --------------------------------------------------------------------------------------
LogLevel parse_log_level(const char* value, bool* ok) {
  if (ok) *ok = true;
  if (value == nullptr) return LogLevel::kNone;
  static const struct {
    const char* name;
    LogLevel level;
  } kLevels[] = {{"VERSION", LogLevel::kVersion},
                 {"WARN", LogLevel::kWarn},
                 {"INFO", LogLevel::kInfo},
                 {"ABORT", LogLevel::kAbort},
                 {"TRACE", LogLevel::kTrace}};
  for (const auto& l : kLevels) {
    if (strcasecmp(value, l.name) == 0) return l.level;
  }
  if (ok) *ok = false;
  return LogLevel::kNone;
}

uint64_t parse_log_subsys(const char* value, std::string* unknown) {
  if (unknown) unknown->clear();
  if (value == nullptr) return kDefaultSubsys;
  bool invert = value[0] == '^';
  if (invert) ++value;
  uint64_t mask = invert ? static_cast<uint64_t>(kLogAll) : 0;
  std::string list(value);
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    std::string name = list.substr(start, end - start);
    start = end + 1;
    if (name.empty()) continue;
    uint64_t bit = 0;
    for (const auto& s : kSubsysNames) {
      if (strcasecmp(name.c_str(), s.name) == 0) bit = s.mask;
    }
    if (bit == 0) {
      if (unknown) *unknown += (unknown->empty() ? "" : ",") + name;
      continue;
    }
    mask = invert ? (mask & ~bit) : (mask | bit);
  }
  return mask;
}

LogLevel log_level() {
  ensure_init();
  return static_cast<LogLevel>(g_level.load(std::memory_order_acquire));
}

uint64_t log_subsys_mask() {
  ensure_init();
  return g_mask.load(std::memory_order_relaxed);
}

std::string log_host_name() {
  ensure_init();
  OutputLock lock(/*exclusive=*/false);
  return g_host;
}

const char* version_string() {
#define CCLAB_STR2_(x) #x
#define CCLAB_STR_(x) CCLAB_STR2_(x)
  return CCLAB_STR_(NCCL_MAJOR) "." CCLAB_STR_(NCCL_MINOR) "." CCLAB_STR_(NCCL_PATCH) NCCL_SUFFIX "+cclab";
#undef CCLAB_STR_
#undef CCLAB_STR2_
}

// ---- Logging --------------------------------------------------------------------------------------
bool log_enabled(LogLevel level, uint64_t subsys) {
  ensure_init();
  return static_cast<int>(level) <= g_level.load(std::memory_order_acquire) &&
         (subsys & g_mask.load(std::memory_order_relaxed)) != 0;
}

void log_message(LogLevel level, uint64_t subsys, const char* file, int line, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string msg = vformat(fmt, args);
  va_end(args);
  if (level == LogLevel::kWarn) t_last_error = msg;  // stored even when not printed
  if (!log_enabled(level, subsys)) return;

  OutputLock lock(/*exclusive=*/false);
  // A reset between the check and the lock: the line belongs to the configuration that follows, which
  // the next call will read; dropping it is fine for a test-only race.
  if (g_level.load(std::memory_order_acquire) < static_cast<int>(level)) return;
  std::string out = format("%s:%d:%d %s ", g_host, g_pid, thread_id(), rank_tag().c_str());
  switch (level) {
    case LogLevel::kWarn:
      if (file != nullptr) out += format("%s:%d ", base_name(file), line);
      out += "NCCL WARN ";
      break;
    case LogLevel::kTrace: {
      double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - g_epoch).count();
      out += format("%f %s:%d NCCL TRACE ", ms, base_name(file), line);
      break;
    }
    case LogLevel::kVersion:
      out.clear();  // the version line is bare, as in NCCL
      break;
    default:
      out += "NCCL INFO ";
      break;
  }
  out += msg;
  out += '\n';
  write_fd(g_fd, out);
}

void log_alert(const char* file, int line, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  const std::string msg = vformat(fmt, args);
  va_end(args);
  if (log_enabled(LogLevel::kWarn, kLogAll)) {
    log_message(LogLevel::kWarn, kLogAll, file, line, "%s", msg.c_str());
    return;
  }
  t_last_error = msg;
  const char* env = getenv("NCCL_DEBUG");
  if (env != nullptr && env[0] != '\0') return;  // the user chose a level without WARN
  static std::atomic<int> alerts{0};
  const int n = alerts.fetch_add(1);
  if (n > kMaxAlerts) return;
  std::string out = n == kMaxAlerts ? std::string("cclab: more warnings not shown (NCCL_DEBUG=WARN prints them all)\n")
                                    : format("cclab %s WARN %s (NCCL_DEBUG=WARN prints more)\n", rank_tag().c_str(),
                                             msg.c_str());
  write_fd(STDERR_FILENO, out);
}

void log_report(const std::vector<std::string>& lines, bool forced) {
  if (log_enabled(LogLevel::kWarn, kLogAll)) {
    OutputLock lock(/*exclusive=*/false);
    const std::string prefix = format("%s:%d:%d %s NCCL WARN ", g_host, g_pid, thread_id(), rank_tag().c_str());
    std::string out;
    for (const std::string& l : lines) out += prefix + l + "\n";
    write_fd(g_fd, out);
    return;
  }
  const char* env = getenv("NCCL_DEBUG");
  if (!forced && env != nullptr && env[0] != '\0') return;  // the user chose a level without WARN
  const std::string prefix = format("cclab %s ", rank_tag().c_str());
  std::string out;
  for (const std::string& l : lines) out += prefix + l + "\n";
  write_fd(STDERR_FILENO, out);
}

void print_version_once() {
  if (g_version_printed.exchange(true)) return;
  LogLevel level = log_level();
  if (level == LogLevel::kVersion || level == LogLevel::kWarn) {
    log_message(LogLevel::kVersion, kLogAll, nullptr, 0, "NCCL version %s", version_string());
  } else if (level >= LogLevel::kInfo) {
    log_message(LogLevel::kInfo, kLogAll, nullptr, 0, "NCCL version %s", version_string());
  }
}

void set_log_rank(int rank) { t_rank = rank; }

void reset_log_for_testing() {
  std::lock_guard<std::mutex> init_lock(g_init_mutex);
  OutputLock lock(/*exclusive=*/true);
  close_output_locked();
  g_version_printed.store(false);
  g_level.store(-1, std::memory_order_release);
}

// ---- Errors ---------------------------------------------------------------------------------------
const char* last_error() { return t_last_error.c_str(); }

void set_last_error(const char* msg) { t_last_error = msg ? msg : ""; }

std::string string_printf(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string s = vformat(fmt, args);
  va_end(args);
  return s;
}

ncclResult_t report_error(ncclResult_t code, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  std::string msg = vformat(fmt, args);
  va_end(args);
  log_message(LogLevel::kWarn, kLogAll, nullptr, 0, "%s", msg.c_str());
  return code;
}

}  // namespace cclab
