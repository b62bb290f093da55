/* tests/install/consumer/main.c - a program written for NCCL (it includes <nccl.h> and nothing of cclab's),
 * built against cclab's installed tree every way a user would: `-lnccl` (install_dropin), find_package(cclab)
 * with cclab::cclab and cclab::nccl (CMakeLists.txt here), pkg-config cclab and nccl (install_package).
 * Two ranks in one process all_reduce on the host backend; every byte of both results is checked. */
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                          \
  do {                                                                                       \
    ncclResult_t r_ = (call);                                                                \
    if (r_ != ncclSuccess) {                                                                 \
      fprintf(stderr, "%s failed: %s (%s)\n", #call, ncclGetErrorString(r_), ncclGetLastError(NULL)); \
      return 1;                                                                              \
    }                                                                                        \
  } while (0)

int main(int argc, char** argv) {
  const char* name = argc > 1 ? argv[1] : "consumer";
  int version = 0;
  CHECK(ncclGetVersion(&version));
  if (version != NCCL_VERSION_CODE) {
    fprintf(stderr, "%s: library version %d, header %d\n", name, version, NCCL_VERSION_CODE);
    return 1;
  }
  enum { kRanks = 2, kCount = 1 << 16 };
  ncclComm_t comms[kRanks];
  CHECK(ncclCommInitAll(comms, kRanks, NULL));
  /* Small integers: the sums are exact in float, so the expected bytes are known. */
  float* buf[kRanks];
  float* expected = (float*)malloc(kCount * sizeof(float));
  for (int i = 0; i < kCount; ++i) expected[i] = 3.0f * (float)(i % 97);
  for (int r = 0; r < kRanks; ++r) {
    buf[r] = (float*)malloc(kCount * sizeof(float));
    for (int i = 0; i < kCount; ++i) buf[r][i] = (float)(r + 1) * (float)(i % 97);
  }
  CHECK(ncclGroupStart());
  for (int r = 0; r < kRanks; ++r) CHECK(ncclAllReduce(buf[r], buf[r], kCount, ncclFloat, ncclSum, comms[r], NULL));
  CHECK(ncclGroupEnd());
  int wrong = 0;
  for (int r = 0; r < kRanks; ++r) {
    if (memcmp(buf[r], expected, kCount * sizeof(float)) != 0) {
      fprintf(stderr, "%s: rank %d's all_reduce result differs from the expected sums\n", name, r);
      wrong = 1;
    }
    CHECK(ncclCommDestroy(comms[r]));
    free(buf[r]);
  }
  free(expected);
  printf("%s: NCCL %d, %d ranks all_reduced %d floats, %s\n", name, version, kRanks, kCount,
         wrong ? "WRONG" : "every byte as expected");
  return wrong;
}
