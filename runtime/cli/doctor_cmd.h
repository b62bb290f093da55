// runtime/cli/doctor_cmd.h - `cclab doctor`: reads the status boards of the running communicators of this
// host (base/board.h) and prints who waits on whom, with the verdict (issue 22).
//
//   cclab doctor                 every board on this host: each rank's operation and sleeping waits,
//                                the verdict (mismatched calls, a missing rank, a dead process, a cycle)
//   cclab doctor BOARD...        those boards (/cclab-board-..., as listed)
//   cclab doctor --clean         removes boards left by jobs whose ranks all died
//   --stuck S                    waits asleep for at least S seconds count as stuck (default 1)
// Exit status: 0 nothing stuck, 1 a board has stuck waits, 2 usage or unreadable board.
#pragma once

#include <string>
#include <vector>

namespace cclab {

int doctor_main(const std::vector<std::string>& args);

}  // namespace cclab
