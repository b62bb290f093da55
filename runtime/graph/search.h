// runtime/graph/search.h - channel search: the rings and trees NCCL would build on a topology.
//
// NCCL's ncclTopoCompute (src/graph/search.cc) searches, inside one machine, for nChannels orderings
// of the GPUs (and, across machines, the NIC each channel leaves and enters through) that sustain the
// highest per-channel bandwidth: it tries a speed from a fixed ladder (speedArrayIntra/Inter), and
// for each speed looks for as many channels as the links can carry when every channel takes that much
// bandwidth off every link it crosses; the first speed that yields channels wins, then it tries to add
// channels, and finally duplicates them. All machines get the same graph (NCCL intersects the graphs of
// every machine; cclab's machines are identical by construction).
//
// The result, TopoGraph, is what the runtime turns into rings/trees per channel (ring_order / tree
// links), what the tuner reads (bw_intra, bw_inter, type_intra, type_inter, nchannels), and what
// NCCL_GRAPH_DUMP_FILE writes in NCCL's graph XML format.
#pragma once

#include <string>
#include <vector>

#include "graph/topo.h"
#include "kernels/trees.h"

namespace cclab {

enum class GraphPattern : int {  // NCCL_TOPO_PATTERN_*
  kBalancedTree = 1,
  kSplitTree = 2,
  kTree = 3,
  kRing = 4,
  kNvls = 5,
  kCollNetDirect = 6,
};

struct TopoGraph {
  // Input
  int id = 0;                      // 0 ring, 1 tree (NCCL's graph ids)
  GraphPattern pattern = GraphPattern::kRing;
  int min_channels = 1;
  int max_channels = 32;           // MAXCHANNELS/2 as NCCL asks of the search
  bool cross_nic = false;          // allow a channel to enter through one rail and leave by another

  // Output
  int nchannels = 0;
  double bw_intra = 0;             // per-channel bandwidth inside a machine (GB/s, NCCL's "speedintra")
  double bw_inter = 0;             // per-channel bandwidth across machines ("speedinter")
  double latency_inter = 0;        // NCCL's latencyinter (µs), 0 unless the NIC reports one
  PathType type_intra = PathType::kLoc;  // worst path type between consecutive GPUs
  PathType type_inter = PathType::kLoc;  // worst GPU->NET path type used (on one machine the type to
                                         // the closest NIC, as NCCL's "type NVL/PIX" log shows)
  bool same_channels = true;       // every channel has the same order
  // intra[c] = the GPU devs of one machine in channel c's order (ring: next of intra[c][i] is
  // intra[c][i+1], and the last one leaves the machine / wraps; tree: the chain, intra[c][0] is the
  // GPU that talks to the network).
  std::vector<std::vector<int>> intra;
  // inter[c] = {net dev the channel enters through, net dev it leaves through}; empty on one machine.
  std::vector<std::vector<int>> inter;
};

// Runs the search on machine 0 of topo (paths must be computed) for the graph's pattern and channel
// bounds. Returns false with *error when no solution exists at all (e.g. no GPUs).
bool search_graph(const Topology& topo, TopoGraph* graph, std::string* error);

// NCCL's NVLS graph (graph id 3, NCCL_TOPO_PATTERN_NVLS) of machine 0, as ncclTopoCompute finds it on
// one machine: only on an NVSwitch machine whose GPUs are all sm90 or later; one channel per GPU (at
// most NCCL_MAX_NVLS_ARITY = 32: a 72-GPU domain has 32 heads), channel c headed by GPU c, every GPU pulling its share through the
// switch; the per-channel speed is the highest of the intra speed ladder that the links between each
// GPU and the NVSwitches carry when every channel takes it once per GPU and twice on its head's
// (ncclTopoSearchTryNvls: (GPUs + 1) x speed per GPU and direction), bwInter raised by the second pass
// while under 2 x bwIntra. Returns false with *why when the
// machine has no NVLS (no NVSwitch, an older GPU, fewer than 2 GPUs, a GPU off the switch); the graph
// then has 0 channels.
// On several machines (NCCL's search with system->inter) the channels start at NETs: one head per NET
// whose local GPU is not yet a head (intra[c][0] is head c's GPU), the inter speed ladder, each head's
// NET path carrying bwInter; NVLS-Tree runs over this graph (docs/tuner.md section 1.8).
// `gpus` > 0: only the first `gpus` GPUs of the machine play ranks (NCCL's topology holds only the
// communicator's GPUs).
bool search_nvls_graph(const Topology& topo, TopoGraph* graph, std::string* why, int gpus = 0);
// The NVLS heads of machine 0 across machines as (GPU dev, NET dev): one head per NET, the NET's local
// GPU (the channels search_nvls_graph makes; NCCL's graph->inter[c * 2] of the head's NVLS channel, the
// NIC its NVLS-Tree connections use: getNvlsNetDev).
std::vector<std::pair<int, int>> nvls_head_nets(const Topology& topo);

// NVLS's multicast groups over the ranks of a communicator (NCCL's connectNvls): one per machine that
// holds ranks, in machine order, its heads first in head order (head h = the rank on the NVLS graph's
// channel-h GPU, intra[h][0]; NCCL's nvlsHeads), then its other ranks in rank order (they scatter to and
// gather from the heads only). On one machine whose every rank is a head: rank order, whatever GPUs the
// ranks play. rank_machine[r] / rank_dev[r]: rank r's machine and GPU dev.
struct NvlsGroups {
  int nheads = 0;
  std::vector<std::vector<int>> group;  // by group (machine)
  std::vector<int> group_of;            // by rank: its group
  std::vector<int> index;               // by rank: its place in its group
};
// False with *why where a machine lacks a rank on one of the head GPUs, or the machines hold different
// numbers of ranks (one schedule runs every machine's group in step).
bool nvls_groups(const TopoGraph& nvls, const std::vector<int>& rank_machine,
                 const std::vector<int>& rank_dev, NvlsGroups* out, std::string* why);
// NVLS-Tree's links of `rank` on `channel`, as ranks: the heads with its index in the groups that are its
// group's parent and children in tree nvls_tree_of_channel(channel) of the double binary tree over the
// groups (NCCL's connectNvls, NCCL_MAX_NVLS_TREE_ARITY). A rank that is no head has none (up -1, ndown 0).
// One function for the runtime (core/comm_topo.cc) and the simulator (sim/world.cc: routes and tasks).
TreeLinks nvls_tree_links(const NvlsGroups& groups, int rank, int channel);

// Ring order over all ranks for channel c of a searched ring graph: machine-major concatenation of
// intra[c], with rank = machine * gpus_per_machine + dev. out[i] is the i-th rank of the ring.
std::vector<int> ring_order(const Topology& topo, const TopoGraph& ring, int channel);

// One-line summaries as NCCL logs them: "Pattern 4, crossNic 0, nChannels 2, bw 40.0/40.0, type NVL/PIX,
// sameChannels 1" and per channel " 0 : GPU/0 GPU/1 ... NET/0".
std::string describe_graph(const TopoGraph& graph);

// NCCL's graph XML (<graphs version="1"><graph id pattern crossnic nchannels speedintra speedinter
// latencyinter typeintra typeinter samechannels><channel><net dev/><gpu dev/>...</channel></graph>).
// read_graph_xml fills graphs whose id matches an entry of the file (NCCL_GRAPH_FILE replaces the
// search for those graphs) and checks it against topo (every GPU once per channel, devs that exist);
// errors name file:line.
std::string graphs_xml_string(const std::vector<const TopoGraph*>& graphs);
bool write_graphs_xml(const std::vector<const TopoGraph*>& graphs, const std::string& path,
                      std::string* error);
bool read_graphs_xml(const std::string& path, const Topology& topo, std::vector<TopoGraph*> graphs,
                     std::string* error);
bool read_graphs_xml_string(const std::string& text, const std::string& name_for_errors,
                            const Topology& topo, std::vector<TopoGraph*> graphs, std::string* error);

}  // namespace cclab
