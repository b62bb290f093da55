// tests/trace/trace_e2e_test.cc - traces written by real runs: `cclab sim --trace`, CCLAB_TRACE on the
// host backend (`cclab perf`), and the live stream of both (CCLAB_LIVE / `cclab sim --live`) compared
// with the trace file the same run writes.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "../cli/cli_test_util.h"
#include "graph/topo.h"
#include "trace/from_topo.h"
#include "trace/live.h"
#include "trace/trace.h"

namespace cclab {
namespace {

using cli_test::read_file;
using cli_test::run_command;
using cli_test::temp_path;

const std::string kCli = CCLAB_CLI_PATH;

trace::Trace read_or_fail(const std::string& path) {
  trace::Trace t;
  std::string err;
  EXPECT_TRUE(trace::read_trace(path, &t, &err)) << err;
  return t;
}

// As many steps receive on each connection (from, to, channel) of each collective as send on it, with
// the same bytes. (An event that both receives and sends records its send step, so steps are not
// compared here.)
void expect_sends_match_receives(const trace::Trace& t) {
  std::map<std::tuple<int, int, int, uint64_t>, std::pair<int, uint64_t>> sends, recvs;  // count, bytes
  for (const trace::Event& e : t.events) {
    if (e.send_peer >= 0) {
      auto& s = sends[{e.rank, e.send_peer, e.channel, e.op_count}];
      ++s.first;
      s.second += e.bytes;
    }
    if (e.recv_peer >= 0) {
      auto& r = recvs[{e.recv_peer, e.rank, e.channel, e.op_count}];
      ++r.first;
      r.second += e.bytes;
    }
  }
  EXPECT_FALSE(sends.empty());
  EXPECT_TRUE(sends == recvs);
}

// Every sending step has the route of its rank pair.
void expect_routes(const trace::Trace& t) {
  for (const trace::Event& e : t.events) {
    if (e.send_peer < 0) continue;
    ASSERT_GE(e.route, 0) << "rank " << e.rank << " -> " << e.send_peer;
    ASSERT_LT(e.route, static_cast<int>(t.routes.size()));
    EXPECT_EQ(t.routes[e.route].src, e.rank);
    EXPECT_EQ(t.routes[e.route].dst, e.send_peer);
    EXPECT_FALSE(t.routes[e.route].links.empty());
  }
}

// Wire bytes each link carried according to the LOAD section.
std::map<int, double> load_bytes(const trace::Trace& t) {
  std::map<int, double> out;
  for (const auto& s : t.load.series) {
    double b = 0;
    for (float g : s.gbs) b += static_cast<double>(g) * t.load.bin_us * 1e3;
    out[s.link] = b;
  }
  return out;
}

// The simulator's per-link bytes (`cclab sim --json`'s "links", by link of the topology model) summed
// onto the trace's links: the model's links as set_topology maps them (trace/from_topo.h), so that a
// GPU's links to every NVSwitch chip add up on its one link to the machine's crossbar. Checks that the
// model built here is the one the trace was made from (same names).
std::map<int, double> sim_bytes_by_trace_link(const nlohmann::json& j, const trace::Trace& t, const std::string& preset,
                                              int machines) {
  Topology topo;
  std::string err;
  EXPECT_TRUE(make_preset_topology(preset, machines, FabricSpec(), &topo, &err)) << err;
  const trace::TopoMapping m = trace::map_topology(topo);
  EXPECT_EQ(m.nodes, static_cast<int>(t.nodes.size()));
  EXPECT_EQ(m.links, static_cast<int>(t.links.size()));
  std::map<int, double> out;
  for (const auto& l : j["links"]) {
    const int link = l["link"].get<int>();
    if (link < 0 || link >= static_cast<int>(topo.links.size()) || m.link[link] < 0 ||
        m.link[link] >= static_cast<int>(t.links.size())) {
      ADD_FAILURE() << "link " << link << " " << l["name"];
      continue;
    }
    const TopoLink& k = topo.links[link];
    EXPECT_EQ(l["name"].get<std::string>(), topo.nodes[k.from].name + "->" + topo.nodes[k.to].name);
    const trace::Link& tl = t.links[m.link[link]];
    EXPECT_EQ(tl.from, m.node[k.from]);
    EXPECT_EQ(tl.to, m.node[k.to]);
    out[m.link[link]] += l["bytes"].get<double>();
  }
  return out;
}

TEST(SimTrace, MatchesTheRunItRecords) {
  const std::string tr = temp_path("e2e", "sim.cctrace"), js = temp_path("e2e", "sim.json");
  // Ring and Tree (^nvls): an NVLS step's traffic goes to the switch, which the trace's GPU-pair routes do
  // not carry (docs/visualiser.md), so its LOAD would not match the simulator's link table.
  const auto r = run_command(kCli, "sim all_reduce --topo dgx-h100 -b 1M -e 4M -f 4 --algo ^nvls --level step --no-progress --trace " +
                                       tr + " --json " + js,
                             "", "e2e");
  ASSERT_EQ(r.status, 0) << r.err;
  const trace::Trace t = read_or_fail(tr);
  const nlohmann::json j = nlohmann::json::parse(read_file(js));
  EXPECT_EQ(t.meta.backend, "sim");
  EXPECT_EQ(t.meta.clock, "simulated");
  EXPECT_EQ(t.meta.topo_name, "dgx-h100");
  EXPECT_EQ(t.meta.nranks, 8);
  ASSERT_EQ(t.ops.size(), 2u);
  ASSERT_EQ(j["rows"].size(), 2u);
  int gpus = 0;
  for (const trace::Node& n : t.nodes) gpus += n.kind == "gpu" && n.rank >= 0;
  EXPECT_EQ(gpus, 8);
  for (size_t i = 0; i < 2; ++i) {
    const trace::Op& o = t.ops[i];
    const auto& row = j["rows"][i];
    EXPECT_EQ(o.coll, CollKind::kAllReduce);
    EXPECT_EQ(o.bytes, row["bytes"].get<size_t>());
    EXPECT_EQ(o.algo, row["algo"].get<std::string>());
    EXPECT_EQ(o.proto, row["proto"].get<std::string>());
    EXPECT_EQ(o.nchannels, row["nchannels"].get<int>());
    EXPECT_NEAR(o.end_us - o.begin_us, row["time_us"].get<double>(), 1e-3);
    EXPECT_NEAR(o.busbw, row["busbw"].get<double>(), 1e-3 * o.busbw);
    // The op's steps lie inside it, on every rank and channel it used.
    std::set<std::pair<int, int>> lanes;
    for (const trace::Event& e : t.events) {
      if (e.op_count != o.op_count) continue;
      EXPECT_GE(e.begin_us, o.begin_us - 1e-3);
      EXPECT_LE(e.end_us, o.end_us + 1e-3);
      EXPECT_LE(e.begin_us, e.data_us + 1e-3);
      EXPECT_LE(e.data_us, e.end_us + 1e-3);
      lanes.insert({e.rank, e.channel});
    }
    EXPECT_EQ(lanes.size(), static_cast<size_t>(8 * o.nchannels));
  }
  ASSERT_FALSE(t.channels.empty());
  for (const trace::Channel& c : t.channels) {
    std::vector<int> ring = c.ring;
    std::sort(ring.begin(), ring.end());
    EXPECT_EQ(ring, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  }
  expect_sends_match_receives(t);
  expect_routes(t);
  // The LOAD section carries, link by link, the wire bytes the simulator counted on that link (on a
  // GPU's NVSwitch links: on all of them).
  const std::map<int, double> load = load_bytes(t);
  ASSERT_FALSE(j["links"].empty());
  const std::map<int, double> sim = sim_bytes_by_trace_link(j, t, "dgx-h100", 1);
  ASSERT_FALSE(sim.empty());
  for (const auto& l : sim) {
    const std::string name = t.nodes[t.links[l.first].from].name + "->" + t.nodes[t.links[l.first].to].name;
    ASSERT_TRUE(load.count(l.first)) << name;
    EXPECT_NEAR(load.at(l.first), l.second, 1e-4 * l.second) << name;
  }
  EXPECT_EQ(load.size(), sim.size());
  std::remove(tr.c_str());
  std::remove(js.c_str());
}

// A ring all_reduce on a DGX H100: the GPUs' NVLinks to the four NVSwitch chips are one crossbar, so
// no link of the trace runs above its capacity (the LOAD section spreads each step's bytes evenly over
// the time its data moved, so a bin may hold a little more than the instantaneous rate), and each GPU's
// up and down links to the crossbar carry what its rank sends and receives: 2 (n - 1) / n of the buffer.
TEST(SimTrace, NvSwitchCrossbarCarriesTheRing) {
  const std::string tr = temp_path("e2e", "ring.cctrace"), js = temp_path("e2e", "ring.json");
  const size_t bytes = size_t{1} << 30;
  const auto r = run_command(kCli, "sim all_reduce --topo dgx-h100 -b 1G -e 1G --algo ring --proto simple --level step "
                                   "--no-progress --trace " + tr + " --json " + js,
                             "", "e2e");
  ASSERT_EQ(r.status, 0) << r.err;
  const trace::Trace t = read_or_fail(tr);
  const nlohmann::json j = nlohmann::json::parse(read_file(js));
  ASSERT_EQ(t.ops.size(), 1u);
  EXPECT_EQ(t.ops[0].algo, "Ring");
  expect_routes(t);
  int sw = -1, nvs_nodes = 0;
  for (size_t i = 0; i < t.nodes.size(); ++i)
    if (t.nodes[i].kind == "nvswitch") {
      sw = static_cast<int>(i);
      ++nvs_nodes;
    }
  ASSERT_EQ(nvs_nodes, 1);
  EXPECT_EQ(t.nodes[sw].name, "m0.nvswitch");
  ASSERT_FALSE(t.load.series.empty());
  double peak_util = 0;
  const std::map<int, double> load = load_bytes(t);
  int crossbar_links = 0;
  for (const auto& s : t.load.series) {
    const trace::Link& l = t.links[s.link];
    const std::string name = t.nodes[l.from].name + "->" + t.nodes[l.to].name;
    float peak = 0;
    for (float g : s.gbs) peak = std::max(peak, g);
    ASSERT_GT(l.gbs, 0) << name;
    peak_util = std::max(peak_util, peak / l.gbs);
    EXPECT_LE(peak / l.gbs, 1.02) << name << ": peak " << peak << " GB/s of " << l.gbs;
    // Only the crossbar's links carry a one-machine ring.
    EXPECT_TRUE(l.from == sw || l.to == sw) << name;
    if (l.from == sw || l.to == sw) {
      ++crossbar_links;
      EXPECT_DOUBLE_EQ(l.gbs, 450.0) << name;
      EXPECT_NEAR(load.at(s.link), bytes * 2.0 * 7 / 8, 1e-4 * bytes) << name;
    }
  }
  EXPECT_EQ(crossbar_links, 16);
  // Busy: the crossbar links run near the simulator's rate most of the time.
  EXPECT_GT(peak_util, 0.5);
  std::printf("peak NVSwitch link utilisation: %.1f%%\n", 100 * peak_util);
  // And they agree with the simulator's own byte counts.
  const std::map<int, double> sim = sim_bytes_by_trace_link(j, t, "dgx-h100", 1);
  EXPECT_EQ(sim.size(), load.size());
  for (const auto& l : sim) {
    ASSERT_TRUE(load.count(l.first)) << l.first;
    EXPECT_NEAR(load.at(l.first), l.second, 1e-4 * l.second) << l.first;
  }
  std::remove(tr.c_str());
  std::remove(js.c_str());
}

TEST(HostTrace, PerfRunWithCclabTrace) {
  const std::string tr = temp_path("e2e", "host.cctrace");
  const auto r = run_command(kCli, "perf all_reduce -g 4 -b 1M -e 1M -n 2 -w 1 -c 0", "CCLAB_TRACE=" + tr, "e2e");
  ASSERT_EQ(r.status, 0) << r.err;
  const trace::Trace t = read_or_fail(tr);
  EXPECT_EQ(t.meta.backend, "host");
  EXPECT_EQ(t.meta.clock, "wall");
  EXPECT_EQ(t.meta.nranks, 4);
  // warmup + 2 timed, beside the small collectives cclab perf itself uses (timing, agreement)
  int measured = 0;
  for (const trace::Op& o : t.ops) {
    EXPECT_GT(o.end_us, o.begin_us);
    if (o.bytes != size_t{1} << 20) continue;
    ++measured;
    EXPECT_EQ(o.coll, CollKind::kAllReduce);
    EXPECT_GT(o.busbw, 0);
  }
  EXPECT_GE(measured, 3);
  // Ring all_reduce: every rank sends 2 (n - 1) / n of the buffer per collective.
  std::map<std::pair<uint64_t, int>, uint64_t> sent;
  for (const trace::Event& e : t.events)
    if (e.send_peer >= 0) sent[{e.op_count, e.rank}] += e.bytes;
  for (const trace::Op& o : t.ops) {
    if (o.algo != "Ring" || o.bytes != size_t{1} << 20) continue;
    for (int rank = 0; rank < 4; ++rank) EXPECT_EQ((sent[{o.op_count, rank}]), (size_t{1} << 20) * 6 / 4);
  }
  expect_sends_match_receives(t);
  expect_routes(t);
  EXPECT_FALSE(t.load.series.empty());
  std::remove(tr.c_str());
}

// Starts `cmd` (a shell command line) in the background; returns its pid.
pid_t spawn(const std::string& cmd) {
  const pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

// Reads the live stream of a run to its end.
trace::Trace watch(const std::string& sock) {
  trace::LiveClient cli;
  std::string err;
  EXPECT_TRUE(cli.connect(sock, 60, &err)) << err;
  trace::TraceStreamDecoder dec;
  while (cli.poll(&dec, 100)) {
  }
  EXPECT_TRUE(dec.complete()) << cli.error() << " " << dec.error();
  return dec.trace();
}

using EventKey = std::tuple<int, int, uint64_t, uint64_t, int, int, int, uint64_t, uint64_t, int64_t, int64_t>;
std::vector<EventKey> keys(const std::vector<trace::Event>& events) {
  std::vector<EventKey> out;
  for (const trace::Event& e : events)
    out.emplace_back(e.rank, e.channel, e.op_count, e.step, static_cast<int>(e.prim), e.send_peer, e.recv_peer,
                     e.offset, e.bytes, std::llround(e.begin_us * 1e3), std::llround(e.end_us * 1e3));
  std::sort(out.begin(), out.end());
  return out;
}

void expect_same_run(const trace::Trace& live, const trace::Trace& file) {
  EXPECT_EQ(live.meta.nranks, file.meta.nranks);
  EXPECT_EQ(live.nodes.size(), file.nodes.size());
  EXPECT_EQ(live.links.size(), file.links.size());
  EXPECT_EQ(live.channels.size(), file.channels.size());
  EXPECT_EQ(live.ops.size(), file.ops.size());
  ASSERT_EQ(live.events.size(), file.events.size());
  EXPECT_TRUE(keys(live.events) == keys(file.events));
}

TEST(Live, HostRunStreamsEveryStep) {
  const std::string sock = temp_path("e2e", "host.sock"), tr = temp_path("e2e", "live_host.cctrace");
  const pid_t pid = spawn("CCLAB_LIVE=" + sock + " CCLAB_LIVE_WAIT=60 CCLAB_TRACE=" + tr + " " + kCli +
                          " perf all_reduce -g 4 -b 256K -e 1M -f 4 -n 1 -w 0 -c 0 >/dev/null");
  const trace::Trace live = watch(sock);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const trace::Trace file = read_or_fail(tr);
  EXPECT_EQ(live.meta.backend, "host");
  expect_same_run(live, file);
  // Live order: each rank's and channel's steps arrive in the order they ran.
  std::map<std::pair<int, int>, double> last;
  for (const trace::Event& e : live.events) {
    auto& l = last[{e.rank, e.channel}];
    EXPECT_GE(e.begin_us, l);
    l = e.begin_us;
  }
  std::remove(tr.c_str());
}

TEST(Live, SimulatedRunStreamsEveryStep) {
  const std::string sock = temp_path("e2e", "sim.sock"), tr = temp_path("e2e", "live_sim.cctrace");
  const pid_t pid = spawn(kCli + " sim all_reduce --topo dgx-h100 -b 64K -e 1M -f 16 --no-progress --live " + sock +
                          " --live-wait 60 --trace " + tr + " >/dev/null");
  const trace::Trace live = watch(sock);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  const trace::Trace file = read_or_fail(tr);
  EXPECT_EQ(live.meta.backend, "sim");
  expect_same_run(live, file);
  std::remove(tr.c_str());
}

}  // namespace
}  // namespace cclab
