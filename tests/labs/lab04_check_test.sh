#!/usr/bin/env bash
# tests/labs/lab04_check_test.sh CASE CCLAB SOURCE_DIR WORK_DIR - `cclab lab check 04` (Ring vs double
# binary tree) fails where it should, with the hint it should give, and passes the reference solution.
# One ctest entry per CASE (label labs):
#   skeleton   the skeleton as committed (a chain): the trees pass, depth and complementarity fail with
#              their hints, every answer is missing; no simulator run (no answers)
#   solution   labs/solutions/04-ring-vs-tree passes every check; `lab run 04` draws the trees
#   mirror     the solution with tree 1 always mirrored (also for odd n): the TODO 2 hint at nnodes 3
#   answers    the solution with wrong answers: those checks fail, the others pass
#   neighbour  the solution with the two sizes one step of the x2 sweep off (8M for crossover, 32M for
#              tuner_switch): both fail, with the hint that says which side the question asks for
# The last four need labs/solutions/ (tests/labs/CMakeLists.txt adds them only when it exists).
set -u
case="$1" cclab="$2" src="$3" work="$4/lab04-$case"
lab="$src/labs/04-ring-vs-tree"
solution="$src/labs/solutions/04-ring-vs-tree"
rm -rf "$work"
mkdir -p "$work"
out="$work/out.txt"
seconds=0

labnum=04 student_file=double_tree.c
# shellcheck source=tests/labs/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

case "$case" in
  skeleton)
    check "$(skeleton)"
    expect_rc 1
    expect "4 of 12 checks pass"
    expect "tree 0 is a binary tree over every node pass"
    expect "nnodes 6, tree 0: node 5 is 5 hops from the root, more than ceil(log2 6) + 1 = 4"
    expect "a chain (the skeleton) or a lopsided tree is n-1 deep"
    expect "nnodes 2: 1 node is interior (with children) in both trees: 0; at most 0 may be (even nnodes)"
    expect "no answer for 'crossover' yet"
    ((seconds <= 10)) || fail "took $seconds s: the skeleton has no answers, nothing to simulate"
    ;;
  solution)
    check "$solution"
    expect_rc 0
    expect "12 of 12 checks pass"
    expect "Lab 04 is done"
    expect "your trees are NCCL's (ncclGetDtree), link for link"
    "$cclab" lab run 04 --dir "$solution" --work "$work" --nodes 6 >"$out" 2>&1 || fail "lab run failed"
    expect "tree 1 (root 5)"
    expect "interior in both trees: 0 nodes (at most 0 for even nnodes)"
    ;;
  mirror)
    solution_variant mirror \
      'nnodes % 2 == 0 ? nnodes - 1 - node : (node - 1 + nnodes) % nnodes' 'nnodes - 1 - node'
    python3 - "$work/mirror/double_tree.c" <<'PY'
import sys
p = sys.argv[1]
t = open(p).read().replace("return n % 2 == 0 ? n - 1 - x : (x + 1) % n;", "return n - 1 - x;")
open(p, "w").write(t)
PY
    check "$work/mirror"
    expect_rc 1
    expect "nnodes 3: 2 nodes are interior (with children) in both trees: 0, 2; at most 1 may be (odd nnodes)"
    expect "TODO 2: mirror for even n, shift for odd n"
    ;;
  answers)
    solution_variant answers "" ""
    sed -i -e 's/^ring_steps = .*/ring_steps = 32/' -e 's/^crossover = .*/crossover = 256M/' \
      -e 's/^tuner_1m = .*/tuner_1m = nvls/' "$work/answers/answers.txt"
    check "$work/answers"
    expect_rc 1
    expect "9 of 12 checks pass"
    expect "steps of a ring all_reduce on 32 ranks: 32 is not right"
    expect "256M is not the size the grader found"
    expect "'nvls' is neither ring nor tree"
    ;;
  neighbour)
    solution_variant neighbour "" ""
    sed -i -e 's/^crossover = .*/crossover = 8M/' -e 's/^tuner_switch = .*/tuner_switch = 32M/' \
      "$work/neighbour/answers.txt"
    check "$work/neighbour"
    expect_rc 1
    expect "10 of 12 checks pass"
    expect "largest size at which Tree beats Ring, dgx-h100 x 4: 8M is not the size the grader found"
    expect "below 1, not the first size where Ring wins"
    expect "smallest size at which the tuner stops picking Tree, dgx-h100 x 4: 32M is not the size the grader found"
    expect "the first size whose algo is not Tree, not the last that is"
    ;;
  *)
    echo "lab04_check_test.sh: unknown case $case" >&2
    exit 2
    ;;
esac
echo "ok ($case, $seconds s)"
