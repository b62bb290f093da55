/*
 * cclab/cclab.h - cclab's own extensions to the NCCL API.
 *
 * Everything NCCL itself declares lives in <cclab/nccl.h> (also reachable as <nccl.h>); this header
 * adds what a GPU-free runtime needs on top: host streams, the choice of backend, and observer hooks
 * on the executor's event stream.
 *
 * Usage (host backend, one process, two ranks):
 *
 *   ncclComm_t comms[2];  ncclCommInitAll(comms, 2, NULL);
 *   cudaStream_t s[2];    cclabStreamCreate(&s[0]); cclabStreamCreate(&s[1]);
 *   ncclGroupStart();
 *   for (int r = 0; r < 2; ++r) ncclAllReduce(in[r], out[r], n, ncclFloat, ncclSum, comms[r], s[r]);
 *   ncclGroupEnd();
 *   cclabStreamSynchronize(s[0]); cclabStreamSynchronize(s[1]);
 */
#ifndef CCLAB_CCLAB_H_
#define CCLAB_CCLAB_H_

#include <stddef.h>
#include <stdint.h>

#include "cclab/nccl.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CCLAB_VERSION_STRING "0.1.0"

/* ---- Backends ---------------------------------------------------------------------------------- */
typedef enum {
  cclabBackendHost = 0, /* CPU threads or processes play the GPUs; device memory is host memory */
  cclabBackendSim = 1,  /* SimGrid model of the fabric: collectives run in simulated time (docs/simulator.md) */
  cclabBackendCuda = 2, /* real GPUs: cclab's kernels on device memory and cudaStream_t streams (docs/gpu.md) */
} cclabBackend_t;

/* The backend communicators created from now on by this process use. Default: CCLAB_BACKEND
 * ("host", "sim", "cuda") or host. Returns ncclInvalidArgument for a backend not built in. */
ncclResult_t cclabSetBackend(cclabBackend_t backend);
ncclResult_t cclabGetBackend(cclabBackend_t* backend);
const char* cclabBackendName(cclabBackend_t backend);

/* ---- Host streams -------------------------------------------------------------------------------
 * A host stream is an in-order queue of operations executed asynchronously by a worker thread; it is
 * passed to the NCCL calls wherever they take a cudaStream_t. The NULL stream means "blocking": the
 * call returns when the operation is complete. */
ncclResult_t cclabStreamCreate(cudaStream_t* stream);
/* Waits until every operation queued on the stream so far is complete; returns the first error any
 * of them raised (and clears it). */
ncclResult_t cclabStreamSynchronize(cudaStream_t stream);
/* Returns ncclSuccess when the stream is idle, ncclInProgress while work is pending. */
ncclResult_t cclabStreamQuery(cudaStream_t stream);
ncclResult_t cclabStreamDestroy(cudaStream_t stream);

/* On the CUDA backend these create, synchronise, query and destroy real CUDA streams
 * (cudaStreamCreateWithFlags(cudaStreamNonBlocking), ...) of the current device, so a program can stay
 * free of CUDA headers; a program that has them may pass its own cudaStream_t to every NCCL call. */

/* The device the calling thread's next communicator and streams use (cudaSetDevice on the CUDA
 * backend; nothing on the host and sim backends, whose ranks are numbered by rank). */
ncclResult_t cclabSetDevice(int dev);

/* How many devices cclabSetDevice can choose from: cudaGetDeviceCount on the CUDA backend. The host and
 * sim backends have none to choose (a rank is a CPU thread or a simulated GPU, numbered by rank) and
 * report 0. A program that places rank r on device r % count when count > 0, as `cclab perf -g N` does,
 * therefore runs unchanged on every backend. */
ncclResult_t cclabGetDeviceCount(int* count);

/* What device `dev` is, for reports: on the CUDA backend its name ("NVIDIA H100 80GB HBM3") and PCI bus
 * id ("0000:07:00.0", as cudaDeviceGetPCIBusId); on the host and sim backends the name is "cclab host" or
 * "cclab sim" and the bus id is empty, for any dev >= 0. Each string is cut to fit its buffer (lengths
 * in bytes, the terminating NUL included); a buffer may be NULL when its length is 0. */
ncclResult_t cclabGetDeviceName(int dev, char* name, int nameLen, char* pciBusId, int pciBusIdLen);

/* Work queued on `waiter` after this call starts once everything queued on `waitee` before it has
 * completed (cudaEventRecord on waitee + cudaStreamWaitEvent on waiter). */
ncclResult_t cclabStreamWaitStream(cudaStream_t waiter, cudaStream_t waitee);

/* ---- Simulated time (sim backend) ------------------------------------------------------------------
 * Under CCLAB_BACKEND=sim (or cclabSetBackend(cclabBackendSim)) communicators run their collectives in
 * the process's simulated world (CCLAB_TOPO=PRESET[:MACHINES] or NCCL_TOPO_FILE; dgx-h100 by default)
 * on the program's host buffers; a stream synchronisation (or a NULL-stream call) simulates what is
 * queued. Queue every rank's part of a collective before synchronising (drive all ranks from one
 * thread). On the host backend these calls do nothing (cclabSimTime fails), so one program runs on both.
 *
 * cclabSimKernel: queues a compute kernel on `stream` for the GPU `rank` plays, lasting `seconds` plus
 * `flops` at the GPU's tensor peak (sim/calibration.cc). cclabSimTime: the simulated clock, microseconds. */
ncclResult_t cclabSimKernel(cudaStream_t stream, int rank, double flops, double seconds);
ncclResult_t cclabSimTime(double* us);

/* Copies `bytes` between host memory and the current backend's memory (what ncclMemAlloc returns: host
 * memory on the host backend, device memory on CUDA), in any direction, synchronously - so a program can
 * fill and check its buffers without knowing the backend. */
ncclResult_t cclabMemcpy(void* dst, const void* src, size_t bytes);

/* ---- Observer hooks -----------------------------------------------------------------------------
 * Every primitive step an executor performs (one FIFO slice moved between two ranks, or a local
 * copy) is reported to the communicator's observer, if one is set. Nothing is computed when none is
 * set. The callback runs on the executor's thread and must be thread-safe. */
typedef enum {
  cclabPrimSend = 0,
  cclabPrimRecv = 1,
  cclabPrimRecvReduceSend = 2,
  cclabPrimRecvReduceCopySend = 3,
  cclabPrimRecvCopySend = 4,
  cclabPrimCopySend = 5,
  cclabPrimRecvReduceCopy = 6,
  cclabPrimLocalCopy = 7,
  cclabPrimSendFromOutput = 8, /* the tree root sends its final result down */
  cclabPrimNumKinds = 9
} cclabPrim_t;

typedef enum {
  cclabCollAllReduce = 0,
  cclabCollBroadcast = 1,
  cclabCollReduce = 2,
  cclabCollAllGather = 3,
  cclabCollReduceScatter = 4,
  cclabCollSendRecv = 5, /* Send, Recv, and the AlltoAll/Gather/Scatter built from them */
  cclabCollNumKinds = 6
} cclabColl_t;

typedef struct {
  int rank;          /* rank performing the step */
  int channel;       /* channel index */
  int sendPeer;      /* rank the step sends to, -1 if none */
  int recvPeer;      /* rank the step receives from, -1 if none */
  uint64_t step;     /* FIFO step counter on that connection when the slice began */
  cclabPrim_t prim;  /* the primitive */
  cclabColl_t coll;  /* the collective the step belongs to */
  uint64_t opCount;  /* per-communicator sequence number of the collective */
  size_t bytes;      /* payload bytes moved by this step */
  double beginUs;    /* executor clock, microseconds, when the step started waiting */
  double endUs;      /* executor clock, microseconds, when the step's data was posted */
  uint64_t offset;   /* byte offset of the slice in the rank's buffer (which chunk it is) */
  double dataUs;     /* executor clock when the step's waits were satisfied and its data began to move */
} cclabStepEvent_t;

typedef void (*cclabObserverFn)(const cclabStepEvent_t* event, void* userData);

/* Sets (or, with fn == NULL, clears) the observer of a communicator. Must not be called while
 * operations of that communicator are in flight. */
ncclResult_t cclabCommSetObserver(ncclComm_t comm, cclabObserverFn fn, void* userData);

/* ---- Introspection ------------------------------------------------------------------------------ */
/* Number of channels the communicator runs collectives on (NCCL's comm->nChannels; NCCL_DEBUG=INFO logs
 * them as "Channel 00/24"): a collective runs on these or, for a small size, on fewer (the tuner's
 * choice; NCCL_DEBUG_SUBSYS=TUNING logs it per call). Under the sim backend, the channels of the
 * simulated machine: NCCL's count for it (the fewer of the ring and tree graphs' channels, doubled)
 * within NCCL_MIN/MAX_NCHANNELS, what the simulation runs and `cclab tune` shows. */
ncclResult_t cclabCommChannels(ncclComm_t comm, int* nChannels);
/* The ring order of a channel: ranks[i] is the i-th rank on the ring, starting at rank 0. */
ncclResult_t cclabCommRing(ncclComm_t comm, int channel, int* ranks);
/* This rank's place in the tree a channel runs for tree all_reduce: *tree is 0 or 1 (which of the
 * double binary tree's two trees), *up the parent (-1 at the root), down[0..2] the children (-1 where
 * none; the intra-machine chain child first, as NCCL's "Trees [c] d0/d1/d2->rank->up" log). */
ncclResult_t cclabCommTree(ncclComm_t comm, int channel, int* tree, int* up, int* down);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CCLAB_CCLAB_H_ */
