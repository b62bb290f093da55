// The CUDA backend on a real GPU (ctest label `gpu`): every collective x datatype x op x protocol
// (Ring, and Tree for all_reduce) on 1..4 ranks spread over the devices present (several ranks share a
// GPU when there are fewer GPUs than ranks, each with its own buffers and stream), byte-exact against a
// host fold of small-integer inputs, with guard bytes after every output; send/recv; in place; bad
// buffers; abort of a stuck kernel. Without a device it says why and exits 77 (ctest: skipped).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/thread_barrier.h"
#include "cclab/cclab.h"
#include "nccl.h"
#include "trace/trace.h"

namespace {

int g_ndev = 0;

#define CUDA_OK(x) ASSERT_EQ((x), cudaSuccess) << #x << ": " << cudaGetErrorString(x)

size_t type_size(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: case ncclUint8: case ncclFloat8e4m3: case ncclFloat8e5m2: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    default: return 8;
  }
}

// Small integer v as the bytes of type t (exact in every type, sums of up to 4 ranks stay exact).
void put(ncclDataType_t t, void* p, int v) {
  switch (t) {
    case ncclInt8: *static_cast<int8_t*>(p) = static_cast<int8_t>(v); break;
    case ncclUint8: *static_cast<uint8_t*>(p) = static_cast<uint8_t>(v); break;
    case ncclInt32: *static_cast<int32_t*>(p) = v; break;
    case ncclUint32: *static_cast<uint32_t*>(p) = static_cast<uint32_t>(v); break;
    case ncclInt64: *static_cast<int64_t*>(p) = v; break;
    case ncclUint64: *static_cast<uint64_t*>(p) = static_cast<uint64_t>(v); break;
    case ncclFloat32: *static_cast<float*>(p) = static_cast<float>(v); break;
    case ncclFloat64: *static_cast<double*>(p) = v; break;
    case ncclFloat16: {  // integers 0..15 as IEEE half: exponent 15 + e, mantissa bits
      uint16_t h = 0;
      if (v > 0) {
        int e = 0;
        while ((v >> (e + 1)) != 0) ++e;
        h = static_cast<uint16_t>(((15 + e) << 10) | (((v << 10) >> e) & 0x3ff));
      }
      std::memcpy(p, &h, 2);
      break;
    }
    case ncclBfloat16: {
      const float f = static_cast<float>(v);
      uint32_t b;
      std::memcpy(&b, &f, 4);
      const uint16_t h = static_cast<uint16_t>(b >> 16);
      std::memcpy(p, &h, 2);
      break;
    }
    case ncclFloat8e4m3: {  // 0..15: exponent bias 7, 3 mantissa bits
      uint8_t q = 0;
      if (v > 0) {
        int e = 0;
        while ((v >> (e + 1)) != 0) ++e;
        q = static_cast<uint8_t>(((7 + e) << 3) | (((v << 3) >> e) & 7));
      }
      *static_cast<uint8_t*>(p) = q;
      break;
    }
    default: {  // e5m2: bias 15, 2 mantissa bits
      uint8_t q = 0;
      if (v > 0) {
        int e = 0;
        while ((v >> (e + 1)) != 0) ++e;
        q = static_cast<uint8_t>(((15 + e) << 2) | (((v << 2) >> e) & 3));
      }
      *static_cast<uint8_t*>(p) = q;
    }
  }
}

// Element i of rank r's input: values whose sums over <= 4 ranks are exact in fp8 (<= 15 after max/sum).
int input_value(int r, size_t i, ncclRedOp_t op) {
  if (op == ncclProd) return 1 + static_cast<int>((i + r) % 2);
  return static_cast<int>((i * 7 + r * 3) % 4);
}

int fold(ncclRedOp_t op, int a, int b) {
  switch (op) {
    case ncclProd: return a * b;
    case ncclMax: return a > b ? a : b;
    case ncclMin: return a < b ? a : b;
    default: return a + b;
  }
}

// One rank: its device, stream and communicator.
struct Rank {
  int dev = 0;
  cudaStream_t stream = nullptr;
  ncclComm_t comm = nullptr;
};

// Frees wait until every rank's collective has completed (cclab::ThreadBarrier says why).
using cclab::ThreadBarrier;

// Runs f(r) on one thread per rank (each on its device) and joins.
void each_rank(int n, const std::function<void(int)>& f) {
  std::vector<std::thread> t;
  for (int r = 0; r < n; ++r) t.emplace_back([&, r] { f(r); });
  for (auto& x : t) x.join();
}

std::vector<Rank> make_ranks(int n) {
  std::vector<Rank> ranks(n);
  ncclUniqueId id;
  EXPECT_EQ(ncclGetUniqueId(&id), ncclSuccess);
  each_rank(n, [&](int r) {
    ranks[r].dev = r % g_ndev;
    cudaSetDevice(ranks[r].dev);
    cudaStreamCreateWithFlags(&ranks[r].stream, cudaStreamNonBlocking);
    EXPECT_EQ(ncclCommInitRank(&ranks[r].comm, n, id, r), ncclSuccess) << ncclGetLastError(nullptr);
  });
  return ranks;
}

void free_ranks(std::vector<Rank>& ranks) {
  each_rank(static_cast<int>(ranks.size()), [&](int r) {
    cudaSetDevice(ranks[r].dev);
    EXPECT_EQ(ncclCommDestroy(ranks[r].comm), ncclSuccess);
    cudaStreamDestroy(ranks[r].stream);
  });
}

// A new buffer on the current device holding `count` floats f(i).
float* device_floats(size_t count, const std::function<float(size_t)>& f) {
  std::vector<float> h(count);
  for (size_t i = 0; i < count; ++i) h[i] = f(i);
  float* d = nullptr;
  cudaMalloc(&d, count * 4);
  cudaMemcpy(d, h.data(), count * 4, cudaMemcpyHostToDevice);
  // From pageable memory cudaMemcpy may return before its DMA has landed (CUDA's API sync behaviour), and
  // the collectives run on non-blocking streams that do not wait for the legacy stream: wait for it.
  // (Seen on an H200: inputs still arriving while the kernel read them, a few wrong elements of 1 MiB.)
  cudaStreamSynchronize(nullptr);
  return d;
}

// "" when the `count` floats at d (current device) are want(i); else the first that is not.
std::string check_floats(const float* d, size_t count, const std::function<float(size_t)>& want) {
  std::vector<float> h(count);
  cudaMemcpy(h.data(), d, count * 4, cudaMemcpyDeviceToHost);
  for (size_t i = 0; i < count; ++i)
    if (h[i] != want(i))
      return "element " + std::to_string(i) + " is " + std::to_string(h[i]) + ", expected " + std::to_string(want(i));
  return "";
}

enum Coll { kAllReduce, kAllGather, kReduceScatter, kBroadcast, kReduce };
const char* kCollNames[] = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast", "Reduce"};

// One collective on every rank; returns "" or what was wrong (first difference).
std::string run_and_check(std::vector<Rank>& ranks, Coll coll, ncclDataType_t t, ncclRedOp_t op, size_t count,
                          bool in_place) {
  const int n = static_cast<int>(ranks.size());
  const size_t es = type_size(t);
  const size_t in_elems = coll == kReduceScatter ? count * n : count;
  const size_t out_elems = coll == kAllGather ? count * n : count;
  const int root = n > 1 ? 1 : 0;
  const size_t guard = 64;
  std::vector<std::string> err(n);
  ThreadBarrier all_done(n);
  // Host copies of every rank's input, for the expected result.
  std::vector<std::vector<int>> vals(n, std::vector<int>(in_elems));
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < in_elems; ++i) vals[r][i] = input_value(r, i, op);
  each_rank(n, [&](int r) {
    Rank& rk = ranks[r];
    cudaSetDevice(rk.dev);
    const size_t out_bytes = out_elems * es, in_bytes = in_elems * es;
    // In place, a reduce_scatter's input (larger than its output) shares the buffer: big enough for both.
    const size_t buf_bytes = (in_place && coll == kReduceScatter) ? in_bytes : out_bytes;
    char *out = nullptr, *in = nullptr;
    if (cudaMalloc(&out, buf_bytes + guard) != cudaSuccess) {
      err[r] = "cudaMalloc";
      all_done.wait();
      return;
    }
    std::vector<char> host_in(in_bytes), host_out(buf_bytes + guard, static_cast<char>(0xab));
    for (size_t i = 0; i < in_elems; ++i) put(t, host_in.data() + i * es, vals[r][i]);
    // Stream-ordered before the collective (see device_floats: a plain cudaMemcpy may not have landed).
    cudaMemcpyAsync(out, host_out.data(), buf_bytes + guard, cudaMemcpyHostToDevice, rk.stream);
    // In place as NCCL defines it: an all_gather's input is the rank's block of the output buffer
    // (sendbuff == recvbuff + rank x count), a reduce_scatter's output the rank's block of the input
    // (recvbuff == sendbuff + rank x count); the other collectives share one buffer. The buffer is
    // `base`; `out` is where the result is checked.
    char* const base = out;
    if (in_place) {
      const size_t off = coll == kAllGather ? static_cast<size_t>(r) * count * es : 0;
      cudaMemcpyAsync(out + off, host_in.data(), in_bytes, cudaMemcpyHostToDevice, rk.stream);
      in = out + off;
      if (coll == kReduceScatter) out += static_cast<size_t>(r) * count * es;
    } else {
      cudaMalloc(&in, in_bytes + 1);
      cudaMemcpyAsync(in, host_in.data(), in_bytes, cudaMemcpyHostToDevice, rk.stream);
    }
    ncclResult_t res = ncclSuccess;
    switch (coll) {
      case kAllReduce: res = ncclAllReduce(in, out, count, t, op, rk.comm, rk.stream); break;
      case kAllGather: res = ncclAllGather(in, out, count, t, rk.comm, rk.stream); break;
      case kReduceScatter: res = ncclReduceScatter(in, out, count, t, op, rk.comm, rk.stream); break;
      case kBroadcast: res = ncclBroadcast(in, out, count, t, root, rk.comm, rk.stream); break;
      case kReduce: res = ncclReduce(in, out, count, t, op, root, rk.comm, rk.stream); break;
    }
    if (res != ncclSuccess) err[r] = std::string("call failed: ") + ncclGetLastError(rk.comm);
    if (cudaStreamSynchronize(rk.stream) != cudaSuccess) err[r] = "cudaStreamSynchronize failed";
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(rk.comm, &async);
    if (async != ncclSuccess) err[r] = std::string("async error: ") + ncclGetLastError(rk.comm);
    // The whole buffer and its guard come back; the result is checked at `out` inside it.
    host_out.assign(buf_bytes + guard, 0);
    cudaMemcpy(host_out.data(), base, buf_bytes + guard, cudaMemcpyDeviceToHost);
    const char* result = host_out.data() + (out - base);
    if (err[r].empty()) {
      for (size_t g = 0; g < guard; ++g)
        if (static_cast<unsigned char>(host_out[buf_bytes + g]) != 0xab) {
          err[r] = "guard byte " + std::to_string(g) + " after the output was overwritten";
          break;
        }
      const bool has_result = !(coll == kReduce && r != root);
      for (size_t i = 0; err[r].empty() && has_result && i < out_elems; ++i) {
        int want = 0;
        if (coll == kAllGather) {
          want = vals[i / count][i % count];
        } else if (coll == kBroadcast) {
          want = vals[root][i];
        } else {
          const size_t src = coll == kReduceScatter ? r * count + i : i;
          want = vals[0][src];
          for (int q = 1; q < n; ++q) want = fold(op, want, vals[q][src]);
        }
        std::vector<char> w(es);
        put(t, w.data(), want);
        const char* got = result + i * es;
        if (std::memcmp(got, w.data(), es) != 0) {
          err[r] = "element " + std::to_string(i) + " is wrong (expected the value " + std::to_string(want) + ")";
        }
      }
    }
    all_done.wait();
    if (!in_place) cudaFree(in);
    cudaFree(base);
  });
  for (int r = 0; r < n; ++r)
    if (!err[r].empty()) return "rank " + std::to_string(r) + ": " + err[r];
  return "";
}

const ncclDataType_t kTypes[] = {ncclInt8,   ncclUint8,   ncclInt32,    ncclUint32,     ncclInt64,     ncclUint64,
                                 ncclFloat16, ncclFloat32, ncclFloat64, ncclBfloat16, ncclFloat8e4m3, ncclFloat8e5m2};

void matrix(const char* proto, const char* algo) {
  setenv("NCCL_PROTO", proto, 1);
  if (algo) setenv("NCCL_ALGO", algo, 1); else unsetenv("NCCL_ALGO");
  // PAT runs all_gather and reduce_scatter, and only where NCCL_PAT_ENABLE=1 lifts NCCL's rule of one GPU
  // per machine (here every rank is on one machine); Ring and Tree are forced for all_reduce.
  const bool pat = algo != nullptr && std::strcmp(algo, "PAT") == 0;
  if (pat) setenv("NCCL_PAT_ENABLE", "1", 1);
  for (int n : {1, 2, 3, 4}) {
    std::vector<Rank> ranks = make_ranks(n);
    for (int c = 0; c < 5; ++c) {
      if (pat ? c != kAllGather && c != kReduceScatter : algo && c != kAllReduce) continue;
      for (ncclDataType_t t : kTypes)
        for (ncclRedOp_t op : {ncclSum, ncclProd, ncclMax, ncclMin})
          for (size_t count : {size_t(0), size_t(1), size_t(7), size_t(4099), size_t(1 << 20) + 3}) {
            if (op != ncclSum && count > 4099) continue;
            for (bool in_place : {false, true}) {
              SCOPED_TRACE(std::string(kCollNames[c]) + " proto " + proto + (algo ? std::string(" algo ") + algo : "") +
                           " ranks " + std::to_string(n) + " type " + std::to_string(t) + " op " + std::to_string(op) +
                           " count " + std::to_string(count) + (in_place ? " in place" : ""));
              ASSERT_EQ(run_and_check(ranks, static_cast<Coll>(c), t, op, count, in_place), "");
            }
          }
    }
    free_ranks(ranks);
  }
  unsetenv("NCCL_PROTO");
  unsetenv("NCCL_ALGO");
  unsetenv("NCCL_PAT_ENABLE");
}

TEST(GpuCollectives, RingSimple) { matrix("Simple", "Ring"); }
TEST(GpuCollectives, RingLL) { matrix("LL", "Ring"); }
TEST(GpuCollectives, RingLL128) { matrix("LL128", "Ring"); }
TEST(GpuCollectives, TreeAllProtocols) { matrix("Simple,LL,LL128", "Tree"); }
TEST(GpuCollectives, TunerChoice) { matrix("Simple,LL,LL128", nullptr); }
TEST(GpuCollectives, Pat) { matrix("Simple", "PAT"); }

// Send/recv: a ring shift on every rank, grouped. Each send is cut into parts on several channels
// (graph/p2p_channels.h p2p_channels_for_launch; ranks sharing a GPU: 512 KiB steps): 1 MiB + 20 B into
// 16 parts with 2 ranks, the last one short; 256 KiB + 4 B with 128 KiB steps (NCCL_P2P_NVL_CHUNKSIZE)
// into 16 parts of 20 KiB with 2 ranks, the last three empty; 28 B in one part.
TEST(GpuCollectives, SendRecvRingShift) {
  for (int n : {2, 3, 4})
    for (size_t count : {size_t(1 << 18) + 5, size_t(65537), size_t(7)}) {
      SCOPED_TRACE(std::to_string(n) + " ranks, " + std::to_string(count) + " floats");
      if (count == 65537) setenv("NCCL_P2P_NVL_CHUNKSIZE", "131072", 1);
      std::vector<Rank> ranks = make_ranks(n);
      unsetenv("NCCL_P2P_NVL_CHUNKSIZE");
      std::vector<std::string> err(n);
      ThreadBarrier all_done(n);
      each_rank(n, [&](int r) {
        cudaSetDevice(ranks[r].dev);
        float* s = device_floats(count, [&](size_t i) { return static_cast<float>(r * 1000 + i % 1000); });
        float* d = nullptr;
        cudaMalloc(&d, count * 4);
        ncclGroupStart();
        ncclSend(s, count, ncclFloat32, (r + 1) % n, ranks[r].comm, ranks[r].stream);
        ncclRecv(d, count, ncclFloat32, (r + n - 1) % n, ranks[r].comm, ranks[r].stream);
        if (ncclGroupEnd() != ncclSuccess) err[r] = ncclGetLastError(ranks[r].comm);
        cudaStreamSynchronize(ranks[r].stream);
        const int from = (r + n - 1) % n;
        if (err[r].empty())
          err[r] = check_floats(d, count, [&](size_t i) { return static_cast<float>(from * 1000 + i % 1000); });
        all_done.wait();
        cudaFree(s);
        cudaFree(d);
      });
      for (int r = 0; r < n; ++r) EXPECT_EQ(err[r], "") << "rank " << r;
      free_ranks(ranks);
    }
}

// ncclScalarDevice: the kernel reads the PreMulSum scalar when it runs, after what the stream ran before
// it. Each rank's stream holds a plain all_reduce (which waits for rank 1, who comes 200 ms late), then
// a copy that sets the scalar from 3 to 5, then the PreMulSum all_reduce: the result is 5 x the sum.
TEST(GpuCollectives, PreMulSumReadsTheDeviceScalarWhenItRuns) {
  const int n = 2;
  std::vector<Rank> ranks = make_ranks(n);
  const size_t count = 100003;
  std::vector<std::string> err(n);
  each_rank(n, [&](int r) {
    if (r == 1) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    cudaSetDevice(ranks[r].dev);
    float* in = device_floats(count, [&](size_t i) { return static_cast<float>((i + r) % 5); });
    float* scalar = device_floats(1, [](size_t) { return 3.0f; });
    float *a = nullptr, *b = nullptr, *five = nullptr;
    cudaMalloc(&a, count * 4);
    cudaMalloc(&b, count * 4);
    cudaMallocHost(&five, 4);
    *five = 5.0f;
    ncclRedOp_t op;
    if (ncclRedOpCreatePreMulSum(&op, scalar, ncclFloat32, ncclScalarDevice, ranks[r].comm) != ncclSuccess) {
      err[r] = ncclGetLastError(ranks[r].comm);
      return;
    }
    ncclAllReduce(in, a, count, ncclFloat32, ncclSum, ranks[r].comm, ranks[r].stream);
    cudaMemcpyAsync(scalar, five, 4, cudaMemcpyHostToDevice, ranks[r].stream);
    if (ncclAllReduce(in, b, count, ncclFloat32, op, ranks[r].comm, ranks[r].stream) != ncclSuccess)
      err[r] = ncclGetLastError(ranks[r].comm);
    cudaStreamSynchronize(ranks[r].stream);
    if (err[r].empty())
      err[r] = check_floats(b, count, [](size_t i) { return 5.0f * static_cast<float>(i % 5 + (i + 1) % 5); });
    ncclRedOpDestroy(op, ranks[r].comm);
    cudaFree(in);
    cudaFree(a);
    cudaFree(b);
    cudaFree(scalar);
    cudaFreeHost(five);
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(err[r], "") << "rank " << r;
  free_ranks(ranks);
}

// One thread drives every rank in one group (nccl-tests -g N): the small all_reduce's LL channels
// connect on first use, each communicator on a thread of its own, instead of the first rank's sending
// end waiting for a receiving end this thread has not made yet.
TEST(GpuCollectives, OneThreadDrivesEveryRank) {
  const int n = 3;
  std::vector<Rank> ranks = make_ranks(n);
  for (size_t count : {size_t(1), size_t(1000), size_t(1) << 20}) {
    std::vector<float*> buf(n);
    for (int r = 0; r < n; ++r) {
      cudaSetDevice(ranks[r].dev);
      buf[r] = device_floats(count, [&](size_t) { return static_cast<float>(r + 1); });
    }
    ASSERT_EQ(ncclGroupStart(), ncclSuccess);
    for (int r = 0; r < n; ++r) {
      cudaSetDevice(ranks[r].dev);
      ASSERT_EQ(ncclAllReduce(buf[r], buf[r], count, ncclFloat32, ncclSum, ranks[r].comm, ranks[r].stream), ncclSuccess);
    }
    ASSERT_EQ(ncclGroupEnd(), ncclSuccess) << ncclGetLastError(nullptr);
    for (int r = 0; r < n; ++r) {
      cudaSetDevice(ranks[r].dev);
      CUDA_OK(cudaStreamSynchronize(ranks[r].stream));
      ASSERT_EQ(check_floats(buf[r], count, [](size_t) { return 6.0f; }), "") << "rank " << r << " count " << count;
      cudaFree(buf[r]);
    }
  }
  free_ranks(ranks);
}

// Two all_reduces of one communicator on two streams of each rank, not grouped: they must not run at
// once (they would share the connections' FIFO slots); both results are exact.
TEST(GpuCollectives, OneCommunicatorOnTwoStreams) {
  const int n = 2;
  std::vector<Rank> ranks = make_ranks(n);
  const size_t count = (1 << 22) + 1;
  std::vector<std::string> err(n);
  each_rank(n, [&](int r) {
    cudaSetDevice(ranks[r].dev);
    cudaStream_t other = nullptr;
    cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking);
    float* a = device_floats(count, [&](size_t) { return static_cast<float>(r + 1); });
    float* b = device_floats(count, [&](size_t) { return 10.0f * static_cast<float>(r + 1); });
    if (ncclAllReduce(a, a, count, ncclFloat32, ncclSum, ranks[r].comm, ranks[r].stream) != ncclSuccess ||
        ncclAllReduce(b, b, count, ncclFloat32, ncclSum, ranks[r].comm, other) != ncclSuccess)
      err[r] = ncclGetLastError(ranks[r].comm);
    cudaStreamSynchronize(other);
    cudaStreamSynchronize(ranks[r].stream);
    for (int k = 0; k < 2 && err[r].empty(); ++k) {
      const std::string e = check_floats(k == 0 ? a : b, count, [k](size_t) { return k == 0 ? 3.0f : 30.0f; });
      if (!e.empty()) err[r] = "all_reduce " + std::to_string(k) + ": " + e;
    }
    cudaFree(a);
    cudaFree(b);
    cudaStreamDestroy(other);
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(err[r], "") << "rank " << r;
  free_ranks(ranks);
}

// CUDA graphs: each rank captures an all_reduce (a small one, whose LL connections are made during the
// capture, and a large one) into a graph and replays it three times with new inputs copied in between.
TEST(GpuCollectives, CapturedAllReduceReplays) {
  const int n = 2;
  std::vector<Rank> ranks = make_ranks(n);
  const size_t counts[2] = {1000, (1 << 20) + 3};
  std::vector<std::string> err(n);
  each_rank(n, [&](int r) {
    cudaSetDevice(ranks[r].dev);
    float *in[2] = {}, *out[2] = {};
    for (int k = 0; k < 2; ++k) {
      cudaMalloc(&in[k], counts[k] * 4);
      cudaMalloc(&out[k], counts[k] * 4);
    }
    cudaStreamCaptureMode mode = cudaStreamCaptureModeThreadLocal;
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    cudaError_t e = cudaStreamBeginCapture(ranks[r].stream, mode);
    for (int k = 0; k < 2 && e == cudaSuccess; ++k)
      if (ncclAllReduce(in[k], out[k], counts[k], ncclFloat32, ncclSum, ranks[r].comm, ranks[r].stream) !=
          ncclSuccess)
        err[r] = std::string("ncclAllReduce under capture: ") + ncclGetLastError(ranks[r].comm);
    if (e == cudaSuccess) e = cudaStreamEndCapture(ranks[r].stream, &graph);
    if (e == cudaSuccess) e = cudaGraphInstantiate(&exec, graph, 0);
    if (e != cudaSuccess && err[r].empty()) err[r] = std::string("capture: ") + cudaGetErrorString(e);
    for (int replay = 0; replay < 3 && err[r].empty(); ++replay) {
      std::vector<float> h[2];
      for (int k = 0; k < 2; ++k) {
        h[k].resize(counts[k]);
        for (size_t i = 0; i < counts[k]; ++i) h[k][i] = static_cast<float>((i + r + replay) % 9);
        cudaMemcpyAsync(in[k], h[k].data(), counts[k] * 4, cudaMemcpyHostToDevice, ranks[r].stream);
      }
      e = cudaGraphLaunch(exec, ranks[r].stream);
      if (e == cudaSuccess) e = cudaStreamSynchronize(ranks[r].stream);
      if (e != cudaSuccess) {
        err[r] = std::string("replay: ") + cudaGetErrorString(e);
        break;
      }
      for (int k = 0; k < 2 && err[r].empty(); ++k) {
        const std::string e = check_floats(out[k], counts[k], [replay](size_t i) {
          return static_cast<float>((i + replay) % 9 + (i + 1 + replay) % 9);
        });
        if (!e.empty()) err[r] = "replay " + std::to_string(replay) + ", count " + std::to_string(counts[k]) + ": " + e;
      }
    }
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    for (int k = 0; k < 2; ++k) {
      cudaFree(in[k]);
      cudaFree(out[k]);
    }
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(err[r], "") << "rank " << r;
  free_ranks(ranks);
}

// A group's sends and receives on two streams: the group runs on its first operation's stream (A),
// after the work queued before on the other (B). B fills the send buffer 300 ms late (a host function
// sleeps first); the receiver must still get the filled values, and B waits for the group.
TEST(GpuCollectives, GroupWaitsForItsOtherStreams) {
  const int n = 2;
  std::vector<Rank> ranks = make_ranks(n);
  const size_t count = (1 << 18) + 3;
  std::vector<std::string> err(n);
  each_rank(n, [&](int r) {
    cudaSetDevice(ranks[r].dev);
    cudaStream_t b = nullptr;
    cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking);
    float *s = nullptr, *d = nullptr, *h = nullptr;
    cudaMalloc(&s, count * 4);
    cudaMalloc(&d, count * 4);
    cudaMemset(s, 0, count * 4);
    cudaMemset(d, 0, count * 4);
    cudaDeviceSynchronize();
    cudaMallocHost(&h, count * 4);
    for (size_t i = 0; i < count; ++i) h[i] = static_cast<float>(r * 100 + i % 77 + 1);
    cudaLaunchHostFunc(
        b, [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(300)); }, nullptr);
    cudaMemcpyAsync(s, h, count * 4, cudaMemcpyHostToDevice, b);
    ncclGroupStart();
    ncclRecv(d, count, ncclFloat32, (r + 1) % n, ranks[r].comm, ranks[r].stream);
    ncclSend(s, count, ncclFloat32, (r + 1) % n, ranks[r].comm, b);
    if (ncclGroupEnd() != ncclSuccess) err[r] = ncclGetLastError(ranks[r].comm);
    cudaStreamSynchronize(b);  // B waits for the group, so this covers the receive too
    const int from = (r + 1) % n;
    if (err[r].empty())
      err[r] = check_floats(d, count, [&](size_t i) { return static_cast<float>(from * 100 + i % 77 + 1); });
    cudaStreamSynchronize(ranks[r].stream);
    cudaFree(s);
    cudaFree(d);
    cudaFreeHost(h);
    cudaStreamDestroy(b);
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(err[r], "") << "rank " << r;
  free_ranks(ranks);
}

// One capture over two streams of each rank (B forked from A and joined back): an all_reduce on A, one
// on B (the communicator's launches must not overlap in the graph: they share FIFO slots), then on B a
// host node that sleeps 200 ms and a copy filling the send buffer from pinned host memory, then a group
// receiving on A and sending on B: the group (run on A) must depend on B's copy. Three replays with new
// inputs; every result exact. And a group over a captured and an uncaptured stream is refused.
TEST(GpuCollectives, CaptureAcrossTwoStreams) {
  const int n = 2;
  std::vector<Rank> ranks = make_ranks(n);
  const size_t count = (1 << 20) + 7;
  std::vector<std::string> err(n);
  each_rank(n, [&](int r) {
    cudaSetDevice(ranks[r].dev);
    cudaStream_t a = ranks[r].stream, b = nullptr;
    cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking);
    cudaEvent_t fork = nullptr, join = nullptr;
    cudaEventCreateWithFlags(&fork, cudaEventDisableTiming);
    cudaEventCreateWithFlags(&join, cudaEventDisableTiming);
    float *x = nullptr, *y = nullptr, *s = nullptr, *d = nullptr, *hs = nullptr;
    cudaMalloc(&x, count * 4);
    cudaMalloc(&y, count * 4);
    cudaMalloc(&s, count * 4);
    cudaMalloc(&d, count * 4);
    cudaMallocHost(&hs, count * 4);
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    cudaError_t e = cudaStreamBeginCapture(a, cudaStreamCaptureModeThreadLocal);
    if (e == cudaSuccess) e = cudaEventRecord(fork, a);
    if (e == cudaSuccess) e = cudaStreamWaitEvent(b, fork, 0);
    if (e == cudaSuccess) {
      if (ncclAllReduce(x, x, count, ncclFloat32, ncclSum, ranks[r].comm, a) != ncclSuccess ||
          ncclAllReduce(y, y, count, ncclFloat32, ncclMax, ranks[r].comm, b) != ncclSuccess)
        err[r] = std::string("all_reduce under capture: ") + ncclGetLastError(ranks[r].comm);
      e = cudaLaunchHostFunc(
          b, [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(200)); }, nullptr);
      if (e == cudaSuccess) e = cudaMemcpyAsync(s, hs, count * 4, cudaMemcpyHostToDevice, b);
      ncclGroupStart();
      ncclRecv(d, count, ncclFloat32, (r + 1) % n, ranks[r].comm, a);
      ncclSend(s, count, ncclFloat32, (r + 1) % n, ranks[r].comm, b);
      if (ncclGroupEnd() != ncclSuccess && err[r].empty())
        err[r] = std::string("send/recv under capture: ") + ncclGetLastError(ranks[r].comm);
      if (e == cudaSuccess) e = cudaEventRecord(join, b);
      if (e == cudaSuccess) e = cudaStreamWaitEvent(a, join, 0);
      const cudaError_t e2 = cudaStreamEndCapture(a, &graph);
      if (e == cudaSuccess) e = e2;
    }
    if (e == cudaSuccess) e = cudaGraphInstantiate(&exec, graph, 0);
    if (e != cudaSuccess && err[r].empty()) err[r] = std::string("capture: ") + cudaGetErrorString(e);
    const int from = (r + 1) % n;
    for (int replay = 0; replay < 3 && err[r].empty(); ++replay) {
      std::vector<float> hx(count), hy(count);
      for (size_t i = 0; i < count; ++i) {
        hx[i] = static_cast<float>((i + r + replay) % 13);
        hy[i] = static_cast<float>((i * 7 + r + replay) % 11);
        hs[i] = static_cast<float>(r * 100 + (i + replay) % 17);  // read by the graph's copy node
      }
      cudaMemcpyAsync(x, hx.data(), count * 4, cudaMemcpyHostToDevice, a);
      cudaMemcpyAsync(y, hy.data(), count * 4, cudaMemcpyHostToDevice, a);
      e = cudaGraphLaunch(exec, a);
      if (e == cudaSuccess) e = cudaStreamSynchronize(a);
      if (e != cudaSuccess) {
        err[r] = std::string("replay: ") + cudaGetErrorString(e);
        break;
      }
      auto sum = [replay](size_t i) {
        return static_cast<float>((i + replay) % 13 + (i + 1 + replay) % 13);
      };
      auto max = [replay](size_t i) {
        return static_cast<float>(std::max((i * 7 + replay) % 11, (i * 7 + 1 + replay) % 11));
      };
      std::string what = check_floats(x, count, sum);
      if (what.empty()) what = check_floats(y, count, max);
      if (what.empty())
        what = check_floats(d, count, [&](size_t i) { return static_cast<float>(from * 100 + (i + replay) % 17); });
      if (!what.empty()) err[r] = "replay " + std::to_string(replay) + ": " + what;
    }
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    // A group over a stream being captured and one that is not: refused, and the capture stays valid.
    if (err[r].empty() && r == 0) {
      cudaGraph_t g2 = nullptr;
      e = cudaStreamBeginCapture(a, cudaStreamCaptureModeThreadLocal);
      ncclGroupStart();
      ncclRecv(d, count, ncclFloat32, 1, ranks[r].comm, a);
      ncclSend(s, count, ncclFloat32, 1, ranks[r].comm, b);
      const ncclResult_t res = ncclGroupEnd();
      const std::string msg = ncclGetLastError(ranks[r].comm);
      const cudaError_t e3 = cudaStreamEndCapture(a, &g2);
      if (res != ncclInvalidUsage || msg.find("captured") == std::string::npos)
        err[r] = "mixed capture: result " + std::to_string(res) + ", \"" + msg + "\"";
      else if (e != cudaSuccess || e3 != cudaSuccess)
        err[r] = std::string("mixed capture left the capture broken: ") + cudaGetErrorString(e3);
      if (g2) cudaGraphDestroy(g2);
    }
    cudaFree(x);
    cudaFree(y);
    cudaFree(s);
    cudaFree(d);
    cudaFreeHost(hs);
    cudaEventDestroy(fork);
    cudaEventDestroy(join);
    cudaStreamDestroy(b);
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(err[r], "") << "rank " << r;
  free_ranks(ranks);
}

// CCLAB_TRACE records every replay of a captured collective as a collective of its own (the captured
// op number + replay x 2^32), with each rank's steps. Run by the gpu_trace_test entry, which sets
// CCLAB_TRACE (the recorder starts with the process's first communicator).
TEST(GpuTrace, GraphReplaysAreRecorded) {
  const char* path = std::getenv("CCLAB_TRACE");
  if (path == nullptr || *path == '\0') GTEST_SKIP() << "run by the gpu_trace_test entry, with CCLAB_TRACE set";
  const int n = 2;
  std::vector<Rank> ranks = make_ranks(n);
  const size_t count = 1 << 16;
  std::vector<std::string> err(n);
  each_rank(n, [&](int r) {
    cudaSetDevice(ranks[r].dev);
    float* x = device_floats(count, [](size_t) { return 1.0f; });
    cudaGraph_t graph = nullptr;
    cudaGraphExec_t exec = nullptr;
    cudaError_t e = cudaStreamBeginCapture(ranks[r].stream, cudaStreamCaptureModeThreadLocal);
    if (e == cudaSuccess &&  // op 0: captured
        ncclAllReduce(x, x, count, ncclFloat32, ncclSum, ranks[r].comm, ranks[r].stream) != ncclSuccess)
      err[r] = ncclGetLastError(ranks[r].comm);
    if (e == cudaSuccess) e = cudaStreamEndCapture(ranks[r].stream, &graph);
    if (e == cudaSuccess) e = cudaGraphInstantiate(&exec, graph, 0);
    // op 1: eager, then three replays of op 0
    if (err[r].empty() && ncclAllReduce(x, x, count, ncclFloat32, ncclSum, ranks[r].comm, ranks[r].stream) != ncclSuccess)
      err[r] = ncclGetLastError(ranks[r].comm);
    for (int k = 0; k < 3 && e == cudaSuccess; ++k) e = cudaGraphLaunch(exec, ranks[r].stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(ranks[r].stream);
    if (e != cudaSuccess && err[r].empty()) err[r] = cudaGetErrorString(e);
    if (err[r].empty()) err[r] = check_floats(x, count, [](size_t) { return 16.0f; });  // x2 four times
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    cudaFree(x);
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(err[r], "") << "rank " << r;
  free_ranks(ranks);  // the last recorded communicator's destruction writes the trace
  cclab::trace::Trace t;
  std::string why;
  ASSERT_TRUE(cclab::trace::read_trace(path, &t, &why)) << why;
  EXPECT_EQ(t.meta.backend, "cuda");  // the header said "host" on the first GPU run
  std::set<uint64_t> ops;
  for (const auto& o : t.ops) ops.insert(o.op_count);
  const uint64_t kReplay = uint64_t(1) << 32;
  EXPECT_EQ(ops, (std::set<uint64_t>{1, kReplay, 2 * kReplay, 3 * kReplay}));
  std::map<uint64_t, std::set<int>> ranks_of;
  for (const auto& ev : t.events) ranks_of[ev.op_count].insert(ev.rank);
  for (uint64_t op : ops) EXPECT_EQ(ranks_of[op], (std::set<int>{0, 1})) << "op " << op;
}

// A host (non-registered) buffer is an argument error naming the buffer, not a crash.
TEST(GpuCollectives, HostBufferIsRejected) {
  std::vector<Rank> ranks = make_ranks(1);
  std::vector<float> host(16);
  cudaSetDevice(ranks[0].dev);
  EXPECT_EQ(ncclAllReduce(host.data(), host.data(), 16, ncclFloat32, ncclSum, ranks[0].comm, ranks[0].stream),
            ncclInvalidArgument);
  EXPECT_NE(std::string(ncclGetLastError(ranks[0].comm)).find("not GPU memory"), std::string::npos);
  free_ranks(ranks);
}

// Host memory registered with CUDA (cudaHostRegister) or allocated by it (cudaHostAlloc) is a valid
// buffer: the kernels reach it through its device address, which need not be the host pointer (on
// most Linux systems it is, so there this checks that such buffers work, not the translation).
TEST(GpuCollectives, RegisteredHostBuffersWork) {
  const int n = 2;
  std::vector<Rank> ranks = make_ranks(n);
  const size_t count = 100003, bytes = (count * 4 + 4095) / 4096 * 4096;  // whole pages: no page shared
  std::vector<float*> in(n, nullptr), out_host(n, nullptr), out_dev(n, nullptr);
  std::vector<std::string> err(n);
  // Every rank's buffers first, so that a rank whose setup fails never leaves the other waiting.
  each_rank(n, [&](int r) {
    cudaSetDevice(ranks[r].dev);
    in[r] = static_cast<float*>(std::aligned_alloc(4096, bytes));
    if (in[r] == nullptr) {
      err[r] = "aligned_alloc failed";
      return;
    }
    for (size_t i = 0; i < count; ++i) in[r][i] = static_cast<float>((i + r) % 7);
    cudaError_t e = cudaHostRegister(in[r], bytes, cudaHostRegisterMapped);
    if (e == cudaSuccess) e = cudaHostAlloc(reinterpret_cast<void**>(&out_host[r]), bytes, cudaHostAllocMapped);
    if (e == cudaSuccess) e = cudaMalloc(&out_dev[r], bytes);
    if (e != cudaSuccess) err[r] = std::string("setup: ") + cudaGetErrorString(e);
  });
  const bool ready = err[0].empty() && err[1].empty();
  const auto want = [](size_t i) { return static_cast<float>(i % 7 + (i + 1) % 7); };
  if (ready)
    each_rank(n, [&](int r) {
      cudaSetDevice(ranks[r].dev);
      // registered host -> device, then device -> host allocated
      if (ncclAllReduce(in[r], out_dev[r], count, ncclFloat32, ncclSum, ranks[r].comm, ranks[r].stream) != ncclSuccess ||
          ncclAllReduce(out_dev[r], out_host[r], count, ncclFloat32, ncclMax, ranks[r].comm, ranks[r].stream) !=
              ncclSuccess)
        err[r] = ncclGetLastError(ranks[r].comm);
      const cudaError_t e = cudaStreamSynchronize(ranks[r].stream);
      if (err[r].empty() && e != cudaSuccess) err[r] = cudaGetErrorString(e);
      if (err[r].empty()) err[r] = check_floats(out_dev[r], count, want);
      for (size_t i = 0; err[r].empty() && i < count; ++i)
        if (out_host[r][i] != want(i))
          err[r] = "host output element " + std::to_string(i) + " is " + std::to_string(out_host[r][i]);
    });
  each_rank(n, [&](int r) {
    cudaSetDevice(ranks[r].dev);
    if (in[r] != nullptr) {
      cudaHostUnregister(in[r]);
      std::free(in[r]);
    }
    if (out_host[r] != nullptr) cudaFreeHost(out_host[r]);
    if (out_dev[r] != nullptr) cudaFree(out_dev[r]);
  });
  for (int r = 0; r < n; ++r) EXPECT_EQ(err[r], "") << "rank " << r;
  free_ranks(ranks);
}

// A buffer on another GPU: used through peer access where the GPUs have it, otherwise refused with a
// message naming the buffer and both devices (never a fault in the kernel). Out of place, into a buffer
// on the other GPU, with a PreMulSum by 2, so the kernel must really write there.
TEST(GpuCollectives, BufferOnAnotherGpu) {
  if (g_ndev < 2) GTEST_SKIP() << "needs 2 GPUs";
  std::vector<Rank> ranks = make_ranks(1);
  const int other = ranks[0].dev == 0 ? 1 : 0;
  const size_t count = 4099;
  CUDA_OK(cudaSetDevice(ranks[0].dev));
  float* x = device_floats(count, [](size_t i) { return static_cast<float>(i % 11); });
  CUDA_OK(cudaSetDevice(other));
  float* y = device_floats(count, [](size_t) { return -1.0f; });
  CUDA_OK(cudaSetDevice(ranks[0].dev));
  int can = 0;
  CUDA_OK(cudaDeviceCanAccessPeer(&can, ranks[0].dev, other));
  float two = 2.0f;
  ncclRedOp_t op;
  ASSERT_EQ(ncclRedOpCreatePreMulSum(&op, &two, ncclFloat32, ncclScalarHostImmediate, ranks[0].comm), ncclSuccess);
  const ncclResult_t r = ncclAllReduce(x, y, count, ncclFloat32, op, ranks[0].comm, ranks[0].stream);
  if (can) {
    EXPECT_EQ(r, ncclSuccess) << ncclGetLastError(ranks[0].comm);
    CUDA_OK(cudaStreamSynchronize(ranks[0].stream));
    CUDA_OK(cudaSetDevice(other));
    EXPECT_EQ(check_floats(y, count, [](size_t i) { return 2.0f * static_cast<float>(i % 11); }), "");
  } else {
    EXPECT_EQ(r, ncclInvalidArgument);
    EXPECT_NE(std::string(ncclGetLastError(ranks[0].comm)).find("cannot reach"), std::string::npos)
        << ncclGetLastError(ranks[0].comm);
  }
  CUDA_OK(cudaSetDevice(ranks[0].dev));
  EXPECT_EQ(ncclRedOpDestroy(op, ranks[0].comm), ncclSuccess);
  cudaFree(x);
  cudaSetDevice(other);
  cudaFree(y);
  free_ranks(ranks);
}

// Rank 1 never joins: rank 0's kernel waits for it; ncclCommAbort stops the kernel within seconds.
TEST(GpuCollectives, AbortStopsAStuckKernel) {
  std::vector<Rank> ranks = make_ranks(2);
  cudaSetDevice(ranks[0].dev);
  float* buf = nullptr;
  CUDA_OK(cudaMalloc(&buf, 1 << 20));
  ASSERT_EQ(ncclAllReduce(buf, buf, (1 << 20) / 4, ncclFloat32, ncclSum, ranks[0].comm, ranks[0].stream), ncclSuccess);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(cudaStreamQuery(ranks[0].stream), cudaErrorNotReady) << "rank 0 finished without rank 1";
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_EQ(ncclCommAbort(ranks[0].comm), ncclSuccess);
  CUDA_OK(cudaStreamSynchronize(ranks[0].stream));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  cudaFree(buf);
  cudaSetDevice(ranks[1].dev);
  EXPECT_EQ(ncclCommAbort(ranks[1].comm), ncclSuccess);
  for (auto& r : ranks) cudaStreamDestroy(r.stream);
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // Listing needs no device (the shards check of tests/gpu/CMakeLists.txt lists each ctest entry's tests).
  if (::testing::GTEST_FLAG(list_tests)) return RUN_ALL_TESTS();
  const cudaError_t e = cudaGetDeviceCount(&g_ndev);
  if (e != cudaSuccess || g_ndev == 0) {
    std::printf("SKIPPED: no CUDA device on this machine (%s); the GPU tests need one (docs/gpu.md)\n",
                e != cudaSuccess ? cudaGetErrorString(e) : "cudaGetDeviceCount returned 0");
    return 77;
  }
  return RUN_ALL_TESTS();
}
