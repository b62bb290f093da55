// kernels/p2p.h - point-to-point schedules: a send streams its buffer into the peer's FIFO chunk by
// chunk; the matching receive drains it. AlltoAll, Gather and Scatter are built from these (as NCCL
// expands them into send/recv tasks: p2p_pattern below). One send or receive is split into parts on
// several channels, as NCCL 2.28.9 splits it (p2p_nparts, p2p_part_bounds); every executor runs the
// parts it is given, so the split is the same on the host, in the simulator and on GPUs.
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
  size_t chunk = 0;  // bytes per FIFO step (NCCL's p2pChunkSize); 0 or more than a slot: one slot
  size_t total = 0;  // bytes of the whole send or receive this part belongs to (0: `bytes`), which
                     // every slice records and the receiver checks (ConnFifoHeader::xfers)
};

// Bytes a point-to-point chunk carries: one FIFO slot, or `chunk` when that is smaller.
CCLAB_HD inline size_t p2p_chunk_bytes(int buff_bytes, size_t chunk = 0) {
  const size_t slot = ProtoSimpleOne::max_chunk_bytes(buff_bytes);
  return chunk > 0 && chunk < slot ? chunk : slot;
}

// ---- How NCCL 2.28.9 spreads point-to-point work over channels -----------------------------------
// A communicator's point-to-point channels: NCCL's comm->p2pnChannels, p2pnChannelsPerPeer and
// p2pChunkSize (src/graph/paths.cc ncclTopoComputeP2pChannels, src/init.cc; graph/p2p_channels.h
// computes them from the topology).
struct P2pChannels {
  int nchannels = 1;        // p2pnChannels, a power of two: the channels point-to-point work may use
  int per_peer = 1;         // p2pnChannelsPerPeer, a power of two: the most parts one send is cut into
  size_t chunk_bytes = 0;   // p2pChunkSize: 512 KiB within one NVLink machine, else 128 KiB (0: a slot)
  bool multi_node = false;  // comm->nNodes > 1: parts of 1/2 to 1 chunk (one machine: 1/8 to 32)
  int group_size = 0;       // multi_node: p2pSchedGroupSize, the ranks of a machine the schedule takes
                            // together (graph/p2p_channels.h p2p_schedule)
};

// Works one channel's block takes at once (NCCL_MAX_DEV_WORK_P2P_PER_BATCH): on several machines the
// rounds of one schedule group share a channel base, up to this many per base.
constexpr int kP2pWorksPerBatch = 8;

// How many channels (parts) one send or receive of `bytes` runs on: src/enqueue.cc addP2pToPlan's
// nChannels with the Simple protocol. nChannelsMax = per_peer; nChannelsMin halves it until a part per
// peer fits the p2p channels (scheduleP2pTasksToPlan); then as many parts of at least minPartSize as
// the bytes fill, up to nChannelsMin, doubled while a part exceeds maxPartSize.
CCLAB_HD inline int p2p_nparts(const P2pChannels& pc, int nranks, size_t bytes) {
  const int nmax = pc.per_peer > 0 ? pc.per_peer : 1;
  int nmin = nmax;
  while (nmin * nranks > pc.nchannels && nmin > 1) nmin /= 2;
  if (bytes == 0 || pc.chunk_bytes == 0) return 1;
  const size_t min_part = pc.multi_node ? pc.chunk_bytes / 2 : pc.chunk_bytes / 8;
  const size_t max_part = pc.multi_node ? pc.chunk_bytes : pc.chunk_bytes * 32;
  int n = static_cast<int>(min_sz(static_cast<size_t>(nmin), div_up(bytes, min_part > 0 ? min_part : 1)));
  size_t part = div_up(bytes, static_cast<size_t>(n));
  if (part < min_part) part = min_part;
  while (part > max_part && n <= nmax / 2) {
    n *= 2;
    part = div_up(bytes, static_cast<size_t>(n));
  }
  return n;
}

// Part `part` of `nparts` of a transfer of `bytes`: [*beg, *end), parts of ceil(bytes / nparts) rounded
// up to 4 KiB (src/include/device.h ncclP2pPartBounds); trailing parts may be empty.
CCLAB_HD inline void p2p_part_bounds(int nparts, int part, size_t bytes, size_t* beg, size_t* end) {
  const size_t part_bytes = round_up(div_up(bytes, static_cast<size_t>(nparts)), size_t{4} << 10);
  *beg = min_sz(static_cast<size_t>(part) * part_bytes, bytes);
  *end = min_sz(static_cast<size_t>(part + 1) * part_bytes, bytes);
}

// The channel of part `part` of the work of schedule round `round` (graph/p2p_channels.h p2p_schedule:
// in round r a rank sends to its schedule's send_to[r] and receives from recv_from[r]). NCCL's
// ncclP2pChannelBaseForRound and ncclP2pChannelForPart: on one machine the base is the round; on several
// the rounds of a schedule group (group_size of them) share a base, kP2pWorksPerBatch rounds each; the
// base's bits are reversed over log2(nchannels) bits, so that consecutive bases start far apart, and
// part j goes on base + j.
CCLAB_HD inline int p2p_channel_for_part(const P2pChannels& pc, int round, int part) {
  int bits = 0;
  while ((1 << bits) < pc.nchannels) ++bits;
  int base = round;
  if (pc.multi_node && pc.group_size > 0)
    base = round / pc.group_size * ((pc.group_size + kP2pWorksPerBatch - 1) / kP2pWorksPerBatch) +
           round % pc.group_size / kP2pWorksPerBatch;
  int rev = 0;
  for (int b = 0; b < bits; ++b)
    if (base & (1 << b)) rev |= 1 << (bits - 1 - b);
  return (rev + part) & (pc.nchannels - 1);
}

// The point-to-point collectives, as NCCL's ncclAlltoAll / ncclGather / ncclScatter (src/collectives.cc)
// and nccl-tests' sendrecv (a ring shift) issue them: f(send, peer, offset) for each send or receive
// of `bytes` bytes of rank `rank`, in issue order; `offset` is its place in the send or receive
// buffer. The runtime's API and `cclab sim` both take them from here.
enum class P2pPattern : int { kNone = 0, kSendRecv, kAllToAll, kGather, kScatter };
template <typename F>
inline void p2p_pattern(P2pPattern p, int rank, int nranks, int root, size_t bytes, F&& f) {
  switch (p) {
    case P2pPattern::kSendRecv:
      f(true, (rank + 1) % nranks, size_t{0});
      f(false, (rank - 1 + nranks) % nranks, size_t{0});
      break;
    case P2pPattern::kAllToAll:
      for (int q = 0; q < nranks; ++q) {
        f(true, q, static_cast<size_t>(q) * bytes);
        f(false, q, static_cast<size_t>(q) * bytes);
      }
      break;
    case P2pPattern::kGather:
      f(true, root, size_t{0});
      if (rank == root)
        for (int q = 0; q < nranks; ++q) f(false, q, static_cast<size_t>(q) * bytes);
      break;
    case P2pPattern::kScatter:
      if (rank == root)
        for (int q = 0; q < nranks; ++q) f(true, q, static_cast<size_t>(q) * bytes);
      f(false, root, size_t{0});
      break;
    case P2pPattern::kNone: break;
  }
}

// Sends w.bytes to w.peer through `send`. Data moves as bytes (no reduction), so the element type is
// uint8_t whatever the user's type. Returns false if aborted.
template <typename Exec>
CCLAB_HD bool run_p2p_send(Exec& exec, const P2pWork& w, int channel, ConnInfo* send) {
  const RedOp<uint8_t> op(RedOpArg{RedOpKind::kSum, 0, 1});
  Primitives<uint8_t, ProtoSimpleOne, Exec> p(exec, op, nullptr, send, static_cast<const uint8_t*>(w.buff), nullptr,
                                             w.rank, channel, CollKind::kSendRecv, w.op_count);
  p.set_transfer(w.total != 0 ? w.total : w.bytes);
  const size_t chunk = p2p_chunk_bytes(send->step_bytes * kNcclSteps, w.chunk);
  for (size_t off = 0; off < w.bytes && !p.aborted(); off += chunk) p.send(off, min_sz(chunk, w.bytes - off));
  return !p.aborted();
}

// Receives w.bytes from w.peer through `recv` into w.buff.
template <typename Exec>
CCLAB_HD bool run_p2p_recv(Exec& exec, const P2pWork& w, int channel, ConnInfo* recv) {
  const RedOp<uint8_t> op(RedOpArg{RedOpKind::kSum, 0, 1});
  Primitives<uint8_t, ProtoSimpleOne, Exec> p(exec, op, recv, nullptr, nullptr, static_cast<uint8_t*>(w.buff),
                                             w.rank, channel, CollKind::kSendRecv, w.op_count);
  p.set_transfer(w.total != 0 ? w.total : w.bytes);
  const size_t chunk = p2p_chunk_bytes(recv->step_bytes * kNcclSteps, w.chunk);
  for (size_t off = 0; off < w.bytes && !p.aborted(); off += chunk) p.recv(off, min_sz(chunk, w.bytes - off));
  return !p.aborted();
}

}  // namespace cclab
