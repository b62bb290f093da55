// Tests of kernels/trees.h: NCCL's double binary tree over nodes (btree, dtree) and the full tree over
// ranks with an intra-node chain (node_tree_with_chain). Properties are checked exhaustively for every
// node count 1..1024 (and every rank), plus small cases written out by hand from NCCL's rules.
#include "kernels/trees.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

namespace cclab {
namespace {

int ceil_log2(int n) {
  int k = 0;
  while ((1 << k) < n) ++k;
  return k;
}

// What a walk of one tree found; ok is false (with why) when the links do not form a tree.
struct TreeShape {
  bool ok = true;
  std::string why;
  int root = -1;
  int depth = 0;      // edges on the longest root-to-leaf path
  int max_arity = 0;  // most children of any rank
  std::vector<int> nchildren;
};

// Checks that links(r) for r in [0, n) form one tree: exactly one rank without a parent, every link in
// range and not a self-loop, up and down mutually consistent, and a walk down from the root reaching
// every rank exactly once (so no cycles and no second component).
TreeShape walk(int n, const std::function<TreeLinks(int)>& links) {
  TreeShape s;
  std::vector<TreeLinks> l(n);
  for (int r = 0; r < n; ++r) l[r] = links(r);
  auto fail = [&](const std::string& why) {
    if (s.ok) s.why = why;
    s.ok = false;
  };
  s.nchildren.assign(n, 0);
  for (int r = 0; r < n; ++r) {
    const TreeLinks& t = l[r];
    if (t.ndown < 0 || t.ndown > 3) fail("rank " + std::to_string(r) + " ndown out of range");
    for (int i = t.ndown; i < 3; ++i)
      if (t.down[i] != -1) fail("rank " + std::to_string(r) + " unused down slot not -1");
    s.nchildren[r] = t.ndown;
    if (t.ndown > s.max_arity) s.max_arity = t.ndown;
    if (t.up == -1) {
      if (s.root != -1) fail("two roots: " + std::to_string(s.root) + " and " + std::to_string(r));
      s.root = r;
    } else if (t.up < 0 || t.up >= n || t.up == r) {
      fail("rank " + std::to_string(r) + " bad up " + std::to_string(t.up));
    } else {
      int seen = 0;
      for (int i = 0; i < l[t.up].ndown; ++i) seen += l[t.up].down[i] == r;
      if (seen != 1) fail("rank " + std::to_string(r) + " not listed once by its parent " + std::to_string(t.up));
    }
    for (int i = 0; i < t.ndown; ++i) {
      int c = t.down[i];
      if (c < 0 || c >= n || c == r) {
        fail("rank " + std::to_string(r) + " bad down " + std::to_string(c));
      } else if (l[c].up != r) {
        fail("child " + std::to_string(c) + " of " + std::to_string(r) + " has up " + std::to_string(l[c].up));
      }
    }
  }
  if (!s.ok) return s;
  if (s.root == -1) {
    fail("no root");
    return s;
  }
  std::vector<int> level(n, -1);
  std::vector<int> queue{s.root};
  level[s.root] = 0;
  for (size_t q = 0; q < queue.size(); ++q) {
    int r = queue[q];
    for (int i = 0; i < l[r].ndown; ++i) {
      int c = l[r].down[i];
      if (level[c] != -1) {
        fail("rank " + std::to_string(c) + " reached twice");
        return s;
      }
      level[c] = level[r] + 1;
      if (level[c] > s.depth) s.depth = level[c];
      queue.push_back(c);
    }
  }
  if (static_cast<int>(queue.size()) != n) fail("reached " + std::to_string(queue.size()) + " of " + std::to_string(n));
  return s;
}

TreeLinks dtree_links(int n, int r, int tree) {
  TreeLinks t0, t1;
  dtree(n, r, &t0, &t1);
  return tree == 0 ? t0 : t1;
}

TreeShape walk_dtree(int n, int tree) {
  return walk(n, [&](int r) { return dtree_links(n, r, tree); });
}

// Written-out links of one rank: up and children in order.
struct Expect {
  int up;
  std::vector<int> down;
};

void expect_links(const TreeLinks& t, const Expect& e, const std::string& where) {
  EXPECT_EQ(t.up, e.up) << where;
  ASSERT_EQ(t.ndown, static_cast<int>(e.down.size())) << where;
  for (int i = 0; i < t.ndown; ++i) EXPECT_EQ(t.down[i], e.down[i]) << where << " child " << i;
}

void expect_dtree(int n, const std::vector<Expect>& tree0, const std::vector<Expect>& tree1) {
  ASSERT_EQ(static_cast<int>(tree0.size()), n);
  ASSERT_EQ(static_cast<int>(tree1.size()), n);
  for (int r = 0; r < n; ++r) {
    expect_links(dtree_links(n, r, 0), tree0[r], "n=" + std::to_string(n) + " tree 0 rank " + std::to_string(r));
    expect_links(dtree_links(n, r, 1), tree1[r], "n=" + std::to_string(n) + " tree 1 rank " + std::to_string(r));
  }
}

// ---- hand-checked small cases -------------------------------------------------------------------

TEST(Dtree, OneRankIsAloneInBothTrees) { expect_dtree(1, {{-1, {}}}, {{-1, {}}}); }

TEST(Dtree, TwoRanksMirror) {
  // tree 0: 0 -> 1; tree 1 (mirror): 1 -> 0
  expect_dtree(2, {{-1, {1}}, {0, {}}}, {{1, {}}, {-1, {0}}});
}

TEST(Dtree, ThreeRanksShift) {
  // tree 0: 0 -> 2 -> 1; tree 1 (btree shifted by one): 1 -> 0 -> 2. Rank 0 is interior in both.
  expect_dtree(3, {{-1, {2}}, {2, {}}, {0, {1}}}, {{1, {2}}, {-1, {0}}, {0, {}}});
}

TEST(Dtree, FourRanksMirror) {
  // tree 0: 0 -> 2 -> {1, 3}; tree 1: 3 -> 1 -> {2, 0}
  expect_dtree(4, {{-1, {2}}, {2, {}}, {0, {1, 3}}, {2, {}}}, {{1, {}}, {3, {2, 0}}, {1, {}}, {-1, {1}}});
}

TEST(Dtree, EightRanksMirror) {
  // tree 0: 0 -> 4 -> {2 -> {1, 3}, 6 -> {5, 7}}
  // tree 1: 7 -> 3 -> {5 -> {6, 4}, 1 -> {2, 0}}
  expect_dtree(8,
               {{-1, {4}}, {2, {}}, {4, {1, 3}}, {2, {}}, {0, {2, 6}}, {6, {}}, {4, {5, 7}}, {6, {}}},
               {{1, {}}, {3, {2, 0}}, {1, {}}, {7, {5, 1}}, {5, {}}, {3, {6, 4}}, {5, {}}, {-1, {3}}});
}

TEST(Btree, SixRanksShrinksTheSecondChild) {
  // 4's second child would be 6 (out of range); the offset halves to 1, so 4 -> {2, 5}.
  std::vector<Expect> e{{-1, {4}}, {2, {}}, {4, {1, 3}}, {2, {}}, {0, {2, 5}}, {4, {}}};
  for (int r = 0; r < 6; ++r) {
    TreeLinks t;
    btree(6, r, &t);
    expect_links(t, e[r], "rank " + std::to_string(r));
  }
}

TEST(Btree, OutOfRangeRankHasNoLinks) {
  TreeLinks t;
  btree(4, 4, &t);
  EXPECT_EQ(t.up, -1);
  EXPECT_EQ(t.ndown, 0);
  btree(4, -1, &t);
  EXPECT_EQ(t.ndown, 0);
}

// ---- properties for every node count 1..1024 ----------------------------------------------------

constexpr int kMaxNodes = 1024;

TEST(Dtree, EveryCountFormsTwoTreesOfExactDepth) {
  for (int n = 1; n <= kMaxNodes; ++n) {
    for (int tree = 0; tree < 2; ++tree) {
      TreeShape s = walk_dtree(n, tree);
      ASSERT_TRUE(s.ok) << "n=" << n << " tree " << tree << ": " << s.why;
      // Binary at node level; both trees have depth exactly ceil(log2(n)) (proof in trees.h).
      EXPECT_LE(s.max_arity, 2) << "n=" << n << " tree " << tree;
      EXPECT_EQ(s.depth, ceil_log2(n)) << "n=" << n << " tree " << tree;
      EXPECT_EQ(s.root, dtree_root(n, tree)) << "n=" << n << " tree " << tree;
    }
  }
}

TEST(Dtree, RootsAreZeroAndNcclsTreeOneRoot) {
  for (int n = 1; n <= kMaxNodes; ++n) {
    EXPECT_EQ(walk_dtree(n, 0).root, 0) << n;
    // NCCL: mirror root n-1 for even n, shifted root 1 for odd n (n == 1 has only rank 0).
    int want = n == 1 ? 0 : n % 2 == 0 ? n - 1 : 1;
    EXPECT_EQ(walk_dtree(n, 1).root, want) << n;
  }
}

TEST(Dtree, EachRankInteriorInAtMostOneTreeExceptRankZeroForOddCounts) {
  for (int n = 1; n <= kMaxNodes; ++n) {
    TreeShape s0 = walk_dtree(n, 0), s1 = walk_dtree(n, 1);
    ASSERT_TRUE(s0.ok && s1.ok) << n;
    for (int r = 0; r < n; ++r) {
      bool both = s0.nchildren[r] > 0 && s1.nchildren[r] > 0;
      // The shift makes rank 0 the image of btree's last (even) rank, which has a child, while rank 0
      // is also tree 0's root: the single exception, for every odd n >= 3.
      bool exception = n % 2 == 1 && n >= 3 && r == 0;
      EXPECT_EQ(both, exception) << "n=" << n << " rank " << r;
    }
  }
}

TEST(Btree, OddRanksAreLeavesAndRootHasOneChild) {
  for (int n = 2; n <= kMaxNodes; ++n) {
    for (int r = 1; r < n; r += 2) {
      TreeLinks t;
      btree(n, r, &t);
      EXPECT_EQ(t.ndown, 0) << "n=" << n << " rank " << r;
    }
    TreeLinks t;
    btree(n, 0, &t);
    ASSERT_EQ(t.ndown, 1) << n;
    EXPECT_EQ(t.down[0], 1 << (ceil_log2(n) - 1)) << n;  // the largest power of two below n
  }
}

TEST(Dtree, TreeOneIsTheMirrorOrShiftOfTreeZero) {
  for (int n = 1; n <= kMaxNodes; ++n) {
    auto image = [n](int x) { return x < 0 ? -1 : n % 2 == 0 ? n - 1 - x : (x + 1) % n; };
    for (int b = 0; b < n; ++b) {
      TreeLinks t0 = dtree_links(n, b, 0), t1 = dtree_links(n, image(b), 1);
      ASSERT_EQ(t1.up, image(t0.up)) << "n=" << n << " btree rank " << b;
      ASSERT_EQ(t1.ndown, t0.ndown) << "n=" << n << " btree rank " << b;
      for (int i = 0; i < t0.ndown; ++i) ASSERT_EQ(t1.down[i], image(t0.down[i])) << "n=" << n;
    }
  }
}

// ---- full double tree: node tree plus intra-node chain ------------------------------------------

TreeShape walk_full(int nodes, int ppn, int tree) {
  return walk(nodes * ppn, [&](int r) {
    TreeLinks t;
    node_tree_with_chain(nodes, ppn, r, tree, &t);
    return t;
  });
}

void check_full(int nodes, int ppn) {
  for (int tree = 0; tree < 2; ++tree) {
    std::string where = "nodes=" + std::to_string(nodes) + " ppn=" + std::to_string(ppn) + " tree " +
                        std::to_string(tree);
    TreeShape s = walk_full(nodes, ppn, tree);
    ASSERT_TRUE(s.ok) << where << ": " << s.why;
    EXPECT_EQ(s.depth, (ppn - 1) + ceil_log2(nodes)) << where;
    EXPECT_LE(s.max_arity, 3) << where;
    EXPECT_EQ(s.root, dtree_root(nodes, tree) * ppn) << where;
    for (int r = 0; r < nodes * ppn; ++r) {
      TreeLinks t;
      node_tree_with_chain(nodes, ppn, r, tree, &t);
      int local = r % ppn;
      if (local != 0) {
        // Non-head ranks only have chain links inside their node.
        EXPECT_EQ(t.up, r - 1) << where << " rank " << r;
        EXPECT_EQ(t.ndown, local < ppn - 1 ? 1 : 0) << where << " rank " << r;
        if (local < ppn - 1) {
          EXPECT_EQ(t.down[0], r + 1) << where << " rank " << r;
        }
        continue;
      }
      // The head carries the node tree's links scaled to heads, after the chain child.
      TreeLinks nt = dtree_links(nodes, r / ppn, tree);
      EXPECT_EQ(t.up, nt.up < 0 ? -1 : nt.up * ppn) << where << " rank " << r;
      int first = ppn > 1 ? 1 : 0;
      ASSERT_EQ(t.ndown, first + nt.ndown) << where << " rank " << r;
      if (ppn > 1) {
        EXPECT_EQ(t.down[0], r + 1) << where << " rank " << r;
      }
      for (int i = 0; i < nt.ndown; ++i) EXPECT_EQ(t.down[first + i], nt.down[i] * ppn) << where;
    }
  }
}

TEST(NodeTreeWithChain, BriefGrid) {
  for (int ppn : {1, 2, 8})
    for (int nodes : {1, 2, 3, 16, 128}) check_full(nodes, ppn);
}

TEST(NodeTreeWithChain, WiderSweep) {
  for (int ppn = 1; ppn <= 8; ++ppn)
    for (int nodes = 1; nodes <= 70; ++nodes) check_full(nodes, ppn);
}

TEST(NodeTreeWithChain, OneRankPerNodeIsTheNodeDtree) {
  for (int n = 1; n <= 64; ++n)
    for (int tree = 0; tree < 2; ++tree)
      for (int r = 0; r < n; ++r) {
        TreeLinks a, b = dtree_links(n, r, tree);
        node_tree_with_chain(n, 1, r, tree, &a);
        expect_links(a, {b.up, std::vector<int>(b.down, b.down + b.ndown)}, "n=" + std::to_string(n));
      }
}

TEST(NodeTreeWithChain, ThreeNodesOfThreeByHand) {
  // The drawing in trees.h. Tree 0 over nodes: 0 -> 2 -> 1; heads 0, 6, 3.
  std::vector<Expect> t0{{-1, {1, 6}}, {0, {2}}, {1, {}},  {6, {4}},  {3, {5}},
                         {4, {}},     {0, {7, 3}}, {6, {8}}, {7, {}}};
  // Tree 1 over nodes: 1 -> 0 -> 2; heads 3, 0, 6.
  std::vector<Expect> t1{{3, {1, 6}}, {0, {2}}, {1, {}},  {-1, {4, 0}}, {3, {5}},
                         {4, {}},    {0, {7}},  {6, {8}}, {7, {}}};
  for (int r = 0; r < 9; ++r) {
    TreeLinks a, b;
    node_tree_with_chain(3, 3, r, 0, &a);
    node_tree_with_chain(3, 3, r, 1, &b);
    expect_links(a, t0[r], "tree 0 rank " + std::to_string(r));
    expect_links(b, t1[r], "tree 1 rank " + std::to_string(r));
  }
}

TEST(NodeTreeWithChain, OutOfRangeInputHasNoLinks) {
  TreeLinks t;
  node_tree_with_chain(2, 4, 8, 0, &t);
  EXPECT_EQ(t.up, -1);
  EXPECT_EQ(t.ndown, 0);
  node_tree_with_chain(2, 4, 0, 2, &t);
  EXPECT_EQ(t.ndown, 0);
}

}  // namespace
}  // namespace cclab
