// sim/kernels_inst.h - included once per datatype by kernels_<type>.cc: the ring and tree schedules of
// kernels/ instantiated for the simulator's executor (one translation unit per type, compiled once).
#pragma once

#include "kernels/collectives.h"
#include "kernels/nvls.h"
#include "kernels/dtypes.h"
#include "sim/world.h"

#define CCLAB_SIM_KERNEL(T, NAME)                                                                     \
  namespace cclab {                                                                                   \
  namespace sim {                                                                                     \
  bool sim_coll_##NAME(SimExec& exec, const CollWork& w, const RingView& ring, int channel,           \
                       ConnInfo* recv, ConnInfo* send) {                                              \
    return run_ring_channel<T, SimExec>(exec, w, ring, channel, recv, send);                          \
  }                                                                                                   \
  bool sim_tree_##NAME(SimExec& exec, const CollWork& w, const TreeLinks& tree, const TreeConns& conns,\
                       int channel) {                                                                 \
    return run_tree_channel<T, SimExec>(exec, w, tree, conns, channel);                               \
  }                                                                                                   \
  bool sim_pat_##NAME(SimExec& exec, const CollWork& w, const PatConns& conns, int channel) {          \
    return run_pat_channel<T, SimExec>(exec, w, conns, channel);                                      \
  }                                                                                                   \
  bool sim_nvls_##NAME(SimExec& exec, const CollWork& w, NvlsConn& conn, int channel, int roles,      \
                       const NvlsTreeConns* tree) {                                                   \
    return tree != nullptr ? run_nvls_tree_channel<T, SimExec>(exec, w, conn, *tree, channel, roles)  \
                           : run_nvls_channel<T, SimExec>(exec, w, conn, channel, roles);             \
  }                                                                                                   \
  }                                                                                                   \
  }
