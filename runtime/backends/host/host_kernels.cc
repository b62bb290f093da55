#include "backends/host/host_kernels.h"

#include "kernels/p2p.h"

namespace cclab {

#define CCLAB_DECLARE_KERNEL(NAME)                                                                    \
  bool host_coll_##NAME(HostExec& exec, const CollWork& w, const RingView& ring, int channel,         \
                        ConnInfo* recv, ConnInfo* send);                                              \
  bool host_tree_##NAME(HostExec& exec, const CollWork& w, const TreeLinks& tree,                     \
                        const TreeConns& conns, int channel);                                         \
  bool host_pat_##NAME(HostExec& exec, const CollWork& w, const PatConns& conns, int channel);        \
  bool host_nvls_##NAME(HostExec& exec, const CollWork& w, NvlsConn& conn, int channel,             \
                        const NvlsTreeConns* tree);
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

// The 12 kernels of one family, indexed by ncclDataType_t value.
#define CCLAB_TYPE_TABLE(PREFIX)                                                            \
  {                                                                                         \
    PREFIX##int8, PREFIX##uint8, PREFIX##int32, PREFIX##uint32, PREFIX##int64, PREFIX##uint64, \
        PREFIX##float16, PREFIX##float32, PREFIX##float64, PREFIX##bfloat16, PREFIX##fp8e4m3,  \
        PREFIX##fp8e5m2                                                                     \
  }

HostCollFn host_coll_kernel(ncclDataType_t type) {
  static const HostCollFn table[ncclNumTypes] = CCLAB_TYPE_TABLE(host_coll_);
  return table[type];
}

HostTreeFn host_tree_kernel(ncclDataType_t type) {
  static const HostTreeFn table[ncclNumTypes] = CCLAB_TYPE_TABLE(host_tree_);
  return table[type];
}

HostPatFn host_pat_kernel(ncclDataType_t type) {
  static const HostPatFn table[ncclNumTypes] = CCLAB_TYPE_TABLE(host_pat_);
  return table[type];
}

HostNvlsFn host_nvls_kernel(ncclDataType_t type) {
  static const HostNvlsFn table[ncclNumTypes] = CCLAB_TYPE_TABLE(host_nvls_);
  return table[type];
}

#undef CCLAB_TYPE_TABLE

bool host_p2p_send(HostExec& exec, const P2pWork& w, int channel, ConnInfo* send) {
  return run_p2p_send(exec, w, channel, send);
}

bool host_p2p_recv(HostExec& exec, const P2pWork& w, int channel, ConnInfo* recv) {
  return run_p2p_recv(exec, w, channel, recv);
}

}  // namespace cclab
