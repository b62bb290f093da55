#!/usr/bin/env bash
# scripts/test.sh - set up and build, then run the whole test suite with ctest.
# Extra arguments go to ctest, e.g. scripts/test.sh -L runtime   or   scripts/test.sh -R abi
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${CCLAB_BUILD_DIR:-$root/build}"
"$root/scripts/setup.sh" "$build"
cd "$build"
exec ctest --output-on-failure -j "${CCLAB_TEST_JOBS:-2}" "$@"
