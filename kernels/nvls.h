// kernels/nvls.h - NVLS (NVLink SHARP): AllReduce, ReduceScatter and AllGather through an NVSwitch that
// reduces and multicasts (NCCL 2.28.9's RunWorkColl<..., NCCL_ALGO_NVLS, NCCL_PROTO_SIMPLE>, one machine),
// written once for every executor, like ring.h and tree.h.
//
// The memory. On each channel every rank owns an NVLS region: for each head h two FIFOs of NCCL_STEPS
// slots - the reduce FIFO, into which every rank scatters its input's part h, and the broadcast FIFO, into
// which head h multicasts the result. The heads are the group's first nheads ranks (NCCL's nvls.nHeads:
// the NVLS graph's channels, min(32, GPUs) on one machine, a GPU per NIC across machines); on a machine of
// up to 32 GPUs with a NIC each every rank is a head, on a 72-GPU NVLink domain 32 of them are. Every rank,
// head or not, scatters into and gathers from every head.
// NCCL maps the same offset of every rank's region into one multicast object (nvls.cc: ucBuff/mcBuff,
// credits in ucCredit/mcCredit): a multimem load of a multicast address returns the reduction of the
// value at that offset over every rank (multimem.ld_reduce), a multimem store writes every rank's copy
// (multimem.st). NvlsConn is one rank's view: its rank, every rank's region (the "unicast" copies) and,
// on a GPU, the multicast address.
//
// The event stream: the scatter and gather copies are local copies (kLocalCopy, no peer: no GPU-to-GPU
// transfer); a head's step is recvReduceCopySend (AllReduce: load-reduce and multicast), recvReduceCopy
// (ReduceScatter) or copySend (AllGather's multicast), with this rank as its peer - the switch is the
// other end. NVLS-Tree's tree steps carry the switch as a side peer; after each, the schedule reports its
// switch part the same way: recvReduceCopy (the load-reduce), copySend (the broadcast role's multicast),
// recvReduceCopySend (both, at the root).
//
// One loop of the schedule moves nheads x chunk elements of the channel's share: part h (chunk elements)
// belongs to head h. With s the channel's running NVLS step:
//
//   scatter   every rank: for each head h, wait until head h has freed slot s of its reduce FIFO (the
//             head counter of this rank's copy, which h writes with a multicast store), copy input part h
//             into this rank's copy, post this rank's copy's tail;
//   reduce    head me (a rank that is no head skips it): wait until every rank's copy of its reduce FIFO
//             holds step s (NCCL reads the tail through the multicast address with a min reduction:
//             NCCL_NVLS_MIN_POLL) and every rank
//             has drained slot s of its broadcast FIFO; load-reduce the slot over the group, multicast
//             the result into slot s of the broadcast FIFO (AllReduce; ReduceScatter writes it to the
//             head's own output instead); multicast-post both counters;
//   gather    every rank: for each head h, wait for step s in its copy of h's broadcast FIFO, copy the
//             part into the output, post its copy's head.
//
//   AllGather has no reduction: each rank multicasts its own input chunk into its broadcast FIFO (it is
//   the head of its own data) and gathers every rank's chunk. ReduceScatter and AllGather need every rank
//   a head (NCCL runs them by NVLS only up to NCCL_MAX_NVLS_ARITY ranks per machine).
//
// NCCL runs the three roles on separate warps of one block, concurrently. run_nvls_channel takes the
// roles to run: all three (the host and block executors, one after the other per loop, which works
// because no role waits on a later role of the same loop), or one role per caller (the simulator runs
// each role as an actor of its own, so their data loops and the switch overlap as NCCL's warps do).
// Every loop advances every FIFO it uses (AllReduce: all; ReduceScatter: the reduce FIFOs; AllGather: the
// broadcast FIFOs) by exactly one step, empty parts included, so all ranks stay in step and every role of
// a rank counts the same steps.
//
// The executor supplies the multimem operations (Exec):
//   void mc_ld_reduce<T>(RedOp<T>, T* dst, const NvlsConn&, size_t off, size_t n, bool post)
//        dst[i] = post(reduce over ranks r of copy_r[off][i])          (multimem.ld_reduce)
//   void mc_st<T>(RedOp<T>, const NvlsConn&, size_t off, const T* src, size_t n)
//        copy_r[off][i] = src[i] for every rank r                     (multimem.st; the op only types
//                                                                      the emulation's copy loop)
//   void mc_ld_reduce_st<T>(RedOp<T>, const NvlsConn&, size_t src_off, size_t dst_off, size_t n, bool post)
//        both at once: the reduction goes straight to every copy at dst_off
//   bool mc_wait_ge(const NvlsConn&, size_t counter_off, uint64_t target, const WaitSite&)
//        every rank's copy of the counter at counter_off >= target     (multimem.ld_reduce.min)
//   void mc_post(const NvlsConn&, size_t counter_off, uint64_t value)   (multimem.st of the counter)
//   void mc_sync()   the lanes see each other's stores (a block barrier; NVLS-Tree's fused step, below)
// nvls_emulate_* below implement them over the unicast copies with the executor's own wait_ge, post and
// reduce_copy (the host executor, the simulator in payload mode, a GPU without multimem); on sm90+ the
// block executor uses the multimem PTX (kernels/cuda/multimem.h).
//
// NVLS-Tree (NCCL's RunWorkColl<AllReduce, ..., NCCL_ALGO_NVLS_TREE, NCCL_PROTO_SIMPLE>): AllReduce across
// NVSwitch machines. The NVLS group is one machine's ranks (NvlsConn: its heads in head order - the GPUs
// the NVLS search paired with a NIC - then the others); the heads of part h on every machine form the
// channel's tree (NCCL's nvls.treeUp / treeDown: tree c % 2 of the double binary tree
// over machines, NvlsTreeConns), over ordinary connections (Primitives, ProtoSimple<1,1>). Per loop:
//
//   scatter   as NVLS;
//   reduce    head me, one step (NCCL's reduce warps' directRecvDirectSend with the NVLS connection in
//             treeDown[0]): load-reduce part me over its machine (through the switch), reduce it with
//             the children's sums and send the result up (recvReduceSend; a leaf machine: send); at the
//             root: into the output, down the tree (recvReduceCopySend) and multicast into the broadcast
//             FIFO; the reduce slot is freed after the step;
//   bcast     head me with a parent (NCCL's broadcast warps), one step: receive the result from the parent
//             into the output, send it on to the children (recvCopySend; a leaf: recv) and multicast it
//             into the broadcast FIFO;
//   gather    as NVLS.
//
// The local sum joins first, then each child's in connection order (NCCL's treeDown[0] is the NVLS
// connection, then the children). The switch is the step's side peer (Primitives::step_with): its
// load-reduce lands in the output where the data loop reads it (NCCL's warps hold it in registers; the
// same single data loop) and the multicast store reads the step's result there, all in one step, as
// NCCL's one primitive call. Reduce and bcast use different connections (children -> me -> parent, parent -> me -> children),
// so the simulator runs them as actors of their own, as NCCL's warps.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "kernels/fifo.h"
#include "kernels/platform.h"
#include "kernels/primitives.h"
#include "kernels/reduce_ops.h"
#include "kernels/work.h"

namespace cclab {

// Ranks of one multicast group (NCCL_MAX_LOCAL_RANKS: a machine's ranks, 72 in an NVL72 rack) and heads
// (NCCL_MAX_NVLS_ARITY).
constexpr int kMaxNvlsRanks = 72;
constexpr int kMaxNvlsHeads = 32;

// The roles of the schedule (NCCL's scatter, reduce, gather and, for NVLS-Tree, broadcast warps), as a mask.
constexpr int kNvlsScatter = 1, kNvlsReduce = 2, kNvlsGather = 4, kNvlsBcast = 8, kNvlsAllRoles = 15;

// NVLS-Tree: one head's connections on one channel's tree of machines (nullptr where there is no such
// peer): to and from the parent machine's head of the same part, to and from up to two children's.
constexpr int kMaxNvlsTreeArity = 2;  // inter-machine children (NCCL_MAX_NVLS_TREE_ARITY 3 counts NVLS too)
struct NvlsTreeConns {
  ConnInfo* up_recv = nullptr;
  ConnInfo* up_send = nullptr;
  ConnInfo* down_recv[kMaxNvlsTreeArity] = {};
  ConnInfo* down_send[kMaxNvlsTreeArity] = {};
  int ndown = 0;
};

// Which of the double binary tree's two trees NVLS-Tree channel c runs (connect.cc: treeUp[c % 2]; not
// the halves tree_of_channel gives Tree).
CCLAB_HD inline int nvls_tree_of_channel(int c) { return c % 2; }

// One rank's view of one channel's NVLS memory.
struct NvlsConn {
  int nranks = 0;                     // ranks of the group
  int nheads = 0;                     // its heads: ranks 0 .. nheads-1 of the group, head h = rank h
  int rank = 0;                       // this rank in the group (the head it is, if below nheads)
  int step_bytes = 0;                 // bytes per FIFO slot (NCCL_NVLS_CHUNKSIZE)
  char* uc[kMaxNvlsRanks] = {};       // every rank's region, as this rank reaches it
  char* mc = nullptr;                 // the multicast address of the regions (GPU with multimem), or null
  // The communicator rank of each group member (global_set): what a wait on member i's FIFO names.
  int global[kMaxNvlsRanks] = {};
  bool global_set = false;
  // The channel's running steps (the same on every rank): of the reduce FIFOs (AllReduce and
  // ReduceScatter advance them) and of the broadcast FIFOs (AllReduce and AllGather).
  uint64_t step_up = 0;
  uint64_t step_down = 0;
  // AllReduce: bytes of the running loop over all heads (the simulator charges a head's step with its own
  // link's share of the loop: its part of every head's load-reduce and multicast).
  uint64_t loop_bytes = 0;
};

// The communicator rank of NVLS group member i (the member's index where the executor gave no map).
CCLAB_HD inline int nvls_member_rank(const NvlsConn& c, int i) { return c.global_set ? c.global[i] : i; }

// Bytes of one FIFO (header, then NCCL_STEPS slots), of one rank's region, and where FIFOs lie in it.
CCLAB_HD inline size_t nvls_fifo_bytes(int step_bytes) {
  return kFifoDataOffset + static_cast<size_t>(kNcclSteps) * static_cast<size_t>(step_bytes);
}
CCLAB_HD inline size_t nvls_region_bytes(int nheads, int step_bytes) {
  return 2 * static_cast<size_t>(nheads) * nvls_fifo_bytes(step_bytes);
}
// The FIFO of head h: the reduce FIFO (bcast false) or the broadcast FIFO.
CCLAB_HD inline size_t nvls_fifo_off(int head, bool bcast, int step_bytes) {
  return (2 * static_cast<size_t>(head) + (bcast ? 1 : 0)) * nvls_fifo_bytes(step_bytes);
}
CCLAB_HD inline size_t nvls_head_off(size_t fifo) { return fifo + offsetof(ConnFifoHeader, head); }
CCLAB_HD inline size_t nvls_tail_off(size_t fifo) { return fifo + offsetof(ConnFifoHeader, tail); }
CCLAB_HD inline size_t nvls_slot_off(size_t fifo, uint64_t step, int step_bytes) {
  return fifo + kFifoDataOffset + (step % kNcclSteps) * static_cast<size_t>(step_bytes);
}
CCLAB_HD inline ConnFifoHeader* nvls_hdr(const NvlsConn& c, int r, size_t fifo) {
  return reinterpret_cast<ConnFifoHeader*>(c.uc[r] + fifo);
}

// Chunk (bytes per head and loop) of an NVLS collective of `bytes` (NCCL's nBytes) on nchannels channels
// of nheads heads (calcCollChunking: at most NCCL_NVLS_CHUNKSIZE, halved to 64 KiB, 32 KiB, 16 KiB while
// there are fewer than 64, 8, 2 chunks per concurrent head), a multiple of 512 bytes.
CCLAB_HD inline size_t nvls_chunk_bytes(size_t bytes, int nchannels, int nheads, int step_bytes) {
  size_t chunk = static_cast<size_t>(step_bytes);
  const size_t ops = static_cast<size_t>(nchannels > 0 ? nchannels : 1) * static_cast<size_t>(nheads > 0 ? nheads : 1);
  if (bytes < 64 * ops * chunk && chunk > 65536) chunk = 65536;
  if (bytes < 8 * ops * chunk && chunk > 32768) chunk = 32768;
  if (bytes < 2 * ops * chunk && chunk > 16384) chunk = 16384;
  chunk = chunk / 512 * 512;
  return chunk > 0 ? chunk : 512;
}

// NCCL's nvlsTreeMaxChunkSize (ncclNvlsTuning): NCCL_NVLSTREE_MAX_CHUNKSIZE when set (env != -2), else
// 64 KiB on 4 machines or more and the NVLS chunk size (NCCL_NVLS_CHUNKSIZE) below. (NCCL's sm100
// multi-node tuning, ncclNvlsTreeSm100Tuning, picks other sizes by NIC speed; cclab keeps these.)
CCLAB_HD inline int nvls_tree_max_chunk(int nnodes, int nvls_chunk, int env) {
  if (env != -2) return env;
  return nnodes >= 4 ? 65536 : nvls_chunk;
}

// Chunk of an NVLS-Tree AllReduce of `bytes` (NCCL's calcCollChunking for NCCL_ALGO_NVLS_TREE):
// min(NVLS chunk, tree maximum), halved to 256, 128, 64 and 32 KiB while fewer than 32, 16, 4 and 1
// chunks fall to each concurrent head (nchannels x nheads), a multiple of 512 bytes.
CCLAB_HD inline size_t nvls_tree_chunk_bytes(size_t bytes, int nchannels, int nheads, int nvls_chunk, int tree_max) {
  size_t chunk = static_cast<size_t>(nvls_chunk < tree_max ? nvls_chunk : tree_max);
  const size_t ops = static_cast<size_t>(nchannels > 0 ? nchannels : 1) * static_cast<size_t>(nheads > 0 ? nheads : 1);
  if (bytes < 32 * ops * chunk && chunk > 262144) chunk = 262144;
  if (bytes < 16 * ops * chunk && chunk > 131072) chunk = 131072;
  if (bytes < 4 * ops * chunk && chunk > 65536) chunk = 65536;
  if (bytes < 1 * ops * chunk && chunk > 32768) chunk = 32768;
  chunk = chunk / 512 * 512;
  return chunk > 0 ? chunk : 512;
}

// ---- the multimem operations over the unicast copies -------------------------------------------------

// dst = post(copy_0 op copy_1 op ... op copy_{n-1}), in rank order (the same order on every executor).
template <typename T, typename Exec>
CCLAB_HD void nvls_emulate_ld_reduce(Exec& ex, const RedOp<T>& op, T* dst, const NvlsConn& c, size_t off, size_t n,
                                     bool post) {
  const T* c0 = reinterpret_cast<const T*>(c.uc[0] + off);
  if (c.nranks == 1) {
    ex.reduce_copy(op, dst, static_cast<T*>(nullptr), static_cast<const T*>(nullptr), c0, n, false, post);
    return;
  }
  for (int r = 1; r < c.nranks; ++r) {
    const T* cr = reinterpret_cast<const T*>(c.uc[r] + off);
    ex.reduce_copy(op, dst, static_cast<T*>(nullptr), r == 1 ? c0 : dst, cr, n, false, post && r == c.nranks - 1);
  }
}
template <typename T, typename Exec>
CCLAB_HD void nvls_emulate_st(Exec& ex, const RedOp<T>& op, const NvlsConn& c, size_t off, const T* src, size_t n) {
  for (int r = 0; r < c.nranks; ++r) {
    T* d = reinterpret_cast<T*>(c.uc[r] + off);
    if (d != src)
      ex.reduce_copy(op, d, static_cast<T*>(nullptr), static_cast<const T*>(nullptr), src, n, false, false);
  }
}
// The reduction lands in this rank's copy first, then goes to the others from there.
template <typename T, typename Exec>
CCLAB_HD void nvls_emulate_ld_reduce_st(Exec& ex, const RedOp<T>& op, const NvlsConn& c, size_t src_off,
                                        size_t dst_off, size_t n, bool post) {
  T* mine = reinterpret_cast<T*>(c.uc[c.rank] + dst_off);
  nvls_emulate_ld_reduce(ex, op, mine, c, src_off, n, post);
  nvls_emulate_st(ex, op, c, dst_off, static_cast<const T*>(mine), n);
}
template <typename Exec>
CCLAB_HD bool nvls_emulate_wait_ge(Exec& ex, const NvlsConn& c, size_t counter_off, uint64_t target,
                                   const WaitSite& site) {
  for (int r = 0; r < c.nranks; ++r) {
    WaitSite w = site;
    w.peer = nvls_member_rank(c, r);
    if (!ex.wait_ge(reinterpret_cast<const ConnCounter*>(c.uc[r] + counter_off), target, w)) return false;
  }
  return true;
}
template <typename Exec>
CCLAB_HD void nvls_emulate_post(Exec& ex, const NvlsConn& c, size_t counter_off, uint64_t value) {
  for (int r = 0; r < c.nranks; ++r) ex.post(reinterpret_cast<ConnCounter*>(c.uc[r] + counter_off), value);
}

// ---- the schedule ------------------------------------------------------------------------------------

template <typename T, typename Exec>
class NvlsSchedule {
 public:
  CCLAB_HD NvlsSchedule(Exec& ex, const RedOp<T>& op, const CollWork& w, NvlsConn& c, int channel, int roles,
                        const NvlsTreeConns* tree = nullptr)
      : ex_(ex), op_(op), w_(w), c_(c), channel_(channel), sb_(c.step_bytes), roles_(roles), tree_(tree) {}

  CCLAB_HD bool run() {
    const size_t grain = 512 / sizeof(T) > 0 ? 512 / sizeof(T) : 1;
    const Range r = channel_range(w_.count, channel_, w_.nchannels, grain);
    size_t chunk = w_.chunk_bytes / sizeof(T);
    const size_t slot = static_cast<size_t>(sb_) / sizeof(T);
    if (chunk > slot) chunk = slot;
    chunk = chunk / grain * grain;
    if (chunk == 0) chunk = grain;
    const int n = c_.nheads;
    c_.loop_bytes = 0;
    if (w_.coll == CollKind::kAllReduce) {
      const size_t loop = chunk * static_cast<size_t>(n);
      for (size_t o = 0; o < r.size(); o += loop) {
        const size_t rem = min_sz(loop, r.size() - o);
        // The last loop splits what is left over the heads in parts aligned as NCCL's lastChunkSize: 16 KiB
        // on one machine (all_reduce.h, NVLS), 16 bytes for NVLS-Tree; the last heads may get less, or
        // nothing. Never more than a chunk (the slot), which still covers the loop: rem <= n x chunk. (NCCL does
        // not clamp: with an NCCL_NVLS_CHUNKSIZE that is no multiple of 16 KiB its scatter would run past the
        // slot; with its defaults the clamp never applies.)
        const size_t align = tree_ != nullptr ? (16 / sizeof(T) > 0 ? 16 / sizeof(T) : 1)
                                              : (16384 / sizeof(T) > 0 ? 16384 / sizeof(T) : 1);
        const size_t part = rem == loop ? chunk : min_sz(round_up(div_up(rem, static_cast<size_t>(n)), align), chunk);
        if (!all_reduce_loop(r.lo + o, rem, part)) return false;
      }
      return true;
    }
    for (size_t o = 0; o < r.size(); o += chunk) {
      const size_t cnt = min_sz(chunk, r.size() - o);
      const bool ok = w_.coll == CollKind::kAllGather ? all_gather_loop(r.lo + o, cnt)
                                                      : reduce_scatter_loop(r.lo + o, cnt);
      if (!ok) return false;
    }
    return true;
  }

 private:
  // Elements of part h in a loop of `rem` elements cut into parts of `part`.
  CCLAB_HD static size_t part_count(size_t rem, size_t part, int h) {
    const size_t lo = part * static_cast<size_t>(h);
    return rem > lo ? min_sz(part, rem - lo) : 0;
  }
  CCLAB_HD size_t fifo(int h, bool bcast) const { return nvls_fifo_off(h, bcast, sb_); }
  CCLAB_HD ConnFifoHeader* mine(size_t f) const { return nvls_hdr(c_, c_.rank, f); }
  CCLAB_HD T* slot_of(int r, size_t f, uint64_t s) const {
    return reinterpret_cast<T*>(c_.uc[r] + nvls_slot_off(f, s, sb_));
  }
  // A wait on group member `member`'s FIFO (a head's): it names that member's communicator rank.
  CCLAB_HD WaitSite site(int member, uint64_t step, bool data, PrimKind prim) const {
    return WaitSite{w_.rank, channel_, member < 0 ? member : nvls_member_rank(c_, member), step, data, prim};
  }
  CCLAB_HD void observe(int send_peer, int recv_peer, uint64_t s, PrimKind prim, size_t n, double t0, size_t off,
                        double td) {
    StepRecord rec{w_.rank, channel_, send_peer, recv_peer, s, prim, w_.coll, w_.op_count, n * sizeof(T), t0,
                   ex_.now_us(), static_cast<uint64_t>(off * sizeof(T)), td};
    ex_.observe(rec);
  }

  // Copies src[0..n) into this rank's copy of head h's reduce FIFO at step s (scatter).
  CCLAB_HD bool scatter(int h, const T* src, size_t n, uint64_t s, size_t off) {
    const size_t f = fifo(h, false);
    const bool obs = ex_.observing();
    const double t0 = obs ? ex_.now_us() : 0.0;
    const uint64_t credit = s + 1 > static_cast<uint64_t>(kNcclSteps) ? s + 1 - kNcclSteps : 0;
    if (!ex_.wait_ge(&mine(f)->head, credit, site(h, s + 1, false, PrimKind::kSend))) return false;
    const double td = obs ? ex_.now_us() : 0.0;
    if (n > 0) ex_.reduce_copy(op_, slot_of(c_.rank, f, s), static_cast<T*>(nullptr), static_cast<const T*>(nullptr),
                               src, n, false, false);
    if (ex_.lane() == 0) {
      mine(f)->sizes[s % kNcclSteps] = static_cast<int32_t>(n * sizeof(T));
      mine(f)->ends[s % kNcclSteps] = s + 1;
    }
    ex_.post(&mine(f)->tail, s + 1);
    if (obs) observe(-1, -1, s, PrimKind::kLocalCopy, n, t0, off, td);
    return true;
  }
  // Copies this rank's copy of head h's broadcast FIFO at step s into dst[0..n) (gather).
  CCLAB_HD bool gather(int h, T* dst, size_t n, uint64_t s, size_t off) {
    const size_t f = fifo(h, true);
    const bool obs = ex_.observing();
    const double t0 = obs ? ex_.now_us() : 0.0;
    if (!ex_.wait_ge(&mine(f)->tail, s + 1, site(h, s + 1, true, PrimKind::kRecv))) return false;
    const int32_t got = mine(f)->sizes[s % kNcclSteps];
    if (got != static_cast<int32_t>(n * sizeof(T)) &&
        ex_.size_mismatch(site(h, s + 1, true, PrimKind::kRecv), n * sizeof(T), got))
      return false;
    const double td = obs ? ex_.now_us() : 0.0;
    const T* src = slot_of(c_.rank, f, s);
    if (n > 0 && dst != src)
      ex_.reduce_copy(op_, dst, static_cast<T*>(nullptr), static_cast<const T*>(nullptr), src, n, false, false);
    ex_.post(&mine(f)->head, s + 1);
    if (obs) observe(-1, -1, s, PrimKind::kLocalCopy, n, t0, off, td);
    return true;
  }
  // Head me: waits for every rank's part of step s in its reduce FIFO (checking each one's size).
  CCLAB_HD bool wait_parts(size_t f, size_t n, uint64_t s, PrimKind prim) {
    if (!ex_.mc_wait_ge(c_, nvls_tail_off(f), s + 1, site(-1, s + 1, true, prim))) return false;
    for (int r = 0; r < c_.nranks; ++r) {
      const int32_t got = nvls_hdr(c_, r, f)->sizes[s % kNcclSteps];
      if (got != static_cast<int32_t>(n * sizeof(T)) && ex_.size_mismatch(site(r, s + 1, true, prim), n * sizeof(T), got))
        return false;
    }
    return true;
  }
  // Head me: the broadcast FIFO's slot s is free on every rank.
  CCLAB_HD bool wait_bcast_credit(size_t f, uint64_t s, PrimKind prim) {
    const uint64_t credit = s + 1 > static_cast<uint64_t>(kNcclSteps) ? s + 1 - kNcclSteps : 0;
    return ex_.mc_wait_ge(c_, nvls_head_off(f), credit, site(-1, s + 1, false, prim));
  }
  // Head me, after a multicast store of n elements into its broadcast FIFO at step s: the slice record
  // (every copy) and the tail.
  CCLAB_HD void publish(size_t f, size_t n, uint64_t s) {
    if (ex_.lane() == 0)
      for (int r = 0; r < c_.nranks; ++r) {
        nvls_hdr(c_, r, f)->sizes[s % kNcclSteps] = static_cast<int32_t>(n * sizeof(T));
        nvls_hdr(c_, r, f)->ends[s % kNcclSteps] = s + 1;
      }
    ex_.mc_post(c_, nvls_tail_off(f), s + 1);
  }

  CCLAB_HD bool all_reduce_loop(size_t base, size_t rem, size_t part) {
    const T* in = static_cast<const T*>(w_.send);
    T* out = static_cast<T*>(w_.recv);
    const int n = c_.nheads, me = c_.rank;
    const bool head = me < n;
    const uint64_t su = c_.step_up, sd = c_.step_down;
    c_.loop_bytes = rem * sizeof(T);
    for (int h = 0; h < n && (roles_ & kNvlsScatter); ++h) {
      const size_t lo = base + part * static_cast<size_t>(h);
      if (!scatter(h, in + lo, part_count(rem, part, h), su, lo)) return false;
    }
    if (!head) {
      // No part to reduce: this rank's scatter and gather only.
    } else if (tree_ != nullptr) {
      if ((roles_ & kNvlsReduce) && !tree_reduce(base, rem, part, su, sd)) return false;
      if ((roles_ & kNvlsBcast) && tree_->up_recv != nullptr && !tree_bcast(base, rem, part, sd)) return false;
    } else if (roles_ & kNvlsReduce) {
      const size_t up = fifo(me, false), down = fifo(me, true);
      const size_t cnt = part_count(rem, part, me), lo = base + part * static_cast<size_t>(me);
      const bool obs = ex_.observing();
      const double t0 = obs ? ex_.now_us() : 0.0;
      if (!wait_parts(up, cnt, su, PrimKind::kRecvReduceCopySend)) return false;
      if (!wait_bcast_credit(down, sd, PrimKind::kRecvReduceCopySend)) return false;
      const double td = obs ? ex_.now_us() : 0.0;
      // An empty part too: the simulator charges the head's link with its share of the loop.
      ex_.mc_ld_reduce_st(op_, c_, nvls_slot_off(up, su, sb_), nvls_slot_off(down, sd, sb_), cnt, true);
      publish(down, cnt, sd);
      ex_.mc_post(c_, nvls_head_off(up), su + 1);
      if (obs) observe(me, me, su, PrimKind::kRecvReduceCopySend, cnt, t0, lo, td);
    }
    for (int h = 0; h < n && (roles_ & kNvlsGather); ++h) {
      const size_t lo = base + part * static_cast<size_t>(h);
      if (!gather(h, out + lo, part_count(rem, part, h), sd, lo)) return false;
    }
    c_.step_up = su + 1;
    c_.step_down = sd + 1;
    return true;
  }

  // NVLS-Tree, head me: the multicast of the result (in the output at lo) into its broadcast FIFO.
  CCLAB_HD bool tree_multicast(const T* res, size_t lo, size_t cnt, uint64_t sd) {
    const size_t down = fifo(c_.rank, true);
    const bool obs = ex_.observing();
    const double t0 = obs ? ex_.now_us() : 0.0;
    if (!wait_bcast_credit(down, sd, PrimKind::kCopySend)) return false;
    const double td = obs ? ex_.now_us() : 0.0;
    ex_.mc_st(op_, c_, nvls_slot_off(down, sd, sb_), res, cnt);  // an empty part too (as above)
    publish(down, cnt, sd);
    if (obs) observe(w_.rank, -1, sd, PrimKind::kCopySend, cnt, t0, lo, td);
    return true;
  }

  // NVLS-Tree: the machine's NVLS group as one more peer of a tree step (Primitives::op's side), as
  // NCCL's treeDown[0] / treeUp carry the NVLS connection: `load` - the step's source is the switch's
  // load-reduce of part me (into the output at lo, where the step reads it), and the reduce slot is freed
  // after the step; `store` - the step's result (in the output) is multicast into the broadcast FIFO.
  struct TreeSide {
    NvlsSchedule* s;
    bool load_sum, store_result;
    uint64_t su, sd;
    PrimKind prim;
    CCLAB_HD bool wait(size_t n) {
      if (load_sum && !s->wait_parts(s->fifo(s->c_.rank, false), n, su, prim)) return false;
      return !store_result || s->wait_bcast_credit(s->fifo(s->c_.rank, true), sd, prim);
    }
    CCLAB_HD void load(size_t off, size_t n) {
      if (load_sum) {  // an empty part too (as above)
        s->ex_.mc_ld_reduce(s->op_, static_cast<T*>(s->w_.recv) + off, s->c_,
                            nvls_slot_off(s->fifo(s->c_.rank, false), su, s->sb_), n, false);
        s->ex_.mc_sync();
      }
    }
    CCLAB_HD void store(size_t off, size_t n) {
      if (store_result) {
        s->ex_.mc_sync();
        const size_t down = s->fifo(s->c_.rank, true);
        s->ex_.mc_st(s->op_, s->c_, nvls_slot_off(down, sd, s->sb_), static_cast<const T*>(s->w_.recv) + off, n);
        s->publish(down, n, sd);
      }
      if (load_sum) s->ex_.mc_post(s->c_, nvls_head_off(s->fifo(s->c_.rank, false)), su + 1);
    }
  };

  // NVLS-Tree's reduce role (see the file's head): one step per loop - the machine's sum of part me
  // through the switch, reduced with the children's sums, sent up the tree; at the root sent down the
  // tree and multicast into the broadcast FIFO.
  CCLAB_HD bool tree_reduce(size_t base, size_t rem, size_t part, uint64_t su, uint64_t sd) {
    T* out = static_cast<T*>(w_.recv);
    const int me = c_.rank;
    const size_t cnt = part_count(rem, part, me), lo = base + part * static_cast<size_t>(me);
    const NvlsTreeConns& t = *tree_;
    const bool root = t.up_send == nullptr;
    if (root && t.ndown == 0) {
      // A tree of one machine (NCCL runs NVLS there instead): the local sum is the result.
      const size_t up = fifo(me, false);
      if (!wait_parts(up, cnt, su, PrimKind::kRecvReduceCopy)) return false;
      ex_.mc_ld_reduce(op_, out + lo, c_, nvls_slot_off(up, su, sb_), cnt, true);
      ex_.mc_post(c_, nvls_head_off(up), su + 1);
      return tree_multicast(out + lo, lo, cnt, sd);
    }
    ConnInfo* up_send = t.up_send;
    Primitives<T, ProtoSimple<1, 1>, Exec> p(ex_, op_, t.down_recv, t.ndown, root ? t.down_send : &up_send,
                                             root ? t.ndown : 1, out, out, w_.rank, channel_, w_.coll, w_.op_count);
    p.set_source(out, true);  // the local sum: already through the op's pre function (NVLS ops have none)
    const PrimKind prim = root ? PrimKind::kRecvReduceCopySend : t.ndown == 0 ? PrimKind::kSend : PrimKind::kRecvReduceSend;
    TreeSide side{this, true, root, su, sd, prim};
    const bool obs = ex_.observing();
    const double t0 = obs ? ex_.now_us() : 0.0;
    if (root) p.template step_with<true, true, true, true>(side, lo, lo, cnt, true, prim);
    else if (t.ndown == 0) p.template step_with<false, true, true, false>(side, lo, 0, cnt, false, prim);
    else p.template step_with<true, true, true, false>(side, lo, 0, cnt, false, prim);
    // The step's switch part as an event of its own, this rank its peer as NVLS's head steps: the
    // load-reduce (recvReduceCopy), and at the root the multicast too (recvReduceCopySend).
    if (obs && !p.aborted())
      observe(w_.rank, w_.rank, su, root ? PrimKind::kRecvReduceCopySend : PrimKind::kRecvReduceCopy, cnt, t0, lo, t0);
    return !p.aborted();
  }

  // NVLS-Tree's broadcast role (a head with a parent): one step per loop - the result from the parent,
  // on to the children and multicast into the broadcast FIFO.
  CCLAB_HD bool tree_bcast(size_t base, size_t rem, size_t part, uint64_t sd) {
    T* out = static_cast<T*>(w_.recv);
    const int me = c_.rank;
    const size_t cnt = part_count(rem, part, me), lo = base + part * static_cast<size_t>(me);
    const NvlsTreeConns& t = *tree_;
    ConnInfo* up_recv = t.up_recv;
    Primitives<T, ProtoSimple<1, 1>, Exec> p(ex_, op_, &up_recv, 1, t.down_send, t.ndown, out, out, w_.rank, channel_,
                                             w_.coll, w_.op_count);
    const PrimKind prim = t.ndown == 0 ? PrimKind::kRecv : PrimKind::kRecvCopySend;
    TreeSide side{this, false, true, 0, sd, prim};
    const bool obs = ex_.observing();
    const double t0 = obs ? ex_.now_us() : 0.0;
    if (t.ndown == 0) p.template step_with<true, false, false, true>(side, 0, lo, cnt, false, prim);
    else p.template step_with<true, true, false, true>(side, 0, lo, cnt, false, prim);
    if (obs && !p.aborted()) observe(w_.rank, w_.rank, sd, PrimKind::kCopySend, cnt, t0, lo, t0);  // the multicast
    return !p.aborted();
  }

  CCLAB_HD bool reduce_scatter_loop(size_t lo, size_t cnt) {
    const T* in = static_cast<const T*>(w_.send);
    T* out = static_cast<T*>(w_.recv);
    const int n = c_.nranks, me = c_.rank;
    const uint64_t s = c_.step_up;
    for (int h = 0; h < n && (roles_ & kNvlsScatter); ++h)
      if (!scatter(h, in + static_cast<size_t>(h) * w_.count + lo, cnt, s, static_cast<size_t>(h) * w_.count + lo))
        return false;
    if (!(roles_ & kNvlsReduce)) {
      c_.step_up = s + 1;
      return true;
    }
    const size_t up = fifo(me, false);
    const bool obs = ex_.observing();
    const double t0 = obs ? ex_.now_us() : 0.0;
    if (!wait_parts(up, cnt, s, PrimKind::kRecvReduceCopy)) return false;
    const double td = obs ? ex_.now_us() : 0.0;
    if (cnt > 0) ex_.mc_ld_reduce(op_, out + lo, c_, nvls_slot_off(up, s, sb_), cnt, true);
    ex_.mc_post(c_, nvls_head_off(up), s + 1);
    if (obs) observe(-1, me, s, PrimKind::kRecvReduceCopy, cnt, t0, lo, td);
    c_.step_up = s + 1;
    return true;
  }

  CCLAB_HD bool all_gather_loop(size_t lo, size_t cnt) {
    const T* in = static_cast<const T*>(w_.send);
    T* out = static_cast<T*>(w_.recv);
    const int n = c_.nranks, me = c_.rank;
    const uint64_t s = c_.step_down;
    if (roles_ & kNvlsScatter) {  // the multicast of its own input (the scatter role's, as NCCL's)
      const size_t down = fifo(me, true);
      const bool obs = ex_.observing();
      const double t0 = obs ? ex_.now_us() : 0.0;
      if (!wait_bcast_credit(down, s, PrimKind::kCopySend)) return false;
      const double td = obs ? ex_.now_us() : 0.0;
      if (cnt > 0) ex_.mc_st(op_, c_, nvls_slot_off(down, s, sb_), in + lo, cnt);
      publish(down, cnt, s);
      if (obs) observe(me, -1, s, PrimKind::kCopySend, cnt, t0, lo, td);
    }
    for (int h = 0; h < n && (roles_ & kNvlsGather); ++h) {
      const size_t o = static_cast<size_t>(h) * w_.count + lo;
      if (!gather(h, out + o, cnt, s, o)) return false;
    }
    c_.step_down = s + 1;
    return true;
  }

  Exec& ex_;
  const RedOp<T>& op_;
  const CollWork& w_;
  NvlsConn& c_;
  int channel_;
  int sb_;
  int roles_;
  const NvlsTreeConns* tree_;  // NVLS-Tree: this head's tree connections; nullptr: NVLS on one machine
};

// A view both runners accept: a group of 1 .. kMaxNvlsRanks ranks, 1 .. kMaxNvlsHeads heads among them,
// this rank one of them, FIFO slots of some bytes.
CCLAB_HD inline bool nvls_conn_ok(const NvlsConn& c) {
  return c.nranks >= 1 && c.nranks <= kMaxNvlsRanks && c.nheads >= 1 && c.nheads <= c.nranks &&
         c.nheads <= kMaxNvlsHeads && c.rank >= 0 && c.rank < c.nranks && c.step_bytes > 0;
}

// Runs channel `channel` of NVLS collective w (AllReduce, ReduceScatter, AllGather; Simple protocol) on
// this rank over `conn`: the roles in `roles` (kNvlsAllRoles: the whole schedule). Returns false if the
// executor stopped (aborted, a size mismatch).
template <typename T, typename Exec>
CCLAB_HD bool run_nvls_channel(Exec& ex, const CollWork& w, NvlsConn& conn, int channel, int roles = kNvlsAllRoles) {
  const RedOp<T> op(w.redop);
  if (w.coll != CollKind::kAllReduce && w.coll != CollKind::kAllGather && w.coll != CollKind::kReduceScatter)
    return false;
  if (!nvls_conn_ok(conn) || conn.nranks != w.nranks) return false;
  // ReduceScatter's and AllGather's blocks are the heads': every rank a head, its place its rank.
  // AllReduce's parts are the heads' whatever their ranks (a head is the rank on its GPU).
  if (w.coll != CollKind::kAllReduce && (conn.nheads != conn.nranks || conn.rank != w.rank)) return false;
  NvlsSchedule<T, Exec> s(ex, op, w, conn, channel, roles);
  return s.run();
}

// Runs channel `channel` of NVLS-Tree AllReduce w on this rank: `conn` is its machine's NVLS group (this
// rank = group rank conn.rank, a head if below conn.nheads), `tree` its connections (a head's) on the
// channel's tree of machines; the roles in `roles` (kNvlsAllRoles: the whole schedule, scatter, reduce,
// bcast, gather per loop). Returns false if the
// executor stopped or the work is not an AllReduce.
template <typename T, typename Exec>
CCLAB_HD bool run_nvls_tree_channel(Exec& ex, const CollWork& w, NvlsConn& conn, const NvlsTreeConns& tree,
                                    int channel, int roles = kNvlsAllRoles) {
  const RedOp<T> op(w.redop);
  if (w.coll != CollKind::kAllReduce || !nvls_conn_ok(conn) || conn.nranks > w.nranks) return false;
  if (tree.ndown < 0 || tree.ndown > kMaxNvlsTreeArity) return false;
  NvlsSchedule<T, Exec> s(ex, op, w, conn, channel, roles, &tree);
  return s.run();
}

}  // namespace cclab
