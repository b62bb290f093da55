// runtime/trace/from_topo.h - a trace's topology and channels from the topology model
// (runtime/graph): what the runtime and the simulator put in a trace's TOPO and CHAN sections.
#pragma once

#include <vector>

#include "graph/topo.h"
#include "kernels/trees.h"
#include "trace/trace.h"

namespace cclab {
namespace trace {

// How set_topology maps the model onto the trace's nodes and links. Every node and link of `topo` is
// kept, in order, except the NVSwitch chips: the chips of one machine act as one crossbar (a GPU's
// NVLinks to all of them carry a flow in parallel), so, as the simulator models them
// (sim/platform.cc), they become one node "m<k>.nvswitch" (kind "nvswitch", dev 0, at the place of the
// machine's first chip) and each GPU gets one up and one down link to it, at the place of its first
// link to a chip, with the sum of its links' capacities and the largest latency. Links between two
// chips of one machine are dropped.
struct TopoMapping {
  std::vector<int> node;  // per topology node: its trace node
  std::vector<int> link;  // per topology link: its trace link, -1 when dropped
  int nodes = 0, links = 0;  // how many the trace has
};
TopoMapping map_topology(const Topology& topo);

// Nodes and links of `topo` as map_topology maps them (`rank_gpu[r]` is the topology's GPU node rank r
// plays) and the route of every ordered pair of ranks that `pairs` lists (each pair once; the
// topology's path between their GPUs, its links mapped onto the trace's, a link that maps onto the
// previous one's trace link counted once). Sets meta.topo_name, topo_description, machines and nranks.
void set_topology(const Topology& topo, const std::vector<int>& rank_gpu,
                  const std::vector<std::pair<int, int>>& pairs, Trace* t);

// A route of the topology model (topology link indices) as trace link indices (`m` from map_topology).
std::vector<int> map_route(const TopoMapping& m, const std::vector<int>& topo_links);

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
