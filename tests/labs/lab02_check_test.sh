#!/usr/bin/env bash
# tests/labs/lab02_check_test.sh CASE CCLAB SOURCE_DIR WORK_DIR - `cclab lab check 02` (Pipelining and
# chunks) fails where it should, with the hint it should give, and passes the reference solution. One
# ctest entry per CASE (label labs):
#   skeleton   the skeleton as committed (right, one piece): the host and exact checks pass, the 8-GPU
#              sweep fails with the TODO 1 hint (its time does not change with chunk_elems; one piece of
#              1 MiB already runs on 4 channels, 1.88x cclab's ring on those 4), the 64-GPU sweep is
#              skipped, every answer is missing
#   halfway    the skeleton with TODO 1 done (pieces, but a rank receives, then sends): the 8-GPU sweep
#              fails with the TODO 2 hint; with wrong answers, those fail and the right ones pass
#   hang       a slot that receives the piece it sends (t - d): the hang hint, the other host checks skipped
#   solution   labs/solutions/02-pipelining passes every check; `lab run 02 --sweep` prints its table
#   tail       the solution without the last, shorter piece: the TODO 1 hint
# The last three need labs/solutions/ (tests/labs/CMakeLists.txt adds them only when it exists).
set -u
case="$1" cclab="$2" src="$3" work="$4/lab02-$case"
lab="$src/labs/02-pipelining"
solution="$src/labs/solutions/02-pipelining"
rm -rf "$work"
mkdir -p "$work"
out="$work/out.txt"
seconds=0

labnum=02 student_file=pipelined_broadcast.c
# shellcheck source=tests/labs/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

case "$case" in
  skeleton)
    check "$(skeleton)"
    expect_rc 1
    expect "7 of 15 checks pass"
    expect "host backend, 8 ranks, 12 calls pass"
    expect "simulator: 8 ranks, dgx-h100, 1M in 128K, exact pass"
    expect "your time does not change with chunk_elems: the buffer still goes in one piece"
    expect "--max-channels 4): 77.9 us: 1.88x (at most 1.25x)"
    expect "skipped: needs the 8-GPU sweep to pass first"
    expect "no answer for 'model_sweet_64' yet"
    ((seconds <= 10)) || fail "took $seconds s: the skeleton's sweep is one piece on 8 GPUs"
    ;;
  halfway)
    dir="$(skeleton)"
    python3 - "$dir/$student_file" <<'PY' || fail "could not do TODO 1 in the skeleton"
import sys
p = sys.argv[1]
t = open(p).read()
for old, new in [
    ("  (void)chunk_elems;\n  return count > 0 ? 1 : 0;", "  return (count + chunk_elems - 1) / chunk_elems;"),
    ("  (void)chunk_elems;\n  (void)k;\n  *start = 0;\n  *len = count;",
     "  *start = k * chunk_elems;\n  *len = count - *start < chunk_elems ? count - *start : chunk_elems;"),
]:
    if old not in t:
        sys.exit("the skeleton no longer contains: " + old)
    t = t.replace(old, new)
open(p, "w").write(t)
PY
    cat >"$dir/answers.txt" <<'ANS'
slots = 14
alpha_us = 6.3
beta_gbs = 45
sweet_spot_8 = 16K
sweet_spot_64 = 64K
model_sweet_64 = 1M
ANS
    check "$dir"
    expect_rc 1
    expect "8 of 15 checks pass"
    expect "your pieces overlap, but not all the time: does every rank receive piece k+1 while it sends piece k"
    expect "77.9 us: 1.40x (at most 1.25x)"
    expect "slots of a pipelined broadcast of 16 pieces on 8 ranks: 14 is not right"
    expect "6.3 is right (within 10%)"
    expect "45 is not within 10% of what the grader measured on your code"
    expect "your code takes"
    expect "with chunks of 16K"
    expect "skipped: needs the 64-GPU sweep to run"
    expect "1M is not within 15% of the grader's value"
    ;;
  hang)
    solution_variant hang "kr = t - d + 1;" "kr = t - d;"
    check "$work/hang" --timeout 6
    expect_rc 1
    expect "your broadcast waits for a message nobody sends"
    expect "skipped: your code hung with 2 ranks (above); fix that first"
    ends_within "host backend, 2 ranks, 12 calls" 6
    ;;
  solution)
    check "$solution"
    expect_rc 0
    expect "15 of 15 checks pass"
    expect "Lab 02 is done"
    expect "(within 15%)"
    expect "cclab's ring broadcast on 4 channels, as many as NCCL splits a send of 1 MiB into here"
    expect "--max-channels 1): 1105.7 us: 0.72x (at most 1.00x)"
    CCLAB_BACKEND=sim CCLAB_TOPO=dgx-h100 "$cclab" lab run 02 --dir "$solution" --work "$work" --ranks 8 --size 1M \
      --sweep >"$out" 2>&1 || fail "lab run --sweep failed"
    expect "262144 4 91.83"
    expect "all 7 calls right"
    ;;
  tail)
    solution_variant tail "return (count + chunk - 1) / chunk;" "return count / chunk;"
    check "$work/tail"
    expect_rc 1
    expect "only the last elements are wrong, where chunk_elems does not divide count"
    expect "run it alone: cclab lab run 02 --ranks 2"
    ;;
  *)
    echo "lab02_check_test.sh: unknown case $case" >&2
    exit 2
    ;;
esac
echo "ok ($case, $seconds s)"
