// viz/channel_state.cc - see channel_state.h.
#include "viz/channel_state.h"

#include <map>
#include <tuple>

namespace cclab {
namespace viz {

void SendMatch::build(const Trace& t, const TraceIndex& index) {
  match_.assign(t.events.size(), -1);
  // Per connection (from, to, channel): the sender's sends and the receiver's receives, in row order.
  std::map<std::tuple<int, int, int>, std::pair<std::vector<int>, std::vector<int>>> conns;
  for (const EventRow& row : index.rows()) {
    for (int i : row.events) {
      const Event& e = t.events[i];
      if (e.send_peer >= 0) conns[std::make_tuple(e.rank, e.send_peer, e.channel)].first.push_back(i);
      if (e.recv_peer >= 0) conns[std::make_tuple(e.recv_peer, e.rank, e.channel)].second.push_back(i);
    }
  }
  for (const auto& kv : conns) {
    const std::vector<int>& sends = kv.second.first;
    const std::vector<int>& recvs = kv.second.second;
    for (size_t k = 0; k < recvs.size() && k < sends.size(); ++k) match_[recvs[k]] = sends[k];
  }
  built_for_ = index.indexed();
}

RankStatus rank_status(const Trace& t, const TraceIndex& index, const SendMatch& match, int rank, int channel,
                       double time_us) {
  RankStatus s;
  const int row = index.row_of(rank, channel);
  const int ev = index.last_begun(t, row, time_us);
  if (ev < 0) return s;
  const Event& e = t.events[ev];
  s.event = ev;
  s.step = e.step;
  if (time_us >= e.end_us) {
    const std::vector<int>& events = index.rows()[row].events;
    s.state = ev == events.back() && index.rows()[row].max_end.back() <= time_us ? RankStatus::kDone : RankStatus::kIdle;
    return s;
  }
  if (time_us >= e.data_us) {
    s.state = RankStatus::kMoving;
    return s;
  }
  if (e.recv_peer >= 0) {
    const int m = match.match(ev);
    const bool posted = m >= 0 && t.events[m].end_us <= time_us;
    if (!posted || e.send_peer < 0) {
      s.state = RankStatus::kWaitingData;
      s.peer = e.recv_peer;
      s.peer_step = m >= 0 ? t.events[m].step : e.step;
      return s;
    }
  }
  if (e.send_peer >= 0) {
    s.state = RankStatus::kWaitingCredits;
    s.peer = e.send_peer;
    return s;
  }
  s.state = RankStatus::kWaiting;
  return s;
}

std::string RankStatus::text(const Trace& t) const {
  const Event* e = event >= 0 && static_cast<size_t>(event) < t.events.size() ? &t.events[event] : nullptr;
  switch (state) {
    case kNotStarted: return "not started";
    case kWaitingData:
      return "waiting for data from rank " + std::to_string(peer) + " step " + std::to_string(peer_step);
    case kWaitingCredits: return "waiting for credits from rank " + std::to_string(peer);
    case kWaiting: return "waiting";
    case kMoving: {
      std::string s = "moving data";
      if (e && e->recv_peer >= 0) s += " from " + std::to_string(e->recv_peer);
      if (e && e->send_peer >= 0) s += " to " + std::to_string(e->send_peer);
      return s;
    }
    case kIdle: return "between steps";
    case kDone: return "done";
  }
  return "";
}

}  // namespace viz
}  // namespace cclab
