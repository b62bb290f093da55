// Included once per datatype by kernels/cuda/kernel_<type>.cu: the block kernel for T, so the
// type x collective x algorithm x protocol matrix compiles once, one datatype per translation unit.
#pragma once

#include "kernels/block_kernel.h"
#include "kernels/cuda/device_block.h"
#include "kernels/cuda/launch.h"

namespace cclab {
namespace cuda {

template <typename T>
__global__ void __launch_bounds__(640) block_kernel(const __grid_constant__ LaunchArgs args) {
  DeviceBlock b{args.abort_flag};
  (void)run_block<T>(b, args.works[blockIdx.x]);
}

template <typename T>
int launch_typed(const LaunchArgs& args, int nthreads, cudaStream_t stream) {
  block_kernel<T><<<args.nblocks, nthreads, 0, stream>>>(args);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace cuda
}  // namespace cclab

#define CCLAB_CUDA_KERNEL(T, NAME)                                                                  \
  namespace cclab {                                                                                 \
  namespace cuda {                                                                                  \
  int launch_##NAME(const LaunchArgs& args, int nthreads, cudaStream_t stream) {                    \
    return launch_typed<T>(args, nthreads, stream);                                                 \
  }                                                                                                 \
  int per_sm_##NAME(int nthreads, int* blocks) {                                                    \
    return static_cast<int>(cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks, block_kernel<T>, nthreads, 0)); \
  }                                                                                                 \
  }                                                                                                 \
  }
