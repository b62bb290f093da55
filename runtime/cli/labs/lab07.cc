// runtime/cli/labs/lab07.cc - lab 7, "Debugging a hang" (labs/07-debugging/README.md): the checks of
// `cclab lab check 07` and the driver of `cclab lab run 07`.
//
// The student's train_step.c defines lab_train_step (labs/07-debugging/train_step.h): one data-parallel
// step, the gradients averaged over the ranks in buckets (in place), the loss summed. Every check runs it
// with a thread per rank, its own stream, in a forked child with a time limit (lab 1's pattern):
//   - compile: train_step.c, and a wrapper of it that returns its BUCKET_BYTES (read_bucket_bytes);
//   - host backend, 2, 3 and 4 ranks, counts 1, 1000, two of the student's buckets, two and a half (an odd
//     count: a short last bucket) and 100003, so that a wrong bucket order shows whatever BUCKET_BYTES is
//     (host_counts): every gradient the average (relative 1e-5), the loss the exact sum,
//     nothing written past the gradients' end. A rank that never joins a collective hangs: the child's waits
//     give up (CCLAB_TIMEOUT) and report where they were stuck; its stuck-wait lines are in the log;
//   - simulator (CCLAB_BACKEND=sim, CCLAB_TOPO=dgx-h100), 8 ranks, 16 MiB of gradients: exact, and its
//     simulated time at most kSpeedBound x the grader's own step with one bucket (one ncclAllReduce of the
//     whole buffer + the loss) in the same harness; the trace is what `cclab lab viz 07` shows;
//   - the answers: the number of collectives of a 16 MiB step with 64 KiB buckets, the simulated times of
//     the grader's step with 64 KiB buckets and with one bucket, and the per-collective cost derived.
// Inputs: rank r's gradient i is (r + 1) x (1 + 7i mod 13), its loss r + 1.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "cclab/cclab.h"
#include "lab_cmd.h"
#include "nccl.h"
#include "perf_options.h"

namespace cclab::lab {
namespace {
namespace fs = std::filesystem;

using StepFn = ncclResult_t (*)(float*, size_t, float*, ncclComm_t, cudaStream_t);

constexpr const char* kSource = "train_step.c";
constexpr const char* kSymbol = "lab_train_step";
constexpr const char* kTrace = "train_step.cctrace";
constexpr const char* kAnswers = "answers.txt";
constexpr const char* kSimTopo = "dgx-h100";
constexpr int kSimRanks = 8;
constexpr size_t kSimBytes = 16u << 20;    // 16 MiB of gradients
constexpr size_t kSmallBucket = 64u << 10;  // the skeleton's bucket
constexpr size_t kMaxBucket = 64u << 20;    // BUCKET_BYTES at most: the host checks run 2.5 buckets a rank
constexpr const char* kBucketSymbol = "cclab_lab07_bucket_bytes";  // the grader's wrapper: BUCKET_BYTES
constexpr double kSpeedBound = 1.5;         // the student's step / the one-bucket step, at most
constexpr double kTimeTolerance = 0.05, kAlphaTolerance = 0.10;
constexpr size_t kGuard = 16;
constexpr float kGuardValue = -12345.0f;
constexpr double kHostTimeoutS = 10, kSimTimeoutS = 60;
constexpr int kMaxRanks = 16;

float pattern(size_t i) { return static_cast<float>(1 + (i * 7) % 13); }
float input_value(int r, size_t i) { return static_cast<float>(r + 1) * pattern(i); }

// ---- The grader's own step (`--reference BYTES`): right, with a bucket of g_ref_bucket bytes ---------

size_t g_ref_bucket = kSimBytes;

ncclResult_t reference_step(float* grads, size_t count, float* loss, ncclComm_t comm, cudaStream_t stream) {
  const size_t bucket = std::max<size_t>(1, g_ref_bucket / sizeof(float));
  for (size_t start = 0; start < count; start += bucket) {
    const ncclResult_t e =
        ncclAllReduce(grads + start, grads + start, std::min(bucket, count - start), ncclFloat, ncclAvg, comm, stream);
    if (e != ncclSuccess) return e;
  }
  const ncclResult_t e = ncclAllReduce(loss, loss, 1, ncclFloat, ncclSum, comm, stream);
  return e != ncclSuccess ? e : cclabStreamSynchronize(stream);
}

// ---- The driver: a thread per rank, every case, checked element by element ----------------------------

struct RankCheck {
  int status = 0;
  std::string error;
  size_t wrong = 0, own = 0, first_bad = 0;  // own: still this rank's input (never reduced)
  float got = 0, want = 0;
  bool overflow = false;
  float loss = 0, loss_want = 0;
  double t0 = 0, t1 = 0;
};

nlohmann::json run_cases(StepFn fn, int n, const std::vector<size_t>& counts) {
  std::vector<std::vector<RankCheck>> results(counts.size(), std::vector<RankCheck>(n));
  // Where we are, and which earlier cases came out wrong (a hang later loses the results).
  const auto mark = [&](size_t k) {
    nlohmann::json wrong = nlohmann::json::array();
    for (size_t p = 0; p < k; ++p)
      for (const RankCheck& c : results[p])
        if (c.status == 0 && c.wrong > 0) {
          wrong.push_back(counts[p]);
          break;
        }
    child_marker({{"ranks", n}, {"count", counts[k]}, {"wrong_before", wrong}});
  };
  const RankThreads rt = run_rank_threads(
      n, counts.size(), mark, [&](int r, size_t k, ncclComm_t comm, cudaStream_t stream, bool sim) {
        const size_t count = counts[k];
        std::vector<float> grads(count + kGuard, kGuardValue);
        for (size_t i = 0; i < count; ++i) grads[i] = input_value(r, i);
        float loss = static_cast<float>(r + 1);
        const double t0 = clock_us(sim);
        ncclResult_t e = fn(grads.data(), count, &loss, comm, stream);
        if (e == ncclSuccess) e = cclabStreamSynchronize(stream);
        const double t1 = clock_us(sim);
        RankCheck& c = results[k][r];
        c.status = e;
        if (e != ncclSuccess) c.error = ncclGetLastError(comm);
        const float avg = static_cast<float>(n + 1) / 2.0f;
        for (size_t i = 0; i < count; ++i) {
          const float want = avg * pattern(i), got = grads[i];
          if (std::fabs(got - want) <= 1e-5f * want) continue;
          if (c.wrong++ == 0) {
            c.first_bad = i;
            c.got = got;
            c.want = want;
          }
          if (got == input_value(r, i)) ++c.own;
        }
        for (size_t g = 0; g < kGuard; ++g)
          if (grads[count + g] != kGuardValue) c.overflow = true;
        c.loss = loss;
        c.loss_want = static_cast<float>(n * (n + 1) / 2);
        c.t0 = t0;
        c.t1 = t1;
        return e;
      });
  if (!rt.internal_error.empty()) return {{"internal_error", rt.internal_error}};
  nlohmann::json j = {{"backend", rt.backend}, {"planned", counts.size()}, {"cases", nlohmann::json::array()}};
  for (size_t k = 0; k < rt.cases_run; ++k) {
    nlohmann::json ranks = nlohmann::json::array();
    for (const RankCheck& c : results[k])
      ranks.push_back({{"status", c.status},
                       {"error", c.error},
                       {"wrong", c.wrong},
                       {"own", c.own},
                       {"first_bad", c.first_bad},
                       {"got", c.got},
                       {"want", c.want},
                       {"overflow", c.overflow},
                       {"loss", c.loss},
                       {"loss_want", c.loss_want},
                       {"t0", c.t0},
                       {"t1", c.t1}});
    j["cases"].push_back({{"count", counts[k]}, {"ranks", ranks}});
  }
  return j;
}

// In the child: the student's function (or the grader's step when reference), then the cases.
nlohmann::json run_child(const std::string& so, int n, const std::vector<size_t>& counts, bool reference, bool sim) {
  if (sim && cclabSetBackend(cclabBackendSim) != ncclSuccess)
    return {{"internal_error", std::string("cannot select the sim backend: ") + ncclGetLastError(nullptr)}};
  StepFn fn = reference_step;
  if (!reference) {
    std::string err;
    fn = reinterpret_cast<StepFn>(load_student_symbol(so, kSymbol, &err));
    if (!fn) return {{"load_error", err}};
  }
  return run_cases(fn, n, counts);
}

// ---- Reading a run ------------------------------------------------------------------------------------

bool rank_ok(const nlohmann::json& rc) {
  return rc.value("status", 0) == 0 && rc.value("wrong", size_t{0}) == 0 && !rc.value("overflow", false) &&
         rc.value("loss", 0.0f) == rc.value("loss_want", -1.0f);
}

bool case_ok(const nlohmann::json& c) {
  for (const auto& r : c["ranks"])
    if (!rank_ok(r)) return false;
  return true;
}

std::string describe_rank(const nlohmann::json& rc, size_t count) {
  std::ostringstream s;
  if (rc.value("status", 0) != 0) {
    const std::string e = rc.value("error", std::string());
    s << kSymbol << " returned an error: "
      << (e.empty() ? std::string(ncclGetErrorString(static_cast<ncclResult_t>(rc.value("status", 0))))
                    : short_error(e));
    return s.str();
  }
  std::string sep;
  const size_t wrong = rc.value("wrong", size_t{0});
  if (wrong > 0) {
    s << wrong << " of " << count << " gradients wrong; gradient " << rc.value("first_bad", size_t{0}) << " is "
      << rc.value("got", 0.0f) << ", want " << rc.value("want", 0.0f);
    if (rc.value("own", size_t{0}) == wrong) s << " (this rank's own gradients: never reduced)";
    sep = "; ";
  }
  if (rc.value("overflow", false)) {
    s << sep << "wrote past the end of grads";
    sep = "; ";
  }
  if (rc.value("loss", 0.0f) != rc.value("loss_want", -1.0f))
    s << sep << "loss " << rc.value("loss", 0.0f) << ", want " << rc.value("loss_want", 0.0f);
  return s.str();
}

bool mentions_mismatch(const std::string& e) {
  return e.find("expected") != std::string::npos || e.find("same count") != std::string::npos ||
         e.find("mismatch") != std::string::npos;
}

const char* kHangHint =
    "a rank waits in a collective that another rank never calls. Every rank must call the same "
    "collectives, in the same order, with the same counts: is a nccl call inside an `if` that only some "
    "ranks take (TODO 1), or do the ranks walk the buckets in different orders, so that their k-th calls "
    "have different counts (TODO 2)? The stuck-wait line (the log above, or CCLAB_DOCTOR=0 CCLAB_TIMEOUT=6 cclab lab run "
    "07 --ranks 2 --size 4) names the rank that waits and the rank it waits for: look at what that rank did "
    "instead";
const char* kMismatchHint =
    "the ranks' collectives do not match: one rank's k-th ncclAllReduce has another count, or reduces "
    "another bucket, than another rank's k-th. With equal counts the averages come out wrong; with "
    "different counts the call fails at once (the receiver sees a slice of another size: bytes, where the "
    "COLL lines count elements). Every rank must walk the buckets in the same order "
    "(TODO 2); NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL cclab lab run 07 prints each rank's calls with "
    "their counts";
const char* kWrongHint =
    "nothing hung, but the averages are wrong: at the same call the ranks reduced different buckets "
    "(another offset into grads), so each bucket was averaged with another bucket's gradients. (Where a "
    "short last bucket also made the counts differ, the LL protocol did not notice, as NCCL's does not on "
    "a GPU: its lines carry no size, and the next collective's lines completed the call.) Every rank must "
    "reduce the buckets in the same order (TODO 2)";

std::string hint_for(const nlohmann::json& cases) {
  bool wait = false, mismatch = false, error = false, wrong = false, loss = false, overflow = false;
  for (const auto& c : cases)
    for (const auto& rc : c["ranks"]) {
      const std::string e = rc.value("error", std::string());
      if (rc.value("status", 0) != 0) error = true;
      if (mentions_wait(e)) wait = true;
      if (mentions_mismatch(e)) mismatch = true;
      if (rc.value("wrong", size_t{0}) > 0) wrong = true;
      if (rc.value("overflow", false)) overflow = true;
      if (rc.value("status", 0) == 0 && rc.value("loss", 0.0f) != rc.value("loss_want", -1.0f)) loss = true;
    }
  if (mismatch) return kMismatchHint;
  if (wait) return kHangHint;
  if (error) return "a nccl call failed: the message names the call and the argument";
  if (overflow) return "you wrote past the end of grads: the last bucket holds count - start elements only";
  if (wrong) return kWrongHint;
  if (loss) return "the loss must be summed (ncclSum, not ncclAvg) onto every rank";
  return "";
}

std::string size_arg(size_t bytes) {
  return bytes % (1u << 20) == 0   ? std::to_string(bytes >> 20) + "M"
         : bytes % (1u << 10) == 0 ? std::to_string(bytes >> 10) + "K"
                                   : std::to_string(bytes);
}

std::string repro(const LabEnv& env, size_t count, int n, bool sim) {
  std::string s = "\nrun it alone: ";
  s += sim ? std::string("CCLAB_BACKEND=sim CCLAB_TOPO=") + kSimTopo + " " : "CCLAB_STUCK_WARN=3 ";
  s += "cclab lab run 07 --ranks " + std::to_string(n) + " --size " + size_arg(count * sizeof(float));
  s += where_flags(env);
  return s;
}

// The log's lines that say why a run hung: the count mismatches a receiving rank reports (NCCL_DEBUG=WARN:
// "expected X bytes from rank P at step S but received Y"), else the stuck-wait reports; two at most.
bool log_has_mismatch(const std::string& log_path) {
  std::ifstream in(log_path);
  std::string line;
  while (std::getline(in, line))
    if (line.find("expected") != std::string::npos && line.find("but received") != std::string::npos) return true;
  return false;
}
std::string stuck_lines(const std::string& log_path) {
  const bool mismatch = log_has_mismatch(log_path);
  std::ifstream in(log_path);
  std::string line, out;
  int shown = 0;
  while (std::getline(in, line) && shown < 2) {
    const bool want = mismatch ? line.find("but received") != std::string::npos
                               : line.find("waiting for") != std::string::npos && line.find("WARN") != std::string::npos;
    if (!want) continue;
    const size_t at = line.find("NCCL WARN ");  // drop "host:pid:tid [r] file:line"
    out += "\n  " + (at != std::string::npos ? line.substr(at) : line);
    ++shown;
  }
  if (out.empty()) return "";
  return std::string("\n") + (mismatch ? "count mismatches" : "stuck waits") + " in the log (" + shown_path(log_path) +
         "):" + out;
}

void judge_run(const LabEnv& env, const ChildOutcome& o, int n, bool sim, CheckResult* c) {
  if (o.status != ChildOutcome::kOk) {
    c->detail = "your code " + describe_outcome(o);
    if (o.last_marker.is_object()) {
      c->detail += " at " + std::to_string(n) + " ranks, count " + std::to_string(o.last_marker.value("count", 0));
      c->detail += repro(env, o.last_marker.value("count", size_t{0}), n, sim);
    }
    c->detail += stuck_lines(o.log_path);
    std::string wrong_before;
    if (o.last_marker.is_object() && o.last_marker.contains("wrong_before"))
      for (const auto& w : o.last_marker["wrong_before"])
        wrong_before += (wrong_before.empty() ? "" : ", ") + std::to_string(w.get<size_t>());
    if (!wrong_before.empty())
      c->detail += "\nbefore it hung, the averages were already wrong with count " + wrong_before +
                   " (nothing hung there)";
    c->hint = o.status == ChildOutcome::kTimedOut
                  ? (log_has_mismatch(o.log_path) || !wrong_before.empty() ? kMismatchHint : kHangHint)
              : o.status == ChildOutcome::kCrashed
                  ? "a pointer outside grads? The last bucket holds count - start elements only"
                  : "lab_train_step must return (ncclSuccess or an error), not end the process";
    return;
  }
  if (judge_child_error(o, "train_step.h", c)) return;
  const nlohmann::json& j = o.result;
  const auto& cases = j["cases"];
  int bad = 0;
  std::string first;
  size_t first_count = 0;
  for (const auto& cs : cases) {
    if (case_ok(cs)) continue;
    if (bad++ > 0) continue;
    first_count = cs.value("count", size_t{0});
    first = "count " + std::to_string(first_count) + ":";
    int lines = 0;
    for (size_t r = 0; r < cs["ranks"].size(); ++r)
      if (!rank_ok(cs["ranks"][r]) && lines++ < 2)
        first += "\n  Rank " + std::to_string(r) + ": " + describe_rank(cs["ranks"][r], first_count);
  }
  if (bad == 0) {
    c->passed = true;
    return;
  }
  const size_t planned = j.value("planned", cases.size());
  c->detail = std::to_string(bad) + " of " + std::to_string(planned) + " calls wrong";
  if (cases.size() < planned) c->detail += " (the rest did not run: a call failed)";
  c->detail += "; the first, " + first;
  if (bad < static_cast<int>(cases.size())) {
    std::string right;
    for (const auto& cs : cases)
      if (case_ok(cs)) right += (right.empty() ? "" : ", ") + std::to_string(cs.value("count", size_t{0}));
    c->detail += "\nright with count " + right;
  }
  c->detail += repro(env, first_count, n, sim);
  if (hung(o)) c->detail += stuck_lines(o.log_path);
  c->hint = log_has_mismatch(o.log_path) ? kMismatchHint : hint_for(cases);
}

// The host checks' counts (floats) for buckets of bucket_bytes: 1, 1000 and 100003, and two sized by the
// student's buckets, so that a wrong bucket order (TODO 2) shows whatever BUCKET_BYTES is: two full
// buckets (the ranks' same counts, other buckets: wrong averages) and two and a half, an odd count (a
// short last bucket: a count mismatch). In increasing order.
std::vector<size_t> host_counts(size_t bucket_bytes) {
  const size_t b = std::max<size_t>(1, bucket_bytes / sizeof(float));
  std::vector<size_t> counts{1, 1000, 2 * b, 2 * b + ((b / 2) | 1), 100003};
  std::sort(counts.begin(), counts.end());
  return counts;
}

// The student's BUCKET_BYTES (TODO 3). The macro is train_step.c's own, so the grader compiles a wrapper
// that includes the file and returns it, and calls that in a child (the student's code never runs in the
// grader). False, with what is wrong and a hint, when there is none or it is out of range.
bool read_bucket_bytes(const LabEnv& env, size_t* bytes, std::string* why, std::string* hint) {
  const std::string probe_c = env.work_dir + "/bucket_bytes.c", probe_so = env.work_dir + "/bucket_bytes.so";
  std::string path;
  for (const char ch : fs::absolute(env.student_dir + "/" + kSource).string()) {
    if (ch == '"' || ch == '\\') path += '\\';
    path += ch;
  }
  {
    std::ofstream f(probe_c);
    f << "/* Written by cclab lab check 07 (runtime/cli/labs/lab07.cc): your train_step.c, and its BUCKET_BYTES\n"
         " * for the grader, which sizes the host checks' steps by it. */\n"
         "#include \"" << path << "\"\n"
         "#ifdef BUCKET_BYTES\n"
         "unsigned long long " << kBucketSymbol << "(void);\n"
         "unsigned long long " << kBucketSymbol << "(void) { return (unsigned long long)(BUCKET_BYTES); }\n"
         "#endif\n";
  }
  const CommandResult r = compile_shared(env, {probe_c}, probe_so);
  if (!r.started || r.timed_out || r.exit_code != 0) {
    *why = "the grader could not read BUCKET_BYTES from " + std::string(kSource) + ": " +
           describe_command(r, 60) + "\n" + output_tail(r.output, 6);
    *hint = "this is not your code's fault if it compiled above: check the cclab build";
    return false;
  }
  const ChildOutcome o = run_in_child(
      [&]() -> nlohmann::json {
        std::string err;
        void* f = load_student_symbol(probe_so, kBucketSymbol, &err);
        if (!f) return {{"missing", true}};
        return {{"bytes", reinterpret_cast<unsigned long long (*)(void)>(f)()}};
      },
      10, env.work_dir + "/bucket_bytes.log");
  *hint = "keep `#define BUCKET_BYTES (...)` in " + std::string(kSource) +
          " and use it as your bucket size (TODO 3): the grader reads it to run steps of several of your buckets";
  if (o.status != ChildOutcome::kOk) {
    *why = "reading BUCKET_BYTES: your library " + describe_outcome(o) + " when it was loaded";
    return false;
  }
  if (o.result.value("missing", false) || !o.result.contains("bytes")) {
    *why = std::string(kSource) + " compiles, but defines no BUCKET_BYTES";
    return false;
  }
  const unsigned long long v = o.result["bytes"].get<unsigned long long>();
  if (v < sizeof(float) || v > kMaxBucket) {
    *why = "BUCKET_BYTES is " + std::to_string(v) + ": the grader takes " + std::to_string(sizeof(float)) +
           " bytes (one float) to " + std::to_string(kMaxBucket >> 20) +
           " MiB: the host checks run steps of two and a half of your buckets, and one bucket of the whole 16 MiB "
           "step is 16 MiB";
    *hint = "choose BUCKET_BYTES from 4 bytes to " + std::to_string(kMaxBucket >> 20) + " MiB (TODO 3)";
    return false;
  }
  *bytes = static_cast<size_t>(v);
  return true;
}

std::map<std::string, std::string> sim_env(const std::string& trace) {
  std::map<std::string, std::string> v{{"CCLAB_BACKEND", "sim"}, {"CCLAB_TOPO", kSimTopo}};
  if (!trace.empty()) v["CCLAB_TRACE"] = trace;
  return v;
}

// The grader's step with a bucket of `bucket` bytes in the simulator, 8 ranks, 16 MiB: its time (0 and
// *error when it failed).
double reference_time(const LabEnv& env, size_t bucket, const std::string& log, double* seconds, std::string* error) {
  g_ref_bucket = bucket;
  const std::vector<size_t> counts{kSimBytes / sizeof(float)};
  const ChildOutcome o = run_in_child([&] { return run_child("", kSimRanks, counts, true, true); }, kSimTimeoutS,
                                      log, sim_env(""), kGraderEnvPrefixes);
  *seconds += o.seconds;
  CheckResult r;
  judge_run(env, o, kSimRanks, true, &r);
  if (!r.passed) {
    *error = "the grader's own step failed in the simulator: " + r.detail;
    return 0;
  }
  return run_time_us(o.result);
}

// ---- The checks ---------------------------------------------------------------------------------------

std::vector<CheckResult> check_lab07(const LabEnv& env, const std::function<void(const CheckResult&)>& done) {
  std::vector<CheckResult> out;
  auto add = [&](CheckResult c) {
    out.push_back(c);
    done(out.back());
  };
  const std::string so = env.work_dir + "/train_step.so";
  CheckResult compiled = compile_student(env, {kSource}, so);
  // The host checks' counts depend on BUCKET_BYTES: without a usable one, nothing runs.
  size_t bucket_bytes = 0;
  std::string not_built = "skipped: your code did not compile";
  if (compiled.passed) {
    std::string why, hint;
    const auto t0 = std::chrono::steady_clock::now();
    const bool read = read_bucket_bytes(env, &bucket_bytes, &why, &hint);
    compiled.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (read) {
      const std::vector<size_t> counts = host_counts(bucket_bytes);
      const size_t b = std::max<size_t>(1, bucket_bytes / sizeof(float));
      compiled.detail += std::string(compiled.detail.empty() ? "" : "\n") + "BUCKET_BYTES " +
                         std::to_string(bucket_bytes) + " (" + std::to_string(b) +
                         " floats): the host checks' steps include two of your buckets (count " +
                         std::to_string(2 * b) + ") and two and a half (count " +
                         std::to_string(2 * b + ((b / 2) | 1)) + ")";
    } else {
      compiled.passed = false;
      compiled.detail += std::string(compiled.detail.empty() ? "" : "\n") + why;
      compiled.hint = hint;
      not_built = "skipped: needs a BUCKET_BYTES the grader can read (above)";
    }
  }
  const bool built = compiled.passed;
  add(compiled);
  const std::vector<size_t> counts = host_counts(bucket_bytes);

  int hung_at = 0;
  for (int n : {2, 3, 4}) {
    CheckResult c;
    c.name = "host backend, " + std::to_string(n) + " ranks, " + std::to_string(counts.size()) + " steps";
    if (!built || hung_at > 0) {
      c.skipped = true;
      c.detail = !built ? not_built
                        : "skipped: your code hung with " + std::to_string(hung_at) + " ranks (above); fix that first";
      add(c);
      continue;
    }
    const double t = check_limit(env, kHostTimeoutS);
    auto vars = host_child_env(t);
    vars["CCLAB_STUCK_WARN"] = "1";
    vars["NCCL_DEBUG"] = "WARN";  // the count mismatches a receiving rank sees go to the log
    const ChildOutcome o =
        run_in_child([&] { return run_child(so, n, counts, false, false); }, t,
                     env.work_dir + "/host-" + std::to_string(n) + ".log", vars, kGraderEnvPrefixes);
    c.seconds = o.seconds;
    judge_run(env, o, n, false, &c);
    if (hung(o)) hung_at = n;
    add(c);
  }

  const std::string trace = env.work_dir + "/" + kTrace;
  std::error_code ec;
  fs::remove(trace, ec);
  CheckResult exact;
  exact.name = "simulator: 8 ranks, dgx-h100, 16 MiB, exact";
  double mine_us = 0;
  if (!built) {
    exact.skipped = true;
    exact.detail = not_built;
  } else {
    const std::vector<size_t> counts{kSimBytes / sizeof(float)};
    // The simulator ends a deadlock at once by itself: --timeout only shortens the host checks here.
    const ChildOutcome o = run_in_child([&] { return run_child(so, kSimRanks, counts, false, true); },
                                        std::max(env.timeout_s, kSimTimeoutS), env.work_dir + "/sim.log", sim_env(trace),
                                        kGraderEnvPrefixes);
    exact.seconds = o.seconds;
    judge_run(env, o, kSimRanks, true, &exact);
    if (exact.passed) {
      mine_us = run_time_us(o.result);
      exact.detail = "your step took " + format_double(mine_us, 1) + " us of simulated time (its trace: " +
                     shown_path(trace) + ")";
    }
  }
  add(exact);

  // The grader's own step, one bucket and 64 KiB buckets: the speed target and the answers.
  double ref_seconds = 0;
  std::string one_error, small_error;
  const double one_us = reference_time(env, kSimBytes, env.work_dir + "/sim-one.log", &ref_seconds, &one_error);
  CheckResult speed;
  speed.name = "simulator: time at most " + format_double(kSpeedBound, 1) + "x one bucket's";
  speed.seconds = ref_seconds;
  if (one_us <= 0) {
    speed.detail = one_error;
    speed.hint = "this is not your code's fault: check the cclab build";
  } else if (mine_us <= 0) {
    speed.skipped = true;
    speed.detail = "skipped: needs your step to be exact in the simulator (the check above)";
  } else {
    const double ratio = mine_us / one_us;
    speed.detail = "your step " + format_double(mine_us, 1) + " us; one ncclAllReduce of the 16 MiB + the loss's " +
                   format_double(one_us, 1) + " us: " + format_double(ratio, 2) + "x (at most " +
                   format_double(kSpeedBound, 1) + "x)";
    speed.passed = ratio <= kSpeedBound;
    if (!speed.passed)
      speed.hint =
          "every ncclAllReduce pays a fixed latency however small it is: count your collectives "
          "(NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL) and look at the timeline (cclab lab viz 07). Larger "
          "buckets (TODO 3)";
  }
  add(speed);

  const std::string answers_path = env.student_dir + "/" + kAnswers;
  const Answers answers = read_answers(answers_path);
  const double nbuckets = static_cast<double>(kSimBytes / kSmallBucket);
  add(check_answer(answers, answers_path, "collectives",
                   "ncclAllReduce calls per rank, 16 MiB step, 64 KiB buckets, the loss's included", true,
                   nbuckets + 1, 0, "",
                   "one per bucket (16 MiB / 64 KiB of them) and one for the loss"));
  double small_seconds = 0;
  double small_us = 0;
  std::string dummy;
  double unused = 0;
  if (answer_number(answers, "t_small_us", &unused, &dummy) || answer_number(answers, "alpha_us", &unused, &dummy))
    small_us = reference_time(env, kSmallBucket, env.work_dir + "/sim-small.log", &small_seconds, &small_error);
  else
    small_error = "no answer to check";
  CheckResult ts = check_answer(answers, answers_path, "t_small_us",
                                "simulated us, 16 MiB step, 64 KiB buckets, 8 ranks of dgx-h100", small_us > 0,
                                small_us, kTimeTolerance, small_error,
                                "CCLAB_BACKEND=sim CCLAB_TOPO=dgx-h100 cclab lab run 07 --ranks 8 --size 16M "
                                "--reference 64K prints it");
  ts.seconds = small_seconds;
  add(ts);
  add(check_answer(answers, answers_path, "t_one_us", "simulated us, the same step with one bucket", one_us > 0,
                   one_us, kTimeTolerance, one_error,
                   "CCLAB_BACKEND=sim CCLAB_TOPO=dgx-h100 cclab lab run 07 --ranks 8 --size 16M --reference 16M "
                   "prints it"));
  const double alpha = (small_us - one_us) / (nbuckets - 1);
  add(check_answer(answers, answers_path, "alpha_us", "us per extra all_reduce", small_us > 0 && one_us > 0, alpha,
                   kAlphaTolerance, small_us > 0 ? one_error : small_error,
                   "(t_small_us - t_one_us) / (256 - 1): 16 MiB / 64 KiB = 256 buckets against one"));
  return out;
}

// ---- `cclab lab run 07` -------------------------------------------------------------------------------

const char* kRunUsage =
    "usage: cclab lab run 07 [--ranks N] [--size BYTES] [--reference BUCKET] [--dir DIR] [--timeout S]\n"
    "\n"
    "Builds your train_step.c and runs lab_train_step once on N ranks (a thread each, default 4) over\n"
    "BYTES of float gradients (default 4000; K, M, G suffixes), then checks every gradient and the loss.\n"
    "It runs on the backend of your environment: the host backend, or the simulator with\n"
    "  CCLAB_BACKEND=sim CCLAB_TOPO=dgx-h100 cclab lab run 07 --ranks 8 --size 16M\n"
    "which prints the simulated time. --reference BUCKET runs the grader's own (right) step with buckets\n"
    "of BUCKET bytes instead of yours. On the host backend a stuck wait is reported after CCLAB_STUCK_WARN\n"
    "seconds (3 here unless set) and gives up after CCLAB_TIMEOUT (10 unless set);\nthe run ends after 30 s (--timeout).\n";

int run_lab07(const LabEnv& env, const std::vector<std::string>& args) {
  int n = 4;
  size_t bytes = 4000;
  size_t ref_bucket = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const bool has_value = i + 1 < args.size();
    try {
      if (a == "--help" || a == "-h") {
        std::fputs(kRunUsage, stdout);
        return kLabExitOk;
      } else if (a == "--ranks" && has_value) {
        n = parse_ranks(args[++i], kMaxRanks);
      } else if (a == "--size" && has_value) {
        bytes = parse_size(args[++i], "--size");
        if (bytes % sizeof(float) != 0)
          throw std::invalid_argument("--size: " + std::to_string(bytes) + " bytes is not a whole number of floats");
      } else if (a == "--reference" && has_value) {
        ref_bucket = parse_size(args[++i], "--reference");
        if (ref_bucket < sizeof(float)) throw std::invalid_argument("--reference: a bucket of at least 4 bytes");
      } else {
        throw std::invalid_argument(a == "--ranks" || a == "--size" || a == "--reference" ? a + " needs a value"
                                                                                          : "unknown flag " + a);
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "cclab lab run 07: %s\n%s", e.what(), kRunUsage);
      return kLabExitUsage;
    }
  }
  const bool reference = ref_bucket > 0;
  const std::string so = env.work_dir + "/train_step.so";
  if (!reference) {
    const CheckResult c = compile_student(env, {kSource}, so);
    if (!c.passed || !c.detail.empty()) std::fprintf(c.passed ? stdout : stderr, "%s\n", c.detail.c_str());
    if (!c.passed) {
      std::fprintf(stderr, "cclab lab run 07: %s did not compile\n", (env.student_dir + "/" + kSource).c_str());
      return kLabExitFailed;
    }
  } else {
    g_ref_bucket = ref_bucket;
  }
  const size_t count = bytes / sizeof(float);
  const char* backend = std::getenv("CCLAB_BACKEND");
  const bool sim = backend && std::string(backend) == "sim";
  std::printf("%s on %d ranks (a thread each), %zu float gradients (%zu bytes), %s backend\n",
              reference ? ("the grader's step with " + size_arg(ref_bucket) + " buckets").c_str()
                        : "your lab_train_step",
              n, count, bytes, backend && *backend ? backend : "host");
  std::printf("inputs: rank r's gradient i is (r + 1) x (1 + 7i mod 13), its loss r + 1\n");
  std::fflush(stdout);
  const double t = env.timeout_s > 0 ? env.timeout_s : sim ? kSimTimeoutS : 30;
  std::map<std::string, std::string> vars;
  if (!std::getenv("CCLAB_TIMEOUT")) vars["CCLAB_TIMEOUT"] = "10";
  if (!std::getenv("CCLAB_STUCK_WARN")) vars["CCLAB_STUCK_WARN"] = "3";
  const std::vector<size_t> counts{count};
  const ChildOutcome o = run_in_child([&] { return run_child(so, n, counts, reference, false); }, t, "", vars);
  if (!print_run_failure(o, kHangHint)) return kLabExitFailed;
  const nlohmann::json& j = o.result;
  const auto& c = j["cases"][0];
  int wrong_ranks = 0;
  for (size_t r = 0; r < c["ranks"].size(); ++r) {
    const auto& rc = c["ranks"][r];
    const bool ok = rank_ok(rc);
    if (!ok) ++wrong_ranks;
    std::printf("  rank %zu: %s\n", r,
                ok ? ("all " + std::to_string(count) + " gradients and the loss right").c_str()
                   : describe_rank(rc, count).c_str());
  }
  const double us = run_time_us(j);
  print_run_time(us, sim || j.value("backend", std::string()) == "sim");
  if (wrong_ranks > 0) std::printf("hint: %s\n", hint_for(j["cases"]).c_str());
  return wrong_ranks == 0 ? kLabExitOk : kLabExitFailed;
}

}  // namespace

Lab make_lab07() {
  Lab l;
  l.number = "07";
  l.folder = "07-debugging";
  l.title = "Debugging a hang";
  l.written = true;
  l.student_files = {kSource, kAnswers};
  l.trace_file = kTrace;
  l.check = check_lab07;
  l.run = run_lab07;
  return l;
}

}  // namespace cclab::lab
