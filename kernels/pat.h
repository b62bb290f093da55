// kernels/pat.h - PAT (Parallel Aggregated Trees, NCCL 2.28.9's algorithm index 6) for all_gather and
// reduce_scatter: written once for every executor, like ring.h and tree.h.
//
// PAT talks to the peers at power-of-two distances: along "dimension" d a rank is linked to
// rank - 2^d and rank + 2^d (mod nranks), d = 0 .. dims-1 with 2^d < nranks. Each block of data crosses
// every rank exactly once (the bandwidth of a ring), but along a binomial tree instead of a chain, so a
// block is log2(nranks) hops from its furthest rank instead of nranks - 1.
//
// all_gather (NCCL's PatAGAlgorithm, without its aggregation): the block of rank q reaches rank q - s
// through the hops of s's set bits, highest first. At step s (s = 1 .. nranks-1) every rank, with
// d = lowest set bit of s and t = s - 2^d,
//     sends block (rank + t) to rank - 2^d    (its own block when t = 0, else one it received at step t)
//     receives block (rank + s) from rank + 2^d
// both on dimension d at once (Primitives::exchange), so every step is a matched pair of transfers and
// the steps never deadlock. Steps go in increasing s: block rank + t arrived at step t < s.
//
// reduce_scatter (NCCL's PatRSAlgorithm, without its aggregation) is the same trees run backwards, in
// decreasing s (NCCL's order): at step s every rank
//     sends its partial sum of block (rank + s) to rank + 2^d
//     receives from rank - 2^d a partial sum of block (rank + t), reduced into its own partial of it
// The partial of block rank + t gathers the contributions of steps t + 2^e (e below t's lowest set bit)
// before step t sends it on (t = 0: the output, finished at step 1 with the op's post function). NCCL
// accumulates it in the destination's FIFO slot; cclab's primitives post a slot when they fill it, so the
// partial waits in a scratch chunk instead, one per dimension: the partials with the same lowest set bit
// are never open at the same time (pat_scratch_elems).
//
//   all_gather, 8 ranks, rank 0's view    step s: send block (t) to -2^d, receive block (s) from +2^d
//     s=1 d=0: send 0 -> 7, recv 1 <- 1      s=5 d=0: send 4 -> 7, recv 5 <- 1
//     s=2 d=1: send 0 -> 6, recv 2 <- 2      s=6 d=1: send 4 -> 6, recv 6 <- 2
//     s=3 d=0: send 2 -> 7, recv 3 <- 1      s=7 d=0: send 6 -> 7, recv 7 <- 1
//     s=4 d=2: send 0 -> 4, recv 4 <- 4
//
// Differences from NCCL's kernel (docs/tuner.md, "PAT"): NCCL aggregates several steps' blocks into one
// FIFO step when a channel's share is small (aggFactor, parallelFactor) and reads the received blocks in
// place from the peer's buffer; cclab moves one block per step through the usual FIFO credits.
#pragma once

#include <stddef.h>

#include "kernels/platform.h"
#include "kernels/primitives.h"
#include "kernels/protocols.h"
#include "kernels/work.h"

namespace cclab {

// Most dimensions (2^24 ranks).
constexpr int kMaxPatDims = 24;

// PAT's protocol: Simple with one step per chunk (NCCL's chunkSteps = 1 outside Ring).
using ProtoPat = ProtoSimpleOne;

// Dimensions of `nranks` ranks: the d with 2^d < nranks.
CCLAB_HD inline int pat_dims(int nranks) {
  int d = 0;
  while (d < kMaxPatDims && (1 << d) < nranks) ++d;
  return d;
}

// The peer of `rank` along dimension d: rank + 2^d (up) or rank - 2^d, mod nranks.
CCLAB_HD inline int pat_peer(int rank, int nranks, int d, bool up) {
  const int dist = (1 << d) % nranks;
  return up ? (rank + dist) % nranks : (rank - dist + nranks) % nranks;
}

// Lowest set bit of s > 0.
CCLAB_HD inline int pat_low_bit(int s) {
  int d = 0;
  while (((s >> d) & 1) == 0) ++d;
  return d;
}

// This rank's connections on one channel, per dimension (the same ConnInfo may appear twice when two
// distances reach the same rank, e.g. +2 and -1 among 3 ranks).
struct PatConns {
  int ndims = 0;
  ConnInfo* send_down[kMaxPatDims] = {};  // to rank - 2^d   (all_gather)
  ConnInfo* recv_up[kMaxPatDims] = {};    // from rank + 2^d (all_gather)
  ConnInfo* send_up[kMaxPatDims] = {};    // to rank + 2^d   (reduce_scatter)
  ConnInfo* recv_down[kMaxPatDims] = {};  // from rank - 2^d (reduce_scatter)
};

// Chunk size (bytes) of a PAT call of `bytes` in all (NCCL's nBytes: count x nranks x type size) on
// `nchannels` channels (NCCL's calcCollChunking: one FIFO step, halved down to 64 KiB while the call has
// fewer than 32 (all_gather) or 16 (reduce_scatter) chunks per channel).
CCLAB_HD inline size_t pat_chunk_bytes(CollKind coll, int buff_bytes, size_t bytes, int nchannels) {
  size_t chunk = ProtoPat::max_chunk_bytes(buff_bytes);
  const size_t per = static_cast<size_t>(nchannels > 0 ? nchannels : 1);
  const size_t want = coll == CollKind::kAllGather ? 32 : 16;
  while (chunk * per * want > bytes && chunk > 65536) chunk /= 2;
  const size_t grain = ProtoPat::kGrainBytes;
  return chunk / grain * grain > 0 ? chunk / grain * grain : grain;
}

// Elements of one channel's chunk (what pat_scratch_elems and the schedules use).
template <typename T>
CCLAB_HD inline size_t pat_chunk_elems(const CollWork& w) {
  const size_t grain = ProtoPat::kGrainBytes / sizeof(T) > 0 ? ProtoPat::kGrainBytes / sizeof(T) : 1;
  size_t chunk = w.chunk_bytes / sizeof(T) / grain * grain;
  return chunk > 0 ? chunk : grain;
}

// Scratch elements a channel of reduce_scatter needs (0 for all_gather): one chunk per dimension above
// the first, for the partial sums in flight.
template <typename T>
CCLAB_HD inline size_t pat_scratch_elems(const CollWork& w) {
  if (w.coll != CollKind::kReduceScatter) return 0;
  const int dims = pat_dims(w.nranks);
  return dims > 1 ? static_cast<size_t>(dims - 1) * pat_chunk_elems<T>(w) : 0;
}

// Bytes of scratch a channel of `w` needs, whatever its datatype (an upper bound of
// pat_scratch_elems<T>(w) x sizeof(T)).
CCLAB_HD inline size_t pat_scratch_bytes(const CollWork& w) {
  if (w.coll != CollKind::kReduceScatter) return 0;
  const int dims = pat_dims(w.nranks);
  const size_t chunk = w.chunk_bytes > static_cast<size_t>(ProtoPat::kGrainBytes) ? w.chunk_bytes : ProtoPat::kGrainBytes;
  return dims > 1 ? static_cast<size_t>(dims - 1) * chunk : 0;
}

namespace pat_detail {

// One step: sends n elements from src + src_off on `send` while receiving n into dst + dst_off from
// `recv`, reduced with `acc` when it is not null. src_final / acc_final: already through the op's pre
// function. The offsets are the ones the step records carry (which chunk of which buffer).
template <typename T, typename Exec>
CCLAB_HD bool step(Exec& exec, const RedOp<T>& op, const CollWork& w, int channel, ConnInfo* recv, ConnInfo* send,
                   const T* src, size_t src_off, bool src_final, T* dst, size_t dst_off, const T* acc, bool acc_final,
                   size_t n, bool post) {
  Primitives<T, ProtoPat, Exec> p(exec, op, recv, send, src, dst, w.rank, channel, w.coll, w.op_count);
  p.set_source(src, src_final);
  p.exchange(src_off, n, acc, acc_final, dst_off, n, post);
  return !p.aborted();
}

}  // namespace pat_detail

// PAT all_gather of channel `channel` (see the top of this file). False once the executor aborted.
template <typename T, typename Exec>
CCLAB_HD bool pat_all_gather(Exec& exec, const RedOp<T>& op, const CollWork& w, const PatConns& c, int channel) {
  const size_t grain = ProtoPat::kGrainBytes / sizeof(T) > 0 ? ProtoPat::kGrainBytes / sizeof(T) : 1;
  const Range r = channel_range(w.count, channel, w.nchannels, grain);
  const size_t chunk = pat_chunk_elems<T>(w);
  const int n = w.nranks, me = w.rank;
  const T* in = static_cast<const T*>(w.send);
  T* out = static_cast<T*>(w.recv);
  const bool in_place = in == out + static_cast<size_t>(me) * w.count;
  auto at = [&](int s, size_t o) { return static_cast<size_t>((me + s) % n) * w.count + o; };
  auto block = [&](int s, size_t o) { return out + at(s, o); };
  for (size_t base = 0; base < r.size(); base += chunk) {
    const size_t len = min_sz(chunk, r.size() - base);
    const size_t o = r.lo + base;
    if (!in_place)
      exec.reduce_copy(op, block(0, o), static_cast<T*>(nullptr), static_cast<const T*>(nullptr), in + o, len, false,
                       false);
    for (int s = 1; s < n; ++s) {
      const int d = pat_low_bit(s), t = s - (1 << d);
      const bool from_input = t == 0 && !in_place;
      if (!pat_detail::step(exec, op, w, channel, c.recv_up[d], c.send_down[d], from_input ? in : out,
                            from_input ? o : at(t, o), true, out, at(s, o), static_cast<const T*>(nullptr), true, len,
                            false))
        return false;
    }
  }
  return true;
}

// PAT reduce_scatter of channel `channel` (see the top of this file); `scratch` holds
// pat_scratch_elems<T>(w) elements of this channel. False once the executor aborted.
template <typename T, typename Exec>
CCLAB_HD bool pat_reduce_scatter(Exec& exec, const RedOp<T>& op, const CollWork& w, const PatConns& c, int channel,
                                 T* scratch) {
  const size_t grain = ProtoPat::kGrainBytes / sizeof(T) > 0 ? ProtoPat::kGrainBytes / sizeof(T) : 1;
  const Range r = channel_range(w.count, channel, w.nchannels, grain);
  const size_t chunk = pat_chunk_elems<T>(w);
  const int n = w.nranks, me = w.rank, dims = pat_dims(n);
  const T* in = static_cast<const T*>(w.send);
  T* out = static_cast<T*>(w.recv);
  auto at = [&](int s, size_t o) { return static_cast<size_t>((me + s) % n) * w.count + o; };
  // The partial sum of block rank + s (lowest set bit L >= 1) waits in scratch chunk L - 1.
  auto partial = [&](int low) { return static_cast<size_t>(low - 1) * chunk; };
  for (size_t base = 0; base < r.size(); base += chunk) {
    const size_t len = min_sz(chunk, r.size() - base);
    const size_t o = r.lo + base;
    for (int s = n - 1; s >= 1; --s) {
      const int d = pat_low_bit(s), t = s - (1 << d);
      // What goes to rank + 2^d: my input of block rank + s, plus what arrived for it at steps s + 2^e
      // (e < d; the first of them is s + 1).
      const bool gathered = d > 0 && s + 1 < n;
      // Where the contribution for block rank + t lands, and whether it is the first one.
      const int low = t == 0 ? dims : pat_low_bit(t);
      bool first = true;
      for (int e = d + 1; e < low; ++e)
        if (t + (1 << e) < n) first = false;
      T* dst = t == 0 ? out : scratch;
      const size_t dst_off = t == 0 ? o : partial(low);
      const T* acc = first ? in + at(t, o) : dst + dst_off;
      if (!pat_detail::step(exec, op, w, channel, c.recv_down[d], c.send_up[d], gathered ? scratch : in,
                            gathered ? partial(d) : at(s, o), gathered, dst, dst_off, acc, !first, len,
                            t == 0 && s == 1))
        return false;
    }
  }
  return true;
}

// Runs channel `channel` of a PAT all_gather / reduce_scatter on this rank (Simple protocol): `conns` are
// this rank's connections along every dimension, `scratch` pat_scratch_elems<T>(w) elements. Returns
// false if the executor aborted.
template <typename T, typename Exec>
CCLAB_HD bool run_pat_channel(Exec& exec, const CollWork& w, const PatConns& conns, int channel, T* scratch) {
  const RedOp<T> op(w.redop);
  if (w.nranks == 1) {
    const size_t grain = ProtoPat::kGrainBytes / sizeof(T) > 0 ? ProtoPat::kGrainBytes / sizeof(T) : 1;
    const Range r = channel_range(w.count, channel, w.nchannels, grain);
    const bool red = w.coll == CollKind::kReduceScatter;
    exec.reduce_copy(op, static_cast<T*>(w.recv) + r.lo, static_cast<T*>(nullptr), static_cast<const T*>(nullptr),
                     static_cast<const T*>(w.send) + r.lo, r.size(), red, red);
    return true;
  }
  if (w.coll == CollKind::kAllGather) return pat_all_gather<T>(exec, op, w, conns, channel);
  if (w.coll == CollKind::kReduceScatter) return pat_reduce_scatter<T>(exec, op, w, conns, channel, scratch);
  return false;
}

}  // namespace cclab
