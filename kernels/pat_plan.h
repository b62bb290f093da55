// kernels/pat_plan.h - the order of PAT's operations on one channel, with NCCL 2.28.9's aggregation
// (PatAGAlgorithm / PatRSAlgorithm in its src/include/collectives.h): which block a rank moves in each
// operation, between which of its connections, at which place of which FIFO step. kernels/pat.h runs
// the operations; this file only says what they are, so tests can check the plan on its own.
//
// Dimensions. A rank talks to the ranks at distance 2^d (2^d < nranks). all_gather receives from
// rank + 2^d and sends to rank - 2^d; reduce_scatter the other way round. Block "s" is the block of rank
// (rank + s) mod nranks: all_gather's block s reaches a rank through the hops of s's set bits (it arrives
// from dimension lowbit(s') after the hops of s' = s - 2^lowbit(s) were taken), reduce_scatter's partial
// sums go the same trees backwards.
//
// Aggregation. A FIFO step holds `post_freq` blocks side by side (a channel's share of a block is small
// when a call is small: post_freq doubles while 2 x post_freq x the channel's block bytes still fit in a
// chunk, up to nranks / 2), and the blocks that go out on the same dimension are grouped: `agg_factor`
// = post_freq x up to NCCL_STEPS (the FIFO's depth) blocks per group, whose FIFO steps are written one
// after the other before anyone waits. So a small all_gather over 64 ranks takes about log2(64) rounds
// of messages instead of 63 (NCCL's tuner charges PAT log2(nNodes) network latencies for that reason).
// The remaining distances are walked `agg_delta` = nrpow2 / agg_factor at a time:
//
//   all_gather, per chunk:
//     phase 2, scale = agg/2, agg/4, .. 1: the top of the trees, a = 0 .. agg/(2 scale) - 1:
//       s = (2a + 1) x scale x agg_delta; send block s - 2^lowbit(s) on dimension lowbit(s)
//     then for each `as` of pat_as_order (a depth-first walk of the low distances):
//       phase 1, a = 0 .. agg - 1: s = a x agg_delta + as; block s - 2^lowbit(s) is forwarded from the
//         FIFO it arrived in to dimension lowbit(s) (and copied to the output the first time)
//       phase 0 (as odd), a = 0 .. agg - 1: s = a x agg_delta + as; block s arrives on dimension 0
//   reduce_scatter, per chunk: the same in reverse, as from agg_delta - 1 down to 1 (phase 0 for odd as:
//     send own blocks; phase 1: receive a partial sum and add it to the one going out), then phases 2 and
//     3 for scale = 1, 2, .. agg/2 (the top of the trees), then phase 4: the last partial sum for the
//     rank's own block arrives on dimension 0 and finishes the output.
//
// A received block stays in its FIFO slot until the last operation that reads it posts the slot back
// (post_recv), so a block forwarded on several dimensions is read in place. A reduce_scatter's partial
// sum grows in the slot it will be sent from (the first operation that writes a place starts it from the
// rank's input). `step_off`: how many steps ahead of the connection's step the operation's slot lies
// (all_gather: on its receive side; reduce_scatter: on its send side).
//
// The order of operations (phases, the `as` walk, offsets, posts, skips) is NCCL's; the operations are
// the same whatever executor runs them, and an executor runs them one after the other (NCCL runs up to
// 16 of a group at once on a GPU's warps; within one group no post precedes another's wait).
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "kernels/fifo.h"
#include "kernels/platform.h"

namespace cclab {

// Most dimensions (2^24 ranks).
constexpr int kMaxPatDims = 24;

// Dimensions of `nranks` ranks: the d with 2^d < nranks.
CCLAB_HD inline int pat_dims(int nranks) {
  int d = 0;
  while (d < kMaxPatDims && (1 << d) < nranks) ++d;
  return d;
}

// Index of the lowest set bit of s, or `none` when s == 0.
CCLAB_HD inline int pat_low_bit(int s, int none = 0) {
  if (s == 0) return none;
  int d = 0;
  while (((s >> d) & 1) == 0) ++d;
  return d;
}

// One operation. Dimensions and FIFO places are -1 where the operation has none.
struct PatOp {
  int recv_dim = -1;    // receive (read in place) from this dimension's connection
  int send_dim = -1;    // send to this dimension's connection (-1: all_gather reads its input,
                        // reduce_scatter writes its output)
  int recv_off = -1;    // elements into the FIFO step
  int send_off = -1;
  int step_off = 0;     // the slot's step ahead of the connection's (see the top of this file)
  bool post_recv = false;  // give the receive slot back (head)
  bool post_send = false;  // post the send step (tail)
  bool skip = false;       // a distance beyond nranks: nothing to do
  bool last = false;       // reduce_scatter: the operation that finishes the output (the op's post)
  size_t nelem = 0;        // elements moved
  size_t in_ix = 0;        // element index in the input buffer
  size_t out_ix = 0;       // element index in the output buffer
};

// The shape of one channel's plan (NCCL's constructor): blocks per FIFO step, per group, and the stride.
struct PatShape {
  int nranks = 1;
  int nrpow2 = 1;      // nranks rounded up to a power of two
  int post_freq = 1;   // blocks per FIFO step
  int agg = 1;         // blocks per group (agg_factor)
  int agg_delta = 1;   // distance between the blocks of a group
  int as_dim = 0;      // log2(agg_delta)
};

// `chunk_bytes`: one operation's chunk (NCCL's chunkCount x sizeof(T)); `channel_bytes`: the channel's
// share of one rank's block (> 0).
CCLAB_HD inline PatShape pat_shape(int nranks, size_t chunk_bytes, size_t channel_bytes) {
  PatShape p;
  p.nranks = nranks;
  int l = 0;
  while ((1 << l) < nranks) ++l;
  p.nrpow2 = p.agg_delta = 1 << l;
  const size_t cb = channel_bytes > 0 ? channel_bytes : 1;
  while (chunk_bytes / (cb * static_cast<size_t>(p.agg)) >= 2 && p.agg < nranks / 2) {
    p.agg *= 2;
    p.agg_delta /= 2;
  }
  p.post_freq = p.agg;
  for (int depth = kNcclSteps; depth > 1 && p.agg < nranks / 2; depth /= 2) {
    p.agg *= 2;
    p.agg_delta /= 2;
  }
  p.as_dim = 0;
  while ((1 << p.as_dim) < p.agg_delta) ++p.as_dim;
  return p;
}

// The k-th (0-based) value of all_gather's walk over the low distances 1 .. 2^dims - 1: the walk of
// `dims` bits is 2^(dims-1), then 2^(dims-1) + the walk of dims - 1 bits, then the walk of dims - 1 bits
// (3 bits: 4 6 7 5 2 3 1).
CCLAB_HD inline int pat_as_order(int k, int dims) {
  int v = 0;
  for (int d = dims; d > 0; --d) {
    const int half = 1 << (d - 1);
    if (k == 0) return v + half;
    if (k < half) {
      v += half;
      k -= 1;
    } else {
      k -= half;
    }
  }
  return v;
}

namespace pat_plan_detail {

// The bits of i (below `max`) reversed and inverted: the order reduce_scatter takes a group's blocks in.
CCLAB_HD inline int mirror_invert(int i, int max) {
  int r = 0;
  for (int mask = 1, imask = max / 2; mask < max; mask <<= 1, imask >>= 1)
    if ((i & mask) == 0) r += imask;
  return r;
}

// True when i's bits below pow2 are ones from the top down and zeros below them (pow2 = 16: i = 0, 8, 12,
// 14, 15): NCCL's newPeer, where a group's sends move to the next peer.
CCLAB_HD inline bool new_peer(int i, int pow2) {
  unsigned x = (static_cast<unsigned>(i) ^ static_cast<unsigned>(pow2 - 1)) + 1u;
  return x != 0 && (x & (x - 1)) == 0;
}

CCLAB_HD inline size_t block(int rank, int s, const PatShape& p, size_t count, size_t off) {
  return static_cast<size_t>((rank + p.nranks + s) % p.nranks) * count + off;
}

}  // namespace pat_plan_detail

// Calls visit(op) for each operation of all_gather's chunk at element `off` of `nelem` elements
// (count: elements per rank) on `rank`, in order; stops (returns false) when visit returns false.
template <typename Visit>
CCLAB_HD bool pat_ag_chunk_ops(const PatShape& p, int rank, size_t count, size_t off, size_t nelem, Visit& visit) {
  using namespace pat_plan_detail;
  const int n = p.nranks, pf = p.post_freq, ad = p.agg_delta;
  const int ne = static_cast<int>(nelem);
  // Phase 2: the top of the trees.
  for (int scale = p.agg / 2; scale >= 1; scale /= 2) {
    const int last_a = p.agg / (2 * scale);
    for (int a = 0; a < last_a; ++a) {
      PatOp o;
      o.nelem = nelem;
      o.in_ix = off;
      int s = (2 * a + 1) * scale * ad;
      o.post_send = (a % pf == pf - 1) || ((2 * (a + 1) + 1) * scale * ad >= n);
      o.skip = s >= n;
      o.send_dim = pat_low_bit(s, p.nrpow2);
      s -= 1 << o.send_dim;
      o.send_off = (a % pf) * ne;
      o.step_off = a / pf;
      o.out_ix = block(rank, s, p, count, off);
      o.recv_dim = s ? pat_low_bit(s, p.nrpow2) : -1;
      if (o.recv_dim >= 0) {
        const int fo = (a * 2 * scale * ad) >> (o.recv_dim + 1);
        o.recv_off = (fo % pf) * ne;
        o.step_off = fo / pf;
      }
      if (!o.skip && !visit(o)) return false;
    }
  }
  // Phases 1 and 0 over the walk of the low distances.
  for (int k = 0; k < ad - 1; ++k) {
    const int as = pat_as_order(k, p.as_dim);
    for (int a = 0; a < p.agg; ++a) {  // phase 1
      PatOp o;
      o.nelem = nelem;
      o.in_ix = off;
      int s = a * ad + as;
      o.skip = s >= n;
      o.send_dim = pat_low_bit(s, p.nrpow2);
      s -= 1 << o.send_dim;
      o.out_ix = block(rank, s, p, count, off);
      o.recv_dim = s ? pat_low_bit(s, p.nrpow2) : -1;
      o.send_off = o.recv_off = (a % pf) * ne;
      const bool group_end = a % pf == pf - 1;
      o.post_send = group_end || ((a + 1) * ad + as >= n);
      o.post_recv = o.send_dim == 0 && (group_end || ((a + 1) * ad + as - 1 >= n));
      o.step_off = o.send_dim == 0 ? 0 : a / pf;
      if (o.recv_dim == -1) {
        o.recv_off = -1;
        o.post_recv = false;
      } else if (as - (1 << o.send_dim) == 0) {
        const int fo = (a * ad) >> (o.recv_dim + 1);
        o.recv_off = (fo % pf) * ne;
        o.post_recv = o.send_dim == 0 && ((fo % pf == pf - 1) || ((((fo + 1) * 2) + 1) << o.recv_dim) >= n);
        o.step_off = o.send_dim == 0 ? 0 : fo / pf;
      }
      if (s < n && o.send_dim == 0 && o.skip) {  // still receive, though nothing goes on
        o.send_dim = -1;
        o.send_off = -1;
        o.post_send = false;
        o.skip = false;
      }
      if (!o.skip && !visit(o)) return false;
    }
    if (as % 2 == 1) {
      for (int a = 0; a < p.agg; ++a) {  // phase 0
        PatOp o;
        o.nelem = nelem;
        const int s = a * ad + as;
        o.skip = s >= n;
        o.out_ix = block(rank, s, p, count, off);
        o.recv_dim = 0;
        o.in_ix = 0;
        o.recv_off = (a % pf) * ne;
        o.post_recv = (a % pf == pf - 1) || ((a + 1) * ad + as >= n);
        if (!o.skip && !visit(o)) return false;
      }
    }
  }
  return true;
}

// The same for reduce_scatter (in_ix: the input block summed; out_ix: the output place).
template <typename Visit>
CCLAB_HD bool pat_rs_chunk_ops(const PatShape& p, int rank, size_t count, size_t off, size_t nelem, Visit& visit) {
  using namespace pat_plan_detail;
  const int n = p.nranks, pf = p.post_freq, ad = p.agg_delta;
  const int ne = static_cast<int>(nelem);
  // A phase's running state (NCCL's sendSkipped and stepOffset), reset at each phase.
  int send_skipped = 0, step_off = 0;
  auto base = [&](PatOp& o) {
    o.nelem = nelem;
    o.out_ix = off;
    o.step_off = step_off;
  };
  for (int as = ad - 1; as >= 1; --as) {
    if (as % 2 == 1) {
      send_skipped = step_off = 0;
      const int last_a = p.agg;
      for (int a = 0; a < last_a; ++a) {  // phase 0: own blocks out on dimension 0
        PatOp o;
        base(o);
        const int s = mirror_invert(a, last_a) * ad + as;
        o.skip = s >= n;
        o.in_ix = block(rank, s, p, count, off);
        o.send_dim = 0;
        o.out_ix = 0;
        o.send_off = (a % pf) * ne;
        o.post_send = (a % pf) + 1 >= pf || a == last_a - 1;
        if (!o.skip && !visit(o)) return false;
      }
      if (as == 1) break;
    }
    send_skipped = step_off = 0;
    const int last_a = p.agg;
    for (int a = 0; a < last_a; ++a) {  // phase 1
      PatOp o;
      base(o);
      int s = mirror_invert(a, last_a) * ad + as;
      o.skip = s >= n;
      o.recv_dim = pat_low_bit(s, p.nrpow2);
      o.send_off = o.recv_off = (a % pf) * ne;
      const bool group_end = (a % pf) + 1 >= pf || a == last_a - 1;
      o.post_send = o.recv_dim == 0 && group_end;
      o.post_recv = group_end;
      s -= 1 << o.recv_dim;
      o.in_ix = block(rank, s, p, count, off);
      o.send_dim = s ? pat_low_bit(s, p.nrpow2) : -1;
      if (o.send_dim == -1) {
        o.send_off = -1;
      } else if (as - (1 << o.recv_dim) == 0) {
        if (new_peer(a, p.agg)) {
          send_skipped = a;
          o.step_off = step_off = 0;
        }
        o.send_off = ((a - send_skipped) % pf) * ne;
      }
      const int recv_dim = o.recv_dim;
      if (s < n && o.skip) {  // still send what this rank has, though nothing arrives
        o.recv_dim = -1;
        o.recv_off = -1;
        o.post_recv = false;
        o.skip = false;
      }
      if (recv_dim > 0 && ((a - send_skipped) % pf) + 1 >= pf && !o.skip) ++step_off;
      if (!o.skip && !visit(o)) return false;
    }
  }
  // Phases 2 and 3: the top of the trees.
  for (int scale = 1; scale < p.agg; scale *= 2) {
    const int last_a = p.agg / (2 * scale);
    send_skipped = step_off = 0;
    for (int a = 0; a < last_a; ++a) {  // phase 2
      PatOp o;
      base(o);
      int s = (2 * mirror_invert(a, last_a) + 1) * scale * ad + 1;
      o.skip = s >= n;
      o.recv_dim = 0;
      o.post_send = a == last_a - 1;
      s -= 1;
      if (s < n && o.skip) {
        o.recv_dim = -1;
        o.recv_off = -1;
        o.skip = false;
      } else if (!o.skip) {
        const int fo = a + p.agg - p.agg / scale;
        o.post_recv = ((fo + 1) % pf) == 0;
        o.recv_off = (fo % pf) * ne;
      }
      o.in_ix = block(rank, s, p, count, off);
      o.send_dim = s ? pat_low_bit(s, p.nrpow2) : -1;
      o.post_send = o.post_send || ((a + 1) % pf) == 0;
      o.send_off = (a % pf) * ne;
      if (!o.skip && !visit(o)) return false;
    }
    send_skipped = step_off = 0;
    for (int a = 0; a < last_a; ++a) {  // phase 3
      PatOp o;
      base(o);
      int s = (2 * mirror_invert(a, last_a) + 1) * scale * ad;
      o.post_recv = a == last_a - 1;
      o.skip = s >= n;
      o.recv_dim = pat_low_bit(s, p.nrpow2);
      s -= 1 << o.recv_dim;
      o.post_recv = o.post_recv || (a + 1) % pf == 0;
      o.recv_off = (a % pf) * ne;
      o.in_ix = block(rank, s, p, count, off);
      o.send_dim = s ? pat_low_bit(s, p.nrpow2) : -1;
      if (s < n && o.skip) {
        o.recv_dim = -1;
        o.recv_off = -1;
        o.post_recv = false;
        o.skip = false;
      }
      if (new_peer(a, p.agg / (2 * scale))) {
        send_skipped = a;
        o.step_off = step_off = 0;
      }
      const int fo = a - send_skipped;
      if ((fo % pf) + 1 >= pf && !o.skip) ++step_off;
      o.send_off = o.send_dim >= 0 ? (fo % pf) * ne : -1;
      if (!o.skip && !visit(o)) return false;
    }
  }
  // Phase 4: the last partial sum of the rank's own block.
  PatOp o;
  base(o);
  o.recv_dim = 0;
  o.in_ix = static_cast<size_t>(rank) * count + off;
  o.recv_off = ((p.agg - 1) % pf) * ne;
  o.post_recv = true;
  o.last = true;
  return visit(o);
}

}  // namespace cclab
