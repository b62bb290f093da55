// kernels/trees.h - NCCL's double binary tree (graph/trees.cc, the TREE pattern of connect.cc) as pure
// functions of (count, index): no allocation, no containers, so the host executor, the simulator and a
// CUDA kernel compute the same links from the same numbers.
//
// Binary tree over n nodes (btree, NCCL's ncclGetBtree), rooted at 0. For r > 0 with lowest set bit b:
//   parent   = (r ^ b) | (b << 1), or r ^ b when that is >= n
//   children = r - b/2 and r + b/2; while r + l >= n the offset l of the second child halves (l = 0: none)
//   rank 0   = one child: the highest power of two below n (none for n == 1)
// Odd ranks (b == 1) are leaves. Example, n = 8 and n = 6 (depth on the right):
//
//        0                    0             0
//        |                    |
//        4                    4             1
//      /   \                /   \           .
//     2     6              2     5          2
//    / \   / \            / \              .
//   1   3 5   7          1   3              3
//
// Double tree (dtree, NCCL's ncclGetDtree): tree 0 is btree; tree 1 is btree relabelled so that the
// leaves of one tree carry the interior of the other and each half of the data uses different links:
//   n even: mirror, rank r plays btree rank n-1-r  (tree-1 root n-1)
//   n odd:  shift,  rank r plays btree rank (r-1) mod n  (tree-1 root 1; root 0 when n == 1)
// For even n every rank is interior in at most one tree. For odd n >= 3 rank 0 is the one exception:
// tree 0's root (one child) and the shifted image of btree rank n-1, which has a child.
// Both trees have depth exactly ceil(log2(n)) edges: the root's child 2^(K-1), K = ceil(log2(n)),
// leads a subtree whose lowest set bits halve at every level, and the path 2^(K-1), 2^(K-1) - 2^(K-2),
// ..., 1 always exists because first children r - b/2 are never out of range.
//
// Full double tree over ranks (node_tree_with_chain, NCCL's TREE pattern): the dtree is built over
// nodes; inside a node the ranks form a chain local 0 -> local 1 -> ... -> local ppn-1, and local 0 is
// the node head: it is both the rank that connects up to the parent node and the rank child nodes
// connect to (NCCL's treeToParent = treeToChild0 = treeToChild1 = intra[0]). Both trees use the same
// chain, only the inter-node links differ. Ranks are node-major: rank = node * ppn + local.
// Example, 3 nodes x 3 ranks, tree 0 (node tree 0 -> 2 -> 1):
//
//   node 0:  [0] -> 1 -> 2              [h] = head; down order: intra child first, then the
//             |                               inter-node children in btree order, as NCCL's
//   node 2:  [6] -> 7 -> 8                    setTreeDown fills the first free slot after the
//             |                               intra-node link
//   node 1:  [3] -> 4 -> 5
//
// Depth = (ppn - 1) + depth of the node tree; arity <= 3 (one intra child, two inter-node children).
#pragma once

#include "kernels/platform.h"

namespace cclab {

// One rank's links in one tree. down[0..ndown-1] are the children, packed; unused slots and a missing
// parent are -1. Three slots because a node head has up to one intra-node and two inter-node children.
struct TreeLinks {
  int up;
  int down[3];
  int ndown;
};

namespace trees_detail {

CCLAB_HD inline void clear(TreeLinks* t) {
  t->up = -1;
  t->down[0] = t->down[1] = t->down[2] = -1;
  t->ndown = 0;
}

CCLAB_HD inline void add_down(TreeLinks* t, int d) {
  if (d >= 0 && t->ndown < 3) t->down[t->ndown++] = d;
}

// Applies a relabelling x -> f(x) to every link of t (f maps btree ranks to real ranks).
template <typename F>
CCLAB_HD inline void relabel(TreeLinks* t, F f) {
  if (t->up >= 0) t->up = f(t->up);
  for (int i = 0; i < t->ndown; ++i) t->down[i] = f(t->down[i]);
}

struct Mirror {
  int n;
  CCLAB_HD int operator()(int x) const { return n - 1 - x; }
};
struct ShiftUp {
  int n;
  CCLAB_HD int operator()(int x) const { return (x + 1) % n; }
};

}  // namespace trees_detail

// NCCL's ncclGetBtree. Children are listed smaller first (NCCL's d0, d1); rank 0's single child is
// down[0] here although NCCL stores it in its d1 slot -- that slot only matters for SPLIT_TREE.
CCLAB_HD inline void btree(int nranks, int rank, TreeLinks* out) {
  trees_detail::clear(out);
  if (nranks <= 1 || rank < 0 || rank >= nranks) return;
  int bit = 1;
  while (bit < nranks && !(bit & rank)) bit <<= 1;
  if (rank == 0) {
    // bit is now the smallest power of two >= nranks; its half is the largest one below nranks.
    trees_detail::add_down(out, bit >> 1);
    return;
  }
  int up = (rank ^ bit) | (bit << 1);
  if (up >= nranks) up = rank ^ bit;
  out->up = up;
  int low = bit >> 1;
  if (low == 0) return;  // odd ranks are leaves
  trees_detail::add_down(out, rank - low);
  // The second child shrinks toward rank while out of range; the node it lands on has rank as its
  // parent because the larger offset's node (where it would otherwise hang) does not exist.
  while (low > 0 && rank + low >= nranks) low >>= 1;
  if (low > 0) trees_detail::add_down(out, rank + low);
}

// The root of tree `tree` (0 or 1) of the double tree over nranks.
CCLAB_HD inline int dtree_root(int nranks, int tree) {
  if (tree == 0 || nranks <= 1) return 0;
  return nranks % 2 == 0 ? nranks - 1 : 1;
}

// NCCL's ncclGetDtree: t0 = btree; t1 = mirror (even nranks) or shift by one (odd nranks) of btree.
CCLAB_HD inline void dtree(int nranks, int rank, TreeLinks* t0, TreeLinks* t1) {
  btree(nranks, rank, t0);
  trees_detail::clear(t1);
  if (nranks <= 0 || rank < 0 || rank >= nranks) return;
  if (nranks % 2 == 1) {
    btree(nranks, (rank - 1 + nranks) % nranks, t1);
    trees_detail::relabel(t1, trees_detail::ShiftUp{nranks});
  } else {
    btree(nranks, nranks - 1 - rank, t1);
    trees_detail::relabel(t1, trees_detail::Mirror{nranks});
  }
}

// One rank's links in tree `tree` (0 or 1) of the full double tree over nnodes * ranks_per_node ranks
// (node-major numbering, TREE pattern: see the drawing at the top). Out-of-range input gives no links.
CCLAB_HD inline void node_tree_with_chain(int nnodes, int ranks_per_node, int rank, int tree, TreeLinks* out) {
  trees_detail::clear(out);
  const int ppn = ranks_per_node;
  if (nnodes <= 0 || ppn <= 0 || rank < 0 || rank >= nnodes * ppn || (tree != 0 && tree != 1)) return;
  const int node = rank / ppn;
  const int local = rank % ppn;
  // The chain link comes first among the children, as NCCL's intra down[0] is set before the
  // inter-node links are appended; only the head (local 0) has inter-node links.
  if (local > 0) out->up = rank - 1;
  if (local < ppn - 1) trees_detail::add_down(out, rank + 1);
  if (local != 0) return;
  TreeLinks n0, n1;
  dtree(nnodes, node, &n0, &n1);
  const TreeLinks& nt = tree == 0 ? n0 : n1;
  if (nt.up >= 0) out->up = nt.up * ppn;  // the parent node's head
  for (int i = 0; i < nt.ndown; ++i) trees_detail::add_down(out, nt.down[i] * ppn);
}

}  // namespace cclab
