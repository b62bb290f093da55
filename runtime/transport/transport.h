// runtime/transport/transport.h - where a connection's FIFO lives.
//
//   P2P (same process): the receiver allocates the FIFO on the heap and publishes it in a
//       process-wide registry under the connection's name; the sender takes the pointer.
//   SHM (same host, another process): the receiver creates a POSIX shared-memory object named after
//       the connection; the sender opens and maps it, then unlinks the name (the mapping stays), so
//       a crash leaves nothing behind in /dev/shm.
//   NET (another host, or P2P and SHM disabled): transport_net.h - a FIFO at each end and a proxy
//       thread per end moving the slices over a TCP socket.
// Names are unique per communicator and connection, and both ends compute them, so P2P and SHM need no
// handle exchanged. The receiving side always creates: a sender only ever writes into memory its peer
// owns (or, over NET, into its own FIFO, which its proxy empties).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "cclab/nccl.h"

namespace cclab {

enum class TransportKind : int { kP2p = 0, kShm = 1, kNet = 2 };
const char* transport_name(TransportKind k);

class Segment {
 public:
  virtual ~Segment() = default;
  void* base() const { return base_; }
  size_t size() const { return size_; }
  // Stops what runs on behalf of the connection (NET's proxy thread), without freeing the memory:
  // `wait` false only asks (several can then stop at once), true also waits until it has stopped.
  // Nothing to do for memory alone.
  virtual void stop(bool wait) { (void)wait; }

 protected:
  void* base_ = nullptr;
  size_t size_ = 0;
};

// Receiver side: creates `bytes` of zeroed connection memory named `name`, with the FIFO header's
// `ready` flag set. `openers`: how many peers will open it (1 for a connection; an NVLS region, which
// every other rank of the group maps, nranks - 1); each opener counts itself in the header's
// `sender_attached`.
ncclResult_t segment_create(TransportKind kind, const std::string& name, size_t bytes, std::shared_ptr<Segment>* out,
                            int openers = 1);

// Watches a wait for a connection (core/comm.cc: the doctor): called about every 250 ms with the
// microseconds waited; a non-zero ncclResult_t ends the wait with that code and *why.
using ConnectWatch = std::function<int(double waited_us, std::string* why)>;

// Sender side: waits until the receiver has created `name`, then maps it. Polls `abort` (non-zero:
// give up) and `watch` (when given), and gives up after `timeout_s` seconds with an error naming the
// connection.
// `openers` must be the creator's: the last opener unlinks an SHM name, or takes a P2P segment off the registry.
ncclResult_t segment_open(TransportKind kind, const std::string& name, size_t bytes, const std::atomic<int>* abort,
                          double timeout_s, std::shared_ptr<Segment>* out, const ConnectWatch& watch = {},
                          int openers = 1);

}  // namespace cclab
