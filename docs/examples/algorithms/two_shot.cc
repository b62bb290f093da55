// docs/examples/algorithms/two_shot.cc - a custom all_reduce for cclab (docs/custom-algorithms.md): the
// "two-shot" algorithm. Every rank owns block r of the buffer (count / nranks elements). Shot 1, a direct
// reduce-scatter: in round s = 1 .. n-1 rank r sends block r+s to its owner and receives its own block
// from rank r-s, adding it in. Shot 2, a direct all-gather: in round s it sends its finished block to
// rank r+s and receives block r-s from that block's owner. 2(n-1) rounds like the ring, the same bytes
// on the wire, but every round talks to a different peer: no data waits behind n-1 hops, and on a
// switched fabric (NVSwitch) each round's pairs are independent.
//
// Build it and run it:
//   g++ -std=c++17 -O2 -shared -fPIC -I<cclab source> two_shot.cc -o two_shot.so
//   CCLAB_ALGO_PLUGIN=$PWD/two_shot.so NCCL_ALGO=TwoShot cclab perf all_reduce -t 4 -b 8 -e 1M -f 4
//   CCLAB_ALGO_PLUGIN=$PWD/two_shot.so cclab sim all_reduce --topo dgx-h100 -b 1K -e 64M
//       --compare "--algo ring" "--algo TwoShot"
#include <algorithm>

#include "kernels/custom.h"

struct TwoShot {
  static constexpr const char* kName = "TwoShot";

  // all_reduce only (every other collective keeps NCCL's algorithms).
  static const char* supports(cclab::CollKind coll, const cclab::CustomTopo&) {
    return coll == cclab::CollKind::kAllReduce ? nullptr : "TwoShot is an all_reduce";
  }

  // Every other rank.
  static int peers(const cclab::CustomTopo& t, int rank, int* out, int max) {
    int n = 0;
    for (int q = 0; q < t.nranks && n < max; ++q)
      if (q != rank) out[n++] = q;
    return n;
  }

  // One rank's part on one channel: the channel's share [lo, hi) of the buffer, cut into nranks blocks.
  template <class P>
  CCLAB_HD static void run(P& p) {
    const int n = p.nranks(), me = p.rank();
    const cclab::Range r = p.channel_range();
    const size_t per = (r.size() + n - 1) / n;
    auto lo = [&](int b) { return r.lo + std::min(r.size(), per * static_cast<size_t>(b)); };
    auto len = [&](int b) { return lo(b + 1 > n ? n : b + 1) - lo(b); };
    // Shot 1: output block `me` = input block `me` + every other rank's input block `me`. The first
    // round starts from the input; later rounds add to what the output holds; the last one is final.
    for (int s = 1; s < n && !p.aborted(); ++s) {
      const int to = (me + s) % n, from = (me - s + n) % n;
      const cclab::Src acc = s == 1 ? cclab::in_at(lo(me)) : cclab::out_at(lo(me));
      p.sendrecv_reduce(to, cclab::in_at(lo(to)), len(to), from, acc, lo(me), len(me), s == n - 1);
    }
    if (n == 1) p.copy(cclab::in_at(r.lo), r.lo, r.size());
    // Shot 2: send the finished block to everyone, receive everyone's.
    for (int s = 1; s < n && !p.aborted(); ++s) {
      const int to = (me + s) % n, from = (me - s + n) % n;
      p.sendrecv(to, cclab::out_at(lo(me)), len(me), from, lo(from), len(from));
    }
  }
};

CCLAB_CUSTOM_ALGORITHM(TwoShot)
