// sim/session.cc - the co-simulation behind CCLAB_BACKEND=sim (session.h): the engine thread, the
// queues' actors, and the rule that lets simulated time advance only while every program thread that
// holds a communicator is blocked.
#include "sim/session.h"

#include <simgrid/s4u.hpp>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <unistd.h>

namespace sg4 = simgrid::s4u;

namespace cclab {
namespace sim {

namespace {

// A program thread, as the engine sees it.
struct ThreadRec {
  enum State { kRunning, kSyncing, kIdle, kGone } state = kRunning;
  int owned = 0;       // live communicators it drives
  int idle_depth = 0;  // nested idle_begin
  int id = 0;          // for messages: threads in order of first contact
};

}  // namespace

struct Session::Impl : World::BlockHooks {
  struct Queue;
  struct Item {
    enum Kind { kColl, kP2p, kKernel, kWait } kind = kColl;
    World* world = nullptr;
    int rank = 0;
    World::RankOp op;
    std::vector<World::P2pOp> p2p;
    uint64_t op_count = 0;
    double seconds = 0;
    Queue* waitee = nullptr;
    uint64_t target = 0;
  };
  struct Queue {
    int gpu = 0;       // the GPU whose host runs the queue's actor (its first item's)
    uint64_t seq = 0;  // creation order among the GPU's queues (actors start in (gpu, seq) order)
    std::deque<Item> items;
    uint64_t enqueued = 0, done = 0;
    bool live = false;  // an actor runs the queue
    std::vector<std::pair<sg4::Actor*, uint64_t>> waiters;  // stream waits suspended on this queue
    std::string error;  // the first failure of its work, for the next synchronisation
  };
  struct Sync {
    std::vector<std::pair<Queue*, uint64_t>> targets;
    ThreadRec* thread = nullptr;
    bool released = false;
    std::string error;
    bool satisfied() const {
      for (const auto& t : targets)
        if (t.first->done < t.second) return false;
      return true;
    }
  };
  struct CommRec {
    World* world = nullptr;
    int space = 0;
    int rank = 0;
    std::vector<int> devs;
    ThreadRec* owner = nullptr;
  };

  // ---- state shared by program threads and the engine thread (under mu) ----
  mutable std::mutex mu;
  std::condition_variable cv_engine;  // the engine waits for the gate (and input)
  std::condition_variable cv_prog;    // program threads wait for their synchronisation
  std::deque<ThreadRec> threads;
  std::map<const void*, CommRec> comms;
  std::map<std::string, int> spaces;  // communicator id -> connection namespace
  std::map<std::pair<const void*, int>, Queue> queues;
  std::map<int, uint64_t> queue_seq;  // per GPU: queues created
  std::vector<Sync*> syncs;
  std::multiset<int> gpus;  // GPUs (device indices) of live communicators' ranks
  bool broken = false;
  std::string broken_msg;
  double clock_us = 0;
  bool exiting = false;         // the process is exiting: the engine stops at its next wait for good
  bool engine_waiting = false;  // the engine waits for the program (paused, stalled or idle)

  // ---- worlds: the first one built the platform; created under worlds_mu, read under mu ----
  std::mutex worlds_mu;
  SimConfig cfg;
  sg4::Engine* engine = nullptr;
  World* base = nullptr;
  std::map<std::vector<int>, std::unique_ptr<World>> worlds;

  // ---- engine thread only ----
  int active = 0, total = 0;  // our actors: not blocked on another actor / alive
  bool sg_deadlock = false;   // SimGrid found no progress possible
  double stall_timeout_s = 10;

  // Every participant (a live thread driving a communicator) is blocked: the engine may advance.
  bool gate_open() const {
    for (const ThreadRec& t : threads)
      if (t.owned > 0 && t.state == ThreadRec::kRunning) return false;
    return true;
  }
  bool all_participants_syncing() const {
    for (const ThreadRec& t : threads)
      if (t.owned > 0 && t.state == ThreadRec::kIdle) return false;
    return true;
  }
  bool has_input() const {
    for (const auto& kv : queues)
      if (!kv.second.live && !kv.second.items.empty()) return true;
    return false;
  }
  // Queues whose new items need an actor, marked live, in a deterministic order.
  std::vector<Queue*> take_input() {
    std::vector<Queue*> out;
    for (auto& kv : queues)
      if (!kv.second.live && !kv.second.items.empty()) out.push_back(&kv.second);
    std::sort(out.begin(), out.end(), [](const Queue* a, const Queue* b) {
      return a->gpu != b->gpu ? a->gpu < b->gpu : a->seq < b->seq;
    });
    for (Queue* q : out) q->live = true;
    return out;
  }

  ThreadRec* me() {  // under mu
    thread_local ThreadRec* rec = nullptr;
    struct Gone {
      Impl* im = nullptr;
      ThreadRec* rec = nullptr;
      ~Gone() {
        // The main thread ends with the process: the engine stops (at_exit) rather than run on.
        if (im == nullptr || gettid() == getpid()) return;
        std::lock_guard<std::mutex> lk(im->mu);
        rec->state = ThreadRec::kGone;
        im->cv_engine.notify_all();
      }
    };
    thread_local Gone gone;
    if (rec == nullptr) {
      threads.emplace_back();
      rec = &threads.back();
      rec->id = static_cast<int>(threads.size()) - 1;
      gone.im = this;
      gone.rec = rec;
    }
    return rec;
  }

  Queue& queue(const void* stream, int gpu) {  // under mu
    auto key = std::make_pair(stream, stream == nullptr ? gpu : -1);
    auto it = queues.find(key);
    if (it != queues.end()) return it->second;
    Queue& q = queues[key];
    q.gpu = gpu;
    q.seq = queue_seq[gpu]++;
    return q;
  }

  sg4::Host* gpu_host(int gpu) {
    const Topology& t = base->topo();
    const int gpm = std::max(1, t.gpus_per_machine());
    return base->platform().gpu_host(t.gpu_node(gpu / gpm, gpu % gpm));
  }

  // ---- engine side ----
  void start(const std::vector<Queue*>& qs) {  // engine thread, mu not held
    for (Queue* q : qs) {
      spawned();
      sg4::Actor::create("stream", gpu_host(q->gpu), [this, q] { run_queue(q); });
    }
  }

  void run_queue(Queue* q) {
    while (true) {
      Item it;
      {
        std::lock_guard<std::mutex> lk(mu);
        if (q->items.empty()) {
          q->live = false;
          break;
        }
        it = std::move(q->items.front());
        q->items.pop_front();
      }
      std::string err;
      bool ok = true;
      switch (it.kind) {
        case Item::kColl: ok = it.world->run_rank_op(it.rank, it.op, &err); break;
        case Item::kP2p: ok = it.world->run_rank_p2p(it.rank, it.op.space, it.op_count, it.p2p, &err); break;
        case Item::kKernel:
          if (it.seconds > 0) sg4::this_actor::sleep_for(it.seconds);
          break;
        case Item::kWait:
          while (true) {
            {
              std::lock_guard<std::mutex> lk(mu);
              if (it.waitee->done >= it.target) break;
              it.waitee->waiters.emplace_back(sg4::Actor::self(), it.target);
            }
            blocked();  // may start more actors (a simcall: others run meanwhile)
            {
              std::lock_guard<std::mutex> lk(mu);
              const auto& ws = it.waitee->waiters;
              if (std::find(ws.begin(), ws.end(), std::make_pair(sg4::Actor::self(), it.target)) == ws.end())
                continue;  // woken meanwhile (and counted)
            }
            sg4::this_actor::suspend();
          }
          break;
      }
      item_done(q, ok ? std::string() : err);
    }
    finished();
  }

  // An item of q completed: wake stream waits, release satisfied synchronisations; if any was
  // released, stop here (simulated time stands still) until its thread blocks again.
  void item_done(Queue* q, const std::string& err) {
    std::vector<sg4::Actor*> wake;
    bool released = false;
    {
      std::lock_guard<std::mutex> lk(mu);
      ++q->done;
      if (!err.empty() && q->error.empty()) q->error = err;
      for (size_t i = 0; i < q->waiters.size();) {
        if (q->waiters[i].second <= q->done) {
          wake.push_back(q->waiters[i].first);
          q->waiters.erase(q->waiters.begin() + static_cast<long>(i));
        } else {
          ++i;
        }
      }
      for (Sync* s : syncs)
        if (!s->released && s->satisfied()) {
          s->released = true;
          s->thread->state = ThreadRec::kRunning;
          released = true;
        }
    }
    for (sg4::Actor* a : wake) {
      woken();
      a->resume();
    }
    if (released) pause();
  }

  // The engine waits until pred() holds (never once the process exits: it stops before the static
  // objects SimGrid uses are destroyed), or until `deadline`; false on the deadline.
  template <typename Pred>
  bool engine_wait(std::unique_lock<std::mutex>& lk, Pred pred,
                   std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max()) {
    engine_waiting = true;
    cv_prog.notify_all();
    bool ok = true;
    const auto since = std::chrono::steady_clock::now();
    const auto stall = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
        std::chrono::duration<double>(stall_timeout_s));
    while (exiting || !pred()) {
      if (deadline == std::chrono::steady_clock::time_point::max()) {
        // Unbounded, except that a synchronisation never waits forever for a thread that stays outside
        // cclab (a host barrier or join between rank threads would otherwise hang the program).
        cv_engine.wait_for(lk, stall);
        if (!exiting && !broken && !pred() && !gate_open() && std::chrono::steady_clock::now() - since >= stall &&
            std::any_of(syncs.begin(), syncs.end(), [](const Sync* s) { return !s->released; }))
          fail_outside();
      } else if (cv_engine.wait_until(lk, deadline) == std::cv_status::timeout && !exiting) {
        ok = pred();
        break;
      }
    }
    engine_waiting = false;
    return ok;
  }

  void pause() {  // engine thread, inside an actor
    std::vector<Queue*> qs;
    {
      std::unique_lock<std::mutex> lk(mu);
      clock_us = sg4::Engine::get_clock() * 1e6;
      engine_wait(lk, [&] { return gate_open(); });
      if (broken) return;  // fail_outside() gave up on a thread while the engine waited
      qs = take_input();
    }
    start(qs);
  }

  // BlockHooks (engine thread).
  void spawned() override {
    ++active;
    ++total;
  }
  void woken() override { ++active; }
  void blocked() override {
    if (--active == 0) stall();
  }
  void finished() override {
    --total;
    if (--active == 0 && total > 0) stall();
  }

  // No actor can progress: wait for more work from the program; when every participant waits in a
  // synchronisation and none comes, the program has deadlocked.
  void stall() {
    std::vector<Queue*> qs;
    {
      std::unique_lock<std::mutex> lk(mu);
      clock_us = sg4::Engine::get_clock() * 1e6;
      auto deadline = std::chrono::steady_clock::now() +
                      std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                          std::chrono::duration<double>(stall_timeout_s));
      auto decided = [&] { return gate_open() && (has_input() || all_participants_syncing()); };
      while (true) {
        const bool timed_out = !engine_wait(lk, decided, deadline);
        if (broken) return;  // fail_outside() gave up on a thread while the engine waited
        if (gate_open() && has_input()) {
          qs = take_input();
          break;
        }
        if (gate_open()) {  // every driving thread waits in a synchronisation, or stays in an init call
          fail_deadlocked(timed_out);
          return;
        }
        deadline = std::chrono::steady_clock::time_point::max();  // a thread runs: it may queue the work
      }
    }
    start(qs);
  }

  // Threads wait in synchronisations while a thread that drives a communicator has stayed outside cclab
  // for the stall time: simulated time cannot advance (it would depend on the host's scheduling), so the
  // waiting synchronisations fail, naming the threads and ranks that did not come back.
  void fail_outside() {  // under mu
    std::string who;
    for (const ThreadRec& t : threads) {
      if (t.owned == 0 || t.state != ThreadRec::kRunning) continue;
      std::string ranks;
      for (const auto& kv : comms)
        if (kv.second.owner == &t) ranks += (ranks.empty() ? "" : ", ") + std::to_string(kv.second.rank);
      who += (who.empty() ? "" : "; ") + std::string("thread ") + std::to_string(t.id) + " (rank " + ranks + ")";
    }
    break_world("the simulated clock is stuck: " + who + " has not synchronised for " +
                std::to_string(static_cast<int>(stall_timeout_s)) +
                " s while other ranks wait in a synchronisation. Simulated time advances only while every "
                "thread that drives a communicator waits in cclab, so a host-side wait between rank threads "
                "(a barrier, a join, a condition variable) cannot be simulated; CCLAB_SIM_STALL_S sets the "
                "time allowed");
  }

  // The world is unusable from now on: every waiting synchronisation fails with `msg`, and so will later
  // ones.
  void break_world(const std::string& msg) {  // under mu
    broken = true;
    broken_msg = msg;
    for (Sync* s : syncs)
      if (!s->released) {
        s->released = true;
        s->error = broken_msg;
        s->thread->state = ThreadRec::kRunning;
      }
    cv_prog.notify_all();
  }

  void fail_deadlocked(bool timed_out) {  // under mu
    std::string stuck;
    for (const auto& kv : worlds) stuck += kv.second->describe_stuck();
    std::string msg = std::string(kDeadlockMessage) + ": every thread that drives a communicator waits";
    msg += timed_out ? " (or has been inside an init/split/destroy call for " +
                           std::to_string(static_cast<int>(stall_timeout_s)) + " s)"
                     : " in a synchronisation";
    msg += " and no simulated GPU can progress (did every rank of each collective and every send's matching "
           "receive get queued?). Stuck waits:" +
           (stuck.empty() ? std::string(" none recorded") : stuck);
    break_world(msg);
  }

  void engine_loop() {
    while (true) {
      std::vector<Queue*> qs;
      {
        std::unique_lock<std::mutex> lk(mu);
        engine_wait(lk, [&] { return !broken && gate_open() && has_input(); });
        qs = take_input();
      }
      start(qs);
      engine->run();
      std::lock_guard<std::mutex> lk(mu);
      clock_us = sg4::Engine::get_clock() * 1e6;
      if (sg_deadlock) {  // SimGrid killed every actor: nothing of the world is consistent any more
        sg_deadlock = false;
        if (!broken) {
          broken = true;
          broken_msg = "the simulated world stopped: SimGrid found a deadlock";
        }
        for (auto& kv : queues) {
          kv.second.items.clear();
          kv.second.waiters.clear();
          kv.second.live = false;
        }
        for (Sync* s : syncs)
          if (!s->released) {
            s->released = true;
            s->error = broken_msg;
            s->thread->state = ThreadRec::kRunning;
          }
        active = total = 0;
      }
      cv_prog.notify_all();
    }
  }

  // ---- program side ----
  // Queues a collective or point-to-point item of comm's rank on the stream (its GPU's default one for
  // nullptr).
  bool enqueue_rank_item(const void* comm, const void* stream, Item it, std::string* error) {
    std::lock_guard<std::mutex> lk(mu);
    auto c = comms.find(comm);
    if (c == comms.end()) {
      *error = "the communicator is not part of the simulated world";
      return false;
    }
    if (broken) {
      *error = broken_msg;
      return false;
    }
    Queue& q = queue(stream, c->second.devs[c->second.rank]);
    it.world = c->second.world;
    it.rank = c->second.rank;
    it.op.space = c->second.space;
    q.items.push_back(std::move(it));
    ++q.enqueued;
    return true;
  }

  bool wait_for(std::vector<std::pair<Queue*, uint64_t>> targets, std::string* error) {  // called with mu locked
    std::unique_lock<std::mutex> lk(mu, std::adopt_lock);  // unlocks on return
    std::string err;
    for (auto& t : targets)
      if (!t.first->error.empty()) {
        if (err.empty()) err = t.first->error;
        t.first->error.clear();
      }
    Sync s;
    s.targets = std::move(targets);
    if (broken && !s.satisfied()) {
      *error = broken_msg;
      return false;
    }
    if (!s.satisfied()) {
      s.thread = me();
      s.thread->state = ThreadRec::kSyncing;
      syncs.push_back(&s);
      cv_engine.notify_all();
      cv_prog.wait(lk, [&] { return s.released; });
      syncs.erase(std::find(syncs.begin(), syncs.end(), &s));
      if (!s.error.empty()) {
        *error = s.error;
        return false;
      }
      for (auto& t : s.targets)
        if (!t.first->error.empty()) {
          if (err.empty()) err = t.first->error;
          t.first->error.clear();
        }
    }
    if (!err.empty()) {
      *error = err;
      return false;
    }
    return true;
  }
};

namespace {
std::mutex g_mu;
Session* g_session = nullptr;
std::string g_failed;  // SimGrid allows one engine per process: a failed setup stays failed
}  // namespace

Session::~Session() = default;

namespace {
// What a new session models for `devs` (Session::model_config).
SimConfig new_model_config(const std::vector<int>& devs) {
  SimConfig cfg;
  const int need = devs.empty() ? 1 : *std::max_element(devs.begin(), devs.end()) + 1;
  const char* xml = getenv("NCCL_TOPO_FILE");
  const char* spec = getenv("CCLAB_TOPO");
  if (xml != nullptr && *xml != '\0') {
    cfg.topo_xml = xml;
  } else if (spec != nullptr && *spec != '\0') {
    cfg.topo = spec;
  } else {
    cfg.topo = "dgx-h100";
    cfg.machines = (need + 7) / 8;
  }
  // NCCL_MIN/MAX_NCHANNELS bound the channels the world runs, as they bound NCCL's (the runtime has
  // checked them: 1..64).
  auto channels_env = [](const char* name) {
    const char* v = getenv(name);
    const long n = v != nullptr && *v != '\0' ? std::strtol(v, nullptr, 10) : 0;
    return n >= 1 && n <= 64 ? static_cast<int>(n) : 0;
  };
  cfg.min_channels = channels_env("NCCL_MIN_NCHANNELS");
  cfg.max_channels = channels_env("NCCL_MAX_NCHANNELS");
  return cfg;
}
}  // namespace

SimConfig Session::model_config(const std::vector<int>& devs) {
  std::lock_guard<std::mutex> lk(g_mu);
  return g_session != nullptr ? g_session->impl_->cfg : new_model_config(devs);
}

Session* Session::current() {
  std::lock_guard<std::mutex> lk(g_mu);
  return g_session;
}

Session* Session::get(const std::vector<int>& devs, std::string* error) {
  std::lock_guard<std::mutex> lk(g_mu);
  if (g_session != nullptr) return g_session;
  if (!g_failed.empty()) {
    *error = g_failed;
    return nullptr;
  }
  SimConfig cfg = new_model_config(devs);
  cfg.payload = true;
  cfg.nranks = static_cast<int>(devs.size());
  if (const char* t = getenv("CCLAB_TRACE")) cfg.trace_path = t;
  if (const char* l = getenv("CCLAB_LIVE")) cfg.live_path = l;
  if (const char* w = getenv("CCLAB_LIVE_WAIT")) cfg.live_wait_s = std::atof(w);
  cfg.command = "CCLAB_BACKEND=sim program";
  if (const char* a = getenv("NCCL_ALGO")) cfg.algo = a;
  if (const char* p = getenv("NCCL_PROTO")) cfg.proto = p;
  std::unique_ptr<Session> s(new Session());
  s->impl_ = std::make_unique<Impl>();
  Impl* im = s->impl_.get();
  im->cfg = cfg;
  if (const char* st = getenv("CCLAB_SIM_STALL_S")) im->stall_timeout_s = std::max(0.1, std::atof(st));
  // The engine thread builds the engine and the first world (SimGrid binds an engine to the thread that
  // creates it) and then runs the simulation for the rest of the process.
  std::mutex setup_mu;
  std::condition_variable setup_cv;
  bool setup_done = false;
  std::string setup_err;
  std::thread([im, devs, &setup_mu, &setup_cv, &setup_done, &setup_err] {
    static EngineArgs args;
    im->engine = new sg4::Engine(&args.argc, args.argv);  // lives as long as the process
    configure_engine(*im->engine);
    auto w = std::make_unique<World>(im->cfg);
    w->set_devices(devs);
    w->set_all_routes(true);
    w->set_block_hooks(im);
    std::string err;
    bool ok = w->setup(*im->engine, &err);
    if (ok && !im->cfg.live_path.empty() && !w->live_start(&err))
      std::fprintf(stderr, "cclab: CCLAB_LIVE: %s; the program goes on without a live stream\n", err.c_str());
    if (ok) {
      im->base = w.get();
      im->worlds.emplace(devs, std::move(w));
      sg4::Engine::on_deadlock_cb([im] { im->sg_deadlock = true; });
    }
    {
      std::lock_guard<std::mutex> lk(setup_mu);
      setup_done = true;
      if (!ok) setup_err = err;
      setup_cv.notify_all();
    }
    if (ok) im->engine_loop();  // never returns
  }).detach();
  {
    std::unique_lock<std::mutex> lk(setup_mu);
    setup_cv.wait(lk, [&] { return setup_done; });
  }
  if (!setup_err.empty()) {
    g_failed = "sim backend: " + setup_err;
    *error = g_failed;
    s.release();  // the engine thread ended; its engine stays (a second one cannot be built)
    return nullptr;
  }
  g_session = s.release();
  std::atexit([] {
    // Stop the engine at its next wait (within a few seconds) before the process's static objects go,
    // then write the trace of what the first communicator's world ran; the live stream ends.
    Session* ss = Session::current();
    if (ss == nullptr) return;
    Impl& im = *ss->impl_;
    std::unique_lock<std::mutex> lk(im.mu);
    im.exiting = true;
    im.cv_engine.notify_all();
    im.cv_prog.wait_for(lk, std::chrono::seconds(5), [&] { return im.engine_waiting; });
    World& w = *im.base;
    w.live_finish();
    std::string err;
    if (w.tracing() && !w.write_trace(&err)) std::fprintf(stderr, "cclab: CCLAB_TRACE: %s\n", err.c_str());
  });
  return g_session;
}

bool Session::attach(const void* comm, const std::string& id, const std::vector<int>& devs, int rank,
                     std::string* error) {
  Impl& im = *impl_;
  World* world = nullptr;
  {
    std::lock_guard<std::mutex> wl(im.worlds_mu);
    {
      std::lock_guard<std::mutex> lk(im.mu);
      auto it = im.worlds.find(devs);
      if (it != im.worlds.end()) world = it->second.get();
    }
    if (world == nullptr) {  // another GPU set: a world of its own on the same platform
      SimConfig cfg = im.cfg;
      cfg.nranks = static_cast<int>(devs.size());
      cfg.trace_path.clear();
      cfg.live_path.clear();
      auto w = std::make_unique<World>(cfg);
      w->set_devices(devs);
      w->share_platform(*im.base);
      w->set_block_hooks(&im);
      std::string err;
      if (!w->setup(*im.engine, &err)) {
        *error = "a communicator of " + std::to_string(devs.size()) + " ranks: " + err +
                 (err.find("does not have") != std::string::npos
                      ? " (the model was sized for the first communicator: set CCLAB_TOPO=PRESET:MACHINES)"
                      : "");
        return false;
      }
      std::lock_guard<std::mutex> lk(im.mu);
      world = w.get();
      im.worlds.emplace(devs, std::move(w));
    }
  }
  std::lock_guard<std::mutex> lk(im.mu);
  auto sp = im.spaces.emplace(id, static_cast<int>(im.spaces.size())).first;
  Impl::CommRec& c = im.comms[comm];
  c.world = world;
  c.space = sp->second;
  c.rank = rank;
  c.devs = devs;
  c.owner = im.me();
  ++c.owner->owned;
  im.gpus.insert(devs[rank]);
  return true;
}

void Session::detach(const void* comm) {
  Impl& im = *impl_;
  std::lock_guard<std::mutex> lk(im.mu);
  auto it = im.comms.find(comm);
  if (it == im.comms.end()) return;
  if (it->second.owner != nullptr) --it->second.owner->owned;
  im.gpus.erase(im.gpus.find(it->second.devs[it->second.rank]));
  im.comms.erase(it);
  im.cv_engine.notify_all();
}

void Session::claim(const void* comm) {
  Impl& im = *impl_;
  std::lock_guard<std::mutex> lk(im.mu);
  auto it = im.comms.find(comm);
  if (it == im.comms.end()) return;
  ThreadRec* t = im.me();
  if (it->second.owner == t) return;
  if (it->second.owner != nullptr) --it->second.owner->owned;
  it->second.owner = t;
  ++t->owned;
  im.cv_engine.notify_all();
}

void Session::idle_begin() {
  Impl& im = *impl_;
  std::lock_guard<std::mutex> lk(im.mu);
  ThreadRec* t = im.me();
  if (t->idle_depth++ == 0) t->state = ThreadRec::kIdle;
  im.cv_engine.notify_all();
}

void Session::idle_end() {
  Impl& im = *impl_;
  std::lock_guard<std::mutex> lk(im.mu);
  ThreadRec* t = im.me();
  if (t->idle_depth > 0 && --t->idle_depth == 0) t->state = ThreadRec::kRunning;
}

bool Session::enqueue_coll(const void* comm, const void* stream, const World::RankOp& op, std::string* error) {
  Impl::Item it;
  it.kind = Impl::Item::kColl;
  it.op = op;
  return impl_->enqueue_rank_item(comm, stream, std::move(it), error);
}

bool Session::enqueue_p2p(const void* comm, const void* stream, uint64_t op_count,
                          const std::vector<World::P2pOp>& ops, std::string* error) {
  Impl::Item it;
  it.kind = Impl::Item::kP2p;
  it.op_count = op_count;
  it.p2p = ops;
  return impl_->enqueue_rank_item(comm, stream, std::move(it), error);
}

void Session::enqueue_kernel(const void* stream, int gpu, double flops, double seconds) {
  Impl& im = *impl_;
  std::lock_guard<std::mutex> lk(im.mu);
  Impl::Queue& q = im.queue(stream, gpu);
  Impl::Item it;
  it.kind = Impl::Item::kKernel;
  const Topology& t = im.base->topo();
  const int gpm = std::max(1, t.gpus_per_machine());
  const GpuModel& g = im.base->calibration().gpu(t.nodes[t.gpu_node(gpu / gpm, gpu % gpm)].sm);
  it.seconds = seconds + (g.tflops > 0 ? flops / (g.tflops * 1e12) : 0);
  q.items.push_back(std::move(it));
  ++q.enqueued;
}

void Session::enqueue_wait(const void* waiter, const void* waitee) {
  Impl& im = *impl_;
  std::lock_guard<std::mutex> lk(im.mu);
  Impl::Queue& b = im.queue(waitee, 0);
  Impl::Queue& a = im.queue(waiter, 0);
  if (&a == &b || b.enqueued == b.done) return;
  Impl::Item it;
  it.kind = Impl::Item::kWait;
  it.waitee = &b;
  it.target = b.enqueued;
  a.items.push_back(std::move(it));
  ++a.enqueued;
}

bool Session::synchronize(const void* stream, std::string* error) {
  Impl& im = *impl_;
  im.mu.lock();
  std::vector<std::pair<Impl::Queue*, uint64_t>> targets;
  for (auto& kv : im.queues)
    if (stream == nullptr || kv.first.first == stream) targets.emplace_back(&kv.second, kv.second.enqueued);
  return im.wait_for(std::move(targets), error);
}

bool Session::synchronize_default(const std::vector<const void*>& comms, std::string* error) {
  Impl& im = *impl_;
  im.mu.lock();
  std::vector<std::pair<Impl::Queue*, uint64_t>> targets;
  for (const void* comm : comms) {
    auto c = im.comms.find(comm);
    if (c == im.comms.end()) continue;
    Impl::Queue& q = im.queue(nullptr, c->second.devs[c->second.rank]);
    targets.emplace_back(&q, q.enqueued);
  }
  return im.wait_for(std::move(targets), error);
}

double Session::now_us() const {
  std::lock_guard<std::mutex> lk(impl_->mu);
  return impl_->clock_us;
}

bool Session::gpu_in_use(int gpu) const {
  std::lock_guard<std::mutex> lk(impl_->mu);
  return impl_->gpus.count(gpu) > 0;
}

int Session::gpus_in_use() const {
  std::lock_guard<std::mutex> lk(impl_->mu);
  return static_cast<int>(std::set<int>(impl_->gpus.begin(), impl_->gpus.end()).size());
}

std::string Session::description() const {
  const Topology& t = impl_->base->topo();
  return t.description.empty() ? t.name : t.description;
}

}  // namespace sim
}  // namespace cclab
