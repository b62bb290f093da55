#!/usr/bin/env bash
# scripts/fuzz.sh - search for inputs that crash cclab's readers or break their properties (libFuzzer,
# with AddressSanitizer and UBSan), in build-fuzz/. The targets and their properties: tests/fuzz/.
#
#   scripts/fuzz.sh [SECONDS] [TARGET ...]   fuzz each target for SECONDS (default 300), one after another
#   scripts/fuzz.sh seeds                    remake the trace seeds of corpus/trace_sections from corpus/trace_file
#
# TARGET: trace_file trace_sections topo_xml graph_xml detect strings (default: all). New inputs that reach new
# code go to build-fuzz/corpus/<target>/ (kept between runs; the checked-in corpus is read, not written).
# A crash or a failed property stops that target and leaves the input as build-fuzz/crash-*: minimise it
# (fuzz_<target> -minimize_crash=1 -runs=10000 FILE), fix the bug, and add the input to
# tests/fuzz/corpus/<target>/ so that the ctest entry fuzz_<target> replays it from then on.
#
# Environment: CCLAB_FUZZ_BUILD_DIR (default build-fuzz), CCLAB_FUZZ_JOBS (parallel fuzzing processes
# per target, default 1), CCLAB_FUZZ_MAX_LEN (default 16384 bytes).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$(realpath -m "${CCLAB_FUZZ_BUILD_DIR:-$root/build-fuzz}")"
all_targets=(trace_file trace_sections topo_xml graph_xml detect strings)

for p in clang-14 libclang-rt-14-dev; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    echo "cclab fuzz: installing $p"
    sudo_cmd=""
    [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
    $sudo_cmd apt-get update -qq
    $sudo_cmd env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$p" >/dev/null
  fi
done
# The libraries come from the README's set-up (scripts/setup.sh); this adds clang and libFuzzer.
if [ ! -f "$build/build.ninja" ]; then
  CC=clang-14 CXX=clang++-14 cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCCLAB_FUZZ=ON -DCCLAB_SANITIZE=address,undefined -DCCLAB_CUDA=OFF >/dev/null
elif ! grep -q '^CCLAB_FUZZ:BOOL=ON$' "$build/CMakeCache.txt"; then
  # Its targets would be replay programs: they would run the corpus once and exit, fuzzing nothing.
  echo "scripts/fuzz.sh: $build is not a fuzzing build (CCLAB_FUZZ is not ON); remove it or set CCLAB_FUZZ_BUILD_DIR" >&2
  exit 2
fi
targets=()
seconds=300
if [ "${1:-}" = "seeds" ]; then
  cmake --build "$build" --target fuzz_trace_to_sections
  for f in "$root"/tests/fuzz/corpus/trace_file/*.cctrace; do
    "$build/tests/fuzz/fuzz_trace_to_sections" "$f" "$root/tests/fuzz/corpus/trace_sections/$(basename "$f" .cctrace).sections"
  done
  exit 0
fi
if [[ "${1:-}" =~ ^[0-9]+$ ]]; then
  seconds="$1"
  shift
fi
if (($#)); then targets=("$@"); else targets=("${all_targets[@]}"); fi
for t in "${targets[@]}"; do
  [[ " ${all_targets[*]} " == *" $t "* ]] || { echo "scripts/fuzz.sh: unknown target '$t' (${all_targets[*]})" >&2; exit 2; }
done
cmake --build "$build" --target "${targets[@]/#/fuzz_}"

export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
status=0
for t in "${targets[@]}"; do
  mkdir -p "$build/corpus/$t"
  echo "== fuzz_$t: ${seconds} s"
  flags=(-max_total_time="$seconds" -timeout=20 -rss_limit_mb=4096 -max_len="${CCLAB_FUZZ_MAX_LEN:-16384}"
         -print_final_stats=1)
  jobs="${CCLAB_FUZZ_JOBS:-1}"
  # Several jobs log to build-fuzz/fuzz-N.log; one prints here.
  ((jobs > 1)) && flags+=(-jobs="$jobs" -workers="$jobs")
  (cd "$build" && "$build/tests/fuzz/fuzz_$t" "${flags[@]}" "$build/corpus/$t" "$root/tests/fuzz/corpus/$t") || status=1
done
exit "$status"
