// runtime/trace/live.h - a run's event stream over a local socket, for `cclab viz --live`.
//
// The run (host backend or simulator) is the server: with CCLAB_LIVE=PATH it listens on a Unix domain
// socket at PATH. A viewer connects whenever it likes and receives the trace stream (trace.h's format:
// the file header, META/TOPO/CHAN, then EVTS blocks and OPS sections as the run goes, END when it
// finishes) -- a viewer is a TraceStreamDecoder fed from the socket.
//
// Cost when nobody is attached: push() is one relaxed atomic load and a return. While a viewer is
// attached, push() appends to a bounded queue under a mutex and a sender thread encodes and writes
// blocks (at least every 20 ms); a viewer that cannot keep up makes push() wait (bounded by the queue),
// never drops events: "every event, in order" is the contract. A viewer that disconnects detaches; one
// that takes nothing for 10 s while push() waits on it is detached with a warning (the run never hangs
// on a viewer). One viewer at a time: another that connects meanwhile is closed after 0.5 s.
//
// CCLAB_LIVE_WAIT=SECONDS makes start() wait up to that long for a viewer before the run begins, so
// a viewer started just before the run sees it from the first step.
//
//   Run side                                      Viewer side
//   LiveServer srv;                               LiveClient cli;
//   srv.start(path, header_trace, wait_s, &err);  cli.connect(path, wait_s, &err);
//   srv.push(event) ...                           while (cli.poll(&decoder, 50)) ... decoder.trace()
//   srv.push_ops(ops) ...                         decoder.complete() once the run ended
//   srv.push_stuck(reports) ...
//   srv.finish();                                 (docs/live.md)
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "trace/trace.h"

namespace cclab {
namespace trace {

class LiveServer {
 public:
  LiveServer();
  ~LiveServer();  // finish() if still running
  LiveServer(const LiveServer&) = delete;
  LiveServer& operator=(const LiveServer&) = delete;

  // Listens at `path` (a stale socket file there is replaced; one another run serves, or any other
  // file, is an error).
  // `header`: meta, nodes, links, routes and channels sent to every viewer on connect. Waits for a
  // viewer up to `wait_s` seconds (0: no wait). False with *error (path too long, cannot bind, ...).
  bool start(const std::string& path, const Trace& header, double wait_s, std::string* error);
  // Updates the header a later viewer receives (e.g. channels known after the first collective). An
  // attached viewer gets the sections that changed (META, TOPO, CHAN again; a reader's later section
  // replaces the earlier one) at this point of its stream, before any event pushed afterwards.
  void set_header(const Trace& header);

  bool attached() const { return attached_.load(std::memory_order_relaxed); }
  // Queues events for the attached viewer; nothing when none is attached.
  void push(const Event& e) {
    if (!attached()) return;
    push_slow(&e, 1);
  }
  void push(const Event* e, size_t n) {
    if (!attached()) return;
    push_slow(e, n);
  }
  void push_ops(const std::vector<Op>& ops);
  // The doctor's reports (a STUK section): sent at their place in the stream, and to a viewer that
  // attaches later right after the header.
  void push_stuck(const std::vector<Stuck>& stuck);
  // Sends what is queued and END to the viewer (waiting up to `drain_s` seconds for it to be
  // written), closes the socket and removes the socket file.
  void finish(double drain_s = 5.0);

  uint64_t events_sent() const { return sent_.load(); }
  const std::string& path() const { return path_; }

 private:
  // An OPS section or a header update, at its place among the queued events.
  struct Control {
    uint64_t at = 0;                      // events queued before it (since the viewer attached)
    std::vector<Op> ops;                  // an OPS section, or
    std::vector<Stuck> stuck;             // a STUK section, or
    std::shared_ptr<const Trace> header;  // the new header (its changed META/TOPO/CHAN are re-sent)
  };
  struct Stream;  // what the sender has written to the current viewer (live.cc)

  void push_slow(const Event* e, size_t n);
  void queue_control(Control c);  // (mu_ held) an OPS or STUK section at its place, when a viewer is attached
  void accept_loop();
  void sender_loop();
  // Sender thread: writes all of `bytes` to the viewer; false when it went away, a stuck viewer was
  // dropped, or finish()'s drain time ran out (send_error_ says which).
  bool send_bytes(const std::string& bytes);
  bool send_header(const Trace& h, Stream* s);
  bool send_events(const Event* e, size_t n, Stream* s);
  bool send_ops(const std::vector<Op>& ops, Stream* s);
  bool send_stuck(const std::vector<Stuck>& stuck, Stream* s);
  bool send_end(Stream* s);
  bool viewer_gone();

  std::string path_;
  int listen_fd_ = -1;
  int client_fd_ = -1;           // the attached viewer (written under mu_ by the sender thread only)
  int pending_fd_ = -1;          // accepted, not yet taken by the sender (mu_)
  int wake_fd_[2] = {-1, -1};    // a pipe: finish() wakes the acceptor
  uint64_t sock_dev_ = 0, sock_ino_ = 0;  // the socket file start() made (finish() removes only that)
  bool running_ = false;         // between start() and finish() (finish_mu_)
  std::atomic<bool> attached_{false};
  std::atomic<bool> stop_{false};         // finish(): drain, END, close
  std::atomic<bool> accept_stop_{false};  // finish(): the acceptor ends
  std::atomic<bool> drop_{false};         // a push() found the viewer stuck: the sender closes it
  std::atomic<uint64_t> sent_{0};
  std::atomic<int64_t> progress_ns_{0};   // steady clock of the last bytes the viewer took
  std::atomic<int64_t> deadline_ns_{0};   // finish(): when draining gives up
  std::mutex mu_, finish_mu_;
  std::condition_variable cv_;        // queue non-empty / stop
  std::condition_variable space_cv_;  // queue has room
  std::condition_variable state_cv_;  // a viewer attached or left
  std::vector<Event> queue_;    // the sender swaps it with its own (emptied) vector
  size_t inflight_ = 0;          // events the sender took from queue_ and has not written yet
  uint64_t enq_ = 0, deq_ = 0;   // events queued / taken since the viewer attached
  std::deque<Control> ctl_;
  std::shared_ptr<const Trace> header_;
  std::vector<Stuck> stuck_;     // every report pushed (mu_): a viewer that attaches gets them
  bool warned_invalid_ = false;  // sender thread
  std::string send_error_;       // sender thread
  std::thread acceptor_, sender_;
};

class LiveClient {
 public:
  ~LiveClient();
  // Connects to a run's socket; retries for up to `wait_s` seconds while it does not exist yet.
  bool connect(const std::string& path, double wait_s, std::string* error);
  // Reads what has arrived (waiting up to timeout_ms for something) into `decoder`. False when the
  // stream ended (END read, or the run went away: then error() says so) or is corrupt.
  bool poll(TraceStreamDecoder* decoder, int timeout_ms);
  const std::string& error() const { return error_; }
  void close();

 private:
  int fd_ = -1;
  uint64_t received_ = 0;  // bytes read on this connection
  std::string error_;
  std::vector<char> buf_;
};

}  // namespace trace
}  // namespace cclab
