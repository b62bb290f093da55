// tests/fuzz/fuzz_topo_xml.cc - NCCL's topology XML (NCCL_TOPO_FILE, `cclab sim --xml`, `cclab topo
// --xml`) from arbitrary text, and everything a model the reader accepts is fed to.
//
// Properties, for every input:
//  - read_topology_xml_string never crashes, and says why (file:line) when it refuses;
//  - an accepted model passes Topology::validate;
//  - writing is a fixed point: read(write(model)) succeeds and writes the same text;
//  - on a model of at most 8 GPUs per machine and 4 machines, the channel search either fails with a
//    reason or gives rings and trees whose graph XML reads back to the same graphs, channels can be
//    planned from them, and the trace header built from them (as `cclab sim --trace` builds it) is one
//    the trace writer accepts.
#include <string>
#include <vector>

#include "fuzz.h"
#include "graph/channels.h"
#include "graph/search.h"
#include "graph/topo.h"
#include "trace/from_topo.h"
#include "trace/trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cclab;
  const std::string text(reinterpret_cast<const char*>(data), size);
  Topology topo;
  std::string err;
  if (!read_topology_xml_string(text, "fuzz.xml", &topo, &err)) {
    FUZZ_CHECK(!err.empty(), "refused without saying why");
    return 0;
  }
  std::string why;
  FUZZ_CHECK(topo.validate(&why), "an accepted topology is invalid: " + why);
  (void)topo.describe();
  (void)topo.describe_paths();

  const std::string once = topology_xml_string(topo);
  Topology again;
  FUZZ_CHECK(read_topology_xml_string(once, "written.xml", &again, &err), "the written XML does not read back: " + err);
  FUZZ_CHECK(topology_xml_string(again) == once, "write(read(write(t))) != write(t)");

  const int gpus = topo.gpus_per_machine();
  if (gpus < 1 || gpus > 8 || topo.machines > 4) return 0;
  TopoGraph ring, tree;  // search_ring_and_tree sets their ids and patterns
  if (!search_ring_and_tree(topo, &ring, &tree, &err)) {
    FUZZ_CHECK(!err.empty(), "the search failed without saying why");
    return 0;
  }
  const std::string gx = graphs_xml_string({&ring, &tree});
  TopoGraph ring2, tree2;
  ring2.id = 0;
  tree2.id = 1;
  FUZZ_CHECK(read_graphs_xml_string(gx, "graph.xml", topo, {&ring2, &tree2}, &err),
             "the searched graphs' XML does not read back: " + err);
  FUZZ_CHECK(graphs_xml_string({&ring2, &tree2}) == gx, "graph XML: write(read(write(g))) != write(g)");

  const int nranks = gpus * topo.machines;
  const RankPlacement place = place_ranks(topo, nranks);
  const int nch = modelled_channels(ring, tree);
  const std::vector<ChannelPlan> plan = plan_channels(topo, ring, tree, place, nch);
  FUZZ_CHECK(static_cast<int>(plan.size()) == nch, "plan_channels gave " + std::to_string(plan.size()) +
                                                       " channels for " + std::to_string(nch));
  trace::Trace t;
  std::vector<int> rank_gpu;
  for (int r = 0; r < nranks; ++r) rank_gpu.push_back(topo.gpu_node(place.rank_machine[r], place.rank_dev[r]));
  for (int c = 0; c < nch; ++c) {
    FUZZ_CHECK(static_cast<int>(plan[c].ring.size()) == nranks, "a ring does not hold every rank");
    t.channels.push_back(trace::make_channel(c, plan[c].ring, plan[c].tree_index, plan[c].tree));
  }
  trace::set_topology(topo, rank_gpu, trace::channel_pairs(t.channels), &t);
  const std::string bytes = trace::encode_trace(t);
  FUZZ_CHECK(!bytes.empty(), "the trace writer refuses the header of this topology");
  trace::Trace back;
  FUZZ_CHECK(trace::decode_trace(bytes, &back, &err), "the trace header does not read back: " + err);
  return 0;
}
