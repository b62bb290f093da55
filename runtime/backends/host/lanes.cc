#include "backends/host/lanes.h"

namespace cclab {

LanePool::~LanePool() {
  for (auto& l : lanes_) {
    l->stop = true;
    l->go.set();
    l->thread.join();
  }
}

void LanePool::lane_main(Lane* lane) {
  for (;;) {
    lane->go.wait(static_cast<int64_t>(spin_us_));
    lane->go.reset();
    if (lane->stop) return;
    lane->task();
    lane->task = nullptr;
    lane->done.set();
  }
}

void LanePool::run(std::vector<std::function<void()>>& tasks) {
  if (tasks.empty()) return;
  while (lanes_.size() + 1 < tasks.size()) {
    lanes_.push_back(std::make_unique<Lane>());
    Lane* l = lanes_.back().get();
    l->thread = std::thread([this, l] { lane_main(l); });
  }
  for (size_t i = 1; i < tasks.size(); ++i) {
    Lane* l = lanes_[i - 1].get();
    l->done.reset();
    l->task = std::move(tasks[i]);
    l->go.set();
  }
  tasks[0]();
  for (size_t i = 1; i < tasks.size(); ++i) lanes_[i - 1]->done.wait(static_cast<int64_t>(spin_us_));
}

}  // namespace cclab
