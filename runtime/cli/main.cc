// runtime/cli/main.cc - `cclab`: the command-line front end of cclab. Dispatches subcommands.
//
//   cclab perf all_reduce -b 8 -e 128M -f 2 -g 4     nccl-tests-style benchmark (see perf_options.h)
//   cclab topo --topo dgx-h100                       topology model, paths, rings and trees (topo_cmd.h)
//   cclab tune --topo dgx-h100 all_reduce            NCCL's cost model over sizes (tune_cmd.h)
//   cclab sim all_reduce -b 1M -e 1G                 cclab perf on the SimGrid simulator (sim_cmd.h)
//   cclab trace info|dump|export|merge TRACE         read, convert and join traces (trace_cmd.h)
//   cclab viz TRACE                                  the visualiser (viz/viz.h; built with CCLAB_VIZ)
//   cclab lab list|check|run|viz NN                  the labs' grader (lab_cmd.h, labs/README.md)
//   cclab doctor                                     who waits on whom in running jobs (doctor_cmd.h)
//   cclab --version
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "cclab/cclab.h"
#include "doctor_cmd.h"
#include "lab_cmd.h"
#include "perf_launch.h"
#include "perf_options.h"
#include "perf_run.h"
#include "sim_cmd.h"
#include "topo_cmd.h"
#include "tune_cmd.h"
#ifdef CCLAB_HAVE_TRACE_CLI
#include "trace_cmd.h"
#endif
#ifdef CCLAB_HAVE_VIZ
#include "viz/viz.h"
#endif

namespace {


void print_help() {
  std::printf(
      "usage: cclab [--help | --version] SUBCOMMAND [args]\n"
      "\n"
      "cclab: a reference implementation of GPU collective communication (NCCL %d.%d.%d API).\n"
      "\n"
      "Subcommands:\n"
      "  perf COLLECTIVE [flags]   measure and check a collective, like nccl-tests (cclab perf --help)\n"
      "  topo --topo PRESET        print a topology model, its paths, rings and trees (cclab topo --help)\n"
      "  tune --topo PRESET COLL   NCCL's predicted time and choice per size (cclab tune --help)\n"
      "  sim COLLECTIVE [flags]    cclab perf on a simulated machine or cluster (cclab sim --help)\n"
      "  trace info|dump|export|merge  read a trace, export it for Perfetto (cclab trace --help)\n"
      "  viz TRACE | --live SOCK   watch a run: topology, channels, links (cclab viz --help)\n"
      "  lab list|check|run|viz NN the labs: check your lab's code, watch its run (cclab lab --help)\n"
      "  doctor [BOARD]            who waits on whom in the running jobs of this host (cclab doctor --help)\n",
      NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH);
}

void print_version() {
  int library = 0;
  ncclGetVersion(&library);
  std::printf("cclab %s (NCCL API %d.%d.%d, library version code %d)\n", CCLAB_VERSION_STRING, NCCL_MAJOR, NCCL_MINOR,
              NCCL_PATCH, library);
}

// Only the first MPI process reports usage errors, so `mpirun -np 8` prints them once.
bool is_first_process() {
  int rank = 0, size = 1;
  cclab::under_mpi_launcher(&rank, &size);
  return rank == 0;
}

int perf_main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 2, argv + argc);
  const cclab::PerfParse parsed = cclab::parse_perf_options(args);
  if (!parsed.ok) {
    if (is_first_process()) std::fprintf(stderr, "%s\n", parsed.message.c_str());
    return cclab::kPerfExitUsage;
  }
  if (parsed.help) {
    std::fputs(cclab::perf_usage().c_str(), stdout);
    return cclab::kPerfExitOk;
  }
  return cclab::launch_perf(parsed.options, argv);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ||
      std::strcmp(argv[1], "help") == 0) {
    print_help();
    return 0;
  }
  const std::string sub = argv[1];
  if (sub == "--version" || sub == "version") {
    print_version();
    return 0;
  }
  if (sub == "perf") return perf_main(argc, argv);
  if (sub == "topo") return cclab::topo_main(std::vector<std::string>(argv + 2, argv + argc));
  if (sub == "tune") return cclab::tune_main(std::vector<std::string>(argv + 2, argv + argc));
  if (sub == "sim") return cclab::sim_main(std::vector<std::string>(argv + 2, argv + argc));
  if (sub == "trace") {
#ifdef CCLAB_HAVE_TRACE_CLI
    return cclab::trace_main(std::vector<std::string>(argv + 2, argv + argc));
#else
    std::fprintf(stderr, "cclab: subcommand 'trace' is not available in this build\n");
    return 2;
#endif
  }
  if (sub == "viz") {
#ifdef CCLAB_HAVE_VIZ
    return cclab::viz::viz_main(std::vector<std::string>(argv + 2, argv + argc));
#else
    std::fprintf(stderr,
                 "cclab viz: this build has no visualiser: install libimgui-dev libglfw3-dev libstb-dev and reconfigure "
                 "with -DCCLAB_VIZ=AUTO or ON (scripts/setup.sh does both)\n");
    return 2;
#endif
  }
  if (sub == "doctor") return cclab::doctor_main(std::vector<std::string>(argv + 2, argv + argc));
  if (sub == "lab") {
    std::function<int(const std::vector<std::string>&)> viz;
#ifdef CCLAB_HAVE_VIZ
    viz = [](const std::vector<std::string>& a) { return cclab::viz::viz_main(a); };
#endif
    return cclab::lab::lab_main(std::vector<std::string>(argv + 2, argv + argc), viz);
  }
  std::fprintf(stderr, "cclab: unknown subcommand '%s' (see cclab --help)\n", sub.c_str());
  return 2;
}
