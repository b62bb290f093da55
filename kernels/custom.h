// kernels/custom.h - the extension point for algorithms written outside kernels/ (docs/custom-algorithms.md).
//
// A custom algorithm is a schedule, like kernels/ring.h's, over the same protocol primitives: each call
// moves a range of elements between this rank's buffers and a connection to a named peer, through the
// peer's FIFO with its credits, one chunk at a time. Where ring.h's primitives are bound to the ring's two
// neighbours, PeerPrims takes the peer in every call, so a schedule can talk to any rank it declared:
//
//   struct Rhd {                                        // recursive halving-doubling all_reduce
//     static constexpr const char* kName = "RHD";       // NCCL_ALGO=RHD selects it
//     static const char* supports(cclab::CollKind c, const cclab::CustomTopo& t);  // nullptr: runs it
//     static int peers(const cclab::CustomTopo& t, int rank, int* out, int max);    // who it talks to
//     template <class P> static void run(P& p);         // the schedule: p is a PeerPrims
//   };
//   CCLAB_CUSTOM_ALGORITHM(Rhd)
//
// compiled into a shared object (g++ -std=c++17 -O2 -shared -fPIC -I<cclab source> rhd.cc -o rhd.so) and
// loaded with CCLAB_ALGO_PLUGIN=rhd.so. The runtime connects every rank to the peers it declares on every
// channel (a connection both ways per peer, Simple protocol), and the host executor and the simulator run
// run() once per rank and channel with their own waits, posts, data loops and wires behind the
// primitives, as they run the ring: the same bytes on the host, simulated time on a simulated fabric.
//
// The executor reaches the schedule through a table of functions (ExecVTable) instead of a template
// argument, so a schedule compiled apart from cclab runs on every host-side executor without recompiling
// cclab; the cost is one indirect call per slice (not per element). The CUDA backend does not load
// plugins (a device cannot call into a host shared object).
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "kernels/dtypes.h"
#include "kernels/fifo.h"
#include "kernels/platform.h"
#include "kernels/primitives.h"
#include "kernels/protocols.h"
#include "kernels/reduce_ops.h"
#include "kernels/step_record.h"
#include "kernels/work.h"

namespace cclab {

// Bumped whenever anything a plugin compiles in changes layout: CustomAlgoDesc, ExecVTable, CollWork,
// ConnInfo, the FIFO header, WaitSite, StepRecord, RedOpArg.
constexpr int kCustomAlgoAbi = 1;
// Most peers one rank of a custom algorithm may declare.
constexpr int kMaxCustomPeers = 256;
// Datatypes a plugin is built for: all of ncclDataType_t, by its value.
constexpr int kCustomTypes = 12;

// The machine a custom algorithm runs on: ranks are numbered machine by machine (ranks_per_node
// consecutive ranks per machine) when ranks_per_node > 0; 0 when the machines hold different numbers.
struct CustomTopo {
  int nranks;
  int nnodes;
  int ranks_per_node;
};

// Where a primitive reads this rank's data: its input (sendbuff) or its output (recvbuff), at an element
// offset. Input entering a reduction goes through the op's pre function (ncclAvg's 1/n, a PreMulSum
// scalar); output holds results of earlier steps, which already went through it.
struct Src {
  bool output;
  size_t off;
};
CCLAB_HD inline Src in_at(size_t off) { return Src{false, off}; }
CCLAB_HD inline Src out_at(size_t off) { return Src{true, off}; }

// What an executor provides, as functions of its context (kernels/custom_exec.h builds one per executor).
struct ExecVTable {
  bool (*wait_ge)(void* ctx, const ConnCounter* c, uint64_t target, const WaitSite& site);
  void (*post)(void* ctx, ConnCounter* c, uint64_t value);
  // The data loop for datatype `type` (ncclDataType_t value) and reduction `op`.
  void (*reduce_copy)(void* ctx, int type, const RedOpArg& op, void* d0, void* d1, const void* a, const void* b,
                      size_t n, bool pre, bool post);
  void (*wire)(void* ctx, const ConnInfo& send, size_t payload_bytes);
  bool (*size_mismatch)(void* ctx, const WaitSite& site, size_t expected, int32_t got);
  bool (*observing)(void* ctx);
  double (*now_us)(void* ctx);
  void (*observe)(void* ctx, const StepRecord& r);
  // The schedule did something the runtime cannot run (a peer it did not declare): stop with this message.
  void (*fail)(void* ctx, const char* message);
};

// The Exec of kernels/primitives.h over an ExecVTable, for element type T (ncclDataType_t `type`). Its
// functions are CCLAB_HD only so that nvcc compiles the primitives over it; they run on the host.
template <typename T>
class VirtualExec {
 public:
  CCLAB_HD VirtualExec(const ExecVTable* vt, void* ctx, int type, const RedOpArg& op)
      : vt_(vt), ctx_(ctx), type_(type), op_(op) {}
  CCLAB_HD bool wait_ge(const ConnCounter* c, uint64_t target, const WaitSite& site) {
    return vt_->wait_ge(ctx_, c, target, site);
  }
  CCLAB_HD void post(ConnCounter* c, uint64_t value) { vt_->post(ctx_, c, value); }
  CCLAB_HD void reduce_copy(const RedOp<T>&, T* d0, T* d1, const T* a, const T* b, size_t n, bool pre, bool post) {
    vt_->reduce_copy(ctx_, type_, op_, d0, d1, a, b, n, pre, post);
  }
  CCLAB_HD void reduce_copy_lane(const RedOp<T>& op, T* d0, T* d1, const T* a, const T* b, size_t n, bool pre,
                                 bool post) {
    reduce_copy(op, d0, d1, a, b, n, pre, post);
  }
  CCLAB_HD int lane() const { return 0; }
  CCLAB_HD int lanes() const { return 1; }
  CCLAB_HD void wire(const ConnInfo& send, size_t bytes) { vt_->wire(ctx_, send, bytes); }
  CCLAB_HD bool size_mismatch(const WaitSite& site, size_t expected, int32_t got) {
    return vt_->size_mismatch(ctx_, site, expected, got);
  }
  CCLAB_HD bool observing() const { return vt_->observing(ctx_); }
  CCLAB_HD double now_us() const { return vt_->now_us(ctx_); }
  CCLAB_HD void observe(const StepRecord& r) const { vt_->observe(ctx_, r); }
  CCLAB_HD void fail(const char* message) { vt_->fail(ctx_, message); }

 private:
  const ExecVTable* vt_;
  void* ctx_;
  int type_;
  RedOpArg op_;
};

// The primitives a custom schedule calls: those of kernels/primitives.h (Simple protocol, NCCL's
// all_reduce chunking) with the peer named in each call. Offsets and counts are in elements. Every call
// moves its range in chunks of at most chunk_elems(), each through the peer's FIFO with its credits; a
// call returns once its last chunk has gone (send) or arrived (receive). The two ends of a connection
// must make matching calls with the same counts, in the same order (a receive of n elements from q
// matches a send of n elements to this rank by q).
//
// A rank whose first call sends more than one chunk to a peer whose first call also sends to it waits
// forever (each waits for the other to make room): exchange with sendrecv() / sendrecv_reduce(), which
// move a chunk each way in every step (the two transfers overlap, as a GPU's send and receive warps).
template <typename T, typename Exec>
class PeerPrims {
  using Proto = ProtoSimpleRing;
  using Prims = Primitives<T, Proto, Exec>;
  static constexpr int kNoPeer = -0x7fffffff;  // internal: no connection that way

 public:
  PeerPrims(Exec& exec, const CollWork& w, int channel, const CustomTopo& topo, ConnInfo* const* send_to,
            ConnInfo* const* recv_from)
      : exec_(exec), op_(w.redop), w_(w), channel_(channel), topo_(topo), send_to_(send_to), recv_from_(recv_from) {
    const size_t grain = Proto::kGrainBytes / sizeof(T) > 0 ? Proto::kGrainBytes / sizeof(T) : 1;
    chunk_ = w.chunk_bytes / sizeof(T) / grain * grain;
    if (chunk_ == 0) chunk_ = grain;
  }

  // ---- where this rank is ----
  int rank() const { return w_.rank; }
  int nranks() const { return w_.nranks; }
  int channel() const { return channel_; }
  int nchannels() const { return w_.nchannels; }
  const CustomTopo& topo() const { return topo_; }
  const CollWork& work() const { return w_; }
  CollKind coll() const { return w_.coll; }
  // Elements of the collective (all_reduce: the buffer; all_gather: per rank; reduce_scatter: per rank).
  size_t count() const { return w_.count; }
  // The elements [lo, hi) of count() this channel handles (the channels split the buffer, as the ring's).
  Range channel_range() const {
    return cclab::channel_range(w_.count, channel_, w_.nchannels,
                                Proto::kGrainBytes / sizeof(T) > 0 ? Proto::kGrainBytes / sizeof(T) : 1);
  }
  // Largest number of elements one FIFO chunk carries.
  size_t chunk_elems() const { return chunk_; }
  // True once the executor stopped (abort, time-out, a peer's size mismatch, or a bad call): return.
  bool aborted() const { return aborted_; }

  // ---- the primitives ----
  // Sends n elements of src to `to`.
  void send(int to, Src src, size_t n) {
    run(kNoPeer, to, src, n, [&](Prims& p, size_t o, size_t k) { p.send(src.off + o, k); });
  }
  // Receives n elements from `from` into output[out ...].
  void recv(int from, size_t out, size_t n) {
    run(from, kNoPeer, in_at(0), n, [&](Prims& p, size_t o, size_t k) { p.recv(out + o, k); });
  }
  // output[out ...] = acc (+) n elements received from `from`; `last`: this is the element's final
  // reduction (the op's post function, ncclAvg's division for integers, applies).
  void recv_reduce(int from, Src acc, size_t out, size_t n, bool last) {
    run(from, kNoPeer, acc, n,
        [&](Prims& p, size_t o, size_t k) { p.recv_reduce_copy(acc.off + o, out + o, k, last); });
  }
  // Sends acc (+) n elements received from `from` on to `to` (a partial sum passing through).
  void recv_reduce_send(int from, Src acc, int to, size_t n) {
    run(from, to, acc, n, [&](Prims& p, size_t o, size_t k) { p.recv_reduce_send(acc.off + o, k); });
  }
  // output[out ...] = acc (+) n elements from `from`, and sends that result on to `to`.
  void recv_reduce_copy_send(int from, Src acc, size_t out, int to, size_t n, bool last) {
    run(from, to, acc, n,
        [&](Prims& p, size_t o, size_t k) { p.recv_reduce_copy_send(acc.off + o, out + o, k, last); });
  }
  // Receives n elements from `from` into output[out ...] and sends them on to `to`.
  void recv_copy_send(int from, size_t out, int to, size_t n) {
    run(from, to, in_at(0), n, [&](Prims& p, size_t o, size_t k) { p.recv_copy_send(out + o, k); });
  }
  // Copies n elements of src into output[out ...] and sends them to `to`.
  void copy_send(Src src, size_t out, int to, size_t n) {
    run(kNoPeer, to, src, n, [&](Prims& p, size_t o, size_t k) { p.copy_send(src.off + o, out + o, k); });
  }
  // Copies n elements of src into output[out ...] on this rank (no peer).
  void copy(Src src, size_t out, size_t n) {
    if (aborted_ || n == 0) return;
    const T* s = (src.output ? static_cast<const T*>(w_.recv) : static_cast<const T*>(w_.send)) + src.off;
    T* d = static_cast<T*>(w_.recv) + out;
    if (s != d) exec_.reduce_copy(op_, d, static_cast<T*>(nullptr), static_cast<const T*>(nullptr), s, n, false, false);
  }
  // Sends ns elements of src to `to` while receiving nr elements from `from` into output[out ...], a
  // chunk each way per step (an exchange between partners, or a shift along a ring).
  void sendrecv(int to, Src src, size_t ns, int from, size_t out, size_t nr) {
    exchange(to, src, ns, from, in_at(0), out, nr, false, false);
  }
  // As sendrecv, the received elements reduced: output[out ...] = acc (+) them (`last` as recv_reduce).
  void sendrecv_reduce(int to, Src src, size_t ns, int from, Src acc, size_t out, size_t nr, bool last) {
    exchange(to, src, ns, from, acc, out, nr, true, last);
  }

 private:
  ConnInfo* conn(ConnInfo* const* table, int peer, bool send) {
    ConnInfo* c = peer >= 0 && peer < w_.nranks && peer != w_.rank ? table[peer] : nullptr;
    if (c == nullptr) {
      fail_call(send ? "a send to" : "a receive from", peer);
      return nullptr;
    }
    return c;
  }
  void fail_call(const char* what, int peer) {
    char msg[160];
    snprintf(msg, sizeof msg,
             "rank %d, channel %d: %s rank %d, which its peers() did not declare (or is itself or out of 0..%d)",
             w_.rank, channel_, what, peer, w_.nranks - 1);
    exec_.fail(msg);
    aborted_ = true;
  }
  // Runs body(p, offset, elements) chunk by chunk on a Primitives object whose connections are from
  // `from` and to `to` (kNoPeer: none that way) and whose source is src.
  template <typename F>
  void run(int from, int to, Src src, size_t n, F&& body) {
    if (aborted_ || n == 0) return;
    ConnInfo* r = from != kNoPeer ? conn(recv_from_, from, false) : nullptr;
    ConnInfo* s = to != kNoPeer ? conn(send_to_, to, true) : nullptr;
    if (aborted_) return;
    Prims p = make(r, s, src);
    for (size_t o = 0; o < n && !p.aborted(); o += chunk_) body(p, o, n - o < chunk_ ? n - o : chunk_);
    if (p.aborted()) aborted_ = true;
  }
  Prims make(ConnInfo* recv, ConnInfo* send, Src src) {
    Prims p(exec_, op_, recv, send, static_cast<const T*>(w_.send), static_cast<T*>(w_.recv), w_.rank, channel_,
            w_.coll, w_.op_count);
    p.set_source(src.output ? static_cast<const T*>(w_.recv) : static_cast<const T*>(w_.send), src.output);
    return p;
  }
  void exchange(int to, Src src, size_t ns, int from, Src acc, size_t out, size_t nr, bool reduce, bool last) {
    if (aborted_) return;
    // One way only: the plain primitives (the peer's matching call cuts its slices the same way).
    if (nr == 0) return send(to, src, ns);
    if (ns == 0) return reduce ? recv_reduce(from, acc, out, nr, last) : recv(from, out, nr);
    ConnInfo* s = conn(send_to_, to, true);
    ConnInfo* r = s != nullptr ? conn(recv_from_, from, false) : nullptr;
    if (aborted_) return;
    Prims p = make(r, s, src);
    const T* a = reduce ? (acc.output ? static_cast<const T*>(w_.recv) : static_cast<const T*>(w_.send)) + acc.off
                        : static_cast<const T*>(nullptr);
    for (size_t o = 0; (o < ns || o < nr) && !p.aborted(); o += chunk_) {
      const size_t ks = o < ns ? (ns - o < chunk_ ? ns - o : chunk_) : 0;
      const size_t kr = o < nr ? (nr - o < chunk_ ? nr - o : chunk_) : 0;
      p.exchange(src.off + o, ks, a != nullptr ? a + o : a, acc.output, out + o, kr, last);
    }
    if (p.aborted()) aborted_ = true;
  }

  Exec& exec_;
  RedOp<T> op_;
  const CollWork& w_;
  int channel_;
  CustomTopo topo_;
  ConnInfo* const* send_to_;
  ConnInfo* const* recv_from_;
  size_t chunk_ = 1;
  bool aborted_ = false;
};

// ---- the plugin's side ----

// Runs the schedule of one rank on one channel with element type T: false once the executor stopped.
using CustomRunFn = bool (*)(const ExecVTable* vt, void* ctx, const CollWork& w, int channel, const CustomTopo& topo,
                             ConnInfo* const* send_to, ConnInfo* const* recv_from);

// What a plugin exports (cclab_custom_algorithm()): the algorithm's name and functions, and the sizes
// of the structures it was compiled with, which the loader compares with its own.
struct CustomAlgoDesc {
  int abi;
  size_t sizeof_work, sizeof_conn, sizeof_vtable, sizeof_site, sizeof_record;
  const char* name;
  const char* (*supports)(CollKind coll, const CustomTopo& topo);
  int (*peers)(const CustomTopo& topo, int rank, int* out, int max);
  CustomRunFn run[kCustomTypes];
};

template <typename Algo, typename T, int kType>
bool custom_run(const ExecVTable* vt, void* ctx, const CollWork& w, int channel, const CustomTopo& topo,
                ConnInfo* const* send_to, ConnInfo* const* recv_from) {
  VirtualExec<T> exec(vt, ctx, kType, w.redop);
  PeerPrims<T, VirtualExec<T>> p(exec, w, channel, topo, send_to, recv_from);
  Algo::run(p);
  return !p.aborted();
}

template <typename Algo>
CustomAlgoDesc make_custom_desc() {
  return CustomAlgoDesc{
      kCustomAlgoAbi,
      sizeof(CollWork),
      sizeof(ConnInfo),
      sizeof(ExecVTable),
      sizeof(WaitSite),
      sizeof(StepRecord),
      Algo::kName,
      &Algo::supports,
      &Algo::peers,
      {&custom_run<Algo, int8_t, 0>, &custom_run<Algo, uint8_t, 1>, &custom_run<Algo, int32_t, 2>,
       &custom_run<Algo, uint32_t, 3>, &custom_run<Algo, int64_t, 4>, &custom_run<Algo, uint64_t, 5>,
       &custom_run<Algo, half_t, 6>, &custom_run<Algo, float, 7>, &custom_run<Algo, double, 8>,
       &custom_run<Algo, bfloat16_t, 9>, &custom_run<Algo, fp8_e4m3_t, 10>, &custom_run<Algo, fp8_e5m2_t, 11>}};
}

}  // namespace cclab

// Exports algorithm `Algo` from the shared object this file is compiled into.
#define CCLAB_CUSTOM_ALGORITHM(Algo)                                                                        \
  extern "C" __attribute__((visibility("default"))) const cclab::CustomAlgoDesc* cclab_custom_algorithm() { \
    static const cclab::CustomAlgoDesc desc = cclab::make_custom_desc<Algo>();                              \
    return &desc;                                                                                           \
  }
