// kernels/primitives_ll128.h - Primitives<T, ProtoLL128, Exec> (NCCL's prims_ll128.h): the line primitives
// of primitives_ll.h over 128-byte lines of 15 data words and a 64-bit flag word (proto_ll.h). The
// receiver polls each line's flag word (acquire on the host, 128-byte line atomicity on NVLink) and
// then reads its data; credits travel by the head counter, one step per call. LL128 flags are 64-bit
// step counts and never wrap, so unlike LL there is no flag cleaning.
#pragma once

#include "kernels/platform.h"
#include "kernels/primitives_ll.h"
#include "kernels/proto_ll.h"

namespace cclab {

template <typename T, typename Exec>
class Primitives<T, ProtoLL128, Exec> : public LinePrimitives<T, ProtoLL128, Exec> {
 public:
  CCLAB_HD Primitives(Exec& exec, const RedOp<T>& op, ConnInfo* recv, ConnInfo* send, const T* input, T* output,
                      int rank, int channel, CollKind coll, uint64_t op_count)
      : LinePrimitives<T, ProtoLL128, Exec>(exec, op, &recv, 1, &send, 1, input, output, rank, channel, coll,
                                            op_count) {}
  CCLAB_HD Primitives(Exec& exec, const RedOp<T>& op, ConnInfo* const* recv, int nrecv, ConnInfo* const* send,
                      int nsend, const T* input, T* output, int rank, int channel, CollKind coll, uint64_t op_count)
      : LinePrimitives<T, ProtoLL128, Exec>(exec, op, recv, nrecv, send, nsend, input, output, rank, channel, coll,
                                            op_count) {}
};

}  // namespace cclab
