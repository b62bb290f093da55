/* labs/solutions/04-ring-vs-tree/double_tree.c - the reference solution of lab 4 (NCCL's ncclGetBtree
 * and ncclGetDtree, over nodes). For instructors: delete labs/solutions/ before handing the labs out. */
#include "double_tree.h"

static void clear(lab_tree_links* t) {
  t->parent = -1;
  t->child[0] = t->child[1] = -1;
}

static void add_child(lab_tree_links* t, int c) {
  if (t->child[0] < 0)
    t->child[0] = c;
  else
    t->child[1] = c;
}

/* TODO 1: the in-order binary tree over 0 .. n-1, rooted at 0. */
static void btree(int n, int r, lab_tree_links* t) {
  clear(t);
  if (n <= 1) return; /* TODO 3 */
  int bit = 1;
  while (bit < n && !(bit & r)) bit <<= 1; /* r's lowest set bit (for r == 0: the power of two >= n) */
  if (r == 0) {
    add_child(t, bit >> 1); /* the largest power of two below n */
    return;
  }
  int up = (r ^ bit) | (bit << 1); /* clear the bit, set the next one up ... */
  if (up >= n) up = r ^ bit;       /* ... unless that node does not exist */
  t->parent = up;
  int low = bit >> 1;
  if (low == 0) return; /* odd: a leaf */
  add_child(t, r - low);
  while (low > 0 && r + low >= n) low >>= 1; /* the right child shrinks toward r while out of range */
  if (low > 0) add_child(t, r + low);
}

static int rename_link(int x, int n) {
  if (x < 0) return x;
  return n % 2 == 0 ? n - 1 - x : (x + 1) % n;
}

void lab_double_tree(int nnodes, int node, lab_tree_links* tree0, lab_tree_links* tree1) {
  btree(nnodes, node, tree0);
  /* TODO 2: node plays the part of node n-1-r (even n) or (r-1) mod n (odd n) of tree 0. */
  const int as = nnodes % 2 == 0 ? nnodes - 1 - node : (node - 1 + nnodes) % nnodes;
  btree(nnodes, as, tree1);
  tree1->parent = rename_link(tree1->parent, nnodes);
  tree1->child[0] = rename_link(tree1->child[0], nnodes);
  tree1->child[1] = rename_link(tree1->child[1], nnodes);
}
