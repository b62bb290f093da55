#!/usr/bin/env bash
# scripts/run.sh - the main job on the built-in default: set up and build, then an nccl-tests style
# all_reduce sweep (8 B .. 64 MiB) on the host backend, 4 ranks as threads of one process.
# Extra arguments replace the default `cclab perf` arguments, e.g.
#   scripts/run.sh all_gather -b 1K -e 16M -f 4 -g 2
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${CCLAB_BUILD_DIR:-$root/build}"
"$root/scripts/setup.sh" "$build"
if (($#)); then
  exec "$build/runtime/cli/cclab" perf "$@"
fi
exec "$build/runtime/cli/cclab" perf all_reduce -b 8 -e 64M -f 2 -g 4
