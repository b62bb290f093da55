/* tests/labs/students/spin: loops forever outside cclab, where no wait of cclab can time out. */
#include "ring_allreduce.h"

ncclResult_t lab_ring_allreduce(const float* sendbuff, float* recvbuff, size_t count, ncclComm_t comm,
                                cudaStream_t stream) {
  volatile int done = 0;
  while (!done) {
  }
  return ncclSuccess;
}
