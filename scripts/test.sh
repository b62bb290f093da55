#!/usr/bin/env bash
# scripts/test.sh - set up and build, then run the whole test suite with ctest.
# Extra arguments go to ctest, e.g. scripts/test.sh -L runtime   or   scripts/test.sh -R abi
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${CCLAB_BUILD_DIR:-$root/build}"
# The CUDA kernels: optimised where a GPU is (or CCLAB_CUDA_ARCHS says), else a compile check
# (scripts/cuda_opts.sh). On a GPU machine, e.g. CCLAB_CUDA_ARCHS=90 scripts/test.sh -L gpu (docs/gpu.md).
source "$root/scripts/cuda_opts.sh"
"$root/scripts/setup.sh" "$build" "${cuda_opts[@]}"
cd "$build"
exec ctest --output-on-failure -j "${CCLAB_TEST_JOBS:-2}" "$@"
