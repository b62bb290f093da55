// runtime/backends/cuda/cuda_adapter.cc - the CUDA backend behind core/backend.h: each method is one of
// cuda_backend.h's functions (cuda_backend.cc with CUDA, cuda_backend_stub.cc without).
#include "backends/cuda/cuda_backend.h"
#include "core/backend.h"

namespace cclab {
namespace {

class CudaBackend final : public Backend {
 public:
  cclabBackend_t kind() const override { return cclabBackendCuda; }
  ncclResult_t init_device(int* dev) override { return cuda_current_device(dev); }
  ncclResult_t device_pci(int dev, int64_t* busid, int* sm) override { return cuda_device_pci(dev, busid, sm); }
  ncclResult_t resident_blocks(int dev, int* blocks) override { return cuda_resident_blocks(dev, blocks); }
  bool ll128_safe(std::string* why) override { return cuda_ll128_safe(why); }
  bool runs_custom_plugins() const override { return false; }
  const CustomAlgo* builtin_custom_algo(const std::string& name, std::string* error) override {
    return cuda_builtin_custom_algo(name, error);
  }
  std::string builtin_custom_algo_names() override { return cuda_builtin_custom_algo_names(); }
  ncclResult_t attach(ncclComm_t comm) override { return cuda_attach(comm); }
  void detach(ncclComm_t comm) override { cuda_detach(comm); }
  void abort(ncclComm_t comm) override { cuda_abort(comm); }
  bool makes_connections() const override { return true; }
  ncclResult_t connect_recv(ncclComm_t comm, Conn* conn, TransportKind rendezvous, const std::string& name, int peer,
                            int buff_bytes) override {
    return cuda_connect_recv(comm, conn, rendezvous, name, peer, buff_bytes);
  }
  ncclResult_t connect_send(ncclComm_t comm, Conn* conn, TransportKind rendezvous, const std::string& name, int peer,
                            int buff_bytes, double timeout_s) override {
    return cuda_connect_send(comm, conn, rendezvous, name, peer, buff_bytes, timeout_s);
  }
  ncclResult_t launch(std::vector<OpDesc>& ops) override { return cuda_launch(ops); }
  ncclResult_t stream_create(cudaStream_t* s) override { return cuda_stream(CudaStreamOp::kCreate, s); }
  ncclResult_t stream_synchronize(cudaStream_t s) override { return cuda_stream(CudaStreamOp::kSynchronize, &s); }
  ncclResult_t stream_query(cudaStream_t s) override { return cuda_stream(CudaStreamOp::kQuery, &s); }
  ncclResult_t stream_destroy(cudaStream_t s) override { return cuda_stream(CudaStreamOp::kDestroy, &s); }
  ncclResult_t stream_wait(cudaStream_t waiter, cudaStream_t waitee) override {
    return cuda_stream_wait(waiter, waitee);
  }
  ncclResult_t mem_alloc(void** ptr, size_t bytes) override { return cuda_mem_alloc(ptr, bytes); }
  ncclResult_t mem_free(void* ptr) override { return cuda_mem_free(ptr); }
  ncclResult_t copy_to_host(void* dst, const void* src, size_t bytes) override { return cuda_read(dst, src, bytes); }
  ncclResult_t set_device(int dev) override { return cuda_set_device(dev); }
  ncclResult_t device_count(int* count) override { return cuda_device_count(count); }
  ncclResult_t device_name(int dev, std::string* name, std::string* pci_bus_id) override {
    return cuda_device_name(dev, name, pci_bus_id);
  }
};

}  // namespace

Backend* cuda_backend_create(std::string* why) {
  if (!cuda_available(why)) return nullptr;
  return new CudaBackend;
}

}  // namespace cclab
