// runtime/base/log.h - NCCL_DEBUG-style logging and the last-error message.
//
// Levels and subsystems follow NCCL: NCCL_DEBUG=VERSION|WARN|INFO|ABORT|TRACE selects the level,
// NCCL_DEBUG_SUBSYS a comma list of subsystems (INIT,COLL,...,ALL; a leading ^ excludes), and
// NCCL_DEBUG_FILE a file name in which %h is the host name and %p the process id.
// Lines look like NCCL's: "host:pid:tid [rank] NCCL INFO message".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cclab/nccl.h"

namespace cclab {

enum class LogLevel : int { kNone = 0, kVersion = 1, kWarn = 2, kInfo = 3, kAbort = 4, kTrace = 5 };

enum LogSubsys : uint64_t {
  kLogInit = 1ull << 0,
  kLogColl = 1ull << 1,
  kLogP2p = 1ull << 2,
  kLogShm = 1ull << 3,
  kLogNet = 1ull << 4,
  kLogGraph = 1ull << 5,
  kLogTuning = 1ull << 6,
  kLogEnv = 1ull << 7,
  kLogAlloc = 1ull << 8,
  kLogCall = 1ull << 9,
  kLogProxy = 1ull << 10,
  kLogNvls = 1ull << 11,
  kLogBootstrap = 1ull << 12,
  kLogReg = 1ull << 13,
  kLogProfile = 1ull << 14,
  kLogRas = 1ull << 15,
  kLogAll = ~0ull,
};

// True when a message of this level and subsystem would be printed. Cheap: the environment is
// read once (thread-safe) and cached.
bool log_enabled(LogLevel level, uint64_t subsys);

// Prints one log line if enabled. WARN messages are also stored as the calling thread's last error
// (see last_error), whether or not they are printed.
void log_message(LogLevel level, uint64_t subsys, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 5, 6)));

// A warning a user must see even without NCCL_DEBUG (a stuck wait): printed as a WARN whatever
// NCCL_DEBUG_SUBSYS says when the level includes WARN; when NCCL_DEBUG is unset (NCCL would print
// nothing), as one line on stderr, "cclab [rank] WARN ... (NCCL_DEBUG=WARN prints more)", at most
// kMaxAlerts per process. Nothing when NCCL_DEBUG asks for less than WARN (VERSION). Stored as the
// thread's last error like any WARN.
constexpr int kMaxAlerts = 20;
void log_alert(const char* file, int line, const char* fmt, ...) __attribute__((format(printf, 3, 4)));

// printf into a std::string (any length).
std::string string_printf(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// A report of several lines (the doctor's, core/doctor.h): as NCCL WARN lines when the level includes
// WARN, else on stderr as "cclab [rank] line" when NCCL_DEBUG is unset or `forced` (the user asked for
// it: SIGUSR1). Not counted in kMaxAlerts; not stored as the last error.
void log_report(const std::vector<std::string>& lines, bool forced);

// Sets the calling thread's rank shown in brackets in log lines (-1: unknown, shown as [?]).
void set_log_rank(int rank);

// Re-reads NCCL_DEBUG, NCCL_DEBUG_SUBSYS and NCCL_DEBUG_FILE (for tests that change them).
void reset_log_for_testing();

// Prints the version line once per process (again after reset_log_for_testing): the bare line
// "NCCL version 2.28.9+cclab" when NCCL_DEBUG is VERSION or WARN, an INFO line when it is INFO or
// above, nothing when logging is off. Communicator init calls it, as NCCL's showVersion does.
void print_version_once();

// "2.28.9+cclab": NCCL's version this library implements, plus cclab's suffix.
const char* version_string();

// Parsed forms of the variables, exposed for tests and for tools that print the configuration.
// parse_log_level: case-insensitive VERSION|WARN|INFO|ABORT|TRACE; anything else (or nullptr) is
// kNone and sets *ok to false when ok is given (nullptr counts as ok: the variable is unset).
LogLevel parse_log_level(const char* value, bool* ok = nullptr);
// parse_log_subsys: comma list of subsystem names (case-insensitive); a leading ^ starts from ALL and
// removes the listed ones. nullptr gives NCCL's default, INIT|BOOTSTRAP|ENV. Unknown names are
// ignored (as in NCCL) and reported in *unknown when given.
uint64_t parse_log_subsys(const char* value, std::string* unknown = nullptr);
// The level and subsystem mask in effect (reads the environment on first use).
LogLevel log_level();
uint64_t log_subsys_mask();
// Host name as it appears in log lines and in %h: up to the first '.', with '%' and '/' replaced by
// '-'; NCCL_HOSTID overrides it, as in NCCL.
std::string log_host_name();

// The calling thread's most recent error message ("" if none).
const char* last_error();
void set_last_error(const char* msg);

// Logs a WARN (so the message becomes the thread's last error) and returns `code`, e.g.
//   return report_error(ncclInvalidArgument, "ncclAllReduce: invalid datatype %d", dt);
ncclResult_t report_error(ncclResult_t code, const char* fmt, ...) __attribute__((format(printf, 2, 3)));

}  // namespace cclab

#define CCLAB_WARN(...) \
  ::cclab::log_message(::cclab::LogLevel::kWarn, ::cclab::kLogAll, __FILE__, __LINE__, __VA_ARGS__)
#define CCLAB_INFO(subsys, ...)                                                       \
  do {                                                                               \
    if (::cclab::log_enabled(::cclab::LogLevel::kInfo, (subsys)))                    \
      ::cclab::log_message(::cclab::LogLevel::kInfo, (subsys), __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)
// Breadcrumbs, as NCCL's NCCLCHECK: a failing call logs "file:line -> code" under INFO and the
// caller returns the same code, so NCCL_DEBUG=INFO shows the path an error took.
#define CCLAB_CHECK(call)                                                                       \
  do {                                                                                          \
    ncclResult_t cclab_check_res_ = (call);                                                     \
    if (cclab_check_res_ != ncclSuccess) {                                                      \
      CCLAB_INFO(::cclab::kLogAll, "%s:%d -> %d", __FILE__, __LINE__, (int)cclab_check_res_);  \
      return cclab_check_res_;                                                                  \
    }                                                                                           \
  } while (0)
#define CCLAB_TRACE(subsys, ...)                                                      \
  do {                                                                               \
    if (::cclab::log_enabled(::cclab::LogLevel::kTrace, (subsys)))                   \
      ::cclab::log_message(::cclab::LogLevel::kTrace, (subsys), __FILE__, __LINE__, __VA_ARGS__); \
  } while (0)
