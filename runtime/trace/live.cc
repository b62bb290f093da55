// runtime/trace/live.cc - the live stream (live.h, docs/live.md): a Unix socket server that sends
// the trace stream (trace.h's format) of a running job to one viewer at a time, and its client.
//
// Threads of a LiveServer: the acceptor (accepts a connection and hands it to the sender), the sender
// (writes the header when a viewer attaches, then encodes queued events into EVTS blocks, OPS sections
// and header updates in the order they were pushed, END at finish()), and the run's threads calling
// push(). The sender alone writes to the viewer's socket; everything shared is under mu_.
#include "trace/live.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "trace/codec.h"

namespace cclab {
namespace trace {

namespace {

constexpr size_t kMaxQueued = size_t(1) << 18;  // events held for the viewer (~25 MB) before push() waits
constexpr size_t kFlushEvents = 4096;           // pending events that wake the sender before 20 ms
constexpr auto kFlushInterval = std::chrono::milliseconds(20);
constexpr double kStallSeconds = 10;            // a viewer that takes nothing this long while push() waits
constexpr auto kSecondViewerGrace = std::chrono::milliseconds(500);
constexpr int kPollSliceMs = 50;                // the sender's wait for socket space, between checks
constexpr double kMaxWaitSeconds = 1e7;         // longer waits are clamped (no time_point overflow)

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::string errno_text(int err) { return std::strerror(err); }

// Fills *addr for `path`; false with *error when it does not fit in sun_path.
bool make_addr(const std::string& path, sockaddr_un* addr, std::string* error) {
  std::memset(addr, 0, sizeof *addr);
  addr->sun_family = AF_UNIX;
  if (path.empty()) {
    *error = "the live socket path is empty";
    return false;
  }
  if (path.size() >= sizeof addr->sun_path) {
    *error = path + ": the live socket path is " + std::to_string(path.size()) +
             " bytes long; a Unix socket path can have at most " + std::to_string(sizeof addr->sun_path - 1) +
             " (sun_path); use a shorter one, e.g. under /tmp";
    return false;
  }
  std::memcpy(addr->sun_path, path.data(), path.size());
  return true;
}

void close_fd(int* fd) {
  if (*fd >= 0) ::close(*fd);
  *fd = -1;
}

}  // namespace

// What the sender has written to the current viewer: the END section's counts, and the header
// sections as last sent (a header update re-sends only those that changed).
struct LiveServer::Stream {
  uint64_t sections = 0, events = 0, ops = 0;
  int nranks = 0;        // what events are checked against (the decoder would reject others)
  size_t nroutes = 0;
  codec::EventReach reach;  // what the events sent so far name
  bool warned_update = false;
  std::string meta, topo, chan;
};

// ---- LiveServer ---------------------------------------------------------------------------------

LiveServer::LiveServer() = default;

LiveServer::~LiveServer() { finish(); }

bool LiveServer::start(const std::string& path, const Trace& header, double wait_s, std::string* error) {
  std::string scratch;
  std::string& err = error ? *error : scratch;
  std::lock_guard<std::mutex> fl(finish_mu_);
  if (running_) {
    err = path + ": this live stream is already serving " + path_;
    return false;
  }
  std::string why = codec::check_meta(header.meta);
  if (why.empty()) why = codec::check_topo(header);
  if (why.empty()) why = codec::check_channels(header, header.channels);
  if (!why.empty()) {
    err = path + ": cannot stream this trace header: " + why;
    return false;
  }
  sockaddr_un addr;
  if (!make_addr(path, &addr, &err)) return false;

  // An existing file: a socket nobody serves (a run that crashed) is replaced; a socket a run serves,
  // or any other file, is left alone.
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0) {
    if (!S_ISSOCK(st.st_mode)) {
      err = path + ": exists and is not a socket; refusing to replace it (choose another live socket path)";
      return false;
    }
    const int probe = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (probe >= 0) {
      const bool served = ::connect(probe, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0;
      ::close(probe);
      if (served) {
        err = path + ": another run is serving a live stream on this socket";
        return false;
      }
    }
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      err = path + ": cannot remove the stale socket: " + errno_text(errno);
      return false;
    }
  }

  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    err = path + ": cannot create a Unix socket: " + errno_text(errno);
    return false;
  }
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    err = path + ": cannot bind the live socket: " + errno_text(errno);
    ::close(fd);
    return false;
  }
  if (::listen(fd, 8) != 0 || ::lstat(path.c_str(), &st) != 0) {
    err = path + ": cannot listen on the live socket: " + errno_text(errno);
    ::close(fd);
    ::unlink(path.c_str());
    return false;
  }
  int wake[2];
  if (::pipe2(wake, O_CLOEXEC) != 0) {
    err = path + ": cannot create a pipe: " + errno_text(errno);
    ::close(fd);
    ::unlink(path.c_str());
    return false;
  }

  path_ = path;
  listen_fd_ = fd;
  wake_fd_[0] = wake[0];
  wake_fd_[1] = wake[1];
  sock_dev_ = static_cast<uint64_t>(st.st_dev);
  sock_ino_ = static_cast<uint64_t>(st.st_ino);
  {
    std::lock_guard<std::mutex> lk(mu_);
    header_ = std::make_shared<const Trace>(header);
    queue_.clear();
    ctl_.clear();
    inflight_ = 0;
    enq_ = deq_ = 0;
    pending_fd_ = -1;
    client_fd_ = -1;
    attached_ = false;
    stop_ = false;
    accept_stop_ = false;
    drop_ = false;
  }
  running_ = true;
  sender_ = std::thread(&LiveServer::sender_loop, this);
  acceptor_ = std::thread(&LiveServer::accept_loop, this);

  if (wait_s > 0) {
    std::unique_lock<std::mutex> lk(mu_);
    state_cv_.wait_for(lk, std::chrono::duration<double>(std::min(wait_s, kMaxWaitSeconds)),
                       [&] { return attached_.load(); });
  }
  return true;
}

void LiveServer::set_header(const Trace& header) {
  std::string why = codec::check_meta(header.meta);
  if (why.empty()) why = codec::check_topo(header);
  if (why.empty()) why = codec::check_channels(header, header.channels);
  if (!why.empty()) {
    std::fprintf(stderr, "cclab: live stream %s: header update ignored: %s\n", path_.c_str(), why.c_str());
    return;
  }
  auto h = std::make_shared<const Trace>(header);
  std::lock_guard<std::mutex> lk(mu_);
  header_ = h;
  if (attached_) {
    Control c;
    c.at = enq_;
    c.header = std::move(h);
    ctl_.push_back(std::move(c));
    cv_.notify_all();
  }
}

void LiveServer::queue_control(Control c) {
  if (!attached_) return;
  c.at = enq_;
  ctl_.push_back(std::move(c));
  cv_.notify_all();
}

void LiveServer::push_ops(const std::vector<Op>& ops) {
  if (!attached() || ops.empty()) return;
  std::lock_guard<std::mutex> lk(mu_);
  Control c;
  c.ops = ops;
  queue_control(std::move(c));
}

void LiveServer::push_stuck(const std::vector<Stuck>& stuck) {
  if (stuck.empty()) return;
  std::lock_guard<std::mutex> lk(mu_);
  stuck_.insert(stuck_.end(), stuck.begin(), stuck.end());
  Control c;
  c.stuck = stuck;
  queue_control(std::move(c));
}

void LiveServer::push_slow(const Event* e, size_t n) {
  std::unique_lock<std::mutex> lk(mu_);
  int64_t wait_began = 0;  // when this call first found the queue full
  size_t i = 0;
  while (i < n) {
    if (!attached_) return;  // detached meanwhile: the rest is for nobody
    const size_t held = queue_.size() + inflight_;
    if (held >= kMaxQueued) {
      // The viewer is behind: wait for the sender to write (it notifies space_cv_ after each block).
      if (wait_began == 0) wait_began = now_ns();
      space_cv_.wait_for(lk, std::chrono::milliseconds(100));
      const int64_t since = std::max(wait_began, progress_ns_.load());
      if (attached_ && queue_.size() + inflight_ >= kMaxQueued && now_ns() - since > kStallSeconds * 1e9) {
        std::fprintf(stderr,
                     "cclab: warning: live stream %s: the viewer took nothing for %.0f s while %zu events waited "
                     "for it; detaching it so the run goes on (it can attach again)\n",
                     path_.c_str(), kStallSeconds, queue_.size() + inflight_);
        attached_ = false;
        drop_ = true;
        queue_.clear();
        ctl_.clear();
        cv_.notify_all();
        space_cv_.notify_all();
        state_cv_.notify_all();
        return;
      }
      continue;
    }
    const size_t take = std::min(kMaxQueued - held, n - i);
    const size_t before = queue_.size();
    queue_.insert(queue_.end(), e + i, e + i + take);
    enq_ += take;
    i += take;
    if (before < kFlushEvents && queue_.size() >= kFlushEvents) cv_.notify_all();
  }
}

void LiveServer::finish(double drain_s) {
  std::lock_guard<std::mutex> fl(finish_mu_);
  if (!running_) return;
  running_ = false;
  // The acceptor first, so that no connection arrives after the sender has ended.
  {
    std::lock_guard<std::mutex> lk(mu_);
    accept_stop_ = true;
    state_cv_.notify_all();
  }
  const char byte = 1;
  while (::write(wake_fd_[1], &byte, 1) < 0 && errno == EINTR) {
  }
  if (acceptor_.joinable()) acceptor_.join();
  {
    std::lock_guard<std::mutex> lk(mu_);
    deadline_ns_ = now_ns() + static_cast<int64_t>(std::min(std::max(0.0, drain_s), kMaxWaitSeconds) * 1e9);
    stop_ = true;
    cv_.notify_all();
    space_cv_.notify_all();
  }
  if (sender_.joinable()) sender_.join();
  {
    std::lock_guard<std::mutex> lk(mu_);
    attached_ = false;
    close_fd(&pending_fd_);
    queue_.clear();
    ctl_.clear();
    space_cv_.notify_all();
    state_cv_.notify_all();
  }
  close_fd(&listen_fd_);
  close_fd(&wake_fd_[0]);
  close_fd(&wake_fd_[1]);
  // Remove the socket file if it is still the one start() made.
  struct stat st;
  if (::lstat(path_.c_str(), &st) == 0 && static_cast<uint64_t>(st.st_dev) == sock_dev_ &&
      static_cast<uint64_t>(st.st_ino) == sock_ino_)
    ::unlink(path_.c_str());
}

void LiveServer::accept_loop() {
  while (!accept_stop_) {
    pollfd p[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_[0], POLLIN, 0}};
    if (::poll(p, 2, -1) < 0) {
      if (errno == EINTR) continue;
      std::fprintf(stderr, "cclab: live stream %s: poll failed (%s); no more viewers can attach\n", path_.c_str(),
                   errno_text(errno).c_str());
      return;
    }
    if (p[1].revents != 0) return;
    if (p[0].revents & (POLLERR | POLLNVAL)) return;
    if (!(p[0].revents & POLLIN)) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
        std::this_thread::sleep_for(std::chrono::milliseconds(100));  // out of descriptors: not a busy loop
      continue;
    }
    std::unique_lock<std::mutex> lk(mu_);
    // One viewer at a time. A newcomer waits a little for the current one to leave (a viewer that
    // reconnects, before the sender noticed the old connection closed), then is refused: its
    // connection is closed before anything is sent (LiveClient says so).
    const bool free = state_cv_.wait_for(lk, kSecondViewerGrace, [&] {
      return accept_stop_ || (!attached_ && pending_fd_ < 0 && client_fd_ < 0);
    });
    if (!free || accept_stop_) {
      lk.unlock();
      ::close(fd);
      continue;
    }
    pending_fd_ = fd;
    cv_.notify_all();
  }
}

bool LiveServer::send_bytes(const std::string& bytes) {
  const char* p = bytes.data();
  size_t n = bytes.size();
  while (n > 0) {
    const ssize_t w = ::send(client_fd_, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
      p += w;
      n -= static_cast<size_t>(w);
      progress_ns_ = now_ns();
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (drop_) {
        send_error_ = "dropped";
        return false;
      }
      if (stop_ && now_ns() > deadline_ns_) {
        send_error_ = "drain";
        return false;
      }
      pollfd pf = {client_fd_, POLLOUT, 0};
      ::poll(&pf, 1, kPollSliceMs);
      continue;
    }
    send_error_ = w < 0 ? errno_text(errno) : "no progress";
    return false;  // EPIPE, ECONNRESET: the viewer went away
  }
  return true;
}

bool LiveServer::send_header(const Trace& h, Stream* s) {
  // An update may add ranks and routes, not take away any that events already sent name: the viewer's
  // decoder would refuse it (docs/trace-format.md, "Section order"). Such an update is not sent to
  // this viewer, which keeps the header it has.
  std::string why = s->reach.ranks_left_out(h.meta.nranks);
  if (why.empty()) why = s->reach.routes_left_out(h.routes.size());
  if (!why.empty()) {
    if (!s->warned_update) {
      std::fprintf(stderr, "cclab: warning: live stream %s: header update not sent to the viewer: %s\n",
                   path_.c_str(), why.c_str());
      s->warned_update = true;
    }
    return true;
  }
  std::string meta = codec::encode_meta(h.meta), topo = codec::encode_topo(h), chan = codec::encode_channels(h.channels);
  // Each section is checked against the ones before it: META first, unless an update gives fewer ranks
  // (or a first count after an unknown one), which must come after the TOPO and CHAN that fit it.
  const bool meta_last = s->sections > 0 && h.meta.nranks > 0 && (s->nranks <= 0 || h.meta.nranks < s->nranks);
  s->nranks = h.meta.nranks;
  s->nroutes = h.routes.size();
  auto send_meta = [&] {
    if (meta == s->meta) return true;
    if (!send_bytes(codec::pack_section(SectionKind::kMeta, meta, true))) return false;
    ++s->sections;
    s->meta = std::move(meta);
    return true;
  };
  if (!meta_last && !send_meta()) return false;
  if (topo != s->topo) {
    if (!send_bytes(codec::pack_section(SectionKind::kTopo, topo, true))) return false;
    ++s->sections;
    s->topo = std::move(topo);
  }
  if (chan != s->chan) {
    if (!send_bytes(codec::pack_section(SectionKind::kChannels, chan, true))) return false;
    ++s->sections;
    s->chan = std::move(chan);
  }
  return !meta_last || send_meta();
}

bool LiveServer::send_events(const Event* e, size_t n, Stream* s) {
  // Events the format cannot hold (a rank or route the header does not have) would make the viewer's
  // decoder fail: they are left out, with a warning.
  std::vector<Event> ok;
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i)
    if (!codec::event_ok(s->nranks, s->nroutes, e[i])) ++bad;
  if (bad > 0) {
    if (!warned_invalid_) {
      for (size_t i = 0; i < n; ++i)
        if (!codec::event_ok(s->nranks, s->nroutes, e[i])) {
          std::fprintf(stderr, "cclab: warning: live stream %s: events the header cannot describe are left out (%s)\n",
                       path_.c_str(), codec::check_event(s->nranks, s->nroutes, e[i]).c_str());
          break;
        }
      warned_invalid_ = true;
    }
    ok.reserve(n - bad);
    for (size_t i = 0; i < n; ++i)
      if (codec::event_ok(s->nranks, s->nroutes, e[i])) ok.push_back(e[i]);
    e = ok.data();
    n = ok.size();
  }
  s->reach.add(e, n);
  for (size_t i = 0; i < n; i += kEventsPerBlock) {
    const size_t m = std::min(kEventsPerBlock, n - i);
    if (!send_bytes(codec::pack_section(SectionKind::kEvents, codec::encode_events(e + i, m), true))) return false;
    ++s->sections;
    s->events += m;
    sent_ += m;
  }
  return true;
}

bool LiveServer::send_ops(const std::vector<Op>& ops, Stream* s) {
  std::vector<Op> ok;
  ok.reserve(ops.size());
  for (const Op& o : ops) {
    const std::string why = codec::check_op(o);
    if (why.empty())
      ok.push_back(o);
    else
      std::fprintf(stderr, "cclab: warning: live stream %s: op %llu left out: %s\n", path_.c_str(),
                   static_cast<unsigned long long>(o.op_count), why.c_str());
  }
  if (ok.empty()) return true;
  if (!send_bytes(codec::pack_section(SectionKind::kOps, codec::encode_ops(ok), true))) return false;
  ++s->sections;
  s->ops += ok.size();
  return true;
}

bool LiveServer::send_stuck(const std::vector<Stuck>& stuck, Stream* s) {
  std::vector<Stuck> ok;
  for (const Stuck& st : stuck) {
    const std::string why = codec::check_stuck(s->nranks, st);
    if (why.empty())
      ok.push_back(st);
    else
      std::fprintf(stderr, "cclab: warning: live stream %s: a stuck report left out: %s\n", path_.c_str(), why.c_str());
  }
  if (ok.empty()) return true;
  if (!send_bytes(codec::pack_section(SectionKind::kStuck, codec::encode_stuck(ok), true))) return false;
  ++s->sections;
  return true;
}

bool LiveServer::send_end(Stream* s) {
  if (!send_bytes(codec::pack_section(SectionKind::kEnd, codec::encode_end(s->sections, s->events, s->ops), false)))
    return false;
  ++s->sections;
  return true;
}

// Whether the viewer closed its end (a viewer sends nothing; anything it does send is discarded).
bool LiveServer::viewer_gone() {
  pollfd pf = {client_fd_, POLLIN, 0};
  if (::poll(&pf, 1, 0) <= 0) return false;
  if (pf.revents & (POLLERR | POLLNVAL)) return true;
  if (pf.revents & (POLLIN | POLLHUP)) {
    char buf[4096];
    const ssize_t r = ::recv(client_fd_, buf, sizeof buf, MSG_DONTWAIT);
    if (r == 0) return true;
    if (r < 0) return !(errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR);
  }
  return false;
}

void LiveServer::sender_loop() {
  Stream s;
  std::vector<Event> batch;  // events being written (swapped with queue_)
  std::deque<Control> ctls;
  std::unique_lock<std::mutex> lk(mu_);
  // Ends the current viewer's connection (lk held).
  auto close_viewer = [&] {
    attached_ = false;
    drop_ = false;
    std::vector<Event>().swap(queue_);  // the memory too: nobody may attach again
    std::vector<Event>().swap(batch);
    ctl_.clear();
    inflight_ = 0;
    send_error_.clear();
    const int fd = client_fd_;
    client_fd_ = -1;
    space_cv_.notify_all();
    state_cv_.notify_all();
    lk.unlock();
    ::close(fd);
    lk.lock();
  };
  while (true) {
    if (client_fd_ < 0 && pending_fd_ >= 0) {
      // A viewer attaches: events pushed from now on are for it, after the header.
      client_fd_ = pending_fd_;
      pending_fd_ = -1;
      std::shared_ptr<const Trace> h = header_;
      const std::vector<Stuck> stuck_so_far = stuck_;
      queue_.clear();
      ctl_.clear();
      inflight_ = 0;
      enq_ = deq_ = 0;
      drop_ = false;
      progress_ns_ = now_ns();
      attached_ = true;
      state_cv_.notify_all();
      lk.unlock();
      s = Stream();
      const bool ok = send_bytes(codec::file_header()) && send_header(*h, &s) &&
                      (stuck_so_far.empty() || send_stuck(stuck_so_far, &s));
      lk.lock();
      if (!ok) close_viewer();
      continue;
    }
    if (client_fd_ >= 0) {
      // Take everything queued (O(1): the vectors are swapped) and write it in push order: events in
      // blocks of up to kEventsPerBlock, each OPS section or header update at its place.
      bool ok = !drop_;
      while (ok && (!queue_.empty() || !ctl_.empty())) {
        batch.clear();
        batch.swap(queue_);
        ctls.clear();
        ctls.swap(ctl_);
        const uint64_t base = deq_;
        deq_ += batch.size();
        inflight_ += batch.size();
        lk.unlock();
        size_t i = 0;
        auto send_until = [&](size_t end) {
          while (ok && i < end) {
            const size_t m = std::min(kEventsPerBlock, end - i);
            ok = send_events(batch.data() + i, m, &s) && !drop_;
            i += m;
            std::lock_guard<std::mutex> g(mu_);
            inflight_ -= std::min(inflight_, m);
            space_cv_.notify_all();
          }
        };
        for (const Control& c : ctls) {
          send_until(static_cast<size_t>(c.at - base));
          if (!ok) break;
          ok = (c.header ? send_header(*c.header, &s) : !c.stuck.empty() ? send_stuck(c.stuck, &s) : send_ops(c.ops, &s)) &&
               !drop_;
        }
        send_until(batch.size());
        lk.lock();
      }
      if (!ok) {
        if (send_error_ == "drain")
          std::fprintf(stderr,
                       "cclab: warning: live stream %s: the viewer did not take the rest of the stream in time; "
                       "closing it without the end\n",
                       path_.c_str());
        close_viewer();
        continue;
      }
      if (stop_) {
        // finish(): everything queued is written (the queue is empty under the lock); END, then close.
        attached_ = false;
        space_cv_.notify_all();
        lk.unlock();
        const bool ended = send_end(&s);
        lk.lock();
        if (!ended && send_error_ == "drain")
          std::fprintf(stderr, "cclab: warning: live stream %s: the viewer did not take the end of the stream in time\n",
                       path_.c_str());
        close_viewer();
        continue;
      }
      lk.unlock();
      const bool gone = viewer_gone();
      lk.lock();
      if (gone) {
        close_viewer();
        continue;
      }
    }
    if (stop_ && client_fd_ < 0 && pending_fd_ < 0) return;
    if (client_fd_ >= 0)
      cv_.wait_for(lk, kFlushInterval,
                   [&] { return stop_ || drop_ || !ctl_.empty() || queue_.size() >= kFlushEvents; });
    else
      cv_.wait(lk, [&] { return stop_ || pending_fd_ >= 0; });
  }
}

// ---- LiveClient ---------------------------------------------------------------------------------

LiveClient::~LiveClient() { close(); }

void LiveClient::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool LiveClient::connect(const std::string& path, double wait_s, std::string* error) {
  std::string scratch;
  std::string& err = error ? *error : scratch;
  close();
  error_.clear();
  received_ = 0;
  sockaddr_un addr;
  if (!make_addr(path, &addr, &err)) {
    error_ = err;
    return false;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const auto deadline = t0 + std::chrono::duration<double>(std::min(std::max(0.0, wait_s), kMaxWaitSeconds));
  while (true) {
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      err = path + ": cannot create a Unix socket: " + errno_text(errno);
      error_ = err;
      return false;
    }
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) {
      fd_ = fd;
      return true;
    }
    const int e = errno;
    ::close(fd);
    const auto now = std::chrono::steady_clock::now();
    // Not there yet (the run has not started, or is between a stale socket and its own), or its
    // backlog is full: try again until the wait is over.
    const bool retry = e == ENOENT || e == ECONNREFUSED || e == EAGAIN || e == EINTR;
    if (!retry || now >= deadline) {
      char waited[64];
      std::snprintf(waited, sizeof waited, "%.1f", std::chrono::duration<double>(now - t0).count());
      err = path + ": cannot connect to the live stream: " + errno_text(e) +
            (retry ? std::string(" (waited ") + waited + " s; is a run serving it: CCLAB_LIVE=" + path +
                         " or cclab sim --live " + path + "?)"
                   : std::string());
      error_ = err;
      return false;
    }
    std::this_thread::sleep_for(std::min<std::chrono::duration<double>>(std::chrono::milliseconds(20), deadline - now));
  }
}

bool LiveClient::poll(TraceStreamDecoder* decoder, int timeout_ms) {
  if (fd_ < 0) {
    if (error_.empty() && !decoder->complete()) error_ = "not connected to a live stream";
    return false;
  }
  pollfd pf = {fd_, POLLIN, 0};
  const int r = ::poll(&pf, 1, timeout_ms);
  if (r < 0) {
    if (errno == EINTR) return true;
    error_ = "poll on the live stream failed: " + errno_text(errno);
    close();
    return false;
  }
  if (r == 0) return true;
  if (buf_.size() < (size_t(1) << 18)) buf_.resize(size_t(1) << 18);
  // Read what is there, up to 64 MiB per call so that a viewer's frame loop stays responsive.
  size_t got_now = 0;
  while (got_now < (size_t(64) << 20)) {
    const ssize_t n = ::recv(fd_, buf_.data(), buf_.size(), MSG_DONTWAIT);
    if (n > 0) {
      got_now += static_cast<size_t>(n);
      received_ += static_cast<uint64_t>(n);
      if (!decoder->feed(buf_.data(), static_cast<size_t>(n))) {
        error_ = decoder->error();
        close();
        return false;
      }
      if (decoder->complete()) {
        close();  // END: the stream is over (the server closes its end too)
        return false;
      }
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    // The peer closed (or reset) the connection before END.
    const int e = n < 0 ? errno : 0;
    close();
    if (received_ == 0)
      error_ = "the run closed the connection without sending anything (another viewer is attached to it, or it "
               "was ending)";
    else
      error_ = "the run closed the stream before its end";
    if (e != 0 && e != ECONNRESET) error_ += std::string(" (") + errno_text(e) + ")";
    return false;
  }
  return true;
}

}  // namespace trace
}  // namespace cclab
