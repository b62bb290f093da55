// tests/algorithms/bad_call.cc - a custom algorithm that declares only its ring neighbours but sends to
// rank (me + 2) % n: every rank's schedule must stop with an error naming the undeclared peer, not
// crash or hang.
#include "kernels/custom.h"

struct BadCall {
  static constexpr const char* kName = "BadCall";
  static const char* supports(cclab::CollKind coll, const cclab::CustomTopo&) {
    return coll == cclab::CollKind::kAllReduce ? nullptr : "all_reduce only";
  }
  static int peers(const cclab::CustomTopo& t, int rank, int* out, int) {
    if (t.nranks < 2) return 0;
    out[0] = (rank + 1) % t.nranks;
    out[1] = (rank - 1 + t.nranks) % t.nranks;
    return out[0] == out[1] ? 1 : 2;
  }
  template <class P>
  CCLAB_HD static void run(P& p) {
    p.send((p.rank() + 2) % p.nranks(), cclab::in_at(0), p.count());
  }
};

CCLAB_CUSTOM_ALGORITHM(BadCall)
