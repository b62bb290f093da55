/* docs/examples/allreduce.c - the README's "Using the library" program: 4 ranks in one process
 * all_reduce 1024 floats on the host backend (CPU threads play the GPUs, so the buffers are host
 * memory; on a GPU machine run it with CCLAB_BACKEND=host), and every element of every rank's result
 * is checked. Written against nccl.h alone. */
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>

#define NRANKS 4
#define COUNT 1024

static int fail(const char* what, ncclResult_t r) {
  fprintf(stderr, "%s: %s (%s)\n", what, ncclGetErrorString(r), ncclGetLastError(NULL));
  return 1;
}

int main(void) {
  ncclComm_t comms[NRANKS];
  float* in[NRANKS];
  float* out[NRANKS];
  ncclResult_t r = ncclCommInitAll(comms, NRANKS, NULL); /* NRANKS ranks in this process */
  if (r != ncclSuccess) return fail("ncclCommInitAll", r);
  for (int k = 0; k < NRANKS; ++k) {
    in[k] = malloc(COUNT * sizeof(float));
    out[k] = malloc(COUNT * sizeof(float));
    if (!in[k] || !out[k]) return fail("malloc", ncclSystemError);
    for (int i = 0; i < COUNT; ++i) in[k][i] = (float)(k + 1) * (float)i; /* rank k holds (k+1) * i */
  }
  ncclGroupStart();
  for (int k = 0; k < NRANKS; ++k)
    ncclAllReduce(in[k], out[k], COUNT, ncclFloat, ncclSum, comms[k], NULL); /* NULL stream: blocking */
  if ((r = ncclGroupEnd()) != ncclSuccess) return fail("ncclAllReduce", r);
  int wrong = 0; /* sum over k of (k+1) * i = i * NRANKS (NRANKS+1) / 2, exact in float here */
  for (int k = 0; k < NRANKS; ++k)
    for (int i = 0; i < COUNT; ++i) wrong += out[k][i] != (float)i * (NRANKS * (NRANKS + 1) / 2);
  for (int k = 0; k < NRANKS; ++k) {
    free(in[k]);
    free(out[k]);
    ncclCommDestroy(comms[k]);
  }
  printf("all_reduce of %d floats over %d ranks: %d wrong\n", COUNT, NRANKS, wrong);
  return wrong != 0;
}
