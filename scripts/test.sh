#!/usr/bin/env bash
# scripts/test.sh - set up and build, then run the whole test suite with ctest.
# Extra arguments go to ctest, e.g. scripts/test.sh -L runtime   or   scripts/test.sh -R abi
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${CCLAB_BUILD_DIR:-$root/build}"
# Without CCLAB_CUDA_ARCHS in the environment the CUDA kernels are built as a compile check: PTX for one
# virtual architecture, unoptimised (CCLAB_CUDA_QUICK) - nvcc's front end still checks every line with
# warnings as errors, in 1/40 of the time. On a GPU machine set it, e.g.
# CCLAB_CUDA_ARCHS=90 scripts/test.sh -L gpu (docs/gpu.md), for optimised SASS.
if [ -n "${CCLAB_CUDA_ARCHS:-}" ]; then
  cuda_opts=(-DCCLAB_CUDA_ARCHS="$CCLAB_CUDA_ARCHS" -DCCLAB_CUDA_QUICK=OFF)
else
  cuda_opts=(-DCCLAB_CUDA_ARCHS=80-virtual -DCCLAB_CUDA_QUICK=ON)
fi
"$root/scripts/setup.sh" "$build" "${cuda_opts[@]}"
cd "$build"
exec ctest --output-on-failure -j "${CCLAB_TEST_JOBS:-2}" "$@"
