// tests/algorithms/wrong_sum.cc - TwoShot (docs/examples/algorithms/two_shot.cc) with its last
// reduce-scatter round left out, so every block misses one rank's contribution: the byte checks of
// `cclab perf` and `cclab sim --payload` must report wrong elements for it (custom_algorithms.sh), which
// shows those checks can fail for a custom algorithm.
#include <algorithm>

#include "kernels/custom.h"

struct WrongSum {
  static constexpr const char* kName = "WrongSum";
  static const char* supports(cclab::CollKind coll, const cclab::CustomTopo&) {
    return coll == cclab::CollKind::kAllReduce ? nullptr : "all_reduce only";
  }
  static int peers(const cclab::CustomTopo& t, int rank, int* out, int max) {
    int n = 0;
    for (int q = 0; q < t.nranks && n < max; ++q)
      if (q != rank) out[n++] = q;
    return n;
  }
  template <class P>
  CCLAB_HD static void run(P& p) {
    const int n = p.nranks(), me = p.rank();
    const cclab::Range r = p.channel_range();
    const size_t per = (r.size() + n - 1) / n;
    auto lo = [&](int b) { return r.lo + std::min(r.size(), per * static_cast<size_t>(b)); };
    auto len = [&](int b) { return lo(b + 1 > n ? n : b + 1) - lo(b); };
    p.copy(cclab::in_at(lo(me)), lo(me), len(me));
    for (int s = 1; s < n - 1 && !p.aborted(); ++s) {  // the bug: s < n - 1
      const int to = (me + s) % n, from = (me - s + n) % n;
      p.sendrecv_reduce(to, cclab::in_at(lo(to)), len(to), from, cclab::out_at(lo(me)), lo(me), len(me), false);
    }
    for (int s = 1; s < n && !p.aborted(); ++s) {
      const int to = (me + s) % n, from = (me - s + n) % n;
      p.sendrecv(to, cclab::out_at(lo(me)), len(me), from, lo(from), len(from));
    }
  }
};

CCLAB_CUSTOM_ALGORITHM(WrongSum)
