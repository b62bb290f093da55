// tests/cli/cli_test_util.h - what the `cclab` subcommand tests share: splitting reports into lines,
// fields and table rows, scratch files, and running the built executable.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace cclab {
namespace cli_test {

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

inline std::vector<std::string> fields_of(const std::string& line) {
  std::vector<std::string> f;
  std::istringstream in(line);
  for (std::string w; in >> w;) f.push_back(w);
  return f;
}

// The rows of a report (lines not starting with '#'), split at whitespace.
inline std::vector<std::vector<std::string>> table_rows(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& line : lines_of(text)) {
    if (line.empty() || line[0] == '#') continue;
    rows.push_back(fields_of(line));
  }
  return rows;
}

// A scratch file name unique to this test process: $TMPDIR/<prefix>_<pid>_<stem>.
inline std::string temp_path(const std::string& prefix, const std::string& stem) {
  return (std::getenv("TMPDIR") ? std::string(std::getenv("TMPDIR")) : std::string("/tmp")) + "/" + prefix + "_" +
         std::to_string(getpid()) + "_" + stem;
}

inline std::string read_file(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct RunResult {
  int status = -1;
  std::string out;  // stdout
  std::string err;  // stderr
};

// Runs `exe args` (with `env` assignments in front, if any); stdout and stderr kept apart.
inline RunResult run_command(const std::string& exe, const std::string& args, const std::string& env,
                             const std::string& scratch_prefix) {
  const std::string err_file = temp_path(scratch_prefix, "stderr.txt");
  const std::string cmd = env + (env.empty() ? "" : " ") + exe + " " + args + " 2>" + err_file;
  RunResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  const int ws = pclose(p);
  r.status = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
  r.err = read_file(err_file);
  std::remove(err_file.c_str());
  return r;
}

}  // namespace cli_test
}  // namespace cclab
