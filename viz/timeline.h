// viz/timeline.h - the time cursor: play/pause, stepping to the next/previous event boundary, speed on
// a log scale (simulated microseconds per wall-clock second), the scrubber's range. Pure logic.
#pragma once

#include <vector>

namespace cclab {
namespace viz {

constexpr double kMinSpeed = 1e-3;  // us of trace per wall second
constexpr double kMaxSpeed = 1e7;

// Slider position in [0, 1] <-> speed, logarithmically between kMinSpeed and kMaxSpeed.
double speed_from_slider(double s);
double slider_from_speed(double speed);
// A speed that plays [begin, end] in about 10 seconds.
double default_speed(double span_us);

struct Timeline {
  double t = 0;        // the cursor, us
  double begin = 0, end = 0;
  bool playing = false;
  bool follow = false;  // live mode: keep the cursor on the newest event (until paused or moved)
  double speed = 1;     // us per wall second

  // Sets the range (keeps t inside it; a following cursor moves to the new end).
  void set_range(double b, double e);
  void seek(double time_us);
  void play();
  void pause();
  void toggle() { playing ? pause() : play(); }
  // Moves the cursor by wall_s seconds of playback; stops at the end, except that a live run's
  // cursor reaching the newest event follows it from then on.
  void advance(double wall_s, bool live = false);
  // To the next / previous event boundary (begin, data or end of any event); pauses playback.
  void step_forward(const std::vector<double>& boundaries);
  void step_back(const std::vector<double>& boundaries);
};

}  // namespace viz
}  // namespace cclab
