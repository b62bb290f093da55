// runtime/cli/tune_cmd.cc - `cclab tune` (see tune_cmd.h): flags, the tuner's input from a topology,
// the table and the explanations.
#include "tune_cmd.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <stdexcept>

#include "graph/channels.h"
#include "perf_options.h"

namespace cclab {
namespace {

struct CollEntry {
  CollKind coll;
  const char* name;
};
// cclab perf's names of the collectives the tuner chooses an algorithm for.
constexpr CollEntry kTuneColls[] = {
    {CollKind::kAllReduce, "all_reduce"},
    {CollKind::kAllGather, "all_gather"},
    {CollKind::kReduceScatter, "reduce_scatter"},
    {CollKind::kBroadcast, "broadcast"},
    {CollKind::kReduce, "reduce"},
};

const char* tune_coll_name(CollKind coll) {
  for (const auto& e : kTuneColls)
    if (e.coll == coll) return e.name;
  return "unknown";
}

std::string combo_label(AlgoKind a, ProtoKind p) { return std::string(algo_name(a)) + "/" + proto_name(p); }

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, v);
  return buf;
}

std::string pad_left(const std::string& s, size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}
std::string pad_right(const std::string& s, size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}

// The parser's message, naming the variable when the message does not already start with it.
std::string env_error(const char* var, const std::string& why) {
  return why.rfind(var, 0) == 0 ? why : std::string(var) + ": " + why;
}

constexpr size_t kSizeWidth = 12;
constexpr size_t kCellWidth = 13;  // "   12345.67*": the marker column is the cell's last character
constexpr size_t kChoiceWidth = 16;  // "NVLSTree/Simple"
// A column as wide as its label (NVLSTree/Simple is wider than a number).
size_t cell_width(const std::string& label) { return std::max(kCellWidth, label.size() + 2); }

}  // namespace

bool tune_collective_from_name(const std::string& name, CollKind* coll) {
  for (const auto& e : kTuneColls) {
    if (name == e.name) {
      *coll = e.coll;
      return true;
    }
  }
  return false;
}

std::string tune_collective_names() {
  std::string out;
  for (const auto& e : kTuneColls) out += std::string(out.empty() ? "" : ", ") + e.name;
  return out;
}

std::vector<size_t> tune_sizes(size_t min_bytes, size_t max_bytes, uint64_t factor) {
  std::vector<size_t> sizes;
  if (min_bytes == 0 || factor < 2) {
    if (min_bytes <= max_bytes) sizes.push_back(min_bytes);
    return sizes;
  }
  for (size_t s = min_bytes; s <= max_bytes;) {
    sizes.push_back(s);
    if (s > std::numeric_limits<size_t>::max() / factor) break;
    s *= factor;
  }
  return sizes;
}

std::string format_bytes(size_t bytes) {
  static const char* const kUnits[] = {"", "K", "M", "G", "T"};
  int u = 0;
  double v = static_cast<double>(bytes);
  while (u < 4 && v >= 1024.0) {
    v /= 1024.0;
    ++u;
  }
  if (u == 0) return std::to_string(bytes);
  char buf[32];
  if (v == static_cast<double>(static_cast<long long>(v))) {
    std::snprintf(buf, sizeof(buf), "%lld%s", static_cast<long long>(v), kUnits[u]);
  } else {
    std::snprintf(buf, sizeof(buf), "%.3g%s", v, kUnits[u]);
  }
  return buf;
}

const std::vector<AlgoProto>& tune_combinations(CollKind coll) {
  static const std::vector<AlgoProto> kCombos = {
      {AlgoKind::kRing, ProtoKind::kLL}, {AlgoKind::kRing, ProtoKind::kLL128}, {AlgoKind::kRing, ProtoKind::kSimple},
      {AlgoKind::kTree, ProtoKind::kLL}, {AlgoKind::kTree, ProtoKind::kLL128}, {AlgoKind::kTree, ProtoKind::kSimple},
      {AlgoKind::kNvls, ProtoKind::kSimple}, {AlgoKind::kNvlsTree, ProtoKind::kSimple},
  };
  static const std::vector<AlgoProto> kPatCombos = {
      {AlgoKind::kRing, ProtoKind::kLL}, {AlgoKind::kRing, ProtoKind::kLL128}, {AlgoKind::kRing, ProtoKind::kSimple},
      {AlgoKind::kPat, ProtoKind::kSimple}, {AlgoKind::kNvls, ProtoKind::kSimple},
  };
  return coll == CollKind::kAllGather || coll == CollKind::kReduceScatter ? kPatCombos : kCombos;
}

// ---- tuner input -------------------------------------------------------------------------------------
bool make_tuner_input(const Topology& topo, const TopoGraph* ring, const TopoGraph* tree, int ranks,
                      const char* algo_env, const char* proto_env, TunerInput* in, std::string* error,
                      int min_channels, int max_channels) {
  TunerInput t;
  const std::vector<int> gpus = topo.gpus();
  const int total = static_cast<int>(gpus.size());
  t.nnodes = topo.machines;
  t.nranks = ranks > 0 ? ranks : total;
  if (total < 1) {
    *error = "the topology has no GPUs";
    return false;
  }
  if (t.nranks > total || t.nranks % t.nnodes != 0) {
    *error = "--ranks " + std::to_string(t.nranks) + " does not fit the model: it has " + std::to_string(total) +
             " GPU(s) on " + std::to_string(t.nnodes) +
             " machine(s), and ranks must be spread evenly over the "
             "machines (a multiple of " +
             std::to_string(t.nnodes) + ", at most " + std::to_string(total) + ")";
    return false;
  }
  int smin = 1000, smax = 0;
  for (int g : gpus) {
    smin = std::min(smin, topo.nodes[g].sm);
    smax = std::max(smax, topo.nodes[g].sm);
  }
  t.sm_min = smin;
  t.sm_max = smax;
  const std::vector<int> cpus = topo.nodes_of(TopoNodeType::kCpu, 0);
  if (!cpus.empty()) {
    t.cpu_arch = topo.nodes[cpus[0]].arch;
    t.cpu_vendor = topo.nodes[cpus[0]].vendor;
  }
  t.ring = ring;
  t.tree = tree;
  // NCCL's comm->nChannels, from which topoGetAlgoInfo trims: what the simulator runs too.
  if (ring != nullptr && tree != nullptr)
    t.ring_channels = t.tree_channels =
        modelled_channels(*ring, *tree, min_channels > 0 ? min_channels : 1, max_channels > 0 ? max_channels : 64);
  std::string why;
  t.pat_enable = pat_enable_param();
  if (parse_algo_env(algo_env, &t.enable, &why) != ncclSuccess) {
    *error = env_error("NCCL_ALGO", why);
    return false;
  }
  if (parse_proto_env(proto_env, &t.enable, &why) != ncclSuccess) {
    *error = env_error("NCCL_PROTO", why);
    return false;
  }
  *in = t;
  return true;
}

// ---- text --------------------------------------------------------------------------------------------
std::string format_tune_table(const CostModel& model, CollKind coll, const std::vector<size_t>& sizes) {
  std::string out = "#" + pad_left("size", kSizeWidth - 1);
  for (const auto& c : tune_combinations(coll))
    out += pad_left(combo_label(c.algo, c.proto) + " ", cell_width(combo_label(c.algo, c.proto)));
  out += "  " + pad_right("choice", kChoiceWidth) + pad_left("channels", 9) + pad_left("threads", 8) + "\n";
  for (size_t bytes : sizes) {
    const TunerChoice choice = model.choose(coll, bytes);
    std::string row = pad_left(std::to_string(bytes), kSizeWidth);
    for (const auto& c : tune_combinations(coll)) {
      const double t = model.time_us(coll, bytes, c.algo, c.proto);
      std::string cell;
      if (t < 0) {
        cell = "- ";
      } else {
        const bool chosen = choice.valid && choice.algo == c.algo && choice.proto == c.proto;
        cell = fmt("%.2f", t) + (chosen ? "*" : " ");
      }
      row += pad_left(cell, cell_width(combo_label(c.algo, c.proto)));
    }
    if (choice.valid) {
      row += "  " + pad_right(combo_label(choice.algo, choice.proto), kChoiceWidth) +
             pad_left(std::to_string(choice.nchannels), 9) + pad_left(std::to_string(choice.nthreads), 8);
    } else {
      row += "  " + pad_right("none", kChoiceWidth) + pad_left("-", 9) + pad_left("-", 8);
    }
    out += row + "\n";
  }
  return out;
}

std::string format_explain(const CostModel& model, CollKind coll, size_t bytes) {
  std::string out =
      "# " + std::string(coll_name(coll)) + " at " + std::to_string(bytes) + " B (" + format_bytes(bytes) + "):\n";
  for (const auto& c : tune_combinations(coll)) out += model.explain(coll, bytes, c.algo, c.proto) + "\n";
  const TunerChoice choice = model.choose(coll, bytes);
  if (choice.valid) {
    out += "Chosen: " + combo_label(choice.algo, choice.proto) + ", " + fmt("%.2f", choice.time_us) + " us, on " +
           std::to_string(choice.nchannels) + " channel(s) x " + std::to_string(choice.nthreads) + " threads\n";
  } else {
    out += "Chosen: none - no algorithm/protocol is enabled and available for " + std::string(coll_name(coll)) + "\n";
  }
  return out;
}

std::string format_tune_header(const Topology& topo, const TunerInput& in, CollKind coll, const char* algo_env,
                               const char* proto_env) {
  std::string out = "# cclab tune: " + std::string(tune_coll_name(coll)) + " (" + coll_name(coll) + ") on " +
                    topo.name + (topo.description.empty() ? "" : " (" + topo.description + ")") + "\n";
  out += "# " + std::to_string(in.nranks) + " rank(s) on " + std::to_string(in.nnodes) + " machine(s), sm " +
         std::to_string(in.sm_min) + (in.sm_min == in.sm_max ? "" : "-" + std::to_string(in.sm_max)) + "\n";
  if (in.ring) out += "# Ring graph: " + describe_graph(*in.ring).substr(0, describe_graph(*in.ring).find('\n')) + "\n";
  if (in.tree) out += "# Tree graph: " + describe_graph(*in.tree).substr(0, describe_graph(*in.tree).find('\n')) + "\n";
  if (in.nvls)
    out += "# NVLS graph: " + describe_graph(*in.nvls).substr(0, describe_graph(*in.nvls).find('\n')) + "; " +
           std::to_string(in.nvls_channels) + " NVLS channels (NVLS_NCHANNELS)\n";
  else if (!in.nvls_why.empty())
    out += "# " + in.nvls_why + "\n";
  if (in.ring_channels > 0)
    out += "# " + std::to_string(in.ring_channels) +
           " channels connected (the fewer of the graphs' channels, doubled, within NCCL_MIN/MAX_NCHANNELS); "
           "the channels column trims them for small sizes, as NCCL and `cclab sim` do\n";
  // What NCCL_ALGO / NCCL_PROTO leave enabled for this collective (describe_*_enable lists every one).
  const int c = coll_index(coll);
  std::string algos, protos;
  for (int a = 0; a < kNumAlgos; ++a)
    if (in.enable.algo[c][a]) algos += std::string(algos.empty() ? "" : " ") + algo_name(static_cast<AlgoKind>(a));
  for (int p = 0; p < kNumProtos; ++p)
    if (in.enable.proto[c][p]) protos += std::string(protos.empty() ? "" : " ") + proto_name(static_cast<ProtoKind>(p));
  const auto shown = [](const char* v) { return v == nullptr ? std::string("(unset)") : "\"" + std::string(v) + "\""; };
  out += "# enabled for " + std::string(coll_name(coll)) + ": algorithms " + (algos.empty() ? "none" : algos) +
         " (NCCL_ALGO " + shown(algo_env) + "); protocols " + (protos.empty() ? "none" : protos) + " (NCCL_PROTO " +
         shown(proto_env) + ")\n";
  if (coll == CollKind::kAllGather || coll == CollKind::kReduceScatter) {
    out += "# size = the whole gathered buffer (count x nranks x type size), NCCL's nBytes for this collective\n";
  }
  if (in.nranks == 1) out += "# 1 rank: NCCL does not tune; it runs Ring/Simple, a local copy\n";
  out += "# predicted time per call in us; * = NCCL's choice; - = unavailable or disabled\n";
  return out;
}

// ---- flags -------------------------------------------------------------------------------------------
std::string tune_usage() {
  return "usage: cclab tune (--topo PRESET[:MACHINES] | --xml FILE | --detect [--sysfs ROOT]) COLLECTIVE [flags]\n"
         "\n"
         "Predicts, with NCCL's cost model, the time of every algorithm x protocol for COLLECTIVE over a\n"
         "range of sizes on a topology, and marks the one NCCL would choose. NCCL_ALGO and NCCL_PROTO in the\n"
         "environment restrict the choice as they do in NCCL.\n"
         "COLLECTIVE: " +
         tune_collective_names() +
         "\n"
         "\n"
         "  --topo PRESET[:MACHINES]   a built-in machine (cclab topo --list), on MACHINES machines\n"
         "  --xml FILE                 NCCL's topology XML\n"
         "  --detect                   this machine (cclab topo --detect shows what was found)\n"
         "  --sysfs ROOT               with --detect: read ROOT instead of /sys (default: $CCLAB_SYSFS_ROOT)\n"
         "  --nodes N                  machines (default: MACHINES or 1)\n"
         "  --oversubscription X       leaf switch down/up bandwidth ratio of the fabric (default 1)\n"
         "  -b, --minbytes SIZE        smallest size (default 8; K, M, G = powers of 1024)\n"
         "  -e, --maxbytes SIZE        largest size (default 8G)\n"
         "  -f, --stepfactor N         multiply sizes by N (default 2)\n"
         "  --explain SIZE             derive every prediction at SIZE and say which wins (no table)\n"
         "  --ranks N                  ranks in the communicator (default: every GPU of the model)\n"
         "  --min-channels N           NCCL_MIN_NCHANNELS (default: $NCCL_MIN_NCHANNELS)\n"
         "  --max-channels N           NCCL_MAX_NCHANNELS (default: $NCCL_MAX_NCHANNELS)\n"
         "  -h, --help                 this text\n"
         "\n"
         "Sizes are NCCL's nBytes: for all_gather and reduce_scatter the whole gathered buffer.\n"
         "Exit status: 0 ok, 2 bad usage or bad input (including invalid NCCL_ALGO / NCCL_PROTO).\n";
}

TuneCmdParse parse_tune_cmd(const std::vector<std::string>& args) {
  TuneCmdParse result;
  TuneCmdOptions& o = result.options;
  CLI::App app{"cclab tune", "cclab tune"};
  app.set_help_flag();
  app.allow_extras();
  bool help = false;
  std::string coll, nodes, oversub, minb, maxb, factor, explain, ranks, min_ch, max_ch;
  app.add_flag("-h,--help", help);
  app.add_option("collective", coll);
  app.add_option("--topo", o.source.preset_spec);
  app.add_option("--xml", o.source.xml_path);
  app.add_flag("--detect", o.source.detect);
  app.add_option("--sysfs", o.source.sysfs_root);
  app.add_option("--nodes", nodes);
  app.add_option("--oversubscription", oversub);
  app.add_option("-b,--minbytes", minb);
  app.add_option("-e,--maxbytes", maxb);
  app.add_option("-f,--stepfactor", factor);
  app.add_option("--explain", explain);
  app.add_option("--ranks", ranks);
  app.add_option("--min-channels", min_ch);
  app.add_option("--max-channels", max_ch);
  try {
    std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 consumes from the back
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    result.message = std::string("cclab tune: ") + e.what();
    return result;
  }
  if (help) {
    result.ok = result.help = true;
    return result;
  }
  if (leftover_args_error(app.remaining(), "tune", &result.message)) return result;
  if (coll.empty()) {
    result.message = "cclab tune: missing COLLECTIVE (one of " + tune_collective_names() + ")";
    return result;
  }
  if (!tune_collective_from_name(coll, &o.coll)) {
    result.message = "cclab tune: unknown collective '" + coll + "' (expected one of " + tune_collective_names() + ")";
    return result;
  }
  o.coll_arg = coll;
  try {
    if (!nodes.empty()) o.source.nodes = parse_positive_int(nodes, "--nodes", 4096);
    if (!oversub.empty()) o.source.oversubscription = parse_positive_double(oversub, "--oversubscription");
    if (!minb.empty()) o.min_bytes = parse_size(minb, "-b/--minbytes");
    if (!maxb.empty()) o.max_bytes = parse_size(maxb, "-e/--maxbytes");
    if (!factor.empty()) o.factor = static_cast<uint64_t>(parse_positive_int(factor, "-f/--stepfactor", 1 << 20));
    if (!explain.empty()) {
      o.explain = true;
      o.explain_bytes = parse_size(explain, "--explain");
    }
    if (!ranks.empty()) o.ranks = parse_positive_int(ranks, "--ranks", 1 << 20);
    // The flags win over the environment, as in `cclab sim`.
    const char* env_min = std::getenv("NCCL_MIN_NCHANNELS");
    const char* env_max = std::getenv("NCCL_MAX_NCHANNELS");
    if (!min_ch.empty()) o.min_channels = parse_positive_int(min_ch, "--min-channels", 64);
    else if (env_min != nullptr && *env_min != '\0') o.min_channels = parse_positive_int(env_min, "NCCL_MIN_NCHANNELS", 64);
    if (!max_ch.empty()) o.max_channels = parse_positive_int(max_ch, "--max-channels", 64);
    else if (env_max != nullptr && *env_max != '\0') o.max_channels = parse_positive_int(env_max, "NCCL_MAX_NCHANNELS", 64);
  } catch (const std::invalid_argument& e) {
    result.message = std::string("cclab tune: ") + e.what();
    return result;
  }
  if (o.min_channels > 0 && o.max_channels > 0 && o.min_channels > o.max_channels) {
    result.message = "cclab tune: channels: minimum " + std::to_string(o.min_channels) +
                     " (--min-channels/NCCL_MIN_NCHANNELS) is larger than maximum " + std::to_string(o.max_channels) +
                     " (--max-channels/NCCL_MAX_NCHANNELS)";
    return result;
  }
  if (o.min_bytes == 0) {
    result.message = "cclab tune: -b/--minbytes must be at least 1 byte";
    return result;
  }
  if (o.explain && o.explain_bytes == 0) {
    result.message = "cclab tune: --explain needs a size of at least 1 byte";
    return result;
  }
  if (o.min_bytes > o.max_bytes) {
    result.message = "cclab tune: invalid sizes: -b/--minbytes " + std::to_string(o.min_bytes) +
                     " is larger than -e/--maxbytes " + std::to_string(o.max_bytes);
    return result;
  }
  if (o.factor < 2 && o.min_bytes < o.max_bytes) {
    result.message = "cclab tune: -f/--stepfactor must be at least 2 to go from -b to -e";
    return result;
  }
  if (!o.source.sysfs_root.empty() && !o.source.detect) {
    result.message = "cclab tune: --sysfs goes with --detect";
    return result;
  }
  if (o.source.preset_spec.empty() && o.source.xml_path.empty() && !o.source.detect) {
    result.message =
        "cclab tune: no topology: give --topo PRESET[:MACHINES] (cclab topo --list), --xml FILE or --detect";
    return result;
  }
  result.ok = true;
  return result;
}

int tune_main(const std::vector<std::string>& args) {
  const TuneCmdParse parsed = parse_tune_cmd(args);
  if (!parsed.ok) {
    std::fprintf(stderr, "%s\n", parsed.message.c_str());
    return kToolExitUsage;
  }
  if (parsed.help) {
    std::fputs(tune_usage().c_str(), stdout);
    return kToolExitOk;
  }
  const TuneCmdOptions& o = parsed.options;
  const char* algo_env = std::getenv("NCCL_ALGO");
  const char* proto_env = std::getenv("NCCL_PROTO");
  // The environment is checked first: a bad NCCL_ALGO is the user's error whatever the topology.
  {
    AlgoProtoEnable probe;
    std::string why;
    if (parse_algo_env(algo_env, &probe, &why) != ncclSuccess) {
      std::fprintf(stderr, "cclab tune: %s\n", env_error("NCCL_ALGO", why).c_str());
      return kToolExitUsage;
    }
    if (parse_proto_env(proto_env, &probe, &why) != ncclSuccess) {
      std::fprintf(stderr, "cclab tune: %s\n", env_error("NCCL_PROTO", why).c_str());
      return kToolExitUsage;
    }
  }
  Topology topo;
  std::string error;
  if (!build_topology(o.source, &topo, &error)) {
    std::fprintf(stderr, "cclab tune: %s\n", error.c_str());
    return kToolExitUsage;
  }
  TopoGraph ring, tree;
  if (!search_ring_and_tree(topo, &ring, &tree, &error)) {
    std::fprintf(stderr, "cclab tune: %s\n", error.c_str());
    return kToolExitUsage;
  }
  TunerInput in;
  if (!make_tuner_input(topo, &ring, &tree, o.ranks, algo_env, proto_env, &in, &error, o.min_channels,
                        o.max_channels)) {
    std::fprintf(stderr, "cclab tune: %s\n", error.c_str());
    return kToolExitUsage;
  }
  TopoGraph nvls;
  int64_t nvls_enable = 2;
  if (const char* v = std::getenv("NCCL_NVLS_ENABLE")) {
    char* end = nullptr;
    nvls_enable = std::strtoll(v, &end, 10);
    if (end == v || *end != '\0' || nvls_enable < 0 || nvls_enable > 2) {
      std::fprintf(stderr, "cclab tune: NCCL_NVLS_ENABLE=\"%s\" is not 0, 1 or 2\n", v);
      return kToolExitUsage;
    }
  }
  add_nvls(topo, nvls_enable, &nvls, &in, 0, o.min_channels, o.max_channels);
  CostModel model;
  if (!model.init(in, &error)) {
    std::fprintf(stderr, "cclab tune: the cost model rejects this set-up: %s\n", error.c_str());
    return kToolExitUsage;
  }
  std::string out = format_tune_header(topo, in, o.coll, algo_env, proto_env);
  if (o.explain) {
    out += format_explain(model, o.coll, o.explain_bytes);
  } else {
    out += format_tune_table(model, o.coll, tune_sizes(o.min_bytes, o.max_bytes, o.factor));
  }
  std::fputs(out.c_str(), stdout);
  return kToolExitOk;
}

}  // namespace cclab
