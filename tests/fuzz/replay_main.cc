// tests/fuzz/replay_main.cc - main() of a fuzz target built without libFuzzer: runs
// LLVMFuzzerTestOneInput once on every file named, or in a directory named (not recursive), and
// fails when there were none. A crash or a failed FUZZ_CHECK aborts, which fails the ctest entry;
// the input is named on stderr first.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz.h"

namespace {

bool is_dir(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (!arg.empty() && arg[0] == '-') continue;  // libFuzzer flags (-runs=0 ...) mean nothing here
    if (is_dir(arg)) {
      DIR* d = opendir(arg.c_str());
      if (d == nullptr) {
        std::fprintf(stderr, "%s: cannot open directory\n", arg.c_str());
        return 2;
      }
      std::vector<std::string> in_dir;
      while (dirent* e = readdir(d)) {
        const std::string name = e->d_name;
        if (name == "." || name == ".." || is_dir(arg + "/" + name)) continue;
        in_dir.push_back(arg + "/" + name);
      }
      closedir(d);
      std::sort(in_dir.begin(), in_dir.end());
      files.insert(files.end(), in_dir.begin(), in_dir.end());
    } else {
      files.push_back(arg);
    }
  }
  if (files.empty()) {
    std::fprintf(stderr, "usage: %s FILE|DIR ...: no inputs given (or the directories are empty)\n", argv[0]);
    return 2;
  }
  for (const std::string& f : files) {
    std::ifstream in(f, std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "%s: cannot open\n", f.c_str());
      return 2;
    }
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string bytes = ss.str();
    std::fprintf(stderr, "running %s (%zu bytes)\n", f.c_str(), bytes.size());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::printf("%zu inputs ran\n", files.size());
  return 0;
}
