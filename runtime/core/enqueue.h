// runtime/core/enqueue.h - from an API call to executed work: operation descriptors, groups, plans
// and their execution on host streams and lanes.
#pragma once

#include <vector>

#include "core/comm.h"

namespace cclab {

struct OpDesc {
  enum class Kind : int { kColl, kSend, kRecv } kind;
  CollKind coll = CollKind::kAllReduce;
  const void* send = nullptr;
  void* recv = nullptr;
  size_t count = 0;
  ncclDataType_t type = ncclFloat32;
  ncclRedOp_t op = ncclSum;
  int root = 0;
  int peer = -1;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  const char* fn = "";
};

// The executor's reduction argument of `op` on `t` (ncclAvg, PreMulSum scalars, ...).
RedOpArg make_redop(ncclComm_t comm, ncclRedOp_t op, ncclDataType_t t);

// NCCL's name of protocol index q (kProtoLL...): "LL", "LL128", "Simple".
const char* proto_name_of(int q);

// The work of collective `op` on this rank: algorithm, protocol, channels, chunk and reduction chosen as
// every backend chooses them, the connections it needs made (NCCL's runtime connect), the op counted.
ncclResult_t prepare_collective(ncclComm_t comm, const OpDesc& op, CollWork* w, AlgoKind* algo, size_t* total_bytes);

// Records the op in the current group, or runs it now (as a group of one) outside a group.
ncclResult_t enqueue(const OpDesc& op);

ncclResult_t group_start();
ncclResult_t group_end();
// ncclGroupSimulateEnd: closes the group like group_end but launches nothing; *time_us is the cost
// model's estimate of the group's collectives.
ncclResult_t group_simulate_end(double* time_us);
// Depth of the calling thread's group nesting.
int group_depth();
// Marks the current group as failed (an argument error inside it): ncclGroupEnd will return it.
void group_fail(ncclResult_t r);

// Waits until every operation enqueued on `comm` has completed.
void comm_drain(ncclComm_t comm);

ncclResult_t comm_init(ncclComm_t* out, int nranks, const ncclUniqueId& id, int rank, const ncclConfig_t* config,
                       int dev, const char* fn);
void comm_free(ncclComm_t comm);

size_t type_size(ncclDataType_t t);

}  // namespace cclab
