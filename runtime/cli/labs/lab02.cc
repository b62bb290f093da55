// runtime/cli/labs/lab02.cc - lab 2, "Pipelining and chunks" (labs/02-pipelining/README.md): the checks
// of `cclab lab check 02` and the driver of `cclab lab run 02`.
//
// The student's pipelined_broadcast.c defines lab_pipelined_broadcast (labs/02-pipelining/
// pipelined_broadcast.h): a broadcast around the ring, cut into pieces of chunk_elems elements. Every check
// runs it with a thread per rank (ncclCommInitRank), its own stream, in a forked child:
//   - host backend, 2, 3, 4, 5 and 8 ranks: counts 1, n-1, n, 2n+1, 1000, 12345, 262147 with chunks that
//     divide them and chunks that do not, chunks larger than the buffer, roots 0, n-1 and between, two
//     calls in place: every element byte-exact, sendbuff untouched, nothing written past recvbuff's end;
//   - simulator (CCLAB_BACKEND=sim), 8 ranks on dgx-h100, 1 MiB in pieces of 128 KiB: exact (this run's
//     trace is what `cclab lab viz 02` shows);
//   - a sweep of chunk sizes, 1 MiB down to 16 KiB (x1/2), on 8 GPUs (dgx-h100) and on 64 (dgx-h100:8),
//     each call checked and timed, a barrier (cclab's all_reduce of one float) between calls: the best
//     time against cclab's own ring broadcast (Simple) on as many channels as NCCL 2.28.9 splits a send
//     of the whole buffer into on that machine (p2p parts: 4 on 8 GPUs, 1 on 64; `cclab sim sendrecv
//     ... -b 1M`'s nch), both of which sim::simulate computes here (`cclab sim broadcast ... --algo ring
//     --proto simple --max-channels K`);
//   - the answers in answers.txt, recomputed from these runs of the student's code: the slot's fixed cost
//     alpha (a broadcast of one float: n-1 slots), its bandwidth beta (one piece of 1 MiB), the sweet
//     spots (the grader also times the student's code at the chunk they answered), and the sweet spot the
//     alpha-beta model predicts for 64 GPUs. Nothing is stored here.
// Inputs are integer-valued floats, rank r's element i = 65536 r + 1 + (i mod 65521): exact in float up
// to 256 ranks, and a wrong element tells whose sendbuff and which offset it came from, which the hints
// use.
//
// Why a broadcast and not lab 1's all_reduce: with ncclSend/ncclRecv and a synchronisation per group, a
// ring all_reduce keeps every link busy at every step already, so cutting its steps into pieces only adds
// groups (16 MiB on 8 simulated H100s: 503 us as in lab 1, 755 us in 512 KiB pieces). A broadcast
// moves the whole buffer over n-1 hops one after the other; there pipelining pays (README, Background).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <thread>
#include <vector>

#include "base/thread_barrier.h"
#include "cclab/cclab.h"
#include "lab_cmd.h"
#include "nccl.h"
#include "perf_options.h"
#include "sim/sim.h"

namespace cclab::lab {
namespace {
namespace fs = std::filesystem;

using BcastFn = ncclResult_t (*)(const float*, float*, size_t, size_t, int, ncclComm_t, cudaStream_t);

constexpr const char* kSource = "pipelined_broadcast.c";
constexpr const char* kSymbol = "lab_pipelined_broadcast";
constexpr const char* kTrace = "pipeline.cctrace";
constexpr const char* kAnswers = "answers.txt";
constexpr const char* kTopo = "dgx-h100";
constexpr int kGpusPerMachine = 8;
constexpr int kMachines64 = 8;  // dgx-h100:8, 64 GPUs
constexpr size_t kSimBytes = 1u << 20;
constexpr size_t kExactChunkBytes = 128u << 10;  // the traced run's pieces
constexpr size_t kMinChunkBytes = 16u << 10;     // the sweep's smallest piece
constexpr double kBound8 = 1.25;                 // best time / cclab's ring broadcast on K channels, 8 GPUs, at most
constexpr double kBound64 = 1.0;                 // the same on 64 GPUs
constexpr int kSlotPieces = 16;                  // Q1: slots of 16 pieces on 8 ranks
constexpr double kRateTolerance = 0.10;          // alpha, beta
constexpr double kSweetTolerance = 0.10;         // the time at a sweet spot answer, over the sweep's best
constexpr double kModelTolerance = 0.15;         // the model's sweet spot
constexpr int kMaxRanks = 64;
constexpr uint32_t kRankStride = 65536, kPeriod = 65521;
constexpr size_t kGuard = 16;  // elements after each buffer that must stay untouched
constexpr float kGuardValue = -12345.0f;
constexpr double kHostTimeoutS = 20, kSimTimeoutS = 60;

float input_value(int r, size_t i) {
  return static_cast<float>(static_cast<uint32_t>(r) * kRankStride + 1 + i % kPeriod);
}

std::string size_text(size_t bytes) {
  if (bytes >= (1u << 20) && bytes % (1u << 20) == 0) return std::to_string(bytes >> 20) + "M";
  if (bytes >= (1u << 10) && bytes % (1u << 10) == 0) return std::to_string(bytes >> 10) + "K";
  return std::to_string(bytes);
}

// ---- The driver: runs the student's function (or ncclBroadcast) on every rank -------------------------

struct Case {
  size_t count = 0;
  size_t chunk = 0;  // elements per piece
  int root = 0;
  bool in_place = false;
};

nlohmann::json case_json(const Case& c) {
  return {{"count", c.count}, {"chunk", c.chunk}, {"root", c.root}, {"in_place", c.in_place}};
}

// What one rank's call did, checked element by element.
struct RankCheck {
  int status = 0;  // ncclResult_t of the call, then of the synchronisation
  std::string error;
  size_t wrong = 0;
  size_t untouched = 0;  // wrong ones still holding the grader's fill (never written)
  size_t other = 0;      // wrong ones holding another rank's sendbuff (not the root's)
  size_t shifted = 0;    // wrong ones holding the root's data from another offset
  size_t first_bad = 0, last_bad = 0;
  float got = 0, want = 0;
  std::string first_kind;  // "untouched", "other", "shifted", "garbage"
  int first_from = -1;     // other: whose sendbuff; shifted: -1
  bool overflow = false, send_changed = false;
  double t0 = 0, t1 = 0;
};

nlohmann::json to_json(const RankCheck& c) {
  return {{"status", c.status},
          {"error", c.error},
          {"wrong", c.wrong},
          {"untouched", c.untouched},
          {"other", c.other},
          {"shifted", c.shifted},
          {"first_bad", c.first_bad},
          {"last_bad", c.last_bad},
          {"got", c.got},
          {"want", c.want},
          {"first_kind", c.first_kind},
          {"first_from", c.first_from},
          {"overflow", c.overflow},
          {"send_changed", c.send_changed},
          {"t0", c.t0},
          {"t1", c.t1}};
}

RankCheck check_rank(int r, const Case& k, const std::vector<float>& send, const std::vector<float>& recv) {
  RankCheck c;
  for (size_t i = 0; i < k.count; ++i) {
    const float want = input_value(k.root, i), got = recv[i];
    if (std::memcmp(&got, &want, sizeof got) == 0) continue;
    std::string kind = "garbage";
    int from = -1;
    if (got == kGuardValue) {
      kind = "untouched";
      ++c.untouched;
    } else if (got >= 1 && got < 16777216.0f && got == std::floor(got)) {
      const uint32_t v = static_cast<uint32_t>(got) - 1;
      if (v % kRankStride < kPeriod) {
        from = static_cast<int>(v / kRankStride);
        if (from == k.root) {
          kind = "shifted";
          ++c.shifted;
        } else {
          kind = "other";
          ++c.other;
        }
      }
    }
    if (c.wrong == 0) {
      c.first_bad = i;
      c.got = got;
      c.want = want;
      c.first_kind = kind;
      c.first_from = kind == "other" ? from : -1;
    }
    c.last_bad = i;
    ++c.wrong;
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

// Runs the cases on n ranks (a thread each) with fn, or ncclBroadcast when fn is null, on the backend the
// environment selects. Between two calls the ranks meet (a thread barrier on the host; cclab's all_reduce
// of one float in the simulator, so that the calls' simulated times do not overlap). Stops after a case
// where a rank's call failed. Returns {"cases": [{count, chunk, root, in_place, ranks: [...]}...],
// "backend", "planned"} or {"internal_error"}.
nlohmann::json run_cases(BcastFn fn, int n, const std::vector<Case>& cases) {
  cclabBackend_t backend = cclabBackendHost;
  cclabGetBackend(&backend);
  const bool sim = backend == cclabBackendSim;
  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess)
    return {{"internal_error", std::string("ncclGetUniqueId: ") + ncclGetLastError(nullptr)}};
  std::vector<std::vector<RankCheck>> results(cases.size(), std::vector<RankCheck>(n));
  std::vector<std::string> init_errors(n);
  std::atomic<bool> stop{false};
  std::atomic<size_t> cases_run{0};
  ThreadBarrier barrier(n);  // host backend only: under the simulator a thread must not wait outside cclab
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      ncclComm_t comm = nullptr;
      cudaStream_t stream = nullptr;
      if (ncclCommInitRank(&comm, n, id, r) != ncclSuccess || cclabStreamCreate(&stream) != ncclSuccess) {
        init_errors[r] = ncclGetLastError(comm);
        stop = true;
      }
      float one = 1;
      for (size_t k = 0; k < cases.size(); ++k) {
        // Where we are, before any rank can start the case (a crash takes the whole process).
        if (r == 0) child_marker(nlohmann::json{{"ranks", n}, {"case", case_json(cases[k])}});
        if (!sim) {
          barrier.wait();
        } else if (k > 0 && !stop) {
          if (ncclAllReduce(&one, &one, 1, ncclFloat, ncclSum, comm, stream) != ncclSuccess ||
              cclabStreamSynchronize(stream) != ncclSuccess)
            stop = true;
        }
        if (stop) break;
        const Case& c = cases[k];
        if (r == 0) cases_run = k + 1;
        std::vector<float> send(c.count + kGuard), recv(c.count + kGuard, kGuardValue);
        for (size_t i = 0; i < c.count; ++i) send[i] = input_value(r, i);
        if (c.in_place) std::copy(send.begin(), send.begin() + static_cast<long>(c.count), recv.begin());
        const float* sb = c.in_place ? recv.data() : send.data();
        RankCheck& out = results[k][r];
        double t0 = 0, t1 = 0;
        if (sim)
          cclabSimTime(&t0);
        else
          t0 = wall_us();
        ncclResult_t e = fn ? fn(sb, recv.data(), c.count, c.chunk, c.root, comm, stream)
                            : ncclBroadcast(sb, recv.data(), c.count, ncclFloat, c.root, comm, stream);
        if (e == ncclSuccess) e = cclabStreamSynchronize(stream);
        if (sim)
          cclabSimTime(&t1);
        else
          t1 = wall_us();
        const std::string err = e != ncclSuccess ? ncclGetLastError(comm) : "";
        out = check_rank(r, c, send, recv);
        out.status = e;
        out.error = err;
        out.t0 = t0;
        out.t1 = t1;
        if (e != ncclSuccess) stop = true;
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
    if (!init_errors[r].empty())
      return {{"internal_error", "rank " + std::to_string(r) + " could not start: " + init_errors[r]}};
  nlohmann::json j = {
      {"backend", cclabBackendName(backend)}, {"planned", cases.size()}, {"cases", nlohmann::json::array()}};
  for (size_t k = 0; k < cases_run; ++k) {
    nlohmann::json ranks = nlohmann::json::array();
    for (int r = 0; r < n; ++r) ranks.push_back(to_json(results[k][r]));
    nlohmann::json c = case_json(cases[k]);
    c["ranks"] = ranks;
    j["cases"].push_back(c);
  }
  return j;
}

// In the child: load the student's function, run the cases.
nlohmann::json run_student(const std::string& so, int n, const std::vector<Case>& cases, bool nccl, bool sim) {
  if (sim && cclabSetBackend(cclabBackendSim) != ncclSuccess)
    return {{"internal_error", std::string("cannot select the sim backend: ") + ncclGetLastError(nullptr)}};
  BcastFn fn = nullptr;
  if (!nccl) {
    std::string err;
    fn = reinterpret_cast<BcastFn>(load_student_symbol(so, kSymbol, &err));
    if (!fn) return {{"load_error", err}};
  }
  return run_cases(fn, n, cases);
}

// ---- Reading a run's results --------------------------------------------------------------------------

Case case_of(const nlohmann::json& c) {
  Case k;
  k.count = c.value("count", size_t{0});
  k.chunk = c.value("chunk", size_t{0});
  k.root = c.value("root", 0);
  k.in_place = c.value("in_place", false);
  return k;
}

std::string case_name(const nlohmann::json& j) {
  const Case c = case_of(j);
  std::string s = "count " + std::to_string(c.count) + ", chunk_elems " + std::to_string(c.chunk) + ", root " +
                  std::to_string(c.root);
  if (c.in_place) s += ", in place";
  return s;
}

bool rank_ok(const nlohmann::json& rc) {
  return rc.value("status", 0) == 0 && rc.value("wrong", size_t{0}) == 0 && !rc.value("overflow", false) &&
         !rc.value("send_changed", false);
}

bool case_ok(const nlohmann::json& c) {
  for (const auto& r : c["ranks"])
    if (!rank_ok(r)) return false;
  return true;
}

// What went wrong on one rank ("7 of 8 elements wrong; element 3 is ...").
std::string describe_rank(const nlohmann::json& rc, size_t count) {
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
      << static_cast<double>(rc.value("got", 0.0f)) << ", want " << static_cast<double>(rc.value("want", 0.0f));
    const std::string kind = rc.value("first_kind", std::string());
    if (kind == "untouched") {
      s << " (never written: what the grader filled recvbuff with)";
    } else if (kind == "other") {
      s << " (rank " << rc.value("first_from", -1) << "'s sendbuff, not the root's)";
    } else if (kind == "shifted") {
      s << " (the root's data, but from another offset)";
    } else {
      s << " (no rank's input)";
    }
  }
  if (rc.value("overflow", false)) s << (wrong ? "; " : "") << "wrote past the end of recvbuff";
  if (rc.value("send_changed", false)) s << (wrong ? "; " : "") << "changed sendbuff";
  return s.str();
}

// The ranks that did not get it right, at most max_lines of them.
std::string describe_ranks(const nlohmann::json& c, int max_lines) {
  const size_t count = c.value("count", size_t{0});
  const auto& ranks = c["ranks"];
  std::string s;
  int bad = 0, shown = 0;
  for (size_t r = 0; r < ranks.size(); ++r) {
    if (rank_ok(ranks[r])) continue;
    ++bad;
    if (shown >= max_lines) continue;
    ++shown;
    s += "\n  Rank " + std::to_string(r) + (static_cast<int>(r) == c.value("root", 0) ? " (the root)" : "") + ": " +
         describe_rank(ranks[r], count);
  }
  if (bad > shown)
    s += "\n  (" + std::to_string(bad - shown) + " more rank" + (bad - shown == 1 ? "" : "s") + " wrong)";
  return s;
}

const char* kHangHint =
    "your broadcast waits for a message nobody sends: a ncclRecv without its ncclSend, or with another "
    "count. In every slot, what a rank sends (piece t - d, where d is its distance from the root) must be "
    "what the next rank receives in that slot (piece t - (d+1) + 1: the same piece, the same length)";

// The hint for a run whose cases did not all pass.
std::string hint_for(const nlohmann::json& cases) {
  bool any_bad = false, wait = false, error = false, send_changed = false, overflow = false;
  bool root_bad = false, other = false, shifted = false, only_in_place = true, only_tail = true;
  bool far_untouched = false;
  for (const auto& c : cases) {
    if (case_ok(c)) continue;
    any_bad = true;
    const Case k = case_of(c);
    if (!k.in_place) only_in_place = false;
    const size_t chunk = k.chunk == 0 ? k.count : std::min(k.chunk, k.count);
    const size_t tail = chunk > 0 && k.count % chunk != 0 ? k.count / chunk * chunk : k.count;
    const int n = static_cast<int>(c["ranks"].size());
    for (int r = 0; r < n; ++r) {
      const auto& rc = c["ranks"][static_cast<size_t>(r)];
      if (rank_ok(rc)) continue;
      if (rc.value("status", 0) != 0) error = true;
      if (mentions_wait(rc.value("error", std::string()))) wait = true;
      if (rc.value("send_changed", false)) send_changed = true;
      if (rc.value("overflow", false)) overflow = true;
      const size_t wrong = rc.value("wrong", size_t{0});
      if (wrong == 0) continue;
      if (r == k.root) root_bad = true;
      if (rc.value("other", size_t{0}) > 0) other = true;
      if (rc.value("shifted", size_t{0}) > 0) shifted = true;
      if (rc.value("first_bad", size_t{0}) < tail) only_tail = false;
      if ((r - k.root + n) % n >= 2 && rc.value("untouched", size_t{0}) == k.count) far_untouched = true;
    }
  }
  if (!any_bad) return "";
  if (wait) return kHangHint;
  if (error)
    return "a nccl call failed: the message names the call and the argument. Return its error (the TRY macro) "
           "and check the counts, the peers (0 .. n-1) and the pointers you pass";
  if (send_changed)
    return "sendbuff must stay as it was (it is const): the ranks receive into recvbuff and send on from there";
  if (overflow)
    return "you wrote past the end of recvbuff: a piece beyond count? The last piece is shorter when chunk_elems "
           "does not divide count (TODO 1)";
  if (only_in_place)
    return "in place (sendbuff == recvbuff) fails: the root must not copy sendbuff over recvbuff then (they are "
           "the same buffer)";
  if (root_bad)
    return "the root's recvbuff must hold the data too: copy its sendbuff into it (unless they are the same "
           "buffer), as the skeleton does";
  if (only_tail)
    return "only the last elements are wrong, where chunk_elems does not divide count: the last, shorter piece "
           "must be sent too (pieces_of and piece_of, TODO 1)";
  if (other)
    return "a rank's recvbuff holds another rank's sendbuff: only the root's sendbuff is data; every other rank "
           "sends on what it received, from its recvbuff";
  if (shifted)
    return "the root's data landed at the wrong offset: piece k starts at element k x chunk_elems, and a slot's "
           "send and receive are different pieces (t - d and t - d + 1)";
  if (far_untouched)
    return "ranks two or more hops from the root got nothing: every rank but the last must send on each piece "
           "it received, and the slots must run until the last piece reached the last rank (n - 2 + P slots)";
  return "look at which elements are wrong and on which ranks (above): piece k covers elements k x chunk_elems "
         "up to the next piece's start; in slot t the rank at distance d from the root sends piece t - d and "
         "receives piece t - d + 1. Wait for the stream (cclabStreamSynchronize) before you send on what a "
         "ncclRecv wrote";
}

// The command that runs one case alone.
std::string repro(const LabEnv& env, const nlohmann::json& c, int n, const std::string& topo) {
  const Case k = case_of(c);
  std::string s = "\nrun it alone: ";
  if (!topo.empty()) s += "CCLAB_BACKEND=sim CCLAB_TOPO=" + topo + " ";
  s += "cclab lab run 02 --ranks " + std::to_string(n) + " --size " + size_text(k.count * sizeof(float)) + " --chunk " +
       size_text(k.chunk * sizeof(float)) + " --root " + std::to_string(k.root);
  if (k.in_place) s += " --in-place";
  s += where_flags(env);
  return s;
}

// A check's result from a child that ran the cases on n ranks (topo: "" on the host backend).
void judge_run(const LabEnv& env, const ChildOutcome& o, int n, const std::string& topo, CheckResult* c) {
  if (o.status != ChildOutcome::kOk) {
    std::string where;
    const bool marked = o.last_marker.is_object() && o.last_marker.contains("case");
    if (marked) where = " at " + std::to_string(n) + " ranks, " + case_name(o.last_marker["case"]);
    c->detail = "your code " + describe_outcome(o) + where;
    if (marked) c->detail += repro(env, o.last_marker["case"], n, topo);
    if (!o.log_tail.empty()) c->detail += "\nlast output (" + shown_path(o.log_path) + "):\n" + o.log_tail;
    if (o.status == ChildOutcome::kTimedOut) {
      c->hint = kHangHint;
    } else if (o.status == ChildOutcome::kCrashed) {
      c->hint =
          "a pointer outside a buffer? A piece past the end of the buffer (the last one is shorter), a negative "
          "piece number (t - d < 0 in a size_t), or a send from a rank's sendbuff when it is not the root";
    } else {
      c->hint = "lab_pipelined_broadcast must return (ncclSuccess or an error), not end the process";
    }
    return;
  }
  if (judge_child_error(o, "pipelined_broadcast.h", c)) return;
  const nlohmann::json& j = o.result;
  const auto& cases = j["cases"];
  int bad = 0;
  std::string first;
  const nlohmann::json* first_case = nullptr;
  for (const auto& cs : cases) {
    if (case_ok(cs)) continue;
    if (bad++ == 0) {
      first = case_name(cs) + ":" + describe_ranks(cs, 2);
      first_case = &cs;
    }
  }
  if (bad == 0) {
    c->passed = true;
    return;
  }
  const size_t planned = j.value("planned", cases.size());
  c->detail = std::to_string(bad) + " of " + std::to_string(planned) + " calls wrong";
  if (cases.size() < planned) c->detail += " (the rest did not run: a call failed)";
  c->detail += "; the first, " + first;
  if (first_case) c->detail += repro(env, *first_case, n, topo);
  c->hint = hint_for(cases);
}

// Simulated (or wall) time of case k: the last rank's end - the first rank's begin.
double case_time_us(const nlohmann::json& result, size_t k) {
  if (!result.contains("cases") || result["cases"].size() <= k) return 0;
  double t0 = 1e300, t1 = 0;
  for (const auto& r : result["cases"][k]["ranks"]) {
    t0 = std::min(t0, r.value("t0", 0.0));
    t1 = std::max(t1, r.value("t1", 0.0));
  }
  return t1 > t0 ? t1 - t0 : 0;
}

std::vector<Case> host_cases(int n) {
  const int mid = n / 2, last = n - 1;
  std::vector<Case> cases{{1, 1, 0, false},
                          {static_cast<size_t>(n - 1), 1, last, false},
                          {static_cast<size_t>(n), 2, 1 % n, false},
                          {static_cast<size_t>(2 * n + 1), 3, mid, false},
                          {1000, 7, 0, false},
                          {1000, 1000, last, false},
                          {1000, 4096, 1 % n, false},
                          {12345, 1000, mid, false},
                          {12345, 4096, 0, false},
                          {262147, 65536, last, false},
                          {1000, 100, 0, true},
                          {12345, 999, last, true}};
  cases.erase(std::remove_if(cases.begin(), cases.end(), [](const Case& c) { return c.count == 0; }), cases.end());
  return cases;
}

// The sweep's chunks, in bytes: kSimBytes, /2, ... down to kMinChunkBytes.
std::vector<size_t> sweep_chunks() {
  std::vector<size_t> v;
  for (size_t c = kSimBytes; c >= kMinChunkBytes; c /= 2) v.push_back(c);
  return v;
}

std::string topo_name(int machines) {
  return machines > 1 ? std::string(kTopo) + ":" + std::to_string(machines) : kTopo;
}

// How many channels NCCL 2.28.9 splits one send of kSimBytes into on `machines` DGX H100s with every GPU
// a rank (its p2p parts, kernels/p2p.h p2p_nparts: 4 on one machine, 1 on eight): the nch of `cclab sim
// sendrecv --topo ... -b 1M -e 1M`, whose ranks each send one buffer to the next as the student's do.
bool send_channels(int machines, int* channels, std::string* error) {
  sim::SimConfig cfg;
  cfg.topo = kTopo;
  cfg.machines = machines;
  cfg.coll = CollKind::kSendRecv;
  cfg.p2p = P2pPattern::kSendRecv;
  cfg.min_bytes = cfg.max_bytes = kSimBytes;
  sim::SimSizeResult r;
  if (!simulate_one(cfg, &r, error)) return false;
  if (r.nchannels < 1) {
    *error = "no result";
    return false;
  }
  *channels = r.nchannels;
  return true;
}

// cclab's own ring broadcast on `channels` channels, Simple (`cclab sim broadcast --algo ring --proto
// simple --max-channels K`), kSimBytes on `machines` DGX H100s.
bool reference_time(int machines, int channels, double* us, std::string* error) {
  sim::SimConfig cfg;
  cfg.topo = kTopo;
  cfg.machines = machines;
  cfg.coll = CollKind::kBroadcast;
  cfg.min_bytes = cfg.max_bytes = kSimBytes;
  cfg.algo = "ring";
  cfg.proto = "simple";
  cfg.max_channels = channels;
  sim::SimSizeResult r;
  if (!simulate_one(cfg, &r, error)) return false;
  *us = r.time_us;
  return true;
}

std::string reference_command(int machines, int channels) {
  return "cclab sim broadcast --topo " + topo_name(machines) + " -b 1M --algo ring --proto simple --max-channels " +
         std::to_string(channels);
}

// A sweep of the student's code on `machines` DGX H100s (kSimBytes, root 0): its times by chunk (bytes),
// and the extra cases' times (alpha: one float; an answer's chunk).
struct Sweep {
  bool ran = false, exact = false;
  CheckResult run;                               // the child's outcome (failed when not exact)
  std::vector<std::pair<size_t, double>> times;  // chunk bytes, us
  double one_float_us = 0;                       // a broadcast of 1 float (n - 1 slots), when asked
  std::map<size_t, double> extra;                // answer chunks (bytes) -> us
  double best_us = 0, unpipelined_us = 0;
  size_t best_chunk = 0;
  double seconds = 0;
};

Sweep run_sweep(const LabEnv& env, const std::string& so, int machines, bool one_float,
                const std::vector<size_t>& extra_chunks) {
  Sweep s;
  const int n = machines * kGpusPerMachine;
  const size_t count = kSimBytes / sizeof(float);
  std::vector<Case> cases;
  for (size_t c : sweep_chunks()) cases.push_back({count, c / sizeof(float), 0, false});
  const size_t first_extra = cases.size();
  if (one_float) cases.push_back({1, 1, 0, false});
  for (size_t c : extra_chunks) cases.push_back({count, std::max<size_t>(1, c / sizeof(float)), 0, false});
  const std::string topo = topo_name(machines);
  const ChildOutcome o =
      run_in_child([&] { return run_student(so, n, cases, false, true); }, check_limit(env, kSimTimeoutS),
                   env.work_dir + "/sweep-" + std::to_string(n) + ".log",
                   {{"CCLAB_BACKEND", "sim"}, {"CCLAB_TOPO", topo}}, kGraderEnvPrefixes);
  s.ran = true;
  s.seconds = o.seconds;
  judge_run(env, o, n, topo, &s.run);
  s.run.seconds = o.seconds;
  if (!s.run.passed) return s;
  s.exact = true;
  const auto chunks = sweep_chunks();
  for (size_t k = 0; k < chunks.size(); ++k) {
    const double t = case_time_us(o.result, k);
    s.times.push_back({chunks[k], t});
    if (k == 0) s.unpipelined_us = t;
    if (s.best_us == 0 || t < s.best_us) {
      s.best_us = t;
      s.best_chunk = chunks[k];
    }
  }
  size_t k = first_extra;
  if (one_float) s.one_float_us = case_time_us(o.result, k++);
  for (size_t c : extra_chunks) {
    const double t = case_time_us(o.result, k++);
    s.extra[c] = t;
    if (t < s.best_us) s.best_us = t;
  }
  return s;
}

// The sweep in one line: its best, one piece, and cclab's (the table is the student's to make: lab run 02 --sweep).
std::string sweep_summary(const Sweep& s, double ref_us, int machines, int channels) {
  return "your best: " + format_double(s.best_us, 1) + " us; in one piece (chunk_elems = count): " +
         format_double(s.unpipelined_us, 1) + " us (" + format_double(s.unpipelined_us / s.best_us, 2) +
         "x the best); cclab's ring broadcast on " + std::to_string(channels) +
         (channels == 1 ? " channel" : " channels") + ", as many as NCCL splits a send of 1 MiB into here (Simple, " +
         reference_command(machines, channels) + "): " + format_double(ref_us, 1) + " us";
}

// The hint for a sweep that was not fast enough.
std::string sweep_hint(const Sweep& s) {
  double lo = 1e300, hi = 0;
  for (const auto& [c, t] : s.times) {
    lo = std::min(lo, t);
    hi = std::max(hi, t);
  }
  if (hi <= lo * 1.02)
    return "your time does not change with chunk_elems: the buffer still goes in one piece. Cut it into pieces of "
           "chunk_elems elements (TODO 1)";
  if (!s.times.empty() && s.best_chunk == s.times.front().first)
    return "one piece is your fastest: your pieces do not overlap, each goes through every hop before the next "
           "starts. In slot t every rank sends one piece and receives the next at once (TODO 2)";
  return "your pieces overlap, but not all the time: does every rank receive piece k+1 while it sends piece k, "
         "in one group (one slot; TODO 2)? n - 2 + P slots, one group and one cclabStreamSynchronize each, and "
         "nothing else between them";
}

size_t parse_answer_size(const Answers& a, const std::string& key, bool* ok) {
  *ok = false;
  const auto it = a.values.find(key);
  if (it == a.values.end()) return 0;
  try {
    const size_t v = parse_size(it->second, key);
    *ok = v > 0;
    return v;
  } catch (const std::exception&) {
    return 0;
  }
}

// ---- The checks ---------------------------------------------------------------------------------------

std::vector<CheckResult> check_lab02(const LabEnv& env, const std::function<void(const CheckResult&)>& done) {
  std::vector<CheckResult> out;
  auto add = [&](CheckResult c) {
    out.push_back(c);
    done(out.back());
  };
  const std::string so = env.work_dir + "/pipelined_broadcast.so";
  CheckResult compiled = compile_student(env, {kSource}, so);
  const bool built = compiled.passed;
  add(compiled);

  int hung_at = 0;
  bool host_ok = built;
  for (int n : {2, 3, 4, 5, 8}) {
    CheckResult c;
    const std::vector<Case> cases = host_cases(n);
    c.name = "host backend, " + std::to_string(n) + " ranks, " + std::to_string(cases.size()) + " calls";
    if (!built || hung_at > 0) {
      c.skipped = true;
      c.detail = !built ? "skipped: your code did not compile"
                        : "skipped: your code hung with " + std::to_string(hung_at) + " ranks (above); fix that first";
      add(c);
      continue;
    }
    const double t = check_limit(env, kHostTimeoutS);
    const ChildOutcome o =
        run_in_child([&] { return run_student(so, n, cases, false, false); }, t,
                     env.work_dir + "/host-" + std::to_string(n) + ".log", host_child_env(t), kGraderEnvPrefixes);
    c.seconds = o.seconds;
    judge_run(env, o, n, "", &c);
    if (hung(o)) hung_at = n;
    host_ok = host_ok && c.passed;
    add(c);
  }

  // The simulator: 8 ranks on a DGX H100, 1 MiB in pieces of 128 KiB; the trace is kept for `cclab lab viz 02`.
  const std::string trace = env.work_dir + "/" + kTrace;
  std::error_code ec;
  fs::remove(trace, ec);
  const int n8 = kGpusPerMachine, n64 = kMachines64 * kGpusPerMachine;
  CheckResult exact;
  exact.name = "simulator: 8 ranks, dgx-h100, 1M in 128K, exact";
  if (!built) {
    exact.skipped = true;
    exact.detail = "skipped: your code did not compile";
  } else {
    const std::vector<Case> cases{{kSimBytes / sizeof(float), kExactChunkBytes / sizeof(float), 0, false}};
    const ChildOutcome o =
        run_in_child([&] { return run_student(so, n8, cases, false, true); }, check_limit(env, kSimTimeoutS),
                     env.work_dir + "/sim.log",
                     {{"CCLAB_BACKEND", "sim"}, {"CCLAB_TOPO", kTopo}, {"CCLAB_TRACE", trace}}, kGraderEnvPrefixes);
    exact.seconds = o.seconds;
    judge_run(env, o, n8, kTopo, &exact);
    if (exact.passed)
      exact.detail = "your broadcast took " + format_double(case_time_us(o.result, 0), 1) +
                     " us of simulated time (its trace: " + shown_path(trace) + ")";
  }
  add(exact);

  const std::string answers_path = env.student_dir + "/" + kAnswers;
  const Answers answers = read_answers(answers_path);
  bool sweet8_ok = false, sweet64_ok = false;
  const size_t sweet8 = parse_answer_size(answers, "sweet_spot_8", &sweet8_ok);
  const size_t sweet64 = parse_answer_size(answers, "sweet_spot_64", &sweet64_ok);

  // The sweeps, each against cclab's own ring broadcast on the channels NCCL gives one send of 1 MiB.
  auto sweep_check = [&](int machines, double bound, bool run_it, const std::string& skip_reason, Sweep* s) {
    const int n = machines * kGpusPerMachine;
    CheckResult c;
    c.name = "simulator: " + std::to_string(n) + " GPUs, chunk sweep, at most " + format_double(bound, 2) + "x cclab";
    if (!run_it) {
      c.skipped = true;
      c.detail = "skipped: " + skip_reason;
      add(c);
      return;
    }
    std::vector<size_t> extra;
    const size_t answer = machines == 1 ? (sweet8_ok ? sweet8 : 0) : (sweet64_ok ? sweet64 : 0);
    if (answer > 0) extra.push_back(answer);
    *s = run_sweep(env, so, machines, machines == 1, extra);
    c.seconds = s->seconds;
    double ref = 0;
    int channels = 0;
    std::string error;
    if (!s->exact) {
      c.detail = s->run.detail;
      c.hint = s->run.hint;
    } else if (!send_channels(machines, &channels, &error) || !reference_time(machines, channels, &ref, &error)) {
      c.detail = "cclab sim failed: " + error;
      c.hint = "this is not your code's fault: check the cclab build";
    } else {
      const double ratio = s->best_us / ref;
      c.passed = ratio <= bound;
      c.detail = sweep_summary(*s, ref, machines, channels) + ": " + format_double(ratio, 2) + "x (at most " +
                 format_double(bound, 2) + "x)";
      if (!c.passed) c.hint = sweep_hint(*s);
    }
    add(c);
  };
  Sweep s8, s64;
  sweep_check(1, kBound8, exact.passed, "needs your broadcast to be exact in the simulator (the check above)", &s8);
  // The 64-GPU sweep takes seconds and a GiB: only for code that is right on the host and fast on 8 GPUs.
  const bool fast8 = !out.empty() && out.back().passed;
  sweep_check(kMachines64, kBound64, fast8 && host_ok,
              fast8 ? "needs the host backend checks to pass first (above)"
                    : "needs the 8-GPU sweep to pass first (the check above)",
              &s64);

  // The answers.
  auto missing = [&](CheckResult* c, const std::string& key, const std::string& what, const std::string& why) {
    c->detail = what + ": " + why + (answers.found ? "" : " (" + shown_path(answers_path) + ")");
    for (const auto& p : answers.problems) c->detail += "\n" + shown_path(answers_path) + ": " + p;
    c->hint = "write the line `" + key + " = YOUR ANSWER` in " + shown_path(answers_path) +
              " (the lab's README.md, \"Questions\")";
  };
  auto number_check = [&](const std::string& key, const std::string& what, bool have_want, double want,
                          double tolerance, const std::string& skip_reason, const std::string& hint) {
    CheckResult c;
    c.name = "answer " + key;
    double v = 0;
    std::string why;
    if (!answer_number(answers, key, &v, &why)) {
      missing(&c, key, what, why);
    } else if (!have_want) {
      c.skipped = true;
      c.detail = "skipped: " + skip_reason;
    } else if (std::fabs(v - want) <= tolerance * std::fabs(want)) {
      c.passed = true;
      c.detail = what + ": " + answers.values.at(key) + " is right" +
                 (tolerance > 0 ? " (within " + format_double(tolerance * 100, 0) + "%)" : "");
    } else {
      c.detail = what + ": " + answers.values.at(key) +
                 (tolerance > 0 ? " is not within " + format_double(tolerance * 100, 0) +
                                      "% of what the grader measured on your code"
                                : " is not right");
      c.hint = hint;
    }
    add(c);
  };
  // A chunk size answer: right when the grader's run of the student's code at that chunk is within
  // kSweetTolerance of the best time of the sweep.
  auto sweet_check = [&](const std::string& key, bool parsed, size_t bytes, const Sweep& s, int n,
                         const std::string& skip_reason) {
    CheckResult c;
    c.name = "answer " + key;
    const std::string what = "the fastest chunk size, 1 MiB on " + std::to_string(n) + " GPUs";
    const auto it = answers.values.find(key);
    if (!answers.found || it == answers.values.end()) {
      missing(&c, key, what, answers.found ? "no answer for '" + key + "' yet" : "there is no answers file");
    } else if (!parsed) {
      c.detail = what + ": " + key + " = '" + it->second + "' is not a size (write 131072, or 128K: powers of 1024)";
      c.hint = "a number of bytes, optionally with K or M";
    } else if (!s.exact || s.extra.count(bytes) == 0) {
      c.skipped = true;
      c.detail = "skipped: " + skip_reason;
    } else {
      const double t = s.extra.at(bytes);
      const std::string measured = "your code takes " + format_double(t, 1) + " us with chunks of " + it->second +
                                   "; the best of the grader's runs " + format_double(s.best_us, 1) + " us";
      c.passed = t <= s.best_us * (1 + kSweetTolerance);
      c.detail = what + ": " + measured + (c.passed ? " (within " : " (more than ") +
                 format_double(kSweetTolerance * 100, 0) + "%)";
      if (!c.passed)
        c.hint = "sweep it yourself: CCLAB_BACKEND=sim CCLAB_TOPO=" + topo_name(n / kGpusPerMachine) +
                 " cclab lab run 02 --ranks " + std::to_string(n) + " --size 1M --sweep";
    }
    add(c);
  };

  number_check("slots", "slots of a pipelined broadcast of 16 pieces on 8 ranks", true, n8 - 2 + kSlotPieces, 0, "",
               "the first piece needs n-1 slots to reach the last rank (the fill), and each further piece one more "
               "slot");
  const double alpha = s8.exact ? s8.one_float_us / (n8 - 1) : 0;
  const double beta = s8.exact && s8.unpipelined_us / (n8 - 1) > alpha
                          ? static_cast<double>(kSimBytes) / (s8.unpipelined_us / (n8 - 1) - alpha) / 1e3
                          : 0;
  const std::string no_sweep8 = "needs your broadcast to run exactly in the 8-GPU sweep (the checks above)";
  number_check("alpha_us", "alpha, us: the time of a slot that moves (almost) nothing, 8 GPUs", alpha > 0, alpha,
               kRateTolerance, no_sweep8,
               "a broadcast of one float takes n-1 slots of alpha: CCLAB_BACKEND=sim CCLAB_TOPO=dgx-h100 cclab lab "
               "run 02 --ranks 8 --size 4 --chunk 4, then divide its simulated time by 7");
  number_check("beta_gbs", "beta, GB/s: a slot's bandwidth, 8 GPUs", beta > 0, beta, kRateTolerance, no_sweep8,
               "in one piece, 1 MiB takes n-1 slots of alpha + 1 MiB / beta: CCLAB_BACKEND=sim CCLAB_TOPO=dgx-h100 "
               "cclab lab run 02 --ranks 8 --size 1M --chunk 1M. 1 MiB = 1048576 bytes; 1 GB/s = 1000 bytes per us");
  sweet_check("sweet_spot_8", sweet8_ok, sweet8, s8, n8, no_sweep8);
  sweet_check("sweet_spot_64", sweet64_ok, sweet64, s64, n64,
              "needs the 64-GPU sweep to run (it runs once the 8-GPU sweep passes)");
  {
    CheckResult c;
    c.name = "answer model_sweet_64";
    const std::string what = "the model's fastest chunk size for 1 MiB on 64 GPUs, with alpha and beta of 8 GPUs";
    const auto it = answers.values.find("model_sweet_64");
    bool parsed = false;
    const size_t v = parse_answer_size(answers, "model_sweet_64", &parsed);
    const double want =
        alpha > 0 && beta > 0 ? std::sqrt(static_cast<double>(kSimBytes) * alpha * beta * 1e3 / (n64 - 2)) : 0;
    if (!answers.found || it == answers.values.end()) {
      missing(&c, "model_sweet_64", what,
              answers.found ? "no answer for 'model_sweet_64' yet" : "there is no answers file");
    } else if (!parsed) {
      c.detail = what + ": model_sweet_64 = '" + it->second + "' is not a size (write 50000, or 48K)";
      c.hint = "a number of bytes, optionally with K or M";
    } else if (want <= 0) {
      c.skipped = true;
      c.detail = "skipped: " + no_sweep8;
    } else if (std::fabs(static_cast<double>(v) - want) <= kModelTolerance * want) {
      c.passed = true;
      c.detail = what + ": " + it->second + " is right (within " + format_double(kModelTolerance * 100, 0) + "%)";
    } else {
      c.detail = what + ": " + it->second + " is not within " + format_double(kModelTolerance * 100, 0) +
                 "% of the grader's value";
      c.hint =
          "T(c) = (n - 2 + S/c) x (alpha + c/beta) is least where its derivative is 0: c = sqrt(S alpha beta / "
          "(n - 2)), with S = 1048576 bytes, n = 64, alpha in seconds and beta in bytes per second";
    }
    add(c);
  }
  return out;
}

// ---- `cclab lab run 02` -------------------------------------------------------------------------------

const char* kRunUsage =
    "usage: cclab lab run 02 [--ranks N] [--size BYTES] [--chunk BYTES] [--root R] [--in-place] [--nccl]\n"
    "                        [--sweep [--min-chunk BYTES]] [--dir DIR] [--timeout S]\n"
    "\n"
    "Builds your pipelined_broadcast.c and runs lab_pipelined_broadcast once on N ranks (a thread each,\n"
    "default 4) over BYTES of floats (default 4000: 1000 floats; K, M suffixes) in pieces of --chunk BYTES\n"
    "(default a quarter of the buffer) from rank R (default 0), then checks every element. It runs on the\n"
    "backend of your environment: the host backend, or the simulator with\n"
    "  CCLAB_BACKEND=sim CCLAB_TOPO=dgx-h100 cclab lab run 02 --ranks 8 --size 1M --chunk 128K\n"
    "which prints the simulated time. --sweep runs it once per chunk size, BYTES, BYTES/2, ... down to\n"
    "--min-chunk (default 16K), and prints a table of the times. --nccl runs cclab's ncclBroadcast instead\n"
    "of your function; --in-place passes recvbuff as sendbuff. Your printf output shows as it runs.\n";

int run_lab02(const LabEnv& env, const std::vector<std::string>& args) {
  int n = 4, root = 0;
  size_t bytes = 4000, chunk_bytes = 0, min_chunk = kMinChunkBytes;
  bool in_place = false, nccl = false, sweep = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const bool has_value = i + 1 < args.size();
    auto floats = [&](const std::string& flag) {
      const size_t b = parse_size(args[++i], flag);
      if (b == 0 || b % sizeof(float) != 0)
        throw std::invalid_argument(flag + ": " + std::to_string(b) + " bytes is not a whole number of floats (> 0)");
      return b;
    };
    try {
      if (a == "--help" || a == "-h") {
        std::fputs(kRunUsage, stdout);
        return kLabExitOk;
      } else if ((a == "--ranks" || a == "--root") && has_value) {
        const std::string v = args[++i];
        char* end = nullptr;
        const long r = std::strtol(v.c_str(), &end, 10);
        if (v.empty() || *end != '\0' || r < (a == "--ranks" ? 1 : 0) || r > kMaxRanks)
          throw std::invalid_argument(a + ": '" + v + "' is not a number from " + (a == "--ranks" ? "1" : "0") +
                                      " to " + std::to_string(kMaxRanks));
        (a == "--ranks" ? n : root) = static_cast<int>(r);
      } else if (a == "--size" && has_value) {
        bytes = floats("--size");
      } else if (a == "--chunk" && has_value) {
        chunk_bytes = floats("--chunk");
      } else if (a == "--min-chunk" && has_value) {
        min_chunk = floats("--min-chunk");
      } else if (a == "--in-place") {
        in_place = true;
      } else if (a == "--nccl") {
        nccl = true;
      } else if (a == "--sweep") {
        sweep = true;
      } else {
        const bool valued = a == "--ranks" || a == "--root" || a == "--size" || a == "--chunk" || a == "--min-chunk";
        throw std::invalid_argument(valued ? a + " needs a value" : "unknown flag " + a);
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "cclab lab run 02: %s\n%s", e.what(), kRunUsage);
      return kLabExitUsage;
    }
  }
  if (root >= n) {
    std::fprintf(stderr, "cclab lab run 02: --root %d is not a rank of %d\n", root, n);
    return kLabExitUsage;
  }
  const std::string so = env.work_dir + "/pipelined_broadcast.so";
  if (!nccl) {
    const CheckResult c = compile_student(env, {kSource}, so);
    if (!c.passed || !c.detail.empty()) std::fprintf(c.passed ? stdout : stderr, "%s\n", c.detail.c_str());
    if (!c.passed) {
      std::fprintf(stderr, "cclab lab run 02: %s did not compile\n", (env.student_dir + "/" + kSource).c_str());
      return kLabExitFailed;
    }
  }
  const size_t count = bytes / sizeof(float);
  if (chunk_bytes == 0) chunk_bytes = std::max(sizeof(float), bytes / 4 / sizeof(float) * sizeof(float));
  const char* backend = std::getenv("CCLAB_BACKEND");
  const bool sim = backend && std::string(backend) == "sim";
  std::vector<Case> cases;
  if (sweep) {
    for (size_t c = bytes; c >= std::max(min_chunk, sizeof(float)); c /= 2)
      cases.push_back({count, std::max<size_t>(1, c / sizeof(float)), root, in_place});
  } else {
    cases.push_back({count, chunk_bytes / sizeof(float), root, in_place});
  }
  std::printf("%s on %d ranks (a thread each), %zu floats (%zu bytes)",
              nccl ? "ncclBroadcast" : "your lab_pipelined_broadcast", n, count, bytes);
  if (!sweep && !nccl)
    std::printf(" in pieces of %zu floats (%zu bytes): %zu pieces", cases[0].chunk, cases[0].chunk * sizeof(float),
                (count + cases[0].chunk - 1) / cases[0].chunk);
  std::printf(", root %d%s, %s backend\n", root, in_place ? ", in place" : "", backend && *backend ? backend : "host");
  std::printf("inputs: rank r's element i is 65536 r + 1 + (i mod 65521); every rank must end with the root's\n");
  std::fflush(stdout);
  const double t = env.timeout_s > 0 ? env.timeout_s : kSimTimeoutS * (sweep ? 4 : 1);
  std::map<std::string, std::string> vars;
  if (!std::getenv("CCLAB_TIMEOUT")) vars["CCLAB_TIMEOUT"] = child_wait_timeout(t);
  const ChildOutcome o = run_in_child([&] { return run_student(so, n, cases, nccl, false); }, t, "", vars);
  if (!print_run_failure(o, kHangHint)) return kLabExitFailed;
  const nlohmann::json& j = o.result;
  const bool simulated = sim || j.value("backend", std::string()) == "sim";
  int wrong_calls = 0;
  if (sweep) {
    std::printf("a sweep of chunk sizes, one call each (%s):\n",
                simulated ? "simulated time" : "wall-clock time, the host backend: not a measure of a GPU");
    std::printf("  %10s  %7s  %11s\n", "chunk (B)", "pieces", "time (us)");
    for (size_t k = 0; k < j["cases"].size(); ++k) {
      const auto& c = j["cases"][k];
      const Case kc = case_of(c);
      const size_t pieces = (kc.count + kc.chunk - 1) / kc.chunk;
      const bool ok = case_ok(c);
      if (!ok) ++wrong_calls;
      std::printf("  %10zu  %7zu  %11.2f%s\n", kc.chunk * sizeof(float), pieces, case_time_us(j, k),
                  ok ? "" : "  WRONG");
    }
    std::printf("%s\n", wrong_calls ? (std::to_string(wrong_calls) + " calls wrong (run one alone: --chunk)").c_str()
                                    : ("all " + std::to_string(j["cases"].size()) + " calls right").c_str());
  } else {
    const auto& c = j["cases"][0];
    for (size_t r = 0; r < c["ranks"].size(); ++r) {
      const auto& rc = c["ranks"][r];
      const bool ok = rank_ok(rc);
      if (!ok) wrong_calls = 1;
      std::printf("  rank %zu%s: %s\n", r, static_cast<int>(r) == root ? " (root)" : "",
                  ok ? ("all " + std::to_string(count) + " elements right").c_str() : describe_rank(rc, count).c_str());
    }
    const double us = case_time_us(j, 0);
    print_run_time(us, simulated);
  }
  if (wrong_calls > 0) std::printf("hint: %s\n", hint_for(j["cases"]).c_str());
  return wrong_calls == 0 ? kLabExitOk : kLabExitFailed;
}

}  // namespace

Lab make_lab02() {
  Lab l;
  l.number = "02";
  l.folder = "02-pipelining";
  l.title = "Pipelining and chunks";
  l.written = true;
  l.student_files = {kSource, kAnswers};
  l.trace_file = kTrace;
  l.check = check_lab02;
  l.run = run_lab02;
  return l;
}

}  // namespace cclab::lab
