/* tests/install/dropin.c - a program written for NCCL (it includes <nccl.h> and links -lnccl), built
 * against cclab's installed tree: two ranks in one process all_reduce on the host backend. */
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                                          \
  do {                                                                                       \
    ncclResult_t r_ = (call);                                                                \
    if (r_ != ncclSuccess) {                                                                 \
      fprintf(stderr, "%s failed: %s (%s)\n", #call, ncclGetErrorString(r_), ncclGetLastError(NULL)); \
      return 1;                                                                              \
    }                                                                                        \
  } while (0)

int main(void) {
  int version = 0;
  CHECK(ncclGetVersion(&version));
  if (version != NCCL_VERSION_CODE) {
    fprintf(stderr, "library version %d, header %d\n", version, NCCL_VERSION_CODE);
    return 1;
  }
  enum { kRanks = 2, kCount = 1 << 16 };
  ncclComm_t comms[kRanks];
  CHECK(ncclCommInitAll(comms, kRanks, NULL));
  float* buf[kRanks];
  for (int r = 0; r < kRanks; ++r) {
    buf[r] = (float*)malloc(kCount * sizeof(float));
    for (int i = 0; i < kCount; ++i) buf[r][i] = (float)(r + 1) * (float)(i % 97);
  }
  CHECK(ncclGroupStart());
  for (int r = 0; r < kRanks; ++r) CHECK(ncclAllReduce(buf[r], buf[r], kCount, ncclFloat, ncclSum, comms[r], NULL));
  CHECK(ncclGroupEnd());
  long wrong = 0;
  for (int r = 0; r < kRanks; ++r)
    for (int i = 0; i < kCount; ++i) wrong += buf[r][i] != 3.0f * (float)(i % 97);
  for (int r = 0; r < kRanks; ++r) {
    CHECK(ncclCommDestroy(comms[r]));
    free(buf[r]);
  }
  printf("dropin: NCCL %d, %d ranks, %d floats, %ld wrong\n", version, kRanks, kCount, wrong);
  return wrong == 0 ? 0 : 1;
}
