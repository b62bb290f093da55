// runtime/cli/labs/lab03.cc - lab 3, "Protocols: Simple, LL, LL128" (labs/03-protocols/README.md): the
// checks of `cclab lab check 03` and the driver of `cclab lab run 03`.
//
// The student's ll_line.c defines the functions of labs/03-protocols/ll_line.h: NCCL's LL line (16 bytes,
// {data1, flag1, data2, flag2}) and LL128 line (15 payload words and a flag word), packed and unpacked
// by hand. Every check runs them in a forked child (a crash or a hang fails that check only):
//   - the flag of a step, against kernels/proto_ll.h's ll_flag;
//   - a fuzzer: random payloads and flags packed byte for byte as proto_ll.h's lines (ll_word_line,
//     ll_pack, ll128_pack), unpacked back exactly from proto_ll.h's lines;
//   - torn LL lines: every mix of a step's half with the previous step's (or a wrong flag) is "not
//     ready", and *data is left alone: a receiver never gets stale data;
//   - LL128 lines with a wrong flag are not ready;
//   - the answers: the two wire efficiencies, and the crossover sizes of the three protocols for
//     all_reduce on a simulated DGX H100, which the grader sweeps itself with the simulator
//     (sim::simulate, as `cclab sim --algo ring --proto P` does). The answers are never stored here.
#include <dlfcn.h>

#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <sstream>
#include <vector>

#include "kernels/proto_ll.h"
#include "lab_cmd.h"
#include "perf_options.h"
#include "sim/sim.h"

namespace cclab::lab {
namespace {

constexpr const char* kSource = "ll_line.c";
constexpr const char* kAnswers = "answers.txt";
constexpr const char* kSimTopo = "dgx-h100";
constexpr size_t kSweepMin = 1u << 10;    // the crossover sweep: 1 KiB ..
constexpr size_t kSweepMax = 256u << 20;  // .. 256 MiB, x2 a step
constexpr double kEfficiencyTolerance = 0.01;
constexpr double kCheckTimeoutS = 20;
constexpr int kFuzzLines = 200000;

// The student's functions (ll_line.h), with cclab's line types: the same bytes.
struct StudentFns {
  uint32_t (*flag)(uint64_t);
  void (*pack)(uint64_t, uint32_t, LLLine*);
  int (*unpack)(const LLLine*, uint32_t, uint64_t*);
  size_t (*pack_buffer)(const void*, size_t, uint32_t, LLLine*);
  void (*pack128)(const uint64_t*, uint64_t, LL128Line*);
  int (*unpack128)(const LL128Line*, uint64_t, uint64_t*);
};

// In a child: the student's functions, or an error.
bool load_fns(const std::string& so, StudentFns* f, std::string* error) {
  const auto sym = [&](const char* name) { return error->empty() ? load_student_symbol(so, name, error) : nullptr; };
  error->clear();
  f->flag = reinterpret_cast<uint32_t (*)(uint64_t)>(sym("lab_ll_flag"));
  f->pack = reinterpret_cast<void (*)(uint64_t, uint32_t, LLLine*)>(sym("lab_ll_pack"));
  f->unpack = reinterpret_cast<int (*)(const LLLine*, uint32_t, uint64_t*)>(sym("lab_ll_unpack"));
  f->pack_buffer = reinterpret_cast<size_t (*)(const void*, size_t, uint32_t, LLLine*)>(sym("lab_ll_pack_buffer"));
  f->pack128 = reinterpret_cast<void (*)(const uint64_t*, uint64_t, LL128Line*)>(sym("lab_ll128_pack"));
  f->unpack128 = reinterpret_cast<int (*)(const LL128Line*, uint64_t, uint64_t*)>(sym("lab_ll128_unpack"));
  return error->empty();
}

std::string hex(uint64_t v, int digits = 0) {
  char b[32];
  std::snprintf(b, sizeof b, "0x%0*" PRIx64, digits, v);
  return b;
}
std::string line_words(const LLLine& l) {
  return "{data1 " + hex(l.f.data1, 8) + ", flag1 " + hex(l.f.flag1, 8) + ", data2 " + hex(l.f.data2, 8) + ", flag2 " +
         hex(l.f.flag2, 8) + "}";
}
bool same(const void* a, const void* b, size_t n) { return std::memcmp(a, b, n) == 0; }

nlohmann::json pass(const std::string& detail = "") { return {{"passed", true}, {"detail", detail}, {"hint", ""}}; }
nlohmann::json fail(const std::string& detail, const std::string& hint) {
  return {{"passed", false}, {"detail", detail}, {"hint", hint}};
}

// Random values with the edges mixed in.
struct Fuzz {
  std::mt19937_64 rng{20240603};
  uint64_t u64() {
    switch (rng() % 8) {
      case 0: return 0;
      case 1: return ~uint64_t{0};
      case 2: return uint64_t{0xffffffff} << (rng() % 2 ? 32 : 0);
      default: return rng();
    }
  }
  uint32_t u32() { return static_cast<uint32_t>(u64() >> (rng() % 2 ? 32 : 0)); }
};

// ---- The checks, each in a child -----------------------------------------------------------------------

nlohmann::json check_flag(const StudentFns& f) {
  const std::vector<uint64_t> steps{0, 1, 2, 7, 8, 1000, 0x7ffffff8, 0xfffffffe, 0xffffffff, 0x100000000, 0x123456789a};
  for (uint64_t s : steps) {
    const uint32_t got = f.flag(s), want = ll_flag(s);
    if (got == want) continue;
    std::string hint = "step s's flag is s + 1, kept to 32 bits (TODO 1)";
    if (s == 0 && got == 0)
      hint = "step 0's flag is 0: a receive buffer that was never written (all zero) would look ready with "
             "step 0's data. Use step + 1, kept to 32 bits (TODO 1)";
    return fail("lab_ll_flag(" + std::to_string(s) + ") is " + std::to_string(got) + ", want " + std::to_string(want),
                hint);
  }
  return pass("11 steps from 0 to 0x123456789a (2^32 - 1 and 2^32 included): each flag as NCCL's NCCL_LL_FLAG(step + 1)");
}

std::string pack_hint(const LLLine& got, const LLLine& want) {
  if (got.f.data1 == want.f.data2 && got.f.data2 == want.f.data1 && got.f.data1 != got.f.data2)
    return "the payload's halves are swapped: its low 4 bytes (byte 0 to 3) go in data1, the first half (TODO 2)";
  if (got.f.flag1 != want.f.flag1 || got.f.flag2 != want.f.flag2)
    return "both halves carry the flag, in their high 32 bits: v[0] = low 4 payload bytes | flag << 32, v[1] = "
           "high 4 payload bytes | flag << 32 (TODO 2)";
  return "v[0] = (data & 0xffffffff) | (uint64_t)flag << 32, and v[1] the same with the payload's high 4 bytes "
         "(TODO 2)";
}

nlohmann::json check_pack(const StudentFns& f) {
  Fuzz z;
  for (int i = 0; i < kFuzzLines; ++i) {
    const uint64_t data = z.u64();
    const uint32_t flag = z.u32();
    LLLine got;
    std::memset(&got, 0xa5, sizeof got);
    child_marker({{"data", data}, {"flag", flag}});
    f.pack(data, flag, &got);
    const LLLine want = ll_word_line(data, flag);
    if (!same(&got, &want, sizeof got))
      return fail("lab_ll_pack(data " + hex(data, 16) + ", flag " + hex(flag) + ") wrote\n  " + line_words(got) +
                      "\ncclab's LL line (kernels/proto_ll.h) is\n  " + line_words(want),
                  pack_hint(got, want));
  }
  return pass(std::to_string(kFuzzLines) + " random lines, byte for byte as cclab's");
}

nlohmann::json check_unpack(const StudentFns& f) {
  Fuzz z;
  for (int i = 0; i < kFuzzLines; ++i) {
    const uint64_t data = z.u64();
    const uint32_t flag = z.u32();
    const LLLine line = ll_word_line(data, flag);
    uint64_t got = ~data;
    child_marker({{"data", data}, {"flag", flag}});
    const int ready = f.unpack(&line, flag, &got);
    if (ready != 1)
      return fail("lab_ll_unpack(" + line_words(line) + ", flag " + hex(flag) + ") returned " + std::to_string(ready) +
                      ", want 1: both halves carry the flag",
                  "compare each half's high 32 bits (v[i] >> 32) with the flag; return 1 when both match (TODO 3)");
    if (got != data)
      return fail("lab_ll_unpack(" + line_words(line) + ", flag " + hex(flag) + ") gave data " + hex(got, 16) +
                      ", want " + hex(data, 16),
                  "the payload is data1 (low 4 bytes) and data2 (high 4 bytes): (v[0] & 0xffffffff) | v[1] << 32 "
                  "(TODO 3)");
  }
  return pass(std::to_string(kFuzzLines) + " of cclab's lines unpacked exactly");
}

nlohmann::json check_torn(const StudentFns& f) {
  Fuzz z;
  int tried = 0;
  for (int i = 0; i < kFuzzLines / 4; ++i) {
    const uint64_t step = 1 + z.rng() % 0xfffffffe;
    uint64_t now_data = z.u64(), old_data = z.u64();
    if (now_data == old_data) old_data = ~now_data;
    const uint32_t flag = ll_flag(step);
    const LLLine now = ll_word_line(now_data, flag), old = ll_word_line(old_data, ll_flag(step - 1));
    uint32_t garbage = z.u32();
    if (garbage == flag) garbage ^= 1;
    struct Variant {
      LLLine line;
      std::string what;
    };
    std::vector<Variant> vs;
    LLLine l = now;
    l.v[1] = old.v[1];
    vs.push_back({l, "first half from step " + std::to_string(step) + ", second half still step " +
                         std::to_string(step - 1) + "'s"});
    l = now;
    l.v[0] = old.v[0];
    vs.push_back({l, "first half still step " + std::to_string(step - 1) + "'s, second half from step " +
                         std::to_string(step)});
    vs.push_back({old, "both halves still step " + std::to_string(step - 1) + "'s"});
    l = now;
    l.f.flag1 = garbage;
    vs.push_back({l, "the first half's flag is " + hex(garbage)});
    l = now;
    l.f.flag2 = garbage;
    vs.push_back({l, "the second half's flag is " + hex(garbage)});
    l = now;  // the flag where the data is: a receiver that checks data1 instead of flag1
    l.f.data1 = l.f.data2 = flag;
    l.f.flag1 = l.f.flag2 = garbage;
    vs.push_back({l, "the data words hold the flag's value, the flags " + hex(garbage)});
    LLLine zero;
    std::memset(&zero, 0, sizeof zero);
    vs.push_back({zero, "all zero: a buffer nobody wrote yet"});
    for (const auto& v : vs) {
      const uint64_t sentinel = 0x5eed5eed5eed5eedull ^ i;
      uint64_t got = sentinel;
      ++tried;
      child_marker({{"step", step}});
      const int ready = f.unpack(&v.line, flag, &got);
      const std::string call = "step " + std::to_string(step) + " (flag " + hex(flag) + "), line " +
                               line_words(v.line) + ": " + v.what;
      if (ready != 0)
        return fail(call + "\nlab_ll_unpack returned " + std::to_string(ready) + " (ready) with data " + hex(got, 16) +
                        ": stale or torn data handed to the receiver",
                    "a line is ready only when BOTH halves carry the expected flag: each 8-byte half arrives whole, "
                    "but the two halves may come from different steps (TODO 3)");
      if (got != sentinel)
        return fail(call + "\nlab_ll_unpack returned 0 (not ready) but changed *data to " + hex(got, 16),
                    "when the line is not ready, leave *data alone: check both flags first, then write *data "
                    "(TODO 3)");
    }
  }
  return pass(std::to_string(tried) + " torn, stale or wrongly flagged lines: all not ready, *data untouched");
}

nlohmann::json check_buffer(const StudentFns& f) {
  Fuzz z;
  std::vector<unsigned char> src(1024);
  std::vector<LLLine> got(130), want(130);
  for (int i = 0; i < 2000; ++i) {
    const size_t bytes = i < 200 ? static_cast<size_t>(i) : z.rng() % 1001;
    for (auto& b : src) b = static_cast<unsigned char>(z.rng());
    const uint32_t flag = z.u32();
    std::memset(got.data(), 0xa5, got.size() * sizeof(LLLine));
    std::memset(want.data(), 0xa5, want.size() * sizeof(LLLine));
    child_marker({{"bytes", bytes}});
    const size_t n = f.pack_buffer(src.data(), bytes, flag, got.data());
    const size_t wn = ll_pack(src.data(), bytes, want.data(), flag);
    const std::string call = "lab_ll_pack_buffer of " + std::to_string(bytes) + " bytes, flag " + hex(flag);
    if (n != wn)
      return fail(call + " returned " + std::to_string(n) + ", want " + std::to_string(wn) + " lines",
                  "a line carries 8 payload bytes: (bytes + 7) / 8 lines, the last one partly filled (TODO 4)");
    for (size_t k = 0; k < want.size(); ++k)
      if (!same(&got[k], &want[k], sizeof(LLLine))) {
        const bool past = k >= wn;
        return fail(call + ": line " + std::to_string(k) + (past ? " (after the last line) was changed: " : " is ") +
                        line_words(got[k]) + (past ? "" : ", cclab's is " + line_words(want[k])),
                    past ? "write only the lines the bytes need"
                         : (k + 1 == wn && bytes % 8 ? "the last line carries the last bytes % 8 bytes, zero beyond "
                                                       "them; do not read past the end of src (TODO 4)"
                                                     : "line k carries bytes 8k .. 8k+7, byte 8k the lowest (TODO 4)"));
      }
  }
  return pass("2000 buffers of 0 to 1000 bytes, byte for byte as cclab's ll_pack");
}

nlohmann::json check_ll128(const StudentFns& f) {
  Fuzz z;
  for (int i = 0; i < kFuzzLines / 10; ++i) {
    uint64_t data[15];
    for (auto& d : data) d = z.u64();
    const uint64_t flag = z.u64();
    LL128Line got, want;
    std::memset(&got, 0xa5, sizeof got);
    child_marker({{"flag", flag}});
    f.pack128(data, flag, &got);
    ll128_pack(data, sizeof data, &want, flag);
    for (int w = 0; w < 16; ++w)
      if (got.v[w] != want.v[w])
        return fail("lab_ll128_pack, flag " + hex(flag) + ": word " + std::to_string(w) + " is " + hex(got.v[w], 16) +
                        ", cclab's LL128 line has " + hex(want.v[w], 16) + (w == 15 ? " (the flag)" : ""),
                    "v[0..14] are the 15 payload words in order, v[15] the flag (TODO 5)");
    uint64_t back[15];
    std::memset(back, 0x5e, sizeof back);
    int ready = f.unpack128(&want, flag, back);
    if (ready != 1 || !same(back, data, sizeof data))
      return fail("lab_ll128_unpack of cclab's line with its own flag " + hex(flag) +
                      (ready != 1 ? " returned " + std::to_string(ready) + ", want 1" : " gave other payload words"),
                  "ready when v[15] is the flag; then copy v[0..14] (TODO 6)");
    for (uint64_t bad : {flag - 1, flag ^ (uint64_t{1} << 40), uint64_t{0}}) {
      if (bad == flag) continue;
      LL128Line l = want;
      l.v[15] = bad;
      uint64_t out[15];
      std::memset(out, 0x5e, sizeof out);
      uint64_t untouched[15];
      std::memset(untouched, 0x5e, sizeof untouched);
      ready = f.unpack128(&l, flag, out);
      if (ready != 0)
        return fail("lab_ll128_unpack with flag " + hex(flag) + " of a line whose flag word is " + hex(bad) +
                        " returned " + std::to_string(ready) + " (ready)",
                    "compare the whole 64-bit flag word v[15] with the flag (TODO 6)");
      if (!same(out, untouched, sizeof out))
        return fail("lab_ll128_unpack returned 0 (not ready) but changed data",
                    "when the line is not ready, leave data alone: check the flag first (TODO 6)");
    }
  }
  return pass(std::to_string(kFuzzLines / 10) + " random lines packed as cclab's and unpacked; wrong flags not ready");
}

// ---- The simulator's crossovers -----------------------------------------------------------------------

struct Sweep {
  std::vector<size_t> sizes;
  std::map<std::string, std::vector<double>> time_us;  // per protocol
};

bool sweep(Sweep* s, std::string* error) {
  for (const char* proto : {"LL", "LL128", "Simple"}) {
    sim::SimConfig cfg;
    cfg.topo = kSimTopo;
    cfg.coll = CollKind::kAllReduce;
    cfg.min_bytes = kSweepMin;
    cfg.max_bytes = kSweepMax;
    cfg.factor = 2;
    cfg.algo = "ring";  // the protocols alone: the tuner would switch to the tree at small sizes
    cfg.proto = proto;
    sim::SimResult res;
    if (!sim::simulate(cfg, &res, error)) return false;
    std::vector<size_t> sizes;
    std::vector<double> t;
    for (const auto& r : res.sizes) {
      sizes.push_back(r.bytes);
      t.push_back(r.time_us);
    }
    if (s->sizes.empty()) s->sizes = sizes;
    if (sizes != s->sizes || sizes.empty()) {
      *error = "the sweeps of the three protocols have different sizes";
      return false;
    }
    s->time_us[proto] = t;
  }
  return true;
}

// The smallest size of the sweep from which `fast` takes less time than `slow` at every larger size; 0
// if it never does at the largest.
size_t crossover(const Sweep& s, const std::string& fast, const std::string& slow) {
  size_t from = 0;
  for (size_t i = s.sizes.size(); i-- > 0;) {
    if (s.time_us.at(fast)[i] < s.time_us.at(slow)[i]) {
      from = s.sizes[i];
    } else {
      break;
    }
  }
  return from;
}

std::string size_name(size_t b) {
  if (b >= (1u << 20) && b % (1u << 20) == 0) return std::to_string(b >> 20) + " MiB";
  if (b >= (1u << 10) && b % (1u << 10) == 0) return std::to_string(b >> 10) + " KiB";
  return std::to_string(b) + " B";
}

// ---- The checks ---------------------------------------------------------------------------------------

double limit(const LabEnv& env, double own) { return env.timeout_s > 0 ? env.timeout_s : own; }

CheckResult run_check(const LabEnv& env, const std::string& so, const std::string& name, const std::string& log,
                      nlohmann::json (*fn)(const StudentFns&), bool built) {
  CheckResult c;
  c.name = name;
  if (!built) {
    c.skipped = true;
    c.detail = "skipped: your code did not compile";
    return c;
  }
  const ChildOutcome o = run_in_child(
      [&]() -> nlohmann::json {
        StudentFns f{};
        std::string err;
        if (!load_fns(so, &f, &err)) return {{"load_error", err}};
        return fn(f);
      },
      limit(env, kCheckTimeoutS), env.work_dir + "/" + log, {}, {"NCCL_", "CCLAB_"});
  c.seconds = o.seconds;
  if (o.status != ChildOutcome::kOk) {
    c.detail = "your code " + describe_outcome(o);
    if (o.last_marker.is_object()) c.detail += " at " + o.last_marker.dump();
    if (!o.log_tail.empty()) c.detail += "\nlast output (" + shown_path(o.log_path) + "):\n" + o.log_tail;
    c.hint = o.status == ChildOutcome::kTimedOut
                 ? "these functions never wait: no loops that poll a line (the caller polls), and loops over bytes "
                   "or lines end"
                 : "a pointer outside a line or buffer? lab_ll_pack_buffer must read only `bytes` bytes of src and "
                   "write only the lines they need";
    return c;
  }
  if (o.result.contains("load_error")) {
    c.detail = o.result.value("load_error", std::string());
    c.hint = "keep every function of ll_line.h, with its name and signature";
    return c;
  }
  c.passed = o.result.value("passed", false);
  c.detail = o.result.value("detail", std::string());
  c.hint = o.result.value("hint", std::string());
  return c;
}

std::vector<CheckResult> check_lab03(const LabEnv& env, const std::function<void(const CheckResult&)>& done) {
  std::vector<CheckResult> out;
  auto add = [&](CheckResult c) {
    out.push_back(c);
    done(out.back());
  };
  const std::string so = env.work_dir + "/ll_line.so";
  CheckResult compiled = compile_student(env, {kSource}, so);
  const bool built = compiled.passed;
  add(compiled);
  add(run_check(env, so, "LL flag of a step", "flag.log", check_flag, built));
  add(run_check(env, so, "LL pack: random lines as cclab's", "pack.log", check_pack, built));
  add(run_check(env, so, "LL unpack: cclab's lines exactly", "unpack.log", check_unpack, built));
  add(run_check(env, so, "LL torn and stale lines: not ready", "torn.log", check_torn, built));
  add(run_check(env, so, "LL buffers of 0 to 1000 bytes", "buffer.log", check_buffer, built));
  add(run_check(env, so, "LL128 pack and unpack", "ll128.log", check_ll128, built));

  // The answers.
  const std::string answers_path = env.student_dir + "/" + kAnswers;
  const Answers answers = read_answers(answers_path);
  auto answer_check = [&](const std::string& key, const std::string& what, double want, double tolerance,
                          bool have_want, const std::string& skip_reason, const std::string& hint) {
    CheckResult c;
    c.name = "answer " + key;
    double v = 0;
    std::string why;
    if (!have_want) {
      c.detail = "the grader could not compute it: " + skip_reason;
      c.hint = "this is not your answer's fault: check the cclab build";
    } else if (!answer_number(answers, key, &v, &why)) {
      c.detail = what + ": " + why + (answers.found ? "" : " (" + shown_path(answers_path) + ")");
      for (const auto& p : answers.problems) c.detail += "\n" + shown_path(answers_path) + ": " + p;
      c.hint = "write the line `" + key + " = YOUR NUMBER` in " + shown_path(answers_path) +
               " (the lab's README.md, \"Questions\")";
    } else if (std::fabs(v - want) <= tolerance * std::fabs(want)) {
      c.passed = true;
      c.detail = what + ": " + answers.values.at(key) + " is right (within " + format_double(tolerance * 100, 0) + "%)";
    } else {
      c.detail = what + ": " + answers.values.at(key) + " is not within " + format_double(tolerance * 100, 0) +
                 "% of the right value";
      c.hint = hint;
    }
    add(c);
  };
  answer_check("ll_efficiency", "LL's payload bytes / wire bytes", static_cast<double>(kLLLinePayload) / kLLLineBytes,
               kEfficiencyTolerance, true, "",
               "how many of a line's 16 bytes are payload? A fraction between 0 and 1, not a percentage (Background, "
               "\"LL\")");
  answer_check("ll128_efficiency", "LL128's payload bytes / wire bytes",
               static_cast<double>(kLL128LinePayload) / kLL128LineBytes, kEfficiencyTolerance, true, "",
               "how many of a line's 128 bytes are payload? A fraction between 0 and 1, not a percentage "
               "(Background, \"LL128\")");

  // The crossovers, from the grader's own sweep (only when there is an answer to compare: a few seconds).
  double unused = 0;
  std::string why;
  const bool asked =
      answer_number(answers, "crossover_ll128", &unused, &why) || answer_number(answers, "crossover_simple", &unused, &why);
  Sweep s;
  std::string sim_error = "not run";
  double sim_seconds = 0;
  bool have = false;
  if (asked) {
    const auto t0 = std::chrono::steady_clock::now();
    have = sweep(&s, &sim_error);
    sim_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  const size_t ll128_from = have ? crossover(s, "LL128", "LL") : 0;
  const size_t simple_from = have ? crossover(s, "Simple", "LL128") : 0;
  if (have && (ll128_from == 0 || simple_from == 0)) {
    have = false;
    sim_error = "no crossover in the sweep " + size_name(kSweepMin) + " .. " + size_name(kSweepMax);
  }
  const std::string sweep_cmd = std::string("cclab sim all_reduce --topo ") + kSimTopo + " --algo ring -b 1K -e 256M -f 2";
  // Exactly the size of the sweep (a neighbour is the other side of the crossover, not "close").
  CheckResult ll128 = check_size_answer(
      answers, answers_path, "crossover_ll128", "bytes from which LL128 beats LL, all_reduce on 8 simulated H100s",
      have, ll128_from, sim_error,
      "run the sweep with each protocol forced (" + sweep_cmd +
          " --compare \"--proto LL\" \"--proto LL128\") and find the first size at which LL128's time is smaller "
          "and stays smaller at every larger size (B/A time below 1 from that row to the last); that size itself, "
          "not the last size where LL wins");
  ll128.seconds = sim_seconds;
  add(ll128);
  add(check_size_answer(answers, answers_path, "crossover_simple", "bytes from which Simple beats LL128, same machine",
                        have, simple_from, sim_error,
                        "the same with " + sweep_cmd +
                            " --compare \"--proto LL128\" \"--proto Simple\": the first size from which Simple's "
                            "time is smaller at that size and every larger one"));
  return out;
}

// ---- `cclab lab run 03` -------------------------------------------------------------------------------

const char* kRunUsage =
    "usage: cclab lab run 03 [--data HEX] [--step S] [--dir DIR]\n"
    "\n"
    "Builds your ll_line.c and shows, for the 8 payload bytes HEX (default 0x0807060504030201) and step S\n"
    "(default 5): your LL line next to cclab's, what your lab_ll_unpack says of it and of the lines torn\n"
    "between step S and step S-1, and your LL128 line's flag word next to cclab's.\n";

int run_lab03(const LabEnv& env, const std::vector<std::string>& args) {
  uint64_t data = 0x0807060504030201ull, step = 5;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const bool has_value = i + 1 < args.size();
    char* end = nullptr;
    if (a == "--help" || a == "-h") {
      std::fputs(kRunUsage, stdout);
      return kLabExitOk;
    } else if ((a == "--data" || a == "--step") && has_value) {
      const std::string v = args[++i];
      const uint64_t x = std::strtoull(v.c_str(), &end, a == "--data" ? 16 : 10);
      if (v.empty() || *end != '\0' || (a == "--step" && x == 0)) {
        std::fprintf(stderr, "cclab lab run 03: %s: '%s' is not %s\n%s", a.c_str(), v.c_str(),
                     a == "--data" ? "a hexadecimal number" : "a step from 1", kRunUsage);
        return kLabExitUsage;
      }
      (a == "--data" ? data : step) = x;
    } else {
      std::fprintf(stderr, "cclab lab run 03: %s\n%s", (a == "--data" || a == "--step") ? (a + " needs a value").c_str()
                                                                                          : ("unknown flag " + a).c_str(),
                   kRunUsage);
      return kLabExitUsage;
    }
  }
  const std::string so = env.work_dir + "/ll_line.so";
  const CheckResult c = compile_student(env, {kSource}, so);
  if (!c.passed || !c.detail.empty()) std::fprintf(c.passed ? stdout : stderr, "%s\n", c.detail.c_str());
  if (!c.passed) {
    std::fprintf(stderr, "cclab lab run 03: %s did not compile\n", (env.student_dir + "/" + kSource).c_str());
    return kLabExitFailed;
  }
  const ChildOutcome o = run_in_child(
      [&]() -> nlohmann::json {
        StudentFns f{};
        std::string err;
        if (!load_fns(so, &f, &err)) return {{"load_error", err}};
        const uint32_t flag = f.flag(step);
        std::printf("step %" PRIu64 ": your flag %s, cclab's %s\n", step, hex(flag).c_str(), hex(ll_flag(step)).c_str());
        LLLine mine;
        std::memset(&mine, 0, sizeof mine);
        f.pack(data, ll_flag(step), &mine);
        const LLLine ref = ll_word_line(data, ll_flag(step));
        std::printf("LL line of %s, flag %s:\n  yours   %s\n  cclab's %s%s\n", hex(data, 16).c_str(),
                    hex(ll_flag(step)).c_str(), line_words(mine).c_str(), line_words(ref).c_str(),
                    same(&mine, &ref, sizeof ref) ? "  (the same)" : "  (DIFFERENT)");
        const LLLine old = ll_word_line(~data, ll_flag(step - 1));
        LLLine torn1 = ref, torn2 = ref;
        torn1.v[1] = old.v[1];
        torn2.v[0] = old.v[0];
        const std::pair<const char*, LLLine> lines[] = {{"cclab's line of this step", ref},
                                                        {"the previous step's line", old},
                                                        {"torn: first half new, second old", torn1},
                                                        {"torn: first half old, second new", torn2}};
        std::printf("your lab_ll_unpack with flag %s (want: ready only for the first):\n", hex(ll_flag(step)).c_str());
        for (const auto& [what, l] : lines) {
          uint64_t got = 0xdeaddeaddeaddeadull;
          const int ready = f.unpack(&l, ll_flag(step), &got);
          std::printf("  %-36s %s\n", what, ready ? ("ready, data " + hex(got, 16)).c_str() : "not ready");
        }
        uint64_t words[15];
        for (int i = 0; i < 15; ++i) words[i] = data + static_cast<uint64_t>(i);
        LL128Line m128, r128;
        std::memset(&m128, 0, sizeof m128);
        f.pack128(words, step + 1, &m128);
        ll128_pack(words, sizeof words, &r128, step + 1);
        std::printf("LL128 line of %s, %s + 1, ... and flag %" PRIu64 ": %s\n", hex(data, 16).c_str(),
                    hex(data, 16).c_str(), step + 1,
                    same(&m128, &r128, sizeof r128) ? "the same as cclab's" : "DIFFERENT from cclab's");
        return {{"ok", same(&mine, &ref, sizeof ref) && same(&m128, &r128, sizeof r128)}};
      },
      limit(env, kCheckTimeoutS), "", {});
  if (o.status != ChildOutcome::kOk) {
    std::printf("it %s\n", describe_outcome(o).c_str());
    return kLabExitFailed;
  }
  if (o.result.contains("load_error")) {
    std::printf("%s\n", o.result.value("load_error", std::string()).c_str());
    return kLabExitFailed;
  }
  return o.result.value("ok", false) ? kLabExitOk : kLabExitFailed;
}

}  // namespace

Lab make_lab03() {
  Lab l;
  l.number = "03";
  l.folder = "03-protocols";
  l.title = "Protocols: Simple, LL, LL128";
  l.written = true;
  l.student_files = {kSource, kAnswers};
  l.check = check_lab03;
  l.run = run_lab03;
  return l;
}

}  // namespace cclab::lab
