// runtime/base/param.cc - NCCL_* / CCLAB_* parameters from the environment and nccl.conf.
//
// Unlike NCCL, the configuration files are not copied into the environment with setenv: setenv
// races with getenv in other threads, and tests need to forget them again. They live in a map instead.
#include "base/param.h"

#include <pwd.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <unordered_map>

#include "base/log.h"

namespace cclab {
namespace {

struct ConfigValue {
  std::string value;
  std::string path;  // the file it came from
};

struct Cached {
  ParamSource source = ParamSource::kUnset;
  std::string value;
  bool int_parsed = false;
  bool int_valid = false;
  int64_t int_value = 0;
};

// Heap-allocated and never freed: parameters may be read by threads still running while static
// destructors run at exit.
struct ParamState {
  std::mutex mutex;
  bool config_loaded = false;
  std::map<std::string, ConfigValue> config;
  std::unordered_map<std::string, Cached> cache;
};
ParamState& state() {
  static ParamState* s = new ParamState();
  return *s;
}

std::string trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

// Adds NAME=VALUE lines of `path` that are not defined yet (earlier files and lines win, as with
// NCCL's setenv(..., overwrite=0)). A missing file is not an error: none of them has to exist.
void load_config_file(const std::string& path, std::map<std::string, ConfigValue>* config) {
  std::ifstream in(path);
  if (!in) return;
  std::string line;
  while (std::getline(in, line)) {
    std::string t = trim(line);
    if (t.empty() || t[0] == '#') continue;
    size_t eq = t.find('=');
    if (eq == std::string::npos) continue;
    std::string name = trim(t.substr(0, eq));
    std::string value = trim(t.substr(eq + 1));
    if (name.empty() || value.empty()) continue;
    config->emplace(name, ConfigValue{value, path});
  }
}

std::string home_dir() {
  const char* home = getenv("HOME");
  if (home != nullptr && home[0] != '\0') return home;
  struct passwd pw;
  struct passwd* result = nullptr;
  char buf[4096];
  if (getpwuid_r(getuid(), &pw, buf, sizeof(buf), &result) == 0 && result != nullptr) return result->pw_dir;
  return "";
}

// Called with the state mutex held.
void ensure_config_locked(ParamState& s) {
  if (s.config_loaded) return;
  s.config_loaded = true;
  s.config.clear();
  const char* user_file = getenv("NCCL_CONF_FILE");
  if (user_file != nullptr && user_file[0] != '\0') {
    load_config_file(user_file, &s.config);
  } else {
    std::string home = home_dir();
    if (!home.empty()) load_config_file(home + "/.nccl.conf", &s.config);
  }
  load_config_file("/etc/nccl.conf", &s.config);
}

// Called with the state mutex held.
ParamSource lookup_locked(ParamState& s, const char* name, std::string* value, std::string* path) {
  const char* env = getenv(name);
  if (env != nullptr && env[0] != '\0') {
    *value = env;
    return ParamSource::kEnvironment;
  }
  ensure_config_locked(s);
  auto it = s.config.find(name);
  if (it == s.config.end()) return ParamSource::kUnset;
  *value = it->second.value;
  if (path) *path = it->second.path;
  return ParamSource::kConfigFile;
}

// Returns the cached entry for `name`, reading (and echoing) it on first use. Must be called without
// the mutex held: the echo logs.
Cached lookup_cached(const char* name) {
  ParamState& s = state();
  std::string path;
  Cached entry;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    auto it = s.cache.find(name);
    if (it != s.cache.end()) return it->second;
    entry.source = lookup_locked(s, name, &entry.value, &path);
    s.cache.emplace(name, entry);
  }
  if (entry.source == ParamSource::kEnvironment) {
    CCLAB_INFO(kLogEnv, "%s set by environment to %s.", name, entry.value.c_str());
  } else if (entry.source == ParamSource::kConfigFile) {
    CCLAB_INFO(kLogEnv, "%s set by configuration file %s to %s.", name, path.c_str(), entry.value.c_str());
  }
  return entry;
}

const char* source_name(ParamSource source) {
  return source == ParamSource::kConfigFile ? "configuration file" : "environment";
}

}  // namespace

bool parse_param_int(const char* text, int64_t* out) {
  if (text == nullptr) return false;
  std::string t = trim(text);
  if (t.empty()) return false;
  size_t i = 0;
  bool negative = false;
  if (t[i] == '+' || t[i] == '-') negative = t[i++] == '-';
  int base = 10;
  if (t.size() - i > 2 && t[i] == '0' && (t[i + 1] == 'x' || t[i + 1] == 'X')) {
    base = 16;
    i += 2;
  }
  if (i == t.size()) return false;
  // Only digits of the base may follow (strtoull alone would accept blanks and a second sign).
  for (size_t j = i; j < t.size(); ++j) {
    if (base == 10 ? !isdigit(static_cast<unsigned char>(t[j])) : !isxdigit(static_cast<unsigned char>(t[j]))) {
      return false;
    }
  }
  errno = 0;
  unsigned long long magnitude = strtoull(t.c_str() + i, nullptr, base);
  if (errno == ERANGE) return false;
  if (negative) {
    if (magnitude > static_cast<unsigned long long>(INT64_MAX) + 1) return false;
    *out = magnitude == static_cast<unsigned long long>(INT64_MAX) + 1 ? INT64_MIN : -static_cast<int64_t>(magnitude);
  } else {
    if (magnitude > static_cast<unsigned long long>(INT64_MAX)) return false;
    *out = static_cast<int64_t>(magnitude);
  }
  return true;
}

int64_t param_int(const char* name, int64_t default_value) {
  Cached entry = lookup_cached(name);
  if (entry.source == ParamSource::kUnset) return default_value;
  if (!entry.int_parsed) {
    int64_t value = 0;
    bool valid = parse_param_int(entry.value.c_str(), &value);
    {
      ParamState& s = state();
      std::lock_guard<std::mutex> lock(s.mutex);
      Cached& c = s.cache[name];
      // Another thread may have parsed it meanwhile; only the first one warns.
      if (c.int_parsed) return c.int_valid ? c.int_value : default_value;
      c.int_parsed = true;
      c.int_valid = valid;
      c.int_value = value;
    }
    if (!valid) {
      CCLAB_WARN("%s=%s (set by %s) is not an integer (decimal or 0x-hex); using the default %lld", name,
                 entry.value.c_str(), source_name(entry.source), static_cast<long long>(default_value));
      return default_value;
    }
    return value;
  }
  return entry.int_valid ? entry.int_value : default_value;
}

std::string param_str(const char* name, const char* default_value) {
  Cached entry = lookup_cached(name);
  if (entry.source == ParamSource::kUnset) return default_value ? default_value : "";
  return entry.value;
}

bool param_is_set(const char* name) { return lookup_cached(name).source != ParamSource::kUnset; }

ParamSource param_lookup_quiet(const char* name, std::string* value, std::string* config_path) {
  ParamState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  std::string v;
  ParamSource source = lookup_locked(s, name, &v, config_path);
  if (source != ParamSource::kUnset && value) *value = v;
  return source;
}

void reset_params_for_testing() {
  ParamState& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.cache.clear();
  s.config.clear();
  s.config_loaded = false;
}

}  // namespace cclab
