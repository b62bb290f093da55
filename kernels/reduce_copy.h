// kernels/reduce_copy.h - the data loop every primitive ends in: combine up to two sources with the
// reduction op and write up to two destinations. This is the serial reference version, used by the
// host executor and the simulator in payload mode; the CUDA executor spreads the same arithmetic over
// a thread block.
#pragma once

#include <stddef.h>
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
