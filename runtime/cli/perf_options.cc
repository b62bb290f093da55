// runtime/cli/perf_options.cc - parsing of `cclab perf` flags (CLI11 for the structure, our own value
// parsers so every error names the flag and says what it expected).
#include "perf_options.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <stdexcept>

namespace cclab {
namespace {

struct CollectiveEntry {
  PerfCollective coll;
  const char* name;
};
constexpr CollectiveEntry kCollectives[] = {
    {PerfCollective::kAllReduce, "all_reduce"},
    {PerfCollective::kAllGather, "all_gather"},
    {PerfCollective::kReduceScatter, "reduce_scatter"},
    {PerfCollective::kBroadcast, "broadcast"},
    {PerfCollective::kReduce, "reduce"},
    {PerfCollective::kAllToAll, "alltoall"},
    {PerfCollective::kGather, "gather"},
    {PerfCollective::kScatter, "scatter"},
    {PerfCollective::kSendRecv, "sendrecv"},
};

struct OpEntry {
  PerfOp op;
  const char* name;
};
constexpr OpEntry kOps[] = {{PerfOp::kSum, "sum"}, {PerfOp::kProd, "prod"}, {PerfOp::kMax, "max"},
                            {PerfOp::kMin, "min"}, {PerfOp::kAvg, "avg"},   {PerfOp::kMulSum, "mulsum"}};

struct TypeEntry {
  ncclDataType_t type;
  const char* name;   // nccl-tests' spelling, the one printed
  const char* alias;  // the NCCL-style name also accepted, or nullptr
  size_t size;
};
// nccl-tests' test_types order, which is also the order "-d all" runs them in.
constexpr TypeEntry kTypes[] = {
    {ncclInt8, "int8", nullptr, 1},         {ncclUint8, "uint8", nullptr, 1},
    {ncclInt32, "int32", nullptr, 4},       {ncclUint32, "uint32", nullptr, 4},
    {ncclInt64, "int64", nullptr, 8},       {ncclUint64, "uint64", nullptr, 8},
    {ncclFloat16, "half", "float16", 2},    {ncclFloat32, "float", "float32", 4},
    {ncclFloat64, "double", "float64", 8},  {ncclBfloat16, "bfloat16", nullptr, 2},
    {ncclFloat8e4m3, "f8e4m3", nullptr, 1}, {ncclFloat8e5m2, "f8e5m2", nullptr, 1},
};

std::string list_collectives() {
  std::string out;
  for (const auto& c : kCollectives) out += std::string(out.empty() ? "" : ", ") + c.name;
  return out;
}

std::string list_ops() {
  std::string out;
  for (const auto& o : kOps) out += std::string(out.empty() ? "" : ", ") + o.name;
  return out + ", all";
}

std::string list_types() {
  std::string out;
  for (const auto& t : kTypes) {
    out += std::string(out.empty() ? "" : ", ") + t.name;
    if (t.alias) out += std::string("/") + t.alias;
  }
  return out + ", all";
}

// A whole-string integer in [lo, hi]; the message names the flag so a typo in a long command line is
// found at once.
long long parse_int(const std::string& text, const std::string& flag, long long lo, long long hi) {
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(begin, &end, 10);
  if (text.empty() || end == begin || *end != '\0' || errno == ERANGE) {
    throw std::invalid_argument("invalid value '" + text + "' for " + flag + " (expected an integer)");
  }
  if (v < lo || v > hi) {
    throw std::invalid_argument("value " + text + " for " + flag + " is out of range [" + std::to_string(lo) + ", " +
                                std::to_string(hi) + "]");
  }
  return v;
}

}  // namespace

// ---- Names -------------------------------------------------------------------------------------------
const char* collective_name(PerfCollective coll) {
  for (const auto& c : kCollectives) {
    if (c.coll == coll) return c.name;
  }
  return "unknown";
}

bool collective_from_name(const std::string& name, PerfCollective* coll) {
  for (const auto& c : kCollectives) {
    if (name == c.name) {
      *coll = c.coll;
      return true;
    }
  }
  return false;
}

const char* op_name(PerfOp op) {
  for (const auto& o : kOps) {
    if (o.op == op) return o.name;
  }
  return "unknown";
}

bool op_from_name(const std::string& name, PerfOp* op) {
  for (const auto& o : kOps) {
    if (name == o.name) {
      *op = o.op;
      return true;
    }
  }
  return false;
}

const char* datatype_name(ncclDataType_t type) {
  for (const auto& t : kTypes) {
    if (t.type == type) return t.name;
  }
  return "unknown";
}

bool datatype_from_name(const std::string& name, ncclDataType_t* type) {
  for (const auto& t : kTypes) {
    if (name == t.name || (t.alias != nullptr && name == t.alias)) {
      *type = t.type;
      return true;
    }
  }
  return false;
}

size_t datatype_size(ncclDataType_t type) {
  for (const auto& t : kTypes) {
    if (t.type == type) return t.size;
  }
  return 0;
}

bool collective_reduces(PerfCollective coll) {
  return coll == PerfCollective::kAllReduce || coll == PerfCollective::kReduceScatter ||
         coll == PerfCollective::kReduce;
}

bool collective_prints_op(PerfCollective coll) { return collective_reduces(coll) || coll == PerfCollective::kSendRecv; }

bool collective_has_root(PerfCollective coll) {
  return coll == PerfCollective::kBroadcast || coll == PerfCollective::kReduce || coll == PerfCollective::kGather ||
         coll == PerfCollective::kScatter;
}

// ---- Values ------------------------------------------------------------------------------------------
size_t parse_size(const std::string& text, const std::string& flag) {
  const auto bad = [&]() {
    return std::invalid_argument("invalid size '" + text + "' for " + flag +
                                 " (expected bytes as a number with an optional K, M or G suffix, e.g. 8, 64K, 32M)");
  };
  if (text.empty()) throw bad();
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  const double value = std::strtod(begin, &end);
  if (end == begin || errno == ERANGE || !std::isfinite(value) || value < 0 || *begin == '-' || *begin == '+') {
    throw bad();
  }
  // strtod also reads hex floats, "inf" and exponents; sizes are plain decimals, so reject the rest.
  for (const char* p = begin; p != end; ++p) {
    if (!((*p >= '0' && *p <= '9') || *p == '.')) throw bad();
  }
  double unit = 1;
  if (*end != '\0') {
    switch (*end) {
      case 'K':
      case 'k': unit = 1024.0; break;
      case 'M':
      case 'm': unit = 1024.0 * 1024.0; break;
      case 'G':
      case 'g': unit = 1024.0 * 1024.0 * 1024.0; break;
      default: throw bad();
    }
    if (end[1] != '\0') throw bad();
  }
  const double bytes = value * unit;
  if (bytes >= 9.0e18) throw std::invalid_argument("size '" + text + "' for " + flag + " is too large");
  return static_cast<size_t>(bytes);
}

std::vector<size_t> size_sweep(const PerfOptions& o) {
  std::vector<size_t> sizes;
  for (size_t size = o.min_bytes; size <= o.max_bytes;) {
    sizes.push_back(size);
    const size_t next = o.step_factor > 1 ? size * o.step_factor : size + o.step_bytes;
    // parse_perf_options rejects a sweep that cannot advance; the overflow test ends sweeps near SIZE_MAX.
    if (next <= size || (o.step_factor > 1 && next / o.step_factor != size)) break;
    size = next;
  }
  return sizes;
}

std::string perf_usage() {
  return "usage: cclab perf COLLECTIVE [flags]\n"
         "\n"
         "Measures one collective over a range of sizes and checks its results, like nccl-tests.\n"
         "COLLECTIVE: " +
         list_collectives() +
         "\n"
         "\n"
         "  -b, --minbytes SIZE      smallest size in bytes (default 32M; K, M, G = powers of 1024)\n"
         "  -e, --maxbytes SIZE      largest size in bytes (default 32M)\n"
         "  -i, --stepbytes SIZE     increment between sizes (default 1M)\n"
         "  -f, --stepfactor N       multiply sizes by N instead (overrides -i when N > 1)\n"
         "  -n, --iters N            timed iterations per size (default 20)\n"
         "  -w, --warmup_iters N     warmup iterations (default 1)\n"
         "  -m, --agg_iters N        collectives per iteration, issued in one group (default 1)\n"
         "  -c, --check N            correctness-check iterations per size (default 1; 0 = no check)\n"
         "  -o, --op OP              " +
         list_ops() +
         " (default sum)\n"
         "  -d, --datatype TYPE      " +
         list_types() +
         " (default float)\n"
         "  -r, --root N             root rank (default 0; -1 = every root in turn)\n"
         "  -t, --nthreads N         nccl-tests threads per process (default 1)\n"
         "  -g, --ngpus N            nccl-tests GPUs per thread (default 1); each rank is a thread,\n"
         "                           so this process runs nthreads x ngpus ranks\n"
         "  -z, --blocking 0|1       0: queue on a host stream, then synchronize; 1: NULL stream, every\n"
         "                           call returns when done (default 0)\n"
         "  -a, --average 0|1|2|3    time reported across ranks: rank 0, mean, min, max (default 1)\n"
         "      --nprocs N           spawn N processes of this tool, each with nthreads x ngpus ranks\n"
         "      --hosts H            with --nprocs: the processes play H hosts (NCCL_HOSTID), H blocks\n"
         "                           of consecutive processes; NET/Socket joins the hosts (docs/net.md)\n"
         "  -h, --help               this text\n"
         "\n"
         "Under mpirun (with MPI support built in) every MPI process contributes its ranks.\n"
         "Exit status: 0 all values correct, 1 some values wrong, 2 bad usage, 3 runtime error.\n";
}

// ---- Parser ------------------------------------------------------------------------------------------
PerfParse parse_perf_options(const std::vector<std::string>& args) {
  PerfParse result;
  PerfOptions& o = result.options;

  CLI::App app{"cclab perf", "cclab perf"};
  app.set_help_flag();  // our own -h so the text matches perf_usage()
  app.allow_extras();   // unknown flags are reported below, by name
  bool help = false;
  std::string coll, minb, maxb, stepb, factor, iters, warmup, agg, check, op, dtype, root, threads, gpus, blocking,
      average, nprocs, hosts;
  app.add_flag("-h,--help", help);
  app.add_option("collective", coll);
  app.add_option("-b,--minbytes", minb);
  app.add_option("-e,--maxbytes", maxb);
  app.add_option("-i,--stepbytes", stepb);
  app.add_option("-f,--stepfactor", factor);
  app.add_option("-n,--iters", iters);
  app.add_option("-w,--warmup_iters", warmup);
  app.add_option("-m,--agg_iters", agg);
  app.add_option("-c,--check", check);
  app.add_option("-o,--op", op);
  app.add_option("-d,--datatype", dtype);
  app.add_option("-r,--root", root);
  app.add_option("-t,--nthreads", threads);
  app.add_option("-g,--ngpus", gpus);
  app.add_option("-z,--blocking", blocking);
  app.add_option("-a,--average", average);
  app.add_option("--nprocs", nprocs);
  app.add_option("--hosts", hosts);

  try {
    std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 consumes from the back
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    // What CLI11 itself rejects is structural: a flag given without its value, or given twice.
    result.message = std::string("cclab perf: ") + e.what();
    return result;
  }
  if (help) {
    result.help = true;
    result.ok = true;
    return result;
  }
  const std::vector<std::string> extras = app.remaining();
  if (!extras.empty()) {
    const std::string& first = extras.front();
    result.message = first.size() > 1 && first[0] == '-'
                         ? "cclab perf: unknown flag '" + first + "' (see cclab perf --help)"
                         : "cclab perf: unexpected argument '" + first + "' (see cclab perf --help)";
    return result;
  }
  if (coll.empty()) {
    result.message = "cclab perf: missing COLLECTIVE (one of " + list_collectives() + ")";
    return result;
  }
  if (!collective_from_name(coll, &o.collective)) {
    result.message = "cclab perf: unknown collective '" + coll + "' (expected one of " + list_collectives() + ")";
    return result;
  }

  try {
    constexpr long long kIntMax = std::numeric_limits<int>::max();
    if (!minb.empty()) o.min_bytes = parse_size(minb, "-b/--minbytes");
    if (!maxb.empty()) o.max_bytes = parse_size(maxb, "-e/--maxbytes");
    if (!stepb.empty()) o.step_bytes = parse_size(stepb, "-i/--stepbytes");
    if (!factor.empty()) o.step_factor = static_cast<uint64_t>(parse_int(factor, "-f/--stepfactor", 1, 1LL << 20));
    if (!iters.empty()) o.iters = static_cast<int>(parse_int(iters, "-n/--iters", 1, kIntMax));
    if (!warmup.empty()) o.warmup_iters = static_cast<int>(parse_int(warmup, "-w/--warmup_iters", 0, kIntMax));
    if (!agg.empty()) o.agg_iters = static_cast<int>(parse_int(agg, "-m/--agg_iters", 1, kIntMax));
    if (!check.empty()) o.check_iters = static_cast<int>(parse_int(check, "-c/--check", 0, kIntMax));
    if (!root.empty()) o.root = static_cast<int>(parse_int(root, "-r/--root", -1, kIntMax));
    if (!threads.empty()) o.threads = static_cast<int>(parse_int(threads, "-t/--nthreads", 1, 1024));
    if (!gpus.empty()) o.gpus = static_cast<int>(parse_int(gpus, "-g/--ngpus", 1, 1024));
    if (!blocking.empty()) o.blocking = static_cast<int>(parse_int(blocking, "-z/--blocking", 0, 1));
    if (!average.empty()) o.average = static_cast<int>(parse_int(average, "-a/--average", 0, 3));
    if (!nprocs.empty()) o.nprocs = static_cast<int>(parse_int(nprocs, "--nprocs", 1, 1024));
    if (!hosts.empty()) o.hosts = static_cast<int>(parse_int(hosts, "--hosts", 1, 1024));
  } catch (const std::invalid_argument& e) {
    result.message = std::string("cclab perf: ") + e.what();
    return result;
  }

  if (!op.empty()) {
    PerfOp one;
    if (op == "all") {
      o.ops.clear();
      for (const auto& entry : kOps) o.ops.push_back(entry.op);
    } else if (op_from_name(op, &one)) {
      o.ops = {one};
    } else {
      result.message = "cclab perf: unknown op '" + op + "' for -o/--op (expected one of " + list_ops() + ")";
      return result;
    }
  }
  if (!dtype.empty()) {
    ncclDataType_t one;
    if (dtype == "all") {
      o.types.clear();
      for (const auto& entry : kTypes) o.types.push_back(entry.type);
    } else if (datatype_from_name(dtype, &one)) {
      o.types = {one};
    } else {
      result.message =
          "cclab perf: unknown datatype '" + dtype + "' for -d/--datatype (expected one of " + list_types() + ")";
      return result;
    }
  }

  if (o.min_bytes > o.max_bytes) {
    result.message = "cclab perf: invalid sizes: -b/--minbytes " + std::to_string(o.min_bytes) +
                     " is larger than -e/--maxbytes " + std::to_string(o.max_bytes);
    return result;
  }
  if (o.hosts > 0 && o.nprocs == 0) {
    result.message = "cclab perf: --hosts splits the processes of --nprocs; give --nprocs too (under mpirun, give "
                     "each process its NCCL_HOSTID instead)";
    return result;
  }
  if (o.hosts > o.nprocs) {
    result.message = "cclab perf: --hosts " + std::to_string(o.hosts) + " is more than --nprocs " +
                     std::to_string(o.nprocs) + ": a host needs a process";
    return result;
  }
  // A sweep that cannot advance would never end (nccl-tests loops forever here).
  if (o.min_bytes < o.max_bytes) {
    if (o.step_factor > 1 && o.min_bytes == 0) {
      result.message = "cclab perf: -b/--minbytes 0 cannot grow by -f/--stepfactor; use -b 1 or larger";
      return result;
    }
    if (o.step_factor <= 1 && o.step_bytes == 0) {
      result.message = "cclab perf: -i/--stepbytes 0 cannot advance from -b to -e; give -i > 0 or -f > 1";
      return result;
    }
  }
  result.ok = true;
  return result;
}

}  // namespace cclab
