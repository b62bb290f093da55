// sim/replay.cc - the flow level's step replay (replay.h).
#include "sim/replay.h"

#include <algorithm>

namespace cclab {
namespace sim {

namespace {

struct Counter {
  std::vector<std::pair<uint64_t, double>> posts;  // (value, time), in the posting task's order
  size_t cursor = 0;                               // first post a wait may still need
  int waiter = -1;                                 // the task parked on it
  uint64_t target = 0;
  uint64_t initial = 0;
};

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
          const ReplayPeer* p = nullptr;
          for (const ReplayPeer& q : task.peers)
            if (q.peer == static_cast<int>(op.idx)) p = &q;
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
          if (op.kind == ReplayKind::kFlushOv) c.t += task.overhead;
          c.done = c.t;
          break;
        case ReplayKind::kPost: {
          Counter& k = counters[ws.dense[op.idx] - 1];
          k.posts.emplace_back(op.val, c.t);
          if (k.waiter >= 0 && op.val >= k.target) {
            ready.push_back(k.waiter);
            k.waiter = -1;
          }
          break;
        }
        case ReplayKind::kWait: {
          Counter& k = counters[ws.dense[op.idx] - 1];
          if (op.val <= k.initial) break;  // held before the tasks started
          while (k.cursor < k.posts.size() && k.posts[k.cursor].first < op.val) ++k.cursor;
          if (k.cursor < k.posts.size()) {
            c.t = std::max(c.t, k.posts[k.cursor].second);
            c.done = std::max(c.done, c.t);
            break;
          }
          if (k.waiter >= 0 && k.waiter != ti) {
            *error = "flow level: two tasks wait on one counter (" + std::to_string(op.idx) + ")";
            return false;
          }
          k.waiter = ti;
          k.target = op.val;
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

}  // namespace sim
}  // namespace cclab
