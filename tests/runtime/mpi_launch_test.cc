// Launched by mpirun (see CMakeLists.txt): MPI only carries the ncclUniqueId from rank 0 to the
// others, as in NCCL's own examples; the communicator, its bootstrap and its shared-memory
// connections are cclab's. Each process checks its AllReduce and exits 0 or 1; mpirun fails the
// test if any process does.
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "cclab/cclab.h"

#define CHECK(cond, ...)                                  \
  do {                                                    \
    if (!(cond)) {                                        \
      fprintf(stderr, "[rank %d] FAILED: ", rank);        \
      fprintf(stderr, __VA_ARGS__);                       \
      fprintf(stderr, "\n");                              \
      return 1;                                           \
    }                                                     \
  } while (0)
#define NCCL_CHECK(call)                                                                                  \
  do {                                                                                                    \
    ncclResult_t r_ = (call);                                                                             \
    CHECK(r_ == ncclSuccess, "%s: %s (%s)", #call, ncclGetErrorString(r_), ncclGetLastError(nullptr)); \
  } while (0)

static int run(int rank, int nranks) {
  // Rank 0 broadcasts even when it has no id, so that no rank waits in MPI_Bcast forever.
  struct {
    int ok;
    ncclUniqueId id;
  } msg;
  memset(&msg, 0, sizeof msg);
  if (rank == 0) msg.ok = ncclGetUniqueId(&msg.id) == ncclSuccess;
  CHECK(MPI_Bcast(&msg, sizeof msg, MPI_BYTE, 0, MPI_COMM_WORLD) == MPI_SUCCESS, "MPI_Bcast");
  CHECK(msg.ok, "rank 0 could not make a unique id: %s", rank == 0 ? ncclGetLastError(nullptr) : "(see rank 0)");
  const ncclUniqueId& id = msg.id;

  ncclComm_t comm;
  NCCL_CHECK(ncclCommInitRank(&comm, nranks, id, rank));
  // Several FIFO chunks per channel, and a count no power of two divides.
  const size_t count = (1u << 20) + 13;
  std::vector<float> in(count), out(count, -1.0f);
  for (size_t i = 0; i < count; ++i) in[i] = static_cast<float>((i % 1000) + 1000 * rank);
  cudaStream_t s;
  NCCL_CHECK(cclabStreamCreate(&s));
  NCCL_CHECK(ncclAllReduce(in.data(), out.data(), count, ncclFloat, ncclSum, comm, s));
  NCCL_CHECK(cclabStreamSynchronize(s));
  const float ranks_sum = 1000.0f * static_cast<float>(nranks * (nranks - 1) / 2);
  for (size_t i = 0; i < count; ++i) {
    const float want = static_cast<float>(nranks) * static_cast<float>(i % 1000) + ranks_sum;
    CHECK(memcmp(&out[i], &want, sizeof want) == 0, "element %zu is %g, want %g", i, out[i], want);
  }
  NCCL_CHECK(cclabStreamDestroy(s));
  NCCL_CHECK(ncclCommDestroy(comm));
  return 0;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, nranks = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  const int rc = run(rank, nranks);
  // Every process learns whether all passed, so none reports success for a job that failed.
  int worst = rc;
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) printf("mpi_launch_test: %d ranks, %s\n", nranks, worst == 0 ? "passed" : "FAILED");
  MPI_Finalize();
  return worst;
}
