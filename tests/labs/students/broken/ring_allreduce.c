/* tests/labs/students/broken: does not compile (a missing semicolon). */
#include "ring_allreduce.h"

ncclResult_t lab_ring_allreduce(const float* sendbuff, float* recvbuff, size_t count, ncclComm_t comm,
                                cudaStream_t stream) {
  int n = 0
  return ncclCommCount(comm, &n);
}
