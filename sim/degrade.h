// sim/degrade.h - degraded fabrics as what-ifs: a link or NIC slowed or failed from a simulated time,
// a straggling GPU, latency jitter (`cclab sim --degrade/--fail/--straggler/--jitter`, docs/cli-sim.md).
//
// Unlike WhatIf (calibration.h), which changes the model before the search and the tuner see it, a
// degradation happens to the fabric the runtime has already planned for: the channels, the tuner's
// choice and the routes stay those of the healthy machine, as they would on a real cluster whose link
// degrades after ncclCommInitRank. Only the SimGrid platform changes (Platform::set_link_factors), at the
// simulated time asked, by a daemon actor (simulate.cc).
//
//   Degradation d;
//   parse_degrade("m0.nic3=0.5@100us", &d, &err);   // m0.nic3's links at half bandwidth from 100 us
//   parse_fail("m0.gpu3-m0.nvs0@2ms", &d, &err);    // both directions of that link off from 2 ms
//   parse_straggler("3=2", &d, &err);               // rank 3's data loops run 2x slower
//   parse_jitter("20,seed=7", &d, &err);            // each transfer up to 20% more route latency
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "graph/topo.h"

namespace cclab {
namespace sim {

// One change to links: every directed TopoLink `target` names gets `factor` of its rate from `at_us` on
// (fail: turned off, communications on it fail).
struct LinkChange {
  std::string target;  // "A->B" (one direction), "A-B" (both), or a node name "m0.nic3" (every link of it)
  double factor = 1;   // bandwidth multiplier, > 0 (fail: 0)
  double at_us = 0;    // simulated time it happens, microseconds from the start of the run
  bool fail = false;
};

struct Degradation {
  std::vector<LinkChange> links;      // in the order given
  std::map<int, double> stragglers;   // rank -> factor (> 0): its data loops take factor x as long
  std::map<int, double> straggler_from_us;  // rank -> from when (us; absent: 0)
  double jitter_pct = 0;              // > 0: each transfer waits up to this % of its route's latency more
  uint64_t jitter_seed = 1;
  double jitter_from_us = 0;          // from when
  bool any() const { return !links.empty() || !stragglers.empty() || jitter_pct > 0; }
  // Needs the step level: a change after time 0, a failure or jitter (the flow level replays a run at
  // rates fixed at its start; a straggler and a degradation from time 0 it models).
  // A straggler's factor at simulated time `now_us` (1 before its time, or not a straggler).
  double straggle_at(int rank, double now_us) const;
  bool needs_step() const;
  // "m0.nic3 x0.5 from 100 us; m0.gpu3-m0.nvs0 fails at 2000 us; rank 3 2x slower; jitter 20% (seed 7)"
  std::string describe() const;
};

// Flag values, appended to *d. False with *error naming what is wrong ("--degrade 'x=2': ...").
// LINK=FACTOR[@TIME]: 0 < FACTOR (a factor above 1 speeds the link up); TIME a number with unit us, ms
// or s (no unit: us), >= 0.
bool parse_degrade(const std::string& value, Degradation* d, std::string* error);
// LINK[@TIME]
bool parse_fail(const std::string& value, Degradation* d, std::string* error);
// RANK=FACTOR[@TIME], several comma-separated: "3=2,5=1.5@1ms"
bool parse_straggler(const std::string& value, Degradation* d, std::string* error);
// PCT[,seed=N][,from=TIME]: 0 < PCT <= 1000
bool parse_jitter(const std::string& value, Degradation* d, std::string* error);

// The directed TopoLinks `target` names in `topo` (LinkChange::target's forms; names as `cclab topo` and
// `cclab sim --links` print them). False with *error listing the closest link and node names.
bool resolve_link_target(const Topology& topo, const std::string& target, std::vector<int>* links,
                         std::string* error);

// Checks every name of `d` against `topo` and every straggler rank against `nranks` (the CLI does this
// before simulating, so a typo is a usage error).
bool check_degradation(const Degradation& d, const Topology& topo, int nranks, std::string* error);

// One number through printf's `f` ("%g"): the labels' numbers.
std::string fmt(const char* f, double v);

// A deterministic number in [0, 1) from a seed and three counters (splitmix64): the jitter of one transfer.
double jitter_unit(uint64_t seed, uint64_t a, uint64_t b, uint64_t c);

}  // namespace sim
}  // namespace cclab
