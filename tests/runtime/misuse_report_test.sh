#!/usr/bin/env bash
# tests/runtime/misuse_report_test.sh PROG - misuse under the simulator is reported as misuse (issue 22,
# item 4): misuse_prog's four ranks, one of them passing half the count, never calling, or calling
# ncclBroadcast instead; under CCLAB_BACKEND=sim every rank that called returns ncclInvalidUsage
# ("invalid usage") naming what the ranks must agree on or the stuck waits, within seconds, and SimGrid's
# own "[ker_engine/CRITICAL] Oops! Deadlock detected" line and "internal error" do not appear.
set -u
prog=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; sed 's/^/    /' "$work/out" | cut -c1-300; failures=$((failures + 1)); }
for mode in count skip coll; do
  start=$SECONDS
  env -u NCCL_DEBUG CCLAB_BACKEND=sim CCLAB_TOPO=dgx-h100 timeout 60 "$prog" "$mode" >"$work/out" 2>&1
  rc=$?
  [ "$rc" = 0 ] || fail "$mode: exited $rc (124: a hang)"
  [ $((SECONDS - start)) -le 30 ] || fail "$mode: took $((SECONDS - start)) s"
  if grep -q "CRITICAL\|internal error" "$work/out"; then fail "$mode: SimGrid's deadlock line or an internal error"; fi
  callers=3
  [ "$mode" = skip ] || callers=4
  n=$(grep -c "^rank [0-3]: invalid usage" "$work/out")
  [ "$n" = "$callers" ] || fail "$mode: $n ranks returned invalid usage, expected $callers"
  grep -q "the simulated ranks deadlocked\|same count and datatype" "$work/out" || fail "$mode: the message says nothing of the misuse"
  [ "$mode" != skip ] || grep -q "^rank 3: no error" "$work/out" || fail "skip: rank 3, which called nothing, failed"
done
[ "$failures" = 0 ] && echo "misuse_report: all cases passed" && exit 0
exit 1
