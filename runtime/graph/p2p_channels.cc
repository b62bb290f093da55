// runtime/graph/p2p_channels.cc - NCCL 2.28.9's point-to-point channel counts on a machine model.
#include "graph/p2p_channels.h"

#include <algorithm>
#include <map>
#include <set>

namespace cclab {

namespace {

int pow2_up(int v) {
  int p = 1;
  while (p < v) p <<= 1;
  return p;
}

// p2pChunkSize is at most a Simple FIFO slot (NCCL_BUFFSIZE / NCCL_STEPS).
size_t within_slot(int chunk, int buff_bytes) {
  if (buff_bytes > 0 && chunk > buff_bytes / kNcclSteps) chunk = buff_bytes / kNcclSteps;
  return static_cast<size_t>(chunk);
}

// getLocalNetCountByBw (src/graph/topo.cc): how many of the GPU's nearest NICs it takes to match the
// bandwidth of the GPU's link to a CPU. A GPU behind a PCIe switch (every NVSwitch preset) has no link
// to a CPU: 0, as in NCCL.
int local_net_count_by_bw(const Topology& topo, int gpu) {
  double gpu_bw = 0;
  for (const TopoLink& l : topo.links)
    if (l.from == gpu && topo.nodes[l.to].type == TopoNodeType::kCpu) gpu_bw = l.model_bw;
  if (gpu_bw <= 0) return 0;
  // ncclTopoGetLocal: the NICs of the GPU's machine with the best path type, widest first.
  std::vector<int> nets = topo.nets(topo.nodes[gpu].machine);
  int best = static_cast<int>(PathType::kDis);
  for (int n : nets) best = std::min(best, static_cast<int>(topo.path(gpu, n).type));
  std::vector<double> bws;
  for (int n : nets)
    if (static_cast<int>(topo.path(gpu, n).type) == best) bws.push_back(topo.path(gpu, n).bw);
  std::sort(bws.rbegin(), bws.rend());
  double total = 0;
  int count = 0;
  for (size_t i = 0; i < bws.size() && total < gpu_bw; ++i, ++count) total += bws[i];
  return count;
}

// The machines of node_of in the order of their first rank, each with its ranks in rank order.
std::vector<std::vector<int>> machine_ranks(const std::vector<int>& node_of) {
  std::vector<std::vector<int>> out;
  std::map<int, size_t> index;  // machine id -> its place in out
  for (int r = 0; r < static_cast<int>(node_of.size()); ++r) {
    const auto it = index.emplace(node_of[r], out.size()).first;
    if (it->second == out.size()) out.emplace_back();
    out[it->second].push_back(r);
  }
  return out;
}

int gcd(int a, int b) {
  while (b != 0) {
    const int t = a % b;
    a = b;
    b = t;
  }
  return a;
}

}  // namespace

int p2p_schedule_group_size(const std::vector<int>& node_of, int param) {
  const std::vector<std::vector<int>> nodes = machine_ranks(node_of);
  int size = 0;
  if (nodes.size() > 1) {
    size = std::max(param, 1);
  } else {
    for (const auto& n : nodes) size = std::max(size, static_cast<int>(n.size()));
  }
  for (const auto& n : nodes) {
    const int local = static_cast<int>(n.size());
    if (local % size != 0 || local < size) size = gcd(size, local);
  }
  return std::max(size, 1);
}

P2pSchedule p2p_schedule(int rank, const std::vector<int>& node_of, int param) {
  const int n = static_cast<int>(node_of.size());
  const std::vector<std::vector<int>> nodes = machine_ranks(node_of);
  P2pSchedule s;
  s.group_size = p2p_schedule_group_size(node_of, param);
  const int gs = s.group_size;
  // Groups: (machine, first local index), machine by machine; this rank's group and place in it.
  std::vector<std::pair<int, int>> groups;
  int my_group = 0, my_local = 0;
  for (int m = 0; m < static_cast<int>(nodes.size()); ++m)
    for (int g = 0; g * gs < static_cast<int>(nodes[m].size()); ++g) {
      for (int l = 0; l < gs; ++l)
        if (nodes[m][g * gs + l] == rank) my_group = static_cast<int>(groups.size()), my_local = l;
      groups.emplace_back(m, g * gs);
    }
  const int ngroups = static_cast<int>(groups.size());
  int pow2 = 1;
  while (pow2 < ngroups) pow2 <<= 1;
  unsigned delta = 0;
  for (int round = 0; round < pow2; ++round) {  // NCCL's groupRound
    if (static_cast<int>(delta) < ngroups) {
      const std::pair<int, int>& to = groups[(my_group + delta) % ngroups];
      const std::pair<int, int>& from = groups[(my_group - static_cast<int>(delta) + ngroups) % ngroups];
      for (int d = 0; d < gs; ++d) {
        s.send_to.push_back(nodes[to.first][to.second + (my_local + d) % gs]);
        s.recv_from.push_back(nodes[from.first][from.second + (my_local - d + gs) % gs]);
      }
    }
    delta = (delta + static_cast<unsigned>(round) + 1) & static_cast<unsigned>(pow2 - 1);
  }
  s.send_round.assign(n, -1);
  s.recv_round.assign(n, -1);
  for (int r = 0; r < static_cast<int>(s.send_to.size()); ++r) {
    s.send_round[s.send_to[r]] = r;
    s.recv_round[s.recv_from[r]] = r;
  }
  return s;
}

P2pChannels p2p_channels(const Topology& topo, const std::vector<int>& rank_gpu, int nchannels, int buff_bytes,
                         const P2pParams& params, std::string* why) {
  P2pChannels pc;
  const int nranks = static_cast<int>(rank_gpu.size());
  // p2pnChannels = min(nChannels, NCCL_MAX_P2P_NCHANNELS), at least NCCL_MIN_P2P_NCHANNELS.
  int p2p = std::max(std::min(nchannels, params.max_channels), params.min_channels);
  // ncclTopoGetNchannels for every GPU of a machine holding ranks (NCCL loops over its own machine's
  // GPUs; the machines of a model are alike, so every rank comes to the same minimum) and every rank:
  // another GPU of the machine over NVLink 2 x max(1, path bandwidth / one NVLink's), else 2; a GPU of
  // another machine max(NICs by bandwidth, 2 halved while 2 x nranks > 4 x p2pnChannels), or
  // NCCL_NCHANNELS_PER_NET_PEER.
  int min_ch = p2p;
  std::set<int> machines;
  for (int g : rank_gpu)
    if (g >= 0) machines.insert(topo.nodes[g].machine);
  const int m0 = machines.empty() ? 0 : *machines.begin();
  bool all_nvlink = true;
  const char* limit = "the collective channels";
  for (int g : rank_gpu) {
    if (g < 0 || topo.nodes[g].machine != m0) continue;
    for (int r = 0; r < nranks; ++r) {
      const int q = rank_gpu[r];
      if (q < 0 || q == g) continue;
      int n;
      if (topo.nodes[q].machine == m0) {
        const TopoPath& p = topo.path(g, q);
        if (p.type == PathType::kNvl) {
          n = 2 * std::max(1, static_cast<int>(p.bw / nvlink_model_bw(topo.nodes[g].sm)));
        } else {
          n = 2;
          all_nvlink = false;
        }
        if (n < min_ch) limit = p.type == PathType::kNvl ? "NVLink peers" : "PCIe/SHM peers";
      } else if (params.net_per_peer > 0) {
        n = params.net_per_peer;
        if (n < min_ch) limit = "NCCL_NCHANNELS_PER_NET_PEER";
      } else {
        int nmax = 2;
        while (nmax * nranks > p2p * 4 && nmax > 1) nmax /= 2;
        n = std::max(local_net_count_by_bw(topo, g), nmax);
        if (n < min_ch) limit = "network peers";
      }
      min_ch = std::min(min_ch, n);
    }
  }
  // Powers of two (the channel of a part is a mask); NCCL then caps p2pnChannels by what a launch's
  // arguments hold (4 KiB: 128 and more channels, above MAXCHANNELS = 64).
  pc.per_peer = pow2_up(min_ch);
  pc.nchannels = std::min(pow2_up(p2p), 64);
  pc.per_peer = std::min(pc.per_peer, pc.nchannels);
  pc.multi_node = machines.size() > 1;
  if (pc.multi_node) {
    std::vector<int> node_of(nranks);
    for (int r = 0; r < nranks; ++r) node_of[r] = rank_gpu[r] >= 0 ? topo.nodes[rank_gpu[r]].machine : -1;
    pc.group_size = p2p_schedule_group_size(node_of, params.sched_group);
  }
  // p2pChunkSize (src/init.cc): several machines NET 128 KiB, one all-NVLink machine 512 KiB, else
  // PCI 128 KiB; at most a Simple FIFO slot (NCCL_BUFFSIZE / NCCL_STEPS).
  pc.chunk_bytes =
      within_slot(pc.multi_node ? params.net_chunk : all_nvlink ? params.nvl_chunk : params.pci_chunk, buff_bytes);
  if (why != nullptr)
    *why = std::to_string(pc.nchannels) + " p2p channels (" + std::to_string(nchannels) + " collective channels, to a power of 2), " +
           std::to_string(pc.per_peer) + " per peer (" + (min_ch == p2p ? "the collective channels" : limit) +
           "), chunk " + std::to_string(pc.chunk_bytes >> 10) + " KiB (" +
           (pc.multi_node ? "network" : all_nvlink ? "NVLink" : "PCIe") + ")";
  return pc;
}

P2pChannels p2p_channels_sharing_gpu(const P2pChannels& pc, int buff_bytes, const P2pParams& params, std::string* why) {
  P2pChannels out = pc;
  out.per_peer = pc.nchannels;
  out.chunk_bytes = within_slot(params.nvl_chunk, buff_bytes);
  if (why != nullptr)
    *why = std::to_string(out.nchannels) + " p2p channels, " + std::to_string(out.per_peer) +
           " per peer, chunk " + std::to_string(out.chunk_bytes >> 10) +
           " KiB (ranks sharing a GPU: a send is a copy within its memory, not the model's PCIe)";
  return out;
}

P2pChannels p2p_channels_for_launch(const P2pChannels& pc, int nranks, int max_blocks) {
  P2pChannels out = pc;
  int cap = 1;
  while (nranks > 1 && cap * 2 * 2 * (nranks - 1) <= max_blocks) cap *= 2;
  out.per_peer = std::max(1, std::min(pc.per_peer, cap));
  return out;
}

}  // namespace cclab
