// runtime/backends/host/host_kernels.h - the kernels/ schedules instantiated for the host executor, one entry
// per datatype. Each datatype is instantiated once, in its own translation unit
// (host_kernels_<type>.cc via host_kernels_inst.h), so the type x collective x protocol matrix is
// compiled once and in parallel.
#pragma once

#include "cclab/nccl.h"
#include "backends/host/host_exec.h"
#include "kernels/nvls.h"
#include "kernels/p2p.h"
#include "kernels/pat.h"
#include "kernels/tree.h"
#include "kernels/trees.h"
#include "kernels/work.h"

namespace cclab {

using HostCollFn = bool (*)(HostExec& exec, const CollWork& w, const RingView& ring, int channel, ConnInfo* recv,
                            ConnInfo* send);

using HostTreeFn = bool (*)(HostExec& exec, const CollWork& w, const TreeLinks& tree, const TreeConns& conns,
                            int channel);

// PAT all_gather / reduce_scatter.
using HostPatFn = bool (*)(HostExec& exec, const CollWork& w, const PatConns& conns, int channel);
// tree == nullptr: NVLS on one machine; else NVLS-Tree with this head's connections on the channel's tree.
using HostNvlsFn = bool (*)(HostExec& exec, const CollWork& w, NvlsConn& conn, int channel, const NvlsTreeConns* tree);

// The ring kernel for `type` (a valid ncclDataType_t).
HostCollFn host_coll_kernel(ncclDataType_t type);
// The tree all_reduce kernel for `type`.
HostTreeFn host_tree_kernel(ncclDataType_t type);
// The NVLS kernel (AllReduce, AllGather, ReduceScatter; NVLS-Tree AllReduce) for `type`.
HostNvlsFn host_nvls_kernel(ncclDataType_t type);

// The PAT kernel for `type`.
HostPatFn host_pat_kernel(ncclDataType_t type);

// Point-to-point kernels (bytes, no datatype).
bool host_p2p_send(HostExec& exec, const P2pWork& w, int channel, ConnInfo* send);
bool host_p2p_recv(HostExec& exec, const P2pWork& w, int channel, ConnInfo* recv);

}  // namespace cclab
