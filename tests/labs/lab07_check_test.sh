#!/usr/bin/env bash
# tests/labs/lab07_check_test.sh CASE CCLAB SOURCE_DIR WORK_DIR - `cclab lab check 07` (Debugging a hang)
# fails where it should, with the hint it should give, and passes the reference solution. One ctest entry
# per CASE (label labs):
#   skeleton  the three bugs as committed: 2 ranks hang (rank 0 alone in the loss's all_reduce): the stuck
#             wait's report and the hint about a collective inside an `if`, within the time limit; 3 and 4
#             ranks skipped; the simulator reports the deadlock at once; no answers (~8 s)
#   order     the skeleton with TODO 1 fixed (odd ranks still walk the 64 KiB buckets backwards): wrong
#             averages at two full buckets, then a count mismatch at a short last bucket (both ranks stop at
#             once), and the hint about the order;
#             wrong averages in the simulator (~15 s)
#   repeats   README step 2 as written: the skeleton with TODO 1 fixed, NCCL_DEBUG=WARN cclab lab run 07
#             --ranks 2 --size 400K: each rank's failure printed once (the operations queued behind the failed
#             one are not run and not reported again), both ranks fail at once (~1 s)
#   bigbucket the skeleton with TODO 1 fixed and 16 MiB buckets (one bucket for every fixed count and for
#             the simulator's 16 MiB): the host checks' steps of two and two and a half of the student's
#             buckets still catch the order (TODO 2); the solution with 16 MiB buckets passes them (~25 s)
#   nobucket  the solution without a BUCKET_BYTES, then with 1 GiB buckets: the compile check fails
#             saying why, the others are skipped (~2 s)
#   slow      the solution with the skeleton's 64 KiB buckets: every result right, 31x the one-bucket
#             time, the hint about bucket sizes (~6 s)
#   solution  labs/solutions/07-debugging passes every check (~6 s)
# The last two need labs/solutions/ (tests/labs/CMakeLists.txt adds them only when it exists).
set -u
case="$1" cclab="$2" src="$3" work="$4/lab07-$case"
lab="$src/labs/07-debugging"
solution="$src/labs/solutions/07-debugging"
rm -rf "$work"
mkdir -p "$work"
out="$work/out.txt"

labnum=07 student_file=train_step.c
# shellcheck source=tests/labs/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

case "$case" in
  skeleton)
    check "$(skeleton)" --timeout 6
    expect_rc 1
    expect "compile train_step.c pass"
    expect "host backend, 2 ranks, 5 steps FAIL"
    expect "waiting for data from rank 1"
    expect "is a nccl call inside an \`if\` that only some ranks take (TODO 1), or do the ranks walk the buckets"
    expect "skipped: your code hung with 2 ranks (above); fix that first"
    expect "simulator: 8 ranks, dgx-h100, 16 MiB, exact FAIL"
    expect "deadlocked"
    expect "no answer for 'collectives' yet"
    ends_within "host backend, 2 ranks, 5 steps" 6
    ;;
  order)
    # The skeleton with TODO 1 fixed: odd ranks still walk the 64 KiB buckets backwards.
    dir="$(skeleton)"
    sed -i 's/  if (rank == 0) {/  {/' "$dir/train_step.c"
    grep -q '^  {$' "$dir/train_step.c" || fail "the skeleton no longer has the loss's if (rank == 0)"
    check "$dir" --timeout 6
    expect_rc 1
    expect "host backend, 2 ranks, 5 steps FAIL"
    expect "2 of 5 calls wrong (the rest did not run: a call failed); the first, count 32768:"
    expect "Rank 0: 32768 of 32768 gradients wrong; gradient 0 is 3.5, want 1.5"
    expect "Every rank must walk the buckets in the same order (TODO 2)"
    expect "simulator: 8 ranks, dgx-h100, 16 MiB, exact FAIL"
    expect "nothing hung, but the averages are wrong"
    ends_within "host backend, 2 ranks, 5 steps" 6
    ;;
  repeats)
    dir="$(skeleton)"
    sed -i 's/  if (rank == 0) {/  {/' "$dir/train_step.c"
    grep -q '^  {$' "$dir/train_step.c" || fail "the skeleton no longer has the loss's if (rank == 0)"
    NCCL_DEBUG=WARN "$cclab" lab run 07 --ranks 2 --size 400K --dir "$dir" --work "$work" >"$out" 2>&1
    rc=$?
    expect_rc 1
    expect "at step 2 but received"  # one rank or both see the mismatch first (a race)
    expect "Every rank must walk the buckets in the same order (TODO 2)"
    # Each rank's failure once: its own mismatch, or the other rank's stop; never one line per queued bucket.
    for r in 0 1; do
      n="$(grep -c "NCCL WARN ncclAllReduce: rank $r channel" "$out")"
      [[ "$n" == 1 ]] || fail "rank $r printed $n failure lines, want 1"
    done
    dups="$(grep 'NCCL WARN' "$out" | sed 's/^[^[]*//' | sort | uniq -d)"
    [[ -z "$dups" ]] || fail "lines printed more than once: $dups"
    seconds=0
    ;;
  bigbucket)
    dir="$(skeleton)"
    sed -i -e 's/  if (rank == 0) {/  {/' -e 's/^#define BUCKET_BYTES (64 \* 1024)$/#define BUCKET_BYTES (16 * 1024 * 1024)/' \
      "$dir/train_step.c"
    grep -q '^#define BUCKET_BYTES (16 \* 1024 \* 1024)$' "$dir/train_step.c" || fail "the skeleton's BUCKET_BYTES changed"
    check "$dir" --timeout 6
    expect_rc 1
    expect "host backend, 2 ranks, 5 steps FAIL"
    expect "2 of 5 calls wrong; the first, count 8388608:"
    expect "Every rank must walk the buckets in the same order (TODO 2)"
    expect "BUCKET_BYTES 16777216 (4194304 floats): the host checks' steps include two of your buckets (count
      8388608) and two and a half (count 10485761)"
    # The right order with the same buckets passes the host checks.
    solution_variant big '#define BUCKET_BYTES (8 * 1024 * 1024)' '#define BUCKET_BYTES (16 * 1024 * 1024)'
    check "$work/big"
    expect "host backend, 2 ranks, 5 steps pass"
    expect "host backend, 3 ranks, 5 steps pass"
    expect "host backend, 4 ranks, 5 steps pass"
    expect "simulator: 8 ranks, dgx-h100, 16 MiB, exact pass"
    ;;
  nobucket)
    solution_variant nobucket 'BUCKET_BYTES' 'MY_BUCKET'
    check "$work/nobucket"
    expect_rc 1
    expect "compile train_step.c FAIL"
    expect "train_step.c compiles, but defines no BUCKET_BYTES"
    expect "keep \`#define BUCKET_BYTES (...)\` in train_step.c"
    expect "host backend, 2 ranks, 5 steps skip"
    expect "skipped: needs a BUCKET_BYTES the grader can read (above)"
    solution_variant huge '#define BUCKET_BYTES (8 * 1024 * 1024)' '#define BUCKET_BYTES (1024 * 1024 * 1024)'
    check "$work/huge"
    expect_rc 1
    expect "BUCKET_BYTES is 1073741824: the grader takes 4 bytes (one float) to 64 MiB"
    expect "simulator: 8 ranks, dgx-h100, 16 MiB, exact skip"
    ;;
  slow)
    # TODO 1 and 2 fixed, the 64 KiB buckets kept: right everywhere, 31x the one-bucket time.
    solution_variant slow '#define BUCKET_BYTES (8 * 1024 * 1024)' '#define BUCKET_BYTES (64 * 1024)'
    check "$work/slow"
    expect_rc 1
    expect "9 of 10 checks pass"
    expect "simulator: 8 ranks, dgx-h100, 16 MiB, exact pass"
    expect "simulator: time at most 1.5x one bucket's FAIL"
    expect "36.40x (at most 1.5x)"
    expect "Larger buckets (TODO 3)"
    ;;
  solution)
    check "$solution"
    expect_rc 0
    expect "10 of 10 checks pass"
    expect "Lab 07 is done"
    ;;
  *)
    echo "unknown case $case"
    exit 2
    ;;
esac
echo "lab07 $case: ok (${seconds} s)"
