// tests/fuzz/fuzz_graph_xml.cc - NCCL's graph XML (NCCL_GRAPH_FILE) from arbitrary text, read against a
// built-in machine chosen by the input's first byte (dgx-h100, pcie-4gpu, nvlink-pairs on 2 machines,
// dgx-a100 on 2).
//
// Properties: read_graphs_xml_string never crashes and names the problem when it refuses; graphs it
// accepts have channels that hold every GPU of the machine once, write back (those the file had) to XML
// that reads to the same text, and can be planned into channels (every ring holds every rank).
#include <string>
#include <vector>

#include "fuzz.h"
#include "graph/channels.h"
#include "graph/search.h"
#include "graph/topo.h"

namespace {

const cclab::Topology& machine(int which) {
  static cclab::Topology models[4];
  static bool built = false;
  if (!built) {
    const char* names[4] = {"dgx-h100", "pcie-4gpu", "nvlink-pairs", "dgx-a100"};
    const int machines[4] = {1, 1, 2, 2};
    for (int i = 0; i < 4; ++i) {
      std::string err;
      if (!cclab::make_preset_topology(names[i], machines[i], cclab::FabricSpec{}, &models[i], &err)) std::abort();
    }
    built = true;
  }
  return models[which & 3];
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace cclab;
  if (size == 0) return 0;
  const Topology& topo = machine(data[0]);
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  TopoGraph ring, tree;  // filled from the file's graphs 0 and 1 (pattern included), if it has them
  ring.id = 0;
  tree.id = 1;
  std::string err;
  if (!read_graphs_xml_string(text, "fuzz.xml", topo, {&ring, &tree}, &err)) {
    FUZZ_CHECK(!err.empty(), "refused without saying why");
    return 0;
  }
  const int gpus = topo.gpus_per_machine();
  for (const TopoGraph* g : {&ring, &tree}) {
    if (g->nchannels == 0) continue;  // not in the file: the search would fill it
    FUZZ_CHECK(static_cast<int>(g->intra.size()) == g->nchannels, "intra has a row per channel");
    for (const std::vector<int>& row : g->intra) {
      std::vector<int> seen(gpus, 0);
      FUZZ_CHECK(static_cast<int>(row.size()) == gpus, "a channel does not hold every GPU");
      for (int d : row) {
        FUZZ_CHECK(d >= 0 && d < gpus, "a channel names GPU " + std::to_string(d));
        FUZZ_CHECK(++seen[d] == 1, "a channel names GPU " + std::to_string(d) + " twice");
      }
    }
  }
  // Write back the graphs the file had (one with no channels is one the search would fill).
  std::vector<const TopoGraph*> read;
  for (const TopoGraph* g : {&ring, &tree})
    if (g->nchannels > 0) read.push_back(g);
  if (read.empty()) return 0;
  const std::string once = graphs_xml_string(read);
  TopoGraph ring2, tree2;
  ring2.id = 0;
  tree2.id = 1;
  FUZZ_CHECK(read_graphs_xml_string(once, "written.xml", topo, {&ring2, &tree2}, &err),
             "the written graph XML does not read back: " + err);
  std::vector<const TopoGraph*> again;
  for (const TopoGraph* g : {&ring2, &tree2})
    if (g->nchannels > 0) again.push_back(g);
  FUZZ_CHECK(graphs_xml_string(again) == once, "write(read(write(g))) != write(g)");
  if (ring.nchannels > 0 && tree.nchannels > 0) {
    const int nranks = gpus * topo.machines;
    const RankPlacement place = place_ranks(topo, nranks);
    const int nch = modelled_channels(ring, tree);
    for (const ChannelPlan& p : plan_channels(topo, ring, tree, place, nch))
      FUZZ_CHECK(static_cast<int>(p.ring.size()) == nranks, "a ring does not hold every rank");
  }
  return 0;
}
