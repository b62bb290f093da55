// runtime/backends/cuda/cuda_backend_stub.cc - cuda_backend.h when cclab is built without CUDA (CCLAB_CUDA=OFF or
// no nvcc): the CUDA backend is absent and says so.
#include "backends/cuda/cuda_backend.h"

#include "base/log.h"

namespace cclab {

namespace {
ncclResult_t absent(const char* what) {
  return report_error(ncclInvalidUsage, "%s: this cclab was built without the CUDA backend (CCLAB_CUDA=OFF or no nvcc)",
                      what);
}
}  // namespace

struct CudaComm {};

bool cuda_available(std::string* why) {
  if (why) *why = "this cclab was built without the CUDA backend";
  return false;
}
ncclResult_t cuda_current_device(int*) { return absent("cudaGetDevice"); }
ncclResult_t cuda_device_pci(int, int64_t*, int*) { return absent("cudaDeviceGetPCIBusId"); }
ncclResult_t cuda_attach(ncclComm_t) { return absent("CUDA backend"); }
ncclResult_t cuda_connect_recv(ncclComm_t, Conn*, TransportKind, const std::string&, int, int) {
  return absent("CUDA connection");
}
ncclResult_t cuda_connect_send(ncclComm_t, Conn*, TransportKind, const std::string&, int, int, double) {
  return absent("CUDA connection");
}
ncclResult_t cuda_launch(std::vector<OpDesc>&) { return absent("CUDA launch"); }
void cuda_abort(ncclComm_t) {}
void cuda_detach(ncclComm_t) {}
ncclResult_t cuda_mem_alloc(void**, size_t) { return absent("ncclMemAlloc"); }
ncclResult_t cuda_mem_free(void*) { return absent("ncclMemFree"); }
ncclResult_t cuda_read(void*, const void*, size_t) { return absent("reading device memory"); }
ncclResult_t cuda_stream(CudaStreamOp, cudaStream_t*) { return absent("CUDA streams"); }
ncclResult_t cuda_stream_wait(cudaStream_t, cudaStream_t) { return absent("CUDA streams"); }
ncclResult_t cuda_set_device(int) { return absent("cclabSetDevice"); }
ncclResult_t cuda_device_count(int*) { return absent("cclabGetDeviceCount"); }
bool cuda_ll128_safe(std::string*) { return true; }  // never asked: no communicator runs on CUDA here
ncclResult_t cuda_device_name(int, std::string*, std::string*) { return absent("cclabGetDeviceName"); }
const CustomAlgo* cuda_builtin_custom_algo(const std::string&, std::string*) { return nullptr; }
std::string cuda_builtin_custom_algo_names() { return ""; }
ncclResult_t cuda_resident_blocks(int, int* blocks) {
  *blocks = 0;
  return absent("the CUDA backend");
}

}  // namespace cclab
