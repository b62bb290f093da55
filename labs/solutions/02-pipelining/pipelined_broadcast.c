/* labs/solutions/02-pipelining/pipelined_broadcast.c - a reference solution of lab 2 (instructors
 * only: delete labs/solutions/ before handing the labs out; nothing else needs it).
 *
 * A broadcast around the ring root -> root+1 -> ... -> root-1, pipelined: the buffer is cut into P pieces
 * of chunk_elems elements, and in slot t (0 .. n-2+P-1) the rank at distance d from the root sends piece
 * t - d to the next rank and, in the same group, receives piece t - d + 1 from the previous one. Every hop
 * of the ring works at once: n - 2 + P slots instead of (n - 1) slots of the whole buffer. */
#include <string.h>

#include "pipelined_broadcast.h"

#define TRY(call)                              \
  do {                                         \
    ncclResult_t try_result_ = (call);         \
    if (try_result_ != ncclSuccess) return try_result_; \
  } while (0)

/* How many pieces of chunk elements cover count elements (the last one may be shorter). */
static size_t pieces_of(size_t count, size_t chunk) { return (count + chunk - 1) / chunk; }

/* Piece k: its first element and its length. */
static void piece_of(size_t count, size_t chunk, size_t k, size_t* start, size_t* len) {
  *start = k * chunk;
  *len = count - *start < chunk ? count - *start : chunk;
}

/* One slot: send `send_len` elements to `next` and receive `recv_len` from `prev` at once (a group; either
 * may be absent: NULL), then wait until both are done. */
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
  TRY(ncclCommCount(comm, &n));
  TRY(ncclCommUserRank(comm, &rank));
  const int d = (rank - root + n) % n; /* hops from the root */
  const int next = (rank + 1) % n, prev = (rank + n - 1) % n;
  if (d == 0 && recvbuff != sendbuff) memcpy(recvbuff, sendbuff, count * sizeof(float));
  if (n == 1 || count == 0) return ncclSuccess;

  const size_t chunk = chunk_elems > 0 && chunk_elems < count ? chunk_elems : count;
  const long long P = (long long)pieces_of(count, chunk);
  const float* src = d == 0 ? sendbuff : recvbuff; /* what this rank sends on */
  for (long long t = 0; t < P + n - 2; ++t) {
    const long long ks = t - d, kr = t - d + 1; /* the piece it sends, the piece it receives */
    const int sending = d < n - 1 && ks >= 0 && ks < P, receiving = d > 0 && kr >= 0 && kr < P;
    if (!sending && !receiving) continue; /* the fill (not reached yet) or the drain (done) */
    size_t s_start = 0, s_len = 0, r_start = 0, r_len = 0;
    if (sending) piece_of(count, chunk, (size_t)ks, &s_start, &s_len);
    if (receiving) piece_of(count, chunk, (size_t)kr, &r_start, &r_len);
    TRY(slot(sending ? src + s_start : NULL, s_len, receiving ? recvbuff + r_start : NULL, r_len, next, prev, comm,
             stream));
  }
  return ncclSuccess;
}
