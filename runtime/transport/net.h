// runtime/transport/net.h - NET/Socket: the network transport between ranks that share no memory
// (NCCL's transport/net.cc driving net_socket.cc), for the host backend.
//
// Ranks on different hosts cannot write into each other's FIFO, so each end keeps a FIFO in its own
// memory and a proxy thread per connection end moves the slices between them over a TCP socket:
//
//   rank A (sends)                                              rank B (receives)
//   executor --writes--> A's FIFO                               B's FIFO --reads--> executor
//                        tail ->  send proxy ==TCP==> recv proxy  -> tail, slot data, slice record
//                        head <-  (slice on the wire)  (waits B's head before it writes a slot)
//
// The executors see an ordinary connection (kernels/fifo.h) and run unchanged: the sender's FIFO is
// local, its credits come back as soon as the proxy has handed a slice to the socket, and flow control
// end to end comes from TCP (a receiving proxy that waits for credits stops reading its socket). The
// send proxy learns where each slice starts and how long it is from the FIFO's slice records, so it
// needs no description of the operation (NCCL's proxy gets one from the host instead). On the wire,
// each slice is a 24-byte header (start step, steps, bytes, point-to-point transfer size) and its
// bytes; Simple slices are received straight into the slot, LL/LL128 lines into a staging buffer first
// and then stored word by word as their protocol orders them (LL: each 8-byte half at once; LL128: the flag word last, with release),
// since a socket's copy gives no word atomicity.
//
// Set-up, through the bootstrap: the receiving end listens on the NET interface (NCCL_SOCKET_IFNAME,
// NCCL_SOCKET_FAMILY) and sends its address to the sender (or the reason it could not); the sender
// waits for it, connects and introduces itself. The receiving end never waits for the sender (its
// proxy accepts), so comm.cc's receivers-first order connects without deadlock. Teardown: a send
// proxy that is stopped (Segment::stop; the communicator is destroyed) first sends what its executor
// already posted, then a goodbye; a proxy that sees its socket close without one, or fail, reports
// the peer lost through `on_error` (it exited, crashed, aborted, or its host vanished: keepalive),
// which stops the communicator instead of leaving its waits hanging. A proxy stopped by the
// communicator's abort flag closes its socket at once, so its peers learn of it the same way.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "bootstrap/bootstrap.h"
#include "cclab/nccl.h"
#include "transport/transport.h"

namespace cclab {

// What a proxy does with the lines it receives: NCCL's protocols, as kernels/proto_ll.h defines them.
enum class NetPayload : int { kSimple = 0, kLL = 1, kLL128 = 2 };

struct NetConnSpec {
  Bootstrap* bootstrap = nullptr;
  int rank = -1;         // this rank
  int peer = -1;         // the other end
  int channel = 0;
  int tag = 0;           // bootstrap tag of this connection's address message (unique per rank pair)
  uint64_t conn_id = 0;  // both ends compute it from the connection's name; checked at the handshake
  std::string what;      // "channel 1 Simple", for messages
  NetPayload payload = NetPayload::kSimple;
  size_t fifo_bytes = 0;  // fifo_total_bytes(buff_bytes)
  int step_bytes = 0;     // bytes per FIFO slot
  const std::atomic<int>* abort_flag = nullptr;  // the communicator's
  double timeout_s = 600;  // set-up waits (the bootstrap message, the connection)
  // Called once, from a proxy thread, when the connection breaks while the communicator lives.
  std::function<void(ncclResult_t, const std::string&)> on_error;
};

// Receiving end: allocates the FIFO, listens, sends the address to spec.peer and starts the receive
// proxy, which accepts the sender's connection. Never waits for the peer.
ncclResult_t net_connect_recv(const NetConnSpec& spec, std::shared_ptr<Segment>* out);

// Sending end: waits for the peer's address (the peer sends it when it first uses the connection),
// connects, allocates the local FIFO and starts the send proxy. Bounded by spec.timeout_s and the
// abort flag.
ncclResult_t net_connect_send(const NetConnSpec& spec, std::shared_ptr<Segment>* out);

// Checks NCCL_NET: unset or "Socket", the only network cclab builds. Init calls it on every rank, so a
// wrong setting fails every rank at once, naming it.
ncclResult_t net_check_params();

// net_check_params, then picks the interface, once per process; the error names what is wrong. INFO
// NET logs the interface as NCCL does ("NET/Socket : Using [0]eth0:10.0.0.2<0>").
ncclResult_t net_init();

}  // namespace cclab
