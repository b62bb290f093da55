// sim/replay.cc - the flow level's step replay (replay.h).
#include "sim/replay.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>
#include <tuple>

namespace cclab {
namespace sim {

namespace {

struct Counter {
  std::vector<std::pair<uint64_t, double>> posts;  // (value, time), in the posting task's order
  size_t cursor = 0;                               // first post a wait may still need
  int waiter = -1;                                 // the task parked on it
  uint64_t target = 0;
  uint64_t initial = 0;

  // Whether the counter has reached v, and from when (-inf: it held v before the tasks started).
  bool reached(uint64_t v, double* when) {
    if (v <= initial) {
      *when = -std::numeric_limits<double>::infinity();
      return true;
    }
    while (cursor < posts.size() && posts[cursor].first < v) ++cursor;
    if (cursor == posts.size()) return false;
    *when = posts[cursor].second;
    return true;
  }
  // Task `task` waits until the counter reaches v; false with *error when another task already does.
  bool park(int task, uint64_t v, uint32_t id, std::string* error) {
    if (waiter >= 0 && waiter != task) {
      *error = "flow level: two tasks wait on one counter (" + std::to_string(id) + ")";
      return false;
    }
    waiter = task;
    target = v;
    return true;
  }
  // Posts v at time t; returns the parked task that v wakes (-1: none).
  int post(uint64_t v, double t) {
    posts.emplace_back(v, t);
    if (waiter < 0 || v < target) return -1;
    const int w = waiter;
    waiter = -1;
    return w;
  }
};

// A wait for counter k to reach v that is already satisfied moves the task's clock to when it was
// (both replays' cursors have t and done); false when no post has reached v yet.
template <typename Cur>
bool passed(Counter& k, uint64_t v, Cur& c) {
  double when = 0;
  if (!k.reached(v, &when)) return false;
  c.t = std::max(c.t, when);
  c.done = std::max(c.done, c.t);
  return true;
}

const ReplayPeer* find_peer(const ReplayTask& task, uint32_t rank) {
  for (const ReplayPeer& q : task.peers)
    if (q.peer == static_cast<int>(rank)) return &q;
  return nullptr;
}

struct Cursor {
  size_t pc = 0;
  size_t xfer = 0;  // kXfer actions done
  double t = 0, done = 0;
};

// Kept from call to call (a flow-level run replays channel after channel, each with its own counters):
// counter ids are global, the tasks of one call use a few of them, numbered densely here so that the
// same slots and their capacity serve every call.
struct Workspace {
  std::vector<Counter> counters;
  std::vector<uint32_t> dense;  // global id -> dense id + 1 (0: unused); reset after each call
  std::vector<uint32_t> used;   // global ids in dense order
  std::vector<Cursor> cur;
  std::vector<int> ready;
};

bool number_counters(Workspace& ws, std::vector<ReplayTask>& tasks, const std::vector<uint64_t>& initial,
                     std::string* error) {
  if (ws.dense.size() < initial.size()) ws.dense.resize(initial.size(), 0);
  for (ReplayTask& task : tasks)
    for (ReplayOp& op : task.ops) {
      if (op.kind != ReplayKind::kPost && op.kind != ReplayKind::kWait) continue;
      if (op.idx >= initial.size()) {
        *error = "flow level: counter " + std::to_string(op.idx) + " is not one of the run's " +
                 std::to_string(initial.size());
        return false;
      }
      uint32_t& d = ws.dense[op.idx];
      if (d == 0) {
        ws.used.push_back(op.idx);
        d = static_cast<uint32_t>(ws.used.size());
      }
    }
  if (ws.counters.size() < ws.used.size()) ws.counters.resize(ws.used.size());
  for (size_t i = 0; i < ws.used.size(); ++i) {
    Counter& k = ws.counters[i];
    k.posts.clear();
    k.cursor = 0;
    k.waiter = -1;
    k.initial = initial[ws.used[i]];
  }
  return true;
}

bool run(Workspace& ws, std::vector<ReplayTask>& tasks, std::string* error, ReplayRates* rates) {
  std::vector<Counter>& counters = ws.counters;
  std::vector<Cursor>& cur = ws.cur;
  std::vector<int>& ready = ws.ready;
  cur.assign(tasks.size(), Cursor{});
  ready.clear();
  for (size_t i = tasks.size(); i-- > 0;) {
    cur[i].t = cur[i].done = tasks[i].start;
    ready.push_back(static_cast<int>(i));
  }
  size_t finished = 0;
  while (!ready.empty()) {
    const int ti = ready.back();
    ready.pop_back();
    ReplayTask& task = tasks[ti];
    Cursor& c = cur[ti];
    const ReplayOp* ops = task.ops.data();
    const size_t n = task.ops.size();
    bool parked = false;
    for (; c.pc < n && !parked; ++c.pc) {
      const ReplayOp& op = ops[c.pc];
      switch (op.kind) {
        case ReplayKind::kExec:
          c.done = std::max(c.done, c.t + static_cast<double>(op.val) / task.sm_rate);
          break;
        case ReplayKind::kXfer: {
          const ReplayPeer* p = find_peer(task, op.idx);
          const double bytes = static_cast<double>(op.val);
          const double t0 = p != nullptr ? c.t + p->latency : 0;
          const double r = p == nullptr ? 0 : rates != nullptr ? rates->rate(ti, c.xfer, p->conn, t0, bytes) : p->rate;
          if (p == nullptr || !(r > 0)) {
            *error = "flow level: a transfer to rank " + std::to_string(op.idx) + " has no bandwidth share";
            return false;
          }
          const double t1 = t0 + bytes / r;
          if (rates != nullptr) rates->flowed(ti, c.xfer, p->conn, t0, t1, r);
          ++c.xfer;
          c.done = std::max(c.done, t1);
          break;
        }
        case ReplayKind::kFlush:
        case ReplayKind::kFlushOv:
          c.t = std::max(c.t, c.done);
          if (op.kind == ReplayKind::kFlushOv) c.t += task.overhead + (op.val != 0 ? task.switch_overhead : 0.0);
          c.done = c.t;
          break;
        case ReplayKind::kPost: {
          const int woken = counters[ws.dense[op.idx] - 1].post(op.val, c.t);
          if (woken >= 0) ready.push_back(woken);
          break;
        }
        case ReplayKind::kWait: {
          Counter& k = counters[ws.dense[op.idx] - 1];
          if (passed(k, op.val, c)) break;
          if (!k.park(ti, op.val, op.idx, error)) return false;
          parked = true;
          --c.pc;  // the wait is evaluated again when a post wakes the task
          break;
        }
      }
    }
    if (!parked) {
      task.end = c.t;
      ++finished;
    }
  }
  if (finished != tasks.size()) {
    for (size_t i = 0; i < tasks.size(); ++i)
      if (cur[i].pc < tasks[i].ops.size()) {
        const ReplayOp& op = tasks[i].ops[cur[i].pc];
        *error = "flow level: the replay is stuck: task " + std::to_string(i) + " waits for counter " +
                 std::to_string(op.idx) + " to reach " + std::to_string(op.val) + " (" +
                 std::to_string(tasks.size() - finished) + " tasks unfinished)";
        return false;
      }
  }
  return true;
}

}  // namespace

bool replay_steps(std::vector<ReplayTask>& tasks, const std::vector<uint64_t>& initial, std::string* error,
                  ReplayRates* rates) {
  static thread_local Workspace ws;
  const bool ok = number_counters(ws, tasks, initial, error) && run(ws, tasks, error, rates);
  for (uint32_t g : ws.used) ws.dense[g] = 0;
  ws.used.clear();
  return ok;
}


// ---- the fluid replay ---------------------------------------------------------------------------------

namespace {

struct MaxMinWork {
  std::vector<double> remaining, weight_sum;  // per link (touched ones only are valid)
  std::vector<std::vector<size_t>> on_link;   // flows (positions) crossing each link
  std::vector<int> touched;
  std::vector<char> seen, fixed;
};

struct Flow {
  int conn;
  int task;
  double bytes, remaining, rate = 0;
};

enum class FState : uint8_t { kReady, kFlush, kWait, kDone };

struct FTask {
  size_t pc = 0;
  double t = 0, done = 0;
  int pending = 0;     // transfers in flight of the current step
  double flush_ov = 0;  // the overhead the step pays when it completes (kFlushOv), seconds
  FState state = FState::kReady;
};

// (time, order, kind, id): kind 0 a flow starts (id: flow), 1 a task resumes (id: task).
using Event = std::tuple<double, uint64_t, int, int>;

}  // namespace

void maxmin_rates(const FluidNet& net, const int* conns, size_t n, double* rates) {
  static thread_local MaxMinWork w;
  const size_t nl = net.capacity.size();
  if (w.seen.size() < nl) {
    w.remaining.resize(nl);
    w.weight_sum.resize(nl);
    w.on_link.resize(nl);
    w.seen.resize(nl, 0);
  }
  w.touched.clear();
  for (size_t k = 0; k < n; ++k) {
    rates[k] = 0;
    const double wt = net.conn_weight[conns[k]];
    for (int l : net.conn_links[conns[k]]) {
      if (!w.seen[l]) {
        w.seen[l] = 1;
        w.touched.push_back(l);
        w.remaining[l] = net.capacity[l];
        w.weight_sum[l] = 0;
        w.on_link[l].clear();
      }
      w.weight_sum[l] += wt;
      w.on_link[l].push_back(k);
    }
  }
  using Entry = std::pair<double, int>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<Entry>> heap;
  for (int l : w.touched)
    if (w.weight_sum[l] > 0) heap.emplace(w.remaining[l] / w.weight_sum[l], l);
  w.fixed.assign(n, 0);
  while (!heap.empty()) {
    const auto [level, l] = heap.top();
    heap.pop();
    if (w.weight_sum[l] <= 0 || level != w.remaining[l] / w.weight_sum[l]) continue;  // stale
    for (size_t k : w.on_link[l]) {
      if (w.fixed[k]) continue;
      w.fixed[k] = 1;
      const double wt = net.conn_weight[conns[k]];
      rates[k] = level * wt;
      for (int j : net.conn_links[conns[k]]) {
        w.remaining[j] = std::max(0.0, w.remaining[j] - rates[k]);
        w.weight_sum[j] -= wt;
        if (j != l && w.weight_sum[j] > 1e-300) heap.emplace(w.remaining[j] / w.weight_sum[j], j);
      }
    }
    w.weight_sum[l] = 0;
  }
  for (int l : w.touched) w.seen[l] = 0;
}

namespace {

class Fluid {
 public:
  Fluid(Workspace& ws, std::vector<ReplayTask>& tasks, const FluidNet& net, std::string* error)
      : ws_(ws), tasks_(tasks), net_(net), error_(error), cur_(tasks.size()) {}

  bool run() {
    for (size_t i = 0; i < tasks_.size(); ++i) {
      cur_[i].t = cur_[i].done = tasks_[i].start;
      push(tasks_[i].start, 1, static_cast<int>(i));
    }
    double now = 0;
    for (;;) {
      double next_end = kInf;
      for (int f : active_) {
        const Flow& x = flows_[f];
        if (x.rate > 0) next_end = std::min(next_end, now + x.remaining / x.rate);
      }
      const double next_event = events_.empty() ? kInf : std::get<0>(events_.top());
      if (next_end == kInf && next_event == kInf) break;  // done, or flows without bandwidth (below)
      const double next = std::min(next_end, next_event);
      const double horizon = next + kBatch;  // events this close are one instant (one solve)
      for (int f : active_) flows_[f].remaining -= flows_[f].rate * (next - now);
      now = next;
      bool changed = false;
      if (next_end <= horizon) {  // every flow whose bytes are through by the horizon
        size_t keep = 0;
        for (int f : active_) {
          Flow& x = flows_[f];
          if (x.remaining <= x.rate * kBatch + 1e-9 * x.bytes + 1e-6) {
            finished(x, now);
            changed = true;
          } else {
            active_[keep++] = f;
          }
        }
        active_.resize(keep);
      }
      while (!events_.empty() && std::get<0>(events_.top()) <= horizon) {
        const auto [t, order, kind, id] = events_.top();
        events_.pop();
        if (kind == 0) {
          active_.push_back(id);
          changed = true;
        } else if (!step(id, std::max(now, t))) {
          return false;
        }
      }
      if (changed) solve();
    }
    for (size_t i = 0; i < tasks_.size(); ++i) {
      if (cur_[i].state == FState::kDone) continue;
      const FTask& c = cur_[i];
      if (c.state == FState::kFlush) {
        *error_ = "flow level: the fluid replay is stuck: task " + std::to_string(i) + " has " +
                  std::to_string(c.pending) + " transfers without bandwidth";
      } else {
        const ReplayOp& op = tasks_[i].ops[c.pc];
        *error_ = "flow level: the replay is stuck: task " + std::to_string(i) + " waits for counter " +
                  std::to_string(op.idx) + " to reach " + std::to_string(op.val);
      }
      return false;
    }
    return true;
  }

 private:
  static constexpr double kInf = std::numeric_limits<double>::infinity();
  // Events within kBatch seconds of the next one are taken together, with one solve: channels that move in
  // lockstep start and end their transfers at times that differ only by rounding.
  static constexpr double kBatch = 1e-10;

  void push(double t, int kind, int id) { events_.emplace(t, order_++, kind, id); }

  void solve() {
    conns_.resize(active_.size());
    rates_.resize(active_.size());
    for (size_t k = 0; k < active_.size(); ++k) conns_[k] = flows_[active_[k]].conn;
    maxmin_rates(net_, conns_.data(), conns_.size(), rates_.data());
    for (size_t k = 0; k < active_.size(); ++k) flows_[active_[k]].rate = rates_[k];
  }

  // A transfer's bytes are through at `now`: its step completes when its last one is.
  void finished(const Flow& x, double now) {
    FTask& c = cur_[x.task];
    c.done = std::max(c.done, now);
    if (--c.pending == 0 && c.state == FState::kFlush) complete_step(x.task, now);
  }

  void complete_step(int ti, double now) {
    FTask& c = cur_[ti];
    const double t = std::max(c.t, c.done) + c.flush_ov;
    c.t = c.done = t;
    c.state = FState::kReady;
    push(std::max(t, now), 1, ti);
  }

  // Runs task `ti` from its current action at time `now` until it must wait for time, bytes or a counter.
  bool step(int ti, double now) {
    ReplayTask& task = tasks_[ti];
    FTask& c = cur_[ti];
    if (c.state == FState::kDone || c.state == FState::kFlush) return true;
    c.state = FState::kReady;
    c.t = std::max(c.t, now);
    const size_t n = task.ops.size();
    while (c.pc < n) {
      const ReplayOp& op = task.ops[c.pc];
      switch (op.kind) {
        case ReplayKind::kExec:
          c.done = std::max(c.done, c.t + static_cast<double>(op.val) / task.sm_rate);
          break;
        case ReplayKind::kXfer: {
          const ReplayPeer* p = find_peer(task, op.idx);
          if (p == nullptr || p->conn < 0 || p->conn >= static_cast<int>(net_.conn_links.size())) {
            *error_ = "flow level: a transfer to rank " + std::to_string(op.idx) + " has no route";
            return false;
          }
          const double bytes = static_cast<double>(op.val);
          flows_.push_back(Flow{p->conn, ti, bytes, bytes});
          ++c.pending;
          push(c.t + p->latency, 0, static_cast<int>(flows_.size() - 1));
          break;
        }
        case ReplayKind::kFlush:
        case ReplayKind::kFlushOv:
          c.flush_ov = op.kind != ReplayKind::kFlushOv ? 0.0 : task.overhead + (op.val != 0 ? task.switch_overhead : 0.0);
          ++c.pc;
          if (c.pending > 0) {
            c.state = FState::kFlush;
            return true;
          }
          {
            const double t = std::max(c.t, c.done) + c.flush_ov;
            c.t = c.done = t;
            if (t > now) {
              push(t, 1, ti);
              return true;
            }
          }
          continue;
        case ReplayKind::kPost: {
          const int woken = ws_.counters[ws_.dense[op.idx] - 1].post(op.val, c.t);
          if (woken >= 0) push(c.t, 1, woken);
          break;
        }
        case ReplayKind::kWait: {
          Counter& k = ws_.counters[ws_.dense[op.idx] - 1];
          if (passed(k, op.val, c)) break;
          if (!k.park(ti, op.val, op.idx, error_)) return false;
          c.state = FState::kWait;
          return true;
        }
      }
      ++c.pc;
    }
    c.state = FState::kDone;
    task.end = c.t;
    return true;
  }

  Workspace& ws_;
  std::vector<ReplayTask>& tasks_;
  const FluidNet& net_;
  std::string* error_;
  std::vector<FTask> cur_;
  std::vector<Flow> flows_;
  std::vector<int> active_;
  std::vector<int> conns_;
  std::vector<double> rates_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  uint64_t order_ = 0;
};

}  // namespace

bool replay_fluid(std::vector<ReplayTask>& tasks, const std::vector<uint64_t>& initial, const FluidNet& net,
                  std::string* error) {
  static thread_local Workspace ws;
  bool ok = number_counters(ws, tasks, initial, error);
  if (ok) {
    Fluid f(ws, tasks, net, error);
    ok = f.run();
  }
  for (uint32_t g : ws.used) ws.dense[g] = 0;
  ws.used.clear();
  return ok;
}

}  // namespace sim
}  // namespace cclab
