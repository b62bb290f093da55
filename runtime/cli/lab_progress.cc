// runtime/cli/lab_progress.cc - how long a lab took to pass (lab_progress.h).
#include "lab_progress.h"

#include <cstdio>
#include <fstream>

namespace cclab::lab {

nlohmann::json read_status(const std::string& path) {
  std::ifstream f(path);
  nlohmann::json s = f ? nlohmann::json::parse(f, nullptr, false) : nlohmann::json::object();
  return s.is_object() ? s : nlohmann::json::object();
}

bool write_status(const std::string& path, const nlohmann::json& status) {
  std::ofstream f(path);
  f << status.dump(2) << "\n";
  return static_cast<bool>(f);
}

namespace {
bool has_integer(const nlohmann::json& s, const char* key) {
  const auto it = s.find(key);
  return it != s.end() && it->is_number_integer();
}
}  // namespace

bool note_started(nlohmann::json* status, long long now) {
  if (has_integer(*status, "started")) return false;
  (*status)["started"] = now;
  return true;
}

void note_check(nlohmann::json* status, bool all_passed, long long now) {
  note_started(status, now);
  (*status)["checks_run"] = (has_integer(*status, "checks_run") ? (*status)["checks_run"].get<long long>() : 0) + 1;
  if (all_passed && !has_integer(*status, "first_passed")) (*status)["first_passed"] = now;
}

long long course_started(const std::string& work_root) {
  std::ifstream f(work_root + "/course_started");
  long long t = 0;
  if (!(f >> t) || t <= 0) return 0;
  return t;
}

TimeToPass time_to_pass(const nlohmann::json& status, long long course_start, bool first_lab) {
  TimeToPass r;
  if (!status.is_object() || !has_integer(status, "started") || !has_integer(status, "first_passed")) return r;
  long long from = status["started"].get<long long>();
  if (first_lab && course_start > 0 && course_start < from) {
    from = course_start;
    r.from_course_start = true;
  }
  const long long to = status["first_passed"].get<long long>();
  if (to < from) return r;  // a clock that went back: say nothing rather than something wrong
  r.known = true;
  r.seconds = to - from;
  return r;
}

std::string duration_text(long long seconds) {
  if (seconds < 60) return "under 1 min";
  const long long minutes = seconds / 60;
  char b[64];
  if (minutes < 60)
    std::snprintf(b, sizeof b, "%lld min", minutes);
  else
    std::snprintf(b, sizeof b, "%lld h %02lld min", minutes / 60, minutes % 60);
  return b;
}

}  // namespace cclab::lab
