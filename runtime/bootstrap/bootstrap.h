// runtime/bootstrap/bootstrap.h - the out-of-band TCP rendezvous that turns an ncclUniqueId
// into a group of ranks that can all-gather, barrier and exchange tagged messages (NCCL's
// bootstrap.cc).
//
//   rank 0 process                      every rank r (threads or processes, any host)
//   --------------                      ---------------------------------------------
//   bootstrap_get_unique_id(&id)        Bootstrap::create(id, r, n, abort, &b):
//     root listener thread  <------------- listen on an ephemeral port, connect to the root,
//     waits for n hellos                   send {r, n, secret, my listen address}
//     checks n agrees, ranks unique
//     sends the address table  -------->   connect to rank r+1 (ring send), accept r-1 (ring recv)
//     exits                                b->allgather / barrier    over the ring, n-1 steps
//                                          b->send / recv(peer, tag) on demand, one connection
//                                                                    per (sender, receiver) pair
//
// Every wait is bounded by CCLAB_BOOTSTRAP_TIMEOUT (seconds, default 120) and by the abort flag.
// Errors come back as ncclResult_t with a message (last_error()) naming the rank, the peer and its
// address, and what failed.
//
// Usage, ranks as threads:
//   ncclUniqueId id;  bootstrap_get_unique_id(&id);
//   std::unique_ptr<Bootstrap> b;  Bootstrap::create(id, rank, nranks, nullptr, &b);
//   std::vector<int> all(nranks);  all[rank] = my_value;
//   b->allgather(all.data(), sizeof(int));
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "bootstrap/socket.h"
#include "cclab/nccl.h"

namespace cclab {

// Picks the bootstrap interface (NCCL_SOCKET_IFNAME, NCCL_SOCKET_FAMILY), starts a root listener in
// a background thread and writes its address and a random 64-bit secret into `id`. With
// NCCL_COMM_ID=ip:port the root listens on that address instead, and the secret is derived from the
// string, so that processes that never exchanged the id still agree on it.
ncclResult_t bootstrap_get_unique_id(ncclUniqueId* id);

// What an id holds; fails with ncclInvalidArgument when `id` was not made by bootstrap_get_unique_id.
ncclResult_t bootstrap_decode_unique_id(const ncclUniqueId& id, SocketAddress* root, uint64_t* secret);

// Root listeners still running in this process (each exits once its ranks have the address table,
// or after an error).
int bootstrap_active_roots();

// Asks every root listener of this process to stop and waits for their threads: ranks still waiting
// on them get an error. Runs automatically at exit.
void bootstrap_stop_roots();

class Bootstrap {
 public:
  // Joins the group described by `id` as `rank` of `nranks`. Blocks until every rank has joined
  // (the root has sent the address table) and this rank's ring links are up. `abort_flag` may be
  // nullptr; when it becomes nonzero every wait returns ncclInternalError within about 100 ms.
  static ncclResult_t create(const ncclUniqueId& id, int rank, int nranks, const std::atomic<int>* abort_flag,
                             std::unique_ptr<Bootstrap>* out);

  // Ring all-gather: `data` holds nranks slots of `bytes_per_rank` bytes, this rank's slot filled
  // in; on return every slot is. Every rank must call it with the same size (checked).
  ncclResult_t allgather(void* data, size_t bytes_per_rank);

  // Returns once every rank has entered the barrier.
  ncclResult_t barrier();

  // Sends `bytes` bytes to `peer` with `tag`. Returns once the data is handed to the kernel (it may
  // block until the peer receives when the message is larger than the socket buffers).
  ncclResult_t send(int peer, int tag, const void* data, size_t bytes);

  // Receives the message `peer` sent with `tag`. Messages from the peer with other tags that arrive
  // first are queued for later recv calls. `bytes` must equal the size sent. `timeout_s` > 0 bounds
  // this wait instead of CCLAB_BOOTSTRAP_TIMEOUT (a rank that waits for a peer's first use of a
  // connection, which may come much later than init).
  ncclResult_t recv(int peer, int tag, void* data, size_t bytes, double timeout_s = 0);

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }
  // The address rank `peer` listens on for bootstrap connections.
  const SocketAddress& peer_address(int peer) const { return peers_[peer]; }

  ~Bootstrap();
  Bootstrap(const Bootstrap&) = delete;
  Bootstrap& operator=(const Bootstrap&) = delete;

 private:
  Bootstrap() = default;
  // Accepts connections on the listening socket, filing each under ring_rx_ or recv_conns_, until
  // `ready()` holds. `what` and `peer` describe the wait for the timeout message.
  template <typename Ready>
  ncclResult_t accept_until(Ready ready, const char* what, int peer, double timeout_s);
  ncclResult_t ring_exchange(uint32_t op, void* data, size_t bytes_per_rank);
  std::string peer_name(int peer) const;  // "rank 3 (127.0.0.1:40211)"
  double timeout_s() const { return timeout_s_; }

  int rank_ = -1;
  int nranks_ = 0;
  uint64_t secret_ = 0;
  double timeout_s_ = 120;  // seconds
  const std::atomic<int>* abort_flag_ = nullptr;
  SocketAddress root_;
  Socket listener_;
  std::vector<SocketAddress> peers_;  // listen address of every rank

  std::mutex ring_mutex_;  // serializes allgather/barrier
  Socket ring_tx_;         // to rank + 1
  Socket ring_rx_;         // from rank - 1
  uint64_t ring_seq_ = 0;  // ring operations done, to catch ranks that disagree on the sequence

  // Sends and receives are serialized separately, so one thread may block in recv while another
  // sends (the peer may be waiting for that send before it answers).
  std::mutex send_mutex_;
  std::vector<Socket> send_conns_;  // [peer]: connection this rank opened to peer
  std::mutex recv_mutex_;
  std::vector<Socket> recv_conns_;  // [peer]: connection peer opened to this rank
  std::map<std::pair<int, int>, std::deque<std::vector<char>>> unexpected_;  // (peer, tag) -> messages
  std::mutex self_mutex_;
  std::map<int, std::deque<std::vector<char>>> self_queue_;  // tag -> messages this rank sent itself
};

}  // namespace cclab
