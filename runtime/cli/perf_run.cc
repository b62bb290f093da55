// runtime/cli/perf_run.cc - the benchmark loop of `cclab perf`, following nccl-tests' TimeTest and
// BenchTime (src/common.cu): warm up every size, then per size an out-of-place and an in-place run,
// each timed over -n iterations of -m grouped collectives, then -c checked iterations on fresh data.
//
// Buffers from ncclMemAlloc are device memory on the CUDA backend: the host never dereferences them.
// Every read or write goes through a host vector and cclabMemcpy (setup and check only; the timed
// loop issues collectives and nothing else). Streams come from cclabStream*, which make real CUDA
// streams on the CUDA backend, so this file needs no CUDA header.
#include "perf_run.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "base/thread_barrier.h"
#include "cclab/cclab.h"
#include "perf_data.h"
#include "perf_report.h"

namespace cclab {
namespace {

// The run's bookkeeping between its ranks, outside the library it measures (nccl-tests uses MPI for
// it): rank threads of this process meet on a ThreadBarrier, and one of them exchanges the process's
// records with the other processes (ProcessContext::exchange). Every rank calls the same functions in
// the same order.
class Control {
 public:
  Control(const ProcessContext& ctx, int per_process)
      : ctx_(ctx), per_process_(per_process), barrier_(per_process),
        mine_(kPerfMaxRecordBytes * per_process), all_(kPerfMaxRecordBytes * per_process * ctx.nprocs) {}

  // Every rank's `bytes` (at most kPerfMaxRecordBytes) into `all`, in rank order; `local` is the
  // rank's index in this process.
  void allgather(int local, const void* mine, size_t bytes, void* all) {
    std::memcpy(mine_.data() + bytes * local, mine, bytes);
    barrier_.wait();  // this process's records are in
    if (local == 0) {
      if (ctx_.nprocs > 1)
        ctx_.exchange(mine_.data(), all_.data(), bytes * per_process_);
      else
        std::memcpy(all_.data(), mine_.data(), bytes * per_process_);
    }
    barrier_.wait();  // every process's records are in
    std::memcpy(all, all_.data(), bytes * per_process_ * ctx_.nprocs);
    barrier_.wait();  // read by all: the next call may overwrite
  }
  // Returns once every rank of the run has called it.
  void barrier(int local) {
    const char none = 0;
    std::vector<char> all(static_cast<size_t>(per_process_) * ctx_.nprocs);
    allgather(local, &none, 1, all.data());
  }

 private:
  const ProcessContext& ctx_;
  const int per_process_;
  ThreadBarrier barrier_;
  std::vector<unsigned char> mine_;  // this process's records
  std::vector<unsigned char> all_;   // the run's records
};

// One rank's entry in the device report, gathered through Control so that ranks in other processes
// are listed too (nccl-tests uses MPI_Gather for this).
struct RankRecord {
  int32_t rank;
  int32_t pid;
  int32_t device;   // the rank's device; -1 where the backend has none (host, sim)
  int32_t backend;  // cclabBackend_t
  char host[112];
  char bus_id[16];  // cclabGetDeviceName's: "0000:07:00.0", or empty
  char name[112];   // "NVIDIA H100 80GB HBM3", or "cclab host"
};
static_assert(sizeof(RankRecord) == kPerfMaxRecordBytes, "RankRecord is exchanged as 256 raw bytes");

// One table of the benchmark: a datatype, an op and a root.
struct Case {
  ncclDataType_t type;
  PerfOp op;
  const char* op_label;  // "none" for collectives without an op
  int root;              // printed root, -1 for collectives without one
  ncclRedOp_t nccl_op;
};

struct HalfResult {
  bool ran = false;
  double time_us = 0;
  Bandwidth bw;
  int64_t wrong = -1;       // elements wrong across all ranks; -1 when not checked (N/A)
  int64_t ranks_wrong = 0;  // ranks that saw at least one wrong element
};

ncclRedOp_t builtin_op(PerfOp op) {
  switch (op) {
    case PerfOp::kSum: return ncclSum;
    case PerfOp::kProd: return ncclProd;
    case PerfOp::kMax: return ncclMax;
    case PerfOp::kMin: return ncclMin;
    case PerfOp::kAvg: return ncclAvg;
    case PerfOp::kMulSum: return ncclSum;  // replaced by a PreMulSum op per rank
  }
  return ncclSum;
}

class RankRunner {
 public:
  RankRunner(const PerfOptions& options, const ProcessContext& ctx, int rank, int nranks, ThreadBarrier* local,
             Control* control)
      : o_(options), ctx_(ctx), rank_(rank), nranks_(nranks), local_index_(rank % options.ranks_per_process()),
        printer_(rank == 0), local_(local), control_(control) {
    cclabBackend_t backend = cclabBackendHost;
    cuda_ = cclabGetBackend(&backend) == ncclSuccess && backend == cclabBackendCuda;
  }

  // On the CUDA backend, cudaFree (and cudaMalloc, pinned allocations) may wait for every kernel on
  // the device: one rank's thread freeing memory while another rank of this process has launched a
  // collective that waits for it would wait forever (as with NCCL; seen on an H200: rank 1 in cudaFree
  // after the device report, rank 0's barrier all_reduce waiting for rank 1). So every buffer is
  // allocated before the first collective and freed after the last, and this process's ranks meet
  // before the first collective and before the frees.
  int run() {
    setup();
    local_->wait();
    report_devices();
    if (printer_) print(format_column_header());
    const bool has_op = collective_prints_op(o_.collective);
    const std::vector<PerfOp> ops = has_op ? o_.ops : std::vector<PerfOp>{PerfOp::kSum};
    std::vector<int> roots{-1};
    if (collective_has_root(o_.collective)) {
      roots.clear();
      for (int r = o_.root < 0 ? 0 : o_.root; r <= (o_.root < 0 ? nranks_ - 1 : o_.root); ++r) roots.push_back(r);
    }
    for (ncclDataType_t type : o_.types) {
      for (PerfOp op : ops) {
        for (int root : roots) run_case(Case{type, op, has_op ? op_name(op) : "none", root, builtin_op(op)});
      }
    }
    if (printer_) {
      const double avg_busbw = bw_count_ ? bw_sum_ / bw_count_ : 0.0;
      print(format_footer(error_count_, avg_busbw, collective_name(o_.collective)) + "\n");
    }
    local_->wait();
    teardown();
    return any_wrong_ ? kPerfExitWrong : kPerfExitOk;
  }

 private:
  // An NCCL call failed: the other ranks would wait for this one forever, so the run ends here.
  void check(ncclResult_t r, const char* what) {
    if (r == ncclSuccess) return;
    const char* last = ncclGetLastError(comm_);
    std::fprintf(stderr, "cclab perf: rank %d: %s failed: %s%s%s\n", rank_, what, ncclGetErrorString(r),
                 last && *last ? ": " : "", last ? last : "");
    std::fflush(stdout);
    std::fflush(stderr);
    if (ctx_.abort) ctx_.abort(kPerfExitRuntime);
    std::_Exit(kPerfExitRuntime);
  }

  void print(const std::string& text) {
    std::fputs(text.c_str(), stdout);
    std::fflush(stdout);  // progress stays visible, as nccl-tests' line-buffered stdout
  }

  // Host <-> ncclMemAlloc memory (device memory on the CUDA backend), synchronously.
  void to_device(void* dst, const void* src, size_t bytes) { check(cclabMemcpy(dst, src, bytes), "cclabMemcpy"); }
  void to_host(void* dst, const void* src, size_t bytes) { check(cclabMemcpy(dst, src, bytes), "cclabMemcpy"); }

  // A zeroed buffer from ncclMemAlloc.
  void* alloc(size_t bytes, const char* what) {
    void* p = nullptr;
    check(ncclMemAlloc(&p, bytes), what);
    const std::vector<unsigned char> zeros(bytes);
    to_device(p, zeros.data(), bytes);
    return p;
  }

  void setup() {
    // Rank r runs on device r % count, as nccl-tests' -g places its GPUs; the host and sim backends have
    // no devices (count 0). ncclCommInitRank, streams and ncclMemAlloc then use the thread's device.
    check(cclabGetDeviceCount(&ndev_), "cclabGetDeviceCount");
    if (ndev_ > 0) check(cclabSetDevice(rank_ % ndev_), "cclabSetDevice");
    check(ncclCommInitRank(&comm_, nranks_, ctx_.id, rank_), "ncclCommInitRank");
    // The host backend's NULL stream is blocking (-z 1). On CUDA the NULL stream is neither blocking
    // nor this rank's own (ranks sharing a GPU would serialise on it and wait for each other forever),
    // so every rank gets a stream there, and -z 1 synchronises it after each collective instead.
    if (o_.blocking == 0 || cuda_) check(cclabStreamCreate(&stream_), "cclabStreamCreate");
    sync_each_ = cuda_ && o_.blocking != 0;
    // Every collective's send and receive footprint is at most max_bytes (nccl-tests sizes them so).
    buf_bytes_ = std::max<size_t>(o_.max_bytes, 64);
    send_ = static_cast<char*>(alloc(buf_bytes_, "ncclMemAlloc"));
    recv_ = static_cast<char*>(alloc(buf_bytes_, "ncclMemAlloc"));
    expected_.resize(buf_bytes_);
    stage_.resize(buf_bytes_);
  }

  void teardown() {
    check(ncclMemFree(send_), "ncclMemFree");
    check(ncclMemFree(recv_), "ncclMemFree");
    if (stream_) check(cclabStreamDestroy(stream_), "cclabStreamDestroy");
    check(ncclCommDestroy(comm_), "ncclCommDestroy");
  }

  // The banner and one "#  Rank" line per rank of the run, printed by rank 0.
  void report_devices() {
    RankRecord mine{};
    mine.rank = rank_;
    mine.pid = static_cast<int32_t>(getpid());
    gethostname(mine.host, sizeof(mine.host) - 1);
    cclabBackend_t backend = cclabBackendHost;
    check(cclabGetBackend(&backend), "cclabGetBackend");
    mine.backend = static_cast<int32_t>(backend);
    mine.device = -1;
    int dev = 0;
    if (ndev_ > 0) {
      check(ncclCommCuDevice(comm_, &dev), "ncclCommCuDevice");
      mine.device = dev;
    }
    check(cclabGetDeviceName(dev, mine.name, sizeof(mine.name), mine.bus_id, sizeof(mine.bus_id)),
          "cclabGetDeviceName");
    std::vector<RankRecord> all(nranks_);
    control_->allgather(local_index_, &mine, sizeof(mine), all.data());
    if (printer_) {
      BannerInfo b;
      b.collective = collective_name(o_.collective);
      b.threads = o_.threads;
      b.gpus = o_.gpus;
      b.min_bytes = o_.min_bytes;
      b.max_bytes = o_.max_bytes;
      b.step_bytes = o_.step_bytes;
      b.step_factor = o_.step_factor;
      b.warmup_iters = o_.warmup_iters;
      b.iters = o_.iters;
      b.agg_iters = o_.agg_iters;
      b.check_iters = o_.check_iters;
      b.blocking = o_.blocking;
      ncclGetVersion(&b.library_version);
      std::string text = format_banner(b);
      for (int r = 0; r < nranks_; ++r) {
        RankInfo info;
        info.rank = all[r].rank;
        info.pid = all[r].pid;
        all[r].host[sizeof(all[r].host) - 1] = '\0';
        all[r].bus_id[sizeof(all[r].bus_id) - 1] = '\0';
        all[r].name[sizeof(all[r].name) - 1] = '\0';
        info.host = all[r].host;
        info.backend = cclabBackendName(static_cast<cclabBackend_t>(all[r].backend));
        info.bus_id = all[r].bus_id;
        info.device_name = all[r].name;
        if (all[r].device >= 0) {
          info.device = all[r].device;
        } else {  // no device: the rank's index among the ranks of its host
          for (int q = 0; q < r; ++q) info.device += std::strcmp(all[q].host, all[r].host) == 0;
        }
        text += format_rank_line(info);
      }
      print(text);
    }
  }

  void run_case(Case c) {
    if (c.op == PerfOp::kMulSum && collective_reduces(o_.collective)) {
      // Each rank scales its own input by its own scalar (1 or 2), read once at creation.
      uint64_t scalar = mulsum_scalar_bits(c.type, rank_);
      check(ncclRedOpCreatePreMulSum(&c.nccl_op, &scalar, c.type, ncclScalarHostImmediate, comm_),
            "ncclRedOpCreatePreMulSum");
    }
    const size_t elt = datatype_size(c.type);
    barrier();
    // Warm-up at every power-of-two size from min to max, out of place (nccl-tests 2.19).
    for (size_t size = o_.min_bytes; size <= o_.max_bytes;) {
      const CollCounts counts = coll_counts(o_.collective, size, elt, nranks_);
      for (int w = 0; w < o_.warmup_iters; ++w) {
        start(c, counts, false);
        issued();
      }
      complete();
      const size_t next = size == 0 ? 1 : size * 2;
      if (next <= size) break;
      size = next;
    }
    for (size_t size : size_sweep(o_)) {
      const CollCounts counts = coll_counts(o_.collective, size, elt, nranks_);
      std::string line =
          format_row_start(reported_bytes(counts, elt), counts.param_count, datatype_name(c.type), c.op_label, c.root);
      for (bool in_place : {false, true}) {
        const HalfResult h = bench(c, counts, in_place);
        if (!h.ran) {
          line += format_row_half_skipped();
          continue;
        }
        line += format_row_half(h.time_us, h.bw.algbw, h.bw.busbw, h.wrong);
        bw_sum_ += h.bw.busbw;
        ++bw_count_;
        error_count_ += h.ranks_wrong;
        any_wrong_ = any_wrong_ || h.wrong > 0;
      }
      if (printer_) print(line + "\n");
    }
    if (c.op == PerfOp::kMulSum && collective_reduces(o_.collective)) {
      check(ncclRedOpDestroy(c.nccl_op, comm_), "ncclRedOpDestroy");
    }
  }

  HalfResult bench(const Case& c, const CollCounts& counts, bool in_place) {
    HalfResult h;
    if (in_place && !runs_in_place(o_.collective)) return h;
    h.ran = true;
    // Deterministic data for the timed loop too, so every run computes on the same values.
    if (o_.check_iters > 0) prepare(c, counts, in_place, 99, false);
    start(c, counts, in_place);
    complete();
    barrier();

    const auto t0 = std::chrono::steady_clock::now();
    for (int iter = 0; iter < o_.iters; ++iter) {
      if (o_.agg_iters > 1) check(ncclGroupStart(), "ncclGroupStart");
      for (int a = 0; a < o_.agg_iters; ++a) {
        start(c, counts, in_place);
        if (o_.agg_iters == 1) issued();
      }
      if (o_.agg_iters > 1) {
        check(ncclGroupEnd(), "ncclGroupEnd");
        issued();
      }
    }
    complete();
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - t0;
    const double seconds = combine_time(elapsed.count() / (static_cast<double>(o_.iters) * o_.agg_iters));
    h.time_us = seconds * 1e6;
    h.bw = compute_bandwidth(o_.collective, counts.param_count, datatype_size(c.type), nranks_, seconds);

    if (o_.check_iters > 0 && reports_errors(o_.collective, in_place)) {
      h.wrong = 0;
      for (int k = 0; k < o_.check_iters; ++k) {
        ++check_rep_;  // every rank counts the same checks, so the seed agrees across ranks
        prepare(c, counts, in_place, check_rep_, true);
        start(c, counts, in_place);
        complete();
        const size_t elt = datatype_size(c.type);
        to_host(stage_.data(), recv_region(counts, in_place, elt), counts.recv_count * elt);
        const int64_t local = count_mismatches(stage_.data(), expected_.data(), counts.recv_count, elt);
        int64_t totals[2] = {local, local > 0 ? 1 : 0};
        sum_int64(totals, 2);
        h.wrong = totals[0];
        h.ranks_wrong = totals[1];
        if (h.wrong) break;
      }
    }
    return h;
  }

  char* send_ptr(const CollCounts& counts, bool in_place, size_t elt) {
    return in_place ? recv_ + counts.send_inplace_offset * rank_ * elt : send_;
  }
  // The receive region a rank's result lands in (nccl-tests' CheckData pointer).
  char* recv_region(const CollCounts& counts, bool in_place, size_t elt) {
    return in_place ? recv_ + counts.recv_inplace_offset * rank_ * elt : recv_;
  }

  // Zeroes the receive buffer, writes this rank's input (into its in-place slot when in place) and,
  // when `with_expected`, what the receive region must hold afterwards. Everything is built in stage_,
  // the host image of the buffers, and copied in.
  void prepare(const Case& c, const CollCounts& counts, bool in_place, uint64_t seed, bool with_expected) {
    const size_t elt = datatype_size(c.type);
    CheckSpec spec;
    spec.collective = o_.collective;
    spec.type = c.type;
    spec.op = c.op;
    spec.nranks = nranks_;
    spec.root = c.root < 0 ? 0 : c.root;
    spec.seed = seed;
    spec.counts = counts;
    // The receive buffer's first bytes: zeros, holding this rank's input in its slot when in place
    // (the slot lies within them: see coll_counts).
    const size_t recv_bytes = std::max(counts.send_count, counts.recv_count) * elt;
    unsigned char* image = stage_.data();
    std::memset(image, 0, recv_bytes);
    if (in_place) fill_input(spec, rank_, image + (send_ptr(counts, in_place, elt) - recv_));
    to_device(recv_, image, recv_bytes);
    if (with_expected) {
      std::memcpy(expected_.data(), image + (recv_region(counts, in_place, elt) - recv_), counts.recv_count * elt);
      fill_expected(spec, rank_, expected_.data());
    }
    if (!in_place) {
      fill_input(spec, rank_, image);
      to_device(send_, image, counts.send_count * elt);
    }
  }

  // Issues one collective of the case (nccl-tests' startColl, minus the buffer shift).
  void start(const Case& c, const CollCounts& counts, bool in_place) {
    const size_t elt = datatype_size(c.type);
    char* s = send_ptr(counts, in_place, elt);
    char* r = recv_region(counts, in_place, elt);
    const size_t n = counts.param_count;
    const int root = c.root < 0 ? 0 : c.root;
    switch (o_.collective) {
      case PerfCollective::kAllReduce:
        check(ncclAllReduce(s, r, n, c.type, c.nccl_op, comm_, stream_), "ncclAllReduce");
        break;
      case PerfCollective::kAllGather: check(ncclAllGather(s, r, n, c.type, comm_, stream_), "ncclAllGather"); break;
      case PerfCollective::kReduceScatter:
        check(ncclReduceScatter(s, r, n, c.type, c.nccl_op, comm_, stream_), "ncclReduceScatter");
        break;
      case PerfCollective::kBroadcast:
        check(ncclBroadcast(s, r, n, c.type, root, comm_, stream_), "ncclBroadcast");
        break;
      case PerfCollective::kReduce:
        check(ncclReduce(s, r, n, c.type, c.nccl_op, root, comm_, stream_), "ncclReduce");
        break;
      case PerfCollective::kAllToAll: check(ncclAlltoAll(s, r, n, c.type, comm_, stream_), "ncclAlltoAll"); break;
      case PerfCollective::kGather:
        if (n > 0) check(ncclGather(s, r, n, c.type, root, comm_, stream_), "ncclGather");  // nccl-tests skips 0
        break;
      case PerfCollective::kScatter:
        if (n > 0) check(ncclScatter(s, r, n, c.type, root, comm_, stream_), "ncclScatter");
        break;
      case PerfCollective::kSendRecv:
        // One group: send to the next rank, receive from the previous one (a ring shift).
        check(ncclGroupStart(), "ncclGroupStart");
        check(ncclSend(s, n, c.type, (rank_ + 1) % nranks_, comm_, stream_), "ncclSend");
        check(ncclRecv(r, n, c.type, (rank_ - 1 + nranks_) % nranks_, comm_, stream_), "ncclRecv");
        check(ncclGroupEnd(), "ncclGroupEnd");
        break;
    }
  }

  // Waits for everything issued so far (NULL stream: already complete when the call returned).
  void complete() {
    if (stream_) check(cclabStreamSynchronize(stream_), "cclabStreamSynchronize");
  }

  // After each benchmark collective (or aggregated group) at top level: -z 1 on CUDA waits for it,
  // as the host backend's NULL stream does (nccl-tests' blocking_coll).
  void issued() {
    if (sync_each_) complete();
  }

  // The ranks meet (bench's and run_case's barrier before timing; nccl-tests' Barrier).
  void barrier() { control_->barrier(local_index_); }

  // -a: 0 rank 0's time, 1 mean, 2 min, 3 max over every rank of the run. Combined in rank order, so
  // every rank computes the same value.
  double combine_time(double seconds) {
    std::vector<double> all(nranks_);
    control_->allgather(local_index_, &seconds, sizeof(seconds), all.data());
    double v = all[0];
    for (int r = 1; r < nranks_; ++r) {
      if (o_.average == 1) v += all[r];
      if (o_.average == 2) v = std::min(v, all[r]);
      if (o_.average == 3) v = std::max(v, all[r]);
    }
    return o_.average == 1 ? v / nranks_ : v;
  }

  // values[0..n-1] summed over every rank of the run (n at most 2).
  void sum_int64(int64_t* values, int n) {
    int64_t mine[2] = {n > 0 ? values[0] : 0, n > 1 ? values[1] : 0};
    std::vector<int64_t> all(2 * static_cast<size_t>(nranks_));
    control_->allgather(local_index_, mine, sizeof(mine), all.data());
    for (int i = 0; i < n; ++i) {
      values[i] = 0;
      for (int r = 0; r < nranks_; ++r) values[i] += all[2 * static_cast<size_t>(r) + i];
    }
  }

  const PerfOptions& o_;
  const ProcessContext& ctx_;
  const int rank_;
  const int nranks_;
  const int local_index_;  // this rank's index among its process's ranks
  const bool printer_;
  ThreadBarrier* const local_;
  Control* const control_;
  ncclComm_t comm_ = nullptr;
  int ndev_ = 0;            // cclabGetDeviceCount: 0 on the host and sim backends
  bool cuda_ = false;       // the CUDA backend: buffers are device memory, the NULL stream is not blocking
  bool sync_each_ = false;  // -z 1 on CUDA: synchronise stream_ after each benchmark collective
  cudaStream_t stream_ = nullptr;
  size_t buf_bytes_ = 0;
  char* send_ = nullptr;  // ncclMemAlloc: never dereferenced on the host
  char* recv_ = nullptr;
  std::vector<unsigned char> expected_;
  std::vector<unsigned char> stage_;  // host image of send_/recv_: inputs on their way in, results on their way out
  uint64_t check_rep_ = 0;
  // Totals over the run; identical on every rank, since they come from all-reduced values.
  double bw_sum_ = 0;
  int bw_count_ = 0;
  int64_t error_count_ = 0;
  bool any_wrong_ = false;
};

}  // namespace

int run_perf(const PerfOptions& options, const ProcessContext& ctx) {
  const int per_process = options.ranks_per_process();
  const int nranks = ctx.nprocs * per_process;
  if (collective_has_root(options.collective) && options.root >= nranks) {
    if (ctx.proc == 0) {
      std::fprintf(stderr, "cclab perf: -r/--root %d is not a rank of this run (%d ranks: 0..%d)\n", options.root,
                   nranks, nranks - 1);
    }
    return kPerfExitUsage;
  }
  std::vector<int> status(per_process, kPerfExitOk);
  std::vector<std::thread> threads;
  ThreadBarrier local(per_process);
  Control control(ctx, per_process);
  for (int i = 0; i < per_process; ++i) {
    threads.emplace_back([&, i] {
      RankRunner runner(options, ctx, ctx.proc * per_process + i, nranks, &local, &control);
      status[i] = runner.run();
    });
  }
  for (auto& t : threads) t.join();
  return *std::max_element(status.begin(), status.end());
}

}  // namespace cclab
