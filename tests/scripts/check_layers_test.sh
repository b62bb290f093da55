#!/usr/bin/env bash
# tests/scripts/check_layers_test.sh SOURCE_DIR - the tree's folders are layers (scripts/check_layers.py
# passes on the sources), and the checker catches an include that points up: a copy of two layers
# where runtime/base includes runtime/core must fail, naming the file and both layers.
set -euo pipefail
src="$1"
python3 "$src/scripts/check_layers.py" "$src" >/dev/null || { echo "check_layers fails on the sources" >&2; exit 1; }
tmp="$(mktemp -d "${TMPDIR:-/tmp}/cclab_layers.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/runtime/base" "$tmp/runtime/core" "$tmp/kernels"
printf '#include "kernels/fifo.h"\n' >"$tmp/runtime/core/comm.h"
printf '#include "kernels/fifo.h"\n' >"$tmp/runtime/base/log.h"
python3 "$src/scripts/check_layers.py" "$tmp" >/dev/null || { echo "check_layers fails on a clean tree" >&2; exit 1; }
printf '#include "core/comm.h"\n' >>"$tmp/runtime/base/log.h"
if out="$(python3 "$src/scripts/check_layers.py" "$tmp" 2>&1)"; then
  echo "check_layers passed an include from runtime/base up to runtime/core" >&2
  exit 1
fi
grep -q 'runtime/base/log.h:2: includes "core/comm.h": runtime/base (level 1)' <<<"$out" ||
  { echo "check_layers did not name the upward include: $out" >&2; exit 1; }
echo "check_layers: the sources pass; an upward include is caught"
