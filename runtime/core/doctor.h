// runtime/core/doctor.h - "who waits on whom": a host communicator's status board (base/board.h) kept up
// to date by its operations and waits, and read when a wait is stuck (issue 22, items 3 and 5).
//
// While a wait of the host executor sleeps (backends/host/host_exec.h, WaitWatch), the doctor
//   - checks the process of the peer it waits for, when that peer is on this host: a dead process ends
//     the wait at once with ncclRemoteError naming it (SHM and P2P peers; NET finds it by its socket);
//   - after a second, reads every rank's slot and judges (board_judge): a verdict that the operation can
//     never complete - ranks that called a different collective, count, datatype, op or root; a rank that
//     left the communicator without calling it; a dead process - ends the wait with ncclInvalidUsage or
//     ncclRemoteError and the verdict, once two polls agree; the report is printed once per board;
//   - after CCLAB_STUCK_WARN seconds, prints the report once per board whatever it says (a rank that has
//     not called yet may still come: the waits go on, CCLAB_TIMEOUT ends them);
//   - on SIGUSR1 (installed when the program left SIGUSR1 alone and CCLAB_DOCTOR_SIGNAL is not 0), prints the
//     report of every board of the process with a sleeping wait.
// `cclab doctor` reads the boards of the host from outside (runtime/cli/doctor_cmd.h).
// CCLAB_DOCTOR=0 turns the board off (the dead-peer check stays).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "bootstrap/socket.h"
#include "cclab/nccl.h"
#include "kernels/primitives.h"

namespace cclab {

class Doctor;

// Starts (once per process) the server through which doctors on other hosts read this host's boards,
// listening on `near`'s IP (the bootstrap's interface), and returns its address (port 0: none, e.g.
// CCLAB_DOCTOR=0). A stuck rank's doctor reads, beside its own host's board, the board of every other host
// of its communicator from one rank's process there, so the report and the verdict cover every rank.
SocketAddress doctor_board_server(const SocketAddress& near);

// CCLAB_STUCK_WARN in microseconds: how long a wait sleeps before it is reported (30 s; 0: never). The
// host executor's waits, the connection waits and the doctor's report all use it.
double stuck_warn_us();

// Opens the board of a host communicator (after its peers are known). Never fails: without shared
// memory the communicator runs without a board (INFO says why).
void doctor_attach(ncclComm_t comm);
// Leaves the board (the communicator is destroyed or aborted).
void doctor_detach(ncclComm_t comm);

// The flight recorder: operation `seq` of the communicator begins / ends.
void doctor_coll_begin(ncclComm_t comm, uint64_t seq, int coll, size_t count, int dtype, int redop, int root,
                       const char* algo, int proto, int nchannels);
void doctor_p2p_begin(ncclComm_t comm, uint64_t seq, int nops, int first_peer, size_t bytes);
void doctor_op_end(ncclComm_t comm, uint64_t seq, bool ok, const std::string& error);

// Prints the board's report now (once per situation across the board's ranks): a rank found a count or
// datatype mismatch, and the report shows what every rank called.
void doctor_report_now(ncclComm_t comm);

// The host executor's WaitWatch callbacks; ctx is the communicator.
void doctor_wait_begin(void* ctx, const WaitSite& site);
int doctor_wait_poll(void* ctx, const WaitSite& site, double waited_us, std::string* why);
void doctor_wait_end(void* ctx, const WaitSite& site);

}  // namespace cclab
