/* tests/runtime/late_rank_prog.c - two ranks (threads) of an all_reduce, rank 1 arriving DELAY seconds
 * late (argv[1], default 3): rank 0's wait is stuck until then. stuck_report_test.sh runs it with
 * CCLAB_STUCK_WARN=1 and checks that the stuck wait is reported with and without NCCL_DEBUG. Exits 0 when
 * both ranks end with every element right. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <cclab/cclab.h>
#include <nccl.h>

enum { kCount = 1 << 16 };
static ncclUniqueId id;
static int delay_s = 3;
static int wrong[2];
static ncclResult_t result[2];

static void* rank_main(void* arg) {
  const int r = (int)(size_t)arg;
  ncclComm_t comm;
  float* buf = malloc(sizeof(float) * kCount);
  for (int i = 0; i < kCount; ++i) buf[i] = (float)(r + 1);
  result[r] = ncclCommInitRank(&comm, 2, id, r);
  if (result[r] != ncclSuccess) return NULL;
  if (r == 1) sleep((unsigned)delay_s);
  result[r] = ncclAllReduce(buf, buf, kCount, ncclFloat, ncclSum, comm, NULL);
  for (int i = 0; i < kCount; ++i) wrong[r] += buf[i] != 3.0f;
  ncclCommDestroy(comm);
  free(buf);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc > 1) delay_s = atoi(argv[1]);
  if (ncclGetUniqueId(&id) != ncclSuccess) return 2;
  pthread_t t[2];
  for (int r = 0; r < 2; ++r) pthread_create(&t[r], NULL, rank_main, (void*)(size_t)r);
  for (int r = 0; r < 2; ++r) pthread_join(t[r], NULL);
  for (int r = 0; r < 2; ++r)
    if (result[r] != ncclSuccess || wrong[r] != 0) {
      printf("rank %d: %s, %d wrong\n", r, ncclGetErrorString(result[r]), wrong[r]);
      return 1;
    }
  printf("both ranks done, every element right\n");
  return 0;
}
