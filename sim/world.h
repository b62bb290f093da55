// sim/world.h - one simulation (internal to sim/): the model, the platform, the channels and their
// connections, the ranks' buffers, and the actors that run one collective. simulate() (simulate.cc)
// drives it from a controller actor, size after size.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/algo_proto.h"
#include "graph/channels.h"
#include "graph/custom_algo.h"
#include "graph/search.h"
#include "graph/topo.h"
#include "graph/tuning.h"
#include "kernels/fifo.h"
#include "kernels/p2p.h"
#include "kernels/pat.h"
#include "kernels/tree.h"
#include "kernels/work.h"
#include "sim/platform.h"
#include "sim/sim.h"
#include "sim/sim_exec.h"
#include "trace/live.h"
#include "trace/trace.h"

namespace simgrid {
namespace s4u {
class Engine;
class Actor;
}  // namespace s4u
}  // namespace simgrid

namespace cclab {
namespace sim {

// One direction of one connection (sender -> receiver on a channel) for one protocol: the shared
// header and, in payload mode, the data slots; the two ends' ConnInfo.
struct SimConn {
  // `mapped` bytes of an anonymous mapping (payload mode), else from aligned_alloc.
  struct Free {
    Free() : mapped(0) {}
    explicit Free(size_t mapped_bytes) : mapped(mapped_bytes) {}
    size_t mapped;
    void operator()(char* p) const;
  };
  // Header (+ data in payload mode), aligned as the header's counters require (alignas(128)), and the
  // data slots at their page offset.
  std::unique_ptr<char, Free> mem;
  ConnInfo send_info, recv_info;
};

// Blocking on a counter: the ConnCounter's `waiters` field holds an index into World::waits_.
struct CounterWait {
  simgrid::s4u::Actor* actor = nullptr;  // the actor suspended on it, if any
  uint64_t target = 0;
  WaitSite site{};
};

using SimCollFn = bool (*)(SimExec& exec, const CollWork& w, const RingView& ring, int channel, ConnInfo* recv,
                           ConnInfo* send);
using SimTreeFn = bool (*)(SimExec& exec, const CollWork& w, const TreeLinks& tree, const TreeConns& conns,
                           int channel);
using SimPatFn = bool (*)(SimExec& exec, const CollWork& w, const PatConns& conns, int channel);
// The schedules instantiated for the simulator (kernels_<type>.cc); nullptr for a type not built.
// tree == nullptr: NVLS on one machine; else NVLS-Tree with the head's connections on the channel's tree.
using SimNvlsFn = bool (*)(SimExec& exec, const CollWork& w, NvlsConn& conn, int channel, int roles,
                           const NvlsTreeConns* tree);
SimCollFn sim_coll_kernel(SimType t);
SimNvlsFn sim_nvls_kernel(SimType t);
SimTreeFn sim_tree_kernel(SimType t);
SimPatFn sim_pat_kernel(SimType t);
// kernels/p2p.h's send and receive for the simulator (kernels_p2p.cc).
bool sim_p2p_send(SimExec& exec, const P2pWork& w, int channel, ConnInfo* send);
bool sim_p2p_recv(SimExec& exec, const P2pWork& w, int channel, ConnInfo* recv);

class World {
 public:
  World(const SimConfig& cfg) : cfg_(cfg), record_steps_(cfg.record_events || !cfg.trace_path.empty()) {}
  ~World();

  // Model, placement, search, channels, tuner, platform and routes. False with *error.
  bool setup(simgrid::s4u::Engine& engine, std::string* error);

  // ---- the runtime's sim backend (session.cc): several communicators in one simulated world ----
  // Before setup: rank r plays the model's GPU devs[r], GPUs numbered node-major (GPU d % G of machine
  // d / G). Default: ranks 0..nranks-1 on the first GPUs (place_ranks).
  void set_devices(std::vector<int> devs) { devs_ = std::move(devs); }
  // Before setup: declare the routes between every pair of the model's GPUs, not only those the
  // channels use, so that point-to-point operations and worlds sharing this platform find theirs.
  // Models of at most kAllRoutesMaxGpus GPUs (a FullZone holds n^2 routes).
  static constexpr int kAllRoutesMaxGpus = 64;
  void set_all_routes(bool on) { all_routes_ = on; }
  // Before setup: run on `base`'s platform (SimGrid builds one per engine) instead of building one;
  // every route this world uses must have been declared there. Such a setup makes no SimGrid call.
  void share_platform(const World& base) { shared_platform_ = base.platform_; }
  // Told when an actor blocks on another actor (a counter wait, a join) and when an actor is created,
  // finishes or is woken, so that the session knows when nothing can progress without more work from
  // the program. Unset (simulate()): nothing is counted.
  struct BlockHooks {
    virtual ~BlockHooks() = default;
    virtual void spawned() = 0;   // an actor was created (runnable)
    virtual void finished() = 0;  // an actor ends
    virtual void blocked() = 0;   // the running actor is about to wait for another actor
    virtual void woken() = 0;     // a blocked actor was made runnable again
  };
  void set_block_hooks(BlockHooks* h) { hooks_ = h; }
  BlockHooks* block_hooks() const { return hooks_; }

  // Runs every size of the config from the calling actor (the controller); fills out->sizes.
  bool run_sizes(SimResult* out, std::string* error, const SimProgress& progress);

  // One rank's part of a collective, on the caller's buffers (the runtime's sim backend, session.h):
  // spawns the rank's channel actors and returns when they are done. Every rank of the collective
  // must be launched the same way (from its own actor) for it to complete.
  struct RankOp {
    CollKind coll = CollKind::kAllReduce;
    SimType type = SimType::kFloat32;
    size_t count = 0;
    const void* send = nullptr;
    void* recv = nullptr;
    int root = 0;
    RedOpArg redop{RedOpKind::kSum, 0, 1};
    uint64_t op_count = 0;
    int space = 0;  // the communicator's own connections (one namespace per communicator of this world)
  };
  bool run_rank_op(int rank, const RankOp& op, std::string* error);
  // One rank's point-to-point operations of one group (kernels/p2p.h), NCCL's schedule: in round k the
  // rank sends to rank + k and receives from rank - k at once (two actors); round 0 is a local copy.
  // Every peer must run its matching part the same way.
  struct P2pOp {
    bool send = true;
    int peer = 0;
    void* buff = nullptr;  // source (send) or destination (recv)
    size_t bytes = 0;
  };
  bool run_rank_p2p(int rank, int space, uint64_t op_count, const std::vector<P2pOp>& ops, std::string* error);

  // ---- what SimExec uses ----
  bool payload() const { return cfg_.payload; }
  simgrid::s4u::Host* rank_host(int rank) const { return rank_host_[rank]; }
  Platform& platform() { return *platform_; }
  const Calibration& calibration() const { return cfg_.calibration; }
  double sm_rate(int rank) const { return sm_rate_[rank]; }  // bytes/s of one SM of the rank's GPU
  int rank_gpu(int rank) const { return rank_gpu_[rank]; }
  CounterWait& wait_slot(const ConnCounter* c) { return waits_[c->waiters]; }
  // NVLS: the switch host of the rank's machine (nullptr without NVLS), and the link accounting of a
  // rank's traffic to (up) or from it.
  simgrid::s4u::Host* nvswitch_host(int rank) const;
  void add_nvswitch_bytes(int rank, bool up, double bytes);
  // NVLS: `bytes` on the switch link (up or down) of every rank of the head's group that is no head.
  void add_nvls_others_bytes(int head, bool up, double bytes);
  // A connection's route: the SimGrid hosts its communications run between (Platform::route_hosts) and
  // the TopoLinks they cross. A connection between machines takes the NICs its channel's graph chose
  // (ChannelPlan::net); point-to-point connections and ranks on one machine take the model's path.
  struct ConnRoute {
    simgrid::s4u::Host* src = nullptr;
    simgrid::s4u::Host* dst = nullptr;
    const std::vector<int>* links = nullptr;
  };
  // The route of channel `channel`'s connection from rank `from` to rank `to` (channel kP2pChannel:
  // point-to-point). Routes are declared in setup(); a pair it did not declare gets the model's path
  // when the platform has it, else a route with no hosts.
  const ConnRoute& conn_route(int channel, int from, int to);
  // The route of the connection whose sending end is `send` (a ConnInfo of conn()).
  const ConnRoute& conn_route(const ConnInfo& send) const;
  void add_link_bytes(const ConnRoute& route, double bytes);
  bool recording() const { return record_steps_ || live_ != nullptr; }
  void record(const StepRecord& r) {
    if (record_steps_) events_.push_back(r);
    if (live_) live_event(r);
  }
  std::vector<StepRecord>& events() { return events_; }

  const Topology& topo() const { return topo_; }
  int nranks() const { return nranks_; }
  // The point-to-point channels (graph/p2p_channels.h) every send and receive is split over.
  const P2pChannels& p2p_channels() const { return p2p_; }
  // The custom algorithm cfg.algo (or the runtime's NCCL_ALGO) named, or nullptr.
  const CustomAlgo* custom_algo() const { return custom_; }
  int nchannels() const { return nch_; }
  // The waits actors are suspended on (for a deadlock report).
  std::string describe_stuck() const;

  // ---- degradation (sim/degrade.h) ----
  // The degraded elements and the channels crossing them (setup resolves cfg.degrade).
  const std::vector<SimDegraded>& degraded() const { return degraded_; }
  // Applies the changes at time 0 now and starts a daemon actor that applies the later ones at their
  // simulated times. After setup, before the engine runs.
  void start_degradation();
  // A straggler's factor on its data loops (1: healthy).
  // From its time on (--straggler RANK=F@TIME; the flow level records at time 0: its stragglers start there).
  double straggle(int rank) const;
  // A transfer of `exec`'s failed (a link on its route is down): the collective is aborted; every
  // suspended wait is resumed to fail, and is named in the error.
  void abort_run(const std::string& why);
  bool aborted() const { return aborted_; }
  // A wait entered after the abort that would never be satisfied: named in the error too.
  void note_stuck(const WaitSite& site) { aborted_waits_.push_back(site); }
  // The abort's reason and every stuck wait, one per line.
  std::string abort_error() const;
  // "link m0.nic3->fabric.leaf.r3.0 (failed at 100 us)": the failed links of a route.
  std::string failed_links_on(const ConnRoute& route) const;
  // The same for SimGrid's route from host `a` to host `b` (NVLS: a GPU and its NVSwitch).
  std::string failed_links_between(simgrid::s4u::Host* a, simgrid::s4u::Host* b) const;

  // Traces (sim/trace_out.cc): the trace of what run_sizes ran, written to cfg.trace_path; the live
  // stream at cfg.live_path (every step as it is simulated, each collective as it ends).
  bool write_trace(std::string* error) const;
  bool tracing() const { return !cfg_.trace_path.empty(); }
  bool live_start(std::string* error);
  void live_finish();
  // The trace's header: model, channels and routes. Routes: every channel pair's model path (as
  // trace::set_topology makes them), then each connection route that differs from its pair's (a
  // connection between machines through its channel's NICs); *conn_routes (may be null) gets the route
  // index of every (channel, from, to) connection.
  void trace_header(trace::Trace* t, std::map<std::tuple<int, int, int>, int>* conn_routes = nullptr) const;
  // The route index of an event's send: its connection's, else its pair's; -1 when it sends nothing.
  static int event_route(const trace::Trace& t, const std::map<std::tuple<int, int, int>, int>& conn_routes,
                         int channel, int rank, int send_peer);

 private:
  struct Choice {
    AlgoKind algo;
    int proto;
    int nchannels;
    int nthreads;  // the tuner's threads per channel (reported; the data loop does not depend on them)
    double predicted_us;
  };
  // scaling: the reduction scales (ncclAvg, a pre-multiplied sum), which PAT ReduceScatter does not run.
  // type and op: the call's (NVLS runs only what has a multimem reduction, nvls_op_supported).
  bool choose(CollKind coll, size_t bytes, Choice* c, std::string* error, bool scaling, SimType type,
              RedOpKind op) const;
  // What one (rank, channel) actor runs.
  struct Task {
    CollWork w;
    int channel = 0;
    RingView ring{nullptr, 0};
    ConnInfo* recv = nullptr;
    ConnInfo* send = nullptr;
    TreeConns tconns{};
    const TreeLinks* tree = nullptr;  // tree all_reduce: this rank's links
    SimCollFn ring_fn = nullptr;
    SimTreeFn tree_fn = nullptr;
    SimPatFn pat_fn = nullptr;  // PAT all_gather / reduce_scatter: its connections
    PatConns pconns{};
    NvlsConn* nvls = nullptr;  // NVLS: this rank's view of the channel's NVLS memory
    int nvls_role = 0;         // NVLS: the role this actor plays (kNvlsScatter / kNvlsReduce / kNvlsGather)
    NvlsConn nvls_start;       // NVLS: the view (its running steps) when the task was made
    SimNvlsFn nvls_fn = nullptr;
    bool nvls_tree = false;    // NVLS-Tree: ntree holds the head's tree connections
    NvlsTreeConns ntree;
    std::vector<P2pWork> p2p;  // run_rank_p2p: sends on `send` (p2p_send) or receives on `recv`, in order
    bool p2p_send = false;
    struct LocalCopy {
      void* dst = nullptr;
      const void* src = nullptr;
      size_t bytes = 0;
    };
    LocalCopy local;  // run_rank_p2p: a part of a send to itself (a data loop, no connection)
    // A custom algorithm (graph/custom_algo.h): its connections by peer rank, the datatype, and what
    // stopped its schedule if it made a call the simulator cannot run.
    const CustomAlgo* custom = nullptr;
    std::vector<ConnInfo*> custom_send, custom_recv;
    int type = 0;
    mutable std::string custom_failure;
  };
  CollWork work_for(CollKind coll, size_t count, size_t esize, int root, RedOpArg redop, const Choice& ch) const;
  bool append_rank_tasks(const CollWork& w, SimType type, const Choice& ch, std::vector<Task>* tasks,
                         std::string* error, int space = 0);
  bool make_tasks(size_t count, const Choice& ch, std::vector<Task>* tasks, std::string* error);
  bool run_task(SimExec& ex, const Task& t);
  // One actor per task (after the launch latency unless `launched`); returns once every one has finished.
  bool run_tasks(std::vector<Task>& tasks, std::string* error, bool launched = false);
  // The flow level (flow.cc): counting pass, one SimGrid flow per connection for its share, the
  // channels' steps replayed at those shares (replay.h).
  bool run_flow(size_t count, const Choice& ch, double* time_us, uint64_t* flows, std::string* error,
                bool* static_shares = nullptr);
  SimConn& conn(int channel, int from, int to, int proto, int space = 0);
  // Runs one collective of `count` elements with `choice` on every rank; returns its simulated time.
  bool run_once(size_t count, const Choice& choice, double* time_us, std::string* error);
  void fill_inputs(size_t count);
  int64_t check_outputs(size_t count) const;
  std::string describe_failure(const SimExec& ex) const;

  SimConfig cfg_;
  Topology topo_;
  RankPlacement place_;
  TopoGraph ring_graph_, tree_graph_, nvls_graph_;
  // NVLS (kernels/nvls.h): offered to the tuner (one NVSwitch machine of sm90+, simulate()'s own world),
  // its FIFO slot bytes, and per (space, channel) every rank's region and view.
  bool nvls_ = false;
  // NVLS-Tree (several machines) runs; each machine's ranks (a multicast group each), its heads first in
  // head order, and every rank's group and index in it (graph/search.h nvls_groups).
  bool nvls_tree_ = false;
  NvlsGroups nvls_g_;
  int nvls_tree_max_chunk_ = 0;
  int nvls_step_bytes_ = 128 * 1024;
  struct NvlsChannel {
    std::vector<std::unique_ptr<char, SimConn::Free>> region;
    std::vector<NvlsConn> view;
  };
  std::map<std::pair<int, int>, NvlsChannel> nvls_mem_;
  NvlsConn& nvls_conn(int channel, int rank, int space);
  bool nvls_setup(std::string* why);
  // PXN (NCCL_PXN_DISABLE, NCCL_P2P_PXN_LEVEL): the level (0 off; Topology::pxn_via) at which
  // point-to-point sends between machines take the peer's rail NIC; the sending end of rank from's
  // point-to-point route to rank to.
  int pxn_level_ = 2;
  bool p2p_rail_nic_ = false;  // NCCL_CROSS_NIC=0: sends without a relay leave by the peer's rail NIC
  // That rail NIC for a send from GPU a to GPU b, where NCCL_CROSS_NIC=0 makes it another than a's own; else -1.
  int cross_nic_rail(int a, int b) const;
  Platform::End p2p_end(int from, int to) const;
  int head_nic(int rank) const;
  std::vector<std::pair<int, int>> nvls_head_nets_;  // NVLS-Tree: (GPU dev, NET dev) of each head
  // cfg.algo named a custom algorithm: it, the machine it sees and every rank's peers.
  const CustomAlgo* custom_ = nullptr;
  CustomTopo custom_topo_{0, 0, 0};
  std::vector<std::vector<int>> custom_peers_;
  std::vector<ChannelPlan> plan_;
  CostModel tuner_;
  std::shared_ptr<Platform> platform_;
  std::shared_ptr<Platform> shared_platform_;  // share_platform()
  std::vector<int> devs_;                      // set_devices()
  bool all_routes_ = false;
  BlockHooks* hooks_ = nullptr;
  int nranks_ = 0, nch_ = 0, nmachines_ = 0;
  P2pChannels p2p_;
  std::vector<P2pSchedule> p2p_sched_;  // by rank, made on its first point-to-point operation
  // A point-to-point collective of run_sizes (cfg.p2p): one size on every rank (an actor each).
  bool run_p2p_once(size_t bytes, double* time_us, std::string* error);
  // run_sizes' step for one size of a point-to-point collective: nccl-tests' counts, iterations, check.
  bool run_p2p_size(size_t bytes, SimResult* out, std::string* error);
  std::vector<simgrid::s4u::Host*> rank_host_;
  std::vector<int> rank_gpu_;
  std::vector<double> sm_rate_;
  // connections: key (space, channel, from, to, proto); channel kP2pChannel - c: point-to-point channel c
  static constexpr int kP2pChannel = -1;
  std::map<std::tuple<int, int, int, int, int>, std::unique_ptr<SimConn>> conns_;
  std::map<std::tuple<int, int, int>, ConnRoute> routes_;                // (channel, from, to)
  std::unordered_map<const ConnFifoHeader*, const ConnRoute*> hdr_route_;  // a connection's header -> its route
  ConnRoute no_route_;
  // The ends of channel c's connection from rank a to rank b (the NETs of ChannelPlan::net).
  std::pair<Platform::End, Platform::End> conn_ends(int c, int a, int b) const;
  // Declares (or, on a shared platform, finds) the route of channel c's connection a -> b.
  bool declare_conn_route(int c, int a, int b, std::string* error);
  std::vector<CounterWait> waits_;
  std::vector<SimDegraded> degraded_;
  std::vector<std::vector<int>> degrade_links_;  // per cfg.degrade.links: its TopoLinks
  std::vector<double> fail_at_us_;               // by TopoLink: when it failed (-1: up)
  std::vector<double> straggle_;                 // by rank (empty: no straggler)
  bool aborted_ = false;
  double abort_us_ = 0;  // when (simulated)
  std::string abort_reason_;
  std::vector<WaitSite> aborted_waits_;
  bool link_down(int topo_link) const;
  bool setup_degradation(std::string* error);
  std::vector<double> link_bytes_;  // by TopoLink
  std::vector<StepRecord> events_;
  // payload buffers per rank
  std::vector<std::vector<unsigned char>> send_, recv_;
  uint64_t op_count_ = 0;
  std::vector<std::vector<int>> ring2_;     // per channel: the ring twice over (RingView storage)
  std::vector<std::vector<int>> ring_pos_;  // per channel: each rank's position on the ring
  uint64_t transfers_ = 0;
  // Every collective run_sizes ran, for the trace.
  struct OpRecord {
    uint64_t op_count = 0;
    AlgoKind algo = AlgoKind::kRing;
    int proto = 0;
    int nchannels = 0;
    size_t count = 0, bytes = 0;
    double begin_us = 0, end_us = 0;
    CollKind coll = CollKind::kAllReduce;
    SimType type = SimType::kFloat32;
    RedOpKind redop = RedOpKind::kSum;
    int root = -1;
    int reports = 0;  // run_rank_op: ranks that finished it
    int space = 0;    // run_rank_op: the communicator
    bool failed = false;  // a failed link aborted it (--fail): no bandwidth
  };
  std::vector<OpRecord> op_records_;
  trace::Op trace_op(const OpRecord& o) const;
  void live_event(const StepRecord& r);
  void live_op(const OpRecord& o);
  bool record_steps_ = false;                       // record_events or trace_path
  std::unique_ptr<trace::LiveServer> live_;
  trace::Trace live_header_;                              // what the live stream's header says
  std::map<std::tuple<int, int, int>, int> live_routes_;  // (channel, src, dst) -> route index in it
  int live_proto_ = 0;                              // protocol of the collective being simulated
  int proto_buff_[kNumProtocols] = {524288, 4915200, 4 << 20};
  friend class SimExec;
};

}  // namespace sim
}  // namespace cclab
