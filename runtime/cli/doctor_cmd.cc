#include "doctor_cmd.h"

#include <sys/mman.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "base/board.h"
#include "trace/trace.h"

namespace cclab {

namespace {

const char kUsage[] =
    "usage: cclab doctor [BOARD...] [--stuck S] [--clean]\n"
    "       cclab doctor TRACE.cctrace\n"
    "\n"
    "Reads the status boards of the cclab communicators running on this host (one per communicator, in\n"
    "/dev/shm/cclab-board-*) and prints every rank's current operation (sequence number, collective, count,\n"
    "datatype, algorithm, protocol) and its sleeping waits (channel, peer, step, data or credits), then a\n"
    "verdict: ranks that called a different collective or count, a rank that never arrived or left, a dead\n"
    "process, the rank a chain or cycle of waits points at. Host-backend communicators only.\n"
    "\n"
    "  BOARD      a board's name as listed (/cclab-board-<id>); default: every board\n"
    "  --stuck S  a wait asleep for S seconds or more counts as stuck (default 1)\n"
    "  --clean    remove the boards of jobs whose ranks all ended (a killed job leaves its board)\n"
    "  TRACE      a trace recorded with CCLAB_TRACE (a file): prints the reports the doctor made during\n"
    "             that run (its STUK sections), with the time of each\n"
    "\n"
    "Exit status: 0 nothing stuck, 1 some rank is stuck (a trace: it holds a report), 2 a usage error or an\n"
    "unreadable board or trace.\n"
    "A running job prints the same report itself: after CCLAB_STUCK_WARN seconds (default 30) of a stuck\n"
    "wait, and on SIGUSR1.\n";

// A trace file given instead of a board: an existing regular file, or a name ending in .cctrace.
bool is_trace_arg(const std::string& a) {
  struct stat st;
  if (::stat(a.c_str(), &st) == 0) return S_ISREG(st.st_mode);
  return a.size() > 8 && a.compare(a.size() - 8, 8, ".cctrace") == 0;
}

// Prints the doctor's reports a trace recorded; 0 none, 1 some, 2 unreadable.
int print_trace_reports(const std::string& path) {
  trace::Trace t;
  std::string err;
  if (!trace::read_trace(path, &t, &err)) {
    std::fprintf(stderr, "cclab doctor: %s\n", err.c_str());
    return 2;
  }
  if (t.stuck.empty()) {
    std::printf("%s: no report of the doctor (no rank was stuck long enough while it was recorded)\n", path.c_str());
    return 0;
  }
  std::printf("%s: %zu report%s of the doctor\n\n", path.c_str(), t.stuck.size(), t.stuck.size() == 1 ? "" : "s");
  for (const trace::Stuck& st : t.stuck) {
    std::printf("at t = %.3f s (the trace's clock): %s\n", st.time_us / 1e6,
                st.certain ? "the operation could not complete (the waits ended with this verdict)"
                           : "ranks were waiting (the waits went on)");
    std::printf("doctor: %s\n", st.summary.c_str());
    for (const std::string& l : st.lines) std::printf("%s\n", l.c_str());
    std::printf("\n");
  }
  return 1;
}


}  // namespace

int doctor_main(const std::vector<std::string>& args) {
  std::vector<std::string> names, traces;
  double stuck_s = 1;
  bool clean = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    } else if (a == "--clean") {
      clean = true;
    } else if (a == "--stuck") {
      char* end = nullptr;
      if (i + 1 >= args.size() || (stuck_s = std::strtod(args[i + 1].c_str(), &end), *end != '\0') || stuck_s < 0) {
        std::fprintf(stderr, "cclab doctor: --stuck needs a number of seconds >= 0\n");
        return 2;
      }
      ++i;
    } else if (!a.empty() && a[0] == '-') {
      std::fprintf(stderr, "cclab doctor: unknown option '%s' (cclab doctor --help)\n", a.c_str());
      return 2;
    } else if (is_trace_arg(a)) {
      traces.push_back(a);
    } else {
      names.push_back(a[0] == '/' ? a : "/" + a);
    }
  }
  if (!traces.empty()) {
    if (!names.empty() || clean) {
      std::fprintf(stderr, "cclab doctor: give either trace files or boards (and --clean), not both\n");
      return 2;
    }
    int status = 0;
    for (const std::string& p : traces) status = std::max(status, print_trace_reports(p));
    return status;
  }
  const bool listed = names.empty();
  if (listed) names = board_list();
  if (names.empty()) {
    std::printf("cclab doctor: no cclab communicator runs on this host (no /dev/shm/cclab-board-*)\n");
    return 0;
  }
  int status = 0, cleaned = 0;
  for (const std::string& name : names) {
    BoardSnapshot s;
    std::string why;
    if (!board_read(name, &s, &why)) {
      std::fprintf(stderr, "cclab doctor: %s\n", why.c_str());
      status = 2;
      continue;
    }
    if (clean) {
      if (board_all_ended(s) && shm_unlink(name.c_str()) == 0) {
        std::printf("removed %s (no rank of it runs)\n", name.c_str());
        ++cleaned;
      }
      continue;
    }
    const BoardVerdict v = board_judge(s, stuck_s * 1e6);
    for (const std::string& l : v.lines) std::printf("%s\n", l.c_str());
    if (board_all_ended(s)) std::printf("   (no rank of it runs any more: a job that was killed; --clean removes it)\n");
    std::printf("\n");
    if (v.stuck && status == 0) status = 1;
  }
  if (clean) std::printf("cclab doctor: %d board%s removed\n", cleaned, cleaned == 1 ? "" : "s");
  return status;
}

}  // namespace cclab
