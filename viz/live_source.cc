// viz/live_source.cc - see live_source.h.
#include "viz/live_source.h"

#include <cstdio>

namespace cclab {
namespace viz {

LiveSource::LiveSource(std::string path, double wait_s)
    : path_(std::move(path)), wait_s_(wait_s), start_(std::chrono::steady_clock::now()) {}

bool LiveSource::poll(int timeout_ms) {
  using clock = std::chrono::steady_clock;
  if (state_ == State::kConnecting) {
    const auto now = clock::now();
    if (tried_ && now - last_try_ < std::chrono::milliseconds(200)) return false;
    tried_ = true;
    last_try_ = now;
    std::string err;
    if (client_.connect(path_, 0.0, &err)) {
      state_ = State::kStreaming;
    } else if (std::chrono::duration<double>(now - start_).count() >= wait_s_) {
      state_ = State::kFailed;
      error_ = err.empty() ? "cannot connect to " + path_ : err;
    }
    return false;
  }
  if (state_ != State::kStreaming) return false;
  const bool alive = client_.poll(&decoder_, timeout_ms);
  const bool changed = decoder_.sections() != sections_;
  sections_ = decoder_.sections();
  if (!alive) {
    if (decoder_.complete()) {
      state_ = State::kComplete;
    } else {
      state_ = State::kFailed;
      error_ = !decoder_.error().empty() ? decoder_.error()
               : !client_.error().empty() ? client_.error()
                                           : "the run went away before the end of its trace";
    }
    client_.close();
  }
  return changed;
}

std::string LiveSource::status() const {
  char buf[160];
  switch (state_) {
    case State::kConnecting: {
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
      std::snprintf(buf, sizeof(buf), "connecting to %s (%.0f s)", path_.c_str(), s);
      return buf;
    }
    case State::kStreaming:
      std::snprintf(buf, sizeof(buf), "LIVE  %zu events", decoder_.trace().events.size());
      return buf;
    case State::kComplete:
      std::snprintf(buf, sizeof(buf), "run finished  %zu events", decoder_.trace().events.size());
      return buf;
    case State::kFailed: return "live: " + error_;
  }
  return "";
}

}  // namespace viz
}  // namespace cclab
