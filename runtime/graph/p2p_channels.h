// runtime/graph/p2p_channels.h - how many channels NCCL 2.28.9 gives point-to-point work on a machine
// model: p2pnChannels, p2pnChannelsPerPeer and p2pChunkSize (kernels/p2p.h's P2pChannels), from the
// ranks' GPUs and the collective channel count, as src/graph/paths.cc ncclTopoComputeP2pChannels and
// ncclTopoGetNchannels and src/init.cc compute them. The runtime's communicators and the simulator's
// worlds both ask here, so a send is split the same way on every backend.
#pragma once

#include <string>
#include <vector>

#include "graph/topo.h"
#include "kernels/p2p.h"

namespace cclab {

// NCCL's parameters of the computation, with NCCL's defaults.
struct P2pParams {
  int min_channels = 1;          // NCCL_MIN_P2P_NCHANNELS
  int max_channels = 64;         // NCCL_MAX_P2P_NCHANNELS (MAXCHANNELS)
  int net_per_peer = 0;          // NCCL_NCHANNELS_PER_NET_PEER (0: unset, NCCL's own rule)
  int nvl_chunk = 1 << 19;       // NCCL_P2P_NVL_CHUNKSIZE: 512 KiB
  int net_chunk = 1 << 17;       // NCCL_P2P_NET_CHUNKSIZE: 128 KiB
  int pci_chunk = 1 << 17;       // NCCL_P2P_PCI_CHUNKSIZE: 128 KiB
};

// The point-to-point channels of a communicator whose rank r plays GPU node rank_gpu[r] of `topo`, that
// runs `nchannels` collective channels (comm->nChannels), with Simple FIFOs of `buff_bytes`
// (NCCL_BUFFSIZE: the chunk is at most a slot). The same on every rank of a machine model whose
// machines are alike. *why (optional) gets one line saying where each number came from.
P2pChannels p2p_channels(const Topology& topo, const std::vector<int>& rank_gpu, int nchannels, int buff_bytes,
                         const P2pParams& params = P2pParams(), std::string* why = nullptr);

}  // namespace cclab
