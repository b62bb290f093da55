// sim/replay.h - the flow level's step replay: what a channel's actors would do at step level, evaluated
// without SimGrid, given each connection's bandwidth share.
//
// The flow level (docs/simulator.md, "Levels") runs every (rank, channel) schedule once with a recording
// SimExec. The recording is the executor's own sequence of SimGrid-facing actions - start a data loop,
// start a transfer, complete the step (wait for both, pay the step overhead), set a counter, wait for a
// counter - exactly the calls a step-level SimExec would make (sim_exec.h). Replaying them with fixed
// durations is then a max-plus evaluation:
//
//   kExec  n bytes      the step's data loop:   done = max(done, t + n / sm_rate)
//   kXfer  n bytes      a transfer to a peer:   done = max(done, t + latency + n / rate)
//   kFlush / kFlushOv   the step completes:     t = max(t, done) (+ the protocol's step overhead, and
//                                               NVLS's per switch step when val is 1)
//   kPost  counter v    the counter holds v from time t (credits and doorbells)
//   kWait  counter v    t = max(t, when the counter first held >= v)
//
// A task that waits on a counter nobody has posted far enough yet is parked until a post wakes it; the
// evaluation is a dependency walk, not an event queue, so it costs O(recorded actions). Every latency,
// data dependency and credit of the step level is kept; what is fixed is each transfer's rate (the
// connection's max-min share with every connection of its phase active, which SimGrid computes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cclab {
namespace sim {

enum class ReplayKind : uint8_t { kExec, kXfer, kFlush, kFlushOv, kPost, kWait };

struct ReplayOp {
  ReplayKind kind;
  uint32_t idx;  // kXfer: peer rank; kPost/kWait: counter id
  uint64_t val;  // kExec/kXfer: bytes; kPost: value; kWait: target; kFlushOv: 1 for a switch step
};

// Where one task's transfers go: a peer, its bytes per second and the route's latency in seconds.
struct ReplayPeer {
  int peer = -1;
  double rate = 0;     // bytes per second (used when no ReplayRates is given)
  double latency = 0;  // seconds
  int conn = -1;       // the connection's id for a ReplayRates
};

// Rates that change from transfer to transfer (the flow level's refinement, flow.cc). A transfer is named
// by its task (index in the replayed vector) and its number among that task's kXfer actions.
class ReplayRates {
 public:
  virtual ~ReplayRates() = default;
  // Bytes per second of the transfer whose bytes start to flow at `t` (seconds, after the latency).
  virtual double rate(size_t task, size_t xfer, int conn, double t, double bytes) = 0;
  // Where it went: its bytes flowed from t0 to t1 at `rate`.
  virtual void flowed(size_t task, size_t xfer, int conn, double t0, double t1, double rate) = 0;
};

struct ReplayTask {
  std::vector<ReplayOp> ops;
  std::vector<ReplayPeer> peers;  // every peer its kXfer ops name
  double start = 0;               // seconds (the kernel launch)
  double sm_rate = 0;             // bytes per second of its data loops
  double overhead = 0;            // seconds per step that sent data (kFlushOv)
  double switch_overhead = 0;     // seconds more per step through the NVSwitch (kFlushOv with val 1)
  double end = 0;                 // out: when its last action completed, seconds
};

// The network a fluid replay shares: every link's capacity and, per connection id (ReplayPeer::conn), the
// links of its route and its weight (1 / route latency: SimGrid CM02's sharing penalty).
struct FluidNet {
  std::vector<double> capacity;              // bytes per second, per link
  std::vector<std::vector<int>> conn_links;  // per connection: indices into capacity
  std::vector<double> conn_weight;           // per connection
};

// Weighted max-min rates of `n` flows sharing `net` at once, by progressive filling: every flow's rate grows
// as its weight until a link of its route saturates, which fixes the rates of the flows crossing it. conns[k]
// is flow k's connection (several flows may share one); rates[k] receives its bytes per second. What
// SimGrid's LMM solver gives such flows under CM02 (sim_test FlowSharesAreSimGrids).
void maxmin_rates(const FluidNet& net, const int* conns, size_t n, double* rates);

// Replays `tasks` (one channel, or any set of tasks whose counters are private to it). Counter ids index
// `initial` (the counters' values before the tasks ran). Returns false with *error when a task is left
// waiting (a recording that cannot complete) or a transfer names a peer the task does not list.
bool replay_steps(std::vector<ReplayTask>& tasks, const std::vector<uint64_t>& initial, std::string* error,
                  ReplayRates* rates = nullptr);

// The same actions evaluated as a fluid simulation on one clock: an event queue in time order, every
// transfer a flow on `net` from its start (after its route's latency) until its bytes are through, and
// the rates of all flows in flight solved again (weighted max-min, progressive filling, as SimGrid's LMM
// with CM02 weights) whenever a flow starts or ends. So a transfer speeds up as the competitors it
// started beside finish, as at step level, where replay_steps gives each transfer one rate for its whole
// interval. Cost: O(events x flows in flight x route length).
bool replay_fluid(std::vector<ReplayTask>& tasks, const std::vector<uint64_t>& initial, const FluidNet& net,
                  std::string* error);

}  // namespace sim
}  // namespace cclab
