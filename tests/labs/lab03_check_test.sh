#!/usr/bin/env bash
# tests/labs/lab03_check_test.sh CASE CCLAB SOURCE_DIR WORK_DIR - `cclab lab check 03` (the LL and LL128
# lines) fails where it should, with the hint it should give, and passes the reference solution. One
# ctest entry per CASE (label labs):
#   skeleton   the skeleton as committed: only the compile check passes; the TODO 1 hint, the torn line
#   solution   labs/solutions/03-protocols passes every check; `lab run 03` shows the same lines as cclab's
#   oneflag    the solution checking only the first half's flag: the torn-line check fails, the rest pass
#   answers    the solution with wrong answers: those checks fail, with what was wrong; a size written
#              128M is read as 128 MiB
#   neighbour  the solution with each crossover one step of the x2 sweep off (1M for 2M, 256M for 128M):
#              both fail, with the hint that says which side of the crossover the question asks for
# The last four need labs/solutions/ (tests/labs/CMakeLists.txt adds them only when it exists).
set -u
case="$1" cclab="$2" src="$3" work="$4/$case"
lab="$src/labs/03-protocols"
solution="$src/labs/solutions/03-protocols"
rm -rf "$work"
mkdir -p "$work"
out="$work/out.txt"

labnum=03 student_file=ll_line.c
# shellcheck source=tests/labs/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

case "$case" in
  skeleton)
    dir="$(skeleton)"
    check "$dir"
    expect_rc 1
    expect "1 of 11 checks pass"
    expect "lab_ll_flag(0) is 0, want 1"
    expect "a receive buffer that was never written (all zero) would look ready"
    expect "stale or torn data handed to the receiver"
    expect "no answer for 'crossover_ll128' yet"
    ;;
  solution)
    check "$solution"
    expect_rc 0
    expect "11 of 11 checks pass"
    expect "Lab 03 is done"
    "$cclab" lab run 03 --dir "$solution" --work "$work" >"$out" 2>&1 || fail "lab run failed"
    expect "(the same)"
    expect "torn: first half new, second old not ready"
    expect "the same as cclab's"
    ;;
  oneflag)
    solution_variant oneflag '  if ((uint32_t)(hi >> 32) != flag) return 0;
' ''
    check "$work/oneflag"
    expect_rc 1
    expect "10 of 11 checks pass"
    expect "second half still step"
    expect "a line is ready only when BOTH halves carry the expected flag"
    ;;
  answers)
    solution_variant answers "" ""
    sed -i -e 's/^ll_efficiency = .*/ll_efficiency = 0.9375/' -e 's/^crossover_ll128 = .*/crossover_ll128 = 64/' \
      -e 's/^crossover_simple = .*/crossover_simple = 128M/' "$work/answers/answers.txt"
    check "$work/answers"
    expect_rc 1
    expect "9 of 11 checks pass"
    expect "LL's payload bytes / wire bytes: 0.9375 is not within 1% of the right value"
    expect "A fraction between 0 and 1, not a percentage"
    expect "64 is not the size the grader found"
    expect "128M is right"  # a size with a K/M/G suffix, as the sweeps print them
    ;;
  neighbour)
    solution_variant neighbour "" ""
    sed -i -e 's/^crossover_ll128 = .*/crossover_ll128 = 1M/' -e 's/^crossover_simple = .*/crossover_simple = 268435456/' \
      "$work/neighbour/answers.txt"
    check "$work/neighbour"
    expect_rc 1
    expect "9 of 11 checks pass"
    expect "bytes from which LL128 beats LL, all_reduce on 8 simulated H100s: 1M is not the size the grader found"
    expect "that size itself, not the last size where LL wins"
    expect "bytes from which Simple beats LL128, same machine: 268435456 is not the size the grader found"
    ;;
  *)
    echo "lab03_check_test.sh: unknown case $case" >&2
    exit 2
    ;;
esac
echo "ok ($case, $seconds s)"
