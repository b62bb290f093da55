/* tests/cli/fault_shim.c - LD_PRELOAD'ed into `cclab perf` to prove its check catches wrong results.
 *
 * Wraps ncclAllReduce: on rank 1, with the NULL stream (-z 1: the result is final when the call
 * returns), it flips one bit of the result of every all-reduce longer than 16 elements (the tool's own
 * bookkeeping does not go through ncclAllReduce). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stddef.h>

#include "cclab/nccl.h"

typedef ncclResult_t (*AllReduceFn)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t, cudaStream_t);

ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t type, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
  static AllReduceFn real = NULL;
  if (real == NULL) real = (AllReduceFn)dlsym(RTLD_NEXT, "ncclAllReduce");
  const ncclResult_t r = real(sendbuff, recvbuff, count, type, op, comm, stream);
  int rank = -1;
  if (r == ncclSuccess && stream == NULL && count > 16 && ncclCommUserRank(comm, &rank) == ncclSuccess && rank == 1) {
    ((unsigned char*)recvbuff)[5] ^= 0x10;
  }
  return r;
}
