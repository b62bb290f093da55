// runtime/trace/switch_traffic.h - what an NVLS step moves through the NVSwitch (kernels/nvls.h), for
// the link load and the visualiser.
//
// An NVLS head's step names itself as its peer: recv_peer == rank is a multimem load-reduce (the switch
// reads the slot from every GPU of the group, reduces, returns the result to the head), send_peer == rank
// a multicast store (the head writes the slot once, the switch writes it into every GPU of the group).
// An AllReduce head step (recvReduceCopySend) is both, a ReduceScatter step (recvReduceCopy) the first,
// an AllGather step (copySend) the second. Such a step has no route (nothing goes to another rank), so
// the trace's routes cannot place its bytes; SwitchIndex does:
//
//   load-reduce of b bytes: every GPU of the group -> switch  b,   switch -> head  b
//   multicast store:        head -> switch  b,                     switch -> every GPU of the group  b
//
// where a GPU's "-> switch" is all its links to NVSwitch nodes (the bytes split evenly: NVLS traffic
// is spread over every NVLink) and the group is every GPU of the head's machine that a rank plays.
#pragma once

#include <vector>

#include "trace/trace.h"

namespace cclab {
namespace trace {

class SwitchIndex {
 public:
  SwitchIndex() = default;
  explicit SwitchIndex(const Trace& t) { build(t); }
  void build(const Trace& t);

  // True when event e is a switch operation (a self peer on a rank whose GPU links to an NVSwitch).
  bool is_switch_step(const Event& e) const;

  // One link's share of a switch step: `bytes` on `link`, in phase 0 (towards the switch) or 1 (from it).
  struct Hop {
    int link = -1;
    double bytes = 0;
    int phase = 0;
  };
  // The hops of event e (none when it is not a switch step), appended to *out.
  void hops(const Event& e, std::vector<Hop>* out) const;

  // The NVSwitch node a rank's GPU reaches first (for drawing), -1 none.
  int switch_node(int rank) const;

 private:
  struct RankLinks {
    int machine = -1;
    int node = -1;
    std::vector<int> up, down;  // links GPU -> NVSwitch, NVSwitch -> GPU
  };
  std::vector<RankLinks> ranks_;              // by rank
  std::vector<std::vector<int>> group_;       // by machine: ranks whose GPU links to an NVSwitch
  std::vector<int> first_switch_;             // by rank
};

}  // namespace trace
}  // namespace cclab
