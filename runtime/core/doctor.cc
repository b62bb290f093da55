#include "core/doctor.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "base/board.h"
#include "bootstrap/socket.h"
#include "base/log.h"
#include "base/param.h"
#include "base/sync.h"
#include "core/comm.h"
#include "core/recorder.h"
#include "kernels/describe.h"

namespace cclab {

namespace {

// Raised by the SIGUSR1 handler (async-signal-safe: a lock-free atomic); every doctor with a sleeping
// wait prints its board's report once per raise.
std::atomic<uint64_t> g_signals{0};

void on_sigusr1(int) { g_signals.fetch_add(1, std::memory_order_relaxed); }

void install_signal_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (param_int("CCLAB_DOCTOR_SIGNAL", 1) == 0) return;
    struct sigaction old;
    if (sigaction(SIGUSR1, nullptr, &old) != 0) return;
    // The program's own SIGUSR1 handling (or an ignore) stays as it is.
    if ((old.sa_flags & SA_SIGINFO) != 0 || old.sa_handler != SIG_DFL) return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigusr1;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGUSR1, &sa, nullptr);
  });
}

constexpr double kConfirmUs = 200e3;
constexpr double kRemoteEveryUs = 200e3;
constexpr double kRemoteRetryUs = 5e6;

bool process_dead(int pid) { return pid > 0 && !process_alive(pid); }

// ---- Reading other hosts' boards ---------------------------------------------------------------------
// The request: u32 length, the board's name. The answer: u32 ok (1, else 0 and nothing more), the
// BoardSnapshot's header, its slots and, per rank, whether its process runs (as seen on its host).
constexpr uint32_t kMaxBoardName = 128;
constexpr double kFetchTimeoutS = 1.0;

std::atomic<int> g_server_stop{0};

void serve_one(const Socket& s) {
  const Deadline wait(kFetchTimeoutS, &g_server_stop);
  uint32_t len = 0;
  if (!s.recv_all(&len, sizeof len, wait).ok() || len == 0 || len > kMaxBoardName) return;
  std::string name(len, '\0');
  if (!s.recv_all(&name[0], len, wait).ok() || name.rfind("/cclab-board-", 0) != 0) return;
  BoardSnapshot snap;
  std::string why;
  const uint32_t ok = board_read(name, &snap, &why) ? 1 : 0;
  if (!s.send_all(&ok, sizeof ok, wait).ok() || !ok) return;
  const uint32_t n = static_cast<uint32_t>(snap.slots.size());
  std::vector<int32_t> alive(snap.alive.begin(), snap.alive.end());
  if (s.send_all(&snap.header, sizeof snap.header, wait).ok() && s.send_all(&n, sizeof n, wait).ok() &&
      s.send_all(snap.slots.data(), n * sizeof(BoardSlot), wait).ok())
    s.send_all(alive.data(), n * sizeof(int32_t), wait);
}

// Fetches board `name` from the server at `addr`; false when it cannot (within kFetchTimeoutS).
bool fetch_board(const SocketAddress& addr, const std::string& name, int nranks, BoardSnapshot* out) {
  const Deadline wait(kFetchTimeoutS, nullptr);
  Socket s;
  if (!Socket::connect(addr, wait, &s).ok()) return false;
  const uint32_t len = static_cast<uint32_t>(name.size());
  uint32_t ok = 0, n = 0;
  if (!s.send_all(&len, sizeof len, wait).ok() || !s.send_all(name.data(), len, wait).ok() ||
      !s.recv_all(&ok, sizeof ok, wait).ok() || ok != 1 || !s.recv_all(&out->header, sizeof out->header, wait).ok() ||
      !s.recv_all(&n, sizeof n, wait).ok() || static_cast<int>(n) != nranks)
    return false;
  out->slots.resize(n);
  std::vector<int32_t> alive(n);
  if (!s.recv_all(out->slots.data(), n * sizeof(BoardSlot), wait).ok() ||
      !s.recv_all(alive.data(), n * sizeof(int32_t), wait).ok())
    return false;
  out->alive.assign(alive.begin(), alive.end());
  return true;
}

}  // namespace

SocketAddress doctor_board_server(const SocketAddress& near) {
  static std::mutex mu;
  static SocketAddress addr = socket_address_zero();
  static bool tried = false;
  std::lock_guard<std::mutex> lk(mu);
  if (tried || param_int("CCLAB_DOCTOR", 1) == 0) return addr;
  tried = true;
  SocketAddress bind_to = near;
  socket_address_set_port(&bind_to, 0);
  auto* listener = new Socket;  // lives as long as the process (its thread never ends)
  SocketAddress bound;
  if (!Socket::listen(bind_to, listener, &bound).ok()) {
    delete listener;
    return addr;
  }
  addr = bound;
  std::thread([listener] {
    for (;;) {
      Socket conn;
      SocketAddress peer;
      const IoResult r = listener->accept(Deadline(0, &g_server_stop), &conn, &peer);
      if (!r.ok()) {
        if (r.status == IoStatus::kAborted) return;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
        continue;
      }
      serve_one(conn);
    }
  }).detach();
  return addr;
}

std::string board_id(ncclComm_t comm, uint64_t host_hash);

class Doctor {
 public:
  explicit Doctor(ncclComm_t comm) : comm_(comm) {}
  Board board;
  ncclComm_t comm_;
  std::atomic<uint64_t> coll_seq{0};  // collectives begun
  std::atomic<uint64_t> cur_seq{0};   // the operation running last begun (its waits name it)
  std::mutex mu;
  uint64_t candidate = 0;      // a certain verdict seen first at candidate_us: acted on when a poll
  double candidate_us = 0;     // kConfirmUs later still finds it
  std::atomic<uint64_t> signals_seen{0};
  double stuck_warn_us = 30e6;
  // The other hosts' slots (gather): fetched at most every kRemoteEveryUs; a host that did not answer is
  // left out for kRemoteRetryUs.
  std::mutex remote_mu;
  double remote_us = -1e18;
  std::vector<BoardSlot> remote_slots;
  std::vector<int> remote_alive;
  std::map<uint64_t, double> host_down_until;

  // Every rank's slot: this host's from the board, the others' from a process on each of their hosts.
  BoardSnapshot snapshot() {
    BoardSnapshot snap = board_snapshot(board);
    const PeerInfo& me = comm_->peers[comm_->rank];
    std::lock_guard<std::mutex> lk(remote_mu);
    const double now = now_us();
    if (now - remote_us >= kRemoteEveryUs) {
      remote_us = now;
      remote_slots.assign(comm_->nranks, BoardSlot{});
      remote_alive.assign(comm_->nranks, -1);
      std::map<uint64_t, int> host_first;  // another host -> its first rank with a board server
      for (int r = 0; r < comm_->nranks; ++r) {
        const PeerInfo& p = comm_->peers[r];
        if (p.host_hash != me.host_hash && socket_address_port(p.board_addr) != 0 && !host_first.count(p.host_hash))
          host_first[p.host_hash] = r;
      }
      for (const auto& hr : host_first) {
        auto down = host_down_until.find(hr.first);
        if (down != host_down_until.end() && now < down->second) continue;
        BoardSnapshot there;
        if (!fetch_board(comm_->peers[hr.second].board_addr, board_name_on(hr.first), comm_->nranks, &there)) {
          host_down_until[hr.first] = now + kRemoteRetryUs;
          continue;
        }
        for (int r = 0; r < comm_->nranks; ++r)
          if (comm_->peers[r].host_hash == hr.first) {
            remote_slots[r] = there.slots[r];
            remote_alive[r] = there.alive[r];
          }
      }
    }
    for (int r = 0; r < comm_->nranks; ++r)
      if (remote_slots.size() == snap.slots.size() && remote_slots[r].pid != 0 && snap.slots[r].pid == 0) {
        snap.slots[r] = remote_slots[r];
        snap.alive[r] = remote_alive[r];
      }
    return snap;
  }
  // The name of this communicator's board on the host `host_hash`.
  std::string board_name_on(uint64_t host_hash) const { return "/cclab-board-" + board_id(comm_, host_hash); }

  // The report of this board's snapshot, printed once per key (across the board's ranks).
  // A recorded communicator keeps it in its trace too, once per key in each process (whichever rank prints).
  void report(const BoardVerdict& v, uint64_t key, bool forced) {
    recorder_stuck(comm_, v, forced ? key | (1ull << 61) : key);
    if (!forced && !board_claim_report(board.header(), key)) return;
    std::vector<std::string> lines;
    lines.push_back(std::string("doctor: ") + (forced ? "SIGUSR1: " : "") + v.summary);
    lines.insert(lines.end(), v.lines.begin(), v.lines.end());
    log_report(lines, forced);
  }
};

// A board per communicator and host: the id names the communicator (its unique id and rank 0's nonce)
// and the host, so ranks that only look like separate hosts (NCCL_HOSTID) have separate boards too.
std::string board_id(ncclComm_t comm, uint64_t host_hash) {
  char tail[40];
  snprintf(tail, sizeof tail, "-%08llx-%06llx", static_cast<unsigned long long>(comm->peers[0].nonce & 0xffffffffull),
           static_cast<unsigned long long>(host_hash & 0xffffffull));
  return comm->id_hash + tail;
}

double stuck_warn_us() { return static_cast<double>(param_int("CCLAB_STUCK_WARN", 30)) * 1e6; }

void doctor_attach(ncclComm_t comm) {
  auto d = std::make_shared<Doctor>(comm);
  d->stuck_warn_us = stuck_warn_us();
  if (param_int("CCLAB_DOCTOR", 1) != 0) {
    std::string why;
    const uint64_t host = comm->peers[comm->rank].host_hash;
    if (d->board.open(board_id(comm, host), comm->nranks, comm->rank, host, &why)) {
      install_signal_once();
      CCLAB_INFO(kLogInit, "doctor: status board %s (cclab doctor reads it; SIGUSR1 prints its report)",
                 d->board.name().c_str());
    } else {
      CCLAB_INFO(kLogInit, "doctor: no status board (%s): stuck waits are reported without the other ranks' state",
                 why.c_str());
    }
  }
  comm->doctor = std::move(d);
}

void doctor_detach(ncclComm_t comm) { comm->doctor.reset(); }

namespace {

// The doctor of `comm` when its board records operation `seq` (nullptr: no board); the waits that follow
// name `seq` either way.
Doctor* recording(ncclComm_t comm, uint64_t seq) {
  Doctor* d = comm->doctor.get();
  if (d == nullptr) return nullptr;
  d->cur_seq.store(seq, std::memory_order_relaxed);
  return d->board.is_open() ? d : nullptr;
}

}  // namespace

void doctor_coll_begin(ncclComm_t comm, uint64_t seq, int coll, size_t count, int dtype, int redop, int root,
                       const char* algo, int proto, int nchannels) {
  Doctor* d = recording(comm, seq);
  if (d == nullptr) return;
  BoardOp o{};
  o.seq = seq;
  o.coll_seq = d->coll_seq.fetch_add(1, std::memory_order_relaxed);
  o.kind = kBoardColl;
  o.coll = coll;
  o.dtype = dtype;
  o.redop = redop;
  o.root = root;
  o.count = count;
  o.nchannels = nchannels;
  o.proto = proto;
  o.peer = -1;
  snprintf(o.algo, sizeof o.algo, "%s", algo);
  d->board.op_begin(o);
}

void doctor_p2p_begin(ncclComm_t comm, uint64_t seq, int nops, int first_peer, size_t bytes) {
  Doctor* d = recording(comm, seq);
  if (d == nullptr) return;
  BoardOp o{};
  o.seq = seq;
  o.coll_seq = d->coll_seq.load(std::memory_order_relaxed);
  o.kind = kBoardP2p;
  o.coll = -1;
  o.count = bytes;
  o.peer = first_peer;
  o.npeers = nops;
  o.nchannels = 1;
  o.proto = kProtoSimple;
  snprintf(o.algo, sizeof o.algo, "%s", "p2p");
  d->board.op_begin(o);
}

void doctor_op_end(ncclComm_t comm, uint64_t seq, bool ok, const std::string& error) {
  Doctor* d = comm->doctor.get();
  if (d == nullptr || !d->board.is_open()) return;
  d->board.op_end(seq, ok, error.c_str());
}

void doctor_report_now(ncclComm_t comm) {
  Doctor* d = comm->doctor.get();
  if (d == nullptr || !d->board.is_open()) return;
  BoardVerdict v = board_judge(d->snapshot(), 0);
  d->report(v, v.key | (1ull << 62), false);
}

void doctor_wait_begin(void* ctx, const WaitSite& site) {
  Doctor* d = static_cast<ncclComm_t>(ctx)->doctor.get();
  if (d == nullptr || !d->board.is_open()) return;
  BoardWait w{};
  w.since_us = 0;  // now
  w.op_seq = d->cur_seq.load(std::memory_order_relaxed);
  w.step = site.step;
  w.channel = site.channel;
  w.peer = site.peer;
  w.for_data = site.for_data ? 1 : 0;
  w.prim = static_cast<int32_t>(site.prim);
  d->board.wait_begin(board_wait_index(site.channel, site.for_data), w);
}

void doctor_wait_end(void* ctx, const WaitSite& site) {
  Doctor* d = static_cast<ncclComm_t>(ctx)->doctor.get();
  if (d == nullptr || !d->board.is_open()) return;
  d->board.wait_end(board_wait_index(site.channel, site.for_data));
}

int doctor_wait_poll(void* ctx, const WaitSite& site, double waited_us, std::string* why) {
  ncclComm_t comm = static_cast<ncclComm_t>(ctx);
  Doctor* d = comm->doctor.get();
  if (d == nullptr) return 0;
  // The peer's process, when it is another process of this host (SHM, or NET over loopback).
  const PeerInfo& me = comm->peers[comm->rank];
  if (site.peer >= 0 && site.peer < comm->nranks) {
    const PeerInfo& p = comm->peers[site.peer];
    if (p.host_hash == me.host_hash && p.pid != me.pid && process_dead(p.pid)) {
      // A peer that left the communicator before its process ended did not die: it left without calling.
      const bool left = d->board.is_open() &&
                        __atomic_load_n(&d->board.slot(site.peer)->state, __ATOMIC_ACQUIRE) == kBoardSlotLeft;
      char buf[512];
      snprintf(buf, sizeof buf,
               left ? "rank %d channel %d: rank %d (pid %d) left the communicator (ncclCommDestroy / ncclCommAbort) and "
                      "its process ended, while %s"
                    : "rank %d channel %d: rank %d (pid %d) died: its process ended while %s",
               site.rank, site.channel, site.peer, p.pid, describe_wait(site).c_str());
      *why = buf;
      if (d->board.is_open()) {
        BoardVerdict v = board_judge(d->snapshot(), 0);
        d->report(v, v.key, false);
      }
      return left ? ncclInvalidUsage : ncclRemoteError;
    }
  }
  if (!d->board.is_open()) return 0;
  const uint64_t sig = g_signals.load(std::memory_order_relaxed);
  uint64_t seen = d->signals_seen.load(std::memory_order_relaxed);
  if (sig != seen && d->signals_seen.compare_exchange_strong(seen, sig)) {
    BoardVerdict v = board_judge(d->snapshot(), 0);
    d->report(v, v.key, true);
  }
  if (waited_us < 1e6) return 0;
  BoardVerdict v = board_judge(d->snapshot(), 0.5e6);
  if (v.certain) {
    // Act on a verdict two polls kConfirmUs apart agree on: a record read while its rank was writing it
    // cannot end a run.
    {
      std::lock_guard<std::mutex> lk(d->mu);
      if (d->candidate != v.key) {
        d->candidate = v.key;
        d->candidate_us = now_us();
        return 0;
      }
      if (now_us() - d->candidate_us < kConfirmUs) return 0;
    }
    d->report(v, v.key, false);
    *why = "rank " + std::to_string(site.rank) + ": " + v.summary + " (the doctor's verdict: " +
           describe_wait(site) + "; the report lists every rank)";
    return v.code;
  }
  if (waited_us >= d->stuck_warn_us) d->report(v, v.key | (1ull << 63), false);
  return 0;
}

}  // namespace cclab
