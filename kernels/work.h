// kernels/work.h - what one rank's kernel is asked to do, and the arithmetic that cuts it into
// channels and chunks. Every executor computes the same partition from the same numbers, so the
// two ends of every connection agree on every step without talking.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "kernels/platform.h"
#include "kernels/reduce_ops.h"
#include "kernels/step_record.h"

namespace cclab {

// NCCL's protocol indices.
constexpr int kProtoLL = 0, kProtoLL128 = 1, kProtoSimple = 2, kNumProtocols = 3;

// One collective on one rank.
struct CollWork {
  CollKind coll;
  // Elements: AllReduce/Broadcast/Reduce: the whole buffer; AllGather: per-rank send count;
  // ReduceScatter: per-rank receive count.
  size_t count;
  const void* send;
  void* recv;
  int root;
  int rank;
  int nranks;
  int nchannels;       // channels this operation is spread over (same on every rank)
  size_t chunk_bytes;  // largest chunk a primitive moves
  int proto;           // NCCL's protocol index: 0 LL, 1 LL128, 2 Simple (kProtoLL...)
  RedOpArg redop;
  uint64_t op_count;
};

// One rank's place on a channel's ring. ranks[i] is the i-th rank after this one (ranks[0] = me,
// ranks[1] = next, ranks[nranks-1] = prev).
struct RingView {
  const int* ranks;
  int nranks;
  CCLAB_HD int me() const { return ranks[0]; }
  CCLAB_HD int next() const { return ranks[nranks > 1 ? 1 : 0]; }
  CCLAB_HD int prev() const { return ranks[nranks - 1]; }
};

CCLAB_HD inline size_t div_up(size_t a, size_t b) { return (a + b - 1) / b; }
CCLAB_HD inline size_t round_up(size_t a, size_t b) { return div_up(a, b) * b; }
CCLAB_HD inline size_t min_sz(size_t a, size_t b) { return a < b ? a : b; }

// Elements [lo, hi) of `count` that channel `c` of `nch` handles; boundaries are multiples of
// `grain` elements, so channels never share a grain.
struct Range {
  size_t lo, hi;
  CCLAB_HD size_t size() const { return hi - lo; }
};
CCLAB_HD inline Range channel_range(size_t count, int c, int nch, size_t grain) {
  size_t per = round_up(div_up(count, static_cast<size_t>(nch)), grain);
  size_t lo = min_sz(count, per * static_cast<size_t>(c));
  size_t hi = min_sz(count, lo + per);
  return Range{lo, hi};
}

}  // namespace cclab
