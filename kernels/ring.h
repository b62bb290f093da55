// kernels/ring.h - the ring schedules: one function per collective, run by every rank on every
// channel, written once for every executor (host threads, CUDA blocks, SimGrid actors).
//
// A channel owns a contiguous range of the buffer (channel_range). Inside it, the ring walks in
// loops of nranks chunks; chunk j of a loop belongs to rank ring.ranks[...] as in NCCL's runRing.
// Schedules know ranks, offsets and counts -- never threads, flags, sockets or simulated time.
#pragma once

#include <stddef.h>

#include "kernels/platform.h"
#include "kernels/primitives.h"
#include "kernels/work.h"

namespace cclab {

// Ring all_reduce (NCCL's runRing): for each loop of nranks chunks
//   step 0:            send my chunk (ring.ranks[nranks-1]'s index) to next
//   steps 1..k-2:      receive, reduce with my input, send on
//   step k-1:          receive, reduce, write the final result and send it on
//   steps k..2k-3:     receive the final result, copy it out and send it on
//   step 2k-2:         receive the last final chunk
template <typename T, typename Proto, typename Exec>
CCLAB_HD void ring_all_reduce(Primitives<T, Proto, Exec>& p, const CollWork& w, const RingView& ring, int channel) {
  const size_t grain = Proto::kGrainBytes / sizeof(T);
  const Range r = channel_range(w.count, channel, w.nchannels, grain);
  const size_t chunk = w.chunk_bytes / sizeof(T);
  const int k = ring.nranks;
  const size_t loop = static_cast<size_t>(k) * chunk;
  for (size_t base = 0; base < r.size() && !p.aborted(); base += loop) {
    size_t real = round_up(div_up(min_sz(loop, r.size() - base), static_cast<size_t>(k)), grain);
    if (real > chunk) real = chunk;
    // Element offset and length of chunk `c` of this loop (ranks own chunks by ring position).
    auto off = [&](int c) { return r.lo + base + static_cast<size_t>(c) * real; };
    auto len = [&](int c) {
      size_t o = base + static_cast<size_t>(c) * real;
      return o < r.size() ? min_sz(real, r.size() - o) : static_cast<size_t>(0);
    };
    int c = ring.ranks[k - 1];
    p.send(off(c), len(c));
    for (int j = 2; j < k; ++j) {
      c = ring.ranks[k - j];
      p.recv_reduce_send(off(c), len(c));
    }
    c = ring.ranks[0];
    p.recv_reduce_copy_send(off(c), off(c), len(c), true);
    for (int j = 1; j < k - 1; ++j) {
      c = ring.ranks[k - j];
      p.recv_copy_send(off(c), len(c));
    }
    c = ring.ranks[1];
    p.recv(off(c), len(c));
  }
}

// Ring all_gather: rank r's block is output[r*count ...]. My block goes first (copied from the
// input unless in place), then every other rank's block passes through.
template <typename T, typename Proto, typename Exec>
CCLAB_HD void ring_all_gather(Primitives<T, Proto, Exec>& p, const CollWork& w, const RingView& ring, int channel,
                              bool in_place) {
  const size_t grain = Proto::kGrainBytes / sizeof(T);
  const Range r = channel_range(w.count, channel, w.nchannels, grain);
  const size_t chunk = w.chunk_bytes / sizeof(T);
  const int k = ring.nranks;
  for (size_t base = 0; base < r.size() && !p.aborted(); base += chunk) {
    const size_t n = min_sz(chunk, r.size() - base);
    const size_t o = r.lo + base;
    auto block = [&](int rank) { return static_cast<size_t>(rank) * w.count + o; };
    if (in_place)
      p.send(o, n);  // the input already sits at output + me*count
    else
      p.copy_send(o, block(ring.me()), n);
    for (int j = 1; j < k - 1; ++j) p.recv_copy_send(block(ring.ranks[k - j]), n);
    p.recv(block(ring.ranks[1]), n);
  }
}

// Ring reduce_scatter: block b of the input is reduced across ranks into rank b's output. The
// partial sum of block ranks[k-1] starts here and ends, complete, at that rank.
template <typename T, typename Proto, typename Exec>
CCLAB_HD void ring_reduce_scatter(Primitives<T, Proto, Exec>& p, const CollWork& w, const RingView& ring,
                                  int channel) {
  const size_t grain = Proto::kGrainBytes / sizeof(T);
  const Range r = channel_range(w.count, channel, w.nchannels, grain);
  const size_t chunk = w.chunk_bytes / sizeof(T);
  const int k = ring.nranks;
  for (size_t base = 0; base < r.size() && !p.aborted(); base += chunk) {
    const size_t n = min_sz(chunk, r.size() - base);
    const size_t o = r.lo + base;
    auto block = [&](int rank) { return static_cast<size_t>(rank) * w.count + o; };
    p.send(block(ring.ranks[k - 1]), n);
    for (int j = 2; j < k; ++j) p.recv_reduce_send(block(ring.ranks[k - j]), n);
    p.recv_reduce_copy(block(ring.me()), o, n, true);
  }
}

// Ring broadcast: data leaves the root and flows round the ring; the rank before the root only
// receives.
template <typename T, typename Proto, typename Exec>
CCLAB_HD void ring_broadcast(Primitives<T, Proto, Exec>& p, const CollWork& w, const RingView& ring, int channel) {
  const size_t grain = Proto::kGrainBytes / sizeof(T);
  const Range r = channel_range(w.count, channel, w.nchannels, grain);
  const size_t chunk = w.chunk_bytes / sizeof(T);
  for (size_t base = 0; base < r.size() && !p.aborted(); base += chunk) {
    const size_t n = min_sz(chunk, r.size() - base);
    const size_t o = r.lo + base;
    if (ring.me() == w.root)
      p.copy_send(o, o, n);  // in place, the copy is skipped (input == output)
    else if (ring.next() == w.root)
      p.recv(o, n);
    else
      p.recv_copy_send(o, n);
  }
}

// Ring reduce: the rank after the root starts, every rank adds its input, the root finishes.
template <typename T, typename Proto, typename Exec>
CCLAB_HD void ring_reduce(Primitives<T, Proto, Exec>& p, const CollWork& w, const RingView& ring, int channel) {
  const size_t grain = Proto::kGrainBytes / sizeof(T);
  const Range r = channel_range(w.count, channel, w.nchannels, grain);
  const size_t chunk = w.chunk_bytes / sizeof(T);
  for (size_t base = 0; base < r.size() && !p.aborted(); base += chunk) {
    const size_t n = min_sz(chunk, r.size() - base);
    const size_t o = r.lo + base;
    if (ring.prev() == w.root)
      p.send(o, n);
    else if (ring.me() == w.root)
      p.recv_reduce_copy(o, o, n, true);
    else
      p.recv_reduce_send(o, n);
  }
}

}  // namespace cclab
