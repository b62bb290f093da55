// kernels/custom_block.h - a custom algorithm (kernels/custom.h) on the block executor: the body of the
// CUDA backend's kernel for an algorithm built into it (cmake -DCCLAB_CUSTOM_ALGOS=..., the generated .cu
// files include kernels/cuda/custom_kernel.cuh, which calls run_custom_block over DeviceBlock). Every lane
// of the block runs the schedule's run() on the same PeerPrims as the host executors - the same primitives,
// chunking and credits - over BlockExec instead of an ExecVTable. tests/runtime/block_exec_test.cc runs it
// over host threads playing a block and compares the bytes with the host executor's.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "kernels/block_exec.h"
#include "kernels/block_kernel.h"
#include "kernels/custom.h"
#include "kernels/platform.h"

namespace cclab {

// PeerPrims' connections on a block (RankConns' counterpart): the channel's table of declared peers
// (BlockWork::custom_peers), searched by rank. As run_block does for a ring's two connections, every lane
// steps its own copies of a call's connections; when the call ends lane 0 writes their steps back between
// two barriers, so the next call, whichever connections it uses, starts where this one stopped. A call
// to an undeclared peer stops the block with kBlockBadPeer in its status (BlockExec::bad_peer).
template <class Block>
class BlockPeerConns {
 public:
  CCLAB_HD BlockPeerConns(Block& b, BlockExec<Block>& ex, const CustomPeerConn* peers, int npeers)
      : b_(b), ex_(ex), peers_(peers), npeers_(npeers) {}
  CCLAB_HD ConnInfo* send(int peer) const {
    const CustomPeerConn* e = find(peer);
    return e != nullptr ? e->send : nullptr;
  }
  CCLAB_HD ConnInfo* recv(int peer) const {
    const CustomPeerConn* e = find(peer);
    return e != nullptr ? e->recv : nullptr;
  }
  CCLAB_HD void begin(ConnInfo** r, ConnInfo** s) {
    orig_[0] = *r;
    orig_[1] = *s;
    if (*r != nullptr) {
      local_[0] = **r;
      *r = &local_[0];
    }
    if (*s != nullptr) {
      local_[1] = **s;
      *s = &local_[1];
    }
  }
  CCLAB_HD void end() {
    b_.sync();
    if (b_.tid() == 0)
      for (int i = 0; i < 2; ++i)
        if (orig_[i] != nullptr) orig_[i]->step = local_[i].step;
    b_.sync();
  }
  // A local copy's lanes each wrote their share of the output: all of it is there before the next call
  // reads it (possibly other lanes' packs).
  CCLAB_HD void local_done() { b_.sync(); }
  template <typename Exec>
  CCLAB_HD void bad_peer(Exec&, const WaitSite& site, int) {
    ex_.bad_peer(site);
  }

 private:
  CCLAB_HD const CustomPeerConn* find(int peer) const {
    for (int i = 0; i < npeers_; ++i)
      if (peers_[i].peer == peer) return &peers_[i];
    return nullptr;
  }
  Block& b_;
  BlockExec<Block>& ex_;
  const CustomPeerConn* peers_;
  int npeers_;
  ConnInfo local_[2];
  ConnInfo* orig_[2] = {nullptr, nullptr};
};

// Runs custom algorithm Algo's schedule for one rank's channel (w.kind == kBlockCustom) with element type
// T on this block. Every lane calls it. Returns true if the block finished without aborting.
template <class Algo, typename T, class Block>
CCLAB_HD bool run_custom_block(Block& b, const BlockWork& w) {
  BlockExec<Block> ex(b, block_exec_config(w));
  BlockPeerConns<Block> conns(b, ex, w.custom_peers, w.custom_npeers);
  PeerPrims<T, BlockExec<Block>, BlockPeerConns<Block>> p(ex, w.coll, w.channel, w.custom_topo, conns);
  Algo::run(p);
  return ex.finish(!p.aborted());
}

}  // namespace cclab
