// sim/simulate.cc - simulate(): the controller actor that runs every size of a config, payload data
// and its check, and the forked child that keeps SimGrid's one-per-process engine out of the caller.
#include <simgrid/s4u.hpp>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xbt/log.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "kernels/describe.h"
#include "kernels/dtypes.h"
#include "sim/world.h"

namespace sg4 = simgrid::s4u;

namespace cclab {
namespace sim {

// ---- small public helpers ------------------------------------------------------------------------

namespace {
struct TypeInfo {
  SimType t;
  const char* name;
  size_t size;
};
const TypeInfo kTypes[] = {
    {SimType::kInt8, "int8", 1},       {SimType::kUint8, "uint8", 1},     {SimType::kInt32, "int32", 4},
    {SimType::kUint32, "uint32", 4},   {SimType::kInt64, "int64", 8},     {SimType::kUint64, "uint64", 8},
    {SimType::kFloat16, "half", 2},    {SimType::kFloat32, "float", 4},   {SimType::kFloat64, "double", 8},
    {SimType::kBfloat16, "bfloat16", 2}, {SimType::kFloat8e4m3, "f8e4m3", 1}, {SimType::kFloat8e5m2, "f8e5m2", 1},
};
}  // namespace

size_t sim_type_size(SimType t) { return kTypes[static_cast<int>(t)].size; }
const char* sim_type_name(SimType t) { return kTypes[static_cast<int>(t)].name; }
bool sim_type_from_name(const std::string& s, SimType* out) {
  for (const TypeInfo& i : kTypes)
    if (s == i.name) {
      *out = i.t;
      return true;
    }
  // nccl-tests' other spellings.
  static const std::pair<const char*, SimType> aliases[] = {
      {"char", SimType::kInt8},      {"int", SimType::kInt32},       {"float32", SimType::kFloat32},
      {"fp32", SimType::kFloat32},   {"float16", SimType::kFloat16}, {"fp16", SimType::kFloat16},
      {"float64", SimType::kFloat64}, {"fp64", SimType::kFloat64},   {"bf16", SimType::kBfloat16},
      {"e4m3", SimType::kFloat8e4m3}, {"e5m2", SimType::kFloat8e5m2}};
  for (auto& a : aliases)
    if (s == a.first) {
      *out = a.second;
      return true;
    }
  return false;
}

const char* sim_level_name(SimLevel l) {
  switch (l) {
    case SimLevel::kAuto: return "auto";
    case SimLevel::kStep: return "step";
    case SimLevel::kFlow: return "flow";
  }
  return "?";
}

const char* sim_p2p_name(P2pPattern p) {
  switch (p) {
    case P2pPattern::kSendRecv: return "sendrecv";
    case P2pPattern::kAllToAll: return "alltoall";
    case P2pPattern::kGather: return "gather";
    case P2pPattern::kScatter: return "scatter";
    case P2pPattern::kNone: break;
  }
  return "none";
}

std::string format_events(const std::vector<StepRecord>& events) {
  std::string out;
  char line[256];
  for (const StepRecord& e : events) {
    snprintf(line, sizeof line, "%.6f %.6f r%d c%d %s send=%d recv=%d step=%llu bytes=%zu op=%llu\n", e.begin_us,
             e.end_us, e.rank, e.channel, prim_name(e.prim), e.send_peer, e.recv_peer,
             static_cast<unsigned long long>(e.step), e.bytes, static_cast<unsigned long long>(e.op_count));
    out += line;
  }
  return out;
}

// ---- payload data --------------------------------------------------------------------------------

namespace {

// Small integers, exact in every type, so every reduction order gives the same bits: sum/max/min take
// {-1, 0, 1, 2}, prod takes {-1, 1, 2} at most every third element.
int input_value(RedOpKind op, int rank, size_t i) {
  if (op == RedOpKind::kProd) {
    const size_t k = (static_cast<size_t>(rank) + i) % 3;
    return k == 0 ? 2 : (k == 1 ? 1 : -1);
  }
  return static_cast<int>((static_cast<size_t>(rank) * 5 + i * 3) % 4) - 1;
}

template <typename T>
T make(long long v) {
  if constexpr (std::is_same_v<T, half_t> || std::is_same_v<T, bfloat16_t>) return from_float<T>(static_cast<float>(v));
  else return static_cast<T>(v);
}
template <typename T>
double value_of(T v) {
  if constexpr (std::is_same_v<T, half_t> || std::is_same_v<T, bfloat16_t>) return to_float(v);
  else return static_cast<double>(v);
}

long long combine_ll(RedOpKind op, long long a, long long b) {
  switch (op) {
    case RedOpKind::kProd: return a * b;
    case RedOpKind::kMax: return a > b ? a : b;
    case RedOpKind::kMin: return a < b ? a : b;
    default: return a + b;
  }
}

template <typename T>
struct Payload {
  static void fill(std::vector<std::vector<unsigned char>>& send, RedOpKind op) {
    for (size_t r = 0; r < send.size(); ++r) {
      T* p = reinterpret_cast<T*>(send[r].data());
      const size_t n = send[r].size() / sizeof(T);
      for (size_t i = 0; i < n; ++i) p[i] = make<T>(input_value(op, static_cast<int>(r), i));
    }
  }
  // The exact result of reducing element i over every rank, in T (integer types wrap as the kernels'
  // arithmetic does).
  static double reduced(RedOpKind op, int nranks, size_t i) {
    long long acc = input_value(op, 0, i);
    for (int r = 1; r < nranks; ++r) acc = combine_ll(op, acc, input_value(op, r, i));
    return value_of(make<T>(acc));
  }
  static int64_t check(const SimConfig& cfg, int nranks, size_t count,
                       const std::vector<std::vector<unsigned char>>& recv) {
    int64_t wrong = 0;
    auto out = [&](int r) { return reinterpret_cast<const T*>(recv[r].data()); };
    auto expect_input = [&](int r, size_t i) { return value_of(make<T>(input_value(cfg.op, r, i))); };
    // Point-to-point collectives: `count` elements per peer, copied, never reduced.
    switch (cfg.p2p) {
      case P2pPattern::kAllToAll:
        for (int r = 0; r < nranks; ++r)
          for (int q = 0; q < nranks; ++q)
            for (size_t i = 0; i < count; ++i)
              wrong += value_of(out(r)[q * count + i]) != expect_input(q, static_cast<size_t>(r) * count + i);
        return wrong;
      case P2pPattern::kGather:
        for (int q = 0; q < nranks; ++q)
          for (size_t i = 0; i < count; ++i) wrong += value_of(out(cfg.root)[q * count + i]) != expect_input(q, i);
        return wrong;
      case P2pPattern::kScatter:
        for (int r = 0; r < nranks; ++r)
          for (size_t i = 0; i < count; ++i)
            wrong += value_of(out(r)[i]) != expect_input(cfg.root, static_cast<size_t>(r) * count + i);
        return wrong;
      case P2pPattern::kSendRecv:
        for (int r = 0; r < nranks; ++r)
          for (size_t i = 0; i < count; ++i) wrong += value_of(out(r)[i]) != expect_input((r - 1 + nranks) % nranks, i);
        return wrong;
      case P2pPattern::kNone: break;
    }
    switch (cfg.coll) {
      case CollKind::kAllReduce:
        for (int r = 0; r < nranks; ++r)
          for (size_t i = 0; i < count; ++i) wrong += value_of(out(r)[i]) != reduced(cfg.op, nranks, i);
        break;
      case CollKind::kReduce:
        for (size_t i = 0; i < count; ++i) wrong += value_of(out(cfg.root)[i]) != reduced(cfg.op, nranks, i);
        break;
      case CollKind::kBroadcast:
        for (int r = 0; r < nranks; ++r)
          for (size_t i = 0; i < count; ++i) wrong += value_of(out(r)[i]) != expect_input(cfg.root, i);
        break;
      case CollKind::kAllGather:
        for (int r = 0; r < nranks; ++r)
          for (int q = 0; q < nranks; ++q)
            for (size_t i = 0; i < count; ++i) wrong += value_of(out(r)[q * count + i]) != expect_input(q, i);
        break;
      case CollKind::kReduceScatter:
        for (int r = 0; r < nranks; ++r)
          for (size_t i = 0; i < count; ++i)
            wrong += value_of(out(r)[i]) != reduced(cfg.op, nranks, static_cast<size_t>(r) * count + i);
        break;
      default:
        break;
    }
    return wrong;
  }
};

template <template <typename> class F, typename... Args>
auto dispatch(SimType t, Args&&... args) {
  switch (t) {
    case SimType::kInt8: return F<int8_t>::run(std::forward<Args>(args)...);
    case SimType::kFloat16: return F<half_t>::run(std::forward<Args>(args)...);
    case SimType::kBfloat16: return F<bfloat16_t>::run(std::forward<Args>(args)...);
    case SimType::kInt32: return F<int32_t>::run(std::forward<Args>(args)...);
    case SimType::kFloat64: return F<double>::run(std::forward<Args>(args)...);
    default: return F<float>::run(std::forward<Args>(args)...);
  }
}
template <typename T>
struct FillOp {
  static int run(std::vector<std::vector<unsigned char>>& send, RedOpKind op) {
    Payload<T>::fill(send, op);
    return 0;
  }
};
template <typename T>
struct CheckOp {
  static int64_t run(const SimConfig& cfg, int nranks, size_t count, const std::vector<std::vector<unsigned char>>& recv) {
    return Payload<T>::check(cfg, nranks, count, recv);
  }
};

// The types whose inputs and expected results fill/check above model exactly (dispatch's list). The
// simulator's kernels exist for all 12 types (kernels_inst.cc; the CCLAB_BACKEND=sim programs use them).
bool payload_type_supported(SimType t) {
  return t == SimType::kInt8 || t == SimType::kFloat16 || t == SimType::kBfloat16 || t == SimType::kFloat32 ||
         t == SimType::kInt32 || t == SimType::kFloat64;
}

// Rough count of slices a collective takes at step level (every rank, every channel), to pick the level.
// NVLS and NVLS-Tree: `nvls_loop` is the bytes one loop of a channel moves (heads x chunk, work_for's
// chunk); a loop costs a head 2 transfers of NVLS (its switch step, up and down) and about 6 of NVLS-Tree
// (its reduce and broadcast roles' switch steps and tree sends), as the step level counts them
// (dgx-h100 1 GiB NVLS: 16384; NVLS-Tree on 2 / 4 / 8 machines: 81920 / 425984 / 753664). A rank that
// is no head (`nvls_heads` of every `nvls_group` ranks are) copies into and out of every head's FIFO, a
// half slice each (gb200-nvl72, 32 heads of 72: 1 GiB took 22 s at step level; it is a flow-level run).
uint64_t estimate_slices(CollKind coll, size_t total_bytes, int nranks, int nch, int proto, AlgoKind algo,
                         double nvls_loop, int nvls_heads, int nvls_group) {
  const double per_channel = static_cast<double>(total_bytes) / std::max(1, nch);
  if ((algo == AlgoKind::kNvls || algo == AlgoKind::kNvlsTree) && nvls_loop > 0) {
    const double heads = nvls_group > 0 ? static_cast<double>(nranks) * nvls_heads / nvls_group : nranks;
    const double per_loop = (algo == AlgoKind::kNvls ? 2 : 6) * heads + (nranks - heads) * nvls_heads;
    return static_cast<uint64_t>(std::ceil(per_channel / nvls_loop) * per_loop * nch);
  }
  const double step = proto == kProtoSimple ? 512.0 * 1024 : (proto == kProtoLL ? 32.0 * 1024 : 600.0 * 1024);
  double steps_per_rank;
  if (algo == AlgoKind::kTree) {
    steps_per_rank = 2 * std::ceil(per_channel / step) + 2;
  } else {
    const double factor = coll == CollKind::kAllReduce ? 2.0 : 1.0;
    steps_per_rank = factor * std::max(1.0, static_cast<double>(nranks - 1)) *
                     std::max(1.0, std::ceil(per_channel / std::max(1.0, step * nranks)) * 2.0);
  }
  return static_cast<uint64_t>(steps_per_rank * nranks * nch);
}

}  // namespace

void World::fill_inputs(size_t count) {
  const size_t esize = sim_type_size(cfg_.type);
  // Point-to-point collectives: `count` per peer; the buffer that holds a block per peer has nranks.
  const P2pPattern p = cfg_.p2p;
  const bool ag = cfg_.coll == CollKind::kAllGather || p == P2pPattern::kGather || p == P2pPattern::kAllToAll;
  const bool rs = cfg_.coll == CollKind::kReduceScatter || p == P2pPattern::kScatter || p == P2pPattern::kAllToAll;
  const size_t send_elems = rs ? count * nranks_ : count;
  const size_t recv_elems = ag ? count * nranks_ : count;
  send_.assign(nranks_, std::vector<unsigned char>(send_elems * esize));
  recv_.assign(nranks_, std::vector<unsigned char>(recv_elems * esize, 0xA5));
  dispatch<FillOp>(cfg_.type, send_, cfg_.op);
}

int64_t World::check_outputs(size_t count) const {
  return dispatch<CheckOp>(cfg_.type, cfg_, nranks_, count, recv_);
}

// nccl-tests issues its iterations back to back: the thread that drives gpus_per_thread GPUs needs this
// long to issue one iteration on all of them, so the steady state is whichever is slower, the host
// issuing or the GPUs running (docs/simulator.md, "Accuracy").
static double host_issue_us(const SimConfig& cfg, int nchannels) {
  const Calibration& cal = cfg.calibration;
  return std::max(1, cfg.gpus_per_thread) * (cal.host_issue_us + cal.host_issue_per_channel_us * nchannels);
}

bool World::run_sizes(SimResult* out, std::string* error, const SimProgress& progress) {
  std::vector<size_t> sizes;
  for (size_t b = cfg_.min_bytes; b <= cfg_.max_bytes;) {
    sizes.push_back(b);
    size_t next = cfg_.increment > 0 ? b + cfg_.increment : static_cast<size_t>(std::ceil(b * cfg_.factor));
    if (next <= b) break;
    b = next;
  }
  const size_t esize = sim_type_size(cfg_.type);
  const bool per_rank = cfg_.coll == CollKind::kAllGather || cfg_.coll == CollKind::kReduceScatter;
  int done = 0;
  if (!live_start(error)) return false;
  struct LiveEnd {
    World* w;
    ~LiveEnd() { w->live_finish(); }
  } live_end{this};
  for (size_t bytes : sizes) {
    if (cfg_.p2p != P2pPattern::kNone) {
      if (!run_p2p_size(bytes, out, error)) return false;
      if (progress) progress(++done, static_cast<int>(sizes.size()));
      continue;
    }
    // nccl-tests' counts: per-rank chunks of all_gather / reduce_scatter, whole buffers otherwise.
    const size_t count = per_rank ? bytes / esize / nranks_ : bytes / esize;
    const size_t total = count * esize * (per_rank ? nranks_ : 1);
    Choice ch;
    if (!choose(cfg_.coll, total, &ch, error, cfg_.op == RedOpKind::kPreMulSum || cfg_.op == RedOpKind::kSumPostDiv,
                cfg_.type, cfg_.op))
      return false;
    SimSizeResult res;
    res.bytes = total;
    res.count = per_rank ? count * nranks_ : count;
    res.algo = ch.algo;
    if (ch.algo == AlgoKind::kCustom && custom_ != nullptr) res.custom_algo = custom_->name;
    res.proto = static_cast<ProtoKind>(ch.proto);
    res.nchannels = ch.nchannels;
    res.nthreads = ch.nthreads;
    res.predicted_us = ch.predicted_us;
    res.level = cfg_.level;
    if (res.level == SimLevel::kAuto) {  // a failure, a later change or jitter needs the step level (degrade.h)
      double nvls_loop = 0;
      if (ch.algo == AlgoKind::kNvls || ch.algo == AlgoKind::kNvlsTree)
        nvls_loop = static_cast<double>(work_for(cfg_.coll, count, esize, cfg_.root, RedOpArg{cfg_.op, 0, nranks_}, ch)
                                            .chunk_bytes) *
                    nvls_g_.nheads;
      res.level = !cfg_.payload && !cfg_.degrade.needs_step() &&
                          estimate_slices(cfg_.coll, total, nranks_, ch.nchannels, ch.proto, ch.algo, nvls_loop, nvls_g_.nheads,
                                          nvls_g_.group.empty() ? 0 : static_cast<int>(nvls_g_.group[0].size())) >
                              cfg_.step_limit
                      ? SimLevel::kFlow
                      : SimLevel::kStep;
    }
    if (cfg_.payload) fill_inputs(count);
    live_proto_ = ch.proto;
    const uint64_t before = transfers_;
    uint64_t flows = 0;
    double sum = 0;
    for (int it = 0; it < cfg_.warmup + cfg_.iters; ++it) {
      double t = 0;
      const double clock0 = sg4::Engine::get_clock();
      const bool ok = res.level == SimLevel::kFlow ? run_flow(count, ch, &t, &flows, error, &res.static_shares)
                                                   : run_once(count, ch, &t, error);
      if (!ok) {
        *error = std::string(coll_name(cfg_.coll)) + " of " + std::to_string(total) + " bytes: " + *error;
        if (aborted_ && tracing()) {  // a failed link: the trace up to the failure, with its stuck waits
          op_records_.push_back(OpRecord{op_count_ - 1, ch.algo, ch.proto, ch.nchannels, res.count, total,
                                         clock0 * 1e6, sg4::Engine::get_clock() * 1e6, cfg_.coll, cfg_.type,
                                         cfg_.op, cfg_.root});
          op_records_.back().failed = true;
          std::string werr;
          *error += write_trace(&werr) ? "\n(the trace " + cfg_.trace_path + " holds the run up to the failure)"
                                       : "\n(" + werr + ")";
        }
        return false;
      }
      if (it >= cfg_.warmup) sum += t;
      if (record_steps_ || live_) {
        op_records_.push_back(OpRecord{op_count_ - 1, ch.algo, ch.proto, ch.nchannels, res.count, total,
                                       clock0 * 1e6, sg4::Engine::get_clock() * 1e6, cfg_.coll, cfg_.type, cfg_.op,
                                       cfg_.root});
        live_op(op_records_.back());
      }
    }
    res.slices = res.level == SimLevel::kFlow ? flows : transfers_ - before;
    res.time_us = sum / std::max(1, cfg_.iters);
    res.host_us = host_issue_us(cfg_, ch.nchannels);
    res.time_us = std::max(res.time_us, res.host_us);
    res.algbw = res.time_us > 0 ? static_cast<double>(total) / (res.time_us * 1e3) : 0;
    res.busbw = res.algbw * bus_factor(cfg_.coll, nranks_);
    if (cfg_.payload) res.wrong = check_outputs(count);
    out->sizes.push_back(res);
    if (progress) progress(++done, static_cast<int>(sizes.size()));
  }
  for (size_t l = 0; l < link_bytes_.size(); ++l) {
    if (link_bytes_[l] <= 0) continue;
    SimLinkLoad ld;
    ld.link = static_cast<int>(l);
    ld.name = topo_.nodes[topo_.links[l].from].name + "->" + topo_.nodes[topo_.links[l].to].name;
    ld.bytes = link_bytes_[l];
    out->links.push_back(ld);
  }
  if (!cfg_.trace_path.empty() && !write_trace(error)) return false;
  if (cfg_.record_events) out->events = std::move(events_);
  return true;
}

bool World::run_p2p_size(size_t bytes, SimResult* out, std::string* error) {
  // nccl-tests' counts (cclab perf's coll_counts): sendrecv moves the whole size; alltoall, gather and
  // scatter a block per peer, the size / nranks rounded down to 16 bytes.
  const size_t esize = sim_type_size(cfg_.type);
  const bool blocks = cfg_.p2p != P2pPattern::kSendRecv;
  size_t count = bytes / esize;
  if (blocks) {
    const size_t align = esize < 16 ? 16 / esize : 1;
    count = (count / static_cast<size_t>(nranks_)) & ~(align - 1);
  }
  const size_t per_peer = count * esize;
  SimSizeResult res;
  res.p2p = true;
  res.count = blocks ? count * nranks_ : count;
  res.bytes = res.count * esize;
  res.proto = ProtoKind::kSimple;
  res.nchannels = p2p_nparts(p2p_, nranks_, per_peer);
  res.nthreads = 512;  // NCCL_MAX_NTHREADS: a p2p plan's threads per block (scheduleP2pTasksToPlan)
  res.level = SimLevel::kStep;
  if (cfg_.payload) fill_inputs(count);
  live_proto_ = kProtoSimple;
  const uint64_t before = transfers_;
  double sum = 0;
  for (int it = 0; it < cfg_.warmup + cfg_.iters; ++it) {
    double t = 0;
    const double clock0 = sg4::Engine::get_clock();
    if (!run_p2p_once(per_peer, &t, error)) {
      *error = std::string(sim_p2p_name(cfg_.p2p)) + " of " + std::to_string(res.bytes) + " bytes: " + *error;
      return false;
    }
    if (it >= cfg_.warmup) sum += t;
    if (record_steps_ || live_) {
      op_records_.push_back(OpRecord{op_count_ - 1, AlgoKind::kRing, kProtoSimple, res.nchannels, res.count, res.bytes,
                                     clock0 * 1e6, sg4::Engine::get_clock() * 1e6, CollKind::kSendRecv, cfg_.type,
                                     cfg_.op, cfg_.root});
      live_op(op_records_.back());
    }
  }
  res.slices = transfers_ - before;
  res.time_us = sum / std::max(1, cfg_.iters);
  res.host_us = host_issue_us(cfg_, res.nchannels);
  res.time_us = std::max(res.time_us, res.host_us);
  res.algbw = res.time_us > 0 ? static_cast<double>(res.bytes) / (res.time_us * 1e3) : 0;
  res.busbw = res.algbw * p2p_bus_factor(cfg_.p2p, nranks_);
  if (cfg_.payload) res.wrong = check_outputs(count);
  out->sizes.push_back(res);
  return true;
}

// ---- in process ----------------------------------------------------------------------------------

namespace {

bool validate(const SimConfig& cfg, std::string* error) {
  auto fail = [&](const std::string& m) {
    *error = m;
    return false;
  };
  if (cfg.min_bytes > cfg.max_bytes)
    return fail("sizes: the smallest size (" + std::to_string(cfg.min_bytes) + ") is larger than the largest (" +
                std::to_string(cfg.max_bytes) + ")");
  if (cfg.increment == 0 && !(cfg.factor > 1.0) && cfg.min_bytes != cfg.max_bytes)
    return fail("sizes: the step factor must be > 1 (got " + std::to_string(cfg.factor) + ")");
  if (cfg.iters < 1) return fail("iterations must be >= 1 (got " + std::to_string(cfg.iters) + ")");
  if (cfg.warmup < 0) return fail("warmup iterations must be >= 0 (got " + std::to_string(cfg.warmup) + ")");
  if (cfg.machines < 1) return fail("machines must be >= 1 (got " + std::to_string(cfg.machines) + ")");
  if (cfg.nranks < 0) return fail("ranks must be >= 0 (got " + std::to_string(cfg.nranks) + ")");
  const CollKind c = cfg.coll;
  if (cfg.p2p != P2pPattern::kNone) {
    if (c != CollKind::kSendRecv) return fail("collective: a point-to-point pattern runs as kSendRecv");
    if (cfg.root < 0 || (cfg.nranks > 0 && cfg.root >= cfg.nranks))
      return fail("root: " + std::to_string(cfg.root) + " is not a rank");
    if (cfg.level == SimLevel::kFlow)
      return fail(std::string("level flow: ") + sim_p2p_name(cfg.p2p) +
                  " runs at step level only (the flow level replays ring and tree channels)");
  } else if (c != CollKind::kAllReduce && c != CollKind::kAllGather && c != CollKind::kReduceScatter &&
      c != CollKind::kBroadcast && c != CollKind::kReduce)
    return fail("collective: only all_reduce, all_gather, reduce_scatter, broadcast, reduce and the point-to-point "
                "patterns (alltoall, gather, scatter, sendrecv) are simulated");
  // avg (ncclAvg) and mulsum (a pre-multiplied sum) time as NCCL runs them (the same data loops; no NVLS,
  // no PAT ReduceScatter: World::choose); payload mode checks the four plain reductions only.
  const bool plain_op = cfg.op == RedOpKind::kSum || cfg.op == RedOpKind::kProd || cfg.op == RedOpKind::kMax ||
                        cfg.op == RedOpKind::kMin;
  if (!plain_op && cfg.op != RedOpKind::kSumPostDiv && cfg.op != RedOpKind::kPreMulSum)
    return fail("op: the simulator runs sum, prod, max, min, avg and mulsum");
  if (!plain_op && cfg.payload)
    return fail("op: payload mode checks sum, prod, max and min (avg and mulsum run timing-only)");
  if (cfg.payload && !payload_type_supported(cfg.type))
    return fail(std::string("type ") + sim_type_name(cfg.type) +
                ": payload mode runs int8, half, bfloat16, float, int32 and double");
  if (cfg.level == SimLevel::kFlow && cfg.payload)
    return fail("level flow: moves no data; payload mode needs the step level");
  if (cfg.level == SimLevel::kFlow && cfg.degrade.needs_step())
    return fail("level flow: a failed link, a change after time 0 (LINK=FACTOR@TIME) or jitter needs the step level "
                "(the flow level replays the run at rates fixed at its start); use --level step or auto");
  return true;
}

double peak_rss_mib() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_maxrss / 1024.0;
}

}  // namespace

bool simulate_in_process(const SimConfig& cfg_in, SimResult* out, std::string* error, const SimProgress& progress) {
  if (!validate(cfg_in, error)) return false;
  SimConfig cfg = cfg_in;
  const auto t0 = std::chrono::steady_clock::now();
  EngineArgs args;
  sg4::Engine engine(&args.argc, args.argv);
  configure_engine(engine);
  World world(cfg);
  if (!world.setup(engine, error)) return false;
  *out = SimResult{};
  out->topo_description = world.topo().description.empty() ? world.topo().name : world.topo().description;
  out->nranks = world.nranks();
  out->machines = world.topo().machines;
  out->p2p = world.p2p_channels();
  bool ok = false;
  std::string err;
  sg4::Engine::on_deadlock_cb([&] {
    err = "the simulated ranks deadlocked (every actor waits for another):" + world.describe_stuck();
  });
  out->degraded = world.degraded();
  world.start_degradation();
  sg4::Host* ctl = world.rank_host(0);
  sg4::Actor::create("controller", ctl, [&] { ok = world.run_sizes(out, &err, progress); });
  engine.run();
  if (!ok) {
    *error = err.empty() ? "the simulation ended before its controller finished" : err;
    return false;
  }
  out->wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out->peak_rss_mib = peak_rss_mib();
  return true;
}

// ---- forked child --------------------------------------------------------------------------------

namespace {

nlohmann::json to_json(const SimResult& r) {
  nlohmann::json j;
  j["topo"] = r.topo_description;
  j["nranks"] = r.nranks;
  j["machines"] = r.machines;
  j["wall_s"] = r.wall_s;
  j["rss"] = r.peak_rss_mib;
  j["p2p"] = {r.p2p.nchannels, r.p2p.per_peer, r.p2p.chunk_bytes, r.p2p.multi_node};
  for (const SimSizeResult& s : r.sizes)
    j["sizes"].push_back({s.bytes, s.count, static_cast<int>(s.algo), static_cast<int>(s.proto), s.nchannels,
                          static_cast<int>(s.level), s.time_us, s.algbw, s.busbw, s.predicted_us, s.wrong, s.slices,
                          s.nthreads, s.custom_algo, s.p2p, s.host_us, s.static_shares});
  for (const SimLinkLoad& l : r.links) j["links"].push_back({l.link, l.name, l.bytes, l.busy_us});
  for (const SimDegraded& d : r.degraded) {
    nlohmann::json carriers = nlohmann::json::array();
    for (const SimDegraded::Carrier& c : d.carriers) carriers.push_back({c.kind, c.from, c.to, c.channels});
    j["degraded"].push_back({d.label, d.links, carriers});
  }
  for (const StepRecord& e : r.events)
    j["events"].push_back({e.rank, e.channel, e.send_peer, e.recv_peer, e.step, static_cast<int>(e.prim),
                           static_cast<int>(e.coll), e.op_count, e.bytes, e.begin_us, e.end_us, e.offset, e.data_us});
  return j;
}

void from_json(const nlohmann::json& j, SimResult* r) {
  r->topo_description = j.value("topo", "");
  r->nranks = j.value("nranks", 0);
  r->machines = j.value("machines", 0);
  r->wall_s = j.value("wall_s", 0.0);
  r->peak_rss_mib = j.value("rss", 0.0);
  if (j.contains("p2p")) {
    r->p2p.nchannels = j["p2p"][0];
    r->p2p.per_peer = j["p2p"][1];
    r->p2p.chunk_bytes = j["p2p"][2];
    r->p2p.multi_node = j["p2p"][3];
  }
  if (j.contains("sizes"))
    for (const auto& a : j["sizes"]) {
      SimSizeResult s;
      s.bytes = a[0];
      s.count = a[1];
      s.algo = static_cast<AlgoKind>(a[2].get<int>());
      s.proto = static_cast<ProtoKind>(a[3].get<int>());
      s.nchannels = a[4];
      s.level = static_cast<SimLevel>(a[5].get<int>());
      s.time_us = a[6];
      s.algbw = a[7];
      s.busbw = a[8];
      s.predicted_us = a[9];
      s.wrong = a[10];
      s.slices = a[11];
      s.nthreads = a[12];
      s.custom_algo = a[13];
      s.p2p = a[14];
      s.host_us = a[15];
      s.static_shares = a[16];
      r->sizes.push_back(s);
    }
  if (j.contains("links"))
    for (const auto& a : j["links"]) r->links.push_back(SimLinkLoad{a[0], a[1], a[2], a[3]});
  if (j.contains("degraded"))
    for (const auto& a : j["degraded"]) {
      SimDegraded d;
      d.label = a[0];
      d.links = a[1].get<std::vector<int>>();
      for (const auto& c : a[2]) d.carriers.push_back(SimDegraded::Carrier{c[0], c[1], c[2], c[3].get<std::vector<int>>()});
      r->degraded.push_back(d);
    }
  if (j.contains("events"))
    for (const auto& a : j["events"]) {
      StepRecord e;
      e.rank = a[0];
      e.channel = a[1];
      e.send_peer = a[2];
      e.recv_peer = a[3];
      e.step = a[4];
      e.prim = static_cast<PrimKind>(a[5].get<int>());
      e.coll = static_cast<CollKind>(a[6].get<int>());
      e.op_count = a[7];
      e.bytes = a[8];
      e.begin_us = a[9];
      e.end_us = a[10];
      e.offset = a[11];
      e.data_us = a[12];
      r->events.push_back(e);
    }
}

bool write_all(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

bool simulate(const SimConfig& cfg, SimResult* out, std::string* error, const SimProgress& progress) {
  if (!validate(cfg, error)) return false;
  int fds[2];
  if (pipe(fds) != 0) {
    *error = std::string("pipe: ") + strerror(errno);
    return false;
  }
  fflush(stdout);
  fflush(stderr);
  const pid_t pid = fork();
  if (pid < 0) {
    *error = std::string("fork: ") + strerror(errno);
    close(fds[0]);
    close(fds[1]);
    return false;
  }
  if (pid == 0) {
    close(fds[0]);
    // Messages: "P done total\n" progress lines, then "R <json>\n" or "E <message>\n".
    SimResult res;
    std::string err;
    const bool ok = simulate_in_process(cfg, &res, &err, [&](int done, int total) {
      write_all(fds[1], "P " + std::to_string(done) + " " + std::to_string(total) + "\n");
    });
    std::string msg = ok ? "R " + to_json(res).dump() + "\n" : "E " + err + "\n";
    for (char& c : msg)  // one line over the pipe: the message's own line breaks travel as \x1f
      if (c == '\n' && &c != &msg.back()) c = '\x1f';
    write_all(fds[1], msg);
    close(fds[1]);
    _exit(ok ? 0 : 1);
  }
  close(fds[1]);
  std::string buf, line;
  char chunk[65536];
  bool got = false;
  for (;;) {
    ssize_t n = read(fds[0], chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    buf.append(chunk, static_cast<size_t>(n));
    size_t nl;
    while ((nl = buf.find('\n')) != std::string::npos) {
      line = buf.substr(0, nl);
      buf.erase(0, nl + 1);
      if (line.size() > 2 && line[0] == 'P') {
        int d = 0, t = 0;
        if (sscanf(line.c_str() + 2, "%d %d", &d, &t) == 2 && progress) progress(d, t);
      } else if (line.size() >= 2 && line[0] == 'R') {
        *out = SimResult{};
        from_json(nlohmann::json::parse(line.substr(2)), out);
        got = true;
      } else if (line.size() >= 2 && line[0] == 'E') {
        *error = line.substr(2);
        std::replace(error->begin(), error->end(), '\x1f', '\n');
      }
    }
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (got) return true;
  if (error->empty()) {
    if (WIFSIGNALED(status))
      *error = "the simulation process died of signal " + std::to_string(WTERMSIG(status));
    else
      *error = "the simulation process exited with status " + std::to_string(WEXITSTATUS(status)) +
               " without a result";
  }
  return false;
}

}  // namespace sim
}  // namespace cclab
