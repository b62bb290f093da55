// runtime/backends/host/lanes.h - the threads that play a GPU's thread blocks: a kernel launch hands one task
// per channel (or per point-to-point direction) to the lanes and runs the first on the calling
// thread. Lanes persist across launches and sleep when idle.
#pragma once

#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "base/sync.h"

namespace cclab {

class LanePool {
 public:
  explicit LanePool(double spin_us) : spin_us_(spin_us) {}
  ~LanePool();
  // Runs every task concurrently: tasks[0] on the caller, the rest on lanes (created on demand).
  // Returns when all have finished.
  void run(std::vector<std::function<void()>>& tasks);

 private:
  struct Lane {
    std::function<void()> task;
    Event32 go, done;
    bool stop = false;
    std::thread thread;
  };
  void lane_main(Lane* lane);

  double spin_us_;
  std::vector<std::unique_ptr<Lane>> lanes_;
};

}  // namespace cclab
