// runtime/cli/topo_cmd.h - `cclab topo`: print a topology model, its paths and the rings and trees NCCL's
// search finds on it; plus the pieces `cclab tune` shares (building a model from --topo/--xml/--nodes and
// searching the ring and tree graphs).
//
//   cclab topo --topo dgx-h100                  the model, GPU/NET path matrices, rings and trees
//   cclab topo --topo dgx-h100:4                four machines joined by a rail-optimised fat tree
//   cclab topo --xml system.xml --nodes 2       NCCL's topology XML, replicated onto two machines
//   cclab topo --list                           the presets and their drawings
//   cclab topo --detect [--sysfs ROOT]          this machine, as sysfs and NVML describe it (graph/detect.h)
//   cclab topo --topo pcie-4gpu --dump-xml t.xml --dump-graph g.xml
//
// Everything but topo_main is pure (returns text, touches no files or streams) so that tests can check it.
// Exit status of topo_main: 0 ok, 2 bad usage or bad input (unknown preset, malformed XML, no channels),
// 1 a --dump-* file could not be written.
#pragma once

#include <string>
#include <vector>

#include "graph/channels.h"
#include "graph/detect.h"
#include "graph/search.h"
#include "graph/topo.h"

namespace cclab {

// Whether a subcommand's parser left arguments it did not know; *message then names the first one
// ("cclab topo: unknown flag '--x' (see cclab topo --help)").
bool leftover_args_error(const std::vector<std::string>& extras, const char* cmd, std::string* message);

constexpr int kToolExitOk = 0;
constexpr int kToolExitIo = 1;
constexpr int kToolExitUsage = 2;

// Where a model comes from: exactly one of preset_spec ("PRESET" or "PRESET:MACHINES"), xml_path and
// detect.
struct TopoSource {
  std::string preset_spec;      // --topo
  std::string xml_path;         // --xml
  bool detect = false;          // --detect: this machine (detect_topology)
  std::string sysfs_root;       // --sysfs; empty: CCLAB_SYSFS_ROOT or /sys
  int nodes = 0;                // --nodes; 0 = not given (the spec's MACHINES, or 1)
  double oversubscription = 0;  // --oversubscription; 0 = not given (the fabric's default, 1.0)
};

// Builds the model: the preset (with --nodes/MACHINES machines), the XML file or the detected machine
// (replicated onto --nodes machines when given). False with *error (a complete sentence, prefixed with
// nothing) on an unknown preset (naming the valid ones), a malformed spec or file, inconsistent machine
// counts, or a detection that failed or found no GPU. With --detect, *detected (when given) receives
// what detection found, also when it fails for want of a GPU (then detected->xml is not empty).
bool build_topology(const TopoSource& source, Topology* out, std::string* error, DetectResult* detected = nullptr);

// `cclab topo --detect`'s first section: where it looked, one line per CPU, PCI switch, GPU and NIC port
// found, then the warnings and notes, and "no GPU found" when there is none.
std::string format_detect_report(const DetectResult& detected, const std::string& sysfs_root);

// The ring and tree graphs are searched as the runtime and the simulator search them:
// search_ring_and_tree (graph/channels.h; the tree for exactly as many channels as the ring found).

// "Ring order, channel 0: 0 1 2 3 ... 15" for the first max_channels channels of a ring graph (all ranks
// of all machines, via ring_order).
std::string format_ring_orders(const Topology& topo, const TopoGraph& ring, int max_channels);

// The double binary tree of every channel in NCCL's log format, one line per rank: "rank 8: Trees [0]
// 9/0/-1->8->-1 [1] ...", i.e. children/children/children->rank->parent (-1: none). Channels are the
// tree graph's channels duplicated (NCCL runs 2 x nChannels, the second half on the mirrored tree);
// channel c runs tree 0 for c < nChannels and tree 1 after. Inside a machine the ranks form a chain in
// the graph's order, whose first GPU is the machine's head. At most max_ranks lines.
std::string format_trees(const Topology& topo, const TopoGraph& tree, int max_ranks);

// One rank's links in channel `channel` of a searched tree graph (the function behind format_trees).
// ranks = machine * gpus_per_machine + dev.
void tree_links_of(const Topology& topo, const TopoGraph& tree, int channel, int rank, int* up, int down[3]);

// `cclab topo --list`: every preset name followed by its drawing.
std::string format_preset_list();

// The whole report of `cclab topo` for a model: describe(), describe_paths(0), both graphs, and on
// several machines the ring orders of the first channels and the trees.
std::string format_topo_report(const Topology& topo, const TopoGraph& ring, const TopoGraph& tree);

struct TopoCmdOptions {
  TopoSource source;
  bool list = false;
  std::string dump_xml;    // --dump-xml FILE
  std::string dump_graph;  // --dump-graph FILE
};

struct TopoCmdParse {
  bool ok = false;
  bool help = false;
  std::string message;  // why parsing failed
  TopoCmdOptions options;
};

// Parses the arguments after "topo".
TopoCmdParse parse_topo_cmd(const std::vector<std::string>& args);
std::string topo_usage();

// Runs `cclab topo` with the arguments after "topo"; prints to stdout/stderr and returns the exit status.
int topo_main(const std::vector<std::string>& args);

// ---- shared by topo and tune -----------------------------------------------------------------------
// A positive integer flag value ("--nodes 4"); throws std::invalid_argument naming the flag.
int parse_positive_int(const std::string& text, const std::string& flag, int max);
// A positive real flag value ("--oversubscription 2.5"); throws std::invalid_argument naming the flag.
double parse_positive_double(const std::string& text, const std::string& flag);

}  // namespace cclab
