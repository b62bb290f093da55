// kernels/collectives.h - the entry an executor calls for one rank and one channel: picks the
// protocol and the schedule for the collective. This is the "kernel body"; the host executor runs it
// on a thread per channel, the CUDA executor in a thread block per channel, the simulator in an actor.
#pragma once

#include <stddef.h>

#include "kernels/p2p.h"
#include "kernels/pat.h"
#include "kernels/platform.h"
#include "kernels/primitives.h"
#include "kernels/primitives_ll.h"
#include "kernels/primitives_ll128.h"
#include "kernels/protocols.h"
#include "kernels/reduce_copy.h"
#include "kernels/ring.h"
#include "kernels/tree.h"
#include "kernels/trees.h"
#include "kernels/work.h"

namespace cclab {

// Chunk size (bytes) a collective uses with protocol `proto` and a connection buffer of `buff_bytes`
// (NCCL's calcCollChunking for Ring: chunkSteps slots for Simple, one step's payload for LL/LL128).
CCLAB_HD inline size_t ring_chunk_bytes(CollKind coll, int proto, int buff_bytes) {
  if (proto == kProtoLL) return ProtoLL::max_chunk_bytes(buff_bytes);
  if (proto == kProtoLL128) return ProtoLL128::max_chunk_bytes(buff_bytes);
  if (coll == CollKind::kAllReduce || coll == CollKind::kAllGather || coll == CollKind::kReduceScatter)
    return ProtoSimpleRing::max_chunk_bytes(buff_bytes);
  return ProtoSimpleOne::max_chunk_bytes(buff_bytes);
}

// Runs the ring schedule of w.coll with primitives of protocol P (P2 for the Simple variants whose
// slicing differs per collective).
template <typename T, typename P, typename P2, typename Exec>
CCLAB_HD bool run_ring_schedule(Exec& exec, const RedOp<T>& op, const CollWork& w, const RingView& ring, int channel,
                                ConnInfo* recv, ConnInfo* send) {
  const T* in = static_cast<const T*>(w.send);
  T* out = static_cast<T*>(w.recv);
  switch (w.coll) {
    case CollKind::kAllReduce: {
      Primitives<T, P, Exec> p(exec, op, recv, send, in, out, w.rank, channel, w.coll, w.op_count);
      ring_all_reduce(p, w, ring, channel);
      return !p.aborted();
    }
    case CollKind::kAllGather: {
      const bool in_place = in == out + static_cast<size_t>(w.rank) * w.count;
      Primitives<T, P, Exec> p(exec, op, recv, send, in, out, w.rank, channel, w.coll, w.op_count);
      ring_all_gather(p, w, ring, channel, in_place);
      return !p.aborted();
    }
    case CollKind::kReduceScatter: {
      Primitives<T, P, Exec> p(exec, op, recv, send, in, out, w.rank, channel, w.coll, w.op_count);
      ring_reduce_scatter(p, w, ring, channel);
      return !p.aborted();
    }
    case CollKind::kBroadcast: {
      Primitives<T, P2, Exec> p(exec, op, recv, send, in, out, w.rank, channel, w.coll, w.op_count);
      ring_broadcast(p, w, ring, channel);
      return !p.aborted();
    }
    case CollKind::kReduce: {
      Primitives<T, P2, Exec> p(exec, op, recv, send, in, out, w.rank, channel, w.coll, w.op_count);
      ring_reduce(p, w, ring, channel);
      return !p.aborted();
    }
    default:
      return false;
  }
}

CCLAB_HD inline bool coll_reduces(CollKind c) {
  return c == CollKind::kAllReduce || c == CollKind::kReduce || c == CollKind::kReduceScatter;
}

// Runs channel `channel` of collective `w` on this rank with protocol w.proto. `recv` is that
// protocol's connection from ring.prev(), `send` the one to ring.next() on that channel. Returns false
// if the executor aborted.
template <typename T, typename Exec>
CCLAB_HD bool run_ring_channel(Exec& exec, const CollWork& w, const RingView& ring, int channel, ConnInfo* recv,
                               ConnInfo* send) {
  const RedOp<T> op(w.redop);
  const T* in = static_cast<const T*>(w.send);
  T* out = static_cast<T*>(w.recv);
  if (w.nranks == 1) {
    // No peers: the result is this rank's input through the op's pre and post functions.
    const Range r = channel_range(w.count, channel, w.nchannels, ProtoSimpleRing::kGrainBytes / sizeof(T));
    exec.reduce_copy(op, out + r.lo, static_cast<T*>(nullptr), static_cast<const T*>(nullptr), in + r.lo, r.size(),
                     coll_reduces(w.coll), coll_reduces(w.coll));
    return true;
  }
  if (w.proto == kProtoLL) return run_ring_schedule<T, ProtoLL, ProtoLL>(exec, op, w, ring, channel, recv, send);
  if (w.proto == kProtoLL128)
    return run_ring_schedule<T, ProtoLL128, ProtoLL128>(exec, op, w, ring, channel, recv, send);
  return run_ring_schedule<T, ProtoSimpleRing, ProtoSimpleOne>(exec, op, w, ring, channel, recv, send);
}

// Chunk size (bytes) of a tree all_reduce (NCCL's calcCollChunking for Tree): one step for Simple
// (ProtoSimple<1,1>) and LL (half of it payload), LL128 one step's payload, shrunk while there are too
// few chunks per channel to fill the tree's pipeline (nsteps = 1 + log2(nodes) + 0.1 ppn).
CCLAB_HD inline size_t tree_chunk_bytes(int proto, int buff_bytes, size_t bytes, int nchannels, int nnodes,
                                        int nranks) {
  if (proto == kProtoLL) return ProtoLL::max_chunk_bytes(buff_bytes);
  if (proto == kProtoSimple) return ProtoSimpleOne::max_chunk_bytes(buff_bytes);
  size_t chunk = ProtoLL128::max_chunk_bytes(buff_bytes);
  int log2n = 0;
  while ((2 << log2n) <= nnodes) ++log2n;
  const double ppn = nranks / static_cast<double>(nnodes > 0 ? nnodes : 1);
  const double nsteps = 1 + log2n + 0.1 * ppn;
  const size_t per = static_cast<size_t>(nchannels > 0 ? nchannels : 1);
  const size_t grain = ProtoLL128::kGrainBytes;
  while (static_cast<double>(bytes / (per * chunk)) < nsteps * 64 / ppn && chunk > 131072) chunk /= 2;
  while (static_cast<double>(bytes / (per * chunk)) < nsteps * 16 / ppn && chunk > 32768) chunk /= 2;
  return chunk / grain * grain > 0 ? chunk / grain * grain : grain;
}

// Runs channel `channel` of a tree all_reduce on this rank with protocol w.proto: `tree` is this rank's
// place in the channel's tree, `conns` that protocol's connections to its parent and children. Returns
// false if the executor aborted.
template <typename T, typename Exec>
CCLAB_HD bool run_tree_channel(Exec& exec, const CollWork& w, const TreeLinks& tree, const TreeConns& conns,
                               int channel) {
  const RedOp<T> op(w.redop);
  if (w.nranks == 1) {
    const Range r = channel_range(w.count, channel, w.nchannels, ProtoSimpleRing::kGrainBytes / sizeof(T));
    exec.reduce_copy(op, static_cast<T*>(w.recv) + r.lo, static_cast<T*>(nullptr), static_cast<const T*>(nullptr),
                     static_cast<const T*>(w.send) + r.lo, r.size(), true, true);
    return true;
  }
  if (w.proto == kProtoLL) return tree_all_reduce<T, ProtoLL>(exec, op, w, tree, conns, channel);
  if (w.proto == kProtoLL128) return tree_all_reduce<T, ProtoLL128>(exec, op, w, tree, conns, channel);
  return tree_all_reduce<T, ProtoSimpleOne>(exec, op, w, tree, conns, channel);
}

}  // namespace cclab
