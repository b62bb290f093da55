/* labs/solutions/01-ring-allreduce/ring_allreduce.c - a reference solution of lab 1 (instructors
 * only: delete labs/solutions/ before handing the labs out; nothing else needs it).
 *
 * all_reduce around a ring of n ranks, with nothing but ncclSend / ncclRecv:
 *   reduce-scatter: n-1 steps; in step s, rank r sends chunk (r - s) to r+1 and receives chunk
 *                   (r - s - 1) from r-1, which it adds into its recvbuff. Afterwards rank r holds the
 *                   full sum of chunk (r + 1).
 *   all-gather:     n-1 steps; in step s, rank r sends chunk (r + 1 - s) to r+1 and receives chunk
 *                   (r - s) from r-1 straight into recvbuff (it is final).
 * 2(n-1) steps of about count/n elements each. */
#include <stdlib.h>
#include <string.h>

#include "ring_allreduce.h"

#define TRY(call)                                \
  do {                                           \
    ncclResult_t try_result_ = (call);           \
    if (try_result_ != ncclSuccess) {            \
      free(scratch);                             \
      return try_result_;                        \
    }                                            \
  } while (0)

/* Chunk c of n: the first count % n chunks get one element more, so the chunks cover all count
 * elements (and some are empty when count < n). */
static void chunk_of(size_t count, int n, int c, size_t* start, size_t* len) {
  const size_t base = count / (size_t)n, extra = count % (size_t)n, uc = (size_t)c;
  *start = uc * base + (uc < extra ? uc : extra);
  *len = base + (uc < extra ? 1 : 0);
}

/* One step of the ring: send `send_len` elements to `next` and receive `recv_len` from `prev`, both at
 * once (a group, so that neither waits for the other), then wait until both are done. */
static ncclResult_t ring_step(const float* send, size_t send_len, float* recv, size_t recv_len, int next, int prev,
                              ncclComm_t comm, cudaStream_t stream) {
  ncclResult_t r = ncclGroupStart();
  if (r != ncclSuccess) return r;
  ncclResult_t rs = ncclSend(send, send_len, ncclFloat, next, comm, stream);
  ncclResult_t rr = ncclRecv(recv, recv_len, ncclFloat, prev, comm, stream);
  r = ncclGroupEnd();
  if (rs != ncclSuccess) return rs;
  if (rr != ncclSuccess) return rr;
  if (r != ncclSuccess) return r;
  return cclabStreamSynchronize(stream);
}

ncclResult_t lab_ring_allreduce(const float* sendbuff, float* recvbuff, size_t count, ncclComm_t comm,
                                cudaStream_t stream) {
  float* scratch = NULL;
  int n = 0, rank = 0;
  TRY(ncclCommCount(comm, &n));
  TRY(ncclCommUserRank(comm, &rank));
  if (recvbuff != sendbuff) memcpy(recvbuff, sendbuff, count * sizeof(float));
  if (n == 1 || count == 0) return ncclSuccess;

  const int next = (rank + 1) % n, prev = (rank + n - 1) % n;
  scratch = malloc((count / (size_t)n + 1) * sizeof(float));
  if (scratch == NULL) return ncclSystemError;

  for (int s = 0; s < n - 1; ++s) { /* reduce-scatter */
    size_t send_start, send_len, recv_start, recv_len;
    chunk_of(count, n, (rank - s + n) % n, &send_start, &send_len);
    chunk_of(count, n, (rank - s - 1 + 2 * n) % n, &recv_start, &recv_len);
    TRY(ring_step(recvbuff + send_start, send_len, scratch, recv_len, next, prev, comm, stream));
    for (size_t i = 0; i < recv_len; ++i) recvbuff[recv_start + i] += scratch[i];
  }
  for (int s = 0; s < n - 1; ++s) { /* all-gather */
    size_t send_start, send_len, recv_start, recv_len;
    chunk_of(count, n, (rank + 1 - s + n) % n, &send_start, &send_len);
    chunk_of(count, n, (rank - s + n) % n, &recv_start, &recv_len);
    TRY(ring_step(recvbuff + send_start, send_len, recvbuff + recv_start, recv_len, next, prev, comm, stream));
  }
  free(scratch);
  return ncclSuccess;
}
