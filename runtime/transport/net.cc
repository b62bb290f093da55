// NET/Socket (transport_net.h): two proxy threads per connection, one at each end, and a TCP socket
// between them.
#include "transport/net.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "base/log.h"
#include "base/param.h"
#include "bootstrap/socket.h"
#include "kernels/fifo.h"
#include "kernels/proto_ll.h"
#include "kernels/protocols.h"
#include "base/sync.h"

namespace cclab {
namespace {

constexpr uint64_t kHandleMagic = 0x48544e62616c63ull;  // "clabNTH"
constexpr uint64_t kHelloMagic = 0x4c454e62616c63ull;   // "clabNEL"
constexpr uint64_t kGoodbye = ~0ull;                    // SliceHeader::start of the last message

// Receiver -> sender, over the bootstrap: where to connect, or why there is nowhere.
struct NetHandle {
  uint64_t magic;
  uint64_t conn_id;
  int32_t status;  // ncclSuccess, else the receiver's error and `why`
  int32_t pad;
  SocketAddress addr;
  char why[220];
};

// Sender -> receiver, first thing on the new socket.
struct NetHello {
  uint64_t magic;
  uint64_t conn_id;
  int32_t rank;
  int32_t pad;
};

// One slice on the wire, followed by `bytes` bytes; start == kGoodbye ends the connection.
struct SliceHeader {
  uint64_t start;  // the slice's first step
  uint32_t steps;  // FIFO slots it spans
  int32_t bytes;
  uint64_t xfer;   // the slice record's point-to-point transfer size (ConnFifoHeader::xfers), or 0
};
static_assert(sizeof(SliceHeader) == 24, "the slice header is 24 bytes on the wire");

// A send proxy returns the credits of the steps the end-of-operation rounding skipped only once it
// meets the next slice (it cannot tell a skipped step from one not written yet). That never holds
// the sender up while the steps skipped (at most kChunkSteps - 1) and the next slice fit in the FIFO
// together: its wait for credits then needs none of them.
template <typename Proto>
constexpr bool skipped_credits_not_needed() {
  return Proto::kChunkSteps - 1 + Proto::kStepPerSlice <= kNcclSteps;
}
static_assert(skipped_credits_not_needed<ProtoSimpleRing>() && skipped_credits_not_needed<ProtoSimpleOne>() &&
                  skipped_credits_not_needed<ProtoLL>() && skipped_credits_not_needed<ProtoLL128>(),
              "a protocol's chunk must not need the credits of the steps its rounding skips (see above)");

constexpr double kHelloTimeoutS = 10;  // a connection on the listener must introduce itself within this

// The interface NET listens on, chosen once per process.
struct NetState {
  std::once_flag once;
  ncclResult_t result = ncclSuccess;
  std::string error;
  SocketAddress addr;
};
NetState& net_state() {
  static NetState* s = new NetState;  // never destroyed: proxies may still run at exit
  return *s;
}

const char* payload_name(NetPayload p) { return p == NetPayload::kLL ? "LL" : p == NetPayload::kLL128 ? "LL128" : "Simple"; }

std::string errno_text(int err) { return err ? strerror(err) : "connection closed"; }

// Moves `n` bytes over a nonblocking socket. Between tries it polls the socket and `wake` (an
// eventfd; -1: none) for up to 100 ms and asks quit(). kQuit: quit() said so; kClosed: the peer closed
// or reset the connection (*err: 0 or the errno); kError: another failure (*err).
enum class Io { kOk, kQuit, kClosed, kError };
template <typename Quit>
Io move_bytes(int fd, bool sending, char* p, size_t n, int wake, const Quit& quit, int* err) {
  *err = 0;
  while (n > 0) {
    const ssize_t k = sending ? ::send(fd, p, n, MSG_NOSIGNAL) : ::recv(fd, p, n, 0);
    if (k > 0) {
      p += k;
      n -= static_cast<size_t>(k);
      continue;
    }
    if (k == 0 && !sending) return Io::kClosed;
    if (k < 0 && errno == EINTR) continue;
    if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      *err = errno;
      // The peer or the way to it is gone (closed, reset, keepalive or retransmission timed out,
      // unreachable): the other side's failure. Anything else is this host's.
      switch (errno) {
        case EPIPE: case ECONNRESET: case ENOTCONN: case ECONNABORTED: case ETIMEDOUT: case EHOSTUNREACH:
        case ENETUNREACH: case EHOSTDOWN:
          return Io::kClosed;
        default:
          return Io::kError;
      }
    }
    if (quit()) return Io::kQuit;
    pollfd pfd[2] = {{fd, static_cast<short>(sending ? POLLOUT : POLLIN), 0}, {wake, POLLIN, 0}};
    ::poll(pfd, wake >= 0 ? 2 : 1, 100);
  }
  return Io::kOk;
}

// Sleeps on a FIFO counter until it reaches `target` or quit() says so, 10 ms at a time. No spinning
// first: a proxy is an extra thread beside the ranks', and spinning bought nothing here (an 8-byte
// all_reduce over NET between 2 processes on 2 cores stayed at about 90 us whether proxies yielded
// for 20 us or 2 ms before sleeping, or polled their sockets that long: the time goes to the wake-ups
// TCP itself needs, 64 us per loopback round trip between two sleeping threads on that machine).
template <typename Quit>
bool wait_counter(ConnCounter* c, uint64_t target, const Quit& quit) {
  while (counter_load(c) < target) {
    if (quit()) return false;
    counter_sleep(c, target, 10000);
  }
  return true;
}

// A peer host that vanishes (powered off, unplugged) closes nothing: without these a receive proxy
// would wait for it forever. Keepalive probes find an idle connection dead after 30 + 3 x 10 s; a
// connection with data unacknowledged for 60 s is dropped (TCP_USER_TIMEOUT). Either way the proxy
// then sees ETIMEDOUT and reports the peer lost.
void set_keepalive(int fd) {
  int one = 1, idle = 30, intvl = 10, cnt = 3;
  unsigned user_timeout_ms = 60000;
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
  setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms, sizeof user_timeout_ms);
}

// One end of a NET connection: its FIFO (this rank's memory) and its proxy thread. Destroying it
// stops the proxy (a send proxy first sends what its executor posted, for up to CCLAB_TIMEOUT or
// 30 s, whichever is shorter) and frees the FIFO.
class NetEnd : public Segment {
 public:
  NetEnd(const NetConnSpec& spec, bool sending) : spec_(spec), sending_(sending) {
    base_ = aligned_alloc(4096, (spec.fifo_bytes + 4095) / 4096 * 4096);
    size_ = spec.fifo_bytes;
    if (base_) memset(base_, 0, size_);
    wake_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  }
  ~NetEnd() override {
    stop(true);
    if (wake_ >= 0) ::close(wake_);
    free(base_);
  }
  // Asks the proxy to stop (a send proxy first sends what was posted; see send_main) and, with
  // `wait`, joins it. The FIFO stays.
  void stop(bool wait) override {
    if (!stop_.exchange(1)) {
      if (wake_ >= 0) {
        const uint64_t one = 1;
        ssize_t ignored = ::write(wake_, &one, sizeof one);
        (void)ignored;
      }
      if (base_) {  // a proxy asleep on a counter
        counter_wake(&hdr()->tail);
        counter_wake(&hdr()->head);
      }
    }
    if (wait && thread_.joinable()) thread_.join();
  }
  bool ok() const { return base_ != nullptr && wake_ >= 0; }
  int line_bytes() const { return spec_.payload == NetPayload::kLL ? kLLLineBytes : kLL128LineBytes; }

  ConnFifoHeader* hdr() const { return static_cast<ConnFifoHeader*>(base_); }
  char* slot(uint64_t step) const {
    return static_cast<char*>(base_) + kFifoDataOffset + (step % kNcclSteps) * static_cast<size_t>(spec_.step_bytes);
  }

  // Receiving end: takes the listener and runs accept + receive loop on the proxy thread.
  void start_recv(Socket listener) {
    listener_ = std::move(listener);
    thread_ = std::thread([this] {
      recv_main();
      on_exit();
    });
  }
  // Sending end: takes the connected socket and runs the send loop on the proxy thread.
  void start_send(Socket sock) {
    sock_ = std::move(sock);
    thread_ = std::thread([this] {
      send_main();
      on_exit();
    });
  }

 private:
  bool aborted() const { return spec_.abort_flag && spec_.abort_flag->load(std::memory_order_relaxed); }

  // A proxy stopped by the communicator's abort (ncclCommAbort or Revoke, or another connection that
  // broke) closes its connection now rather than when the communicator is freed: the peer's proxy
  // then reports the loss, so its rank fails instead of waiting for data this one will never send.
  void on_exit() {
    if (!aborted()) return;
    if (sock_.valid()) ::shutdown(sock_.fd(), SHUT_RDWR);
    listener_.close();  // a sender that connects later finds nobody instead of a backlog nobody reads
  }

  // "rank 2's NET connection from rank 5 (channel 1, Simple)"
  std::string describe() const {
    char buf[160];
    snprintf(buf, sizeof buf, "rank %d's NET/Socket connection %s rank %d (channel %d, %s)", spec_.rank,
             sending_ ? "to" : "from", spec_.peer, spec_.channel, payload_name(spec_.payload));
    return buf;
  }
  void fail(ncclResult_t code, const std::string& msg) {
    if (stop_.load() || aborted()) return;  // the communicator is going away: nobody to tell
    CCLAB_WARN("%s", msg.c_str());
    if (spec_.on_error) spec_.on_error(code, msg);
  }
  void fail_io(Io io, int err, const char* doing) {
    if (io == Io::kClosed)
      fail(ncclRemoteError, describe() + ": " + doing + ": " + errno_text(err) +
                                " - rank " + std::to_string(spec_.peer) + " exited, crashed or aborted its communicator");
    else
      fail(ncclSystemError, describe() + ": " + doing + ": " + errno_text(err));
  }

  void recv_main() {
    set_log_rank(spec_.rank);
    if (!accept_sender()) return;
    std::vector<uint64_t> staging;  // LL/LL128 lines, as 8-byte words
    if (spec_.payload != NetPayload::kSimple) staging.resize(static_cast<size_t>(spec_.step_bytes) / 8);
    const auto quit = [this] { return stop_.load() != 0 || aborted(); };
    uint64_t next = 0;  // no slice may start before the end of the last one
    for (;;) {
      SliceHeader h;
      int err = 0;
      Io io = move_bytes(sock_.fd(), false, reinterpret_cast<char*>(&h), sizeof h, wake_, quit, &err);
      if (io == Io::kQuit) return;
      if (io != Io::kOk) return fail_io(io, err, "receiving a slice header");
      if (h.start == kGoodbye) return;  // the sender's communicator was destroyed
      // A slice spans slots of one FIFO lap (a slice never wraps: kernels/protocols.h) and fits them.
      const size_t cap = static_cast<size_t>(h.steps) * static_cast<size_t>(spec_.step_bytes);
      if (h.start < next || h.steps < 1 || h.steps > static_cast<uint32_t>(kNcclSteps) ||
          h.start % kNcclSteps + h.steps > static_cast<uint64_t>(kNcclSteps) || h.start > ~0ull - kNcclSteps ||
          h.bytes < 0 || static_cast<size_t>(h.bytes) > cap ||
          (spec_.payload != NetPayload::kSimple && (h.steps != 1 || h.bytes % line_bytes() != 0))) {
        char buf[200];
        snprintf(buf, sizeof buf, ": malformed slice (start %llu, %u steps, %d bytes; expected start >= %llu, "
                 "at most %d bytes per step)", static_cast<unsigned long long>(h.start), h.steps, h.bytes,
                 static_cast<unsigned long long>(next), spec_.step_bytes);
        return fail(ncclSystemError, describe() + buf);
      }
      // The slots are free once the executor has consumed up to start + steps - NCCL_STEPS.
      const uint64_t end = h.start + h.steps;
      if (!wait_counter(&hdr()->head, end > kNcclSteps ? end - kNcclSteps : 0, quit)) return;
      char* dst = spec_.payload == NetPayload::kSimple ? slot(h.start) : reinterpret_cast<char*>(staging.data());
      io = move_bytes(sock_.fd(), false, dst, static_cast<size_t>(h.bytes), wake_, quit, &err);
      if (io == Io::kQuit) return;
      if (io != Io::kOk) return fail_io(io, err, "receiving a slice");
      if (spec_.payload != NetPayload::kSimple) store_lines(slot(h.start), staging.data(), static_cast<size_t>(h.bytes));
      hdr()->sizes[h.start % kNcclSteps] = h.bytes;
      hdr()->ends[h.start % kNcclSteps] = end;
      hdr()->xfers[h.start % kNcclSteps] = h.xfer;
      counter_post(&hdr()->tail, end);  // Simple: the data is there; LL/LL128: the doorbell
      next = end;
    }
  }

  // Stores received LL/LL128 lines as their protocol's sender would (proto_ll.h): a receiver may be
  // polling them, and a flag must never be seen before its data.
  void store_lines(char* dst, const uint64_t* s, size_t bytes) const {
    auto* d = reinterpret_cast<uint64_t*>(dst);  // FIFO slots are lines of 8-byte words (proto_ll.h)
    const size_t words = bytes / 8;
    if (spec_.payload == NetPayload::kLL) {  // each {data, flag} half is one atomic word
      for (size_t i = 0; i < words; ++i) __atomic_store_n(&d[i], s[i], __ATOMIC_RELAXED);
      return;
    }
    for (size_t l = 0; l + kLL128LineElems <= words; l += kLL128LineElems) {  // data words, then the flag
      for (int i = 0; i < kLL128LineElems - 1; ++i) __atomic_store_n(&d[l + i], s[l + i], __ATOMIC_RELAXED);
      __atomic_store_n(&d[l + kLL128LineElems - 1], s[l + kLL128LineElems - 1], __ATOMIC_RELEASE);
    }
  }

  // Waits for the sender's connection and handshake on the listener; false (reported) if none came.
  bool accept_sender() {
    const double deadline = now_us() + spec_.timeout_s * 1e6;
    for (;;) {
      if (stop_.load() || aborted()) return false;
      if (now_us() > deadline) {
        char buf[120];
        snprintf(buf, sizeof buf, ": rank %d never connected (waited %.0f s)", spec_.peer, spec_.timeout_s);
        fail(ncclRemoteError, describe() + buf);
        return false;
      }
      pollfd pfd[2] = {{listener_.fd(), POLLIN, 0}, {wake_, POLLIN, 0}};
      if (::poll(pfd, 2, 100) <= 0 || !(pfd[0].revents & POLLIN)) continue;
      Socket s;
      if (!listener_.accept(Deadline(0.01, spec_.abort_flag), &s, nullptr).ok()) continue;
      NetHello hello;
      int err = 0;
      // A connection that says nothing (not our sender: a port scan, a health check) is dropped soon,
      // so the sender behind it in the backlog gets its turn.
      const double hello_end = std::min(deadline, now_us() + kHelloTimeoutS * 1e6);
      const auto quit = [&] { return stop_.load() != 0 || aborted() || now_us() > hello_end; };
      if (move_bytes(s.fd(), false, reinterpret_cast<char*>(&hello), sizeof hello, wake_, quit, &err) != Io::kOk)
        continue;  // not our sender (or it went away): keep listening
      if (hello.magic != kHelloMagic || hello.conn_id != spec_.conn_id || hello.rank != spec_.peer) {
        CCLAB_WARN("%s: refused a connection that is not rank %d's (rank %d, connection id %llx)",
                   describe().c_str(), spec_.peer, hello.rank, static_cast<unsigned long long>(hello.conn_id));
        continue;
      }
      set_keepalive(s.fd());
      sock_ = std::move(s);
      listener_.close();
      return true;
    }
  }

  void send_main() {
    set_log_rank(spec_.rank);
    ConnFifoHeader* h = hdr();
    const double drain_s = spec_.timeout_s > 0 && spec_.timeout_s < 30 ? spec_.timeout_s : 30;
    double drain_end = 0;  // set once stopped: how long what was posted may still take to send
    const auto quit = [&] {
      if (aborted()) return true;
      if (!stop_.load()) return false;
      if (drain_end == 0) drain_end = now_us() + drain_s * 1e6;
      uint64_t signalled;  // consume the stop signal, so that polls while draining wait for the socket
      ssize_t ignored = ::read(wake_, &signalled, sizeof signalled);
      (void)ignored;
      return now_us() > drain_end;
    };
    uint64_t sent = 0;  // steps handed to the socket (or skipped)
    for (;;) {
      // Wait for the executor to post a slice, or for the end.
      if (!wait_counter(&h->tail, sent + 1, [&] { return aborted() || stop_.load() != 0; })) {
        if (aborted()) return;
        if (counter_load(&h->tail) <= sent) {  // stopped with nothing left to send: say goodbye
          SliceHeader bye{kGoodbye, 0, 0, 0};
          int err = 0;
          move_bytes(sock_.fd(), true, reinterpret_cast<char*>(&bye), sizeof bye, -1, quit, &err);
          return;
        }
      }
      const uint64_t tail = counter_load(&h->tail);
      while (sent < tail) {
        const uint64_t end = h->ends[sent % kNcclSteps];
        if (end <= sent) {  // a slot the end-of-operation rounding skipped
          ++sent;
          continue;
        }
        const int32_t bytes = h->sizes[sent % kNcclSteps];
        const uint64_t steps = end - sent;
        if (steps > static_cast<uint64_t>(kNcclSteps) || end > tail || bytes < 0 ||
            static_cast<uint64_t>(bytes) > steps * static_cast<uint64_t>(spec_.step_bytes)) {
          char buf[200];
          snprintf(buf, sizeof buf, ": the FIFO's slice record at step %llu is inconsistent (ends at %llu, %d bytes, "
                   "tail %llu)", static_cast<unsigned long long>(sent), static_cast<unsigned long long>(end), bytes,
                   static_cast<unsigned long long>(tail));
          return fail(ncclInternalError, describe() + buf);
        }
        SliceHeader sh{sent, static_cast<uint32_t>(steps), bytes, h->xfers[sent % kNcclSteps]};
        int err = 0;
        Io io = move_bytes(sock_.fd(), true, reinterpret_cast<char*>(&sh), sizeof sh, wake_, quit, &err);
        if (io == Io::kOk) io = move_bytes(sock_.fd(), true, slot(sent), static_cast<size_t>(bytes), wake_, quit, &err);
        if (io == Io::kQuit) {
          if (!aborted())
            CCLAB_WARN("%s: dropped the steps from %llu on: the communicator was destroyed and rank %d did not take "
                       "them within %.0f s", describe().c_str(), static_cast<unsigned long long>(sent), spec_.peer, drain_s);
          return;
        }
        if (io != Io::kOk) return fail_io(io, err, "sending a slice");
        sent = end;
        counter_post(&h->head, sent);  // the slots are on the wire: the executor may reuse them
      }
    }
  }

  NetConnSpec spec_;
  bool sending_;
  std::atomic<int> stop_{0};
  int wake_ = -1;  // eventfd: written when stopped, so a proxy in poll() wakes at once
  Socket listener_;
  Socket sock_;
  std::thread thread_;
};

}  // namespace

ncclResult_t net_check_params() {
  const std::string net = param_str("NCCL_NET", nullptr);
  if (!net.empty() && strcasecmp(net.c_str(), "Socket") != 0)
    return report_error(ncclInvalidUsage, "NCCL_NET=%s: cclab's network transport is Socket (NCCL_NET=Socket); IB and "
                        "network plugins are not implemented", net.c_str());
  return ncclSuccess;
}

ncclResult_t net_init() {
  ncclResult_t r = net_check_params();
  if (r != ncclSuccess) return r;
  NetState& st = net_state();
  std::call_once(st.once, [&st] {
    std::vector<NetInterface> itfs;
    if (find_interfaces(1, nullptr, &itfs) != ncclSuccess) {
      st.result = ncclSystemError;
      st.error = std::string("NET/Socket: ") + last_error();
      return;
    }
    st.addr = itfs[0].addr;
    CCLAB_INFO(kLogInit | kLogNet, "NET/Socket : Using [0]%s", describe_interface(itfs[0]).c_str());
  });
  if (st.result != ncclSuccess) return report_error(st.result, "%s", st.error.c_str());
  return ncclSuccess;
}

ncclResult_t net_connect_recv(const NetConnSpec& spec, std::shared_ptr<Segment>* out) {
  NetHandle handle;
  memset(&handle, 0, sizeof handle);
  handle.magic = kHandleMagic;
  handle.conn_id = spec.conn_id;
  auto end = std::make_shared<NetEnd>(spec, false);
  Socket listener;
  ncclResult_t r = net_init();
  if (r == ncclSuccess && !end->ok())
    r = report_error(ncclSystemError, "NET/Socket: cannot allocate %zu bytes (or an eventfd) for rank %d's %s "
                     "connection from rank %d", spec.fifo_bytes, spec.rank, spec.what.c_str(), spec.peer);
  if (r == ncclSuccess) {
    const IoResult io = Socket::listen(net_state().addr, &listener, &handle.addr);
    if (!io.ok())
      r = report_error(io.code(), "NET/Socket: rank %d cannot listen on %s for its %s connection from rank %d: %s",
                       spec.rank, socket_address_to_string(net_state().addr).c_str(), spec.what.c_str(), spec.peer,
                       io.describe(0).c_str());
  }
  handle.status = r;
  if (r != ncclSuccess) snprintf(handle.why, sizeof handle.why, "%s", last_error());
  // The sender waits for this message either way: tell it why there is nothing to connect to.
  const std::string why = r != ncclSuccess ? last_error() : "";
  const ncclResult_t sent = spec.bootstrap->send(spec.peer, spec.tag, &handle, sizeof handle);
  if (r != ncclSuccess) return report_error(r, "%s", why.c_str());
  if (sent != ncclSuccess) return sent;
  end->start_recv(std::move(listener));
  *out = end;
  return ncclSuccess;
}

ncclResult_t net_connect_send(const NetConnSpec& spec, std::shared_ptr<Segment>* out) {
  ncclResult_t r = net_init();
  if (r != ncclSuccess) return r;
  NetHandle handle;  // the peer sends it when it first uses the connection: as late as CCLAB_TIMEOUT allows
  r = spec.bootstrap->recv(spec.peer, spec.tag, &handle, sizeof handle, spec.timeout_s);
  if (r != ncclSuccess) return r;
  if (handle.magic != kHandleMagic || handle.conn_id != spec.conn_id)
    return report_error(ncclInternalError, "NET/Socket: rank %d got a connection address from rank %d for another "
                        "connection (id %llx, expected %llx)", spec.rank, spec.peer,
                        static_cast<unsigned long long>(handle.conn_id), static_cast<unsigned long long>(spec.conn_id));
  if (handle.status != ncclSuccess) {
    handle.why[sizeof handle.why - 1] = '\0';
    return report_error(static_cast<ncclResult_t>(handle.status), "rank %d could not accept the connection: %s",
                        spec.peer, handle.why);
  }
  auto end = std::make_shared<NetEnd>(spec, true);
  if (!end->ok())
    return report_error(ncclSystemError, "NET/Socket: cannot allocate %zu bytes (or an eventfd) for rank %d's %s "
                        "connection to rank %d", spec.fifo_bytes, spec.rank, spec.what.c_str(), spec.peer);
  const Deadline wait(spec.timeout_s, spec.abort_flag);
  Socket sock;
  IoResult io = Socket::connect(handle.addr, wait, &sock);
  NetHello hello{kHelloMagic, spec.conn_id, spec.rank, 0};
  if (io.ok()) io = sock.send_all(&hello, sizeof hello, wait);
  if (!io.ok())
    return report_error(io.code(), "NET/Socket: rank %d cannot connect to rank %d at %s: %s", spec.rank, spec.peer,
                        socket_address_to_string(handle.addr).c_str(), io.describe(spec.timeout_s).c_str());
  set_keepalive(sock.fd());
  end->start_send(std::move(sock));
  *out = end;
  return ncclSuccess;
}

}  // namespace cclab
