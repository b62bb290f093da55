// The LL and LL128 primitives (kernels/primitives_ll.h, primitives_ll128.h) under the ring schedules
// (kernels/ring.h), run by the host executor on rings built by hand: heap FIFOs sized for each
// protocol, one std::thread per rank. Results are compared byte for byte with a fold in rank order of
// small-integer inputs (exact in every type, so the order of the ring's reduction does not matter).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "backends/host/host_exec.h"
#include "kernels/primitives_ll.h"
#include "kernels/primitives_ll128.h"
#include "kernels/proto_ll.h"
#include "kernels/ring.h"

namespace cclab {
namespace {

// One connection per rank r -> r+1, zeroed as a receiver's fresh FIFO is.
template <typename Proto>
class HandRing {
 public:
  HandRing(int nranks, int buff_bytes) : n_(nranks), buff_bytes_(buff_bytes), send_(nranks), recv_(nranks) {
    const size_t total = fifo_total_bytes(static_cast<size_t>(buff_bytes));
    for (int r = 0; r < n_; ++r) {
      void* mem = std::aligned_alloc(4096, (total + 4095) / 4096 * 4096);
      std::memset(mem, 0, total);
      mem_.push_back(mem);
    }
    for (int r = 0; r < n_; ++r) {
      const int next = (r + 1) % n_;
      ConnInfo c;
      c.hdr = static_cast<ConnFifoHeader*>(mem_[r]);
      c.buff = static_cast<char*>(mem_[r]) + kFifoDataOffset;
      c.step_bytes = Proto::step_bytes(buff_bytes);
      c.peer = next;
      send_[r] = c;
      c.peer = r;
      recv_[next] = c;
    }
  }
  ~HandRing() {
    for (void* m : mem_) std::free(m);
  }
  HandRing(const HandRing&) = delete;
  HandRing& operator=(const HandRing&) = delete;

  int nranks() const { return n_; }
  size_t chunk_bytes() const { return Proto::max_chunk_bytes(buff_bytes_); }
  // Moves every connection's step counters (both ends) to `step`, as if that many steps had run.
  void set_steps(uint64_t step) {
    for (int r = 0; r < n_; ++r) {
      send_[r].step = recv_[r].step = step;
      send_[r].hdr->head.value = step;
    }
  }
  // Fills every line of every slot as a sender of step `step` would leave it (LL only).
  void fill_ll_lines(uint64_t step) {
    for (int r = 0; r < n_; ++r) {
      LLLine* l = reinterpret_cast<LLLine*>(send_[r].buff);
      for (size_t i = 0; i < static_cast<size_t>(buff_bytes_) / sizeof(LLLine); ++i)
        l[i].v[0] = l[i].v[1] = ll_half(0, ll_flag(step));
    }
  }
  uint64_t step_of(int r) const { return send_[r].step; }

  // Runs one collective on every rank; returns "" or the first failure.
  template <typename T>
  std::string run(CollKind coll, size_t count, int root, const std::vector<std::vector<T>>& in,
                  std::vector<std::vector<T>>& out, uint64_t op_count) {
    std::vector<std::string> err(n_);
    std::vector<std::thread> threads;
    for (int r = 0; r < n_; ++r) {
      threads.emplace_back([&, r] {
        HostExecConfig cfg;
        cfg.timeout_us = 60e6;
        HostExec exec(cfg);
        std::vector<int> ranks(n_);
        for (int i = 0; i < n_; ++i) ranks[i] = (r + i) % n_;
        const RingView ring{ranks.data(), n_};
        CollWork w{};
        w.coll = coll;
        w.count = count;
        w.send = in[r].data();
        w.recv = out[r].data();
        w.root = root;
        w.rank = r;
        w.nranks = n_;
        w.nchannels = 1;
        w.chunk_bytes = chunk_bytes();
        w.redop = RedOpArg{RedOpKind::kSum, 0, n_};
        w.op_count = op_count;
        const RedOp<T> op(w.redop);
        Primitives<T, Proto, HostExec> p(exec, op, &recv_[r], &send_[r], in[r].data(), out[r].data(), r, 0, coll,
                                          op_count);
        switch (coll) {
          case CollKind::kAllReduce: ring_all_reduce(p, w, ring, 0); break;
          case CollKind::kAllGather: ring_all_gather(p, w, ring, 0, false); break;
          case CollKind::kReduceScatter: ring_reduce_scatter(p, w, ring, 0); break;
          case CollKind::kBroadcast: ring_broadcast(p, w, ring, 0); break;
          case CollKind::kReduce: ring_reduce(p, w, ring, 0); break;
          default: break;
        }
        if (p.aborted()) err[r] = "rank " + std::to_string(r) + ": " + exec.failure_message();
      });
    }
    for (auto& t : threads) t.join();
    for (auto& e : err)
      if (!e.empty()) return e;
    return "";
  }

 private:
  int n_;
  int buff_bytes_;
  std::vector<void*> mem_;
  std::vector<ConnInfo> send_, recv_;
};

template <typename T>
T make(int v) {
  if constexpr (std::is_same<T, half_t>::value)
    return from_float<half_t>(static_cast<float>(v));
  else
    return static_cast<T>(v);
}

const char* coll_name(CollKind c) {
  switch (c) {
    case CollKind::kAllReduce: return "all_reduce";
    case CollKind::kAllGather: return "all_gather";
    case CollKind::kReduceScatter: return "reduce_scatter";
    case CollKind::kBroadcast: return "broadcast";
    case CollKind::kReduce: return "reduce";
    default: return "?";
  }
}

// Runs `coll` of `count` elements and checks every rank's output against the reference.
template <typename T, typename Proto>
void check_coll(HandRing<Proto>& ring, CollKind coll, size_t count, uint64_t op_count) {
  const int n = ring.nranks();
  const int root = static_cast<int>(op_count % static_cast<uint64_t>(n));
  const size_t in_count = coll == CollKind::kReduceScatter ? count * n : count;
  const size_t out_count = coll == CollKind::kAllGather ? count * n : count;
  std::vector<std::vector<T>> in(n, std::vector<T>(in_count)), out(n, std::vector<T>(out_count, make<T>(99)));
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < in_count; ++i)
      in[r][i] = make<T>(static_cast<int>((i * 7 + static_cast<size_t>(r) * 13 + op_count) % 7) - 3);
  const std::string err = ring.template run<T>(coll, count, root, in, out, op_count);
  ASSERT_EQ(err, "") << coll_name(coll) << " count " << count;
  const RedOp<T> op(RedOpArg{RedOpKind::kSum, 0, n});
  auto fold = [&](size_t i) {
    T acc = in[0][i];
    for (int r = 1; r < n; ++r) acc = op(acc, in[r][i]);
    return acc;
  };
  std::vector<T> want(out_count);
  for (int r = 0; r < n; ++r) {
    if (coll == CollKind::kReduce && r != root) continue;
    for (size_t i = 0; i < out_count; ++i) {
      switch (coll) {
        case CollKind::kAllReduce: case CollKind::kReduce: want[i] = fold(i); break;
        case CollKind::kAllGather: want[i] = in[i / count][i % count]; break;
        case CollKind::kReduceScatter: want[i] = fold(static_cast<size_t>(r) * count + i); break;
        case CollKind::kBroadcast: want[i] = in[root][i]; break;
        default: break;
      }
    }
    ASSERT_EQ(0, std::memcmp(want.data(), out[r].data(), out_count * sizeof(T)))
        << coll_name(coll) << " count " << count << " rank " << r << " of " << n;
  }
}

constexpr CollKind kColls[] = {CollKind::kAllReduce, CollKind::kAllGather, CollKind::kReduceScatter,
                               CollKind::kBroadcast, CollKind::kReduce};

// Every collective, count and type over one ring per rank count: the connections' step counters carry
// over from one operation to the next.
template <typename Proto>
void sweep(int buff_bytes, const std::vector<size_t>& counts) {
  for (int n : {2, 3, 4, 8}) {
    HandRing<Proto> ring(n, buff_bytes);
    uint64_t op_count = 0;
    for (size_t count : counts) {
      for (CollKind c : kColls) {
        SCOPED_TRACE(std::string(Proto::kName) + " nranks " + std::to_string(n));
        check_coll<float>(ring, c, count, op_count++);
        check_coll<int8_t>(ring, c, count, op_count++);
        check_coll<half_t>(ring, c, count, op_count++);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
    EXPECT_GT(ring.step_of(0), 0u);
  }
}

// Small FIFOs (LL: 512 payload bytes a step, LL128: 1920) so that every count takes many steps and the
// FIFO wraps many times.
constexpr int kSmallLL = kNcclSteps * 64 * kLLLineBytes;
constexpr int kSmallLL128 = kNcclSteps * 16 * kLL128LineBytes;

TEST(ProtocolsTest, LLSmallFifo) { sweep<ProtoLL>(kSmallLL, {1, 7, 1000, 123457}); }
TEST(ProtocolsTest, LL128SmallFifo) { sweep<ProtoLL128>(kSmallLL128, {1, 7, 1000, 123457}); }

// NCCL's default buffer sizes: one step carries 32 KiB (LL) or 576,000 bytes (LL128).
TEST(ProtocolsTest, LLDefaultBuffer) { sweep<ProtoLL>(kLLBuffSize, {7, 123457}); }
TEST(ProtocolsTest, LL128DefaultBuffer) { sweep<ProtoLL128>(kLL128BuffSize, {7, 123457}); }

// LL's flag cleaning: steps 0x7ffffff8..0x7fffffff rewrite whole slots, and the 32-bit flag wraps to
// 0 at step 0xffffffff. Starting just before each window, with the lines as the previous lap left
// them, operations of various sizes must cross both without mistaking a stale line for a fresh one.
TEST(ProtocolsTest, LLCleanWindowAndFlagWrap) {
  for (uint64_t start : {0x7ffffff0ull, 0xfffffff0ull}) {
    HandRing<ProtoLL> ring(3, kSmallLL);
    ring.set_steps(start);
    if (start > 0x80000000ull) ring.fill_ll_lines(0x7fffffffull);  // flag 0x80000000 everywhere
    uint64_t op_count = 0;
    while (ring.step_of(0) < start + 40) {
      for (size_t count : {1, 300, 1000}) {
        for (CollKind c : kColls) check_coll<int8_t>(ring, c, count, op_count++);
        check_coll<float>(ring, CollKind::kAllReduce, count, op_count++);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

// Consecutive operations whose sizes leave the ring on different steps, then a large one.
TEST(ProtocolsTest, StepCountersPersist) {
  HandRing<ProtoLL128> ring(4, kSmallLL128);
  uint64_t op_count = 0;
  for (int rep = 0; rep < 3; ++rep)
    for (size_t count : {3, 100000, 1, 5000}) {
      check_coll<float>(ring, CollKind::kBroadcast, count, op_count++);
      check_coll<float>(ring, CollKind::kAllReduce, count, op_count++);
      if (::testing::Test::HasFatalFailure()) return;
    }
}

}  // namespace
}  // namespace cclab
