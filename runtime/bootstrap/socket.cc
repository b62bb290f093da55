// runtime/bootstrap/socket.cc - see socket.h.
#include "bootstrap/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

#include "base/log.h"
#include "base/param.h"

namespace cclab {

// ---- Addresses -----------------------------------------------------------------------------------

SocketAddress socket_address_zero() {
  SocketAddress a;
  memset(&a, 0, sizeof(a));
  return a;
}

socklen_t socket_address_length(const SocketAddress& addr) {
  if (addr.sa.sa_family == AF_INET) return sizeof(sockaddr_in);
  if (addr.sa.sa_family == AF_INET6) return sizeof(sockaddr_in6);
  return 0;
}

int socket_address_port(const SocketAddress& addr) {
  if (addr.sa.sa_family == AF_INET) return ntohs(addr.sin.sin_port);
  if (addr.sa.sa_family == AF_INET6) return ntohs(addr.sin6.sin6_port);
  return 0;
}

void socket_address_set_port(SocketAddress* addr, int port) {
  if (addr->sa.sa_family == AF_INET) addr->sin.sin_port = htons(static_cast<uint16_t>(port));
  if (addr->sa.sa_family == AF_INET6) addr->sin6.sin6_port = htons(static_cast<uint16_t>(port));
}

bool socket_address_equal(const SocketAddress& a, const SocketAddress& b) {
  if (a.sa.sa_family != b.sa.sa_family) return false;
  if (a.sa.sa_family == AF_INET) {
    return a.sin.sin_port == b.sin.sin_port && a.sin.sin_addr.s_addr == b.sin.sin_addr.s_addr;
  }
  if (a.sa.sa_family == AF_INET6) {
    return a.sin6.sin6_port == b.sin6.sin6_port && memcmp(&a.sin6.sin6_addr, &b.sin6.sin6_addr, 16) == 0;
  }
  return false;
}

std::string socket_address_ip(const SocketAddress& addr) {
  char buf[INET6_ADDRSTRLEN] = "?";
  if (addr.sa.sa_family == AF_INET) inet_ntop(AF_INET, &addr.sin.sin_addr, buf, sizeof(buf));
  if (addr.sa.sa_family == AF_INET6) inet_ntop(AF_INET6, &addr.sin6.sin6_addr, buf, sizeof(buf));
  return buf;
}

std::string socket_address_to_string(const SocketAddress& addr) {
  std::string port = std::to_string(socket_address_port(addr));
  if (addr.sa.sa_family == AF_INET6) return "[" + socket_address_ip(addr) + "]:" + port;
  return socket_address_ip(addr) + ":" + port;
}

ncclResult_t socket_address_from_string(const char* text, SocketAddress* out) {
  std::string s = text ? text : "";
  std::string host, port;
  if (!s.empty() && s[0] == '[') {
    size_t close = s.find(']');
    if (close == std::string::npos || close + 1 >= s.size() || s[close + 1] != ':') {
      return report_error(ncclInvalidArgument, "'%s' is not an address: expected [ipv6]:port", s.c_str());
    }
    host = s.substr(1, close - 1);
    port = s.substr(close + 2);
  } else {
    size_t colon = s.rfind(':');
    if (colon == std::string::npos || colon == 0) {
      return report_error(ncclInvalidArgument, "'%s' is not an address: expected ip:port, [ipv6]:port or host:port",
                          s.c_str());
    }
    host = s.substr(0, colon);
    port = s.substr(colon + 1);
  }
  int64_t port_num = 0;
  if (!parse_param_int(port.c_str(), &port_num) || port_num < 1 || port_num > 65535) {
    return report_error(ncclInvalidArgument, "'%s': port '%s' is not a number in 1..65535", s.c_str(), port.c_str());
  }
  addrinfo hints;
  memset(&hints, 0, sizeof(hints));
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV;
  addrinfo* res = nullptr;
  int rc = getaddrinfo(host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0 || res == nullptr) {
    return report_error(ncclInvalidArgument, "'%s': cannot resolve host '%s': %s", s.c_str(), host.c_str(),
                        gai_strerror(rc));
  }
  *out = socket_address_zero();
  memcpy(out, res->ai_addr, std::min<size_t>(res->ai_addrlen, sizeof(SocketAddress)));
  freeaddrinfo(res);
  return ncclSuccess;
}

// ---- Deadline / IoResult -------------------------------------------------------------------------

Deadline::Deadline(double timeout_s, const std::atomic<int>* abort_flag)
    : end_(std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                  std::chrono::duration<double>(timeout_s > 0 ? timeout_s : 0))),
      unlimited_(timeout_s <= 0),
      timeout_s_(timeout_s),
      abort_flag_(abort_flag) {}

bool Deadline::expired() const { return !unlimited_ && std::chrono::steady_clock::now() >= end_; }

bool Deadline::aborted() const { return abort_flag_ != nullptr && abort_flag_->load(std::memory_order_acquire) != 0; }

double Deadline::remaining_s() const {
  if (unlimited_) return 1e9;
  return std::max(0.0, std::chrono::duration<double>(end_ - std::chrono::steady_clock::now()).count());
}

int Deadline::poll_ms() const {
  constexpr int kAbortPollMs = 100;  // how late an abort may be noticed
  if (unlimited_) return kAbortPollMs;
  double ms = remaining_s() * 1000.0;
  if (ms <= 0) return 0;
  return std::max(1, std::min(kAbortPollMs, static_cast<int>(ms + 0.999)));
}

Deadline Deadline::capped(double seconds) const {
  Deadline d = *this;
  auto end = std::chrono::steady_clock::now() +
             std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
  if (d.unlimited_ || end < d.end_) d.end_ = end;
  d.unlimited_ = false;
  return d;
}

std::string IoResult::describe(double timeout_s) const {
  char buf[64];
  switch (status) {
    case IoStatus::kOk:
      return "success";
    case IoStatus::kTimeout:
      if (err) {
        snprintf(buf, sizeof(buf), " (retried for %g s)", timeout_s);
        return strerror(err) + std::string(buf);
      }
      snprintf(buf, sizeof(buf), "timed out after %g s", timeout_s);
      return buf;
    case IoStatus::kAborted:
      return "aborted (abort flag raised)";
    case IoStatus::kClosed:
      return "connection closed by peer";
    case IoStatus::kError:
      return strerror(err);
  }
  return "?";
}

ncclResult_t IoResult::code() const {
  switch (status) {
    case IoStatus::kOk:
      return ncclSuccess;
    case IoStatus::kAborted:
      return ncclInternalError;
    case IoStatus::kTimeout:
    case IoStatus::kClosed:
      return ncclRemoteError;
    case IoStatus::kError:
      return ncclSystemError;
  }
  return ncclInternalError;
}

namespace {

IoResult io_ok() { return IoResult{}; }
IoResult io_status(IoStatus s, int err = 0) {
  IoResult r;
  r.status = s;
  r.err = err;
  return r;
}

void set_socket_options(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));  // bootstrap messages are small
}

// Waits until `fd` is ready for `events` (or has an error or hang-up: the next call reports it).
IoResult wait_fd(int fd, short events, const Deadline& wait) {
  while (true) {
    if (wait.aborted()) return io_status(IoStatus::kAborted);
    if (wait.expired()) return io_status(IoStatus::kTimeout);
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, wait.poll_ms());
    if (n > 0) return io_ok();
    if (n < 0 && errno != EINTR) return io_status(IoStatus::kError, errno);
  }
}

bool is_transient_connect_error(int err) {
  switch (err) {
    case ECONNREFUSED:
    case ETIMEDOUT:
    case ENETUNREACH:
    case EHOSTUNREACH:
    case ECONNRESET:
    case EAGAIN:
    case EADDRNOTAVAIL:
      return true;
    default:
      return false;
  }
}

bool is_closed_error(int err) { return err == ECONNRESET || err == EPIPE || err == ENOTCONN; }

// One nonblocking step of send; returns bytes sent (0 when it would block) or -1 with *result set.
ssize_t try_send(int fd, const char* p, size_t n, IoResult* result) {
  while (true) {
    ssize_t k = ::send(fd, p, n, MSG_NOSIGNAL);
    if (k >= 0) return k;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
    *result = io_status(is_closed_error(errno) ? IoStatus::kClosed : IoStatus::kError, errno);
    return -1;
  }
}

// One nonblocking step of recv; returns bytes received (0 when it would block) or -1 with *result
// set (kClosed on end of stream).
ssize_t try_recv(int fd, char* p, size_t n, IoResult* result) {
  while (true) {
    ssize_t k = ::recv(fd, p, n, 0);
    if (k > 0) return k;
    if (k == 0) {
      *result = io_status(IoStatus::kClosed);
      return -1;
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
    *result = io_status(is_closed_error(errno) ? IoStatus::kClosed : IoStatus::kError, errno);
    return -1;
  }
}

}  // namespace

// ---- Socket --------------------------------------------------------------------------------------

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    close();
    fd_ = other.fd_;
    other.fd_ = -1;
  }
  return *this;
}

void Socket::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

IoResult Socket::listen(const SocketAddress& addr, Socket* out, SocketAddress* bound) {
  int fd = ::socket(addr.sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return io_status(IoStatus::kError, errno);
  Socket s(fd);
  // A fixed port (NCCL_COMM_ID) must be reusable right after the previous run's sockets closed.
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd, &addr.sa, socket_address_length(addr)) != 0) return io_status(IoStatus::kError, errno);
  if (::listen(fd, SOMAXCONN) != 0) return io_status(IoStatus::kError, errno);
  SocketAddress actual = socket_address_zero();
  socklen_t len = sizeof(actual);
  if (::getsockname(fd, &actual.sa, &len) != 0) return io_status(IoStatus::kError, errno);
  if (bound) *bound = actual;
  *out = std::move(s);
  return io_ok();
}

IoResult Socket::connect(const SocketAddress& addr, const Deadline& wait, Socket* out) {
  int last_err = 0;
  int backoff_ms = 1;
  while (true) {
    if (wait.aborted()) return io_status(IoStatus::kAborted);
    if (wait.expired()) return io_status(IoStatus::kTimeout, last_err);
    int fd = ::socket(addr.sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) return io_status(IoStatus::kError, errno);
    Socket s(fd);
    set_socket_options(fd);
    int err = 0;
    if (::connect(fd, &addr.sa, socket_address_length(addr)) != 0) {
      err = errno;
      if (err == EINPROGRESS || err == EINTR) {
        IoResult r = wait_fd(fd, POLLOUT, wait);
        if (r.status == IoStatus::kTimeout) return io_status(IoStatus::kTimeout, last_err ? last_err : ETIMEDOUT);
        if (!r.ok()) return r;
        socklen_t len = sizeof(err);
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      }
    }
    if (err == 0) {
      *out = std::move(s);
      return io_ok();
    }
    if (!is_transient_connect_error(err)) return io_status(IoStatus::kError, err);
    last_err = err;
    // The listener may not be up yet (or its backlog is full): back off and try again.
    s.close();
    double sleep_ms = std::min<double>(backoff_ms, wait.remaining_s() * 1000.0);
    if (sleep_ms > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(sleep_ms));
    backoff_ms = std::min(backoff_ms * 2, 100);
  }
}

IoResult Socket::accept(const Deadline& wait, Socket* out, SocketAddress* peer) const {
  while (true) {
    IoResult r = wait_fd(fd_, POLLIN, wait);
    if (!r.ok()) return r;
    SocketAddress from = socket_address_zero();
    socklen_t len = sizeof(from);
    int fd = ::accept4(fd_, &from.sa, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      set_socket_options(fd);
      if (peer) *peer = from;
      *out = Socket(fd);
      return io_ok();
    }
    // The connection may have gone away between poll and accept; that is not our error.
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED || errno == EPROTO) {
      continue;
    }
    return io_status(IoStatus::kError, errno);
  }
}

IoResult Socket::send_all(const void* data, size_t bytes, const Deadline& wait) const {
  const char* p = static_cast<const char*>(data);
  size_t done = 0;
  while (done < bytes) {
    IoResult r;
    ssize_t k = try_send(fd_, p + done, bytes - done, &r);
    if (k < 0) return r;
    done += static_cast<size_t>(k);
    if (done < bytes && k == 0) {
      r = wait_fd(fd_, POLLOUT, wait);
      if (!r.ok()) return r;
    }
  }
  return io_ok();
}

IoResult Socket::recv_all(void* data, size_t bytes, const Deadline& wait) const {
  char* p = static_cast<char*>(data);
  size_t done = 0;
  while (done < bytes) {
    IoResult r;
    ssize_t k = try_recv(fd_, p + done, bytes - done, &r);
    if (k < 0) return r;
    done += static_cast<size_t>(k);
    if (done < bytes && k == 0) {
      r = wait_fd(fd_, POLLIN, wait);
      if (!r.ok()) return r;
    }
  }
  return io_ok();
}

IoResult exchange(const Socket& tx, const void* send_data, size_t send_bytes, const Socket& rx, void* recv_data,
                  size_t recv_bytes, const Deadline& wait, bool* failed_tx) {
  const char* sp = static_cast<const char*>(send_data);
  char* rp = static_cast<char*>(recv_data);
  size_t sent = 0, received = 0;
  if (failed_tx) *failed_tx = false;
  while (sent < send_bytes || received < recv_bytes) {
    IoResult r;
    if (sent < send_bytes) {
      ssize_t k = try_send(tx.fd(), sp + sent, send_bytes - sent, &r);
      if (k < 0) {
        if (failed_tx) *failed_tx = true;
        return r;
      }
      sent += static_cast<size_t>(k);
    }
    if (received < recv_bytes) {
      ssize_t k = try_recv(rx.fd(), rp + received, recv_bytes - received, &r);
      if (k < 0) return r;
      received += static_cast<size_t>(k);
    }
    if (sent == send_bytes && received == recv_bytes) break;
    if (wait.aborted()) return io_status(IoStatus::kAborted);
    if (wait.expired()) {
      if (failed_tx) *failed_tx = received == recv_bytes;
      return io_status(IoStatus::kTimeout);
    }
    pollfd p[2];
    nfds_t n = 0;
    if (sent < send_bytes) p[n++] = pollfd{tx.fd(), POLLOUT, 0};
    if (received < recv_bytes) p[n++] = pollfd{rx.fd(), POLLIN, 0};
    if (::poll(p, n, wait.poll_ms()) < 0 && errno != EINTR) return io_status(IoStatus::kError, errno);
  }
  return io_ok();
}

// ---- Interfaces ----------------------------------------------------------------------------------

InterfaceSpec InterfaceSpec::parse(const std::string& text) {
  InterfaceSpec spec;
  size_t i = 0;
  if (i < text.size() && text[i] == '^') {
    spec.exclude = true;
    ++i;
  }
  if (i < text.size() && text[i] == '=') {
    spec.exact = true;
    ++i;
  }
  std::string rest = text.substr(i);
  size_t start = 0;
  while (start <= rest.size()) {
    size_t end = rest.find(',', start);
    if (end == std::string::npos) end = rest.size();
    std::string name = rest.substr(start, end - start);
    if (!name.empty()) spec.names.push_back(name);
    start = end + 1;
  }
  return spec;
}

bool InterfaceSpec::matches(const std::string& ifname) const {
  bool listed = false;
  for (const auto& n : names) {
    if (exact ? ifname == n : ifname.compare(0, n.size(), n) == 0) listed = true;
  }
  return exclude ? !listed : listed;
}

std::vector<NetInterface> list_interfaces(int family) {
  std::vector<NetInterface> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return out;
  for (ifaddrs* ifa = list; ifa != nullptr; ifa = ifa->ifa_next) {
    if (ifa->ifa_addr == nullptr || !(ifa->ifa_flags & IFF_UP)) continue;
    int f = ifa->ifa_addr->sa_family;
    if (f != AF_INET && f != AF_INET6) continue;
    if (family != AF_UNSPEC && f != family) continue;
    NetInterface itf;
    itf.name = ifa->ifa_name;
    itf.addr = socket_address_zero();
    itf.netmask = socket_address_zero();
    size_t len = f == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    memcpy(&itf.addr, ifa->ifa_addr, len);
    if (ifa->ifa_netmask) memcpy(&itf.netmask, ifa->ifa_netmask, len);
    // Link-local IPv6 addresses need a scope id to be reachable; NCCL skips them too.
    if (f == AF_INET6 && IN6_IS_ADDR_LINKLOCAL(&itf.addr.sin6.sin6_addr)) continue;
    socket_address_set_port(&itf.addr, 0);
    out.push_back(itf);
  }
  freeifaddrs(list);
  return out;
}

std::string describe_interfaces(const std::vector<NetInterface>& all) {
  std::vector<std::pair<std::string, std::string>> by_name;  // name -> "ip, ip"
  for (const auto& itf : all) {
    auto it = std::find_if(by_name.begin(), by_name.end(), [&](const auto& p) { return p.first == itf.name; });
    if (it == by_name.end()) {
      by_name.emplace_back(itf.name, socket_address_ip(itf.addr));
    } else {
      it->second += ", " + socket_address_ip(itf.addr);
    }
  }
  std::string out;
  for (const auto& p : by_name) out += (out.empty() ? "" : ", ") + p.first + " (" + p.second + ")";
  return out.empty() ? "none" : out;
}

std::string describe_interface(const NetInterface& itf) {
  return itf.name + ":" + socket_address_ip(itf.addr) + "<" + std::to_string(socket_address_port(itf.addr)) + ">";
}

namespace {

bool same_subnet(const NetInterface& itf, const SocketAddress& hint) {
  if (itf.addr.sa.sa_family != hint.sa.sa_family) return false;
  if (hint.sa.sa_family == AF_INET) {
    uint32_t mask = itf.netmask.sin.sin_addr.s_addr;
    return (itf.addr.sin.sin_addr.s_addr & mask) == (hint.sin.sin_addr.s_addr & mask);
  }
  const uint8_t* a = itf.addr.sin6.sin6_addr.s6_addr;
  const uint8_t* h = hint.sin6.sin6_addr.s6_addr;
  const uint8_t* m = itf.netmask.sin6.sin6_addr.s6_addr;
  for (int i = 0; i < 16; ++i) {
    if ((a[i] & m[i]) != (h[i] & m[i])) return false;
  }
  return true;
}

// Appends the interfaces accepted by `pred` (first address of each name only) up to max_count.
template <typename Pred>
void pick(const std::vector<NetInterface>& all, int max_count, Pred pred, std::vector<NetInterface>* out) {
  for (const auto& itf : all) {
    if (static_cast<int>(out->size()) >= max_count) return;
    if (!pred(itf)) continue;
    bool have = std::any_of(out->begin(), out->end(), [&](const NetInterface& o) { return o.name == itf.name; });
    if (!have) out->push_back(itf);
  }
}

}  // namespace

ncclResult_t find_interfaces(int max_count, const SocketAddress* hint, std::vector<NetInterface>* out) {
  out->clear();
  int family = AF_UNSPEC;
  std::string family_text = param_str("NCCL_SOCKET_FAMILY", nullptr);
  if (family_text == "AF_INET") {
    family = AF_INET;
  } else if (family_text == "AF_INET6") {
    family = AF_INET6;
  } else if (!family_text.empty()) {
    return report_error(ncclInvalidUsage, "NCCL_SOCKET_FAMILY=%s: expected AF_INET or AF_INET6", family_text.c_str());
  }
  std::vector<NetInterface> all = list_interfaces(family);
  std::string family_note = family == AF_UNSPEC ? "" : " with an " + family_text + " address (NCCL_SOCKET_FAMILY)";

  std::string ifname = param_str("NCCL_SOCKET_IFNAME", nullptr);
  if (!ifname.empty()) {
    InterfaceSpec spec = InterfaceSpec::parse(ifname);
    pick(
        all, max_count, [&](const NetInterface& i) { return spec.matches(i.name); }, out);
    if (out->empty()) {
      return report_error(ncclInvalidUsage,
                          "NCCL_SOCKET_IFNAME=%s matches no network interface%s; interfaces present: %s",
                          ifname.c_str(), family_note.c_str(), describe_interfaces(list_interfaces(AF_UNSPEC)).c_str());
    }
    return ncclSuccess;
  }

  // NCCL's default order; each step only runs when the previous ones found nothing.
  pick(
      all, max_count, [](const NetInterface& i) { return i.name.compare(0, 2, "ib") == 0; }, out);
  if (out->empty() && hint != nullptr) {
    pick(
        all, max_count, [&](const NetInterface& i) { return same_subnet(i, *hint); }, out);
  }
  if (out->empty()) {
    InterfaceSpec spec = InterfaceSpec::parse("^docker,lo,virbr");
    pick(
        all, max_count, [&](const NetInterface& i) { return spec.matches(i.name); }, out);
  }
  if (out->empty()) {
    pick(
        all, max_count, [](const NetInterface& i) { return i.name.compare(0, 6, "docker") == 0; }, out);
  }
  if (out->empty()) {
    pick(
        all, max_count, [](const NetInterface& i) { return i.name.compare(0, 2, "lo") == 0; }, out);
  }
  if (out->empty()) {
    return report_error(ncclSystemError, "no usable network interface%s found; interfaces present: %s",
                        family_note.c_str(), describe_interfaces(list_interfaces(AF_UNSPEC)).c_str());
  }
  return ncclSuccess;
}

}  // namespace cclab
