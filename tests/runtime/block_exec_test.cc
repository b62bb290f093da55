// The CUDA backend's kernel body (kernels/block_kernel.h: run_block over BlockExec) run on the host: each
// thread block is played by `lanes` std::threads sharing a barrier, exactly as the GPU kernel runs it
// over DeviceBlock. For every collective x protocol x a spread of datatypes, ops, counts and lane
// counts, the bytes it produces must equal the host executor's (HostExec, the tested host path) on the
// same rings and trees -- byte for byte, with inputs whose reduction order matters (random floats), so
// a lane mapping that reduced in another order, skipped or duplicated a pack, or raced would show.
// Integer runs are also checked against the exact fold. Aborts, size mismatches and step records
// (CCLAB_TRACE on the CUDA backend) go through the same BlockExec and are checked here too. So are custom
// algorithms built into the kernels (kernels/custom_block.h): the schedule files below are compiled in as
// the .cu files CMake generates from CCLAB_CUSTOM_ALGOS compile them (CCLAB_CUSTOM_BUILTIN defined: the
// CCLAB_CUSTOM_ALGORITHM line exports no plugin) and run on host threads playing each block.
#define CCLAB_CUSTOM_BUILTIN(Algo)

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <type_traits>
#include <vector>

#include "backends/host/host_exec.h"
#include "docs/examples/algorithms/two_shot.cc"
#include "kernels/block_kernel.h"
#include "kernels/collectives.h"
#include "kernels/custom_block.h"
#include "kernels/custom_exec.h"
#include "labs/solutions/08-your-own-algorithm/my_allreduce.cc"
#include "tests/algorithms/bad_call.cc"

namespace cclab {
namespace {

#ifdef CCLAB_TSAN
extern "C" void AnnotateIgnoreReadsBegin(const char* file, int line);
extern "C" void AnnotateIgnoreReadsEnd(const char* file, int line);
void peek_begin() { AnnotateIgnoreReadsBegin(__FILE__, __LINE__); }
void peek_end() { AnnotateIgnoreReadsEnd(__FILE__, __LINE__); }
#else
void peek_begin() {}
void peek_end() {}
#endif

// ---- a thread block played by host threads ---------------------------------------------------------

// The vote of one LL128 line group (8 lanes, as a warp's __any_sync over them): a generation barrier
// on atomics, spinning with yield (a group votes once per line, too often for a condition variable).
// The last lane to arrive publishes the result with release; the others acquire it, so everything a
// lane did before the vote happens before what any lane of the group does after it.
struct EmuGroup {
  std::atomic<int> arrived{0};
  std::atomic<int> votes{0};
  std::atomic<uint64_t> gen{0};
  bool result = false;

  bool any(bool v) {
    const uint64_t g = gen.load(std::memory_order_acquire);
    if (v) votes.fetch_add(1, std::memory_order_relaxed);
    if (arrived.fetch_add(1, std::memory_order_acq_rel) == kLL128Parts - 1) {
      result = votes.load(std::memory_order_relaxed) != 0;
      votes.store(0, std::memory_order_relaxed);
      arrived.store(0, std::memory_order_relaxed);
      gen.store(g + 1, std::memory_order_release);
      return result;
    }
    for (int i = 0; gen.load(std::memory_order_acquire) == g; ++i) {
      // Yield first, then sleep a little (see EmuBlock::pause; here the group waits on all 8 lanes).
      if (i < 64)
        std::this_thread::yield();
      else
        std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    return result;  // not rewritten before this lane arrives at the group's next vote
  }
};

struct EmuShared {
  explicit EmuShared(int n, const std::atomic<int>* abort)
      : lanes(n), groups(static_cast<size_t>(n / kLL128Parts)), abort_flag(abort) {}
  std::mutex m;
  std::condition_variable cv;
  int lanes;
  int arrived = 0;
  uint64_t gen = 0;
  bool vote = false;
  bool result = false;
  std::vector<EmuGroup> groups;  // the whole 8-lane groups of the block
  const std::atomic<int>* abort_flag;
};

class EmuBlock {
 public:
  EmuBlock(EmuShared* s, int tid) : s_(s), tid_(tid) {}
  int tid() const { return tid_; }
  int nthreads() const { return s_->lanes; }
  void sync() { (void)sync_or(false); }
  bool sync_or(bool v) {
    std::unique_lock<std::mutex> l(s_->m);
    s_->vote = s_->vote || v;
    const uint64_t g = s_->gen;
    if (++s_->arrived == s_->lanes) {
      s_->result = s_->vote;
      s_->vote = false;
      s_->arrived = 0;
      ++s_->gen;
      s_->cv.notify_all();
      return s_->result;
    }
    s_->cv.wait(l, [&] { return s_->gen != g; });
    return s_->result;
  }
  // A GPU's volatile counter accesses with __threadfence() around them: relaxed atomics and fences.
  // ThreadSanitizer does not model fences, so under it the counter accesses carry the fences' ordering
  // themselves (the same guarantee; x86 compiles both alike).
#ifdef CCLAB_TSAN
  static constexpr int kCounterLoad = __ATOMIC_ACQUIRE, kCounterStore = __ATOMIC_RELEASE;
#else
  static constexpr int kCounterLoad = __ATOMIC_RELAXED, kCounterStore = __ATOMIC_RELAXED;
#endif
  uint64_t load(const uint64_t* p) const { return __atomic_load_n(p, kCounterLoad); }
  void store(uint64_t* p, uint64_t v) const { __atomic_store_n(p, v, kCounterStore); }
  void fence() const { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
  // LL128 line groups. A GPU's warp writes the 8 parts of a line in one instruction; host lanes store
  // theirs apart, so the group meets at a barrier before the flag part is stored with release: a
  // receiver that acquires the flag and then votes sees all 8 parts (BlockExec's contract).
  bool group_any(bool v) { return s_->groups[static_cast<size_t>(tid_ / kLL128Parts)].any(v); }
  void store_part(uint64_t* p, uint64_t lo, uint64_t hi, bool flag_part) {
    if (!flag_part) {
      __atomic_store_n(&p[0], lo, __ATOMIC_RELAXED);
      __atomic_store_n(&p[1], hi, __ATOMIC_RELAXED);
    }
    (void)group_any(false);
    if (flag_part) {
      __atomic_store_n(&p[0], lo, __ATOMIC_RELAXED);
      __atomic_store_n(&p[1], hi, __ATOMIC_RELEASE);
    }
  }
  void load_part(const uint64_t* p, uint64_t* lo, uint64_t* hi, bool flag_part) const {
    *hi = __atomic_load_n(&p[1], flag_part ? __ATOMIC_ACQUIRE : __ATOMIC_RELAXED);
    *lo = __atomic_load_n(&p[0], __ATOMIC_RELAXED);
  }
  bool abort_requested() const { return s_->abort_flag != nullptr && s_->abort_flag->load() != 0; }
  // A GPU lane's __nanosleep between polls: a yield while yields come straight back. On a loaded
  // machine a yield hands the CPU to every busy neighbour for a whole time slice, and a block that
  // polls a thousand times between abort checks then takes minutes to see an abort; so after a slow
  // yield the lane sleeps briefly instead, for its next 256 polls.
  void pause() const {
    thread_local int sleeps = 0;
    if (sleeps > 0) {
      --sleeps;
      std::this_thread::sleep_for(std::chrono::microseconds(20));
      return;
    }
    const auto t0 = std::chrono::steady_clock::now();
    std::this_thread::yield();
    if (std::chrono::steady_clock::now() - t0 > std::chrono::microseconds(500)) sleeps = 256;
  }
  double now_us() const {
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
  }

 private:
  EmuShared* s_;
  int tid_;
};

// ---- connections between every pair of ranks on every channel, zeroed as fresh FIFOs are -----------

class Mesh {
 public:
  Mesh(int nranks, int nch, int buff_bytes, int step_bytes) : n_(nranks), nch_(nch) {
    const size_t total = fifo_total_bytes(static_cast<size_t>(buff_bytes));
    for (int ch = 0; ch < nch; ++ch)
      for (int a = 0; a < n_; ++a)
        for (int b = 0; b < n_; ++b) {
          if (a == b) continue;
          void* mem = std::aligned_alloc(4096, (total + 4095) / 4096 * 4096);
          std::memset(mem, 0, total);
          mem_.emplace_back(mem, &std::free);
          ConnInfo c;
          c.hdr = static_cast<ConnFifoHeader*>(mem);
          c.buff = static_cast<char*>(mem) + kFifoDataOffset;
          c.step_bytes = step_bytes;
          c.peer = b;
          send_[{ch, a, b}] = c;
          c.peer = a;
          recv_[{ch, a, b}] = c;
        }
  }
  // a's end of a -> b, and b's end of it.
  ConnInfo* send(int ch, int a, int b) { return a < 0 || b < 0 ? nullptr : &send_.at({ch, a, b}); }
  ConnInfo* recv(int ch, int a, int b) { return a < 0 || b < 0 ? nullptr : &recv_.at({ch, a, b}); }
  // Every FIFO's slots (not the headers, whose doorbells only the host executor rings), in a fixed order:
  // what went over the wire, last step of each slot.
  std::vector<unsigned char> wire() const {
    std::vector<unsigned char> out;
    for (const auto& kv : recv_) {
      const unsigned char* b = reinterpret_cast<const unsigned char*>(kv.second.buff);
      out.insert(out.end(), b, b + static_cast<size_t>(kv.second.step_bytes) * kNcclSteps);
    }
    return out;
  }

 private:
  int n_, nch_;
  std::vector<std::unique_ptr<void, void (*)(void*)>> mem_;
  std::map<std::tuple<int, int, int>, ConnInfo> send_, recv_;
};

// Channel ch's ring seen from rank r: even channels go up, odd channels go down.
std::vector<int> ring_of(int n, int ch, int r) {
  std::vector<int> v(n);
  for (int i = 0; i < n; ++i) v[i] = ch % 2 == 0 ? (r + i) % n : (r - i + n) % n;
  return v;
}

struct Case {
  CollKind coll;
  int proto;
  bool tree;
  int nranks;
  int nch;
  size_t count;
  RedOpArg op;
  int lanes;
  bool pat = false;  // PAT all_gather / reduce_scatter (kernels/pat.h) instead of the ring
};

int buff_bytes_of(int proto) {
  // Small FIFOs: many steps per operation, so credits wrap the 8 slots often.
  if (proto == kProtoLL) return 8 * 64 * kLLLineBytes;         // 64 lines (512 B of payload) per step
  if (proto == kProtoLL128) return 8 * 32 * kLL128LineBytes;   // 32 lines (3840 B) per step
  return 8 * 4096;                                             // 4 KiB slots
}
int step_bytes_of(int proto) { return buff_bytes_of(proto) / kNcclSteps; }

size_t in_elems(const Case& c) { return c.coll == CollKind::kReduceScatter ? c.count * c.nranks : c.count; }
size_t out_elems(const Case& c) { return c.coll == CollKind::kAllGather ? c.count * c.nranks : c.count; }

CollWork work_of(const Case& c, int r, const void* in, void* out, uint64_t op_count) {
  CollWork w{};
  w.coll = c.coll;
  w.count = c.count;
  w.send = in;
  w.recv = out;
  w.root = c.nranks > 1 ? 1 : 0;
  w.rank = r;
  w.nranks = c.nranks;
  w.nchannels = c.nch;
  w.proto = c.proto;
  w.redop = c.op;
  w.redop.nranks = c.nranks;
  w.op_count = op_count;
  const int bb = buff_bytes_of(c.proto);
  w.chunk_bytes = c.pat    ? pat_chunk_bytes(c.coll, bb, c.count * c.nranks * 4, c.nch)
                  : c.tree ? tree_chunk_bytes(c.proto, bb, in_elems(c) * 4, c.nch, 2, c.nranks)
                           : ring_chunk_bytes(c.coll, c.proto, bb);
  return w;
}

TreeLinks tree_of(const Case& c, int ch, int r) {
  TreeLinks t;
  node_tree_with_chain(2, c.nranks / 2, r, 2 * ch >= c.nch ? 1 : 0, &t);
  return t;
}

// Runs `ops` operations of case c on fresh connections, with the host executor (lanes == 0) or the
// block executor; out[r] holds rank r's output after each op in turn.
// `wire`, if given, receives every FIFO's slots at the end (Mesh::wire).
template <typename T>
std::string run(const Case& c, int lanes, const std::vector<std::vector<T>>& in, std::vector<std::vector<T>>* out,
                int ops, std::vector<unsigned char>* wire = nullptr) {
  Mesh mesh(c.nranks, c.nch, buff_bytes_of(c.proto), step_bytes_of(c.proto));
  std::vector<std::string> err(static_cast<size_t>(c.nranks) * c.nch);
  std::atomic<int> abort_flag{0};
  for (int op = 1; op <= ops; ++op) {
    std::vector<std::thread> threads;
    for (int r = 0; r < c.nranks; ++r)
      for (int ch = 0; ch < c.nch; ++ch) {
        const std::vector<int> ring = ring_of(c.nranks, ch, r);
        const TreeLinks tree = tree_of(c, ch, r);
        const CollWork w = work_of(c, r, in[r].data(), (*out)[r].data(), static_cast<uint64_t>(op));
        BlockWork bw{};
        bw.kind = c.pat ? kBlockPat : c.tree ? kBlockTree : kBlockRing;
        bw.channel = ch;
        // PAT: the connections along every dimension.
        auto pat = std::make_shared<PatConns>();
        if (c.pat) {
          pat->ndims = pat_dims(c.nranks);
          for (int d = 0; d < pat->ndims; ++d) {
            const int down = pat_peer(r, c.nranks, d, false), up = pat_peer(r, c.nranks, d, true);
            pat->send_down[d] = mesh.send(ch, r, down);
            pat->recv_down[d] = mesh.recv(ch, down, r);
            pat->send_up[d] = mesh.send(ch, r, up);
            pat->recv_up[d] = mesh.recv(ch, up, r);
          }
          bw.pat = pat.get();
        }
        bw.coll = w;
        bw.tree = tree;
        if (c.tree) {
          bw.conn[0] = mesh.recv(ch, tree.up, r);
          bw.conn[1] = mesh.send(ch, r, tree.up);
          for (int i = 0; i < tree.ndown; ++i) {
            bw.conn[2 + i] = mesh.recv(ch, tree.down[i], r);
            bw.conn[5 + i] = mesh.send(ch, r, tree.down[i]);
          }
        } else if (c.nranks > 1) {
          bw.conn[0] = mesh.recv(ch, ring[c.nranks - 1], r);
          bw.conn[1] = mesh.send(ch, r, ring[1]);
        }
        std::string* e = &err[static_cast<size_t>(r) * c.nch + ch];
        if (lanes == 0) {
          threads.emplace_back([=, &abort_flag] {
            HostExecConfig cfg;
            cfg.abort_flag = &abort_flag;
            cfg.timeout_us = 60e6;
            HostExec exec(cfg);
            const RingView rv{ring.data(), c.nranks};
            bool ok;
            if (c.pat) {
              ok = run_pat_channel<T>(exec, w, *pat, ch);
            } else if (c.tree) {
              TreeConns tc{bw.conn[0], bw.conn[1], {bw.conn[2], bw.conn[3], bw.conn[4]},
                           {bw.conn[5], bw.conn[6], bw.conn[7]}, tree.ndown};
              ok = run_tree_channel<T>(exec, w, tree, tc, ch);
            } else {
              ok = run_ring_channel<T>(exec, w, rv, ch, bw.conn[0], bw.conn[1]);
            }
            if (!ok) *e = "host executor: " + exec.failure_message();
          });
        } else {
          auto shared = std::make_shared<EmuShared>(lanes, &abort_flag);
          auto ranks = std::make_shared<std::vector<int>>(ring);
          for (int l = 0; l < lanes; ++l)
            threads.emplace_back([=] {
              BlockWork w2 = bw;
              w2.ring_ranks = ranks->data();
              (void)pat;  // keeps w2.pat alive
              EmuBlock b(shared.get(), l);
              if (!run_block<T>(b, w2) && l == 0) *e = "block executor aborted";
            });
        }
      }
    for (auto& t : threads) t.join();
    for (auto& e : err)
      if (!e.empty()) return e;
  }
  if (wire != nullptr) *wire = mesh.wire();
  return "";
}

template <typename T>
T from_int(int v) {
  if constexpr (std::is_same<T, half_t>::value || std::is_same<T, bfloat16_t>::value ||
                std::is_same<T, fp8_e4m3_t>::value || std::is_same<T, fp8_e5m2_t>::value)
    return from_float<T>(static_cast<float>(v));
  else
    return static_cast<T>(v);
}

template <typename T>
std::vector<std::vector<T>> inputs(const Case& c, bool exact, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::vector<T>> in(c.nranks, std::vector<T>(in_elems(c)));
  for (auto& v : in)
    for (auto& x : v) {
      if constexpr (std::is_integral<T>::value)
        x = static_cast<T>(rng() % 7);
      else if (exact)
        x = from_int<T>(static_cast<int>(rng() % 5));
      else if constexpr (std::is_floating_point<T>::value)
        x = static_cast<T>(std::uniform_real_distribution<double>(-1, 1)(rng));
      else
        x = from_float<T>(std::uniform_real_distribution<float>(-2, 2)(rng));
    }
  return in;
}

std::string describe(const Case& c, const char* type) {
  static const char* colls[] = {"AllReduce", "Broadcast", "Reduce", "AllGather", "ReduceScatter"};
  static const char* protos[] = {"LL", "LL128", "Simple"};
  return std::string(colls[static_cast<int>(c.coll)]) + (c.pat ? "/PAT/" : c.tree ? "/Tree/" : "/Ring/") +
         protos[c.proto] + " " +
         type + " ranks=" + std::to_string(c.nranks) + " ch=" + std::to_string(c.nch) + " count=" +
         std::to_string(c.count) + " op=" + std::to_string(static_cast<int>(c.op.kind)) + " lanes=" +
         std::to_string(c.lanes);
}

// The block executor's bytes equal the host executor's, over two operations on the same connections:
// the outputs, and what each wrote into the FIFOs (the wire format, LL128 lines stored part by part
// by 8-lane groups included).
template <typename T>
void expect_same(const Case& c, const char* type, uint32_t seed) {
  SCOPED_TRACE(describe(c, type));
  const auto in = inputs<T>(c, false, seed);
  std::vector<std::vector<T>> host(c.nranks, std::vector<T>(out_elems(c))), block = host;
  // Poison the outputs alike: what an executor does not write stays equal, what it writes must match.
  for (int r = 0; r < c.nranks && out_elems(c) > 0; ++r) {
    std::memset(host[r].data(), 0x5a, host[r].size() * sizeof(T));
    std::memset(block[r].data(), 0x5a, block[r].size() * sizeof(T));
  }
  std::vector<unsigned char> host_wire, block_wire;
  ASSERT_EQ(run<T>(c, 0, in, &host, 2, &host_wire), "");
  ASSERT_EQ(run<T>(c, c.lanes, in, &block, 2, &block_wire), "");
  for (int r = 0; r < c.nranks; ++r)
    ASSERT_TRUE(host[r].empty() || std::memcmp(host[r].data(), block[r].data(), host[r].size() * sizeof(T)) == 0)
        << "rank " << r;
  ASSERT_EQ(host_wire.size(), block_wire.size());
  ASSERT_TRUE(host_wire == block_wire) << "the FIFOs differ: the wire bytes are not the host executor's";
}

const RedOpArg kSum{RedOpKind::kSum, 0, 1};
const RedOpArg kMax{RedOpKind::kMax, 0, 1};
const RedOpArg kAvg{RedOpKind::kSumPostDiv, 0, 1};
// PreMulSum by 0.5, the scalar in T's own representation (as ncclRedOpCreatePreMulSum stores it).
template <typename T>
RedOpArg premul_half() {
  RedOpArg a{RedOpKind::kPreMulSum, 0, 1};
  if constexpr (std::is_floating_point<T>::value)
    a.scalar_bits = scalar_to_bits(static_cast<T>(0.5));
  else
    a.scalar_bits = scalar_to_bits(from_float<T>(0.5f));
  return a;
}

// PreMulSum by 0.25 read from memory (ncclScalarDevice: the block reads it when it runs).
RedOpArg premul_in_memory() {
  static const float quarter = 0.25f;
  return RedOpArg{RedOpKind::kPreMulSum, 0, 1, &quarter};
}

const CollKind kColls[] = {CollKind::kAllReduce, CollKind::kAllGather, CollKind::kReduceScatter,
                           CollKind::kBroadcast, CollKind::kReduce};

class BlockExecRing : public ::testing::TestWithParam<int> {};

TEST_P(BlockExecRing, EveryCollectiveMatchesTheHostExecutor) {
  const int proto = GetParam();
  uint32_t seed = 1;
  for (CollKind coll : kColls)
    for (size_t count : {size_t(0), size_t(1), size_t(7), size_t(1000), size_t(6151)}) {
      const int lanes = count % 2 == 0 ? 4 : 3;
      expect_same<float>({coll, proto, false, 3, 2, count, kSum, lanes}, "float", seed++);
      if (count >= 1000) {
        expect_same<half_t>({coll, proto, false, 4, 2, count, kAvg, lanes}, "half", seed++);
        expect_same<bfloat16_t>({coll, proto, false, 2, 1, count, premul_half<bfloat16_t>(), 2}, "bf16", seed++);
        expect_same<float>({coll, proto, false, 3, 1, count, premul_in_memory(), 4}, "float, scalar in memory", seed++);
        expect_same<fp8_e4m3_t>({coll, proto, false, 3, 2, count, kMax, 5}, "fp8e4m3", seed++);
        expect_same<double>({coll, proto, false, 4, 1, count, kSum, 4}, "double", seed++);
        expect_same<int8_t>({coll, proto, false, 3, 1, count + 3, kSum, 4}, "int8", seed++);
      }
    }
}

INSTANTIATE_TEST_SUITE_P(Protocols, BlockExecRing, ::testing::Values(kProtoSimple, kProtoLL, kProtoLL128),
                         [](const ::testing::TestParamInfo<int>& i) {
                           return std::string(i.param == kProtoLL ? "LL" : i.param == kProtoLL128 ? "LL128" : "Simple");
                         });

TEST(BlockExecTree, AllReduceMatchesTheHostExecutor) {
  uint32_t seed = 100;
  for (int proto : {kProtoSimple, kProtoLL, kProtoLL128})
    for (size_t count : {size_t(1), size_t(999), size_t(20000)}) {
      expect_same<float>({CollKind::kAllReduce, proto, true, 6, 2, count, kSum, 4}, "float", seed++);
      expect_same<bfloat16_t>({CollKind::kAllReduce, proto, true, 4, 2, count, kAvg, 3}, "bf16", seed++);
    }
}

// PAT (kernels/pat.h) in the CUDA kernel's body: all_gather and reduce_scatter on a power of two and on
// 5 ranks (scratch chunks for the partial sums, many 4 KiB chunks per channel), several lane counts.
TEST(BlockExecPat, AllGatherAndReduceScatterMatchTheHostExecutor) {
  uint32_t seed = 300;
  for (CollKind coll : {CollKind::kAllGather, CollKind::kReduceScatter})
    for (int n : {8, 5})
      for (size_t count : {size_t(1), size_t(1000), size_t(6151)}) {
        Case c{coll, kProtoSimple, false, n, 2, count, kSum, 4};
        c.pat = true;
        expect_same<float>(c, "float", seed++);
        c.op = kAvg;
        c.lanes = 3;
        expect_same<half_t>(c, "half", seed++);
        c.op = kMax;
        c.lanes = 5;
        expect_same<int8_t>(c, "int8", seed++);
      }
}

// LL128 as NCCL moves it: 8 consecutive lanes write and read each 128-byte line, 16 bytes each. Every
// collective, with lane counts that are whole groups (8, 16) and not (12: one group and 4 lanes without
// line work; 3: no whole group, so a line per lane as on the host), and element sizes 1 to 8 bytes
// (a part holds 16 int8, the flag part 8; a double's flag part holds one).
TEST(BlockExecLL128, LineGroupsMatchTheHostExecutor) {
  uint32_t seed = 500;
  for (int lanes : {8, 16, 12, 3})
    for (CollKind coll : kColls) {
      expect_same<float>({coll, kProtoLL128, false, 3, 2, 6151, kSum, lanes}, "float", seed++);
      expect_same<int8_t>({coll, kProtoLL128, false, 2, 1, 1003, kSum, lanes}, "int8", seed++);
      expect_same<half_t>({coll, kProtoLL128, false, 4, 1, 77, kAvg, lanes}, "half", seed++);
      expect_same<double>({coll, kProtoLL128, false, 2, 1, 1, kMax, lanes}, "double", seed++);
    }
  for (int lanes : {8, 12}) {
    expect_same<float>({CollKind::kAllReduce, kProtoLL128, true, 6, 2, 20000, kSum, lanes}, "float", seed++);
    expect_same<bfloat16_t>({CollKind::kAllReduce, kProtoLL128, true, 4, 2, 999, kAvg, lanes}, "bf16", seed++);
  }
}

// A line group takes a line only once its flag part carries the step's flag, whatever its other parts
// already hold, and then has all of it. The test plays the sender: it stores every line's 15 data
// words, then the flags one line at a time.
TEST(BlockExecLL128, AGroupWaitsForEachLinesFlag) {
  for (int lanes : {8, 12}) {
    SCOPED_TRACE(std::to_string(lanes) + " lanes");
    Mesh mesh(2, 1, buff_bytes_of(kProtoLL128), step_bytes_of(kProtoLL128));
    ConnInfo* rc = mesh.recv(0, 0, 1);
    constexpr size_t kLines = 3, kN = kLines * kLL128LinePayload / sizeof(float);
    std::vector<float> data(kN), out(kN, -1.0f);
    for (size_t i = 0; i < kN; ++i) data[i] = 0.5f + static_cast<float>(i);
    LL128Line lines[kLines];
    ASSERT_EQ(ll128_pack(data.data(), kN * sizeof(float), lines, ll128_flag(0)), kLines);
    auto* slot = reinterpret_cast<LL128Line*>(rc->slot(0));
    for (size_t l = 0; l < kLines; ++l)
      for (int w = 0; w < kLL128DataElems; ++w) __atomic_store_n(&slot[l].v[w], lines[l].v[w], __ATOMIC_RELAXED);
    std::atomic<int> abort_flag{0};
    EmuShared shared(lanes, &abort_flag);
    std::atomic<int> done{0};
    std::vector<std::thread> threads;
    for (int l = 0; l < lanes; ++l)
      threads.emplace_back([&, l] {
        EmuBlock b(&shared, l);
        BlockExec<EmuBlock> ex(b, BlockExecConfig{});
        const RedOp<float> op(kSum);
        ConnInfo conn = *rc;  // each lane steps its own copy, as run_block does
        Primitives<float, ProtoLL128, BlockExec<EmuBlock>> p(ex, op, &conn, nullptr, nullptr, out.data(), 1, 0,
                                                             CollKind::kBroadcast, 1);
        p.recv(0, kN);
        EXPECT_TRUE(ex.finish(!p.aborted()));
        EXPECT_EQ(conn.step, 1u);
        ++done;
      });
    const auto flag_line = [&](size_t l) {
      __atomic_store_n(&slot[l].v[kLL128LineElems - 1], ll128_flag(0), __ATOMIC_RELEASE);
    };
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_EQ(done.load(), 0) << "no line carries its flag yet";
    flag_line(0);
    flag_line(1);
    // Peeks at the output while the lanes still run: unsynchronised on purpose (nothing orders the
    // lanes' stores before them), so ThreadSanitizer is told to ignore these reads. Lines 0 and 1 are
    // waited for (bounded), not given a fixed time: on a loaded machine 12 lanes that vote on every
    // poll can take far longer than 100 ms to take two lines (the check failed 9 times in 40 there).
    const auto lines01_in = [&] {
      peek_begin();
      const bool in = std::memcmp(out.data(), data.data(), 2 * kN / kLines * sizeof(float)) == 0;
      peek_end();
      return in;
    };
    const auto t0 = std::chrono::steady_clock::now();
    bool lines01 = lines01_in();
    while (!lines01 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      lines01 = lines01_in();
    }
    EXPECT_TRUE(lines01) << "lines 0 and 1";
    // A group that took line 2 without its flag has had time to by now.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_EQ(done.load(), 0) << "the last line has no flag yet";
    peek_begin();
    size_t early = kN;  // the first element of line 2 already written, if any
    for (size_t i = 2 * kN / kLines; i < kN && early == kN; ++i)  // every part of it, not only the flag lane's
      if (out[i] != -1.0f) early = i;
    peek_end();
    EXPECT_EQ(early, kN) << "element " << early << " of line 2 was read before the line's flag";
    flag_line(2);
    for (auto& t : threads) t.join();
    EXPECT_EQ(std::memcmp(out.data(), data.data(), kN * sizeof(float)), 0);
    EXPECT_EQ(rc->hdr->head.value, 1u) << "the receiver frees the slot once it has read the step";
  }
}

// Integers reduce exactly in any order: the block executor's all_reduce is the fold of the inputs.
TEST(BlockExec, IntegerAllReduceIsTheExactSum) {
  for (int proto : {kProtoSimple, kProtoLL, kProtoLL128}) {
    const Case c{CollKind::kAllReduce, proto, false, 4, 2, 5003, kSum, 4};
    SCOPED_TRACE(describe(c, "int32"));
    const auto in = inputs<int32_t>(c, true, 7);
    std::vector<std::vector<int32_t>> out(c.nranks, std::vector<int32_t>(c.count, -1));
    ASSERT_EQ(run<int32_t>(c, c.lanes, in, &out, 1), "");
    for (size_t i = 0; i < c.count; ++i) {
      int32_t want = 0;
      for (int r = 0; r < c.nranks; ++r) want += in[r][i];
      for (int r = 0; r < c.nranks; ++r) ASSERT_EQ(out[r][i], want) << "rank " << r << " element " << i;
    }
  }
}

// The lanes' shares of reduce_copy_lanes are disjoint, cover every element and produce the serial
// loop's bytes, for every alignment of every operand.
TEST(BlockExec, ReduceCopyLanesEqualsTheSerialLoop) {
  std::mt19937 rng(3);
  for (int lanes : {1, 2, 3, 7, 32})
    for (size_t n : {size_t(0), size_t(1), size_t(15), size_t(16), size_t(17), size_t(333)})
      for (int mis : {0, 1, 2}) {
        std::vector<half_t> a(n + 8), b(n + 8), d_ser(n + 8), d_lan(n + 8), e_ser(n + 8), e_lan(n + 8);
        for (size_t i = 0; i < a.size(); ++i) {
          a[i] = from_float<half_t>(static_cast<float>(rng() % 100) / 7);
          b[i] = from_float<half_t>(static_cast<float>(rng() % 100) / 3);
        }
        const RedOp<half_t> op(premul_half<half_t>());
        reduce_copy(op, d_ser.data() + mis, e_ser.data(), a.data() + mis * 2, b.data() + mis, n, true, false);
        for (int l = 0; l < lanes; ++l)
          reduce_copy_lanes(op, d_lan.data() + mis, e_lan.data(), a.data() + mis * 2, b.data() + mis, n, true, false,
                            l, lanes);
        ASSERT_EQ(std::memcmp(d_ser.data(), d_lan.data(), d_ser.size() * 2), 0) << lanes << " lanes, n " << n;
        ASSERT_EQ(std::memcmp(e_ser.data(), e_lan.data(), e_ser.size() * 2), 0) << lanes << " lanes, n " << n;
      }
}

// The same for the shapes the primitives use at sizes where each lane runs several unrolled rounds
// (kRcUnroll packs in flight): with and without a second source, a second destination and pre/post
// ops, in place, every combine kind, 4- and 8-byte elements.
template <typename T>
void expect_lanes_equal_serial(const RedOpArg& arg, std::mt19937& rng) {
  const RedOp<T> op(arg);
  for (int lanes : {1, 3, 32})
    for (size_t n : {size_t(4 * 32 * 4 - 1), size_t(5000)})
      for (int mis : {0, 1})
        for (int shape = 0; shape < 6; ++shape) {
          const bool has_a = shape & 1, has_d1 = shape & 2, in_place = shape >= 4;
          const bool pre = (shape % 3) == 0, post = (shape % 3) == 1;
          std::vector<T> a(n + 4), b(n + 4), d_ser(n + 4), d_lan(n + 4), e_ser(n + 4), e_lan(n + 4);
          for (size_t i = 0; i < a.size(); ++i) {
            a[i] = static_cast<T>(static_cast<int>(rng() % 200) - 100);
            b[i] = static_cast<T>(static_cast<int>(rng() % 200) - 100);
          }
          if (in_place) d_ser = d_lan = b;
          const T* src_a = has_a ? a.data() + mis : nullptr;
          const T* src_b = in_place ? nullptr : b.data() + mis;
          reduce_copy(op, d_ser.data() + mis, has_d1 ? e_ser.data() : nullptr, src_a,
                      in_place ? d_ser.data() + mis : src_b, n, pre, post);
          for (int l = 0; l < lanes; ++l)
            reduce_copy_lanes(op, d_lan.data() + mis, has_d1 ? e_lan.data() : nullptr, src_a,
                              in_place ? d_lan.data() + mis : src_b, n, pre, post, l, lanes);
          ASSERT_EQ(std::memcmp(d_ser.data(), d_lan.data(), d_ser.size() * sizeof(T)), 0)
              << lanes << " lanes, n " << n << ", misaligned " << mis << ", shape " << shape;
          ASSERT_EQ(std::memcmp(e_ser.data(), e_lan.data(), e_ser.size() * sizeof(T)), 0)
              << lanes << " lanes, n " << n << ", misaligned " << mis << ", shape " << shape;
        }
}

TEST(BlockExec, UnrolledReduceCopyLanesEqualsTheSerialLoop) {
  std::mt19937 rng(11);
  for (RedOpKind k : {RedOpKind::kSum, RedOpKind::kProd, RedOpKind::kMax, RedOpKind::kMin}) {
    SCOPED_TRACE(static_cast<int>(k));
    expect_lanes_equal_serial<float>(RedOpArg{k, 0, 1}, rng);
    expect_lanes_equal_serial<int64_t>(RedOpArg{k, 0, 1}, rng);
  }
  expect_lanes_equal_serial<float>(RedOpArg{RedOpKind::kSumPostDiv, 0, 3}, rng);
  expect_lanes_equal_serial<int32_t>(RedOpArg{RedOpKind::kSumPostDiv, 0, 3}, rng);
  expect_lanes_equal_serial<double>(RedOpArg{RedOpKind::kPreMulSum, scalar_to_bits<double>(0.5), 1}, rng);
}

// One lane playing a whole block, counting its counter loads.
struct CountingBlock {
  int loads = 0;
  int tid() const { return 0; }
  int nthreads() const { return 1; }
  void sync() {}
  bool sync_or(bool v) { return v; }
  uint64_t load(const uint64_t* p) {
    ++loads;
    return __atomic_load_n(p, __ATOMIC_RELAXED);
  }
  void store(uint64_t* p, uint64_t v) { __atomic_store_n(p, v, __ATOMIC_RELAXED); }
  void fence() { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
  bool abort_requested() const { return false; }
  bool group_any(bool v) { return v; }
  void store_part(uint64_t*, uint64_t, uint64_t, bool) {}
  void load_part(const uint64_t*, uint64_t*, uint64_t*, bool) const {}
  void pause() {}
  double now_us() const { return 0; }
};

// Lane 0 remembers what it saw of each counter (NCCL's connStepCache): a wait an earlier poll already
// satisfied loads nothing; one beyond it loads again; with more counters than entries, every wait is
// still answered right.
TEST(BlockExec, WaitsAnsweredByAnEarlierPollLoadNothing) {
  CountingBlock b;
  BlockExec<CountingBlock> ex(b, BlockExecConfig{});
  const WaitSite site{0, 0, 1, 0, false, PrimKind::kSend};
  ConnCounter c[12] = {};
  c[0].value = 10;
  EXPECT_TRUE(ex.wait_ge(&c[0], 3, site));
  EXPECT_EQ(b.loads, 1);
  EXPECT_TRUE(ex.wait_ge(&c[0], 7, site));
  EXPECT_TRUE(ex.wait_ge(&c[0], 10, site));
  EXPECT_EQ(b.loads, 1) << "10 was seen: targets up to 10 need no load";
  c[0].value = 12;
  EXPECT_TRUE(ex.wait_ge(&c[0], 11, site));
  EXPECT_EQ(b.loads, 2) << "11 is beyond what was seen";
  EXPECT_TRUE(ex.wait_ge(&c[0], 12, site));
  EXPECT_EQ(b.loads, 2);
  // Another counter at the same value is its own entry.
  c[1].value = 5;
  EXPECT_TRUE(ex.wait_ge(&c[1], 5, site));
  EXPECT_EQ(b.loads, 3);
  // More counters than entries: each first wait loads; every answer stays right.
  for (int i = 2; i < 12; ++i) {
    c[i].value = static_cast<uint64_t>(100 + i);
    EXPECT_TRUE(ex.wait_ge(&c[i], static_cast<uint64_t>(100 + i), site));
  }
  EXPECT_EQ(b.loads, 13);
  for (int i = 0; i < 12; ++i) EXPECT_TRUE(ex.wait_ge(&c[i], c[i].value, site)) << i;
  EXPECT_LE(b.loads, 13 + 12);
}

// The abort flag stops a block stuck waiting for a peer that never comes; every lane returns, and
// the status names the rank, channel, peer and step.
TEST(BlockExec, AbortStopsAStuckBlockAndStatusNamesTheWait) {
  for (int proto : {kProtoSimple, kProtoLL, kProtoLL128}) {
    SCOPED_TRACE(proto);
    const int nlanes = proto == kProtoLL128 ? 8 : 4;  // LL128: one line group
    Mesh mesh(2, 1, buff_bytes_of(proto), step_bytes_of(proto));
    std::vector<float> in(4096, 1.0f), out(4096, 0.0f);
    const Case c{CollKind::kAllReduce, proto, false, 2, 1, in.size(), kSum, nlanes};
    const std::vector<int> ring = ring_of(2, 0, 0);
    BlockWork bw{};
    bw.kind = kBlockRing;
    bw.coll = work_of(c, 0, in.data(), out.data(), 1);
    bw.ring_ranks = ring.data();
    bw.conn[0] = mesh.recv(0, 1, 0);
    bw.conn[1] = mesh.send(0, 0, 1);
    BlockStatus status{};
    bw.status = &status;
    bw.stuck_spins = 1024;  // the first check (waits look every 1024 polls)
    std::atomic<int> abort_flag{0};
    EmuShared shared(nlanes, &abort_flag);
    std::atomic<int> returned{0};
    std::vector<std::thread> lanes;
    for (int l = 0; l < nlanes; ++l)
      lanes.emplace_back([&, l] {
        EmuBlock b(&shared, l);
        EXPECT_FALSE(run_block<float>(b, bw));
        ++returned;
      });
    // The report comes after stuck_spins polls, each of which yields: on a loaded machine that can
    // take far longer than on an idle one, so wait for it (bounded) rather than for a fixed time.
    const auto t0 = std::chrono::steady_clock::now();
    const auto state = [&] { return __atomic_load_n(&status.state, __ATOMIC_ACQUIRE); };
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    while (proto != kProtoLL && state() != kBlockWaiting &&
           std::chrono::steady_clock::now() - t0 < std::chrono::seconds(120))
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_EQ(returned.load(), 0) << "rank 0 cannot finish without rank 1";
    if (proto != kProtoLL) {  // LL's lane 0 may be past its lines; Simple's lane 0 and LL128's group wait
      EXPECT_EQ(state(), kBlockWaiting) << "a long wait reports itself";
      EXPECT_EQ(status.for_data, 1);
    }
    abort_flag = 1;
    for (auto& t : lanes) t.join();
    EXPECT_EQ(returned.load(), nlanes);
    EXPECT_EQ(status.state, kBlockAborted);
    if (proto != kProtoLL) {
      // Rank 0 sent its first slices and waits for rank 1's data on channel 0.
      EXPECT_EQ(status.rank, 0);
      EXPECT_EQ(status.channel, 0);
      EXPECT_EQ(status.peer, 1);
      EXPECT_EQ(status.for_data, 1);
      EXPECT_GT(status.step, 0u);
    }
  }
}

// A peer that sends slices of another size stops the block with kBlockSizeMismatch, naming the sizes.
TEST(BlockExec, SizeMismatchIsReported) {
  Mesh mesh(2, 1, buff_bytes_of(kProtoSimple), step_bytes_of(kProtoSimple));
  std::vector<float> in0(1000, 1.0f), out0(1000), in1(600, 1.0f), out1(600);
  std::atomic<int> abort_flag{0};
  BlockStatus st[2] = {};
  std::vector<std::thread> threads;
  const std::vector<int> ring0 = ring_of(2, 0, 0), ring1 = ring_of(2, 0, 1);
  for (int r = 0; r < 2; ++r) {
    const Case c{CollKind::kAllReduce, kProtoSimple, false, 2, 1, r == 0 ? in0.size() : in1.size(), kSum, 2};
    BlockWork bw{};
    bw.kind = kBlockRing;
    bw.coll = work_of(c, r, r == 0 ? in0.data() : in1.data(), r == 0 ? out0.data() : out1.data(), 1);
    bw.ring_ranks = r == 0 ? ring0.data() : ring1.data();
    bw.conn[0] = mesh.recv(0, 1 - r, r);
    bw.conn[1] = mesh.send(0, r, 1 - r);
    bw.status = &st[r];
    auto shared = std::make_shared<EmuShared>(2, &abort_flag);
    for (int l = 0; l < 2; ++l)
      threads.emplace_back([=] {
        EmuBlock b(shared.get(), l);
        (void)run_block<float>(b, bw);
      });
  }
  // Whichever rank notices first stops; the other then waits forever: abort it.
  const auto t0 = std::chrono::steady_clock::now();
  const auto state = [&](int r) { return __atomic_load_n(&st[r].state, __ATOMIC_ACQUIRE); };
  while (state(0) != kBlockSizeMismatch && state(1) != kBlockSizeMismatch &&
         std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60))
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  abort_flag = 1;
  for (auto& t : threads) t.join();
  const int r = st[0].state == kBlockSizeMismatch ? 0 : 1;
  ASSERT_EQ(st[r].state, kBlockSizeMismatch);
  EXPECT_EQ(st[r].peer, 1 - r);
  EXPECT_NE(st[r].expected, st[r].got);
}

// With a record buffer, lane 0 records every step the host executor reports to its observer, in the
// same order and with the same peers, steps, primitives, offsets and sizes.
TEST(BlockExec, StepRecordsMatchTheHostObserver) {
  const Case c{CollKind::kAllReduce, kProtoSimple, false, 3, 1, 20000, kSum, 4};
  const auto in = inputs<float>(c, true, 11);
  std::vector<std::vector<float>> out(c.nranks, std::vector<float>(c.count));
  // Host: observer per rank.
  std::vector<std::vector<StepRecord>> host(c.nranks), block(c.nranks);
  {
    Mesh mesh(c.nranks, 1, buff_bytes_of(c.proto), step_bytes_of(c.proto));
    std::vector<std::thread> threads;
    for (int r = 0; r < c.nranks; ++r)
      threads.emplace_back([&, r] {
        const std::vector<int> ring = ring_of(c.nranks, 0, r);
        HostExecConfig cfg;
        cfg.record = [](const StepRecord& s, void* d) { static_cast<std::vector<StepRecord>*>(d)->push_back(s); };
        cfg.record_data = &host[r];
        HostExec exec(cfg);
        const RingView rv{ring.data(), c.nranks};
        const CollWork w = work_of(c, r, in[r].data(), out[r].data(), 1);
        EXPECT_TRUE(run_ring_channel<float>(exec, w, rv, 0, mesh.recv(0, ring[c.nranks - 1], r), mesh.send(0, r, ring[1])));
      });
    for (auto& t : threads) t.join();
  }
  {
    Mesh mesh(c.nranks, 1, buff_bytes_of(c.proto), step_bytes_of(c.proto));
    std::vector<std::thread> threads;
    std::vector<std::vector<int>> rings;
    for (int r = 0; r < c.nranks; ++r) rings.push_back(ring_of(c.nranks, 0, r));
    std::vector<BlockStatus> st(c.nranks);
    for (int r = 0; r < c.nranks; ++r) {
      block[r].resize(4096);
      BlockWork bw{};
      bw.kind = kBlockRing;
      bw.coll = work_of(c, r, in[r].data(), out[r].data(), 1);
      bw.ring_ranks = rings[r].data();
      bw.conn[0] = mesh.recv(0, rings[r][c.nranks - 1], r);
      bw.conn[1] = mesh.send(0, r, rings[r][1]);
      bw.status = &st[r];
      bw.records = block[r].data();
      bw.record_capacity = block[r].size();
      auto shared = std::make_shared<EmuShared>(c.lanes, nullptr);
      for (int l = 0; l < c.lanes; ++l)
        threads.emplace_back([=] {
          EmuBlock b(shared.get(), l);
          EXPECT_TRUE(run_block<float>(b, bw));
        });
    }
    for (auto& t : threads) t.join();
    for (int r = 0; r < c.nranks; ++r) {
      ASSERT_EQ(st[r].state, kBlockDone);
      block[r].resize(st[r].records);
    }
  }
  for (int r = 0; r < c.nranks; ++r) {
    ASSERT_GT(host[r].size(), 4u);
    ASSERT_EQ(host[r].size(), block[r].size()) << "rank " << r;
    for (size_t i = 0; i < host[r].size(); ++i) {
      const StepRecord &h = host[r][i], &b = block[r][i];
      EXPECT_EQ(h.send_peer, b.send_peer);
      EXPECT_EQ(h.recv_peer, b.recv_peer);
      EXPECT_EQ(h.step, b.step);
      EXPECT_EQ(h.prim, b.prim);
      EXPECT_EQ(h.bytes, b.bytes);
      EXPECT_EQ(h.offset, b.offset);
      EXPECT_LE(b.begin_us, b.data_us);
      EXPECT_LE(b.data_us, b.end_us);
    }
  }
}

// NVLS (kBlockNvls, kernels/nvls.h) through the CUDA backend's kernel body: n ranks, each a block of 4
// lanes (host threads), with every rank's NVLS region in this process. Without multimem (a host thread
// is not an sm90 GPU) the block executor emulates the switch over the copies, each lane its share of the
// data, lane 0 the counters: AllReduce and ReduceScatter (float sum, int32 max) and AllGather (int32)
// come out exact, over many loops (4 KiB slots) and an odd count, twice in a row (the running step).
TEST(BlockExec, NvlsThroughTheBlockKernel) {
  const int n = 4, nlanes = 4, step = 4096;
  const size_t region = nvls_region_bytes(n, step);
  std::vector<std::unique_ptr<char, decltype(&std::free)>> mem;
  for (int r = 0; r < n; ++r) {
    mem.emplace_back(static_cast<char*>(std::aligned_alloc(4096, (region + 4095) / 4096 * 4096)), &std::free);
    std::memset(mem.back().get(), 0, region);
  }
  std::vector<NvlsConn> view(n);
  for (int r = 0; r < n; ++r) {
    view[r].nranks = n;
    view[r].nheads = n;
    view[r].rank = r;
    view[r].step_bytes = step;
    for (int q = 0; q < n; ++q) view[r].uc[q] = mem[q].get();
  }
  auto run = [&](CollKind coll, auto zero, RedOpKind op, size_t count, auto& in, auto& out) {
    using T = decltype(zero);
    std::atomic<int> abort_flag{0};
    std::vector<std::unique_ptr<EmuShared>> shared;
    for (int r = 0; r < n; ++r) shared.emplace_back(new EmuShared(nlanes, &abort_flag));
    std::vector<BlockWork> bw(n);
    for (int r = 0; r < n; ++r) {
      bw[r] = BlockWork{};
      bw[r].kind = kBlockNvls;
      bw[r].channel = 0;
      CollWork& w = bw[r].coll;
      w.coll = coll;
      w.count = count;
      w.send = in[r].data();
      w.recv = out[r].data();
      w.rank = r;
      w.nranks = n;
      w.nchannels = 1;
      w.chunk_bytes = 1024;
      w.proto = kProtoSimple;
      w.redop = RedOpArg{op, 0, n};
      bw[r].nvls = &view[r];
    }
    std::vector<std::thread> threads;
    std::atomic<int> ok{0};
    for (int r = 0; r < n; ++r)
      for (int l = 0; l < nlanes; ++l)
        threads.emplace_back([&, r, l] {
          EmuBlock b(shared[r].get(), l);
          if (run_block<T>(b, bw[r])) ++ok;
        });
    for (auto& t : threads) t.join();
    return ok.load() == n * nlanes;
  };
  const size_t count = 10007;
  // Every rank's first `count` outputs are the sum of every rank's inputs there ("" or the first that is not).
  auto sum_error = [&](const std::vector<std::vector<float>>& fin, const std::vector<std::vector<float>>& fout) {
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < count; ++i) {
        float want = 0;
        for (int q = 0; q < n; ++q) want += fin[q][i];
        if (fout[r][i] != want) return "rank " + std::to_string(r) + " element " + std::to_string(i);
      }
    return std::string();
  };
  for (int iter = 0; iter < 2; ++iter) {
    std::vector<std::vector<float>> fin(n, std::vector<float>(count * n)), fout(n, std::vector<float>(count * n, -1.0f));
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < count * n; ++i) fin[r][i] = static_cast<float>((i * 3 + r * 5) % 11);
    ASSERT_TRUE(run(CollKind::kAllReduce, 0.0f, RedOpKind::kSum, count, fin, fout));
    ASSERT_EQ(sum_error(fin, fout), "") << "AllReduce";
    std::vector<std::vector<int32_t>> iin(n, std::vector<int32_t>(count * n)), iout(n, std::vector<int32_t>(count * n, -7));
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < count * n; ++i) iin[r][i] = static_cast<int32_t>((i * 7 + r * 13) % 17) - 8;
    ASSERT_TRUE(run(CollKind::kReduceScatter, int32_t{0}, RedOpKind::kMax, count, iin, iout));
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < count; ++i) {
        int32_t want = iin[0][r * count + i];
        for (int q = 1; q < n; ++q) want = std::max(want, iin[q][r * count + i]);
        ASSERT_EQ(iout[r][i], want) << "ReduceScatter rank " << r << " element " << i;
      }
    ASSERT_TRUE(run(CollKind::kAllGather, int32_t{0}, RedOpKind::kSum, count, iin, iout));
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < count * n; ++i)
        ASSERT_EQ(iout[r][i], iin[i / count][i % count]) << "AllGather rank " << r << " element " << i;
  }
  EXPECT_GT(view[0].step_up, 0u);
  EXPECT_GT(view[0].step_down, 0u);
  for (int r = 1; r < n; ++r) EXPECT_EQ(view[r].step_up, view[0].step_up);

  // Fewer heads than ranks (a 72-GPU domain's 32 heads, a NIC for every other GPU across machines): ranks
  // 0 and 1 reduce every loop's two parts, ranks 2 and 3 only scatter and gather. AllReduce is exact;
  // ReduceScatter and AllGather need every rank a head and are refused.
  for (int r = 0; r < n; ++r) {
    std::memset(mem[r].get(), 0, region);
    view[r].nheads = 2;
    view[r].step_up = view[r].step_down = 0;
  }
  for (int iter = 0; iter < 2; ++iter) {
    std::vector<std::vector<float>> fin(n, std::vector<float>(count)), fout(n, std::vector<float>(count, -1.0f));
    for (int r = 0; r < n; ++r)
      for (size_t i = 0; i < count; ++i) fin[r][i] = static_cast<float>((i * 5 + r * 3 + iter) % 13);
    ASSERT_TRUE(run(CollKind::kAllReduce, 0.0f, RedOpKind::kSum, count, fin, fout));
    ASSERT_EQ(sum_error(fin, fout), "") << "AllReduce over 2 heads";
  }
  std::vector<std::vector<int32_t>> iin(n, std::vector<int32_t>(count * n, 1)), iout(n, std::vector<int32_t>(count * n));
  EXPECT_FALSE(run(CollKind::kReduceScatter, int32_t{0}, RedOpKind::kMax, count, iin, iout));
}


// ---- custom algorithms built into the kernels (kernels/custom_block.h) ------------------------------

struct CustomCase {
  int nranks;
  int nch;
  size_t count;
  RedOpArg op;
  int lanes;
};

CollWork custom_work_of(const CustomCase& c, int r, const void* in, void* out, uint64_t op_count) {
  CollWork w{};
  w.coll = CollKind::kAllReduce;
  w.count = c.count;
  w.send = in;
  w.recv = out;
  w.rank = r;
  w.nranks = c.nranks;
  w.nchannels = c.nch;
  w.proto = kProtoSimple;
  w.redop = c.op;
  w.redop.nranks = c.nranks;
  w.op_count = op_count;
  w.chunk_bytes = ProtoSimpleRing::max_chunk_bytes(buff_bytes_of(kProtoSimple));  // as enqueue.cc's
  return w;
}

// Runs `ops` all_reduces of custom algorithm Algo (T is ncclDataType_t kType) on fresh connections: with
// the host executor as the host backend runs a plugin (lanes == 0: custom_run over the HostExec table),
// or with the block executor as the CUDA kernel runs a built-in one (run_custom_block over a peer table).
// status, if given, receives each rank's and channel's block status (r * nch + ch).
template <class Algo, typename T, int kType>
std::string run_custom(const CustomCase& c, int lanes, const std::vector<std::vector<T>>& in,
                       std::vector<std::vector<T>>* out, int ops, std::vector<unsigned char>* wire = nullptr,
                       std::vector<BlockStatus>* status = nullptr) {
  Mesh mesh(c.nranks, c.nch, buff_bytes_of(kProtoSimple), step_bytes_of(kProtoSimple));
  const CustomTopo topo{c.nranks, 1, c.nranks};
  std::vector<std::string> err(static_cast<size_t>(c.nranks) * c.nch);
  std::vector<BlockStatus> st(err.size());
  std::atomic<int> abort_flag{0};
  for (int op = 1; op <= ops; ++op) {
    std::vector<std::thread> threads;
    for (int r = 0; r < c.nranks; ++r) {
      std::vector<int> peers(kMaxCustomPeers);
      peers.resize(static_cast<size_t>(Algo::peers(topo, r, peers.data(), kMaxCustomPeers)));
      for (int ch = 0; ch < c.nch; ++ch) {
        const CollWork w = custom_work_of(c, r, in[r].data(), (*out)[r].data(), static_cast<uint64_t>(op));
        const size_t k = static_cast<size_t>(r) * c.nch + ch;
        std::string* e = &err[k];
        if (lanes == 0) {
          auto send_to = std::make_shared<std::vector<ConnInfo*>>(c.nranks, nullptr);
          auto recv_from = std::make_shared<std::vector<ConnInfo*>>(c.nranks, nullptr);
          for (int q : peers) {
            (*send_to)[q] = mesh.send(ch, r, q);
            (*recv_from)[q] = mesh.recv(ch, q, r);
          }
          threads.emplace_back([=, &abort_flag] {
            HostExecConfig cfg;
            cfg.abort_flag = &abort_flag;
            cfg.timeout_us = 60e6;
            HostExec exec(cfg);
            CustomExecCtx<HostExec> ctx{&exec, {}};
            const bool ok = custom_run<Algo, T, kType>(custom_exec_vtable<HostExec>(), &ctx, w, ch, topo,
                                                       send_to->data(), recv_from->data());
            if (!ctx.failure.empty())
              *e = "host executor: " + ctx.failure;
            else if (!ok)
              *e = "host executor: " + exec.failure_message();
          });
        } else {
          auto table = std::make_shared<std::vector<CustomPeerConn>>();
          for (int q : peers) table->push_back(CustomPeerConn{q, mesh.send(ch, r, q), mesh.recv(ch, q, r)});
          BlockWork bw{};
          bw.kind = kBlockCustom;
          bw.channel = ch;
          bw.coll = w;
          bw.custom_peers = table->data();
          bw.custom_npeers = static_cast<int32_t>(table->size());
          bw.custom_topo = topo;
          bw.status = &st[k];
          auto shared = std::make_shared<EmuShared>(lanes, &abort_flag);
          for (int l = 0; l < lanes; ++l)
            threads.emplace_back([=] {
              (void)table;  // keeps bw.custom_peers alive
              EmuBlock b(shared.get(), l);
              if (!run_custom_block<Algo, T>(b, bw) && l == 0) *e = "block executor stopped";
            });
        }
      }
    }
    for (auto& t : threads) t.join();
    if (status != nullptr) *status = st;
    for (auto& e : err)
      if (!e.empty()) return e;
  }
  if (wire != nullptr) *wire = mesh.wire();
  return "";
}

// The block executor's bytes equal the host executor's for custom algorithm Algo: the outputs of two
// all_reduces on the same connections, and every FIFO's slots.
template <class Algo, typename T, int kType>
void expect_custom_same(const CustomCase& c, const char* type, uint32_t seed) {
  SCOPED_TRACE(std::string(Algo::kName) + " " + type + " ranks=" + std::to_string(c.nranks) + " ch=" +
               std::to_string(c.nch) + " count=" + std::to_string(c.count) + " op=" +
               std::to_string(static_cast<int>(c.op.kind)) + " lanes=" + std::to_string(c.lanes));
  const Case ring{CollKind::kAllReduce, kProtoSimple, false, c.nranks, c.nch, c.count, c.op, c.lanes};
  const auto in = inputs<T>(ring, false, seed);
  std::vector<std::vector<T>> host(c.nranks, std::vector<T>(c.count)), block = host;
  for (int r = 0; r < c.nranks && c.count > 0; ++r) {
    std::memset(host[r].data(), 0x5a, host[r].size() * sizeof(T));
    std::memset(block[r].data(), 0x5a, block[r].size() * sizeof(T));
  }
  std::vector<unsigned char> host_wire, block_wire;
  ASSERT_EQ((run_custom<Algo, T, kType>(c, 0, in, &host, 2, &host_wire)), "");
  ASSERT_EQ((run_custom<Algo, T, kType>(c, c.lanes, in, &block, 2, &block_wire)), "");
  for (int r = 0; r < c.nranks; ++r)
    ASSERT_TRUE(host[r].empty() || std::memcmp(host[r].data(), block[r].data(), host[r].size() * sizeof(T)) == 0)
        << "rank " << r;
  ASSERT_TRUE(host_wire == block_wire) << "the FIFOs differ: the wire bytes are not the host executor's";
}

// Lab 8's reference solution (recursive halving-doubling, labs/solutions/08-your-own-algorithm) and the
// documented TwoShot (docs/examples/algorithms/two_shot.cc) in the CUDA kernel's body: powers of two and
// not (a remainder pairs up first), counts from one element to several FIFOs per exchange (8 slots of
// 4 KiB here), two channels, lane counts that do and do not divide the 16-byte packs.
TEST(BlockExecCustom, BuiltInAlgorithmsMatchTheHostExecutor) {
  uint32_t seed = 700;
  for (int n : {2, 3, 4, 5, 8})
    for (size_t count : {size_t(1), size_t(1000), size_t(30011)}) {
      const int lanes = n % 2 == 0 ? 4 : 3;
      expect_custom_same<MyAllReduce, float, 7>({n, 2, count, kSum, lanes}, "float", seed++);
      expect_custom_same<TwoShot, float, 7>({n, 2, count, kSum, lanes}, "float", seed++);
      if (count == 30011 && n <= 5) {
        expect_custom_same<MyAllReduce, half_t, 6>({n, 1, count, kAvg, 8}, "half", seed++);
        expect_custom_same<TwoShot, bfloat16_t, 9>({n, 2, count, premul_half<bfloat16_t>(), 5}, "bf16", seed++);
        expect_custom_same<MyAllReduce, double, 8>({n, 2, count, kMax, 1}, "double", seed++);
        expect_custom_same<TwoShot, int8_t, 0>({n, 1, count, kSum, 4}, "int8", seed++);
        expect_custom_same<MyAllReduce, fp8_e4m3_t, 10>({n, 1, count, kSum, 3}, "fp8e4m3", seed++);
      }
    }
}

// Integers through the block kernel of lab 8's solution are the exact sum (and ncclAvg's division once,
// on the final reduction), independently of the host executor.
TEST(BlockExecCustom, IntegerAllReduceIsTheExactSum) {
  for (int n : {3, 4, 6})
    for (RedOpArg op : {kSum, kAvg}) {
      SCOPED_TRACE(std::to_string(n) + " ranks, op " + std::to_string(static_cast<int>(op.kind)));
      const CustomCase c{n, 2, 20000, op, 4};
      std::vector<std::vector<int32_t>> in(n, std::vector<int32_t>(c.count)), out = in;
      for (int r = 0; r < n; ++r)
        for (size_t i = 0; i < c.count; ++i) in[r][i] = static_cast<int32_t>((i * 7 + static_cast<size_t>(r) * 13) % 1001);
      ASSERT_EQ((run_custom<MyAllReduce, int32_t, 2>(c, c.lanes, in, &out, 1)), "");
      for (int r = 0; r < n; ++r)
        for (size_t i = 0; i < c.count; ++i) {
          int64_t sum = 0;
          for (int q = 0; q < n; ++q) sum += in[q][i];
          const int32_t want = static_cast<int32_t>(op.kind == RedOpKind::kSumPostDiv ? sum / n : sum);
          ASSERT_EQ(out[r][i], want) << "rank " << r << " element " << i;
        }
    }
}

// A schedule that calls a peer it did not declare (tests/algorithms/bad_call.cc sends to rank + 2) stops
// every block; the status says which rank, channel and peer, and the message the CUDA backend builds from
// it is the host executor's.
TEST(BlockExecCustom, AnUndeclaredPeerStopsTheBlockAndStatusNamesIt) {
  const CustomCase c{4, 2, 1000, kSum, 4};
  const Case ring{CollKind::kAllReduce, kProtoSimple, false, c.nranks, c.nch, c.count, c.op, c.lanes};
  const auto in = inputs<float>(ring, false, 1);
  std::vector<std::vector<float>> out(c.nranks, std::vector<float>(c.count));
  const std::string host = run_custom<BadCall, float, 7>(c, 0, in, &out, 1);
  std::vector<BlockStatus> status;
  EXPECT_EQ((run_custom<BadCall, float, 7>(c, c.lanes, in, &out, 1, nullptr, &status)), "block executor stopped");
  ASSERT_EQ(status.size(), static_cast<size_t>(c.nranks * c.nch));
  for (int r = 0; r < c.nranks; ++r)
    for (int ch = 0; ch < c.nch; ++ch) {
      const BlockStatus& s = status[static_cast<size_t>(r) * c.nch + ch];
      EXPECT_EQ(s.state, kBlockBadPeer);
      EXPECT_EQ(s.rank, r);
      EXPECT_EQ(s.channel, ch);
      EXPECT_EQ(s.peer, (r + 2) % c.nranks);
      EXPECT_EQ(s.for_data, 0);  // a send
    }
  // The host executor's first failure (rank 0, channel 0) in the words the CUDA backend uses.
  char msg[160];
  const BlockStatus& s0 = status[0];
  custom_bad_peer_message(msg, sizeof msg, WaitSite{s0.rank, s0.channel, s0.peer, 0, s0.for_data != 0, PrimKind::kSend},
                          c.nranks);
  EXPECT_EQ(host, std::string("host executor: ") + msg);
}

}  // namespace
}  // namespace cclab
