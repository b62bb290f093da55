// kernels/primitives_ll.h - the primitives over flagged lines (NCCL's prims_ll.h), shared by LL and
// LL128, and Primitives<T, ProtoLL, Exec>. Same public interface as the Simple primitives
// (primitives.h), so the ring schedules (ring.h) run unchanged over either protocol.
//
// Differences from Simple, as in NCCL:
//  - data travels inside the lines (Proto::store_line / load_line, proto_ll.h); the receiver polls
//    every line's flag (Exec::wait_flag) instead of waiting for the tail counter. The sender still
//    rings a doorbell on tail (step + 1) once a step's lines are all stored: an executor that cannot
//    afford to poll (host threads outnumbering cores) may sleep on it instead of on the flags; a GPU
//    executor ignores it, as NCCL's LL has no such counter;
//  - one step per call (kChunkSteps = 1): the sender waits for head credits for that step, the
//    receiver posts head = step + 1 once it has consumed the step. A call with more elements than a
//    step carries takes several steps (both ends compute the same count); an empty call still takes
//    one step, so the two ends stay in lockstep;
//  - LL's flag cleaning: in a step where ll_needs_clean(step), the sender also rewrites every line of
//    the step it did not fill;
//  - the slice record (fifo.h: hdr->sizes[], hdr->ends[]) gives the wire bytes of each step for proxies
//    and traces (all the step's lines when it was cleaned, as NCCL's waitSend), but the receiver cannot
//    check it: a line's flag, not a counter, says the data is there.
// Exec needs, beside what primitives.h lists:
//   template <class Ready> bool wait_flag(const Ready& ready, const WaitSite&,   poll ready() until true;
//                                         const ConnCounter* bell, uint64_t n)  false once aborted; bell
//                                                                               reaches n once the whole
//                                                                               step is stored
//   void doorbell(ConnCounter*, uint64_t value)                                 ring it (may be a no-op)
//   bool moves_data()                                                           false: the executor only
//                                                                               accounts time; lines are
//                                                                               neither packed nor read
//   uint64_t load_u64(const uint64_t*), load_u64_acquire(const uint64_t*)       8-byte atomic loads
//   void store_u64(uint64_t*, uint64_t), store_u64_release(uint64_t*, uint64_t) 8-byte atomic stores
// Optionally, for LL128 lines moved NCCL's way (8 lanes per line, one 16-byte part each; proto_ll.h):
//   int line_groups()                                                           whole 8-lane groups (0:
//                                                                               one lane per line)
//   template <class Poll> bool group_wait(const Poll& poll, const WaitSite&)    repeat poll() (true: this
//                                                                               lane still waits) until
//                                                                               no lane of the group waits;
//                                                                               false once aborted
//   void store_line_part(uint64_t*, uint64_t lo, uint64_t hi, bool flag_part)   one part's 16-byte store
//   void load_line_part(const uint64_t*, uint64_t* lo, uint64_t* hi, bool)      one part's 16-byte load
// An executor without them (the host executor, the simulator: one lane) moves whole lines; the bytes on
// the wire are the same either way.
// All connections of a ring must have the same step_bytes (one protocol's buffer size).
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <type_traits>
#include <utility>

#include "kernels/fifo.h"
#include "kernels/platform.h"
#include "kernels/primitives.h"
#include "kernels/proto_ll.h"
#include "kernels/reduce_copy.h"
#include "kernels/reduce_ops.h"
#include "kernels/step_record.h"

namespace cclab {

// Whether Exec moves line parts in 8-lane groups (has line_groups(); see the list above).
template <class E, class = void>
struct HasLineGroups {
  static constexpr bool value = false;
};
template <class E>
struct HasLineGroups<E, decltype(void(std::declval<const E&>().line_groups()))> {
  static constexpr bool value = true;
};

// W payload words (an LL line's one word, an LL128 part's two) as N elements and back, by value: bit
// moves a compiler keeps in registers (a memcpy of the whole array made it spill the array to local
// memory). Little-endian: element j is bytes [j * sizeof(T), (j + 1) * sizeof(T)) of the words.
template <typename T>
using ElemBits = typename std::conditional<
    sizeof(T) == 1, uint8_t,
    typename std::conditional<sizeof(T) == 2, uint16_t,
                              typename std::conditional<sizeof(T) == 4, uint32_t, uint64_t>::type>::type>::type;
template <typename T, size_t W, size_t N>
CCLAB_HD CCLAB_FORCEINLINE void words_to_elems(const uint64_t (&w)[W], T (&e)[N]) {
  static_assert(N * sizeof(T) == 8 * W, "N elements fill W words");
  constexpr size_t kPer = 8 / sizeof(T);
  CCLAB_UNROLL
  for (size_t j = 0; j < N; ++j) {
    const ElemBits<T> b = static_cast<ElemBits<T>>(w[j / kPer] >> (8 * sizeof(T) * (j % kPer)));
    memcpy(&e[j], &b, sizeof(T));
  }
}
template <typename T, size_t W, size_t N>
CCLAB_HD CCLAB_FORCEINLINE void elems_to_words(const T (&e)[N], uint64_t (&w)[W]) {
  static_assert(N * sizeof(T) == 8 * W, "N elements fill W words");
  constexpr size_t kPer = 8 / sizeof(T);
  CCLAB_UNROLL
  for (size_t i = 0; i < W; ++i) w[i] = 0;
  CCLAB_UNROLL
  for (size_t j = 0; j < N; ++j) {
    ElemBits<T> b;
    memcpy(&b, &e[j], sizeof(T));
    w[j / kPer] |= static_cast<uint64_t>(b) << (8 * sizeof(T) * (j % kPer));
  }
}

template <typename T, typename Proto, typename Exec>
class LinePrimitives : public PrimitivesBase<LinePrimitives<T, Proto, Exec>, T, Exec> {
  using Base = PrimitivesBase<LinePrimitives<T, Proto, Exec>, T, Exec>;
  CCLAB_PRIMITIVES_STATE(Base);

 public:
  CCLAB_HD LinePrimitives(Exec& exec, const RedOp<T>& op, ConnInfo* const* recv, int nrecv, ConnInfo* const* send,
                          int nsend, const T* input, T* output, int rank, int channel, CollKind coll,
                          uint64_t op_count)
      : Base(exec, op, recv, nrecv, send, nsend, input, output, rank, channel, coll, op_count) {}

 private:
  using Line = typename Proto::Line;
  static_assert(Proto::kLinePayload % sizeof(T) == 0, "an element never straddles two lines");
  static constexpr size_t kEltPerLine = Proto::kLinePayload / sizeof(T);
  // Lines per data loop of the byte path (the host executor's single lane, and host blocks with no
  // whole LL128 line group): 32 LL lines (256 B of payload) or 8 LL128 lines (960 B). On a GPU that
  // path is never taken (line_values / group_lines keep each line in registers): its loop bound folds
  // to 0 there, so nvcc emits no code for it.
  static constexpr size_t kGroupLines = CCLAB_DEVICE_PASS ? 1 : (Proto::kLinePayload >= 64 ? 8 : 32);
  static constexpr bool kGroupParts = Proto::kGroupParts && HasLineGroups<Exec>::value;

  // One step's lines, for group_lines.
  struct StepLines {
    Line* const* sl;
    Line* const* rl;
    const uint64_t* send_step;
    const uint64_t* recv_step;
    int nr, ns;
    size_t in_off, out_off;  // element offsets of the step's first element in input / output
    size_t n, nlines;        // the step's elements and lines
    bool pre, post;
    PrimKind prim;
  };

  // One unit of a line (an LL line's payload, an LL128 part) held by value: r[i] is what peer i sent
  // (s.nr peers), k the unit's valid elements, e0 its first element within the step. Combines r with
  // the input's elements (SRC), writes the first k to the output (DST) and returns the value as W words
  // for the next peers. Each element is combine's value, in combine's pass order and through
  // reduce_copy's own per-element rule (rc_val), so every executor computes the same bytes. With
  // nothing received or read (no schedule does this) the output's value goes on, as in combine.
  // Loops over peers run to kMaxFan (a constant) so that r stays in registers.
  template <bool SRC, bool DST, size_t W, size_t N>
  CCLAB_HD CCLAB_FORCEINLINE void unit_values(const T (&r)[kMaxFan][N], const StepLines& s, size_t e0, size_t k,
                                              bool do_pre, bool do_post, uint64_t (&w)[W]) const {
    const int nr = s.nr;
    T x[N] = {};
    if (SRC && k > 0) load_elems(input_ + s.in_off + e0, k, x);  // (an empty part may lie past the buffer)
    const T* prev = DST && k > 0 ? output_ + s.out_off + e0 : nullptr;
    T v[N];
    CCLAB_UNROLL
    for (size_t j = 0; j < N; ++j) {
      T acc;
      if (SRC && nr > 0) {
        acc = detail::rc_val<true, true>(op_, op_, r[0][j], x[j], do_pre, do_post && nr == 1);
      } else if (SRC) {
        acc = detail::rc_val<false, true>(op_, op_, T(), x[j], do_pre, do_post);
      } else if (nr > 0) {
        acc = detail::rc_val<false, true>(op_, op_, T(), r[0][j], false, do_post && nr == 1);
      } else {
        acc = prev != nullptr && j < k ? prev[j] : T();
      }
      CCLAB_UNROLL
      for (int i = 1; i < kMaxFan; ++i) {
        if (i >= nr) break;
        acc = detail::rc_val<true, true>(op_, op_, r[i][j], acc, false, do_post && i == nr - 1);
      }
      v[j] = acc;
    }
    if (DST && k > 0) store_elems(v, k, output_ + s.out_off + e0);
    elems_to_words(v, w);
  }
  // A unit's input elements (zero past k) and its output's.
  template <size_t N>
  CCLAB_HD CCLAB_FORCEINLINE static void load_elems(const T* p, size_t k, T (&x)[N]) {
    CCLAB_UNROLL
    for (size_t j = 0; j < N; ++j) x[j] = j < k ? p[j] : T();
  }
  template <size_t N>
  CCLAB_HD CCLAB_FORCEINLINE static void store_elems(const T (&v)[N], size_t k, T* p) {
    CCLAB_UNROLL
    for (size_t j = 0; j < N; ++j)
      if (j < k) p[j] = v[j];
  }

  // NCCL's LL128 data loop: line group g (lanes 8g .. 8g+7) takes lines g, g + groups, ...; lane 8g + p
  // moves part p of each line (ProtoLL128::store_part_words / load_part_words) and keeps it in
  // registers: its payload bytes [16p, 16p + 16), 8 bytes and the flag for the flag part. A part holds
  // whole elements (16 is a multiple of sizeof(T)), so each lane combines its own elements by value
  // (unit_values). Lanes past the last whole group have no line work (never on a GPU, whose blocks
  // are whole warps). False once the executor gave up.
  template <bool SRC, bool DST>
  CCLAB_HD bool group_lines(const StepLines& s) {
    static_assert(kLL128PartBytes % sizeof(T) == 0 && 8 % sizeof(T) == 0, "a part holds whole elements");
    constexpr size_t N = kLL128PartBytes / sizeof(T);
    const bool do_pre = s.pre && op_.has_pre_op();
    const bool do_post = s.post && op_.has_post_op();
    const int groups = exec_.line_groups();
    const int g = exec_.lane() / kLL128Parts, part = exec_.lane() % kLL128Parts;
    if (g >= groups) return true;
    const size_t first = static_cast<size_t>(part) * N;  // the part's first element in a line
    const size_t cap = static_cast<size_t>(ll128_part_payload(part)) / sizeof(T);
    for (size_t l = static_cast<size_t>(g); l < s.nlines; l += static_cast<size_t>(groups)) {
      const size_t line_elems = s.n - l * kEltPerLine < kEltPerLine ? s.n - l * kEltPerLine : kEltPerLine;
      const size_t k = first >= line_elems ? 0 : (line_elems - first < cap ? line_elems - first : cap);
      const size_t e0 = l * kEltPerLine + first;  // within the step
      T r[kMaxFan][N] = {};
      CCLAB_UNROLL
      for (int i = 0; i < kMaxFan; ++i) {
        if (i >= s.nr) break;
        WaitSite rw{rank_, channel_, recvs_[i]->peer, s.recv_step[i] + 1, true, s.prim};
        uint64_t w[2];
        if (!Proto::load_part_words(exec_, s.rl[i] + l, part, s.recv_step[i], rw, &w[0], &w[1])) return false;
        if (part == kLL128FlagPart) w[1] = 0;  // the flag word, not payload: no element is made of it
        words_to_elems(w, r[i]);
      }
      uint64_t w[2];
      unit_values<SRC, DST>(r, s, e0, k, do_pre, do_post, w);
      CCLAB_UNROLL
      for (int j = 0; j < kMaxFan; ++j) {
        if (j >= s.ns) break;
        Proto::store_part_words(exec_, s.sl[j] + l, part, w[0], w[1], k * sizeof(T), s.send_step[j]);
      }
    }
    return true;
  }

  // LL on a block executor (several lanes: a GPU, or host threads playing one): each lane takes one
  // line at a time and keeps it in registers, as NCCL's LL loop does. A received line's payload word is
  // split into its elements by value, combined with the input (unit_values), written to the output
  // and packed back into one word for the next peer.
  // (Elements passed by pointer - the loop below - went through local memory on a GPU.)
  static constexpr bool kLineValues = Proto::kLinePayload == 8 && !Proto::kGroupParts;
  template <bool SRC, bool DST>
  CCLAB_HD bool line_values(const StepLines& st) {
    constexpr size_t N = kEltPerLine;
    const bool do_pre = st.pre && op_.has_pre_op();
    const bool do_post = st.post && op_.has_post_op();
    const size_t stride = static_cast<size_t>(exec_.lanes());
    for (size_t l = static_cast<size_t>(exec_.lane()); l < st.nlines; l += stride) {
      const size_t e0 = l * N;
      const size_t k = st.n - e0 < N ? st.n - e0 : N;  // elements in this line
      T r[kMaxFan][N] = {};
      CCLAB_UNROLL
      for (int i = 0; i < kMaxFan; ++i) {
        if (i >= st.nr) break;
        Exec& ex = exec_;
        const Line* line = st.rl[i] + l;
        const uint64_t step = st.recv_step[i];
        uint64_t w[1] = {0};
        WaitSite rw{rank_, channel_, recvs_[i]->peer, step + 1, true, st.prim};
        if (!exec_.wait_flag([&]() { return Proto::load_word(ex, line, step, &w[0]); }, rw, &recvs_[i]->hdr->tail,
                             step + 1))
          return false;
        words_to_elems(w, r[i]);
      }
      uint64_t w[1];
      unit_values<SRC, DST>(r, st, e0, k, do_pre, do_post, w);
      CCLAB_UNROLL
      for (int j = 0; j < kMaxFan; ++j) {
        if (j >= st.ns) break;
        Proto::store_word(exec_, st.sl[j] + l, w[0], k * sizeof(T), st.send_step[j]);
      }
    }
    return true;
  }

  // RECV / SEND / SRC / DST as in primitives.h. The data is processed a line at a time: a received
  // line is unpacked into `a`, combined with the input, written to the output and/or packed into the
  // outgoing line (as NCCL's LLGenericOp, one line per thread per iteration).
  template <bool RECV, bool SEND, bool SRC, bool DST>
  CCLAB_HD void op(size_t in_off, size_t out_off, size_t nelem, bool post, PrimKind prim) {
    const bool pre = SRC && !src_final_ && (RECV || coll_reduces());
    const int nr = RECV ? nrecv_ : 0, ns = SEND ? nsend_ : 0;
    const ConnInfo* c = SEND ? send_ : recv_;
    const int step_lines = Proto::lines_per_step(c->step_bytes);
    const size_t step_elems = static_cast<size_t>(step_lines) * kEltPerLine;
    const size_t nsteps = nelem == 0 ? 1 : (nelem + step_elems - 1) / step_elems;
    size_t offset = 0;
    for (size_t st = 0; st < nsteps; ++st) {
      if (aborted_) return;
      const size_t n = nelem - offset < step_elems ? nelem - offset : step_elems;
      const size_t nlines = (n + kEltPerLine - 1) / kEltPerLine;
      const bool obs = exec_.observing();
      const double t0 = obs ? exec_.now_us() : 0.0;
      uint64_t send_step[kMaxFan] = {}, recv_step[kMaxFan] = {};
      Line* sl[kMaxFan];
      Line* rl[kMaxFan];
      for (int j = 0; j < ns; ++j) {
        ConnInfo* sc = sends_[j];
        send_step[j] = sc->step;
        // NCCL's waitSend: slot step % NCCL_STEPS is free once the receiver has consumed
        // step + 1 - NCCL_STEPS steps.
        WaitSite w{rank_, channel_, sc->peer, send_step[j] + 1, false, prim};
        const uint64_t need = send_step[j] + 1;
        const uint64_t credit = need > static_cast<uint64_t>(kNcclSteps) ? need - kNcclSteps : 0;
        if (!exec_.wait_ge(&sc->hdr->head, credit, w)) return abort_now();
        const bool clean = Proto::needs_clean(send_step[j]);
        if (exec_.lane() == 0) {  // the slice record (fifo.h): one lane's remote stores, not one per warp
          sc->hdr->sizes[send_step[j] % kNcclSteps] =
              static_cast<int32_t>((clean ? static_cast<size_t>(step_lines) : nlines) * Proto::kLineBytes);
          sc->hdr->ends[send_step[j] % kNcclSteps] = send_step[j] + 1;
        }
        sl[j] = reinterpret_cast<Line*>(sc->slot(send_step[j]));
      }
      for (int i = 0; i < nr; ++i) {
        recv_step[i] = recvs_[i]->step;
        rl[i] = reinterpret_cast<Line*>(recvs_[i]->slot(recv_step[i]));
      }
      const double td = obs ? exec_.now_us() : 0.0;
      // On a block executor each lane keeps its lines (LL) or line parts (LL128) in registers
      // (line_values, group_lines). Otherwise lines are handled kGroupLines at a time: each received
      // line is unpacked into `a` (waiting for its flag), the group is combined with the input in one
      // data loop, and the result is packed into each outgoing line.
      // An executor that moves no data (the simulator's timing-only mode) only needs to know the step's
      // data loop happened: one call for the whole step instead of packing and unpacking every line.
      // It still waits for each received step (on its doorbell) before the step counts as done.
      const size_t group_end = exec_.moves_data() ? nlines : 0;
      if (group_end == 0 && nlines > 0) {
        for (int i = 0; i < nr; ++i) {
          WaitSite rw{rank_, channel_, recvs_[i]->peer, recv_step[i] + 1, true, prim};
          if (!exec_.wait_flag([] { return true; }, rw, &recvs_[i]->hdr->tail, recv_step[i] + 1)) return abort_now();
        }
        exec_.reduce_copy(op_, DST ? output_ + out_off + offset : static_cast<T*>(nullptr), static_cast<T*>(nullptr),
                          static_cast<const T*>(nullptr), SRC ? input_ + in_off + offset : static_cast<const T*>(nullptr),
                          n, false, false);
      }
      const StepLines step{sl, rl, send_step, recv_step, nr, ns, in_off + offset, out_off + offset, n, nlines,
                           pre, post, prim};
      bool grouped = false;  // LL128 in 8-lane line groups (NCCL's scheme), or LL lines by value
      if constexpr (kGroupParts) {
        grouped = group_end > 0 && (CCLAB_DEVICE_PASS || exec_.line_groups() > 0);  // a GPU block: always
        if (grouped && !group_lines<SRC, DST>(step)) return abort_now();
      }
      if constexpr (kLineValues) {
        grouped = group_end > 0 && (CCLAB_DEVICE_PASS || exec_.lanes() > 1);  // a GPU block: always
        if (grouped && !line_values<SRC, DST>(step)) return abort_now();
      }
      // Otherwise each lane of the block takes every lanes()-th group of lines; the host executor is one lane.
      const size_t lane_end = grouped ? 0 : group_end;
      const size_t lane0 = static_cast<size_t>(exec_.lane()) * kGroupLines;
      const size_t lane_stride = static_cast<size_t>(exec_.lanes()) * kGroupLines;
      for (size_t l0 = lane0; l0 < lane_end; l0 += lane_stride) {
        const size_t gl = nlines - l0 < kGroupLines ? nlines - l0 : kGroupLines;
        const size_t e0 = offset + l0 * kEltPerLine;
        const size_t ge = n - l0 * kEltPerLine < gl * kEltPerLine ? n - l0 * kEltPerLine : gl * kEltPerLine;
        T a[kMaxFan][kGroupLines * kEltPerLine];  // the received lines' elements
        T s[kGroupLines * kEltPerLine];           // the outgoing lines' elements
        const T* rsrc[kMaxFan] = {};
        for (int i = 0; i < nr; ++i) {
          Exec& ex = exec_;
          const uint64_t step = recv_step[i];
          WaitSite rw{rank_, channel_, recvs_[i]->peer, recv_step[i] + 1, true, prim};
          for (size_t l = 0; l < gl; ++l) {
            const size_t k = ge - l * kEltPerLine < kEltPerLine ? ge - l * kEltPerLine : kEltPerLine;
            unsigned char* ab = reinterpret_cast<unsigned char*>(a[i] + l * kEltPerLine);
            const Line* line = rl[i] + l0 + l;
            const size_t bytes = k * sizeof(T);
            if (!exec_.wait_flag([&]() { return Proto::load_line(ex, line, ab, bytes, step); }, rw,
                                 &recvs_[i]->hdr->tail, step + 1))
              return abort_now();
          }
          rsrc[i] = a[i];
        }
        T* d0 = DST ? output_ + out_off + e0 : s;
        T* extra[1] = {s};
        this->template combine<true>(d0, extra, (DST && ns > 0) ? 1 : 0, rsrc, nr, SRC ? input_ + in_off + e0 : nullptr,
                                     ge, pre, post);
        for (int j = 0; j < ns; ++j)
          for (size_t l = 0; l < gl; ++l) {
            const size_t k = ge - l * kEltPerLine < kEltPerLine ? ge - l * kEltPerLine : kEltPerLine;
            Proto::store_line(exec_, sl[j] + l0 + l, reinterpret_cast<const unsigned char*>(s + l * kEltPerLine),
                              k * sizeof(T), send_step[j]);
          }
      }
      for (int i = 0; i < nr; ++i) {
        recvs_[i]->step = recv_step[i] + 1;
        exec_.post(&recvs_[i]->hdr->head, recvs_[i]->step);  // the lines are read: the sender may reuse the slot
      }
      for (int j = 0; j < ns; ++j) {
        ConnInfo* sc = sends_[j];
        if (Proto::needs_clean(send_step[j]))
          for (size_t l = nlines + static_cast<size_t>(exec_.lane()); l < static_cast<size_t>(step_lines);
               l += static_cast<size_t>(exec_.lanes()))
            Proto::clean_line(exec_, sl[j] + l, send_step[j]);
        exec_.wire(*sc, n * sizeof(T));
        sc->step = send_step[j] + 1;
        exec_.doorbell(&sc->hdr->tail, sc->step);  // every line of the step is stored
      }
      if (obs)
        this->observe_slice(ns, send_step, nr, recv_step, prim, n * sizeof(T), t0,
                            ((DST ? out_off : in_off) + offset) * sizeof(T), td);
      offset += n;
    }
  }
};

template <typename T, typename Exec>
class Primitives<T, ProtoLL, Exec> : public LinePrimitives<T, ProtoLL, Exec> {
 public:
  CCLAB_HD Primitives(Exec& exec, const RedOp<T>& op, ConnInfo* recv, ConnInfo* send, const T* input, T* output,
                      int rank, int channel, CollKind coll, uint64_t op_count)
      : LinePrimitives<T, ProtoLL, Exec>(exec, op, &recv, 1, &send, 1, input, output, rank, channel, coll, op_count) {}
  CCLAB_HD Primitives(Exec& exec, const RedOp<T>& op, ConnInfo* const* recv, int nrecv, ConnInfo* const* send,
                      int nsend, const T* input, T* output, int rank, int channel, CollKind coll, uint64_t op_count)
      : LinePrimitives<T, ProtoLL, Exec>(exec, op, recv, nrecv, send, nsend, input, output, rank, channel, coll,
                                         op_count) {}
};

}  // namespace cclab
