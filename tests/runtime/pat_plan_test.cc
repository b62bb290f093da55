// PAT's plan (kernels/pat_plan.h) on its own, over a generated set of rank counts, channel shares and chunk
// sizes: every rank's operations are run together symbolically, with NCCL_STEPS FIFO credits per
// connection, blocks as labels and partial sums as per-rank contribution counts. The plan must finish
// without a deadlock, every receive must find what its sender wrote there, every all_gather output
// must get the right block once, every reduce_scatter output every rank's contribution once, every
// connection's posts must balance - and a small call must take about log2(nranks) rounds of messages
// (the point of the aggregation), not nranks - 1. (What the plan does not model - the FIFO slots' reuse,
// the size recorded at a post, the runner's own first-write test - the byte-exact runtime tests cover:
// collectives_test_pat, pat_test, block_exec_test.)
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "kernels/pat_plan.h"

namespace cclab {
namespace {

// A partial sum: which block, and how many times each rank's contribution is in it.
struct Part {
  int block = -1;
  std::vector<int> from;
};

// One connection, sender -> receiver: its counters, and what the sender put at (absolute step, offset).
struct Conn {
  uint64_t tail = 0, head = 0;   // posted by the sender / given back by the receiver
  uint64_t send = 0, recv = 0;   // each side's running step
  std::map<std::pair<uint64_t, int>, Part> place;
  std::map<uint64_t, int> depth;  // rounds of messages behind each posted step
  std::map<uint64_t, size_t> size;  // elements the sender recorded at each post (offset + n of the posting op)
  std::map<uint64_t, size_t> read;  // the furthest end the receiver read in each step
};

struct Result {
  std::string error;  // empty: all checks passed
  int rounds = 0;     // the longest chain of messages over all ranks
  uint64_t steps = 0; // FIFO steps rank 0 posted
};

// Runs the plan of one channel on n ranks: `chan` elements per rank in chunks of `chunk`.
Result run_plan(bool gather, int n, size_t chan, size_t chunk) {
  const size_t count = chan;  // a rank's block is the channel's share (one channel)
  const PatShape shape = pat_shape(n, chunk * 4, chan * 4);
  std::vector<std::vector<PatOp>> ops(n);
  for (int r = 0; r < n; ++r) {
    auto collect = [&](const PatOp& o) {
      ops[r].push_back(o);
      return true;
    };
    for (size_t base = 0; base < chan; base += chunk) {
      const size_t len = std::min(chunk, chan - base);
      if (gather)
        pat_ag_chunk_ops(shape, r, count, base, len, collect);
      else
        pat_rs_chunk_ops(shape, r, count, base, len, collect);
    }
  }
  const int dims = pat_dims(n);
  // conns[d][r]: the connection of dimension d that rank r sends on (to r - 2^d for all_gather, r + 2^d
  // for reduce_scatter).
  std::vector<std::vector<Conn>> conns(dims, std::vector<Conn>(n));
  auto dist = [&](int d) { return (1 << d) % n; };
  auto send_conn = [&](int r, int d) -> Conn& { return conns[d][r]; };
  auto recv_conn = [&](int r, int d) -> Conn& {
    const int from = gather ? (r + dist(d)) % n : (r - dist(d) + n) % n;
    return conns[d][from];
  };
  // Outputs: all_gather, per rank the block label at each element index; reduce_scatter, per rank and
  // element of its block the final sum.
  std::vector<std::map<size_t, int>> out_ag(n);
  std::vector<std::map<size_t, Part>> out_rs(n);
  std::vector<size_t> pc(n, 0);
  std::vector<int> clock(n, 0);
  Result res;
  auto fail = [&](int r, const std::string& what) {
    res.error = "rank " + std::to_string(r) + " op " + std::to_string(pc[r]) + ": " + what;
    return res;
  };
  for (bool progress = true; progress && res.error.empty();) {
    progress = false;
    for (int r = 0; r < n && res.error.empty(); ++r) {
      while (pc[r] < ops[r].size() && res.error.empty()) {
        const PatOp& o = ops[r][pc[r]];
        Conn* rc = o.recv_dim >= 0 ? &recv_conn(r, o.recv_dim) : nullptr;
        Conn* sc = o.send_dim >= 0 ? &send_conn(r, o.send_dim) : nullptr;
        const uint64_t rstep = rc ? rc->recv + (gather ? o.step_off : 0) : 0;
        const uint64_t sstep = sc ? sc->send + (gather ? 0 : o.step_off) : 0;
        if (rc && rc->tail < rstep + 1) break;                        // no data yet
        if (sc && sc->head + kNcclSteps < sstep + 1) break;           // no credit yet
        if (o.nelem == 0) return fail(r, "empty operation");
        Part v;
        if (rc) {
          auto it = rc->place.find({rstep, o.recv_off});
          if (it == rc->place.end()) return fail(r, "reads a place nobody wrote");
          v = it->second;
          size_t& end = rc->read[rstep];
          end = std::max(end, static_cast<size_t>(o.recv_off) + o.nelem);
          clock[r] = std::max(clock[r], rc->depth[rstep]);
        }
        if (gather) {
          const int want = static_cast<int>(o.out_ix / count);  // the block this operation moves
          if (!rc) v.block = r;
          if (v.block != want) return fail(r, "moves block " + std::to_string(v.block) + " as " + std::to_string(want));
          auto& slot = out_ag[r][o.out_ix];
          if (slot != 0 && slot != want + 1) return fail(r, "output holds another block");
          slot = want + 1;
          if (sc) {
            Part p;
            p.block = want;
            sc->place[{sstep, o.send_off}] = p;
          }
        } else {
          const int block = static_cast<int>(o.in_ix / count);
          if (rc && v.block != block) return fail(r, "adds a partial sum of another block");
          Part* dst = nullptr;
          if (sc) {
            dst = &sc->place[{sstep, o.send_off}];
          } else {
            if (block != r) return fail(r, "writes another block to its output");
            dst = &out_rs[r][o.out_ix];
          }
          if (dst->block < 0) {  // first write of this place: this rank's input joins
            dst->block = block;
            dst->from.assign(n, 0);
            dst->from[r] += 1;
          } else if (dst->block != block) {
            return fail(r, "adds into a place of another block");
          }
          if (rc)
            for (int q = 0; q < n; ++q) dst->from[q] += v.from[q];
          if (o.last && (sc || o.out_ix != o.in_ix % count)) return fail(r, "finishes something else than its output");
        }
        if (sc && o.post_send) {
          sc->depth[sc->send] = clock[r] + 1;
          sc->size[sc->send] = static_cast<size_t>(o.send_off) + o.nelem;
          sc->tail = ++sc->send;
          if (r == 0) ++res.steps;
        }
        if (rc && o.post_recv) {
          // The step given back was filled exactly as far as this rank read it (pat.h checks the same).
          if (rc->size[rc->recv] != rc->read[rc->recv]) return fail(r, "gives back a step filled to " +
                                                                     std::to_string(rc->size[rc->recv]) + " but read to " +
                                                                     std::to_string(rc->read[rc->recv]));
          rc->head = ++rc->recv;
        }
        ++pc[r];
        progress = true;
      }
    }
  }
  if (!res.error.empty()) return res;
  for (int r = 0; r < n; ++r)
    if (pc[r] != ops[r].size()) return fail(r, "deadlock");
  for (int d = 0; d < dims; ++d)
    for (int r = 0; r < n; ++r)
      if (conns[d][r].send != conns[d][r].recv) {
        res.error = "dimension " + std::to_string(d) + " from rank " + std::to_string(r) + ": " +
                    std::to_string(conns[d][r].send) + " steps posted, " + std::to_string(conns[d][r].recv) +
                    " given back";
        return res;
      }
  // Every output place: all_gather, every block but one's own (which the input holds) at every element;
  // reduce_scatter, every rank's contribution once.
  for (int r = 0; r < n; ++r) {
    if (gather) {
      for (size_t base = 0; base < chan; base += chunk)
        for (int q = 0; q < n; ++q) {
          auto it = out_ag[r].find(static_cast<size_t>(q) * count + base);
          if (q != r && (it == out_ag[r].end() || it->second != q + 1)) {
            res.error = "rank " + std::to_string(r) + " all_gather output misses block " + std::to_string(q);
            return res;
          }
        }
    } else {
      const size_t chunks = (chan + chunk - 1) / chunk;
      if (out_rs[r].size() != chunks) {
        res.error = "rank " + std::to_string(r) + " reduce_scatter output has " + std::to_string(out_rs[r].size()) +
                    " chunks of " + std::to_string(chunks);
        return res;
      }
      for (const auto& [ix, p] : out_rs[r])
        for (int q = 0; q < n; ++q)
          if (p.from[q] != 1) {
            res.error = "rank " + std::to_string(r) + " element " + std::to_string(ix) + " holds rank " +
                        std::to_string(q) + "'s contribution " + std::to_string(p.from[q]) + " times";
            return res;
          }
    }
  }
  for (int r = 0; r < n; ++r) res.rounds = std::max(res.rounds, clock[r]);
  return res;
}

// Rank counts 2 .. 40 and some beyond; channel shares from one element to many chunks; small and large
// chunks (so the plan runs with one block per FIFO step and with many).
TEST(PatPlan, EveryRankCountShareAndChunkRunsToTheRightResult) {
  std::vector<int> ranks;
  for (int n = 2; n <= 40; ++n) ranks.push_back(n);
  for (int n : {47, 63, 64, 65, 100}) ranks.push_back(n);
  int cases = 0;
  for (int n : ranks)
    for (size_t chan : {size_t{1}, size_t{3}, size_t{64}, size_t{1000}, size_t{5000}})
      for (size_t chunk : {size_t{128}, size_t{4096}})
        for (bool gather : {true, false}) {
          const Result r = run_plan(gather, n, chan, chunk);
          ASSERT_EQ(r.error, "") << (gather ? "all_gather" : "reduce_scatter") << " nranks " << n << " share " << chan
                                 << " chunk " << chunk;
          ++cases;
        }
  EXPECT_EQ(cases, 44 * 5 * 2 * 2);
}

// The aggregation: a small call (every block of a channel fits a FIFO step many times over) posts one
// step per dimension, ceil(log2(nranks)) (one more with 2^k + 1 ranks), and takes at most as many rounds
// of messages (the PAT paper's "logarithmic number of network transfers"); a large one (one block per
// step) posts nranks - 1. Every rank count from 2 to 130, and 257.
TEST(PatPlan, ASmallCallTakesLogarithmicRounds) {
  std::vector<int> ranks;
  for (int n = 2; n <= 130; ++n) ranks.push_back(n);
  ranks.push_back(257);
  for (int n : ranks)
    for (bool gather : {true, false}) {
      SCOPED_TRACE(std::string(gather ? "all_gather" : "reduce_scatter") + " nranks " + std::to_string(n));
      const int dims = pat_dims(n);
      // A FIFO step holds at most nranks / 2 blocks: with 2^k + 1 ranks dimension 0 takes two.
      const bool one_more = n >= 5 && ((n - 1) & (n - 2)) == 0;
      const Result small = run_plan(gather, n, 1, 4096);
      ASSERT_EQ(small.error, "");
      EXPECT_EQ(small.steps, static_cast<uint64_t>(dims + (one_more ? 1 : 0)));
      EXPECT_LE(small.rounds, static_cast<int>(small.steps));  // messages in a row, each waiting for the one before
      if (n > 64) continue;
      const Result large = run_plan(gather, n, 4096, 4096);  // one chunk, one block per step
      ASSERT_EQ(large.error, "");
      EXPECT_EQ(large.steps, static_cast<uint64_t>(n - 1));
    }
}

// The shape: blocks per step double while two more fit in a chunk, up to nranks / 2, and the FIFO's
// depth multiplies the group, again up to nranks / 2 (NCCL's PatAGAlgorithm constructor).
TEST(PatPlan, Shape) {
  PatShape p = pat_shape(64, 131072, 131072);  // a block fills a chunk: one per step, 8 steps a group
  EXPECT_EQ(p.post_freq, 1);
  EXPECT_EQ(p.agg, 8);
  EXPECT_EQ(p.agg_delta, 8);
  p = pat_shape(64, 131072, 4096);  // 32 blocks per chunk, capped at 64 / 2
  EXPECT_EQ(p.post_freq, 32);
  EXPECT_EQ(p.agg, 32);
  EXPECT_EQ(p.agg_delta, 2);
  p = pat_shape(5, 131072, 512);  // nranks / 2 = 2: the doubling stops at 2
  EXPECT_EQ(p.post_freq, 2);
  EXPECT_EQ(p.agg, 2);
  EXPECT_EQ(p.nrpow2, 8);
  EXPECT_EQ(p.agg_delta, 4);
  // The walk of the low distances: 2^(d-1), then that plus the walk of d-1 bits, then the walk of d-1 bits.
  std::vector<int> walk;
  for (int k = 0; k < 7; ++k) walk.push_back(pat_as_order(k, 3));
  EXPECT_EQ(walk, (std::vector<int>{4, 6, 7, 5, 2, 3, 1}));
}

}  // namespace
}  // namespace cclab
