#!/usr/bin/env bash
# scripts/gpu_session.sh PHASE [OUT_DIR] - builds and tests the CUDA backend on a GPU machine that has
# CUDA, CMake and Ninja but not cclab's other build dependencies and no network (the project's lent GPU
# machines): they come from the kit scripts/gpu_kit.sh gathered into .gpukit/ (docs/gpu.md, "On a lent
# GPU machine"). Each phase fits in one 10-minute command and writes its log to OUT_DIR (default $OUT,
# else gpu-session/ in the checkout):
#   env     what the machine has (GPUs, driver, nvcc, topology) and whether the kit is complete
#   build   unpacks the kit, configures build-gpu/ (Release, sm_${CCLAB_CUDA_ARCHS:-90}, no visualiser)
#           and builds it with every core
#   test    what detection finds, one small all_reduce with NCCL_DEBUG=INFO, then ctest -L gpu minus the
#           perf sweeps: the correctness matrix and the trace test
#   perf    the gpu_perf_* sweeps (`cclab perf -c 1`, every collective, every value checked)
#   bench   bench/gpu_vs_memcpy.sh (one GPU), and bench/gpu_vs_nccl.sh where there are several GPUs
#   all     the five in turn (for a machine with no 10-minute limit)
# The A/B of docs/gpu.md's known costs: CCLAB_CUDA_INLINE_DATA_LOOP=ON CCLAB_GPU_BUILD_DIR=build-gpu-inline
# for the build and bench phases builds and measures the kernels with their data loop inlined.
# The build has docs' TwoShot and lab 8's solution built in (CCLAB_CUSTOM_ALGOS, unless set), which the
# test phase's gpu_custom_algorithms runs (docs/custom-algorithms.md, "On the CUDA backend").
# A phase after build reuses build-gpu/ and the unpacked kit. The kit's packages are unpacked into a
# private prefix (CCLAB_KIT_ROOT, default /tmp/cclab-kit), never into /, and a library the machine
# already has (same soname) is taken from the machine.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
phase="${1:?usage: gpu_session.sh env|build|test|perf|bench|all [OUT_DIR]}"
out="${2:-${OUT:-$root/gpu-session}}"
kit="${CCLAB_KIT_DIR:-$root/.gpukit}"
[ -d "$kit" ] && kit=$(cd "$kit" && pwd)
stage="${CCLAB_KIT_ROOT:-/tmp/cclab-kit}"
build="${CCLAB_GPU_BUILD_DIR:-$root/build-gpu}"
archs="${CCLAB_CUDA_ARCHS:-90}"
jobs="${CCLAB_JOBS:-$(nproc)}"
multiarch=x86_64-linux-gnu
custom_algos="docs/examples/algorithms/two_shot.cc;labs/solutions/08-your-own-algorithm/my_allreduce.cc"
mkdir -p "$out"

say() { echo "== gpu_session $phase: $*"; }

# Unpacks every kit package into $stage (again only when the kit changed), then drops the kit's copy of
# each shared library the machine has under the same soname and points the kit's links at the
# machine's file instead.
stage_kit() {
  ls "$kit"/debs/*.deb >/dev/null 2>&1 || { say "no kit in $kit/debs (run scripts/gpu_kit.sh first)"; return 1; }
  local lib="$stage/usr/lib/$multiarch" f t s soname sys stamp ldconfig_bin=""
  stamp=$(ls -l "$kit"/debs/*.deb | awk '{ print $5, $NF }' | md5sum | cut -d' ' -f1)
  if [ "$(cat "$stage/.staged" 2>/dev/null)" != "$stamp" ]; then
    # Only a prefix this script made (or an empty one) is ever removed.
    if [ -e "$stage" ] && [ ! -f "$stage/.staged" ] && [ -n "$(ls -A "$stage" 2>/dev/null)" ]; then
      say "CCLAB_KIT_ROOT=$stage is not empty and not a kit prefix; give an empty or new directory"
      return 1
    fi
    rm -rf "$stage"
    mkdir -p "$lib"
    for d in "$kit"/debs/*.deb; do
      if command -v dpkg-deb >/dev/null; then
        dpkg-deb -x "$d" "$stage" || return 1
      else  # a .deb is an ar archive holding data.tar.*
        (tmp=$(mktemp -d) && trap 'rm -rf "$tmp"' EXIT && cd "$tmp" && ar x "$d" && tar -xf data.tar.* -C "$stage") ||
          return 1
      fi
    done
    # Libraries some packages ship in /lib (zlib1g) join the others in usr/lib; links to absolute paths
    # (zlib1g-dev's libz.so -> /lib/x86_64-linux-gnu/libz.so.1.2.13) would lead into the machine, so
    # they lead to the kit's file of that name instead.
    if [ -d "$stage/lib/$multiarch" ]; then
      cp -a "$stage/lib/$multiarch/." "$lib/" && rm -rf "$stage/lib/$multiarch" || return 1
    fi
    for f in "$lib"/*; do
      [ -L "$f" ] || continue
      t=$(readlink "$f")
      case "$t" in /*) ln -sfn "$(basename "$t")" "$f" ;; esac
    done
    for t in ldconfig /sbin/ldconfig /usr/sbin/ldconfig; do
      if command -v "$t" >/dev/null; then ldconfig_bin=$(command -v "$t"); break; fi
    done
    if [ -z "$ldconfig_bin" ] || ! command -v objdump >/dev/null; then
      say "WARNING: no ldconfig or objdump here: the kit's libraries are all kept, even where the machine has its own"
    else
      for f in "$lib"/lib*.so.*; do
        [ -f "$f" ] && [ ! -L "$f" ] || continue
        soname=$(objdump -p "$f" 2>/dev/null | awk '$1 == "SONAME" { print $2 }')
        [ -n "$soname" ] || continue
        sys=$("$ldconfig_bin" -p | awk -v s="$soname" '$1 == s && /x86-64/ && !n++ { print $NF }')
        case "$sys" in "" | "$stage"*) continue ;; esac
        rm -f "$f" "$lib/$soname"
        ln -s "$sys" "$lib/$soname"
      done
    fi
    # Development links (libz.so -> libz.so.1.2.13) whose file went: point them at the soname link.
    for f in "$lib"/lib*.so; do
      [ -L "$f" ] && [ ! -e "$f" ] || continue
      for s in "$f".[0-9]*; do
        [ -e "$s" ] && { ln -sf "$(basename "$s")" "$f"; break; }
      done
    done
    echo "$stamp" >"$stage/.staged"
  fi
  export CMAKE_PREFIX_PATH="$stage/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  # pkg-config reads the kit's .pc files only, their paths under $stage.
  export PKG_CONFIG_LIBDIR="$stage/usr/lib/$multiarch/pkgconfig:$stage/usr/share/pkgconfig"
  export PKG_CONFIG_SYSROOT_DIR="$stage"
  export LD_LIBRARY_PATH="$stage/usr/lib/$multiarch${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export PATH="$PATH:$stage/usr/bin:/usr/local/cuda/bin"
}

phase_env() {
  nvidia-smi -L || say "nvidia-smi lists no GPU"
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv || true
  nvidia-smi topo -m || true
  command -v nvcc && nvcc --version | tail -2
  for t in cmake ninja g++ objdump ldconfig ar; do printf '%-8s %s\n' "$t" "$(command -v "$t" || echo MISSING)"; done
  echo "cores: $(nproc)"
  stage_kit && say "kit staged in $stage ($(ls "$kit"/debs/*.deb | wc -l) packages); the machine lacked, so the kit gives:" &&
    find "$stage/usr/lib/$multiarch" -maxdepth 1 -type f -name 'lib*.so.*' -printf '%f ' && echo
}

phase_build() {
  stage_kit || return 1
  local pc="$stage/usr/bin/pkgconf"
  command -v pkg-config >/dev/null && pc=$(command -v pkg-config)
  # Warnings are not errors here: that machine's compiler may be newer than CI's and warn about more;
  # CI (.ci/run) is where a warning fails the build.
  if [ ! -f "$build/build.ninja" ]; then
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCCLAB_CUDA=ON -DCCLAB_CUDA_ARCHS="$archs" \
      -DCCLAB_CUDA_QUICK=OFF -DCCLAB_VIZ=OFF -DPKG_CONFIG_EXECUTABLE="$pc" \
      -DCCLAB_CUDA_INLINE_DATA_LOOP="${CCLAB_CUDA_INLINE_DATA_LOOP:-OFF}" \
      -DCCLAB_CUSTOM_ALGOS="${CCLAB_CUSTOM_ALGOS-$custom_algos}" || return 1
  fi
  # CCLAB_GPU_TARGETS: build only these targets (default: everything)
  local targets=()
  for t in ${CCLAB_GPU_TARGETS:-}; do targets+=(--target "$t"); done
  cmake --build "$build" -j "$jobs" "${targets[@]}"
}

run_ctest() {
  stage_kit || return 1
  [ -f "$build/CTestTestfile.cmake" ] || { say "no build in $build (run the build phase first)"; return 1; }
  # Inside the 10-minute limit of one command: what has not finished by then is reported as timed out.
  (cd "$build" && timeout --signal=TERM "${CCLAB_PHASE_SECONDS:-540}" \
    ctest -L gpu --output-on-failure --timeout "${CCLAB_TEST_SECONDS:-500}" "$@")
}

# First what detection finds (topo-detect.txt, and the model as NCCL's XML: topo-dump.xml) and one
# small all_reduce with NCCL_DEBUG=INFO (first-run.txt): if the backend does not work at all, these say
# why in seconds. Then the tests.
phase_test() {
  stage_kit || return 1  # the kit's libraries (SimGrid's, for one) are what cclab loads
  local cclab="$build/runtime/cli/cclab"
  if [ -x "$cclab" ]; then
    "$cclab" topo --detect >"$out/topo-detect.txt" 2>&1 || say "cclab topo --detect failed (topo-detect.txt)"
    CCLAB_BACKEND=cuda NCCL_DEBUG=INFO NCCL_TOPO_DUMP_FILE="$out/topo-dump.xml" timeout 120 \
      "$cclab" perf all_reduce -g 2 -b 1M -e 1M -n 2 -w 1 -c 1 >"$out/first-run.txt" 2>&1 ||
      say "the first all_reduce failed (first-run.txt)"
  fi
  run_ctest -E '^gpu_perf_'
}
phase_perf() { run_ctest -R '^gpu_perf_'; }
# cclab's data path against cudaMemcpy on one GPU (bench/gpu_vs_memcpy.sh), then against NCCL where the
# machine has several GPUs and nccl-tests built against NCCL (NCCL_TESTS_BUILD: bench/gpu_vs_nccl.sh).
phase_bench() {
  stage_kit || return 1
  timeout 540 "$root/bench/gpu_vs_memcpy.sh" "$build" || return 1
  local ngpu
  ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
  if [ "${ngpu:-0}" -ge 2 ] && [ -n "${NCCL_TESTS_BUILD:-}" ]; then
    "$root/bench/gpu_vs_nccl.sh" "$build" "$NCCL_TESTS_BUILD"
  else
    say "gpu_vs_nccl.sh skipped: it needs 2+ GPUs (here ${ngpu:-0}) and NCCL_TESTS_BUILD"
  fi
}

case "$phase" in
  env | build | test | perf | bench)
    "phase_$phase" 2>&1 | tee "$out/$phase.log"
    rc=${PIPESTATUS[0]}
    ;;
  all)
    rc=0
    for p in env build test perf bench; do
      "phase_$p" 2>&1 | tee "$out/$p.log"
      r=${PIPESTATUS[0]}
      [ "$r" -eq 0 ] || rc=$r
      [ "$p" != build ] || [ "$r" -eq 0 ] || break
    done
    ;;
  *)
    echo "gpu_session.sh: unknown phase '$phase' (env, build, test, perf, bench or all)" >&2
    exit 2
    ;;
esac
say "exit $rc"
exit "$rc"
