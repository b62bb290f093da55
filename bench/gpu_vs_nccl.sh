#!/usr/bin/env bash
# bench/gpu_vs_nccl.sh - cclab's CUDA backend against NVIDIA's NCCL on the same GPUs, side by side.
#
#   bench/gpu_vs_nccl.sh BUILD_DIR NCCL_TESTS_BUILD_DIR [NGPUS]
#
# NCCL_TESTS_BUILD_DIR holds nccl-tests built against the real NCCL (all_reduce_perf, ...). For
# all_reduce, all_gather and reduce_scatter from 8 B to 1 GiB it runs `cclab perf` (CCLAB_BACKEND=cuda)
# and the nccl-tests binary with the same flags, and prints the out-of-place busbw of both and their
# ratio per size. Goal (issue 6): cclab >= 0.90 x NCCL at >= 64 MiB on one node.
set -euo pipefail
build="${1:?usage: gpu_vs_nccl.sh BUILD_DIR NCCL_TESTS_BUILD_DIR [NGPUS]}"
tests="${2:?usage: gpu_vs_nccl.sh BUILD_DIR NCCL_TESTS_BUILD_DIR [NGPUS]}"
if ! ngpu_found=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU'); then ngpu_found=0; fi
if [ "$ngpu_found" -eq 0 ]; then
  echo "gpu_vs_nccl: no NVIDIA GPU here (nvidia-smi lists none); this benchmark needs one" >&2
  exit 2
fi
ngpu="${3:-$ngpu_found}"
cclab="$build/runtime/cli/cclab"
flags=(-b 8 -e 1G -f 2 -n 20 -w 5 -c 0 -g "$ngpu")

# Out-of-place busbw by size from an nccl-tests style table (cclab perf prints the same columns).
busbw() { awk '/^ +[0-9]+ +[0-9]+ / { print $1, $8 }'; }

for coll in all_reduce all_gather reduce_scatter; do
  ours=$(CCLAB_BACKEND=cuda "$cclab" perf "$coll" "${flags[@]}" | busbw)
  theirs=$("$tests/${coll}_perf" "${flags[@]}" | busbw)
  echo "# $coll on $ngpu GPU(s): out-of-place busbw (GB/s)"
  printf "%12s %10s %10s %7s\n" bytes cclab nccl ratio
  join <(echo "$ours" | sort -k1,1) <(echo "$theirs" | sort -k1,1) | sort -n -k1,1 |
    awk '{ r = ($3 > 0) ? $2 / $3 : 0; printf "%12d %10.2f %10.2f %7.3f%s\n", $1, $2, $3, r,
           ($1 >= 67108864 && r < 0.9) ? "  < goal 0.90" : "" }'
done
