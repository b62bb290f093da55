// bench/sim_platform_xml.cc - writes the SimGrid platform XML and SMPI hostfile of a topology model,
// the same platform `cclab sim` simulates (sim/platform_xml.h), for SMPI runs (bench/sim_scale.sh).
//
//   cclab_sim_platform_xml PRESET MACHINES OUT.xml HOSTFILE [--all-pairs]
//
// PRESET is a preset name ("dgx-h100", ...; `cclab topo --list`) or an NCCL topology XML file of one
// machine; MACHINES copies of it are joined by the default rail-optimised fabric. The routes are the
// ring neighbours in rank order (rank i to i+1 and i-1); --all-pairs declares every GPU pair (at most
// 64 GPUs). Prints one line: what it wrote. Exit status 0, 1 on an error (printed), 2 on bad usage.
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "graph/topo.h"
#include "sim/calibration.h"
#include "sim/platform_xml.h"

namespace {

int usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s PRESET MACHINES OUT.xml HOSTFILE [--all-pairs]\n"
               "  PRESET: a topology preset (dgx-h100, dgx-a100, ...) or an NCCL topology XML file\n",
               argv0);
  return 2;
}

bool is_file(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

int main(int argc, char** argv) {
  bool all_pairs = false;
  std::string args[4];
  int nargs = 0;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--all-pairs") == 0) {
      all_pairs = true;
    } else if (std::strcmp(argv[i], "-h") == 0 || std::strcmp(argv[i], "--help") == 0) {
      usage(argv[0]);
      return 0;
    } else if (nargs < 4) {
      args[nargs++] = argv[i];
    } else {
      return usage(argv[0]);
    }
  }
  if (nargs != 4) return usage(argv[0]);
  char* end = nullptr;
  long machines = std::strtol(args[1].c_str(), &end, 10);
  if (end == args[1].c_str() || *end != '\0' || machines < 1 || machines > 1000000) {
    std::fprintf(stderr, "%s: MACHINES must be a positive integer, got '%s'\n", argv[0], args[1].c_str());
    return 2;
  }

  cclab::Topology topo;
  std::string err;
  cclab::FabricSpec fabric;
  bool ok;
  if (is_file(args[0])) {
    ok = cclab::read_topology_xml(args[0], &topo, &err) &&
         (machines == 1 && topo.machines == 1 ? true
                                              : cclab::replicate_machines(&topo, static_cast<int>(machines), fabric, &err));
  } else {
    ok = cclab::make_preset_topology(args[0], static_cast<int>(machines), fabric, &topo, &err);
  }
  if (!ok) {
    std::fprintf(stderr, "%s: %s\n", argv[0], err.c_str());
    return 1;
  }
  const cclab::sim::Calibration& cal = cclab::sim::default_calibration();
  if (!cclab::sim::write_simgrid_platform_xml(topo, cal, args[2], &err, all_pairs) ||
      !cclab::sim::write_smpi_hostfile(topo, args[3], &err)) {
    std::fprintf(stderr, "%s: %s\n", argv[0], err.c_str());
    return 1;
  }
  const size_t n = cclab::sim::smpi_rank_gpus(topo).size();
  const size_t routes = all_pairs ? n * (n - 1) : (n > 2 ? 2 * n : n * (n - 1));
  std::printf("%s: %zu GPU hosts, %zu links, %zu routes (%s); %s: %zu hosts in rank order\n", args[2].c_str(), n,
              topo.links.size(), routes, all_pairs ? "all pairs" : "ring neighbours", args[3].c_str(), n);
  return 0;
}
