// Compile-only check: every kernels/ header must build under nvcc, device pass included.
// Instantiations are added here as the headers grow; nothing runs.
#include "kernels/platform.h"

__global__ void cclab_nvcc_check_platform(int* out) {
#if CCLAB_DEVICE_PASS
  out[threadIdx.x] = 1;
#endif
}

// ---- kernels/dtypes.h and kernels/reduce_ops.h: every datatype in device code ---------------------
#include "kernels/dtypes.h"
#include "kernels/reduce_ops.h"

namespace {

// One element of each use the executors make: pre_op on the way in, combine, post_op on the way out,
// the bulk loop, and the conversions the low-precision types go through. Buffers are slot i of in/out.
template <class T>
__device__ void cclab_nvcc_check_redop(void* const* in_slots, void* const* out_slots, int i, float* f,
                                       const cclab::RedOpArg& arg, size_t n) {
  const T* in = static_cast<const T*>(in_slots[i]);
  T* out = static_cast<T*>(out_slots[i]);
  const cclab::RedOp<T> op(arg);
  T acc = op.pre_op(in[0]);
  acc = op(acc, op.has_pre_op() ? op.pre_op(in[1]) : in[1]);
  out[0] = op.has_post_op() ? op.post_op(acc) : acc;
  out[1] = cclab::from_compute<T>(cclab::to_compute(in[2]));
  out[2] = cclab::scalar_from_bits<T>(cclab::scalar_to_bits(in[3]));
  cclab::reduce_range(op, out + 3, in, in + n, n);
  if constexpr (cclab::DataTypeTraits<T>::kIsLowPrecision) {
    f[i] = cclab::to_float(in[4]);
    out[4] = cclab::from_float<T>(f[i + 1]);
  }
}

}  // namespace

__global__ void cclab_nvcc_check_reduce_ops(void* const* in, void* const* out, float* f, cclab::RedOpArg arg,
                                            size_t n) {
  cclab_nvcc_check_redop<int8_t>(in, out, 0, f, arg, n);
  cclab_nvcc_check_redop<uint8_t>(in, out, 1, f, arg, n);
  cclab_nvcc_check_redop<int32_t>(in, out, 2, f, arg, n);
  cclab_nvcc_check_redop<uint32_t>(in, out, 3, f, arg, n);
  cclab_nvcc_check_redop<int64_t>(in, out, 4, f, arg, n);
  cclab_nvcc_check_redop<uint64_t>(in, out, 5, f, arg, n);
  cclab_nvcc_check_redop<cclab::half_t>(in, out, 6, f, arg, n);
  cclab_nvcc_check_redop<float>(in, out, 7, f, arg, n);
  cclab_nvcc_check_redop<double>(in, out, 8, f, arg, n);
  cclab_nvcc_check_redop<cclab::bfloat16_t>(in, out, 9, f, arg, n);
  cclab_nvcc_check_redop<cclab::fp8_e4m3_t>(in, out, 10, f, arg, n);
  cclab_nvcc_check_redop<cclab::fp8_e5m2_t>(in, out, 11, f, arg, n);
}

// ---- kernels/custom.h: the custom algorithm interface compiles under nvcc (host side: plugins run on
// the host-side executors), its primitives instantiated over the virtual executor ---------------------
#include "kernels/custom.h"

namespace {
struct CclabNvccCheckAlgo {
  static constexpr const char* kName = "NvccCheck";
  static const char* supports(cclab::CollKind, const cclab::CustomTopo&) { return nullptr; }
  static int peers(const cclab::CustomTopo&, int, int*, int) { return 0; }
  template <class P>
  static void run(P& p) {
    p.sendrecv_reduce(1, cclab::in_at(0), p.count(), 1, cclab::out_at(0), 0, p.count(), true);
  }
};
}  // namespace
const cclab::CustomAlgoDesc cclab_nvcc_check_custom = cclab::make_custom_desc<CclabNvccCheckAlgo>();
