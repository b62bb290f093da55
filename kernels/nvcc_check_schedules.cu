// Compile-only check: the ring and point-to-point schedules and the Simple primitives build under
// nvcc for every datatype, device pass included, so host-only idioms cannot creep into kernels/.
// The executor below is the smallest one the primitives accept on a GPU (one thread per channel,
// volatile loads, system-scope fences); the CUDA backend's real executor spreads the data loops over
// a thread block. Nothing here runs.
#include "kernels/collectives.h"
#include "kernels/primitives_ll.h"
#include "kernels/primitives_ll128.h"

namespace {

struct CheckDeviceExec {
  __device__ bool wait_ge(const cclab::ConnCounter* c, uint64_t target, const cclab::WaitSite&) {
    while (*reinterpret_cast<const volatile uint64_t*>(&c->value) < target) {
      if (*abort_flag) return false;
    }
    __threadfence_system();  // acquire: the slot's data is read after the counter
    return true;
  }
  __device__ void post(cclab::ConnCounter* c, uint64_t value) {
    __threadfence_system();  // release: the slot's data is visible before the counter
    *reinterpret_cast<volatile uint64_t*>(&c->value) = value;
  }
  // Not inlined: one copy of the data loop per type instead of one per call site keeps nvcc's time
  // (and this check's share of CI) small; the real CUDA executor decides its own inlining.
  template <typename T>
  __device__ __noinline__ void reduce_copy(const cclab::RedOp<T>& op, T* d0, T* d1, const T* a, const T* b, size_t n,
                                           bool pre, bool post) {
    cclab::reduce_copy(op, d0, d1, a, b, n, pre, post);
  }
  // LL / LL128 (kernels/primitives_ll.h): flag polling and 8-byte line words. One thread per channel
  // here, so LL128 orders data before flag with fences; the real kernel relies on 128-byte line stores.
  template <typename Ready>
  __device__ bool wait_flag(const Ready& ready, const cclab::WaitSite&, const cclab::ConnCounter*, uint64_t) {
    while (!ready()) {
      if (*abort_flag) return false;
    }
    return true;
  }
  __device__ uint64_t load_u64(const uint64_t* p) const { return *reinterpret_cast<const volatile uint64_t*>(p); }
  __device__ uint64_t load_u64_acquire(const uint64_t* p) const {
    const uint64_t v = *reinterpret_cast<const volatile uint64_t*>(p);
    __threadfence_system();
    return v;
  }
  __device__ void store_u64(uint64_t* p, uint64_t v) const { *reinterpret_cast<volatile uint64_t*>(p) = v; }
  __device__ void store_u64_release(uint64_t* p, uint64_t v) const {
    __threadfence_system();
    *reinterpret_cast<volatile uint64_t*>(p) = v;
  }
  __device__ void wire(const cclab::ConnInfo&, size_t) {}
  __device__ void doorbell(cclab::ConnCounter*, uint64_t) {}  // a GPU polls the line flags
  __device__ bool size_mismatch(const cclab::WaitSite&, size_t, int32_t) {
    *abort_flag = 1;
    return true;
  }
  __device__ bool observing() const { return false; }
  __device__ bool moves_data() const { return true; }
  __device__ double now_us() const { return 0.0; }
  __device__ void observe(const cclab::StepRecord&) const {}
  volatile int* abort_flag;
};

template <typename T>
__device__ void check_type(CheckDeviceExec& ex, const cclab::CollWork& w, const cclab::RingView& ring,
                           cclab::ConnInfo* recv, cclab::ConnInfo* send) {
  cclab::run_ring_channel<T, CheckDeviceExec>(ex, w, ring, blockIdx.x, recv, send);
}

// Tree all_reduce (fan-in and fan-out primitives) once per protocol: the schedule does not depend on
// the type beyond the reduce functors the ring check already covers, and every extra instantiation
// costs nvcc minutes.
template <typename T, typename Proto>
__device__ void check_tree(CheckDeviceExec& ex, const cclab::CollWork& w, cclab::ConnInfo* recv,
                           cclab::ConnInfo* send) {
  cclab::TreeLinks tree;
  cclab::node_tree_with_chain(4, 2, w.rank, 0, &tree);
  cclab::TreeConns conns{recv, send, {recv, recv, recv}, {send, send, send}, tree.ndown};
  const cclab::RedOp<T> op(w.redop);
  cclab::tree_all_reduce<T, Proto>(ex, op, w, tree, conns, blockIdx.x);
}

// The ring schedules over the LL and LL128 primitives, called directly.
template <typename T, typename Proto>
__device__ void check_line_proto(CheckDeviceExec& ex, const cclab::CollWork& w, const cclab::RingView& ring,
                                 cclab::ConnInfo* recv, cclab::ConnInfo* send) {
  const cclab::RedOp<T> op(w.redop);
  cclab::Primitives<T, Proto, CheckDeviceExec> p(ex, op, recv, send, static_cast<const T*>(w.send),
                                                 static_cast<T*>(w.recv), w.rank, 0, w.coll, w.op_count);
  cclab::ring_all_reduce(p, w, ring, 0);
  cclab::ring_all_gather(p, w, ring, 0, false);
  cclab::ring_reduce_scatter(p, w, ring, 0);
  cclab::ring_broadcast(p, w, ring, 0);
  cclab::ring_reduce(p, w, ring, 0);
}

}  // namespace

__global__ void cclab_nvcc_check_schedules(cclab::CollWork w, const int* ranks, int nranks, cclab::ConnInfo* recv,
                                           cclab::ConnInfo* send, cclab::P2pWork p2p, volatile int* abort_flag) {
  CheckDeviceExec ex{abort_flag};
  const cclab::RingView ring{ranks, nranks};
  check_type<int8_t>(ex, w, ring, recv, send);
  check_type<uint8_t>(ex, w, ring, recv, send);
  check_type<int32_t>(ex, w, ring, recv, send);
  check_type<uint32_t>(ex, w, ring, recv, send);
  check_type<int64_t>(ex, w, ring, recv, send);
  check_type<uint64_t>(ex, w, ring, recv, send);
  check_type<cclab::half_t>(ex, w, ring, recv, send);
  check_type<float>(ex, w, ring, recv, send);
  check_type<double>(ex, w, ring, recv, send);
  check_type<cclab::bfloat16_t>(ex, w, ring, recv, send);
  check_type<cclab::fp8_e4m3_t>(ex, w, ring, recv, send);
  check_type<cclab::fp8_e5m2_t>(ex, w, ring, recv, send);
  check_line_proto<float, cclab::ProtoLL>(ex, w, ring, recv, send);
  check_line_proto<cclab::half_t, cclab::ProtoLL>(ex, w, ring, recv, send);
  check_line_proto<int8_t, cclab::ProtoLL>(ex, w, ring, recv, send);
  check_line_proto<float, cclab::ProtoLL128>(ex, w, ring, recv, send);
  check_line_proto<double, cclab::ProtoLL128>(ex, w, ring, recv, send);
  check_line_proto<cclab::bfloat16_t, cclab::ProtoLL128>(ex, w, ring, recv, send);
  check_tree<float, cclab::ProtoSimpleOne>(ex, w, recv, send);
  check_tree<cclab::half_t, cclab::ProtoLL>(ex, w, recv, send);
  check_tree<cclab::bfloat16_t, cclab::ProtoLL128>(ex, w, recv, send);
  cclab::run_p2p_send(ex, p2p, 0, send);
  cclab::run_p2p_recv(ex, p2p, 0, recv);
}

// The double binary tree (kernels/trees.h) builds on the device too, so a kernel can derive its own
// tree links from (nnodes, ppn, rank) instead of receiving them.
#include "kernels/trees.h"

__global__ void cclab_nvcc_check_trees(int nnodes, int ppn, int rank, cclab::TreeLinks* out) {
  cclab::btree(nnodes, rank, &out[0]);
  cclab::dtree(nnodes, rank, &out[1], &out[2]);
  cclab::node_tree_with_chain(nnodes, ppn, rank, 0, &out[3]);
  cclab::node_tree_with_chain(nnodes, ppn, rank, 1, &out[4]);
  out[5].up = cclab::dtree_root(nnodes, 1);
}
