// sim/platform.h - the SimGrid 3.32 platform of a topology model.
//
// Every GPU of the model becomes a SimGrid host (one core per SM, each core as fast as one SM's data
// loop: calibration.h), every directed TopoLink becomes its own SimGrid link (SHARED policy, rate =
// physical bw x the link type's efficiency, the link's latency): a physical cable is two links, so
// the two directions never share bandwidth (full duplex). One exception: the NVSwitch chips of a
// machine form one crossbar, so a GPU's NVLinks to all of them are one SimGrid link per direction
// ("m0.gpu0->nvswitch", "nvswitch->m0.gpu0") at their summed rate, as the NVLink fabric spreads a
// transfer over every link of the GPU. NVSwitches, PCIe switches, CPUs, NICs and
// fabric switches are not hosts: they are the points where links meet, and a route is the list of
// links the model's path crosses (Topology::path: NVLink through the NVSwitch, PCIe up to the
// common switch, across the inter-socket link, GPU -> rail NIC -> leaf -> spine -> leaf -> NIC -> GPU
// between machines). A switch therefore never limits bandwidth beyond its ports (full bisection);
// oversubscription is in the leaf-spine links' rates, as the model builds them.
//
// SimGrid's network model is CM02 without cross-traffic: bandwidth sharing is plain max-min over the
// links a flow crosses, a flow's time is latency + bytes / share, with no TCP window or latency
// factors (LV08's 0.97 bandwidth and 13.01 latency factors fit TCP over Ethernet, not NVLink or
// RDMA). configure_engine() sets it; it must run before the platform is built.
//
// Routes are declared in a full-routing zone, only for the GPU pairs that talk (add_route), before
// seal(): a 1024-GPU model would otherwise need 10^6 routes. A route between machines goes through the
// NICs its connection's channel chose (End::net): a ring channel "NET/0 GPU/0 ... GPU/1 NET/0" leaves
// every machine from GPU/1 by NET/0 and enters the next at GPU/0 by NET/0, so on a rail-optimised
// fabric it stays on rail 0's leaf (docs/simulator.md, "Routes").
#pragma once

#include <map>
#include <tuple>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/topo.h"
#include "sim/calibration.h"

namespace simgrid {
namespace s4u {
class Engine;
class Host;
class Link;
class NetZone;
}  // namespace s4u
}  // namespace simgrid

namespace cclab {
namespace sim {

// SimGrid configuration cclab needs (network model, no cross-traffic, quiet logs unless
// CCLAB_SIM_LOG is set). Call once, on a fresh engine, before building a platform.
void configure_engine(simgrid::s4u::Engine& engine);

// The command line a SimGrid engine of cclab's is created with (`Engine engine(&a.argc, a.argv)`): the
// program's name and, in AddressSanitizer builds, SimGrid's thread contexts (without the INFO line
// SimGrid prints for a configuration change).
struct EngineArgs {
  EngineArgs();
  int argc = 0;
  char* argv[4] = {};
  char name[16] = "cclab-sim";
  char quiet_cfg[40] = "--log=xbt_cfg.thresh:warning";
  char thread_contexts[40] = "--cfg=contexts/factory:thread";
};

class Platform {
 public:
  // Builds the platform of `topo` in `engine` (which configure_engine has configured). False with
  // *error when the model is unusable (no GPUs, a link of zero bandwidth on a route, ...).
  static bool build(simgrid::s4u::Engine& engine, const Topology& topo, const Calibration& cal,
                    std::unique_ptr<Platform>* out, std::string* error);
  ~Platform();

  const Topology& topology() const { return topo_; }
  // The host of a GPU node (nullptr for a node that is not a GPU).
  simgrid::s4u::Host* gpu_host(int node) const;
  // The SimGrid link of a directed TopoLink.
  simgrid::s4u::Link* link(int topo_link) const;
  // Rate the simulator gives a directed TopoLink, bytes per second (physical x efficiency).
  double link_rate(int topo_link) const;
  // Directed TopoLinks the platform maps (== topology().links.size()); several may share one SimGrid
  // link: a GPU's NVLinks to the NVSwitch chips of its machine become one up and one down link.
  int link_count() const { return static_cast<int>(links_.size()); }
  // Degradation (sim/degrade.h): each listed TopoLink now carries factor x its own rate (0: failed). A
  // SimGrid link that several TopoLinks share (a GPU's crossbar link) gets the sum of its members' rates;
  // one failed member turns it off (an NVLink error stops the GPU's NVLink traffic); a link whose
  // factors are all 1 again is restored. Any time, also while communications cross it.
  void set_link_factors(const std::vector<std::pair<int, double>>& factors);
  // The current factor of a TopoLink (1 unless set_link_factors changed it).
  double link_factor(int topo_link) const;

  // One end of a route: a GPU node, and the NET node by which its traffic leaves or enters the GPU's
  // machine (-1: the model's default, Topology::exit_net). The NET matters only between machines: a
  // network connection takes the NIC its channel's graph chose (graph/channels.h, NetConn). `via`
  // (sending ends only): NCCL's PXN, the GPU of the same machine whose NIC `net` is - the route goes to
  // it over NVLink first (Topology::pxn_via; a point-to-point send to another machine's rail).
  struct End {
    int gpu = -1;
    int net = -1;
    int via = -1;
  };
  // Declares the route from a to b (Topology::path_via: the model's path through those NETs; with a.via,
  // a -> a.via, then a.via's path through a.net); idempotent; only before seal(). False with *error when
  // the model has no such path.
  bool add_route(End a, End b, std::string* error);
  bool add_route(int gpu_a, int gpu_b, std::string* error) { return add_route(End{gpu_a, -1}, End{gpu_b, -1}, error); }
  // The TopoLink indices of a declared route (empty for a == b, and for a route never declared).
  const std::vector<int>& route(End a, End b) const;
  const std::vector<int>& route(int gpu_a, int gpu_b) const { return route(End{gpu_a, -1}, End{gpu_b, -1}); }
  // The SimGrid hosts a declared route runs between (a communication from the first to the second
  // crosses it), {nullptr, nullptr} when it was not declared. An end whose NET is the GPU's default one
  // is the GPU's host; an end through another NET is a host of its own, "<gpu>@<net>" ("m0.gpu1@m0.net0"),
  // on which nothing runs: SimGrid keeps one route per pair of hosts, so connections between the same
  // two GPUs through different NICs need different end points.
  std::pair<simgrid::s4u::Host*, simgrid::s4u::Host*> route_hosts(End a, End b) const;
  // Hosts the platform added for ends through a NET other than their GPU's default one.
  int port_host_count() const { return static_cast<int>(ports_.size()); }
  void seal();
  bool sealed() const { return sealed_; }

  // NVLS (kernels/nvls.h): machine `machine`'s NVSwitch crossbar as a reducing element - a host
  // "m<machine>.nvswitch" with one core per GPU port, each reducing `port_gbs` GB/s of output (NVLink
  // SHARP's multimem.ld_reduce), and a route from each GPU of the machine to it over the GPU's up link
  // and back over its down link (the crossbar links above). Idempotent; before seal(). False with *error
  // when a GPU of the machine has no NVLink to an NVSwitch.
  bool add_nvswitch(int machine, double port_gbs, std::string* error);
  simgrid::s4u::Host* nvswitch_host(int machine) const;
  // The TopoLinks of a GPU's up (to the switch) or down crossbar link (for link accounting).
  const std::vector<int>& nvswitch_links(int gpu_node, bool up) const;

 private:
  explicit Platform(const Topology& topo);  // defined in platform.cc (Routes is complete there)
  Topology topo_;
  simgrid::s4u::NetZone* zone_ = nullptr;
  std::vector<simgrid::s4u::Host*> hosts_;  // by node index (nullptr for non-GPU nodes)
  std::map<std::tuple<int, int, int>, int> ports_;  // (GPU, NET, via) -> end id (hosts_ index >= nodes)
  // An end's id: its GPU's node index, or its port host's (hosts_ index); -1 when not a GPU of the
  // platform. `create`: add the port host when missing (before seal()).
  int end_id(End e, bool create, std::string* error);
  int end_id(End e) const;
  End normalized(End e, End other) const;
  std::vector<simgrid::s4u::Link*> links_;  // by TopoLink index
  std::vector<double> rates_;               // by TopoLink index, bytes/s
  std::vector<double> own_rates_;           // by TopoLink index: its own rate (a crossbar member's share)
  std::vector<double> factors_;             // by TopoLink index: set_link_factors' factor
  struct Routes;
  std::unique_ptr<Routes> routes_;
  bool sealed_ = false;
  std::map<int, simgrid::s4u::Host*> nvswitch_;            // machine -> its switch host
  std::map<std::pair<int, bool>, std::vector<int>> nvs_links_;  // (GPU node, up?) -> its crossbar TopoLinks
};

}  // namespace sim
}  // namespace cclab
