// kernels/reduce_copy.h - the data loop every primitive ends in: combine up to two sources with the
// reduction op and write up to two destinations. This is the serial reference version, used by the
// host executor and the simulator in payload mode; the CUDA executor spreads the same arithmetic over
// a thread block.
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels/platform.h"
#include "kernels/reduce_ops.h"

namespace cclab {

// dst0[i] (and dst1[i] when dst1 != nullptr) = post( a ? op(a[i], pre(b[i])) : pre(b[i]) ),
// where pre applies only when `pre_b` and post only when `post`. `b` may alias dst0 (in-place).
// With a == nullptr and no pre/post this is a copy of b.
template <typename T>
CCLAB_HD void reduce_copy(const RedOp<T>& op, T* dst0, T* dst1, const T* a, const T* b, size_t n, bool pre_b,
                          bool post) {
  if (n == 0) return;
  const bool do_pre = pre_b && op.has_pre_op();
  const bool do_post = post && op.has_post_op();
  if (a == nullptr && !do_pre && !do_post) {
#if CCLAB_DEVICE_PASS
    for (size_t i = 0; i < n; ++i) dst0[i] = b[i];
#else
    if (dst0 != b) memcpy(dst0, b, n * sizeof(T));
#endif
  } else if (a != nullptr && !do_pre && !do_post) {
    reduce_range(op, dst0, a, b, n);
  } else {
    for (size_t i = 0; i < n; ++i) {
      T v = do_pre ? op.pre_op(b[i]) : b[i];
      if (a != nullptr) v = op(a[i], v);
      dst0[i] = do_post ? op.post_op(v) : v;
    }
  }
  if (dst1 != nullptr) {
#if CCLAB_DEVICE_PASS
    for (size_t i = 0; i < n; ++i) dst1[i] = dst0[i];
#else
    memcpy(dst1, dst0, n * sizeof(T));
#endif
  }
}

}  // namespace cclab

namespace cclab {

// ---- the same data loop spread over the lanes of a thread block (CUDA backend) ---------------------
//
// reduce_copy_lanes(..., lane, lanes) does lane `lane`'s share of reduce_copy(...): element i belongs
// to the 16-byte pack i / (16 / sizeof(T)), and pack p to lane p % lanes. The mapping depends only on
// the element index, never on the pointers' alignment, so consecutive calls over the same destination
// (a tree rank folding in three children, then copying the result out) give every element to the same
// lane and need no barrier in between. A pack whose pointers are all 16-byte aligned moves with one
// 16-byte load or store per operand (a uint4 on a GPU); other packs and the tail go element by element.
// As NCCL's reduceCopy, a lane loads kRcUnroll of its packs (every source) before it combines and
// stores any of them, so each lane keeps that many loads in flight instead of one: the loop is bound
// by memory latency, and a store through a pointer that may alias the next pack's source would
// otherwise keep the compiler from issuing the next loads early. (Sources may alias dst0 exactly, the
// in-place case; a pack is read whole before it is written, so that stays correct.)
// Every element gets exactly the operations reduce_copy gives it, so the lanes together produce the
// serial loop's bytes (tests/runtime/block_exec_test.cc holds that against the host executor).

template <typename T>
struct alignas(16) Pack16 {
  static constexpr int kN = sizeof(T) <= 16 ? static_cast<int>(16 / sizeof(T)) : 1;
  T v[kN];
};

// Packs a lane has in flight at once (NCCL's COLL_UNROLL).
constexpr int kRcUnroll = 4;

CCLAB_HD inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

template <typename T>
CCLAB_HD CCLAB_FORCEINLINE Pack16<T> load_pack(const T* p) {
#if CCLAB_DEVICE_PASS
  return *reinterpret_cast<const Pack16<T>*>(p);
#else
  Pack16<T> x;
  memcpy(&x, p, sizeof(x));
  return x;
#endif
}
template <typename T>
CCLAB_HD CCLAB_FORCEINLINE void store_pack(T* p, const Pack16<T>& x) {
#if CCLAB_DEVICE_PASS
  *reinterpret_cast<Pack16<T>*>(p) = x;
#else
  memcpy(p, &x, sizeof(x));
#endif
}

namespace detail {

// One element as reduce_copy computes it: post(fn(a, pre(b))), `a` only when kA, pre and post only when
// kOps and asked for.
template <bool kA, bool kOps, typename T, typename Fn>
CCLAB_HD CCLAB_FORCEINLINE T rc_val(const RedOp<T>& op, Fn fn, T a, T b, bool do_pre, bool do_post) {
  T v = b;
  if (kOps && do_pre) v = op.pre_op(v);
  if (kA) v = fn(a, v);
  if (kOps && do_post) v = op.post_op(v);
  return v;
}

// U aligned packs p, p + stride, ... of one lane: every source's packs loaded first, then combined and
// stored (U = kRcUnroll in the main loop, 1 for the lane's last few whole packs).
template <int U, bool kA, bool kOps, typename T, typename Fn>
CCLAB_HD CCLAB_FORCEINLINE void rc_packs(const RedOp<T>& op, Fn fn, T* dst0, T* dst1, const T* a, const T* b, size_t p,
                                         size_t stride, bool do_pre, bool do_post) {
  constexpr size_t kPack = static_cast<size_t>(Pack16<T>::kN);
  Pack16<T> xa[U], xb[U];
  for (int u = 0; u < U; ++u) xb[u] = load_pack(b + (p + u * stride) * kPack);
  if (kA)
    for (int u = 0; u < U; ++u) xa[u] = load_pack(a + (p + u * stride) * kPack);
  for (int u = 0; u < U; ++u) {
    Pack16<T> r;
    for (size_t j = 0; j < kPack; ++j) r.v[j] = rc_val<kA, kOps>(op, fn, kA ? xa[u].v[j] : T(), xb[u].v[j], do_pre, do_post);
    store_pack(dst0 + (p + u * stride) * kPack, r);
    if (dst1 != nullptr) store_pack(dst1 + (p + u * stride) * kPack, r);
  }
}

template <bool kA, bool kOps, typename T, typename Fn>
CCLAB_HD void reduce_copy_lanes_fn(const RedOp<T>& op, Fn fn, T* dst0, T* dst1, const T* a, const T* b, size_t n,
                                   bool do_pre, bool do_post, int lane, int lanes) {
  constexpr size_t kPack = static_cast<size_t>(Pack16<T>::kN);
  const size_t npacks = (n + kPack - 1) / kPack;
  const size_t stride = static_cast<size_t>(lanes);
  const bool vec = sizeof(T) <= 16 && aligned16(dst0) && (dst1 == nullptr || aligned16(dst1)) &&
                   (!kA || aligned16(a)) && aligned16(b);
  size_t p = static_cast<size_t>(lane);
  if (vec) {
    const size_t full = n / kPack;  // packs with kPack elements
    // kRcUnroll of this lane's packs at a time: p, p + stride, ... (the mapping is unchanged).
    for (; p + (kRcUnroll - 1) * stride < full; p += kRcUnroll * stride)
      rc_packs<kRcUnroll, kA, kOps>(op, fn, dst0, dst1, a, b, p, stride, do_pre, do_post);
    for (; p < full; p += stride) rc_packs<1, kA, kOps>(op, fn, dst0, dst1, a, b, p, stride, do_pre, do_post);
  }
  // Unaligned operands, and the last partial pack: element by element.
  for (; p < npacks; p += stride) {
    const size_t i0 = p * kPack;
    const size_t end = i0 + kPack < n ? i0 + kPack : n;
    for (size_t i = i0; i < end; ++i) {
      const T r = rc_val<kA, kOps>(op, fn, kA ? a[i] : T(), b[i], do_pre, do_post);
      dst0[i] = r;
      if (dst1 != nullptr) dst1[i] = r;
    }
  }
}

template <typename T, typename Fn>
CCLAB_HD CCLAB_FORCEINLINE void reduce_copy_lanes_dispatch(const RedOp<T>& op, Fn fn, T* dst0, T* dst1, const T* a,
                                                           const T* b, size_t n, bool do_pre, bool do_post, int lane,
                                                           int lanes) {
  const bool ops = do_pre || do_post;
  if (a != nullptr) {
    if (ops)
      reduce_copy_lanes_fn<true, true>(op, fn, dst0, dst1, a, b, n, do_pre, do_post, lane, lanes);
    else
      reduce_copy_lanes_fn<true, false>(op, fn, dst0, dst1, a, b, n, do_pre, do_post, lane, lanes);
  } else {
    if (ops)
      reduce_copy_lanes_fn<false, true>(op, fn, dst0, dst1, a, b, n, do_pre, do_post, lane, lanes);
    else
      reduce_copy_lanes_fn<false, false>(op, fn, dst0, dst1, a, b, n, do_pre, do_post, lane, lanes);
  }
}

}  // namespace detail

template <typename T>
CCLAB_HD void reduce_copy_lanes(const RedOp<T>& op, T* dst0, T* dst1, const T* a, const T* b, size_t n, bool pre_b,
                                bool post, int lane, int lanes) {
  if (n == 0) return;
  const bool do_pre = pre_b && op.has_pre_op();
  const bool do_post = post && op.has_post_op();
  // Without a second source the op's combine is never called: one copy loop serves every kind.
  switch (a == nullptr ? RedOpKind::kSum : op.combine_kind()) {
    case RedOpKind::kProd:
      detail::reduce_copy_lanes_dispatch(op, detail::ProdFn<T>{}, dst0, dst1, a, b, n, do_pre, do_post, lane, lanes);
      break;
    case RedOpKind::kMax:
      detail::reduce_copy_lanes_dispatch(op, detail::MaxFn<T>{}, dst0, dst1, a, b, n, do_pre, do_post, lane, lanes);
      break;
    case RedOpKind::kMin:
      detail::reduce_copy_lanes_dispatch(op, detail::MinFn<T>{}, dst0, dst1, a, b, n, do_pre, do_post, lane, lanes);
      break;
    default:
      detail::reduce_copy_lanes_dispatch(op, detail::SumFn<T>{}, dst0, dst1, a, b, n, do_pre, do_post, lane, lanes);
      break;
  }
}

}  // namespace cclab
