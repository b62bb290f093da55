// kernels/p2p.h - point-to-point schedules: a send streams its buffer into the peer's FIFO chunk by
// chunk; the matching receive drains it. AlltoAll, Gather and Scatter are built from these (as NCCL
// expands them into send/recv tasks).
#pragma once

#include <stddef.h>

#include "kernels/platform.h"
#include "kernels/primitives.h"
#include "kernels/protocols.h"
#include "kernels/work.h"

namespace cclab {

// One send or receive of `bytes` bytes on one connection.
struct P2pWork {
  void* buff;        // source (send) or destination (recv)
  size_t bytes;
  int peer;
  int rank;
  uint64_t op_count;
};

// Bytes a point-to-point chunk carries: one FIFO slot.
CCLAB_HD inline size_t p2p_chunk_bytes(int buff_bytes) { return ProtoSimpleOne::max_chunk_bytes(buff_bytes); }

// Sends w.bytes to w.peer through `send`. Data moves as bytes (no reduction), so the element type is
// uint8_t whatever the user's type. Returns false if aborted.
template <typename Exec>
CCLAB_HD bool run_p2p_send(Exec& exec, const P2pWork& w, int channel, ConnInfo* send) {
  const RedOp<uint8_t> op(RedOpArg{RedOpKind::kSum, 0, 1});
  Primitives<uint8_t, ProtoSimpleOne, Exec> p(exec, op, nullptr, send, static_cast<const uint8_t*>(w.buff), nullptr,
                                             w.rank, channel, CollKind::kSendRecv, w.op_count);
  const size_t chunk = p2p_chunk_bytes(send->step_bytes * kNcclSteps);
  for (size_t off = 0; off < w.bytes && !p.aborted(); off += chunk) p.send(off, min_sz(chunk, w.bytes - off));
  return !p.aborted();
}

// Receives w.bytes from w.peer through `recv` into w.buff.
template <typename Exec>
CCLAB_HD bool run_p2p_recv(Exec& exec, const P2pWork& w, int channel, ConnInfo* recv) {
  const RedOp<uint8_t> op(RedOpArg{RedOpKind::kSum, 0, 1});
  Primitives<uint8_t, ProtoSimpleOne, Exec> p(exec, op, recv, nullptr, nullptr, static_cast<uint8_t*>(w.buff),
                                             w.rank, channel, CollKind::kSendRecv, w.op_count);
  const size_t chunk = p2p_chunk_bytes(recv->step_bytes * kNcclSteps);
  for (size_t off = 0; off < w.bytes && !p.aborted(); off += chunk) p.recv(off, min_sz(chunk, w.bytes - off));
  return !p.aborted();
}

}  // namespace cclab
