#!/usr/bin/env bash
# scripts/run.sh - the main job on the built-in default: install what is missing, build the `cclab`
# tool alone (not the tests: scripts/test.sh builds those), then
#   1. an all_reduce sweep (8 B .. 512 MiB, x4) in the simulator, on the built-in model of two DGX-H100
#      machines: simulated time, algorithm, protocol, channels and the cost model's prediction per size;
#   2. its trace, written to build/main/all_reduce.cctrace;
#   3. a picture of that trace in the visualiser: build/main/all_reduce.png (headless: under Xvfb);
#   4. the command that opens the trace in `cclab viz`.
#
#   scripts/run.sh                   the main job above
#   scripts/run.sh --host [ARGS]     the host backend instead: an nccl-tests style all_reduce sweep with
#                                    CPU threads playing 4 GPUs (ARGS replace `all_reduce -b 8 -e 64M -f 2 -g 4`)
#   scripts/run.sh sim ARGS...       any `cclab sim` run (scripts/run.sh sim --help)
#
# Environment: CCLAB_BUILD_DIR (default build/), CCLAB_CUDA_ARCHS (optimised CUDA kernels for these
# architectures; unset: optimised for the GPU nvidia-smi reports, else the quick compile check).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${CCLAB_BUILD_DIR:-$root/build}"
source "$root/scripts/cuda_opts.sh"
CCLAB_TARGETS="cclab_cli" "$root/scripts/setup.sh" "$build" "${cuda_opts[@]}"
cclab="$build/runtime/cli/cclab"

if [ "${1:-}" = "--host" ]; then
  shift
  if (($#)); then exec env CCLAB_BACKEND=host "$cclab" perf "$@"; fi
  exec env CCLAB_BACKEND=host "$cclab" perf all_reduce -b 8 -e 64M -f 2 -g 4
fi
if [ "${1:-}" = "sim" ]; then
  shift
  exec "$cclab" sim "$@"
fi
if (($#)); then
  echo "usage: scripts/run.sh [--host [cclab perf args] | sim [cclab sim args]]" >&2
  exit 2
fi

out="$build/main"
mkdir -p "$out"
trace="$out/all_reduce.cctrace"
png="$out/all_reduce.png"
"$cclab" sim all_reduce --topo dgx-h100 --nodes 2 -b 8 -e 512M -f 4 --trace "$trace"
echo "# trace: $trace ($("$cclab" trace info "$trace" | sed -n 's/^events *//p'))"
# One frame of the visualiser at 90% of the run (inside the largest all_reduce): the topology, each
# link's load, chunks in flight. Without a display it renders under Xvfb.
shot=("$cclab" viz "$trace" --at 90% --screenshot "$png")
if [ -n "${DISPLAY:-}" ]; then
  "${shot[@]}" >/dev/null
elif command -v xvfb-run >/dev/null; then
  xvfb-run -a -s "-screen 0 1600x1000x24" "${shot[@]}" >/dev/null
else
  shot=()
fi
if ((${#shot[@]})) && [ -f "$png" ]; then
  echo "# picture: $png (cclab viz at 90% of the run)"
else
  echo "# picture: not made (the visualiser needs a display or xvfb-run)"
fi
echo "# watch it: $cclab viz $trace"
echo "# the same sweep with CPU threads moving real bytes: scripts/run.sh --host"
