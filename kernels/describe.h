// kernels/describe.h - host-side text for the kernels' records: primitive names and what a stuck wait
// waits for. Every executor that reports (the host executor, the simulator, traces) says it the same way.
// Host only (std::string); device code never includes it.
#pragma once

#include <cstdio>
#include <string>

#include "kernels/primitives.h"
#include "kernels/step_record.h"

namespace cclab {

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

// "rank 1 channel 0 waiting for data from rank 0 for step 4 (recvReduceSend)"
inline std::string describe_wait(const WaitSite& s) {
  char buf[256];
  snprintf(buf, sizeof buf, "rank %d channel %d waiting for %s from rank %d for step %llu (%s)", s.rank, s.channel,
           s.for_data ? "data" : "FIFO credits", s.peer, static_cast<unsigned long long>(s.step), prim_name(s.prim));
  return buf;
}

}  // namespace cclab
