/* labs/01-ring-allreduce/ring_allreduce.c - lab 1: all_reduce around a ring, by hand.
 *
 * This is the file you edit (README.md, "Steps"). It builds and runs as it is, but it is wrong: every
 * rank ends with its own input instead of the sum over all ranks.
 *
 * What lab_ring_allreduce must do: ring_allreduce.h. How the ring works: README.md, "Background".
 * The plan, as TODOs below:
 *
 *   TODO 1  reduce-scatter: n-1 steps. In step s (0, 1, ..., n-2) rank r sends chunk (r - s) mod n to
 *           rank r+1 and receives chunk (r - s - 1) mod n from rank r-1 into `scratch`, then adds
 *           scratch into that chunk of recvbuff. After the last step, rank r holds the complete sum of
 *           chunk (r + 1) mod n. In C, % of a negative number can be negative: add n first, as in
 *           (r - s + n) % n and (r - s - 1 + n) % n (and in TODO 2).
 *   TODO 2  all-gather: n-1 more steps. In step s rank r sends chunk (r + 1 - s) mod n to rank r+1 and
 *           receives chunk (r - s) mod n from rank r-1, straight into recvbuff: it is already final.
 *           (The send and the receive are different chunks of recvbuff, so one group may do both.)
 *   TODO 3  chunk_of: cut count elements into n chunks that cover all of them, even when n does not
 *           divide count (and when count < n, where some chunks are empty).
 *
 * One step is one group (TODO 1 below shows it); README.md, "ncclSend, ncclRecv, groups and streams",
 * says why. */
#include <stdlib.h>
#include <string.h>

#include "ring_allreduce.h"

/* Returns from lab_ring_allreduce with the error of a nccl call that failed. */
#define TRY(call)                                \
  do {                                           \
    ncclResult_t try_result_ = (call);           \
    if (try_result_ != ncclSuccess) {            \
      free(scratch);                             \
      return try_result_;                        \
    }                                            \
  } while (0)

/* Chunk c (0 <= c < n) of count elements: its first element and its length.
 * TODO 3: this is right only when n divides count. Make the chunks cover all count elements: for
 * instance, give the first count % n chunks one element more. Chunk c then starts where chunk c-1
 * ends: after c chunks of count / n elements, plus one element for each of the chunks before it that
 * got one more. */
static void chunk_of(size_t count, int n, int c, size_t* start, size_t* len) {
  *start = (size_t)c * (count / (size_t)n);
  *len = count / (size_t)n;
}

ncclResult_t lab_ring_allreduce(const float* sendbuff, float* recvbuff, size_t count, ncclComm_t comm,
                                cudaStream_t stream) {
  float* scratch = NULL;
  int n = 0, rank = 0;
  TRY(ncclCommCount(comm, &n));       /* how many ranks */
  TRY(ncclCommUserRank(comm, &rank)); /* which one this is: 0 .. n-1 */
  const int next = (rank + 1) % n, prev = (rank + n - 1) % n;

  /* Every rank starts from its own input; the ring then adds the others' into recvbuff. */
  if (recvbuff != sendbuff) memcpy(recvbuff, sendbuff, count * sizeof(float));

  /* Room for the largest chunk a step receives: count/n + 1 elements, enough after TODO 3 too. */
  scratch = malloc((count / (size_t)n + 1) * sizeof(float));
  if (scratch == NULL) return ncclSystemError;

  /* TODO 1: reduce-scatter, n-1 steps. Step s, with size_t start/len from chunk_of:
   *     TRY(ncclGroupStart());
   *     TRY(ncclSend(recvbuff + send_start, send_len, ncclFloat, next, comm, stream));
   *     TRY(ncclRecv(scratch, recv_len, ncclFloat, prev, comm, stream));
   *     TRY(ncclGroupEnd());
   *     TRY(cclabStreamSynchronize(stream));
   *     then add scratch[0 .. recv_len) into recvbuff[recv_start ..]. */

  /* TODO 2: all-gather, n-1 steps, receiving into recvbuff + recv_start. */

  /* These (void) lines only keep the compiler from warning about names the skeleton does not use yet;
   * keep or delete them. */
  (void)chunk_of;
  (void)next;
  (void)prev;
  (void)stream;
  free(scratch);
  return ncclSuccess;
}
