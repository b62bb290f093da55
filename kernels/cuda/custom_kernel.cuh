// kernels/cuda/custom_kernel.cuh - a custom algorithm built into the CUDA backend (cmake
// -DCCLAB_CUSTOM_ALGOS=a.cc;b.cc, docs/custom-algorithms.md). kernels/CMakeLists.txt generates one .cu per
// listed file:
//
//   #define CCLAB_CUSTOM_SOURCE "/path/a.cc"
//   #define CCLAB_CUSTOM_BUILTIN(Algo) CCLAB_CUDA_CUSTOM_ALGORITHM(Algo, 0)
//   #include "kernels/cuda/custom_kernel.cuh"
//   #include "/path/a.cc"
//
// so the file's own CCLAB_CUSTOM_ALGORITHM(Algo) line (kernels/custom.h) becomes
// CCLAB_CUDA_CUSTOM_ALGORITHM(Algo, 0): Algo::run's kernels, one per datatype (run_custom_block over
// DeviceBlock, as kernel_inst.cuh's block_kernel runs run_block), and cclab_custom_kernel_0(), which the
// generated registry (custom_kernels.cc) lists for the runtime (launch.h: custom_kernel()).
#pragma once

#include <type_traits>

#include "kernels/cuda/device_block.h"
#include "kernels/cuda/launch.h"
#include "kernels/custom_block.h"

#ifndef CCLAB_CUSTOM_SOURCE
#define CCLAB_CUSTOM_SOURCE "(unknown)"
#endif

namespace cclab {
namespace cuda {

template <class Algo, typename T>
__global__ void __launch_bounds__(640) custom_kernel(const __grid_constant__ LaunchArgs args) {
  DeviceBlock b{args.abort_flag};
  (void)run_custom_block<Algo, T>(b, args.works[blockIdx.x]);
}

template <class Algo>
int custom_launch(const LaunchArgs& args, int nthreads, void* stream) {
  if (args.nblocks < 1 || args.nblocks > kMaxLaunchBlocks || nthreads < 32 || nthreads > 640)
    return static_cast<int>(cudaErrorInvalidConfiguration);
  int r = static_cast<int>(cudaErrorInvalidValue);
  with_custom_type(args.type, [&](auto* tag) {
    custom_kernel<Algo, std::remove_pointer_t<decltype(tag)>>
        <<<args.nblocks, nthreads, 0, static_cast<cudaStream_t>(stream)>>>(args);
    r = static_cast<int>(cudaGetLastError());
  });
  return r;
}

template <class Algo>
int custom_per_sm(int nthreads, int* blocks) {
  int fewest = -1, r = 0;
  for (int type = 0; type < kCustomTypes && r == 0; ++type)
    with_custom_type(type, [&](auto* tag) {
      int n = 0;
      r = static_cast<int>(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
          &n, custom_kernel<Algo, std::remove_pointer_t<decltype(tag)>>, nthreads, 0));
      if (r == 0 && (fewest < 0 || n < fewest)) fewest = n;
    });
  *blocks = fewest < 0 ? 0 : fewest;
  return r;
}

}  // namespace cuda
}  // namespace cclab

// Algo's kernels and its entry in the registry, as number INDEX of CCLAB_CUSTOM_ALGOS.
#define CCLAB_CUDA_CUSTOM_ALGORITHM(Algo, INDEX)                                                            \
  const cclab::cuda::CustomKernel* cclab_custom_kernel_##INDEX() {                                        \
    static const cclab::cuda::CustomKernel k{Algo::kName,         CCLAB_CUSTOM_SOURCE,                     \
                                             &Algo::supports,     &Algo::peers,                            \
                                             &cclab::cuda::custom_launch<Algo>,                            \
                                             &cclab::cuda::custom_per_sm<Algo>};                           \
    return &k;                                                                                             \
  }
