// sim/platform_xml.h - the simulator's platform (platform.h) as a SimGrid 3.32 platform XML file, so
// that other SimGrid programs (SMPI: bench/sim_scale.sh) run on exactly the machine `cclab sim` does.
//
//   Topology t;  make_preset_topology("dgx-h100", 128, FabricSpec{}, &t, &err);
//   write_simgrid_platform_xml(t, default_calibration(), "plat.xml", &err);
//   write_smpi_hostfile(t, "hosts.txt", &err);
//   // smpirun -np 1024 -platform plat.xml -hostfile hosts.txt --cfg=network/model:CM02 ...
//
// The file describes the same platform Platform::build makes:
//   <platform version="4.1">, <config> network/model CM02 and network/crosstraffic 0 (smpirun sets
//     network/model to SMPI on its command line, which wins over the file: pass
//     --cfg=network/model:CM02 to smpirun too);
//   one <zone routing="Full">;
//   one <host> per GPU, in rank order (machine-major, dev order on a machine), id = the node's name
//     ("m3.gpu5"), speed = the calibration's per-SM data-loop rate as flops ("24.5Gf": one flop per
//     byte), core = the GPU's SM count;
//   one <link> per directed TopoLink, id = "<from>_to_<to>" ("m0.gpu0_to_m0.nvs0"; a parallel link
//     between the same two nodes gets "_2", "_3", ...), bandwidth = physical bw x the link type's
//     efficiency in GBps, latency in us, sharing_policy SHARED;
//   <route symmetrical="NO"> with the links of Topology::path(a, b), for the GPU pairs an SMPI ring
//     all_reduce talks over: rank i to i+1 and to i-1 (mod n); or, with all_pairs, every ordered pair
//     (at most kSimgridAllPairsMaxGpus GPUs: n^2 routes).
// Non-GPU nodes (NVSwitch, PCIe switch, CPU, NIC, fabric switches) are not hosts or routers: they are
// only where the routes' links meet, as in platform.h.
#pragma once

#include <string>
#include <vector>

#include "graph/topo.h"
#include "sim/calibration.h"

namespace cclab {
namespace sim {

constexpr int kSimgridAllPairsMaxGpus = 64;

// The platform XML as text. False with *error when the model has no GPU, a GPU pair that needs a
// route has no path, a link on a route has no bandwidth, or all_pairs is asked for more than
// kSimgridAllPairsMaxGpus GPUs.
bool simgrid_platform_xml_string(const Topology& topo, const Calibration& cal, std::string* out,
                                 std::string* error, bool all_pairs = false);
// The same, written to `path`.
bool write_simgrid_platform_xml(const Topology& topo, const Calibration& cal, const std::string& path,
                                std::string* error, bool all_pairs = false);

// SMPI's hostfile: one host name per line, in rank order (the order of smpi_rank_gpus).
std::string smpi_hostfile_string(const Topology& topo);
bool write_smpi_hostfile(const Topology& topo, const std::string& path, std::string* error);

// The GPU nodes in rank order: machine by machine, dev order on each.
std::vector<int> smpi_rank_gpus(const Topology& topo);
// The SimGrid link id of every TopoLink (index = TopoLink index).
std::vector<std::string> simgrid_link_ids(const Topology& topo);
// Rate the platform gives a directed TopoLink, GB/s: physical bw x efficiency of its type (NVLink and
// C2C: nvlink, PCIe: pcie, SYS: sys, NET: net, LOC: loc).
double simgrid_link_rate_gbs(const TopoLink& link, const Calibration& cal);
// Attribute values as the file writes them: "425GBps", "0.5us", "24.5Gf" (shortest decimal that reads
// back as the same double).
std::string simgrid_bandwidth_string(double gbs);
std::string simgrid_latency_string(double us);
std::string simgrid_speed_string(double gflops);

}  // namespace sim
}  // namespace cclab
