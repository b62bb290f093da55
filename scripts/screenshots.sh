#!/usr/bin/env bash
# scripts/screenshots.sh - the visualiser's documentation images (docs/images/viz-*.png), rendered
# headless by `cclab viz --screenshot` under xvfb-run.
#
#   scripts/screenshots.sh RING.cctrace TREE.cctrace [CURVES_FILE...]
#       RING: a ring all_reduce on one machine (dgx-h100); TREE: a tree all_reduce across machines
#       (dgx-h100:4); CURVES_FILE: cclab sim --csv/--json or cclab perf output for the curves view
#   scripts/screenshots.sh --sim      make the traces and curves with `cclab sim` first
#   scripts/screenshots.sh --demo     synthetic traces from the test tool viz_demo_trace (no simulator)
#   scripts/screenshots.sh --pat      PAT on 8 machines of one GPU (docs/images/viz-pat-*.png): the
#                                     channels view of an all_gather and a reduce_scatter, and the
#                                     all_gather's timeline, from `cclab sim` traces
#   scripts/screenshots.sh --degraded a degraded fabric (docs/images/viz-degraded.png, docs/cli-sim.md):
#                                     cclab sim --trace with --degrade on dgx-h100:2
#   scripts/screenshots.sh --labs     the labs' pictures (labs/NN-name/images/*.png), from the reference
#                                     solutions' runs (labs/solutions/), as labs/*/README.md say
#
# Environment: CCLAB_BUILD_DIR (default build/), CCLAB (the cclab executable, default
# $CCLAB_BUILD_DIR/runtime/cli/cclab), OUT (default docs/images; --labs: each lab's images/ folder).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${CCLAB_BUILD_DIR:-$root/build}"
cclab="${CCLAB:-$build/runtime/cli/cclab}"
out="${OUT:-$root/docs/images}"
size="1600x1000"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

die() { echo "screenshots.sh: $*" >&2; exit 1; }
[[ -x "$cclab" ]] || die "no cclab executable at $cclab (build it, or set CCLAB=...)"
"$cclab" viz --help >/dev/null 2>&1 || die "$cclab has no visualiser (configure with -DCCLAB_VIZ=ON)"
command -v xvfb-run >/dev/null || die "xvfb-run not found (apt-get install xvfb)"

# PAT on pcie-1gpu:8 (one GPU per machine, where NCCL turns PAT on): 1 MiB per rank, step level.
if [ "${1:-}" = "--pat" ]; then
  mkdir -p "$out"
  for coll in all_gather reduce_scatter; do
    "$cclab" sim $coll --topo pcie-1gpu:8 -b 8M -e 8M --algo PAT --level step --trace "$tmp/$coll.cctrace" \
      --no-progress >/dev/null
  done
  xvfb-run -a -s "-screen 0 ${size}x24" "$cclab" viz "$tmp/all_gather.cctrace" --size "$size" --view channels \
    --at 30% --channel 0 --screenshot "$out/viz-pat-all-gather-channels.png"
  xvfb-run -a -s "-screen 0 ${size}x24" "$cclab" viz "$tmp/reduce_scatter.cctrace" --size "$size" --view channels \
    --at 30% --channel 0 --screenshot "$out/viz-pat-reduce-scatter-channels.png"
  xvfb-run -a -s "-screen 0 ${size}x24" "$cclab" viz "$tmp/all_gather.cctrace" --size "$size" --view timeline \
    --at 30% --screenshot "$out/viz-pat-all-gather-timeline.png"
  exit 0
fi

# The labs: each picture is what its lab's README shows, made by the command it names there (run on the
# reference solution instead of the student's files).
if [ "${1:-}" = "--labs" ]; then
  solution="$root/labs/solutions/01-ring-allreduce"
  [[ -d "$solution" ]] || die "no $solution (the labs' pictures come from the reference solutions)"
  lab1="${OUT:-$root/labs/01-ring-allreduce/images}"
  mkdir -p "$lab1"
  "$cclab" lab check 01 --dir "$solution" --work "$tmp" >/dev/null || die "lab 1's solution does not pass its check"
  labshot() {  # labshot OUT.png ARGS...: cclab lab viz 01 ARGS --screenshot OUT.png
    local png="$1"
    shift
    xvfb-run -a -s "-screen 0 ${size}x24" "$cclab" lab viz 01 --work "$tmp" "$@" --screenshot "$png"
  }
  labshot "$lab1/ring-timeline.png" --view timeline --at 30%
  labshot "$lab1/ring-topology.png" --view topology --at 30%
  CCLAB_BACKEND=sim CCLAB_TOPO=dgx-h100 CCLAB_TRACE="$tmp/nccl.cctrace" \
    "$cclab" lab run 01 --ranks 8 --size 16M --nccl >/dev/null
  xvfb-run -a -s "-screen 0 ${size}x24" "$cclab" viz "$tmp/nccl.cctrace" --view topology --at 50% \
    --screenshot "$lab1/nccl-topology.png"
  # Lab 2: the skeleton's one-piece broadcast (its own check's trace), then the solution's pipeline.
  l2="$root/labs/02-pipelining/images" && mkdir -p "$l2"
  "$cclab" lab check 02 --work "$tmp/skeleton" >/dev/null || true  # fails (the skeleton is slow); its trace is what counts
  xvfb-run -a -s "-screen 0 ${size}x24" "$cclab" lab viz 02 --work "$tmp/skeleton" --view timeline --at 50% \
    --screenshot "$l2/one-piece-timeline.png"
  "$cclab" lab check 02 --dir "$root/labs/solutions/02-pipelining" --work "$tmp" >/dev/null ||
    die "lab 2's solution does not pass its check"
  xvfb-run -a -s "-screen 0 ${size}x24" "$cclab" lab viz 02 --work "$tmp" --view timeline --at 50% \
    --screenshot "$l2/pipeline-timeline.png"
  for p in LL LL128 Simple; do "$cclab" sim all_reduce --topo dgx-h100 -b 1K -e 256M -f 2 --algo ring --proto $p --csv "$tmp/$p.csv" --no-progress >/dev/null; done
  (cd "$tmp" && xvfb-run -a -s "-screen 0 ${size}x24" "$cclab" viz --curves LL.csv --curves LL128.csv --curves Simple.csv --view curves --screenshot "$root/labs/03-protocols/images/protocols-curves.png")
  l4="$root/labs/04-ring-vs-tree/images" && "$cclab" sim all_reduce --topo dgx-h100:4 -b 1M --algo tree --trace "$tmp/tree.cctrace" --no-progress >/dev/null && xvfb-run -a "$cclab" viz "$tmp/tree.cctrace" --view channels --at 50% --size 1400x900 --screenshot "$l4/tree-channels.png" && for a in ring tree; do "$cclab" sim all_reduce --topo dgx-h100:4 -b 64K -e 256M --level flow --algo $a --csv "$tmp/$a.csv" --no-progress >/dev/null; done && xvfb-run -a "$cclab" viz --curves "$tmp/ring.csv" --curves "$tmp/tree.csv" --view curves --size 1400x800 --screenshot "$l4/ring-vs-tree-curves.png"  # lab 4 (its README's commands)
  l5="$root/labs/05-topology-channels/images" && mkdir -p "$l5" && "$cclab" sim all_reduce --topo pcie-8gpu-2socket:2 -b 64M --trace "$tmp/pcie.cctrace" --no-progress >/dev/null && xvfb-run -a -s "-screen 0 ${size}x24" "$cclab" viz "$tmp/pcie.cctrace" --view topology --at 50% --size 1400x900 --screenshot "$l5/pcie-topology.png"  # lab 5 (its README's commands)
  # Lab 6 (its README's commands): rail-aligned rings on 4 DGX H100s with 4 NICs at 2:1 (the spine idle), and lab 5's
  # server on 4 machines at 2:1 (its rings change rails: the spine the busiest links).
  l6="$root/labs/06-across-nodes/images" && mkdir -p "$l6" &&
    "$cclab" sim all_reduce --topo dgx-h100:4 -b 64M --nics-per-node 4 --oversubscription 2 --trace "$tmp/rails.cctrace" --no-progress >/dev/null &&
    xvfb-run -a "$cclab" viz "$tmp/rails.cctrace" --view topology --at 50% --size 1400x900 --screenshot "$l6/rails-topology.png" &&
    "$cclab" sim all_reduce --topo pcie-8gpu-2socket:4 -b 64M --oversubscription 2 --trace "$tmp/crossnic.cctrace" --no-progress >/dev/null &&
    xvfb-run -a "$cclab" viz "$tmp/crossnic.cctrace" --view topology --at 50% --size 1400x900 --screenshot "$l6/crossnic-topology.png"
  # Lab 8 (its README's commands): the reference solution's plugin, then the curves and the topology view.
  l8="$root/labs/08-your-own-algorithm/images" && mkdir -p "$l8"
  "$cclab" lab check 08 --dir "$root/labs/solutions/08-your-own-algorithm" --work "$tmp/l8" >/dev/null ||
    die "lab 8's solution does not pass its check"
  (
    export CCLAB_ALGO_PLUGIN="$tmp/l8/08-your-own-algorithm/my_allreduce.so"
    cd "$tmp" || exit 1
    "$cclab" sim all_reduce --topo dgx-h100:4 -b 4K -e 256M -f 4 --algo MyAllReduce --proto simple --csv MyAllReduce.csv --no-progress >/dev/null
    "$cclab" sim all_reduce --topo dgx-h100:4 -b 4K -e 256M -f 4 --algo ring --proto simple --csv Ring-Simple.csv --no-progress >/dev/null
    "$cclab" sim all_reduce --topo dgx-h100:4 -b 4K -e 256M -f 4 --csv cclab-choice.csv --no-progress >/dev/null
    xvfb-run -a "$cclab" viz --curves Ring-Simple.csv --curves MyAllReduce.csv --curves cclab-choice.csv --view curves \
      --size 1400x800 --screenshot "$l8/rhd-curves.png"
    "$cclab" sim all_reduce --topo dgx-h100:4 -b 64M -e 64M --algo MyAllReduce --trace rhd.cctrace --no-progress >/dev/null
    xvfb-run -a "$cclab" viz rhd.cctrace --view topology --at 15% --size 1400x900 --screenshot "$l8/rhd-topology.png"
  )
  # Lab 7 (its README's commands): the grader's step with 64 KiB buckets, then the reference solution's.
  l7="$root/labs/07-debugging/images" && mkdir -p "$l7"
  (
    cd "$tmp" || exit 1
    export CCLAB_BACKEND=sim CCLAB_TOPO=dgx-h100
    CCLAB_TRACE=slow.cctrace "$cclab" lab run 07 --ranks 8 --size 16M --reference 64K --work "$tmp/l7" >/dev/null
    CCLAB_TRACE=fast.cctrace "$cclab" lab run 07 --ranks 8 --size 16M --dir "$root/labs/solutions/07-debugging" \
      --work "$tmp/l7" >/dev/null
    unset CCLAB_BACKEND CCLAB_TOPO
    for t in slow fast; do
      xvfb-run -a -s "-screen 0 ${size}x24" "$cclab" viz $t.cctrace --view timeline --at 50% --size 1400x800 \
        --screenshot "$l7/$t-timeline.png" || exit 1
    done
  )
  exit 0
fi

# A degraded fabric: m0.nic3 at half bandwidth from the start, m1.gpu5's NVLinks at a quarter from 200 us
# (64 MiB ring all_reduce, step level), drawn after the second change.
if [ "${1:-}" = "--degraded" ]; then
  mkdir -p "$out"
  "$cclab" sim all_reduce --topo dgx-h100:2 -b 64M --algo ring --proto simple --level step --no-progress \
    --degrade m0.nic3=0.5 --degrade m1.gpu5=0.25@200us --trace "$tmp/degraded.cctrace" >/dev/null
  xvfb-run -a -s "-screen 0 ${size}x24" "$cclab" viz "$tmp/degraded.cctrace" --size "$size" --view topology \
    --at 60% --screenshot "$out/viz-degraded.png"
  exit 0
fi

curves=()
case "${1:-}" in
  --sim)
    # A ring all_reduce on one DGX H100 and a tree all_reduce across four, 64 MiB each, step level so
    # that the trace has every step; and busbw curves of both algorithms for the curves view.
    "$cclab" sim all_reduce --topo dgx-h100 -b 64M -e 64M --algo ring --proto simple --level step \
      --trace "$tmp/ring.cctrace" --no-progress >/dev/null
    "$cclab" sim all_reduce --topo dgx-h100:4 -b 64M -e 64M --algo tree --proto simple --level step \
      --trace "$tmp/tree.cctrace" --no-progress >/dev/null
    "$cclab" sim all_reduce --topo dgx-h100 -b 1K -e 1G -f 4 --algo ring --csv "$tmp/ring-dgx-h100.csv" \
      --no-progress >/dev/null
    "$cclab" sim all_reduce --topo dgx-h100:4 -b 1K -e 1G -f 4 --algo tree --json "$tmp/tree-dgx-h100x4.json" \
      --no-progress >/dev/null
    # An NVLS all_reduce on one DGX H100 (the switch reduces: docs/simulator.md "NVLS").
    "$cclab" sim all_reduce --topo dgx-h100 -b 64M -e 64M --algo nvls --level step \
      --trace "$tmp/nvls.cctrace" --no-progress >/dev/null
    nvls="$tmp/nvls.cctrace"
    # NVLS-Tree on two DGX H100 (each machine's switch, trees across the NICs: docs/visualiser.md).
    "$cclab" sim all_reduce --topo dgx-h100:2 -b 64M -e 64M --algo nvlstree --level step \
      --trace "$tmp/nvlstree.cctrace" --no-progress >/dev/null
    nvlstree="$tmp/nvlstree.cctrace"
    ring="$tmp/ring.cctrace" tree="$tmp/tree.cctrace"
    curves=("$tmp/ring-dgx-h100.csv" "$tmp/tree-dgx-h100x4.json")
    ;;
  --demo)
    demo="$build/tests/viz/viz_demo_trace"
    [[ -x "$demo" ]] || die "no $demo (build the target viz_demo_trace)"
    "$demo" "$tmp/ring.cctrace" --topo dgx-h100 --algo ring --channels 8 >/dev/null
    "$demo" "$tmp/tree.cctrace" --topo dgx-h100:4 --algo tree --channels 4 >/dev/null
    ring="$tmp/ring.cctrace" tree="$tmp/tree.cctrace"
    ;;
  ""|-h|--help)
    sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
  *)
    (($# >= 2)) || die "give RING.cctrace TREE.cctrace (or --sim / --demo)"
    ring="$1" tree="$2"
    shift 2
    curves=("$@")
    ;;
esac

mkdir -p "$out"
shot() {  # shot NAME TRACE ARGS...
  local name="$1" trace="$2"
  shift 2
  xvfb-run -a -s "-screen 0 ${size}x24" "$cclab" viz "$trace" --size "$size" --screenshot "$out/$name.png" "$@"
}
shot viz-topology "$ring" --view topology --at 45%
shot viz-channels "$ring" --view channels --at 45%
shot viz-links "$ring" --view links --at 45%
shot viz-timeline "$ring" --view timeline --at 45%
shot viz-topology-multinode "$tree" --view topology --at 40%
shot viz-channels-tree "$tree" --view channels --at 40% --channel 0
if [[ -n "${nvls:-}" ]]; then
  shot viz-nvls-timeline "$nvls" --view timeline --at 50%
  shot viz-nvls-topology "$nvls" --view topology --at 50%
fi
if [[ -n "${nvlstree:-}" ]]; then
  shot viz-nvlstree-topology "$nvlstree" --view topology --at 50%
fi
if ((${#curves[@]})); then
  args=()
  for c in "${curves[@]}"; do args+=(--curves "$c"); done
  shot viz-curves "$ring" --view curves "${args[@]}"
fi
