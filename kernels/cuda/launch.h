// kernels/cuda/launch.h - what the runtime (built by the host compiler) calls to run cclab's kernels on
// a GPU. Implemented by nvcc in kernels/cuda/*.cu; no CUDA header is needed to include this one.
#pragma once

#include <stdint.h>

#include "kernels/block_kernel.h"

namespace cclab {
namespace cuda {

// Most blocks (channels, or point-to-point connections) one launch runs; the works travel as the
// kernel's parameter (CUDA 12.1+: up to 32 KiB of parameters on sm_70 and newer).
constexpr int kMaxLaunchBlocks = 32;
// Threads per block (NCCL's NCCL_MAX_NTHREADS is 640; 512 keeps LL's 8 lines per thread layout).
constexpr int kDefaultThreads = 512;

struct LaunchArgs {
  int32_t nblocks;
  int32_t type;                  // ncclDataType_t of the elements (ncclUint8 for point-to-point)
  const volatile int* abort_flag;  // device-visible communicator abort flag
  BlockWork works[kMaxLaunchBlocks];
};

// Launches one kernel of args.nblocks blocks of `nthreads` threads on `stream` (a cudaStream_t; the
// current device must be the stream's). Returns 0 or the cudaError_t of the launch.
int launch(const LaunchArgs& args, int nthreads, void* stream);

// How many blocks of `nthreads` threads of cclab's kernels the current device holds at once: the
// fewest of any datatype's kernel per SM (cudaOccupancyMaxActiveBlocksPerMultiprocessor) times the SM
// count. Ranks that share a GPU spin on each other's blocks, so all of their blocks must fit together.
// Returns 0 or a cudaError_t.
int resident_blocks(int nthreads, int* blocks);

// Reads %globaltimer on the current device once (for mapping kernel timestamps onto the host clock).
// Returns 0 or a cudaError_t; *ns is the GPU's time.
int read_gpu_clock(uint64_t* ns);

}  // namespace cuda
}  // namespace cclab
