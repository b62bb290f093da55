// runtime/graph/algo_proto.cc - parsing NCCL_ALGO / NCCL_PROTO (syntax in algo_proto.h).
#include "graph/algo_proto.h"

#include <strings.h>

#include <cstring>
#include <string>
#include <vector>

namespace cclab {
namespace {

// NCCL's spellings (ncclAlgoStr, ncclProtoStr): the names users type and NCCL prints.
const char* const kAlgoNames[kNumAlgos] = {"Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"};
const char* const kProtoNames[kNumProtos] = {"LL", "LL128", "Simple"};
// Indexed by CollKind, not by NCCL's ncclFunc_t order: prefixes are matched by name, so only the
// spelling has to agree with ncclFuncStr.
const char* const kCollNames[kNumColls] = {"AllReduce", "Broadcast", "Reduce", "AllGather", "ReduceScatter"};

int find_name(const std::string& token, const char* const names[], int count) {
  for (int i = 0; i < count; i++) {
    if (strcasecmp(token.c_str(), names[i]) == 0) return i;
  }
  return -1;
}

std::string join_names(const char* const names[], int count) {
  std::string out;
  for (int i = 0; i < count; i++) {
    if (i > 0) out += ", ";
    out += names[i];
  }
  return out;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  size_t begin = 0;
  while (true) {
    size_t end = s.find(sep, begin);
    parts.push_back(s.substr(begin, end == std::string::npos ? std::string::npos : end - begin));
    if (end == std::string::npos) break;
    begin = end + 1;
  }
  return parts;
}

// What one variable parses into: its name, the element vocabulary and where the rows go.
struct ListSpec {
  const char* var;         // "NCCL_ALGO"
  const char* kind;        // "algorithm"
  const char* const* names;
  int count;
  const char* also_valid = nullptr;  // what else the variable may name, said with the valid names
};

class ListParser {
 public:
  ListParser(const ListSpec& spec, const char* value) : spec_(spec), value_(value) {}

  // Fills rows[c][e] and from_env[c]; rows is kNumColls x spec.count, row-major.
  bool parse(bool* rows, bool* from_env) {
    std::vector<std::string> sections = split(value_, ';');
    for (size_t s = 0; s < sections.size(); s++) {
      if (!parse_section(sections[s], s, sections.size(), rows, from_env)) return false;
    }
    return true;
  }

  const std::string& error() const { return error_; }

 private:
  std::string valid_names() const {
    return std::string("; valid ") + spec_.kind + "s are " + join_names(spec_.names, spec_.count) +
           " (case-insensitive)" + (spec_.also_valid ? std::string(", and ") + spec_.also_valid : std::string());
  }
  std::string valid_colls() const {
    return std::string("; valid collectives are ") + join_names(kCollNames, kNumColls) + " (case-insensitive)";
  }
  bool fail(const std::string& what) {
    error_ = std::string(spec_.var) + "=\"" + value_ + "\": " + what;
    return false;
  }

  bool parse_section(const std::string& section, size_t index, size_t nsections, bool* rows, bool* from_env) {
    if (section.empty()) {
      // NCCL's strtok skips these; cclab rejects them because "ring;" or ";;" is almost always a typo.
      return fail("empty section " + std::to_string(index + 1) + " of " + std::to_string(nsections) +
                  " (sections are separated by ';', each is [collective:][^]" + spec_.kind + "[," + spec_.kind +
                  "...])" + valid_names());
    }
    std::vector<std::string> halves = split(section, ':');
    if (halves.size() > 2) {
      return fail("section \"" + section + "\" has more than one ':' (expected collective:[^]" + spec_.kind +
                  "[,...])" + valid_colls());
    }
    int coll = -1;  // -1: every collective
    std::string list = section;
    if (halves.size() == 2) {
      if (halves[0].empty()) return fail("empty collective before ':' in section \"" + section + "\"" + valid_colls());
      coll = find_name(halves[0], kCollNames, kNumColls);
      if (coll < 0) return fail("unknown collective \"" + halves[0] + "\"" + valid_colls());
      list = halves[1];
      if (list.empty()) {
        return fail(std::string("no ") + spec_.kind + "s after \"" + section + "\"" + valid_names());
      }
    } else if (index > 0) {
      // Same rule as NCCL: a prefix-less section after others would overwrite every row before it.
      return fail("section \"" + section + "\" has no collective prefix; only the first section may omit it" +
                  valid_colls());
    }

    bool exclude = list[0] == '^';
    if (exclude) list.erase(0, 1);
    if (list.empty()) {
      // NCCL reads a bare '^' as "exclude nothing"; requiring a name catches a half-written setting.
      return fail(std::string("'^' in section \"") + section + "\" must be followed by the " + spec_.kind +
                  "s to exclude" + valid_names());
    }

    // Resolve every name before touching the rows so a bad name leaves them as they were.
    std::vector<bool> listed(spec_.count, false);
    for (const std::string& token : split(list, ',')) {
      if (token.empty()) {
        return fail(std::string("empty ") + spec_.kind + " name in section \"" + section + "\"" + valid_names());
      }
      int e = find_name(token, spec_.names, spec_.count);
      if (e < 0) return fail(std::string("unknown ") + spec_.kind + " \"" + token + "\"" + valid_names());
      listed[e] = true;
    }
    for (int c = 0; c < kNumColls; c++) {
      if (coll >= 0 && c != coll) continue;
      // The section replaces the row; it does not merge with what an earlier section said.
      for (int e = 0; e < spec_.count; e++) rows[c * spec_.count + e] = listed[e] != exclude;
      from_env[c] = true;
    }
    return true;
  }

  const ListSpec& spec_;
  std::string value_;
  std::string error_;
};

template <int N>
ncclResult_t parse_env(const ListSpec& spec, const char* value, bool (&rows)[kNumColls][N],
                       bool (&from_env)[kNumColls], std::string* error) {
  if (value == nullptr || value[0] == '\0') {
    // Unset and empty both mean "no restriction", like an unset variable in NCCL's param code.
    for (int c = 0; c < kNumColls; c++) {
      for (int e = 0; e < N; e++) rows[c][e] = true;
      from_env[c] = false;
    }
    return ncclSuccess;
  }
  bool new_rows[kNumColls][N];
  bool new_from_env[kNumColls];
  for (int c = 0; c < kNumColls; c++) {
    for (int e = 0; e < N; e++) new_rows[c][e] = true;
    new_from_env[c] = false;
  }
  ListParser parser(spec, value);
  if (!parser.parse(&new_rows[0][0], new_from_env)) {
    if (error) *error = parser.error();
    return ncclInvalidArgument;
  }
  std::memcpy(rows, new_rows, sizeof(new_rows));
  std::memcpy(from_env, new_from_env, sizeof(new_from_env));
  return ncclSuccess;
}

std::string describe(const char* var, const char* value, const char* const names[], int count,
                     const bool* rows /* kNumColls x count */) {
  std::string out = std::string(var) + "=" + (value ? value : "(unset)") + " enables ";
  for (int c = 0; c < kNumColls; c++) {
    if (c > 0) out += "; ";
    out += kCollNames[c];
    out += ":";
    bool any = false;
    for (int e = 0; e < count; e++) {
      if (!rows[c * count + e]) continue;
      out += " ";
      out += names[e];
      any = true;
    }
    if (!any) out += " none";
  }
  return out;
}

}  // namespace

AlgoProtoEnable::AlgoProtoEnable() {
  for (int c = 0; c < kNumColls; c++) {
    for (int a = 0; a < kNumAlgos; a++) algo[c][a] = true;
    for (int p = 0; p < kNumProtos; p++) proto[c][p] = true;
    algo_from_env[c] = false;
    proto_from_env[c] = false;
  }
}

ncclResult_t parse_algo_env(const char* value, AlgoProtoEnable* out, std::string* error) {
  // A custom algorithm's name is valid only once its plugin is loaded (docs/custom-algorithms.md).
  static const ListSpec spec{"NCCL_ALGO", "algorithm", kAlgoNames, kNumAlgos,
                             "a custom algorithm's name once CCLAB_ALGO_PLUGIN loads it"};
  return parse_env(spec, value, out->algo, out->algo_from_env, error);
}

ncclResult_t parse_proto_env(const char* value, AlgoProtoEnable* out, std::string* error) {
  static const ListSpec spec{"NCCL_PROTO", "protocol", kProtoNames, kNumProtos};
  return parse_env(spec, value, out->proto, out->proto_from_env, error);
}

const char* algo_name(AlgoKind algo) {
  int i = static_cast<int>(algo);
  if (algo == AlgoKind::kCustom) return "Custom";
  return i >= 0 && i < kNumAlgos ? kAlgoNames[i] : "Unknown";
}

const char* proto_name(ProtoKind proto) {
  int i = static_cast<int>(proto);
  return i >= 0 && i < kNumProtos ? kProtoNames[i] : "Unknown";
}

const char* coll_name(CollKind coll) {
  int i = static_cast<int>(coll);
  return i >= 0 && i < kNumColls ? kCollNames[i] : "Unknown";
}

bool algo_from_name(const char* name, AlgoKind* algo) {
  int i = name ? find_name(name, kAlgoNames, kNumAlgos) : -1;
  if (i >= 0) *algo = static_cast<AlgoKind>(i);
  return i >= 0;
}

bool proto_from_name(const char* name, ProtoKind* proto) {
  int i = name ? find_name(name, kProtoNames, kNumProtos) : -1;
  if (i >= 0) *proto = static_cast<ProtoKind>(i);
  return i >= 0;
}

bool coll_from_name(const char* name, CollKind* coll) {
  int i = name ? find_name(name, kCollNames, kNumColls) : -1;
  if (i >= 0) *coll = static_cast<CollKind>(i);
  return i >= 0;
}

std::string describe_algo_enable(const AlgoProtoEnable& table, const char* value) {
  return describe("NCCL_ALGO", value, kAlgoNames, kNumAlgos, &table.algo[0][0]);
}

std::string describe_proto_enable(const AlgoProtoEnable& table, const char* value) {
  return describe("NCCL_PROTO", value, kProtoNames, kNumProtos, &table.proto[0][0]);
}

}  // namespace cclab
