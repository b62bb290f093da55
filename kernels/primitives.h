// kernels/primitives.h - the protocol primitives (NCCL's Primitives<T, RedOp, Fan, Direct, Proto>):
// send, recv, recvReduceSend, recvReduceCopySend, recvCopySend, copySend, recvReduceCopy. Each moves
// one chunk between this rank's buffers and its connections, one slice at a time, honouring the FIFO
// credits. A ring uses one connection each way; a tree (NCCL's FanAsymmetric<3,1> and <1,3>) receives
// from up to kMaxFan peers, reducing their slices together with its input, or sends one result to up to
// kMaxFan peers.
//
// The executor (Exec) supplies what waiting, posting, moving bytes and time mean:
//   bool wait_ge(const ConnCounter*, uint64_t target, const WaitSite&)  acquire; false once aborted
//   bool size_mismatch(const WaitSite&, size_t expected, int32_t got)   peer sent a slice of another size;
//                                                                       true: stop (the executor recorded
//                                                                       it), false: carry on (an executor
//                                                                       that moves no data, e.g. counting)
//   void post(ConnCounter*, uint64_t value)                             release
//   void reduce_copy<T>(RedOp<T>, T* d0, T* d1, const T* a, const T* b, size_t n, bool pre, bool post)
//                                                                       the data loop (the whole block's
//                                                                       share on a GPU: every lane calls it)
//   void reduce_copy_lane<T>(same arguments)                            the same loop run by this lane alone
//   int lane(), lanes()                                                 this thread's index in the cooperating
//                                                                       group and its size (1 on the host)
//   void wire(const ConnInfo& send, size_t payload_bytes)               the slice crosses the link
//   bool observing(); double now_us(); void observe(const StepRecord&)  the event stream
// Memory ordering (Simple): the sender's data stores happen before its release store of tail; the
// receiver's acquire load of tail happens before it reads the slot; the receiver's reads happen
// before its release store of head, which the sender acquires before overwriting the slot.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "kernels/fifo.h"
#include "kernels/platform.h"
#include "kernels/protocols.h"
#include "kernels/reduce_ops.h"
#include "kernels/step_record.h"

namespace cclab {

// Most peers one primitive receives from or sends to (NCCL_MAX_TREE_ARITY: two inter-node tree
// children and one intra-node child).
constexpr int kMaxFan = 3;

// Where a wait happens, so a stuck wait can say what it waits for.
struct WaitSite {
  int rank;
  int channel;
  int peer;
  uint64_t step;       // the step being waited for
  bool for_data;       // true: waiting for data (tail) from peer; false: for credits (head) from peer
  PrimKind prim;
};

// What every protocol's primitives share: the state of one rank's channel within one operation and
// the public primitive calls, each a call of the protocol's generic op<RECV, SEND, SRC, DST>
// (Derived::op). The Simple primitives below and the line primitives of LL/LL128
// (primitives_ll.h) derive from it, so the ring schedules see one interface.
template <typename Derived, typename T, typename Exec>
class PrimitivesBase {
 public:
  CCLAB_HD bool aborted() const { return aborted_; }

  // Each primitive moves `n` elements; offsets are element offsets into input / output.
  CCLAB_HD void send(size_t in, size_t n) {
    self()->template op<false, true, true, false>(in, 0, n, false, PrimKind::kSend);
  }
  CCLAB_HD void recv(size_t out, size_t n) {
    self()->template op<true, false, false, true>(0, out, n, false, PrimKind::kRecv);
  }
  CCLAB_HD void recv_reduce_send(size_t in, size_t n) {
    self()->template op<true, true, true, false>(in, 0, n, false, PrimKind::kRecvReduceSend);
  }
  CCLAB_HD void recv_reduce_copy_send(size_t in, size_t out, size_t n, bool post) {
    self()->template op<true, true, true, true>(in, out, n, post, PrimKind::kRecvReduceCopySend);
  }
  CCLAB_HD void recv_copy_send(size_t out, size_t n) {
    self()->template op<true, true, false, true>(0, out, n, false, PrimKind::kRecvCopySend);
  }
  CCLAB_HD void copy_send(size_t in, size_t out, size_t n) {
    self()->template op<false, true, true, true>(in, out, n, false, PrimKind::kCopySend);
  }
  CCLAB_HD void recv_reduce_copy(size_t in, size_t out, size_t n, bool post) {
    self()->template op<true, false, true, true>(in, out, n, post, PrimKind::kRecvReduceCopy);
  }
  // The source that SRC steps read from now on, and whether it is already through the op's pre function
  // (a custom schedule's partial results in the output, kernels/custom.h): then no pre op is applied.
  CCLAB_HD void set_source(const T* src, bool final) {
    input_ = src;
    src_final_ = final;
  }
  // A point-to-point transfer of `bytes` in all (every part): the Simple steps record it in each slice
  // they send (ConnFifoHeader::xfers) and check it in each slice they receive, so the two ends of a
  // send and a receive of different sizes fail with a size mismatch naming both sizes.
  CCLAB_HD void set_transfer(uint64_t bytes) { xfer_ = bytes + 1; }
  // Sends the output's elements [out, out + n), already final: no pre op (the tree root's broadcast).
  CCLAB_HD void send_from_output(size_t out, size_t n) {
    const T* saved = input_;
    input_ = output_;
    src_final_ = true;
    self()->template op<false, true, true, false>(out, 0, n, false, PrimKind::kSendFromOutput);
    src_final_ = false;
    input_ = saved;
  }

 protected:
  // recv[0..nrecv-1] / send[0..nsend-1]: the connections, at most kMaxFan each (nullptr entries are
  // skipped, so a tree leaf passes its empty child slots as they are).
  CCLAB_HD PrimitivesBase(Exec& exec, const RedOp<T>& op, ConnInfo* const* recv, int nrecv, ConnInfo* const* send,
                          int nsend, const T* input, T* output, int rank, int channel, CollKind coll,
                          uint64_t op_count)
      : exec_(exec), op_(op), input_(input), output_(output), rank_(rank), channel_(channel), coll_(coll),
        op_count_(op_count) {
    for (int i = 0; i < nrecv && i < kMaxFan; ++i)
      if (recv[i]) recvs_[nrecv_++] = recv[i];
    for (int i = 0; i < nsend && i < kMaxFan; ++i)
      if (send[i]) sends_[nsend_++] = send[i];
    recv_ = nrecv_ ? recvs_[0] : nullptr;
    send_ = nsend_ ? sends_[0] : nullptr;
  }

  CCLAB_HD bool coll_reduces() const {
    return coll_ == CollKind::kAllReduce || coll_ == CollKind::kReduce || coll_ == CollKind::kReduceScatter;
  }
  CCLAB_HD void abort_now() { aborted_ = true; }

  // The arithmetic of one slice (or line) once its data is there: d0 = post(recv[0] op ... op
  // recv[nr-1] op pre(in)) -- the input joins first, then each received buffer in connection order,
  // post applied by the last step only -- and the result copied into extra[0..nextra-1]. in == nullptr:
  // only received data (copied when nr == 1). Every executor runs this same sequence, so a rank that
  // reduces three children's slices rounds exactly as on any other backend.
  // The pass that produces the final value writes extra[0] too (the data loop's second destination), as
  // NCCL's reduceCopy writes all its destinations in one loop: a ring's recvReduceCopySend or
  // recvCopySend stores its output and the next rank's slot without reading the output back. Further
  // extras (a tree's second and third child) are copied from d0.
  // kLane: the data is this lane's alone (a line protocol's group of lines in registers), so the executor
  // runs the loop on this lane only (Exec::reduce_copy_lane) instead of spreading it over the block.
  template <bool kLane = false>
  CCLAB_HD void combine(T* d0, T* const* extra, int nextra, const T* const* rsrc, int nr, const T* in, size_t n,
                        bool pre, bool post) {
    T* const d1 = nextra > 0 ? extra[0] : static_cast<T*>(nullptr);
    const bool computes = in != nullptr || nr > 0;  // otherwise d0 already holds the value
    if (in != nullptr) {
      rc<kLane>(d0, nr <= 1 ? d1 : nullptr, nr > 0 ? rsrc[0] : static_cast<const T*>(nullptr), in, n, pre,
                post && nr <= 1);
    } else if (nr > 0) {
      rc<kLane>(d0, nr == 1 ? d1 : nullptr, static_cast<const T*>(nullptr), rsrc[0], n, false, post && nr == 1);
    }
    for (int i = 1; i < nr; ++i) rc<kLane>(d0, i == nr - 1 ? d1 : nullptr, rsrc[i], d0, n, false, post && i == nr - 1);
    for (int j = computes ? 1 : 0; j < nextra; ++j)
      rc<kLane>(extra[j], static_cast<T*>(nullptr), static_cast<const T*>(nullptr), d0, n, false, false);
  }
  template <bool kLane>
  CCLAB_HD CCLAB_FORCEINLINE void rc(T* d, T* d1, const T* a, const T* b, size_t n, bool pre, bool post) {
    if constexpr (kLane)
      exec_.reduce_copy_lane(op_, d, d1, a, b, n, pre, post);
    else
      exec_.reduce_copy(op_, d, d1, a, b, n, pre, post);
  }

  // One event per peer a slice went to (or, for a receive-only step, came from).
  // ns / nr: how many of the send / recv connections this primitive used.
  // off: byte offset of the slice in the buffer; td: when its up-front waits ended.
  CCLAB_HD void observe_slice(int ns, const uint64_t* send_steps, int nr, const uint64_t* recv_steps, PrimKind prim,
                              size_t bytes, double t0, size_t off, double td) {
    const int nrec = ns > nr ? ns : (nr > 0 ? nr : 1);
    const double t1 = exec_.now_us();
    for (int i = 0; i < nrec; ++i) {
      const bool s = i < ns, r = i < nr;
      StepRecord rec{rank_, channel_, s ? sends_[i]->peer : -1, r ? recvs_[i]->peer : -1,
                     s ? send_steps[i] : (r ? recv_steps[i] : 0), prim, coll_, op_count_, bytes, t0, t1,
                     static_cast<uint64_t>(off), td};
      exec_.observe(rec);
    }
  }

  Exec& exec_;
  const RedOp<T>& op_;
  ConnInfo* recvs_[kMaxFan] = {};
  ConnInfo* sends_[kMaxFan] = {};
  int nrecv_ = 0;
  int nsend_ = 0;
  ConnInfo* recv_;  // recvs_[0] / sends_[0], or nullptr
  ConnInfo* send_;
  const T* input_;
  T* output_;
  int rank_;
  int channel_;
  CollKind coll_;
  uint64_t op_count_;
  bool aborted_ = false;
  bool src_final_ = false;  // the source is final data (send_from_output): no pre op
  uint64_t xfer_ = 0;       // point-to-point: 1 + the whole transfer's bytes (set_transfer), else 0

 private:
  CCLAB_HD Derived* self() { return static_cast<Derived*>(this); }
};

// Names the base's state inside a derived primitives class (the base is a dependent type).
#define CCLAB_PRIMITIVES_STATE(Base)                                                                  \
  friend Base;                                                                                        \
  using Base::exec_;                                                                                  \
  using Base::op_;                                                                                    \
  using Base::recv_;                                                                                  \
  using Base::send_;                                                                                  \
  using Base::recvs_;                                                                                 \
  using Base::sends_;                                                                                 \
  using Base::nrecv_;                                                                                 \
  using Base::nsend_;                                                                                 \
  using Base::input_;                                                                                 \
  using Base::output_;                                                                                \
  using Base::rank_;                                                                                  \
  using Base::channel_;                                                                               \
  using Base::coll_;                                                                                  \
  using Base::op_count_;                                                                              \
  using Base::aborted_;                                                                               \
  using Base::src_final_;                                                                             \
  using Base::xfer_;                                                                                  \
  using Base::coll_reduces;                                                                           \
  using Base::abort_now

// No side peer (Primitives::op).
struct NoPrimSide {
  CCLAB_HD bool wait(size_t) { return true; }
  CCLAB_HD void load(size_t, size_t) {}
  CCLAB_HD void store(size_t, size_t) {}
};

template <typename T, typename Proto, typename Exec>
class Primitives : public PrimitivesBase<Primitives<T, Proto, Exec>, T, Exec> {
  using Base = PrimitivesBase<Primitives<T, Proto, Exec>, T, Exec>;
  CCLAB_PRIMITIVES_STATE(Base);

 public:
  // One connection each way (a ring; nullptr for none).
  CCLAB_HD Primitives(Exec& exec, const RedOp<T>& op, ConnInfo* recv, ConnInfo* send, const T* input, T* output,
                      int rank, int channel, CollKind coll, uint64_t op_count)
      : Primitives(exec, op, &recv, 1, &send, 1, input, output, rank, channel, coll, op_count) {}
  // Up to kMaxFan connections each way (a tree).
  CCLAB_HD Primitives(Exec& exec, const RedOp<T>& op, ConnInfo* const* recv, int nrecv, ConnInfo* const* send,
                      int nsend, const T* input, T* output, int rank, int channel, CollKind coll, uint64_t op_count)
      : Base(exec, op, recv, nrecv, send, nsend, input, output, rank, channel, coll, op_count) {
    // As NCCL's loadRecvConn/loadSendConn: start on a chunk boundary of this protocol. A connection's
    // step persists across operations, and one that used 1-step slices (Broadcast, Reduce) may stop
    // on an odd step; a 2-step slice starting there would run past the FIFO's last slot. Both ends
    // of a connection ran the same operations, so both round to the same step.
    constexpr uint64_t kChunkSteps = static_cast<uint64_t>(Proto::kChunkSteps);
    // The receiver returns the credits of the steps it skipped (NCCL's loadRecvConn: "return credits
    // in case we rounded up"): otherwise the sender, which skipped them too, would wait for credits
    // for slots nobody will consume, and two ranks sending to each other first deadlock.
    for (int i = 0; i < nrecv_; ++i) {
      const uint64_t rounded = (recvs_[i]->step + kChunkSteps - 1) / kChunkSteps * kChunkSteps;
      if (rounded != recvs_[i]->step) {
        recvs_[i]->step = rounded;
        exec.post(&recvs_[i]->hdr->head, rounded);
      }
    }
    for (int j = 0; j < nsend_; ++j) sends_[j]->step = (sends_[j]->step + kChunkSteps - 1) / kChunkSteps * kChunkSteps;
  }

  // One step of op<RECV, SEND, SRC, DST> with a side peer taking part (NVLS-Tree; see op).
  template <bool RECV, bool SEND, bool SRC, bool DST, typename Side>
  CCLAB_HD void step_with(Side& side, size_t in_off, size_t out_off, size_t n, bool post, PrimKind prim) {
    op<RECV, SEND, SRC, DST, Side>(in_off, out_off, n, post, prim, &side);
  }

  // Two independent flows (a custom schedule's exchange, kernels/custom.h): sends ns elements of the
  // source (set_source) from in_off on the send connection while it receives nr elements on the recv
  // connection into output_ + out_off, reduced with acc[0 .. nr) when acc != nullptr (acc_final: acc
  // already went through the op's pre function; post: this is the final reduction). Software-pipelined
  // by a slice: step 0 sends slice 0; step s sends slice s and receives slice s-1; the last step receives
  // the last slice. So every rank's first step is a send (two ranks exchanging never both wait for data
  // first), and a step's transfer overlaps the previous slice's reduction, as a GPU's send and receive
  // warps overlap. Each connection still moves kSlicePerChunk slices per call, so both ends of either one
  // stay in step with any other primitive. Recorded as recvReduceCopySend (reducing) or recvCopySend.
  CCLAB_HD void exchange(size_t in_off, size_t ns, const T* acc, bool acc_final, size_t out_off, size_t nr, bool post) {
    constexpr int kSlices = Proto::kSlicePerChunk;
    constexpr int kStepsPerSlice = Proto::kStepPerSlice;
    constexpr size_t kGrain = Proto::kGrainBytes / sizeof(T) > 0 ? Proto::kGrainBytes / sizeof(T) : 1;
    const PrimKind prim = acc != nullptr ? PrimKind::kRecvReduceCopySend : PrimKind::kRecvCopySend;
    const bool pre_send = !src_final_ && coll_reduces();
    auto slice_of = [](size_t n) { return ((n + kSlices - 1) / kSlices + kGrain - 1) / kGrain * kGrain; };
    const size_t ss = slice_of(ns), sr = slice_of(nr);
    ConnInfo* const c = send_;
    ConnInfo* const r = recv_;
    for (int s = 0; s <= kSlices; ++s) {
      if (aborted_) return;
      const bool sending = s < kSlices, receiving = s > 0;
      // This step's send slice s and receive slice s - 1.
      const size_t os = static_cast<size_t>(s) * ss, orr = static_cast<size_t>(s - 1) * sr;
      size_t n_s = sending && ns > os ? ns - os : 0, n_r = receiving && nr > orr ? nr - orr : 0;
      if (n_s > ss) n_s = ss;
      if (n_r > sr) n_r = sr;
      const bool obs = exec_.observing();
      const double t0 = obs ? exec_.now_us() : 0.0;
      const uint64_t send_step = c->step, recv_step = r->step;
      if (sending) {
        const uint64_t need = send_step + kStepsPerSlice;
        WaitSite w{rank_, channel_, c->peer, need, false, prim};
        if (!exec_.wait_ge(&c->hdr->head, need > static_cast<uint64_t>(kNcclSteps) ? need - kNcclSteps : 0, w))
          return abort_now();
      }
      if (receiving) {
        WaitSite w{rank_, channel_, r->peer, recv_step + kStepsPerSlice, true, prim};
        if (!exec_.wait_ge(&r->hdr->tail, recv_step + kStepsPerSlice, w)) return abort_now();
        const int32_t got = r->hdr->sizes[recv_step % kNcclSteps];
        if (got != static_cast<int32_t>(n_r * sizeof(T)) && exec_.size_mismatch(w, n_r * sizeof(T), got))
          return abort_now();
      }
      const double td = obs ? exec_.now_us() : 0.0;
      if (n_s > 0)
        exec_.reduce_copy(op_, reinterpret_cast<T*>(c->slot(send_step)), static_cast<T*>(nullptr),
                          static_cast<const T*>(nullptr), input_ + in_off + os, n_s, pre_send, false);
      if (n_r > 0) {
        const T* got = reinterpret_cast<const T*>(r->slot(recv_step));
        if (acc != nullptr)
          exec_.reduce_copy(op_, output_ + out_off + orr, static_cast<T*>(nullptr), got, acc + orr, n_r, !acc_final,
                            post);
        else
          exec_.reduce_copy(op_, output_ + out_off + orr, static_cast<T*>(nullptr), static_cast<const T*>(nullptr), got,
                            n_r, false, false);
      }
      if (receiving) {
        r->step = recv_step + kStepsPerSlice;
        exec_.post(&r->hdr->head, r->step);
      }
      if (sending) {
        if (exec_.lane() == 0) {
          c->hdr->sizes[send_step % kNcclSteps] = static_cast<int32_t>(n_s * sizeof(T));
          c->hdr->ends[send_step % kNcclSteps] = send_step + kStepsPerSlice;
        }
        exec_.wire(*c, n_s * sizeof(T));
        c->step = send_step + kStepsPerSlice;
        exec_.post(&c->hdr->tail, c->step);
      }
      if (obs)
        this->observe_slice(sending ? 1 : 0, &send_step, receiving ? 1 : 0, &recv_step, prim,
                            (sending ? n_s : n_r) * sizeof(T), t0, ((sending ? in_off + os : out_off + orr)) * sizeof(T),
                            td);
    }
  }

 private:
  // The generic step loop. RECV: a slice comes from the recv connection; SEND: a slice goes to the
  // send connection; SRC: this rank's input joins (through pre_op when it is reduced or sent first);
  // DST: the result lands in this rank's output. A call always advances both connections by exactly
  // kChunkSteps steps, empty slices included, so sender and receiver stay in lockstep.
  // side (NVLS-Tree, kernels/nvls.h): a further peer that takes part in each slice's step as NCCL's NVLS
  // connection in treeUp/treeDown does - side->wait(n) after the connections' waits, side->load(off, n)
  // just before the data loop (it may fill the source at input + off: the switch's load-reduce),
  // side->store(off, n) just after it (it may read the result at output + off: the multicast store) -
  // so the step is one step (one flush, one overhead), not three in a row. Returning false aborts.
  template <bool RECV, bool SEND, bool SRC, bool DST, typename Side = NoPrimSide>
  CCLAB_HD void op(size_t in_off, size_t out_off, size_t nelem, bool post, PrimKind prim, Side* side = nullptr) {
    constexpr int kSlices = Proto::kSlicePerChunk;
    constexpr int kStepsPerSlice = Proto::kStepPerSlice;
    constexpr size_t kGrain = Proto::kGrainBytes / sizeof(T) > 0 ? Proto::kGrainBytes / sizeof(T) : 1;
    // Forwarding data that is already reduced (RECV && !SRC) or copying (copySend) takes no pre_op;
    // a rank's own input entering a reduction does.
    const bool pre = SRC && !src_final_ && (RECV || coll_reduces());
    const int nr = RECV ? nrecv_ : 0, ns = SEND ? nsend_ : 0;
    size_t slice = (nelem + kSlices - 1) / kSlices;
    slice = (slice + kGrain - 1) / kGrain * kGrain;
    size_t offset = 0;
    for (int s = 0; s < kSlices; ++s) {
      if (aborted_) return;
      size_t n = nelem > offset ? nelem - offset : 0;
      if (n > slice) n = slice;
      const bool obs = exec_.observing();
      const double t0 = obs ? exec_.now_us() : 0.0;
      uint64_t send_step[kMaxFan] = {}, recv_step[kMaxFan] = {};
      for (int j = 0; j < ns; ++j) {
        ConnInfo* c = sends_[j];
        send_step[j] = c->step;
        WaitSite w{rank_, channel_, c->peer, send_step[j] + kStepsPerSlice, false, prim};
        // The slots [step, step + k) are free once the receiver has consumed up to
        // step + k - NCCL_STEPS.
        const uint64_t need = send_step[j] + kStepsPerSlice;
        const uint64_t credit = need > static_cast<uint64_t>(kNcclSteps) ? need - kNcclSteps : 0;
        if (!exec_.wait_ge(&c->hdr->head, credit, w)) return abort_now();
      }
      for (int i = 0; i < nr; ++i) {
        ConnInfo* c = recvs_[i];
        recv_step[i] = c->step;
        WaitSite w{rank_, channel_, c->peer, recv_step[i] + kStepsPerSlice, true, prim};
        if (!exec_.wait_ge(&c->hdr->tail, recv_step[i] + kStepsPerSlice, w)) return abort_now();
        // The sender recorded how many bytes it put in the slice (and, point to point, in the whole
        // send); ranks that disagree on the count or the datatype show up here instead of as corrupted
        // data. A size the record cannot hold (2 GiB and more) is reported as INT32_MAX.
        if (xfer_ != 0) {
          const uint64_t theirs = c->hdr->xfers[recv_step[i] % kNcclSteps];
          if (theirs != xfer_ &&
              exec_.size_mismatch(w, static_cast<size_t>(xfer_ - 1),
                                  theirs == 0 ? -1 : theirs - 1 > 0x7fffffffu ? 0x7fffffff
                                                                               : static_cast<int32_t>(theirs - 1)))
            return abort_now();
        }
        const int32_t got = c->hdr->sizes[recv_step[i] % kNcclSteps];
        if (got != static_cast<int32_t>(n * sizeof(T)) &&
            exec_.size_mismatch(w, static_cast<size_t>(n * sizeof(T)), got))
          return abort_now();
      }
      if (side != nullptr && !side->wait(n)) return abort_now();
      const double td = obs ? exec_.now_us() : 0.0;
      if (side != nullptr) side->load(in_off + offset, n);
      if (n > 0) {
        const T* rsrc[kMaxFan] = {};
        for (int i = 0; i < nr; ++i) rsrc[i] = reinterpret_cast<const T*>(recvs_[i]->slot(recv_step[i]));
        T* dsts[kMaxFan + 1] = {};
        int nd = 0;
        if (DST) dsts[nd++] = output_ + out_off + offset;
        for (int j = 0; j < ns; ++j) dsts[nd++] = reinterpret_cast<T*>(sends_[j]->slot(send_step[j]));
        const T* in = SRC ? input_ + in_off + offset : nullptr;
        if (!DST && nr > 1 && ns > 0) {
          // An inner tree rank folding several children into its parent's slot (in the parent's memory)
          // would read that slot back for every further child. It folds into the first child's slot
          // instead - the receiving end's FIFO (this GPU's memory, or host memory when P2P is off),
          // consumed by this step - and the last fold writes the parent's slot too. The same operations
          // in the same order, so the same bytes. The child rewrites that slot only after this rank's
          // head post, whose release (Exec::post) orders these stores before it.
          this->combine(const_cast<T*>(rsrc[0]), dsts, nd, rsrc, nr, in, n, pre, post);
        } else if (nd > 0) {
          this->combine(dsts[0], dsts + 1, nd - 1, rsrc, nr, in, n, pre, post);
        }
      }
      if (side != nullptr) side->store(out_off + offset, n);
      for (int i = 0; i < nr; ++i) {
        recvs_[i]->step = recv_step[i] + kStepsPerSlice;
        exec_.post(&recvs_[i]->hdr->head, recvs_[i]->step);
      }
      for (int j = 0; j < ns; ++j) {
        ConnInfo* c = sends_[j];
        // One lane writes the slice record (remote stores per warp otherwise); post's barrier and fence
        // order it before the tail like the data.
        if (exec_.lane() == 0) {
          c->hdr->sizes[send_step[j] % kNcclSteps] = static_cast<int32_t>(n * sizeof(T));
          c->hdr->ends[send_step[j] % kNcclSteps] = send_step[j] + kStepsPerSlice;
          if (xfer_ != 0) c->hdr->xfers[send_step[j] % kNcclSteps] = xfer_;
        }
        exec_.wire(*c, n * sizeof(T));
        c->step = send_step[j] + kStepsPerSlice;
        exec_.post(&c->hdr->tail, c->step);
      }
      if (obs)
        this->observe_slice(ns, send_step, nr, recv_step, prim, n * sizeof(T), t0,
                            ((DST ? out_off : in_off) + offset) * sizeof(T), td);
      offset += n;
    }
  }
};

}  // namespace cclab
