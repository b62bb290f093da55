#!/usr/bin/env bash
# tests/gpu/gpu_perf.sh CCLAB_BINARY COLLECTIVE - `cclab perf` on the CUDA backend, every value checked.
#
# Runs COLLECTIVE from 8 B to 64 MiB (x4 steps, 5 timed and 2 warm-up iterations, 1 checked iteration)
# with one rank per GPU, at least two ranks (two ranks share the GPU of a one-GPU machine). Prints the
# nccl-tests table and fails unless perf exits 0, every #wrong column that was checked is 0 and the
# footer says "# Out of bounds values : 0 OK". Exit 77 (skipped) without an NVIDIA GPU (docs/gpu.md).
set -u

if [ $# -ne 2 ]; then
  echo "usage: $0 CCLAB_BINARY COLLECTIVE" >&2
  exit 2
fi
bin=$1
coll=$2

if ! listing=$(nvidia-smi -L 2>/dev/null); then
  listing=""
fi
gpus=$(printf '%s\n' "$listing" | grep -c '^GPU [0-9]')
if [ "$gpus" -eq 0 ]; then
  echo "SKIPPED: no NVIDIA GPU (nvidia-smi found none); this test needs one (docs/gpu.md)"
  exit 77
fi
ranks=$gpus
[ "$ranks" -lt 2 ] && ranks=2

# NCCL_DEBUG=WARN makes a fallback to the host backend visible (see below).
cmd=("$bin" perf "$coll" -b 8 -e 64M -f 4 -c 1 -n 5 -w 2 -g "$ranks")
echo "gpu_perf.sh: $gpus GPU(s), $ranks ranks: CCLAB_BACKEND=cuda ${cmd[*]}"
output=$(CCLAB_BACKEND=cuda NCCL_DEBUG="${NCCL_DEBUG:-WARN}" "${cmd[@]}" 2>&1)
status=$?
printf '%s\n' "$output"

fail() {
  echo "FAILED: gpu_perf.sh $coll: $*"
  exit 1
}

[ "$status" -eq 0 ] || fail "cclab perf exited with status $status"
if printf '%s\n' "$output" | grep -q 'CCLAB_BACKEND=cuda: .*using host'; then
  fail "the CUDA backend did not start (cclab fell back to the host backend)"
fi

# A result row has 13 fields: size count type redop root, then time algbw busbw #wrong out of place and
# in place. In place, alltoall does not run and sendrecv is not checked: N/A there, 0 everywhere else.
case "$coll" in
  alltoall | sendrecv) inplace_na=1 ;;
  *) inplace_na=0 ;;
esac
bad=$(printf '%s\n' "$output" | awk -v na="$inplace_na" '
  /^[ \t]*[0-9]/ {
    rows++
    if (NF != 13) { print "malformed row: " $0; next }
    if ($9 != "0") print "out-of-place #wrong " $9 ": " $0
    if (!($13 == "0" || (na && $13 == "N/A"))) print "in-place #wrong " $13 ": " $0
  }
  END { if (rows == 0) print "no result rows" }')
[ -z "$bad" ] || fail "$bad"
printf '%s\n' "$output" | grep -q '^# Out of bounds values : 0 OK$' ||
  fail "the footer does not say '# Out of bounds values : 0 OK'"

echo "PASSED: gpu_perf.sh $coll ($ranks ranks on $gpus GPU(s))"
exit 0
