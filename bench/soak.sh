#!/usr/bin/env bash
# bench/soak.sh - the soak: N random collectives (default 100000) on the host backend under
# AddressSanitizer + LeakSanitizer + UBSan, every result checked byte-exact (bench/soak.cc, cclab_soak).
#
#   bench/soak.sh [N] [cclab_soak options...]      e.g. bench/soak.sh 100000 --seed 42
#
# Builds the library (and the sim plugin cclab_runtime depends on) and cclab_soak alone in build-asan/ (scripts/setup.sh with
# -DCCLAB_SANITIZE=address,undefined, as scripts/sanitize.sh address; CUDA and the visualiser off), then
# runs cclab_soak --ops N in 8 phases (NCCL_ALGO/NCCL_PROTO unset, Ring x LL/LL128/Simple,
# Ring + Tree for all_reduce x LL/LL128/Simple, a mixed per-collective setting), ranks as threads,
# 2..8 per communicator. Prints the seed, progress, and per phase: ops, ops/s, wrong results and VmRSS
# at the start, after warm-up and at the end. Any ASan/LSan/UBSan report stops the run (UBSan halts
# on its first report, as in scripts/sanitize.sh) and fails it. The log is also kept in
# BUILD/soak-<seed or date>.log.
#
# Environment: CCLAB_SANITIZE_BUILD_DIR (default build-asan), CCLAB_JOBS (build jobs, default nproc),
# CCLAB_TIMEOUT (seconds before a stuck wait fails, default 120 here). Exit status: cclab_soak's
# (0 pass, 1 wrong results, 2 errors or a sanitizer report, 3 RSS bound), or the build's.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ops=100000
if [ $# -gt 0 ] && [[ "$1" =~ ^[0-9]+$ ]]; then ops="$1"; shift; fi
build="${CCLAB_SANITIZE_BUILD_DIR:-$root/build-asan}"

t0=$(date +%s)
CCLAB_TARGETS="cclab_runtime cclab_soak" "$root/scripts/setup.sh" "$build" \
  -DCCLAB_SANITIZE=address,undefined -DCCLAB_CUDA=OFF -DCCLAB_VIZ=OFF
echo "soak.sh: build ready in $(( $(date +%s) - t0 )) s ($build)"

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
export CCLAB_TIMEOUT="${CCLAB_TIMEOUT:-120}"
log="$build/soak-$(date +%Y%m%d-%H%M%S).log"
t1=$(date +%s)
set +e
"$build/bench/cclab_soak" --ops "$ops" "$@" 2>&1 | tee "$log"
rc=${PIPESTATUS[0]}
set -e
# A sanitizer report in a phase's process ends that phase with an error; say so plainly.
if grep -qE "ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:" "$log"; then
  echo "soak.sh: sanitizer report(s) in $log"
  [ "$rc" -eq 0 ] && rc=2
fi
echo "soak.sh: $ops ops, exit $rc, run $(( $(date +%s) - t1 )) s; log $log"
exit "$rc"
