// Compile check of the NVLS schedule (kernels/nvls.h) over the block executor on sm90, where the
// block's multimem operations are NVLink SHARP's PTX (kernels/cuda/multimem.h: multimem.ld_reduce,
// multimem.st): built for a real sm_90 target, so ptxas assembles every multimem instruction, whatever
// CCLAB_CUDA_ARCHS is (CI builds the backend's kernels as 80-virtual PTX, which keeps the emulation).
// Every datatype of the kernels (block_kernel<T> instantiates the NVLS schedule for each, with or without
// a multimem instruction for it: the 1-byte types and fp8 are emulated). Nothing runs.
#include "kernels/block_exec.h"
#include "kernels/cuda/device_block.h"
#include "kernels/nvls.h"

#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 900
namespace cclab {
namespace cuda {

template <typename T>
__global__ void nvls_sm90_check(const CollWork w, NvlsConn* conn, const int* abort_flag) {
  DeviceBlock b{abort_flag};
  BlockExecConfig cfg;
  BlockExec<DeviceBlock> ex(b, cfg);
  NvlsConn v = *conn;
  (void)ex.finish(run_nvls_channel<T>(ex, w, v, 0));
}

// NVLS-Tree (run_nvls_tree_channel): the same multimem operations plus the tree's Primitives.
template <typename T>
__global__ void nvls_tree_sm90_check(const CollWork w, NvlsConn* conn, const NvlsTreeConns tree, const int* abort_flag) {
  DeviceBlock b{abort_flag};
  BlockExecConfig cfg;
  BlockExec<DeviceBlock> ex(b, cfg);
  NvlsConn v = *conn;
  (void)ex.finish(run_nvls_tree_channel<T>(ex, w, v, tree, 0));
}
template __global__ void nvls_tree_sm90_check<float>(const CollWork, NvlsConn*, const NvlsTreeConns, const int*);
template __global__ void nvls_tree_sm90_check<half_t>(const CollWork, NvlsConn*, const NvlsTreeConns, const int*);
template __global__ void nvls_tree_sm90_check<int64_t>(const CollWork, NvlsConn*, const NvlsTreeConns, const int*);
template __global__ void nvls_tree_sm90_check<fp8_e4m3_t>(const CollWork, NvlsConn*, const NvlsTreeConns, const int*);

template __global__ void nvls_sm90_check<float>(const CollWork, NvlsConn*, const int*);
template __global__ void nvls_sm90_check<double>(const CollWork, NvlsConn*, const int*);
template __global__ void nvls_sm90_check<int32_t>(const CollWork, NvlsConn*, const int*);
template __global__ void nvls_sm90_check<uint32_t>(const CollWork, NvlsConn*, const int*);
template __global__ void nvls_sm90_check<int64_t>(const CollWork, NvlsConn*, const int*);
template __global__ void nvls_sm90_check<uint64_t>(const CollWork, NvlsConn*, const int*);
template __global__ void nvls_sm90_check<half_t>(const CollWork, NvlsConn*, const int*);
template __global__ void nvls_sm90_check<bfloat16_t>(const CollWork, NvlsConn*, const int*);
template __global__ void nvls_sm90_check<int8_t>(const CollWork, NvlsConn*, const int*);
template __global__ void nvls_sm90_check<uint8_t>(const CollWork, NvlsConn*, const int*);
template __global__ void nvls_sm90_check<fp8_e4m3_t>(const CollWork, NvlsConn*, const int*);
template __global__ void nvls_sm90_check<fp8_e5m2_t>(const CollWork, NvlsConn*, const int*);

}  // namespace cuda
}  // namespace cclab
#endif
