// runtime/bootstrap/socket.h - TCP sockets with bounded, abortable waits, socket addresses, and
// the choice of network interface (NCCL_SOCKET_IFNAME, NCCL_SOCKET_FAMILY).
//
// Every blocking call takes a Deadline: it returns kTimeout when the deadline passes and kAborted
// when the abort flag becomes nonzero, polling the flag at least every 100 ms. The functions report
// what happened as an IoResult and never log: the caller knows which rank and address were involved
// and writes the error message.
//
//   SocketAddress root;  socket_address_from_string("127.0.0.1:29500", &root);
//   Deadline wait(/*timeout_s=*/120, abort_flag);
//   Socket s;
//   IoResult r = Socket::connect(root, wait, &s);
//   if (r.ok()) r = s.send_all(&hello, sizeof(hello), wait);
//   if (!r.ok()) return report_error(ncclSystemError, "... %s", r.describe().c_str());
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cclab/nccl.h"

namespace cclab {

// An IPv4 or IPv6 socket address (port included), in network byte order. Fixed size and trivially
// copyable, so it travels inside ncclUniqueId and bootstrap messages as is.
union SocketAddress {
  sockaddr sa;
  sockaddr_in sin;
  sockaddr_in6 sin6;
};
static_assert(sizeof(SocketAddress) == 28, "SocketAddress must stay 28 bytes: it is part of the wire format");

SocketAddress socket_address_zero();
// sizeof(sockaddr_in) or sizeof(sockaddr_in6); 0 for an address of neither family.
socklen_t socket_address_length(const SocketAddress& addr);
int socket_address_port(const SocketAddress& addr);
void socket_address_set_port(SocketAddress* addr, int port);
bool socket_address_equal(const SocketAddress& a, const SocketAddress& b);
// "10.0.0.1:43121" or "[fd00::2]:43121".
std::string socket_address_to_string(const SocketAddress& addr);
// The address without the port: "10.0.0.1", "fd00::2".
std::string socket_address_ip(const SocketAddress& addr);
// Parses "ip:port", "[ipv6]:port" or "hostname:port" (as NCCL_COMM_ID). Returns ncclInvalidArgument
// with a message naming the string when it cannot.
ncclResult_t socket_address_from_string(const char* text, SocketAddress* out);

// ---- Waiting -------------------------------------------------------------------------------------

// A point in time after which a wait gives up, plus the flag that aborts it.
class Deadline {
 public:
  // `timeout_s`: seconds from now; <= 0 means no time limit (the abort flag still works).
  // `abort_flag`: may be nullptr; any nonzero value aborts.
  Deadline(double timeout_s, const std::atomic<int>* abort_flag);
  bool expired() const;
  bool aborted() const;
  // Milliseconds to pass to poll(): at most 100, so the abort flag is seen promptly; 0 once expired.
  int poll_ms() const;
  // The timeout this deadline was made with, for messages ("retried for 120 s"), in seconds.
  double timeout_s() const { return timeout_s_; }
  // Seconds left (a large number when there is no limit).
  double remaining_s() const;
  // A deadline that ends at the earlier of this one and `seconds` from now; same abort flag.
  Deadline capped(double seconds) const;
  const std::atomic<int>* abort_flag() const { return abort_flag_; }

 private:
  std::chrono::steady_clock::time_point end_;
  bool unlimited_;
  double timeout_s_;
  const std::atomic<int>* abort_flag_;
};

enum class IoStatus {
  kOk,
  kTimeout,  // the deadline passed
  kAborted,  // the abort flag was raised
  kClosed,   // the peer closed the connection (or reset it)
  kError,    // a system call failed; `err` holds errno
};

struct IoResult {
  IoStatus status = IoStatus::kOk;
  int err = 0;  // errno for kError (and the last connect error for a connect kTimeout)
  bool ok() const { return status == IoStatus::kOk; }
  // "timed out after 2 s", "aborted", "connection closed by peer", "Connection refused", ...
  std::string describe(double timeout_s) const;
  // The ncclResult_t NCCL would use: kAborted -> ncclInternalError, kClosed/kTimeout ->
  // ncclRemoteError (the other side went away or never answered), kError -> ncclSystemError.
  ncclResult_t code() const;
};

// ---- Sockets -------------------------------------------------------------------------------------

// A nonblocking TCP socket (close-on-exec, TCP_NODELAY); owns its descriptor. Movable, not copyable.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  ~Socket() { close(); }
  Socket(Socket&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;

  bool valid() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  void close();

  // Binds to `addr` (port 0: the kernel picks a free port) and listens. `bound` gets the address
  // with the actual port.
  static IoResult listen(const SocketAddress& addr, Socket* out, SocketAddress* bound);
  // Connects to `addr`. "Connection refused" and other transient errors (the listener is not up
  // yet) are retried, with a short backoff, until the deadline; then kTimeout with the last errno.
  static IoResult connect(const SocketAddress& addr, const Deadline& wait, Socket* out);
  // Waits for one incoming connection on a listening socket.
  IoResult accept(const Deadline& wait, Socket* out, SocketAddress* peer) const;

  // Sends or receives exactly `bytes` bytes.
  IoResult send_all(const void* data, size_t bytes, const Deadline& wait) const;
  IoResult recv_all(void* data, size_t bytes, const Deadline& wait) const;

 private:
  int fd_ = -1;
};

// Sends `send_bytes` on `tx` while receiving `recv_bytes` on `rx`, progressing both at once so that a
// ring of ranks that all send before they receive cannot deadlock on full socket buffers.
// `failed_tx` (optional) tells which side failed.
IoResult exchange(const Socket& tx, const void* send_data, size_t send_bytes, const Socket& rx, void* recv_data,
                  size_t recv_bytes, const Deadline& wait, bool* failed_tx = nullptr);

// ---- Interfaces ----------------------------------------------------------------------------------

struct NetInterface {
  std::string name;       // "eth0"
  SocketAddress addr;     // port 0
  SocketAddress netmask;  // same family as addr
};

// NCCL_SOCKET_IFNAME syntax: a comma list of name prefixes; a leading '^' excludes the listed
// interfaces instead, and '=' (after the '^', if any) makes the names exact instead of prefixes.
struct InterfaceSpec {
  bool exclude = false;
  bool exact = false;
  std::vector<std::string> names;
  static InterfaceSpec parse(const std::string& text);
  bool matches(const std::string& ifname) const;
};

// Every interface that has a usable address: up, IPv4 or IPv6 but not IPv6 link-local, and of
// `family` unless it is AF_UNSPEC. One entry per (interface, address), in getifaddrs order.
std::vector<NetInterface> list_interfaces(int family);

// "lo (127.0.0.1, ::1), eth0 (192.0.2.2)" - for error messages.
std::string describe_interfaces(const std::vector<NetInterface>& all);

// Chooses up to `max_count` interfaces (at most one address each), as NCCL does:
//   NCCL_SOCKET_IFNAME set: the interfaces it matches; none matching is an error whose message
//     names the setting and lists the interfaces that exist (NCCL fails silently here);
//   otherwise: ib* first, then the interface on the same subnet as `hint` (the NCCL_COMM_ID root, if
//     given), then anything but docker*, lo and virbr*, then docker*, then lo.
// NCCL_SOCKET_FAMILY (AF_INET or AF_INET6) restricts the address family. Does not log: callers
// say what they use the interface for ("Bootstrap : Using [0]eth0:192.0.2.2<0>").
ncclResult_t find_interfaces(int max_count, const SocketAddress* hint, std::vector<NetInterface>* out);

// "eth0:192.0.2.2<0>", NCCL's notation (the port in angle brackets).
std::string describe_interface(const NetInterface& itf);

}  // namespace cclab
