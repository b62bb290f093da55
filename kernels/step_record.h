// kernels/step_record.h - what an executor reports for every primitive step (the one event stream).
#pragma once

#include <stddef.h>
#include <stdint.h>

namespace cclab {

// Primitive kinds; values equal cclabPrim_t in cclab/cclab.h.
enum class PrimKind : int {
  kSend = 0,
  kRecv = 1,
  kRecvReduceSend = 2,
  kRecvReduceCopySend = 3,
  kRecvCopySend = 4,
  kCopySend = 5,
  kRecvReduceCopy = 6,
  kLocalCopy = 7,
  kSendFromOutput = 8,
};

// Collective kinds; values equal cclabColl_t in cclab/cclab.h.
enum class CollKind : int {
  kAllReduce = 0,
  kBroadcast = 1,
  kReduce = 2,
  kAllGather = 3,
  kReduceScatter = 4,
  kSendRecv = 5,
  kNumKinds = 6,
};

struct StepRecord {
  int rank;
  int channel;
  int send_peer;   // -1 if the step sends nothing
  int recv_peer;   // -1 if the step receives nothing
  uint64_t step;   // connection step at which the slice began
  PrimKind prim;
  CollKind coll;
  uint64_t op_count;
  size_t bytes;     // payload bytes
  double begin_us;  // executor clock: the step started waiting
  double end_us;    // its data was posted
  uint64_t offset;  // byte offset of the slice in the rank's buffer (which chunk it is)
  double data_us;   // its up-front waits were satisfied and data started to move (Simple: credits and
                    // data; LL/LL128: credits, the lines are awaited as they arrive)
};

}  // namespace cclab
