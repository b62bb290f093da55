// nccl_abi_test: cclab's <nccl.h> agrees with NVIDIA's NCCL 2.28.9 nccl.h.
//
// nccl_abi_probe.cc prints one "key = value" line per fact of the header it was compiled against (enum
// values, macro values and types, struct layouts, initializer values, function types). CMake builds it
// against cclab's header and, when the CUDA toolkit ships nccl.h, against NVIDIA's; this test runs the
// binaries (paths come in as compile definitions) and reports every line on which they disagree.
//
// The recorded description (nccl_2.28.9.abi.txt, NVIDIA's probe output) keeps the check alive on
// machines without the toolkit. Regenerate it after a deliberate change to the probe with
//   { head -n 4 tests/abi/nccl_2.28.9.abi.txt; <build>/tests/abi/cclab_abi_probe_nvidia; } > new.txt
// and check the diff by hand: only lines the probe change explains may move.

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Description {
  std::vector<std::string> keys;             // in output order
  std::map<std::string, std::string> values;  // key -> value
  std::string error;                          // non-empty when the description could not be read
};

// Parses "key = value" lines; '#' lines and blank lines are comments (used by the recorded file).
Description Parse(std::istream& in, const std::string& source) {
  Description d;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    const size_t eq = line.find(" = ");
    if (eq == std::string::npos) {
      d.error = source + ":" + std::to_string(number) + ": not a 'key = value' line: " + line;
      return d;
    }
    std::string key = line.substr(0, eq);
    if (!d.values.emplace(key, line.substr(eq + 3)).second) {
      d.error = source + ":" + std::to_string(number) + ": duplicate key " + key;
      return d;
    }
    d.keys.push_back(key);
  }
  if (d.keys.empty()) d.error = source + ": no description lines";
  return d;
}

Description RunProbe(const std::string& path) {
  const std::string command = "'" + path + "'";
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) {
    Description d;
    d.error = "cannot run " + path;
    return d;
  }
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, n);
  const int status = pclose(pipe);
  std::istringstream in(out);
  Description d = Parse(in, path);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    d.error = path + " failed (status " + std::to_string(status) + ")";
  }
  return d;
}

Description ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    Description d;
    d.error = "cannot open " + path;
    return d;
  }
  return Parse(in, path);
}

// One failure per differing line, naming both sides, so a single run shows every disagreement.
void ExpectSame(const Description& want, const char* want_name, const Description& got, const char* got_name) {
  ASSERT_TRUE(want.error.empty()) << want.error;
  ASSERT_TRUE(got.error.empty()) << got.error;
  int differing = 0;
  for (const std::string& key : want.keys) {
    auto it = got.values.find(key);
    if (it == got.values.end()) {
      ADD_FAILURE() << "only in " << want_name << ": " << key << " = " << want.values.at(key);
      ++differing;
    } else if (it->second != want.values.at(key)) {
      ADD_FAILURE() << key << "\n  " << want_name << ": " << want.values.at(key) << "\n  " << got_name << ": "
                    << it->second;
      ++differing;
    }
  }
  for (const std::string& key : got.keys) {
    if (want.values.count(key) == 0) {
      ADD_FAILURE() << "only in " << got_name << ": " << key << " = " << got.values.at(key);
      ++differing;
    }
  }
  std::cout << "compared " << want.keys.size() << " lines of " << want_name << " with " << got.keys.size()
            << " lines of " << got_name << ": " << differing << " differ\n";
}

constexpr const char* kNoToolkit =
    "NVIDIA's nccl.h not found at " CCLAB_ABI_NVIDIA_INCLUDE_DIR "/nccl.h (with cuda_runtime.h), so cclab's "
    "nccl.h cannot be compared with it here; install the CUDA toolkit's NCCL header or set "
    "CCLAB_NVIDIA_NCCL_INCLUDE_DIR to compare";

}  // namespace

// cclab's header on its own (no CUDA headers, cudaStream_t declared by cclab) against NVIDIA's.
TEST(NcclAbi, MatchesCudaToolkitHeader) {
#ifdef CCLAB_ABI_PROBE_NVIDIA
  ExpectSame(RunProbe(CCLAB_ABI_PROBE_NVIDIA), "NVIDIA nccl.h", RunProbe(CCLAB_ABI_PROBE_CCLAB), "cclab nccl.h");
#else
  GTEST_SKIP() << kNoToolkit;
#endif
}

// cclab's header built with CCLAB_WITH_CUDA_HEADERS (cudaStream_t from cuda_runtime.h) against NVIDIA's.
TEST(NcclAbi, MatchesCudaToolkitHeaderWithCudaHeaders) {
#ifdef CCLAB_ABI_PROBE_CCLAB_CUDA
  ExpectSame(RunProbe(CCLAB_ABI_PROBE_NVIDIA), "NVIDIA nccl.h", RunProbe(CCLAB_ABI_PROBE_CCLAB_CUDA),
             "cclab nccl.h with CUDA headers");
#else
  GTEST_SKIP() << kNoToolkit;
#endif
}

// cclab's header against the recorded description of NVIDIA's, which needs no toolkit. The recording
// spells types the way the Itanium demangler does on 64-bit Linux (size_t is "unsigned long"), so
// elsewhere only the toolkit comparison applies.
TEST(NcclAbi, MatchesRecordedNvidiaDescription) {
#if defined(__linux__) && defined(__LP64__)
  ExpectSame(ReadFile(CCLAB_ABI_RECORDED), "recorded NVIDIA nccl.h", RunProbe(CCLAB_ABI_PROBE_CCLAB),
             "cclab nccl.h");
#else
  GTEST_SKIP() << "the recorded description is for 64-bit Linux";
#endif
}

// The recording is still what NVIDIA's header says (it goes stale if the probe or the toolkit changes).
TEST(NcclAbi, RecordedDescriptionMatchesCudaToolkitHeader) {
#if !defined(CCLAB_ABI_PROBE_NVIDIA)
  GTEST_SKIP() << kNoToolkit;
#elif !defined(__linux__) || !defined(__LP64__)
  GTEST_SKIP() << "the recorded description is for 64-bit Linux";
#else
  ExpectSame(RunProbe(CCLAB_ABI_PROBE_NVIDIA), "NVIDIA nccl.h", ReadFile(CCLAB_ABI_RECORDED),
             "recorded NVIDIA nccl.h");
#endif
}
