// runtime/graph/custom_algo.cc - loading custom algorithm plugins (custom_algo.h).
#include "graph/custom_algo.h"

#include <dlfcn.h>
#include <strings.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>

namespace cclab {
namespace {

struct Registry {
  std::once_flag once;
  std::vector<CustomAlgo> algos;
  std::string error;
};

Registry& registry() {
  static Registry r;
  return r;
}

bool load_one(const std::string& path, std::vector<CustomAlgo>* out, std::string* error) {
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* e = dlerror();
    *error = "CCLAB_ALGO_PLUGIN: cannot load " + path + ": " + (e ? e : "dlopen failed");
    return false;
  }
  using Entry = const CustomAlgoDesc* (*)();
  auto entry = reinterpret_cast<Entry>(dlsym(h, "cclab_custom_algorithm"));
  if (entry == nullptr) {
    *error = "CCLAB_ALGO_PLUGIN: " + path +
             " exports no cclab_custom_algorithm(): is it a custom algorithm (CCLAB_CUSTOM_ALGORITHM(YourAlgo) in "
             "the file, see docs/custom-algorithms.md)?";
    return false;
  }
  const CustomAlgoDesc* d = entry();
  if (d == nullptr || d->abi != kCustomAlgoAbi || d->sizeof_work != sizeof(CollWork) ||
      d->sizeof_conn != sizeof(ConnInfo) || d->sizeof_vtable != sizeof(ExecVTable) ||
      d->sizeof_site != sizeof(WaitSite) || d->sizeof_record != sizeof(StepRecord)) {
    *error = "CCLAB_ALGO_PLUGIN: " + path + " was compiled against other cclab sources (interface version " +
             std::to_string(d ? d->abi : -1) + ", this cclab's is " + std::to_string(kCustomAlgoAbi) +
             "): rebuild it with this checkout's kernels/custom.h";
    return false;
  }
  if (d->name == nullptr || d->name[0] == '\0' || d->supports == nullptr || d->peers == nullptr) {
    *error = "CCLAB_ALGO_PLUGIN: " + path + ": the algorithm has no name, supports() or peers()";
    return false;
  }
  std::string why;
  if (!custom_algo_name_ok(d->name, *out, &why)) {
    *error = "CCLAB_ALGO_PLUGIN: " + path + ": " + why;
    return false;
  }
  out->push_back(CustomAlgo{d->name, path, d});
  return true;
}

}  // namespace

bool custom_algo_name_ok(const char* name, const std::vector<CustomAlgo>& taken, std::string* why) {
  for (const char* c = name; *c; ++c)
    if (!(isalnum(static_cast<unsigned char>(*c)) || *c == '_' || *c == '-')) {
      *why = std::string("algorithm name \"") + name + "\" must be letters, digits, '_' or '-' (it is an NCCL_ALGO value)";
      return false;
    }
  static const char* const kBuiltIn[] = {"Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"};
  for (const char* b : kBuiltIn)
    if (strcasecmp(b, name) == 0) {
      *why = std::string("algorithm name \"") + name + "\" is one of NCCL's own; rename it";
      return false;
    }
  for (const CustomAlgo& a : taken)
    if (strcasecmp(a.name.c_str(), name) == 0) {
      *why = "it and " + a.path + " both define algorithm \"" + name + "\"";
      return false;
    }
  return true;
}

bool custom_algos_load(std::string* error) {
  Registry& r = registry();
  std::call_once(r.once, [&r] {
    const char* env = getenv("CCLAB_ALGO_PLUGIN");
    if (env == nullptr || env[0] == '\0') return;
    std::string list = env;
    size_t start = 0;
    while (start <= list.size()) {
      size_t end = list.find(':', start);
      if (end == std::string::npos) end = list.size();
      const std::string path = list.substr(start, end - start);
      if (!path.empty() && !load_one(path, &r.algos, &r.error)) return;
      start = end + 1;
    }
  });
  if (!r.error.empty()) {
    if (error) *error = r.error;
    return false;
  }
  return true;
}

const std::vector<CustomAlgo>& custom_algos() { return registry().algos; }

const CustomAlgo* custom_algo_find(const std::string& name) {
  for (const CustomAlgo& a : registry().algos)
    if (strcasecmp(a.name.c_str(), name.c_str()) == 0) return &a;
  return nullptr;
}

const CustomAlgo* custom_algo_for_env(const std::string& value, std::string* error) {
  if (value.empty() || value.find_first_of(",;:^") != std::string::npos) return nullptr;  // NCCL's syntax
  if (!custom_algos_load(error)) return nullptr;
  return custom_algo_find(value);
}

std::string custom_algo_names() {
  std::string s;
  for (const CustomAlgo& a : registry().algos) s += (s.empty() ? "" : ", ") + a.name;
  if (s.empty()) s = getenv("CCLAB_ALGO_PLUGIN") ? "none loaded" : "none loaded (CCLAB_ALGO_PLUGIN is not set)";
  return s;
}

bool custom_supports(const CustomAlgo& a, CollKind coll, const CustomTopo& topo, std::string* why) {
  const char* r = a.desc->supports(coll, topo);
  if (r == nullptr) return true;
  if (why) *why = r;
  return false;
}

bool custom_peers(const CustomAlgo& a, const CustomTopo& topo, int rank, std::vector<int>* out, std::string* error) {
  std::vector<int> buf(kMaxCustomPeers + 1, -1);
  const int n = a.desc->peers(topo, rank, buf.data(), kMaxCustomPeers);
  if (n < 0 || n > kMaxCustomPeers) {
    *error = a.name + ": peers() of rank " + std::to_string(rank) + " returned " + std::to_string(n) + " (at most " +
             std::to_string(kMaxCustomPeers) + " peers)";
    return false;
  }
  out->assign(buf.begin(), buf.begin() + n);
  for (int p : *out)
    if (p < 0 || p >= topo.nranks || p == rank) {
      *error = a.name + ": peers() of rank " + std::to_string(rank) + " names rank " + std::to_string(p) +
               (p == rank ? " (itself)" : " (out of 0.." + std::to_string(topo.nranks - 1) + ")");
      return false;
    }
  std::sort(out->begin(), out->end());
  out->erase(std::unique(out->begin(), out->end()), out->end());
  return true;
}

bool custom_all_peers(const CustomAlgo& a, const CustomTopo& topo, std::vector<std::vector<int>>* out,
                      std::string* error) {
  out->assign(topo.nranks, {});
  for (int r = 0; r < topo.nranks; ++r)
    if (!custom_peers(a, topo, r, &(*out)[r], error)) return false;
  for (int r = 0; r < topo.nranks; ++r)
    for (int q : (*out)[r])
      if (!std::binary_search((*out)[q].begin(), (*out)[q].end(), r)) {
        *error = a.name + ": rank " + std::to_string(r) + " declares rank " + std::to_string(q) + " a peer but rank " +
                 std::to_string(q) + "'s peers() does not declare rank " + std::to_string(r) +
                 " (a connection needs both ends)";
        return false;
      }
  return true;
}

}  // namespace cclab
