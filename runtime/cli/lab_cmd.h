// runtime/cli/lab_cmd.h - `cclab lab`: the labs' grader (labs/README.md).
//
//   cclab lab list                         every lab, with its status from the last check
//   cclab lab check 01 [--json]            build the student's files, run the lab's hidden checks (host
//                                          backend and simulator), print a table; exit 0 when all pass
//   cclab lab run 01 [--ranks N --size S]  build and run the student's code once (the backend from the
//                                          environment: CCLAB_BACKEND=sim CCLAB_TOPO=dgx-h100 ...)
//   cclab lab viz 01 [--screenshot OUT.png] [viz flags]   the trace of the last checked simulator run
//
// Flags: --dir DIR (the student's files, default LABS/NN-name), --labs DIR or CCLAB_LABS_DIR (the labs
// folder, default the source tree's labs/), --work DIR or CCLAB_LABS_WORK (builds, logs, traces and
// status, default BUILD/labs), --timeout S (every check's limit in seconds).
//
// Every check that runs student code runs in a forked child process with a time limit: a crash, an
// exit, a hang or a deadlock fails that check with a message and a hint, and the grader goes on. The
// child's stdout and stderr go to a log file in the work folder. Each lab is a `Lab` in the table of
// labs/labs.cc; its checks live in labs/labNN.cc and use the helpers declared here.
//
// Exit status: 0 all checks passed (check) / done; 1 a check failed; 2 bad usage (the message names
// the flag), an unknown lab, or a lab not written yet.
#pragma once

#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cclab/cclab.h"
#include "nccl.h"

namespace cclab::sim {
struct SimConfig;
struct SimSizeResult;
}  // namespace cclab::sim

namespace cclab::lab {

constexpr int kLabExitOk = 0;
constexpr int kLabExitFailed = 1;
constexpr int kLabExitUsage = 2;

// One row of a check's table.
struct CheckResult {
  std::string name;  // "host backend, 3 ranks"
  bool passed = false;
  bool skipped = false;  // not run because an earlier check failed (counts as not passed)
  std::string detail;    // what was measured or went wrong (may have several lines)
  std::string hint;      // what to look at, for a check that did not pass
  double seconds = 0;    // wall time of the check
};

// Where a lab's files are, and how to build and run them.
struct LabEnv {
  std::string labs_dir;     // labs/
  std::string lab_dir;      // labs/01-ring-allreduce: the lab's README and headers
  std::string student_dir;  // the student's files (--dir; the lab folder by default)
  std::string work_dir;     // BUILD/labs/01-ring-allreduce: the shared object, logs, trace, status
  std::string include_dir;  // runtime/include (nccl.h, cclab/cclab.h)
  std::string cc;           // the C compiler
  double timeout_s = 0;     // --timeout: every check's limit (0: each check's own default)
  bool progress = true;     // print each check's row as it finishes (false with --json)
  std::string work_given;   // --work as given ("" when the default): repeated in commands to retype
};

// A lab of the course (labs/labs.cc).
struct Lab {
  std::string number;  // "01"
  std::string folder;  // "01-ring-allreduce"
  std::string title;   // "Ring all_reduce by hand"
  bool written = false;
  std::vector<std::string> student_files;  // the files the student edits ("ring_allreduce.c")
  std::string trace_file;                  // in the work folder: what `cclab lab viz` opens
  // Runs every check; calls on_result after each one. Returns all of them.
  std::function<std::vector<CheckResult>(const LabEnv&, const std::function<void(const CheckResult&)>&)> check;
  // `cclab lab run NN ARGS...`: returns the exit status.
  std::function<int(const LabEnv&, const std::vector<std::string>&)> run;
};

const std::vector<Lab>& all_labs();

// ---- Helpers for the labs' checks ------------------------------------------------------------------

// A command run to completion (or killed at its time limit), its stdout and stderr together.
struct CommandResult {
  bool started = false;
  bool timed_out = false;
  int exit_code = -1;  // when it exited
  int signal = 0;      // when a signal ended it
  std::string output;
};
CommandResult run_command(const std::vector<std::string>& argv, double timeout_s);

// ---- Helpers of the labs whose checks run cclab itself as a subprocess (labs 6 and 8) ---------------

// This cclab executable (/proc/self/exe), to run `cclab sim` and `cclab perf` from a check.
std::string self_exe();
// "cclab ARGS..." as a student would type it (arguments with blanks quoted).
std::string cclab_command_line(const std::vector<std::string>& args);
// The last `lines` non-empty lines of a command's output (SimGrid's own CRITICAL lines left out).
std::string output_tail(const std::string& out, size_t lines);
// "could not start cclab", "did not finish within 60 s", "crashed with signal 11", "exited with status 3".
std::string describe_command(const CommandResult& r, double timeout_s);
// One row of `cclab sim ... --csv -`.
struct SimRow {
  double bytes = 0, time_us = 0, busbw = 0;
  long long wrong = -1;
  std::string algo, proto, level;
  int nchannels = 0;
};
// The rows of `cclab sim --csv -` output (lines before its header are ignored); false when it has none.
bool parse_sim_csv(const std::string& out, std::vector<SimRow>* rows);

// Simulates `cfg` in this process (sim::simulate, the code of `cclab sim`) and gives the row of its first
// size, the one a check asks for with min_bytes = max_bytes; false with *error.
bool simulate_one(const sim::SimConfig& cfg, sim::SimSizeResult* out, std::string* error);

// Compiles the student's C sources into a shared object `so_path` (cc -shared -fPIC -Wall, with
// runtime/include, the lab folder and the student folder on the include path). The result's detail
// holds the compiler's messages (warnings included); a missing file fails with what to do.
CheckResult compile_student(const LabEnv& env, const std::vector<std::string>& sources, const std::string& so_path);
// The compiler run of compile_student, on any C files (paths as given): for a grader's own wrapper of a
// student's file.
CommandResult compile_shared(const LabEnv& env, const std::vector<std::string>& paths, const std::string& so_path);

// What a forked child did.
struct ChildOutcome {
  enum Status { kOk, kTimedOut, kCrashed, kExited, kNoChild } status = kNoChild;
  nlohmann::json result;       // the function's value (kOk)
  nlohmann::json last_marker;  // the last value the child passed to child_marker() (where it was)
  int signal = 0;              // kCrashed
  int exit_code = 0;           // kExited: it ended the process itself (exit()) before returning
  double seconds = 0;
  double timeout_s = 0;
  std::string log_path;  // the child's stdout and stderr
  std::string log_tail;  // the last lines of it
};

// Runs fn in a forked child (its own process group, stdout and stderr to log_path or, when log_path is
// empty, the parent's; killed with its group at timeout_s) and returns what it returned. In the child,
// `env_unset_prefixes` are removed from the environment (e.g. "NCCL_", "CCLAB_": the grader decides the backend and the
// model) before `env` is applied. The parent must not have created communicators: the child starts from the parent's
// state.
ChildOutcome run_in_child(const std::function<nlohmann::json()>& fn, double timeout_s, const std::string& log_path,
                          const std::map<std::string, std::string>& env = {},
                          const std::vector<std::string>& env_unset_prefixes = {});
// CCLAB_TIMEOUT for a child that run_in_child kills after kill_s: short enough that a hung rank gives
// up and names its stuck wait (a hang can take two such waits: connecting, then the data) well before
// the kill - a quarter of kill_s, at most 10 s, at least 1.
std::string child_wait_timeout(double kill_s);
// In a child of run_in_child: records where it is (a crash or a time-out reports the last marker).
void child_marker(const nlohmann::json& where);

// "crashed with SIGSEGV (segmentation fault)", "timed out after 10 s", "exited with status 3" ...
std::string describe_outcome(const ChildOutcome& o);

// The dlopen'ed student library in a child: the symbol, or "" and an error saying what was wrong.
void* load_student_symbol(const std::string& so_path, const std::string& symbol, std::string* error);

// `key = value` lines (# comments, blank lines ignored) of an answers file.
struct Answers {
  bool found = false;                         // the file exists
  std::map<std::string, std::string> values;  // keys with a non-empty value
  std::vector<std::string> problems;          // "line 4: no '=' in 'busbw 1.75'"
};
Answers read_answers(const std::string& path);
// A numeric answer: true and *value when the key is there and is a number; otherwise false and *why.
bool answer_number(const Answers& a, const std::string& key, double* value, std::string* why);
// The check of numeric answer `key` (what: the question, for the detail) against the grader's value
// `want`, recomputed by the grader: passes within `tolerance` (relative; 0: exactly). have_want false:
// the grader could not compute it (fail_why says why; not the student's fault). A missing or malformed
// answer fails with how to write it in answers_path.
CheckResult check_answer(const Answers& a, const std::string& answers_path, const std::string& key,
                         const std::string& what, bool have_want, double want, double tolerance,
                         const std::string& fail_why, const std::string& hint);

// The check of a size answer `key` (bytes, or with K, M or G: parse_size) against the grader's size
// `want`, a size of a sweep it ran itself: right only when it is that size (a neighbour of the sweep is
// wrong). have_want and fail_why as check_answer's.
CheckResult check_size_answer(const Answers& a, const std::string& answers_path, const std::string& key,
                              const std::string& what, bool have_want, size_t want, const std::string& fail_why,
                              const std::string& hint);

// ---- Helpers of the labs whose checks run the student's code over nccl.h (labs 1, 2 and 7) ----------

// A runtime error message, short: its first line, and at most 3 of the stuck waits a deadlock lists.
std::string short_error(const std::string& e);
// The compiler's messages as a check shows them: a message the compiler repeats for each instantiation of
// a template (lab 8's schedule, once per datatype) is shown once. The whole output is written to log_path
// when anything was left out, and the last line says how many repeats were left out and where they are.
std::string compiler_messages(const std::string& output, const std::string& log_path);
// A child's result that says the student's library did not load ({"load_error"}: the hint names `header`,
// where the function's signature is) or the grader could not run it ({"internal_error"}): *c's detail and
// hint set, true. False for a result with cases.
bool judge_child_error(const ChildOutcome& o, const std::string& header, CheckResult* c);
// The time limit of a check: --timeout when given, else the check's own.
double check_limit(const LabEnv& env, double own);
// The environment variables the grader decides itself in its children (backend, model, algorithms): these
// prefixes are cleared (run_in_child's env_unset_prefixes).
extern const std::vector<std::string> kGraderEnvPrefixes;
// A host backend child's variables: its waits give up (naming rank, peer and step) well before the
// check's time limit timeout_s.
std::map<std::string, std::string> host_child_env(double timeout_s);

// Wall-clock microseconds (steady clock): the host backend's time around a call.
double wall_us();
// The time around a call: simulated microseconds under the simulator (sim), else wall_us().
double clock_us(bool sim);

// What run_rank_threads did.
struct RankThreads {
  std::string backend;         // cclabBackendName of the backend the environment selected
  size_t cases_run = 0;        // cases started (after a failed one no further case starts)
  std::string internal_error;  // a rank could not start (ncclCommInitRank, its stream): nothing ran
};
// Runs cases 0 .. ncases-1 on n ranks, a thread each with its own communicator (ncclCommInitRank) and
// stream, on the backend the environment selects. On the host backend the ranks meet before each case (a
// thread barrier) and rank 0 calls mark(k) there, when every rank has finished case k-1, so that a crash or
// a time-out names the case; under the simulator a thread must not wait outside cclab, so there is only
// mark(0), before the threads start. one(r, k, comm, stream, sim) runs case k on rank r and returns its
// status; after a failure no further case starts (the other ranks may be stuck) and the communicators are
// aborted rather than destroyed.
RankThreads run_rank_threads(int n, size_t ncases, const std::function<void(size_t)>& mark,
                             const std::function<ncclResult_t(int, size_t, ncclComm_t, cudaStream_t, bool)>& one);
// Whether a runtime error says a wait gave up or deadlocked (CCLAB_TIMEOUT, a stuck or never-created peer,
// the simulator's deadlock report).
bool mentions_wait(const std::string& e);
// Whether a child that ran cases ({"cases": [{"ranks": [{"error": ...}...]}...]}) waited for something that
// never came: killed at its limit, or a rank's error that mentions_wait().
bool hung(const ChildOutcome& o);
// The time of such a child's first case: the last rank's t1 - the first rank's t0 (0 when none).
double run_time_us(const nlohmann::json& result);

// `cclab lab run NN`'s --ranks value: a number of ranks from 1 to max, or std::invalid_argument saying why.
int parse_ranks(const std::string& v, int max);
// `cclab lab run NN`: whether a child that ran cases came back with some; if not, prints why (it crashed,
// timed out (then hang_hint), could not load the student's code or start the ranks) and returns false.
bool print_run_failure(const ChildOutcome& o, const char* hang_hint);
// `cclab lab run NN`'s last line: "simulated time: ... us" (simulated) or the host backend's wall-clock time.
void print_run_time(double us, bool simulated);

std::string format_double(double v, int precision);
// path relative to the current folder when it is below it (what a student typed), else absolute.
std::string shown_path(const std::string& path);
// " --dir DIR --work DIR" as far as the check was given them: what a "run it alone" command needs to
// run the same files and build in the same place.
std::string where_flags(const LabEnv& env);

// The `cclab lab` command (arguments after "lab"). viz_main runs `cclab viz` with its arguments (null:
// this build has no visualiser).
int lab_main(const std::vector<std::string>& args, const std::function<int(const std::vector<std::string>&)>& viz_main);

std::string lab_usage();

}  // namespace cclab::lab
