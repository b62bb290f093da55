/* tests/runtime/misuse_prog.c MODE - four ranks (threads) misusing all_reduce as users do, for
 * misuse_report_test.sh (issue 22): MODE count (rank 3 passes half the count), skip (rank 3 never calls
 * it), coll (rank 3 calls ncclBroadcast instead). Prints each rank's result and error; exits 0 when
 * every rank returned (whatever it returned), so a hang shows as the test's time-out. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cclab/cclab.h>
#include <nccl.h>

enum { kRanks = 4, kCount = 1 << 18 };
static ncclUniqueId id;
static const char* mode = "count";
static ncclResult_t result[kRanks];
static char error[kRanks][512];

static void* rank_main(void* arg) {
  const int r = (int)(size_t)arg;
  ncclComm_t comm;
  float* buf = calloc(kCount, sizeof(float));
  cudaStream_t stream;
  result[r] = ncclCommInitRank(&comm, kRanks, id, r);
  if (result[r] == ncclSuccess) result[r] = cclabStreamCreate(&stream);
  if (result[r] != ncclSuccess) {
    snprintf(error[r], sizeof error[r], "%s", ncclGetLastError(NULL));
    return NULL;
  }
  const int odd = r == kRanks - 1;
  if (odd && strcmp(mode, "skip") == 0) {
    result[r] = ncclSuccess;
  } else if (odd && strcmp(mode, "coll") == 0) {
    result[r] = ncclBroadcast(buf, buf, kCount, ncclFloat, 0, comm, stream);
  } else {
    const size_t n = odd && strcmp(mode, "count") == 0 ? kCount / 2 : kCount;
    result[r] = ncclAllReduce(buf, buf, n, ncclFloat, ncclSum, comm, stream);
  }
  if (result[r] == ncclSuccess) result[r] = cclabStreamSynchronize(stream);
  if (result[r] == ncclSuccess) {
    ncclResult_t async = ncclSuccess;
    ncclCommGetAsyncError(comm, &async);
    result[r] = async;
  }
  if (result[r] != ncclSuccess) {
    snprintf(error[r], sizeof error[r], "%s", ncclGetLastError(comm));
    ncclCommAbort(comm);
  } else {
    ncclCommDestroy(comm);
  }
  free(buf);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc > 1) mode = argv[1];
  if (ncclGetUniqueId(&id) != ncclSuccess) return 2;
  pthread_t t[kRanks];
  for (int r = 0; r < kRanks; ++r) pthread_create(&t[r], NULL, rank_main, (void*)(size_t)r);
  for (int r = 0; r < kRanks; ++r) pthread_join(t[r], NULL);
  for (int r = 0; r < kRanks; ++r) printf("rank %d: %s: %s\n", r, ncclGetErrorString(result[r]), error[r]);
  return 0;
}
