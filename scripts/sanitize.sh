#!/usr/bin/env bash
# scripts/sanitize.sh - build the host runtime with a sanitizer and run the suite (or part of it) under it.
#
#   scripts/sanitize.sh address [ctest args...]   AddressSanitizer + LeakSanitizer + UBSan, in build-asan/
#   scripts/sanitize.sh thread  [ctest args...]   ThreadSanitizer, in build-tsan/
#
# e.g. scripts/sanitize.sh thread -R 'split|group'. Any report fails the test that made it:
# UBSan and TSan halt on their first report, as ASan always does. The CUDA kernels and the visualiser
# are left out (no device code runs on the host, and Mesa's GL leaks are not ours); GPU tests skip.
# Reports go to the test's output (ctest --output-on-failure prints them).
#
# Not in CI: on 2 cores the build takes 15-25 minutes, and under TSan the run about 25 (the 6 ring/tree
# matrices alone 950 s, 7-12x their plain time), well past CI's 20-minute budget. Run it before landing a change to
# locks, atomics, lifetimes or the transports. docs/user-guide.md ("Sanitizer runs") has the details.
#
# Environment: CCLAB_SANITIZE_BUILD_DIR (default build-asan / build-tsan), CCLAB_TEST_JOBS (default 2).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
kind="${1:-}"
case "$kind" in
  address) sanitize="address,undefined" ;;
  thread) sanitize="thread" ;;
  *)
    echo "usage: scripts/sanitize.sh address|thread [ctest args...] (got '${kind}')" >&2
    exit 2
    ;;
esac
shift
build="${CCLAB_SANITIZE_BUILD_DIR:-$root/build-${kind:0:1}san}"
"$root/scripts/setup.sh" "$build" -DCCLAB_SANITIZE="$sanitize" -DCCLAB_CUDA=OFF -DCCLAB_VIZ=OFF

# (The tests run under mpirun set their own ASAN_OPTIONS and LSAN_OPTIONS: tests/lsan-openmpi.supp.)
export ASAN_OPTIONS="detect_leaks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$root/tests/tsan.supp"
cd "$build"
exec ctest --output-on-failure -j "${CCLAB_TEST_JOBS:-2}" "$@"
