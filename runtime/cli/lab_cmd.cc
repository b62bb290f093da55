// runtime/cli/lab_cmd.cc - `cclab lab`: list, check, run and viz the labs (lab_cmd.h), and the helpers
// every lab's checks use: commands and functions in child processes with time limits, the student's
// build, answers files.
#include "lab_cmd.h"
#include "lab_progress.h"

#include "perf_options.h"

#include "base/thread_barrier.h"
#include "sim/sim.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#ifndef CCLAB_SOURCE_DIR
#define CCLAB_SOURCE_DIR ""
#endif
#ifndef CCLAB_BINARY_DIR
#define CCLAB_BINARY_DIR ""
#endif
#ifndef CCLAB_LAB_CC
#define CCLAB_LAB_CC "cc"
#endif

extern char** environ;

namespace cclab::lab {
namespace fs = std::filesystem;

namespace {

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

// The child process group running now, killed with it when the grader is interrupted (Ctrl-C).
volatile pid_t g_child_group = 0;

void on_interrupt(int sig) {
  const pid_t g = g_child_group;
  if (g > 0) kill(-g, SIGKILL);
  signal(sig, SIG_DFL);
  raise(sig);
}

void install_interrupt_handler() {
  static bool installed = false;
  if (installed) return;
  installed = true;
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

// Reads everything fd delivers until EOF or the deadline; false when the deadline came first.
bool read_until(int fd, double deadline, std::string* out) {
  char buf[4096];
  for (;;) {
    const double left = deadline - now_s();
    if (left <= 0) return false;
    struct pollfd p = {fd, POLLIN, 0};
    const int r = poll(&p, 1, static_cast<int>(std::ceil(std::min(left, 1.0) * 1000)));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) continue;
    const ssize_t n = read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;
    out->append(buf, static_cast<size_t>(n));
  }
}

// Waits for pid until the deadline; kills its group then. Fills status; false when it had to kill.
bool reap(pid_t pid, double deadline, int* status) {
  for (;;) {
    const pid_t w = waitpid(pid, status, WNOHANG);
    if (w == pid) return true;
    if (w < 0 && errno != EINTR) return true;
    if (now_s() >= deadline) {
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      while (waitpid(pid, status, 0) < 0 && errno == EINTR) {
      }
      return false;
    }
    usleep(2000);
  }
}

std::string tail_of_file(const std::string& path, size_t max_lines, size_t max_chars) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return "";
  std::stringstream ss;
  ss << f.rdbuf();
  std::string s = ss.str();
  if (s.size() > 1 << 20) s = s.substr(s.size() - (1 << 20));
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
  size_t pos = s.size(), lines = 0;
  while (pos > 0 && lines < max_lines) {
    const size_t nl = s.rfind('\n', pos - 1);
    ++lines;
    if (nl == std::string::npos) {
      pos = 0;
      break;
    }
    pos = nl;
  }
  std::string t = pos == 0 ? s : s.substr(pos + 1);
  if (t.size() > max_chars) t = "..." + t.substr(t.size() - max_chars);
  return t;
}

std::string signal_name(int sig) {
  switch (sig) {
    case SIGSEGV:
      return "SIGSEGV (segmentation fault: a pointer outside any buffer)";
    case SIGBUS:
      return "SIGBUS (bus error)";
    case SIGFPE:
      return "SIGFPE (arithmetic error: an integer division by zero?)";
    case SIGABRT:
      return "SIGABRT (abort: a failed assert, or free() of a bad pointer)";
    case SIGILL:
      return "SIGILL (illegal instruction)";
    case SIGKILL:
      return "SIGKILL";
    default: {
      const char* d = strsignal(sig);
      return "signal " + std::to_string(sig) + (d ? std::string(" (") + d + ")" : std::string());
    }
  }
}

// In a forked child: a process group of its own (the parent kills the group at the time limit), killed
// when the parent dies, no stdin (a read would wait for the terminal).
void become_child() {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  const int devnull = open("/dev/null", O_RDONLY);
  if (devnull >= 0) dup2(devnull, 0);
}

// The fd a child of run_in_child reports on (-1 outside one).
int g_report_fd = -1;

void write_all(int fd, const std::string& s) {
  const char* p = s.data();
  size_t left = s.size();
  while (left > 0) {
    const ssize_t w = write(fd, p, left);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;
    p += w;
    left -= static_cast<size_t>(w);
  }
}

bool starts_with(const std::string& s, const std::string& p) { return s.compare(0, p.size(), p) == 0; }

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

}  // namespace

std::string shown_path(const std::string& path) {
  std::error_code ec;
  const fs::path cwd = fs::current_path(ec);
  if (ec) return path;
  const fs::path p = fs::absolute(path, ec).lexically_normal();
  if (ec) return path;
  const fs::path rel = p.lexically_relative(cwd);
  if (rel.empty() || *rel.begin() == "..") return p.string();
  return rel.string();
}

std::string where_flags(const LabEnv& env) {
  std::string s;
  if (env.student_dir != env.lab_dir) s += " --dir " + shown_path(env.student_dir);
  if (!env.work_given.empty()) s += " --work " + shown_path(env.work_given);
  return s;
}

std::string format_double(double v, int precision) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", precision, v);
  return b;
}

std::string short_error(const std::string& e) {
  std::istringstream in(e);
  std::string out, line;
  int waits = 0, more = 0;
  while (std::getline(in, line)) {
    if (out.empty()) {
      out = line;
    } else if (waits < 3) {
      out += "\n  " + line;
      ++waits;
    } else {
      ++more;
    }
  }
  if (more > 0) out += "\n  (" + std::to_string(more) + (more == 1 ? " more line)" : " more lines)");
  return out;
}

std::string compiler_messages(const std::string& output, const std::string& log_path) {
  // Split into groups, each starting at a context line ("file: In instantiation of ...", "In file included
  // from ..."); a group's key is where its warnings and errors are. A group whose key was seen is a repeat.
  std::vector<std::string> groups;
  {
    std::istringstream in(output);
    std::string line;
    while (std::getline(in, line)) {
      const bool starts = !line.empty() && line[0] != ' ' &&
                          (line.find(": In ") != std::string::npos || line.find(": At global scope") != std::string::npos ||
                           starts_with(line, "In file included from"));
      if (starts || groups.empty()) groups.emplace_back();
      groups.back() += line + "\n";
    }
  }
  std::vector<std::string> seen;
  std::string shown;
  int repeats = 0;
  for (const auto& g : groups) {
    std::string key;
    std::istringstream in(g);
    // Each diagnostic by where it is and its kind (file:line:column: error): its text names the
    // instantiation's types, which differ between repeats.
    for (std::string line; std::getline(in, line);)
      for (const char* kind : {": warning: ", ": error: "}) {
        const size_t at = line.find(kind);
        if (at != std::string::npos) key += line.substr(0, at + std::strlen(kind)) + "\n";
      }
    if (!key.empty() && std::find(seen.begin(), seen.end(), key) != seen.end()) {
      ++repeats;
      continue;
    }
    if (!key.empty()) seen.push_back(key);
    shown += g;
  }
  shown = trim(shown);
  if (repeats > 0) {
    std::ofstream log(log_path);
    log << output;
    shown += "\n(the same message " + std::to_string(repeats) + (repeats == 1 ? " more time" : " more times") +
             ", for other instantiations: the whole output is in " + shown_path(log_path) + ")";
  }
  return shown;
}

double check_limit(const LabEnv& env, double own) { return env.timeout_s > 0 ? env.timeout_s : own; }

const std::vector<std::string> kGraderEnvPrefixes{"NCCL_", "CCLAB_"};

double wall_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double clock_us(bool sim) {
  double t = 0;
  if (!sim) return wall_us();
  cclabSimTime(&t);
  return t;
}

RankThreads run_rank_threads(int n, size_t ncases, const std::function<void(size_t)>& mark,
                             const std::function<ncclResult_t(int, size_t, ncclComm_t, cudaStream_t, bool)>& one) {
  RankThreads out;
  cclabBackend_t backend = cclabBackendHost;
  cclabGetBackend(&backend);
  const bool sim = backend == cclabBackendSim;
  out.backend = cclabBackendName(backend);
  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess) {
    out.internal_error = std::string("ncclGetUniqueId: ") + ncclGetLastError(nullptr);
    return out;
  }
  std::vector<std::string> init_errors(n);
  std::atomic<bool> stop{false};
  std::atomic<size_t> cases_run{0};
  ThreadBarrier barrier(n);  // host backend only
  if (ncases > 0) mark(0);
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      ncclComm_t comm = nullptr;
      cudaStream_t stream = nullptr;
      if (ncclCommInitRank(&comm, n, id, r) != ncclSuccess || cclabStreamCreate(&stream) != ncclSuccess) {
        init_errors[r] = ncclGetLastError(comm);
        stop = true;
      }
      for (size_t k = 0; k < ncases; ++k) {
        if (!sim) {
          // Where we are, before any rank can start the case (a crash takes the whole process).
          barrier.wait();
          if (r == 0 && k > 0) mark(k);
          barrier.wait();
        }
        if (stop) break;
        if (r == 0) cases_run = k + 1;
        if (one(r, k, comm, stream, sim) != ncclSuccess) stop = true;
      }
      if (comm) {
        if (stop) {
          ncclCommAbort(comm);
        } else {
          ncclCommDestroy(comm);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < n; ++r)
    if (!init_errors[r].empty()) {
      out.internal_error = "rank " + std::to_string(r) + " could not start: " + init_errors[r];
      return out;
    }
  out.cases_run = cases_run;
  return out;
}

bool mentions_wait(const std::string& e) {
  return e.find("timed out") != std::string::npos || e.find("waiting for") != std::string::npos ||
         e.find("deadlock") != std::string::npos || e.find("stuck") != std::string::npos ||
         e.find("never created") != std::string::npos;
}

bool hung(const ChildOutcome& o) {
  if (o.status == ChildOutcome::kTimedOut) return true;
  if (o.status != ChildOutcome::kOk || !o.result.contains("cases")) return false;
  for (const auto& c : o.result["cases"])
    for (const auto& r : c["ranks"])
      if (mentions_wait(r.value("error", std::string()))) return true;
  return false;
}

double run_time_us(const nlohmann::json& result) {
  if (!result.contains("cases") || result["cases"].empty()) return 0;
  double t0 = 1e300, t1 = 0;
  for (const auto& r : result["cases"][0]["ranks"]) {
    t0 = std::min(t0, r.value("t0", 0.0));
    t1 = std::max(t1, r.value("t1", 0.0));
  }
  return t1 > t0 ? t1 - t0 : 0;
}

int parse_ranks(const std::string& v, int max) {
  char* end = nullptr;
  const long r = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || r < 1 || r > max)
    throw std::invalid_argument("--ranks: '" + v + "' is not a number of ranks from 1 to " + std::to_string(max));
  return static_cast<int>(r);
}

bool judge_child_error(const ChildOutcome& o, const std::string& header, CheckResult* c) {
  const nlohmann::json& j = o.result;
  if (j.contains("load_error")) {
    c->detail = j.value("load_error", std::string());
    c->hint = "keep the function's name and signature as in " + header;
    return true;
  }
  if (j.contains("internal_error")) {
    c->detail = "the grader could not run your code: " + j.value("internal_error", std::string());
    c->hint = "this is not your code's fault: check the cclab build (the log is " + shown_path(o.log_path) + ")";
    return true;
  }
  return false;
}

bool print_run_failure(const ChildOutcome& o, const char* hang_hint) {
  if (o.status != ChildOutcome::kOk) {
    std::printf("it %s\n", describe_outcome(o).c_str());
    if (o.status == ChildOutcome::kTimedOut) std::printf("hint: %s\n", hang_hint);
    return false;
  }
  const nlohmann::json& j = o.result;
  if (j.contains("load_error") || j.contains("internal_error")) {
    std::printf("%s\n", j.contains("load_error") ? j.value("load_error", std::string()).c_str()
                                                 : j.value("internal_error", std::string()).c_str());
    return false;
  }
  return j.contains("cases") && !j["cases"].empty();
}

void print_run_time(double us, bool simulated) {
  if (simulated) {
    std::printf("simulated time: %.3f us (first rank's call to the last rank's return)\n", us);
  } else {
    std::printf("time: %s of wall-clock time (the host backend: CPU threads, not a measure of a GPU)\n",
                us >= 1e6 ? (format_double(us / 1e6, 2) + " s").c_str() : (format_double(us, 1) + " us").c_str());
  }
}

std::map<std::string, std::string> host_child_env(double timeout_s) {
  const double wait_s = std::max(1.0, std::floor(timeout_s / 2));
  return {{"CCLAB_BACKEND", "host"}, {"CCLAB_TIMEOUT", format_double(wait_s, 0)}};
}

// ---- Commands and children --------------------------------------------------------------------------

CommandResult run_command(const std::vector<std::string>& argv, double timeout_s) {
  CommandResult r;
  int fds[2];
  if (argv.empty() || pipe(fds) != 0) return r;
  install_interrupt_handler();
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return r;
  }
  if (pid == 0) {
    become_child();
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    close(fds[1]);
    std::vector<char*> a;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    execvp(a[0], a.data());
    std::fprintf(stderr, "cannot run %s: %s\n", argv[0].c_str(), std::strerror(errno));
    _exit(127);
  }
  setpgid(pid, pid);
  g_child_group = pid;
  close(fds[1]);
  r.started = true;
  const double deadline = now_s() + timeout_s;
  read_until(fds[0], deadline, &r.output);
  close(fds[0]);
  int status = 0;
  r.timed_out = !reap(pid, deadline, &status);
  g_child_group = 0;
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  if (r.exit_code == 127 && r.output.find("cannot run") != std::string::npos) r.started = false;
  return r;
}

std::string self_exe() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("cclab") : p.string();
}

std::string cclab_command_line(const std::vector<std::string>& args) {
  std::string s = "cclab";
  for (const std::string& a : args) s += " " + (a.find(' ') != std::string::npos ? "\"" + a + "\"" : a);
  return s;
}

std::string output_tail(const std::string& out, size_t lines) {
  std::vector<std::string> v;
  std::istringstream in(out);
  for (std::string l; std::getline(in, l);)
    if (!l.empty() && l.find("[ker_engine/CRITICAL]") == std::string::npos) v.push_back(l);  // SimGrid's own
  std::string s;
  for (size_t i = v.size() > lines ? v.size() - lines : 0; i < v.size(); ++i) s += (s.empty() ? "" : "\n") + v[i];
  return s;
}

std::string describe_command(const CommandResult& r, double timeout_s) {
  if (!r.started) return "could not start cclab";
  if (r.timed_out) return "did not finish within " + format_double(timeout_s, 0) + " s";
  if (r.signal != 0) return "crashed with signal " + std::to_string(r.signal);
  return "exited with status " + std::to_string(r.exit_code);
}

bool simulate_one(const sim::SimConfig& cfg, sim::SimSizeResult* out, std::string* error) {
  sim::SimResult res;
  if (!sim::simulate(cfg, &res, error)) return false;
  if (res.sizes.empty()) {
    *error = "no result";
    return false;
  }
  *out = res.sizes[0];
  return true;
}

bool parse_sim_csv(const std::string& out, std::vector<SimRow>* rows) {
  std::istringstream in(out);
  bool header = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("bytes,count,", 0) == 0) {
      header = true;
      continue;
    }
    if (!header || line.empty() || !std::isdigit(static_cast<unsigned char>(line[0]))) continue;
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
    if (f.size() < 13) continue;  // bytes,count,type,op,root,time_us,algbw,busbw,wrong,algo,proto,nchannels,level
    SimRow r;
    r.bytes = std::atof(f[0].c_str());
    r.time_us = std::atof(f[5].c_str());
    r.busbw = std::atof(f[7].c_str());
    r.wrong = std::atoll(f[8].c_str());
    r.algo = f[9];
    r.proto = f[10];
    r.nchannels = std::atoi(f[11].c_str());
    r.level = f[12];
    rows->push_back(r);
  }
  return header && !rows->empty();
}

std::string child_wait_timeout(double kill_s) {
  return format_double(std::max(1.0, std::min(10.0, std::floor(kill_s / 4))), 0);
}

ChildOutcome run_in_child(const std::function<nlohmann::json()>& fn, double timeout_s, const std::string& log_path,
                          const std::map<std::string, std::string>& env,
                          const std::vector<std::string>& env_unset_prefixes) {
  ChildOutcome o;
  o.timeout_s = timeout_s;
  o.log_path = log_path;
  int fds[2];
  if (pipe(fds) != 0) return o;
  install_interrupt_handler();
  std::fflush(stdout);
  std::fflush(stderr);
  const double start = now_s();
  const pid_t pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return o;
  }
  if (pid == 0) {
    become_child();
    close(fds[0]);
    g_report_fd = fds[1];
    if (!log_path.empty()) {
      const int log = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (log >= 0) {
        dup2(log, 1);
        dup2(log, 2);
        close(log);
      }
    }
    // Clear the environment variables the grader decides itself, then set its own.
    std::vector<std::string> drop;
    for (char** e = environ; e && *e; ++e) {
      const std::string kv = *e;
      const std::string key = kv.substr(0, kv.find('='));
      for (const auto& p : env_unset_prefixes)
        if (starts_with(key, p) && key != "CCLAB_SIM_PLUGIN") drop.push_back(key);
    }
    for (const auto& k : drop) unsetenv(k.c_str());
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    nlohmann::json result;
    try {
      result = fn();
    } catch (const std::exception& e) {
      result = {{"internal_error", e.what()}};
    }
    std::fflush(stdout);
    std::fflush(stderr);
    write_all(fds[1], nlohmann::json{{"result", result}}.dump() + "\n");
    close(fds[1]);
    // exit, not _exit: the sim backend writes CCLAB_TRACE in an atexit handler.
    std::exit(0);
  }
  setpgid(pid, pid);
  g_child_group = pid;
  close(fds[1]);
  std::string out;
  const double deadline = start + timeout_s;
  read_until(fds[0], deadline, &out);
  close(fds[0]);
  // Lines of JSON: markers, then the result.
  bool have_result = false;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) continue;
    if (j.contains("marker")) o.last_marker = j["marker"];
    if (j.contains("result")) {
      o.result = j["result"];
      have_result = true;
    }
  }
  // Once the result is in, the child only exits (the sim backend's atexit handler writes the trace, within
  // seconds); whatever happens then does not change the result.
  int status = 0;
  const bool exited = reap(pid, have_result ? std::min(deadline, now_s() + 15) : deadline, &status);
  g_child_group = 0;
  o.seconds = now_s() - start;
  if (!log_path.empty()) o.log_tail = tail_of_file(log_path, 12, 2000);
  if (have_result) {
    o.status = ChildOutcome::kOk;
  } else if (!exited) {
    o.status = ChildOutcome::kTimedOut;
  } else if (WIFSIGNALED(status)) {
    o.status = ChildOutcome::kCrashed;
    o.signal = WTERMSIG(status);
  } else {
    o.status = ChildOutcome::kExited;
    o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  return o;
}

void child_marker(const nlohmann::json& where) {
  if (g_report_fd >= 0) write_all(g_report_fd, nlohmann::json{{"marker", where}}.dump() + "\n");
}

std::string describe_outcome(const ChildOutcome& o) {
  switch (o.status) {
    case ChildOutcome::kOk:
      return "finished";
    case ChildOutcome::kTimedOut:
      return "timed out after " + format_double(o.timeout_s, 0) + " s";
    case ChildOutcome::kCrashed:
      return "crashed with " + signal_name(o.signal);
    case ChildOutcome::kExited:
      return "ended the process (exit status " + std::to_string(o.exit_code) + ") before returning";
    case ChildOutcome::kNoChild:
      return "could not start a child process";
  }
  return "?";
}

void* load_student_symbol(const std::string& so_path, const std::string& symbol, std::string* error) {
  dlerror();
  void* h = dlopen(so_path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    *error = std::string("cannot load the compiled code: ") + dlerror();
    return nullptr;
  }
  void* f = dlsym(h, symbol.c_str());
  if (!f) {
    *error = "the compiled code has no function " + symbol +
             " (did you rename it, or make it static? its declaration is in the lab's header)";
    return nullptr;
  }
  return f;
}

// ---- The student's build ----------------------------------------------------------------------------

CommandResult compile_shared(const LabEnv& env, const std::vector<std::string>& paths, const std::string& so_path) {
  std::vector<std::string> argv;
  // CC may hold a compiler and flags ("ccache gcc"); split it on blanks.
  std::istringstream ccw(env.cc);
  for (std::string w; ccw >> w;) argv.push_back(w);
  if (argv.empty()) argv.push_back("cc");
  argv.insert(argv.end(), paths.begin(), paths.end());
  for (const char* f : {"-std=gnu11", "-O2", "-g", "-Wall", "-shared", "-fPIC"}) argv.push_back(f);
  argv.push_back("-I" + env.student_dir);
  argv.push_back("-I" + env.lab_dir);
  argv.push_back("-I" + env.include_dir);
  argv.push_back("-o");
  argv.push_back(so_path);
  std::error_code ec;
  fs::remove(so_path, ec);
  return run_command(argv, env.timeout_s > 0 ? std::max(env.timeout_s, 60.0) : 60.0);
}

CheckResult compile_student(const LabEnv& env, const std::vector<std::string>& sources, const std::string& so_path) {
  CheckResult c;
  std::string names;
  for (const auto& s : sources) names += (names.empty() ? "" : " ") + s;
  c.name = "compile " + names;
  const double start = now_s();
  std::vector<std::string> paths;
  for (const auto& s : sources) {
    const std::string path = env.student_dir + "/" + s;
    if (!fs::exists(path)) {
      c.detail = shown_path(path) + " does not exist";
      c.hint = "the lab's files are in " + shown_path(env.lab_dir) + "; `git checkout " + shown_path(env.lab_dir) +
               "/" + s + "` brings the skeleton back";
      c.seconds = now_s() - start;
      return c;
    }
    paths.push_back(path);
  }
  const CommandResult r = compile_shared(env, paths, so_path);
  c.seconds = now_s() - start;
  std::string msgs = compiler_messages(r.output, env.work_dir + "/compile.log");
  // The student's paths are long; the compiler repeats them on every line.
  if (!r.started) {
    c.detail = "cannot run the C compiler '" + env.cc + "': " + msgs;
    c.hint = "install a C compiler (apt-get install gcc), or name one with CC=...";
    return c;
  }
  if (r.timed_out) {
    c.detail = "the compiler did not finish within its time limit";
    return c;
  }
  if (r.exit_code != 0 || !fs::exists(so_path)) {
    c.detail = msgs.empty() ? "the compiler failed" : msgs;
    c.hint = "fix the first error the compiler reports (file:line:column), then check again";
    return c;
  }
  c.passed = true;
  if (!msgs.empty()) {
    c.detail = msgs;  // warnings
    c.hint = "";
  }
  return c;
}

// ---- Answers ----------------------------------------------------------------------------------------

Answers read_answers(const std::string& path) {
  Answers a;
  std::ifstream f(path);
  if (!f) return a;
  a.found = true;
  int lineno = 0;
  for (std::string line; std::getline(f, line);) {
    ++lineno;
    const size_t hash = line.find('#');
    if (hash != std::string::npos) line = line.substr(0, hash);
    line = trim(line);
    if (line.empty()) continue;
    const size_t eq = line.find('=');
    if (eq == std::string::npos) {
      a.problems.push_back("line " + std::to_string(lineno) + ": no '=' in '" + line + "'");
      continue;
    }
    const std::string key = trim(line.substr(0, eq)), value = trim(line.substr(eq + 1));
    if (!value.empty()) a.values[key] = value;
  }
  return a;
}

bool answer_number(const Answers& a, const std::string& key, double* value, std::string* why) {
  if (!a.found) {
    *why = "there is no answers file";
    return false;
  }
  const auto it = a.values.find(key);
  if (it == a.values.end()) {
    *why = "no answer for '" + key + "' yet";
    return false;
  }
  const std::string& s = it->second;
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s.c_str(), &end);
  bool ok = end != s.c_str() && errno != ERANGE && std::isfinite(v);
  if (ok && !trim(end).empty()) {
    // A size may carry K, M or G (powers of 1024), read as cclab's -b/-e flags read it.
    try {
      v = static_cast<double>(parse_size(s, key));
    } catch (const std::exception&) {
      ok = false;
    }
  }
  if (!ok) {
    *why = key + " = '" + s + "' is not a number (write it as 1.75 or 1.2e3; a size also as 64K or 16M)";
    return false;
  }
  *value = v;
  return true;
}

namespace {
// An answer the grader has no value of its own to compare with. A check the answer waits for ("needs ...":
// the student's code must pass it first) skips it; any other reason is the build's fault, not the answer's.
void no_grader_value(const std::string& what, const std::string& fail_why, CheckResult* c) {
  if (starts_with(fail_why, "needs ")) {
    c->skipped = true;
    c->detail = "skipped: " + fail_why;
  } else {
    c->detail = what + ": " + fail_why;
    c->hint = "this is not your answer's fault: check the cclab build";
  }
}
}  // namespace

CheckResult check_answer(const Answers& a, const std::string& answers_path, const std::string& key,
                         const std::string& what, bool have_want, double want, double tolerance,
                         const std::string& fail_why, const std::string& hint) {
  CheckResult c;
  c.name = "answer " + key;
  double v = 0;
  std::string why;
  if (!answer_number(a, key, &v, &why)) {
    c.detail = what + ": " + why + (a.found ? "" : " (" + shown_path(answers_path) + ")");
    for (const auto& p : a.problems) c.detail += "\n" + shown_path(answers_path) + ": " + p;
    c.hint = "write the line `" + key + " = YOUR ANSWER` in " + shown_path(answers_path) +
             " (the lab's README.md, \"Questions\")";
  } else if (!have_want) {
    no_grader_value(what, fail_why, &c);
  } else if (std::fabs(v - want) <= tolerance * std::fabs(want) + 1e-9) {
    c.passed = true;
    c.detail = what + ": " + a.values.at(key) + " is right" +
               (tolerance > 0 ? " (within " + format_double(tolerance * 100, 0) + "%)" : "");
  } else {
    c.detail = what + ": " + a.values.at(key) +
               (tolerance > 0 ? " is not within " + format_double(tolerance * 100, 0) + "% of the grader's value"
                              : " is not right");
    c.hint = hint;
  }
  return c;
}

CheckResult check_size_answer(const Answers& a, const std::string& answers_path, const std::string& key,
                              const std::string& what, bool have_want, size_t want, const std::string& fail_why,
                              const std::string& hint) {
  CheckResult c;
  c.name = "answer " + key;
  const auto it = a.values.find(key);
  if (!a.found || it == a.values.end()) {
    c.detail = what + ": " +
               (a.found ? "no answer for '" + key + "' yet" : "there is no answers file (" + shown_path(answers_path) + ")");
    for (const auto& p : a.problems) c.detail += "\n" + shown_path(answers_path) + ": " + p;
    c.hint = "write the line `" + key + " = YOUR ANSWER` in " + shown_path(answers_path) +
             " (the lab's README.md, \"Questions\")";
    return c;
  }
  size_t v = 0;
  try {
    v = parse_size(it->second, key);
  } catch (const std::exception&) {
    c.detail = what + ": " + key + " = '" + it->second + "' is not a size (write 65536, 64K or 16M: powers of 1024)";
    c.hint = "a number of bytes, optionally with K, M or G";
    return c;
  }
  if (!have_want) {
    no_grader_value(what, fail_why, &c);
  } else if (v == want) {
    c.passed = true;
    c.detail = what + ": " + it->second + " is right";
  } else {
    c.detail = what + ": " + it->second + " is not the size the grader found";
    c.hint = hint;
  }
  return c;
}

// ---- The command ------------------------------------------------------------------------------------

std::string lab_usage() {
  return "usage: cclab lab list [--json]\n"
         "       cclab lab check NN [--json] [--timeout S]\n"
         "       cclab lab run NN [lab flags: see cclab lab run NN --help]\n"
         "       cclab lab viz NN [--screenshot OUT.png] [cclab viz flags]\n"
         "\n"
         "The labs of labs/README.md. `check` builds your files, runs the lab's checks on the host backend\n"
         "and in the simulator, prints a table with a hint for each failure, and exits 0 when all pass.\n"
         "`run` builds and runs your code once, on the backend of your environment (CCLAB_BACKEND=sim ...).\n"
         "`viz` opens the simulator trace of the last check in cclab viz.\n"
         "\n"
         "Options (every subcommand):\n"
         "  --dir DIR       your files (default: the lab's folder, labs/NN-name)\n"
         "  --labs DIR      the labs folder (default: CCLAB_LABS_DIR, or the source tree's labs/)\n"
         "  --work DIR      builds, logs, traces, status (default: CCLAB_LABS_WORK, or BUILD/labs)\n"
         "  --timeout S     limit of every check, in seconds (default: each check's own)\n"
         "  --json          check: the results as JSON on stdout (for instructors); list: every lab's status,\n"
         "                  with when it was started and first passed (seconds since the epoch)\n";
}

namespace {

struct Common {
  std::string dir, labs, work;
  double timeout_s = 0;
  bool json = false;
  bool help = false;
  std::vector<std::string> rest;  // positional and unknown arguments, in order
  std::string error;
};

Common parse_common(const std::vector<std::string>& args, bool pass_unknown) {
  Common c;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](std::string* out) {
      if (i + 1 >= args.size()) {
        c.error = a + " needs a value";
        return;
      }
      *out = args[++i];
    };
    if (a == "--dir") {
      value(&c.dir);
    } else if (a == "--labs") {
      value(&c.labs);
    } else if (a == "--work") {
      value(&c.work);
    } else if (a == "--timeout") {
      std::string v;
      value(&v);
      char* end = nullptr;
      const double t = std::strtod(v.c_str(), &end);
      if (c.error.empty() && (v.empty() || *end != '\0' || !(t > 0) || t > 86400))
        c.error = "--timeout: '" + v + "' is not a number of seconds between 0 and 86400";
      c.timeout_s = t;
    } else if (a == "--json") {
      c.json = true;
    } else if (a == "--help" || a == "-h") {
      c.help = true;
      if (pass_unknown) c.rest.push_back(a);
    } else if (!pass_unknown && starts_with(a, "-")) {
      c.error = "unknown flag " + a;
    } else {
      c.rest.push_back(a);
    }
    if (!c.error.empty()) break;
  }
  return c;
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

std::string default_labs_dir() { return env_or("CCLAB_LABS_DIR", std::string(CCLAB_SOURCE_DIR) + "/labs"); }

std::string default_work_root() {
  std::string d = env_or("CCLAB_LABS_WORK", "");
  if (!d.empty()) return d;
  if (std::strlen(CCLAB_BINARY_DIR) > 0 && fs::is_directory(CCLAB_BINARY_DIR))
    return std::string(CCLAB_BINARY_DIR) + "/labs";
  return env_or("XDG_CACHE_HOME", env_or("HOME", "/tmp") + "/.cache") + "/cclab/labs";
}

std::string default_include_dir() {
  const std::string src = std::string(CCLAB_SOURCE_DIR) + "/runtime/include";
  if (fs::exists(src + "/nccl.h")) return src;
  // An installed cclab: PREFIX/bin/cclab and PREFIX/include.
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path inc = exe.parent_path().parent_path() / "include";
    if (fs::exists(inc / "nccl.h")) return inc.string();
  }
  return src;
}

const Lab* find_lab(const std::string& id) {
  std::string want = id;
  if (want.size() == 1 && std::isdigit(static_cast<unsigned char>(want[0]))) want = "0" + want;
  for (const auto& l : all_labs())
    if (l.number == want || l.folder == id) return &l;
  return nullptr;
}

// The environment of a lab from the common flags.
LabEnv make_env(const Lab& lab, const Common& c) {
  LabEnv e;
  e.labs_dir = c.labs.empty() ? default_labs_dir() : c.labs;
  e.lab_dir = e.labs_dir + "/" + lab.folder;
  e.student_dir = c.dir.empty() ? e.lab_dir : c.dir;
  const std::string work_root = c.work.empty() ? default_work_root() : c.work;
  e.work_dir = work_root + "/" + lab.folder;
  e.include_dir = default_include_dir();
  e.cc = env_or("CC", CCLAB_LAB_CC);
  e.timeout_s = c.timeout_s;
  e.progress = !c.json;
  e.work_given = c.work;
  return e;
}

std::string status_path(const LabEnv& e) { return e.work_dir + "/status.json"; }

std::string now_iso() {
  char b[64];
  const time_t t = time(nullptr);
  struct tm tm {};
  localtime_r(&t, &tm);
  strftime(b, sizeof b, "%Y-%m-%d %H:%M", &tm);
  return b;
}

constexpr int kNameWidth = 52;
constexpr size_t kTextWidth = 110;  // detail and hint lines wrap here

// Detail and hint lines, indented under a row, long lines wrapped at blanks.
void print_indented(const std::string& label, const std::string& text) {
  if (text.empty()) return;
  const std::string indent = "      ";
  const std::string pad(label.size(), ' ');
  std::istringstream in(text);
  bool first = true;
  for (std::string line; std::getline(in, line);) {
    // Keep a wrapped line's own leading blanks on its continuations.
    size_t lead = 0;
    while (lead < line.size() && line[lead] == ' ') ++lead;
    const size_t width = kTextWidth - indent.size() - label.size();
    std::string rest = line;
    bool cont = false;
    while (!rest.empty()) {
      std::string piece = rest;
      if (rest.size() > width) {
        size_t cut = rest.rfind(' ', width);
        if (cut == std::string::npos || cut <= lead) cut = width;
        piece = rest.substr(0, cut);
        rest = rest.substr(cut);
        while (!rest.empty() && rest[0] == ' ') rest.erase(0, 1);
        if (!rest.empty()) rest = std::string(lead > 0 ? lead + 2 : 0, ' ') + rest;
      } else {
        rest.clear();
      }
      std::printf("%s%s%s\n", indent.c_str(), first && !cont ? label.c_str() : pad.c_str(), piece.c_str());
      cont = true;
    }
    first = false;
  }
}

void print_row(int index, const CheckResult& r, std::string* last_hint) {
  const char* status = r.passed ? "pass" : r.skipped ? "skip" : "FAIL";
  std::printf("  %2d  %-*s %-4s %5.1f s\n", index, kNameWidth, r.name.c_str(), status, r.seconds);
  print_indented("", r.detail);
  if (!r.passed && !r.hint.empty()) {
    print_indented("hint: ", r.hint == *last_hint ? "the same as above" : r.hint);
    *last_hint = r.hint;
  }
  std::fflush(stdout);
}

nlohmann::json to_json(const CheckResult& r) {
  return {{"name", r.name},      {"status", r.passed ? "pass" : r.skipped ? "skip" : "fail"},
          {"passed", r.passed},  {"skipped", r.skipped},
          {"detail", r.detail},  {"hint", r.passed ? std::string() : r.hint},
          {"seconds", r.seconds}};
}

int cmd_list(const Common& c) {
  if (!c.rest.empty()) {
    std::fprintf(stderr, "cclab lab list: unexpected argument '%s'\n", c.rest[0].c_str());
    return kLabExitUsage;
  }
  const long long course_start = course_started(c.work.empty() ? default_work_root() : c.work);
  if (!c.json) std::printf("%-4s %-36s %s\n", "lab", "title", "status (from the last `cclab lab check NN`)");
  nlohmann::json labs = nlohmann::json::array();
  bool first_lab = true;
  for (const auto& lab : all_labs()) {
    std::string status;
    nlohmann::json s = nlohmann::json::object();
    if (!lab.written) {
      status = "not written yet";
    } else {
      const LabEnv e = make_env(lab, c);
      s = read_status(status_path(e));
      if (!s.contains("passed")) {
        status = s.contains("started") ? "started (run, not checked yet)" : "not started";
      } else {
        const int passed = s.value("checks_passed", 0), total = s.value("checks", 0);
        status = std::string(s.value("passed", false) ? "passing" : "failing") + " (" + std::to_string(passed) +
                 " of " + std::to_string(total) + " checks, " + s.value("when", std::string("?")) + ")";
        const std::string dir = s.value("dir", std::string());
        if (!dir.empty() && dir != fs::absolute(e.lab_dir).lexically_normal().string())
          status += " [" + shown_path(dir) + "]";
      }
    }
    // How long it took to pass: lab 1 from scripts/lab.sh's first run (the build included), every lab
    // from its first run or check, to the first check that passed.
    const TimeToPass t = time_to_pass(s, course_start, first_lab);
    if (t.known)
      status += "; first passed " + duration_text(t.seconds) + " after " +
                (t.from_course_start ? std::string("scripts/lab.sh first ran")
                                     : "its first `cclab lab run/check " + lab.number + "`");
    if (lab.written) first_lab = false;
    if (c.json) {
      nlohmann::json j = s;
      j["lab"] = lab.number;
      j["title"] = lab.title;
      j["written"] = lab.written;
      j["status"] = status;
      if (t.known) {
        j["seconds_to_pass"] = t.seconds;
        j["timed_from"] = t.from_course_start ? "scripts/lab.sh" : "first run or check";
      }
      labs.push_back(j);
    } else {
      std::printf("%-4s %-36s %s\n", lab.number.c_str(), lab.title.c_str(), status.c_str());
    }
  }
  if (c.json) {
    nlohmann::json out = {{"labs", labs}};
    if (course_start > 0) out["course_started"] = course_start;
    std::printf("%s\n", out.dump(2).c_str());
  }
  return kLabExitOk;
}

const Lab* lab_arg(const Common& c, const char* sub, int* exit_code) {
  if (c.rest.empty()) {
    std::fprintf(stderr, "cclab lab %s: which lab? (e.g. cclab lab %s 01; cclab lab list shows them)\n", sub, sub);
    *exit_code = kLabExitUsage;
    return nullptr;
  }
  const Lab* lab = find_lab(c.rest[0]);
  if (!lab) {
    std::fprintf(stderr, "cclab lab %s: no lab '%s' (cclab lab list shows them)\n", sub, c.rest[0].c_str());
    *exit_code = kLabExitUsage;
    return nullptr;
  }
  if (!lab->written) {
    std::fprintf(stderr, "cclab lab %s: lab %s (%s) is not written yet\n", sub, lab->number.c_str(),
                 lab->title.c_str());
    *exit_code = kLabExitUsage;
    return nullptr;
  }
  return lab;
}

bool make_work_dir(const LabEnv& e, const char* sub) {
  std::error_code ec;
  fs::create_directories(e.work_dir, ec);
  if (ec || !fs::is_directory(e.work_dir)) {
    std::fprintf(stderr, "cclab lab %s: cannot create the work folder %s: %s (set --work DIR)\n", sub,
                 e.work_dir.c_str(), ec.message().c_str());
    return false;
  }
  return true;
}

int cmd_check(const Common& c) {
  int code = 0;
  const Lab* lab = lab_arg(c, "check", &code);
  if (!lab) return code;
  if (c.rest.size() > 1) {
    std::fprintf(stderr, "cclab lab check: unexpected argument '%s'\n", c.rest[1].c_str());
    return kLabExitUsage;
  }
  const LabEnv e = make_env(*lab, c);
  if (!make_work_dir(e, "check")) return kLabExitUsage;
  // The last check's trace goes first: a check that fails before the simulator runs leaves none, so
  // `cclab lab viz` never shows an older run as this one.
  if (!lab->trace_file.empty()) {
    std::error_code rm;
    fs::remove(e.work_dir + "/" + lab->trace_file, rm);
  }
  const double start = now_s();
  if (e.progress) {
    std::printf("cclab lab check %s: %s\n", lab->number.c_str(), lab->title.c_str());
    std::printf("  your files: %s (", shown_path(e.student_dir).c_str());
    for (size_t i = 0; i < lab->student_files.size(); ++i)
      std::printf("%s%s", i ? ", " : "", lab->student_files[i].c_str());
    std::printf(")\n  builds and logs: %s\n\n", shown_path(e.work_dir).c_str());
    std::printf("   #  %-*s %-4s %7s\n", kNameWidth, "check", "", "time");
    std::fflush(stdout);
  }
  int index = 0;
  std::string last_hint;
  const std::vector<CheckResult> results = lab->check(e, [&](const CheckResult& r) {
    ++index;
    if (e.progress) print_row(index, r, &last_hint);
  });
  int passed = 0;
  for (const auto& r : results) passed += r.passed ? 1 : 0;
  const bool all = passed == static_cast<int>(results.size()) && !results.empty();
  const double seconds = now_s() - start;
  // `cclab lab list` reports the student's own checks: an instructor's --json check of another folder
  // without its own --work leaves the student's status alone.
  const bool own_status = !c.json || !c.work.empty() || c.dir.empty();
  // The status keeps what earlier runs and checks noted (when the lab was started, first passed).
  nlohmann::json status = own_status ? read_status(status_path(e)) : nlohmann::json::object();
  status["lab"] = lab->number;
  status["passed"] = all;
  status["checks"] = results.size();
  status["checks_passed"] = passed;
  status["when"] = now_iso();
  status["dir"] = fs::absolute(e.student_dir).lexically_normal().string();
  note_check(&status, all, static_cast<long long>(time(nullptr)));
  if (own_status) write_status(status_path(e), status);
  const std::string trace = e.work_dir + "/" + lab->trace_file;
  const bool have_trace = !lab->trace_file.empty() && fs::exists(trace);
  if (c.json) {
    nlohmann::json j = status;
    j["title"] = lab->title;
    j["seconds"] = seconds;
    j["work_dir"] = e.work_dir;
    j["trace"] = have_trace ? trace : std::string();
    j["results"] = nlohmann::json::array();
    for (const auto& r : results) j["results"].push_back(to_json(r));
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    std::printf("\n%d of %zu checks pass (%.1f s).", passed, results.size(), seconds);
    if (all) std::printf(" Lab %s is done.", lab->number.c_str());
    std::printf("\n");
    if (have_trace)
      std::printf("%s: cclab lab viz %s%s\n",
                  all ? "Watch the simulated run" : "Watch what your code did in the simulator (checks still fail)",
                  lab->number.c_str(), c.work.empty() ? "" : (" --work " + shown_path(c.work)).c_str());
  }
  return all ? kLabExitOk : kLabExitFailed;
}

int cmd_run(const Common& c) {
  int code = 0;
  const Lab* lab = lab_arg(c, "run", &code);
  if (!lab) return code;
  const LabEnv e = make_env(*lab, c);
  if (!make_work_dir(e, "run")) return kLabExitUsage;
  // The lab's clock starts at its first run or check (`cclab lab list`: how long it took to pass).
  nlohmann::json status = read_status(status_path(e));
  if (note_started(&status, static_cast<long long>(time(nullptr)))) write_status(status_path(e), status);
  return lab->run(e, std::vector<std::string>(c.rest.begin() + 1, c.rest.end()));
}

int cmd_viz(const Common& c, const std::function<int(const std::vector<std::string>&)>& viz_main) {
  int code = 0;
  const Lab* lab = lab_arg(c, "viz", &code);
  if (!lab) return code;
  const LabEnv e = make_env(*lab, c);
  if (lab->trace_file.empty()) {
    std::fprintf(stderr,
                 "cclab lab viz: lab %s (%s) has no run of yours to watch: its checks do not run your code in the "
                 "simulator. Its README's pictures come from `cclab sim ... --trace` or `--csv` runs, which `cclab "
                 "viz` opens (labs/%s/README.md)\n",
                 lab->number.c_str(), lab->title.c_str(), lab->folder.c_str());
    return kLabExitUsage;
  }
  const std::string trace = e.work_dir + "/" + lab->trace_file;
  if (!fs::exists(trace)) {
    std::fprintf(stderr,
                 "cclab lab viz: no trace at %s yet: `cclab lab check %s` writes it when your code runs in the "
                 "simulator\n",
                 trace.c_str(), lab->number.c_str());
    return kLabExitFailed;
  }
  if (!viz_main) {
    std::fprintf(stderr,
                 "cclab lab viz: this build has no visualiser (install libimgui-dev libglfw3-dev libstb-dev and "
                 "reconfigure); the trace is %s (cclab trace info %s summarises it)\n",
                 trace.c_str(), trace.c_str());
    return kLabExitUsage;
  }
  std::vector<std::string> args{trace};
  args.insert(args.end(), c.rest.begin() + 1, c.rest.end());
  return viz_main(args);
}

}  // namespace

int lab_main(const std::vector<std::string>& args,
             const std::function<int(const std::vector<std::string>&)>& viz_main) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    std::fputs(lab_usage().c_str(), args.empty() ? stderr : stdout);
    return args.empty() ? kLabExitUsage : kLabExitOk;
  }
  const std::string sub = args[0];
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  // run and viz pass the flags they do not know on (to the lab's driver, to cclab viz).
  const Common c = parse_common(rest, sub == "run" || sub == "viz");
  if (!c.error.empty()) {
    std::fprintf(stderr, "cclab lab %s: %s\n", sub.c_str(), c.error.c_str());
    return kLabExitUsage;
  }
  // run and viz take --help after the lab number (the lab's own flags, cclab viz's); before it, or
  // without one, it asks for this usage.
  if (c.help && ((sub != "run" && sub != "viz") || c.rest.empty() || starts_with(c.rest[0], "-"))) {
    std::fputs(lab_usage().c_str(), stdout);
    return kLabExitOk;
  }
  if (sub == "list") return cmd_list(c);
  if (sub == "check") return cmd_check(c);
  if (sub == "run") return cmd_run(c);
  if (sub == "viz") return cmd_viz(c, viz_main);
  std::fprintf(stderr, "cclab lab: unknown subcommand '%s' (list, check, run, viz)\n", sub.c_str());
  return kLabExitUsage;
}

}  // namespace cclab::lab
