#!/usr/bin/env bash
# bench/allreduce_vs_mpi.sh - cclab's all_reduce (host backend, one process per rank) side by side with
# Open MPI's MPI_Allreduce, in one run on this machine: 2 and 4 ranks, at 8 B (latency) and 64 MiB
# (bus bandwidth), float sum.
#
#   bench/allreduce_vs_mpi.sh [BUILD_DIR] [--net]
#
# Default: shared memory on both sides (cclab's SHM transport, Open MPI's vader BTL). --net: both over
# TCP on the loopback interface, as between hosts - cclab's NET/Socket transport (NCCL_P2P_DISABLE=1
# NCCL_SHM_DISABLE=1, so even processes of one host connect through the network transport, as in
# NCCL) against Open MPI's TCP BTL (--mca btl tcp,self).
#
# Prints, per (ranks, size): time and busbw for each, and the ratios cclab/Open MPI (busbw: higher is
# better for cclab; time: lower is better for cclab). Both are timed the nccl-tests way: warm-up, then
# the mean over the iterations; each measurement is repeated REPEAT times (default 3), alternating
# the two, and the median run (by time) is kept, since a 2-core machine is noisy.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$root/build" net=0
for a in "$@"; do
  case "$a" in
    --net) net=1 ;;
    -*) echo "usage: $0 [BUILD_DIR] [--net]" >&2; exit 2 ;;
    *) build="$a" ;;
  esac
done
cclab="$build/runtime/cli/cclab"
mpi="$build/bench/bench_mpi_allreduce"
for f in "$cclab" "$mpi"; do
  [ -x "$f" ] || { echo "missing $f: build first (scripts/setup.sh $build)" >&2; exit 2; }
done
cclab_env=() mpi_transport=()
if [ "$net" = 1 ]; then
  cclab_env=(NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 NCCL_SOCKET_IFNAME=lo)
  mpi_transport=(--mca btl tcp,self --mca btl_tcp_if_include lo)
  echo "# transport: TCP over lo (cclab NET/Socket, Open MPI btl tcp)"
else
  echo "# transport: shared memory (cclab SHM, Open MPI btl vader)"
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun_flags=(--oversubscribe --bind-to none "${mpi_transport[@]}" -np)

# cclab perf prints the nccl-tests table; take the out-of-place time (us) and busbw of the one row.
median() {  # lines "time busbw" on stdin -> the line with the median time
  sort -g | awk '{ l[NR] = $0 } END { print l[int((NR + 1) / 2)] }'
}
cclab_row() {  # ranks bytes iters
  env "${cclab_env[@]}" "$cclab" perf all_reduce -b "$2" -e "$2" -n "$3" -w 5 -c 1 --nprocs "$1" -g 1 |
    awk '/^ *[0-9]/ { print $6, $8 }'
}
mpi_row() {  # ranks bytes iters
  mpirun "${mpirun_flags[@]}" "$1" "$mpi" "$2" "$3" 5 | awk '{ print $2, $4 }'
}

printf "%-6s %-10s | %12s %10s | %12s %10s | %9s %9s\n" ranks size "cclab us" "busbw" "OpenMPI us" "busbw" \
  "busbw x" "time x"
for n in 2 4; do
  for bytes in 8 67108864; do
    iters=$([ "$bytes" -gt 1000000 ] && echo 20 || echo 2000)
    crows="" mrows=""
    for _ in $(seq "${REPEAT:-3}"); do
      crows+="$(cclab_row "$n" "$bytes" "$iters")"$'\n'
      mrows+="$(mpi_row "$n" "$bytes" "$iters")"$'\n'
    done
    read -r ct cb < <(printf "%s" "$crows" | grep . | median)
    read -r mt mb < <(printf "%s" "$mrows" | grep . | median)
    awk -v n="$n" -v s="$bytes" -v ct="$ct" -v cb="$cb" -v mt="$mt" -v mb="$mb" 'BEGIN {
      br = (mb > 0) ? cb / mb : 0; tr = (mt > 0) ? ct / mt : 0;
      printf "%-6d %-10d | %12.2f %10.3f | %12.2f %10.3f | %9.2f %9.2f\n", n, s, ct, cb, mt, mb, br, tr }'
  done
done
echo "busbw x = cclab busbw / Open MPI busbw (goal >= 1.0 at 64 MiB); time x = cclab time / Open MPI time (goal <= 1.0 at 8 B)"
