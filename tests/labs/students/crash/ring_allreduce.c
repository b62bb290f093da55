/* tests/labs/students/crash: writes far past the end of recvbuff (a chunk index gone negative). */
#include "ring_allreduce.h"

ncclResult_t lab_ring_allreduce(const float* sendbuff, float* recvbuff, size_t count, ncclComm_t comm,
                                cudaStream_t stream) {
  volatile float* far_away = recvbuff + count + ((size_t)1 << 40);
  *far_away = sendbuff[0];
  return ncclSuccess;
}
