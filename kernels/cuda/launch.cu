// kernels/cuda/launch.cu - picks the datatype's kernel (kernel_<type>.cu) and reads the GPU clock.
#include "kernels/cuda/launch.h"

#include <cuda_runtime.h>

namespace cclab {
namespace cuda {

#define CCLAB_DECLARE(NAME)                                                     \
  int launch_##NAME(const LaunchArgs& args, int nthreads, cudaStream_t stream); \
  int per_sm_##NAME(int nthreads, int* blocks);
CCLAB_DECLARE(int8)
CCLAB_DECLARE(uint8)
CCLAB_DECLARE(int32)
CCLAB_DECLARE(uint32)
CCLAB_DECLARE(int64)
CCLAB_DECLARE(uint64)
CCLAB_DECLARE(float16)
CCLAB_DECLARE(float32)
CCLAB_DECLARE(float64)
CCLAB_DECLARE(bfloat16)
CCLAB_DECLARE(fp8e4m3)
CCLAB_DECLARE(fp8e5m2)
#undef CCLAB_DECLARE

int launch(const LaunchArgs& args, int nthreads, void* stream) {
  if (args.nblocks < 1 || args.nblocks > kMaxLaunchBlocks || nthreads < 32 || nthreads > 640)
    return static_cast<int>(cudaErrorInvalidConfiguration);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  switch (args.type) {  // ncclDataType_t values (nccl.h)
    case 0: return launch_int8(args, nthreads, s);
    case 1: return launch_uint8(args, nthreads, s);
    case 2: return launch_int32(args, nthreads, s);
    case 3: return launch_uint32(args, nthreads, s);
    case 4: return launch_int64(args, nthreads, s);
    case 5: return launch_uint64(args, nthreads, s);
    case 6: return launch_float16(args, nthreads, s);
    case 7: return launch_float32(args, nthreads, s);
    case 8: return launch_float64(args, nthreads, s);
    case 9: return launch_bfloat16(args, nthreads, s);
    case 10: return launch_fp8e4m3(args, nthreads, s);
    case 11: return launch_fp8e5m2(args, nthreads, s);
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
}

int resident_blocks(int nthreads, int* blocks) {
  *blocks = 0;
  int dev = 0, sms = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e == cudaSuccess) e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  if (e != cudaSuccess) return static_cast<int>(e);
  int (*const per_sm[])(int, int*) = {per_sm_int8,    per_sm_uint8,   per_sm_int32,   per_sm_uint32,
                                      per_sm_int64,   per_sm_uint64,  per_sm_float16, per_sm_float32,
                                      per_sm_float64, per_sm_bfloat16, per_sm_fp8e4m3, per_sm_fp8e5m2};
  int fewest = -1;
  for (auto* f : per_sm) {
    int n = 0;
    const int r = f(nthreads, &n);
    if (r != 0) return r;
    if (fewest < 0 || n < fewest) fewest = n;
  }
  for (int i = 0; i < custom_kernel_count(); ++i) {
    int n = 0;
    const int r = custom_kernel(i)->per_sm(nthreads, &n);
    if (r != 0) return r;
    if (n < fewest) fewest = n;
  }
  *blocks = fewest * sms;
  return 0;
}

namespace {
__global__ void clock_kernel(unsigned long long* out) {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  *out = t;
}
}  // namespace

int read_gpu_clock(uint64_t* ns) {
  unsigned long long* d = nullptr;
  cudaError_t e = cudaMalloc(&d, sizeof(*d));
  if (e != cudaSuccess) return static_cast<int>(e);
  clock_kernel<<<1, 1>>>(d);
  unsigned long long h = 0;
  e = cudaMemcpy(&h, d, sizeof(h), cudaMemcpyDeviceToHost);
  cudaFree(d);
  *ns = h;
  return static_cast<int>(e);
}

}  // namespace cuda
}  // namespace cclab
