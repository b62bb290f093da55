// tests/base/test_env.h - helpers for tests that change NCCL_* variables: a scoped environment, a
// temporary directory, and capture of a file descriptor (stdout, stderr) into a string.
#pragma once

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <initializer_list>
#include <map>
#include <sstream>
#include <string>
#include <utility>

#include "base/log.h"
#include "base/param.h"

namespace cclab {
namespace testing_env {

// Sets variables for the lifetime of the object and restores the previous values after; resets the
// log and parameter caches on both ends so each test sees its own environment.
class ScopedEnv {
 public:
  ScopedEnv() { reset(); }
  // ScopedEnv env{{"NCCL_ALGO", "ring"}, {"CCLAB_TIMEOUT", "20"}}: those set for the object's lifetime.
  ScopedEnv(std::initializer_list<std::pair<const char*, std::string>> vars) {
    for (const auto& v : vars) {
      remember(v.first);
      setenv(v.first, v.second.c_str(), 1);
    }
    reset();
  }
  ~ScopedEnv() {
    for (const auto& kv : saved_) {
      if (kv.second.first) {
        setenv(kv.first.c_str(), kv.second.second.c_str(), 1);
      } else {
        unsetenv(kv.first.c_str());
      }
    }
    reset();
  }
  void set(const std::string& name, const std::string& value) {
    remember(name);
    setenv(name.c_str(), value.c_str(), 1);
    reset();
  }
  void unset(const std::string& name) {
    remember(name);
    unsetenv(name.c_str());
    reset();
  }

 private:
  void remember(const std::string& name) {
    if (saved_.count(name)) return;
    const char* old = getenv(name.c_str());
    saved_[name] = {old != nullptr, old ? old : ""};
  }
  static void reset() {
    reset_params_for_testing();
    reset_log_for_testing();
  }
  std::map<std::string, std::pair<bool, std::string>> saved_;
};

// A fresh directory under $TMPDIR (or /tmp), removed with its files at the end.
class TempDir {
 public:
  TempDir() {
    const char* base = getenv("TMPDIR");
    std::string templ = std::string(base && base[0] ? base : "/tmp") + "/cclab-test-XXXXXX";
    path_ = mkdtemp(&templ[0]) ? templ : std::string();
  }
  ~TempDir() {
    if (!path_.empty()) std::system(("rm -rf '" + path_ + "'").c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
}

// Redirects `fd` into a temporary file until text() is called (or the object dies).
class CaptureFd {
 public:
  explicit CaptureFd(int fd) : fd_(fd) {
    fflush(nullptr);
    path_ = dir_.path() + "/capture";
    int file = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    saved_ = ::dup(fd_);
    ::dup2(file, fd_);
    ::close(file);
  }
  ~CaptureFd() { restore(); }
  std::string text() {
    restore();
    return read_file(path_);
  }

 private:
  void restore() {
    if (saved_ < 0) return;
    fflush(nullptr);
    ::dup2(saved_, fd_);
    ::close(saved_);
    saved_ = -1;
  }
  int fd_;
  int saved_ = -1;
  TempDir dir_;
  std::string path_;
};

}  // namespace testing_env
}  // namespace cclab
