// runtime/cli/perf_options.h - `cclab perf` command line: the nccl-tests flags and their values.
//
// Usage:
//   cclab::PerfParse parsed = cclab::parse_perf_options({"all_reduce", "-b", "8", "-e", "128M", "-f", "2"});
//   if (!parsed.ok) { fprintf(stderr, "%s\n", parsed.message.c_str()); return 2; }
//   for (size_t bytes : cclab::size_sweep(parsed.options)) ...
//
// Flags mirror nccl-tests (src/common.cu) with the same defaults; sizes take K, M, G suffixes (powers of
// 1024). Nothing here touches the runtime: this is pure parsing, shared by the tool and its tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "cclab/nccl.h"

namespace cclab {

// The collectives `cclab perf` measures, one per nccl-tests binary.
enum class PerfCollective {
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kBroadcast,
  kReduce,
  kAllToAll,
  kGather,
  kScatter,
  kSendRecv,
};

// nccl-tests' ops in its own order (test_opnames): "mulsum" is ncclRedOpCreatePreMulSum.
enum class PerfOp { kSum, kProd, kMax, kMin, kAvg, kMulSum };

constexpr size_t kPerfDefaultMinBytes = size_t{32} << 20;
constexpr size_t kPerfDefaultMaxBytes = size_t{32} << 20;
constexpr size_t kPerfDefaultStepBytes = size_t{1} << 20;

struct PerfOptions {
  PerfCollective collective = PerfCollective::kAllReduce;
  size_t min_bytes = kPerfDefaultMinBytes;         // -b
  size_t max_bytes = kPerfDefaultMaxBytes;         // -e
  size_t step_bytes = kPerfDefaultStepBytes;       // -i
  uint64_t step_factor = 1;                        // -f; > 1 multiplies and overrides -i (nccl-tests' rule)
  int iters = 20;                                  // -n
  int warmup_iters = 1;                            // -w
  int check_iters = 1;                             // -c; 0 disables the correctness check
  int agg_iters = 1;                               // -m: collectives per timed iteration, in one group
  std::vector<PerfOp> ops{PerfOp::kSum};           // -o; "all" lists every op
  std::vector<ncclDataType_t> types{ncclFloat32};  // -d; "all" lists every type
  int root = 0;                                    // -r; -1 runs every root in turn (nccl-tests)
  int threads = 1;                                 // -t: nccl-tests threads per process
  int gpus = 1;                                    // -g: nccl-tests GPUs per thread
  int blocking = 0;                                // -z: 0 host stream + synchronize, 1 NULL stream (blocking calls)
  int average = 1;                                 // -a: 0 rank 0's time, 1 mean, 2 min, 3 max over ranks
  int nprocs = 0;                                  // --nprocs: processes the tool spawns itself (0: none)
  int hosts = 0;                                   // --hosts: --nprocs processes split over this many
                                                   // NCCL_HOSTID "hosts" (NET/Socket between them; 0: one)

  // Ranks this process contributes: nccl-tests' threads x GPUs, each one a thread in cclab.
  int ranks_per_process() const { return threads * gpus; }
};

struct PerfParse {
  bool ok = false;
  bool help = false;    // --help was given: print perf_usage() and exit 0
  std::string message;  // why parsing failed, naming the flag and the bad value
  PerfOptions options;
};

// Parses the arguments after "perf" (the collective first, then flags in any order).
PerfParse parse_perf_options(const std::vector<std::string>& args);

// The `cclab perf --help` text.
std::string perf_usage();

// Bytes from "8", "1.5K", "32M", "2G" (powers of 1024). Throws std::invalid_argument naming `flag`
// when the text is not a non-negative number with an optional K/M/G suffix.
size_t parse_size(const std::string& text, const std::string& flag);

// The sizes the benchmark visits, in order: min, then min*factor (factor > 1) or min+step, up to max.
std::vector<size_t> size_sweep(const PerfOptions& options);

// ---- Names -------------------------------------------------------------------------------------
const char* collective_name(PerfCollective coll);  // "all_reduce", ...
bool collective_from_name(const std::string& name, PerfCollective* coll);
const char* op_name(PerfOp op);  // "sum", ..., "mulsum"
bool op_from_name(const std::string& name, PerfOp* op);
const char* datatype_name(ncclDataType_t type);  // nccl-tests' spelling: "float", "half", "f8e4m3", ...
bool datatype_from_name(const std::string& name, ncclDataType_t* type);  // also float16/float32/float64
size_t datatype_size(ncclDataType_t type);                               // bytes per element

// Whether the collective takes a reduction op (printed in the redop column; nccl-tests prints the op
// for sendrecv too, though it only copies).
bool collective_reduces(PerfCollective coll);
bool collective_prints_op(PerfCollective coll);
// Whether the collective has a root (printed in the root column; -1 otherwise).
bool collective_has_root(PerfCollective coll);

}  // namespace cclab
