// kernels/platform.h - the dual-compile switches every kernels/ header uses.
//
// kernels/ headers build with the host compiler (host executor, simulator) and with nvcc (CUDA
// backend). Functions both sides call are CCLAB_HD; code only a GPU may run sits behind
// CCLAB_DEVICE_PASS, which is true only during nvcc's device compilation pass.
#pragma once

#if defined(__CUDACC__)
#define CCLAB_HD __host__ __device__
#define CCLAB_DEVICE __device__
#define CCLAB_FORCEINLINE __forceinline__
#define CCLAB_DEVICE_NOINLINE __noinline__
#else
#define CCLAB_HD
#define CCLAB_DEVICE
#define CCLAB_FORCEINLINE inline __attribute__((always_inline))
#define CCLAB_DEVICE_NOINLINE
#endif
// CCLAB_DEVICE_NOINLINE: one out-of-line copy per type on a GPU (a block-wide data loop called from many
// primitives: inlining it everywhere multiplies nvcc's time for no measurable gain); inline on the host.

#if defined(__CUDA_ARCH__)
#define CCLAB_DEVICE_PASS 1
#else
#define CCLAB_DEVICE_PASS 0
#endif

// CCLAB_UNROLL before a loop with a constant trip count: unrolled on a GPU, where an array indexed by
// the loop then stays in registers (nvcc's #pragma unroll); nothing on the host.
#if CCLAB_DEVICE_PASS
#define CCLAB_UNROLL _Pragma("unroll")
#else
#define CCLAB_UNROLL
#endif
