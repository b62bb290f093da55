// runtime/cli/topo_cmd.cc - `cclab topo` (see topo_cmd.h): model building shared with `cclab tune`,
// the report text, the flags.
#include "topo_cmd.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "kernels/trees.h"

namespace cclab {

bool leftover_args_error(const std::vector<std::string>& extras, const char* cmd, std::string* message) {
  if (extras.empty()) return false;
  const std::string& first = extras.front();
  const std::string c = std::string("cclab ") + cmd;
  *message = first.size() > 1 && first[0] == '-' ? c + ": unknown flag '" + first + "' (see " + c + " --help)"
                                                 : c + ": unexpected argument '" + first + "' (see " + c + " --help)";
  return true;
}

namespace {

std::string join_names(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Which of the double tree's two trees channel c of nch runs (the runtime's tree_of_channel): the first
// half of the channels tree 0, the duplicated second half tree 1.
int tree_of(int c, int nch) { return nch > 1 && 2 * c >= nch ? 1 : 0; }

}  // namespace

// ---- values ------------------------------------------------------------------------------------------
int parse_positive_int(const std::string& text, const std::string& flag, int max) {
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(begin, &end, 10);
  if (text.empty() || end == begin || *end != '\0' || errno == ERANGE || v < 1 || v > max) {
    throw std::invalid_argument("invalid value '" + text + "' for " + flag + " (expected an integer from 1 to " +
                                std::to_string(max) + ")");
  }
  return static_cast<int>(v);
}

double parse_positive_double(const std::string& text, const std::string& flag) {
  const char* begin = text.c_str();
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(begin, &end);
  if (text.empty() || end == begin || *end != '\0' || errno == ERANGE || !std::isfinite(v) || v <= 0) {
    throw std::invalid_argument("invalid value '" + text + "' for " + flag + " (expected a positive number)");
  }
  return v;
}

// ---- model -------------------------------------------------------------------------------------------
namespace {
std::string source_sysfs_root(const TopoSource& source) {
  return source.sysfs_root.empty() ? detect_sysfs_root() : source.sysfs_root;
}
}  // namespace

bool build_topology(const TopoSource& source, Topology* out, std::string* error, DetectResult* detected) {
  const bool has_preset = !source.preset_spec.empty();
  const bool has_xml = !source.xml_path.empty();
  const int sources = (has_preset ? 1 : 0) + (has_xml ? 1 : 0) + (source.detect ? 1 : 0);
  if (sources != 1) {
    *error = sources > 1 ? "give one of --topo, --xml and --detect, not several"
                         : "no topology: give --topo PRESET[:MACHINES] (one of " + join_names(preset_names()) +
                               "), --xml FILE or --detect";
    return false;
  }
  FabricSpec fabric;
  if (source.oversubscription > 0) fabric.oversubscription = source.oversubscription;

  if (has_preset) {
    std::string preset;
    int machines = 1;
    const bool has_count = source.preset_spec.find(':') != std::string::npos;
    if (!parse_topo_spec(source.preset_spec, &preset, &machines, error)) return false;
    if (source.nodes > 0) {
      if (has_count && machines != source.nodes) {
        *error = "--topo " + source.preset_spec + " says " + std::to_string(machines) +
                 " machine(s) but --nodes says " + std::to_string(source.nodes);
        return false;
      }
      machines = source.nodes;
    }
    Topology topo;
    if (!make_preset_topology(preset, machines, fabric, &topo, error)) return false;
    *out = std::move(topo);
    return true;
  }

  Topology topo;
  std::string what = source.xml_path;
  if (source.detect) {
    DetectOptions options;
    options.sysfs_root = source_sysfs_root(source);
    DetectResult local;
    if (!detect_topology(options, &topo, detected != nullptr ? detected : &local, error)) return false;
    what = "the detected topology";
  } else if (!read_topology_xml(source.xml_path, &topo, error)) {
    return false;
  }
  if (topo.machines > 1) {
    // The file describes its own fabric (<fabric machines=...>); --nodes may only repeat it.
    if (source.nodes > 0 && source.nodes != topo.machines) {
      *error = what + " already describes " + std::to_string(topo.machines) + " machines; --nodes " +
               std::to_string(source.nodes) + " disagrees";
      return false;
    }
    if (source.oversubscription > 0) {
      *error = what + " already describes its fabric; --oversubscription applies to --nodes only";
      return false;
    }
  } else if (source.nodes > 1) {
    if (!replicate_machines(&topo, source.nodes, fabric, error)) return false;
  }
  std::string why;
  if (!topo.validate(&why)) {
    *error = what + ": " + why;
    return false;
  }
  *out = std::move(topo);
  return true;
}

// ---- report ------------------------------------------------------------------------------------------
std::string format_ring_orders(const Topology& topo, const TopoGraph& ring, int max_channels) {
  std::string out;
  const int n = std::min(max_channels, ring.nchannels);
  for (int c = 0; c < n; ++c) {
    out += "Ring order, channel " + std::to_string(c) + ":";
    for (int r : ring_order(topo, ring, c)) out += " " + std::to_string(r);
    out += "\n";
  }
  if (n < ring.nchannels) {
    out += "(" + std::to_string(ring.nchannels - n) + " more channel(s); each follows its graph channel above)\n";
  }
  return out;
}

void tree_links_of(const Topology& topo, const TopoGraph& tree, int channel, int rank, int* up, int down[3]) {
  *up = -1;
  down[0] = down[1] = down[2] = -1;
  const int gpm = topo.gpus_per_machine();
  const int nch = tree.nchannels;
  if (gpm < 1 || nch < 1 || channel < 0 || channel >= 2 * nch || rank < 0 || rank >= gpm * topo.machines) return;
  const std::vector<int>& intra = tree.intra[static_cast<size_t>(channel % nch)];
  const int m = rank / gpm, dev = rank % gpm;
  const auto it = std::find(intra.begin(), intra.end(), dev);
  if (it == intra.end()) return;  // a GPU the graph does not use
  const int local = static_cast<int>(it - intra.begin());
  const int chain_len = static_cast<int>(intra.size());
  int nd = 0;
  if (local > 0) *up = m * gpm + intra[local - 1];
  if (local + 1 < chain_len) down[nd++] = m * gpm + intra[local + 1];
  if (local != 0) return;
  // The head: links to the heads of its parent and children machines in the double binary tree.
  TreeLinks t0, t1;
  dtree(topo.machines, m, &t0, &t1);
  const TreeLinks& t = tree_of(channel, 2 * nch) == 0 ? t0 : t1;
  if (t.up >= 0) *up = t.up * gpm + intra[0];
  for (int i = 0; i < t.ndown && nd < 3; ++i) down[nd++] = t.down[i] * gpm + intra[0];
}

std::string format_trees(const Topology& topo, const TopoGraph& tree, int max_ranks) {
  std::string out;
  const int nranks = topo.gpus_per_machine() * topo.machines;
  const int nch = 2 * tree.nchannels;
  const int shown = std::min(nranks, max_ranks);
  for (int r = 0; r < shown; ++r) {
    out += "rank " + std::to_string(r) + ": Trees";
    for (int c = 0; c < nch; ++c) {
      int up, down[3];
      tree_links_of(topo, tree, c, r, &up, down);
      char buf[80];
      std::snprintf(buf, sizeof(buf), " [%d] %d/%d/%d->%d->%d", c, down[0], down[1], down[2], r, up);
      out += buf;
    }
    out += "\n";
  }
  if (shown < nranks) out += "(" + std::to_string(nranks - shown) + " more rank(s) not shown)\n";
  return out;
}

std::string format_preset_list() {
  std::string out;
  for (const auto& name : preset_names()) {
    std::string drawing = preset_drawing(name);
    if (drawing.rfind(name, 0) != 0) out += name + "\n";  // the drawing's first line usually names it
    if (!drawing.empty() && drawing.back() != '\n') drawing += "\n";
    out += drawing + "\n";
  }
  return out;
}

std::string format_detect_report(const DetectResult& detected, const std::string& sysfs_root) {
  std::string out = "## Detected (sysfs root " + sysfs_root + "; NVML: " + detected.nvml + ")\n";
  out += detected.summary;
  for (const std::string& w : detected.warnings) out += "warning: " + w + "\n";
  for (const std::string& n : detected.notes) out += "note: " + n + "\n";
  if (detected.gpu_busids.empty()) {
    out += "No GPU found, so there is no model to show: the CPUs and NICs above are what was found.\n";
  }
  return out;
}

std::string format_topo_report(const Topology& topo, const TopoGraph& ring, const TopoGraph& tree) {
  const int gpm = topo.gpus_per_machine();
  std::string out;
  std::string model = topo.describe();
  if (!model.empty() && model.back() != '\n') model += "\n";
  out += "## Model\n" + model;
  std::string paths = topo.describe_paths(0);
  if (!paths.empty() && paths.back() != '\n') paths += "\n";
  out += "\n## Paths (machine 0)\n" + paths;
  out += "\n## Ring graph\n" + describe_graph(ring) + "\n";
  out += "\n## Tree graph\n" + describe_graph(tree) + "\n";
  if (topo.machines > 1) {
    out += "\n## Rings over " + std::to_string(topo.machines) + " machines (rank = machine x " + std::to_string(gpm) +
           " + GPU)\n";
    out += format_ring_orders(topo, ring, 4);
    out += "\n## Double binary trees (" + std::to_string(2 * tree.nchannels) +
           " channels: the tree graph's channels, then the same on the mirrored tree; "
           "children/children/children->rank->parent)\n";
    out += format_trees(topo, tree, 64);
  }
  return out;
}

// ---- flags -------------------------------------------------------------------------------------------
std::string topo_usage() {
  return "usage: cclab topo (--topo PRESET[:MACHINES] | --xml FILE | --detect [--sysfs ROOT]) [flags]\n"
         "       cclab topo --list\n"
         "\n"
         "Prints a topology model (nodes and links), the GPU and NET path matrices of machine 0, and the\n"
         "ring and tree channels NCCL's search finds on it; on several machines also the full ring order of\n"
         "the first channels and the double binary tree of every channel.\n"
         "PRESET: " +
         join_names(preset_names()) +
         "\n"
         "\n"
         "  --topo PRESET[:MACHINES]   a built-in machine, replicated onto MACHINES machines (default 1)\n"
         "  --xml FILE                 NCCL's topology XML (NCCL_TOPO_FILE format)\n"
         "  --detect                   this machine: its PCIe tree, CPUs and NICs from sysfs, NVLinks from NVML\n"
         "  --sysfs ROOT               with --detect: read ROOT instead of /sys (default: $CCLAB_SYSFS_ROOT)\n"
         "  --nodes N                  machines joined by a rail-optimised fat tree (default: MACHINES or 1)\n"
         "  --oversubscription X       leaf switch down/up bandwidth ratio of that fabric (default 1)\n"
         "  --dump-xml FILE            also write the model as topology XML (what NCCL_TOPO_DUMP_FILE writes)\n"
         "  --dump-graph FILE          also write the ring and tree graphs as graph XML (NCCL_GRAPH_DUMP_FILE)\n"
         "  --list                     the presets and their drawings\n"
         "  -h, --help                 this text\n"
         "\n"
         "Exit status: 0 ok, 1 a file could not be written, 2 bad usage or bad input.\n";
}

TopoCmdParse parse_topo_cmd(const std::vector<std::string>& args) {
  TopoCmdParse result;
  TopoCmdOptions& o = result.options;
  CLI::App app{"cclab topo", "cclab topo"};
  app.set_help_flag();
  app.allow_extras();
  bool help = false, list = false;
  std::string nodes, oversub;
  app.add_flag("-h,--help", help);
  app.add_flag("--list", list);
  app.add_option("--topo", o.source.preset_spec);
  app.add_option("--xml", o.source.xml_path);
  app.add_flag("--detect", o.source.detect);
  app.add_option("--sysfs", o.source.sysfs_root);
  app.add_option("--nodes", nodes);
  app.add_option("--oversubscription", oversub);
  app.add_option("--dump-xml", o.dump_xml);
  app.add_option("--dump-graph", o.dump_graph);
  try {
    std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 consumes from the back
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    result.message = std::string("cclab topo: ") + e.what();
    return result;
  }
  if (help) {
    result.ok = result.help = true;
    return result;
  }
  if (leftover_args_error(app.remaining(), "topo", &result.message)) return result;
  try {
    if (!nodes.empty()) o.source.nodes = parse_positive_int(nodes, "--nodes", 4096);
    if (!oversub.empty()) o.source.oversubscription = parse_positive_double(oversub, "--oversubscription");
  } catch (const std::invalid_argument& e) {
    result.message = std::string("cclab topo: ") + e.what();
    return result;
  }
  o.list = list;
  if (!o.source.sysfs_root.empty() && !o.source.detect) {
    result.message = "cclab topo: --sysfs goes with --detect";
    return result;
  }
  if (!list && o.source.preset_spec.empty() && o.source.xml_path.empty() && !o.source.detect) {
    result.message = "cclab topo: give --topo PRESET[:MACHINES] (one of " + join_names(preset_names()) +
                     "), --xml FILE, --detect or --list";
    return result;
  }
  result.ok = true;
  return result;
}

int topo_main(const std::vector<std::string>& args) {
  const TopoCmdParse parsed = parse_topo_cmd(args);
  if (!parsed.ok) {
    std::fprintf(stderr, "%s\n", parsed.message.c_str());
    return kToolExitUsage;
  }
  if (parsed.help) {
    std::fputs(topo_usage().c_str(), stdout);
    return kToolExitOk;
  }
  const TopoCmdOptions& o = parsed.options;
  if (o.list && o.source.preset_spec.empty() && o.source.xml_path.empty() && !o.source.detect) {
    std::fputs(format_preset_list().c_str(), stdout);
    return kToolExitOk;
  }
  Topology topo;
  std::string error;
  DetectResult detected;
  const bool built = build_topology(o.source, &topo, &error, &detected);
  if (o.source.detect && !detected.xml.empty()) {
    // Detection ran: what it found comes first, GPUs or not.
    std::fputs(format_detect_report(detected, source_sysfs_root(o.source)).c_str(), stdout);
    if (detected.gpu_busids.empty()) return kToolExitOk;
    std::fputs("\n", stdout);
  }
  if (!built) {
    std::fprintf(stderr, "cclab topo: %s\n", error.c_str());
    return kToolExitUsage;
  }
  TopoGraph ring, tree;
  if (!search_ring_and_tree(topo, &ring, &tree, &error)) {
    std::fprintf(stderr, "cclab topo: %s\n", error.c_str());
    return kToolExitUsage;
  }
  if (o.list) std::fputs(format_preset_list().c_str(), stdout);
  std::fputs(format_topo_report(topo, ring, tree).c_str(), stdout);
  std::fflush(stdout);
  if (!o.dump_xml.empty()) {
    if (!write_topology_xml(topo, o.dump_xml, &error)) {
      std::fprintf(stderr, "cclab topo: --dump-xml: %s\n", error.c_str());
      return kToolExitIo;
    }
    std::printf("\n# topology written to %s\n", o.dump_xml.c_str());
  }
  if (!o.dump_graph.empty()) {
    if (!write_graphs_xml({&ring, &tree}, o.dump_graph, &error)) {
      std::fprintf(stderr, "cclab topo: --dump-graph: %s\n", error.c_str());
      return kToolExitIo;
    }
    std::printf("# graphs written to %s\n", o.dump_graph.c_str());
  }
  return kToolExitOk;
}

}  // namespace cclab
