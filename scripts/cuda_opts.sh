# scripts/cuda_opts.sh - sourced by run.sh and test.sh: the CMake options for the CUDA kernels, in
# `cuda_opts`. CCLAB_CUDA_ARCHS set: optimised for those architectures. Unset, on a machine whose
# nvidia-smi reports a GPU: optimised for that GPU's architecture. Otherwise a compile check: PTX for
# one virtual architecture, unoptimised (CCLAB_CUDA_QUICK) - nvcc's front end still checks every line
# with warnings as errors, in 1/40 of the time, and no kernel is meant to run.
if [ -n "${CCLAB_CUDA_ARCHS:-}" ]; then
  cuda_opts=(-DCCLAB_CUDA_ARCHS="$CCLAB_CUDA_ARCHS" -DCCLAB_CUDA_QUICK=OFF)
elif _cc="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1)" && [ -n "$_cc" ]; then
  cuda_opts=(-DCCLAB_CUDA_ARCHS="${_cc/./}" -DCCLAB_CUDA_QUICK=OFF)
else
  cuda_opts=(-DCCLAB_CUDA_ARCHS=80-virtual -DCCLAB_CUDA_QUICK=ON)
fi
