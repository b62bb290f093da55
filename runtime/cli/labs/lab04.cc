// runtime/cli/labs/lab04.cc - lab 4, "Ring vs double binary tree" (labs/04-ring-vs-tree/README.md): the
// checks of `cclab lab check 04` and the driver of `cclab lab run 04`.
//
// The student's double_tree.c defines lab_double_tree (labs/04-ring-vs-tree/double_tree.h): one node's
// parent and up to two children in tree 0 and tree 1 of a double binary tree over nnodes nodes, what
// kernels/trees.h's dtree() computes (NCCL's ncclGetDtree). A forked child calls it for every node of
// every nnodes in kNodeCounts; the grader then checks properties, not equality with NCCL's trees:
//   - each tree is a binary tree over every node: one root, links in range, parent and child links that
//     agree (so at most two children, the struct's slots), no cycles;
//   - depth (edges) at most ceil(log2 n) + 1 (NCCL's trees have exactly ceil(log2 n));
//   - complementary, what kernels/trees.h guarantees for NCCL's: for an even n no node is interior in
//     both trees; for an odd n at most one is (NCCL's: node 0, tree 0's root and the shifted image of
//     tree 0's last node);
//   - a reduce up each tree then a broadcast down, simulated on integers, leaves the sum on every node.
// The answers are recomputed from the simulator (sim::simulate, flow level, what `cclab sim --level flow`
// prints) on dgx-h100 x 4 and x 16, and from kernels/trees.h; nothing is stored here.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <vector>

#include "kernels/trees.h"
#include "lab_cmd.h"
#include "perf_options.h"
#include "sim/sim.h"

namespace cclab::lab {
namespace {
namespace fs = std::filesystem;

// Must match lab_tree_links of labs/04-ring-vs-tree/double_tree.h.
struct Links {
  int parent;
  int child[2];
};
using TreeFn = void (*)(int, int, Links*, Links*);

constexpr const char* kSource = "double_tree.c";
constexpr const char* kSymbol = "lab_double_tree";
constexpr const char* kAnswers = "answers.txt";
constexpr int kUnset = -12345;  // what the grader fills the links with before the call
constexpr double kTimeoutS = 20;
constexpr const char* kTopo = "dgx-h100";
constexpr int kNodes = 4;          // the race: dgx-h100 x 4, 32 GPUs
constexpr int kPpn = 8;            // GPUs per DGX H100
constexpr int kManyNodes = 16;     // the speedup question: dgx-h100 x 16, 128 GPUs
constexpr size_t kMinBytes = 64u << 10, kMaxBytes = 256u << 20;  // the sweep, x2
constexpr size_t kOneMiB = 1u << 20;
constexpr double kSpeedupTolerance = 0.05;

std::vector<int> node_counts() {
  std::vector<int> v;
  for (int n = 1; n <= 64; ++n) v.push_back(n);
  for (int n : {100, 255, 256}) v.push_back(n);
  return v;
}

double limit(const LabEnv& env, double own) { return env.timeout_s > 0 ? env.timeout_s : own; }

// ---- The student's trees ------------------------------------------------------------------------------

// trees[t][r] for one nnodes.
struct DTree {
  int n = 0;
  std::vector<Links> t[2];
};

// In the child: every node of every count. {"trees": [[n, [[p,c0,c1,p,c0,c1]...]]...]} or an error.
nlohmann::json call_student(const std::string& so, const std::vector<int>& counts) {
  std::string err;
  const auto fn = reinterpret_cast<TreeFn>(load_student_symbol(so, kSymbol, &err));
  if (!fn) return {{"load_error", err}};
  nlohmann::json all = nlohmann::json::array();
  for (int n : counts) {
    nlohmann::json nodes = nlohmann::json::array();
    for (int r = 0; r < n; ++r) {
      child_marker({{"nnodes", n}, {"node", r}});
      Links a{kUnset, {kUnset, kUnset}}, b{kUnset, {kUnset, kUnset}};
      fn(n, r, &a, &b);
      nodes.push_back({a.parent, a.child[0], a.child[1], b.parent, b.child[0], b.child[1]});
    }
    all.push_back({n, nodes});
  }
  return {{"trees", all}};
}

std::vector<DTree> parse_trees(const nlohmann::json& j) {
  std::vector<DTree> out;
  for (const auto& e : j["trees"]) {
    DTree d;
    d.n = e[0].get<int>();
    for (const auto& v : e[1]) {
      d.t[0].push_back({v[0].get<int>(), {v[1].get<int>(), v[2].get<int>()}});
      d.t[1].push_back({v[3].get<int>(), {v[4].get<int>(), v[5].get<int>()}});
    }
    out.push_back(std::move(d));
  }
  return out;
}

std::string link_text(int v) { return v == kUnset ? "never set" : std::to_string(v); }

// "" when links form a binary tree over 0 .. n-1, else the first problem.
std::string tree_problem(int n, const std::vector<Links>& t) {
  const auto in_range = [&](int v) { return v >= 0 && v < n; };
  for (int r = 0; r < n; ++r) {
    const Links& l = t[r];
    const std::string who = "node " + std::to_string(r);
    if (l.parent != -1 && !in_range(l.parent))
      return who + "'s parent is " + link_text(l.parent) + ": not a node (0 .. " + std::to_string(n - 1) + ") or -1";
    if (l.parent == r) return who + " is its own parent";
    for (int k = 0; k < 2; ++k) {
      if (l.child[k] != -1 && !in_range(l.child[k]))
        return who + "'s child[" + std::to_string(k) + "] is " + link_text(l.child[k]) + ": not a node (0 .. " +
               std::to_string(n - 1) + ") or -1";
      if (l.child[k] == r) return who + " is its own child";
    }
    if (l.child[0] != -1 && l.child[0] == l.child[1]) return who + " has node " + std::to_string(l.child[0]) + " twice as a child";
  }
  int roots = 0;
  for (int r = 0; r < n; ++r) roots += t[r].parent == -1 ? 1 : 0;
  if (roots != 1) {
    std::string list;
    for (int r = 0, shown = 0; r < n && shown < 4; ++r)
      if (t[r].parent == -1) list += (shown++ ? ", " : "") + std::to_string(r);
    return roots == 0 ? "no root (no node has parent -1)"
                      : std::to_string(roots) + " roots (nodes " + list + (roots > 4 ? ", ..." : "") +
                            " have parent -1); a tree has one";
  }
  for (int r = 0; r < n; ++r) {
    const int p = t[r].parent;
    if (p >= 0 && t[p].child[0] != r && t[p].child[1] != r)
      return "node " + std::to_string(r) + "'s parent is " + std::to_string(p) + ", but node " + std::to_string(p) +
             " does not list " + std::to_string(r) + " as a child" +
             (t[p].child[0] >= 0 && t[p].child[1] >= 0 ? " (it has two already: more would not be binary)" : "");
    for (int k = 0; k < 2; ++k) {
      const int c = t[r].child[k];
      if (c >= 0 && t[c].parent != r)
        return "node " + std::to_string(r) + " lists " + std::to_string(c) + " as a child, but node " +
               std::to_string(c) + "'s parent is " + std::to_string(t[c].parent);
    }
  }
  for (int r = 0; r < n; ++r) {
    int x = r, hops = 0;
    while (x >= 0 && hops <= n) {
      x = t[x].parent;
      ++hops;
    }
    if (hops > n) return "a cycle: following the parents from node " + std::to_string(r) + " never reaches the root";
  }
  return "";
}

int depth_of(const std::vector<Links>& t, int* deepest) {
  int depth = 0;
  *deepest = 0;
  for (size_t r = 0; r < t.size(); ++r) {
    int d = 0;
    for (int x = t[r].parent; x >= 0; x = t[x].parent) ++d;
    if (d > depth) {
      depth = d;
      *deepest = static_cast<int>(r);
    }
  }
  return depth;
}

int ceil_log2(int n) {
  int k = 0;
  while ((1 << k) < n) ++k;
  return k;
}

bool interior(const Links& l) { return l.child[0] >= 0 || l.child[1] >= 0; }

// Simulates a reduce of value r+1 on node r up the tree, then a broadcast down, in rounds of hops
// (every node sends as soon as it has all its children's sums). Returns "" and the rounds, or what
// went wrong.
std::string reduce_broadcast(int n, const std::vector<Links>& t, int* rounds) {
  std::vector<long long> acc(n);
  std::vector<int> got(n, 0), need(n, 0);
  std::vector<bool> sent(n, false);
  int root = -1;
  for (int r = 0; r < n; ++r) {
    acc[r] = r + 1;
    need[r] = (t[r].child[0] >= 0) + (t[r].child[1] >= 0);
    if (t[r].parent < 0) root = r;
  }
  *rounds = 0;
  for (;;) {
    std::vector<int> senders;
    for (int r = 0; r < n; ++r)
      if (r != root && !sent[r] && got[r] == need[r]) senders.push_back(r);
    if (senders.empty()) break;
    ++*rounds;
    for (int r : senders) {
      acc[t[r].parent] += acc[r];
      ++got[t[r].parent];
      sent[r] = true;
    }
  }
  const long long want = static_cast<long long>(n) * (n + 1) / 2;
  if (got[root] != need[root] || acc[root] != want)
    return "the reduce left " + std::to_string(acc[root]) + " on the root, want " + std::to_string(want);
  std::vector<long long> result(n, -1);
  result[root] = acc[root];
  for (bool more = true; more;) {
    more = false;
    std::vector<std::pair<int, long long>> deliveries;
    for (int r = 0; r < n; ++r)
      if (result[r] >= 0)
        for (int c : t[r].child)
          if (c >= 0 && result[c] < 0) deliveries.push_back({c, result[r]});
    if (!deliveries.empty()) {
      ++*rounds;
      more = true;
      for (const auto& [c, v] : deliveries) result[c] = v;
    }
  }
  for (int r = 0; r < n; ++r)
    if (result[r] != want)
      return "node " + std::to_string(r) + " ends with " + std::to_string(result[r]) + ", want " + std::to_string(want);
  return "";
}

// ---- The simulator's numbers --------------------------------------------------------------------------

bool sweep(int machines, const std::string& algo, size_t lo, size_t hi, std::vector<sim::SimSizeResult>* out,
           std::string* error) {
  sim::SimConfig cfg;
  cfg.topo = kTopo;
  cfg.machines = machines;
  cfg.coll = CollKind::kAllReduce;
  cfg.min_bytes = lo;
  cfg.max_bytes = hi;
  cfg.factor = 2;
  cfg.algo = algo;
  cfg.level = sim::SimLevel::kFlow;
  sim::SimResult res;
  if (!sim::simulate(cfg, &res, error)) return false;
  *out = res.sizes;
  return true;
}

// ---- The checks ---------------------------------------------------------------------------------------

std::vector<CheckResult> check_lab04(const LabEnv& env, const std::function<void(const CheckResult&)>& done) {
  std::vector<CheckResult> out;
  auto add = [&](CheckResult c) {
    out.push_back(c);
    done(out.back());
  };
  const std::string so = env.work_dir + "/double_tree.so";
  CheckResult compiled = compile_student(env, {kSource}, so);
  const bool built = compiled.passed;
  add(compiled);

  // Every node count in one child.
  const std::vector<int> counts = node_counts();
  std::vector<DTree> trees;
  std::string run_error;
  double run_seconds = 0;
  if (built) {
    const ChildOutcome o = run_in_child([&] { return call_student(so, counts); }, limit(env, kTimeoutS),
                                        env.work_dir + "/trees.log", {}, {"NCCL_", "CCLAB_"});
    run_seconds = o.seconds;
    if (o.status != ChildOutcome::kOk) {
      run_error = "your lab_double_tree " + describe_outcome(o);
      if (o.last_marker.is_object())
        run_error += " at nnodes " + std::to_string(o.last_marker.value("nnodes", 0)) + ", node " +
                     std::to_string(o.last_marker.value("node", 0));
      run_error += "\nrun it alone: cclab lab run 04 --nodes " +
                   (o.last_marker.is_object() ? std::to_string(o.last_marker.value("nnodes", 8)) : std::string("8")) +
                   where_flags(env);
    } else if (o.result.contains("load_error")) {
      run_error = o.result.value("load_error", std::string());
    } else if (o.result.contains("internal_error")) {
      run_error = "internal error: " + o.result.value("internal_error", std::string());
    } else {
      trees = parse_trees(o.result);
    }
  }
  const bool ran = built && run_error.empty();
  const std::string counts_text = "nnodes 1..64, 100, 255, 256";

  // 2, 3: each tree is a binary tree over every node.
  bool is_tree[2] = {false, false};
  for (int k = 0; k < 2; ++k) {
    CheckResult c;
    c.name = "tree " + std::to_string(k) + " is a binary tree over every node";
    c.seconds = k == 0 ? run_seconds : 0;
    if (!built) {
      c.skipped = true;
      c.detail = "skipped: your code did not compile";
    } else if (!ran) {
      c.detail = run_error;
      c.hint = "lab_double_tree must return for every node of every nnodes (no exit, no endless loop); "
               "add printf's and run the case alone";
    } else {
      std::string bad;
      int bad_n = 0;
      for (const auto& d : trees) {
        bad = tree_problem(d.n, d.t[k]);
        if (!bad.empty()) {
          bad_n = d.n;
          break;
        }
      }
      if (bad.empty()) {
        c.passed = true;
        c.detail = counts_text + ": one root, links that agree, no cycles";
      } else {
        c.detail = "nnodes " + std::to_string(bad_n) + ", tree " + std::to_string(k) + ": " + bad +
                   "\nsee it: cclab lab run 04 --nodes " + std::to_string(bad_n);
        c.hint = k == 0 ? "TODO 1: every node but the root has a parent, and the parent lists it as a child; a child "
                          "or parent number >= nnodes does not exist (the in-order tree's edge cases)"
                        : "TODO 2: tree 1 is tree 0 with every node renamed: rename the node you ask tree 0 about AND "
                          "the parent and children tree 0 gives back (mirror n-1-r for even n, shift by one for odd "
                          "n)";
      }
      is_tree[k] = bad.empty();
    }
    add(c);
  }

  // 4: depth.
  {
    CheckResult c;
    c.name = "both trees at most ceil(log2 n) + 1 deep";
    if (!is_tree[0] || !is_tree[1]) {
      c.skipped = true;
      c.detail = "skipped: needs both trees to be trees (above)";
    } else {
      std::string bad;
      int d256[2] = {0, 0};
      for (const auto& d : trees) {
        for (int k = 0; k < 2 && bad.empty(); ++k) {
          int deepest = 0;
          const int depth = depth_of(d.t[k], &deepest);
          const int bound = ceil_log2(d.n) + 1;
          if (d.n == 256) d256[k] = depth;
          if (depth > bound)
            bad = "nnodes " + std::to_string(d.n) + ", tree " + std::to_string(k) + ": node " +
                  std::to_string(deepest) + " is " + std::to_string(depth) + " hops from the root, more than " +
                  "ceil(log2 " + std::to_string(d.n) + ") + 1 = " + std::to_string(bound) +
                  "\nsee it: cclab lab run 04 --nodes " + std::to_string(d.n);
        }
        if (!bad.empty()) break;
      }
      if (bad.empty()) {
        c.passed = true;
        c.detail = counts_text + "; with 256 nodes tree 0 is " + std::to_string(d256[0]) + " and tree 1 " +
                   std::to_string(d256[1]) + " deep (NCCL's: ceil(log2 n) = 8)";
      } else {
        c.detail = bad;
        c.hint = "a chain (the skeleton) or a lopsided tree is n-1 deep: a reduce would take as many hops as a "
                 "ring's steps. Build the balanced in-order tree of TODO 1 (and tree 1 from it, TODO 2)";
      }
    }
    add(c);
  }

  // 5: complementary.
  {
    CheckResult c;
    c.name = "complementary: interior in at most one tree";
    if (!is_tree[0] || !is_tree[1]) {
      c.skipped = true;
      c.detail = "skipped: needs both trees to be trees (above)";
    } else {
      std::string bad;
      bool same_as_nccl = true;
      int differs_at = 0;
      for (const auto& d : trees) {
        std::vector<int> both;
        for (int r = 0; r < d.n; ++r)
          if (interior(d.t[0][r]) && interior(d.t[1][r])) both.push_back(r);
        const size_t allowed = d.n % 2 == 1 ? 1 : 0;
        if (bad.empty() && both.size() > allowed) {
          std::string list;
          for (size_t i = 0; i < both.size() && i < 5; ++i) list += (i ? ", " : "") + std::to_string(both[i]);
          bad = "nnodes " + std::to_string(d.n) + ": " + std::to_string(both.size()) +
                (both.size() == 1 ? " node is" : " nodes are") + " interior (with children) in both trees: " + list + (both.size() > 5 ? ", ..." : "") + "; at most " +
                std::to_string(allowed) + " may be (" + (d.n % 2 ? "odd" : "even") + " nnodes)" +
                "\nsee it: cclab lab run 04 --nodes " + std::to_string(d.n);
        }
        for (int r = 0; r < d.n && same_as_nccl; ++r) {
          TreeLinks a, b;
          dtree(d.n, r, &a, &b);
          for (int k = 0; k < 2 && same_as_nccl; ++k) {
            const TreeLinks& w = k == 0 ? a : b;
            const Links& g = d.t[k][r];
            std::vector<int> want(w.down, w.down + w.ndown), have;
            for (int x : g.child)
              if (x >= 0) have.push_back(x);
            std::sort(want.begin(), want.end());
            std::sort(have.begin(), have.end());
            if (w.up != g.parent || want != have) {
              same_as_nccl = false;
              differs_at = d.n;
            }
          }
        }
      }
      if (bad.empty()) {
        c.passed = true;
        c.detail = counts_text + ": no node interior in both trees for even n, at most one for odd n";
        c.detail += same_as_nccl ? "\nyour trees are NCCL's (ncclGetDtree), link for link"
                                 : "\nyour trees differ from NCCL's from nnodes " + std::to_string(differs_at) +
                                       " (allowed: only the properties are graded)";
      } else {
        c.detail = bad;
        c.hint = "each tree carries half of the data; a node interior in both trees does a parent's work (receive from "
                 "its children, add, send on) for both halves, and the double tree's bandwidth is lost. Odd nodes are tree 0's "
                 "leaves: build tree 1 so that they are its interior (TODO 2: mirror for even n, shift for odd n)";
      }
    }
    add(c);
  }

  // 6: the sum.
  {
    CheckResult c;
    c.name = "reduce up, broadcast down: every node gets the sum";
    if (!is_tree[0] || !is_tree[1]) {
      c.skipped = true;
      c.detail = "skipped: needs both trees to be trees (above)";
    } else {
      std::string bad;
      int hops64 = 0;
      for (const auto& d : trees) {
        for (int k = 0; k < 2 && bad.empty(); ++k) {
          int rounds = 0;
          const std::string e = reduce_broadcast(d.n, d.t[k], &rounds);
          if (!e.empty()) bad = "nnodes " + std::to_string(d.n) + ", tree " + std::to_string(k) + ": " + e;
          if (d.n == 64 && k == 0) hops64 = rounds;
        }
        if (!bad.empty()) break;
      }
      if (bad.empty()) {
        c.passed = true;
        c.detail = "node r starts with r+1, " + counts_text + ", both trees; on 64 nodes tree 0 takes " +
                   std::to_string(hops64) + " hops (up and down), a ring 2 x 63 = 126 steps";
      } else {
        c.detail = bad;
        c.hint = "the grader's bug rather than yours if the checks above pass: please report it";
      }
    }
    add(c);
  }

  // The answers.
  const std::string answers_path = env.student_dir + "/" + kAnswers;
  const Answers answers = read_answers(answers_path);
  auto missing = [&](CheckResult* c, const std::string& key, const std::string& what, const std::string& why) {
    c->detail = what + ": " + why + (answers.found ? "" : " (" + shown_path(answers_path) + ")");
    for (const auto& p : answers.problems) c->detail += "\n" + shown_path(answers_path) + ": " + p;
    c->hint = "write the line `" + key + " = YOUR ANSWER` in " + shown_path(answers_path) +
              " (the lab's README.md, \"Questions\")";
  };
  // A number answer, exact or within a relative tolerance (lab_cmd.h, check_answer).
  auto number_check = [&](const std::string& key, const std::string& what, bool have_want, double want,
                          double tolerance, const std::string& fail_why, const std::string& hint, double seconds) {
    CheckResult c = check_answer(answers, answers_path, key, what, have_want, want, tolerance, fail_why, hint);
    c.seconds = seconds;
    add(c);
  };
  // A size answer (bytes, or with K/M/G): exactly the size of the grader's sweep (lab_cmd.h).
  auto size_check = [&](const std::string& key, const std::string& what, bool have_want, double want,
                        const std::string& fail_why, const std::string& hint, double seconds) {
    CheckResult c = check_size_answer(answers, answers_path, key, what, have_want, static_cast<size_t>(want),
                                      fail_why, hint);
    c.seconds = seconds;
    add(c);
  };
  auto wants = [&](const std::string& key) { return answers.values.count(key) > 0; };

  const int ranks = kNodes * kPpn;
  number_check("ring_steps", "steps of a ring all_reduce on 32 ranks", true, 2.0 * (ranks - 1), 0, "",
               "lab 1: a reduce-scatter of n-1 steps, then an all-gather of n-1 more", 0);
  int hops = 0;
  for (int r = 0; r < ranks; ++r) {
    int d = 0;
    TreeLinks l;
    for (int x = r; x >= 0; x = l.up) {
      node_tree_with_chain(kNodes, kPpn, x, 0, &l);
      if (l.up >= 0) ++d;
    }
    hops = std::max(hops, d);
  }
  number_check("tree_hops", "hops from the deepest GPU to the root, NCCL's tree 0 on 4 DGX H100s", true, hops, 0, "",
               "inside a node the 8 GPUs are a chain (head first); between the 4 nodes, your tree 0 over 4 nodes. "
               "cclab topo --topo dgx-h100:4 ... or the channels view of cclab viz shows it",
               0);

  // The race on dgx-h100 x 4: Ring forced, Tree forced, and the tuner's choice, 64K .. 256M.
  std::vector<sim::SimSizeResult> ring, tree, tuner;
  std::string race_error;
  double race_seconds = 0;
  if (wants("crossover") || wants("tuner_1m") || wants("tuner_switch")) {
    const auto t0 = std::chrono::steady_clock::now();
    if (!sweep(kNodes, "ring", kMinBytes, kMaxBytes, &ring, &race_error) ||
        !sweep(kNodes, "tree", kMinBytes, kMaxBytes, &tree, &race_error) ||
        !sweep(kNodes, "", kMinBytes, kMaxBytes, &tuner, &race_error))
      race_error = "cclab sim failed: " + race_error;
    else if (ring.size() != tree.size() || ring.empty() || tuner.size() != ring.size())
      race_error = "cclab sim returned sweeps of different sizes";
    race_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  const bool have_race = race_error.empty() && !ring.empty();
  double crossover = 0, switch_at = 0;
  std::string tuner_1m;
  if (have_race) {
    for (size_t i = 0; i < ring.size(); ++i) {
      if (tree[i].time_us < ring[i].time_us) crossover = static_cast<double>(ring[i].bytes);
      if (tuner[i].bytes == kOneMiB) tuner_1m = algo_name(tuner[i].algo);
      // Where the tuner leaves Tree: for NVLS-Tree on these NVSwitch machines (NCCL 2.28.9's choice).
      if (switch_at == 0 && tuner[i].algo != AlgoKind::kTree) switch_at = static_cast<double>(tuner[i].bytes);
    }
  }
  const std::string race_cmd = "cclab sim all_reduce --topo dgx-h100:4 -b 64K -e 256M --level flow";
  size_check("crossover", "largest size at which Tree beats Ring, dgx-h100 x 4", have_race && crossover > 0, crossover,
             race_error.empty() ? "Tree never beat Ring" : race_error,
             "compare the two time columns: " + race_cmd +
                 " --compare \"--algo ring\" \"--algo tree\": the largest size whose B/A time (Tree's / Ring's) is "
                 "below 1, not the first size where Ring wins",
             0);
  {
    CheckResult c;
    c.name = "answer tuner_1m";
    c.seconds = race_seconds;
    const std::string what = "the tuner's algorithm at 1 MiB, dgx-h100 x 4";
    const auto it = answers.values.find("tuner_1m");
    if (!answers.found || it == answers.values.end()) {
      missing(&c, "tuner_1m", what, answers.found ? "no answer for 'tuner_1m' yet" : "there is no answers file");
    } else if (!have_race) {
      c.detail = what + ": " + race_error;
      c.hint = "this is not your answer's fault: check the cclab build";
    } else {
      std::string v = it->second;
      std::transform(v.begin(), v.end(), v.begin(), [](unsigned char ch) { return std::tolower(ch); });
      std::string want = tuner_1m;
      std::transform(want.begin(), want.end(), want.begin(), [](unsigned char ch) { return std::tolower(ch); });
      if (v != "ring" && v != "tree") {
        c.detail = what + ": '" + it->second + "' is neither ring nor tree";
        c.hint = "write tuner_1m = ring or tuner_1m = tree";
      } else if (v == want) {
        c.passed = true;
        c.detail = what + ": " + it->second + " is right";
      } else {
        c.detail = what + ": " + it->second + " is not right";
        c.hint = "the algo column of: " + race_cmd;
      }
    }
    add(c);
  }
  size_check("tuner_switch", "smallest size at which the tuner stops picking Tree, dgx-h100 x 4",
             have_race && switch_at > 0, switch_at, race_error.empty() ? "the tuner never left Tree" : race_error,
             "the algo column of: " + race_cmd + ": the first size whose algo is not Tree, not the last that is", 0);

  // Tree against Ring at 1 MiB on 16 nodes.
  double speedup = 0, speed_seconds = 0;
  std::string speed_error;
  if (wants("speedup_16_nodes")) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<sim::SimSizeResult> r16, t16;
    if (!sweep(kManyNodes, "ring", kOneMiB, kOneMiB, &r16, &speed_error) ||
        !sweep(kManyNodes, "tree", kOneMiB, kOneMiB, &t16, &speed_error) || r16.empty() || t16.empty()) {
      speed_error = "cclab sim failed: " + speed_error;
    } else {
      speedup = r16[0].time_us / t16[0].time_us;
    }
    speed_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  number_check("speedup_16_nodes", "Ring's time / Tree's at 1 MiB on dgx-h100 x 16", speedup > 0, speedup,
               kSpeedupTolerance, speed_error,
               "the B/A time column is Tree/Ring; you want Ring/Tree: cclab sim all_reduce --topo dgx-h100:16 -b 1M "
               "--level flow --compare \"--algo tree\" \"--algo ring\"",
               speed_seconds);
  return out;
}

// ---- `cclab lab run 04` -------------------------------------------------------------------------------

const char* kRunUsage =
    "usage: cclab lab run 04 [--nodes N] [--dir DIR] [--timeout S]\n"
    "\n"
    "Builds your double_tree.c, calls lab_double_tree for every node of N nodes (default 8, at most 4096),\n"
    "draws tree 0 and tree 1, lists every node's links, and says which of the graded properties hold\n"
    "for this N.\n";

void draw(const std::vector<Links>& t, int r, const std::string& prefix, bool last, bool top, int guard) {
  std::printf("    %s%s%d\n", prefix.c_str(), top ? "" : (last ? "`- " : "|- "), r);
  if (guard <= 0) return;
  std::vector<int> kids;
  for (int c : t[r].child)
    if (c >= 0 && c < static_cast<int>(t.size())) kids.push_back(c);
  for (size_t i = 0; i < kids.size(); ++i)
    draw(t, kids[i], top ? prefix : prefix + (last ? "   " : "|  "), i + 1 == kids.size(), false, guard - 1);
}

int run_lab04(const LabEnv& env, const std::vector<std::string>& args) {
  int n = 8;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      std::fputs(kRunUsage, stdout);
      return kLabExitOk;
    }
    if (a == "--nodes" && i + 1 < args.size()) {
      const std::string v = args[++i];
      char* end = nullptr;
      const long x = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || x < 1 || x > 4096) {
        std::fprintf(stderr, "cclab lab run 04: --nodes: '%s' is not a number from 1 to 4096\n%s", v.c_str(),
                     kRunUsage);
        return kLabExitUsage;
      }
      n = static_cast<int>(x);
    } else {
      std::fprintf(stderr, "cclab lab run 04: %s\n%s", a == "--nodes" ? "--nodes needs a value" : ("unknown flag " + a).c_str(),
                   kRunUsage);
      return kLabExitUsage;
    }
  }
  const std::string so = env.work_dir + "/double_tree.so";
  const CheckResult c = compile_student(env, {kSource}, so);
  if (!c.passed || !c.detail.empty()) std::fprintf(c.passed ? stdout : stderr, "%s\n", c.detail.c_str());
  if (!c.passed) {
    std::fprintf(stderr, "cclab lab run 04: %s did not compile\n", (env.student_dir + "/" + kSource).c_str());
    return kLabExitFailed;
  }
  const ChildOutcome o = run_in_child([&] { return call_student(so, {n}); }, limit(env, kTimeoutS), "");
  if (o.status != ChildOutcome::kOk) {
    std::printf("your lab_double_tree %s\n", describe_outcome(o).c_str());
    if (o.last_marker.is_object()) std::printf("at node %d\n", o.last_marker.value("node", 0));
    return kLabExitFailed;
  }
  if (o.result.contains("load_error") || o.result.contains("internal_error")) {
    std::printf("%s\n", o.result.value(o.result.contains("load_error") ? "load_error" : "internal_error", std::string()).c_str());
    return kLabExitFailed;
  }
  const DTree d = parse_trees(o.result)[0];
  std::printf("your lab_double_tree on %d node%s\n", n, n == 1 ? "" : "s");
  std::string problems[2];
  for (int k = 0; k < 2; ++k) {
    problems[k] = tree_problem(n, d.t[k]);
    int root = -1;
    for (int r = 0; r < n; ++r)
      if (d.t[k][r].parent == -1 && root < 0) root = r;
    std::printf("\n  tree %d%s\n", k, root >= 0 ? (" (root " + std::to_string(root) + ")").c_str() : "");
    if (n <= 64 && root >= 0 && problems[k].empty()) draw(d.t[k], root, "", true, true, n);
  }
  std::printf("\n  node   tree 0: parent children   tree 1: parent children   interior in\n");
  const auto kids = [](const Links& l) {
    std::string s;
    for (int x : l.child)
      if (x != -1) s += (s.empty() ? "" : ",") + link_text(x);
    return s.empty() ? std::string("-") : s;
  };
  int both = 0;
  for (int r = 0; r < n && r < 256; ++r) {
    const Links &a = d.t[0][r], &b = d.t[1][r];
    const bool i0 = interior(a), i1 = interior(b);
    both += i0 && i1;
    std::printf("  %4d   %14s %-9s %14s %-9s   %s\n", r, link_text(a.parent).c_str(), kids(a).c_str(),
                link_text(b.parent).c_str(), kids(b).c_str(),
                i0 && i1 ? "BOTH" : i0 ? "tree 0" : i1 ? "tree 1" : "neither (a leaf in both)");
  }
  if (n > 256) std::printf("  ... (%d more nodes)\n", n - 256);
  std::printf("\n");
  bool ok = true;
  for (int k = 0; k < 2; ++k) {
    if (!problems[k].empty()) {
      ok = false;
      std::printf("tree %d is not a binary tree over every node: %s\n", k, problems[k].c_str());
      continue;
    }
    int deepest = 0;
    const int depth = depth_of(d.t[k], &deepest);
    const int bound = ceil_log2(n) + 1;
    std::printf("tree %d: a binary tree, %d deep (node %d; at most ceil(log2 %d) + 1 = %d)%s\n", k, depth, deepest, n,
                bound, depth > bound ? ": TOO DEEP" : "");
    ok = ok && depth <= bound;
  }
  const int allowed = n % 2;
  std::printf("interior in both trees: %d node%s (at most %d for %s nnodes)%s\n", both, both == 1 ? "" : "s", allowed,
              n % 2 ? "odd" : "even", both > allowed ? ": NOT COMPLEMENTARY" : "");
  ok = ok && both <= allowed;
  return ok ? kLabExitOk : kLabExitFailed;
}

}  // namespace

Lab make_lab04() {
  Lab l;
  l.number = "04";
  l.folder = "04-ring-vs-tree";
  l.title = "Ring vs double binary tree";
  l.written = true;
  l.student_files = {kSource, kAnswers};
  l.check = check_lab04;
  l.run = run_lab04;
  return l;
}

}  // namespace cclab::lab
