// runtime/cli/labs/lab06.cc - lab 6, "Across nodes" (labs/06-across-nodes/README.md): the checks of
// `cclab lab check 06` and the driver of `cclab lab run 06`.
//
// The student designs the network of a cluster of DGX H100s (at least 32 machines, 256 GPUs) in
// cluster.txt: machines, NIC ports per machine, their speed, and the fabric's oversubscription. The
// grader prices it with the README's price list (cost_of below: NIC ports, leaf and spine switch
// ports), simulates a 1 GiB all_reduce on it with `cclab sim` (a subprocess with a time limit, the
// what-if flags --nics-per-node, --nic-bw and --oversubscription), checks that it meets the target
// time, and checks that it costs at most 5% more than the cheapest design the grader finds itself: it
// walks every allowed design in order of cost, skips the ones whose NICs alone cannot move the bytes in
// time (a lower bound, no simulation) and simulates the others until one meets the target. It says
// only the verdict, never which design that is or what it costs: that is the exercise. The answers
// are recomputed from `cclab sim` runs, only for the answers the student has written.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "lab_cmd.h"

namespace cclab::lab {
namespace {

constexpr const char* kCluster = "cluster.txt";
constexpr const char* kAnswers = "answers.txt";
constexpr const char* kPreset = "dgx-h100";
constexpr int kGpusPerNode = 8;
constexpr int kMinNodes = 32;  // 256 GPUs
constexpr int kMaxNodes = 64;
constexpr int kMaxNics = 8;            // a DGX H100's compute NIC ports
constexpr int kMachinesPerLeaf = 32;   // FabricSpec::machines_per_leaf: one leaf per rail and 32 machines
constexpr const char* kSize = "1G";    // the target's all_reduce
constexpr double kBytes = 1073741824.0;
constexpr double kTargetUs = 14000;    // at most 14 ms: busbw >= 152.8 GB/s on 256 GPUs
constexpr double kCostTolerance = 0.05;
constexpr double kTolerance = 0.05;    // the answers
constexpr int kMaxSearchRuns = 12;     // simulations the search may take (it needs 6 with the README's prices)
constexpr const char* kPcie = "pcie-8gpu-2socket:4";  // oversub_pcie: rings that change rails
constexpr const char* kPcieSize = "256M";

// The README's price list (k$, illustrative): one NIC port (the NIC, its transceiver and cable) and
// one switch port, by speed.
struct PortPrice {
  int gbps;
  double nic, switch_port;
};
constexpr PortPrice kPrices[] = {{200, 1.0, 0.5}, {400, 1.6, 0.8}, {800, 3.0, 1.6}};
constexpr double kOversubscriptions[] = {1, 2, 4};

struct Design {
  int nodes = 0, nics = 0, gbps = 0;
  double oversubscription = 0;
};

const PortPrice* price_of(int gbps) {
  for (const PortPrice& p : kPrices)
    if (p.gbps == gbps) return &p;
  return nullptr;
}

struct Cost {
  int nic_ports = 0, uplinks = 0, switch_ports = 0;
  double total = 0;
};

// NIC ports: nodes x nics, each cabled to a leaf port of its rail (one leaf per rail and 32 machines).
// Each leaf's uplinks: its down ports / oversubscription, rounded up; an uplink takes a leaf port and a
// spine port.
Cost cost_of(const Design& d) {
  Cost c;
  c.nic_ports = d.nodes * d.nics;
  for (int first = 0; first < d.nodes; first += kMachinesPerLeaf) {
    const int members = std::min(kMachinesPerLeaf, d.nodes - first);
    c.uplinks += d.nics * static_cast<int>(std::ceil(members / d.oversubscription - 1e-9));
  }
  c.switch_ports = c.nic_ports + 2 * c.uplinks;
  const PortPrice* p = price_of(d.gbps);
  c.total = p ? c.nic_ports * p->nic + c.switch_ports * p->switch_port : 0;
  return c;
}

std::string oversub_text(double o) { return format_double(o, 0) + ":1"; }

std::string describe(const Design& d) {
  return std::to_string(d.nodes) + " x DGX H100 (" + std::to_string(d.nodes * kGpusPerNode) + " GPUs), " +
         std::to_string(d.nics) + " x " + std::to_string(d.gbps) + "G NIC port(s) each, " +
         oversub_text(d.oversubscription);
}

std::string money(double v) { return format_double(v, 1) + " k$"; }

std::string cost_text(const Design& d) {
  const Cost c = cost_of(d);
  const PortPrice* p = price_of(d.gbps);
  if (!p) return "";
  return std::to_string(c.nic_ports) + " NIC ports x " + format_double(p->nic, 1) + " + " +
         std::to_string(c.switch_ports) + " switch ports (" + std::to_string(c.nic_ports) + " down, " +
         std::to_string(c.uplinks) + " up x 2) x " + format_double(p->switch_port, 1) + " = " + money(c.total);
}

// `cclab sim` of the target's all_reduce on a design.
std::vector<std::string> sim_args(const Design& d) {
  return {"sim", "all_reduce", "--topo", std::string(kPreset) + ":" + std::to_string(d.nodes), "-b", kSize, "-e",
          kSize, "--nics-per-node", std::to_string(d.nics), "--nic-bw", format_double(d.gbps / 8.0, 0),
          "--oversubscription", format_double(d.oversubscription, 0), "--level", "flow"};
}

// The time the NICs alone need (us): every machine sends 2(n-1)/n of the buffer into the network in a
// ring or tree all_reduce, over nics x speed. No design is faster; the search skips those slower than
// the target without simulating them.
double nic_bound_us(const Design& d) {
  const double n = d.nodes * kGpusPerNode;
  return 2 * (n - 1) / n * kBytes / (d.nics * d.gbps / 8.0 * 1e3);
}

// ---- cluster.txt ----------------------------------------------------------------------------------------

const char* const kKeys[] = {"nodes", "nics_per_node", "nic_gbps", "oversubscription"};

// The design of a cluster.txt, or false and *why (every problem, one a line).
bool read_design(const Answers& a, const std::string& path, Design* d, std::string* why) {
  std::vector<std::string> bad;
  if (!a.found) {
    *why = shown_path(path) + " does not exist";
    return false;
  }
  for (const std::string& p : a.problems) bad.push_back(shown_path(path) + ": " + p);
  for (const auto& kv : a.values) {
    if (std::find(std::begin(kKeys), std::end(kKeys), kv.first) == std::end(kKeys))
      bad.push_back("unknown key '" + kv.first + "' (the keys are nodes, nics_per_node, nic_gbps, oversubscription)");
  }
  auto integer = [&](const char* key, int lo, int hi, const std::string& range, int* out) {
    double v = 0;
    std::string w;
    if (a.values.count(key) == 0) {
      bad.push_back(std::string("no line `") + key + " = ...`");
    } else if (!answer_number(a, key, &v, &w)) {
      bad.push_back(w);
    } else if (v != std::floor(v) || v < lo || v > hi) {
      bad.push_back(key + std::string(" = ") + a.values.at(key) + ": " + range);
    } else {
      *out = static_cast<int>(v);
    }
  };
  integer("nodes", kMinNodes, kMaxNodes,
          "give " + std::to_string(kMinNodes) + " to " + std::to_string(kMaxNodes) + " DGX H100s (8 GPUs each; at least 256 GPUs)",
          &d->nodes);
  integer("nics_per_node", 1, kMaxNics, "a DGX H100 has 1 to 8 compute NIC ports in use", &d->nics);
  integer("nic_gbps", 1, 100000, "", &d->gbps);
  if (d->gbps > 0 && !price_of(d->gbps))
    bad.push_back("nic_gbps = " + a.values.at("nic_gbps") + ": the price list sells 200, 400 and 800 (Gb/s" +
                  (d->gbps <= 100 ? "; 400 Gb/s is 50 GB/s: the file takes Gb/s, as NICs are sold)" : ")"));
  {
    const auto it = a.values.find("oversubscription");
    std::string text = it == a.values.end() ? "" : it->second;
    if (text.size() > 2 && text.compare(text.size() - 2, 2, ":1") == 0) text.resize(text.size() - 2);  // "2:1"
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (it == a.values.end()) {
      bad.push_back("no line `oversubscription = ...`");
    } else if (text.empty() || *end != '\0' ||
               std::find(std::begin(kOversubscriptions), std::end(kOversubscriptions), v) == std::end(kOversubscriptions)) {
      bad.push_back("oversubscription = " + it->second + ": the switches support 1, 2 or 4 (1:1, 2:1, 4:1)");
    } else {
      d->oversubscription = v;
    }
  }
  std::string all;
  for (const std::string& b : bad) all += (all.empty() ? "" : "\n") + b;
  *why = all;
  return bad.empty();
}

// ---- Simulations -----------------------------------------------------------------------------------------

// Runs `cclab sim ... --csv -` in a clean environment (NCCL_* and CCLAB_* of the student's shell would
// change what runs), each distinct command once.
class Simulations {
 public:
  explicit Simulations(double timeout_s) : timeout_s_(timeout_s) {}
  bool run(const std::vector<std::string>& args, SimRow* row, std::string* error) {
    auto it = memo_.find(args);
    if (it == memo_.end()) {
      Result res;
      std::vector<std::string> argv{"env", "-i"};
      if (const char* path = std::getenv("PATH")) argv.push_back(std::string("PATH=") + path);
      argv.push_back(self_exe());
      argv.insert(argv.end(), args.begin(), args.end());
      argv.insert(argv.end(), {"--no-progress", "--csv", "-"});
      const CommandResult r = run_command(argv, timeout_s_);
      std::vector<SimRow> rows;
      if (r.started && !r.timed_out && r.exit_code == 0 && parse_sim_csv(r.output, &rows)) {
        res.ok = true;
        res.row = rows.front();
      } else {
        res.error = cclab_command_line(args) + ": " + describe_command(r, timeout_s_) + "\n" + output_tail(r.output, 6);
      }
      ++runs_;
      it = memo_.emplace(args, res).first;
    }
    if (row) *row = it->second.row;
    if (error) *error = it->second.error;
    return it->second.ok;
  }
  int runs() const { return runs_; }

 private:
  struct Result {
    bool ok = false;
    SimRow row;
    std::string error;
  };
  double timeout_s_;
  std::map<std::vector<std::string>, Result> memo_;
  int runs_ = 0;
};

// The cheapest allowed design whose all_reduce meets the target, or false and *error.
bool cheapest_design(Simulations* sims, Design* best, SimRow* best_row, int* simulated, std::string* error) {
  std::vector<Design> all;
  for (int n = kMinNodes; n <= kMaxNodes; ++n)
    for (int k = 1; k <= kMaxNics; ++k)
      for (const PortPrice& p : kPrices)
        for (double o : kOversubscriptions) {
          const Design d{n, k, p.gbps, o};
          if (nic_bound_us(d) <= kTargetUs) all.push_back(d);
        }
  std::stable_sort(all.begin(), all.end(), [](const Design& a, const Design& b) { return cost_of(a).total < cost_of(b).total; });
  *simulated = 0;
  // More machines than 32 with the same NIC ports and spine cost more and are no faster (the all_reduce
  // spans every GPU: longer rings, deeper trees, and past 32 machines the spine): a port choice that
  // missed the target on 32 machines is not simulated again on more (the 32-machine design is cheaper,
  // so it came first).
  std::set<std::tuple<int, int, double>> missed;
  for (const Design& d : all) {
    const auto ports = std::make_tuple(d.nics, d.gbps, d.oversubscription);
    if (d.nodes > kMinNodes && missed.count(ports)) continue;
    if (*simulated >= kMaxSearchRuns) break;
    ++*simulated;
    SimRow row;
    if (!sims->run(sim_args(d), &row, error)) return false;
    if (row.time_us > kTargetUs && d.nodes == kMinNodes) missed.insert(ports);
    if (row.time_us <= kTargetUs) {
      *best = d;
      *best_row = row;
      return true;
    }
  }
  *error = "the grader's search found no design meeting the target within " + std::to_string(kMaxSearchRuns) +
           " simulations";
  return false;
}

std::string ms(double us) { return format_double(us / 1000, 2) + " ms"; }

std::string row_text(const SimRow& r) {
  return ms(r.time_us) + ", busbw " + format_double(r.busbw, 1) + " GB/s (" + r.algo + "/" + r.proto + ", " +
         std::to_string(r.nchannels) + " channels)";
}

// ---- The checks ------------------------------------------------------------------------------------------

std::vector<CheckResult> check_lab06(const LabEnv& env, const std::function<void(const CheckResult&)>& done) {
  std::vector<CheckResult> out;
  auto now = [] { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); };
  double last = now();
  auto add = [&](CheckResult c) {
    const double t = now();
    c.seconds = t - last;
    last = t;
    out.push_back(c);
    done(out.back());
  };
  Simulations sims(check_limit(env, 60));
  const std::string cluster_path = env.student_dir + "/" + kCluster;

  // 1. The file.
  Design mine;
  bool valid = false;
  {
    CheckResult c;
    c.name = "cluster.txt: a design from the price list";
    std::string why;
    if (!read_design(read_answers(cluster_path), cluster_path, &mine, &why)) {
      c.detail = why;
      c.hint = "one `key = value` line each for nodes, nics_per_node, nic_gbps and oversubscription, with the "
               "values the README's price list offers (README, \"The design\")";
    } else {
      c.passed = valid = true;
      c.detail = describe(mine) + "\ncost: " + cost_text(mine);
    }
    add(c);
  }

  // 2. The target.
  SimRow my_row;
  bool meets = false;
  std::string my_error;
  const std::string run_cmd = "cclab lab run 06";
  {
    CheckResult c;
    c.name = "meets the target: 1 GiB all_reduce in <= " + ms(kTargetUs);
    if (!valid) {
      c.skipped = true;
      c.detail = "skipped: needs a valid cluster.txt (above)";
    } else if (!sims.run(sim_args(mine), &my_row, &my_error)) {
      c.detail = my_error;
      c.hint = "this is not your design's fault: check the cclab build";
    } else {
      meets = my_row.time_us <= kTargetUs;
      c.passed = meets;
      c.detail = row_text(my_row) + "\n" + cclab_command_line(sim_args(mine));
      if (!meets) {
        const double n = mine.nodes * kGpusPerNode;
        c.hint = "too slow by " + format_double((my_row.time_us / kTargetUs - 1) * 100, 0) + "%: the target needs busbw >= " +
                 format_double(kBytes / (kTargetUs * 1e3) * 2 * (n - 1) / n, 1) +
                 " GB/s. Across machines busbw is set by what each machine's NICs move (NIC ports x speed), and "
                 "a port moves no more than the PCIe slot it sits in (README, step 4). See it: " + run_cmd;
      }
    }
    add(c);
  }

  // 3. The cost.
  {
    CheckResult c;
    c.name = "cost within " + format_double(kCostTolerance * 100, 0) + "% of the cheapest design that meets it";
    Design best;
    SimRow best_row;
    int simulated = 0;
    std::string error;
    if (!valid || !meets) {
      c.skipped = true;
      c.detail = "skipped: needs a design that meets the target (above)";
    } else if (!cheapest_design(&sims, &best, &best_row, &simulated, &error)) {
      c.detail = error;
      c.hint = "this is not your design's fault: check the cclab build";
    } else {
      // The verdict only: the cheapest design's cost or parameters (or the ratio to it) would be the answer.
      const double have = cost_of(mine).total, want = cost_of(best).total;
      if (have <= want * (1 + kCostTolerance) + 1e-9) {
        c.passed = true;
        c.detail = "yours " + money(have) + ": " + describe(mine) + ", " + ms(my_row.time_us) +
                   ": within " + format_double(kCostTolerance * 100, 0) +
                   "% of the cheapest design the grader found that meets the target";
      } else {
        c.detail = "yours " + money(have) + ": not the cheapest: the grader found a design that meets the target for "
                   "more than " + format_double(kCostTolerance * 100, 0) + "% less (it searched every allowed design "
                   "in order of cost, simulating those whose NICs could move the bytes in time)";
        c.hint = "your all_reduce takes " + ms(my_row.time_us) + " of the " + ms(kTargetUs) +
                 " allowed: which parts of the network does it not need? cclab lab run 06 prices and simulates "
                 "your design and sums its bytes on the network's links by tier: does any cross the spine (leaf -> "
                 "spine)? Then look at what fewer or faster NIC ports give (README, steps 3-5)";
      }
    }
    add(c);
  }

  // 4. The answers: recomputed only for those written.
  const std::string answers_path = env.student_dir + "/" + kAnswers;
  const Answers answers = read_answers(answers_path);
  auto written = [&](const char* key) {
    double v = 0;
    std::string why;
    return answer_number(answers, key, &v, &why);
  };
  const Design reference{kMinNodes, kMaxNics, 400, 1};  // dgx-h100:32 as built: 8 x 400G, 1:1
  auto busbw_answer = [&](const char* key, const std::string& what, int nics, int gbps, const std::string& flags) {
    SimRow r;
    std::string e;
    Design d = reference;
    d.nics = nics;
    d.gbps = gbps;
    const bool have = written(key) && sims.run(sim_args(d), &r, &e);
    add(check_answer(answers, answers_path, key, what, have, r.busbw, kTolerance, e,
                     "the busbw column of cclab sim all_reduce --topo dgx-h100:32 -b 1G" + flags));
  };
  busbw_answer("busbw_8x400", "busbw (GB/s) of a 1 GiB all_reduce on dgx-h100:32 as built (8 x 400G per machine)",
               8, 400, "");
  busbw_answer("busbw_4x400", "the same with 4 NIC ports per machine", 4, 400, " --nics-per-node 4");
  busbw_answer("busbw_2x800", "the same with 2 NIC ports of 800 Gb/s per machine", 2, 800,
               " --nics-per-node 2 --nic-bw 100");
  // The time at 4:1 over the time at 1:1 of the same run.
  auto ratio_answer = [&](const char* key, const std::string& what, const std::vector<std::string>& one_to_one,
                          const std::vector<std::string>& four_to_one, const std::string& cmd) {
    SimRow one, four;
    std::string e;
    const bool have = written(key) && sims.run(one_to_one, &one, &e) && sims.run(four_to_one, &four, &e) && one.time_us > 0;
    add(check_answer(answers, answers_path, key, what, have, have ? four.time_us / one.time_us : 0, kTolerance, e,
                     "the B/A time column of " + cmd + " --compare \"--oversubscription 1\" \"--oversubscription 4\""));
  };
  Design four_to_one = reference;
  four_to_one.oversubscription = 4;
  ratio_answer("oversub_dgx", "time at 4:1 / time at 1:1, 1 GiB all_reduce on dgx-h100:32", sim_args(reference),
               sim_args(four_to_one), "cclab sim all_reduce --topo dgx-h100:32 -b 1G --level flow");
  // Step level: every slice of these rings is simulated (flow level gets this crossNic ring wrong at 1:1).
  const std::vector<std::string> pcie{"sim", "all_reduce", "--topo", kPcie, "-b", kPcieSize, "-e", kPcieSize,
                                      "--level", "step", "--oversubscription"};
  std::vector<std::string> pcie1 = pcie, pcie4 = pcie;
  pcie1.push_back("1");
  pcie4.push_back("4");
  ratio_answer("oversub_pcie", "the same for 256 MiB on pcie-8gpu-2socket:4", pcie1, pcie4,
               std::string("cclab sim all_reduce --topo ") + kPcie + " -b " + kPcieSize + " --level step");
  return out;
}

// ---- cclab lab run 06 ------------------------------------------------------------------------------------

const char* kRunUsage =
    "usage: cclab lab run 06 [--dir DIR]\n"
    "\n"
    "Reads your cluster.txt, prints its cost from the README's price list, then simulates the target's\n"
    "all_reduce (1 GiB) on it with cclab sim and the what-if flags it stands for, and sums the bytes on\n"
    "the network's links by tier: NIC ports to leaf switches, leaves to the spine.\n";

int run_lab06(const LabEnv& env, const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a == "--help" || a == "-h") {
      std::fputs(kRunUsage, stdout);
      return kLabExitOk;
    }
    std::fprintf(stderr, "cclab lab run 06: unknown flag %s\n%s", a.c_str(), kRunUsage);
    return kLabExitUsage;
  }
  const std::string path = env.student_dir + "/" + kCluster;
  Design d;
  std::string why;
  if (!read_design(read_answers(path), path, &d, &why)) {
    std::fprintf(stderr, "cclab lab run 06: %s\n", why.c_str());
    return kLabExitFailed;
  }
  const std::vector<std::string> cmd = sim_args(d);
  std::printf("# design: %s\n# cost: %s\n# target: all_reduce of 1 GiB in at most %s\n# %s --links 100000\n",
              describe(d).c_str(), cost_text(d).c_str(), ms(kTargetUs).c_str(), cclab_command_line(cmd).c_str());
  std::fflush(stdout);
  std::vector<std::string> argv{self_exe()};
  argv.insert(argv.end(), cmd.begin(), cmd.end());
  argv.insert(argv.end(), {"--no-progress", "--links", "100000"});
  const CommandResult r = run_command(argv, check_limit(env, 120));
  if (!r.started || r.timed_out || r.exit_code != 0) {
    std::fprintf(stderr, "cclab lab run 06: %s\n%s\n", describe_command(r, check_limit(env, 120)).c_str(),
                 output_tail(r.output, 6).c_str());
    return kLabExitFailed;
  }
  // The simulation's table, then its network links by tier instead of every link.
  struct Tier {
    const char* what;
    int links = 0;
    double gb = 0, peak = 0;
  };
  Tier tiers[] = {{"NIC port -> leaf"}, {"leaf -> NIC port"}, {"leaf -> spine"}, {"spine -> leaf"}};
  std::istringstream in(r.output);
  bool in_links = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# Busiest links", 0) == 0) in_links = true;
    if (!in_links) {
      std::printf("%s\n", line.c_str());
      continue;
    }
    std::istringstream f(line);
    std::string name;
    double gb = 0, avg = 0;
    if (!(f >> name >> gb >> avg)) continue;
    const size_t arrow = name.find("->");
    if (arrow == std::string::npos) continue;
    const std::string from = name.substr(0, arrow), to = name.substr(arrow + 2);
    const bool leaf_from = from.rfind("fabric.leaf", 0) == 0, leaf_to = to.rfind("fabric.leaf", 0) == 0;
    Tier* t = nullptr;
    if (leaf_to && from.rfind("fabric.spine", 0) == 0) t = &tiers[3];
    else if (leaf_from && to.rfind("fabric.spine", 0) == 0) t = &tiers[2];
    else if (leaf_to) t = &tiers[0];
    else if (leaf_from) t = &tiers[1];
    if (!t || gb <= 0) continue;
    ++t->links;
    t->gb += gb;
    t->peak = std::max(t->peak, avg);
  }
  std::printf("#\n# The network's links that carried bytes (average GB/s over the run):\n");
  std::printf("# %-18s %6s %10s %14s\n", "tier", "links", "GB", "busiest GB/s");
  for (const Tier& t : tiers)
    std::printf("  %-18s %6d %10.3f %14.2f\n", t.what, t.links, t.gb, t.peak);
  return kLabExitOk;
}

}  // namespace

Lab make_lab06() {
  Lab l;
  l.number = "06";
  l.folder = "06-across-nodes";
  l.title = "Across nodes";
  l.written = true;
  l.student_files = {kCluster, kAnswers};
  l.check = check_lab06;
  l.run = run_lab06;
  return l;
}

}  // namespace cclab::lab
