#!/usr/bin/env bash
# bench/host_sweep.sh - the host backend's all_reduce over the default sweep (8 B .. 64 MiB, factor 2),
# with 2 and 4 ranks, as threads of one process and as one process per rank, each run REPEAT times
# (default 3); prints the median time per size (out-of-place and in-place together) and checks that no
# size is slower than the next larger one ("no cliff"): time(size) <= time(2 x size) x (1 + TOL) + ABS,
# TOL default 0.10 and ABS default 0.25 us for the noise of a shared machine (the smallest sizes all take
# about the same time, a microsecond or a few, and trade places by a tenth of one). Sizes up to 512 KiB run SMALL_ITERS (default 200)
# iterations, the larger ones cclab perf's default 20: 20 calls of a few microseconds last less than
# one wake-up of a thread the scheduler moved, and the flat small sizes would trade places by noise.
#
#   bench/host_sweep.sh [BUILD_DIR] [--ranks "2 4"] [--modes "threads procs"] [--max 64M]   (max >= 1M)
#
# Extra environment (NCCL_PROTO, CCLAB_TOPO, ...) is passed to cclab perf as it is. Exits 1 when a
# cliff was found, so `REPEAT=5 bench/host_sweep.sh` can gate a change; timings stay here, in bench/,
# and the decisions they led to are checked without timing in tests/tuner (HostModel.*).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build" ranks="2 4" modes="threads procs" max=64M
while [ $# -gt 0 ]; do
  case "$1" in
    --ranks) ranks="$2"; shift ;;
    --modes) modes="$2"; shift ;;
    --max) max="$2"; shift ;;
    -*) echo "usage: $0 [BUILD_DIR] [--ranks \"2 4\"] [--modes \"threads procs\"] [--max 64M]" >&2; exit 2 ;;
    *) build="$1" ;;
  esac
  shift
done
cclab="$build/runtime/cli/cclab"
[ -x "$cclab" ] || { echo "missing $cclab: build first (scripts/setup.sh $build)" >&2; exit 2; }
export CCLAB_BACKEND="${CCLAB_BACKEND:-host}"
tol="${TOL:-0.10}" abs="${ABS:-0.25}"
cliffs=0
for n in $ranks; do
  for mode in $modes; do
    if [ "$mode" = threads ]; then place=(-g "$n"); else place=(--nprocs "$n" -g 1); fi
    rows=""
    for _ in $(seq "${REPEAT:-3}"); do
      # size, out-of-place time, in-place time
      rows+="$("$cclab" perf all_reduce -b 8 -e 512K -f 2 -n "${SMALL_ITERS:-200}" "${place[@]}" |
        awk '/^ *[0-9]/ { print $1, $6, $10 }')"$'\n'
      rows+="$("$cclab" perf all_reduce -b 1M -e "$max" -f 2 "${place[@]}" | awk '/^ *[0-9]/ { print $1, $6, $10 }')"$'\n'
    done
    echo "# $n ranks, $mode (median of ${REPEAT:-3} runs, out-of-place and in-place times together, us)"
    printf "%s" "$rows" | grep . | awk -v tol="$tol" -v abs="$abs" -v label="$n ranks $mode" '
      { t[$1] = t[$1] " " $2 " " $3; if (!($1 in seen)) { seen[$1] = 1; order[++n] = $1 } }
      function median(s,    a, k, i, j, x) {
        k = split(s, a, " ");
        for (i = 2; i <= k; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
        return (k % 2) ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
      }
      END {
        bad = 0
        for (i = 1; i <= n; i++) m[i] = median(t[order[i]])
        for (i = 1; i <= n; i++) {
          flag = ""
          if (i < n && m[i] > m[i + 1] * (1 + tol) + abs) { flag = "  CLIFF: slower than " order[i + 1] " B"; bad++ }
          printf "%12d %12.2f%s\n", order[i], m[i], flag
        }
        printf "# %s: %d cliff(s)\n", label, bad
        exit bad > 0
      }' || cliffs=$((cliffs + 1))
  done
done
[ "$cliffs" -eq 0 ] && echo "no cliff: every size is at most the next size's time (x $(awk -v t="$tol" 'BEGIN { print 1 + t }') + $abs us)"
exit $((cliffs > 0))
