// kernels/block_kernel.h - the body of the CUDA backend's kernel: one thread block runs one rank's
// channel of one operation (NCCL's one block per channel). The GPU kernel (kernels/cuda/) calls
// run_block over DeviceBlock; tests/runtime/block_exec_test.cc calls it over host threads playing a
// block and compares the bytes with the host executor's. Everything below is the schedules of ring.h,
// tree.h, pat.h and p2p.h through BlockExec (block_exec.h); nothing here is GPU-specific.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <type_traits>

#include "kernels/block_exec.h"
#include "kernels/collectives.h"
#include "kernels/custom.h"
#include "kernels/nvls.h"
#include "kernels/p2p.h"
#include "kernels/pat.h"
#include "kernels/platform.h"
#include "kernels/tree.h"
#include "kernels/trees.h"
#include "kernels/work.h"

namespace cclab {

enum BlockWorkKind : int32_t {
  kBlockRing = 0,      // a ring collective (coll.coll)
  kBlockTree = 1,      // a tree all_reduce
  kBlockP2pSend = 2,   // a send of p2p.bytes (run with T = uint8_t)
  kBlockP2pRecv = 3,   // a receive
  kBlockPat = 4,       // a PAT all_gather / reduce_scatter (kernels/pat.h)
  kBlockNvls = 5,      // an NVLS AllReduce / AllGather / ReduceScatter (coll.coll) over *nvls
  kBlockNvlsTree = 6,  // an NVLS-Tree AllReduce over *nvls and the tree of machines (tree, conn[] as kBlockTree)
  kBlockCustom = 7,    // a custom algorithm built into the kernels (kernels/custom_block.h; not run_block's)
};

// kBlockCustom: one declared peer of this rank and its two connection ends on the block's channel.
struct CustomPeerConn {
  int32_t peer;
  ConnInfo* send;  // this rank -> peer
  ConnInfo* recv;  // peer -> this rank
};

// One block's work. Pointers are in memory the block can reach (device memory on a GPU). Connections
// are read at the start and their step written back at the end, so the next operation on the channel
// continues where this one stopped.
struct BlockWork {
  int32_t kind;  // BlockWorkKind
  int32_t channel;
  CollWork coll;           // kBlockRing / kBlockTree
  const int* ring_ranks;   // kBlockRing: the channel's ring seen from this rank (coll.nranks entries)
  TreeLinks tree;          // kBlockTree: this rank's place in the channel's tree
  P2pWork p2p;             // kBlockP2pSend / kBlockP2pRecv
  NvlsConn* nvls;          // kBlockNvls: this rank's view of the channel's NVLS memory (its step written back)
  // Ring: conn[0] from the previous rank, conn[1] to the next. Tree: conn[0] from the parent, conn[1] to
  // it, conn[2 + i] from child i, conn[5 + i] to child i. P2p: conn[0] (recv) or conn[1] (send).
  ConnInfo* conn[2 + 2 * kMaxFan];
  BlockStatus* status;         // may be null
  StepRecord* records;         // CCLAB_TRACE, or null
  uint64_t record_capacity;
  uint64_t stuck_spins;        // spins before a wait reports itself in status (0: kBlockStuckSpins)
  const PatConns* pat;         // kBlockPat: the channel's connections per dimension (conn[] is unused)
  const CustomPeerConn* custom_peers;  // kBlockCustom: the channel's declared peers (conn[] is unused)
  int32_t custom_npeers;
  CustomTopo custom_topo;              // kBlockCustom: the machine the algorithm sees
};

constexpr int kBlockConns = 2 + 2 * kMaxFan;

// A PAT block: each lane advances its own copy of every distinct connection of w.pat (as run_block does
// for conn[]), lane 0 writes the steps back at the end.
template <typename T, class Block, class Ex>
CCLAB_HD bool run_pat_block(Block& b, Ex& ex, const BlockWork& w) {
  constexpr int kMax = 4 * kMaxPatDims;
  ConnInfo local[kMax];
  ConnInfo* orig[kMax];
  int nlocal = 0;
  auto mine = [&](ConnInfo* c) -> ConnInfo* {
    if (c == nullptr) return nullptr;
    for (int i = 0; i < nlocal; ++i)
      if (orig[i] == c) return &local[i];
    orig[nlocal] = c;
    local[nlocal] = *c;
    return &local[nlocal++];
  };
  PatConns pc;
  pc.ndims = w.pat != nullptr ? w.pat->ndims : 0;
  for (int d = 0; d < pc.ndims && d < kMaxPatDims; ++d) {
    pc.send_down[d] = mine(w.pat->send_down[d]);
    pc.recv_up[d] = mine(w.pat->recv_up[d]);
    pc.send_up[d] = mine(w.pat->send_up[d]);
    pc.recv_down[d] = mine(w.pat->recv_down[d]);
  }
  bool ok = w.pat != nullptr && run_pat_channel<T>(ex, w.coll, pc, w.channel);
  ok = ex.finish(ok);
  if (b.tid() == 0)
    for (int i = 0; i < nlocal; ++i) orig[i]->step = local[i].step;
  return ok;
}

// The block executor's settings of one block's work (its status, step records, stuck report).
CCLAB_HD inline BlockExecConfig block_exec_config(const BlockWork& w) {
  BlockExecConfig cfg;
  cfg.status = w.status;
  cfg.records = w.records;
  cfg.record_capacity = w.record_capacity;
  if (w.stuck_spins != 0) cfg.stuck_spins = w.stuck_spins;
  return cfg;
}

// Runs `w` on this block. Every lane calls it. Returns true if the block finished without aborting.
template <typename T, class Block>
CCLAB_HD bool run_block(Block& b, const BlockWork& w) {
  BlockExec<Block> ex(b, block_exec_config(w));
  // Each lane advances its own copy of the connections (all lanes step alike); lane 0 writes them back.
  ConnInfo local[kBlockConns];
  ConnInfo* c[kBlockConns];
  for (int i = 0; i < kBlockConns; ++i) {
    c[i] = w.conn[i] != nullptr ? &local[i] : nullptr;
    if (w.conn[i] != nullptr) local[i] = *w.conn[i];
  }
  if (w.kind == kBlockPat) return run_pat_block<T>(b, ex, w);
  bool ok = false;
  switch (w.kind) {
    case kBlockRing: {
      const RingView ring{w.ring_ranks, w.coll.nranks};
      ok = run_ring_channel<T>(ex, w.coll, ring, w.channel, c[0], c[1]);
      break;
    }
    case kBlockTree: {
      TreeConns tc{c[0], c[1], {c[2], c[3], c[4]}, {c[5], c[6], c[7]}, w.tree.ndown};
      ok = run_tree_channel<T>(ex, w.coll, w.tree, tc, w.channel);
      break;
    }
    case kBlockNvls: {
      // Each lane advances its own copy of the running step; lane 0 writes it back.
      NvlsConn v = *w.nvls;
      ok = run_nvls_channel<T>(ex, w.coll, v, w.channel);
      b.sync();
      if (b.tid() == 0) {
        w.nvls->step_up = v.step_up;
        w.nvls->step_down = v.step_down;
      }
      break;
    }
    case kBlockNvlsTree: {
      // The machine's NVLS memory as kBlockNvls; the tree links in conn[] as kBlockTree (at most 2 children).
      NvlsConn v = *w.nvls;
      NvlsTreeConns tc;
      tc.up_recv = c[0];
      tc.up_send = c[1];
      tc.ndown = w.tree.ndown < kMaxNvlsTreeArity ? w.tree.ndown : kMaxNvlsTreeArity;
      for (int i = 0; i < tc.ndown; ++i) {
        tc.down_recv[i] = c[2 + i];
        tc.down_send[i] = c[5 + i];
      }
      ok = run_nvls_tree_channel<T>(ex, w.coll, v, tc, w.channel);
      b.sync();
      if (b.tid() == 0) {
        w.nvls->step_up = v.step_up;
        w.nvls->step_down = v.step_down;
      }
      break;
    }
    case kBlockP2pSend:
    case kBlockP2pRecv:
      if constexpr (std::is_same<T, uint8_t>::value) {
        ok = w.kind == kBlockP2pSend ? run_p2p_send(ex, w.p2p, w.channel, c[1]) : run_p2p_recv(ex, w.p2p, w.channel, c[0]);
      }
      break;
    default:
      break;
  }
  ok = ex.finish(ok);
  if (b.tid() == 0)
    for (int i = 0; i < kBlockConns; ++i)
      if (w.conn[i] != nullptr) w.conn[i]->step = local[i].step;
  return ok;
}

}  // namespace cclab
