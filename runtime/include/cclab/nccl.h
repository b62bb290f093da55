/*
 * cclab/nccl.h - the NCCL 2.28.9 public API, as implemented by cclab.
 *
 * Names, types, enum values and signatures follow NVIDIA's nccl.h 2.28.9 so that code written for
 * NCCL compiles against cclab unchanged (tests/abi checks this against the CUDA toolkit's header when
 * one is installed). cclab's own extensions live in <cclab/cclab.h>.
 *
 * Without the CUDA toolkit, cudaStream_t is declared here exactly as CUDA declares it (a pointer to
 * the opaque struct CUstream_st), so host-backend programs need no CUDA headers.
 */
#ifndef NCCL_H_
#define NCCL_H_

#if defined(CCLAB_WITH_CUDA_HEADERS) || defined(__CUDACC__)
/* NVIDIA's nccl.h also brings in the half, bfloat16 and fp8 types (under the same conditions), and NCCL
 * programs rely on that, so with CUDA headers in use this header includes them too. */
#include <cuda_runtime.h>
#include <cuda_fp16.h>
#if CUDART_VERSION >= 11000
#include <cuda_bf16.h>
#endif
#if defined(__cplusplus) && CUDART_VERSION >= 11080
#include <cuda_fp8.h>
#endif
#else
#ifndef CCLAB_CUDASTREAM_DECLARED
#define CCLAB_CUDASTREAM_DECLARED
typedef struct CUstream_st* cudaStream_t;
#endif
#endif

#define NCCL_MAJOR 2
#define NCCL_MINOR 28
#define NCCL_PATCH 9
#define NCCL_SUFFIX ""

#define NCCL_VERSION_CODE 22809
#define NCCL_VERSION(X, Y, Z) \
  (((X) <= 2 && (Y) <= 8) ? (X) * 1000 + (Y) * 100 + (Z) : (X) * 10000 + (Y) * 100 + (Z))

/* Outside extern "C": C++ forbids including a standard header inside a linkage specification. */
#include <limits.h> /* INT_MIN, for NCCL_CONFIG_UNDEF_INT */
#include <stddef.h> /* size_t, NULL */

#ifdef __cplusplus
extern "C" {
#endif

/* Opaque handle to a communicator. */
typedef struct ncclComm* ncclComm_t;
/* Opaque handle to a registered memory window. */
typedef struct ncclWindow_vidmem* ncclWindow_t;
#define NCCL_COMM_NULL NULL

#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

/* Error type */
typedef enum {
  ncclSuccess = 0,
  ncclUnhandledCudaError = 1,
  ncclSystemError = 2,
  ncclInternalError = 3,
  ncclInvalidArgument = 4,
  ncclInvalidUsage = 5,
  ncclRemoteError = 6,
  ncclInProgress = 7,
  ncclNumResults = 8
} ncclResult_t;

#define NCCL_CONFIG_UNDEF_INT INT_MIN
#define NCCL_CONFIG_UNDEF_PTR NULL
#define NCCL_SPLIT_NOCOLOR -1
#define NCCL_UNDEF_FLOAT -1.0f

/* Window registration flags */
#define NCCL_WIN_DEFAULT 0x00
#define NCCL_WIN_COLL_SYMMETRIC 0x01
#define NCCL_WIN_REQUIRED_ALIGNMENT 4096

/* CTA policy flags */
#define NCCL_CTA_POLICY_DEFAULT 0x00
#define NCCL_CTA_POLICY_EFFICIENCY 0x01
#define NCCL_CTA_POLICY_ZERO 0x02

/* ncclCommShrink flags */
#define NCCL_SHRINK_DEFAULT 0x00
#define NCCL_SHRINK_ABORT 0x01

/* ncclCommRevoke flags */
#define NCCL_REVOKE_DEFAULT 0x00

/* Communicator configuration; initialise with NCCL_CONFIG_INITIALIZER. */
typedef struct ncclConfig_v22800 {
  /* set by the initializer; users never touch them */
  size_t size;
  unsigned int magic;
  unsigned int version;
  /* user-settable attributes */
  int blocking;
  int cgaClusterSize;
  int minCTAs;
  int maxCTAs;
  const char* netName;
  int splitShare;
  int trafficClass;
  const char* commName;
  int collnetEnable;
  int CTAPolicy;
  int shrinkShare;
  int nvlsCTAs;
  int nChannelsPerNetPeer;
  int nvlinkCentricSched;
} ncclConfig_t;

#define NCCL_CONFIG_INITIALIZER                                                            \
  {                                                                                        \
    sizeof(ncclConfig_t), 0xcafebeef, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH),    \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,               \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_PTR, NCCL_CONFIG_UNDEF_INT,               \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_PTR, NCCL_CONFIG_UNDEF_INT,               \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,               \
        NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,                                      \
  }

/* Result of ncclGroupSimulateEnd; initialise with NCCL_SIM_INFO_INITIALIZER. */
typedef struct ncclSimInfo_v22200 {
  size_t size;
  unsigned int magic;
  unsigned int version;
  float estimatedTime; /* microseconds */
} ncclSimInfo_t;

#define NCCL_SIM_INFO_INITIALIZER \
  { sizeof(ncclSimInfo_t), 0x74685283, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH), NCCL_UNDEF_FLOAT }

/* Each function also exists with a "p" prefix (pnccl*), the profiling alias. */
#define CCLAB_DECLARE_(ret, name, args) \
  ret nccl##name args;                  \
  ret pnccl##name args

/* Memory allocation usable as communication buffers (host memory on the host backend). */
CCLAB_DECLARE_(ncclResult_t, MemAlloc, (void** ptr, size_t size));
CCLAB_DECLARE_(ncclResult_t, MemFree, (void* ptr));

/* Version: NCCL_VERSION_CODE of the library. */
CCLAB_DECLARE_(ncclResult_t, GetVersion, (int* version));

/* A unique id for ncclCommInitRank; call once and share it with every rank. */
CCLAB_DECLARE_(ncclResult_t, GetUniqueId, (ncclUniqueId * uniqueId));

/* Communicator creation. */
CCLAB_DECLARE_(ncclResult_t, CommInitRankConfig,
               (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t* config));
CCLAB_DECLARE_(ncclResult_t, CommInitRank, (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank));
CCLAB_DECLARE_(ncclResult_t, CommInitAll, (ncclComm_t * comm, int ndev, const int* devlist));
CCLAB_DECLARE_(ncclResult_t, CommFinalize, (ncclComm_t comm));
CCLAB_DECLARE_(ncclResult_t, CommDestroy, (ncclComm_t comm));
CCLAB_DECLARE_(ncclResult_t, CommAbort, (ncclComm_t comm));
CCLAB_DECLARE_(ncclResult_t, CommRevoke, (ncclComm_t comm, int revokeFlags));
CCLAB_DECLARE_(ncclResult_t, CommSplit,
               (ncclComm_t comm, int color, int key, ncclComm_t* newcomm, ncclConfig_t* config));
CCLAB_DECLARE_(ncclResult_t, CommShrink,
               (ncclComm_t comm, int* excludeRanksList, int excludeRanksCount, ncclComm_t* newcomm,
                ncclConfig_t* config, int shrinkFlags));
CCLAB_DECLARE_(ncclResult_t, CommInitRankScalable,
               (ncclComm_t * newcomm, int nranks, int myrank, int nId, ncclUniqueId* commIds,
                ncclConfig_t* config));

/* Error reporting. */
CCLAB_DECLARE_(const char*, GetErrorString, (ncclResult_t result));
CCLAB_DECLARE_(const char*, GetLastError, (ncclComm_t comm));
/* Re-reads the logging environment (NCCL_DEBUG*). Deprecated in NCCL, so callers get the same warning.
 * Declared (void) where NCCL writes (): the same function in C++, and a prototype in C. */
#define CCLAB_RESET_DEBUG_INIT_DEPRECATED_(name) \
  __attribute__((deprecated(name " is not supported as part of the NCCL API and will be removed in the future")))
CCLAB_RESET_DEBUG_INIT_DEPRECATED_("ncclResetDebugInit") void ncclResetDebugInit(void);
CCLAB_RESET_DEBUG_INIT_DEPRECATED_("pncclResetDebugInit") void pncclResetDebugInit(void);
#undef CCLAB_RESET_DEBUG_INIT_DEPRECATED_
CCLAB_DECLARE_(ncclResult_t, CommGetAsyncError, (ncclComm_t comm, ncclResult_t* asyncError));

/* Queries. */
CCLAB_DECLARE_(ncclResult_t, CommCount, (const ncclComm_t comm, int* count));
CCLAB_DECLARE_(ncclResult_t, CommCuDevice, (const ncclComm_t comm, int* device));
CCLAB_DECLARE_(ncclResult_t, CommUserRank, (const ncclComm_t comm, int* rank));

/* Buffer registration. */
CCLAB_DECLARE_(ncclResult_t, CommRegister, (const ncclComm_t comm, void* buff, size_t size, void** handle));
CCLAB_DECLARE_(ncclResult_t, CommDeregister, (const ncclComm_t comm, void* handle));
CCLAB_DECLARE_(ncclResult_t, CommWindowRegister,
               (ncclComm_t comm, void* buff, size_t size, ncclWindow_t* win, int winFlags));
CCLAB_DECLARE_(ncclResult_t, CommWindowDeregister, (ncclComm_t comm, ncclWindow_t win));

/* Reduction operation selector */
typedef enum { ncclNumOps_dummy = 5 } ncclRedOp_dummy_t;
typedef enum {
  ncclSum = 0,
  ncclProd = 1,
  ncclMax = 2,
  ncclMin = 3,
  ncclAvg = 4,
  /* number of built-in ops; values from here up to ncclMaxRedOp are dynamic (ncclRedOpCreate*) */
  ncclNumOps = 5,
  ncclMaxRedOp = 0x7fffffff >> (32 - 8 * sizeof(ncclRedOp_dummy_t))
} ncclRedOp_t;

/* Data types */
typedef enum {
  ncclInt8 = 0,
  ncclChar = 0,
  ncclUint8 = 1,
  ncclInt32 = 2,
  ncclInt = 2,
  ncclUint32 = 3,
  ncclInt64 = 4,
  ncclUint64 = 5,
  ncclFloat16 = 6,
  ncclHalf = 6,
  ncclFloat32 = 7,
  ncclFloat = 7,
  ncclFloat64 = 8,
  ncclDouble = 8,
  ncclBfloat16 = 9,
  ncclFloat8e4m3 = 10,
  ncclFloat8e5m2 = 11,
  ncclNumTypes = 12
} ncclDataType_t;

/* Where the scalar of ncclRedOpCreatePreMulSum lives. */
typedef enum {
  ncclScalarDevice = 0,        /* read when the collective executes */
  ncclScalarHostImmediate = 1  /* read once, when the op is created */
} ncclScalarResidence_t;

/* A reduction op computing sum(scalar * x_i). */
CCLAB_DECLARE_(ncclResult_t, RedOpCreatePreMulSum,
               (ncclRedOp_t * op, void* scalar, ncclDataType_t datatype, ncclScalarResidence_t residence,
                ncclComm_t comm));
CCLAB_DECLARE_(ncclResult_t, RedOpDestroy, (ncclRedOp_t op, ncclComm_t comm));

/* Collectives. */
CCLAB_DECLARE_(ncclResult_t, Reduce,
               (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                int root, ncclComm_t comm, cudaStream_t stream));
CCLAB_DECLARE_(ncclResult_t, Bcast,
               (void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
                cudaStream_t stream));
CCLAB_DECLARE_(ncclResult_t, Broadcast,
               (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                ncclComm_t comm, cudaStream_t stream));
CCLAB_DECLARE_(ncclResult_t, AllReduce,
               (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                ncclComm_t comm, cudaStream_t stream));
CCLAB_DECLARE_(ncclResult_t, ReduceScatter,
               (const void* sendbuff, void* recvbuff, size_t recvcount, ncclDataType_t datatype,
                ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream));
CCLAB_DECLARE_(ncclResult_t, AllGather,
               (const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
                ncclComm_t comm, cudaStream_t stream));
CCLAB_DECLARE_(ncclResult_t, AlltoAll,
               (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm,
                cudaStream_t stream));
CCLAB_DECLARE_(ncclResult_t, Gather,
               (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                ncclComm_t comm, cudaStream_t stream));
CCLAB_DECLARE_(ncclResult_t, Scatter,
               (const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
                ncclComm_t comm, cudaStream_t stream));

/* Point-to-point. */
CCLAB_DECLARE_(ncclResult_t, Send,
               (const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                cudaStream_t stream));
CCLAB_DECLARE_(ncclResult_t, Recv,
               (void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                cudaStream_t stream));

/* Group semantics. */
CCLAB_DECLARE_(ncclResult_t, GroupStart, (void));
CCLAB_DECLARE_(ncclResult_t, GroupEnd, (void));
CCLAB_DECLARE_(ncclResult_t, GroupSimulateEnd, (ncclSimInfo_t * simInfo));

#undef CCLAB_DECLARE_

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NCCL_H_ */
