// tests/bootstrap/socket_test.cc - addresses, NCCL_SOCKET_IFNAME matching, interface choice, and the
// bounded waits of Socket (timeouts, abort flag, simultaneous exchange). Loopback only.
#include "bootstrap/socket.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "base/log.h"
#include "test_env.h"

namespace cclab {
namespace {

using testing_env::ScopedEnv;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// 127.0.0.1 with `port` (0: any free port when listening).
SocketAddress loopback(int port) {
  SocketAddress a;
  EXPECT_EQ(socket_address_from_string("127.0.0.1:1", &a), ncclSuccess);
  socket_address_set_port(&a, port);
  return a;
}

TEST(SocketAddress, ParseAndFormat) {
  SocketAddress a;
  ASSERT_EQ(socket_address_from_string("127.0.0.1:43121", &a), ncclSuccess);
  EXPECT_EQ(a.sa.sa_family, AF_INET);
  EXPECT_EQ(socket_address_port(a), 43121);
  EXPECT_EQ(socket_address_to_string(a), "127.0.0.1:43121");
  ASSERT_EQ(socket_address_from_string("[::1]:80", &a), ncclSuccess);
  EXPECT_EQ(a.sa.sa_family, AF_INET6);
  EXPECT_EQ(socket_address_to_string(a), "[::1]:80");
  socket_address_set_port(&a, 81);
  EXPECT_EQ(socket_address_port(a), 81);
}

TEST(SocketAddress, RejectsBadStringsWithMessage) {
  SocketAddress a;
  EXPECT_EQ(socket_address_from_string("127.0.0.1", &a), ncclInvalidArgument);
  EXPECT_NE(std::string(last_error()).find("'127.0.0.1'"), std::string::npos) << last_error();
  EXPECT_EQ(socket_address_from_string("127.0.0.1:0", &a), ncclInvalidArgument);
  EXPECT_EQ(socket_address_from_string("127.0.0.1:99999", &a), ncclInvalidArgument);
  EXPECT_EQ(socket_address_from_string("127.0.0.1:http", &a), ncclInvalidArgument);
  EXPECT_EQ(socket_address_from_string("[::1:80", &a), ncclInvalidArgument);
}

TEST(InterfaceSpec, PrefixExactAndExclude) {
  InterfaceSpec p = InterfaceSpec::parse("eth,ib");
  EXPECT_TRUE(p.matches("eth0"));
  EXPECT_TRUE(p.matches("ib1"));
  EXPECT_FALSE(p.matches("lo"));
  InterfaceSpec e = InterfaceSpec::parse("=eth0");
  EXPECT_TRUE(e.matches("eth0"));
  EXPECT_FALSE(e.matches("eth01"));
  InterfaceSpec x = InterfaceSpec::parse("^docker,lo");
  EXPECT_FALSE(x.matches("docker0"));
  EXPECT_FALSE(x.matches("lo"));
  EXPECT_TRUE(x.matches("eth0"));
  InterfaceSpec xe = InterfaceSpec::parse("^=eth0");
  EXPECT_FALSE(xe.matches("eth0"));
  EXPECT_TRUE(xe.matches("eth00"));
}

TEST(Interfaces, LoopbackIsListed) {
  std::vector<NetInterface> all = list_interfaces(AF_INET);
  bool found = false;
  for (const auto& i : all) found = found || (i.name == "lo" && socket_address_ip(i.addr) == "127.0.0.1");
  EXPECT_TRUE(found) << describe_interfaces(all);
}

TEST(Interfaces, IfnameLoSelectsLoopback) {
  ScopedEnv env;
  env.set("NCCL_SOCKET_IFNAME", "lo");
  env.set("NCCL_SOCKET_FAMILY", "AF_INET");
  std::vector<NetInterface> ifs;
  ASSERT_EQ(find_interfaces(4, nullptr, &ifs), ncclSuccess) << last_error();
  ASSERT_EQ(ifs.size(), 1u);
  EXPECT_EQ(describe_interface(ifs[0]), "lo:127.0.0.1<0>");
}

TEST(Interfaces, ExactMatchAndExclusion) {
  ScopedEnv env;
  env.set("NCCL_SOCKET_FAMILY", "AF_INET");
  env.set("NCCL_SOCKET_IFNAME", "=lo");
  std::vector<NetInterface> ifs;
  ASSERT_EQ(find_interfaces(8, nullptr, &ifs), ncclSuccess);
  ASSERT_EQ(ifs.size(), 1u);
  EXPECT_EQ(ifs[0].name, "lo");
  env.set("NCCL_SOCKET_IFNAME", "^lo");
  ifs.clear();
  if (find_interfaces(8, nullptr, &ifs) == ncclSuccess) {
    for (const auto& i : ifs) EXPECT_NE(i.name, "lo");
  }
}

TEST(Interfaces, MissingInterfaceIsAClearError) {
  ScopedEnv env;
  env.set("NCCL_SOCKET_IFNAME", "doesnotexist0");
  std::vector<NetInterface> ifs;
  EXPECT_EQ(find_interfaces(1, nullptr, &ifs), ncclInvalidUsage);
  std::string err = last_error();
  EXPECT_NE(err.find("NCCL_SOCKET_IFNAME=doesnotexist0 matches no network interface"), std::string::npos) << err;
  EXPECT_NE(err.find("lo (127.0.0.1"), std::string::npos) << err;  // lists what exists
}

TEST(Interfaces, BadFamilyIsAClearError) {
  ScopedEnv env;
  env.set("NCCL_SOCKET_FAMILY", "AF_UNIX");
  std::vector<NetInterface> ifs;
  EXPECT_EQ(find_interfaces(1, nullptr, &ifs), ncclInvalidUsage);
  EXPECT_NE(std::string(last_error()).find("NCCL_SOCKET_FAMILY=AF_UNIX"), std::string::npos) << last_error();
}

TEST(Interfaces, DefaultOrderPicksSomething) {
  // No traffic here: only the choice is checked.
  ScopedEnv env;
  env.unset("NCCL_SOCKET_IFNAME");
  env.unset("NCCL_SOCKET_FAMILY");
  std::vector<NetInterface> ifs;
  ASSERT_EQ(find_interfaces(1, nullptr, &ifs), ncclSuccess) << last_error();
  ASSERT_EQ(ifs.size(), 1u);
  // lo comes last: it is only chosen when nothing else has an address.
  bool only_lo = true;
  for (const auto& i : list_interfaces(AF_UNSPEC)) only_lo = only_lo && i.name.compare(0, 2, "lo") == 0;
  if (!only_lo) {
    EXPECT_NE(ifs[0].name, "lo");
  }
  // The root's subnet wins over the generic order when no ib* interface exists.
  SocketAddress hint = loopback(1);
  bool have_ib = false;
  for (const auto& i : list_interfaces(AF_UNSPEC)) have_ib = have_ib || i.name.compare(0, 2, "ib") == 0;
  if (!have_ib) {
    ASSERT_EQ(find_interfaces(1, &hint, &ifs), ncclSuccess);
    EXPECT_EQ(ifs[0].name, "lo");
  }
}

TEST(Socket, ConnectAcceptSendRecv) {
  Socket listener;
  SocketAddress bound;
  SocketAddress any = loopback(0);
  ASSERT_TRUE(Socket::listen(any, &listener, &bound).ok());
  EXPECT_NE(socket_address_port(bound), 0);
  Socket client;
  ASSERT_TRUE(Socket::connect(bound, Deadline(5, nullptr), &client).ok());
  Socket server;
  ASSERT_TRUE(listener.accept(Deadline(5, nullptr), &server, nullptr).ok());
  const char msg[] = "hello";
  ASSERT_TRUE(client.send_all(msg, sizeof(msg), Deadline(5, nullptr)).ok());
  char got[sizeof(msg)] = {};
  ASSERT_TRUE(server.recv_all(got, sizeof(got), Deadline(5, nullptr)).ok());
  EXPECT_STREQ(got, "hello");
  client.close();
  IoResult r = server.recv_all(got, 1, Deadline(5, nullptr));
  EXPECT_EQ(r.status, IoStatus::kClosed);
  EXPECT_EQ(r.code(), ncclRemoteError);
}

TEST(Socket, ConnectRefusedRetriesUntilDeadline) {
  // A port that was free a moment ago: nothing listens there.
  SocketAddress any = loopback(0);
  SocketAddress bound;
  {
    Socket l;
    ASSERT_TRUE(Socket::listen(any, &l, &bound).ok());
  }
  auto t0 = Clock::now();
  Socket s;
  IoResult r = Socket::connect(bound, Deadline(0.3, nullptr), &s);
  double dt = seconds_since(t0);
  EXPECT_EQ(r.status, IoStatus::kTimeout);
  EXPECT_EQ(r.err, ECONNREFUSED);
  EXPECT_GE(dt, 0.25);
  EXPECT_LT(dt, 1.5);
  EXPECT_EQ(r.describe(0.3), "Connection refused (retried for 0.3 s)");
}

TEST(Socket, AcceptTimesOut) {
  SocketAddress any = loopback(0);
  Socket l;
  ASSERT_TRUE(Socket::listen(any, &l, nullptr).ok());
  auto t0 = Clock::now();
  Socket s;
  IoResult r = l.accept(Deadline(0.2, nullptr), &s, nullptr);
  EXPECT_EQ(r.status, IoStatus::kTimeout);
  EXPECT_LT(seconds_since(t0), 1.0);
}

TEST(Socket, AbortFlagUnblocksPromptly) {
  SocketAddress any = loopback(0);
  Socket l;
  ASSERT_TRUE(Socket::listen(any, &l, nullptr).ok());
  std::atomic<int> abort_flag{0};
  std::thread raiser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    abort_flag.store(1);
  });
  auto t0 = Clock::now();
  Socket s;
  IoResult r = l.accept(Deadline(30, &abort_flag), &s, nullptr);
  double dt = seconds_since(t0);
  raiser.join();
  EXPECT_EQ(r.status, IoStatus::kAborted);
  EXPECT_EQ(r.code(), ncclInternalError);
  EXPECT_LT(dt, 0.2 + 0.35);
}

TEST(Socket, ExchangeBothWaysDoesNotDeadlock) {
  // Two ranks that send 8 MiB to each other before receiving would deadlock with blocking send_all;
  // exchange progresses both directions.
  SocketAddress any = loopback(0);
  Socket l;
  SocketAddress bound;
  ASSERT_TRUE(Socket::listen(any, &l, &bound).ok());
  Socket a_tx, b_rx, b_tx, a_rx;
  ASSERT_TRUE(Socket::connect(bound, Deadline(5, nullptr), &a_tx).ok());
  ASSERT_TRUE(l.accept(Deadline(5, nullptr), &b_rx, nullptr).ok());
  ASSERT_TRUE(Socket::connect(bound, Deadline(5, nullptr), &b_tx).ok());
  ASSERT_TRUE(l.accept(Deadline(5, nullptr), &a_rx, nullptr).ok());
  const size_t n = 8 << 20;
  std::vector<char> a_out(n, 'a'), b_out(n, 'b'), a_in(n), b_in(n);
  IoResult ra, rb;
  std::thread tb([&] { rb = exchange(b_tx, b_out.data(), n, b_rx, b_in.data(), n, Deadline(20, nullptr)); });
  ra = exchange(a_tx, a_out.data(), n, a_rx, a_in.data(), n, Deadline(20, nullptr));
  tb.join();
  ASSERT_TRUE(ra.ok());
  ASSERT_TRUE(rb.ok());
  EXPECT_EQ(a_in, b_out);
  EXPECT_EQ(b_in, a_out);
}

}  // namespace
}  // namespace cclab
