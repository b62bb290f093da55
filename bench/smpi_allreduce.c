/* bench/smpi_allreduce.c - one MPI_Allreduce of BYTES bytes, for SimGrid SMPI (bench/sim_scale.sh).
 *
 *   smpicc -O2 -o smpi_allreduce bench/smpi_allreduce.c
 *   smpirun -np 1024 -platform plat.xml -hostfile hosts.txt -no-privatize \
 *           --cfg=smpi/allreduce:lr --cfg=smpi/simulate-computation:no ./smpi_allreduce 1073741824 [ITERS]
 *
 * The buffers are SMPI_SHARED_MALLOC blocks (every rank maps the same pages, so 1024 ranks x 1 GiB
 * costs no memory and SMPI copies no payload) and the reduction is a commutative user operation that
 * does nothing, so the simulated time is the communication alone: what the platform's links and the
 * collective algorithm make of it (smpi/allreduce:lr is the logical ring, reduce-scatter then
 * all-gather, the same schedule as NCCL's ring all_reduce). The elements are MPI_BYTEs.
 *
 * Rank 0 prints one line:
 *   smpi_allreduce bytes=B ranks=N iters=I time_us=T algbw=A busbw=W
 * with time_us the simulated time of one iteration (mean), algbw = B / time (GB/s, 1e9 B/s) and
 * busbw = algbw x 2(N-1)/N (nccl-tests' definitions). ITERS (default 1) back-to-back iterations.
 *
 * Built with a plain MPI (mpicc) it falls back to malloc and runs the same way (real time).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef SMPI_SHARED_MALLOC
#define BENCH_ALLOC(n) SMPI_SHARED_MALLOC(n)
#define BENCH_FREE(p) SMPI_SHARED_FREE(p)
#else
#define BENCH_ALLOC(n) malloc(n)
#define BENCH_FREE(p) free(p)
#endif

static void noop_reduce(void* in, void* inout, int* len, MPI_Datatype* type) {
  (void)in;
  (void)inout;
  (void)len;
  (void)type;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc < 2) {
    if (rank == 0) fprintf(stderr, "usage: %s BYTES [ITERS]\n", argv[0]);
    MPI_Finalize();
    return 2;
  }
  char* end = NULL;
  long long bytes = strtoll(argv[1], &end, 10);
  int iters = argc > 2 ? atoi(argv[2]) : 1;
  if (end == argv[1] || *end != '\0' || bytes <= 0 || bytes > 2147483647LL || iters < 1) {
    if (rank == 0) fprintf(stderr, "%s: BYTES must be in 1..2^31-1 and ITERS >= 1\n", argv[0]);
    MPI_Finalize();
    return 2;
  }

  char* send = (char*)BENCH_ALLOC((size_t)bytes);
  char* recv = (char*)BENCH_ALLOC((size_t)bytes);
  if (send == NULL || recv == NULL) {
    fprintf(stderr, "%s: rank %d: cannot allocate %lld bytes\n", argv[0], rank, bytes);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Op noop;
  MPI_Op_create(noop_reduce, 1 /* commutative */, &noop);

  /* No barrier: every rank starts at simulated time 0 (MPI_Init costs nothing), and a barrier's
   * algorithm would need routes the ring-only platform does not declare. */
  double t0 = MPI_Wtime();
  for (int i = 0; i < iters; ++i) MPI_Allreduce(send, recv, (int)bytes, MPI_BYTE, noop, MPI_COMM_WORLD);
  double t1 = MPI_Wtime();

  if (rank == 0) {
    double us = (t1 - t0) * 1e6 / iters;
    double algbw = us > 0 ? (double)bytes / (us * 1e3) : 0;
    double busbw = size > 1 ? algbw * 2.0 * (size - 1) / size : 0;
    printf("smpi_allreduce bytes=%lld ranks=%d iters=%d time_us=%.3f algbw=%.3f busbw=%.3f\n", bytes, size,
           iters, us, algbw, busbw);
    fflush(stdout);
  }
  MPI_Op_free(&noop);
  BENCH_FREE(send);
  BENCH_FREE(recv);
  MPI_Finalize();
  return 0;
}
