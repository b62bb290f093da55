// runtime/bootstrap/bootstrap.cc - see bootstrap.h.
//
// [SECTION] Wire format      messages exchanged with the root and between ranks
// [SECTION] Root             the listener thread that gathers the address table
// [SECTION] Root registry    owns root threads so the process can exit cleanly
// [SECTION] Unique id        bootstrap_get_unique_id and its decoding
// [SECTION] Bootstrap        create, ring all-gather and barrier, tagged send/recv
//
// Messages are raw structs: every rank runs the same build of cclab on the same architecture (as
// NCCL assumes), and the secret and magics catch connections that are not ours.
#include "bootstrap/bootstrap.h"

#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include "base/log.h"
#include "base/param.h"

namespace cclab {
namespace {

// ---- [SECTION] Wire format -----------------------------------------------------------------------

constexpr uint64_t kIdMagic = 0x31444942414c4343ull;     // "CCLABID1"
constexpr uint64_t kHelloMagic = 0x4f4c454842434343ull;  // "CCCBHELO"
constexpr uint64_t kReplyMagic = 0x594c505242434343ull;  // "CCCBRPLY"
constexpr uint64_t kPeerMagic = 0x5245455042434343ull;   // "CCCBPEER"

// The first bytes of ncclUniqueId.internal; the rest stays zero.
struct IdContents {
  uint64_t magic;
  uint64_t secret;
  SocketAddress root;
};
static_assert(sizeof(IdContents) <= NCCL_UNIQUE_ID_BYTES, "IdContents must fit in ncclUniqueId");

// Rank -> root, right after connecting.
struct RootHello {
  uint64_t magic;
  uint64_t secret;
  int32_t rank;
  int32_t nranks;
  SocketAddress listen;  // where this rank accepts ring and point-to-point connections
};

// Root -> rank: status, then on success nranks SocketAddress entries (the address table).
struct RootReply {
  uint64_t magic;
  int32_t status;  // ncclResult_t
  int32_t nranks;
  char message[1024];  // why, when status != ncclSuccess
};

// Rank -> rank, first message on every connection between ranks.
enum : int32_t { kPeerRing = 1, kPeerP2p = 2 };
struct PeerHello {
  uint64_t magic;
  uint64_t secret;
  int32_t from;
  int32_t kind;
};

// Precedes every point-to-point message.
struct FrameHeader {
  int32_t tag;
  uint32_t reserved;
  uint64_t bytes;
};

// Exchanged with both ring neighbours before each ring operation, so ranks that disagree on the
// call (an allgather meeting a barrier, or different sizes) fail with a message instead of mixing
// up bytes.
enum : uint32_t { kOpAllgather = 1, kOpBarrier = 2 };
struct RingHeader {
  uint32_t op;
  uint32_t reserved;
  uint64_t bytes;
  uint64_t seq;
};

// A connection that connects but never says who it is is dropped after this long (seconds).
constexpr double kHelloTimeoutS = 5.0;
// Ranks wait this much longer than the root for the address table (seconds), so that when ranks
// are missing they hear the root's explanation rather than a bare timeout of their own.
constexpr double kRootGraceS = 1.0;

const char* op_name(uint32_t op) { return op == kOpAllgather ? "allgather" : op == kOpBarrier ? "barrier" : "?"; }

double elapsed_s(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// "timed out after 2 s", "was aborted", ... - completes "bootstrap: rank 3 <this> waiting for ...".
std::string wait_failure(const IoResult& r, double timeout_s) {
  char buf[64];
  switch (r.status) {
    case IoStatus::kTimeout:
      snprintf(buf, sizeof(buf), "timed out after %g s", timeout_s);
      return buf;
    case IoStatus::kAborted:
      return "was aborted (abort flag raised)";
    case IoStatus::kClosed:
      return "lost the connection (closed by peer)";
    default:
      return std::string("failed (") + strerror(r.err) + ")";
  }
}

double bootstrap_timeout_s() {
  int64_t t = param_int("CCLAB_BOOTSTRAP_TIMEOUT", 120);
  if (t <= 0) {
    CCLAB_WARN("CCLAB_BOOTSTRAP_TIMEOUT=%lld: must be a positive number of seconds; using 120",
               static_cast<long long>(t));
    return 120;
  }
  return static_cast<double>(t);
}

uint64_t hash_string(const std::string& s) {  // FNV-1a
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

uint64_t random_secret() {
  uint64_t v = 0;
  if (getrandom(&v, sizeof(v), 0) == static_cast<ssize_t>(sizeof(v)) && v != 0) return v;
  // No entropy source: still distinct per process and call, which is all a stray-connection check needs.
  static std::atomic<uint64_t> counter{0};
  v = static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  return hash_string(std::to_string(v) + ":" + std::to_string(getpid()) + ":" + std::to_string(counter++));
}

// ---- [SECTION] Root ------------------------------------------------------------------------------

struct RootConn {
  Socket sock;
  SocketAddress from;
  RootHello hello;
};

// Tells every connected rank why the bootstrap failed, so each returns the same clear error.
void root_fail(const std::vector<RootConn>& conns, ncclResult_t code, const std::string& msg) {
  CCLAB_WARN("%s", msg.c_str());
  RootReply reply;
  memset(&reply, 0, sizeof(reply));
  reply.magic = kReplyMagic;
  reply.status = code;
  snprintf(reply.message, sizeof(reply.message), "%s", msg.c_str());
  for (const RootConn& c : conns) {
    (void)c.sock.send_all(&reply, sizeof(reply), Deadline(1.0, nullptr));  // best effort: it may be gone
  }
}

std::string missing_ranks(const std::vector<int>& by_rank) {
  std::vector<int> missing;
  for (size_t r = 0; r < by_rank.size(); ++r) {
    if (by_rank[r] < 0) missing.push_back(static_cast<int>(r));
  }
  std::string out = missing.size() == 1 ? "missing rank " : "missing ranks ";
  constexpr size_t kShown = 16;
  for (size_t i = 0; i < missing.size() && i < kShown; ++i) out += (i ? ", " : "") + std::to_string(missing[i]);
  if (missing.size() > kShown) out += " (and " + std::to_string(missing.size() - kShown) + " more)";
  return out;
}

// The root's whole life: gather one hello per rank, check them, send the table, exit. `stop` ends it
// early (process exit); the collection timeout starts when the first rank arrives, since the id may
// sit unused for a long time before ranks start.
void run_root(Socket listener, SocketAddress addr, uint64_t secret, double timeout_s,
              std::shared_ptr<std::atomic<int>> stop, std::shared_ptr<std::atomic<bool>> done) {
  const std::string me = "bootstrap root " + socket_address_to_string(addr);
  std::vector<RootConn> conns;
  std::vector<int> by_rank;  // rank -> index in conns, -1 until it arrives
  int nranks = -1;
  Deadline idle(0, stop.get());
  std::unique_ptr<Deadline> collect;
  auto t0 = std::chrono::steady_clock::now();
  bool complete = false;
  char msg[1024];

  while (true) {
    if (nranks > 0 && static_cast<int>(conns.size()) == nranks) {
      complete = true;
      break;
    }
    const Deadline& wait = collect ? *collect : idle;
    Socket sock;
    SocketAddress from = socket_address_zero();
    IoResult r = listener.accept(wait, &sock, &from);
    if (r.status == IoStatus::kAborted) {
      root_fail(conns, ncclInternalError,
                me + ": stopped (process exit or bootstrap_stop_roots) before all ranks joined");
      break;
    }
    if (r.status == IoStatus::kTimeout) {
      snprintf(msg, sizeof(msg), "%s: timed out after %g s waiting for ranks to join: %zu of %d arrived; %s",
               me.c_str(), timeout_s, conns.size(), nranks, missing_ranks(by_rank).c_str());
      root_fail(conns, ncclRemoteError, msg);
      break;
    }
    if (!r.ok()) {
      root_fail(conns, ncclSystemError, me + ": accept failed: " + strerror(r.err));
      break;
    }
    RootHello h;
    r = sock.recv_all(&h, sizeof(h), wait.capped(kHelloTimeoutS));
    std::string from_s = socket_address_to_string(from);
    if (!r.ok()) {
      CCLAB_WARN("%s: dropped a connection from %s that sent no hello (%s)", me.c_str(), from_s.c_str(),
                 r.describe(kHelloTimeoutS).c_str());
      continue;
    }
    if (h.magic != kHelloMagic || h.secret != secret) {
      CCLAB_WARN("%s: rejected a connection from %s: %s", me.c_str(), from_s.c_str(),
                 h.magic != kHelloMagic ? "not a cclab bootstrap hello"
                                        : "wrong secret (a rank holding a different unique id?)");
      continue;
    }
    conns.push_back(RootConn{std::move(sock), from, h});
    if (nranks < 0) {
      if (h.nranks < 1) {
        snprintf(msg, sizeof(msg), "%s: rank %d (%s) says nranks=%d", me.c_str(), h.rank, from_s.c_str(), h.nranks);
        root_fail(conns, ncclInvalidUsage, msg);
        break;
      }
      nranks = h.nranks;
      by_rank.assign(nranks, -1);
      collect.reset(new Deadline(timeout_s, stop.get()));
      t0 = std::chrono::steady_clock::now();
      CCLAB_INFO(kLogBootstrap, "%s: first rank arrived (rank %d), waiting for %d ranks (timeout %g s)", me.c_str(),
                 h.rank, nranks, timeout_s);
    }
    if (h.nranks != nranks) {
      const RootHello& ref = conns.front().hello;
      snprintf(msg, sizeof(msg), "%s: rank %d (%s) says nranks=%d but rank %d (%s) says nranks=%d", me.c_str(), h.rank,
               from_s.c_str(), h.nranks, ref.rank, socket_address_to_string(conns.front().from).c_str(), ref.nranks);
      root_fail(conns, ncclInvalidUsage, msg);
      break;
    }
    if (h.rank < 0 || h.rank >= nranks) {
      snprintf(msg, sizeof(msg), "%s: rank %d (%s) is out of range for nranks=%d", me.c_str(), h.rank, from_s.c_str(),
               nranks);
      root_fail(conns, ncclInvalidUsage, msg);
      break;
    }
    if (by_rank[h.rank] >= 0) {
      snprintf(msg, sizeof(msg), "%s: rank %d joined twice (from %s and from %s): each rank number must be used once",
               me.c_str(), h.rank, socket_address_to_string(conns[by_rank[h.rank]].from).c_str(), from_s.c_str());
      root_fail(conns, ncclInvalidUsage, msg);
      break;
    }
    by_rank[h.rank] = static_cast<int>(conns.size()) - 1;
  }

  if (complete) {
    std::vector<SocketAddress> table(nranks);
    for (int r = 0; r < nranks; ++r) table[r] = conns[by_rank[r]].hello.listen;
    RootReply reply;
    memset(&reply, 0, sizeof(reply));
    reply.magic = kReplyMagic;
    reply.status = ncclSuccess;
    reply.nranks = nranks;
    for (int r = 0; r < nranks; ++r) {
      const RootConn& c = conns[by_rank[r]];
      Deadline wait(timeout_s, stop.get());
      IoResult res = c.sock.send_all(&reply, sizeof(reply), wait);
      if (res.ok()) res = c.sock.send_all(table.data(), table.size() * sizeof(SocketAddress), wait);
      if (!res.ok()) {
        CCLAB_WARN("%s: could not send the address table to rank %d (%s): %s", me.c_str(), r,
                   socket_address_to_string(c.from).c_str(), res.describe(timeout_s).c_str());
      }
    }
    CCLAB_INFO(kLogBootstrap, "%s: all %d ranks joined in %.3f s; address table sent", me.c_str(), nranks,
               elapsed_s(t0));
  }
  done->store(true, std::memory_order_release);
}

// ---- [SECTION] Root registry ---------------------------------------------------------------------

// Root threads belong to the process, not to any communicator: the id outlives the call that made
// it. The registry joins finished threads as new roots start, and stops and joins the rest at exit.
class RootRegistry {
 public:
  static RootRegistry& instance() {
    static RootRegistry registry;
    return registry;
  }

  void start(Socket listener, const SocketAddress& addr, uint64_t secret, double timeout_s) {
    std::lock_guard<std::mutex> lock(mutex_);
    reap_locked();
    Entry e;
    e.stop = std::make_shared<std::atomic<int>>(0);
    e.done = std::make_shared<std::atomic<bool>>(false);
    e.creator = getpid();
    e.thread = std::thread(run_root, std::move(listener), addr, secret, timeout_s, e.stop, e.done);
    entries_.push_back(std::move(e));
  }

  int active() {
    std::lock_guard<std::mutex> lock(mutex_);
    reap_locked();
    return static_cast<int>(entries_.size());
  }

  void stop_all() {
    std::lock_guard<std::mutex> lock(mutex_);
    drop_inherited_locked();
    for (Entry& e : entries_) e.stop->store(1, std::memory_order_release);
    for (Entry& e : entries_) {
      if (e.thread.joinable()) e.thread.join();
    }
    entries_.clear();
  }

  ~RootRegistry() { stop_all(); }

 private:
  struct Entry {
    std::thread thread;
    std::shared_ptr<std::atomic<int>> stop;
    std::shared_ptr<std::atomic<bool>> done;
    pid_t creator = 0;  // the process whose thread this is
  };

  // A forked child inherits the parent's entries but not their threads: joining would hang and
  // destroying a joinable std::thread aborts, so they are leaked. Roots the child starts are its own,
  // and are reaped and joined as in any process.
  void drop_inherited_locked() {
    const pid_t self = getpid();
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (it->creator != self) {
        new std::thread(std::move(it->thread));
        it = entries_.erase(it);
      } else {
        ++it;
      }
    }
  }

  void reap_locked() {
    drop_inherited_locked();
    for (auto it = entries_.begin(); it != entries_.end();) {
      if (it->done->load(std::memory_order_acquire)) {
        it->thread.join();
        it = entries_.erase(it);
      } else {
        ++it;
      }
    }
  }

  std::mutex mutex_;
  std::vector<Entry> entries_;
};

ncclResult_t start_root(const SocketAddress& addr, uint64_t secret, bool from_comm_id, SocketAddress* bound) {
  Socket listener;
  IoResult r = Socket::listen(addr, &listener, bound);
  if (!r.ok()) {
    return report_error(ncclSystemError, "bootstrap: cannot start the root listener on %s: %s%s",
                        socket_address_to_string(addr).c_str(), strerror(r.err),
                        from_comm_id && r.err == EADDRINUSE ? " (NCCL_COMM_ID names a port already in use: "
                                                              "another job, or a root already started for it?)"
                                                            : "");
  }
  double timeout = bootstrap_timeout_s();
  CCLAB_INFO(kLogBootstrap | kLogInit, "bootstrap root listening on %s", socket_address_to_string(*bound).c_str());
  RootRegistry::instance().start(std::move(listener), *bound, secret, timeout);
  return ncclSuccess;
}

bool is_all_zero(const ncclUniqueId& id) {
  for (char c : id.internal) {
    if (c != 0) return false;
  }
  return true;
}

}  // namespace

// ---- [SECTION] Unique id -------------------------------------------------------------------------

ncclResult_t bootstrap_get_unique_id(ncclUniqueId* id) {
  if (id == nullptr) return report_error(ncclInvalidArgument, "ncclGetUniqueId: uniqueId is NULL");
  IdContents c;
  memset(&c, 0, sizeof(c));
  c.magic = kIdMagic;
  SocketAddress listen_addr;
  bool from_comm_id = false;
  std::string comm_id = param_str("NCCL_COMM_ID", nullptr);
  if (!comm_id.empty()) {
    CCLAB_CHECK(socket_address_from_string(comm_id.c_str(), &listen_addr));
    c.secret = hash_string(comm_id);
    from_comm_id = true;
  } else {
    std::vector<NetInterface> ifs;
    CCLAB_CHECK(find_interfaces(1, nullptr, &ifs));
    listen_addr = ifs[0].addr;
    c.secret = random_secret();
  }
  CCLAB_CHECK(start_root(listen_addr, c.secret, from_comm_id, &c.root));
  memset(id, 0, sizeof(*id));
  memcpy(id->internal, &c, sizeof(c));
  return ncclSuccess;
}

ncclResult_t bootstrap_decode_unique_id(const ncclUniqueId& id, SocketAddress* root, uint64_t* secret) {
  IdContents c;
  memcpy(&c, id.internal, sizeof(c));
  if (c.magic != kIdMagic || socket_address_length(c.root) == 0) {
    return report_error(ncclInvalidArgument,
                        "bootstrap: the unique id was not made by ncclGetUniqueId (bad magic or address); "
                        "was it broadcast intact to every rank?");
  }
  if (root) *root = c.root;
  if (secret) *secret = c.secret;
  return ncclSuccess;
}

int bootstrap_active_roots() { return RootRegistry::instance().active(); }

void bootstrap_stop_roots() { RootRegistry::instance().stop_all(); }

// ---- [SECTION] Bootstrap -------------------------------------------------------------------------

Bootstrap::~Bootstrap() = default;

std::string Bootstrap::peer_name(int peer) const {
  std::string s = "rank " + std::to_string(peer);
  if (peer >= 0 && peer < static_cast<int>(peers_.size())) s += " (" + socket_address_to_string(peers_[peer]) + ")";
  return s;
}

ncclResult_t Bootstrap::create(const ncclUniqueId& id, int rank, int nranks, const std::atomic<int>* abort_flag,
                               std::unique_ptr<Bootstrap>* out) {
  auto t_start = std::chrono::steady_clock::now();
  if (out == nullptr) return report_error(ncclInvalidArgument, "bootstrap: output pointer is NULL");
  if (nranks < 1 || rank < 0 || rank >= nranks) {
    return report_error(ncclInvalidArgument,
                        "bootstrap: rank %d is out of range for nranks=%d (need 0 <= rank < nranks)", rank, nranks);
  }
  std::unique_ptr<Bootstrap> b(new Bootstrap());
  b->rank_ = rank;
  b->nranks_ = nranks;
  b->abort_flag_ = abort_flag;
  b->timeout_s_ = bootstrap_timeout_s();

  // 1. Where is the root?
  if (is_all_zero(id)) {
    // No id exchanged: NCCL_COMM_ID names the root, and rank 0 runs it.
    std::string comm_id = param_str("NCCL_COMM_ID", nullptr);
    if (comm_id.empty()) {
      return report_error(ncclInvalidArgument,
                          "bootstrap: rank %d got an all-zero unique id: call ncclGetUniqueId on one rank and pass "
                          "its id to every rank, or set NCCL_COMM_ID=ip:port",
                          rank);
    }
    CCLAB_CHECK(socket_address_from_string(comm_id.c_str(), &b->root_));
    b->secret_ = hash_string(comm_id);
    if (rank == 0) {
      SocketAddress bound;
      CCLAB_CHECK(start_root(b->root_, b->secret_, /*from_comm_id=*/true, &bound));
    }
  } else {
    CCLAB_CHECK(bootstrap_decode_unique_id(id, &b->root_, &b->secret_));
  }
  const std::string root_s = socket_address_to_string(b->root_);

  // 2. Our own listening socket, on the chosen interface (preferring the root's subnet).
  std::vector<NetInterface> ifs;
  CCLAB_CHECK(find_interfaces(1, &b->root_, &ifs));
  SocketAddress my_addr;
  IoResult r = Socket::listen(ifs[0].addr, &b->listener_, &my_addr);
  if (!r.ok()) {
    return report_error(ncclSystemError, "bootstrap: rank %d cannot listen on %s: %s", rank,
                        describe_interface(ifs[0]).c_str(), strerror(r.err));
  }
  CCLAB_INFO(kLogInit | kLogBootstrap, "Bootstrap : Using [0]%s (rank %d listens on port %d)",
             describe_interface(ifs[0]).c_str(), rank, socket_address_port(my_addr));
  auto t_listen = std::chrono::steady_clock::now();

  // 3. Hello to the root; the reply is the address table (or the root's reason for failing).
  Socket root_sock;
  r = Socket::connect(b->root_, Deadline(b->timeout_s_, abort_flag), &root_sock);
  if (!r.ok()) {
    return report_error(r.status == IoStatus::kAborted ? ncclInternalError : ncclSystemError,
                        "bootstrap: rank %d could not connect to root %s: %s", rank, root_s.c_str(),
                        r.describe(b->timeout_s_).c_str());
  }
  RootHello hello;
  memset(&hello, 0, sizeof(hello));
  hello.magic = kHelloMagic;
  hello.secret = b->secret_;
  hello.rank = rank;
  hello.nranks = nranks;
  hello.listen = my_addr;
  r = root_sock.send_all(&hello, sizeof(hello), Deadline(b->timeout_s_, abort_flag));
  if (!r.ok()) {
    return report_error(r.code(), "bootstrap: rank %d could not send its address to root %s: %s", rank, root_s.c_str(),
                        r.describe(b->timeout_s_).c_str());
  }
  auto t_sent = std::chrono::steady_clock::now();
  RootReply reply;
  Deadline reply_wait(b->timeout_s_ + kRootGraceS, abort_flag);
  r = root_sock.recv_all(&reply, sizeof(reply), reply_wait);
  if (!r.ok()) {
    if (r.status == IoStatus::kTimeout) {
      return report_error(ncclRemoteError,
                          "bootstrap: rank %d timed out after %g s waiting for root %s to send the address table: "
                          "not all %d ranks joined (did every rank start, with the same unique id and nranks?)",
                          rank, b->timeout_s_, root_s.c_str(), nranks);
    }
    return report_error(r.code(), "bootstrap: rank %d %s waiting for root %s to send the address table", rank,
                        wait_failure(r, b->timeout_s_).c_str(), root_s.c_str());
  }
  if (reply.magic != kReplyMagic) {
    return report_error(ncclRemoteError, "bootstrap: rank %d got a malformed reply from root %s", rank, root_s.c_str());
  }
  if (reply.status != ncclSuccess) {
    reply.message[sizeof(reply.message) - 1] = '\0';
    return report_error(static_cast<ncclResult_t>(reply.status), "bootstrap: rank %d: %s", rank, reply.message);
  }
  if (reply.nranks != nranks) {
    return report_error(ncclInternalError, "bootstrap: rank %d: root %s sent a table for %d ranks, expected %d", rank,
                        root_s.c_str(), reply.nranks, nranks);
  }
  b->peers_.resize(nranks);
  r = root_sock.recv_all(b->peers_.data(), nranks * sizeof(SocketAddress), Deadline(b->timeout_s_, abort_flag));
  if (!r.ok()) {
    return report_error(r.code(), "bootstrap: rank %d %s receiving the address table from root %s", rank,
                        wait_failure(r, b->timeout_s_).c_str(), root_s.c_str());
  }
  root_sock.close();
  auto t_table = std::chrono::steady_clock::now();

  // 4. Ring links: send to rank+1 on a connection we open, receive from rank-1 on one it opens.
  b->send_conns_.resize(nranks);
  b->recv_conns_.resize(nranks);
  if (nranks > 1) {
    int next = (rank + 1) % nranks;
    int prev = (rank + nranks - 1) % nranks;
    r = Socket::connect(b->peers_[next], Deadline(b->timeout_s_, abort_flag), &b->ring_tx_);
    PeerHello ph;
    memset(&ph, 0, sizeof(ph));
    ph.magic = kPeerMagic;
    ph.secret = b->secret_;
    ph.from = rank;
    ph.kind = kPeerRing;
    if (r.ok()) r = b->ring_tx_.send_all(&ph, sizeof(ph), Deadline(b->timeout_s_, abort_flag));
    if (!r.ok()) {
      return report_error(r.status == IoStatus::kAborted ? ncclInternalError : ncclSystemError,
                          "bootstrap: rank %d could not connect to %s for the ring: %s", rank,
                          b->peer_name(next).c_str(), r.describe(b->timeout_s_).c_str());
    }
    Bootstrap* self = b.get();
    CCLAB_CHECK(
        b->accept_until([self] { return self->ring_rx_.valid(); }, "the ring connection from", prev, self->timeout_s_));
  }
  auto t_ring = std::chrono::steady_clock::now();
  using Sec = std::chrono::duration<double>;
  CCLAB_INFO(kLogInit | kLogBootstrap,
             "Bootstrap timings rank %d/%d total %.3f s (listen %.3f, send %.3f, wait for table %.3f, ring %.3f)", rank,
             nranks, Sec(t_ring - t_start).count(), Sec(t_listen - t_start).count(), Sec(t_sent - t_listen).count(),
             Sec(t_table - t_sent).count(), Sec(t_ring - t_table).count());
  *out = std::move(b);
  return ncclSuccess;
}

template <typename Ready>
ncclResult_t Bootstrap::accept_until(Ready ready, const char* what, int peer, double timeout_s) {
  Deadline wait(timeout_s, abort_flag_);
  while (!ready()) {
    Socket sock;
    SocketAddress from = socket_address_zero();
    IoResult r = listener_.accept(wait, &sock, &from);
    if (!r.ok()) {
      return report_error(r.code(), "bootstrap: rank %d %s waiting for %s %s", rank_,
                          wait_failure(r, timeout_s).c_str(), what, peer_name(peer).c_str());
    }
    std::string from_s = socket_address_to_string(from);
    PeerHello h;
    r = sock.recv_all(&h, sizeof(h), wait.capped(kHelloTimeoutS));
    if (!r.ok()) {
      if (r.status == IoStatus::kAborted) {
        return report_error(ncclInternalError, "bootstrap: rank %d was aborted waiting for %s %s", rank_, what,
                            peer_name(peer).c_str());
      }
      CCLAB_WARN("bootstrap: rank %d dropped a connection from %s that sent no hello (%s)", rank_, from_s.c_str(),
                 r.describe(kHelloTimeoutS).c_str());
      continue;
    }
    const char* reject = nullptr;
    if (h.magic != kPeerMagic) {
      reject = "not a cclab bootstrap connection";
    } else if (h.secret != secret_) {
      reject = "wrong secret (a stray connection, or a rank of another communicator)";
    } else if (h.from < 0 || h.from >= nranks_) {
      reject = "sender rank out of range";
    } else if (h.kind == kPeerRing) {
      if (h.from != (rank_ + nranks_ - 1) % nranks_ || ring_rx_.valid()) reject = "unexpected ring connection";
    } else if (h.kind == kPeerP2p) {
      if (recv_conns_[h.from].valid()) reject = "second point-to-point connection from the same rank";
    } else {
      reject = "unknown connection kind";
    }
    if (reject != nullptr) {
      CCLAB_WARN("bootstrap: rank %d rejected a connection from %s (claims rank %d): %s", rank_, from_s.c_str(), h.from,
                 reject);
      continue;
    }
    if (h.kind == kPeerRing) {
      ring_rx_ = std::move(sock);
    } else {
      recv_conns_[h.from] = std::move(sock);
    }
  }
  return ncclSuccess;
}

ncclResult_t Bootstrap::ring_exchange(uint32_t op, void* data, size_t bytes_per_rank) {
  std::lock_guard<std::mutex> lock(ring_mutex_);
  const uint64_t seq = ring_seq_++;
  if (nranks_ == 1) return ncclSuccess;
  const int n = nranks_;
  const int next = (rank_ + 1) % n;
  const int prev = (rank_ + n - 1) % n;
  auto fail = [&](const IoResult& r, bool failed_tx, const char* stage) {
    int peer = failed_tx ? next : prev;
    return report_error(r.code(), "bootstrap: rank %d %s #%llu %s %s %s %s", rank_, op_name(op),
                        static_cast<unsigned long long>(seq), stage, wait_failure(r, timeout_s_).c_str(),
                        failed_tx ? "sending to" : "receiving from", peer_name(peer).c_str());
  };

  RingHeader mine;
  memset(&mine, 0, sizeof(mine));
  mine.op = op;
  mine.bytes = bytes_per_rank;
  mine.seq = seq;
  RingHeader theirs;
  bool failed_tx = false;
  IoResult r = exchange(ring_tx_, &mine, sizeof(mine), ring_rx_, &theirs, sizeof(theirs),
                        Deadline(timeout_s_, abort_flag_), &failed_tx);
  if (!r.ok()) return fail(r, failed_tx, "(start)");
  if (theirs.op != op || theirs.bytes != bytes_per_rank || theirs.seq != seq) {
    return report_error(ncclInvalidUsage,
                        "bootstrap: rank %d's %s #%llu of %zu bytes per rank met %s's %s #%llu of %llu bytes per rank: "
                        "every rank must make the same bootstrap calls in the same order",
                        rank_, op_name(op), static_cast<unsigned long long>(seq), bytes_per_rank,
                        peer_name(prev).c_str(), op_name(theirs.op), static_cast<unsigned long long>(theirs.seq),
                        static_cast<unsigned long long>(theirs.bytes));
  }
  // Step s forwards the slot received in step s-1 (our own at s=0); after n-1 steps all are here.
  char* base = static_cast<char*>(data);
  for (int s = 0; s < n - 1; ++s) {
    int send_slot = (rank_ - s + n) % n;
    int recv_slot = (rank_ - s - 1 + n) % n;
    r = exchange(ring_tx_, base + send_slot * bytes_per_rank, bytes_per_rank, ring_rx_,
                 base + recv_slot * bytes_per_rank, bytes_per_rank, Deadline(timeout_s_, abort_flag_), &failed_tx);
    if (!r.ok()) {
      std::string stage = "step " + std::to_string(s + 1) + " of " + std::to_string(n - 1);
      return fail(r, failed_tx, stage.c_str());
    }
  }
  return ncclSuccess;
}

ncclResult_t Bootstrap::allgather(void* data, size_t bytes_per_rank) {
  if (data == nullptr && bytes_per_rank > 0) {
    return report_error(ncclInvalidArgument, "bootstrap: rank %d allgather: data is NULL", rank_);
  }
  return ring_exchange(kOpAllgather, data, bytes_per_rank);
}

ncclResult_t Bootstrap::barrier() {
  std::vector<char> scratch(nranks_, 0);
  return ring_exchange(kOpBarrier, scratch.data(), 1);
}

ncclResult_t Bootstrap::send(int peer, int tag, const void* data, size_t bytes) {
  if (peer < 0 || peer >= nranks_) {
    return report_error(ncclInvalidArgument, "bootstrap: rank %d send to rank %d: peer out of range [0, %d)", rank_,
                        peer, nranks_);
  }
  if (data == nullptr && bytes > 0) {
    return report_error(ncclInvalidArgument, "bootstrap: rank %d send to rank %d: data is NULL", rank_, peer);
  }
  const char* p = static_cast<const char*>(data);
  if (peer == rank_) {
    std::lock_guard<std::mutex> lock(self_mutex_);
    self_queue_[tag].emplace_back(p, p + bytes);
    return ncclSuccess;
  }
  std::lock_guard<std::mutex> lock(send_mutex_);
  Socket& conn = send_conns_[peer];
  Deadline wait(timeout_s_, abort_flag_);
  IoResult r;
  if (!conn.valid()) {
    r = Socket::connect(peers_[peer], wait, &conn);
    PeerHello h;
    memset(&h, 0, sizeof(h));
    h.magic = kPeerMagic;
    h.secret = secret_;
    h.from = rank_;
    h.kind = kPeerP2p;
    if (r.ok()) r = conn.send_all(&h, sizeof(h), wait);
    if (!r.ok()) {
      conn.close();
      return report_error(r.status == IoStatus::kAborted ? ncclInternalError : ncclSystemError,
                          "bootstrap: rank %d could not connect to %s to send tag %d: %s", rank_,
                          peer_name(peer).c_str(), tag, r.describe(timeout_s_).c_str());
    }
  }
  FrameHeader fh;
  memset(&fh, 0, sizeof(fh));
  fh.tag = tag;
  fh.bytes = bytes;
  r = conn.send_all(&fh, sizeof(fh), wait);
  if (r.ok()) r = conn.send_all(p, bytes, wait);
  if (!r.ok()) {
    conn.close();  // the stream may hold half a message now
    return report_error(r.code(), "bootstrap: rank %d %s sending %zu bytes with tag %d to %s", rank_,
                        wait_failure(r, timeout_s_).c_str(), bytes, tag, peer_name(peer).c_str());
  }
  return ncclSuccess;
}

ncclResult_t Bootstrap::recv(int peer, int tag, void* data, size_t bytes, double timeout_s) {
  if (timeout_s <= 0) timeout_s = timeout_s_;
  if (peer < 0 || peer >= nranks_) {
    return report_error(ncclInvalidArgument, "bootstrap: rank %d recv from rank %d: peer out of range [0, %d)", rank_,
                        peer, nranks_);
  }
  if (data == nullptr && bytes > 0) {
    return report_error(ncclInvalidArgument, "bootstrap: rank %d recv from rank %d: data is NULL", rank_, peer);
  }
  auto size_mismatch = [&](size_t got) {
    return report_error(ncclInvalidUsage, "bootstrap: rank %d expected %zu bytes with tag %d from %s but %zu were sent",
                        rank_, bytes, tag, peer_name(peer).c_str(), got);
  };
  if (peer == rank_) {
    std::lock_guard<std::mutex> lock(self_mutex_);
    auto it = self_queue_.find(tag);
    if (it == self_queue_.end() || it->second.empty()) {
      return report_error(ncclInvalidUsage,
                          "bootstrap: rank %d recv from itself with tag %d: no such message was sent (a rank must send "
                          "to itself before receiving, or it would wait forever)",
                          rank_, tag);
    }
    std::vector<char> msg = std::move(it->second.front());
    it->second.pop_front();
    if (it->second.empty()) self_queue_.erase(it);
    if (msg.size() != bytes) return size_mismatch(msg.size());
    if (bytes > 0) memcpy(data, msg.data(), bytes);
    return ncclSuccess;
  }

  std::lock_guard<std::mutex> lock(recv_mutex_);
  auto queued = unexpected_.find({peer, tag});
  if (queued != unexpected_.end()) {
    std::vector<char> msg = std::move(queued->second.front());
    queued->second.pop_front();
    if (queued->second.empty()) unexpected_.erase(queued);
    if (msg.size() != bytes) return size_mismatch(msg.size());
    if (bytes > 0) memcpy(data, msg.data(), bytes);
    return ncclSuccess;
  }
  if (!recv_conns_[peer].valid()) {
    std::string what = "a connection (for tag " + std::to_string(tag) + ") from";
    CCLAB_CHECK(accept_until([this, peer] { return recv_conns_[peer].valid(); }, what.c_str(), peer, timeout_s));
  }
  Socket& conn = recv_conns_[peer];
  Deadline wait(timeout_s, abort_flag_);
  while (true) {
    FrameHeader fh;
    IoResult r = conn.recv_all(&fh, sizeof(fh), wait);
    if (r.ok() && fh.tag == tag && fh.bytes == bytes) {
      r = conn.recv_all(data, bytes, wait);
      if (r.ok()) return ncclSuccess;
    }
    std::vector<char> msg;
    if (r.ok()) {
      msg.resize(fh.bytes);
      r = conn.recv_all(msg.data(), msg.size(), wait);
    }
    if (!r.ok()) {
      conn.close();  // the stream may stop mid-message; a later recv must not parse the rest as a header
      return report_error(r.code(), "bootstrap: rank %d %s waiting for a message with tag %d from %s", rank_,
                          wait_failure(r, timeout_s).c_str(), tag, peer_name(peer).c_str());
    }
    if (fh.tag == tag) return size_mismatch(msg.size());
    unexpected_[{peer, fh.tag}].push_back(std::move(msg));
  }
}

}  // namespace cclab
