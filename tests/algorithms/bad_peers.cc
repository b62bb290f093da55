// tests/algorithms/bad_peers.cc - a custom algorithm whose ranks disagree on who their peers are (rank 0
// declares rank 1, rank 1 declares nobody): the runtime and the simulator must refuse it at once, naming
// the pair, instead of connecting half a connection and waiting.
#include "kernels/custom.h"

struct BadPeers {
  static constexpr const char* kName = "BadPeers";
  static const char* supports(cclab::CollKind, const cclab::CustomTopo&) { return nullptr; }
  static int peers(const cclab::CustomTopo& t, int rank, int* out, int) {
    if (rank == 0 && t.nranks > 1) {
      out[0] = 1;
      return 1;
    }
    return 0;
  }
  template <class P>
  static void run(P&) {}
};

CCLAB_CUSTOM_ALGORITHM(BadPeers)
