// kernels/protocols.h - protocols as types. A protocol answers how many bytes a FIFO step carries,
// how a chunk is cut into slices and steps, and the grain to which chunks are aligned.
//
// Simple (NCCL's ProtoSimple<SlicePerChunk, StepPerSlice>): data goes straight into the receiver's
// FIFO slots; the receiver learns it is there from the tail counter (release on the sender's store
// of tail, acquire on the receiver's load). A slice spans StepPerSlice consecutive slots; a chunk
// is SlicePerChunk slices. LL and LL128 (flags inside the data lines) come with the next issue.
#pragma once

#include "kernels/fifo.h"
#include "kernels/platform.h"

namespace cclab {

template <int SlicePerChunk, int StepPerSlice>
struct ProtoSimple {
  static_assert(kNcclSteps % StepPerSlice == 0, "a slice must not wrap around the FIFO");
  static constexpr int kSlicePerChunk = SlicePerChunk;
  static constexpr int kStepPerSlice = StepPerSlice;
  static constexpr int kChunkSteps = SlicePerChunk * StepPerSlice;
  // Chunks and slices are multiples of this many bytes (NCCL's Simple grain).
  static constexpr int kGrainBytes = 512;
  // Wire bytes per payload byte (Simple sends the payload as is).
  static constexpr int kWireNum = 1, kWireDen = 1;
  static constexpr const char* kName = "Simple";

  // Payload bytes one FIFO slot carries, for a connection buffer of `buff_bytes`.
  CCLAB_HD static int step_bytes(int buff_bytes) { return buff_bytes / kNcclSteps; }
  // Largest chunk, in bytes, a primitive call may move (chunkSteps slots).
  CCLAB_HD static size_t max_chunk_bytes(int buff_bytes) {
    return static_cast<size_t>(step_bytes(buff_bytes)) * kChunkSteps;
  }
};

// NCCL's choices: AllReduce, AllGather and ReduceScatter use SLICESTEPS=2, CHUNKSTEPS=4 (two slices
// of two steps each); Broadcast, Reduce and point-to-point use one slice of one step.
using ProtoSimpleRing = ProtoSimple<2, 2>;
using ProtoSimpleOne = ProtoSimple<1, 1>;

}  // namespace cclab
