#include "sim/session.h"

#include <cstdio>
#include <cstdlib>

#include <simgrid/s4u.hpp>

#include <cstdlib>
#include <deque>
#include <map>
#include <mutex>

namespace sg4 = simgrid::s4u;

namespace cclab {
namespace sim {

struct Session::Impl {
  struct Queue;
  struct Item {
    enum Kind { kColl, kKernel, kWait } kind = kColl;
    int rank = 0;
    World::RankOp op;
    double seconds = 0;
    Queue* waitee = nullptr;
    uint64_t target = 0;
  };
  struct Queue {
    std::deque<Item> items;
    uint64_t enqueued = 0, done = 0;
    std::vector<std::pair<sg4::Actor*, uint64_t>> waiters;
    int rank = 0;  // the GPU whose host runs the queue's actor
  };
  sg4::Engine* engine = nullptr;
  std::unique_ptr<World> world;
  std::map<std::pair<const void*, int>, Queue> queues;
  int nranks = 0;
  bool deadlocked = false;
  std::recursive_mutex mu;

  Queue& queue(const void* stream, int rank) {
    Queue& q = queues[std::make_pair(stream, stream == nullptr ? rank : -1)];
    if (q.enqueued == 0 && q.items.empty()) q.rank = rank;
    return q;
  }
};

namespace {
std::mutex g_mu;
Session* g_session = nullptr;
}  // namespace

Session::~Session() = default;

Session* Session::current() {
  std::lock_guard<std::mutex> lk(g_mu);
  return g_session;
}

Session* Session::get(int nranks, std::string* error) {
  std::lock_guard<std::mutex> lk(g_mu);
  if (g_session != nullptr) {
    if (g_session->impl_->nranks != nranks) {
      *error = "the simulator runs one communicator size per process: it models " +
               std::to_string(g_session->impl_->nranks) + " ranks, this communicator has " + std::to_string(nranks);
      return nullptr;
    }
    return g_session;
  }
  SimConfig cfg;
  cfg.payload = true;
  cfg.nranks = nranks;
  const char* xml = getenv("NCCL_TOPO_FILE");
  const char* spec = getenv("CCLAB_TOPO");
  if (xml != nullptr && *xml != '\0') {
    cfg.topo_xml = xml;
  } else if (spec != nullptr && *spec != '\0') {
    cfg.topo = spec;
  } else {
    cfg.topo = "dgx-h100";
    cfg.machines = (nranks + 7) / 8;
  }
  if (const char* t = getenv("CCLAB_TRACE")) cfg.trace_path = t;
  if (const char* l = getenv("CCLAB_LIVE")) cfg.live_path = l;
  if (const char* w = getenv("CCLAB_LIVE_WAIT")) cfg.live_wait_s = std::atof(w);
  cfg.command = "CCLAB_BACKEND=sim program";
  if (const char* a = getenv("NCCL_ALGO")) cfg.algo = a;
  if (const char* p = getenv("NCCL_PROTO")) cfg.proto = p;
  std::unique_ptr<Session> s(new Session());
  s->impl_ = std::make_unique<Impl>();
  Impl& im = *s->impl_;
  int argc = 1;
  static char arg0[] = "cclab-sim";
  char* argv[] = {arg0, nullptr};
  im.engine = new sg4::Engine(&argc, argv);  // lives as long as the process
  configure_engine(*im.engine);
  im.world = std::make_unique<World>(cfg);
  std::string err;
  if (!im.world->setup(*im.engine, &err)) {
    *error = "sim backend: " + err;
    return nullptr;  // the engine stays; a later attempt in this process cannot build another platform
  }
  im.nranks = nranks;
  Impl* imp = &im;
  sg4::Engine::on_deadlock_cb([imp] { imp->deadlocked = true; });
  if (!cfg.live_path.empty() && !im.world->live_start(&err))
    std::fprintf(stderr, "cclab: CCLAB_LIVE: %s; the program goes on without a live stream\n", err.c_str());
  g_session = s.release();
  if (!cfg.trace_path.empty() || !cfg.live_path.empty())
    std::atexit([] {  // the trace of everything the program ran (docs/trace-format.md); the live stream ends
      std::lock_guard<std::mutex> lk(g_mu);
      if (g_session == nullptr) return;
      World& w = *g_session->impl_->world;
      w.live_finish();
      std::string err;
      if (w.tracing() && !w.write_trace(&err)) std::fprintf(stderr, "cclab: CCLAB_TRACE: %s\n", err.c_str());
    });
  return g_session;
}

void Session::enqueue_coll(const void* stream, int rank, const World::RankOp& op) {
  std::lock_guard<std::recursive_mutex> lk(impl_->mu);
  Impl::Queue& q = impl_->queue(stream, rank);
  Impl::Item it;
  it.kind = Impl::Item::kColl;
  it.rank = rank;
  it.op = op;
  q.items.push_back(it);
  ++q.enqueued;
}

void Session::enqueue_kernel(const void* stream, int rank, double flops, double seconds) {
  std::lock_guard<std::recursive_mutex> lk(impl_->mu);
  Impl::Queue& q = impl_->queue(stream, rank);
  Impl::Item it;
  it.kind = Impl::Item::kKernel;
  it.rank = rank;
  const GpuModel& g = impl_->world->calibration().gpu(impl_->world->topo().nodes[impl_->world->rank_gpu(rank)].sm);
  it.seconds = seconds + (g.tflops > 0 ? flops / (g.tflops * 1e12) : 0);
  q.items.push_back(it);
  ++q.enqueued;
}

void Session::enqueue_wait(const void* waiter, int waiter_rank, const void* waitee, int waitee_rank) {
  std::lock_guard<std::recursive_mutex> lk(impl_->mu);
  Impl::Queue& b = impl_->queue(waitee, waitee_rank);
  Impl::Queue& a = impl_->queue(waiter, waiter_rank);
  if (&a == &b || b.enqueued == b.done) return;
  Impl::Item it;
  it.kind = Impl::Item::kWait;
  it.waitee = &b;
  it.target = b.enqueued;
  a.items.push_back(it);
  ++a.enqueued;
}

bool Session::run(std::string* error) {
  std::lock_guard<std::recursive_mutex> lk(impl_->mu);
  Impl& im = *impl_;
  std::string failure;
  bool any = false;
  for (auto& kv : im.queues) {
    Impl::Queue* q = &kv.second;
    if (q->items.empty()) continue;
    any = true;
    World* w = im.world.get();
    sg4::Actor::create("stream", w->rank_host(q->rank), [q, w, &failure] {
      while (!q->items.empty()) {
        Impl::Item it = q->items.front();
        q->items.pop_front();
        std::string err;
        switch (it.kind) {
          case Impl::Item::kColl:
            if (!w->run_rank_op(it.rank, it.op, &err) && failure.empty()) failure = err;
            break;
          case Impl::Item::kKernel:
            if (it.seconds > 0) sg4::this_actor::sleep_for(it.seconds);
            break;
          case Impl::Item::kWait:
            while (it.waitee->done < it.target) {
              it.waitee->waiters.emplace_back(sg4::Actor::self(), it.target);
              sg4::this_actor::suspend();
            }
            break;
        }
        ++q->done;
        for (size_t i = 0; i < q->waiters.size();) {
          if (q->waiters[i].second <= q->done) {
            sg4::Actor* a = q->waiters[i].first;
            q->waiters.erase(q->waiters.begin() + static_cast<long>(i));
            a->resume();
          } else {
            ++i;
          }
        }
      }
    });
  }
  if (!any) return true;
  im.deadlocked = false;
  im.engine->run();
  if (im.deadlocked) {
    failure = "the simulated ranks deadlocked (did every rank of each collective get queued before the "
              "synchronisation? drive all ranks from one thread):" + im.world->describe_stuck();
  }
  for (auto& kv : im.queues) {
    Impl::Queue& q = kv.second;
    if (!q.items.empty() && failure.empty()) failure = "a stream's work did not complete";
    q.items.clear();
    q.waiters.clear();
    q.done = q.enqueued;
  }
  if (!failure.empty()) {
    *error = failure;
    return false;
  }
  return true;
}

double Session::now_us() const { return sg4::Engine::get_clock() * 1e6; }
int Session::nranks() const { return impl_->nranks; }
std::string Session::description() const {
  const Topology& t = impl_->world->topo();
  return t.description.empty() ? t.name : t.description;
}

}  // namespace sim
}  // namespace cclab
