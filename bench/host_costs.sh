#!/usr/bin/env bash
# bench/host_costs.sh - measures, on this machine, the constants of the tuner's host model (HostCosts
# in runtime/src/graph/tuning.h; the values in tuning.cc and the run they came from: docs/tuner.md,
# section 6). Every number is the median of REPEAT (default 5) runs of `cclab perf all_reduce` with one
# process per rank (as bench/allreduce_vs_mpi.sh runs), the configurations interleaved so that a busy
# machine slows them alike; one channel unless said:
#
#   launch_us        1 rank, 8 B: the call's own cost (no peer)
#   hop_us           2 ranks (<= the cores), 8 B, per algorithm x protocol: (t - launch) / 2 hops
#   oversub_hop_us   2 x cores ranks, 8 B: (t - launch) / hops, 2(k-1) for Ring, 2 x the depth of the
#                    host's tree (up to 3 children a rank) for Tree
#   channel_us       2 ranks, 8 B, Tree/Simple on 2 channels minus on 1, less the 2 hops' difference
#                    between the two regimes (2 ranks x 2 channels outnumber 2 cores)
#   channel_gbps     2 ranks, Ring, per protocol: the slope between 16 KiB and 256 KiB (each rank's data
#                    loop moves the call's bytes once with 2 ranks), data that stays in the caches
#
#   bench/host_costs.sh [BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
cclab="$build/runtime/cli/cclab"
[ -x "$cclab" ] || { echo "missing $cclab: build first (scripts/setup.sh $build)" >&2; exit 2; }
export CCLAB_BACKEND=host
cores=$(nproc)
over=$((2 * cores))
rep="${REPEAT:-5}"

# name|ranks|bytes|iters|environment
specs=("launch|1|8|5000|")
for a in Tree Ring; do
  for p in LL LL128 Simple; do
    specs+=("$a/$p|2|8|5000|NCCL_ALGO=$a NCCL_PROTO=$p NCCL_MAX_NCHANNELS=1")
    specs+=("over $a/$p|$over|8|2000|NCCL_ALGO=$a NCCL_PROTO=$p NCCL_MAX_NCHANNELS=1")
  done
done
specs+=("2ch Tree/Simple|2|8|5000|NCCL_ALGO=Tree NCCL_PROTO=Simple NCCL_MIN_NCHANNELS=2 CCLAB_MIN_CHANNEL_BYTES=1")
for p in LL LL128 Simple; do
  specs+=("16K Ring/$p|2|16384|200|NCCL_ALGO=Ring NCCL_PROTO=$p NCCL_MAX_NCHANNELS=1")
  specs+=("256K Ring/$p|2|262144|50|NCCL_ALGO=Ring NCCL_PROTO=$p NCCL_MAX_NCHANNELS=1")
done
declare -A times m
for _ in $(seq "$rep"); do
  for s in "${specs[@]}"; do
    IFS='|' read -r name n bytes iters envs <<< "$s"
    t=$(env $envs "$cclab" perf all_reduce -b "$bytes" -e "$bytes" -n "$iters" -w 5 -c 1 -g 1 --nprocs "$n" |
      awk '/^ *[0-9]/ { print $6 }')
    times[$name]+="$t "
  done
done
for s in "${specs[@]}"; do
  name="${s%%|*}"
  m[$name]=$(echo ${times[$name]} | tr ' ' '\n' | sort -g | awk '{ l[NR] = $0 } END { print l[int((NR + 1) / 2)] }')
  printf "# %-18s median %10s us  (runs: %s)\n" "$name" "${m[$name]}" "${times[$name]}"
done
depth=0 reach=1 level=1
while [ "$reach" -lt "$over" ]; do level=$((level * 3)) reach=$((reach + level)) depth=$((depth + 1)); done
th=$((2 * depth)) rh=$((2 * (over - 1)))
echo "# $cores cores: 2 ranks take 2 hops; $over ranks $rh hops on the ring, $th on the tree"
f() { awk "BEGIN { printf \"%.2f\", $1 }"; }
L=${m[launch]}
echo "launch_us      $L"
for a in Tree Ring; do
  h="" o=""
  for p in LL LL128 Simple; do
    h+="$(f "(${m[$a/$p]} - $L) / 2")/"
    o+="$(f "(${m["over $a/$p"]} - $L) / $([ $a = Tree ] && echo $th || echo $rh)")/"
  done
  echo "hop_us         $a LL/LL128/Simple ${h%/}   oversub_hop_us ${o%/}"
done
echo "channel_us     $(f "${m["2ch Tree/Simple"]} - ${m[Tree/Simple]} - 2 * ((${m["over Tree/Simple"]} - $L) / $th - (${m[Tree/Simple]} - $L) / 2)")"
g=""
for p in LL LL128 Simple; do g+="$(f "(262144 - 16384) / ((${m["256K Ring/$p"]} - ${m["16K Ring/$p"]}) * 1000)")/"; done
echo "channel_gbps   LL/LL128/Simple ${g%/}"
