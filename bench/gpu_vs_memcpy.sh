#!/usr/bin/env bash
# bench/gpu_vs_memcpy.sh [BUILD_DIR [NRANKS]] - cclab's CUDA data path against cudaMemcpy on ONE GPU,
# side by side in one run: the comparison a single-GPU machine allows (NVIDIA's NCCL refuses two
# ranks on one GPU, so bench/gpu_vs_nccl.sh needs several GPUs).
#
# `cclab perf sendrecv` with NRANKS ranks (default 2) on GPU 0 (CUDA_VISIBLE_DEVICES=0): each rank sends
# a buffer to the next through the FIFO in the receiver's memory, from 1 MiB to 1 GiB; and
# cclab_gpu_memcpy_bw (bench/gpu_memcpy_bw.cc): NRANKS cudaMemcpyAsync device-to-device copies of the
# same sizes at once. Prints both algbw columns (bytes per rank / time) and their ratio per size.
# cclab's path copies each byte twice (send buffer -> FIFO -> receive buffer) where memcpy copies it
# once, so on one GPU, bound by its memory, 0.5 is the ceiling of the ratio; how close it comes says
# how well the kernels' copy loops use the memory.
set -euo pipefail
build="${1:-build}"
nranks="${2:-2}"
cclab="$build/runtime/cli/cclab"
peer="$build/bench/cclab_gpu_memcpy_bw"
[ -x "$cclab" ] || { echo "gpu_vs_memcpy: no $cclab (build first)" >&2; exit 2; }
[ -x "$peer" ] || { echo "gpu_vs_memcpy: no $peer (a build without CUDA?)" >&2; exit 2; }
if ! nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  echo "gpu_vs_memcpy: no NVIDIA GPU here (nvidia-smi lists none); this benchmark needs one" >&2
  exit 2
fi
export CUDA_VISIBLE_DEVICES="${CUDA_VISIBLE_DEVICES:-0}"
ours=$(CCLAB_BACKEND=cuda "$cclab" perf sendrecv -g "$nranks" -b 1M -e 1G -f 2 -n 20 -w 5 -c 0 |
  awk '/^ +[0-9]+ +[0-9]+ / { print $1, $7 }')
theirs=$("$peer" 1M 1G "$nranks" 20 | awk '/^ +[0-9]+ / { print $1, $3 }')
echo "# sendrecv, $nranks ranks on GPU $CUDA_VISIBLE_DEVICES: cclab (CUDA backend) vs cudaMemcpyAsync D2D, algbw (GB/s)"
printf "%12s %10s %10s %7s\n" bytes cclab memcpy ratio
join <(echo "$ours" | sort -k1,1) <(echo "$theirs" | sort -k1,1) | sort -n -k1,1 |
  awk '{ r = ($3 > 0) ? $2 / $3 : 0; printf "%12d %10.2f %10.2f %7.3f\n", $1, $2, $3, r }'
