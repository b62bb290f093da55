#include "backends/host/host_kernels.h"

#include "kernels/p2p.h"

namespace cclab {

#define CCLAB_DECLARE_KERNEL(NAME)                                                                    \
  bool host_coll_##NAME(HostExec& exec, const CollWork& w, const RingView& ring, int channel,         \
                        ConnInfo* recv, ConnInfo* send);                                              \
  bool host_tree_##NAME(HostExec& exec, const CollWork& w, const TreeLinks& tree,                     \
                        const TreeConns& conns, int channel);                                         \
  bool host_pat_##NAME(HostExec& exec, const CollWork& w, const PatConns& conns, int channel,          \
                       void* scratch);                                                                \
  bool host_nvls_##NAME(HostExec& exec, const CollWork& w, NvlsConn& conn, int channel);
CCLAB_DECLARE_KERNEL(int8)
CCLAB_DECLARE_KERNEL(uint8)
CCLAB_DECLARE_KERNEL(int32)
CCLAB_DECLARE_KERNEL(uint32)
CCLAB_DECLARE_KERNEL(int64)
CCLAB_DECLARE_KERNEL(uint64)
CCLAB_DECLARE_KERNEL(float16)
CCLAB_DECLARE_KERNEL(float32)
CCLAB_DECLARE_KERNEL(float64)
CCLAB_DECLARE_KERNEL(bfloat16)
CCLAB_DECLARE_KERNEL(fp8e4m3)
CCLAB_DECLARE_KERNEL(fp8e5m2)
#undef CCLAB_DECLARE_KERNEL

HostCollFn host_coll_kernel(ncclDataType_t type) {
  // Indexed by ncclDataType_t value.
  static const HostCollFn table[ncclNumTypes] = {
      host_coll_int8,    host_coll_uint8,   host_coll_int32,   host_coll_uint32,
      host_coll_int64,   host_coll_uint64,  host_coll_float16, host_coll_float32,
      host_coll_float64, host_coll_bfloat16, host_coll_fp8e4m3, host_coll_fp8e5m2,
  };
  return table[type];
}

HostTreeFn host_tree_kernel(ncclDataType_t type) {
  static const HostTreeFn table[ncclNumTypes] = {
      host_tree_int8,    host_tree_uint8,   host_tree_int32,   host_tree_uint32,
      host_tree_int64,   host_tree_uint64,  host_tree_float16, host_tree_float32,
      host_tree_float64, host_tree_bfloat16, host_tree_fp8e4m3, host_tree_fp8e5m2,
  };
  return table[type];
}

HostPatFn host_pat_kernel(ncclDataType_t type) {
  static const HostPatFn table[ncclNumTypes] = {
      host_pat_int8,    host_pat_uint8,   host_pat_int32,   host_pat_uint32,
      host_pat_int64,   host_pat_uint64,  host_pat_float16, host_pat_float32,
      host_pat_float64, host_pat_bfloat16, host_pat_fp8e4m3, host_pat_fp8e5m2,
  };
  return table[type];
}

HostNvlsFn host_nvls_kernel(ncclDataType_t type) {
  static const HostNvlsFn table[ncclNumTypes] = {
      host_nvls_int8,    host_nvls_uint8,   host_nvls_int32,   host_nvls_uint32,
      host_nvls_int64,   host_nvls_uint64,  host_nvls_float16, host_nvls_float32,
      host_nvls_float64, host_nvls_bfloat16, host_nvls_fp8e4m3, host_nvls_fp8e5m2,
  };
  return table[type];
}

bool host_p2p_send(HostExec& exec, const P2pWork& w, int channel, ConnInfo* send) {
  return run_p2p_send(exec, w, channel, send);
}

bool host_p2p_recv(HostExec& exec, const P2pWork& w, int channel, ConnInfo* recv) {
  return run_p2p_recv(exec, w, channel, recv);
}

}  // namespace cclab
