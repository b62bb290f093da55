// runtime/cli/tune_cmd.h - `cclab tune`: NCCL's cost model on a topology, as a table of predicted times
// over a range of sizes, with the algorithm/protocol NCCL would choose for each.
//
//   cclab tune --topo dgx-h100 all_reduce                      8 B .. 8 GiB, factor 2
//   cclab tune --topo dgx-h100 --nodes 4 all_reduce -b 1K -e 1G -f 4
//   cclab tune --topo dgx-h100 all_reduce --explain 64K        the derivation of every prediction
//   NCCL_ALGO=ring NCCL_PROTO=^LL128 cclab tune --topo dgx-a100 all_gather
//
// Sizes are NCCL's nBytes (tuning.h): count x type size for all_reduce, broadcast and reduce, and the
// total (count x nranks x type size, i.e. the gathered buffer) for all_gather and reduce_scatter.
// Everything but tune_main is pure so tests can check it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "graph/tuning.h"
#include "topo_cmd.h"

namespace cclab {

constexpr size_t kTuneDefaultMinBytes = 8;
constexpr size_t kTuneDefaultMaxBytes = size_t{8} << 30;

struct TuneCmdOptions {
  TopoSource source;
  CollKind coll = CollKind::kAllReduce;
  std::string coll_arg = "all_reduce";      // as given on the command line
  size_t min_bytes = kTuneDefaultMinBytes;  // -b
  size_t max_bytes = kTuneDefaultMaxBytes;  // -e
  uint64_t factor = 2;                      // -f
  bool explain = false;
  size_t explain_bytes = 0;  // --explain SIZE
  int ranks = 0;             // --ranks; 0 = every GPU of the model
  int min_channels = 0;      // --min-channels (default $NCCL_MIN_NCHANNELS); 0 = unset
  int max_channels = 0;      // --max-channels (default $NCCL_MAX_NCHANNELS); 0 = unset
};

struct TuneCmdParse {
  bool ok = false;
  bool help = false;
  std::string message;
  TuneCmdOptions options;
};

// Parses the arguments after "tune" (COLLECTIVE anywhere among the flags).
TuneCmdParse parse_tune_cmd(const std::vector<std::string>& args);
std::string tune_usage();

// "all_reduce" ... "reduce" (cclab perf's names) -> CollKind; false for anything else.
bool tune_collective_from_name(const std::string& name, CollKind* coll);
std::string tune_collective_names();  // "all_reduce, all_gather, reduce_scatter, broadcast, reduce"

// min, min*factor, ... while <= max (factor >= 2, min >= 1).
std::vector<size_t> tune_sizes(size_t min_bytes, size_t max_bytes, uint64_t factor);

// "8", "1K", "1.5M", "8G": the shortest power-of-1024 spelling, as -b/-e accept it.
std::string format_bytes(size_t bytes);

// Fills a TunerInput for all GPUs of topo (or `ranks` of them when > 0) with the searched graphs and the
// NCCL_ALGO / NCCL_PROTO values (nullptr = unset), on the channels the communicator runs: the fewer of
// the two graphs' channels, doubled, within [min_channels, max_channels] (NCCL_MIN/MAX_NCHANNELS; 0 =
// unset), as NCCL connects them and as `cclab sim` runs them (modelled_channels). False with *error:
// the parser's message for a bad NCCL_ALGO/NCCL_PROTO (prefixed with the variable), or a rank count
// that does not fit the model.
bool make_tuner_input(const Topology& topo, const TopoGraph* ring, const TopoGraph* tree, int ranks,
                      const char* algo_env, const char* proto_env, TunerInput* in, std::string* error,
                      int min_channels = 0, int max_channels = 0);

// The combinations the table shows for `coll`, in column order: Ring LL, LL128, Simple, then Tree LL,
// LL128, Simple (AllReduce, Broadcast, Reduce) or PAT/Simple (AllGather, ReduceScatter: NCCL's only
// other algorithms there); then NVLS/Simple (NVLS runs Simple only) and, for AllReduce, Broadcast and
// Reduce, NVLSTree/Simple (AllReduce only; a dash elsewhere).
struct AlgoProto {
  AlgoKind algo;
  ProtoKind proto;
};
const std::vector<AlgoProto>& tune_combinations(CollKind coll = CollKind::kAllReduce);

// The table: a header line ("#" first), then one row per size: bytes, the predicted time (us) of each
// combination ("-" when unavailable or disabled; "*" after the chosen one), the choice ("Ring/LL", or
// "none" when nothing is enabled), its channels and threads.
std::string format_tune_table(const CostModel& model, CollKind coll, const std::vector<size_t>& sizes);

// CostModel::explain of every combination at `bytes`, then the choice.
std::string format_explain(const CostModel& model, CollKind coll, size_t bytes);

// The lines before the table: topology, ranks, graphs, the NCCL_ALGO/NCCL_PROTO tables in force.
std::string format_tune_header(const Topology& topo, const TunerInput& in, CollKind coll, const char* algo_env,
                               const char* proto_env);

// Runs `cclab tune` with the arguments after "tune", reading NCCL_ALGO / NCCL_PROTO from the environment.
int tune_main(const std::vector<std::string>& args);

}  // namespace cclab
