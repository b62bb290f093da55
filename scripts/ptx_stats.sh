#!/usr/bin/env bash
# scripts/ptx_stats.sh [ARCH [PROBE]] - what nvcc makes of the device code's hot paths, without a GPU.
#
# Compiles small probe kernels over the kernels/ headers (seconds each, where the full per-datatype
# kernels take minutes) with the flags of a release build, for sm_ARCH (default 90), and prints per
# probe what ptxas reports (registers, stack frame, spills) and what the PTX holds: 16-byte loads and
# stores (global or generic address space), local-memory traffic, and the longest run of 16-byte loads
# before a store (the loads a lane has in flight in the data loop). The probes:
#   data_loop         reduce_copy_lanes<float> (every Simple step's data loop)
#   ring_<proto>      a ring all_reduce of floats through BlockExec<DeviceBlock>, per protocol
# PROBE (a name or a grep pattern) runs only the matching probes.
# Static counts of instructions, not timings: a change that should keep lines in registers or
# loads in flight shows here first. Needs nvcc (CUDA 12+); no GPU.
set -euo pipefail

arch=${1:-90}
only=${2:-}
root=$(cd "$(dirname "$0")/.." && pwd)
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
[ -x "$nvcc" ] || { echo "ptx_stats.sh: nvcc not found (set NVCC)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cat >"$work/data_loop.cu" <<'EOF'
#include "kernels/reduce_copy.h"
using namespace cclab;
__global__ void __launch_bounds__(640) probe(RedOp<float> op, float* d0, float* d1, const float* a, const float* b,
                                             size_t n) {
  reduce_copy_lanes(op, d0, d1, a, b, n, false, false, threadIdx.x, blockDim.x);
}
EOF
for proto in ProtoSimpleRing ProtoLL ProtoLL128; do
  cat >"$work/ring_$proto.cu" <<EOF
#include "kernels/block_exec.h"
#include "kernels/collectives.h"
#include "kernels/cuda/device_block.h"
using namespace cclab;
__global__ void __launch_bounds__(640) probe(RedOp<float> op, CollWork w, RingView ring, ConnInfo* rc, ConnInfo* sc,
                                             const int* abort) {
  DeviceBlock b{abort};
  BlockExecConfig cfg;
  BlockExec<DeviceBlock> ex(b, cfg);
  ConnInfo r = *rc, s = *sc;
  Primitives<float, $proto, BlockExec<DeviceBlock>> p(ex, op, &r, &s, static_cast<const float*>(w.send),
                                                      static_cast<float*>(w.recv), w.rank, 0, w.coll, w.op_count);
  ring_all_reduce<float>(p, w, ring, 0);
  *rc = r;
  *sc = s;
}
EOF
done

printf '%-20s %5s %6s %7s %7s %8s %8s %9s %9s %9s\n' probe regs stack spill_st spill_ld ld.v4 st.v4 ld.local st.local v4_run
for src in "$work"/data_loop.cu "$work"/ring_*.cu; do
  name=$(basename "$src" .cu)
  if [ -n "$only" ] && ! printf '%s\n' "$name" | grep -q -- "$only"; then continue; fi
  flags=(-I"$root" -O2 -DNDEBUG -std=c++17 -arch=sm_"$arch")
  log=$("$nvcc" "${flags[@]}" -Xptxas -v -cubin "$src" -o "$work/$name.cubin" 2>&1)
  "$nvcc" "${flags[@]}" -ptx "$src" -o "$work/$name.ptx"
  entry=$(printf '%s\n' "$log" | grep -A2 "Function properties for _Z5probe" | tr '\n' ' ')
  regs=$(printf '%s\n' "$log" | grep -o 'Used [0-9]* registers' | tail -1 | grep -o '[0-9]*')
  stack=$(printf '%s' "$entry" | grep -o '[0-9]* bytes stack frame' | grep -o '^[0-9]*')
  sst=$(printf '%s' "$entry" | grep -o '[0-9]* bytes spill stores' | grep -o '^[0-9]*')
  sld=$(printf '%s' "$entry" | grep -o '[0-9]* bytes spill loads' | grep -o '^[0-9]*')
  ptx=$work/$name.ptx
  ldv4=$(grep -Ec 'ld(\.global)?\.v4' "$ptx" || true)
  stv4=$(grep -Ec 'st(\.global)?\.v4' "$ptx" || true)
  ldl=$(grep -c 'ld\.local' "$ptx" || true)
  stl=$(grep -c 'st\.local' "$ptx" || true)
  # The longest run of 16-byte loads (global or generic) with no such store between them.
  run=$(awk '/ld(\.global)?\.v4/ { n++; if (n > m) m = n } /st(\.global)?\.v[24]?/ && !/st\.local/ { n = 0 } END { print m + 0 }' "$ptx")
  printf '%-20s %5s %6s %7s %7s %8s %8s %9s %9s %9s\n' "$name" "${regs:-?}" "${stack:-?}" "${sst:-?}" "${sld:-?}" \
    "$ldv4" "$stv4" "$ldl" "$stl" "$run"
done
