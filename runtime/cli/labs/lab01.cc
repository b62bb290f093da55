// runtime/cli/labs/lab01.cc - lab 1, "Ring all_reduce by hand" (labs/01-ring-allreduce/README.md): the
// checks of `cclab lab check 01` and the driver of `cclab lab run 01`.
//
// The student's ring_allreduce.c defines lab_ring_allreduce (labs/01-ring-allreduce/ring_allreduce.h).
// Every check runs it with a thread per rank (ncclCommInitRank), its own stream, in a forked child:
//   - host backend, 2, 3, 4, 5 and 8 ranks, counts 1, n-1, n, 2n+1, 1000, 12345, 262147 and one in-place
//     call: every element byte-exact, sendbuff untouched, nothing written past recvbuff's end;
//   - simulator (CCLAB_BACKEND=sim, CCLAB_TOPO=dgx-h100), 8 ranks, 16 MiB: exact, and its simulated time
//     within kSimBound of 2(n-1) steps of NCCL's own point-to-point moving count/n elements each (nccl-
//     tests' sendrecv, which `cclab sim` computes here, split over channels as NCCL 2.28.9 splits every
//     send, the student's included); the trace of this run is what `cclab lab viz 01` shows;
//   - the answers in answers.txt, recomputed from these runs and from `cclab sim`.
// Inputs are integer-valued floats, rank r's element i = 2^r x (1 + 7i mod 13): every partial sum is
// exact in any order, and a wrong element tells which ranks' inputs it holds (the bits of value / (1 +
// 7i mod 13)), which the hints use.
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <vector>

#include "cclab/cclab.h"
#include "lab_cmd.h"
#include "nccl.h"
#include "perf_options.h"
#include "sim/sim.h"

namespace cclab::lab {
namespace {
namespace fs = std::filesystem;

using RingFn = ncclResult_t (*)(const float*, float*, size_t, ncclComm_t, cudaStream_t);

constexpr const char* kSource = "ring_allreduce.c";
constexpr const char* kSymbol = "lab_ring_allreduce";
constexpr const char* kTrace = "ring.cctrace";
constexpr const char* kAnswers = "answers.txt";
constexpr const char* kSimTopo = "dgx-h100";
constexpr int kSimRanks = 8;
constexpr size_t kSimBytes = 16u << 20;  // 16 MiB of floats
constexpr double kSimBound = 1.1;        // the student's time / 2(n-1) of NCCL's send/recv steps, at most
constexpr double kFactorTolerance = 0.01;
constexpr double kBusbwTolerance = 0.02;  // catches 16 MB for 16 MiB (-4.6%); the times are deterministic
constexpr int kMaxRanks = 16;  // inputs 2^r x 13 stay exact in float up to 16 ranks
constexpr size_t kGuard = 16;  // elements after each buffer that must stay untouched
constexpr float kGuardValue = -12345.0f;
constexpr double kHostTimeoutS = 20, kSimTimeoutS = 60;

float pattern(size_t i) { return static_cast<float>(1 + (i * 7) % 13); }
float input_value(int r, size_t i) { return static_cast<float>(1u << r) * pattern(i); }

std::string plural(size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// "ranks 0 and 3", "rank 2", "no rank"
std::string ranks_in(uint32_t mask) {
  std::vector<int> rs;
  for (int r = 0; r < 32; ++r)
    if (mask & (1u << r)) rs.push_back(r);
  if (rs.empty()) return "no rank (it is 0)";
  std::string s = rs.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < rs.size(); ++i) {
    if (i) s += i + 1 == rs.size() ? " and " : ", ";
    s += std::to_string(rs[i]);
  }
  return s;
}

// ---- The driver: runs the student's function (or ncclAllReduce) on every rank -------------------------

struct Case {
  size_t count = 0;
  bool in_place = false;
};

// What one rank's call did, checked element by element.
struct RankCheck {
  int status = 0;                          // ncclResult_t of the call, then of the synchronisation
  std::string error;                       // ncclGetLastError when status != 0
  size_t wrong = 0;                        // elements that are not the sum
  size_t own = 0, partial = 0, other = 0;  // wrong ones: holding this rank's input only / some ranks' / no sum
  size_t untouched = 0;                    // wrong ones still holding the grader's fill (never written)
  size_t first_bad = 0;
  float got = 0, want = 0;
  int64_t first_mask = -1;  // the ranks whose inputs the first wrong element holds (-1: not such a sum)
  size_t last_bad = 0;
  bool overflow = false;      // an element after recvbuff's end changed
  bool send_changed = false;  // sendbuff changed (out of place)
  double t0 = 0, t1 = 0;      // simulated (sim) or wall (host) microseconds around the call
};

nlohmann::json to_json(const RankCheck& c) {
  return {{"status", c.status},
          {"error", c.error},
          {"wrong", c.wrong},
          {"own", c.own},
          {"partial", c.partial},
          {"other", c.other},
          {"untouched", c.untouched},
          {"first_bad", c.first_bad},
          {"got", c.got},
          {"want", c.want},
          {"first_mask", c.first_mask},
          {"last_bad", c.last_bad},
          {"overflow", c.overflow},
          {"send_changed", c.send_changed},
          {"t0", c.t0},
          {"t1", c.t1}};
}

RankCheck check_rank(int n, int r, const Case& k, const std::vector<float>& send, const std::vector<float>& recv) {
  RankCheck c;
  const uint32_t all = (1u << n) - 1;
  for (size_t i = 0; i < k.count; ++i) {
    const float want = static_cast<float>(all) * pattern(i);
    const float got = recv[i];
    if (std::memcmp(&got, &want, sizeof got) == 0) continue;
    const double m = std::round(static_cast<double>(got) / pattern(i));
    int64_t mask = -1;
    if (m >= 0 && m <= all && static_cast<float>(m) * pattern(i) == got) mask = static_cast<int64_t>(m);
    if (c.wrong == 0) {
      c.first_bad = i;
      c.got = got;
      c.want = want;
      c.first_mask = mask;
    }
    c.last_bad = i;
    ++c.wrong;
    if (got == kGuardValue) ++c.untouched;
    if (mask == static_cast<int64_t>(1u << r)) {
      ++c.own;
    } else if (mask >= 0) {
      ++c.partial;
    } else {
      ++c.other;
    }
  }
  for (size_t g = 0; g < kGuard; ++g)
    if (recv[k.count + g] != kGuardValue) c.overflow = true;
  if (!k.in_place)
    for (size_t i = 0; i < k.count; ++i)
      if (send[i] != input_value(r, i)) {
        c.send_changed = true;
        break;
      }
  return c;
}

// Runs the cases on n ranks (a thread each) with fn, or ncclAllReduce when fn is null, on the backend
// the environment selects. Stops after a case where a rank's call failed (the others may be stuck).
// Returns {"cases": [{count, in_place, ranks: [RankCheck...]}...], "backend": name} or {"internal_error"}.
nlohmann::json run_cases(RingFn fn, int n, const std::vector<Case>& cases) {
  std::vector<std::vector<RankCheck>> results(cases.size(), std::vector<RankCheck>(n));
  const RankThreads rt = run_rank_threads(
      n, cases.size(),
      [&](size_t k) { child_marker({{"ranks", n}, {"count", cases[k].count}, {"in_place", cases[k].in_place}}); },
      [&](int r, size_t k, ncclComm_t comm, cudaStream_t stream, bool sim) {
        const Case& c = cases[k];
        std::vector<float> send(c.count + kGuard), recv(c.count + kGuard, kGuardValue);
        for (size_t i = 0; i < c.count; ++i) send[i] = input_value(r, i);
        if (c.in_place) std::copy(send.begin(), send.begin() + static_cast<long>(c.count), recv.begin());
        const float* sb = c.in_place ? recv.data() : send.data();
        const double t0 = clock_us(sim);
        ncclResult_t e = fn ? fn(sb, recv.data(), c.count, comm, stream)
                            : ncclAllReduce(sb, recv.data(), c.count, ncclFloat, ncclSum, comm, stream);
        if (e == ncclSuccess) e = cclabStreamSynchronize(stream);
        const double t1 = clock_us(sim);
        RankCheck& out = results[k][r];
        out = check_rank(n, r, c, send, recv);
        out.status = e;
        out.error = e != ncclSuccess ? ncclGetLastError(comm) : "";
        out.t0 = t0;
        out.t1 = t1;
        return e;
      });
  if (!rt.internal_error.empty()) return {{"internal_error", rt.internal_error}};
  nlohmann::json j = {{"backend", rt.backend}, {"planned", cases.size()}, {"cases", nlohmann::json::array()}};
  for (size_t k = 0; k < rt.cases_run; ++k) {
    nlohmann::json ranks = nlohmann::json::array();
    for (int r = 0; r < n; ++r) ranks.push_back(to_json(results[k][r]));
    j["cases"].push_back({{"count", cases[k].count}, {"in_place", cases[k].in_place}, {"ranks", ranks}});
  }
  return j;
}

// In the child: load the student's function, run the cases.
nlohmann::json run_student(const std::string& so, int n, const std::vector<Case>& cases, bool nccl, bool sim) {
  if (sim && cclabSetBackend(cclabBackendSim) != ncclSuccess)
    return {{"internal_error", std::string("cannot select the sim backend: ") + ncclGetLastError(nullptr)}};
  RingFn fn = nullptr;
  if (!nccl) {
    std::string err;
    fn = reinterpret_cast<RingFn>(load_student_symbol(so, kSymbol, &err));
    if (!fn) return {{"load_error", err}};
  }
  return run_cases(fn, n, cases);
}

// ---- Reading a run's results --------------------------------------------------------------------------

std::string case_name(const nlohmann::json& c) {
  std::string s = "count " + std::to_string(c.value("count", size_t{0}));
  if (c.value("in_place", false)) s += ", in place (sendbuff == recvbuff)";
  return s;
}

bool rank_ok(const nlohmann::json& rc) {
  return rc.value("status", 0) == 0 && rc.value("wrong", size_t{0}) == 0 && !rc.value("overflow", false) &&
         !rc.value("send_changed", false);
}

// What went wrong on one rank, without the rank ("lab_ring_allreduce returned ...", "7 of 8 elements wrong ...").
std::string describe_rank(int r, const nlohmann::json& rc, size_t count) {
  std::ostringstream s;
  if (rc.value("status", 0) != 0) {
    const std::string e = rc.value("error", std::string());
    s << kSymbol << " returned an error: "
      << (e.empty() ? std::string(ncclGetErrorString(static_cast<ncclResult_t>(rc.value("status", 0))))
                    : short_error(e));
    return s.str();
  }
  const size_t wrong = rc.value("wrong", size_t{0});
  if (wrong > 0) {
    s << wrong << " of " << count << " elements wrong; element " << rc.value("first_bad", size_t{0}) << " is "
      << rc.value("got", 0.0f) << ", want " << rc.value("want", 0.0f);
    const int64_t mask = rc.value("first_mask", int64_t{-1});
    if (mask == static_cast<int64_t>(1u << r)) {
      s << " (this rank's own input only)";
    } else if (mask >= 0) {
      s << " (the inputs of " << ranks_in(static_cast<uint32_t>(mask)) << " only)";
    } else if (rc.value("got", 0.0f) == kGuardValue) {
      s << " (never written: what the grader filled recvbuff with)";
    } else {
      s << " (no sum of distinct ranks' inputs: one added twice, or data from another offset)";
    }
  }
  if (rc.value("overflow", false)) s << (wrong ? "; " : "") << "wrote past the end of recvbuff";
  if (rc.value("send_changed", false)) s << (wrong ? "; " : "") << "changed sendbuff";
  return s.str();
}

// The ranks that did not get it right, at most max_lines lines; ranks with the same error share a line.
std::string describe_ranks(const nlohmann::json& c, int max_lines) {
  const size_t count = c.value("count", size_t{0});
  const auto& ranks = c["ranks"];
  std::vector<std::pair<uint32_t, std::string>> lines;  // ranks (bits), what
  int bad = 0;
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (rank_ok(ranks[r])) continue;
    ++bad;
    const std::string what = describe_rank(static_cast<int>(r), ranks[r], count);
    bool merged = false;
    for (auto& l : lines)
      if (ranks[r].value("status", 0) != 0 && l.second == what) {
        l.first |= 1u << r;
        merged = true;
      }
    if (!merged) lines.push_back({1u << r, what});
  }
  std::string s;
  int shown_ranks = 0;
  for (size_t i = 0; i < lines.size() && static_cast<int>(i) < max_lines; ++i) {
    std::string who = ranks_in(lines[i].first);
    who[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(who[0])));
    s += "\n  " + who + ": " + lines[i].second;
    shown_ranks += __builtin_popcount(lines[i].first);
  }
  if (bad > shown_ranks)
    s += "\n  (" + plural(static_cast<size_t>(bad - shown_ranks), "more rank", "more ranks") + " wrong)";
  return s;
}

bool case_ok(const nlohmann::json& c) {
  for (const auto& r : c["ranks"])
    if (!rank_ok(r)) return false;
  return true;
}

const char* kHangHint =
    "your ring probably waits for a message nobody sends (a ncclRecv without its ncclSend), or a ncclSend "
    "and its ncclRecv are not in one ncclGroupStart/ncclGroupEnd: every rank must send and receive the "
    "same number of elements in the same step";

// The hint for a run whose cases did not all pass (n ranks).
std::string hint_for(const nlohmann::json& cases, int n) {
  bool error = false, wait = false, send_changed = false, overflow = false, all_own = true, any_bad = false;
  bool all_untouched = true;
  bool only_remainder = true, only_small = true, only_in_place = true, gathered_one = true, any_large = false;
  for (const auto& c : cases) {
    const size_t count = c.value("count", size_t{0});
    const bool ok = case_ok(c);
    if (ok) continue;
    any_bad = true;
    if (count % static_cast<size_t>(n) == 0) only_remainder = false;
    if (count >= static_cast<size_t>(n)) only_small = false;
    if (!c.value("in_place", false)) only_in_place = false;
    const size_t tail_start = count / static_cast<size_t>(n) * static_cast<size_t>(n);
    for (const auto& rc : c["ranks"]) {
      const std::string e = rc.value("error", std::string());
      if (rc.value("status", 0) != 0) error = true;
      if (mentions_wait(e)) wait = true;
      if (rc.value("send_changed", false)) send_changed = true;
      if (rc.value("overflow", false)) overflow = true;
      const size_t wrong = rc.value("wrong", size_t{0});
      if (wrong != count || rc.value("own", size_t{0}) != count) all_own = false;
      if (wrong > 0 && rc.value("untouched", size_t{0}) != wrong) all_untouched = false;
      if (wrong > 0 && rc.value("first_bad", size_t{0}) < tail_start) only_remainder = false;
      // Right on about one chunk, partial sums elsewhere: reduced, never gathered (counts >= n only: with
      // fewer elements than ranks a rank's chunk may be empty).
      const size_t right = count - wrong;
      if (count >= static_cast<size_t>(n)) {
        any_large = true;
        if (wrong == 0 || right == 0 || right > count / static_cast<size_t>(n) + 1 || rc.value("other", size_t{0}) > 0)
          gathered_one = false;
      }
    }
  }
  if (!any_bad) return "";
  if (wait) return kHangHint;
  if (error)
    return "a nccl call failed: the message names the call and the argument. Return its error (the TRY macro) "
           "and check the counts, the peers (0 .. n-1) and the pointers you pass";
  if (send_changed)
    return "sendbuff must stay as it was (it is const): add into recvbuff, or into your scratch buffer, never "
           "into sendbuff";
  if (overflow)
    return "you wrote past the end of recvbuff: a chunk's start + length beyond count? (a ncclRecv into "
           "recvbuff + start must receive at most count - start elements)";
  if (all_untouched)
    return "recvbuff was never written where it is wrong: every element must end up there, your own chunk "
           "included (start by copying sendbuff into recvbuff, as the skeleton does)";
  if (all_own)
    return "recvbuff holds this rank's own input: nothing was received or added (this is what the skeleton "
           "does). Write the reduce-scatter (TODO 1) and the all-gather (TODO 2)";
  if (only_remainder)
    return "only the last count % n elements are wrong, where n does not divide count: chunk_of must cover all "
           "count elements then (TODO 3)";
  if (only_small)
    return "only counts smaller than the number of ranks fail: some chunks are empty then. A step may send and "
           "receive 0 elements (ncclSend/ncclRecv with count 0 are fine); is your scratch buffer at least 1 "
           "element?";
  if (only_in_place)
    return "in place (sendbuff == recvbuff) fails: do not copy sendbuff over recvbuff then (they are the same "
           "buffer), and do not read sendbuff after you wrote recvbuff";
  if (gathered_one && any_large)
    return "each rank holds the complete sum of about one chunk and partial sums elsewhere: the reduce-scatter "
           "works, the all-gather (TODO 2) is missing or sends the wrong chunks";
  return "look at which ranks' inputs a wrong element holds (above): step s must send chunk (r - s) mod n and "
         "receive chunk (r - s - 1) mod n in the reduce-scatter, (r + 1 - s) mod n and (r - s) mod n in the "
         "all-gather. In C, (r - s) % n is negative when r < s: write (r - s + n) % n. And wait for the stream "
         "(cclabStreamSynchronize) before you add what a ncclRecv wrote: it arrives later than the call returns";
}

// The command that runs one case alone ("" for the simulator's, whose environment it also needs).
std::string repro(const LabEnv& env, const nlohmann::json& c, int n, bool sim) {
  std::string s = "\nrun it alone: ";
  if (sim) s += std::string("CCLAB_BACKEND=sim CCLAB_TOPO=") + kSimTopo + " ";
  const size_t bytes = c.value("count", size_t{0}) * sizeof(float);
  const std::string size = bytes % (1u << 20) == 0   ? std::to_string(bytes >> 20) + "M"
                           : bytes % (1u << 10) == 0 ? std::to_string(bytes >> 10) + "K"
                                                     : std::to_string(bytes);
  s += "cclab lab run 01 --ranks " + std::to_string(n) + " --size " + size;
  if (c.value("in_place", false)) s += " --in-place";
  s += where_flags(env);
  return s;
}

// A check's result from a child that ran the cases on n ranks.
void judge_run(const LabEnv& env, const ChildOutcome& o, int n, bool sim, CheckResult* c) {
  if (o.status != ChildOutcome::kOk) {
    std::string where;
    if (o.last_marker.is_object())
      where = " at " + std::to_string(o.last_marker.value("ranks", 0)) + " ranks, " + case_name(o.last_marker);
    c->detail = "your code " + describe_outcome(o) + where;
    if (o.last_marker.is_object()) c->detail += repro(env, o.last_marker, n, sim);
    if (!o.log_tail.empty()) c->detail += "\nlast output (" + shown_path(o.log_path) + "):\n" + o.log_tail;
    if (o.status == ChildOutcome::kTimedOut) {
      c->hint = kHangHint;
    } else if (o.status == ChildOutcome::kCrashed) {
      c->hint =
          "a pointer outside a buffer? A negative chunk index ((r - s) % n is negative in C when r < s: "
          "write (r - s + n) % n), a chunk past the end, a scratch buffer smaller than a chunk, or a buffer "
          "freed before cclabStreamSynchronize said the ncclRecv into it was done";
    } else {
      c->hint = "lab_ring_allreduce must return (ncclSuccess or an error), not end the process";
    }
    return;
  }
  if (judge_child_error(o, "ring_allreduce.h", c)) return;
  const nlohmann::json& j = o.result;
  const auto& cases = j["cases"];
  int bad = 0;
  std::string first;
  for (const auto& cs : cases) {
    if (case_ok(cs)) continue;
    if (bad++ == 0) first = case_name(cs) + ":" + describe_ranks(cs, 2);
  }
  if (bad == 0) {
    c->passed = true;
    return;
  }
  const size_t planned = j.value("planned", cases.size());
  c->detail = std::to_string(bad) + " of " + std::to_string(planned) + " calls wrong";
  if (cases.size() < planned) c->detail += " (the rest did not run: a call failed)";
  c->detail += "; the first, " + first;
  if (bad < static_cast<int>(cases.size())) {  // some right: which is a clue
    std::string right, wrong;
    for (const auto& cs : cases) {
      std::string& list = case_ok(cs) ? right : wrong;
      list += (list.empty() ? "" : ", ") + std::to_string(cs.value("count", size_t{0})) +
              (cs.value("in_place", false) ? " in place" : "");
    }
    c->detail += "\nwrong with count " + wrong + "; right with count " + right;
  }
  for (const auto& cs : cases)
    if (!case_ok(cs)) {
      c->detail += repro(env, cs, n, sim);
      break;
    }
  c->hint = hint_for(cases, n);
}

std::vector<Case> host_cases(int n) {
  std::vector<size_t> counts{
      1, static_cast<size_t>(n - 1), static_cast<size_t>(n), static_cast<size_t>(2 * n + 1), 1000, 12345, 262147};
  std::vector<Case> cases;
  for (size_t c : counts) {
    if (c == 0) continue;
    bool dup = false;
    for (const auto& k : cases) dup |= k.count == c;
    if (!dup) cases.push_back({c, false});
  }
  cases.push_back({1000, true});
  return cases;
}

// cclab's own all_reduce on the lab's model (`cclab sim`): the time of the size kSimBytes.
bool reference_time(const std::string& algo, const std::string& proto, int max_channels, sim::SimSizeResult* out,
                    std::string* error) {
  sim::SimConfig cfg;
  cfg.topo = kSimTopo;
  cfg.coll = CollKind::kAllReduce;
  cfg.min_bytes = cfg.max_bytes = kSimBytes;
  cfg.algo = algo;
  cfg.proto = proto;
  cfg.max_channels = max_channels;
  return simulate_one(cfg, out, error);
}

// One step of NCCL's own point-to-point on the lab's model: every rank sends `bytes` to the next and
// receives as many from the previous, one group (`cclab sim sendrecv --topo dgx-h100 -b B -e B`, nccl-
// tests' sendrecv). Its nchannels is the channels NCCL splits each send into.
bool sendrecv_time(size_t bytes, sim::SimSizeResult* out, std::string* error) {
  sim::SimConfig cfg;
  cfg.topo = kSimTopo;
  cfg.coll = CollKind::kSendRecv;
  cfg.p2p = P2pPattern::kSendRecv;
  cfg.min_bytes = cfg.max_bytes = bytes;
  return simulate_one(cfg, out, error);
}

// ---- The checks ---------------------------------------------------------------------------------------

std::vector<CheckResult> check_lab01(const LabEnv& env, const std::function<void(const CheckResult&)>& done) {
  std::vector<CheckResult> out;
  auto add = [&](CheckResult c) {
    out.push_back(c);
    done(out.back());
  };
  const std::string so = env.work_dir + "/ring_allreduce.so";
  CheckResult compiled = compile_student(env, {kSource}, so);
  const bool built = compiled.passed;
  add(compiled);

  const std::vector<int> host_ranks{2, 3, 4, 5, 8};
  int hung_at = 0;  // after a hang, the other rank counts would only wait as long again
  for (int n : host_ranks) {
    CheckResult c;
    c.name = "host backend, " + std::to_string(n) + " ranks, " + std::to_string(host_cases(n).size()) + " calls";
    if (!built || hung_at > 0) {
      c.skipped = true;
      c.detail = !built ? "skipped: your code did not compile"
                        : "skipped: your code hung with " + std::to_string(hung_at) + " ranks (above); fix that first";
      add(c);
      continue;
    }
    const double t = check_limit(env, kHostTimeoutS);
    const std::vector<Case> cases = host_cases(n);
    const ChildOutcome o =
        run_in_child([&] { return run_student(so, n, cases, false, false); }, t,
                     env.work_dir + "/host-" + std::to_string(n) + ".log", host_child_env(t), kGraderEnvPrefixes);
    c.seconds = o.seconds;
    judge_run(env, o, n, false, &c);
    if (hung(o)) hung_at = n;
    add(c);
  }

  // The simulator: 8 ranks on a DGX H100, 16 MiB; the trace is kept for `cclab lab viz 01`.
  const std::string trace = env.work_dir + "/" + kTrace;
  std::error_code ec;
  fs::remove(trace, ec);
  const std::string sim_label = std::to_string(kSimRanks) + " ranks, " + kSimTopo + ", 16 MiB";
  CheckResult exact;
  exact.name = "simulator: " + sim_label + ", exact";
  double ring_us = 0;
  if (!built) {
    exact.skipped = true;
    exact.detail = "skipped: your code did not compile";
  } else {
    const std::vector<Case> cases{{kSimBytes / sizeof(float), false}};
    const ChildOutcome o =
        run_in_child([&] { return run_student(so, kSimRanks, cases, false, true); }, check_limit(env, kSimTimeoutS),
                     env.work_dir + "/sim.log",
                     {{"CCLAB_BACKEND", "sim"}, {"CCLAB_TOPO", kSimTopo}, {"CCLAB_TRACE", trace}}, kGraderEnvPrefixes);
    exact.seconds = o.seconds;
    judge_run(env, o, kSimRanks, true, &exact);
    if (exact.passed) {
      ring_us = run_time_us(o.result);
      exact.detail = "your ring took " + format_double(ring_us, 1) +
                     " us of simulated time (its trace: " + shown_path(trace) + ")";
    }
  }
  add(exact);

  // Its time against what its 2(n-1) steps cost on NCCL's own point-to-point: a hand ring can match it,
  // and only matches it when it takes those steps and nothing more.
  CheckResult speed;
  speed.name = "simulator: time at most " + format_double(kSimBound, 1) + "x NCCL's send/recv steps";
  const auto t0 = std::chrono::steady_clock::now();
  const int steps = 2 * (kSimRanks - 1);
  const size_t step_bytes = kSimBytes / kSimRanks;
  sim::SimSizeResult step{}, ring_k{};
  std::string sim_error;
  const bool have_ref = sendrecv_time(step_bytes, &step, &sim_error) &&
                        reference_time("ring", "simple", step.nchannels, &ring_k, &sim_error);
  speed.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!have_ref) {
    speed.detail = "cclab sim failed: " + sim_error;
    speed.hint = "this is not your code's fault: check the cclab build";
  } else if (ring_us <= 0) {
    speed.skipped = true;
    speed.detail = "skipped: needs your ring to be exact in the simulator (the check above)";
  } else {
    const double ref_us = steps * step.time_us;
    const double ratio = ring_us / ref_us;
    const std::string nch = std::to_string(step.nchannels) + (step.nchannels == 1 ? " channel" : " channels");
    speed.detail = "your ring " + format_double(ring_us, 1) + " us; " + std::to_string(steps) +
                   " steps of NCCL's send/recv of " + std::to_string(step_bytes >> 20) + " MiB (cclab sim sendrecv " +
                   "--topo " + kSimTopo + " -b " + std::to_string(step_bytes >> 20) + "M -e " +
                   std::to_string(step_bytes >> 20) + "M: " + format_double(step.time_us, 2) + " us each, on " + nch +
                   ") " + format_double(ref_us, 1) + " us: " + format_double(ratio, 2) + "x (at most " +
                   format_double(kSimBound, 1) + "x). cclab's ring all_reduce on those " + nch + " (Simple, one " +
                   "pipelined kernel): " + format_double(ring_k.time_us, 1) + " us";
    speed.passed = ratio <= kSimBound;
    if (!speed.passed)
      speed.hint =
          "each rank should send about 2(n-1)/n x the buffer in 2(n-1) steps of count/n elements. Do you "
          "send whole buffers, more steps, or a step in several groups? Do ranks wait for each other outside a "
          "step (an extra synchronisation, a send/recv not in the same group)?";
  }
  add(speed);

  // The answers.
  const std::string answers_path = env.student_dir + "/" + kAnswers;
  const Answers answers = read_answers(answers_path);
  auto answer_check = [&](const std::string& key, const std::string& what, double want, double tolerance,
                          bool have_want, const std::string& skip_reason, const std::string& hint, double seconds = 0) {
    CheckResult c;
    c.seconds = seconds;
    c.name = "answer " + key;
    double v = 0;
    std::string why;
    if (!have_want) {
      c.skipped = true;
      c.detail = "skipped: " + skip_reason;
    } else if (!answer_number(answers, key, &v, &why)) {
      c.detail = what + ": " + why + (answers.found ? "" : " (" + shown_path(answers_path) + ")");
      for (const auto& p : answers.problems) c.detail += "\n" + shown_path(answers_path) + ": " + p;
      c.hint = "write the line `" + key + " = YOUR NUMBER` in " + shown_path(answers_path) +
               " (the lab's README.md, \"Questions\")";
    } else if (std::fabs(v - want) <= tolerance * std::fabs(want)) {
      c.passed = true;
      c.detail = what + ": " + answers.values.at(key) + " is right" +
                 (tolerance > 0 ? " (within " + format_double(tolerance * 100, 0) + "%)" : "");
    } else {
      c.detail =
          what + ": " + answers.values.at(key) +
          (tolerance > 0 ? " is not within " + format_double(tolerance * 100, 0) + "% of the value the grader computed"
                         : " is not right");
      c.hint = hint;
    }
    add(c);
  };
  const int n = kSimRanks;
  answer_check("steps", "steps per rank, 8 ranks", 2.0 * (n - 1), 0, true, "",
               "count the ncclGroupStart/ncclGroupEnd steps of one rank: the reduce-scatter's and the all-gather's");
  answer_check("busbw_factor", "busbw / algbw, all_reduce on 8 ranks", 2.0 * (n - 1) / n, kFactorTolerance, true, "",
               "each rank sends (n-1)/n of the buffer in the reduce-scatter and as much again in the all-gather");
  const double bytes = static_cast<double>(kSimBytes);
  const double ring_busbw = ring_us > 0 ? bytes / ring_us / 1e3 * 2.0 * (n - 1) / n : 0;
  answer_check("ring_busbw", "GB/s, your ring in the simulator", ring_busbw, kBusbwTolerance, ring_us > 0,
               "needs your ring to be exact in the simulator",
               "algbw = bytes / time (16 MiB = 16777216 bytes; 1 GB/s = 1000 bytes per us), busbw = algbw x "
               "busbw_factor. The time: CCLAB_BACKEND=sim CCLAB_TOPO=dgx-h100 cclab lab run 01 --ranks 8 --size 16M");
  // ncclAllReduce in the same driver and simulator (what `cclab lab run 01 --nccl` prints), run only when
  // there is an answer to compare (it takes a few seconds and about 1 GiB).
  double nccl_us = 0, nccl_seconds = 0;
  std::string nccl_error = "ncclAllReduce did not run in the simulator";
  double unused = 0;
  std::string why;
  if (answer_number(answers, "nccl_busbw", &unused, &why)) {
    const std::vector<Case> cases{{kSimBytes / sizeof(float), false}};
    const ChildOutcome o = run_in_child([&] { return run_student(so, kSimRanks, cases, true, true); },
                                        check_limit(env, kSimTimeoutS), env.work_dir + "/sim-nccl.log",
                                        {{"CCLAB_BACKEND", "sim"}, {"CCLAB_TOPO", kSimTopo}}, kGraderEnvPrefixes);
    CheckResult r;
    judge_run(env, o, kSimRanks, true, &r);
    nccl_seconds = o.seconds;
    if (r.passed) {
      nccl_us = run_time_us(o.result);
    } else {
      nccl_error = "ncclAllReduce failed in the simulator: " + r.detail;
    }
  }
  const double nccl_busbw = nccl_us > 0 ? bytes / nccl_us / 1e3 * 2.0 * (n - 1) / n : 0;
  answer_check("nccl_busbw", "GB/s, ncclAllReduce in the simulator, same ranks and size", nccl_busbw, kBusbwTolerance,
               nccl_us > 0 || !answer_number(answers, "nccl_busbw", &unused, &why), nccl_error,
               "run ncclAllReduce in your place, then as for ring_busbw: CCLAB_BACKEND=sim CCLAB_TOPO=dgx-h100 "
               "cclab lab run 01 --ranks 8 --size 16M --nccl",
               nccl_seconds);
  return out;
}

// ---- `cclab lab run 01` -------------------------------------------------------------------------------

const char* kRunUsage =
    "usage: cclab lab run 01 [--ranks N] [--size BYTES] [--in-place] [--nccl] [--dir DIR] [--timeout S]\n"
    "\n"
    "Builds your ring_allreduce.c and runs lab_ring_allreduce once on N ranks (a thread each, default 4)\n"
    "over BYTES of floats (default 4000: 1000 floats; K, M, G suffixes), then checks every element.\n"
    "It runs on the backend of your environment: the host backend, or the simulator with\n"
    "  CCLAB_BACKEND=sim CCLAB_TOPO=dgx-h100 cclab lab run 01 --ranks 8 --size 16M\n"
    "which prints the simulated time. --nccl runs cclab's ncclAllReduce instead of your function;\n"
    "--in-place passes recvbuff as sendbuff. Your printf output shows as it runs.\n";

int run_lab01(const LabEnv& env, const std::vector<std::string>& args) {
  int n = 4;
  size_t bytes = 4000;
  bool in_place = false, nccl = false;
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
      } else if (a == "--in-place") {
        in_place = true;
      } else if (a == "--nccl") {
        nccl = true;
      } else {
        throw std::invalid_argument(a == "--ranks" || a == "--size" ? a + " needs a value" : "unknown flag " + a);
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "cclab lab run 01: %s\n%s", e.what(), kRunUsage);
      return kLabExitUsage;
    }
  }
  const std::string so = env.work_dir + "/ring_allreduce.so";
  if (!nccl) {
    const CheckResult c = compile_student(env, {kSource}, so);
    if (!c.passed || !c.detail.empty()) std::fprintf(c.passed ? stdout : stderr, "%s\n", c.detail.c_str());
    if (!c.passed) {
      std::fprintf(stderr, "cclab lab run 01: %s did not compile\n", (env.student_dir + "/" + kSource).c_str());
      return kLabExitFailed;
    }
  }
  const size_t count = bytes / sizeof(float);
  const char* backend = std::getenv("CCLAB_BACKEND");
  const bool sim = backend && std::string(backend) == "sim";
  std::printf("%s on %d ranks (a thread each), %zu floats (%zu bytes)%s, %s backend\n",
              nccl ? "ncclAllReduce" : "your lab_ring_allreduce", n, count, bytes, in_place ? ", in place" : "",
              backend && *backend ? backend : "host");
  std::printf("inputs: rank r's element i is 2^r x (1 + 7i mod 13), so every element's sum is %u x (1 + 7i mod 13)\n",
              (1u << n) - 1);
  std::fflush(stdout);
  const double t = env.timeout_s > 0 ? env.timeout_s : kSimTimeoutS;
  std::map<std::string, std::string> vars;
  if (!std::getenv("CCLAB_TIMEOUT")) vars["CCLAB_TIMEOUT"] = child_wait_timeout(t);
  const std::vector<Case> cases{{count, in_place}};
  const ChildOutcome o = run_in_child([&] { return run_student(so, n, cases, nccl, false); }, t, "", vars);
  if (!print_run_failure(o, kHangHint)) return kLabExitFailed;
  const nlohmann::json& j = o.result;
  const auto& c = j["cases"][0];
  int wrong_ranks = 0;
  for (size_t r = 0; r < c["ranks"].size(); ++r) {
    const auto& rc = c["ranks"][r];
    const bool ok = rank_ok(rc);
    if (!ok) ++wrong_ranks;
    std::printf("  rank %zu: %s\n", r,
                ok ? ("all " + std::to_string(count) + " elements right").c_str()
                   : describe_rank(static_cast<int>(r), rc, count).c_str());
  }
  const double us = run_time_us(j);
  print_run_time(us, sim || j.value("backend", std::string()) == "sim");
  if (wrong_ranks > 0) std::printf("hint: %s\n", hint_for(j["cases"], n).c_str());
  return wrong_ranks == 0 ? kLabExitOk : kLabExitFailed;
}

}  // namespace

Lab make_lab01() {
  Lab l;
  l.number = "01";
  l.folder = "01-ring-allreduce";
  l.title = "Ring all_reduce by hand";
  l.written = true;
  l.student_files = {kSource, kAnswers};
  l.trace_file = kTrace;
  l.check = check_lab01;
  l.run = run_lab01;
  return l;
}

}  // namespace cclab::lab
