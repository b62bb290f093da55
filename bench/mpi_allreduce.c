/* bench/mpi_allreduce.c - the peer for cclab's all_reduce: Open MPI's MPI_Allreduce on float sums,
 * timed like nccl-tests (warm-up, then the mean time of `iters` calls, the slowest rank's).
 *
 *   mpirun -np N bench_mpi_allreduce BYTES [ITERS] [WARMUP]
 * prints one line:  bytes time_us algbw_GBps busbw_GBps
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank, n;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  if (argc < 2) {
    if (rank == 0) fprintf(stderr, "usage: %s BYTES [ITERS] [WARMUP]\n", argv[0]);
    MPI_Finalize();
    return 2;
  }
  size_t bytes = strtoull(argv[1], NULL, 0);
  int iters = argc > 2 ? atoi(argv[2]) : 20;
  int warmup = argc > 3 ? atoi(argv[3]) : 5;
  size_t count = bytes / sizeof(float);
  if (count == 0) count = 1;
  float* in = malloc(count * sizeof(float));
  float* out = malloc(count * sizeof(float));
  for (size_t i = 0; i < count; ++i) in[i] = (float)((i + rank) % 7);
  for (int i = 0; i < warmup; ++i) MPI_Allreduce(in, out, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int i = 0; i < iters; ++i) MPI_Allreduce(in, out, (int)count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  double t = (MPI_Wtime() - t0) / iters, tmax = 0;
  MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  /* check one element so the work cannot be optimised away */
  float want = 0;
  for (int r = 0; r < n; ++r) want += (float)((0 + r) % 7);
  int bad = out[0] != want, anybad = 0;
  MPI_Reduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    double b = (double)(count * sizeof(float));
    double algbw = b / tmax / 1e9;
    printf("%zu %.2f %.3f %.3f%s\n", (size_t)(count * sizeof(float)), tmax * 1e6, algbw,
           algbw * 2.0 * (n - 1) / n, anybad ? " WRONG" : "");
  }
  free(in);
  free(out);
  MPI_Finalize();
  return anybad;
}
