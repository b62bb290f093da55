#!/usr/bin/env bash
# tests/runtime/stuck_report_test.sh PROG - a stuck wait is reported (issue 22, "stuck waits are reported
# by default"): late_rank_prog's rank 1 arrives 3 s late, CCLAB_STUCK_WARN=1.
#   NCCL_DEBUG unset      one "cclab [0] WARN ... waiting for data from rank 1 ..." line on stderr,
#                         naming NCCL_DEBUG (NCCL itself would print nothing)
#   NCCL_DEBUG=WARN/INFO  an NCCL WARN line whatever NCCL_DEBUG_SUBSYS says (INFO's default is INIT,...)
#   NCCL_DEBUG=VERSION    the user asked for no warnings: none
# and in every case the run completes with every element right once rank 1 arrives.
set -u
prog=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; sed 's/^/    /' "$work/out" "$work/err"; failures=$((failures + 1)); }
run() {  # NAME ENV...
  local name=$1
  shift
  env -u NCCL_DEBUG -u NCCL_DEBUG_SUBSYS -u NCCL_DEBUG_FILE CCLAB_STUCK_WARN=1 "$@" timeout 60 "$prog" 3 \
    >"$work/out" 2>"$work/err"
  rc=$?
  [ "$rc" = 0 ] || fail "$name: exited $rc"
  grep -q "every element right" "$work/out" || fail "$name: the all_reduce did not complete right"
}
stuck='rank 0 channel 0 waiting for data from rank 1'

run unset
grep -q "^cclab \[0\] WARN .*$stuck.*(NCCL_DEBUG=WARN prints more)" "$work/err" || fail "unset: no stuck line on stderr"
[ "$(grep -c WARN "$work/err")" = 1 ] || fail "unset: expected exactly one line"
run warn NCCL_DEBUG=WARN
grep -q "NCCL WARN .*$stuck" "$work/out" || fail "NCCL_DEBUG=WARN: no NCCL WARN stuck line"
run info NCCL_DEBUG=INFO
grep -q "NCCL WARN .*$stuck" "$work/out" || fail "NCCL_DEBUG=INFO (default subsystems): no NCCL WARN stuck line"
run info_init NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT
grep -q "NCCL WARN .*$stuck" "$work/out" || fail "NCCL_DEBUG_SUBSYS=INIT: no NCCL WARN stuck line"
run version NCCL_DEBUG=VERSION
if grep -q "$stuck" "$work/out" "$work/err"; then fail "NCCL_DEBUG=VERSION: a stuck line was printed"; fi

[ "$failures" = 0 ] && echo "stuck_report: all cases passed" && exit 0
exit 1
