// bench/soak.cc - cclab_soak: random collectives on the host backend, every result checked byte-exact.
//
// A program written as a user would, against nccl.h and cclab/cclab.h only. Each rank is a thread of
// one process (or, with --procs, a process of its own); every rank runs the same seeded PRNG, so all
// agree on what comes next without talking, and each checks its own output against a reference it
// computes from the inputs every rank generates from the same seed.
//
// Each iteration is one ncclGroupStart/End of 1..4 operations on the current communicator: all_reduce,
// all_gather, reduce_scatter, broadcast, reduce, gather, scatter, ncclAlltoAll, send/recv to a shifted
// peer, an alltoall made of grouped send/recv; any of the 12 datatypes; sum, prod, max, min, avg or a
// ncclRedOpCreatePreMulSum op (scalar on the host or in memory); any root; counts from 0 up to a few
// MiB, log-distributed; in place or out of place; the NULL stream or a host stream. Every few hundred
// iterations the communicator is replaced: 2..8 ranks, by ncclCommInitRank with a fresh unique id or by
// ncclCommSplit of a communicator of all ranks (a random subset, a random rank order), or all ranks.
//
// Algorithms and protocols: cclab reads NCCL_ALGO and NCCL_PROTO once per process, so the run is split
// into phases, each a child process with its own setting (unset, Ring/Tree x LL/LL128/Simple, mixed
// per-collective lists); within a phase the tuner picks among what is enabled per size.
//
// Inputs make every result exact in any reduction order: integers are random bits (sums and products
// wrap modulo 2^bits, which does not depend on the order), floating point values are small integers
// (and +-1, +-2, 1/2 for products), PreMulSum scalars are powers of two, and a floating point average
// is only drawn when the rank count is a power of two (1/nranks exact).
//
// Also checked: send buffers of out-of-place operations are not written, nothing is written past the
// end of a receive buffer (64 guard bytes), a non-root's out-of-place reduce receive buffer is untouched.
//
//   cclab_soak [--ops N] [--seed S] [--ranks MAX] [--phases P] [--procs] [--max-bytes B]
//              [--max-rss-growth-mib M] [--max-heap-growth-mib M] [--epoch ITERS] [--progress SEC] [--inline]
//
// Prints the seed (rerun with --seed to reproduce), progress, ops/s, wrong results and VmRSS/VmHWM at
// the start, after warm-up (the first communicator change after 10% of the phase's operations, at most
// 2000) and at the end of each phase; warm-up and end are taken between communicators, when none is
// alive, after malloc_trim(0), so they compare the same state. Exit status: 0 when every byte was right and
// nothing failed, 1 on a wrong result, 2 on an NCCL error or a crash, 3 when the RSS or malloc's bytes in
// use (mallinfo2) grew past --max-rss-growth-mib / --max-heap-growth-mib between warm-up and the end of
// a phase, 64 on bad usage.
#include <nccl.h>
#include <cclab/cclab.h>

#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

// ---- Options ----------------------------------------------------------------------------------------
struct Options {
  uint64_t ops = 10000;
  uint64_t seed = 0;
  bool seed_given = false;
  int max_ranks = 8;
  int phases = 8;
  bool procs = false;
  bool inline_run = false;  // one phase in this process (no fork), environment as inherited
  size_t max_bytes = 4u << 20;
  double max_rss_growth_mib = -1;  // < 0: report only
  double max_heap_growth_mib = -1; // the same for malloc's bytes in use (mallinfo2)
  double progress_s = 10;          // seconds between progress lines
  int epoch = 400;                 // most iterations (groups) on one communicator
};

// ---- PRNG -------------------------------------------------------------------------------------------
inline uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed) {}
  uint64_t next() { return splitmix(s++); }
  uint64_t below(uint64_t n) { return n ? next() % n : 0; }
  int range(int lo, int hi) { return lo + static_cast<int>(below(static_cast<uint64_t>(hi - lo + 1))); }
  bool chance(int percent) { return below(100) < static_cast<uint64_t>(percent); }
};

// ---- Datatypes --------------------------------------------------------------------------------------
const char* type_name(ncclDataType_t t) {
  static const char* names[] = {"int8", "uint8", "int32", "uint32", "int64", "uint64",
                                "half", "float", "double", "bfloat16", "fp8e4m3", "fp8e5m2"};
  return names[t];
}
const char* op_name(int op) {
  static const char* names[] = {"sum", "prod", "max", "min", "avg", "premulsum"};
  return names[op];
}
// Bytes per element (nccl.h declares no such helper; the soak uses the public API alone).
size_t type_size(ncclDataType_t t) {
  static const size_t sizes[ncclNumTypes] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  return sizes[t];
}
bool is_float(ncclDataType_t t) {
  return t == ncclFloat16 || t == ncclFloat32 || t == ncclFloat64 || t == ncclBfloat16 || t == ncclFloat8e4m3 ||
         t == ncclFloat8e5m2;
}
bool is_signed_int(ncclDataType_t t) { return t == ncclInt8 || t == ncclInt32 || t == ncclInt64; }

// Bits of a value that is exactly representable in a small float format (sign, ebits, mbits, IEEE-style
// bias, subnormals). Aborts when it is not: the inputs are chosen so it always is.
uint64_t encode_small_float(double v, int ebits, int mbits) {
  const int bias = (1 << (ebits - 1)) - 1;
  uint64_t sign = std::signbit(v) ? 1ull << (ebits + mbits) : 0;
  double a = std::fabs(v);
  if (a == 0) return sign;
  int e = std::ilogb(a);
  uint64_t exp_field, mant;
  double m;
  if (e < 1 - bias) {  // subnormal
    exp_field = 0;
    m = std::ldexp(a, -(1 - bias) + mbits);
  } else {
    exp_field = static_cast<uint64_t>(e + bias);
    m = std::ldexp(a, -e + mbits) - std::ldexp(1.0, mbits);
  }
  if (m != std::floor(m) || exp_field >= (1ull << ebits)) {
    fprintf(stderr, "cclab_soak: internal error: %g is not exact in e%dm%d\n", v, ebits, mbits);
    abort();
  }
  mant = static_cast<uint64_t>(m);
  return sign | (exp_field << mbits) | mant;
}

// The bits of v (exact) as datatype t, in the low type_size(t) bytes.
uint64_t float_bits(double v, ncclDataType_t t) {
  switch (t) {
    case ncclFloat32: { float f = static_cast<float>(v); uint32_t b; memcpy(&b, &f, 4); return b; }
    case ncclFloat64: { uint64_t b; memcpy(&b, &v, 8); return b; }
    case ncclFloat16: return encode_small_float(v, 5, 10);
    case ncclBfloat16: return encode_small_float(v, 8, 7);
    case ncclFloat8e4m3: return encode_small_float(v, 4, 3);
    default: return encode_small_float(v, 5, 2);  // e5m2
  }
}

// Largest magnitude of a floating point input, so that every partial sum of up to 8 ranks' inputs
// times a PreMulSum scalar up to 4 stays an integer multiple of a power of two the format holds exactly.
double float_amplitude(ncclDataType_t t) {
  switch (t) {
    case ncclFloat8e4m3: return 2;   // |sum| <= 16: 4 significant bits
    case ncclFloat8e5m2: return 1;   // |sum| <= 8: 3 significant bits
    case ncclBfloat16: return 16;    // <= 128: 8 bits
    case ncclFloat16: return 127;    // <= 1016: 11 bits
    case ncclFloat32: return 1 << 20;
    default: return static_cast<double>(1ull << 40);
  }
}

// ---- One operation ----------------------------------------------------------------------------------
enum Kind { kAllReduce, kAllGather, kReduceScatter, kBroadcast, kReduce, kGather, kScatter, kAlltoAll,
            kSendRecv, kAlltoAllP2P, kNumKinds };
const char* kind_name(int k) {
  static const char* names[] = {"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce",
                                "gather", "scatter", "alltoall", "sendrecv", "alltoall_p2p"};
  return names[k];
}
enum OpSel { kSum, kProd, kMax, kMin, kAvg, kPreMul };

struct OpPlan {
  Kind kind;
  ncclDataType_t type;
  int op;               // OpSel
  int root;             // broadcast/reduce/gather/scatter; shift for sendrecv
  size_t count;         // NCCL's count argument
  bool in_place;
  uint64_t data_seed;   // inputs: gen(data_seed, rank, index)
  double scalar;        // PreMulSum, floating point types
  uint64_t scalar_int;  // PreMulSum, integer types (bits)
  bool scalar_device;   // ncclScalarDevice (scalar in memory) vs ncclScalarHostImmediate
};

// Element counts of the send and receive buffers of rank `rank` (n ranks).
void buffer_counts(const OpPlan& p, int n, int rank, size_t* send, size_t* recv) {
  const size_t c = p.count;
  switch (p.kind) {
    case kAllReduce: case kBroadcast: case kSendRecv: *send = c; *recv = c; break;
    case kReduce: *send = c; *recv = c; break;
    case kAllGather: *send = c; *recv = c * n; break;
    case kReduceScatter: *send = c * n; *recv = c; break;
    case kGather: *send = c; *recv = rank == p.root ? c * n : 0; break;
    case kScatter: *send = rank == p.root ? c * n : 0; *recv = c; break;
    default: *send = c * n; *recv = c * n; break;  // alltoall
  }
}

// Input element `idx` of rank `r` as a double (floats) or bits (integers).
uint64_t gen_bits(const OpPlan& p, int r, size_t idx) {
  return splitmix(p.data_seed ^ (static_cast<uint64_t>(r) << 48) ^ (idx * 0x632be59bd9b4e019ull));
}
double gen_float(const OpPlan& p, int r, size_t idx) {
  const uint64_t h = gen_bits(p, r, idx);
  if (p.op == kProd) {
    static const double vals[] = {1, -1, 2, -2, 0.5, 1, -1, 1};
    const bool fp8 = p.type == ncclFloat8e4m3 || p.type == ncclFloat8e5m2;
    return vals[h % (fp8 ? 4 : 8)];
  }
  const int64_t a = static_cast<int64_t>(float_amplitude(p.type));
  return static_cast<double>(static_cast<int64_t>(h % static_cast<uint64_t>(2 * a + 1)) - a);
}
// The input element as the type's bits.
uint64_t input_bits(const OpPlan& p, int r, size_t idx) {
  if (is_float(p.type)) return float_bits(gen_float(p, r, idx), p.type);
  const size_t sz = type_size(p.type);
  const uint64_t h = gen_bits(p, r, idx);
  return sz == 8 ? h : h & ((1ull << (8 * sz)) - 1);
}

int64_t sign_extend(uint64_t v, size_t sz) {
  if (sz == 8) return static_cast<int64_t>(v);
  const int shift = 64 - 8 * static_cast<int>(sz);
  return static_cast<int64_t>(v << shift) >> shift;
}

// The reduction over ranks 0..n-1 of input element `idx`, as the type's bits.
uint64_t reduce_bits(const OpPlan& p, int n, size_t idx) {
  const size_t sz = type_size(p.type);
  const uint64_t mask = sz == 8 ? ~0ull : (1ull << (8 * sz)) - 1;
  if (is_float(p.type)) {
    double acc = 0;
    for (int r = 0; r < n; ++r) {
      double x = gen_float(p, r, idx);
      if (p.op == kPreMul) x *= p.scalar;
      if (p.op == kAvg) x /= n;  // n is a power of two here
      if (r == 0) { acc = x; continue; }
      switch (p.op) {
        case kProd: acc *= x; break;
        case kMax: acc = std::max(acc, x); break;
        case kMin: acc = std::min(acc, x); break;
        default: acc += x; break;
      }
    }
    return float_bits(acc, p.type);
  }
  const bool sgn = is_signed_int(p.type);
  uint64_t acc = 0;
  for (int r = 0; r < n; ++r) {
    uint64_t x = input_bits(p, r, idx);
    if (p.op == kPreMul) x = (x * p.scalar_int) & mask;
    if (r == 0) { acc = x; continue; }
    switch (p.op) {
      case kProd: acc = (acc * x) & mask; break;
      case kMax:
        acc = sgn ? (sign_extend(x, sz) > sign_extend(acc, sz) ? x : acc) : std::max(acc, x);
        break;
      case kMin:
        acc = sgn ? (sign_extend(x, sz) < sign_extend(acc, sz) ? x : acc) : std::min(acc, x);
        break;
      default: acc = (acc + x) & mask; break;
    }
  }
  if (p.op == kAvg)
    acc = sgn ? static_cast<uint64_t>(sign_extend(acc, sz) / n) & mask : acc / static_cast<uint64_t>(n);
  return acc;
}

void store(void* buf, size_t idx, size_t sz, uint64_t bits) { memcpy(static_cast<char*>(buf) + idx * sz, &bits, sz); }
uint64_t load(const void* buf, size_t idx, size_t sz) {
  uint64_t v = 0;
  memcpy(&v, static_cast<const char*>(buf) + idx * sz, sz);
  return v;
}

// ---- Shared state between ranks (threads, or processes through MAP_SHARED memory) ---------------------
struct Shared {
  pthread_barrier_t barrier;
  ncclUniqueId id;
  // Per-rank results, summed by the phase.
  struct PerRank {
    uint64_t ops, wrong_ops, wrong_elems;
  } per_rank[64];
};

// heap_kib: what malloc has handed out and not got back, to tell memory in use from memory the allocator
// keeps: glibc's mallinfo2 (arenas + mmapped chunks), or under a sanitizer, whose allocator replaces
// glibc's, the sanitizer's own count (its quarantine of freed blocks adds to VmRSS, not to this).
extern "C" size_t __sanitizer_get_current_allocated_bytes() __attribute__((weak));
struct RssSample { long rss_kib = 0, hwm_kib = 0, heap_kib = 0; };
RssSample read_rss() {
  RssSample s;
  if (&__sanitizer_get_current_allocated_bytes != nullptr) {
    s.heap_kib = static_cast<long>(__sanitizer_get_current_allocated_bytes() / 1024);
  } else {
    const struct mallinfo2 mi = mallinfo2();
    s.heap_kib = static_cast<long>((mi.uordblks + mi.hblkhd) / 1024);
  }
  FILE* f = fopen("/proc/self/status", "r");
  if (!f) return s;
  char line[256];
  while (fgets(line, sizeof line, f)) {
    if (strncmp(line, "VmRSS:", 6) == 0) s.rss_kib = strtol(line + 6, nullptr, 10);
    if (strncmp(line, "VmHWM:", 6) == 0) s.hwm_kib = strtol(line + 6, nullptr, 10);
  }
  fclose(f);
  return s;
}

struct PhaseResult {
  uint64_t ops = 0, wrong_ops = 0, wrong_elems = 0, errors = 0, comms = 0, splits = 0;
  double seconds = 0, seconds_after_warm = 0;
  // VmRSS/VmHWM at the start, at the first epoch boundary after warm-up and at the last one (no
  // communicator alive at either).
  RssSample start, warm, end;
  uint64_t warm_ops = 0;
};

constexpr size_t kGuard = 64;      // bytes after each receive buffer that must stay untouched
constexpr uint8_t kFill = 0xa5;    // what receive buffers hold before the operation

#define SOAK_CHECK(call)                                                                           \
  do {                                                                                             \
    ncclResult_t res_ = (call);                                                                    \
    if (res_ != ncclSuccess && res_ != ncclInProgress) {                                           \
      fprintf(stderr, "cclab_soak: rank %d: %s failed: %s (%s)\n", wrank, #call,                    \
              ncclGetErrorString(res_), ncclGetLastError(nullptr));                                \
      fflush(stderr);                                                                              \
      _exit(2); /* the other ranks wait in their collective: stop them all */                    \
    }                                                                                              \
  } while (0)

class RankRunner {
 public:
  RankRunner(const Options& o, Shared* sh, int wrank, int world, uint64_t seed, uint64_t ops, PhaseResult* res,
             int phase)
      : o_(o), sh_(sh), wrank(wrank), world_(world), seed_(seed), ops_(ops), res_(res), phase_(phase) {}

  bool run();

 private:
  bool barrier() {
    pthread_barrier_wait(&sh_->barrier);
    return true;
  }
  // An error: the other ranks may wait in a collective this rank will not join, so the phase stops.
  [[noreturn]] void fail() {
    fflush(stdout);
    fflush(stderr);
    _exit(2);
  }
  OpPlan draw_op(Rng& rng, int n);
  bool run_group(Rng& rng, ncclComm_t comm, int n, int me, cudaStream_t stream, uint64_t iter, uint64_t* drawn);
  bool check(const OpPlan& p, int n, int me, const void* send, const void* recv, size_t nsend, size_t nrecv,
             const std::vector<uint8_t>& send_copy, uint64_t iter);

  const Options& o_;
  Shared* sh_;
  int wrank;
  int world_;
  uint64_t seed_;
  uint64_t ops_;
  PhaseResult* res_;
  int phase_;
  int reported_ = 0;
};

OpPlan RankRunner::draw_op(Rng& rng, int n) {
  OpPlan p{};
  // Weights: the collectives NCCL programs use most come up most.
  static const int weights[kNumKinds] = {22, 12, 12, 10, 10, 5, 5, 6, 10, 8};
  int w = static_cast<int>(rng.below(100));
  int k = 0;
  while (k < kNumKinds - 1 && w >= weights[k]) w -= weights[k++];
  p.kind = static_cast<Kind>(k);
  p.type = static_cast<ncclDataType_t>(rng.below(ncclNumTypes));
  p.op = static_cast<int>(rng.below(6));
  const bool pow2 = (n & (n - 1)) == 0;
  if (p.op == kAvg && is_float(p.type) && !pow2) p.op = kSum;  // 1/n inexact: order would matter
  p.root = static_cast<int>(rng.below(static_cast<uint64_t>(n)));
  // In-place alltoall is not NCCL's (cclab refuses it), nor is a send/recv from and into one buffer.
  p.in_place = rng.chance(40) && p.kind != kAlltoAll && p.kind != kAlltoAllP2P && p.kind != kSendRecv;
  // Bytes per rank buffer: 0 sometimes, else log-distributed; large sizes rarely.
  const size_t sz = type_size(p.type);
  size_t bytes_cap = rng.chance(1) ? o_.max_bytes : rng.chance(10) ? std::min<size_t>(o_.max_bytes, 1 << 20)
                                                                    : std::min<size_t>(o_.max_bytes, 64 << 10);
  const bool split = p.kind == kAllGather || p.kind == kReduceScatter || p.kind == kGather || p.kind == kScatter ||
                     p.kind == kAlltoAll || p.kind == kAlltoAllP2P;
  if (split) bytes_cap /= static_cast<size_t>(n);
  const size_t max_count = std::max<size_t>(1, bytes_cap / sz);
  if (rng.chance(3)) {
    p.count = 0;
  } else if (rng.chance(5)) {
    p.count = 1;
  } else {
    const double lg = std::log2(static_cast<double>(max_count));
    p.count = static_cast<size_t>(std::exp2(lg * static_cast<double>(rng.below(1 << 20)) / (1 << 20)));
    if (rng.chance(30)) p.count |= 1;  // odd
    p.count = std::min(std::max<size_t>(p.count, 1), max_count);
  }
  p.data_seed = rng.next();
  static const double scalars[] = {1, 2, -1, 0.5, 4, -2, 0.25, -0.5};
  p.scalar = scalars[rng.below(8)];
  p.scalar_int = rng.next();
  p.scalar_device = rng.chance(50);
  return p;
}

bool RankRunner::check(const OpPlan& p, int n, int me, const void* send, const void* recv, size_t nsend,
                       size_t nrecv, const std::vector<uint8_t>& send_copy, uint64_t iter) {
  const size_t sz = type_size(p.type);
  const size_t c = p.count;
  uint64_t wrong = 0;
  auto bad = [&](const char* what, size_t idx, uint64_t want, uint64_t got) {
    if (++wrong > 1 || reported_ >= 10) return;
    ++reported_;
    fprintf(stderr,
            "cclab_soak: WRONG phase %d iter %" PRIu64 " rank %d/%d: %s %s %s count %zu root %d %s: %s[%zu] = "
            "0x%" PRIx64 ", expected 0x%" PRIx64 " (reproduce: --seed %" PRIu64 ", phase %d)\n",
            phase_, iter, me, n, kind_name(p.kind), type_name(p.type), op_name(p.op), c, p.root,
            p.in_place ? "in place" : "out of place", what, idx, got, want, o_.seed, phase_);
  };
  // What the receive buffer should hold, element by element.
  auto expect = [&](size_t j) -> uint64_t {
    switch (p.kind) {
      case kAllReduce: return reduce_bits(p, n, j);
      case kReduce: return reduce_bits(p, n, j);  // the root's (a non-root's is checked below)
      case kReduceScatter: return reduce_bits(p, n, static_cast<size_t>(me) * c + j);
      case kAllGather: case kGather: return input_bits(p, static_cast<int>(j / c), j % c);
      case kBroadcast: return input_bits(p, p.root, j);
      case kScatter: return input_bits(p, p.root, static_cast<size_t>(me) * c + j);
      case kSendRecv: return input_bits(p, ((me - p.root) % n + n) % n, j);
      default: return input_bits(p, static_cast<int>(j / c), static_cast<size_t>(me) * c + j % c);
    }
  };
  const uint8_t* rb = static_cast<const uint8_t*>(recv);
  size_t check_elems = nrecv;
  const bool untouched = p.kind == kReduce && me != p.root && !p.in_place;
  if (untouched) {
    for (size_t b = 0; b < nrecv * sz; ++b)
      if (rb[b] != kFill) { bad("non-root recvbuff", b, kFill, rb[b]); break; }
    check_elems = 0;
  }
  if (p.kind == kReduce && me != p.root && p.in_place) check_elems = 0;  // NCCL leaves it undefined
  for (size_t j = 0; j < check_elems; ++j) {
    const uint64_t want = expect(j);
    const uint64_t got = load(recv, j, sz);
    if (got != want) bad("recvbuff", j, want, got);
  }
  // Guard bytes after the receive buffer (the in-place buffer is the larger of the two).
  const size_t rbytes = (p.in_place ? std::max(nsend, nrecv) : nrecv) * sz;
  const uint8_t* gb = static_cast<const uint8_t*>(p.in_place && nsend > nrecv ? send : recv) + rbytes;
  for (size_t b = 0; b < kGuard; ++b)
    if (gb[b] != kFill) { bad("guard byte", b, kFill, gb[b]); break; }
  // Out of place, the send buffer stays as it was.
  if (!p.in_place && nsend > 0 && memcmp(send, send_copy.data(), nsend * sz) != 0) {
    size_t b = 0;
    while (static_cast<const uint8_t*>(send)[b] == send_copy[b]) ++b;
    bad("sendbuff (written)", b, send_copy[b], static_cast<const uint8_t*>(send)[b]);
  }
  if (wrong) {
    sh_->per_rank[wrank].wrong_ops++;
    sh_->per_rank[wrank].wrong_elems += wrong;
  }
  return true;
}

struct Buffers {
  void* send = nullptr;
  void* recv = nullptr;
  void* base = nullptr;  // what was allocated (the in-place buffer, or send and recv in one block)
  size_t nsend = 0, nrecv = 0;
  std::vector<uint8_t> send_copy;
  void* scalar = nullptr;
  ncclRedOp_t redop = ncclSum;
  bool dyn_op = false;
};

bool RankRunner::run_group(Rng& rng, ncclComm_t comm, int n, int me, cudaStream_t stream, uint64_t iter,
                           uint64_t* drawn) {
  const int nops = rng.chance(50) ? 1 : rng.range(2, 4);
  std::vector<OpPlan> plans;
  for (int i = 0; i < nops; ++i) plans.push_back(draw_op(rng, n));
  *drawn = plans.size();
  if (comm == nullptr) return true;  // not a member of this epoch's communicator: same draws, no work

  std::vector<Buffers> bufs(plans.size());
  for (size_t i = 0; i < plans.size(); ++i) {
    const OpPlan& p = plans[i];
    Buffers& b = bufs[i];
    const size_t sz = type_size(p.type);
    buffer_counts(p, n, me, &b.nsend, &b.nrecv);
    // In place: one buffer of the larger size; the send part sits where NCCL says.
    const size_t main_elems = p.in_place ? std::max(b.nsend, b.nrecv) : b.nsend + b.nrecv;
    void* mem = nullptr;
    SOAK_CHECK(ncclMemAlloc(&mem, main_elems * sz + kGuard));
    b.base = mem;
    memset(mem, kFill, main_elems * sz + kGuard);
    char* m = static_cast<char*>(mem);
    if (p.in_place) {
      const size_t c = p.count;
      switch (p.kind) {
        case kAllGather: case kGather: b.recv = m; b.send = m + static_cast<size_t>(me) * c * sz; break;
        case kReduceScatter: case kScatter: b.send = m; b.recv = m + static_cast<size_t>(me) * c * sz; break;
        default: b.send = m; b.recv = m; break;
      }
      if (p.kind == kGather && me != p.root) b.recv = m, b.send = m;  // only the root's recvbuff exists
      if (p.kind == kScatter && me != p.root) b.send = m, b.recv = m;
    } else {
      b.send = m;
      b.recv = m + b.nsend * sz;  // the guard bytes follow the receive buffer
    }
    for (size_t j = 0; j < (p.kind == kBroadcast && me != p.root ? 0 : b.nsend); ++j)
      store(b.send, j, sz, input_bits(p, me, j));
    if (!p.in_place) b.send_copy.assign(static_cast<uint8_t*>(b.send), static_cast<uint8_t*>(b.send) + b.nsend * sz);
    if (p.op == kPreMul && p.kind != kAllGather && p.kind != kBroadcast && p.kind < kGather) {
      uint64_t bits = is_float(p.type) ? float_bits(p.scalar, p.type) : p.scalar_int;
      if (p.scalar_device) {
        SOAK_CHECK(ncclMemAlloc(&b.scalar, 8));
        memcpy(b.scalar, &bits, sz);
        SOAK_CHECK(ncclRedOpCreatePreMulSum(&b.redop, b.scalar, p.type, ncclScalarDevice, comm));
      } else {
        SOAK_CHECK(ncclRedOpCreatePreMulSum(&b.redop, &bits, p.type, ncclScalarHostImmediate, comm));
      }
      b.dyn_op = true;
    } else {
      b.redop = p.op == kPreMul ? ncclSum : static_cast<ncclRedOp_t>(p.op);
      if (p.op == kPreMul) plans[i].op = kSum;
    }
  }

  SOAK_CHECK(ncclGroupStart());
  for (size_t i = 0; i < plans.size(); ++i) {
    const OpPlan& p = plans[i];
    Buffers& b = bufs[i];
    const size_t c = p.count, sz = type_size(p.type);
    switch (p.kind) {
      case kAllReduce: SOAK_CHECK(ncclAllReduce(b.send, b.recv, c, p.type, b.redop, comm, stream)); break;
      case kAllGather: SOAK_CHECK(ncclAllGather(b.send, b.recv, c, p.type, comm, stream)); break;
      case kReduceScatter: SOAK_CHECK(ncclReduceScatter(b.send, b.recv, c, p.type, b.redop, comm, stream)); break;
      case kBroadcast: SOAK_CHECK(ncclBroadcast(b.send, b.recv, c, p.type, p.root, comm, stream)); break;
      case kReduce: SOAK_CHECK(ncclReduce(b.send, b.recv, c, p.type, b.redop, p.root, comm, stream)); break;
      case kGather: SOAK_CHECK(ncclGather(b.send, b.recv, c, p.type, p.root, comm, stream)); break;
      case kScatter: SOAK_CHECK(ncclScatter(b.send, b.recv, c, p.type, p.root, comm, stream)); break;
      case kAlltoAll: SOAK_CHECK(ncclAlltoAll(b.send, b.recv, c, p.type, comm, stream)); break;
      case kSendRecv: {
        const int shift = p.root;  // 0: to itself
        SOAK_CHECK(ncclSend(b.send, c, p.type, (me + shift) % n, comm, stream));
        SOAK_CHECK(ncclRecv(b.recv, c, p.type, ((me - shift) % n + n) % n, comm, stream));
        break;
      }
      case kAlltoAllP2P:
        for (int peer = 0; peer < n; ++peer) {
          SOAK_CHECK(ncclSend(static_cast<char*>(b.send) + static_cast<size_t>(peer) * c * sz, c, p.type, peer, comm,
                              stream));
          SOAK_CHECK(ncclRecv(static_cast<char*>(b.recv) + static_cast<size_t>(peer) * c * sz, c, p.type, peer, comm,
                              stream));
        }
        break;
      default: break;
    }
  }
  SOAK_CHECK(ncclGroupEnd());
  if (stream != nullptr) SOAK_CHECK(cclabStreamSynchronize(stream));

  for (size_t i = 0; i < plans.size(); ++i) {
    Buffers& b = bufs[i];
    check(plans[i], n, me, b.send, b.recv, b.nsend, b.nrecv, b.send_copy, iter);
    if (b.dyn_op) SOAK_CHECK(ncclRedOpDestroy(b.redop, comm));
    SOAK_CHECK(ncclMemFree(b.scalar));
    SOAK_CHECK(ncclMemFree(b.base));
  }
  sh_->per_rank[wrank].ops += plans.size();
  return true;
}

bool RankRunner::run() {
  SOAK_CHECK(cclabSetBackend(cclabBackendHost));
  const bool lead = wrank == 0;
  auto now = [] { return std::chrono::steady_clock::now(); };
  if (lead) res_->start = read_rss();

  Rng rng(seed_);
  const uint64_t warm_at = std::min<uint64_t>(ops_ / 10, 2000);
  auto t0 = now();
  auto last_print = t0, t_warm = t0;
  uint64_t done = 0, iter = 0;
  bool warm_done = false;
  while (done < ops_) {
    // A new communicator for the next epoch.
    const int n = rng.range(2, world_);
    // 0: ncclCommInitRank of n ranks; 1: ncclCommSplit of all ranks' communicator; 2: all ranks.
    const int how = static_cast<int>(rng.below(3));
    const bool keep_parent = rng.chance(50);
    std::vector<int> order(static_cast<size_t>(world_));
    for (int i = 0; i < world_; ++i) order[static_cast<size_t>(i)] = i;
    for (int i = world_ - 1; i > 0; --i) std::swap(order[static_cast<size_t>(i)], order[rng.below(static_cast<uint64_t>(i + 1))]);
    // order[k]: the world rank that becomes rank k (the first n are members).
    int me = -1;
    for (int k = 0; k < world_; ++k)
      if (order[static_cast<size_t>(k)] == wrank) me = k;
    const bool use_stream = rng.chance(50);
    const uint64_t epoch_iters = static_cast<uint64_t>(rng.range(std::min(20, o_.epoch), o_.epoch));

    ncclComm_t comm = nullptr, parent = nullptr;
    const int nn = how == 2 ? world_ : n;
    // A communicator of every rank, made with ncclCommInitRank: the epoch's own (how 2), or the parent
    // it is split from (how 1; destroyed right after the split or at the end of the epoch).
    if (how != 0) {
      if (lead) SOAK_CHECK(ncclGetUniqueId(&sh_->id));
      if (!barrier()) return false;
      SOAK_CHECK(ncclCommInitRank(how == 2 ? &comm : &parent, world_, sh_->id, how == 2 ? me : wrank));
      if (!barrier()) return false;  // nobody overwrites the id while a rank still reads it
    }
    if (how == 1) {
      const int color = me < n ? 7 : NCCL_SPLIT_NOCOLOR;
      SOAK_CHECK(ncclCommSplit(parent, color, me, &comm, nullptr));
      if (me >= n && comm != nullptr) {
        fprintf(stderr, "cclab_soak: rank %d: ncclCommSplit with NCCL_SPLIT_NOCOLOR returned a communicator\n", wrank);
        fail();
      }
      if (keep_parent == false) {
        SOAK_CHECK(ncclCommDestroy(parent));
        parent = nullptr;
      }
      if (lead) res_->splits++;
    } else if (how == 0) {
      if (order[0] == wrank) SOAK_CHECK(ncclGetUniqueId(&sh_->id));
      if (!barrier()) return false;
      if (me < n) SOAK_CHECK(ncclCommInitRank(&comm, n, sh_->id, me));
      if (!barrier()) return false;
    }
    if (comm != nullptr) {
      int cr = -1, cn = -1;
      SOAK_CHECK(ncclCommUserRank(comm, &cr));
      SOAK_CHECK(ncclCommCount(comm, &cn));
      if (cr != me || cn != nn) {
        fprintf(stderr, "cclab_soak: rank %d: communicator says rank %d of %d, expected %d of %d\n", wrank, cr, cn, me,
                nn);
        fail();
      }
    }
    if (lead) res_->comms++;
    cudaStream_t stream = nullptr;
    if (comm != nullptr && use_stream) SOAK_CHECK(cclabStreamCreate(&stream));

    for (uint64_t e = 0; e < epoch_iters && done < ops_; ++e, ++iter) {
      uint64_t drawn = 0;
      if (!run_group(rng, comm, nn, me, stream, iter, &drawn)) fail();
      done += drawn;  // every rank counts what it drew, member or not, so `done` agrees everywhere
      if (lead && std::chrono::duration<double>(now() - last_print).count() >= o_.progress_s) {
        last_print = now();
        const double secs = std::chrono::duration<double>(last_print - t0).count();
        const RssSample r = read_rss();
        uint64_t wrong = 0;
        for (int i = 0; i < world_; ++i) wrong += sh_->per_rank[i].wrong_ops;
        printf("[phase %d] %" PRIu64 "/%" PRIu64 " ops, %" PRIu64 " wrong, %.0f ops/s, VmRSS %.1f MiB now, %.1f MiB "
               "at the last communicator change (malloc in use %.1f MiB)\n",
               phase_, done, ops_, wrong, static_cast<double>(done) / secs, r.rss_kib / 1024.0, res_->end.rss_kib / 1024.0,
               res_->end.heap_kib / 1024.0);
        fflush(stdout);
      }
    }
    if (stream != nullptr) SOAK_CHECK(cclabStreamDestroy(stream));
    if (comm != nullptr) SOAK_CHECK(ncclCommDestroy(comm));
    if (parent != nullptr) SOAK_CHECK(ncclCommDestroy(parent));
    if (!barrier()) return false;
    // Memory is compared at epoch boundaries, where no communicator is alive: the same state each time,
    // whatever size the epoch's communicator and buffers had.
    if (lead) {
      malloc_trim(0);  // give back what glibc's per-thread arenas keep free, so RSS is what is in use
      res_->end = read_rss();
      if (!warm_done && done >= warm_at) {
        warm_done = true;
        res_->warm = res_->end;
        res_->warm_ops = done;
        t_warm = now();
      }
    }
    if (!barrier()) return false;  // the others wait while rank 0 measures
  }
  if (lead && !warm_done) res_->warm = res_->end, res_->warm_ops = done;
  if (lead) {
    res_->seconds = std::chrono::duration<double>(now() - t0).count();
    res_->seconds_after_warm = std::chrono::duration<double>(now() - t_warm).count();
  }
  res_->ops = done;
  return true;
}

// ---- Phases -----------------------------------------------------------------------------------------
// NCCL_ALGO / NCCL_PROTO of phase p (nullptr: as inherited). cclab runs Ring for every collective and
// Tree for all_reduce; the last entry mixes per-collective settings.
struct PhaseEnv { const char* algo; const char* proto; };
const PhaseEnv kPhaseEnv[] = {
    {nullptr, nullptr},
    {"Ring", "LL"},
    {"Ring", "LL128"},
    {"Ring", "Simple"},
    {"Ring;AllReduce:Tree", "LL"},
    {"Ring;AllReduce:Tree", "LL128"},
    {"Ring;AllReduce:Tree", "Simple"},
    {"AllReduce:Tree,Ring", "AllReduce:LL128;AllGather:LL;ReduceScatter:Simple;Broadcast:LL;Reduce:LL128,Simple"},
};
constexpr int kNumPhaseEnv = sizeof kPhaseEnv / sizeof kPhaseEnv[0];

std::string env_text() {
  const char* a = getenv("NCCL_ALGO");
  const char* q = getenv("NCCL_PROTO");
  return std::string("NCCL_ALGO=") + (a ? a : "(unset)") + " NCCL_PROTO=" + (q ? q : "(unset)");
}

template <typename T>
T* shared_alloc() {
  void* m = mmap(nullptr, sizeof(T), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) {
    perror("cclab_soak: mmap");
    exit(2);
  }
  return new (m) T();
}

// Runs one phase in this process: world_ ranks as threads, or as forked processes. Returns the exit status.
int run_phase(const Options& o, int phase, uint64_t seed, uint64_t ops, PhaseResult* res) {
  Shared* sh = shared_alloc<Shared>();
  pthread_barrierattr_t attr;
  pthread_barrierattr_init(&attr);
  pthread_barrierattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  pthread_barrier_init(&sh->barrier, &attr, static_cast<unsigned>(o.max_ranks));
  pthread_barrierattr_destroy(&attr);
  bool ok = true;
  if (!o.procs) {
    std::vector<std::thread> threads;
    std::vector<char> rank_ok(static_cast<size_t>(o.max_ranks), 0);
    for (int r = 0; r < o.max_ranks; ++r)
      threads.emplace_back([&, r] { rank_ok[static_cast<size_t>(r)] = RankRunner(o, sh, r, o.max_ranks, seed, ops, res, phase).run(); });
    for (auto& t : threads) t.join();
    for (char c : rank_ok) ok = ok && c;
  } else {
    fflush(stdout);
    std::vector<pid_t> pids;
    for (int r = 0; r < o.max_ranks; ++r) {
      pid_t pid = fork();
      if (pid == 0) exit(RankRunner(o, sh, r, o.max_ranks, seed, ops, res, phase).run() ? 0 : 2);
      pids.push_back(pid);
    }
    // A rank that fails leaves the others waiting in a collective: stop them.
    for (size_t left = pids.size(); left > 0; --left) {
      int st = 0;
      const pid_t pid = wait(&st);
      if (pid < 0) break;
      if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        if (ok)
          for (pid_t other : pids)
            if (other != pid) kill(other, SIGKILL);
        ok = false;
      }
    }
  }
  for (int r = 0; r < o.max_ranks; ++r) {
    res->wrong_ops += sh->per_rank[r].wrong_ops;
    res->wrong_elems += sh->per_rank[r].wrong_elems;
  }
  if (!ok) res->errors = 1;  // a rank failed (it printed why) and the phase stopped
  pthread_barrier_destroy(&sh->barrier);
  sh->~Shared();
  munmap(sh, sizeof(Shared));
  if (res->errors) return 2;
  if (res->wrong_ops) return 1;
  const double growth_mib = (res->end.rss_kib - res->warm.rss_kib) / 1024.0;
  if (o.max_rss_growth_mib >= 0 && growth_mib > o.max_rss_growth_mib) return 3;
  const double heap_growth_mib = (res->end.heap_kib - res->warm.heap_kib) / 1024.0;
  if (o.max_heap_growth_mib >= 0 && heap_growth_mib > o.max_heap_growth_mib) return 3;
  return 0;
}

void print_phase(int phase, const std::string& env, const PhaseResult& r, const Options& o) {
  const double mib = 1.0 / 1024.0;
  printf("phase %d (%s): %" PRIu64 " ops in %.1f s (%.0f ops/s), %" PRIu64 " wrong, %" PRIu64
         " errors, %" PRIu64 " communicators (%" PRIu64 " split)\n",
         phase, env.c_str(), r.ops, r.seconds, r.seconds > 0 ? static_cast<double>(r.ops) / r.seconds : 0.0,
         r.wrong_ops, r.errors, r.comms, r.splits);
  printf("  %s VmRSS: start %.1f MiB, after warm-up (%" PRIu64 " ops) %.1f MiB, end %.1f MiB (%+.1f MiB since "
         "warm-up%s); VmHWM %.1f MiB at warm-up, %.1f MiB at the end; malloc in use %.1f MiB at warm-up, %.1f MiB at the end\n",
         o.procs ? "rank 0's" : "process", r.start.rss_kib * mib, r.warm_ops, r.warm.rss_kib * mib,
         r.end.rss_kib * mib, (r.end.rss_kib - r.warm.rss_kib) * mib,
         o.max_rss_growth_mib >= 0 ? (std::string(", bound ") + std::to_string(static_cast<int>(o.max_rss_growth_mib)) + " MiB").c_str() : "",
         r.warm.hwm_kib * mib, r.end.hwm_kib * mib, r.warm.heap_kib * mib, r.end.heap_kib * mib);
  fflush(stdout);
}

[[noreturn]] void usage(const char* why) {
  fprintf(stderr,
          "cclab_soak: %s\n"
          "usage: cclab_soak [--ops N] [--seed S] [--ranks MAX (2..64, default 8)] [--phases P (default 8)]\n"
          "                  [--procs] [--max-bytes B (default 4194304)] [--max-rss-growth-mib M] [--max-heap-growth-mib M]\n"
          "                  [--progress SEC]\n"
          "                  [--epoch ITERS (most groups per communicator, default 400)]\n"
          "                  [--inline (one phase, in this process, NCCL_ALGO/NCCL_PROTO as set)]\n",
          why);
  exit(64);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto val = [&]() -> const char* {
      if (i + 1 >= argc) usage((a + " needs a value").c_str());
      return argv[++i];
    };
    auto num = [&](const char* v) {
      char* end = nullptr;
      const unsigned long long x = strtoull(v, &end, 0);
      if (end == v || *end != 0) usage((a + ": not a number: " + v).c_str());
      return static_cast<uint64_t>(x);
    };
    if (a == "--ops") o.ops = num(val());
    else if (a == "--seed") o.seed = num(val()), o.seed_given = true;
    else if (a == "--ranks") o.max_ranks = static_cast<int>(num(val()));
    else if (a == "--phases") o.phases = static_cast<int>(num(val()));
    else if (a == "--procs") o.procs = true;
    else if (a == "--inline") o.inline_run = true;
    else if (a == "--max-bytes") o.max_bytes = static_cast<size_t>(num(val()));
    else if (a == "--max-rss-growth-mib") o.max_rss_growth_mib = atof(val());
    else if (a == "--max-heap-growth-mib") o.max_heap_growth_mib = atof(val());
    else if (a == "--progress") o.progress_s = atof(val());
    else if (a == "--epoch") o.epoch = static_cast<int>(num(val()));
    else if (a == "-h" || a == "--help") usage("random collectives on the host backend, checked byte-exact");
    else usage(("unknown option " + a).c_str());
  }
  if (o.max_ranks < 2 || o.max_ranks > 64) usage("--ranks must be 2..64");
  if (o.phases < 1) usage("--phases must be at least 1");
  if (o.max_bytes < 64) usage("--max-bytes must be at least 64");
  if (o.epoch < 1) usage("--epoch must be at least 1");
  if (!o.seed_given) {
    o.seed = splitmix(static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count()) ^
                      static_cast<uint64_t>(getpid()));
  }
  if (o.inline_run) o.phases = 1;
  printf("cclab_soak: seed %" PRIu64 " (reproduce: --seed %" PRIu64 " --ops %" PRIu64 " --ranks %d --phases %d%s%s), "
         "ranks as %s, 2..%d per communicator, buffers up to %zu bytes\n",
         o.seed, o.seed, o.ops, o.max_ranks, o.phases, o.procs ? " --procs" : "", o.inline_run ? " --inline" : "",
         o.procs ? "processes" : "threads", o.max_ranks, o.max_bytes);
  fflush(stdout);

  PhaseResult total;
  int status = 0;
  long worst_growth_kib = 0;
  int worst_phase = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int ph = 0; ph < o.phases; ++ph) {
    const uint64_t ops = o.ops / static_cast<uint64_t>(o.phases) + (static_cast<uint64_t>(ph) < o.ops % static_cast<uint64_t>(o.phases) ? 1 : 0);
    const uint64_t seed = splitmix(o.seed + static_cast<uint64_t>(ph));
    PhaseResult* res = shared_alloc<PhaseResult>();
    int st = 0;
    std::string env;
    if (o.inline_run) {
      env = env_text();
      st = run_phase(o, ph, seed, ops, res);
    } else {
      const PhaseEnv& pe = kPhaseEnv[ph % kNumPhaseEnv];
      fflush(stdout);
      pid_t pid = fork();
      if (pid < 0) {
        perror("cclab_soak: fork");
        return 2;
      }
      if (pid == 0) {
        if (pe.algo) setenv("NCCL_ALGO", pe.algo, 1);
        if (pe.proto) setenv("NCCL_PROTO", pe.proto, 1);
        exit(run_phase(o, ph, seed, ops, res));
      }
      int ws = 0;
      waitpid(pid, &ws, 0);
      st = WIFEXITED(ws) ? WEXITSTATUS(ws) : 2;
      if (!WIFEXITED(ws)) fprintf(stderr, "cclab_soak: phase %d died (signal %d)\n", ph, WTERMSIG(ws));
      std::string a = pe.algo ? pe.algo : (getenv("NCCL_ALGO") ? getenv("NCCL_ALGO") : "(unset)");
      std::string q = pe.proto ? pe.proto : (getenv("NCCL_PROTO") ? getenv("NCCL_PROTO") : "(unset)");
      env = "NCCL_ALGO=" + a + " NCCL_PROTO=" + q;
    }
    if (st != 0 && res->errors == 0 && res->wrong_ops == 0 && st != 3) res->errors = 1;
    print_phase(ph, env, *res, o);
    total.ops += res->ops;
    total.wrong_ops += res->wrong_ops;
    total.wrong_elems += res->wrong_elems;
    total.errors += res->errors;
    total.comms += res->comms;
    total.splits += res->splits;
    const long growth = res->end.rss_kib - res->warm.rss_kib;
    if (ph == 0 || growth > worst_growth_kib) worst_growth_kib = growth, worst_phase = ph;
    if (st != 0 && (status == 0 || st < status)) status = st;
    munmap(res, sizeof(PhaseResult));
    if (st == 2) break;  // an error: later phases would say nothing new
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  printf("cclab_soak: %" PRIu64 " ops, %" PRIu64 " wrong results (rank x operation; %" PRIu64 " elements), %" PRIu64 " errors, %" PRIu64
         " communicators, %.1f s, %.0f ops/s; largest VmRSS growth after warm-up %+.1f MiB (phase %d); seed %" PRIu64
         ": %s\n",
         total.ops, total.wrong_ops, total.wrong_elems, total.errors, total.comms, secs,
         static_cast<double>(total.ops) / secs, worst_growth_kib / 1024.0, worst_phase, o.seed,
         status == 0 ? "PASS" : status == 1 ? "FAIL (wrong results)" : status == 3 ? "FAIL (memory grew past the bound)"
                                                                                 : "FAIL (errors)");
  return status;
}
