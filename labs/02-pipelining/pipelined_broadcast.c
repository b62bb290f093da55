/* labs/02-pipelining/pipelined_broadcast.c - lab 2: a broadcast around the ring, pipelined.
 *
 * This is the file you edit. It builds and runs, and it is right, but it is slow: it sends the whole
 * buffer from rank to rank around the ring, one hop after the other, and ignores chunk_elems. Run it
 * (cclab is build/runtime/cli/cclab):
 *
 *   cclab lab run 02
 *   CCLAB_BACKEND=sim CCLAB_TOPO=dgx-h100 cclab lab run 02 --ranks 8 --size 1M --sweep
 *
 * and check your work at any time (README.md, "How you are graded"):
 *
 *   cclab lab check 02
 *
 * What lab_pipelined_broadcast must do: pipelined_broadcast.h. Why pipelining pays: README.md,
 * "Background". The plan, as TODOs below:
 *
 *   TODO 1  pieces_of / piece_of: cut the count elements into pieces of chunk_elems elements, the last
 *           one shorter when chunk_elems does not divide count. Then every rank receives piece k, sends
 *           it on, receives piece k+1, ... Right, and faster, but each rank still does one thing at a
 *           time.
 *   TODO 2  the slots: make the send of piece k and the receive of piece k+1 one group, so that every
 *           hop of the ring works at once. In slot t = 0, 1, ..., (n - 2 + P) - 1 the rank at distance d
 *           from the root sends piece t - d to the next rank and receives piece t - d + 1 from the
 *           previous one (each only when that piece exists: 0 <= piece < P; the root receives nothing,
 *           the last rank sends nothing).
 *
 * One slot = ncclGroupStart(); ncclSend(...); ncclRecv(...); ncclGroupEnd(); then
 * cclabStreamSynchronize(stream) before you send on what was received (the function `slot` below). */
#include <string.h>

#include "pipelined_broadcast.h"

/* Returns from lab_pipelined_broadcast with the error of a nccl call that failed. */
#define TRY(call)                                       \
  do {                                                  \
    ncclResult_t try_result_ = (call);                  \
    if (try_result_ != ncclSuccess) return try_result_; \
  } while (0)

/* How many pieces cover count elements.
 * TODO 1: one piece, the whole buffer. Make it the number of pieces of chunk_elems elements. */
static size_t pieces_of(size_t count, size_t chunk_elems) {
  (void)chunk_elems;
  return count > 0 ? 1 : 0;
}

/* Piece k (0 <= k < pieces_of(...)): its first element and its length.
 * TODO 1: piece k starts at k x chunk_elems; the last one is shorter when chunk_elems does not divide
 * count. */
static void piece_of(size_t count, size_t chunk_elems, size_t k, size_t* start, size_t* len) {
  (void)chunk_elems;
  (void)k;
  *start = 0;
  *len = count;
}

/* One slot: send `send_len` elements to `next` and receive `recv_len` from `prev` at once (a group; pass
 * NULL for the one you do not need), then wait until both are done. */
static ncclResult_t slot(const float* send, size_t send_len, float* recv, size_t recv_len, int next, int prev,
                         ncclComm_t comm, cudaStream_t stream) {
  TRY(ncclGroupStart());
  ncclResult_t rs = send ? ncclSend(send, send_len, ncclFloat, next, comm, stream) : ncclSuccess;
  ncclResult_t rr = recv ? ncclRecv(recv, recv_len, ncclFloat, prev, comm, stream) : ncclSuccess;
  ncclResult_t r = ncclGroupEnd();
  if (rs != ncclSuccess) return rs;
  if (rr != ncclSuccess) return rr;
  if (r != ncclSuccess) return r;
  return cclabStreamSynchronize(stream);
}

ncclResult_t lab_pipelined_broadcast(const float* sendbuff, float* recvbuff, size_t count, size_t chunk_elems,
                                     int root, ncclComm_t comm, cudaStream_t stream) {
  int n = 0, rank = 0;
  TRY(ncclCommCount(comm, &n));       /* how many ranks */
  TRY(ncclCommUserRank(comm, &rank)); /* which one this is: 0 .. n-1 */
  const int d = (rank - root + n) % n; /* hops from the root: the root is 0, the last rank n-1 */
  const int next = (rank + 1) % n, prev = (rank + n - 1) % n;

  /* The root starts with the data; the others receive it into recvbuff and send it on from there. */
  if (d == 0 && recvbuff != sendbuff) memcpy(recvbuff, sendbuff, count * sizeof(float));
  if (n == 1 || count == 0) return ncclSuccess;
  const float* src = d == 0 ? sendbuff : recvbuff;

  /* TODO 2: piece by piece, each rank receives piece k (all but the root), then sends it on (all but
   * the last rank): a rank never receives and sends at the same time. Replace this loop by the slots
   * (the comment at the top): n - 2 + P slots, each one call of slot() with a send and a receive. */
  const size_t P = pieces_of(count, chunk_elems);
  for (size_t k = 0; k < P; ++k) {
    size_t start = 0, len = 0;
    piece_of(count, chunk_elems, k, &start, &len);
    if (d > 0) TRY(slot(NULL, 0, recvbuff + start, len, next, prev, comm, stream)); /* receive piece k */
    if (d < n - 1) TRY(slot(src + start, len, NULL, 0, next, prev, comm, stream));   /* send it on */
  }
  return ncclSuccess;
}
