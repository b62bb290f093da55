// runtime/src/trace/from_topo.h - a trace's topology and channels from the topology model
// (runtime/src/graph): what the runtime and the simulator put in a trace's TOPO and CHAN sections.
#pragma once

#include <vector>

#include "graph/topo.h"
#include "kernels/trees.h"
#include "trace/trace.h"

namespace cclab {
namespace trace {

// Nodes and links of `topo` (every node; `rank_gpu[r]` is the GPU node rank r plays) and the route of
// every ordered pair of ranks that `pairs` lists (each pair once; the topology's path between their
// GPUs). Sets meta.topo_name, topo_description, machines and nranks.
void set_topology(const Topology& topo, const std::vector<int>& rank_gpu,
                  const std::vector<std::pair<int, int>>& pairs, Trace* t);

// The (src, dst) rank pairs that channels' rings and trees connect, both directions, sorted.
std::vector<std::pair<int, int>> channel_pairs(const std::vector<Channel>& channels);

// One channel: its ring order and, when `tree` is not empty, every rank's tree links.
Channel make_channel(int index, const std::vector<int>& ring, int tree_index, const std::vector<TreeLinks>& tree);

// Every rank pair (n (n - 1) routes), for send/recv traffic; only sensible for small n.
std::vector<std::pair<int, int>> all_pairs(int nranks);

// Fills Event::route of every event from the trace's routes (-1 when the pair has none).
void assign_routes(Trace* t);

}  // namespace trace
}  // namespace cclab
