// viz/timeline.cc - see timeline.h.
#include "viz/timeline.h"

#include <algorithm>
#include <cmath>

#include "viz/model.h"

namespace cclab {
namespace viz {

double speed_from_slider(double s) {
  s = std::min(1.0, std::max(0.0, s));
  return kMinSpeed * std::pow(kMaxSpeed / kMinSpeed, s);
}

double slider_from_speed(double speed) {
  speed = std::min(kMaxSpeed, std::max(kMinSpeed, speed));
  return std::log(speed / kMinSpeed) / std::log(kMaxSpeed / kMinSpeed);
}

double default_speed(double span_us) {
  if (!(span_us > 0)) return 1;
  return std::min(kMaxSpeed, std::max(kMinSpeed, span_us / 10.0));
}

void Timeline::set_range(double b, double e) {
  begin = b;
  end = std::max(b, e);
  if (follow) t = end;
  t = std::min(end, std::max(begin, t));
}

void Timeline::seek(double time_us) {
  t = std::min(end, std::max(begin, time_us));
  follow = false;
}

void Timeline::play() {
  if (t >= end) t = begin;  // replay from the start
  playing = true;
}

void Timeline::pause() {
  playing = false;
  follow = false;
}

void Timeline::advance(double wall_s, bool live) {
  if (!playing || !(wall_s > 0)) return;
  t += speed * wall_s;
  if (t >= end) {
    t = end;
    if (live) follow = true;
    if (!follow) playing = false;
  }
}

void Timeline::step_forward(const std::vector<double>& boundaries) {
  pause();
  t = std::min(end, std::max(begin, next_boundary(boundaries, t)));
}

void Timeline::step_back(const std::vector<double>& boundaries) {
  pause();
  t = std::min(end, std::max(begin, prev_boundary(boundaries, t)));
}

}  // namespace viz
}  // namespace cclab
