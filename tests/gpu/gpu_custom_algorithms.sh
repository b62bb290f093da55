#!/usr/bin/env bash
# tests/gpu/gpu_custom_algorithms.sh CCLAB PLUGINS - custom algorithms on the CUDA backend
# (docs/custom-algorithms.md, "On the CUDA backend"). Exit 77 (skipped) without an NVIDIA GPU.
#  - a plugin's algorithm (PLUGINS/wrong_sum.so, never built in) is refused at init, the message naming
#    the plugin and CCLAB_CUSTOM_ALGOS;
#  - an unknown NCCL_ALGO lists the algorithms built into this build's CUDA backend;
#  - every algorithm built in (CCLAB_CUSTOM_ALGOS, read from that list) runs all_reduce on 2 and 3 ranks
#    for every datatype and op, checked by cclab perf, and the TUNING log names it.
set -u
cclab=$1
plugins=$2
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU [0-9]')
if [ "$gpus" -eq 0 ]; then
  echo "SKIPPED: no NVIDIA GPU (nvidia-smi found none); this test needs one (docs/gpu.md)"
  exit 77
fi
export CCLAB_BACKEND=cuda CCLAB_TIMEOUT=120 CUDA_DEVICE_MAX_CONNECTIONS=32
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
out=$(CCLAB_ALGO_PLUGIN="$plugins/wrong_sum.so" NCCL_ALGO=WrongSum timeout 120 "$cclab" perf all_reduce -g 2 -b 1K -e 1K 2>&1)
rc=$?
[ "$rc" != 0 ] || fail "a plugin's algorithm on the CUDA backend: exited 0"
printf '%s\n' "$out" | grep -q "from the plugin .*wrong_sum.so, which the CUDA backend cannot run.*CCLAB_CUSTOM_ALGOS" ||
  { fail "the refusal does not name the plugin and CCLAB_CUSTOM_ALGOS"; printf '%s\n' "$out" | tail -5; }
out=$(NCCL_ALGO=NoSuchAlgorithm timeout 120 "$cclab" perf all_reduce -g 2 -b 1K -e 1K 2>&1)
list=$(printf '%s\n' "$out" | sed -n 's/.*(custom algorithms built into the CUDA backend: \([^)]*\)).*/\1/p' | head -1)
[ -n "$list" ] || { fail "an unknown NCCL_ALGO does not list the built-in custom algorithms"; printf '%s\n' "$out" | tail -5; }
case "$list" in none*) names="" ;; *) names=$(printf '%s' "$list" | tr -d ' ' | tr ',' ' ') ;; esac
echo "built into this CUDA backend: ${names:-none}"
for name in $names; do
  for ranks in 2 3; do
    out=$(NCCL_ALGO=$name NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=TUNING timeout 300 \
      "$cclab" perf all_reduce -g $ranks -b 8 -e 4M -f 16 -n 1 -w 1 -c 1 -d all -o all 2>&1)
    rc=$?
    [ "$rc" = 0 ] || fail "$name, $ranks ranks: cclab perf exited $rc"
    printf '%s\n' "$out" | grep -q '^# Out of bounds values : 0 OK$' || fail "$name, $ranks ranks: wrong values"
    printf '%s\n' "$out" | grep -q "Algo $name proto Simple" || fail "$name, $ranks ranks: the log does not name it"
    [ "$failures" = 0 ] || printf '%s\n' "$out" | grep -v INFO | tail -20
  done
done
if [ "$failures" = 0 ]; then echo "gpu_custom_algorithms: all checks passed"; exit 0; fi
echo "gpu_custom_algorithms: $failures check(s) failed"
exit 1
