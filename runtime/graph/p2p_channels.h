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
  int sched_group = kP2pWorksPerBatch;  // NCCL_P2P_SCHEDULE_GROUP_SIZE (several machines)
};

// NCCL 2.28.9's point-to-point schedule (src/init.cc ncclP2pSchedule) for rank `rank` of a communicator
// whose rank r is on machine node_of[r] (any machine ids; machines are numbered in the order of their
// first rank, a machine's ranks in rank order, as NCCL's nodeRanks). In round r the rank sends to
// send_to[r] and receives from recv_from[r]; round 0 is itself; every other rank is once in each. On one
// machine round r is rank + r / rank - r. On several, the ranks are cut into groups of group_size (see
// p2p_schedule_group_size) within their machines; the rounds go group by group, the group distance in
// NCCL's quadratic order (0, 1, 3, 6, ... modulo the groups rounded up to a power of two, those past
// the group count skipped: with 4 machines of 8 GPUs, machines +0, +1, +3, +2), and within a group's
// rounds the distance inside the group 0, 1, 2, ... The schedule is symmetric: if rank a sends to b in
// round r, b receives from a in round r.
struct P2pSchedule {
  int group_size = 0;
  std::vector<int> send_to, recv_from;  // by round
  std::vector<int> send_round, recv_round;  // by peer: the round it is sent to / received from in
};
// p2pSchedGroupSize: the largest rank count of a machine on one machine; on several `param`
// (NCCL_P2P_SCHEDULE_GROUP_SIZE) reduced to its gcd with every machine's rank count.
int p2p_schedule_group_size(const std::vector<int>& node_of, int param = kP2pWorksPerBatch);
P2pSchedule p2p_schedule(int rank, const std::vector<int>& node_of, int param = kP2pWorksPerBatch);

// The point-to-point channels of a communicator whose rank r plays GPU node rank_gpu[r] of `topo`, that
// runs `nchannels` collective channels (comm->nChannels), with Simple FIFOs of `buff_bytes`
// (NCCL_BUFFSIZE: the chunk is at most a slot). The same on every rank of a machine model whose
// machines are alike. *why (optional) gets one line saying where each number came from.
P2pChannels p2p_channels(const Topology& topo, const std::vector<int>& rank_gpu, int nchannels, int buff_bytes,
                         const P2pParams& params = P2pParams(), std::string* why = nullptr);

// The channels of ranks that share one GPU (the CUDA backend on the virtual model, where the machine
// model cannot place two ranks on one GPU and says PCIe): a send is a copy within the GPU's own memory,
// faster than any link, so every p2p channel serves each peer (as the collective channels fill what a
// launch carries) and a step carries NVLink's chunk (NCCL_P2P_NVL_CHUNKSIZE, at most a Simple slot).
// *why (optional) gets the line that says so.
P2pChannels p2p_channels_sharing_gpu(const P2pChannels& pc, int buff_bytes, const P2pParams& params = P2pParams(),
                                     std::string* why = nullptr);

// The same channels for an executor that runs a group's transfers in launches of at most `max_blocks`
// blocks, one block per part (the CUDA backend: kMaxLaunchBlocks): p2pnChannelsPerPeer capped at the
// largest power of two with 2 (nranks - 1) x cap <= max_blocks (at least 1), so a launch holds every
// peer's parts both ways. The cap depends on the rank count alone, never on the group, so a sender and
// its receiver cut a transfer into the same parts.
P2pChannels p2p_channels_for_launch(const P2pChannels& pc, int nranks, int max_blocks);

}  // namespace cclab
