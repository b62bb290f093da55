// viz/live_source.h - `cclab viz --live SOCKET`: connects to a run's live socket (retrying while it
// does not exist yet) and feeds a TraceStreamDecoder a little every frame, without blocking the UI.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "trace/live.h"
#include "trace/trace.h"

namespace cclab {
namespace viz {

class LiveSource {
 public:
  enum class State { kConnecting, kStreaming, kComplete, kFailed };
  LiveSource(std::string path, double wait_s);
  // Tries to connect (every 200 ms until wait_s passed) or reads what arrived (waiting up to
  // timeout_ms). True when the trace changed (new sections).
  bool poll(int timeout_ms);
  State state() const { return state_; }
  const trace::Trace& trace() const { return decoder_.trace(); }
  bool header_seen() const { return decoder_.header_seen(); }
  // "connecting to PATH (3 s)", "live: 12345 events", "complete", "failed: ...".
  std::string status() const;
  const std::string& error() const { return error_; }

 private:
  std::string path_;
  double wait_s_;
  State state_ = State::kConnecting;
  std::chrono::steady_clock::time_point start_, last_try_;
  bool tried_ = false;
  trace::LiveClient client_;
  trace::TraceStreamDecoder decoder_;
  uint64_t sections_ = 0;
  std::string error_;
};

}  // namespace viz
}  // namespace cclab
