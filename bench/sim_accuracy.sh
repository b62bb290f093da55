#!/usr/bin/env bash
# bench/sim_accuracy.sh - cclab sim against public, measured NCCL results (bench/sim_accuracy.py; the data
# and its sources are in bench/sim_accuracy/). Builds the cclab tool if needed, then runs the in-sample
# table and the leave-one-curve-out fits (about 20-40 minutes on 2 cores: every fit evaluation simulates
# every curve). Options go to sim_accuracy.py: --check (in sample only, seconds), --fit, --loo, --agreement (the
# measurements' own disagreement, no simulation), --curves A,B.
# BUILD: the build directory (default build/).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=${BUILD:-$root/build}
if [ ! -x "$build/runtime/cli/cclab" ]; then
  [ -f "$build/build.ninja" ] || cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
  ninja -C "$build" cclab
fi
# The fits run the tool hundreds of times: a private copy, so that a rebuild meanwhile cannot change it.
snap=$(mktemp -d)
trap 'rm -rf "$snap"' EXIT
cp "$build/runtime/cli/cclab" "$snap/"
cp "$build"/runtime/libcclab.so* "$snap/" 2>/dev/null || true
LD_LIBRARY_PATH="$snap${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" python3 "$here/sim_accuracy.py" --cclab "$snap/cclab" "$@"
