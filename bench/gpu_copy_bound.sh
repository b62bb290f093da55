#!/usr/bin/env bash
# bench/gpu_copy_bound.sh [BUILD_DIR] | --from PERF_LOG MEMCPY_LOG - cclab's CUDA collectives on ONE GPU
# against the copy bound their data path permits there, side by side in one run.
#
# With N ranks on one GPU every byte a collective moves goes through that GPU's memory, so the bound is
# the bytes cclab's ring must read and write there over the rate the GPU's own copies reach:
#   R(size)  = 2 x N x memcpy algbw, N concurrent cudaMemcpyAsync D2D copies of `size` bytes each
#              (bench/gpu_memcpy_bw.cc; a copy reads and writes each byte: 2 bytes of traffic per byte)
#   traffic  = the bytes the ring reads and writes (Simple, the FIFO in the receiver's memory), summed
#              over the N ranks, for the size column S of nccl-tests (out of place):
#     all_reduce      (6N - 4) x S  RS: step 0 reads input, writes FIFO (2 chunks of S/N); N-2 steps read
#                                   FIFO + input, write FIFO (3); the last reads FIFO + input, writes
#                                   output and FIFO (4). AG: N-2 steps read FIFO, write output + FIFO
#                                   (3); the last reads FIFO, writes output (2). (6N-4) chunks per rank.
#     all_gather      (3N - 1) x S  the own chunk to output and FIFO (3), N-2 forwards (3), the last (2)
#     reduce_scatter  (3N - 1) x S  the first send (2), N-2 reduce-forwards (3), the last into output (3)
#     broadcast       (3N - 1) x S  root: input to output and FIFO (3 x S), N-2 forwards (3 x S), last (2 x S)
#     sendrecv        4N x S        each rank: input to the peer's FIFO (2 x S), FIFO to output (2 x S)
#   bound algbw = S x R / traffic, and the ratio = cclab's algbw / bound algbw (1.0: as fast as the
#   GPU's memory allows for this data path; a direct GPU-to-GPU algorithm without FIFO staging would
#   move fewer bytes, so this is the bound of cclab's - and NCCL's Simple - algorithm, not of the problem).
#
# Run on a GPU machine: for each collective in CCLAB_BOUND_COLLS (default all_reduce all_gather
# reduce_scatter broadcast sendrecv) and rank count in CCLAB_BOUND_RANKS (default 2 4 8), 1 MiB .. 1 GiB.
# --from reads the logs of scripts/gpu_lease.sh's perf and memcpy steps instead.
set -euo pipefail
colls=${CCLAB_BOUND_COLLS:-all_reduce all_gather reduce_scatter broadcast sendrecv}
ranks=${CCLAB_BOUND_RANKS:-2 4 8}

# Reads "##### COLL -g N" sections of cclab perf tables and "##### memcpy xN" sections, prints the table.
table() {
  awk -v want_colls="$colls" -v want_ranks="$ranks" '
    BEGIN { nc = split(want_colls, C, " "); nr = split(want_ranks, G, " ") }
    /^##### memcpy x/ { sec = "m"; n = substr($3, 2) + 0; next }
    /^##### / { sec = "p"; coll = $2; n = $4 + 0; next }
    sec == "m" && /^ +[0-9]+ +[0-9.]+ +[0-9.]+$/ { mem[n, $1] = $3; next }
    sec == "p" && /^ +[0-9]+ +[0-9]+ / { perf[coll, n, $1] = $7; sizes[$1] = 1; next }
    END {
      printf "%-15s %3s %12s %10s %10s %10s %7s\n", "collective", "N", "bytes", "algbw", "bound", "memcpy", "ratio"
      for (i = 1; i <= nc; ++i) for (j = 1; j <= nr; ++j) {
        c = C[i]; n = G[j]
        for (s = 1048576; s <= 1073741824; s *= 2) {
          if (!((c, n, s) in perf) || !((n, s) in mem)) continue
          m = mem[n, s]; R = 2 * n * m
          if (c == "all_reduce") t = 6 * n - 4
          else if (c == "sendrecv") t = 4 * n
          else t = 3 * n - 1
          b = R / t
          printf "%-15s %3d %12d %10.1f %10.1f %10.1f %7.2f\n", c, n, s, perf[c, n, s], b, m, perf[c, n, s] / b
        }
      }
    }' "$@"
}

if [ "${1:-}" = "--from" ]; then
  [ $# -eq 3 ] || { echo "usage: $0 --from PERF_LOG MEMCPY_LOG" >&2; exit 2; }
  table "$2" "$3"
  exit 0
fi
build="${1:-build}"
cclab="$build/runtime/cli/cclab"
peer="$build/bench/cclab_gpu_memcpy_bw"
[ -x "$cclab" ] && [ -x "$peer" ] || { echo "gpu_copy_bound: build $cclab and $peer first (CUDA build)" >&2; exit 2; }
nvidia-smi -L 2>/dev/null | grep -q '^GPU' || { echo "gpu_copy_bound: no NVIDIA GPU here" >&2; exit 2; }
export CUDA_VISIBLE_DEVICES="${CUDA_VISIBLE_DEVICES:-0}"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
for n in $ranks; do
  echo "##### memcpy x$n" >>"$tmp"
  "$peer" 1M 1G "$n" 10 >>"$tmp"
  for c in $colls; do
    echo "##### $c -g $n" >>"$tmp"
    CUDA_DEVICE_MAX_CONNECTIONS=32 CCLAB_BACKEND=cuda "$cclab" perf "$c" -g "$n" -b 1M -e 1G -f 2 -n 10 -w 3 -c 0 >>"$tmp"
  done
done
echo "# cclab on one GPU ($(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)): out-of-place algbw (GB/s) against the copy bound of its data path"
table "$tmp"
