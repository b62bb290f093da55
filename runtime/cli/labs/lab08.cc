// runtime/cli/labs/lab08.cc - lab 8, "Your own algorithm" (labs/08-your-own-algorithm/README.md): the checks
// of `cclab lab check 08` and the driver of `cclab lab run 08`.
//
// The student writes an all_reduce schedule in my_allreduce.cc against kernels/custom.h (the custom
// algorithm extension point, docs/custom-algorithms.md). The grader compiles it into a plugin and runs
// it through cclab itself - `cclab perf` on the host backend (every datatype and op, byte-checked) and
// `cclab sim` (--payload: byte-checked; timing runs against Ring on the same simulated machine) - each a
// subprocess with a time limit, with CCLAB_ALGO_PLUGIN and NCCL_ALGO=MyAllReduce. Targets are relative to
// cclab's own Ring (Simple protocol, as custom algorithms run) on the same model, and the answers are
// recomputed from those runs; nothing is stored here.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <vector>

#include "lab_cmd.h"

namespace cclab::lab {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSource = "my_allreduce.cc";
constexpr const char* kAnswers = "answers.txt";
constexpr const char* kAlgo = "MyAllReduce";
constexpr const char* kPlugin = "my_allreduce.so";
constexpr const char* kTrace = "my_allreduce.cctrace";
constexpr const char* kMultiNode = "dgx-h100:4";  // 32 GPUs on 4 machines
constexpr const char* kOneNode = "dgx-h100";      // 8 GPUs
constexpr const char* kLatencySize = "64K";       // the latency target's size
constexpr double kLatencyTarget = 0.25;           // at most this times Ring/Simple's time at kLatencySize
constexpr const char* kBandwidthSize = "64M";     // the bandwidth target's size
constexpr double kBandwidthTarget = 0.75;         // at least this times Ring/Simple's busbw at kBandwidthSize
constexpr double kTolerance = 0.05;
constexpr const char* kSweep[] = {"-b", "4K", "-e", "256M", "-f", "4"};

// Where kernels/custom.h is: the source tree (runtime/include/../..) or an installed include/cclab.
std::string kernels_include(const LabEnv& env) {
  const fs::path src = fs::path(env.include_dir).parent_path().parent_path();
  if (fs::exists(src / "kernels" / "custom.h")) return src.string();
  return (fs::path(env.include_dir) / "cclab").string();
}

std::string plugin_path(const LabEnv& env) { return env.work_dir + "/" + kPlugin; }

// c++ -std=c++17 -O2 -Wall -shared -fPIC -I<kernels> my_allreduce.cc -o work/my_allreduce.so
CheckResult compile_plugin(const LabEnv& env) {
  CheckResult c;
  c.name = std::string("compile ") + kSource;
  const std::string src = env.student_dir + "/" + kSource;
  if (!fs::exists(src)) {
    c.detail = shown_path(src) + " does not exist";
    c.hint = "copy it back from the lab folder (git checkout labs/08-your-own-algorithm/" + std::string(kSource) + ")";
    return c;
  }
  const char* cxx = std::getenv("CXX");
  const std::vector<std::string> argv{"env", "LC_ALL=C", cxx && *cxx ? cxx : "c++", "-std=c++17", "-O2", "-Wall", "-shared", "-fPIC",
                                      "-I" + kernels_include(env), src, "-o", plugin_path(env)};
  const CommandResult r = run_command(argv, 120);
  std::string shown;
  for (size_t i = 2; i < argv.size(); ++i) shown += (shown.empty() ? "" : " ") + argv[i];
  if (!r.started || r.exit_code == 127) {
    c.detail = "could not run " + argv[2];
    c.hint = "install a C++ compiler (apt-get install g++) or set CXX";
  } else if (r.timed_out || r.exit_code != 0) {
    c.detail = (r.timed_out ? "the compiler timed out" : "the compiler failed") + std::string(":\n") +
               compiler_messages(r.output, env.work_dir + "/compile.log");
    c.hint = "fix the first error the compiler reports; the interface is kernels/custom.h (docs/custom-algorithms.md)";
  } else {
    c.passed = true;
    const std::string msgs = compiler_messages(r.output, env.work_dir + "/compile.log");
    c.detail = msgs.empty() ? shown : shown + "\n" + msgs;
  }
  return c;
}

// `cclab ARGS...` in a clean environment with the plugin loaded and NCCL_ALGO=MyAllReduce.
CommandResult run_cclab(const LabEnv& env, const std::vector<std::string>& args, double timeout_s,
                        const std::vector<std::string>& vars = {}) {
  std::vector<std::string> argv{"env", "-i"};
  if (const char* path = std::getenv("PATH")) argv.push_back(std::string("PATH=") + path);
  argv.push_back("CCLAB_ALGO_PLUGIN=" + plugin_path(env));
  argv.push_back(std::string("NCCL_ALGO=") + kAlgo);
  argv.push_back("CCLAB_TIMEOUT=" + std::to_string(static_cast<int>(std::max(5.0, timeout_s / 2))));
  for (const std::string& v : vars) argv.push_back(v);
  argv.push_back(self_exe());
  for (const std::string& a : args) argv.push_back(a);
  return run_command(argv, timeout_s);
}

// The hint for a run that failed in a way the student's code explains ("" when none of these).
std::string failure_hint(const CommandResult& r) {
  const std::string& o = r.output;
  if (o.find("custom algorithms:") != std::string::npos)
    return "keep kName = \"MyAllReduce\": the grader selects your algorithm with NCCL_ALGO=MyAllReduce";
  if (o.find("did not declare") != std::string::npos || o.find("declares rank") != std::string::npos)
    return "peers() must list every rank run() talks to, on both ends (TODO 2)";
  if (r.timed_out || o.find("waiting for") != std::string::npos || o.find("deadlocked") != std::string::npos)
    return "ranks wait for each other: do both ends make matching calls in the same order? Two ranks that both "
           "send first to each other must use sendrecv / sendrecv_reduce (docs/custom-algorithms.md, \"The primitives\")";
  return "";
}

// A run's end; a time-out here is most likely ranks waiting for each other.
std::string describe_run(const CommandResult& r, double timeout_s) {
  return describe_command(r, timeout_s) + (r.timed_out ? " (a hang? see the stuck waits)" : "");
}

// ---- cclab sim --csv -----------------------------------------------------------------------------------

// A simulation's rows, or false with *error (what ran, how it ended, its last lines).
bool sim_rows(const LabEnv& env, std::vector<std::string> args, double timeout_s, std::vector<SimRow>* rows,
              std::string* error, std::string* hint = nullptr) {
  args.insert(args.begin(), {"sim", "all_reduce"});
  args.insert(args.end(), {"--csv", "-"});
  const CommandResult r = run_cclab(env, args, timeout_s);
  if (!r.started || r.timed_out || r.exit_code != 0 || !parse_sim_csv(r.output, rows)) {
    args.resize(args.size() - 2);
    *error = cclab_command_line(args) + ": " + describe_run(r, timeout_s) + "\n" + output_tail(r.output, 6);
    if (hint) *hint = failure_hint(r);
    return false;
  }
  return true;
}

// The sweep of kSweep on `topo` with `algo` (and proto Simple for Ring).
bool sweep(const LabEnv& env, const std::string& topo, const std::string& algo, double timeout_s,
           std::vector<SimRow>* rows, std::string* error, std::string* hint) {
  std::vector<std::string> args{"--topo", topo};
  args.insert(args.end(), std::begin(kSweep), std::end(kSweep));
  args.insert(args.end(), {"--algo", algo, "--proto", "simple"});
  return sim_rows(env, args, timeout_s, rows, error, hint);
}

double size_bytes(const std::string& s) {
  double v = std::atof(s.c_str());
  switch (s.empty() ? ' ' : s.back()) {
    case 'K': return v * 1024;
    case 'M': return v * 1024 * 1024;
    case 'G': return v * 1024 * 1024 * 1024;
    default: return v;
  }
}

const SimRow* at_size(const std::vector<SimRow>& rows, double bytes) {
  for (const SimRow& r : rows)
    if (r.bytes == bytes) return &r;
  return nullptr;
}

// The largest size of the sweep at which `mine` is at least as fast as `ring` (0: none).
double crossover(const std::vector<SimRow>& mine, const std::vector<SimRow>& ring) {
  double best = 0;
  for (const SimRow& m : mine)
    if (const SimRow* r = at_size(ring, m.bytes))
      if (m.time_us <= r->time_us) best = std::max(best, m.bytes);
  return best;
}

std::string us(double v) { return format_double(v, 1) + " us"; }

// ---- The checks ------------------------------------------------------------------------------------------

std::vector<CheckResult> check_lab08(const LabEnv& env, const std::function<void(const CheckResult&)>& done) {
  std::vector<CheckResult> out;
  // Each row's time: since the previous row (the sweeps run before the rows that use them).
  auto now = [] { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); };
  double last = now();
  auto add = [&](CheckResult c) {
    const double t = now();
    c.seconds = t - last;
    last = t;
    out.push_back(c);
    done(out.back());
  };
  const CheckResult built = compile_plugin(env);
  add(built);
  auto skipped = [&](const std::string& name, const std::string& why) {
    CheckResult c;
    c.name = name;
    c.skipped = true;
    c.detail = "skipped: " + why;
    add(c);
  };

  // 1. The host backend: every datatype and op on power-of-two and other rank counts, byte for byte.
  bool host_ok = built.passed;
  struct HostCase {
    int ranks;
    const char *min_bytes, *max_bytes, *factor;
    bool all_types;
  };
  // 4 ranks up to 64 MiB: more than a FIFO (4 MiB) each way per channel, where two ranks that both send
  // first to each other wait for each other.
  const HostCase host_cases[] = {{2, "4", "256K", "8", true},  {3, "4", "256K", "8", true},
                                 {4, "64K", "64M", "32", false}, {5, "4", "256K", "8", true},
                                 {7, "4", "1M", "8", false},     {8, "4", "4M", "8", false}};
  for (const HostCase& h : host_cases) {
    const std::string name = "host backend, " + std::to_string(h.ranks) + " ranks, " +
                             (h.all_types ? "every type and op" : "float sum");
    if (!built.passed) {
      skipped(name, "needs " + std::string(kSource) + " to compile");
      continue;
    }
    if (!host_ok) {  // one failure at a time: each may wait out its time limit
      skipped(name, "fix the host backend's failure above first");
      continue;
    }
    std::vector<std::string> args{"perf", "all_reduce", "-t", std::to_string(h.ranks), "-b", h.min_bytes,
                                  "-e", h.max_bytes, "-f", h.factor, "-n", "1", "-w", "0"};
    if (h.all_types) args.insert(args.end(), {"-d", "all", "-o", "all"});
    const double limit = check_limit(env, 60);
    CheckResult c;
    c.name = name;
    const CommandResult r = run_cclab(env, args, limit);
    const bool exact = r.output.find("Out of bounds values : 0 OK") != std::string::npos;
    if (r.started && !r.timed_out && r.exit_code == 0 && exact) {
      c.passed = true;
      c.detail = "every element right (" + cclab_command_line(args) + ")";
    } else {
      host_ok = false;
      c.detail = cclab_command_line(args) + ": " + describe_run(r, limit) + "\n" + output_tail(r.output, 6);
      c.hint = failure_hint(r);
      if (c.hint.empty())
        c.hint = "run it alone and look at the wrong elements: CCLAB_ALGO_PLUGIN=" + shown_path(plugin_path(env)) +
                 " NCCL_ALGO=MyAllReduce " + cclab_command_line(args) + (h.ranks & (h.ranks - 1) ? " (not a power of two: TODO 4)" : "");
    }
    add(c);
  }

  // 2. The simulator, byte for byte (--payload), one and two DGX H100s.
  bool sim_ok = host_ok;
  const std::pair<const char*, const char*> sim_cases[] = {{kOneNode, "float"}, {"dgx-h100:2", "int32"}};
  for (const auto& sc : sim_cases) {
    const std::string name = std::string("simulator, ") + sc.first + ", " + sc.second + ", exact";
    if (!host_ok) {
      skipped(name, "needs the host backend's checks to pass first");
      sim_ok = false;
      continue;
    }
    CheckResult c;
    c.name = name;
    std::vector<SimRow> rows;
    std::string error;
    const std::vector<std::string> args{"--topo", sc.first, "-b", "4", "-e", "4M", "-f", "16", "--algo", kAlgo,
                                        "--payload", "-d", sc.second};
    std::string hint;
    if (!sim_rows(env, args, check_limit(env, 120), &rows, &error, &hint)) {
      c.detail = error;
      c.hint = !hint.empty() ? hint : "run it alone: CCLAB_ALGO_PLUGIN=" + shown_path(plugin_path(env)) + " cclab sim all_reduce --topo " +
               sc.first + " --algo MyAllReduce --payload";
      sim_ok = false;
    } else {
      long long wrong = 0;
      bool mine = true;
      for (const SimRow& r : rows) {
        wrong += std::max(0LL, r.wrong);
        mine = mine && r.algo == kAlgo;
      }
      if (wrong == 0 && mine) {
        c.passed = true;
        c.detail = std::to_string(rows.size()) + " sizes from 4 B to 4 MiB, every element right";
      } else {
        c.detail = !mine ? "the simulator did not run MyAllReduce for every size" : std::to_string(wrong) + " wrong elements";
        c.hint = "the simulator runs the same schedule: look at the host backend's result for the same rank count";
        sim_ok = false;
      }
    }
    add(c);
  }

  // 3. Timing in the simulator: the sweeps (yours and Ring/Simple) on one and on four machines.
  std::vector<SimRow> mine1, ring1, mine4, ring4;
  std::string err1, err4, hint1, hint4;
  bool have1 = false, have4 = false;
  if (sim_ok) {
    have4 = sweep(env, kMultiNode, kAlgo, check_limit(env, 180), &mine4, &err4, &hint4) &&
            sweep(env, kMultiNode, "ring", check_limit(env, 180), &ring4, &err4, &hint4);
    have1 = sweep(env, kOneNode, kAlgo, check_limit(env, 180), &mine1, &err1, &hint1) &&
            sweep(env, kOneNode, "ring", check_limit(env, 180), &ring1, &err1, &hint1);
    // The run `cclab lab viz 08` opens: 1 MiB on two machines.
    run_cclab(env, {"sim", "all_reduce", "--topo", "dgx-h100:2", "-b", "1M", "-e", "1M", "--algo", kAlgo, "--trace",
                    env.work_dir + "/" + kTrace},
              check_limit(env, 120));
  }
  const std::string compare_cmd = "cclab lab run 08 --sim " + std::string(kMultiNode);
  {
    const std::string name = std::string("latency: ") + kMultiNode + ", " + kLatencySize + ", at most " +
                             format_double(kLatencyTarget, 2) + "x Ring's time";
    if (!sim_ok) {
      skipped(name, "needs the simulator's exact checks to pass first");
    } else {
      CheckResult c;
      c.name = name;
      const SimRow* m = have4 ? at_size(mine4, size_bytes(kLatencySize)) : nullptr;
      const SimRow* r = have4 ? at_size(ring4, size_bytes(kLatencySize)) : nullptr;
      if (!m || !r) {
        c.detail = have4 ? "no row for " + std::string(kLatencySize) : err4;
        c.hint = (hint4.empty() ? "" : hint4 + ". ") + "See it: " + compare_cmd;
      } else {
        const double ratio = m->time_us / r->time_us;
        c.detail = "yours " + us(m->time_us) + ", Ring (Simple) " + us(r->time_us) + ": " + format_double(ratio, 2) +
                   "x (32 GPUs, 4 machines)";
        if (ratio <= kLatencyTarget) {
          c.passed = true;
        } else {
          c.hint = "the ring takes 2(n-1) = 62 steps one after another; recursive halving-doubling takes 2 log2(n) = "
                   "10. Is every step of yours an exchange with a partner at distance n/2, n/4 ... (TODO 1-3)? See "
                   "it: " + compare_cmd;
        }
      }
      add(c);
    }
  }
  {
    const std::string name = std::string("bandwidth: ") + kOneNode + ", " + kBandwidthSize + ", at least " +
                             format_double(kBandwidthTarget, 2) + "x Ring's busbw";
    if (!sim_ok) {
      skipped(name, "needs the simulator's exact checks to pass first");
    } else {
      CheckResult c;
      c.name = name;
      const SimRow* m = have1 ? at_size(mine1, size_bytes(kBandwidthSize)) : nullptr;
      const SimRow* r = have1 ? at_size(ring1, size_bytes(kBandwidthSize)) : nullptr;
      if (!m || !r) {
        c.detail = have1 ? "no row for " + std::string(kBandwidthSize) : err1;
        c.hint = (hint1.empty() ? "" : hint1 + ". ") + "See it: cclab lab run 08 --sim dgx-h100";
      } else {
        const double ratio = m->busbw / r->busbw;
        c.detail = "yours " + format_double(m->busbw, 1) + " GB/s, Ring (Simple) " + format_double(r->busbw, 1) +
                   " GB/s: " + format_double(ratio, 2) + "x (8 GPUs)";
        if (ratio >= kBandwidthTarget) {
          c.passed = true;
        } else {
          c.hint = "each rank should send about 2(n-1)/n of the buffer in all, as the ring does, and every rank's "
                   "link should be busy in every step - halve the range you are responsible for at each exchange "
                   "(TODO 1). See it: cclab lab run 08 --sim dgx-h100";
        }
      }
      add(c);
    }
  }

  // 4. The answers, from the same runs.
  const std::string answers_path = env.student_dir + "/" + kAnswers;
  const Answers answers = read_answers(answers_path);
  const std::string not_run = sim_ok ? "" : "needs the simulator's exact checks to pass first";
  auto ratio_at = [](const std::vector<SimRow>& a, const std::vector<SimRow>& b, double bytes, double* v) {
    const SimRow* x = at_size(a, bytes);
    const SimRow* y = at_size(b, bytes);
    if (!x || !y || x->time_us <= 0) return false;
    *v = y->time_us / x->time_us;
    return true;
  };
  double speedup = 0;
  const bool have_speedup = have4 && ratio_at(mine4, ring4, size_bytes(kLatencySize), &speedup);
  add(check_answer(answers, answers_path, "speedup_64k",
                   "Ring's time / yours, all_reduce of 64 KiB on dgx-h100:4", have_speedup, speedup, kTolerance,
                   sim_ok ? err4 : not_run, "Ring's time (A) / yours (B) at 65536 in " + compare_cmd));
  add(check_answer(answers, answers_path, "crossover_one_node",
                   "the largest size (bytes) of the sweep at which yours is at least as fast as Ring on dgx-h100",
                   have1, have1 ? crossover(mine1, ring1) : 0, 0, sim_ok ? err1 : not_run,
                   "the last row of cclab lab run 08 --sim dgx-h100 whose B/A time is at most 1.00 (in bytes)"));
  add(check_answer(answers, answers_path, "crossover_four_nodes",
                   "the same on dgx-h100:4 (32 GPUs)", have4, have4 ? crossover(mine4, ring4) : 0, 0,
                   sim_ok ? err4 : not_run, "the last row of " + compare_cmd + " whose B/A time is at most 1.00"));
  {
    double ratio = 0;
    std::vector<SimRow> deflt;
    std::string e = sim_ok ? "" : not_run;
    bool have = false;
    if (sim_ok && have4 &&
        sim_rows(env, {"--topo", kMultiNode, "-b", kLatencySize, "-e", kLatencySize, "--algo", "ring,tree"},
                 check_limit(env, 60), &deflt, &e)) {
      const SimRow* m = at_size(mine4, size_bytes(kLatencySize));
      if (m && !deflt.empty() && deflt[0].time_us > 0) {
        ratio = m->time_us / deflt[0].time_us;
        have = true;
      }
    }
    add(check_answer(answers, answers_path, "vs_tuner_64k",
                     "your time / cclab's own choice (Ring or Tree, any protocol), 64 KiB on dgx-h100:4", have, ratio,
                     kTolerance, e,
                     "cclab sim all_reduce --topo dgx-h100:4 -b 64K -e 64K --algo ring,tree gives cclab's choice and "
                     "its time"));
  }
  return out;
}

// ---- cclab lab run 08 ------------------------------------------------------------------------------------

const char* kRunUsage =
    "usage: cclab lab run 08 [--ranks N] [--sim TOPO] [-b MIN] [-e MAX] [--trace FILE] [--dir DIR]\n"
    "\n"
    "Compiles your my_allreduce.cc into a plugin, then:\n"
    "  --ranks N (default 4)  cclab perf all_reduce on the host backend: N ranks, MIN..MAX (8 .. 1M),\n"
    "                         every element checked, NCCL_ALGO=MyAllReduce\n"
    "  --sim TOPO             cclab sim all_reduce on TOPO (dgx-h100, dgx-h100:4 ...), MIN..MAX (4K .. 256M):\n"
    "                         Ring (Simple) as A against yours as B, the ratios B/A\n"
    "  --trace FILE           with --sim: your run's trace, for cclab viz FILE\n";

int run_lab08(const LabEnv& env, const std::vector<std::string>& args) {
  int ranks = 4;
  std::string topo, min_b, max_b, trace;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](std::string* out) {
      if (i + 1 >= args.size()) return false;
      *out = args[++i];
      return true;
    };
    std::string v;
    if (a == "--help" || a == "-h") {
      std::fputs(kRunUsage, stdout);
      return kLabExitOk;
    } else if (a == "--ranks" && value(&v)) {
      ranks = std::atoi(v.c_str());
      if (ranks < 1 || ranks > 64) {
        std::fprintf(stderr, "cclab lab run 08: --ranks %s: give 1 to 64\n", v.c_str());
        return kLabExitUsage;
      }
    } else if (a == "--sim" && value(&topo)) {
    } else if (a == "-b" && value(&min_b)) {
    } else if (a == "-e" && value(&max_b)) {
    } else if (a == "--trace" && value(&trace)) {
    } else {
      std::fprintf(stderr, "cclab lab run 08: unknown flag or missing value: %s\n%s", a.c_str(), kRunUsage);
      return kLabExitUsage;
    }
  }
  const CheckResult built = compile_plugin(env);
  if (!built.passed) {
    std::fprintf(stderr, "cclab lab run 08: %s\n", built.detail.c_str());
    return kLabExitFailed;
  }
  std::vector<std::string> cmd;
  if (topo.empty()) {
    cmd = {"perf", "all_reduce", "-t", std::to_string(ranks), "-b", min_b.empty() ? "8" : min_b, "-e",
           max_b.empty() ? "1M" : max_b, "-f", "4", "-n", "5"};
  } else {
    cmd = {"sim", "all_reduce", "--topo", topo, "-b", min_b.empty() ? "4K" : min_b, "-e", max_b.empty() ? "256M" : max_b,
           "-f", "4", "--compare", "--algo ring --proto simple", std::string("--algo ") + kAlgo};
    if (!trace.empty()) {
      // --compare writes no trace: a run of yours alone.
      const std::vector<std::string> t{"sim", "all_reduce", "--topo", topo, "-b", max_b.empty() ? "1M" : max_b, "-e",
                                       max_b.empty() ? "1M" : max_b, "--algo", kAlgo, "--trace", trace};
      const CommandResult r = run_cclab(env, t, 600);
      std::printf("# trace of %s: %s (%s)\n", cclab_command_line(t).c_str(), trace.c_str(),
                  r.exit_code == 0 ? "cclab viz it" : describe_run(r, 600).c_str());
    }
  }
  std::printf("# CCLAB_ALGO_PLUGIN=%s NCCL_ALGO=%s %s\n", shown_path(plugin_path(env)).c_str(), kAlgo,
              cclab_command_line(cmd).c_str());
  std::fflush(stdout);
  std::vector<std::string> argv{self_exe()};
  argv.insert(argv.end(), cmd.begin(), cmd.end());
  setenv("CCLAB_ALGO_PLUGIN", plugin_path(env).c_str(), 1);
  setenv("NCCL_ALGO", kAlgo, 1);
  std::vector<char*> cargv;
  for (std::string& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  execv(cargv[0], cargv.data());
  std::perror("cclab lab run 08: exec");
  return kLabExitFailed;
}

}  // namespace

Lab make_lab08() {
  Lab l;
  l.number = "08";
  l.folder = "08-your-own-algorithm";
  l.title = "Your own algorithm";
  l.written = true;
  l.student_files = {kSource, kAnswers};
  l.trace_file = kTrace;
  l.check = check_lab08;
  l.run = run_lab08;
  return l;
}

}  // namespace cclab::lab
