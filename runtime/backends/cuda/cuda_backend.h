// runtime/backends/cuda/cuda_backend.h - the runtime's side of the CUDA backend (CCLAB_BACKEND=cuda, or
// automatically when a GPU is present): communicators whose collectives run as cclab's own kernels
// (kernels/block_kernel.h through kernels/cuda/launch.h), one launch per collective with one thread
// block per channel, on the caller's cudaStream_t.
//
// Connections: each FIFO lives with its receiver, as on the host backend:
//   P2P  device memory of the receiver's GPU; the sender writes it through a direct pointer (same
//        process; peer access enabled when the GPUs differ) or a CUDA IPC handle (another process);
//   SHM  pinned host memory mapped into both GPUs (cudaHostAlloc in one process, a POSIX shm object
//        registered with cudaHostRegister between processes), when P2P is disabled (NCCL_P2P_DISABLE,
//        NCCL_P2P_LEVEL) or the GPUs cannot reach each other.
// The receiver publishes where its FIFO is through the host transport's rendezvous object named after
// the connection (transport.h), so no extra bootstrap round is needed.
//
// This file is the only part of the runtime that knows CUDA; built without CUDA, cuda_backend_stub.cc
// answers every call with a clear error.
#pragma once

#include <string>
#include <vector>

#include "cclab/cclab.h"
#include "core/comm.h"
#include "core/enqueue.h"

namespace cclab {

class Backend;
// The CUDA backend (cuda_adapter.cc), or nullptr with *why when it cannot run here (not built, no GPU).
Backend* cuda_backend_create(std::string* why);


// True when the CUDA backend is built in and a device is present; otherwise *why says what is missing.
bool cuda_available(std::string* why);
// The calling thread's current device (cudaGetDevice), as ncclCommInitRank uses.
ncclResult_t cuda_current_device(int* dev);
// CUDA device `dev`'s PCI bus id (cudaDeviceGetPCIBusId, in NCCL's packed form) and compute capability
// x10, which topology detection starts from (comm_topo.cc, graph/detect.h).
ncclResult_t cuda_device_pci(int dev, int64_t* busid, int* sm);
// Prepares a communicator for the CUDA backend (device, abort flag, status and connection tables).
ncclResult_t cuda_attach(ncclComm_t comm);
// Connection memory for comm->cuda communicators (comm.cc's connect_recv/connect_send call these).
ncclResult_t cuda_connect_recv(ncclComm_t comm, Conn* conn, TransportKind rendezvous, const std::string& name, int peer,
                               int buff_bytes);
ncclResult_t cuda_connect_send(ncclComm_t comm, Conn* conn, TransportKind rendezvous, const std::string& name, int peer,
                               int buff_bytes, double timeout_s);
// Launches a group's operations (all of CUDA communicators) on their streams; returns once queued.
ncclResult_t cuda_launch(std::vector<OpDesc>& ops);
// Before a communicator is freed: waits until its launches have finished (an aborted one stops within
// milliseconds; a kernel still waiting for a peer is waited for, warning every 10 s).
void cuda_detach(ncclComm_t comm);
// ncclCommAbort: raises the flag every kernel of the communicator polls.
void cuda_abort(ncclComm_t comm);
// ncclMemAlloc / ncclMemFree under the CUDA backend.
ncclResult_t cuda_mem_alloc(void** ptr, size_t bytes);
ncclResult_t cuda_mem_free(void* ptr);
// Reads `bytes` from a device pointer (a PreMulSum scalar with ncclScalarDevice residence).
ncclResult_t cuda_read(void* dst, const void* src, size_t bytes);

// cclabStream* and cclabSetDevice on the CUDA backend.
enum class CudaStreamOp { kCreate, kSynchronize, kQuery, kDestroy };
ncclResult_t cuda_stream(CudaStreamOp op, cudaStream_t* stream);
ncclResult_t cuda_stream_wait(cudaStream_t waiter, cudaStream_t waitee);
ncclResult_t cuda_set_device(int dev);
// cclabGetDeviceCount / cclabGetDeviceName on the CUDA backend.
ncclResult_t cuda_device_count(int* count);
// Whether LL128's lines can reach every peer whole: NCCL's LL128 relies on a 128-byte store arriving as
// one piece over NVLink, which holds for device memory reached by peer access but not for a FIFO in host
// memory (NCCL_P2P_DISABLE, NCCL_P2P_LEVEL, GPU pairs without peer access: the SHM fallback). False with
// *why; the communicator then leaves LL128 out of the protocols every rank agrees on.
bool cuda_ll128_safe(std::string* why);
ncclResult_t cuda_device_name(int dev, std::string* name, std::string* pci_bus_id);
// The custom algorithms built into the kernels (CCLAB_CUSTOM_ALGOS, kernels/cuda/launch.h: custom_kernel):
// the one named `name` (case-insensitive) or nullptr, *error set when two share a name or one takes
// NCCL's; and their names ("" for none). Backend::builtin_custom_algo.
const CustomAlgo* cuda_builtin_custom_algo(const std::string& name, std::string* error);
std::string cuda_builtin_custom_algo_names();
// How many blocks of cclab's kernels (NCCL_NTHREADS threads each) device `dev` runs at once
// (kernels/cuda/launch.h: resident_blocks); the channel count of ranks sharing a GPU is bounded by it.
ncclResult_t cuda_resident_blocks(int dev, int* blocks);

}  // namespace cclab
