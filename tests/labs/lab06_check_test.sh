#!/usr/bin/env bash
# tests/labs/lab06_check_test.sh CASE CCLAB SOURCE_DIR WORK_DIR - `cclab lab check 06` (Across nodes)
# fails where it should, with the hint it should give, and passes the reference solution. One ctest
# entry per CASE (label labs); each runs at most a handful of flow-level simulations (about 1-3 s):
#   skeleton   the skeleton as committed (the DGX H100 reference design, 8 x 400G, 1:1): it meets the
#              target but costs 2.29x the cheapest design, which the check says without giving the
#              cheapest design away (its cost, the ratio, its parameters; in the table and in --json);
#              every answer is missing (and not simulated)
#   broken     a cluster.txt with an unknown key, a value out of range, GB/s for Gb/s and a missing
#              line: one message each, the simulations skipped
#   slow       2 x 800G ports at 4:1: cheaper than the cheapest, but too slow (the PCIe slot)
#   solution   labs/solutions/06-across-nodes passes every check; `lab run 06` shows no byte on the spine
#   answers    the solution with wrong answers: those checks fail, the others pass
# The last two need labs/solutions/ (tests/labs/CMakeLists.txt adds them only when it exists).
set -u
case="$1" cclab="$2" src="$3" work="$4/lab06-$case"
lab="$src/labs/06-across-nodes"
solution="$src/labs/solutions/06-across-nodes"
rm -rf "$work"
mkdir -p "$work"
out="$work/out.txt"

labnum=06 student_file=cluster.txt
# shellcheck source=tests/labs/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# design DIR LINES...: a folder with a cluster.txt of those lines and the skeleton's answers.
design() {
  local dir="$work/$1"
  shift
  mkdir -p "$dir"
  printf '%s\n' "$@" >"$dir/cluster.txt"
  cp "$lab/answers.txt" "$dir/"
  echo "$dir"
}

case "$case" in
  skeleton)
    check "$(skeleton)"
    expect_rc 1
    expect "2 of 8 checks pass"
    expect "cost: 256 NIC ports x 1.6 + 768 switch ports (256 down, 256 up x 2) x 0.8 = 1024.0 k$"
    expect "7.71 ms, busbw 277.4 GB/s"
    expect "cost within 5% of the cheapest design that meets it FAIL"
    expect "yours 1024.0 k$: not the cheapest: the grader found a design that meets the target for more than 5% less"
    expect "which parts of the network does it not need?"
    expect "no answer for 'busbw_8x400' yet"
    # The answer stays hidden: the cheapest design's cost (448.0 k$), the ratio to it, its NICs.
    for leak in "448.0" "2.29" "5 x 400G"; do expect_absent "$leak"; done
    check "$(skeleton)" --json
    for leak in "448.0" "2.29" "5 x 400G"; do expect_absent "$leak"; done
    ;;
  broken)
    check "$(design broken 'nodes = 16' 'nics = 4' 'nic_gbps = 50' 'oversubscription = 3')"
    expect_rc 1
    expect "0 of 8 checks pass"
    expect "unknown key 'nics' (the keys are nodes, nics_per_node, nic_gbps, oversubscription)"
    expect "nodes = 16: give 32 to 64 DGX H100s"
    expect "no line \`nics_per_node = ...\`"
    expect "400 Gb/s is 50 GB/s: the file takes Gb/s"
    expect "oversubscription = 3: the switches support 1, 2 or 4"
    expect "skipped: needs a valid cluster.txt (above)"
    ;;
  slow)
    check "$(design slow 'nodes = 32' 'nics_per_node = 2' 'nic_gbps = 800' 'oversubscription = 4:1')"
    expect_rc 1
    expect "= 345.6 k$"
    expect "24.67 ms, busbw 86.7 GB/s"
    expect "too slow by 76%: the target needs busbw >= 152.8 GB/s"
    expect "a port moves no more than the PCIe slot it sits in"
    expect "skipped: needs a design that meets the target (above)"
    ;;
  solution)
    check "$solution"
    expect_rc 0
    expect "8 of 8 checks pass"
    expect "Lab 06 is done"
    expect "yours 448.0 k$: 32 x DGX H100 (256 GPUs), 5 x 400G NIC port(s) each, 4:1, 13.43 ms"
    "$cclab" lab run 06 --dir "$solution" --work "$work" >"$out" 2>&1 || fail "lab run failed"
    expect "NIC port -> leaf 160 66.572"
    expect "leaf -> spine 0 0.000 0.00"
    ;;
  answers)
    mkdir -p "$work/answers"
    cp "$solution/cluster.txt" "$work/answers/"
    sed -e 's/^busbw_2x800 = .*/busbw_2x800 = 163.89/' -e 's/^oversub_dgx = .*/oversub_dgx = 2/' \
      "$solution/answers.txt" >"$work/answers/answers.txt"
    check "$work/answers"
    expect_rc 1
    expect "6 of 8 checks pass"
    expect "163.89 is not within 5% of the grader's value"
    expect "hint: the busbw column of cclab sim all_reduce --topo dgx-h100:32 -b 1G --nics-per-node 2 --nic-bw 100"
    expect "2 is not within 5% of the grader's value"
    ;;
  *)
    echo "lab06_check_test.sh: unknown case $case" >&2
    exit 2
    ;;
esac
echo "ok ($case)"
