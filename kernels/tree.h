// kernels/tree.h - the tree all_reduce schedule (NCCL's runTreeUpDown, device/all_reduce.h): written
// once for every executor, like ring.h.
//
// Each channel works on one of the two trees of the double binary tree (kernels/trees.h): channel c of
// nch uses tree 0 when 2c < nch and tree 1 otherwise (NCCL duplicates the channels and gives the
// copies the second tree), so each half of the data travels over different links. The channel's share
// of the buffer (channel_range) is processed in chunks, in two phases:
//
//   reduce-up:       a leaf sends its chunk to its parent; an interior rank receives its children's
//                    partial sums, adds its own input and sends the result up (recvReduceSend, fan-in
//                    of up to 3); the root adds its children's sums to its input and writes the final
//                    value, post op included (recvReduceCopy).
//   broadcast-down:  the root sends the result from its output; an interior rank receives it, writes
//                    it to its output and forwards it to every child (recvCopySend, fan-out of up to 3);
//                    a leaf receives it (recv).
//
//            reduce-up                    broadcast-down
//               [0]  root: out = in0+s4      [0] --> 4
//                ^                                   |
//               [4]  s4 = in4+s2+s6       2 <-- [4] --> 6
//              ^   ^                      ^            ^
//            [2]   [6]                  1, 3         5, 7
//           ^   ^  ^   ^
//           1   3  5   7    (btree over 8 ranks; leaves send their input)
//
// The whole reduction finishes before the broadcast starts (NCCL's UpDown variant; its Split variant
// runs the two phases on two halves of the thread block at once). Both phases touch the parent link in
// opposite directions, so they use different connections and never wait on each other.
#pragma once

#include <stddef.h>

#include "kernels/platform.h"
#include "kernels/primitives.h"
#include "kernels/trees.h"
#include "kernels/work.h"

namespace cclab {

// Which tree (0 or 1) channel `c` of `nch` runs.
CCLAB_HD inline int tree_of_channel(int c, int nch) { return nch > 1 && 2 * c >= nch ? 1 : 0; }

// The connections one rank uses on one channel's tree: to and from its parent, to and from each child
// (down[i] pairs with TreeLinks::down[i]); nullptr where there is no such peer.
struct TreeConns {
  ConnInfo* up_recv;
  ConnInfo* up_send;
  ConnInfo* down_recv[kMaxFan];
  ConnInfo* down_send[kMaxFan];
  int ndown;
};

template <typename T, typename Proto, typename Exec>
CCLAB_HD bool tree_all_reduce(Exec& exec, const RedOp<T>& op, const CollWork& w, const TreeLinks& tree,
                              const TreeConns& conns, int channel) {
  const T* in = static_cast<const T*>(w.send);
  T* out = static_cast<T*>(w.recv);
  const size_t grain = Proto::kGrainBytes / sizeof(T) > 0 ? Proto::kGrainBytes / sizeof(T) : 1;
  const Range r = channel_range(w.count, channel, w.nchannels, grain);
  size_t chunk = w.chunk_bytes / sizeof(T);
  chunk = chunk / grain * grain;
  if (chunk == 0) chunk = grain;
  const bool root = tree.up < 0;
  const bool leaf = conns.ndown == 0;
  {
    ConnInfo* up_send = conns.up_send;
    Primitives<T, Proto, Exec> p(exec, op, conns.down_recv, conns.ndown, &up_send, root ? 0 : 1, in, out, w.rank,
                                 channel, w.coll, w.op_count);
    for (size_t o = 0; o < r.size() && !p.aborted(); o += chunk) {
      const size_t off = r.lo + o, n = min_sz(chunk, r.size() - o);
      if (root)
        p.recv_reduce_copy(off, off, n, true);
      else if (leaf)
        p.send(off, n);
      else
        p.recv_reduce_send(off, n);
    }
    if (p.aborted()) return false;
  }
  {
    ConnInfo* up_recv = conns.up_recv;
    Primitives<T, Proto, Exec> p(exec, op, &up_recv, root ? 0 : 1, conns.down_send, conns.ndown, out, out, w.rank,
                                 channel, w.coll, w.op_count);
    for (size_t o = 0; o < r.size() && !p.aborted(); o += chunk) {
      const size_t off = r.lo + o, n = min_sz(chunk, r.size() - o);
      if (root)
        p.send_from_output(off, n);
      else if (leaf)
        p.recv(off, n);
      else
        p.recv_copy_send(off, n);
    }
    return !p.aborted();
  }
}

}  // namespace cclab
