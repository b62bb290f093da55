// kernels/describe.h - host-side text for the kernels' records: primitive names and what a stuck wait
// waits for. Every executor that reports (the host executor, the simulator, traces) says it the same way.
// Host only (std::string); device code never includes it.
#pragma once

#include <cstdio>
#include <string>

#include "kernels/p2p.h"
#include "kernels/primitives.h"
#include "kernels/step_record.h"

namespace cclab {

// nccl-tests' bus bandwidth factor of a collective over n ranks: all_reduce 2(n-1)/n, all_gather and
// reduce_scatter (n-1)/n, the others 1 (0 for the first three with one rank, which moves nothing).
inline double bus_factor(CollKind coll, int n) {
  if (n <= 1)
    return coll == CollKind::kAllReduce || coll == CollKind::kAllGather || coll == CollKind::kReduceScatter ? 0.0 : 1.0;
  switch (coll) {
    case CollKind::kAllReduce: return 2.0 * (n - 1) / n;
    case CollKind::kAllGather:
    case CollKind::kReduceScatter: return static_cast<double>(n - 1) / n;
    default: return 1.0;
  }
}

// The same for the point-to-point collectives (nccl-tests' alltoall, gather, scatter: (n-1)/n of the
// bytes cross between ranks; sendrecv: 1). cclab perf's busbw_factor is the reference (cli_sim_test).
inline double p2p_bus_factor(P2pPattern p, int n) {
  if (p == P2pPattern::kSendRecv) return 1.0;
  return n > 0 ? static_cast<double>(n - 1) / n : 0.0;
}

// NCCL's primitive names: "send", "recvReduceSend", ...
inline const char* prim_name(PrimKind p) {
  switch (p) {
    case PrimKind::kSend: return "send";
    case PrimKind::kRecv: return "recv";
    case PrimKind::kRecvReduceSend: return "recvReduceSend";
    case PrimKind::kRecvReduceCopySend: return "recvReduceCopySend";
    case PrimKind::kRecvCopySend: return "recvCopySend";
    case PrimKind::kCopySend: return "copySend";
    case PrimKind::kRecvReduceCopy: return "recvReduceCopy";
    case PrimKind::kLocalCopy: return "localCopy";
    case PrimKind::kSendFromOutput: return "sendFromOutput";
  }
  return "?";
}

// WaitSite::step of a wait for a peer to create a connection (not a FIFO step).
constexpr uint64_t kConnectStep = ~uint64_t{0};

// "rank 1 channel 0 waiting for data from rank 0 for step 4 (recvReduceSend)"; NVLS (the rank its own
// peer): "rank 1 channel 0 waiting for data from the NVSwitch for step 4 (recv)"; a connection:
// "rank 1 channel 0 waiting for rank 0 to connect"
inline std::string describe_wait(const WaitSite& s) {
  char buf[256];
  if (s.step == kConnectStep) {
    snprintf(buf, sizeof buf, "rank %d channel %d waiting for rank %d to connect", s.rank, s.channel, s.peer);
    return buf;
  }
  if (s.peer == s.rank) {  // NVLS: a wait on the rank's own FIFO, whose other end is the NVSwitch (kernels/nvls.h)
    snprintf(buf, sizeof buf, "rank %d channel %d waiting for %s the NVSwitch for step %llu (%s)", s.rank, s.channel,
             s.for_data ? "data from" : "FIFO credits from", static_cast<unsigned long long>(s.step),
             prim_name(s.prim));
    return buf;
  }
  snprintf(buf, sizeof buf, "rank %d channel %d waiting for %s from rank %d for step %llu (%s)", s.rank, s.channel,
           s.for_data ? "data" : "FIFO credits", s.peer, static_cast<unsigned long long>(s.step), prim_name(s.prim));
  return buf;
}

}  // namespace cclab
