// kernels/fifo.h - the connection between two ranks on one channel: NCCL_STEPS FIFO slots and the
// head/tail credit counters (NCCL's ncclSendMem/ncclRecvMem and ncclConnInfo).
//
//   sender                                   receiver (owns the memory)
//   ------                                   --------------------------
//   wait head + NCCL_STEPS >= step + k  <---- head : steps the receiver has consumed (credits)
//   write slots [step, step+k)          ----> slots: NCCL_STEPS x step_bytes of data
//   tail = step + k                     ----> tail : steps the sender has posted
//                                            wait tail >= step + k, read, head = step + k
//
// Both counters only grow; each side keeps its own running step in ConnInfo. The header and the
// slots live in memory both ranks can reach: the same heap in one process, POSIX shared memory
// between processes, peer GPU memory on the CUDA backend, a SimGrid-backed buffer in the simulator.
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "kernels/platform.h"

namespace cclab {

// NCCL_STEPS: slots per connection FIFO.
constexpr int kNcclSteps = 8;

// One monotonically growing counter on its own cache line(s), so the sender's and the receiver's
// writes never share a line. `seq` and `waiters` serve executors that block (the host executor
// sleeps on `seq` with a futex); device and simulated executors ignore them.
struct alignas(128) ConnCounter {
  uint64_t value;
  uint32_t seq;
  uint32_t waiters;
};

// Shared header of one connection; the data slots follow it at kFifoDataOffset.
//
// The slice records (NCCL's connFifo[NCCL_STEPS].size, which its proxy reads): for a slice that starts
// at step s and spans k slots, the sender writes sizes[s % NCCL_STEPS] = its bytes and
// ends[s % NCCL_STEPS] = s + k before it posts tail. A record belongs to step s when ends > s; a slot
// whose record is older (ends <= s) was skipped by the end-of-operation rounding to a chunk boundary.
// So a proxy that sees tail move can cut what was posted into the slices the sender wrote, however
// many it finds at once, without knowing the operation (runtime/transport/net.h).
struct alignas(128) ConnFifoHeader {
  ConnCounter head;             // written by the receiver
  ConnCounter tail;             // written by the sender
  uint64_t ends[kNcclSteps];    // slice record: step after the slice that starts in this slot
  int32_t sizes[kNcclSteps];    // slice record: bytes the sender put in the slice (wire bytes for LL/LL128)
  // Point-to-point only: 1 + the bytes of the whole send the slice belongs to (all its parts), so a
  // receive of another size stops at its first slice instead of leaving bytes behind or waiting for
  // bytes that never come (kernels/p2p.h). NCCL has no such record.
  uint64_t xfers[kNcclSteps];
  uint32_t ready;               // set (release) by the receiver once the memory is initialised
  uint32_t sender_attached;     // set by the sender once it has mapped the connection
};

constexpr size_t kFifoDataOffset = (sizeof(ConnFifoHeader) + 4095) / 4096 * 4096;

// Bytes of shared memory one connection needs for a FIFO of `buff_bytes`.
CCLAB_HD inline size_t fifo_total_bytes(size_t buff_bytes) { return kFifoDataOffset + buff_bytes; }

// One side's view of a connection. `step` is this side's running step count; it persists across
// operations on the same channel and must match the other side's count at every operation boundary.
struct ConnInfo {
  ConnFifoHeader* hdr = nullptr;  // shared header
  char* buff = nullptr;           // first data slot (shared)
  int step_bytes = 0;             // bytes per slot
  int peer = -1;                  // the rank at the other end
  uint64_t step = 0;              // this side's running step

  CCLAB_HD char* slot(uint64_t s) const { return buff + (s % kNcclSteps) * static_cast<size_t>(step_bytes); }
};

}  // namespace cclab
