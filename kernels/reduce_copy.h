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
// Every element gets exactly the operations reduce_copy gives it, so the lanes together produce the
// serial loop's bytes (tests/runtime/block_exec_test.cc holds that against the host executor).

template <typename T>
struct alignas(16) Pack16 {
  static constexpr int kN = sizeof(T) <= 16 ? static_cast<int>(16 / sizeof(T)) : 1;
  T v[kN];
};

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

// One element as reduce_copy computes it.
template <typename T, typename Fn>
CCLAB_HD CCLAB_FORCEINLINE T rc_elem(const RedOp<T>& op, Fn fn, const T* a, T b, size_t i, bool do_pre, bool do_post) {
  T v = do_pre ? op.pre_op(b) : b;
  if (a != nullptr) v = fn(a[i], v);
  return do_post ? op.post_op(v) : v;
}

template <typename T, typename Fn>
CCLAB_HD void reduce_copy_lanes_fn(const RedOp<T>& op, Fn fn, T* dst0, T* dst1, const T* a, const T* b, size_t n,
                                   bool do_pre, bool do_post, int lane, int lanes) {
  constexpr size_t kPack = static_cast<size_t>(Pack16<T>::kN);
  const size_t npacks = (n + kPack - 1) / kPack;
  const bool vec = sizeof(T) <= 16 && aligned16(dst0) && (dst1 == nullptr || aligned16(dst1)) &&
                   (a == nullptr || aligned16(a)) && aligned16(b);
  for (size_t p = static_cast<size_t>(lane); p < npacks; p += static_cast<size_t>(lanes)) {
    const size_t i0 = p * kPack;
    if (vec && i0 + kPack <= n) {
      const Pack16<T> xb = load_pack(b + i0);
      Pack16<T> r;
      for (size_t j = 0; j < kPack; ++j) r.v[j] = rc_elem(op, fn, a != nullptr ? a + i0 : a, xb.v[j], j, do_pre, do_post);
      store_pack(dst0 + i0, r);
      if (dst1 != nullptr) store_pack(dst1 + i0, r);
    } else {
      const size_t end = i0 + kPack < n ? i0 + kPack : n;
      for (size_t i = i0; i < end; ++i) {
        const T r = rc_elem(op, fn, a, b[i], i, do_pre, do_post);
        dst0[i] = r;
        if (dst1 != nullptr) dst1[i] = r;
      }
    }
  }
}

}  // namespace detail

template <typename T>
CCLAB_HD void reduce_copy_lanes(const RedOp<T>& op, T* dst0, T* dst1, const T* a, const T* b, size_t n, bool pre_b,
                                bool post, int lane, int lanes) {
  if (n == 0) return;
  const bool do_pre = pre_b && op.has_pre_op();
  const bool do_post = post && op.has_post_op();
  switch (op.combine_kind()) {
    case RedOpKind::kProd:
      detail::reduce_copy_lanes_fn(op, detail::ProdFn<T>{}, dst0, dst1, a, b, n, do_pre, do_post, lane, lanes);
      break;
    case RedOpKind::kMax:
      detail::reduce_copy_lanes_fn(op, detail::MaxFn<T>{}, dst0, dst1, a, b, n, do_pre, do_post, lane, lanes);
      break;
    case RedOpKind::kMin:
      detail::reduce_copy_lanes_fn(op, detail::MinFn<T>{}, dst0, dst1, a, b, n, do_pre, do_post, lane, lanes);
      break;
    default:
      detail::reduce_copy_lanes_fn(op, detail::SumFn<T>{}, dst0, dst1, a, b, n, do_pre, do_post, lane, lanes);
      break;
  }
}

}  // namespace cclab
