#!/usr/bin/env bash
# tests/install/readme_line_test.sh BUILD_DIR SOURCE_DIR - the README's "Using the library" line, exactly
# as written there (the line that starts with `cc docs/examples/allreduce.c`), compiles the example
# against the build tree and runs it: every element right, and it finds libcclab.so.0 without
# LD_LIBRARY_PATH. It runs in a scratch folder where docs/, runtime/ and build/ are the real ones.
set -euo pipefail
build="$(cd "$1" && pwd)"
src="$(cd "$2" && pwd)"
line="$(grep -m1 '^ *cc docs/examples/allreduce.c' "$src/README.md" | sed 's/^ *//')" ||
  { echo "readme_line_test: README.md has no line starting with 'cc docs/examples/allreduce.c'" >&2; exit 1; }
tmp="$(mktemp -d "${TMPDIR:-/tmp}/cclab_readme.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
ln -s "$src/docs" "$tmp/docs"
ln -s "$src/runtime" "$tmp/runtime"
ln -s "$build" "$tmp/build"
cd "$tmp"
echo "+ $line"
out="$(env -u LD_LIBRARY_PATH CCLAB_BACKEND=host bash -c "$line" 2>&1)" || { echo "$out" >&2; exit 1; }
echo "$out"
grep -q '^all_reduce of 1024 floats over 4 ranks: 0 wrong$' <<<"$out" ||
  { echo "readme_line_test: the example did not report 0 wrong" >&2; exit 1; }
