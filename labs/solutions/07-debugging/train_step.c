/* labs/07-debugging/train_step.c - lab 7: a training step that hangs, is wrong, and is slow.
 * Read README.md first. Build and run: cclab lab run 07 --ranks 2 ; check: cclab lab check 07.
 *
 * A data-parallel training step, as PyTorch's DistributedDataParallel does it: every rank computed
 * gradients on its own slice of the batch; they are averaged over the ranks in buckets (one
 * ncclAllReduce per bucket, so that in a real framework the first buckets travel while the backward pass
 * still computes the rest), and the losses are summed so that every rank can log the global loss.
 *
 * This code compiles and runs, but it has three bugs, each a classic (README.md, steps 1 to 3):
 *   TODO 1: a rank never joins a collective: the step hangs.
 *   TODO 2: the ranks call mismatched collectives: wrong sums, or a size mismatch, depending on count.
 *   TODO 3: it is slow: hundreds of tiny collectives, each paying the latency of a whole all_reduce. */
#include "train_step.h"

#define TRY(call)                            \
  do {                                       \
    ncclResult_t e_ = (call);                \
    if (e_ != ncclSuccess) return e_;        \
  } while (0)

/* TODO 3: the bucket size. Each ncclAllReduce costs a fixed latency (tens of microseconds on a DGX H100)
 * plus its bytes over the bandwidth: measure the step with `cclab viz` and NCCL_DEBUG=INFO, then choose. */
#define BUCKET_BYTES (8 * 1024 * 1024) /* 16 MiB in 2 buckets: 1.18x one bucket's time (64 KiB: 36x) */

ncclResult_t lab_train_step(float* grads, size_t count, float* loss, ncclComm_t comm, cudaStream_t stream) {
  int rank = 0;
  TRY(ncclCommUserRank(comm, &rank));
  const size_t bucket = BUCKET_BYTES / sizeof(float);
  const size_t nbuckets = (count + bucket - 1) / bucket;

  for (size_t k = 0; k < nbuckets; ++k) {
    /* TODO 2: "load balancing": odd ranks start from the last bucket, so that not every rank reads the
     * same memory at the same time. */
    const size_t b = k; /* every rank, the same order */
    const size_t start = b * bucket;
    const size_t n = count - start < bucket ? count - start : bucket;
    TRY(ncclAllReduce(grads + start, grads + start, n, ncclFloat, ncclAvg, comm, stream));
  }

  /* TODO 1: only rank 0 prints the loss, so only rank 0 needs it... */
  {                   /* every rank calls every collective */
    TRY(ncclAllReduce(loss, loss, 1, ncclFloat, ncclSum, comm, stream));
  }

  TRY(cclabStreamSynchronize(stream));
  return ncclSuccess;
}
