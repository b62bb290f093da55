// runtime/graph/custom_algo.h - the custom algorithms loaded from plugins (kernels/custom.h,
// docs/custom-algorithms.md): CCLAB_ALGO_PLUGIN names shared objects (':'-separated), each exporting
// one algorithm; NCCL_ALGO=<its name> selects it for the collectives it supports.
//
// Loaded once per process on first use. The host backend and the simulator each call these; a
// process that carries two copies of this code (the runtime and the simulator plugin) loads the same
// shared objects twice, which dlopen makes one.
#pragma once

#include <string>
#include <vector>

#include "kernels/custom.h"

namespace cclab {

struct CustomAlgo {
  std::string name;  // as the plugin spells it
  std::string path;  // the shared object (built in: the source file CCLAB_CUSTOM_ALGOS named)
  const CustomAlgoDesc* desc = nullptr;  // built in: name, supports and peers (no host run functions)
  int builtin = -1;  // >= 0: built into the CUDA backend's kernels, its kernels/cuda/launch.h custom_kernel()
};

// Whether `name` may name a custom algorithm next to `taken`: an NCCL_ALGO value (letters, digits, '_',
// '-'), none of NCCL's algorithms, none of taken's (case-insensitive). False with *why naming the clash
// (the algorithm of taken that has the name: " and <its path> both define").
bool custom_algo_name_ok(const char* name, const std::vector<CustomAlgo>& taken, std::string* why);
// Loads CCLAB_ALGO_PLUGIN's shared objects (once); false with *error naming the file and what is wrong
// with it (not found, not a cclab algorithm, built against other cclab sources, a name taken twice).
bool custom_algos_load(std::string* error);
// Every loaded algorithm, in CCLAB_ALGO_PLUGIN's order (after custom_algos_load).
const std::vector<CustomAlgo>& custom_algos();
// The loaded algorithm whose name is `name` (case-insensitive), or nullptr.
const CustomAlgo* custom_algo_find(const std::string& name);
// If NCCL_ALGO's value `value` names a custom algorithm, it (after loading the plugins); nullptr
// otherwise, with *error set when loading failed.
const CustomAlgo* custom_algo_for_env(const std::string& value, std::string* error);
// "RHD, TwoD" or "none loaded (CCLAB_ALGO_PLUGIN is not set)".
std::string custom_algo_names();

// Whether `a` runs collective `coll` on `topo` (nullptr reason: yes; otherwise why not).
bool custom_supports(const CustomAlgo& a, CollKind coll, const CustomTopo& topo, std::string* why);
// Rank `rank`'s peers (sorted, distinct). False with *error when the plugin's peers() names a rank out of
// range or itself, or more than kMaxCustomPeers.
bool custom_peers(const CustomAlgo& a, const CustomTopo& topo, int rank, std::vector<int>* out, std::string* error);
// Every rank's peers, checked symmetric (q is a peer of r exactly when r is one of q's): a connection
// needs both ends. False with *error naming the first pair that disagrees.
bool custom_all_peers(const CustomAlgo& a, const CustomTopo& topo, std::vector<std::vector<int>>* out,
                      std::string* error);

}  // namespace cclab
