// runtime/backends/backends.cc - which backends exist and how each is made (core/backend.h): the host
// backend always; the CUDA backend when built and a GPU is present; the simulator's from its plugin,
// libcclab-sim.so, loaded on first use.
//
// The plugin is looked for in CCLAB_SIM_PLUGIN (a path), else next to the library this code is in
// (libcclab.so or libnccl.so.2: lib/ of an install, runtime/ of a build tree). It is opened with
// RTLD_LOCAL: its copies of SimGrid and the simulator stay private; the runtime's own symbols (errors,
// logging, communicators) are what it calls back into.
#include <dlfcn.h>

#include <array>
#include <atomic>
#include <mutex>
#include <string>

#include "backends/cuda/cuda_backend.h"
#include "backends/host/host_backend.h"
#include "base/log.h"
#include "base/param.h"
#include "core/backend.h"
#include "core/comm.h"
#include "core/enqueue.h"

namespace cclab {
namespace {

constexpr int kBackends = 3;  // cclabBackendHost, Sim, Cuda
std::mutex g_mu;
std::array<std::atomic<Backend*>, kBackends> g_made{};
std::array<std::string, kBackends> g_why;  // why a backend could not be made (kept: asked again, same answer)
std::array<bool, kBackends> g_tried{};

std::string library_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&library_dir), &info) == 0 || info.dli_fname == nullptr) return ".";
  std::string path = info.dli_fname;
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

Backend* load_sim_plugin(std::string* why) {
  std::string path = param_str("CCLAB_SIM_PLUGIN", nullptr);
  if (path.empty()) path = library_dir() + "/libcclab-sim.so";
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h == nullptr) {
    const char* e = dlerror();
    *why = "cannot load the simulator plugin " + path + " (" + (e ? e : "?") +
           "); it is built with the simulator (libsimgrid-dev; CCLAB_SIM_PLUGIN names another path)";
    return nullptr;
  }
  using Create = Backend* (*)(int abi, size_t comm_bytes, size_t op_bytes);
  auto create = reinterpret_cast<Create>(dlsym(h, "cclab_sim_backend_create"));
  if (create == nullptr) {
    *why = path + " is not cclab's simulator plugin (no cclab_sim_backend_create)";
    return nullptr;
  }
  Backend* b = create(kBackendAbi, sizeof(ncclComm), sizeof(OpDesc));
  if (b == nullptr) *why = path + " was built for another version of the runtime (backend ABI " +
                           std::to_string(kBackendAbi) + " asked)";
  return b;  // the plugin stays loaded for the life of the process
}

Backend* make(cclabBackend_t b, std::string* why) {
  switch (b) {
    case cclabBackendHost: return host_backend_create();
    case cclabBackendCuda: return cuda_backend_create(why);
    case cclabBackendSim: return load_sim_plugin(why);
  }
  *why = "no backend " + std::to_string(static_cast<int>(b));
  return nullptr;
}

std::atomic<int> g_backend{-1};  // -1: not chosen yet (CCLAB_BACKEND decides on first use)

}  // namespace

Backend* backend_get(cclabBackend_t b, std::string* why) {
  const int i = static_cast<int>(b);
  if (i < 0 || i >= kBackends) {
    *why = "no backend " + std::to_string(i) + " (host 0, sim 1, cuda 2)";
    return nullptr;
  }
  if (Backend* be = g_made[i].load(std::memory_order_acquire)) return be;
  std::lock_guard<std::mutex> lk(g_mu);
  if (!g_tried[i]) {
    g_tried[i] = true;
    g_made[i].store(make(b, &g_why[i]), std::memory_order_release);
  }
  if (g_made[i] == nullptr) *why = g_why[i];
  return g_made[i];
}

Backend* backend_if_made(cclabBackend_t b) {
  const int i = static_cast<int>(b);
  return i >= 0 && i < kBackends ? g_made[i].load(std::memory_order_acquire) : nullptr;
}

cclabBackend_t current_backend() {
  int b = g_backend.load();
  if (b < 0) {
    // CCLAB_BACKEND names the backend; unset, a present GPU means the CUDA backend (as NCCL needs one).
    const std::string env = param_str("CCLAB_BACKEND", nullptr);
    std::string why;
    if (env.empty()) {
      b = backend_get(cclabBackendCuda, &why) ? cclabBackendCuda : cclabBackendHost;
    } else if (env == "sim") {
      b = cclabBackendSim;
    } else if (env == "cuda") {
      b = backend_get(cclabBackendCuda, &why) ? cclabBackendCuda : cclabBackendHost;
      if (b == cclabBackendHost) CCLAB_WARN("CCLAB_BACKEND=cuda: %s; using host", why.c_str());
    } else {
      b = cclabBackendHost;
      if (env != "host") CCLAB_WARN("CCLAB_BACKEND=%s: unknown (host, sim, cuda); using host", env.c_str());
    }
    int expected = -1;
    g_backend.compare_exchange_strong(expected, b);
    b = g_backend.load();
  }
  return static_cast<cclabBackend_t>(b);
}

ncclResult_t set_current_backend(cclabBackend_t b) {
  std::string why;
  if (b != cclabBackendHost && b != cclabBackendSim && b != cclabBackendCuda)
    return report_error(ncclInvalidArgument, "cclabSetBackend: %d is not a backend (host, sim, cuda)",
                        static_cast<int>(b));
  if (b == cclabBackendCuda && !backend_get(b, &why))
    return report_error(ncclInvalidArgument, "cclabSetBackend: the CUDA backend cannot run here: %s", why.c_str());
  if (b == cclabBackendSim && !backend_get(b, &why))
    return report_error(ncclInvalidArgument, "cclabSetBackend: the sim backend cannot run here: %s", why.c_str());
  g_backend = b;
  return ncclSuccess;
}

}  // namespace cclab
