/* labs/04-ring-vs-tree/double_tree.c - lab 4: NCCL's double binary tree, over nodes. YOU EDIT THIS FILE.
 *
 * lab_double_tree (double_tree.h) fills one node's parent and (up to two) children in tree 0 and in
 * tree 1. The grader checks, for every nnodes from 1 to 64 and 100, 255, 256 (README.md, "How you are
 * graded"):
 *   - each tree is a tree over all nnodes nodes: one root, every other node's parent in range,
 *     parent and child links that agree, no cycles;
 *   - binary: at most 2 children;
 *   - shallow: depth (edges from the root to the deepest node) at most ceil(log2(nnodes)) + 1;
 *   - complementary: a node that is interior (with children) in one tree is a leaf in the other. For an
 *     even nnodes every node; for an odd nnodes one node may be interior in both;
 *   - a reduce up each tree, then a broadcast down, gives every node the sum.
 *
 * As it is, the skeleton builds a CHAIN 0 -> 1 -> 2 -> ... -> nnodes-1 (node 0 the root) and uses the
 * same chain for both trees. It is a tree, but it is nnodes-1 deep (a reduce takes nnodes-1 hops, as
 * slow as a ring's steps) and every middle node is interior in both trees. Replace it:
 *
 * TODO 1. tree0: a balanced binary tree over 0 .. nnodes-1. NCCL's is the in-order tree: read the node
 *         numbers in binary; a node's height in the tree is its lowest set bit. For nnodes = 8:
 *
 *                  0            root: one child, the largest power of two below nnodes
 *                  |
 *                  4            lowest set bit 4: children 4-2 and 4+2
 *                /   \
 *               2     6         lowest set bit 2: children r-1 and r+1
 *              / \   / \
 *             1   3 5   7       odd: leaves
 *
 *         Work out the parent of a node from its lowest set bit, then what to do when nnodes is not a
 *         power of two (a child or a parent number that is >= nnodes does not exist: try nnodes = 6).
 * TODO 2. tree1: the same shape with the nodes renamed so that tree 0's leaves are tree 1's interior.
 *         Odd nodes are tree 0's leaves. When nnodes is even, n-1-r is odd exactly when r is even: let
 *         node r play the part that node n-1-r has in tree 0 (a mirror). When nnodes is odd that does
 *         not work (try it on 3 nodes); shift by one instead: node r plays the part of node (r-1) mod n.
 *         Careful: the links you copy from tree 0 are in tree-0 names; rename them too.
 * TODO 3. nnodes == 1: one node, root of both trees, no children.
 *
 * `cclab lab run 04 --nodes 6` draws the trees this file builds, for any number of nodes. */
#include "double_tree.h"

static void clear(lab_tree_links* t) {
  t->parent = -1;
  t->child[0] = t->child[1] = -1;
}

/* The skeleton's chain: wrong, see above. */
static void chain(int nnodes, int node, lab_tree_links* t) {
  clear(t);
  if (node > 0) t->parent = node - 1;
  if (node + 1 < nnodes) t->child[0] = node + 1;
}

void lab_double_tree(int nnodes, int node, lab_tree_links* tree0, lab_tree_links* tree1) {
  /* TODO 1: tree 0, the balanced binary tree. */
  chain(nnodes, node, tree0);
  /* TODO 2 and 3: tree 1, tree 0 mirrored (even nnodes) or shifted by one (odd nnodes). */
  chain(nnodes, node, tree1);
}
