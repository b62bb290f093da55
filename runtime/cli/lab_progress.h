// runtime/cli/lab_progress.h - how long a lab took to pass: when the student first ran or checked it,
// when a check first passed, how many checks they ran, kept in the lab's status.json; and when
// scripts/lab.sh first ran in this build (the file course_started in the labs' work folder), from which
// lab 1 counts, build included. `cclab lab list` prints it, `cclab lab list --json` gives it to an
// instructor who collects a class's results.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace cclab::lab {

// status.json as an object ({} when missing or not JSON), and written back.
nlohmann::json read_status(const std::string& path);
bool write_status(const std::string& path, const nlohmann::json& status);

// A `cclab lab run` or `check` at `now` (seconds since the epoch): "started" unless already there.
// True when it set it (the status changed).
bool note_started(nlohmann::json* status, long long now);
// A check that ran at `now`: "checks_run" + 1, and "first_passed" the first time all checks pass.
void note_check(nlohmann::json* status, bool all_passed, long long now);

// The time scripts/lab.sh first ran, from WORK_ROOT/course_started (0 when there is none or it is not
// a number of seconds).
long long course_started(const std::string& work_root);

struct TimeToPass {
  bool known = false;
  long long seconds = 0;
  bool from_course_start = false;  // counted from scripts/lab.sh's first run (the build included)
};
// From the lab's first run or check to its first passing check; for the first lab, from
// scripts/lab.sh's first run when that is earlier.
TimeToPass time_to_pass(const nlohmann::json& status, long long course_start, bool first_lab);

// "34 min", "1 h 05 min", "under 1 min".
std::string duration_text(long long seconds);

}  // namespace cclab::lab
