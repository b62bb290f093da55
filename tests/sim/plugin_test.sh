#!/usr/bin/env bash
# tests/sim/plugin_test.sh BUILD_DIR - the runtime libraries do not link the simulator (no SimGrid, Boost
# or ns-3 among what libcclab.so.0 and libnccl.so.2 need), the sim backend is a plugin next to them,
# and a missing plugin makes CCLAB_BACKEND=sim fail at communicator creation saying which file it
# could not load, instead of crashing or running elsewhere.
set -euo pipefail
build="$1"
lib="$build/runtime"
fail() { echo "plugin_test: $*" >&2; exit 1; }
for so in libcclab.so.0 libnccl.so.2; do
  [ -e "$lib/$so" ] || fail "missing $lib/$so"
  needed="$(readelf -d "$lib/$so" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p')"
  if grep -Ei 'simgrid|boost|ns3' <<<"$needed"; then fail "$so needs the simulator's libraries: $(tr '\n' ' ' <<<"$needed")"; fi
  echo "$so needs: $(tr '\n' ' ' <<<"$needed")"
done
[ -e "$lib/libcclab-sim.so" ] || fail "the sim plugin $lib/libcclab-sim.so was not built next to the runtime"
readelf -d "$lib/libcclab-sim.so" | grep -q 'NEEDED.*simgrid' || fail "libcclab-sim.so does not carry SimGrid"
nm -D --defined-only "$lib/libcclab-sim.so" | grep -qw cclab_sim_backend_create ||
  fail "libcclab-sim.so does not export cclab_sim_backend_create"
set +e
out="$(CCLAB_BACKEND=sim CCLAB_SIM_PLUGIN=/nonexistent/libcclab-sim.so timeout 60 "$build/runtime/cli/cclab" perf all_reduce \
  -g 2 -b 8 -e 8 2>&1)"
rc=$?
set -e
[ "$rc" -ne 0 ] || fail "CCLAB_BACKEND=sim with a missing plugin succeeded: $out"
[ "$rc" -ne 124 ] || fail "CCLAB_BACKEND=sim with a missing plugin hung"
grep -q 'the sim backend cannot run here: cannot load the simulator plugin /nonexistent/libcclab-sim.so' <<<"$out" ||
  fail "the error does not name the plugin: $out"
echo "a missing plugin: $(grep -o 'ncclCommInitRank: the sim backend.*' <<<"$out" | head -1)"
