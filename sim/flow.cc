// sim/flow.cc - the flow level (docs/simulator.md, "Levels"): every step of the schedules replayed with
// each connection's traffic at its share of the links, instead of a SimGrid communication per slice.
//
//  1. Counting pass: every (rank, channel) runs its schedule with a SimExec that makes no SimGrid call,
//     which yields the wire bytes each connection carries (a connection that carries none takes no share).
//  2. Shares: each connection that carries bytes is one flow over its SimGrid route, all of a phase at
//     once (a tree's reduce phase, towards the parent, and its broadcast phase are two phases; a ring has
//     one; PAT a phase per dimension); its share is its weighted max-min rate under the whole collective's contention, solved over
//     SimGrid's links as CM02 shares them (or, for tests, measured from real SimGrid flows).
//  3. Replay: each (rank, channel) runs its schedule again with a recording SimExec (the actions a
//     step-level SimExec would take) and replay_steps() evaluates them with each transfer at its share
//     (replay.h): latencies, step overheads, data loops, data dependencies and NCCL_STEPS credits as at
//     step level. Runs of up to SimConfig::refine_limit transfers are recorded whole and replayed again
//     with each transfer's share refined from the competitors it actually met (OccupancyRates); larger
//     ones replay channel by channel at the static shares, once per distinct channel.
#include <simgrid/s4u.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <queue>

#include "sim/replay.h"
#include "sim/world.h"

namespace sg4 = simgrid::s4u;

namespace cclab {
namespace sim {

namespace {

// One connection's flow for the shares.
struct ConnFlow {
  int channel, from, to, phase;
  double bytes;
  double rate = 0;     // its share, bytes/s
  double latency = 0;  // its route's, s
  double weight = 0;   // 1 / latency: SimGrid CM02's sharing penalty is the route's latency
  std::vector<int> links;  // its route, as indices into the run's link capacities (route_flows)
  sg4::Host* src = nullptr;  // the hosts its route runs between (World::conn_route)
  sg4::Host* dst = nullptr;
  sg4::Host* exec = nullptr;  // NVLS: the switch host whose ports reduce this connection's bytes (no route)
};

// Every flow's route, latency and weight, and the capacity (bytes/s) of every link a route crosses.
// A switch's reductions (ConnFlow::exec) share its host as SimGrid shares a multicore host's executions:
// all of them the host's cores x speed, each at most one core (a link of its own); no latency, and one
// weight for all (they meet no network flow).
void route_flows(std::vector<ConnFlow>& all, std::vector<double>* capacity) {
  std::map<sg4::Link*, int> link_id;
  std::map<sg4::Host*, int> host_id;
  for (ConnFlow& f : all) {
    if (f.exec != nullptr) {
      auto it = host_id.emplace(f.exec, static_cast<int>(capacity->size())).first;
      if (it->second == static_cast<int>(capacity->size()))
        capacity->push_back(f.exec->get_speed() * f.exec->get_core_count());
      f.links = {it->second, static_cast<int>(capacity->size())};
      capacity->push_back(f.exec->get_speed());
      f.latency = 0;
      f.weight = 1;
      continue;
    }
    std::vector<sg4::Link*> links;
    f.src->route_to(f.dst, links, &f.latency);
    f.weight = 1.0 / std::max(f.latency, 1e-12);
    for (sg4::Link* l : links) {
      auto it = link_id.emplace(l, static_cast<int>(capacity->size())).first;
      if (it->second == static_cast<int>(capacity->size())) capacity->push_back(l->get_bandwidth());
      f.links.push_back(it->second);
    }
  }
}

// The refinement's rates. A static share assumes every connection of the phase moves data all the time;
// a tree's pipeline stages (and any short collective's) are staggered, so a transfer meets fewer
// competitors than that. After a replay, each link's occupancy over time is known: the intervals in which
// transfers moved bytes across it, each with its weight (1 / route latency: SimGrid CM02's sharing
// penalty is the route's latency). In the next replay a transfer gets, on each link of its route, its
// weighted fair share among the competitors present on average during its previous interval (their
// exact overlaps), and the smallest of those over its route; the replays repeat until the collective's
// time settles (kRefineRounds at most).
class OccupancyRates : public ReplayRates {
 public:
  // `conns`: the connections (their routes, weights and static shares); `capacity`: their links'.
  OccupancyRates(const std::vector<ConnFlow>& conns, const std::vector<double>& capacity, size_t ntasks)
      : conns_(conns), cap_(capacity), prev_(ntasks), next_(ntasks) {}

  // Starts another replay: the transfers of the last one become the occupancy the rates come from.
  void next_round() {
    prev_.swap(next_);
    // Each link's occupancy as a step function: the summed weight of the transfers crossing it between
    // breakpoints, with its running integral, so the weight over any interval is two binary searches.
    std::vector<std::vector<std::pair<double, double>>> edges(cap_.size());  // (time, weight change)
    for (const auto& v : prev_)
      for (const Xfer& x : v)
        for (int l : conns_[x.conn].links) {
          edges[l].emplace_back(x.t0, conns_[x.conn].weight);
          edges[l].emplace_back(x.t1, -conns_[x.conn].weight);
        }
    occ_.assign(cap_.size(), {});
    for (size_t l = 0; l < edges.size(); ++l) {
      std::sort(edges[l].begin(), edges[l].end());
      Occupancy& o = occ_[l];
      double w = 0, area = 0;
      for (const auto& e : edges[l]) {
        if (!o.t.empty()) area += w * (e.first - o.t.back());
        if (o.t.empty() || e.first > o.t.back()) {
          o.t.push_back(e.first);
          o.area.push_back(area);
          o.w.push_back(0);
        }
        w += e.second;
        o.w.back() = w;
      }
    }
    have_prev_ = true;
  }

  double rate(size_t task, size_t xfer, int conn, double, double) override {
    const ConnFlow& c = conns_[conn];
    if (!have_prev_ || xfer >= prev_[task].size()) return c.rate;
    const Xfer& p = prev_[task][xfer];
    const double d = p.t1 - p.t0;
    if (!(d > 0)) return c.rate;
    double r = 1e300;
    for (int l : c.links) {
      // The weight on the link over the interval (every transfer's weight x its overlap), less its own.
      const double others = std::max(0.0, (occ_[l].integral(p.t1) - occ_[l].integral(p.t0)) / d - c.weight);
      r = std::min(r, cap_[l] * c.weight / (c.weight + others));
    }
    return r;
  }
  void flowed(size_t task, size_t xfer, int conn, double t0, double t1, double rate) override {
    std::vector<Xfer>& v = next_[task];
    if (v.size() <= xfer) v.resize(xfer + 1);
    v[xfer] = Xfer{t0, t1, rate, conn};
  }

 private:
  struct Xfer {
    double t0 = 0, t1 = 0, rate = 0;
    int conn = 0;
  };
  struct Occupancy {
    std::vector<double> t, w, area;  // breakpoints, weight from each, integral up to each
    double integral(double x) const {
      const size_t i = static_cast<size_t>(std::upper_bound(t.begin(), t.end(), x) - t.begin());
      return i == 0 ? 0.0 : area[i - 1] + w[i - 1] * (x - t[i - 1]);
    }
  };
  const std::vector<ConnFlow>& conns_;
  const std::vector<double>& cap_;
  std::vector<std::vector<Xfer>> prev_, next_;  // per task, per transfer: the last replay's, the current
  std::vector<Occupancy> occ_;                  // per link, from the last replay
  bool have_prev_ = false;
};

// Rates of `flows` (indices into all) when all of them share the platform at once: each is started
// with more bytes than it could move, the simulated clock passes every route's latency, and the bytes
// moved over a short interval give the max-min share. The flows are then cancelled.
void measure_shares(std::vector<ConnFlow>& all, const std::vector<size_t>& flows) {  // after route_flows
  if (flows.empty()) return;
  constexpr double kProbeBytes = 1e12, kInterval = 1e-7;
  std::vector<sg4::CommPtr> comms;
  comms.reserve(flows.size());
  double max_latency = 0;
  for (size_t i : flows) {
    const ConnFlow& f = all[i];
    max_latency = std::max(max_latency, f.latency);
    comms.push_back(sg4::Comm::sendto_async(f.src, f.dst, static_cast<uint64_t>(kProbeBytes)));
  }
  sg4::this_actor::sleep_for(max_latency + 1e-9);
  std::vector<double> before(comms.size());
  for (size_t k = 0; k < comms.size(); ++k) before[k] = comms[k]->get_remaining();
  sg4::this_actor::sleep_for(kInterval);
  for (size_t k = 0; k < comms.size(); ++k) {
    all[flows[k]].rate = (before[k] - comms[k]->get_remaining()) / kInterval;
    comms[k]->cancel();
  }
}

constexpr int kRefineRounds = 16;

// PAT's phase of a connection: its dimension d, the peer 2^d away in the direction the collective sends
// (kernels/pat.h PatConns: reduce_scatter to rank + 2^d, all_gather to rank - 2^d; with n = 2^a + 2^b
// the peer 2^a one way is also 2^b the other, so the direction matters). A rank sends on one dimension at
// a time, as do all ranks in lockstep, so its connections of different dimensions do not compete: each
// dimension's shares are solved apart, like a tree's two phases.
int pat_phase(int rank, int peer, int n, bool send_up) {
  const int up = ((peer - rank) % n + n) % n;
  const int dist = send_up ? up : (n - up) % n;
  for (int d = 0; (1 << d) < n; ++d)
    if (dist == (1 << d)) return d;
  return 0;
}

// The same shares solved directly (maxmin_rates, replay.h): what SimGrid's LMM solver computes for these
// flows (sim_test checks the two agree), without starting and cancelling SimGrid activities (cancelling
// 10^4 flows takes seconds).
void solve_shares(std::vector<ConnFlow>& all, const std::vector<size_t>& flows, const FluidNet& net) {
  std::vector<int> conns(flows.begin(), flows.end());
  std::vector<double> rates(flows.size());
  maxmin_rates(net, conns.data(), conns.size(), rates.data());
  for (size_t k = 0; k < flows.size(); ++k) all[flows[k]].rate = rates[k];
}


}  // namespace

bool World::run_flow(size_t count, const Choice& ch, double* time_us, uint64_t* flows, std::string* error,
                     bool* static_shares) {
  std::vector<Task> tasks;
  if (!make_tasks(count, ch, &tasks, error)) return false;
  // The FIFOs' state before the collective: the counting pass advances every side's step, and the
  // recording pass must start from where a step-level run would.
  std::vector<uint64_t> initial(waits_.size(), 0);
  std::vector<std::pair<ConnInfo*, uint64_t>> steps;
  for (auto& kv : conns_) {
    SimConn& c = *kv.second;
    initial[c.send_info.hdr->head.waiters] = c.send_info.hdr->head.value;
    initial[c.send_info.hdr->tail.waiters] = c.send_info.hdr->tail.value;
    steps.emplace_back(&c.send_info, c.send_info.step);
    steps.emplace_back(&c.recv_info, c.recv_info.step);
  }
  for (auto& kv : nvls_mem_)  // NVLS: every rank's copy of every head's FIFO counters
    for (size_t r = 0; r < kv.second.region.size(); ++r)
      for (int h = 0; h < kv.second.view[r].nheads; ++h)
        for (bool b : {false, true}) {
          const ConnFifoHeader* hdr =
              reinterpret_cast<const ConnFifoHeader*>(kv.second.region[r].get() + nvls_fifo_off(h, b, nvls_step_bytes_));
          initial[hdr->head.waiters] = hdr->head.value;
          initial[hdr->tail.waiters] = hdr->tail.value;
        }
  const int nslots = nranks_ + SimExec::kSwitchParts;  // per_peer: the ranks, then a switch's parts

  // 1. Counting pass: bytes per connection.
  std::vector<ConnFlow> conn_flows;
  std::map<std::tuple<int, int, int>, size_t> flow_of;  // (channel, from, to)
  std::vector<SimExec::Count> per_peer(nslots);
  uint64_t transfers = 0;
  for (const Task& t : tasks) {
    std::fill(per_peer.begin(), per_peer.end(), SimExec::Count{});
    SimExec ex(this, t.w.rank, t.channel, t.w.proto);
    ex.set_counting(&per_peer);
    run_task(ex, t);
    ex.flush();
    for (int p = 0; p < nslots; ++p) {
      if (per_peer[p].bytes <= 0) continue;
      if (p >= nranks_ + SimExec::kSwitchFlows) {  // the group's other ranks' link bytes: no flow
        add_nvls_others_bytes(t.w.rank, p - nranks_ == SimExec::kSwitchOthersUp, per_peer[p].bytes);
        continue;
      }
      transfers += per_peer[p].slices;
      // Tasks that share a connection (NVLS's roles of one rank and channel all use its switch link) share
      // one flow, which carries all their bytes.
      auto key = std::make_tuple(t.channel, t.w.rank, p);
      auto seen = flow_of.find(key);
      if (seen != flow_of.end()) conn_flows[seen->second].bytes += per_peer[p].bytes;
      else flow_of[key] = conn_flows.size();
      if (p >= nranks_) {  // a switch step's part (SimExec::SwitchPart)
        const int part = p - nranks_;
        sg4::Host* gpu = rank_host(t.w.rank);
        sg4::Host* sw = nvswitch_host(t.w.rank);
        if (sw == nullptr) {
          *error = "flow level: rank " + std::to_string(t.w.rank) + " takes an NVLS step without an NVSwitch";
          return false;
        }
        if (part != SimExec::kSwitchReduce) add_nvswitch_bytes(t.w.rank, part == SimExec::kSwitchUp, per_peer[p].bytes);
        if (seen != flow_of.end()) continue;
        ConnFlow f{t.channel, t.w.rank, p, 0, per_peer[p].bytes, 0, 0, 0, {}, nullptr, nullptr, nullptr};
        if (part == SimExec::kSwitchReduce) f.exec = sw;
        else if (part == SimExec::kSwitchUp) f.src = gpu, f.dst = sw;
        else f.src = sw, f.dst = gpu;
        conn_flows.push_back(f);
        continue;
      }
      const ConnRoute& route = conn_route(t.channel, t.w.rank, p);
      add_link_bytes(route, per_peer[p].bytes);
      if (seen != flow_of.end()) continue;
      const int phase = t.pat_fn != nullptr ? pat_phase(t.w.rank, p, nranks_, t.w.coll == CollKind::kReduceScatter) : t.tree != nullptr && t.tree->up != p ? 1 : 0;
      conn_flows.push_back(
          ConnFlow{t.channel, t.w.rank, p, phase, per_peer[p].bytes, 0, 0, 0, {}, route.src, route.dst, nullptr});
    }
  }
  for (auto& s : steps) s.first->step = s.second;

  // 2. Shares, phase by phase.
  const double start = sg4::Engine::get_clock();
  FluidNet net;  // every link a connection crosses (bytes/s), each connection's route and weight
  route_flows(conn_flows, &net.capacity);
  for (const ConnFlow& f : conn_flows) {
    net.conn_links.push_back(f.links);
    net.conn_weight.push_back(f.weight);
  }
  int phases = 0;
  for (const ConnFlow& f : conn_flows) phases = std::max(phases, f.phase + 1);
  for (int phase = 0; phase < phases; ++phase) {
    std::vector<size_t> in_phase;
    for (size_t i = 0; i < conn_flows.size(); ++i)
      if (conn_flows[i].phase == phase) in_phase.push_back(i);
    if (cfg_.shares_from_simgrid) measure_shares(conn_flows, in_phase);
    else solve_shares(conn_flows, in_phase, net);
  }

  // 3. Replay. Runs whose recordings fit in memory (every run the step level can afford, and more) are
  // recorded whole and replayed with refined rates; larger ones channel by channel at the static shares.
  const double launch = cfg_.calibration.launch_us * 1e-6;
  const double overhead = cfg_.calibration.step_overhead_us[ch.proto] * 1e-6;
  const bool refine = transfers <= cfg_.refine_limit;
  if (static_shares != nullptr) *static_shares = !refine;
  // NVLS's roles (scatter, reduce, broadcast, gather) overlap in a pipeline whose competitors the
  // occupancy rounds misjudge (docs/simulator.md, "Levels"): NVLS runs take the fluid replay further.
  const bool nvls = ch.algo == AlgoKind::kNvls || ch.algo == AlgoKind::kNvlsTree;
  const double fluid_limit = nvls ? std::max(cfg_.fluid_limit, cfg_.nvls_fluid_limit) : cfg_.fluid_limit;
  std::vector<ReplayTask> replay(refine ? tasks.size() : 0);
  // Records `t` into `rt`; false when it sends on a connection the counting pass did not see.
  auto record = [&](const Task& t, ReplayTask& rt) {
    rt.ops.clear();
    rt.peers.clear();
    // NVLS's own fixed cost comes with its launch, as at step level (run_tasks).
    rt.start = launch + (t.nvls != nullptr ? cfg_.calibration.nvls_latency_us * 1e-6 : 0.0);
    rt.sm_rate = sm_rate_[t.w.rank];
    rt.overhead = overhead;
    rt.switch_overhead = cfg_.calibration.nvls_step_us * 1e-6;
    std::fill(per_peer.begin(), per_peer.end(), SimExec::Count{});
    SimExec ex(this, t.w.rank, t.channel, t.w.proto);
    ex.set_recording(&per_peer, &rt.ops);
    run_task(ex, t);
    ex.flush();
    for (int p = 0; p < nranks_ + SimExec::kSwitchFlows; ++p) {
      if (per_peer[p].bytes <= 0) continue;
      auto it = flow_of.find(std::make_tuple(t.channel, t.w.rank, p));
      if (it == flow_of.end()) {
        *error = "flow level: rank " + std::to_string(t.w.rank) + " channel " + std::to_string(t.channel) +
                 (p < nranks_ ? " sends to rank " + std::to_string(p) : std::string(" takes a switch step")) +
                 " only when recorded";
        return false;
      }
      const ConnFlow& f = conn_flows[it->second];
      rt.peers.push_back(ReplayPeer{p, f.rate, f.latency, static_cast<int>(it->second)});
    }
    return true;
  };
  double end = launch;
  if (refine) {
    for (size_t i = 0; i < tasks.size(); ++i)
      if (!record(tasks[i], replay[i])) return false;
    if (static_cast<double>(transfers) * static_cast<double>(conn_flows.size()) <= fluid_limit) {
      if (!replay_fluid(replay, initial, net, error)) return false;
      for (const ReplayTask& rt : replay) end = std::max(end, rt.end);
    } else {
      OccupancyRates rates(conn_flows, net.capacity, tasks.size());
      double last = -1;
      for (int round = 0; round < kRefineRounds; ++round) {
        if (round > 0) rates.next_round();
        if (!replay_steps(replay, initial, error, &rates)) return false;
        end = launch;
        for (const ReplayTask& rt : replay) end = std::max(end, rt.end);
        if (std::abs(end - last) <= 1e-3 * end) break;
        last = end;
      }
    }
  } else {
    // Channel by channel, the recordings' capacity reused (it is most of the memory). Channels with the
    // same ring (or trees), bytes and shares record and replay alike - NCCL duplicates its rings over
    // channels - so one of each is replayed.
    std::vector<std::vector<size_t>> flows_of(ch.nchannels);
    for (size_t i = 0; i < conn_flows.size(); ++i) flows_of[conn_flows[i].channel].push_back(i);
    std::map<std::vector<double>, double> replayed;  // channel signature -> when its last task ended
    for (int c = 0; c < ch.nchannels; ++c) {
      std::vector<double> sig;
      for (int r = 0; r < nranks_ && ch.algo != AlgoKind::kNvls && ch.algo != AlgoKind::kNvlsTree; ++r) {
        if (ch.algo != AlgoKind::kTree) {
          sig.push_back(plan_[c].ring[r]);
          continue;
        }
        const TreeLinks& tl = plan_[c].tree[r];
        sig.push_back(tl.up);
        for (int k = 0; k < tl.ndown; ++k) sig.push_back(tl.down[k]);
        sig.push_back(-2);
      }
      for (size_t i : flows_of[c]) {
        const ConnFlow& f = conn_flows[i];
        sig.insert(sig.end(), {static_cast<double>(f.from), static_cast<double>(f.to), f.bytes, f.rate, f.latency});
      }
      auto seen = replayed.find(sig);
      if (seen != replayed.end()) {
        end = std::max(end, seen->second);
        continue;
      }
      // NVLS and NVLS-Tree: the flows (every rank's switch parts and tree connections) are the signature.
      size_t used = 0;
      replay.resize(static_cast<size_t>(std::count_if(tasks.begin(), tasks.end(), [c](const Task& t) { return t.channel == c; })));
      for (const Task& t : tasks)
        if (t.channel == c && !record(t, replay[used++])) return false;
      if (!replay_steps(replay, initial, error)) return false;
      double channel_end = launch;
      for (const ReplayTask& rt : replay) channel_end = std::max(channel_end, rt.end);
      replayed.emplace(std::move(sig), channel_end);
      end = std::max(end, channel_end);
    }
  }

  *flows = conn_flows.size();
  *time_us = end * 1e6;
  sg4::this_actor::sleep_for(std::max(0.0, end - (sg4::Engine::get_clock() - start)));
  return true;
}

}  // namespace sim
}  // namespace cclab
