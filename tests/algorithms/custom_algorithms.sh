#!/usr/bin/env bash
# tests/algorithms/custom_algorithms.sh CCLAB PLUGINS - custom algorithms from plugins (kernels/custom.h,
# docs/custom-algorithms.md) run by NCCL_ALGO name on the host backend and in the simulator, byte-exact,
# named in traces; broken plugins fail with a message naming what is wrong, within a time limit.
set -u
cclab=$1
plugins=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# run NAME TIMEOUT CMD... : output in $work/NAME.out, exit status in $rc
run() {
  local name=$1 t=$2
  shift 2
  timeout "$t" "$@" >"$work/$name.out" 2>&1
  rc=$?
  [ "$rc" = 124 ] && fail "$name: did not finish within $t s"
}
expect_in() {  # NAME PATTERN
  grep -q -- "$2" "$work/$1.out" || { fail "$1: output lacks '$2'"; sed 's/^/    /' "$work/$1.out" | tail -8; }
}
export CCLAB_TIMEOUT=60

# 1. Host backend: every datatype and op, byte-exact (cclab perf's check), on rank counts that are and
# are not powers of two; the INFO log says the custom algorithm ran.
for t in 2 3 5; do
  run host_t$t 240 env CCLAB_ALGO_PLUGIN="$plugins/two_shot.so" NCCL_ALGO=TwoShot \
    "$cclab" perf all_reduce -t $t -b 8 -e 1M -f 8 -n 1 -w 0 -d all -o all
  [ "$rc" = 0 ] || fail "host, $t ranks: cclab perf exited $rc"
  expect_in host_t$t "Out of bounds values : 0 OK"
done
run host_t8 120 env CCLAB_ALGO_PLUGIN="$plugins/two_shot.so" NCCL_ALGO=TwoShot NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING \
  "$cclab" perf all_reduce -t 8 -b 4 -e 4M -f 16 -n 1 -w 0
[ "$rc" = 0 ] || fail "host, 8 ranks: cclab perf exited $rc"
expect_in host_t8 "Out of bounds values : 0 OK"
expect_in host_t8 "AllReduce: 4194304 Bytes -> Algo TwoShot proto Simple"
# A collective it does not support runs NCCL's algorithms.
run host_bcast 120 env CCLAB_ALGO_PLUGIN="$plugins/two_shot.so" NCCL_ALGO=TwoShot \
  "$cclab" perf broadcast -t 3 -b 8 -e 64K -f 8 -n 1 -w 0
[ "$rc" = 0 ] || fail "host broadcast under NCCL_ALGO=TwoShot: exited $rc"
# The checks can fail: a custom all_reduce that leaves out a round gives wrong elements, on the host...
run host_wrong 120 env CCLAB_ALGO_PLUGIN="$plugins/wrong_sum.so" NCCL_ALGO=WrongSum \
  "$cclab" perf all_reduce -t 3 -b 4K -e 4K -n 1 -w 0
[ "$rc" = 1 ] || fail "host, WrongSum: cclab perf exited $rc, expected 1 (wrong values)"

# 2. Simulator: byte-exact with --payload on one and two DGX H100s, and named in the table and trace.
export CCLAB_ALGO_PLUGIN="$plugins/two_shot.so"
for spec in "dgx-h100 float sum" "dgx-h100 int32 prod" "dgx-h100:2 half min" "dgx-h100:2 bfloat16 max"; do
  set -- $spec
  name=sim_${1/:/_}_$2
  run "$name" 240 "$cclab" sim all_reduce --topo "$1" -b 4 -e 4M -f 32 --algo TwoShot --payload -d "$2" -o "$3"
  [ "$rc" = 0 ] || fail "$name: cclab sim exited $rc"
  expect_in "$name" "Out of bounds values : 0 OK"
  expect_in "$name" " TwoShot  Simple"
done
run sim_wrong 120 env CCLAB_ALGO_PLUGIN="$plugins/wrong_sum.so" "$cclab" sim all_reduce --topo dgx-h100 -b 64K -e 64K \
  --algo WrongSum --payload
[ "$rc" = 1 ] || fail "sim, WrongSum: cclab sim exited $rc, expected 1 (wrong values)"
run sim_trace 120 "$cclab" sim all_reduce --topo dgx-h100 -b 1M -e 1M --algo TwoShot --trace "$work/t.cctrace"
[ "$rc" = 0 ] || fail "sim with --trace: exited $rc"
run trace_info 60 "$cclab" trace info "$work/t.cctrace"
expect_in trace_info "AllReduce     TwoShot Simple"
run sim_compare 120 "$cclab" sim all_reduce --topo dgx-h100 -b 64K -e 1M -f 16 --compare "--algo ring" "--algo TwoShot"
[ "$rc" = 0 ] || fail "sim --compare: exited $rc"
expect_in sim_compare "TwoShot/Simple/"
# A custom algorithm runs Simple whatever --proto says, on Ring/Simple's channels: the same channel count
# with and without --proto simple (at 64 KiB on dgx-h100:4 the tuner's own pick, LL, would take 16).
run sim_proto 120 "$cclab" sim all_reduce --topo dgx-h100:4 -b 64K -e 64K --compare "--algo TwoShot" \
  "--algo TwoShot --proto simple"
[ "$rc" = 0 ] || fail "sim --compare with and without --proto: exited $rc"
chans=$(grep -o "TwoShot/Simple/[0-9]*" "$work/sim_proto.out" | sort -u)
[ "$(echo "$chans" | wc -l)" = 1 ] && [ -n "$chans" ] ||
  fail "sim_proto: a custom algorithm's channels depend on --proto: $(echo $chans)"
[ "$chans" = "TwoShot/Simple/2" ] || fail "sim_proto: expected Ring/Simple's 2 channels at 64 KiB, got $chans"

# 3. Broken plugins and names: a clear error, no hang.
run bad_peers_host 60 env CCLAB_ALGO_PLUGIN="$plugins/bad_peers.so" NCCL_ALGO=BadPeers "$cclab" perf all_reduce -t 3 -b 1K -e 1K
[ "$rc" = 3 ] || fail "bad_peers on the host: exited $rc, expected 3"
expect_in bad_peers_host "rank 0 declares rank 1 a peer but rank 1's peers() does not declare rank 0"
run bad_peers_sim 60 env CCLAB_ALGO_PLUGIN="$plugins/bad_peers.so" "$cclab" sim all_reduce -b 1K -e 1K --algo BadPeers
[ "$rc" != 0 ] || fail "bad_peers in the simulator: exited 0"
expect_in bad_peers_sim "does not declare rank 0"
run bad_call_host 60 env CCLAB_ALGO_PLUGIN="$plugins/bad_call.so" NCCL_ALGO=BadCall "$cclab" perf all_reduce -t 4 -b 1K -e 1K
[ "$rc" = 3 ] || fail "bad_call on the host: exited $rc, expected 3"
expect_in bad_call_host "which its peers() did not declare"
run bad_call_sim 60 env CCLAB_ALGO_PLUGIN="$plugins/bad_call.so" "$cclab" sim all_reduce -b 1K -e 1K --algo BadCall
[ "$rc" != 0 ] || fail "bad_call in the simulator: exited 0"
expect_in bad_call_sim "which its peers() did not declare"
run missing 60 env CCLAB_ALGO_PLUGIN="$work/none.so" "$cclab" sim all_reduce -b 1K -e 1K --algo X
expect_in missing "cannot load $work/none.so"
run not_plugin 60 env CCLAB_ALGO_PLUGIN="$plugins/../../runtime/libcclab.so" "$cclab" sim all_reduce -b 1K -e 1K --algo X
expect_in not_plugin "exports no cclab_custom_algorithm()"
run twice 60 env CCLAB_ALGO_PLUGIN="$plugins/two_shot.so:$plugins/two_shot.so" "$cclab" sim all_reduce -b 1K -e 1K --algo TwoShot
expect_in twice "both define algorithm \"TwoShot\""
run typo 60 "$cclab" sim all_reduce -b 1K -e 1K --algo TwoShoot
expect_in typo "(custom algorithms: TwoShot)"

if [ "$failures" = 0 ]; then echo "custom_algorithms: all checks passed"; exit 0; fi
echo "custom_algorithms: $failures check(s) failed"
exit 1
