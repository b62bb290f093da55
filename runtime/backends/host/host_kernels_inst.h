// Included once per datatype by host_kernels_<type>.cc: instantiates every ring, tree and PAT collective for T.
#pragma once

#include "backends/host/host_kernels.h"
#include "kernels/collectives.h"
#include "kernels/nvls.h"

#define CCLAB_HOST_KERNEL(T, NAME)                                                                    \
  namespace cclab {                                                                                   \
  bool host_coll_##NAME(HostExec& exec, const CollWork& w, const RingView& ring, int channel,         \
                        ConnInfo* recv, ConnInfo* send) {                                             \
    return run_ring_channel<T, HostExec>(exec, w, ring, channel, recv, send);                         \
  }                                                                                                   \
  bool host_tree_##NAME(HostExec& exec, const CollWork& w, const TreeLinks& tree,                     \
                        const TreeConns& conns, int channel) {                                        \
    return run_tree_channel<T, HostExec>(exec, w, tree, conns, channel);                              \
  }                                                                                                   \
  bool host_pat_##NAME(HostExec& exec, const CollWork& w, const PatConns& conns, int channel) {        \
    return run_pat_channel<T, HostExec>(exec, w, conns, channel);                                     \
  }                                                                                                   \
  bool host_nvls_##NAME(HostExec& exec, const CollWork& w, NvlsConn& conn, int channel,             \
                        const NvlsTreeConns* tree) {                                                  \
    return tree != nullptr ? run_nvls_tree_channel<T, HostExec>(exec, w, conn, *tree, channel)        \
                           : run_nvls_channel<T, HostExec>(exec, w, conn, channel);                   \
  }                                                                                                   \
  }
