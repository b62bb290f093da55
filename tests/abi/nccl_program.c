/*
 * nccl_program.c - a C11 NCCL program written the way NCCL's own examples are, compiled (not linked or
 * run) against cclab's <nccl.h>. It exists so that a C incompatibility in the header (a C++-only
 * construct, an initializer that is not valid C, a missing prototype) breaks the build.
 *
 * It deliberately uses nothing from cclab: a program written for NCCL must compile unchanged. Device
 * buffers come from ncclMemAlloc and the stream is the default stream (0), so no CUDA runtime call is
 * needed and the file compiles with or without the CUDA toolkit.
 */
#include <nccl.h>

#include <stdio.h>
#include <stdlib.h>

#define NCCLCHECK(cmd)                                                                      \
  do {                                                                                      \
    ncclResult_t res_ = (cmd);                                                              \
    if (res_ != ncclSuccess && res_ != ncclInProgress) {                                    \
      fprintf(stderr, "%s:%d NCCL error %d: '%s'\n", __FILE__, __LINE__, (int)res_,         \
              ncclGetErrorString(res_));                                                    \
      exit(EXIT_FAILURE);                                                                   \
    }                                                                                       \
  } while (0)

/* Stand-in for MPI_Bcast: rank 0 writes the id to stdout, the others read it from stdin. */
static void shareId(ncclUniqueId* id, int rank) {
  if (rank == 0) {
    fwrite(id->internal, 1, sizeof(id->internal), stdout);
  } else if (fread(id, 1, sizeof(*id), stdin) != sizeof(*id)) {
    exit(EXIT_FAILURE);
  }
}

/* Non-blocking communicators return ncclInProgress; wait for the operation to settle. */
static ncclResult_t waitComm(ncclComm_t comm) {
  ncclResult_t state = ncclInProgress;
  while (state == ncclInProgress) {
    NCCLCHECK(ncclCommGetAsyncError(comm, &state));
  }
  return state;
}

int main(int argc, char* argv[]) {
  int nranks = argc > 1 ? atoi(argv[1]) : 1;
  int rank = argc > 2 ? atoi(argv[2]) : 0;
  size_t count = 32 * 1024 * 1024;
  int version = 0;
  ncclUniqueId id;
  ncclComm_t comm = NCCL_COMM_NULL;
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  ncclSimInfo_t simInfo = NCCL_SIM_INFO_INITIALIZER;
  cudaStream_t stream = 0; /* the default stream */
  float* sendbuff = NULL;
  float* recvbuff = NULL;
  ncclRedOp_t premul;
  float scale = 0.5f;
  int nRanksInComm = 0, myRank = -1;

  NCCLCHECK(ncclGetVersion(&version));
  if (version < NCCL_VERSION(2, 28, 0)) {
    fprintf(stderr, "NCCL %d is too old\n", version);
    return EXIT_FAILURE;
  }
  printf("NCCL %d.%d.%d%s\n", NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH, NCCL_SUFFIX);

  /* Rank 0 creates the id and every rank gets a copy. */
  if (rank == 0) NCCLCHECK(ncclGetUniqueId(&id));
  shareId(&id, rank);

  config.blocking = 0;
  config.netName = "Socket";
  config.commName = "nccl_program";
  config.CTAPolicy = NCCL_CTA_POLICY_DEFAULT;
  config.minCTAs = 4;
  NCCLCHECK(ncclCommInitRankConfig(&comm, nranks, id, rank, &config));
  NCCLCHECK(waitComm(comm));
  NCCLCHECK(ncclCommCount(comm, &nRanksInComm));
  NCCLCHECK(ncclCommUserRank(comm, &myRank));

  NCCLCHECK(ncclMemAlloc((void**)&sendbuff, count * sizeof(float)));
  NCCLCHECK(ncclMemAlloc((void**)&recvbuff, count * sizeof(float)));

  /* Two collectives fused in one group, then a simulated group for a time estimate. */
  NCCLCHECK(ncclGroupStart());
  NCCLCHECK(ncclAllReduce((const void*)sendbuff, (void*)recvbuff, count, ncclFloat, ncclSum, comm, stream));
  NCCLCHECK(ncclBroadcast(sendbuff, recvbuff, count, ncclFloat32, 0, comm, stream));
  NCCLCHECK(ncclGroupEnd());
  NCCLCHECK(waitComm(comm));

  NCCLCHECK(ncclGroupStart());
  NCCLCHECK(ncclAllGather(sendbuff, recvbuff, count / nRanksInComm, ncclFloat, comm, stream));
  NCCLCHECK(ncclGroupSimulateEnd(&simInfo));
  printf("estimated time %f us\n", simInfo.estimatedTime);

  /* Point-to-point ring exchange. */
  NCCLCHECK(ncclGroupStart());
  NCCLCHECK(ncclSend(sendbuff, count, ncclFloat, (myRank + 1) % nRanksInComm, comm, stream));
  NCCLCHECK(ncclRecv(recvbuff, count, ncclFloat, (myRank + nRanksInComm - 1) % nRanksInComm, comm, stream));
  NCCLCHECK(ncclGroupEnd());

  /* A custom reduction: average by pre-multiplying with 1/nranks. */
  NCCLCHECK(ncclRedOpCreatePreMulSum(&premul, &scale, ncclFloat, ncclScalarHostImmediate, comm));
  NCCLCHECK(ncclReduceScatter(sendbuff, recvbuff, count / nRanksInComm, ncclFloat, premul, comm, stream));
  NCCLCHECK(ncclRedOpDestroy(premul, comm));

  if (waitComm(comm) != ncclSuccess) fprintf(stderr, "last error: %s\n", ncclGetLastError(comm));

  NCCLCHECK(ncclMemFree(sendbuff));
  NCCLCHECK(ncclMemFree(recvbuff));
  NCCLCHECK(ncclCommFinalize(comm));
  NCCLCHECK(waitComm(comm));
  NCCLCHECK(ncclCommDestroy(comm));
  printf("Success\n");
  return 0;
}
