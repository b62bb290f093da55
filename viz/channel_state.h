// viz/channel_state.h - what each rank of a channel is doing at a time: the step it is at (the last
// event it began) and, while that event has not reached data_us, what it waits for:
//   data   its receive from rank P: the matching send of P (P's n-th send to this rank on the channel
//          for this rank's n-th receive from P; sender and receiver step in lockstep) has not posted
//          its data yet -> "waiting for data from rank P step S" (S: the connection's FIFO step)
//   credits otherwise, when it sends to Q -> "waiting for credits from rank Q" (Q has not freed a slot)
// Pure logic.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "viz/model.h"

namespace cclab {
namespace viz {

// For every receiving event, the matching send event of its peer (-1 none); built from a TraceIndex.
class SendMatch {
 public:
  void build(const Trace& t, const TraceIndex& index);
  size_t built_for() const { return built_for_; }  // TraceIndex::indexed() when built
  int match(int event) const {
    return event >= 0 && static_cast<size_t>(event) < match_.size() ? match_[event] : -1;
  }

 private:
  std::vector<int> match_;
  size_t built_for_ = static_cast<size_t>(-1);
};

struct RankStatus {
  enum State {
    kNotStarted,     // no event begun yet on this channel
    kWaitingData,    // begun, waiting for a peer's data
    kWaitingCredits, // begun, waiting for the send peer to free a slot
    kWaiting,        // begun, waiting (local)
    kMoving,         // data_us <= t < end_us
    kIdle,           // between two events
    kDone,           // after its last event
  };
  State state = kNotStarted;
  int event = -1;          // the event it is at
  uint64_t step = 0;       // that event's step
  int peer = -1;           // data: the rank it waits for; credits: the send peer
  uint64_t peer_step = 0;  // data: the FIFO step it waits for
  std::string text(const Trace& t) const;  // "waiting for data from rank 3 step 12", ...
};

RankStatus rank_status(const Trace& t, const TraceIndex& index, const SendMatch& match, int rank, int channel,
                       double time_us);

}  // namespace viz
}  // namespace cclab
