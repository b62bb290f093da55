// kernels/primitives.h - the protocol primitives (NCCL's Primitives<T, RedOp, Fan, Direct, Proto>):
// send, recv, recvReduceSend, recvReduceCopySend, recvCopySend, copySend, recvReduceCopy. Each moves
// one chunk between this rank's buffers and its two ring connections, one slice at a time, honouring
// the FIFO credits.
//
// The executor (Exec) supplies what waiting, posting, moving bytes and time mean:
//   bool wait_ge(const ConnCounter*, uint64_t target, const WaitSite&)  acquire; false once aborted
//   void size_mismatch(const WaitSite&, size_t expected, int32_t got)   peer sent a slice of another size
//   void post(ConnCounter*, uint64_t value)                             release
//   void reduce_copy<T>(RedOp<T>, T* d0, T* d1, const T* a, const T* b, size_t n, bool pre, bool post)
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

 protected:
  CCLAB_HD PrimitivesBase(Exec& exec, const RedOp<T>& op, ConnInfo* recv, ConnInfo* send, const T* input, T* output,
                          int rank, int channel, CollKind coll, uint64_t op_count)
      : exec_(exec), op_(op), recv_(recv), send_(send), input_(input), output_(output), rank_(rank),
        channel_(channel), coll_(coll), op_count_(op_count) {}

  CCLAB_HD bool coll_reduces() const {
    return coll_ == CollKind::kAllReduce || coll_ == CollKind::kReduce || coll_ == CollKind::kReduceScatter;
  }
  CCLAB_HD void abort_now() { aborted_ = true; }

  Exec& exec_;
  const RedOp<T>& op_;
  ConnInfo* recv_;
  ConnInfo* send_;
  const T* input_;
  T* output_;
  int rank_;
  int channel_;
  CollKind coll_;
  uint64_t op_count_;
  bool aborted_ = false;

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
  using Base::input_;                                                                                 \
  using Base::output_;                                                                                \
  using Base::rank_;                                                                                  \
  using Base::channel_;                                                                               \
  using Base::coll_;                                                                                  \
  using Base::op_count_;                                                                              \
  using Base::aborted_;                                                                               \
  using Base::coll_reduces;                                                                           \
  using Base::abort_now

template <typename T, typename Proto, typename Exec>
class Primitives : public PrimitivesBase<Primitives<T, Proto, Exec>, T, Exec> {
  using Base = PrimitivesBase<Primitives<T, Proto, Exec>, T, Exec>;
  CCLAB_PRIMITIVES_STATE(Base);

 public:
  CCLAB_HD Primitives(Exec& exec, const RedOp<T>& op, ConnInfo* recv, ConnInfo* send, const T* input, T* output,
                      int rank, int channel, CollKind coll, uint64_t op_count)
      : Base(exec, op, recv, send, input, output, rank, channel, coll, op_count) {
    // As NCCL's loadRecvConn/loadSendConn: start on a chunk boundary of this protocol. A connection's
    // step persists across operations, and one that used 1-step slices (Broadcast, Reduce) may stop
    // on an odd step; a 2-step slice starting there would run past the FIFO's last slot. Both ends
    // of a connection ran the same operations, so both round to the same step.
    constexpr uint64_t kChunkSteps = static_cast<uint64_t>(Proto::kChunkSteps);
    if (recv_) recv_->step = (recv_->step + kChunkSteps - 1) / kChunkSteps * kChunkSteps;
    if (send_) send_->step = (send_->step + kChunkSteps - 1) / kChunkSteps * kChunkSteps;
  }

 private:
  // The generic step loop. RECV: a slice comes from the recv connection; SEND: a slice goes to the
  // send connection; SRC: this rank's input joins (through pre_op when it is reduced or sent first);
  // DST: the result lands in this rank's output. A call always advances both connections by exactly
  // kChunkSteps steps, empty slices included, so sender and receiver stay in lockstep.
  template <bool RECV, bool SEND, bool SRC, bool DST>
  CCLAB_HD void op(size_t in_off, size_t out_off, size_t nelem, bool post, PrimKind prim) {
    constexpr int kSlices = Proto::kSlicePerChunk;
    constexpr int kStepsPerSlice = Proto::kStepPerSlice;
    constexpr size_t kGrain = Proto::kGrainBytes / sizeof(T) > 0 ? Proto::kGrainBytes / sizeof(T) : 1;
    // Forwarding data that is already reduced (RECV && !SRC) or copying (copySend) takes no pre_op;
    // a rank's own input entering a reduction does.
    const bool pre = SRC && (RECV || coll_reduces());
    size_t slice = (nelem + kSlices - 1) / kSlices;
    slice = (slice + kGrain - 1) / kGrain * kGrain;
    size_t offset = 0;
    for (int s = 0; s < kSlices; ++s) {
      if (aborted_) return;
      size_t n = nelem > offset ? nelem - offset : 0;
      if (n > slice) n = slice;
      const bool obs = exec_.observing();
      const double t0 = obs ? exec_.now_us() : 0.0;
      const uint64_t send_step = SEND ? send_->step : 0;
      const uint64_t recv_step = RECV ? recv_->step : 0;
      if (SEND) {
        WaitSite w{rank_, channel_, send_->peer, send_step + kStepsPerSlice, false, prim};
        // The slots [send_step, send_step + k) are free once the receiver has consumed up to
        // send_step + k - NCCL_STEPS.
        const uint64_t need = send_step + kStepsPerSlice;
        const uint64_t credit = need > static_cast<uint64_t>(kNcclSteps) ? need - kNcclSteps : 0;
        if (!exec_.wait_ge(&send_->hdr->head, credit, w)) return abort_now();
      }
      if (RECV) {
        WaitSite w{rank_, channel_, recv_->peer, recv_step + kStepsPerSlice, true, prim};
        if (!exec_.wait_ge(&recv_->hdr->tail, recv_step + kStepsPerSlice, w)) return abort_now();
        // The sender recorded how many bytes it put in the slice; ranks that disagree on the count
        // or the datatype show up here instead of as corrupted data.
        const int32_t got = recv_->hdr->sizes[recv_step % kNcclSteps];
        if (got != static_cast<int32_t>(n * sizeof(T))) {
          exec_.size_mismatch(w, static_cast<size_t>(n * sizeof(T)), got);
          return abort_now();
        }
      }
      if (n > 0) {
        const T* a = RECV ? reinterpret_cast<const T*>(recv_->slot(recv_step)) : nullptr;
        const T* b = SRC ? input_ + in_off + offset : nullptr;
        T* d_out = DST ? output_ + out_off + offset : nullptr;
        T* d_send = SEND ? reinterpret_cast<T*>(send_->slot(send_step)) : nullptr;
        if (!SRC) {  // only received data: copy it on
          b = a;
          a = nullptr;
        }
        T* d0 = DST ? d_out : d_send;
        T* d1 = (DST && SEND) ? d_send : nullptr;
        exec_.reduce_copy(op_, d0, d1, a, b, n, pre, post);
      }
      if (RECV) {
        recv_->step = recv_step + kStepsPerSlice;
        exec_.post(&recv_->hdr->head, recv_->step);
      }
      if (SEND) {
        send_->hdr->sizes[send_step % kNcclSteps] = static_cast<int32_t>(n * sizeof(T));
        exec_.wire(*send_, n * sizeof(T));
        send_->step = send_step + kStepsPerSlice;
        exec_.post(&send_->hdr->tail, send_->step);
      }
      if (obs) {
        StepRecord r{rank_, channel_, SEND ? send_->peer : -1, RECV ? recv_->peer : -1,
                     SEND ? send_step : recv_step, prim, coll_, op_count_, n * sizeof(T), t0, exec_.now_us()};
        exec_.observe(r);
      }
      offset += n;
    }
  }
};

}  // namespace cclab
