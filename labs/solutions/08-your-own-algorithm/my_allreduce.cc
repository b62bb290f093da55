// labs/solutions/08-your-own-algorithm/my_allreduce.cc - lab 8's reference solution: recursive
// halving-doubling all_reduce (Rabenseifner's algorithm), for any number of ranks.
//
// p2 = the largest power of two <= n, rem = n - p2. Ranks below 2*rem pair up first: each even one sends
// its whole buffer to the odd one above it and sits out; the p2 ranks left (the odd ones below 2*rem and
// every rank from 2*rem up) are "virtual ranks" 0 .. p2-1. Then, on each channel's share of the buffer:
//   reduce-scatter by recursive halving: log2(p2) exchanges with partners at distance p2/2, p2/4, ..., 1;
//     each keeps one half of its current range (the lower half when its distance bit is 0) and sends the
//     other half, adding the partner's copy of the kept half into it;
//   all-gather by recursive doubling: the same partners in reverse order; each sends its finished range
//     and receives the partner's, so the range doubles every time;
// and the ranks that sat out receive the result from their partner. 2 log2(p2) steps (+2 with a
// remainder) instead of the ring's 2(n-1), the same n-1/n of the buffer sent each way per rank.
#include "kernels/custom.h"

struct MyAllReduce {
  static constexpr const char* kName = "MyAllReduce";

  static const char* supports(cclab::CollKind coll, const cclab::CustomTopo&) {
    return coll == cclab::CollKind::kAllReduce ? nullptr : "an all_reduce only";
  }

  CCLAB_HD static int pow2_below(int n) {
    int p = 1;
    while (p * 2 <= n) p *= 2;
    return p;
  }
  // The virtual rank of `rank` (-1: it sits out) and back.
  CCLAB_HD static int virt(int rank, int rem) { return rank < 2 * rem ? (rank % 2 == 1 ? rank / 2 : -1) : rank - rem; }
  CCLAB_HD static int real(int v, int rem) { return v < rem ? 2 * v + 1 : v + rem; }

  static int peers(const cclab::CustomTopo& t, int rank, int* out, int max) {
    const int p2 = pow2_below(t.nranks), rem = t.nranks - p2;
    int n = 0;
    if (rank < 2 * rem && n < max) out[n++] = rank % 2 == 1 ? rank - 1 : rank + 1;
    const int v = virt(rank, rem);
    if (v >= 0)
      for (int d = 1; d < p2 && n < max; d *= 2) out[n++] = real(v ^ d, rem);
    return n;
  }

  template <class P>
  CCLAB_HD static void run(P& p) {
    const int n = p.nranks(), me = p.rank();
    const int p2 = pow2_below(n), rem = n - p2;
    const cclab::Range r = p.channel_range();
    const int v = virt(me, rem);
    if (me < 2 * rem && v < 0) {  // sits out: hand the input over, take the result back
      p.send(me + 1, cclab::in_at(r.lo), r.size());
      p.recv(me + 1, r.lo, r.size());
      return;
    }
    bool in_output = false;  // where this rank's partial sums of [lo, hi) are
    if (me < 2 * rem) {
      p.recv_reduce(me - 1, cclab::in_at(r.lo), r.lo, r.size(), p2 == 1);
      in_output = true;
    }
    // Recursive halving: the ranges kept at each level, for the doubling to retrace.
    size_t lo = r.lo, hi = r.hi;
    size_t los[32], his[32];
    int level = 0;
    for (int d = p2 / 2; d >= 1 && !p.aborted(); d /= 2, ++level) {
      los[level] = lo;
      his[level] = hi;
      const size_t mid = lo + (hi - lo) / 2;
      const bool lower = (v & d) == 0;
      const size_t keep_lo = lower ? lo : mid, keep_hi = lower ? mid : hi;
      const size_t send_lo = lower ? mid : lo, send_hi = lower ? hi : mid;
      const int partner = real(v ^ d, rem);
      auto at = [&](size_t off) { return in_output ? cclab::out_at(off) : cclab::in_at(off); };
      p.sendrecv_reduce(partner, at(send_lo), send_hi - send_lo, partner, at(keep_lo), keep_lo, keep_hi - keep_lo,
                        d == 1);
      in_output = true;
      lo = keep_lo;
      hi = keep_hi;
    }
    if (p2 == 1 && !in_output) p.copy(cclab::in_at(r.lo), r.lo, r.size());
    // Recursive doubling: give the partner this range, take its half of the level's range.
    for (int d = 1; d < p2 && !p.aborted(); d *= 2) {
      --level;
      const int partner = real(v ^ d, rem);
      const size_t plo = los[level] == lo ? hi : los[level];
      const size_t phi = los[level] == lo ? his[level] : lo;
      p.sendrecv(partner, cclab::out_at(lo), hi - lo, partner, plo, phi - plo);
      lo = los[level];
      hi = his[level];
    }
    if (me < 2 * rem) p.send(me - 1, cclab::out_at(r.lo), r.size());
  }
};

CCLAB_CUSTOM_ALGORITHM(MyAllReduce)
