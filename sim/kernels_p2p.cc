// sim/kernels_p2p.cc - kernels/p2p.h's send and receive schedules instantiated for the simulator's
// executor (bytes move as uint8_t whatever the user's type, as on the host backend).
#include "kernels/p2p.h"
#include "sim/world.h"

namespace cclab {
namespace sim {

bool sim_p2p_send(SimExec& exec, const P2pWork& w, int channel, ConnInfo* send) {
  return run_p2p_send<SimExec>(exec, w, channel, send);
}

bool sim_p2p_recv(SimExec& exec, const P2pWork& w, int channel, ConnInfo* recv) {
  return run_p2p_recv<SimExec>(exec, w, channel, recv);
}

}  // namespace sim
}  // namespace cclab
