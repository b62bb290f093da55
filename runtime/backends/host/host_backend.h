// runtime/backends/host/host_backend.h - the host backend: CPU threads play the GPUs' thread blocks.
// A launch runs kernels/' schedules through the host executor (host_exec.h) on lanes (lanes.h), one
// per channel, over the FIFOs the host transports made (transport/); work on a host stream runs on
// that stream's worker thread.
#pragma once

#include "core/backend.h"

namespace cclab {

// The process's host backend (backends/backends.cc makes it once).
Backend* host_backend_create();

}  // namespace cclab
