// Communicator init, second half: the machine model, the searched rings and trees, the channels built
// from them, and the cost model the tuner uses per call. Every rank computes the same result from the
// same inputs (the environment, checked to agree, and the all-gathered peer table), so no further
// exchange is needed.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <numeric>
#include <set>

#include "base/log.h"
#include "base/param.h"
#include "core/comm.h"
#include "graph/channels.h"
#include "graph/detect.h"
#include "graph/p2p_channels.h"
#include "kernels/cuda/launch.h"
#include "kernels/tree.h"

namespace cclab {
namespace {

// Machine of every rank when no topology is given: ranks of one host share a machine, in order of
// first appearance.
void machines_from_hosts(ncclComm_t comm, int* nmachines, int* per_machine) {
  std::vector<uint64_t> hosts;
  comm->rank_node.assign(comm->nranks, 0);
  comm->rank_dev.assign(comm->nranks, 0);
  std::vector<int> count;
  for (int r = 0; r < comm->nranks; ++r) {
    auto it = std::find(hosts.begin(), hosts.end(), comm->peers[r].host_hash);
    int m = static_cast<int>(it - hosts.begin());
    if (it == hosts.end()) {
      hosts.push_back(comm->peers[r].host_hash);
      count.push_back(0);
    }
    comm->rank_node[r] = m;
    comm->rank_dev[r] = count[m]++;
  }
  *nmachines = static_cast<int>(hosts.size());
  *per_machine = *std::max_element(count.begin(), count.end());
}

}  // namespace

std::string detection_gpus(const std::vector<PeerInfo>& peers, int rank, std::vector<DetectGpu>* gpus) {
  gpus->clear();
  std::map<std::pair<uint64_t, int64_t>, int> owner;
  int with_busid = 0;
  for (int r = 0; r < static_cast<int>(peers.size()); ++r) {
    const PeerInfo& p = peers[r];
    if (p.gpu_busid < 0) continue;
    ++with_busid;
    const auto it = owner.emplace(std::make_pair(p.host_hash, p.gpu_busid), r).first;
    if (it->second != r)
      return "ranks " + std::to_string(it->second) + " and " + std::to_string(r) + " share the GPU " +
             pci_busid_string(p.gpu_busid) + ", and a model GPU plays one rank";
  }
  if (with_busid != 0 && with_busid != static_cast<int>(peers.size()))
    return std::to_string(peers.size() - with_busid) + " rank(s) have no GPU bus id (see their log)";
  for (const PeerInfo& p : peers)
    if (p.host_hash == peers[rank].host_hash && p.gpu_busid >= 0) gpus->push_back(DetectGpu{p.gpu_busid, p.gpu_sm});
  return "";
}

namespace {

// The machine as topology detection finds it (graph/detect.h): every host detects itself, with the
// GPUs its ranks run on (their bus ids, from the CUDA backend) or, when ranks have none (host backend
// under CCLAB_TOPO=detect), every GPU its sysfs lists. Every rank must build the same model, so the
// hosts must come out identical (one hash of the XML each, all-gathered); the model is then one host,
// replicated onto the machine count. Places the ranks (rank_node = host, rank_dev = its GPU's dev) and
// sets *used. When detection cannot give such a model: an error if `required` (CCLAB_TOPO=detect),
// else a warning naming what failed and *used = false (the caller falls back to the virtual model).
ncclResult_t detect_topology_for(ncclComm_t comm, bool required, bool* used) {
  *used = false;
  int machines = 1, per = 1;
  machines_from_hosts(comm, &machines, &per);
  const uint64_t host = comm->peers[comm->rank].host_hash;
  int first_on_host = comm->rank;  // logs the host's detection once
  for (int r = comm->nranks - 1; r >= 0; --r)
    if (comm->peers[r].host_hash == host) first_on_host = r;
  auto give_up = [&](const std::string& why) {
    if (required) return report_error(ncclInvalidArgument, "CCLAB_TOPO=detect: %s", why.c_str());
    if (comm->rank == 0)
      CCLAB_WARN("topology detection failed: %s; modelling plain virtual machines instead (CCLAB_TOPO or "
                 "NCCL_TOPO_FILE give a model explicitly)",
                 why.c_str());
    return ncclSuccess;
  };

  DetectOptions opts;
  opts.sysfs_root = param_str("CCLAB_SYSFS_ROOT", "/sys");
  const std::string unfit = detection_gpus(comm->peers, comm->rank, &opts.gpus);
  if (!unfit.empty()) return give_up(unfit);
  Topology topo;
  DetectResult found;
  std::string err;
  const bool ok = detect_topology(opts, &topo, &found, &err);
  if (comm->rank == first_on_host) {
    for (const std::string& w : found.warnings) CCLAB_WARN("topology detection: %s", w.c_str());
    for (const std::string& n : found.notes) CCLAB_INFO(kLogGraph, "topology detection: %s", n.c_str());
    if (log_enabled(LogLevel::kInfo, kLogGraph))
      CCLAB_INFO(kLogGraph, "topology detection (sysfs root %s, NVML %s) found:\n%s", opts.sysfs_root.c_str(),
                 found.nvml.c_str(), found.summary.c_str());
    if (!ok && !required) CCLAB_WARN("topology detection failed on this host: %s", err.c_str());
  }

  // Agreement: every rank detected, and every host detected the same machine.
  struct Vote {
    uint64_t hash;
    int32_t ok;
    int32_t pad;
  };
  std::vector<Vote> votes(comm->nranks);
  votes[comm->rank] = Vote{ok ? fnv1a(found.xml.data(), found.xml.size()) : 0, ok ? 1 : 0, 0};
  ncclResult_t r = comm->bootstrap->allgather(votes.data(), sizeof(Vote));
  if (r != ncclSuccess) return r;
  for (int q = 0; q < comm->nranks; ++q) {
    if (!votes[q].ok)
      return give_up(q == comm->rank ? err : "rank " + std::to_string(q) + " could not detect its machine (see its log)");
  }
  for (int q = 0; q < comm->nranks; ++q) {
    if (votes[q].hash != votes[0].hash)
      return give_up("rank " + std::to_string(q) + "'s host differs from rank 0's (different GPUs, PCIe layout, NICs or "
                     "CPUs), and cclab models identical machines");
  }
  if (per > static_cast<int>(found.gpu_busids.size()))
    return give_up("a host runs " + std::to_string(per) + " ranks but has " + std::to_string(found.gpu_busids.size()) +
                   " GPU(s), and a model GPU plays one rank");
  if (machines > 1 && !replicate_machines(&topo, machines, FabricSpec{}, &err)) return give_up(err);
  // Placement: a rank with a bus id plays that GPU; without, the GPUs in the order of the host's ranks.
  for (int q = 0; q < comm->nranks; ++q) {
    const int64_t bus = comm->peers[q].gpu_busid;
    if (bus < 0) continue;
    const auto it = std::find(found.gpu_busids.begin(), found.gpu_busids.end(), bus);
    comm->rank_dev[q] = static_cast<int>(it - found.gpu_busids.begin());
  }
  if (comm->rank == 0)
    CCLAB_INFO(kLogGraph | kLogInit, "Topology detected from %s (NVML %s): %s", opts.sysfs_root.c_str(),
               found.nvml.c_str(), topo.description.c_str());
  comm->topo = std::move(topo);
  *used = true;
  return ncclSuccess;
}

// Loads or builds the topology named by NCCL_TOPO_FILE / CCLAB_TOPO (or the virtual default), and
// places the ranks on its GPUs.
ncclResult_t load_topology(ncclComm_t comm) {
  std::string xml = param_str("NCCL_TOPO_FILE", nullptr);
  std::string spec = param_str("CCLAB_TOPO", nullptr);
  std::string err;
  // Under the simulator the communicator models the machine the simulation runs, its ranks on the GPUs
  // they play there (their devices), so that its topology, channels, tuner and logs are the simulation's.
  std::vector<int> sim_devs;
  if (comm->sim) {
    for (int r = 0; r < comm->nranks; ++r) sim_devs.push_back(comm->peers[r].dev);
    int lo = 0, hi = 0;
    if (xml.empty() && spec.empty()) comm->backend->model(sim_devs, &spec, &xml, &lo, &hi);
  }
  Topology& topo = comm->topo;
  bool node_major = true;
  if (!xml.empty()) {
    if (!read_topology_xml(xml, &topo, &err))
      return report_error(ncclInvalidArgument, "NCCL_TOPO_FILE: %s", err.c_str());
  } else if (!spec.empty() && spec.compare(0, 7, "virtual") == 0) {
    // virtual[:MACHINES]: the plain model with the ranks spread evenly over MACHINES machines (at
    // most one per rank).
    int machines = 1;
    if (spec.size() > 7) {
      char* end = nullptr;
      const long m = spec[7] == ':' ? strtol(spec.c_str() + 8, &end, 10) : -1;
      if (spec[7] != ':' || end == spec.c_str() + 8 || *end != '\0' || m < 1 || m > 4096)
        return report_error(ncclInvalidArgument,
                            "CCLAB_TOPO=%s: expected virtual or virtual:MACHINES with MACHINES in 1..4096",
                            spec.c_str());
      machines = std::min(static_cast<int>(m), comm->nranks);
    }
    const int per = (comm->nranks + machines - 1) / machines;
    topo = make_virtual_topology(per, (comm->nranks + per - 1) / per);
    comm->virtual_model = true;
  } else if (spec == "detect") {
    bool used = false;
    const ncclResult_t r = detect_topology_for(comm, true, &used);
    if (r != ncclSuccess) return r;
    node_major = false;
  } else if (!spec.empty()) {
    std::string preset;
    int machines = 1;
    if (!parse_topo_spec(spec, &preset, &machines, &err) ||
        !make_preset_topology(preset, machines, FabricSpec{}, &topo, &err))
      return report_error(ncclInvalidArgument, "CCLAB_TOPO=%s: %s", spec.c_str(), err.c_str());
  } else {
    // The CUDA backend models the machine it runs on; the host backend (and a failed detection) a
    // plain virtual machine per host.
    bool used = false;
    if (comm->cuda) {
      const ncclResult_t r = detect_topology_for(comm, false, &used);
      if (r != ncclSuccess) return r;
    }
    if (!used) {
      int machines = 1, per = 1;
      machines_from_hosts(comm, &machines, &per);
      topo = make_virtual_topology(per, machines);
      comm->virtual_model = true;
      // The host backend on one host: the tuner models the host itself (setup_topology).
      comm->host_machine = !comm->cuda && !comm->sim && machines == 1;
      // The model's GPUs are those the ranks run on as far as their compute capability goes (it picks
      // the tuner's constants and NCCL's LL128 rule); their links stay the virtual model's PCIe switch,
      // under which LL128 is off by default as on any machine without NVLink.
      std::set<int> sms;
      for (int r = 0; r < comm->nranks; ++r) {
        const int g = topo.gpu_node(comm->rank_node[r], comm->rank_dev[r]);
        if (g >= 0 && comm->peers[r].gpu_sm > 0) {
          topo.nodes[g].sm = comm->peers[r].gpu_sm;
          sms.insert(comm->peers[r].gpu_sm);
        }
      }
      const size_t at = topo.description.find("(sm80)");
      if (!sms.empty() && at != std::string::npos)
        topo.description.replace(at, 6, sms.size() == 1 ? "(sm" + std::to_string(*sms.begin()) + ")" : "(mixed sm)");
    }
    node_major = false;
  }
  const int gpm = topo.gpus_per_machine();
  const int capacity = gpm * topo.machines;
  if (gpm < 1 || comm->nranks > capacity)
    return report_error(ncclInvalidArgument,
                        "the topology %s has %d GPUs (%d machine%s x %d) but the communicator has %d ranks; "
                        "choose more machines (e.g. CCLAB_TOPO=%s:%d)",
                        topo.name.c_str(), capacity, topo.machines, topo.machines == 1 ? "" : "s", gpm, comm->nranks,
                        topo.name.c_str(), (comm->nranks + gpm - 1) / std::max(gpm, 1));
  if (node_major) {
    // Rank r plays GPU r % G of machine r / G, as a job launched node by node would (spread
    // evenly for virtual:MACHINES, whose machines were sized for it); under the simulator GPU d % G
    // of machine d / G for its device d, as the simulated world places it (sim/world.h).
    comm->rank_node.resize(comm->nranks);
    comm->rank_dev.resize(comm->nranks);
    for (int r = 0; r < comm->nranks; ++r) {
      const int d = comm->sim ? sim_devs[r] : r;
      if (d < 0 || d >= capacity)
        return report_error(ncclInvalidArgument,
                            "rank %d plays device %d, which the topology %s does not have (%d GPUs); choose more "
                            "machines (e.g. CCLAB_TOPO=%s:%d)",
                            r, d, topo.name.c_str(), capacity, topo.name.c_str(), d / gpm + 1);
      comm->rank_node[r] = d / gpm;
      comm->rank_dev[r] = d % gpm;
    }
  }
  for (int r = 0; r < comm->nranks; ++r) {
    int g = topo.gpu_node(comm->rank_node[r], comm->rank_dev[r]);
    if (g >= 0) topo.nodes[g].rank = r;
  }
  std::set<int> used(comm->rank_node.begin(), comm->rank_node.end());
  comm->nnodes = static_cast<int>(used.size());
  if (comm->rank == 0) {
    CCLAB_INFO(kLogGraph | kLogInit, "Topology %s: %s; %d rank%s on %d machine%s", topo.name.c_str(),
               topo.description.c_str(), comm->nranks, comm->nranks == 1 ? "" : "s", comm->nnodes,
               comm->nnodes == 1 ? "" : "s");
    if (log_enabled(LogLevel::kInfo, kLogGraph)) {
      CCLAB_INFO(kLogGraph, "%s", topo.describe_paths(0).c_str());
    }
    const std::string dump = param_str("NCCL_TOPO_DUMP_FILE", nullptr);
    if (!dump.empty()) {
      if (!write_topology_xml(topo, dump, &err))
        return report_error(ncclSystemError, "NCCL_TOPO_DUMP_FILE: %s", err.c_str());
      CCLAB_INFO(kLogGraph | kLogEnv, "Topology written to %s", dump.c_str());
    }
  }
  return ncclSuccess;
}

// NVLS's groups (graph/search.h nvls_groups: each machine's ranks, its heads first) and, across machines,
// NVLS-Tree's trees (NCCL's connectNvls): on channel c the heads of a part form tree c % 2 of the double
// binary tree over machines. A machine's ranks that are no head (a GPU without a NIC across machines, GPUs
// beyond 32 on one) scatter to and gather from the heads only. False with *why where the ranks do not
// cover every head GPU of every machine.
static bool nvls_setup(ncclComm_t comm, std::string* why) {
  const int nnodes = comm->nnodes;
  NvlsGroups groups;
  if (!nvls_groups(comm->nvls_graph, comm->rank_node, comm->rank_dev, &groups, why)) return false;
  const int node = groups.group_of[comm->rank];
  const int nheads = groups.nheads;
  comm->nvls_group = groups.group[node];
  comm->nvls_heads = nheads;
  for (int c = 0; c < comm->nchannels && nnodes > 1; ++c)
    comm->channels[c].nvls_tree = nvls_tree_links(groups, comm->rank, c);
  if (comm->rank == 0) {
    if (nnodes > 1)
      CCLAB_INFO(kLogInit | kLogNvls, "NVLS-Tree: %d heads of %zu ranks per machine over %d machines, trees c %% 2 of "
                 "the double binary tree", nheads, comm->nvls_group.size(), nnodes);
    else
      CCLAB_INFO(kLogInit | kLogNvls, "NVLS: %d heads over %zu ranks", nheads, comm->nvls_group.size());
  }
  return true;
}

ncclResult_t search_graphs(ncclComm_t comm) {
  std::string err;
  TopoGraph& ring = comm->ring_graph;
  TopoGraph& tree = comm->tree_graph;
  ring = TopoGraph{};
  ring.id = 0;
  ring.pattern = GraphPattern::kRing;
  tree = TopoGraph{};
  tree.id = 1;
  tree.pattern = GraphPattern::kBalancedTree;
  // Every rank of a communicator searches the same model; ranks that share a process (and later
  // communicators on the same machine) take the result from a process-wide cache keyed by the model
  // itself, since a search can take a few hundred milliseconds. The lock is held across the search:
  // the ranks of a process that start together wait for the first one's result instead of repeating
  // it (and the map is only ever touched under the lock).
  static std::mutex cache_mu;
  static auto* cache = new std::map<std::string, std::pair<TopoGraph, TopoGraph>>;
  const char* cross = getenv("NCCL_CROSS_NIC");
  const std::string key = topology_xml_string(comm->topo) + "|NCCL_CROSS_NIC=" + (cross ? cross : "");
  {
    std::lock_guard<std::mutex> lk(cache_mu);
    auto it = cache->find(key);
    if (it != cache->end()) {
      ring = it->second.first;
      tree = it->second.second;
      CCLAB_INFO(kLogGraph | kLogInit, "Graphs for this topology taken from the process's cache");
    } else {
      const auto t0 = std::chrono::steady_clock::now();
      if (!search_ring_and_tree(comm->topo, &ring, &tree, &err))
        return report_error(ncclInternalError, "%s", err.c_str());
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      cache->emplace(key, std::make_pair(ring, tree));
      CCLAB_INFO(kLogGraph | kLogInit, "Graphs for this topology searched in %.1f ms", ms);
    }
  }
  const std::string file = param_str("NCCL_GRAPH_FILE", nullptr);
  if (!file.empty() && !read_graphs_xml(file, comm->topo, {&ring, &tree}, &err))
    return report_error(ncclInvalidArgument, "NCCL_GRAPH_FILE: %s", err.c_str());
  if (comm->rank == static_cast<int>(param_int("NCCL_GRAPH_DUMP_FILE_RANK", 0))) {
    const std::string dump = param_str("NCCL_GRAPH_DUMP_FILE", nullptr);
    if (!dump.empty() && !write_graphs_xml({&ring, &tree}, dump, &err))
      return report_error(ncclSystemError, "NCCL_GRAPH_DUMP_FILE: %s", err.c_str());
  }
  if (comm->rank == 0 && log_enabled(LogLevel::kInfo, kLogGraph)) {
    CCLAB_INFO(kLogGraph, "Ring graph: %s", describe_graph(ring).c_str());
    CCLAB_INFO(kLogGraph, "Tree graph: %s", describe_graph(tree).c_str());
  }
  return ncclSuccess;
}

}  // namespace

// Builds comm->channels (rings and trees) and the cost model. Called by init_body once the shared
// parameters are agreed (comm->nchannels set).
ncclResult_t setup_topology(ncclComm_t comm) {
  ncclResult_t r = load_topology(comm);
  if (r != ncclSuccess) return r;
  r = search_graphs(comm);
  if (r != ncclSuccess) return r;
  RankPlacement place;
  place.rank_machine = comm->rank_node;
  place.rank_dev = comm->rank_dev;
  if (comm->cuda) {
    // On GPUs the communicator runs what the model says a GPU would (every rank built the same model,
    // so every rank comes to the same count), within the agreed bounds and what one launch and the GPU
    // can hold.
    std::string note;
    comm->nchannels = cuda_channel_count(comm->virtual_model ? 0 : modelled_channels(comm->ring_graph, comm->tree_graph),
                                         comm->gpu_sharing, comm->channel_lo, comm->channel_hi, cuda::kMaxLaunchBlocks,
                                         comm->channel_cap, &note);
    if (comm->rank == 0)
      CCLAB_INFO(kLogInit | kLogTuning, "%d channels on the CUDA backend (%s%s%s)", comm->nchannels,
                 !comm->virtual_model   ? "as NCCL would run on the modelled machine"
                 : comm->gpu_sharing > 1 ? "virtual model, ranks sharing a GPU: as many as one launch carries"
                                         : "virtual model: 16 by default",
                 note.empty() ? "" : "; ", note.c_str());
  }
  if (comm->sim) {
    // The simulated world runs NCCL's channels for the modelled machine within the bounds it applies
    // (NCCL_MIN/MAX_NCHANNELS; sim/session.cc): so does the communicator, whose logs and tuner describe it.
    std::vector<int> devs;
    for (int r = 0; r < comm->nranks; ++r) devs.push_back(comm->peers[r].dev);
    std::string preset, xml;
    int lo = 0, hi = 0;
    comm->backend->model(devs, &preset, &xml, &lo, &hi);
    comm->nchannels = modelled_channels(comm->ring_graph, comm->tree_graph, lo > 0 ? lo : 1, hi > 0 ? hi : 64);
    if (comm->rank == 0)
      CCLAB_INFO(kLogInit | kLogTuning, "%d channels on the sim backend, as NCCL would run on the simulated machine",
                 comm->nchannels);
  }
  std::vector<ChannelPlan> plan = plan_channels(comm->topo, comm->ring_graph, comm->tree_graph, place, comm->nchannels);
  if (comm->host_machine) {
    // On the host every rank reaches every other through memory alike, and what a small call waits for
    // is hand-offs between threads: the trees are as shallow as the kernels' fan-in allows (kMaxFan = 3
    // children, NCCL_MAX_TREE_ARITY), a rank's children 3p+1..3p+3 of its place p, so 2 ceil(log3(2k+1)) - 2
    // hops up and down where a chain through the host has 2(k-1): 2 for 4 ranks. Channel c's tree starts
    // at rank c, so the roots' extra work spreads over the ranks.
    for (int c = 0; c < comm->nchannels; ++c) {
      plan[c].tree_index = c % 2;
      for (int r = 0; r < comm->nranks; ++r) {
        const int k = comm->nranks, p = (r - c % k + k) % k;
        TreeLinks t{-1, {-1, -1, -1}, 0};
        if (p > 0) t.up = ((p - 1) / kMaxFan + c) % k;
        for (int q = kMaxFan * p + 1; q <= kMaxFan * p + kMaxFan && q < k; ++q) t.down[t.ndown++] = (q + c) % k;
        plan[c].tree[r] = t;
      }
    }
  }
  comm->channels.assign(comm->nchannels, Channel{});
  for (int c = 0; c < comm->nchannels; ++c) {
    Channel& ch = comm->channels[c];
    ch.ring = plan[c].ring;
    ch.view.resize(comm->nranks);
    const int pos = static_cast<int>(std::find(ch.ring.begin(), ch.ring.end(), comm->rank) - ch.ring.begin());
    for (int i = 0; i < comm->nranks; ++i) ch.view[i] = ch.ring[(pos + i) % comm->nranks];
    ch.tree_index = plan[c].tree_index;
    ch.tree = plan[c].tree[comm->rank];
    const TreeLinks& t = ch.tree;
    if (comm->rank == 0 && log_enabled(LogLevel::kInfo, kLogInit)) {
      std::string line;
      for (int x : ch.ring) line += " " + std::to_string(x);
      CCLAB_INFO(kLogInit, "Channel %02d/%02d :%s", c, comm->nchannels, line.c_str());
    }
    if (comm->sim && comm->nranks > 1 && log_enabled(LogLevel::kInfo, kLogInit)) {
      // The simulated connection to the ring's next rank, NCCL's "Channel 00/0 : 7[7] -> 8[0] via NET/IB/0"
      // with the NICs it takes between machines (the channel's, ChannelPlan::net).
      const int next = ch.view[1];
      const NetConn* k = plan[c].net_of(comm->rank, next);
      const std::string via = k != nullptr ? "NET/" + std::to_string(k->send_net) + " -> NET/" + std::to_string(k->recv_net)
                                           : std::string("P2P");
      CCLAB_INFO(kLogInit, "Channel %02d/%d : %d[%d] -> %d[%d] via %s (simulated)", c, comm->nchannels, comm->rank,
                 comm->dev, next, comm->peers[next].dev, via.c_str());
    }
    if (log_enabled(LogLevel::kInfo, kLogInit)) {
      // NCCL's format: "Trees [c] d0/d1/d2->me->up" (-1 for none).
      CCLAB_INFO(kLogInit, "Trees [%d] %d/%d/%d->%d->%d (tree %d)", c, t.down[0], t.down[1], t.down[2], comm->rank,
                 t.up, ch.tree_index);
    }
  }

  // Point-to-point channels, as NCCL 2.28.9 sets them up after the collective channels
  // (ncclTopoComputeP2pChannels): a send to a peer is split over up to p2p.per_peer of them.
  {
    std::vector<int> gpus(comm->nranks);
    for (int r = 0; r < comm->nranks; ++r) gpus[r] = comm->topo.gpu_node(comm->rank_node[r], comm->rank_dev[r]);
    P2pParams pp;
    pp.min_channels = static_cast<int>(param_int("NCCL_MIN_P2P_NCHANNELS", pp.min_channels));
    pp.max_channels = static_cast<int>(param_int("NCCL_MAX_P2P_NCHANNELS", pp.max_channels));
    pp.net_per_peer = static_cast<int>(param_int("NCCL_NCHANNELS_PER_NET_PEER", 0));
    pp.nvl_chunk = static_cast<int>(param_int("NCCL_P2P_NVL_CHUNKSIZE", pp.nvl_chunk));
    pp.net_chunk = static_cast<int>(param_int("NCCL_P2P_NET_CHUNKSIZE", pp.net_chunk));
    pp.pci_chunk = static_cast<int>(param_int("NCCL_P2P_PCI_CHUNKSIZE", pp.pci_chunk));
    pp.sched_group = static_cast<int>(param_int("NCCL_P2P_SCHEDULE_GROUP_SIZE", pp.sched_group));
    std::string why;
    comm->p2p = p2p_channels(comm->topo, gpus, comm->nchannels, comm->buff_bytes, pp, &why);
    comm->p2p_sched = p2p_schedule(comm->rank, comm->rank_node, pp.sched_group);
    // Ranks sharing a GPU on the CUDA backend: the virtual model's PCIe rule (2 channels per peer, 128
    // KiB steps) held send/recv to 36 GB/s at 1 GiB on an H100 (docs/gpu.md "Measured").
    if (comm->cuda && comm->virtual_model && comm->gpu_sharing > 1)
      comm->p2p = p2p_channels_sharing_gpu(comm->p2p, comm->buff_bytes, pp, &why);
    if (comm->rank == 0)
      CCLAB_INFO(kLogInit | kLogP2p, "%d coll channels, %d p2p channels, %d p2p channels per peer: %s", comm->nchannels,
                 comm->p2p.nchannels, comm->p2p.per_peer, why.c_str());
  }

  // Cost model, for the channels the modelled GPUs would run (NCCL_MIN/MAX_NCHANNELS bound them; the
  // host backend itself runs comm->nchannels, the CUDA backend runs its channels and is modelled with them).
  const int modelled = comm->cuda || comm->sim ? comm->nchannels
                                  : modelled_channels(comm->ring_graph, comm->tree_graph,
                                                      static_cast<int>(param_int("NCCL_MIN_NCHANNELS", 1)),
                                                      static_cast<int>(param_int("NCCL_MAX_NCHANNELS", 64)));
  TunerInput in = make_tuner_input(comm->topo, comm->ring_graph, comm->tree_graph, place, modelled);
  in.enable = comm->algo_proto;
  // NCCL_PAT_ENABLE through the runtime's parameters (environment and nccl.conf; graph/ reads only the
  // environment): 2 applies NCCL's rule, any other non-zero value is on.
  const int64_t pat_enable = param_int("NCCL_PAT_ENABLE", 2);
  in.pat_enable = pat_enable == 2 ? 2 : pat_enable != 0 ? 1 : 0;
  if (comm->host_machine) {
    // The host backend runs on the host, not on the virtual model's GPUs: its cores (the fewest any
    // rank's process may use), its ranks, and the channels this communicator connected, with the
    // constants of graph/tuning.cc (docs/tuner.md, section 6).
    int cores = comm->peers[0].cpus;
    for (const PeerInfo& p : comm->peers) cores = std::min(cores, p.cpus);
    in.host = host_costs(cores, comm->nranks, comm->nchannels);
    in.ring_channels = in.tree_channels = comm->nchannels;
  }
  // NVLS (NCCL_NVLS_ENABLE, default 2: where the modelled machine has it) runs on the host backend when it
  // models GPUs and every rank is on this host: the NVLS memory of a channel is shared by all of them
  // (kernels/nvls.h), or, across machines (NVLS-Tree), by the ranks of each machine; and under
  // CCLAB_BACKEND=sim, whose world runs the same schedule on its switch hosts (sim/world.cc). The CUDA
  // backend has no multicast memory yet: NCCL's choice there stays with Ring and Tree.
  {
    const int64_t enable = param_int("NCCL_NVLS_ENABLE", 2);
    if (enable < 0 || enable > 2)
      return report_error(ncclInvalidUsage, "NCCL_NVLS_ENABLE=%lld: valid values are 0 (off), 1 (on), 2 (automatic)",
                          static_cast<long long>(enable));
    const int64_t chunk = param_int("NCCL_NVLS_CHUNKSIZE", 128 * 1024);
    if (chunk < 512 || chunk % 512 != 0 || chunk > (1 << 30))
      return report_error(ncclInvalidUsage, "NCCL_NVLS_CHUNKSIZE=%lld: it must be a multiple of 512 bytes, 512 B to 1 GiB",
                          static_cast<long long>(chunk));
    comm->nvls_step_bytes = static_cast<int>(chunk);
    bool one_host = true;
    for (const PeerInfo& p : comm->peers) one_host = one_host && p.host_hash == comm->peers[0].host_hash;
    const bool runs = comm->sim ||
                      (!comm->cuda && !comm->host_machine && !comm->backend->makes_connections() && one_host);
    if (runs || enable == 0) {
      const int cfg = comm->config.nvlsCTAs;
      add_nvls(comm->topo, enable, &comm->nvls_graph, &in, cfg > 0 && cfg != NCCL_CONFIG_UNDEF_INT ? cfg : 0);
      if (in.nvls != nullptr) {
        std::string why;
        if (!nvls_setup(comm, &why)) {
          in.nvls = nullptr;
          in.nvls_why = why;
        }
      }
      comm->nvls_runs = in.nvls != nullptr && comm->nnodes == 1;
      comm->nvls_tree_runs = in.nvls != nullptr && comm->nnodes > 1;
    } else {
      in.nvls_why = "cclab runs NVLS and NVLS-Tree on the host backend modelling NVSwitch machines whose ranks share "
                    "this host, and under CCLAB_BACKEND=sim";
    }
    const int64_t tree_max = param_int("NCCL_NVLSTREE_MAX_CHUNKSIZE", -2);
    if (tree_max != -2 && (tree_max < 512 || tree_max % 512 != 0 || tree_max > (1 << 30)))
      return report_error(ncclInvalidUsage,
                          "NCCL_NVLSTREE_MAX_CHUNKSIZE=%lld: it must be a multiple of 512 bytes, 512 B to 1 GiB",
                          static_cast<long long>(tree_max));
    comm->nvls_tree_max_chunk = nvls_tree_max_chunk(comm->nnodes, comm->nvls_step_bytes, static_cast<int>(tree_max));
  }
  // NCCL_NET_OVERHEAD is in nanoseconds, as NCCL's.
  const int64_t overhead_ns = param_int("NCCL_NET_OVERHEAD", -1);
  in.net_overhead_us = overhead_ns < 0 ? -1.0 : static_cast<double>(overhead_ns) / 1000.0;
  std::string err;
  if (!comm->tuner.init(in, &err)) return report_error(ncclInternalError, "tuner: %s", err.c_str());
  if (comm->rank == 0 && log_enabled(LogLevel::kInfo, kLogTuning))
    CCLAB_INFO(kLogTuning, "%s", comm->tuner.describe().c_str());
  return ncclSuccess;
}

}  // namespace cclab
