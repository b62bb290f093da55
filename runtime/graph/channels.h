// runtime/graph/channels.h - from searched graphs to what every channel runs: the ring order and
// each rank's place in the channel's tree (NCCL's connect.cc: ncclTopoPreset / ncclTopoPostset), and
// the cost model's input. The runtime (comm_topo.cc) and the simulator (sim/) both build their
// channels here, so a simulated run and a host run of the same model use the same rings and trees.
#pragma once

#include <string>
#include <vector>

#include "graph/search.h"
#include "graph/topo.h"
#include "graph/tuning.h"
#include "kernels/trees.h"

namespace cclab {

// Where the ranks sit: rank r plays GPU dev rank_dev[r] of machine rank_machine[r].
struct RankPlacement {
  std::vector<int> rank_machine;
  std::vector<int> rank_dev;
  int nranks() const { return static_cast<int>(rank_machine.size()); }
  // Machines holding ranks, ascending.
  std::vector<int> machines() const;
};

// cclab's default placement on a model: rank r on GPU r % G of machine r / G (G GPUs per machine).
RankPlacement place_ranks(const Topology& topo, int nranks);

// A connection of a channel between two machines and the NICs it takes: NET dev `send_net` on the
// sender's machine, NET dev `recv_net` on the receiver's (NCCL's ncclTopoGetNetDev: each end asks the
// graph of the channel that opened the connection, graph_net_dev).
struct NetConn {
  int from = -1, to = -1;  // ranks
  int send_net = -1, recv_net = -1;
};

struct ChannelPlan {
  std::vector<int> ring;        // ring order (machine after machine; the same list for every rank)
  int tree_index = 0;           // which of the double binary tree's two trees (tree_of_channel)
  std::vector<TreeLinks> tree;  // per rank: its parent and children in that tree
  // Every connection of the channel that crosses machines: the ring's (ring graph), then the tree's in
  // both directions (tree graph) unless the ring already opened it (NCCL connects a channel's ring
  // first, and a tree link to the same peer reuses that connection), sorted by (from, to). Empty on one
  // machine.
  std::vector<NetConn> net;
  const NetConn* net_of(int from, int to) const;  // nullptr when (from, to) does not cross machines here
};

// The NET dev the rank on GPU `dev` uses for a network connection of graph channel `channel` (taken mod
// the graph's channels): the channel's entry NET (inter[c][0]) for the channel's first GPU
// (intra[c][0]), its exit NET (inter[c][1]) for any other GPU. A ring channel "NET/n GPU/a ... GPU/b
// NET/m" receives from the previous machine on a through NET/n and sends to the next machine from b
// through NET/m (n == m unless crossNic); a tree channel's head sends and receives on its NET/n.
// -1 when the graph has no NETs (one machine).
int graph_net_dev(const TopoGraph& graph, int channel, int dev);

// Channel c runs the ring graph's channel c mod nChannels, machine after machine, and tree
// tree_of_channel(c, nchannels) of the double binary tree over the machines holding ranks, with a chain
// in the tree graph's order inside each machine (the chain's first rank is the machine's head); its
// connections between machines take the NICs graph_net_dev gives (ChannelPlan::net).
std::vector<ChannelPlan> plan_channels(const Topology& topo, const TopoGraph& ring, const TopoGraph& tree,
                                       const RankPlacement& place, int nchannels);

// Searches the ring graph, then the tree graph for as many channels as the ring found (NCCL's init
// order). False with *error when a search fails.
bool search_ring_and_tree(const Topology& topo, TopoGraph* ring, TopoGraph* tree, std::string* error);

// The channels NCCL would run on the modelled GPUs: the fewer of the two graphs' channels, doubled,
// within [min_channels, max_channels] (NCCL_MIN/MAX_NCHANNELS), at most 64.
int modelled_channels(const TopoGraph& ring, const TopoGraph& tree, int min_channels = 1, int max_channels = 64);

// The channels a CUDA communicator runs, one thread block each per collective:
//  - `modelled` (modelled_channels of the machine it models: the detected machine, or one given by
//    CCLAB_TOPO / NCCL_TOPO_FILE), or, when that model is the virtual fallback (modelled <= 0), 16 -
//    or, when ranks share a GPU (`gpu_sharing` > 1: the most ranks of the communicator on one GPU),
//    `max_blocks`: with 16 each, 2 ranks keep 32 of an H200's 132 SMs busy, and 32 channels moved
//    1.48x the bytes (2 ranks, 1 GiB all_reduce; docs/gpu.md, "Measured");
//  - within [lo, hi] (NCCL_MIN/MAX_NCHANNELS and the config's minCTAs/maxCTAs, as the ranks agreed);
//  - at most `max_blocks` (what one launch carries);
//  - at most `resident` when > 0: the blocks each rank may keep on its GPU so that the blocks of all
//    the ranks sharing that GPU are resident together (ranks spin on each other's blocks: a block left
//    waiting for an SM would never let its peers finish). This bound wins over `lo`.
// *note (may be null) says which bound cut the count, or is left empty.
int cuda_channel_count(int modelled, int gpu_sharing, int lo, int hi, int max_blocks, int resident, std::string* note);

// NCCL_PAT_ENABLE as the tuner takes it (TunerInput::pat_enable): 0, 1 or 2.
int pat_enable_param();

// The cost model's input for ranks placed on `topo` (sm range of the GPUs they play, CPU identity of
// machine 0, graphs, channels = modelled_channels unless `channels` > 0). `enable` and
// net_overhead_us are left at their defaults for the caller to set; pat_enable is NCCL_PAT_ENABLE's.
TunerInput make_tuner_input(const Topology& topo, const TopoGraph& ring, const TopoGraph& tree,
                            const RankPlacement& place, int channels);

// Adds NVLS to the cost model's input as NCCL's init would (ncclNvlsInit, then the NVLS graph search):
// `nvls_enable` is NCCL_NVLS_ENABLE (0: off; 1: forced; 2, the default: the GPUs' multicast support,
// which on a modelled machine is its NVLS graph: an NVSwitch and sm90+). On success in->nvls points at
// *graph and in->nvls_channels is NCCL's NVLS_NCHANNELS for the GPUs (nvls_ctas, min_ctas, max_ctas:
// ncclConfig_t's nvlsCTAs, minCTAs, maxCTAs, 0 = unset); otherwise in->nvls stays null and in->nvls_why
// says why. Ranks per machine: in->nranks / in->nnodes.
void add_nvls(const Topology& topo, int64_t nvls_enable, TopoGraph* graph, TunerInput* in, int nvls_ctas = 0,
              int min_ctas = 0, int max_ctas = 0);

}  // namespace cclab
