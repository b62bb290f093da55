// runtime/cli/labs/lab05.cc - lab 5, "Topology and channels" (labs/05-topology-channels/README.md): the
// checks of `cclab lab check 05` and the driver of `cclab lab run 05`.
//
// The student's machine.xml is NCCL's topology XML (docs/topology-xml.md) of a two-socket PCIe server
// with 8 GPUs and 2 NICs, two of them joined by a rail-optimised fabric (cclab's <fabric machines="2">).
// The skeleton loads but has a mistake: the rings the search finds must cross the CPU-CPU link (SYS)
// twice inside each machine. The grader reads it with cclab's loader (an error is the check's detail,
// never a crash), checks that it is still the machine of the README (2 machines, 8 GPUs, 4 per socket,
// 2 CPUs, 2 NICs, no NVLink), runs NCCL's channel search on it (graph/search.h, what `cclab topo`
// prints) and asks that every ring crosses SYS at most once per machine, with the channel count and
// bandwidth the search finds on the same machine built by cclab (the preset pcie-8gpu-2socket:2).
// The answers are recomputed from the search and the tuner on presets (dgx-h100, pcie-8gpu-2socket);
// nothing is stored here.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>
#include <vector>

#include "graph/search.h"
#include "graph/topo.h"
#include "graph/tuning.h"
#include "lab_cmd.h"
#include "topo_cmd.h"
#include "tune_cmd.h"

namespace cclab::lab {
namespace {

constexpr const char* kXml = "machine.xml";
constexpr const char* kAnswers = "answers.txt";
constexpr const char* kReference = "pcie-8gpu-2socket";  // the machine machine.xml describes
constexpr int kMachines = 2;
constexpr int kGpus = 8;
constexpr int kSockets = 2;
constexpr size_t kBusbwBytes = size_t{1} << 30;  // the busbw questions: all_reduce of 1 GiB
constexpr double kTolerance = 0.05;

// ---- The graph ----------------------------------------------------------------------------------------

// A topology with its searched ring and tree graphs.
struct Searched {
  Topology topo;
  TopoGraph ring, tree;
};

bool preset(const std::string& name, int machines, Searched* s, std::string* error) {
  if (!make_preset_topology(name, machines, FabricSpec{}, &s->topo, error)) return false;
  return search_ring_and_tree(s->topo, &s->ring, &s->tree, error);
}

int net_node(const Topology& topo, int machine, int dev) {
  for (int n : topo.nets(machine))
    if (topo.nodes[n].dev == dev) return n;
  return -1;
}

std::string node_label(const Topology& topo, int n) {
  const TopoNode& x = topo.nodes[n];
  return std::string(x.type == TopoNodeType::kNet ? "NET/" : "GPU/") + std::to_string(x.dev);
}

// How often channel c of the ring crosses a SYS link inside machine 0: along NET in -> GPUs -> NET out
// across machines, around the ring (last GPU back to the first) on one machine. *where lists the hops.
int sys_crossings(const Topology& topo, const TopoGraph& ring, int c, std::string* where) {
  std::vector<int> seq;
  const bool across = c < static_cast<int>(ring.inter.size()) && ring.inter[c].size() == 2;
  if (across) seq.push_back(net_node(topo, 0, ring.inter[c][0]));
  for (int g : ring.intra[c]) seq.push_back(topo.gpu_node(0, g));
  if (across)
    seq.push_back(net_node(topo, 0, ring.inter[c][1]));
  else if (!seq.empty())
    seq.push_back(seq.front());
  int n = 0;
  if (where) where->clear();
  for (size_t i = 0; i + 1 < seq.size(); ++i) {
    if (seq[i] < 0 || seq[i + 1] < 0 || seq[i] == seq[i + 1]) continue;
    int here = 0;
    for (int l : topo.path(seq[i], seq[i + 1]).links) here += topo.links[l].type == LinkType::kSys ? 1 : 0;
    if (here > 0 && where)
      *where += (where->empty() ? "" : ", ") + node_label(topo, seq[i]) + " -> " + node_label(topo, seq[i + 1]);
    n += here;
  }
  return n;
}

std::string channel_text(const Topology& topo, const TopoGraph& ring, int c) {
  std::string s;
  const bool across = c < static_cast<int>(ring.inter.size()) && ring.inter[c].size() == 2;
  if (across) s += "NET/" + std::to_string(ring.inter[c][0]) + " ";
  for (int g : ring.intra[c]) s += "GPU/" + std::to_string(g) + " ";
  if (across) s += "NET/" + std::to_string(ring.inter[c][1]) + " ";
  (void)topo;
  if (!s.empty()) s.pop_back();
  return s;
}

// The CPU (numaid) a GPU or NET node hangs off: the CPU its path reaches without crossing SYS.
int local_cpu(const Topology& topo, int n) {
  for (int cpu : topo.nodes_of(TopoNodeType::kCpu, topo.nodes[n].machine)) {
    const TopoPath& p = topo.path(n, cpu);
    if (p.type != PathType::kDis && p.type != PathType::kSys) return topo.nodes[cpu].dev;
  }
  return -1;
}

// "" when the model is the machine of the README, else what differs.
std::string inventory_problem(const Topology& topo) {
  if (topo.machines != kMachines)
    return "the model has " + std::to_string(topo.machines) + " machine(s); the README's has " +
           std::to_string(kMachines) + " (<fabric machines=\"2\" .../> in <system>)";
  const int gpus = static_cast<int>(topo.gpus(0).size());
  if (gpus != kGpus) return "machine 0 has " + std::to_string(gpus) + " GPUs; the README's has " + std::to_string(kGpus);
  const int cpus = static_cast<int>(topo.nodes_of(TopoNodeType::kCpu, 0).size());
  if (cpus != kSockets) return "machine 0 has " + std::to_string(cpus) + " CPUs; the README's has " + std::to_string(kSockets);
  const int nets = static_cast<int>(topo.nets(0).size());
  if (nets != kSockets) return "machine 0 has " + std::to_string(nets) + " NIC ports; the README's has " + std::to_string(kSockets);
  for (const TopoLink& l : topo.links)
    if (l.type == LinkType::kNvl)
      return "the model has NVLinks (" + topo.nodes[l.from].name + " -> " + topo.nodes[l.to].name +
             "); this server's GPUs are PCIe cards without NVLink bridges";
  std::vector<int> per_cpu(kSockets, 0);
  for (int g : topo.gpus(0)) {
    const int cpu = local_cpu(topo, g);
    if (cpu < 0 || cpu >= kSockets) return "GPU " + std::to_string(topo.nodes[g].dev) + " is not under a CPU";
    ++per_cpu[cpu];
  }
  for (int c = 0; c < kSockets; ++c)
    if (per_cpu[c] != kGpus / kSockets)
      return "CPU " + std::to_string(c) + " has " + std::to_string(per_cpu[c]) + " GPUs; the README's server has " +
             std::to_string(kGpus / kSockets) + " on each socket (the GPUs were right: leave them where they were)";
  return "";
}

// The tuner's bus bandwidth (GB/s) of a Ring/Simple all_reduce of kBusbwBytes on a searched model.
bool ring_busbw(const Searched& s, double* busbw, std::string* error) {
  TunerInput in;
  if (!make_tuner_input(s.topo, &s.ring, &s.tree, 0, nullptr, nullptr, &in, error)) return false;
  CostModel model;
  if (!model.init(in, error)) return false;
  const double t = model.time_us(CollKind::kAllReduce, kBusbwBytes, AlgoKind::kRing, ProtoKind::kSimple);
  if (t <= 0) {
    *error = "the tuner has no Ring/Simple time";
    return false;
  }
  const double n = in.nranks;
  *busbw = static_cast<double>(kBusbwBytes) / (t * 1e3) * 2 * (n - 1) / n;
  return true;
}

std::string gb(double v) { return format_double(v, 1); }

// ---- The checks ---------------------------------------------------------------------------------------

std::vector<CheckResult> check_lab05(const LabEnv& env, const std::function<void(const CheckResult&)>& done) {
  std::vector<CheckResult> out;
  auto add = [&](CheckResult c) {
    out.push_back(c);
    done(out.back());
  };
  const std::string xml = env.student_dir + "/" + kXml;
  const std::string run_cmd = "cclab lab run 05";

  // 1: it loads.
  Searched mine;
  bool loaded = false;
  {
    CheckResult c;
    c.name = "machine.xml loads";
    std::string error;
    if (!read_topology_xml(xml, &mine.topo, &error)) {
      c.detail = error;
      c.hint = "the loader's message names the line (docs/topology-xml.md, \"Errors\"); every element must be "
               "closed, and <fabric machines=\"2\" .../> must stay in <system>. See it: cclab topo --xml " +
               shown_path(xml);
    } else {
      c.passed = loaded = true;
      c.detail = mine.topo.name + ": " + std::to_string(mine.topo.gpus().size()) + " GPUs on " +
                 std::to_string(mine.topo.machines) + " machine(s)";
    }
    add(c);
  }

  // 2: the machine of the README.
  bool same_machine = false;
  {
    CheckResult c;
    c.name = "the README's server: 2 sockets x 4 GPUs, 2 NICs";
    if (!loaded) {
      c.skipped = true;
      c.detail = "skipped: machine.xml did not load";
    } else {
      const std::string bad = inventory_problem(mine.topo);
      if (bad.empty()) {
        c.passed = same_machine = true;
        c.detail = "2 machines; each: 8 GPUs (4 per socket), 2 CPUs, 2 NIC ports, no NVLink";
      } else {
        c.detail = bad;
        c.hint = "fix the mistake without changing the hardware: the same GPUs, CPUs and NICs, only plugged in "
                 "where the README's drawing has them";
      }
    }
    add(c);
  }

  // 3, 4: the search on it.
  std::string search_error;
  bool searched = false;
  if (same_machine) {
    searched = search_ring_and_tree(mine.topo, &mine.ring, &mine.tree, &search_error);
    if (!searched) search_error = "the search failed: " + search_error;
  }
  {
    CheckResult c;
    c.name = "every ring crosses SYS at most once per machine";
    if (!same_machine) {
      c.skipped = true;
      c.detail = "skipped: needs the README's server (above)";
    } else if (!searched) {
      c.detail = search_error;
      c.hint = "see it: " + run_cmd;
    } else {
      std::string bad;
      for (int ch = 0; ch < mine.ring.nchannels && bad.empty(); ++ch) {
        std::string where;
        const int n = sys_crossings(mine.topo, mine.ring, ch, &where);
        if (n > 1)
          bad = "channel " + std::to_string(ch) + " (" + channel_text(mine.topo, mine.ring, ch) + ") crosses SYS " +
                std::to_string(n) + " times in machine 0: " + where;
      }
      if (bad.empty()) {
        c.passed = true;
        const std::string g = describe_graph(mine.ring);
        c.detail = g.substr(0, g.find('\n'));
        for (int ch = 0; ch < mine.ring.nchannels; ++ch)
          c.detail += "\n" + std::to_string(ch) + " : " + channel_text(mine.topo, mine.ring, ch) + " (SYS " +
                      std::to_string(sys_crossings(mine.topo, mine.ring, ch, nullptr)) + "x)";
      } else {
        c.detail = bad + "\n" + describe_graph(mine.ring) + "\nsee it: " + run_cmd;
        c.hint = "a ring enters a machine by one NIC and leaves by another; when both NICs hang off the same socket "
                 "it must go over to the other socket's GPUs and come back. Which CPU is each NIC under in "
                 "machine.xml, and which in the README's drawing? (the GPU x NET paths of " + run_cmd + ")";
      }
    }
    add(c);
  }
  {
    CheckResult c;
    c.name = "channels and bandwidth of the real server";
    Searched ref;
    std::string ref_error;
    if (!same_machine || !searched) {
      c.skipped = true;
      c.detail = "skipped: needs the search on the README's server (above)";
    } else if (!preset(kReference, kMachines, &ref, &ref_error)) {
      c.detail = "the search on " + std::string(kReference) + ":2 failed: " + ref_error;
      c.hint = "this is not your answer's fault: check the cclab build";
    } else {
      const double mine_total = mine.ring.nchannels * mine.ring.bw_inter;
      const double ref_total = ref.ring.nchannels * ref.ring.bw_inter;
      const std::string have = std::to_string(mine.ring.nchannels) + " channel(s) x " + gb(mine.ring.bw_inter) +
                               " GB/s = " + gb(mine_total) + " GB/s";
      const std::string want = std::to_string(ref.ring.nchannels) + " x " + gb(ref.ring.bw_inter) + " = " +
                               gb(ref_total) + " GB/s";
      if (mine.ring.nchannels == ref.ring.nchannels && std::fabs(mine_total - ref_total) < 1e-9) {
        c.passed = true;
        c.detail = "ring graph: " + have + ", as on the server built by cclab (" + std::string(kReference) + ":2)";
      } else {
        c.detail = "ring graph: " + have + "; the server built by cclab (" + std::string(kReference) + ":2) gets " +
                   want + "\nsee it: " + run_cmd;
        c.hint = "each socket's UPI share is the bottleneck: compare your GPU x NET paths with those of cclab topo "
                 "--topo " + std::string(kReference) + ":2";
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
                          double tolerance, const std::string& fail_why, const std::string& hint) {
    add(check_answer(answers, answers_path, key, what, have_want, want, tolerance, fail_why, hint));
  };

  Searched h100, pcie1, pcie2;
  std::string h100_error, pcie1_error, pcie2_error;
  const bool have_h100 = preset("dgx-h100", 1, &h100, &h100_error);
  const bool have_pcie1 = preset(kReference, 1, &pcie1, &pcie1_error);
  const bool have_pcie2 = preset(kReference, kMachines, &pcie2, &pcie2_error);

  number_check("h100_channels", "ring channels the search finds on dgx-h100", have_h100, have_h100 ? h100.ring.nchannels : 0,
               0, h100_error, "the nChannels of the ring graph: cclab topo --topo dgx-h100");
  number_check("h100_channel_bw", "bandwidth of one such channel (GB/s) on dgx-h100", have_h100,
               have_h100 ? h100.ring.bw_intra : 0, 0, h100_error,
               "the bw of the ring graph (intra): cclab topo --topo dgx-h100");
  number_check("pcie_sys_one_machine", "SYS crossings of channel 0's ring on pcie-8gpu-2socket (one machine)",
               have_pcie1, have_pcie1 ? sys_crossings(pcie1.topo, pcie1.ring, 0, nullptr) : 0, 0, pcie1_error,
               "follow the ring GPU by GPU, back to its first GPU, on the drawing of cclab topo --list: each "
               "step from one socket to the other is one crossing");
  number_check("pcie_sys_two_machines", "SYS crossings of channel 0 inside machine 0 on pcie-8gpu-2socket:2",
               have_pcie2, have_pcie2 ? sys_crossings(pcie2.topo, pcie2.ring, 0, nullptr) : 0, 0, pcie2_error,
               "channel 0 of cclab topo --topo pcie-8gpu-2socket:2, from the NET it enters by to the NET it leaves by");
  {
    CheckResult c;
    c.name = "answer pcie_ring_order";
    const std::string what = "the GPU order of channel 0 on pcie-8gpu-2socket:2";
    const auto it = answers.values.find("pcie_ring_order");
    if (!answers.found || it == answers.values.end()) {
      missing(&c, "pcie_ring_order", what, answers.found ? "no answer for 'pcie_ring_order' yet" : "there is no answers file");
    } else if (!have_pcie2) {
      c.detail = what + ": " + pcie2_error;
      c.hint = "this is not your answer's fault: check the cclab build";
    } else {
      std::string text = it->second;
      std::replace(text.begin(), text.end(), ',', ' ');
      std::istringstream in(text);
      std::vector<int> got;
      std::string word;
      bool numbers = true;
      while (in >> word) {
        char* end = nullptr;
        const long v = std::strtol(word.c_str(), &end, 10);
        if (*end != '\0') numbers = false;
        got.push_back(static_cast<int>(v));
      }
      if (!numbers) {
        c.detail = what + ": '" + it->second + "' is not a list of GPU numbers";
        c.hint = "the GPU devs in order, separated by spaces: pcie_ring_order = 0 1 2 ...";
      } else if (got == pcie2.ring.intra[0]) {
        c.passed = true;
        c.detail = what + ": " + it->second + " is right";
      } else {
        c.detail = what + ": " + it->second + " is not right";
        c.hint = "the GPU/ entries of channel 0 in the ring graph of cclab topo --topo pcie-8gpu-2socket:2 (without "
                 "the NETs)";
      }
    }
    add(c);
  }
  double busbw_h100 = 0, busbw_pcie = 0;
  std::string e1 = h100_error, e2 = pcie1_error;
  const bool have_b1 = have_h100 && ring_busbw(h100, &busbw_h100, &e1);
  const bool have_b2 = have_pcie1 && ring_busbw(pcie1, &busbw_pcie, &e2);
  const std::string tune_hint = " all_reduce -b 1G -e 1G: the Ring/Simple column is the time in us; busbw = bytes / "
                                "time x 2(n-1)/n (lab 1)";
  number_check("h100_busbw", "the tuner's Ring/Simple bus bandwidth (GB/s), all_reduce of 1 GiB on dgx-h100", have_b1,
               busbw_h100, kTolerance, e1, "cclab tune --topo dgx-h100" + tune_hint);
  number_check("pcie_busbw", "the same on pcie-8gpu-2socket (one machine)", have_b2, busbw_pcie, kTolerance, e2,
               "cclab tune --topo pcie-8gpu-2socket" + tune_hint);
  return out;
}

// ---- `cclab lab run 05` -------------------------------------------------------------------------------

const char* kRunUsage =
    "usage: cclab lab run 05 [--dir DIR]\n"
    "\n"
    "Reads your machine.xml, prints what cclab topo --xml prints for it (the model, the GPU x GPU and\n"
    "GPU x NET paths, the ring and tree graphs), then how often each ring crosses SYS in machine 0.\n";

int run_lab05(const LabEnv& env, const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a == "--help" || a == "-h") {
      std::fputs(kRunUsage, stdout);
      return kLabExitOk;
    }
    std::fprintf(stderr, "cclab lab run 05: unknown flag %s\n%s", a.c_str(), kRunUsage);
    return kLabExitUsage;
  }
  const std::string xml = env.student_dir + "/" + kXml;
  Searched s;
  std::string error;
  if (!read_topology_xml(xml, &s.topo, &error)) {
    std::fprintf(stderr, "cclab lab run 05: %s\n", error.c_str());
    return kLabExitFailed;
  }
  if (!search_ring_and_tree(s.topo, &s.ring, &s.tree, &error)) {
    std::fprintf(stderr, "cclab lab run 05: %s\n", error.c_str());
    return kLabExitFailed;
  }
  std::fputs(format_topo_report(s.topo, s.ring, s.tree).c_str(), stdout);
  std::printf("\n## SYS crossings (machine 0)\n");
  int worst = 0;
  for (int ch = 0; ch < s.ring.nchannels; ++ch) {
    std::string where;
    const int n = sys_crossings(s.topo, s.ring, ch, &where);
    worst = std::max(worst, n);
    std::printf("channel %d: %s: %d%s%s\n", ch, channel_text(s.topo, s.ring, ch).c_str(), n,
                where.empty() ? "" : " (", where.empty() ? "" : (where + ")").c_str());
  }
  return worst <= 1 ? kLabExitOk : kLabExitFailed;
}

}  // namespace

Lab make_lab05() {
  Lab l;
  l.number = "05";
  l.folder = "05-topology-channels";
  l.title = "Topology and channels";
  l.written = true;
  l.student_files = {kXml, kAnswers};
  l.check = check_lab05;
  l.run = run_lab05;
  return l;
}

}  // namespace cclab::lab
