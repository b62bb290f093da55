// tests/trace/trace_chrome_test.cc - the Chrome/Perfetto export (trace/chrome.h) and `cclab trace`
// (runtime/cli/trace_cmd.h): a small but complete trace (4 ranks on one NVSwitch, 2 ring channels, a
// Simple and an LL ring all_reduce, every step with its route, LOAD from the steps) is written to a file,
// run through `cclab trace export/info/dump`, and what comes out is checked against the trace's events
// and against what the generator knows (which step receives which send).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "../cli/cli_test_util.h"
#include "trace/chrome.h"
#include "trace/trace.h"
#include "trace_cmd.h"

namespace cclab {
namespace {

using json = nlohmann::json;
using cli_test::lines_of;
using cli_test::fields_of;
using cli_test::read_file;
using cli_test::temp_path;

constexpr int kRanks = 4;
constexpr int kChannels = 2;
constexpr int kLoopPrims = 2 * kRanks - 1;  // send, n-2 x recvReduceSend, recvReduceCopySend, n-2 x recvCopySend, recv

// A step's identity in the trace and in the export: (rank, channel, op, step, primitive).
using StepId = std::tuple<int, int, uint64_t, uint64_t, std::string>;

StepId id_of(const trace::Event& e) {
  return StepId{e.rank, e.channel, e.op_count, e.step, trace::prim_label(e.prim)};
}

int64_t ns(double us) { return std::llround(us * 1000.0); }

struct Fixture {
  trace::Trace trace;
  std::map<StepId, StepId> receiver_of;  // each sending step -> the step that receives its slice
};

// The ring all_reduce of cclab's kernels, one loop per channel: each rank's steps on a channel, with
// per-connection FIFO steps (a step records its send connection's step when it sends, else its receive
// connection's), offsets, bytes, routes and times.
Fixture make_fixture() {
  Fixture f;
  trace::Trace& t = f.trace;
  t.meta.tool = "cclab test";
  t.meta.backend = "sim";
  t.meta.topo_name = "test-4gpu";
  t.meta.topo_description = "4 GPUs on one NVSwitch";
  t.meta.machines = 1;
  t.meta.nranks = kRanks;
  t.meta.clock = "simulated";
  t.meta.command = "trace_chrome_test";
  t.meta.created = "2025-01-01T00:00:00Z";
  for (int g = 0; g < kRanks; ++g) {
    trace::Node n;
    n.name = "m0.gpu" + std::to_string(g);
    n.kind = "gpu";
    n.dev = g;
    n.rank = g;
    t.nodes.push_back(n);
  }
  trace::Node nvs;
  nvs.name = "m0.nvs0";
  nvs.kind = "nvswitch";
  t.nodes.push_back(nvs);
  const int kNvs = kRanks;
  for (int g = 0; g < kRanks; ++g) {  // link 2g: gpu g -> nvs, 2g + 1: nvs -> gpu g
    trace::Link up, down;
    up.from = g;
    up.to = kNvs;
    up.reverse = 2 * g + 1;
    down.from = kNvs;
    down.to = g;
    down.reverse = 2 * g;
    up.kind = down.kind = "nvlink";
    up.gbs = down.gbs = 150;
    up.latency_us = down.latency_us = 0.5;
    t.links.push_back(up);
    t.links.push_back(down);
  }
  std::map<std::pair<int, int>, int> route_of;
  for (int s = 0; s < kRanks; ++s)
    for (int d = 0; d < kRanks; ++d) {
      if (s == d) continue;
      trace::Route r;
      r.src = s;
      r.dst = d;
      r.links = {2 * s, 2 * d + 1};
      route_of[{s, d}] = static_cast<int>(t.routes.size());
      t.routes.push_back(r);
    }
  const std::vector<std::vector<int>> rings = {{0, 1, 2, 3}, {0, 3, 2, 1}};
  for (int c = 0; c < kChannels; ++c) {
    trace::Channel ch;
    ch.index = c;
    ch.ring = rings[c];
    ch.tree_index = c;
    ch.tree_up = {-1, 0, 1, 2};
    ch.tree_down = {{1, -1, -1}, {2, -1, -1}, {3, -1, -1}, {-1, -1, -1}};
    t.channels.push_back(ch);
  }

  struct OpSpec {
    const char* proto_name;
    int proto;
    uint64_t step_inc;  // StepPerSlice (Simple) or 1 (LL)
    size_t bytes;
    double t0;
  };
  const OpSpec specs[] = {{"Simple", 2, 2, size_t{1} << 20, 10.0}, {"LL", 0, 1, size_t{64} << 10, 60.0}};
  // Each connection's step counter, both ends alike (it persists across collectives).
  std::map<std::tuple<int, int, int>, uint64_t> conn_step;  // (from, to, channel)
  for (uint64_t o = 0; o < 2; ++o) {
    const OpSpec& sp = specs[o];
    const size_t chunk = sp.bytes / (kChannels * kRanks);
    std::map<std::tuple<int, int, int>, uint64_t> send_step = conn_step, recv_step = conn_step;
    // Rank r's k-th primitive on channel c.
    std::map<std::tuple<int, int, int>, StepId> step_at;
    double first = 1e30, last = 0;
    for (int c = 0; c < kChannels; ++c) {
      for (int pos = 0; pos < kRanks; ++pos) {
        const int r = rings[c][pos], next = rings[c][(pos + 1) % kRanks], prev = rings[c][(pos + kRanks - 1) % kRanks];
        for (int k = 0; k < kLoopPrims; ++k) {
          trace::Event e;
          e.rank = r;
          e.channel = c;
          e.op_count = o;
          e.coll = CollKind::kAllReduce;
          e.proto = static_cast<uint8_t>(sp.proto);
          e.prim = k == 0                ? PrimKind::kSend
                   : k < kRanks - 1      ? PrimKind::kRecvReduceSend
                   : k == kRanks - 1     ? PrimKind::kRecvReduceCopySend
                   : k < kLoopPrims - 1  ? PrimKind::kRecvCopySend
                                         : PrimKind::kRecv;
          const bool sends = k < kLoopPrims - 1, recvs = k > 0;
          e.send_peer = sends ? next : -1;
          e.recv_peer = recvs ? prev : -1;
          uint64_t& ss = send_step[{r, next, c}];
          uint64_t& rs = recv_step[{prev, r, c}];
          e.step = sends ? ss : rs;
          if (sends) ss += sp.step_inc;
          if (recvs) rs += sp.step_inc;
          const int chunk_index = k < kRanks ? (pos - k + kRanks) % kRanks : (pos - k + 1 + 2 * kRanks) % kRanks;
          e.offset = static_cast<uint64_t>(c) * (sp.bytes / kChannels) + static_cast<uint64_t>(chunk_index) * chunk;
          e.bytes = chunk;
          e.begin_us = sp.t0 + k * 4.0 + c * 0.5 + pos * 0.125;
          e.data_us = e.begin_us + (recvs ? 0.4 : 0.05);
          e.end_us = e.begin_us + 3.0 + r * 0.01;
          e.route = sends ? route_of[{r, next}] : -1;
          step_at[{r, c, k}] = id_of(e);
          first = std::min(first, e.begin_us);
          last = std::max(last, e.end_us);
          t.events.push_back(e);
        }
      }
      // Rank r's k-th step sends the slice that its successor's (k + 1)-th step receives.
      for (int pos = 0; pos < kRanks; ++pos) {
        const int r = rings[c][pos], next = rings[c][(pos + 1) % kRanks];
        for (int k = 0; k + 1 < kLoopPrims; ++k) f.receiver_of[step_at[{r, c, k}]] = step_at[{next, c, k + 1}];
      }
    }
    conn_step = send_step;
    trace::Op op;
    op.op_count = o;
    op.coll = CollKind::kAllReduce;
    op.algo = "Ring";
    op.proto = sp.proto_name;
    op.type = "float";
    op.redop = "sum";
    op.count = sp.bytes / 4;
    op.bytes = sp.bytes;
    op.nchannels = kChannels;
    op.begin_us = first;
    op.end_us = last;
    op.algbw = static_cast<double>(sp.bytes) / ((last - first) * 1e3);
    op.busbw = op.algbw * 2 * (kRanks - 1) / kRanks;
    t.ops.push_back(op);
  }
  trace::sort_events(&t.events);
  trace::compute_link_load(&t, 64);
  return f;
}

// One `cclab trace` run, its output captured.
struct CmdResult {
  int status = -1;
  std::string out, err;
};

std::string slurp(std::FILE* f) {
  std::string s;
  std::rewind(f);
  char buf[65536];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) s.append(buf, n);
  std::fclose(f);
  return s;
}

CmdResult run(const std::vector<std::string>& args) {
  std::FILE* out = std::tmpfile();
  std::FILE* err = std::tmpfile();
  CmdResult r;
  r.status = trace_main(args, out, err);
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

// The fixture written to a file once, read back as `cclab trace` sees it.
class TraceCmd : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    fixture_ = new Fixture(make_fixture());
    path_ = new std::string(temp_path("trace_chrome", "run.cctrace"));
    std::string err;
    ASSERT_TRUE(trace::write_trace(*path_, fixture_->trace, &err)) << err;
    back_ = new trace::Trace();
    ASSERT_TRUE(trace::read_trace(*path_, back_, &err)) << err;
  }
  static void TearDownTestSuite() {
    std::remove(path_->c_str());
    delete fixture_;
    delete path_;
    delete back_;
  }
  // `cclab trace export --chrome OUT TRACE extra...`, parsed.
  static json export_json(const std::vector<std::string>& extra, CmdResult* r = nullptr) {
    const std::string out = temp_path("trace_chrome", "out.json");
    std::vector<std::string> args = {"export", "--chrome", out, *path_};
    args.insert(args.end(), extra.begin(), extra.end());
    CmdResult res = run(args);
    EXPECT_EQ(res.status, 0) << res.err;
    EXPECT_EQ(res.err, "");
    if (r) *r = res;
    const std::string text = read_file(out);
    std::remove(out.c_str());
    json j;
    EXPECT_NO_THROW(j = json::parse(text)) << text.substr(0, 2000);
    return j;
  }
  static Fixture* fixture_;
  static std::string* path_;
  static trace::Trace* back_;  // what the file holds
};
Fixture* TraceCmd::fixture_ = nullptr;
std::string* TraceCmd::path_ = nullptr;
trace::Trace* TraceCmd::back_ = nullptr;

std::vector<json> of_phase(const json& j, const std::string& ph) {
  std::vector<json> out;
  for (const json& e : j.at("traceEvents"))
    if (e.at("ph") == ph) out.push_back(e);
  return out;
}

int64_t ts_ns(const json& e, const char* key = "ts") { return ns(e.at(key).get<double>()); }

// The LOAD series busiest first: most bytes moved, then highest peak, then lowest link index.
std::vector<int> links_by_bytes(const trace::LinkLoad& L) {
  std::vector<std::tuple<double, double, int>> v;
  for (const auto& s : L.series) {
    double sum = 0, peak = 0;
    for (float g : s.gbs) {
      sum += g;
      peak = std::max(peak, static_cast<double>(g));
    }
    v.emplace_back(-sum, -peak, s.link);
  }
  std::sort(v.begin(), v.end());
  std::vector<int> out;
  for (const auto& p : v) out.push_back(std::get<2>(p));
  return out;
}

std::string link_name(const trace::Trace& t, int link) {
  return t.nodes[t.links[link].from].name + "->" + t.nodes[t.links[link].to].name;
}

TEST_F(TraceCmd, FixtureIsARealisticTrace) {
  const trace::Trace& t = *back_;
  ASSERT_EQ(t.events.size(), size_t{2 * kChannels * kRanks * kLoopPrims});
  ASSERT_EQ(t.ops.size(), 2u);
  ASSERT_FALSE(t.load.series.empty());
  ASSERT_GT(t.load.bins, 1);
  // Every slice the generator sends is received exactly once.
  std::set<StepId> receivers;
  for (const auto& kv : fixture_->receiver_of) EXPECT_TRUE(receivers.insert(kv.second).second);
  EXPECT_EQ(fixture_->receiver_of.size(), size_t{2 * kChannels * kRanks * (kLoopPrims - 1)});
}

TEST_F(TraceCmd, ExportHasOneProcessPerRankAndALanePerChannel) {
  const json j = export_json({});
  const trace::Trace& t = *back_;
  EXPECT_TRUE(j.at("displayTimeUnit").is_string());
  EXPECT_EQ(j.at("otherData").at("backend"), "sim");
  EXPECT_EQ(j.at("otherData").at("topology"), "test-4gpu");
  const int links_pid = trace::chrome_links_pid(t);
  EXPECT_EQ(links_pid, kRanks);
  std::map<int, std::string> process_names;
  std::map<int, std::map<int, std::string>> thread_names;
  for (const json& e : of_phase(j, "M")) {
    if (e.at("name") == "process_name") {
      EXPECT_TRUE(process_names.emplace(e.at("pid").get<int>(), e.at("args").at("name").get<std::string>()).second);
    }
    if (e.at("name") == "thread_name") {
      EXPECT_TRUE(thread_names[e.at("pid").get<int>()]
                      .emplace(e.at("tid").get<int>(), e.at("args").at("name").get<std::string>())
                      .second);
    }
  }
  ASSERT_EQ(process_names.size(), size_t{kRanks + 1});
  for (int r = 0; r < kRanks; ++r)
    EXPECT_EQ(process_names[r], "rank " + std::to_string(r) + " (m0.gpu" + std::to_string(r) + ")");
  EXPECT_EQ(process_names[links_pid], "links");
  ASSERT_EQ(thread_names.size(), size_t{kRanks});
  for (int r = 0; r < kRanks; ++r) {
    std::map<int, std::string> expected = {{trace::kChromeCollTid, "collectives"}};
    for (int c = 0; c < kChannels; ++c) expected[c] = "channel " + std::to_string(c);
    EXPECT_EQ(thread_names[r], expected) << "rank " << r;
  }
  // Nothing but metadata, slices, flows and counters.
  size_t kinds = 0;
  for (const char* ph : {"M", "X", "s", "f", "C"}) kinds += of_phase(j, ph).size();
  EXPECT_EQ(kinds, j.at("traceEvents").size());
}

TEST_F(TraceCmd, ExportHasASliceForEveryStepKernelAndCollective) {
  const json j = export_json({});
  const trace::Trace& t = *back_;
  std::map<StepId, json> steps;
  std::map<std::tuple<int, int, uint64_t>, json> kernels;
  std::map<std::pair<int, uint64_t>, json> colls;
  for (const json& e : of_phase(j, "X")) {
    const std::string cat = e.at("cat");
    const int pid = e.at("pid"), tid = e.at("tid");
    const json& a = e.at("args");
    if (cat == "STEP") {
      const StepId id{pid, tid, a.at("op").get<uint64_t>(), a.at("step").get<uint64_t>(), e.at("name").get<std::string>()};
      EXPECT_TRUE(steps.emplace(id, e).second) << e.dump();
    } else if (cat == "GPU") {
      EXPECT_EQ(e.at("name"), "KernelCh" + std::to_string(tid));
      EXPECT_EQ(a.at("channel"), tid);
      EXPECT_TRUE(kernels.emplace(std::make_tuple(pid, tid, a.at("op").get<uint64_t>()), e).second);
    } else if (cat == "COLL") {
      EXPECT_EQ(tid, trace::kChromeCollTid);
      EXPECT_TRUE(colls.emplace(std::make_pair(pid, a.at("op").get<uint64_t>()), e).second);
    } else {
      ADD_FAILURE() << "unexpected slice " << e.dump();
    }
  }
  // One step slice per event, with its times and fields.
  ASSERT_EQ(steps.size(), t.events.size());
  std::map<std::tuple<int, int, uint64_t>, std::pair<int64_t, int64_t>> kspan;
  std::map<std::pair<int, uint64_t>, std::pair<int64_t, int64_t>> cspan;
  std::map<std::tuple<int, int, uint64_t>, int> ksteps;
  for (const trace::Event& ev : t.events) {
    auto it = steps.find(id_of(ev));
    ASSERT_NE(it, steps.end());
    const json& e = it->second;
    EXPECT_EQ(ts_ns(e), ns(ev.begin_us));
    EXPECT_EQ(ts_ns(e, "dur"), ns(ev.end_us) - ns(ev.begin_us));
    const json& a = e.at("args");
    EXPECT_EQ(a.at("send_peer").get<int>(), ev.send_peer);
    EXPECT_EQ(a.at("recv_peer").get<int>(), ev.recv_peer);
    EXPECT_EQ(a.at("bytes").get<uint64_t>(), ev.bytes);
    EXPECT_EQ(a.at("offset").get<uint64_t>(), ev.offset);
    EXPECT_EQ(a.at("proto").get<std::string>(), trace::proto_label(ev.proto));
    EXPECT_EQ(ns(a.at("wait_us").get<double>()), ns(ev.data_us) - ns(ev.begin_us));
    EXPECT_EQ(a.at("coll"), "AllReduce");
    const auto kk = std::make_tuple(ev.rank, ev.channel, ev.op_count);
    const auto ck = std::make_pair(ev.rank, ev.op_count);
    auto grow = [&](auto& spans, const auto& key) {
      const bool fresh = spans.count(key) == 0;
      auto& s = spans[key];
      s.first = fresh ? ns(ev.begin_us) : std::min(s.first, ns(ev.begin_us));
      s.second = fresh ? ns(ev.end_us) : std::max(s.second, ns(ev.end_us));
    };
    grow(kspan, kk);
    grow(cspan, ck);
    ++ksteps[kk];
  }
  // A KernelCh<c> slice per (rank, channel, op), from its first step to its last; steps nest in it.
  ASSERT_EQ(kernels.size(), size_t{kRanks * kChannels * 2});
  for (const auto& kv : kspan) {
    const json& e = kernels.at(kv.first);
    EXPECT_EQ(ts_ns(e), kv.second.first);
    EXPECT_EQ(ts_ns(e) + ts_ns(e, "dur"), kv.second.second);
    EXPECT_EQ(e.at("args").at("steps").get<int>(), ksteps.at(kv.first));
  }
  for (const auto& kv : steps) {
    const json& k = kernels.at(std::make_tuple(std::get<0>(kv.first), std::get<1>(kv.first), std::get<2>(kv.first)));
    EXPECT_GE(ts_ns(kv.second), ts_ns(k));
    EXPECT_LE(ts_ns(kv.second) + ts_ns(kv.second, "dur"), ts_ns(k) + ts_ns(k, "dur"));
  }
  // A collective slice per (rank, op) named like NCCL's profiler, with the op's fields.
  ASSERT_EQ(colls.size(), size_t{kRanks * 2});
  for (const auto& kv : cspan) {
    const json& e = colls.at(kv.first);
    const trace::Op& op = t.ops[kv.first.second];
    EXPECT_EQ(e.at("name"), "AllReduce");
    EXPECT_EQ(ts_ns(e), kv.second.first);
    EXPECT_EQ(ts_ns(e) + ts_ns(e, "dur"), kv.second.second);
    EXPECT_EQ(e.at("args").at("algo"), op.algo);
    EXPECT_EQ(e.at("args").at("proto"), op.proto);
    EXPECT_EQ(e.at("args").at("bytes").get<size_t>(), op.bytes);
    EXPECT_EQ(e.at("args").at("nchannels").get<int>(), op.nchannels);
    EXPECT_NEAR(e.at("args").at("busbw").get<double>(), op.busbw, 1e-5 * op.busbw);
  }
}

// The step slice on (pid, tid) whose span holds `ts_ns`.
const json* slice_at(const std::vector<json>& slices, int pid, int tid, int64_t at) {
  const json* found = nullptr;
  for (const json& e : slices) {
    if (e.at("cat") != "STEP" || e.at("pid") != pid || e.at("tid") != tid) continue;
    if (ts_ns(e) <= at && at <= ts_ns(e) + ts_ns(e, "dur")) {
      EXPECT_EQ(found, nullptr) << "two step slices hold " << at;
      found = &e;
    }
  }
  return found;
}

StepId id_of_slice(const json& e) {
  return StepId{e.at("pid"), e.at("tid"), e.at("args").at("op").get<uint64_t>(), e.at("args").at("step").get<uint64_t>(),
                e.at("name").get<std::string>()};
}

TEST_F(TraceCmd, ExportFlowsGoFromEachSendToItsReceive) {
  const json j = export_json({});
  const std::vector<json> slices = of_phase(j, "X");
  const std::vector<json> starts = of_phase(j, "s"), ends = of_phase(j, "f");
  ASSERT_EQ(starts.size(), fixture_->receiver_of.size());
  ASSERT_EQ(ends.size(), starts.size());
  std::map<uint64_t, const json*> end_of;
  for (const json& e : ends) {
    EXPECT_EQ(e.at("bp"), "e");
    EXPECT_EQ(e.at("cat"), "FLOW");
    EXPECT_EQ(e.at("name"), "send");
    EXPECT_TRUE(end_of.emplace(e.at("id").get<uint64_t>(), &e).second);
  }
  std::set<StepId> senders;
  for (const json& s : starts) {
    EXPECT_EQ(s.at("cat"), "FLOW");
    EXPECT_EQ(s.at("name"), "send");
    ASSERT_TRUE(end_of.count(s.at("id").get<uint64_t>())) << s.dump();
    const json& f = *end_of.at(s.at("id").get<uint64_t>());
    const json* from = slice_at(slices, s.at("pid"), s.at("tid"), ts_ns(s));
    const json* to = slice_at(slices, f.at("pid"), f.at("tid"), ts_ns(f));
    ASSERT_NE(from, nullptr) << s.dump();
    ASSERT_NE(to, nullptr) << f.dump();
    const StepId sid = id_of_slice(*from);
    ASSERT_TRUE(fixture_->receiver_of.count(sid)) << s.dump();
    EXPECT_EQ(id_of_slice(*to), fixture_->receiver_of.at(sid)) << s.dump() << " -> " << f.dump();
    EXPECT_TRUE(senders.insert(sid).second);
  }
}

TEST_F(TraceCmd, ExportCountersFollowTheLoadBins) {
  const json j = export_json({});
  const trace::Trace& t = *back_;
  const trace::LinkLoad& L = t.load;
  std::map<std::string, std::vector<std::pair<int64_t, double>>> samples;
  for (const json& e : of_phase(j, "C")) {
    EXPECT_EQ(e.at("pid"), trace::chrome_links_pid(t));
    ASSERT_EQ(e.at("args").size(), 1u);
    samples[e.at("name")].push_back({ts_ns(e), e.at("args").at("GB/s").get<double>()});
  }
  ASSERT_EQ(samples.size(), L.series.size());
  for (const auto& s : L.series) {
    const std::string name = link_name(t, s.link);
    ASSERT_TRUE(samples.count(name)) << name;
    auto& v = samples[name];
    std::sort(v.begin(), v.end());
    // A sample where the value changes (the first bin always), then 0 after the last bin.
    size_t expected = 1 + (s.gbs.back() != 0 ? 1 : 0);
    for (int i = 1; i < L.bins; ++i) expected += s.gbs[i] != s.gbs[i - 1];
    EXPECT_EQ(v.size(), expected) << name;
    for (int i = 0; i < L.bins; ++i) {
      const int64_t at = ns(L.t0_us + i * L.bin_us);
      double value = -1;
      for (const auto& p : v)
        if (p.first <= at) value = p.second;
      EXPECT_NEAR(value, s.gbs[i], 1e-5 * std::max(1.0f, s.gbs[i])) << name << " bin " << i;
    }
    // The track ends at 0: a sample after the last bin when that bin was not 0 already.
    EXPECT_EQ(v.back().second, 0.0);
    if (s.gbs.back() != 0) {
      EXPECT_LE(std::llabs(v.back().first - ns(L.t0_us + L.bins * L.bin_us)), 1);
    }
    for (const auto& p : v) EXPECT_LE(p.first, ns(L.t0_us + L.bins * L.bin_us) + 1);
  }
  // Some link carried the whole run's traffic at a positive rate.
  bool positive = false;
  for (const auto& kv : samples)
    for (const auto& p : kv.second) positive |= p.second > 0;
  EXPECT_TRUE(positive);
}

TEST_F(TraceCmd, ExportWindowAndOptions) {
  const trace::Trace& t = *back_;
  const double from = 15.0, to = 22.0;
  const json j = export_json({"--from", "15", "--to", "22"});
  size_t in_window = 0;
  std::set<StepId> ids;
  for (const trace::Event& e : t.events)
    if (ns(e.begin_us) <= ns(to) && ns(e.end_us) >= ns(from)) {
      ++in_window;
      ids.insert(id_of(e));
    }
  ASSERT_GT(in_window, 0u);
  ASSERT_LT(in_window, t.events.size());
  size_t steps = 0;
  for (const json& e : of_phase(j, "X")) {
    EXPECT_LE(ts_ns(e), ns(to));
    EXPECT_GE(ts_ns(e) + ts_ns(e, "dur"), ns(from));
    if (e.at("cat") == "STEP") {
      ++steps;
      EXPECT_TRUE(ids.count(id_of_slice(e)));
    }
  }
  EXPECT_EQ(steps, in_window);
  size_t pairs = 0;
  for (const auto& kv : fixture_->receiver_of) pairs += ids.count(kv.first) && ids.count(kv.second);
  EXPECT_EQ(of_phase(j, "s").size(), pairs);
  EXPECT_EQ(of_phase(j, "f").size(), pairs);
  for (const json& e : of_phase(j, "C")) {
    if (e.at("args").at("GB/s") == 0) continue;
    EXPECT_LE(ts_ns(e), ns(to));
    EXPECT_GT(ts_ns(e) + ns(t.load.bin_us), ns(from));
  }

  const json plain = export_json({"--no-flows", "--no-counters"});
  EXPECT_TRUE(of_phase(plain, "s").empty());
  EXPECT_TRUE(of_phase(plain, "f").empty());
  EXPECT_TRUE(of_phase(plain, "C").empty());
  EXPECT_EQ(of_phase(plain, "X").size(), t.events.size() + kRanks * kChannels * 2 + kRanks * 2);
  for (const json& e : of_phase(plain, "M")) EXPECT_NE(e.at("pid"), trace::chrome_links_pid(t)) << e.dump();

  const json busy = export_json({"--links", "2"});
  std::set<std::string> names;
  for (const json& e : of_phase(busy, "C")) names.insert(e.at("name"));
  const std::vector<int> order = links_by_bytes(t.load);
  ASSERT_GE(order.size(), 2u);
  EXPECT_EQ(names, (std::set<std::string>{link_name(t, order[0]), link_name(t, order[1])}));

  const json kernels_only = export_json({"--no-steps"});
  for (const json& e : of_phase(kernels_only, "X")) EXPECT_NE(e.at("cat"), "STEP");
  EXPECT_EQ(of_phase(kernels_only, "X").size(), size_t{kRanks * kChannels * 2 + kRanks * 2});
  EXPECT_TRUE(of_phase(kernels_only, "s").empty());
}

TEST_F(TraceCmd, ExportReportsWhatItWroteAndWritesToStdout) {
  CmdResult r;
  const json j = export_json({}, &r);
  const size_t total = j.at("traceEvents").size();
  EXPECT_NE(r.out.find(": " + std::to_string(total) + " events ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(std::to_string(back_->events.size()) + " steps"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(std::to_string(fixture_->receiver_of.size()) + " flows"), std::string::npos) << r.out;

  const CmdResult piped = run({"export", "--chrome", "-", *path_});
  ASSERT_EQ(piped.status, 0) << piped.err;
  json k;
  ASSERT_NO_THROW(k = json::parse(piped.out));
  EXPECT_EQ(k.at("traceEvents").size(), total);
}

TEST_F(TraceCmd, InfoSummarisesTheTrace) {
  const CmdResult r = run({"info", *path_});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.err, "");
  const trace::Trace& t = *back_;
  const std::string& s = r.out;
  auto has = [&](const std::string& what) { EXPECT_NE(s.find(what), std::string::npos) << what << "\n" << s; };
  std::ifstream f(*path_, std::ios::binary | std::ios::ate);
  const auto size = static_cast<double>(f.tellg());
  char per_event[64];
  std::snprintf(per_event, sizeof(per_event), "(%.1f bytes/event)", size / static_cast<double>(t.events.size()));
  has("cclab trace v" + std::to_string(trace::kFormatVersion));
  has(per_event);
  has("backend     sim (clock: simulated)");
  has("topology    test-4gpu: 4 GPUs on one NVSwitch");
  has("ranks       4 on 1 machine");
  has("nodes       5: 4 gpu, 1 nvswitch");
  has("links       8 (one direction each): 8 nvlink; 12 routes");
  has("channel 0       ring 0 1 2 3   tree 0, root 0");
  has("channel 1       ring 0 3 2 1   tree 1, root 0");
  has(std::to_string(t.events.size()) + " steps");
  // The collectives table: one row per op with its numbers.
  std::map<uint64_t, uint64_t> steps_of, sent_of;
  for (const trace::Event& e : t.events) {
    ++steps_of[e.op_count];
    if (e.send_peer >= 0) sent_of[e.op_count] += e.bytes;
  }
  int rows = 0;
  for (const std::string& line : lines_of(s)) {
    const auto f = fields_of(line);
    if (f.size() != 13 || f[1] != "AllReduce") continue;
    const trace::Op& op = t.ops.at(std::stoul(f[0]));
    ++rows;
    EXPECT_EQ(f[2], op.algo);
    EXPECT_EQ(f[3], op.proto);
    EXPECT_EQ(f[4], "float");
    EXPECT_EQ(f[6], std::to_string(op.bytes));
    EXPECT_EQ(f[7], std::to_string(op.nchannels));
    EXPECT_NEAR(std::stod(f[8]), op.end_us - op.begin_us, 1e-3);
    EXPECT_NEAR(std::stod(f[9]), op.algbw, 0.006);
    EXPECT_NEAR(std::stod(f[10]), op.busbw, 0.006);
    EXPECT_EQ(f[11], std::to_string(steps_of[op.op_count]));
    EXPECT_EQ(f[12], std::to_string(sent_of[op.op_count]));
  }
  EXPECT_EQ(rows, 2);
  // Busiest links, busiest first, with the LOAD's peak.
  const std::vector<int> order = links_by_bytes(t.load);
  std::vector<int> listed;
  for (const std::string& line : lines_of(s)) {
    const auto f = fields_of(line);
    if (f.size() == 10 && f[2] == "->" && f[4] == "nvlink") {
      listed.push_back(std::stoi(f[0]));
      const int link = listed.back();
      EXPECT_EQ(f[1] + "->" + f[3], link_name(t, link));
      float peak = 0;
      for (const auto& ser : t.load.series)
        if (ser.link == link) peak = *std::max_element(ser.gbs.begin(), ser.gbs.end());
      EXPECT_NEAR(std::stod(f[6]), peak, 0.006);
    }
  }
  ASSERT_EQ(listed.size(), std::min<size_t>(10, order.size()));
  EXPECT_EQ(listed, std::vector<int>(order.begin(), order.begin() + static_cast<long>(listed.size())));

  const CmdResult few = run({"info", *path_, "--ops", "1", "--links", "0"});
  ASSERT_EQ(few.status, 0) << few.err;
  EXPECT_NE(few.out.find("... 1 more (--ops 0 lists all)"), std::string::npos) << few.out;
  EXPECT_EQ(few.out.find("busiest links"), std::string::npos);
}

TEST_F(TraceCmd, DumpListsTheSteps) {
  const trace::Trace& t = *back_;
  const CmdResult r = run({"dump", *path_, "--rank", "1", "--channel", "0", "--op", "0"});
  ASSERT_EQ(r.status, 0) << r.err;
  std::vector<trace::Event> expected;
  for (const trace::Event& e : t.events)
    if (e.rank == 1 && e.channel == 0 && e.op_count == 0) expected.push_back(e);
  ASSERT_EQ(expected.size(), size_t{kLoopPrims});
  std::vector<std::vector<std::string>> rows = cli_test::table_rows(r.out);
  ASSERT_EQ(rows.size(), expected.size()) << r.out;
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& f = rows[i];
    const trace::Event& e = expected[i];
    ASSERT_EQ(f.size(), 13u);
    EXPECT_NEAR(std::stod(f[0]), e.begin_us, 1e-3);
    EXPECT_NEAR(std::stod(f[1]), e.end_us - e.begin_us, 1e-3);
    EXPECT_NEAR(std::stod(f[2]), e.data_us - e.begin_us, 1e-3);
    EXPECT_EQ(f[3], "1");
    EXPECT_EQ(f[4], "0");
    EXPECT_EQ(f[6], trace::prim_label(e.prim));
    EXPECT_EQ(f[7], e.recv_peer >= 0 ? std::to_string(e.recv_peer) : "-");
    EXPECT_EQ(f[8], e.send_peer >= 0 ? std::to_string(e.send_peer) : "-");
    EXPECT_EQ(f[9], std::to_string(e.offset));
    EXPECT_EQ(f[10], std::to_string(e.bytes));
    EXPECT_EQ(f[11], std::to_string(e.step));
    EXPECT_EQ(f[12], "Simple");
  }
  // Ring 0 1 2 3: rank 1 receives from 0 and sends to 2.
  EXPECT_EQ(rows.front()[8], "2");
  EXPECT_EQ(rows.back()[7], "0");
  EXPECT_NE(r.out.find("# 7 of " + std::to_string(t.events.size()) + " steps listed"), std::string::npos);

  const CmdResult limited = run({"dump", *path_, "--limit", "3"});
  ASSERT_EQ(limited.status, 0);
  EXPECT_EQ(cli_test::table_rows(limited.out).size(), 3u);
  EXPECT_NE(limited.out.find("(" + std::to_string(t.events.size() - 3) + " more match"), std::string::npos);

  const CmdResult csv = run({"dump", "--csv", *path_, "--op", "1"});
  ASSERT_EQ(csv.status, 0);
  const auto lines = lines_of(csv.out);
  ASSERT_EQ(lines.size(), 1 + t.events.size() / 2);
  EXPECT_EQ(lines[0].substr(0, 23), "begin_us,dur_us,wait_us");
  for (size_t i = 1; i < lines.size(); ++i) {
    EXPECT_EQ(std::count(lines[i].begin(), lines[i].end(), ','), 13) << lines[i];
    EXPECT_NE(lines[i].find(",1,AllReduce,"), std::string::npos) << lines[i];
    EXPECT_NE(lines[i].find(",LL"), std::string::npos) << lines[i];
  }
}

// One line on stderr, naming `what`, and a non-zero status.
void expect_error(const CmdResult& r, int status, const std::string& what) {
  EXPECT_EQ(r.status, status) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.err.rfind("cclab trace", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(what), std::string::npos) << r.err;
}

TEST_F(TraceCmd, BadInputFailsCleanly) {
  const std::string missing = temp_path("trace_chrome", "missing.cctrace");
  expect_error(run({"info", missing}), kTraceExitBadTrace, missing);
  expect_error(run({"dump", missing}), kTraceExitBadTrace, missing);
  expect_error(run({"export", "--chrome", temp_path("trace_chrome", "x.json"), missing}), kTraceExitBadTrace, missing);

  // A truncated file: the reader's own message.
  const std::string bytes = read_file(*path_);
  const std::string cut = temp_path("trace_chrome", "cut.cctrace");
  {
    std::ofstream o(cut, std::ios::binary);
    o.write(bytes.data(), static_cast<std::streamsize>(bytes.size() * 2 / 3));
  }
  trace::Trace junk;
  std::string reader_error;
  ASSERT_FALSE(trace::read_trace(cut, &junk, &reader_error));
  const CmdResult truncated = run({"info", cut});
  expect_error(truncated, kTraceExitBadTrace, reader_error);
  EXPECT_NE(truncated.err.find("truncated"), std::string::npos) << truncated.err;
  // Not a trace at all.
  {
    std::ofstream o(cut, std::ios::binary | std::ios::trunc);
    o << "{\"traceEvents\": []}\n";
  }
  expect_error(run({"dump", cut}), kTraceExitBadTrace, cut);
  std::remove(cut.c_str());

  expect_error(run({"frobnicate", *path_}), kTraceExitUsage, "unknown subcommand 'frobnicate'");
  expect_error(run({"--bogus"}), kTraceExitUsage, "'--bogus'");
  expect_error(run({"dump", *path_, "--bogus"}), kTraceExitUsage, "unknown flag '--bogus'");
  expect_error(run({"dump", *path_, "--rank", "x"}), kTraceExitUsage, "--rank");
  expect_error(run({"dump", *path_, "--limit", "-3"}), kTraceExitUsage, "--limit");
  expect_error(run({"dump", *path_, "--rank"}), kTraceExitUsage, "--rank");
  expect_error(run({"info"}), kTraceExitUsage, "give the trace file");
  expect_error(run({"info", *path_, *path_}), kTraceExitUsage, "unexpected argument");
  expect_error(run({"export", *path_}), kTraceExitUsage, "--chrome");
  expect_error(run({"export", "--chrome", "x.json", *path_, "--from", "soon"}), kTraceExitUsage, "--from");
  expect_error(run({"export", "--chrome", "x.json", *path_, "--from", "5", "--to", "1"}), kTraceExitUsage, "--from");
  expect_error(run({"export", "--chrome", "/nonexistent-dir/x.json", *path_}), kTraceExitIo, "/nonexistent-dir/x.json");
  expect_error(run({"merge", *path_}), kTraceExitUsage, "-o");

  const CmdResult none = run({});
  EXPECT_EQ(none.status, kTraceExitUsage);
  EXPECT_NE(none.err.find("usage: cclab trace"), std::string::npos);
  const CmdResult help = run({"--help"});
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.out.find("usage: cclab trace"), std::string::npos);
  EXPECT_EQ(run({"export", "--help"}).status, 0);
}

TEST_F(TraceCmd, MergeJoinsParts) {
  // Two parts: ranks 0-1's events and ranks 2-3's, as two processes would write them.
  trace::Trace a = *back_, b = *back_;
  auto keep = [](trace::Trace* t, bool low) {
    std::vector<trace::Event> ev;
    for (const trace::Event& e : t->events)
      if ((e.rank < 2) == low) ev.push_back(e);
    t->events = ev;
  };
  keep(&a, true);
  keep(&b, false);
  const std::string pa = temp_path("trace_chrome", "part.0"), pb = temp_path("trace_chrome", "part.2"),
                    out = temp_path("trace_chrome", "merged.cctrace");
  std::string err;
  ASSERT_TRUE(trace::write_trace(pa, a, &err)) << err;
  ASSERT_TRUE(trace::write_trace(pb, b, &err)) << err;
  const CmdResult r = run({"merge", "-o", out, pa, pb});
  ASSERT_EQ(r.status, 0) << r.err;
  trace::Trace m;
  ASSERT_TRUE(trace::read_trace(out, &m, &err)) << err;
  EXPECT_EQ(m.events.size(), back_->events.size());
  EXPECT_EQ(m.ops.size(), back_->ops.size());
  for (const std::string& p : {pa, pb, out}) std::remove(p.c_str());
}

TEST(TraceInfo, GroupsChannelsWithTheSameRingAndTree) {
  trace::Trace t;
  t.meta.nranks = 3;
  for (int c = 0; c < 4; ++c) {
    trace::Channel ch;
    ch.index = c;
    ch.ring = c < 3 ? std::vector<int>{0, 1, 2} : std::vector<int>{0, 2, 1};
    t.channels.push_back(ch);
  }
  TraceFileFacts facts;
  facts.path = "x.cctrace";
  const std::string s = format_trace_info(t, facts, TraceInfoOptions{});
  EXPECT_NE(s.find("channels    4\n"), std::string::npos) << s;
  EXPECT_NE(s.find("  channels 0-2    ring 0 1 2\n"), std::string::npos) << s;
  EXPECT_NE(s.find("  channel 3       ring 0 2 1\n"), std::string::npos) << s;
  EXPECT_NE(s.find("busiest links: none"), std::string::npos) << s;
  EXPECT_NE(s.find("collectives: 0"), std::string::npos) << s;
}

// ---- export_chrome on traces made in memory ----------------------------------------------------------

json export_mem(const trace::Trace& t, trace::ChromeStats* stats = nullptr) {
  std::ostringstream os;
  std::string err;
  EXPECT_TRUE(trace::export_chrome(t, os, trace::ChromeOptions{}, &err, stats)) << err;
  json j;
  EXPECT_NO_THROW(j = json::parse(os.str())) << os.str();
  return j;
}

TEST(ChromeExport, OverlappingStepsGoToASubLane) {
  trace::Trace t;
  t.meta.nranks = 1;
  auto step = [&](double b, double e, uint64_t s) {
    trace::Event ev;
    ev.rank = 0;
    ev.channel = 1;
    ev.step = s;
    ev.prim = PrimKind::kRecv;
    ev.recv_peer = 0;
    ev.begin_us = b;
    ev.data_us = b;
    ev.end_us = e;
    t.events.push_back(ev);
  };
  step(0, 10, 0);
  step(5, 15, 1);   // overlaps the first without nesting in it
  step(6, 8, 2);    // nests in the first
  step(15, 20, 3);  // after the second ends: back on the main lane
  trace::ChromeStats stats;
  const json j = export_mem(t, &stats);
  EXPECT_EQ(stats.sub_lanes, 1u);
  std::map<uint64_t, int> tid_of;
  for (const json& e : of_phase(j, "X"))
    if (e.at("cat") == "STEP") tid_of[e.at("args").at("step").get<uint64_t>()] = e.at("tid");
  EXPECT_EQ(tid_of[0], 1);
  EXPECT_EQ(tid_of[1], 1 + trace::kChromeSubLaneStride);
  EXPECT_EQ(tid_of[2], 1);
  EXPECT_EQ(tid_of[3], 1);
  // On each lane the slices nest (sorted by begin, a slice ends before the next begins or holds it).
  std::map<int, std::vector<std::pair<int64_t, int64_t>>> lanes;
  for (const json& e : of_phase(j, "X")) lanes[e.at("tid")].push_back({ts_ns(e), ts_ns(e) + ts_ns(e, "dur")});
  for (auto& kv : lanes) {
    std::sort(kv.second.begin(), kv.second.end(),
              [](const auto& a, const auto& b) { return a.first != b.first ? a.first < b.first : a.second > b.second; });
    std::vector<int64_t> open;
    for (const auto& s : kv.second) {
      while (!open.empty() && open.back() <= s.first) open.pop_back();
      EXPECT_TRUE(open.empty() || s.second <= open.back()) << "tid " << kv.first;
      open.push_back(s.second);
    }
  }
  bool named = false;
  for (const json& e : of_phase(j, "M"))
    named |= e.at("name") == "thread_name" && e.at("tid") == 1 + trace::kChromeSubLaneStride &&
             e.at("args").at("name") == "channel 1 (overlap 1)";
  EXPECT_TRUE(named);
}

TEST(ChromeExport, EscapesStrings) {
  const std::string weird = std::string("gpu \"0\"\\\n\t\x01") + "\xff" + "\xc3\xa9";
  EXPECT_NO_THROW(json::parse(trace::json_quote(weird)));
  EXPECT_EQ(json::parse(trace::json_quote("a\"b\\c\n")).get<std::string>(), "a\"b\\c\n");
  EXPECT_EQ(json::parse(trace::json_quote("\xc3\xa9")).get<std::string>(), "\xc3\xa9");
  EXPECT_EQ(json::parse(trace::json_quote("x\xffy")).get<std::string>(), "x\xef\xbf\xbdy");

  trace::Trace t;
  t.meta.nranks = 1;
  t.meta.command = weird;
  trace::Node n;
  n.name = weird;
  n.kind = "gpu";
  n.rank = 0;
  t.nodes.push_back(n);
  const json j = export_mem(t);
  bool found = false;
  for (const json& e : of_phase(j, "M"))
    if (e.at("name") == "process_name" && e.at("pid") == 0) {
      found = true;
      const std::string name = e.at("args").at("name");
      EXPECT_EQ(name.rfind("rank 0 (gpu \"0\"\\\n\t\x01", 0), 0u) << name;
    }
  EXPECT_TRUE(found);
}

TEST(ChromeExport, CountersDropToZeroAndNameLinksUniquely) {
  trace::Trace t;
  t.meta.nranks = 1;
  for (const char* name : {"a", "b"}) {
    trace::Node n;
    n.name = name;
    t.nodes.push_back(n);
  }
  trace::Link l;
  l.from = 0;
  l.to = 1;
  t.links = {l, l, l};  // parallel links with the same endpoints
  t.load.t0_us = 1;
  t.load.bin_us = 0.5;
  t.load.bins = 4;
  t.load.series = {{0, {1, 1, 0, 5}}, {1, {0, 0, 0, 0}}, {2, {2, 2, 2, 2}}};
  trace::ChromeStats stats;
  const json j = export_mem(t, &stats);
  std::map<std::string, std::vector<std::pair<int64_t, double>>> tracks;
  for (const json& e : of_phase(j, "C")) tracks[e.at("name")].push_back({ts_ns(e), e.at("args").at("GB/s")});
  const std::map<std::string, std::vector<std::pair<int64_t, double>>> expected = {
      {"a->b", {{1000, 1}, {2000, 0}, {2500, 5}, {3000, 0}}},
      {"a->b #1", {{1000, 0}}},
      {"a->b #2", {{1000, 2}, {3000, 0}}}};
  EXPECT_EQ(tracks, expected);
  EXPECT_EQ(stats.counter_tracks, 3u);
  EXPECT_EQ(stats.counter_samples, 7u);

  std::ostringstream os;
  std::string err;
  trace::ChromeOptions opt;
  opt.max_link_counters = 1;
  opt.from_us = 2.1;  // bins 2 and 3
  ASSERT_TRUE(trace::export_chrome(t, os, opt, &err, &stats)) << err;
  const json k = json::parse(os.str());
  tracks.clear();
  for (const json& e : of_phase(k, "C")) tracks[e.at("name")].push_back({ts_ns(e), e.at("args").at("GB/s")});
  EXPECT_EQ(tracks, (std::map<std::string, std::vector<std::pair<int64_t, double>>>{
                        {"a->b #2", {{2000, 2}, {3000, 0}}}}));
}

TEST(ChromeExport, EmptyTraceAndBadWindow) {
  trace::Trace t;
  trace::ChromeStats stats;
  const json j = export_mem(t, &stats);
  EXPECT_TRUE(j.at("traceEvents").empty());
  EXPECT_EQ(stats.events(), 0u);
  std::ostringstream os;
  std::string err;
  trace::ChromeOptions opt;
  opt.from_us = 2;
  opt.to_us = 1;
  EXPECT_FALSE(trace::export_chrome(t, os, opt, &err));
  EXPECT_NE(err.find("--from"), std::string::npos);
}

}  // namespace
}  // namespace cclab
