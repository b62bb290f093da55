// runtime/graph/algo_proto.h - NCCL_ALGO and NCCL_PROTO: the algorithm and protocol enable table.
//
// The syntax is NCCL's (src/graph/tuning.cc parseList, 2.2x-2.28; src/tuning/cost_model.cc later):
//
//   value    := section (';' section)*
//   section  := [collective ':'] ['^'] name (',' name)*
//
//   - Names and collectives are matched case-insensitively against NCCL's spellings:
//     algorithms Tree Ring CollNetDirect CollNetChain NVLS NVLSTree PAT, protocols LL LL128 Simple,
//     collectives Broadcast Reduce AllGather ReduceScatter AllReduce (ncclFuncStr; no SendRecv).
//   - Only the first section may omit the collective; it then applies to every collective.
//   - A section replaces the whole row of each collective it names: without '^' only the listed names
//     are enabled, with '^' everything but the listed names. So "^LL128;allreduce:LL128" gives
//     AllReduce LL128 only and every other collective LL + Simple; later sections win.
//   - Collectives that no section names keep everything enabled.
//
// cclab is stricter than NCCL in a few places so that a typo fails loudly instead of silently doing
// something surprising: an empty section or name ("ring,,tree", "ring;"), '^' with no names, an empty
// collective (":ring"), a collective with no list ("allreduce:"), or a second ':' are all rejected with
// ncclInvalidArgument (NCCL returns ncclInvalidUsage for the errors it detects and silently skips
// the others). Surrounding whitespace is not trimmed, as in NCCL: " ring" is an unknown name.
//
//   AlgoProtoEnable table;  // everything enabled
//   std::string error;
//   if (parse_algo_env(getenv("NCCL_ALGO"), &table, &error) != ncclSuccess) WARN("%s", error.c_str());
//   if (table.algo[coll_index(CollKind::kAllReduce)][static_cast<int>(AlgoKind::kTree)]) ...
#pragma once

#include <string>

#include "cclab/nccl.h"
#include "kernels/step_record.h"

namespace cclab {

// Indices equal NCCL_ALGO_* in NCCL's device.h, so tables can be compared with NCCL's logs.
enum class AlgoKind : int {
  kTree = 0,
  kRing = 1,
  kCollNetDirect = 2,
  kCollNetChain = 3,
  kNvls = 4,
  kNvlsTree = 5,
  kPat = 6,
  // Not NCCL's: a custom algorithm from a plugin (graph/custom_algo.h). Outside the enable tables.
  kCustom = 7,
};
constexpr int kNumAlgos = 7;

// Indices equal NCCL_PROTO_*.
enum class ProtoKind : int {
  kLL = 0,
  kLL128 = 1,
  kSimple = 2,
};
constexpr int kNumProtos = 3;

// Rows are the collectives the tuner chooses for: CollKind kAllReduce..kReduceScatter (0..4). SendRecv
// has no algorithm choice, and NCCL does not accept it as a prefix either.
constexpr int kNumColls = 5;
inline int coll_index(CollKind coll) { return static_cast<int>(coll); }

struct AlgoProtoEnable {
  bool algo[kNumColls][kNumAlgos];
  bool proto[kNumColls][kNumProtos];
  // True for a collective whose row a section of NCCL_ALGO / NCCL_PROTO wrote. The tuner needs it for
  // LL128: NCCL enables LL128 by default only on hardware where it is known safe, but a user setting
  // (even "^LL") turns it on unconditionally for the collectives it names.
  bool algo_from_env[kNumColls];
  bool proto_from_env[kNumColls];

  AlgoProtoEnable();  // everything enabled, nothing from the environment
};

// Parse NCCL_ALGO / NCCL_PROTO into out's algo (proto) rows; the other half of *out is left alone so
// one table can take both variables. nullptr or "" leaves everything enabled. On error *out is not
// modified, *error (when non-null) says what is wrong, and the result is ncclInvalidArgument.
ncclResult_t parse_algo_env(const char* value, AlgoProtoEnable* out, std::string* error);
ncclResult_t parse_proto_env(const char* value, AlgoProtoEnable* out, std::string* error);

// NCCL's spellings ("Tree", "CollNetDirect", "LL128", "AllReduce"); "Unknown" when out of range.
const char* algo_name(AlgoKind algo);
const char* proto_name(ProtoKind proto);
const char* coll_name(CollKind coll);

// Case-insensitive lookups of NCCL's spellings; false when the name is unknown.
bool algo_from_name(const char* name, AlgoKind* algo);
bool proto_from_name(const char* name, ProtoKind* proto);
bool coll_from_name(const char* name, CollKind* coll);

// One log line, e.g. "NCCL_ALGO=ring;allreduce:tree enables AllReduce: Tree; Broadcast: Ring; ...".
// value is echoed as given ("(unset)" for nullptr); a collective with nothing enabled shows "none".
std::string describe_algo_enable(const AlgoProtoEnable& table, const char* value);
std::string describe_proto_enable(const AlgoProtoEnable& table, const char* value);

}  // namespace cclab
