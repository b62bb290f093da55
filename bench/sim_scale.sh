#!/usr/bin/env bash
# bench/sim_scale.sh - how fast `cclab sim` simulates at cluster scale, and how that compares with
# SimGrid's own MPI simulator (SMPI 3.32) on the same platform.
#
#   bench/sim_scale.sh [--quick] [--no-smpi | --smpi-only] [--no-payload] [--no-build] [BUILD_DIR]
#
# Runs, one after the other (2-core machines: nothing in parallel):
#   1. cclab sim all_reduce -b 1G -e 1G --topo dgx-h100 --nodes 128 (1024 GPUs), timing only, once with
#      --algo ring and once with --algo tree. Goal: each under 10 s wall and 4 GiB peak memory.
#   2. SMPI: MPI_Allreduce of the same 1 GiB over the same 1024 GPUs, with SMPI's logical-ring
#      algorithm (smpi/allreduce:lr: reduce-scatter then all-gather around the ring, NCCL's ring
#      schedule) on the platform `cclab sim` builds, exported to SimGrid XML by
#      cclab_sim_platform_xml (sim/platform_xml.h: one host per GPU, one link per directed model
#      link, routes = the model's paths between ring neighbours, CM02 network model without
#      cross-traffic, as platform.h). bench/smpi_allreduce.c is compiled with smpicc; its buffers are
#      SMPI_SHARED_MALLOC blocks and its reduction a no-op user op, so SMPI times communication only.
#      Expect about a minute at 1024 hosts. Prints the wall-time ratio SMPI / cclab sim (ring).
#   3. cclab sim all_reduce -b 1G -e 1G --topo dgx-h100 --payload: 8 GPUs moving and reducing real
#      bytes, checked (#wrong must be 0).
# then a summary table: case, simulated busbw (GB/s), wall (s), peak memory (MiB), goal met.
#
# Wall time is the whole command's (date before and after: model building, fork, simulation, report);
# peak memory is the larger of what `cclab sim` reports for its simulating child ("# Simulated in W s
# wall, peak memory M MiB") and /usr/bin/time's maximum resident set size of the command. For SMPI the
# resident set counts the shared-malloc pages (one 1 GiB block per buffer, shared by every rank).
#
# Options:
#   --quick       256 GPUs (--nodes 32) for cclab sim and SMPI instead of 1024 (SMPI takes ~5 s)
#   --no-smpi     skip step 2;  --smpi-only: only step 2;  --no-payload: skip step 3
#   --no-build    do not run `cmake --build` first (default: build cclab_cli and cclab_sim_platform_xml)
#   BUILD_DIR     a configured build directory (default: $BUILD, else <repo>/build)
# Environment: OUT (where logs, JSON, the XML platform and the SMPI binary go; default
# BUILD_DIR/bench/sim_scale), SMPI_EXTRA (more smpirun flags), NODES (override the machine count),
# SIM_TIMEOUT (seconds one cclab sim run may take, default 300: past it the run is stopped and counts
# as GOAL MISSED), SMPI_TIMEOUT (default 900: past it the SMPI run counts as failed).
#
# Exit status: 0 when everything ran (a missed goal prints "GOAL MISSED" but still exits 0); 1 when a
# run failed or a payload result was wrong; 2 on bad usage or missing tools.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

quick=0 smpi=1 cclab_runs=1 payload=1 build_first=1 build="${BUILD:-}"
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1 ;;
    --no-smpi) smpi=0 ;;
    --smpi-only) cclab_runs=0 payload=0 ;;
    --no-payload) payload=0 ;;
    --no-build) build_first=0 ;;
    -h|--help) sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "sim_scale.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) build="$1" ;;
  esac
  shift
done
build="${build:-$root/build}"
build="$(cd "$build" 2>/dev/null && pwd)" || { echo "sim_scale.sh: no build directory $build (configure first: scripts/setup.sh)" >&2; exit 2; }
if [ "$smpi" = 0 ] && [ "$cclab_runs" = 0 ]; then
  echo "sim_scale.sh: --no-smpi with --smpi-only leaves nothing to run" >&2
  exit 2
fi

nodes="${NODES:-$([ "$quick" = 1 ] && echo 32 || echo 128)}"
gpus_per_node=8  # dgx-h100
ngpus=$((nodes * gpus_per_node))
bytes=1073741824
goal_wall_s=10
goal_mib=4096
sim_timeout="${SIM_TIMEOUT:-300}"
smpi_timeout="${SMPI_TIMEOUT:-900}"
out="${OUT:-$build/bench/sim_scale}"
mkdir -p "$out" || exit 2
cclab="$build/runtime/cli/cclab"
xmltool="$build/bench/cclab_sim_platform_xml"

[ -x /usr/bin/time ] || { echo "sim_scale.sh: needs /usr/bin/time (apt-get install time)" >&2; exit 2; }
command -v timeout >/dev/null || { echo "sim_scale.sh: needs timeout (coreutils)" >&2; exit 2; }
if [ "$smpi" = 1 ]; then
  for t in smpicc smpirun; do
    command -v "$t" >/dev/null || { echo "sim_scale.sh: $t not found (apt-get install libsimgrid-dev, or --no-smpi)" >&2; exit 2; }
  done
fi

if [ "$build_first" = 1 ]; then
  targets=()
  [ "$cclab_runs" = 1 ] || [ "$payload" = 1 ] && targets+=(cclab_cli)
  [ "$smpi" = 1 ] && targets+=(cclab_sim_platform_xml)
  echo "# building ${targets[*]} in $build"
  cmake --build "$build" --parallel 1 --target "${targets[@]}" > "$out/build.log" 2>&1 ||
    { tail -30 "$out/build.log" >&2; echo "sim_scale.sh: build failed (log: $out/build.log)" >&2; exit 1; }
fi
if [ "$cclab_runs" = 1 ] || [ "$payload" = 1 ]; then
  [ -x "$cclab" ] || { echo "sim_scale.sh: missing $cclab (build target cclab_cli)" >&2; exit 2; }
fi
if [ "$smpi" = 1 ]; then
  [ -x "$xmltool" ] || { echo "sim_scale.sh: missing $xmltool (build target cclab_sim_platform_xml)" >&2; exit 2; }
fi

failed=0
rows=()       # summary lines, tab-separated: case busbw wall peak goal
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
maxrss_mib() {  # /usr/bin/time -v output file -> MiB
  awk -F': *' '/Maximum resident set size/ { printf "%.1f", $2 / 1024 }' "$1"
}
goal_text() {  # wall peak -> "yes" or "GOAL MISSED (...)"
  awk -v w="$1" -v m="$2" -v gw="$goal_wall_s" -v gm="$goal_mib" 'BEGIN {
    why = "";
    if (w == "" || w + 0 >= gw) why = why sprintf("wall %s s >= %d s", w, gw);
    if (m == "" || m + 0 >= gm) why = why (why == "" ? "" : ", ") sprintf("peak %s MiB >= %d MiB", m, gm);
    print (why == "" ? "yes" : "GOAL MISSED (" why ")") }'
}

# One `cclab sim all_reduce` run: LABEL then its flags. Sets c_busbw c_wall c_peak c_wrong c_simwall c_what;
# returns 0 when it ran, 1 when it failed, 2 when it ran past SIM_TIMEOUT (timeout stops its whole
# process group: cclab and its simulating child).
run_cclab() {
  local label="$1"; shift
  local base="$out/$label"
  echo "# $label: cclab sim all_reduce $* -b 1G -e 1G --no-progress --json $base.json"
  local t0 t1 rc
  t0="$(now)"
  /usr/bin/time -v -o "$base.time" timeout -k 10 "$sim_timeout" \
    "$cclab" sim all_reduce "$@" -b 1G -e 1G --no-progress --json "$base.json" > "$base.txt" 2> "$base.err"
  rc=$?
  t1="$(now)"
  c_wall="$(elapsed "$t0" "$t1")"
  # The table row: size count type redop root time algbw busbw #wrong algo proto nch predicted level.
  read -r c_time c_busbw c_wrong c_what < <(awk '/^ *[0-9]/ { print $6, $8, $9, $10 "/" $11 "/" $12 "ch/" $14; exit }' "$base.txt")
  read -r c_simwall c_childmib < <(sed -n 's/^# Simulated in \([0-9.]*\) s wall, peak memory \([0-9.]*\) MiB.*/\1 \2/p' "$base.txt")
  local rss; rss="$(maxrss_mib "$base.time")"
  c_peak="$(awk -v a="${c_childmib:-0}" -v b="${rss:-0}" 'BEGIN { printf "%.1f", (a > b ? a : b) }')"
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    echo "  stopped after ${sim_timeout} s (SIM_TIMEOUT): GOAL MISSED"
    c_busbw="N/A"
    return 2
  fi
  if [ "$rc" -ne 0 ] || [ -z "${c_busbw:-}" ]; then
    echo "  FAILED (exit $rc): see $base.txt and $base.err" >&2
    tail -5 "$base.err" >&2
    [ "$rc" -eq 1 ] && [ -n "${c_busbw:-}" ] && echo "  (exit 1: a payload result was wrong)" >&2
    failed=1
    c_busbw="${c_busbw:-N/A}"
    return 1
  fi
  echo "  simulated ${c_time} us, busbw ${c_busbw} GB/s (${c_what}), wall ${c_wall} s (simulation ${c_simwall:-?} s), peak ${c_peak} MiB"
  return 0
}

echo "# sim_scale: all_reduce of $bytes B on dgx-h100 x $nodes machines ($ngpus GPUs); output in $out"
ring_wall=""
if [ "$cclab_runs" = 1 ]; then
  for algo in ring tree; do
    run_cclab "cclab_${algo}_${ngpus}" --topo dgx-h100 --nodes "$nodes" --algo "$algo"
    case $? in
      0) rows+=("cclab sim $algo, $ngpus GPUs, timing only	$c_busbw	$c_wall	$c_peak	$(goal_text "$c_wall" "$c_peak")")
         [ "$algo" = ring ] && ring_wall="$c_wall" ;;
      2) rows+=("cclab sim $algo, $ngpus GPUs, timing only	N/A	>${sim_timeout}	N/A	GOAL MISSED (stopped after ${sim_timeout} s)")
         [ "$algo" = ring ] && ring_wall=">$sim_timeout" ;;
      *) rows+=("cclab sim $algo, $ngpus GPUs, timing only	$c_busbw	${c_wall:-N/A}	${c_peak:-N/A}	FAILED") ;;
    esac
  done
fi

smpi_wall=""
if [ "$smpi" = 1 ]; then
  echo "# smpi: platform XML and hostfile for dgx-h100:$nodes"
  if "$xmltool" dgx-h100 "$nodes" "$out/platform_${ngpus}.xml" "$out/hosts_${ngpus}.txt" > "$out/xml.log" 2>&1 &&
     smpicc -O2 -o "$out/smpi_allreduce" "$root/bench/smpi_allreduce.c" > "$out/smpicc.log" 2>&1; then
    sed 's/^/  /' "$out/xml.log"
    smpi_cmd=(smpirun -np "$ngpus" -platform "$out/platform_${ngpus}.xml" -hostfile "$out/hosts_${ngpus}.txt"
              -no-privatize --cfg=network/model:CM02 --cfg=network/crosstraffic:0 --cfg=smpi/allreduce:lr
              --cfg=smpi/simulate-computation:no --cfg=smpi/shared-malloc:local --cfg=smpi/display-timing:yes
              ${SMPI_EXTRA:-} "$out/smpi_allreduce" "$bytes")
    echo "# smpi: ${smpi_cmd[*]}"
    t0="$(now)"
    /usr/bin/time -v -o "$out/smpi_${ngpus}.time" timeout -k 10 "$smpi_timeout" "${smpi_cmd[@]}" \
      > "$out/smpi_${ngpus}.log" 2>&1
    rc=$?
    t1="$(now)"
    smpi_wall="$(elapsed "$t0" "$t1")"
    line="$(grep '^smpi_allreduce bytes=' "$out/smpi_${ngpus}.log")"
    s_busbw="$(sed -n 's/.* busbw=\([0-9.]*\).*/\1/p' <<< "$line")"
    s_time="$(sed -n 's/.* time_us=\([0-9.]*\).*/\1/p' <<< "$line")"
    s_sim="$(sed -n 's/^The simulation took \([0-9.]*\) seconds.*/\1/p' "$out/smpi_${ngpus}.log")"
    s_peak="$(maxrss_mib "$out/smpi_${ngpus}.time")"
    if [ "$rc" -ne 0 ] || [ -z "$s_busbw" ]; then
      echo "  FAILED (exit $rc): see $out/smpi_${ngpus}.log" >&2
      grep -v 'Configuration change' "$out/smpi_${ngpus}.log" | tail -8 >&2
      failed=1
      smpi_wall=""
      rows+=("SMPI MPI_Allreduce lr, $ngpus hosts	N/A	N/A	N/A	FAILED")
    else
      echo "  simulated ${s_time} us, busbw ${s_busbw} GB/s, wall ${smpi_wall} s (simulation ${s_sim:-?} s after parsing), peak ${s_peak} MiB"
      rows+=("SMPI MPI_Allreduce lr, $ngpus hosts	$s_busbw	$smpi_wall	$s_peak	(reference)")
    fi
  else
    cat "$out/xml.log" "$out/smpicc.log" >&2 2>/dev/null
    echo "  FAILED: could not write the platform or compile bench/smpi_allreduce.c (logs in $out)" >&2
    failed=1
    rows+=("SMPI MPI_Allreduce lr, $ngpus hosts	N/A	N/A	N/A	FAILED")
  fi
fi

if [ "$payload" = 1 ]; then
  run_cclab "cclab_payload_8" --topo dgx-h100 --payload
  case $? in
    0) if [ "${c_wrong:-}" = 0 ]; then g="yes (#wrong 0)"; else g="WRONG (#wrong ${c_wrong:-?})"; failed=1; fi
       rows+=("cclab sim payload, 8 GPUs, real bytes	$c_busbw	$c_wall	$c_peak	$g") ;;
    2) rows+=("cclab sim payload, 8 GPUs, real bytes	N/A	>${sim_timeout}	N/A	GOAL MISSED (stopped after ${sim_timeout} s)") ;;
    *) rows+=("cclab sim payload, 8 GPUs, real bytes	$c_busbw	${c_wall:-N/A}	${c_peak:-N/A}	FAILED") ;;
  esac
fi

echo
echo "# all_reduce 1 GiB; goal for the timing-only cclab runs: wall < ${goal_wall_s} s and peak < ${goal_mib} MiB"
printf "%-42s %12s %9s %10s  %s\n" "case" "busbw GB/s" "wall s" "peak MiB" "goal met"
for r in "${rows[@]}"; do
  IFS=$'\t' read -r c b w m g <<< "$r"
  printf "%-42s %12s %9s %10s  %s\n" "$c" "$b" "$w" "$m" "$g"
done
if [ -n "$smpi_wall" ] && [ -n "$ring_wall" ]; then
  if [ "${ring_wall#>}" != "$ring_wall" ]; then
    awk -v s="$smpi_wall" -v c="${ring_wall#>}" -v n="$ngpus" 'BEGIN {
      printf "SMPI wall / cclab wall (ring, 1 GiB, %d GPUs): %.1f s / more than %d s = less than %.2fx\n", n, s, c, s / c }'
  else
    awk -v s="$smpi_wall" -v c="$ring_wall" -v n="$ngpus" 'BEGIN {
      printf "SMPI wall / cclab wall (ring, 1 GiB, %d GPUs): %.1f s / %.2f s = %.1fx\n", n, s, c, (c > 0 ? s / c : 0) }'
  fi
fi
if grep -q "GOAL MISSED" <<< "${rows[*]}"; then echo "GOAL MISSED: see the table above"; fi
[ "$failed" = 0 ] || echo "sim_scale.sh: some runs FAILED (logs in $out)" >&2
exit "$failed"
