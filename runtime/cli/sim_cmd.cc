// runtime/cli/sim_cmd.cc - the pure half of `cclab sim` (see sim_cmd.h): flags -> SimConfig, and every
// report (table, links, CSV, JSON, compare) from a SimResult. Nothing here runs the simulator, so tests
// check it on fabricated results.
//
// The flags are parsed by hand rather than with CLI11: --compare "A" "B" lays A's flags over the base
// flags (last one wins, as nccl-tests' getopt does), which a parser that rejects repeated options cannot
// express.
#include "sim_cmd.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "graph/algo_proto.h"
#include "graph/custom_algo.h"
#include "graph/topo.h"
#include "perf_options.h"
#include "perf_report.h"

namespace cclab {
namespace {

using sim::SimConfig;
using sim::SimLevel;
using sim::SimResult;
using sim::SimSizeResult;
using sim::SimType;

std::string printf_string(const char* fmt, ...) __attribute__((format(printf, 1, 2)));
std::string printf_string(const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  const int n = std::vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  return std::string(buf, n < 0 ? 0 : std::min<size_t>(static_cast<size_t>(n), sizeof(buf) - 1));
}

// ---- names -------------------------------------------------------------------------------------------
struct CollEntry {
  CollKind coll;
  P2pPattern p2p;  // the point-to-point collectives: the sends and receives of kernels/p2p.h's pattern
  PerfCollective perf;
  const char* name;
};
constexpr CollEntry kSimColls[] = {
    {CollKind::kAllReduce, P2pPattern::kNone, PerfCollective::kAllReduce, "all_reduce"},
    {CollKind::kAllGather, P2pPattern::kNone, PerfCollective::kAllGather, "all_gather"},
    {CollKind::kReduceScatter, P2pPattern::kNone, PerfCollective::kReduceScatter, "reduce_scatter"},
    {CollKind::kBroadcast, P2pPattern::kNone, PerfCollective::kBroadcast, "broadcast"},
    {CollKind::kReduce, P2pPattern::kNone, PerfCollective::kReduce, "reduce"},
    {CollKind::kSendRecv, P2pPattern::kAllToAll, PerfCollective::kAllToAll, "alltoall"},
    {CollKind::kSendRecv, P2pPattern::kGather, PerfCollective::kGather, "gather"},
    {CollKind::kSendRecv, P2pPattern::kScatter, PerfCollective::kScatter, "scatter"},
    {CollKind::kSendRecv, P2pPattern::kSendRecv, PerfCollective::kSendRecv, "sendrecv"},
};

struct OpEntry {
  PerfOp perf;
  RedOpKind op;
};
// cclab perf's op names onto the reduction the kernels run: avg is NCCL's ncclAvg (sum, then divide by
// nranks), mulsum ncclRedOpCreatePreMulSum.
constexpr OpEntry kSimOps[] = {{PerfOp::kSum, RedOpKind::kSum},       {PerfOp::kProd, RedOpKind::kProd},
                               {PerfOp::kMax, RedOpKind::kMax},       {PerfOp::kMin, RedOpKind::kMin},
                               {PerfOp::kAvg, RedOpKind::kSumPostDiv}, {PerfOp::kMulSum, RedOpKind::kPreMulSum}};

const CollEntry* entry_of(const SimConfig& cfg) {
  for (const auto& e : kSimColls)
    if (e.coll == cfg.coll && e.p2p == cfg.p2p) return &e;
  return nullptr;
}
bool coll_has_root(const SimConfig& cfg) {
  return entry_of(cfg) != nullptr && collective_has_root(entry_of(cfg)->perf);
}

// ---- flags -------------------------------------------------------------------------------------------
// Every flag: its spellings, the label messages use, how many values it takes, and whether it may appear
// inside a --compare string (only flags that change the simulation may).
struct FlagSpec {
  const char* short_name;  // "-b" or nullptr
  const char* long_name;   // "--minbytes"
  const char* label;       // "-b/--minbytes"
  int nvalues;             // 0 (a switch), 1, or 2 (--compare)
  bool in_compare;
};
constexpr FlagSpec kFlags[] = {
    {"-b", "--minbytes", "-b/--minbytes", 1, true},
    {"-e", "--maxbytes", "-e/--maxbytes", 1, true},
    {"-f", "--stepfactor", "-f/--stepfactor", 1, true},
    {"-i", "--stepbytes", "-i/--stepbytes", 1, true},
    {"-n", "--iters", "-n/--iters", 1, true},
    {"-w", "--warmup_iters", "-w/--warmup_iters", 1, true},
    {"-d", "--datatype", "-d/--datatype", 1, true},
    {"-o", "--op", "-o/--op", 1, true},
    {"-r", "--root", "-r/--root", 1, true},
    {"-c", "--check", "-c/--check", 1, true},
    {"-m", "--agg_iters", "-m/--agg_iters", 1, true},
    {"-t", "--nthreads", "-t/--nthreads", 1, true},
    {"-g", "--ngpus", "-g/--ngpus", 1, true},
    {nullptr, "--nprocs", "--nprocs", 1, true},
    {"-z", "--blocking", "-z/--blocking", 1, true},
    {"-a", "--average", "-a/--average", 1, true},
    {nullptr, "--topo", "--topo", 1, true},
    {nullptr, "--xml", "--xml", 1, true},
    {nullptr, "--nodes", "--nodes", 1, true},
    {nullptr, "--ranks", "--ranks", 1, true},
    {nullptr, "--payload", "--payload", 0, true},
    {nullptr, "--level", "--level", 1, true},
    {nullptr, "--step-limit", "--step-limit", 1, true},
    {nullptr, "--algo", "--algo", 1, true},
    {nullptr, "--proto", "--proto", 1, true},
    {nullptr, "--min-channels", "--min-channels", 1, true},
    {nullptr, "--max-channels", "--max-channels", 1, true},
    {nullptr, "--nvlink-bw", "--nvlink-bw", 1, true},
    {nullptr, "--nic-bw", "--nic-bw", 1, true},
    {nullptr, "--nics-per-node", "--nics-per-node", 1, true},
    {nullptr, "--link-latency", "--link-latency", 1, true},
    {nullptr, "--oversubscription", "--oversubscription", 1, true},
    {nullptr, "--degrade", "--degrade", 1, true},
    {nullptr, "--fail", "--fail", 1, true},
    {nullptr, "--straggler", "--straggler", 1, true},
    {nullptr, "--jitter", "--jitter", 1, true},
    {nullptr, "--csv", "--csv", 1, false},
    {nullptr, "--json", "--json", 1, false},
    {nullptr, "--events", "--events", 1, false},
    {nullptr, "--trace", "--trace", 1, false},
    {nullptr, "--live", "--live", 1, false},
    {nullptr, "--live-wait", "--live-wait", 1, false},
    {nullptr, "--links", "--links", 1, false},
    {nullptr, "--calibration", "--calibration", 0, false},
    {nullptr, "--calib", "--calib", 1, true},
    {nullptr, "--no-progress", "--no-progress", 0, false},
    {nullptr, "--compare", "--compare", 2, false},
    {"-h", "--help", "-h/--help", 0, false},
};

const FlagSpec* find_flag(const std::string& name) {
  for (const auto& f : kFlags) {
    if ((f.short_name != nullptr && name == f.short_name) || name == f.long_name) return &f;
  }
  return nullptr;
}

// What the command line said: flag label -> its values (the last occurrence), and the positionals.
struct Collected {
  std::map<std::string, std::vector<std::string>> values;
  std::vector<std::string> positionals;
  bool has(const char* label) const { return values.count(label) != 0; }
  const std::string& get(const char* label) const { return values.at(label).front(); }
};

// Walks `args` into *out. in_compare: the arguments of one --compare string (simulation flags only).
bool collect(const std::vector<std::string>& args, bool in_compare, Collected* out, std::string* error) {
  const std::string where = in_compare ? " in --compare" : "";
  for (size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    if (arg.size() < 2 || arg[0] != '-' || (arg[1] >= '0' && arg[1] <= '9')) {
      if (in_compare) {
        *error = "unexpected argument '" + arg + "'" + where + " (only flags may appear there)";
        return false;
      }
      out->positionals.push_back(arg);
      continue;
    }
    std::string inline_value;
    bool has_inline = false;
    const size_t eq = arg.find('=');
    if (arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      inline_value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_inline = true;
    }
    const FlagSpec* f = find_flag(arg);
    if (f == nullptr) {
      *error = "unknown flag '" + arg + "'" + where + " (see cclab sim --help)";
      return false;
    }
    if (in_compare && !f->in_compare) {
      *error = std::string(f->label) + " cannot appear in --compare (only flags that change the simulation)";
      return false;
    }
    std::vector<std::string> vals;
    if (f->nvalues == 0) {
      if (has_inline) {
        *error = std::string(f->label) + " takes no value (got '" + inline_value + "')";
        return false;
      }
      vals.push_back("1");
    } else {
      int need = f->nvalues;
      if (has_inline) {
        vals.push_back(inline_value);
        --need;
      }
      for (; need > 0; --need) {
        if (i + 1 >= args.size()) {
          *error = std::string(f->label) + (f->nvalues == 2 ? " needs two values" : " needs a value") + where;
          return false;
        }
        vals.push_back(args[++i]);
      }
    }
    // --degrade, --fail and --straggler add up (a degraded fabric has several faults); others: the last wins.
    const std::string label = f->label;
    if (label == "--degrade" || label == "--fail" || label == "--straggler")
      out->values[label].insert(out->values[label].end(), vals.begin(), vals.end());
    else
      out->values[label] = vals;
  }
  return true;
}

// ---- values ------------------------------------------------------------------------------------------
long long parse_int(const std::string& text, const std::string& flag, long long lo, long long hi) {
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(begin, &end, 10);
  if (text.empty() || end == begin || *end != '\0' || errno == ERANGE || v < lo || v > hi) {
    throw std::invalid_argument("invalid value '" + text + "' for " + flag + " (expected an integer from " +
                                std::to_string(lo) + " to " + std::to_string(hi) + ")");
  }
  return v;
}

double parse_real(const std::string& text, const std::string& flag, double lo, bool lo_inclusive,
                  const char* what) {
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(begin, &end);
  if (text.empty() || end == begin || *end != '\0' || errno == ERANGE || !std::isfinite(v) ||
      (lo_inclusive ? v < lo : v <= lo)) {
    throw std::invalid_argument("invalid value '" + text + "' for " + flag + " (expected " + what + ")");
  }
  return v;
}

std::string join(const std::vector<std::string>& v, const char* sep) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : sep) + s;
  return out;
}

// The part of a parser message after its variable name (the graph parser names NCCL_ALGO itself).
// An --algo / NCCL_ALGO value: NCCL's syntax, or the name of a custom algorithm that CCLAB_ALGO_PLUGIN
// loads (graph/custom_algo.h). False with *why.
bool valid_algo_value(const std::string& value, std::string* why) {
  why->clear();
  if (value.empty()) {
    *why = "empty";
    return false;
  }
  if (custom_algo_for_env(value, why) != nullptr) return true;
  if (!why->empty()) return false;  // a plugin failed to load
  AlgoProtoEnable probe;
  if (parse_algo_env(value.c_str(), &probe, why) == ncclSuccess) return true;
  if (getenv("CCLAB_ALGO_PLUGIN") != nullptr) *why += " (custom algorithms: " + custom_algo_names() + ")";
  return false;
}

std::string named(const std::string& name, const std::string& why) {
  return why.rfind(name, 0) == 0 ? why : name + ": " + why;
}

// Builds one run from the collected flags (and the environment for what they leave unset).
bool build_run(const Collected& c, const SimEnv& env, CollKind coll, P2pPattern p2p, SimRun* run, std::string* error) {
  SimConfig& cfg = run->config;
  cfg.coll = coll;
  cfg.p2p = p2p;
  try {
    // Model.
    if (c.has("--topo") && c.has("--xml")) {
      *error = "give either --topo or --xml, not both";
      return false;
    }
    int nodes = 0;
    if (c.has("--nodes")) nodes = static_cast<int>(parse_int(c.get("--nodes"), "--nodes", 1, 4096));
    if (c.has("--xml")) {
      cfg.topo_xml = c.get("--xml");
      if (cfg.topo_xml.empty()) throw std::invalid_argument("--xml needs a file name");
      cfg.machines = nodes > 0 ? nodes : 1;
      run->topo_label = cfg.topo_xml;
    } else {
      const std::string spec = c.has("--topo") ? c.get("--topo") : std::string("dgx-h100");
      std::string preset, why;
      int machines = 1;
      if (!parse_topo_spec(spec, &preset, &machines, &why)) {
        *error = "invalid value '" + spec + "' for --topo: " + why;
        return false;
      }
      const bool has_count = spec.find(':') != std::string::npos;
      if (nodes > 0 && has_count && nodes != machines) {
        *error = "--topo " + spec + " says " + std::to_string(machines) + " machine(s) but --nodes says " +
                 std::to_string(nodes);
        return false;
      }
      if (nodes > 0) machines = nodes;
      cfg.topo = preset;
      cfg.machines = machines;
      run->topo_label = machines > 1 ? preset + ":" + std::to_string(machines) : preset;
    }
    if (c.has("--ranks")) cfg.nranks = static_cast<int>(parse_int(c.get("--ranks"), "--ranks", 1, 1 << 20));
    // nccl-tests' rank count: processes x threads x GPUs per thread (-t, -g, --nprocs as `cclab perf`).
    if (c.has("-t/--nthreads") || c.has("-g/--ngpus") || c.has("--nprocs")) {
      long long n = 1;
      for (const char* f : {"-t/--nthreads", "-g/--ngpus", "--nprocs"})
        if (c.has(f)) n *= parse_int(c.get(f), f, 1, 1 << 20);
      if (n > (1 << 20)) throw std::invalid_argument("-t x -g x --nprocs is more than 1048576 ranks");
      if (c.has("--ranks") && n != cfg.nranks) {
        *error = "--ranks " + std::to_string(cfg.nranks) + " disagrees with -t x -g x --nprocs = " + std::to_string(n) +
                 " (give one or the other)";
        return false;
      }
      cfg.nranks = static_cast<int>(n);
      // -g: the GPUs one thread issues every operation on (an iteration's host cost, docs/simulator.md).
      if (c.has("-g/--ngpus")) cfg.gpus_per_thread = static_cast<int>(parse_int(c.get("-g/--ngpus"), "-g/--ngpus", 1, 1 << 20));
    }

    // Sizes (nccl-tests: -e defaults to -b; -f > 1 overrides -i).
    if (c.has("-b/--minbytes")) cfg.min_bytes = parse_size(c.get("-b/--minbytes"), "-b/--minbytes");
    if (c.has("-e/--maxbytes")) {
      cfg.max_bytes = parse_size(c.get("-e/--maxbytes"), "-e/--maxbytes");
    } else {
      cfg.max_bytes = cfg.min_bytes;
    }
    size_t increment = 0;
    if (c.has("-i/--stepbytes")) increment = parse_size(c.get("-i/--stepbytes"), "-i/--stepbytes");
    double factor = 2;
    if (c.has("-f/--stepfactor")) {
      factor = parse_real(c.get("-f/--stepfactor"), "-f/--stepfactor", 1, true, "a number >= 1");
    }
    if (c.has("-i/--stepbytes") && (!c.has("-f/--stepfactor") || factor <= 1)) {
      cfg.factor = 1;
      cfg.increment = increment;
    } else {
      cfg.factor = factor;
      cfg.increment = 0;
    }
    if (cfg.min_bytes > cfg.max_bytes) {
      *error = "invalid sizes: -b/--minbytes " + std::to_string(cfg.min_bytes) + " is larger than -e/--maxbytes " +
               std::to_string(cfg.max_bytes);
      return false;
    }
    if (cfg.min_bytes < cfg.max_bytes) {
      if (cfg.increment == 0 && cfg.factor <= 1) {
        *error = c.has("-i/--stepbytes") ? "-i/--stepbytes 0 cannot advance from -b to -e; give -i > 0 or -f > 1"
                                         : "-f/--stepfactor 1 cannot advance from -b to -e; give -f > 1 or -i > 0";
        return false;
      }
      if (cfg.increment == 0 && cfg.min_bytes == 0) {
        *error = "-b/--minbytes 0 cannot grow by -f/--stepfactor; use -b 1 or larger";
        return false;
      }
    }
    if (c.has("-n/--iters")) {
      cfg.iters = static_cast<int>(parse_int(c.get("-n/--iters"), "-n/--iters", 1, 1 << 20));
    }
    if (c.has("-w/--warmup_iters")) {
      cfg.warmup = static_cast<int>(parse_int(c.get("-w/--warmup_iters"), "-w/--warmup_iters", 0, 1 << 20));
    }

    // Type, op, root.
    if (c.has("-d/--datatype")) {
      const std::string& d = c.get("-d/--datatype");
      ncclDataType_t t;
      if (d == "all") {
        *error = "-d/--datatype all is not supported by cclab sim (one type per run)";
        return false;
      }
      if (!datatype_from_name(d, &t)) {
        *error = "unknown datatype '" + d +
                 "' for -d/--datatype (expected one of int8, uint8, int32, uint32, int64, uint64, half/float16, "
                 "float/float32, double/float64, bfloat16, f8e4m3, f8e5m2)";
        return false;
      }
      cfg.type = static_cast<SimType>(static_cast<int>(t));  // SimType has ncclDataType_t's values
    }
    if (c.has("-o/--op")) {
      const std::string& o = c.get("-o/--op");
      PerfOp p;
      if (o == "all" || !op_from_name(o, &p)) {
        *error = "unknown op '" + o + "' for -o/--op (expected one of sum, prod, max, min, avg, mulsum)";
        return false;
      }
      for (const auto& e : kSimOps)
        if (e.perf == p) cfg.op = e.op;
    }
    if (c.has("-r/--root")) cfg.root = static_cast<int>(parse_int(c.get("-r/--root"), "-r/--root", 0, 1 << 20));

    // nccl-tests flags with nothing to simulate: accepted (a pasted nccl-tests line runs) and checked.
    if (c.has("-m/--agg_iters") && parse_int(c.get("-m/--agg_iters"), "-m/--agg_iters", 1, 1 << 20) != 1) {
      *error = "-m/--agg_iters " + c.get("-m/--agg_iters") +
               ": cclab sim times one operation per iteration; aggregated launches are not modelled (use -m 1)";
      return false;
    }
    if (c.has("-z/--blocking")) parse_int(c.get("-z/--blocking"), "-z/--blocking", 0, 1);
    if (c.has("-a/--average")) parse_int(c.get("-a/--average"), "-a/--average", 0, 3);

    // How finely. nccl-tests' -c 1 checks the results: the simulation moves real bytes.
    if (c.has("--payload")) cfg.payload = true;
    if (c.has("-c/--check")) {
      const bool check = parse_int(c.get("-c/--check"), "-c/--check", 0, 1 << 20) != 0;
      if (!check && c.has("--payload")) {
        *error = "-c/--check 0 disagrees with --payload (which checks the results)";
        return false;
      }
      cfg.payload = check;
    }
    if (c.has("--level")) {
      const std::string& l = c.get("--level");
      if (l == "auto") {
        cfg.level = SimLevel::kAuto;
      } else if (l == "step") {
        cfg.level = SimLevel::kStep;
      } else if (l == "flow") {
        cfg.level = SimLevel::kFlow;
      } else {
        *error = "invalid value '" + l + "' for --level (expected auto, step or flow)";
        return false;
      }
    }
    if (c.has("--step-limit")) {
      cfg.step_limit = static_cast<uint64_t>(
          parse_int(c.get("--step-limit"), "--step-limit", 1, std::numeric_limits<long long>::max()));
    }

    // Algorithm, protocol, channels: flags first, then the variables the runtime reads.
    AlgoProtoEnable probe;
    std::string why;
    if (c.has("--algo")) {
      cfg.algo = c.get("--algo");
      run->algo_source = "--algo";
      if (!valid_algo_value(cfg.algo, &why)) {
        *error = "invalid value '" + cfg.algo + "' for --algo: " + (why.empty() ? "empty" : why);
        return false;
      }
    } else if (env.algo != nullptr && env.algo[0] != '\0') {
      cfg.algo = env.algo;
      run->algo_source = "NCCL_ALGO";
      if (!valid_algo_value(cfg.algo, &why)) {
        *error = "invalid NCCL_ALGO '" + cfg.algo + "' in the environment: " + named("NCCL_ALGO", why);
        return false;
      }
    }
    if (c.has("--proto")) {
      cfg.proto = c.get("--proto");
      run->proto_source = "--proto";
      if (cfg.proto.empty() || parse_proto_env(cfg.proto.c_str(), &probe, &why) != ncclSuccess) {
        *error = "invalid value '" + cfg.proto + "' for --proto: " + (why.empty() ? "empty" : why);
        return false;
      }
    } else if (env.proto != nullptr && env.proto[0] != '\0') {
      cfg.proto = env.proto;
      run->proto_source = "NCCL_PROTO";
      if (parse_proto_env(env.proto, &probe, &why) != ncclSuccess) {
        *error = "invalid NCCL_PROTO '" + cfg.proto + "' in the environment: " + named("NCCL_PROTO", why);
        return false;
      }
    }
    if (c.has("--min-channels")) {
      cfg.min_channels = static_cast<int>(parse_int(c.get("--min-channels"), "--min-channels", 1, 64));
    } else if (env.min_channels != nullptr && env.min_channels[0] != '\0') {
      cfg.min_channels = static_cast<int>(parse_int(env.min_channels, "NCCL_MIN_NCHANNELS", 1, 64));
    }
    if (c.has("--max-channels")) {
      cfg.max_channels = static_cast<int>(parse_int(c.get("--max-channels"), "--max-channels", 1, 64));
    } else if (env.max_channels != nullptr && env.max_channels[0] != '\0') {
      cfg.max_channels = static_cast<int>(parse_int(env.max_channels, "NCCL_MAX_NCHANNELS", 1, 64));
    }
    if (cfg.min_channels > 0 && cfg.max_channels > 0 && cfg.min_channels > cfg.max_channels) {
      *error = "channels: minimum " + std::to_string(cfg.min_channels) + " (--min-channels/NCCL_MIN_NCHANNELS) "
               "is larger than maximum " + std::to_string(cfg.max_channels) + " (--max-channels/NCCL_MAX_NCHANNELS)";
      return false;
    }

    // Calibration (bench/sim_accuracy.sh fits with it).
    if (c.has("--calib") && !cfg.calibration.apply(c.get("--calib"), error)) {
      *error = "--calib: " + *error;
      return false;
    }

    // What-if.
    if (c.has("--nvlink-bw")) {
      cfg.what_if.nvlink_bw = parse_real(c.get("--nvlink-bw"), "--nvlink-bw", 0, false, "a positive number in GB/s");
    }
    if (c.has("--nic-bw")) {
      cfg.what_if.nic_bw = parse_real(c.get("--nic-bw"), "--nic-bw", 0, false, "a positive number in GB/s");
    }
    if (c.has("--nics-per-node")) {
      cfg.what_if.nics_per_machine = static_cast<int>(parse_int(c.get("--nics-per-node"), "--nics-per-node", 1, 64));
    }
    if (c.has("--link-latency")) {
      cfg.what_if.link_latency_us =
          parse_real(c.get("--link-latency"), "--link-latency", 0, true, "a number of microseconds >= 0");
    }
    if (c.has("--oversubscription")) {
      const double x = parse_real(c.get("--oversubscription"), "--oversubscription", 0, false, "a positive number");
      cfg.what_if.oversubscription = x;
      cfg.fabric.oversubscription = x;
    }

    // Degraded fabric (sim/degrade.h): names are checked against the model before the run (sim_main).
    using Parser = bool (*)(const std::string&, sim::Degradation*, std::string*);
    const std::pair<const char*, Parser> degrade_flags[] = {
        {"--degrade", sim::parse_degrade}, {"--fail", sim::parse_fail}, {"--straggler", sim::parse_straggler},
        {"--jitter", sim::parse_jitter}};
    cfg.degrade = sim::Degradation{};
    for (const auto& df : degrade_flags) {
      if (!c.has(df.first)) continue;
      for (const std::string& v : c.values.at(df.first))
        if (!df.second(v, &cfg.degrade, error)) return false;
    }
    if (cfg.level == SimLevel::kFlow && cfg.degrade.needs_step()) {
      *error = "--level flow: a failed link, a change after time 0 (LINK=FACTOR@TIME) or --jitter needs the step "
               "level (the flow level replays the run at rates fixed at its start); use --level step or auto";
      return false;
    }
  } catch (const std::invalid_argument& e) {
    *error = e.what();
    return false;
  }
  return true;
}

std::string what_if_text(const sim::WhatIf& w) {
  std::vector<std::string> parts;
  if (w.nvlink_bw > 0) parts.push_back(printf_string("nvlink-bw %g GB/s", w.nvlink_bw));
  if (w.nic_bw > 0) parts.push_back(printf_string("nic-bw %g GB/s", w.nic_bw));
  if (w.nics_per_machine > 0) parts.push_back(printf_string("nics-per-node %d", w.nics_per_machine));
  if (w.link_latency_us >= 0) parts.push_back(printf_string("link-latency %g us", w.link_latency_us));
  if (w.oversubscription > 0) parts.push_back(printf_string("oversubscription %g", w.oversubscription));
  return join(parts, ", ");
}

std::string plural(int n, const char* word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

// nccl-tests prints the op for sendrecv too, though it only copies (collective_prints_op).
const char* op_column(const SimConfig& cfg) {
  return entry_of(cfg) != nullptr && collective_prints_op(entry_of(cfg)->perf) ? sim_op_label(cfg.op) : "none";
}
int root_column(const SimConfig& cfg) { return coll_has_root(cfg) ? cfg.root : -1; }

// CSV fields never contain commas or quotes except a topology path or flags; quote when they might.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char ch : s) out += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return out + "\"";
}

double run_time_us(const SimConfig& cfg, const SimResult& r) {
  double t = 0;
  for (const auto& s : r.sizes) t += s.time_us * (cfg.iters + cfg.warmup);
  return t;
}

nlohmann::ordered_json json_of(const SimRun& run, const SimResult& r) {
  const SimConfig& cfg = run.config;
  nlohmann::ordered_json j;
  j["collective"] = sim_collective_name(cfg);
  j["topo"] = run.topo_label;
  j["topo_xml"] = !cfg.topo_xml.empty();
  j["topo_description"] = r.topo_description;
  j["machines"] = r.machines;
  j["nranks"] = r.nranks;
  j["payload"] = cfg.payload;
  j["level"] = sim_level_label(cfg.level);
  j["step_limit"] = cfg.step_limit;
  j["type"] = sim_type_label(cfg.type);
  j["op"] = op_column(cfg);
  j["root"] = root_column(cfg);
  j["min_bytes"] = cfg.min_bytes;
  j["max_bytes"] = cfg.max_bytes;
  j["factor"] = cfg.factor;
  j["increment"] = cfg.increment;
  j["iters"] = cfg.iters;
  j["warmup"] = cfg.warmup;
  j["algo"] = cfg.algo;
  j["algo_source"] = run.algo_source;
  j["proto"] = cfg.proto;
  j["proto_source"] = run.proto_source;
  j["min_channels"] = cfg.min_channels;
  j["max_channels"] = cfg.max_channels;
  nlohmann::ordered_json w;
  w["nvlink_bw"] = cfg.what_if.nvlink_bw;
  w["nic_bw"] = cfg.what_if.nic_bw;
  w["nics_per_node"] = cfg.what_if.nics_per_machine;
  w["link_latency_us"] = cfg.what_if.link_latency_us;
  w["oversubscription"] = cfg.what_if.oversubscription;
  j["what_if"] = w;
  nlohmann::ordered_json dj;
  nlohmann::ordered_json dl = nlohmann::ordered_json::array();
  for (const sim::LinkChange& c : cfg.degrade.links)
    dl.push_back({{"target", c.target}, {"factor", c.factor}, {"at_us", c.at_us}, {"fail", c.fail}});
  dj["links"] = dl;
  nlohmann::ordered_json ds = nlohmann::ordered_json::object();
  for (const auto& st : cfg.degrade.stragglers) ds[std::to_string(st.first)] = st.second;
  dj["stragglers"] = ds;
  nlohmann::ordered_json df = nlohmann::ordered_json::object();
  for (const auto& st : cfg.degrade.straggler_from_us) df[std::to_string(st.first)] = st.second;
  dj["straggler_from_us"] = df;
  dj["jitter_pct"] = cfg.degrade.jitter_pct;
  dj["jitter_seed"] = cfg.degrade.jitter_seed;
  dj["jitter_from_us"] = cfg.degrade.jitter_from_us;
  nlohmann::ordered_json carried = nlohmann::ordered_json::array();
  for (const sim::SimDegraded& d : r.degraded) {
    nlohmann::ordered_json e;
    e["label"] = d.label;
    e["links"] = d.links;
    nlohmann::ordered_json cs = nlohmann::ordered_json::array();
    for (const auto& k : d.carriers) cs.push_back({{"kind", k.kind}, {"from", k.from}, {"to", k.to}, {"channels", k.channels}});
    e["carriers"] = cs;
    carried.push_back(e);
  }
  dj["elements"] = carried;
  j["degrade"] = dj;
  const sim::Calibration& cal = cfg.calibration;
  nlohmann::ordered_json cj;
  cj["launch_us"] = cal.launch_us;
  cj["step_overhead_us"] = {{"LL", cal.step_overhead_us[0]},
                            {"LL128", cal.step_overhead_us[1]},
                            {"Simple", cal.step_overhead_us[2]}};
  cj["loop_share"] = {{"LL", cal.loop_share[0]}, {"LL128", cal.loop_share[1]}, {"Simple", cal.loop_share[2]}};
  cj["host_issue_us"] = cal.host_issue_us;
  cj["host_issue_per_channel_us"] = cal.host_issue_per_channel_us;
  cj["efficiency"] = {{"nvlink", cal.efficiency.nvlink}, {"pcie", cal.efficiency.pcie},
                      {"sys", cal.efficiency.sys},       {"net", cal.efficiency.net},
                      {"loc", cal.efficiency.loc}};
  nlohmann::ordered_json gpus = nlohmann::ordered_json::array();
  for (const auto& g : cal.gpus) {
    gpus.push_back({{"sm", g.sm}, {"name", g.name ? g.name : ""}, {"sms", g.sms}, {"sm_copy_gbs", g.sm_copy_gbs}});
  }
  cj["gpus"] = gpus;
  j["calibration"] = cj;
  j["wall_s"] = r.wall_s;
  j["peak_rss_mib"] = r.peak_rss_mib;
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& s : r.sizes) {
    nlohmann::ordered_json row;
    row["bytes"] = s.bytes;
    row["count"] = s.count;
    row["type"] = sim_type_label(cfg.type);
    row["op"] = op_column(cfg);
    row["root"] = root_column(cfg);
    row["time_us"] = s.time_us;
    row["algbw"] = s.algbw;
    row["busbw"] = s.busbw;
    row["wrong"] = s.wrong;
    row["algo"] = algo_label(s);
    row["proto"] = proto_name(s.proto);
    row["nchannels"] = s.nchannels;
    row["nthreads"] = s.nthreads;
    row["level"] = sim_level_label(s.level);
    row["predicted_us"] = s.predicted_us;
    row["slices"] = s.slices;
    row["static_shares"] = s.static_shares;
    rows.push_back(row);
  }
  j["rows"] = rows;
  nlohmann::ordered_json links = nlohmann::ordered_json::array();
  for (const auto& l : r.links) {
    links.push_back({{"link", l.link}, {"name", l.name}, {"bytes", l.bytes}, {"busy_us", l.busy_us}});
  }
  j["links"] = links;
  return j;
}

}  // namespace

// ---- names -------------------------------------------------------------------------------------------
SimEnv sim_env_from_process() {
  SimEnv e;
  e.algo = std::getenv("NCCL_ALGO");
  e.proto = std::getenv("NCCL_PROTO");
  e.min_channels = std::getenv("NCCL_MIN_NCHANNELS");
  e.max_channels = std::getenv("NCCL_MAX_NCHANNELS");
  return e;
}

bool sim_collective_from_name(const std::string& name, CollKind* coll, P2pPattern* p2p) {
  for (const auto& e : kSimColls) {
    if (name == e.name) {
      *coll = e.coll;
      if (p2p != nullptr) *p2p = e.p2p;
      return true;
    }
  }
  return false;
}

const char* sim_collective_name(CollKind coll) {
  for (const auto& e : kSimColls)
    if (e.coll == coll && e.p2p == P2pPattern::kNone) return e.name;
  return coll == CollKind::kSendRecv ? "sendrecv" : "unknown";
}

const char* sim_collective_name(const SimConfig& cfg) {
  const CollEntry* e = entry_of(cfg);
  return e != nullptr ? e->name : "unknown";
}

bool sim_perf_collective(const SimConfig& cfg, PerfCollective* out) {
  const CollEntry* e = entry_of(cfg);
  if (e != nullptr) *out = e->perf;
  return e != nullptr;
}

void sim_apply_perf_bandwidth(const SimConfig& cfg, SimResult* r) {
  PerfCollective pc;
  if (!sim_perf_collective(cfg, &pc) || r->nranks < 1) return;
  const size_t esize = sim_type_size(cfg.type);
  // cclab perf's compute_bandwidth, from its per-rank count where the collective has one (the size
  // column is the whole buffer there: count = nranks x per-rank count).
  const bool per_rank = algbw_bytes(pc, 1, 1, 2) > 1;
  for (SimSizeResult& s : r->sizes) {
    if (s.time_us <= 0) continue;
    const size_t param = per_rank ? s.count / static_cast<size_t>(r->nranks) : s.count;
    const Bandwidth bw = compute_bandwidth(pc, param, esize, r->nranks, s.time_us * 1e-6);
    s.algbw = bw.algbw;
    s.busbw = bw.busbw;
  }
}

std::string sim_collective_names() {
  std::string out;
  for (const auto& e : kSimColls) out += std::string(out.empty() ? "" : ", ") + e.name;
  return out;
}

const char* sim_op_label(RedOpKind op) {
  for (const auto& e : kSimOps)
    if (e.op == op) return op_name(e.perf);
  return "unknown";
}

const char* sim_type_label(SimType type) { return datatype_name(static_cast<ncclDataType_t>(static_cast<int>(type))); }

const char* sim_level_label(SimLevel level) {
  switch (level) {
    case SimLevel::kAuto: return "auto";
    case SimLevel::kStep: return "step";
    case SimLevel::kFlow: return "flow";
  }
  return "unknown";
}

std::vector<std::string> split_flags(const std::string& text) {
  std::vector<std::string> out;
  std::string cur;
  bool in_word = false;
  char quote = 0;
  for (char ch : text) {
    if (quote != 0) {
      if (ch == quote) {
        quote = 0;
      } else {
        cur += ch;
      }
    } else if (ch == '\'' || ch == '"') {
      quote = ch;
      in_word = true;
    } else if (ch == ' ' || ch == '\t' || ch == '\n') {
      if (in_word) out.push_back(cur);
      cur.clear();
      in_word = false;
    } else {
      cur += ch;
      in_word = true;
    }
  }
  if (in_word) out.push_back(cur);
  return out;
}

// ---- parser ------------------------------------------------------------------------------------------
std::string sim_usage() {
  return "usage: cclab sim COLLECTIVE [flags]\n"
         "       cclab sim --calibration\n"
         "\n"
         "Runs cclab's own schedules and protocols on a SimGrid model of a machine or cluster and prints\n"
         "what `cclab perf` would measure there, in nccl-tests' table (simulated time, algbw, busbw), with\n"
         "the algorithm, protocol and channels used and the tuner's prediction for each size.\n"
         "COLLECTIVE: " +
         sim_collective_names() +
         "\n"
         "\n"
         "Model:\n"
         "  --topo PRESET[:N]        a built-in machine (cclab topo --list), on N machines (default dgx-h100)\n"
         "  --xml FILE               NCCL's topology XML instead\n"
         "  --nodes N                machines (the same as PRESET:N; both given must agree)\n"
         "  --ranks N                ranks in the communicator (default: every GPU of the model)\n"
         "What runs (nccl-tests flags):\n"
         "  -b, --minbytes SIZE      smallest size (default 8; K, M, G = powers of 1024)\n"
         "  -e, --maxbytes SIZE      largest size (default: -b)\n"
         "  -f, --stepfactor X       multiply sizes by X (default 2)\n"
         "  -i, --stepbytes SIZE     add SIZE instead (used when -f is not given or is 1)\n"
         "  -n, --iters N            simulated iterations per size (default 1: the simulator is deterministic)\n"
         "  -w, --warmup_iters N     untimed iterations first (default 0)\n"
         "  -d, --datatype TYPE      int8, uint8, int32, uint32, int64, uint64, half, float, double, bfloat16,\n"
         "                           f8e4m3, f8e5m2 (default float)\n"
         "  -o, --op OP              sum, prod, max, min, avg, mulsum (default sum; avg and mulsum timing-only)\n"
         "  -r, --root N             root rank of broadcast and reduce (default 0)\n"
         "  -c, --check 0|1          1: move real bytes and check the results (the same as --payload); 0: not\n"
         "  -t, --nthreads N, -g, --ngpus N, --nprocs N\n"
         "                           ranks = their product, as nccl-tests counts them (instead of --ranks)\n"
         "  -m, --agg_iters 1        accepted with 1 only (one operation per iteration is simulated)\n"
         "  -z, --blocking 0|1, -a, --average 0-3\n"
         "                           accepted, no effect: the time reported is the operation's end on the\n"
         "                           last rank, simulated\n"
         "How:\n"
         "  --payload                move and reduce real bytes and check the results (#wrong column)\n"
         "  --level auto|step|flow   every slice a SimGrid communication (step), one flow per connection\n"
         "                           (flow), or step while the run is small enough (auto, the default)\n"
         "  --step-limit N           auto: largest run, in slices, simulated at step level (default 300000)\n"
         "  --algo LIST              NCCL_ALGO syntax (default: $NCCL_ALGO, else the tuner chooses)\n"
         "  --proto LIST             NCCL_PROTO syntax (default: $NCCL_PROTO)\n"
         "  --min-channels N         NCCL_MIN_NCHANNELS (default: $NCCL_MIN_NCHANNELS)\n"
         "  --max-channels N         NCCL_MAX_NCHANNELS (default: $NCCL_MAX_NCHANNELS)\n"
         "What if:\n"
         "  --nvlink-bw GB/s         NVLink bandwidth per GPU and direction\n"
         "  --nic-bw GB/s            bandwidth of every NIC port\n"
         "  --nics-per-node N        keep the first N NICs of every machine\n"
         "  --link-latency US        every link's latency, microseconds\n"
         "  --oversubscription X     fabric leaf down/up bandwidth ratio\n"
         "Degraded fabric (the runtime's channels and tuner stay the healthy machine's; the report\n"
         "compares with the healthy run and names the ring/tree/NVLS-Tree channels crossing each element):\n"
         "  --degrade LINK=F[@T]     LINK's bandwidth x F from simulated time T (us, ms, s; default 0);\n"
         "                           LINK: A->B, A-B (both ways) or a node (a NIC: all its links), as\n"
         "                           `cclab topo` names them; repeatable\n"
         "  --fail LINK[@T]          LINK down from T: the collective fails naming the stuck waits (exit 3)\n"
         "  --straggler RANK=F[@T],...  that rank's data loops run F times slower (from T)\n"
         "  --jitter PCT[,seed=N][,from=T]  each transfer up to PCT% of its route latency later, per seed\n"
         "Output:\n"
         "  --csv FILE, --json FILE  every row with every field (\"-\" = stdout)\n"
         "  --events FILE            every simulated step, one per line\n"
         "  --trace FILE             the run's trace for `cclab viz` / `cclab trace` (docs/trace-format.md);\n"
         "                           step-level sizes carry every step (use --level step for large sizes)\n"
         "  --live SOCKET            stream every step as it is simulated to `cclab viz --live SOCKET`\n"
         "  --live-wait SECONDS      wait this long for a viewer before simulating (default 0)\n"
         "  --links N                the N links that moved the most bytes\n"
         "  --calibration            print the simulator's constants and their sources, and exit\n"
         "  --calib NAME=V,...        change constants of that table for this run (names as printed,\n"
         "                           e.g. --calib launch=6,step_overhead.LL=1.5; bench/sim_accuracy.sh)\n"
         "  --no-progress            no progress line on stderr (it is only shown on a terminal)\n"
         "  --compare \"FLAGS A\" \"FLAGS B\"\n"
         "                           run twice, each with the other flags plus A (B), in one table with\n"
         "                           the ratios B/A, e.g. --compare \"--algo ring\" \"--algo tree\"\n"
         "  -h, --help               this text\n"
         "\n"
         "Exit status: 0 ok, 1 a payload result was wrong, 2 bad usage, 3 the simulation failed.\n";
}

SimCmdParse parse_sim_options(const std::vector<std::string>& args) {
  return parse_sim_options(args, sim_env_from_process());
}

SimCmdParse parse_sim_options(const std::vector<std::string>& args, const SimEnv& env) {
  SimCmdParse result;
  SimCmdOptions& o = result.options;
  const auto fail = [&](const std::string& why) {
    result.message = "cclab sim: " + why;
    return result;
  };
  Collected c;
  std::string why;
  if (!collect(args, false, &c, &why)) return fail(why);
  if (c.has("-h/--help")) {
    result.ok = result.help = true;
    return result;
  }
  if (c.positionals.size() > 1) return fail("unexpected argument '" + c.positionals[1] + "' (see cclab sim --help)");
  o.calibration = c.has("--calibration");
  CollKind coll = CollKind::kAllReduce;
  P2pPattern p2p = P2pPattern::kNone;
  if (c.positionals.empty()) {
    if (!o.calibration) return fail("missing COLLECTIVE (one of " + sim_collective_names() + ")");
  } else {
    o.coll_arg = c.positionals[0];
    if (!sim_collective_from_name(o.coll_arg, &coll, &p2p)) {
      PerfCollective pc;
      if (collective_from_name(o.coll_arg, &pc)) {
        return fail(o.coll_arg + " is not simulated (supported: " + sim_collective_names() + ")");
      }
      return fail("unknown collective '" + o.coll_arg + "' (expected one of " + sim_collective_names() + ")");
    }
  }
  if (o.calibration) {  // nothing else matters, but --calib changes the table
    if (c.has("--calib") && !o.run.config.calibration.apply(c.get("--calib"), &why)) return fail("--calib: " + why);
    result.ok = true;
    return result;
  }
  o.progress = !c.has("--no-progress");
  if (c.has("--csv")) o.csv_path = c.get("--csv");
  if (c.has("--json")) o.json_path = c.get("--json");
  if (c.has("--events")) o.events_path = c.get("--events");
  if (c.has("--trace")) o.run.config.trace_path = c.get("--trace");
  if (c.has("--live")) o.run.config.live_path = c.get("--live");
  if (c.has("--live") && o.run.config.live_path.empty()) return fail("--live needs a socket path");
  if (c.has("--live-wait")) {
    char* end = nullptr;
    const std::string v = c.get("--live-wait");
    o.run.config.live_wait_s = std::strtod(v.c_str(), &end);
    if (v.empty() || *end != '\0' || !(o.run.config.live_wait_s >= 0) || o.run.config.live_wait_s > 3600)
      return fail("--live-wait: expected seconds in [0, 3600], got '" + v + "'");
  }
  if (o.run.config.trace_path == "-") return fail("--trace needs a file name (a trace is binary; not stdout)");
  for (const char* f : {"--csv", "--json", "--events", "--trace"}) {
    if (c.has(f) && c.get(f).empty()) return fail(std::string(f) + " needs a file name (or - for stdout)");
  }
  int stdout_files = 0;
  for (const std::string* p : {&o.csv_path, &o.json_path, &o.events_path}) stdout_files += *p == "-" ? 1 : 0;
  if (stdout_files > 1) return fail("only one of --csv, --json and --events can write to stdout (-)");
  try {
    if (c.has("--links")) o.links = static_cast<int>(parse_int(c.get("--links"), "--links", 1, 1 << 20));
  } catch (const std::invalid_argument& e) {
    return fail(e.what());
  }
  if (!build_run(c, env, coll, p2p, &o.run, &why)) return fail(why);
  if (!o.events_path.empty()) o.run.config.record_events = true;

  if (c.has("--compare")) {
    if (!o.events_path.empty()) return fail("--events cannot be used with --compare (it records one run)");
    if (!o.run.config.trace_path.empty()) return fail("--trace cannot be used with --compare (it records one run)");
    if (!o.run.config.live_path.empty()) return fail("--live cannot be used with --compare (it streams one run)");
    o.compare = true;
    const std::vector<std::string>& strings = c.values.at("--compare");
    for (int k = 0; k < 2; ++k) {
      o.compare_flags[k] = strings[k];
      Collected extra;
      if (!collect(split_flags(strings[k]), true, &extra, &why)) {
        return fail(std::string("--compare ") + (k == 0 ? "A" : "B") + " '" + strings[k] + "': " + why);
      }
      Collected merged = c;
      for (const auto& kv : extra.values) merged.values[kv.first] = kv.second;
      // --topo and --xml replace each other; --topo PRESET:N and a base --nodes would otherwise clash.
      if (extra.has("--topo")) merged.values.erase("--xml");
      if (extra.has("--xml")) merged.values.erase("--topo");
      if (extra.has("--topo") && extra.get("--topo").find(':') != std::string::npos && !extra.has("--nodes")) {
        merged.values.erase("--nodes");
      }
      if (!build_run(merged, env, coll, p2p, &o.compare_runs[k], &why)) {
        return fail(std::string("--compare ") + (k == 0 ? "A" : "B") + " '" + strings[k] + "': " + why);
      }
    }
  }
  result.ok = true;
  return result;
}

// ---- text --------------------------------------------------------------------------------------------
std::string format_sim_banner(const SimRun& run, const SimResult& r) {
  const SimConfig& cfg = run.config;
  std::string out;
  out += "# cclab sim: " + std::string(sim_collective_name(cfg)) + " on " + run.topo_label + " (" +
         plural(r.nranks, "GPU") + ", " + plural(r.machines, "machine") + ") - simulated, " +
         (cfg.payload ? "payload checked" : "timing only") + "\n";
  if (!r.topo_description.empty()) out += "# " + r.topo_description + "\n";
  const bool by_factor = cfg.increment == 0;
  out += printf_string("# minBytes %zu maxBytes %zu step: %s(%s) warmup iters: %d iters: %d type: %s op: %s root: %d\n",
                       cfg.min_bytes, cfg.max_bytes,
                       by_factor ? printf_string("%g", cfg.factor).c_str() : std::to_string(cfg.increment).c_str(),
                       by_factor ? "factor" : "bytes", cfg.warmup, cfg.iters, sim_type_label(cfg.type), op_column(cfg),
                       root_column(cfg));
  const auto choice = [](const std::string& value, const std::string& source, const char* var) {
    if (value.empty()) return std::string("the tuner's choice (") + var + " unset)";
    return "\"" + value + "\" (" + source + ")";
  };
  if (cfg.p2p != P2pPattern::kNone) {
    // NCCL runs grouped sends and receives in its SendRecv kernel, Simple (cclab has no LL for them), on
    // the p2p channels; the tuner is not asked (algo SendRecv, predicted -).
    out += printf_string("# point-to-point: every rank's sends and receives in one group, as NCCL's SendRecv kernel runs "
                         "them: Simple, %d p2p channels, a send split over up to %d (nch), %zu KiB chunks",
                         r.p2p.nchannels, r.p2p.per_peer, r.p2p.chunk_bytes >> 10);
  } else {
    out += "# algorithm: " + choice(cfg.algo, run.algo_source, "NCCL_ALGO") +
           "; protocol: " + choice(cfg.proto, run.proto_source, "NCCL_PROTO");
  }
  if (cfg.min_channels > 0 || cfg.max_channels > 0) {
    out += printf_string("; channels: min %d max %d", cfg.min_channels, cfg.max_channels);
  }
  out += "\n";
  const std::string wi = what_if_text(cfg.what_if);
  if (!wi.empty()) out += "# what-if: " + wi + "\n";
  if (cfg.degrade.any()) out += "# degraded: " + cfg.degrade.describe() + "\n";
  switch (cfg.level) {
    case SimLevel::kAuto:
      out += printf_string("# Using level auto (step while a size takes at most %llu slices, else flow)\n",
                           static_cast<unsigned long long>(cfg.step_limit));
      break;
    case SimLevel::kStep: out += "# Using level step (every slice of every channel is a SimGrid communication)\n"; break;
    case SimLevel::kFlow: out += "# Using level flow (each connection's steps are one flow)\n"; break;
  }
  return out;
}

std::string format_sim_column_header() {
  std::string out = "#\n";
  out += printf_string("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %8s  %6s  %4s  %9s  %5s\n", "size", "count",
                       "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "algo", "proto", "nch", "predicted",
                       "level");
  out += printf_string("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %8s  %6s  %4s  %9s  %5s\n", "(B)",
                       "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "", "", "", "(us)", "");
  return out;
}

std::string format_sim_row(const SimConfig& cfg, const SimSizeResult& s) {
  std::string row = format_row_start(s.bytes, s.count, sim_type_label(cfg.type), op_column(cfg), root_column(cfg));
  row += format_row_half(s.time_us, s.algbw, s.busbw, s.wrong);
  // NCCL's tuner has no model of point-to-point work: nothing is predicted for it.
  const std::string predicted = s.p2p ? std::string("-")
                                : s.predicted_us > 0 ? format_number(s.predicted_us, 9) : std::string("N/A");
  row += printf_string("  %8s  %6s  %4d  %9s  %5s\n", algo_label(s), proto_name(s.proto), s.nchannels,
                       predicted.c_str(), sim_level_label(s.level));
  return row;
}

std::string format_sim_table(const SimConfig& cfg, const SimResult& r) {
  std::string out = format_sim_column_header();
  for (const auto& s : r.sizes) out += format_sim_row(cfg, s);
  return out;
}

double sim_avg_busbw(const SimResult& r) {
  if (r.sizes.empty()) return 0;
  double sum = 0;
  for (const auto& s : r.sizes) sum += s.busbw;
  return sum / static_cast<double>(r.sizes.size());
}

int64_t sim_wrong_total(const SimResult& r) {
  int64_t total = -1;
  for (const auto& s : r.sizes) {
    if (s.wrong >= 0) total = (total < 0 ? 0 : total) + s.wrong;
  }
  return total;
}

std::string format_sim_footer(const SimResult& r) {
  std::string out;
  const int64_t wrong = sim_wrong_total(r);
  if (wrong >= 0) {
    out += printf_string("# %-20s : %lld %s\n", "Out of bounds values", static_cast<long long>(wrong),
                         wrong ? "FAILED" : "OK");
  }
  out += printf_string("# %-20s : %g \n", "Avg bus bandwidth", sim_avg_busbw(r));
  for (const auto& s : r.sizes)
    if (s.static_shares && s.algo == AlgoKind::kPat)
      out += printf_string("# note: PAT at %zu B ran at the flow level's static shares (past 10^6 transfers), its ranks\n"
                           "#   in lockstep: an upper bound where they would fall out of step behind a spine\n"
                           "#   (docs/simulator.md, \"PAT at one GPU per machine\")\n",
                           s.bytes);
  out += "#\n";
  out += printf_string("# Simulated in %.2f s wall, peak memory %.1f MiB\n", r.wall_s, r.peak_rss_mib);
  return out;
}

std::string format_sim_carriers(const sim::SimDegraded& d, const std::string& ran) {
  if (d.links.empty()) return "";
  if (d.carriers.empty()) return ": no connection of the collective crosses it";
  if (d.carriers[0].kind == "p2p") {  // a point-to-point collective's sends
    std::string out = printf_string(": carried by %zu send%s: ", d.carriers.size(), d.carriers.size() == 1 ? "" : "s");
    for (size_t i = 0; i < d.carriers.size() && i < 6; ++i)
      out += printf_string("%srank %d -> %d", i ? ", " : "", d.carriers[i].from, d.carriers[i].to);
    return out + (d.carriers.size() > 6 ? ", ..." : "");
  }
  std::string out = ": carried by ";
  const size_t kShown = 4;
  // The edges of the algorithm that ran first (every algorithm's routes were set up, and cross it alike).
  std::string lower = ran;
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::vector<const sim::SimDegraded::Carrier*> order;
  for (const auto& k : d.carriers)
    if (k.kind == lower) order.push_back(&k);
  for (const auto& k : d.carriers)
    if (k.kind != lower) order.push_back(&k);
  for (size_t i = 0; i < order.size() && i < kShown; ++i) {
    const auto& k = *order[i];
    std::vector<std::string> ch;  // runs of three or more as "a-b"
    for (size_t j = 0; j < k.channels.size();) {
      size_t e = j;
      while (e + 1 < k.channels.size() && k.channels[e + 1] == k.channels[e] + 1) ++e;
      if (e >= j + 2) {
        ch.push_back(std::to_string(k.channels[j]) + "-" + std::to_string(k.channels[e]));
        j = e + 1;
      } else {
        ch.push_back(std::to_string(k.channels[j++]));
      }
    }
    out += printf_string("%s%s channel%s %s (rank %d -> %d)", i ? "; " : "", k.kind.c_str(),
                         k.channels.size() == 1 ? "" : "s", join(ch, ", ").c_str(), k.from, k.to);
  }
  if (d.carriers.size() > kShown) out += printf_string("; and %zu more edges", d.carriers.size() - kShown);
  // NVLS, PAT and custom algorithms have no edges here: say so rather than let ring/tree routes stand for them.
  if (!lower.empty() && lower != "ring" && lower != "tree" && lower != "nvlstree")
    out += "; " + ran + " ran, whose own transfers are not listed";
  return out;
}

std::string format_sim_degraded(const SimResult& r, const SimResult* healthy, const std::string& label) {
  if (r.degraded.empty()) return "";
  std::string out = healthy != nullptr ? "#\n# " + label + "Degraded fabric, against the same run on the healthy fabric:\n"
                                       : "#\n# " + label + "Degraded fabric:\n";
  const SimSizeResult* last = r.sizes.empty() ? nullptr : &r.sizes.back();
  const SimSizeResult* hlast = nullptr;
  if (healthy != nullptr && last != nullptr)
    for (const auto& s : healthy->sizes)
      if (s.bytes == last->bytes) hlast = &s;
  for (const sim::SimDegraded& d : r.degraded) {
    out += "#   " + d.label + format_sim_carriers(d, last != nullptr ? algo_name(last->algo) : "");
    if (hlast != nullptr && hlast->busbw > 0)
      out += printf_string(": busbw %.1f -> %.1f GB/s (%+.0f%%)", hlast->busbw, last->busbw,
                           (last->busbw / hlast->busbw - 1) * 100);
    out += "\n";
  }
  if (healthy == nullptr) return out;
  out += printf_string("# %10s  %13s  %14s  %8s  %12s  %12s\n", "size", "healthy busbw", "degraded busbw", "change",
                       "healthy (us)", "degraded (us)");
  for (const auto& s : r.sizes)
    for (const auto& h : healthy->sizes) {
      if (h.bytes != s.bytes) continue;
      out += printf_string("# %10zu  %13.2f  %14.2f  %+7.1f%%  %12.2f  %12.2f\n", s.bytes, h.busbw, s.busbw,
                           h.busbw > 0 ? (s.busbw / h.busbw - 1) * 100 : 0.0, h.time_us, s.time_us);
    }
  return out;
}

std::string format_sim_report(const SimRun& run, const SimResult& r) {
  return format_sim_banner(run, r) + format_sim_table(run.config, r) + format_sim_footer(r);
}

std::string format_sim_links(const SimConfig& cfg, const SimResult& r, int n) {
  std::vector<const sim::SimLinkLoad*> sorted;
  for (const auto& l : r.links) sorted.push_back(&l);
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const sim::SimLinkLoad* a, const sim::SimLinkLoad* b) { return a->bytes > b->bytes; });
  const size_t shown = std::min(sorted.size(), static_cast<size_t>(std::max(n, 0)));
  const double run_us = run_time_us(cfg, r);
  std::string out = printf_string("#\n# Busiest links (%zu of %zu; average over %.2f us simulated)\n", shown,
                                  sorted.size(), run_us);
  out += printf_string("# %-30s  %12s  %10s  %10s  %6s\n", "link", "GB", "avg GB/s", "busy GB/s", "busy%");
  for (size_t i = 0; i < shown; ++i) {
    const sim::SimLinkLoad& l = *sorted[i];
    const double gb = l.bytes / 1e9;
    const std::string avg = run_us > 0 ? format_number(l.bytes / 1e3 / run_us, 10) : std::string("N/A");
    const std::string busy = l.busy_us > 0 ? format_number(l.bytes / 1e3 / l.busy_us, 10) : std::string("N/A");
    const std::string pct = run_us > 0 && l.busy_us > 0 ? format_number(100.0 * l.busy_us / run_us, 6) : "N/A";
    // A degraded link (--degrade/--fail): the change, after the columns. The first elements of
    // SimResult::degraded are cfg.degrade.links', in order.
    std::string note;
    for (size_t k = 0; k < cfg.degrade.links.size() && k < r.degraded.size(); ++k) {
      const std::vector<int>& ls = r.degraded[k].links;
      if (std::find(ls.begin(), ls.end(), l.link) == ls.end()) continue;
      const sim::LinkChange& c = cfg.degrade.links[k];
      note += printf_string(c.fail ? "  failed at %g us" : "  x%g from %g us", c.fail ? c.at_us : c.factor, c.at_us);
    }
    out += printf_string("  %-30s  %12.6f  %10s  %10s  %6s%s\n", l.name.c_str(), gb,
                         avg.c_str(), busy.c_str(), pct.c_str(), note.c_str());
  }
  return out;
}

std::string sim_csv_header(bool with_variant) {
  return std::string(with_variant ? "variant," : "") +
         "bytes,count,type,op,root,time_us,algbw,busbw,wrong,algo,proto,nchannels,level,predicted_us,slices,nthreads\n";
}

std::string format_sim_csv(const SimConfig& cfg, const SimResult& r, const std::string& variant, bool header) {
  std::string out = header ? sim_csv_header(!variant.empty()) : "";
  for (const auto& s : r.sizes) {
    if (!variant.empty()) out += csv_field(variant) + ",";
    out += printf_string("%zu,%zu,%s,%s,%d,%.9g,%.9g,%.9g,%lld,%s,%s,%d,%s,%.9g,%llu,%d\n", s.bytes, s.count,
                         sim_type_label(cfg.type), op_column(cfg), root_column(cfg), s.time_us, s.algbw, s.busbw,
                         static_cast<long long>(s.wrong), algo_label(s), proto_name(s.proto), s.nchannels,
                         sim_level_label(s.level), s.predicted_us, static_cast<unsigned long long>(s.slices),
                         s.nthreads);
  }
  return out;
}

std::string format_sim_json(const SimRun& run, const SimResult& r, const SimResult* healthy) {
  nlohmann::ordered_json j = json_of(run, r);
  if (healthy != nullptr) {  // the same run on the healthy fabric, per size
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    for (const auto& s : healthy->sizes)
      rows.push_back({{"bytes", s.bytes}, {"time_us", s.time_us}, {"algbw", s.algbw}, {"busbw", s.busbw},
                      {"algo", algo_label(s)}, {"proto", proto_name(s.proto)}, {"nchannels", s.nchannels},
                      {"level", sim_level_label(s.level)}});
    j["degrade"]["healthy_rows"] = rows;
  }
  return j.dump(2) + "\n";
}

std::string format_sim_compare_json(const SimCmdOptions& o, const SimResult& a, const SimResult& b) {
  nlohmann::ordered_json j;
  j["compare"] = true;
  const SimResult* res[2] = {&a, &b};
  const char* keys[2] = {"a", "b"};
  for (int k = 0; k < 2; ++k) {
    nlohmann::ordered_json side;
    side["flags"] = o.compare_flags[k];
    const nlohmann::ordered_json one = json_of(o.compare_runs[k], *res[k]);
    for (auto it = one.begin(); it != one.end(); ++it) side[it.key()] = it.value();
    j[keys[k]] = side;
  }
  return j.dump(2) + "\n";
}

std::string format_sim_compare(const SimCmdOptions& o, const SimResult& a, const SimResult& b) {
  const SimRun& ra = o.compare_runs[0];
  const SimRun& rb = o.compare_runs[1];
  const SimResult* res[2] = {&a, &b};
  const SimRun* runs[2] = {&ra, &rb};
  std::string out = "# cclab sim --compare: " + std::string(sim_collective_name(ra.config)) + " - simulated, " +
                    (ra.config.payload || rb.config.payload ? "payload checked" : "timing only") + "\n";
  for (int k = 0; k < 2; ++k) {
    const SimRun& r = *runs[k];
    std::string wi = what_if_text(r.config.what_if);
    if (r.config.degrade.any()) wi += (wi.empty() ? "" : ", ") + std::string("degraded: ") + r.config.degrade.describe();
    out += printf_string("# %s: %-28s -> %s (%s, %s), level %s%s%s\n", k == 0 ? "A" : "B",
                         ("\"" + o.compare_flags[k] + "\"").c_str(), r.topo_label.c_str(),
                         plural(res[k]->nranks, "GPU").c_str(), plural(res[k]->machines, "machine").c_str(),
                         sim_level_label(r.config.level), wi.empty() ? "" : ", what-if: ", wi.c_str());
  }
  if (!a.topo_description.empty()) out += "# A model: " + a.topo_description + "\n";
  if (!b.topo_description.empty() && b.topo_description != a.topo_description) {
    out += "# B model: " + b.topo_description + "\n";
  }
  out += "#\n";
  const std::string dashes(18, '-');  // over the 39 characters of each side's four columns
  out += printf_string("# %10s  %s  %s  %9s  %9s\n", "", (dashes + " A " + dashes).c_str(),
                       (dashes + " B " + dashes).c_str(), "B/A", "B/A");
  out += printf_string("# %10s  %7s  %6s  %6s  %14s  %7s  %6s  %6s  %14s  %9s  %9s\n", "size", "time", "algbw",
                       "busbw", "algo/proto/nch", "time", "algbw", "busbw", "algo/proto/nch", "busbw", "time");
  out += printf_string("# %10s  %7s  %6s  %6s  %14s  %7s  %6s  %6s  %14s  %9s  %9s\n", "(B)", "(us)", "(GB/s)",
                       "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "", "", "");
  const auto half = [](const SimSizeResult* s) {
    if (s == nullptr) return printf_string("  %7s  %6s  %6s  %14s", "-", "-", "-", "-");
    const std::string choice = std::string(algo_label(*s)) + "/" + proto_name(s->proto) + "/" +
                               std::to_string(s->nchannels);
    return printf_string("  %7s  %6s  %6s  %14s", format_number(s->time_us, 7).c_str(),
                         format_number(s->algbw, 6).c_str(), format_number(s->busbw, 6).c_str(), choice.c_str());
  };
  const auto ratio = [](double num, double den) {
    return den > 0 && num >= 0 ? format_number(num / den, 9) : printf_string("%9s", "N/A");
  };
  // Rows in A's order, B's sizes that A lacks after them.
  std::vector<size_t> sizes;
  for (const auto& s : a.sizes) sizes.push_back(s.bytes);
  for (const auto& s : b.sizes) {
    if (std::find(sizes.begin(), sizes.end(), s.bytes) == sizes.end()) sizes.push_back(s.bytes);
  }
  const auto find = [](const SimResult& r, size_t bytes) -> const SimSizeResult* {
    for (const auto& s : r.sizes)
      if (s.bytes == bytes) return &s;
    return nullptr;
  };
  double sum_ratio = 0;
  int nratio = 0;
  for (size_t bytes : sizes) {
    const SimSizeResult* sa = find(a, bytes);
    const SimSizeResult* sb = find(b, bytes);
    std::string row = printf_string("%12zu", bytes) + half(sa) + half(sb);
    if (sa != nullptr && sb != nullptr) {
      row += "  " + ratio(sb->busbw, sa->busbw) + "  " + ratio(sb->time_us, sa->time_us);
      if (sa->busbw > 0) {
        sum_ratio += sb->busbw / sa->busbw;
        ++nratio;
      }
    } else {
      row += printf_string("  %9s  %9s", "N/A", "N/A");
    }
    out += row + "\n";
  }
  const int64_t wa = sim_wrong_total(a), wb = sim_wrong_total(b);
  if (wa >= 0 || wb >= 0) {
    const auto w = [](int64_t v) { return v < 0 ? std::string("N/A") : std::to_string(v); };
    out += "# Out of bounds values : A " + w(wa) + ", B " + w(wb) + " " + (wa > 0 || wb > 0 ? "FAILED" : "OK") + "\n";
  }
  out += printf_string("# %-20s : A %g, B %g", "Avg bus bandwidth", sim_avg_busbw(a), sim_avg_busbw(b));
  if (nratio > 0) out += printf_string(" (B/A %.3g on average)", sum_ratio / nratio);
  out += "\n#\n";
  out += printf_string("# Simulated in %.2f s + %.2f s wall, peak memory %.1f / %.1f MiB\n", a.wall_s, b.wall_s,
                       a.peak_rss_mib, b.peak_rss_mib);
  return out;
}

}  // namespace cclab
