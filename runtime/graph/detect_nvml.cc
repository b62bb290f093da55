// runtime/graph/detect_nvml.cc - NvmlApi over the driver's libnvidia-ml.so.1, loaded with dlopen at
// run time, so that cclab neither needs nvml.h to build nor the library to run (detect.h).
//
// Only what detection calls is declared here, with the types of the NVML API reference (NVML 12):
// handles are opaque pointers, return codes ints (NVML_SUCCESS 0), nvmlEnableState_t an int
// (NVML_FEATURE_ENABLED 1), nvmlNvLinkCapability_t an int (NVML_NVLINK_CAP_P2P_SUPPORTED 0), and
// nvmlPciInfo_t { char busIdLegacy[16]; unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
// char busId[32]; }. The _v2 entry points are the ones whose nvmlPciInfo_t carries the 32-byte busId.
#include <dlfcn.h>

#include <string>
#include <vector>

#include "graph/detect.h"

namespace cclab {
namespace {

struct NvmlDeviceOpaque;
using NvmlDevice = NvmlDeviceOpaque*;
using NvmlReturn = int;
constexpr NvmlReturn kNvmlSuccess = 0;
constexpr int kNvmlFeatureEnabled = 1;
constexpr int kNvmlNvlinkCapP2pSupported = 0;

struct NvmlPciInfo {
  char bus_id_legacy[16];
  unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
};

class DlNvml : public NvmlApi {
 public:
  ~DlNvml() override {
    if (shutdown_ != nullptr) shutdown_();
    if (lib_ != nullptr) dlclose(lib_);
  }
  bool open(std::string* why);

  std::string name() const override { return "libnvidia-ml.so.1"; }
  bool device_handle(const std::string& busid, int* dev, std::string* why) override {
    NvmlDevice d = nullptr;
    if (!ok(by_busid_(busid.c_str(), &d), "nvmlDeviceGetHandleByPciBusId_v2", why)) return false;
    *dev = static_cast<int>(devices_.size());
    devices_.push_back(d);
    return true;
  }
  bool compute_capability(int dev, int* major, int* minor, std::string* why) override {
    return valid(dev, why) && ok(cc_(devices_[dev], major, minor), "nvmlDeviceGetCudaComputeCapability", why);
  }
  bool nvlink_p2p_supported(int dev, unsigned link, bool* supported, std::string* why) override {
    unsigned v = 0;
    if (!valid(dev, why) || !ok(cap_(devices_[dev], link, kNvmlNvlinkCapP2pSupported, &v),
                                "nvmlDeviceGetNvLinkCapability", why)) {
      return false;
    }
    *supported = v != 0;
    return true;
  }
  bool nvlink_active(int dev, unsigned link, bool* active, std::string* why) override {
    int state = 0;
    if (!valid(dev, why) || !ok(state_(devices_[dev], link, &state), "nvmlDeviceGetNvLinkState", why)) return false;
    *active = state == kNvmlFeatureEnabled;
    return true;
  }
  bool nvlink_remote_busid(int dev, unsigned link, std::string* busid, std::string* why) override {
    NvmlPciInfo info{};
    if (!valid(dev, why) || !ok(remote_(devices_[dev], link, &info), "nvmlDeviceGetNvLinkRemotePciInfo_v2", why)) {
      return false;
    }
    info.bus_id[sizeof info.bus_id - 1] = '\0';
    *busid = info.bus_id;
    return true;
  }

 private:
  template <typename F>
  bool sym(const char* name, F* out, std::string* why) {
    *out = reinterpret_cast<F>(dlsym(lib_, name));
    if (*out == nullptr && why) *why = std::string("libnvidia-ml.so.1 lacks ") + name;
    return *out != nullptr;
  }
  bool ok(NvmlReturn r, const char* call, std::string* why) const {
    if (r == kNvmlSuccess) return true;
    if (why) {
      const char* s = error_string_ ? error_string_(r) : nullptr;
      *why = std::string(call) + ": " + (s ? s : "error " + std::to_string(r));
    }
    return false;
  }
  bool valid(int dev, std::string* why) const {
    if (dev >= 0 && static_cast<size_t>(dev) < devices_.size()) return true;
    if (why) *why = "no NVML device " + std::to_string(dev);
    return false;
  }

  void* lib_ = nullptr;
  NvmlReturn (*shutdown_)() = nullptr;
  const char* (*error_string_)(NvmlReturn) = nullptr;
  NvmlReturn (*by_busid_)(const char*, NvmlDevice*) = nullptr;
  NvmlReturn (*cc_)(NvmlDevice, int*, int*) = nullptr;
  NvmlReturn (*cap_)(NvmlDevice, unsigned, int, unsigned*) = nullptr;
  NvmlReturn (*state_)(NvmlDevice, unsigned, int*) = nullptr;
  NvmlReturn (*remote_)(NvmlDevice, unsigned, NvmlPciInfo*) = nullptr;
  std::vector<NvmlDevice> devices_;
};

bool DlNvml::open(std::string* why) {
  lib_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib_ == nullptr) {
    const char* e = dlerror();
    if (why) *why = e ? e : "dlopen(libnvidia-ml.so.1) failed";
    return false;
  }
  NvmlReturn (*init)() = nullptr;
  decltype(shutdown_) shutdown = nullptr;
  if (!sym("nvmlInit_v2", &init, why) || !sym("nvmlShutdown", &shutdown, why) ||
      !sym("nvmlErrorString", &error_string_, why) || !sym("nvmlDeviceGetHandleByPciBusId_v2", &by_busid_, why) ||
      !sym("nvmlDeviceGetCudaComputeCapability", &cc_, why) || !sym("nvmlDeviceGetNvLinkCapability", &cap_, why) ||
      !sym("nvmlDeviceGetNvLinkState", &state_, why) || !sym("nvmlDeviceGetNvLinkRemotePciInfo_v2", &remote_, why)) {
    return false;
  }
  if (!ok(init(), "nvmlInit_v2", why)) return false;
  shutdown_ = shutdown;  // only once initialised
  return true;
}

}  // namespace

std::unique_ptr<NvmlApi> open_nvml(std::string* why) {
  auto n = std::make_unique<DlNvml>();
  if (!n->open(why)) return nullptr;
  return n;
}

}  // namespace cclab
