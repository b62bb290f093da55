#!/usr/bin/env bash
# tests/runtime/misuse_report_test.sh PROG - misuse is reported as misuse and ends every rank's call (issue
# 22, items 1 and 4). The simulator: misuse_prog's four ranks, one of them passing half the count, never calling, or calling
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
# The host backend (threads): the rank that sees the mismatch stops its peers (core/comm.h,
# poison_connections), so every rank returns within seconds without CCLAB_TIMEOUT: the one that saw it
# with ncclInvalidUsage naming the count and datatype, the others with ncclRemoteError naming the rank
# that stopped. (A rank that never calls still needs CCLAB_TIMEOUT; the stuck waits are reported.)
for mode in count coll; do
  start=$SECONDS
  env -u NCCL_DEBUG -u CCLAB_TIMEOUT CCLAB_BACKEND=host timeout 60 "$prog" "$mode" >"$work/out" 2>&1
  rc=$?
  [ "$rc" = 0 ] || fail "host $mode: exited $rc (124: a hang)"
  [ $((SECONDS - start)) -le 10 ] || fail "host $mode: took $((SECONDS - start)) s"
  grep -q "^rank [0-3]: invalid usage.*same count and datatype" "$work/out" || fail "host $mode: nobody named the mismatch"
  n=$(grep -c "^rank [0-3]: \(invalid usage\|remote process\)" "$work/out")
  [ "$n" = 4 ] || fail "host $mode: $n of 4 ranks returned the error"
  if grep -q "^rank [0-3]: remote process" "$work/out"; then
    grep -q "failed in this operation and stopped it" "$work/out" || fail "host $mode: the stopped ranks do not say who stopped them"
  fi
done

[ "$failures" = 0 ] && echo "misuse_report: all cases passed" && exit 0
exit 1
