// runtime/core/backend.cc - the host's answers that Backend's methods default to (host streams, host
// memory), and IdleScope. Which backends exist and how they are made is backends/backends.cc's.
#include "core/backend.h"

#include <cstdlib>
#include <cstring>

#include "base/log.h"
#include "core/stream.h"

namespace cclab {

ncclResult_t Backend::connect_recv(ncclComm_t, Conn*, TransportKind, const std::string& name, int, int) {
  return report_error(ncclInternalError, "connection %s: the %s backend does not make connections", name.c_str(),
                      cclabBackendName(kind()));
}
ncclResult_t Backend::connect_send(ncclComm_t, Conn*, TransportKind, const std::string& name, int, int, double) {
  return report_error(ncclInternalError, "connection %s: the %s backend does not make connections", name.c_str(),
                      cclabBackendName(kind()));
}

ncclResult_t Backend::stream_create(cudaStream_t* s) {
  *s = host_stream_register(new HostStream);
  return ncclSuccess;
}

ncclResult_t Backend::stream_synchronize(cudaStream_t s) {
  bool valid = true;
  HostStream* hs = host_stream_lookup(s, &valid);
  if (!valid) return report_error(ncclInvalidArgument, "cclabStreamSynchronize: %p is not a host stream", (void*)s);
  return hs ? hs->synchronize() : ncclSuccess;
}

ncclResult_t Backend::stream_query(cudaStream_t s) {
  bool valid = true;
  HostStream* hs = host_stream_lookup(s, &valid);
  if (!valid) return report_error(ncclInvalidArgument, "cclabStreamQuery: %p is not a host stream", (void*)s);
  return (!hs || hs->idle()) ? ncclSuccess : ncclInProgress;
}

ncclResult_t Backend::stream_destroy(cudaStream_t s) {
  bool valid = true;
  HostStream* hs = host_stream_lookup(s, &valid);
  if (!valid || !hs) return report_error(ncclInvalidArgument, "cclabStreamDestroy: %p is not a host stream", (void*)s);
  host_stream_unregister(s);
  delete hs;  // drains its queue first
  return ncclSuccess;
}

ncclResult_t Backend::stream_wait(cudaStream_t waiter, cudaStream_t waitee) {
  bool v1 = true, v2 = true;
  HostStream* a = host_stream_lookup(waiter, &v1);
  HostStream* b = host_stream_lookup(waitee, &v2);
  if (!v1 || !v2)
    return report_error(ncclInvalidArgument, "cclabStreamWaitStream: %p is not a host stream",
                        (void*)(!v1 ? waiter : waitee));
  if (a == nullptr || b == nullptr || a == b) return ncclSuccess;  // the NULL stream is always complete
  const uint64_t target = b->enqueued_count();
  a->enqueue([b, target] {
    b->wait_for(target);
    return ncclSuccess;
  });
  return ncclSuccess;
}

ncclResult_t Backend::mem_alloc(void** ptr, size_t bytes) {
  void* p = aligned_alloc(4096, (bytes + 4095) / 4096 * 4096);
  if (!p) return report_error(ncclSystemError, "ncclMemAlloc: cannot allocate %zu bytes", bytes);
  *ptr = p;
  return ncclSuccess;
}

ncclResult_t Backend::mem_free(void* ptr) {
  free(ptr);
  return ncclSuccess;
}

ncclResult_t Backend::copy_to_host(void* dst, const void* src, size_t bytes) {
  memmove(dst, src, bytes);
  return ncclSuccess;
}

ncclResult_t Backend::device_name(int, std::string* name, std::string* pci_bus_id) {
  *name = std::string("cclab ") + cclabBackendName(kind());
  pci_bus_id->clear();
  return ncclSuccess;
}

ncclResult_t Backend::sim_time(double* us) {
  *us = 0;
  return report_error(ncclInvalidUsage, "cclabSimTime: no simulated world (CCLAB_BACKEND=sim and a communicator)");
}

Backend& current() {
  const cclabBackend_t b = current_backend();
  std::string why;
  if (Backend* be = backend_get(b, &why)) return *be;
  return *backend_get(cclabBackendHost, &why);  // current_backend() warned when it fell back
}

IdleScope::IdleScope() {
  if ((told_ = backend_if_made(cclabBackendSim)) != nullptr) told_->idle_begin();
}

IdleScope::~IdleScope() {
  if (told_) told_->idle_end();
}

}  // namespace cclab
