// kernels/pat.h - PAT (Parallel Aggregated Trees, NCCL 2.28.9's algorithm index 6) for all_gather and
// reduce_scatter: written once for every executor, like ring.h and tree.h.
//
// PAT talks to the peers at power-of-two distances: along "dimension" d a rank is linked to
// rank - 2^d and rank + 2^d (mod nranks), d = 0 .. dims-1 with 2^d < nranks. Each block of data crosses
// every rank exactly once (the bandwidth of a ring), but along a binomial tree instead of a chain, so a
// block is log2(nranks) hops from its furthest rank instead of nranks - 1.
//
// The operations and their order are NCCL's, aggregation included (kernels/pat_plan.h): each operation
// moves one block between this rank's buffers and the FIFO slots of two of its dimensions' connections.
//   all_gather (NCCL's patCopy): the block comes from the input or from a receive slot (read in place;
//     waiting for its step), goes to a send slot and, the first time this rank sees it, to the output.
//   reduce_scatter (NCCL's patReduce): a received partial sum (if any) is added to the partial sum of the
//     same block in the send slot it will leave from - or in the output, for this rank's own block -
//     which the first operation to write that place starts from this rank's input.
// A FIFO step carries several blocks when a channel's share is small, and a group of blocks for one
// dimension fills up to NCCL_STEPS steps before anyone waits for them: a small call takes about
// log2(nranks) rounds of messages, not nranks - 1.
//
//   all_gather, 8 ranks, one block per step (rank 0's view; "s" is block rank + s)
//     send 0 -> 4 (dim 2)   send 0 -> 6 (dim 1)   recv 4 <- dim 2, send it -> 6   send 0 -> 7 (dim 0)
//     recv 2 <- dim 1, send it -> 7   recv 4 (in place), send it -> 7   recv 6 <- dim 1, send it -> 7
//     recv 1, 3, 5, 7 <- dim 0
//
// What cclab does not reproduce of NCCL's kernel: NCCL runs up to 16 operations of a group at once
// (parallelFactor, on its warps), cclab one after the other (the same steps, places and posts: no
// operation of a round uses a step or place that an earlier operation of the same round changed). NCCL reads a peer's FIFO over NVLink with
// P2P read; cclab's P2P connections write the receiver's FIFO as for every other algorithm.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "kernels/fifo.h"
#include "kernels/pat_plan.h"
#include "kernels/platform.h"
#include "kernels/primitives.h"
#include "kernels/protocols.h"
#include "kernels/work.h"

namespace cclab {

// PAT's protocol: Simple with one step per chunk (NCCL's chunkSteps = 1 outside Ring).
using ProtoPat = ProtoSimpleOne;

// The peer of `rank` along dimension d: rank + 2^d (up) or rank - 2^d, mod nranks.
CCLAB_HD inline int pat_peer(int rank, int nranks, int d, bool up) {
  const int dist = (1 << d) % nranks;
  return up ? (rank + dist) % nranks : (rank - dist + nranks) % nranks;
}

// This rank's connections on one channel, per dimension (the same ConnInfo may appear in two of the arrays
// when two distances reach the same rank, e.g. +2 and -1 among 3 ranks; never twice in one array).
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

// Elements of one channel's chunk (what the schedules use).
template <typename T>
CCLAB_HD inline size_t pat_chunk_elems(const CollWork& w) {
  const size_t grain = ProtoPat::kGrainBytes / sizeof(T) > 0 ? ProtoPat::kGrainBytes / sizeof(T) : 1;
  size_t chunk = w.chunk_bytes / sizeof(T) / grain * grain;
  return chunk > 0 ? chunk : grain;
}

namespace pat_detail {

// Runs a channel's operations (pat_plan.h) on this rank: the waits, the data loop and the posts of NCCL's
// patCopy / patReduce. The positions of what was already written (NCCL's accSize: per dimension, the
// end of the furthest place of the receive stream (all_gather) or the send stream (reduce_scatter) seen
// so far, steps x slot elements + offset; and the same for the output or input) tell a first write of a
// place from a later one.
template <typename T, typename Exec>
struct PatRunner {
  Exec& exec;
  const RedOp<T>& op;
  const CollWork& w;
  const PatConns& c;
  int channel;
  const T* in;
  T* out;
  bool gather;
  uint64_t acc[kMaxPatDims] = {};
  uint64_t local_acc = 0;
  // Per receive dimension and FIFO slot: the furthest element this rank read in the step there. A step
  // is given back by the last operation that reads it, which checks the sender filled it exactly that
  // far (a rank that passed another count reads other places: caught on both sides, not only where a
  // read runs past the fill).
  uint32_t read_end[kMaxPatDims][kNcclSteps] = {};

  CCLAB_HD PatRunner(Exec& e, const RedOp<T>& o, const CollWork& work, const PatConns& conns, int ch)
      : exec(e), op(o), w(work), c(conns), channel(ch), in(static_cast<const T*>(work.send)),
        out(static_cast<T*>(work.recv)), gather(work.coll == CollKind::kAllGather) {}

  // True the first time a place ending at `at` is written (NCCL's accSize test): `seen` is the furthest end
  // so far, moved on to `at`.
  CCLAB_HD static bool first_write(uint64_t& seen, uint64_t at) {
    if (at <= seen) return false;
    seen = at;
    return true;
  }
  CCLAB_HD static uint64_t place(const ConnInfo* k, uint64_t step, int off, size_t n) {
    return step * static_cast<uint64_t>(k->step_bytes / static_cast<int>(sizeof(T))) + static_cast<uint64_t>(off) + n;
  }

  // Waits for the data of receive step `step` on dimension `dim` and checks the sender put at least
  // `off + n` elements in it.
  CCLAB_HD bool wait_data(ConnInfo* k, int dim, uint64_t step, int off, size_t n, PrimKind prim) {
    const WaitSite ws{w.rank, channel, k->peer, step + 1, true, prim};
    if (!exec.wait_ge(&k->hdr->tail, step + 1, ws)) return false;
    const size_t end = static_cast<size_t>(off) + n;
    const int32_t got = k->hdr->sizes[step % kNcclSteps];
    if (got < static_cast<int32_t>(end * sizeof(T)) && exec.size_mismatch(ws, end * sizeof(T), got)) return false;
    uint32_t& seen = read_end[dim][step % kNcclSteps];
    if (end > seen) seen = static_cast<uint32_t>(end);
    return true;
  }
  // Waits for the credit of send step `step`.
  CCLAB_HD bool wait_credit(ConnInfo* k, uint64_t step, PrimKind prim) {
    const WaitSite ws{w.rank, channel, k->peer, step + 1, false, prim};
    const uint64_t need = step + 1 > static_cast<uint64_t>(kNcclSteps) ? step + 1 - kNcclSteps : 0;
    return exec.wait_ge(&k->hdr->head, need, ws);
  }
  // Posts the connection's current send step, filled up to `off + n` elements (NCCL records that size for
  // its proxy; cclab's receivers check it), and starts its transfer.
  CCLAB_HD void post_send(ConnInfo* k, int off, size_t n) {
    const uint64_t step = k->step;
    const size_t bytes = (static_cast<size_t>(off) + n) * sizeof(T);
    if (exec.lane() == 0) {
      k->hdr->sizes[step % kNcclSteps] = static_cast<int32_t>(bytes);
      k->hdr->ends[step % kNcclSteps] = step + 1;
    }
    exec.wire(*k, bytes);
    k->step = step + 1;
    exec.post(&k->hdr->tail, k->step);
  }
  // Gives the connection's current receive step back, once it checked the step held what was read.
  CCLAB_HD bool post_recv(ConnInfo* k, int dim, PrimKind prim) {
    const uint64_t step = k->step;
    uint32_t& seen = read_end[dim][step % kNcclSteps];
    const size_t expect = static_cast<size_t>(seen) * sizeof(T);
    seen = 0;
    const int32_t got = k->hdr->sizes[step % kNcclSteps];
    const WaitSite ws{w.rank, channel, k->peer, step + 1, true, prim};
    if (got != static_cast<int32_t>(expect) && exec.size_mismatch(ws, expect, got)) return false;
    k->step = step + 1;
    exec.post(&k->hdr->head, k->step);
    return true;
  }
  CCLAB_HD void observe(PrimKind prim, const ConnInfo* s, const ConnInfo* r, uint64_t step, size_t n, size_t ix,
                        double t0, double td) {
    StepRecord rec{w.rank, channel, s ? s->peer : -1, r ? r->peer : -1, step, prim, w.coll, w.op_count,
                   n * sizeof(T), t0, exec.now_us(), static_cast<uint64_t>(ix * sizeof(T)), td};
    exec.observe(rec);
  }

  // all_gather: a block from the input or a receive slot to a send slot and (the first time) the output.
  CCLAB_HD bool copy(const PatOp& o) {
    ConnInfo* const r = o.recv_dim >= 0 ? c.recv_up[o.recv_dim] : nullptr;
    ConnInfo* const s = o.send_dim >= 0 ? c.send_down[o.send_dim] : nullptr;
    const PrimKind prim = r && s ? PrimKind::kRecvCopySend : r ? PrimKind::kRecv : PrimKind::kCopySend;
    const size_t n = o.nelem;
    const bool obs = exec.observing();
    const double t0 = obs ? exec.now_us() : 0.0;
    const T* src = nullptr;
    bool to_out = false;
    const uint64_t rstep = r ? r->step + static_cast<uint64_t>(o.step_off) : 0, sstep = s ? s->step : 0;
    if (r) {
      if (!wait_data(r, o.recv_dim, rstep, o.recv_off, n, prim)) return false;
      src = reinterpret_cast<const T*>(r->slot(rstep)) + o.recv_off;
      to_out = first_write(acc[o.recv_dim], place(r, rstep, o.recv_off, n));
    } else {
      src = in + o.in_ix;
      // In place the output already holds it.
      to_out = first_write(local_acc, o.in_ix + n) && src != out + o.out_ix;
    }
    if (s && !wait_credit(s, sstep, prim)) return false;
    const double td = obs ? exec.now_us() : 0.0;
    T* const dout = to_out ? out + o.out_ix : static_cast<T*>(nullptr);
    if (n > 0) {
      if (s)
        exec.reduce_copy(op, reinterpret_cast<T*>(s->slot(sstep)) + o.send_off, dout, static_cast<const T*>(nullptr),
                         src, n, false, false);
      else if (dout)
        exec.reduce_copy(op, dout, static_cast<T*>(nullptr), static_cast<const T*>(nullptr), src, n, false, false);
    }
    if (s && o.post_send) post_send(s, o.send_off, n);
    if (r && o.post_recv && !post_recv(r, o.recv_dim, prim)) return false;
    if (obs) observe(prim, s, r, s ? sstep : rstep, n, o.out_ix, t0, td);
    return true;
  }

  // reduce_scatter: a received partial sum (if any) into the partial sum of the same block in a send slot
  // or the output, which its first write starts from this rank's input.
  CCLAB_HD bool reduce(const PatOp& o) {
    ConnInfo* const r = o.recv_dim >= 0 ? c.recv_down[o.recv_dim] : nullptr;
    ConnInfo* const s = o.send_dim >= 0 ? c.send_up[o.send_dim] : nullptr;
    const PrimKind prim = r && s ? PrimKind::kRecvReduceSend : r ? PrimKind::kRecvReduceCopy : PrimKind::kSend;
    const size_t n = o.nelem;
    const bool obs = exec.observing();
    const double t0 = obs ? exec.now_us() : 0.0;
    const uint64_t rstep = r ? r->step : 0, sstep = s ? s->step + static_cast<uint64_t>(o.step_off) : 0;
    const T* got = nullptr;
    if (r) {
      if (!wait_data(r, o.recv_dim, rstep, o.recv_off, n, prim)) return false;
      got = reinterpret_cast<const T*>(r->slot(rstep)) + o.recv_off;
    }
    T* dst = nullptr;
    bool fresh = false;
    if (s) {
      if (!wait_credit(s, sstep, prim)) return false;
      dst = reinterpret_cast<T*>(s->slot(sstep)) + o.send_off;
      fresh = first_write(acc[o.send_dim], place(s, sstep, o.send_off, n));
    } else {
      dst = out + o.out_ix;
      fresh = first_write(local_acc, o.out_ix + n);
    }
    const double td = obs ? exec.now_us() : 0.0;
    if (n > 0) {
      if (fresh)  // the first write of this place: this rank's input joins (through the op's pre function)
        exec.reduce_copy(op, dst, static_cast<T*>(nullptr), got, in + o.in_ix, n, true, o.last);
      else if (got != nullptr || o.last)
        exec.reduce_copy(op, dst, static_cast<T*>(nullptr), got, dst, n, false, o.last);
    }
    if (s && o.post_send) post_send(s, o.send_off, n);
    if (r && o.post_recv && !post_recv(r, o.recv_dim, prim)) return false;
    if (obs) observe(prim, s, r, s ? sstep : rstep, n, o.in_ix, t0, td);
    return true;
  }

  CCLAB_HD bool operator()(const PatOp& o) { return gather ? copy(o) : reduce(o); }
};

}  // namespace pat_detail

// Runs channel `channel` of a PAT all_gather / reduce_scatter on this rank (Simple protocol): `conns` are
// this rank's connections along every dimension. Returns false if the executor aborted.
template <typename T, typename Exec>
CCLAB_HD bool run_pat_channel(Exec& exec, const CollWork& w, const PatConns& conns, int channel) {
  const RedOp<T> op(w.redop);
  const size_t grain = ProtoPat::kGrainBytes / sizeof(T) > 0 ? ProtoPat::kGrainBytes / sizeof(T) : 1;
  const Range r = channel_range(w.count, channel, w.nchannels, grain);
  if (w.coll != CollKind::kAllGather && w.coll != CollKind::kReduceScatter) return false;
  if (w.nranks == 1) {
    const bool red = w.coll == CollKind::kReduceScatter;
    exec.reduce_copy(op, static_cast<T*>(w.recv) + r.lo, static_cast<T*>(nullptr), static_cast<const T*>(nullptr),
                     static_cast<const T*>(w.send) + r.lo, r.size(), red, red);
    return true;
  }
  if (r.size() == 0) return true;  // every rank's share of this channel is empty: nothing to say
  const size_t chunk = pat_chunk_elems<T>(w);
  const PatShape shape = pat_shape(w.nranks, chunk * sizeof(T), r.size() * sizeof(T));
  pat_detail::PatRunner<T, Exec> run(exec, op, w, conns, channel);
  for (size_t base = 0; base < r.size(); base += chunk) {
    const size_t len = min_sz(chunk, r.size() - base);
    const bool ok = w.coll == CollKind::kAllGather ? pat_ag_chunk_ops(shape, w.rank, w.count, r.lo + base, len, run)
                                                   : pat_rs_chunk_ops(shape, w.rank, w.count, r.lo + base, len, run);
    if (!ok) return false;
  }
  return true;
}

}  // namespace cclab
