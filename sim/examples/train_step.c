/* sim/examples/train_step.c - one data-parallel training step, written against nccl.h: backward
 * compute layer by layer on each GPU's compute stream, and each layer's gradient all_reduce started on
 * a communication stream as soon as that layer's backward is done, so communication overlaps the
 * remaining backward. The same program runs on the host backend (real bytes, no compute time) and in
 * the simulator (CCLAB_BACKEND=sim: simulated kernels and fabric, real bytes, simulated time):
 *
 *   CCLAB_BACKEND=sim CCLAB_TOPO=dgx-h100 build/sim/cclab_train_step          # 8 GPUs
 *   CCLAB_BACKEND=sim CCLAB_TOPO=dgx-a100:2 build/sim/cclab_train_step 16
 *   build/sim/cclab_train_step 4                                              # host backend
 *
 * Arguments: [ranks (8)] [layers (8)] [gradient MiB per layer (8)] [backward TFLOP per layer (0.1)].
 * Exit status 0 when every gradient is the exact average on every rank (and, simulated, when the step
 * overlapped: shorter than compute plus communication run one after the other). */
#include <stdio.h>
#include <stdlib.h>

#include <cclab/cclab.h>
#include <nccl.h>

#define CHECK(call)                                                                                  \
  do {                                                                                               \
    ncclResult_t r_ = (call);                                                                        \
    if (r_ != ncclSuccess) {                                                                         \
      fprintf(stderr, "%s:%d %s failed: %s (%s)\n", __FILE__, __LINE__, #call, ncclGetErrorString(r_), \
              ncclGetLastError(NULL));                                                               \
      exit(2);                                                                                       \
    }                                                                                                \
  } while (0)

static double now_us(int simulated) {
  double us = 0;
  if (simulated) CHECK(cclabSimTime(&us));
  return us;
}

/* All layers' gradients, all-reduced on the communication streams (after the compute streams' work
 * queued so far when wait_compute is set). */
static void reduce_layers(int n, int layers, size_t count, float*** grad, ncclComm_t* comms, cudaStream_t* comm_s,
                          cudaStream_t* compute, int layer) {
  ncclGroupStart();
  for (int r = 0; r < n; ++r) {
    if (compute) CHECK(cclabStreamWaitStream(comm_s[r], compute[r]));
    CHECK(ncclAllReduce(grad[r][layer], grad[r][layer], count, ncclFloat, ncclAvg, comms[r], comm_s[r]));
  }
  CHECK(ncclGroupEnd());
  (void)layers;
}

int main(int argc, char** argv) {
  const int n = argc > 1 ? atoi(argv[1]) : 8;
  const int layers = argc > 2 ? atoi(argv[2]) : 8;
  const double mib = argc > 3 ? atof(argv[3]) : 8;
  const double tflop = argc > 4 ? atof(argv[4]) : 0.1;
  if (n < 1 || layers < 1 || !(mib > 0) || !(tflop >= 0)) {
    fprintf(stderr, "usage: %s [ranks >= 1] [layers >= 1] [MiB > 0] [TFLOP >= 0]\n", argv[0]);
    return 2;
  }
  const size_t count = (size_t)(mib * 1024 * 1024 / sizeof(float));
  cclabBackend_t backend;
  CHECK(cclabGetBackend(&backend));
  const int simulated = backend == cclabBackendSim;

  ncclComm_t* comms = calloc(n, sizeof *comms);
  cudaStream_t* compute = calloc(n, sizeof *compute);
  cudaStream_t* comm_s = calloc(n, sizeof *comm_s);
  float*** grad = calloc(n, sizeof *grad);
  CHECK(ncclCommInitAll(comms, n, NULL));
  for (int r = 0; r < n; ++r) {
    CHECK(cclabStreamCreate(&compute[r]));
    CHECK(cclabStreamCreate(&comm_s[r]));
    grad[r] = calloc(layers, sizeof **grad);
    for (int l = 0; l < layers; ++l) grad[r][l] = malloc(count * sizeof(float));
  }
  /* Rank r's gradient of layer l, element i: (r + l + i % 7) - their average over ranks is exact in
   * float for these sizes: l + i % 7 + (n - 1) / 2. */
  for (int r = 0; r < n; ++r)
    for (int l = 0; l < layers; ++l)
      for (size_t i = 0; i < count; ++i) grad[r][l][i] = (float)(r + l + (int)(i % 7));

  /* 1. Compute alone: the backward of every layer, one after the other. */
  double t0 = now_us(simulated);
  for (int l = layers - 1; l >= 0; --l)
    for (int r = 0; r < n; ++r) CHECK(cclabSimKernel(compute[r], r, tflop * 1e12, 0));
  for (int r = 0; r < n; ++r) CHECK(cclabStreamSynchronize(compute[r]));
  const double compute_us = now_us(simulated) - t0;

  /* 2. The training step: layer l's all_reduce starts when its backward is done. */
  t0 = now_us(simulated);
  for (int l = layers - 1; l >= 0; --l) {
    for (int r = 0; r < n; ++r) CHECK(cclabSimKernel(compute[r], r, tflop * 1e12, 0));
    reduce_layers(n, layers, count, grad, comms, comm_s, compute, l);
  }
  for (int r = 0; r < n; ++r) {
    CHECK(cclabStreamSynchronize(comm_s[r]));
    CHECK(cclabStreamSynchronize(compute[r]));
  }
  const double step_us = now_us(simulated) - t0;

  /* Every gradient must now be the average. */
  long wrong = 0;
  for (int r = 0; r < n; ++r)
    for (int l = 0; l < layers; ++l)
      for (size_t i = 0; i < count; ++i) {
        const float want = (float)(l + (int)(i % 7)) + (float)(n - 1) / 2.0f;
        if (grad[r][l][i] != want) ++wrong;
      }

  /* 3. Communication alone (on the averaged gradients, which stay the same). */
  t0 = now_us(simulated);
  for (int l = layers - 1; l >= 0; --l) reduce_layers(n, layers, count, grad, comms, comm_s, NULL, l);
  for (int r = 0; r < n; ++r) CHECK(cclabStreamSynchronize(comm_s[r]));
  const double comm_us = now_us(simulated) - t0;

  printf("backend %s, %d ranks, %d layers x %.1f MiB gradients, %.3g TFLOP backward per layer\n",
         cclabBackendName(backend), n, layers, mib, tflop);
  int ok = wrong == 0;
  if (simulated) {
    const double serial = compute_us + comm_us;
    printf("compute alone %.1f us, all_reduce alone %.1f us, training step %.1f us (%.0f%% of the "
           "communication hidden behind compute)\n",
           compute_us, comm_us, step_us, serial > step_us && comm_us > 0 ? 100.0 * (serial - step_us) / comm_us : 0.0);
    if (!(step_us < serial && step_us >= (compute_us > comm_us ? compute_us : comm_us) * 0.999)) {
      printf("unexpected: the step should overlap (shorter than %.1f us, at least %.1f us)\n", serial,
             compute_us > comm_us ? compute_us : comm_us);
      ok = 0;
    }
  }
  printf("%ld wrong gradient values\n", wrong);
  for (int r = 0; r < n; ++r) {
    for (int l = 0; l < layers; ++l) free(grad[r][l]);
    free(grad[r]);
    cclabStreamDestroy(compute[r]);
    cclabStreamDestroy(comm_s[r]);
    ncclCommDestroy(comms[r]);
  }
  free(grad);
  free(comms);
  free(compute);
  free(comm_s);
  return ok ? 0 : 1;
}
