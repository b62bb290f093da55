#!/usr/bin/env bash
# scripts/gpu_lease.sh pack | run [STEP...] - the CUDA backend's checks on a lent GPU machine in as little
# device time as possible: everything is built HERE (sm_90, Release) and carried; THERE only runs.
#
# A lent machine (the `device` tool; docs/gpu.md "On a lent GPU machine") gives about 15 minutes of
# device time per session, start-up included, and 16 cores: building cclab there (scripts/gpu_session.sh
# build) would spend a third of it. So:
#
#   here:   scripts/gpu_lease.sh pack      # builds build-gpu/ (sm_90) if needed, then fills .gpucarry/
#   there:  scripts/gpu_lease.sh run       # with carry [".gpucarry"]; every step, in priority order
#           scripts/gpu_lease.sh run perf live   # or only the steps named
#
# pack packs into .gpucarry/carry.txz (ignored by git; run unpacks it there): the binaries the GPU steps run (cclab, gpu_collectives_test,
# cclab_gpu_memcpy_bw, libcclab), every CTestTestfile.cmake of build-gpu/, the shared libraries they load
# that a CUDA machine may lack (SimGrid and its dependencies, pugixml, zstd...; glibc, libstdc++ and the
# CUDA driver are the machine's), cclab's install tree (NCCL's names: lib/libnccl.so.2), and, when given,
# NVIDIA's nccl-tests built twice here (NCCL_TESTS_NVIDIA: against the CUDA toolkit's NCCL;
# NCCL_TESTS_CCLAB: against cclab's install tree) and a second libcclab whose kernels inline their data
# loop (CCLAB_INLINE_BUILD: a build dir configured with -DCCLAB_CUDA_INLINE_DATA_LOOP=ON, and
# -DCCLAB_CUDA_INLINE_TYPES=float32 on a machine with less than ~21 GB per parallel ptxas). Binaries built
# on Debian 12 (glibc 2.36) run on a newer glibc; the carried libraries are put on LD_LIBRARY_PATH for
# cclab's commands only.
#
# run restores build-gpu/ from the carry (its CTest files name /work/main: a link to the checkout is made
# there when the checkout lives elsewhere), then runs the steps, each under its own time limit and all
# before a deadline (CCLAB_LEASE_SECONDS, default 420): a step that would start after it is skipped and
# said so. Each step's log goes to $OUT/logs (default ./gpu-lease/logs) and, after every step, everything
# is packed again into $OUT/lease.tgz, so a run killed at its limit still returns what it did. The last
# thing printed is one line per step with its status and time.
#
# Steps (in this order): env first diag detect tests perf pat memcpy ncclt live inline checked; hang,
# channels and profile run only when named. When the first run (one all_reduce) fails, the steps that need a working backend are skipped, so the call
# ends early with the diagnosis and leaves device time for a rerun after a fix.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
carry="$root/.gpucarry"
build_rel=build-gpu

usage() { sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[ $# -ge 1 ] || usage
mode=$1
shift

# ---------------------------------------------------------------------------------------------- pack
pack() {
  local build="${CCLAB_GPU_BUILD_DIR:-$root/$build_rel}"
  local carry=/tmp/cclab-gpucarry  # staged here, then packed into .gpucarry/carry.tgz
  # docs' TwoShot and lab 8's solution built in, as scripts/gpu_session.sh builds them, for the tests
  # step's gpu_custom_algorithms (with the plugin it refuses, tests/algorithms/wrong_sum.so).
  if [ ! -f "$build/build.ninja" ]; then
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCCLAB_CUDA=ON -DCCLAB_CUDA_ARCHS=90 \
      -DCCLAB_CUDA_QUICK=OFF -DCCLAB_VIZ=OFF \
      "-DCCLAB_CUSTOM_ALGOS=${CCLAB_CUSTOM_ALGOS-docs/examples/algorithms/two_shot.cc;labs/solutions/08-your-own-algorithm/my_allreduce.cc}" ||
      return 1
  fi
  cmake --build "$build" -j "$(nproc)" --target cclab_cli gpu_collectives_test cclab_gpu_memcpy_bw cclab_nccl wrong_sum ||
    return 1
  rm -rf "$carry"
  mkdir -p "$carry/lib" "$carry/$build_rel"
  # The build tree's files the steps use, at their places (CTest files name them by absolute path).
  (cd "$build" && find . -name CTestTestfile.cmake -print0 | xargs -0 cp --parents -t "$carry/$build_rel") || return 1
  local f
  for f in runtime/cli/cclab tests/gpu/gpu_collectives_test bench/cclab_gpu_memcpy_bw; do
    (cd "$build" && cp --parents "$f" "$carry/$build_rel/") || return 1
  done
  (cd "$build" && find . \( -name 'lib*.so*' -o -path './tests/algorithms/*.so' \) \( -type f -o -type l \) -print0 |
    xargs -0 cp -P --parents -t "$carry/$build_rel") || return 1
  # NCCL's names from the install tree (lib/libnccl.so.2), for nccl-tests built against cclab.
  cmake --install "$build" --prefix "$carry/install" >/dev/null || return 1
  rm -rf "$carry/install/include" "$carry/install/lib"/libcclab*
  # Shared libraries the binaries load that are not glibc's, the compiler's or the driver's.
  local libs
  libs=$(for f in "$carry/$build_rel/runtime/cli/cclab" "$carry/$build_rel/tests/gpu/gpu_collectives_test"; do
    LD_LIBRARY_PATH="$build/runtime:$build/kernels" ldd "$f"; done |
    awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u |
    grep -Ev '/(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|ld-linux[^/]*|libcuda|libnvidia[^/]*)\.so' |
    grep -v "^$build")
  for f in $libs; do cp -L "$f" "$carry/lib/"; done
  if [ -n "${NCCL_TESTS_NVIDIA:-}" ]; then mkdir -p "$carry/nt-nvidia" && cp -a "$NCCL_TESTS_NVIDIA"/*_perf "$carry/nt-nvidia/"; fi
  if [ -n "${NCCL_TESTS_CCLAB:-}" ]; then mkdir -p "$carry/nt-cclab" && cp -a "$NCCL_TESTS_CCLAB"/*_perf "$carry/nt-cclab/"; fi
  if [ -n "${CCLAB_INLINE_BUILD:-}" ]; then
    # Its own cclab binary (its rpath names its own build tree), restored at build-gpu-inline/.
    cmake --build "$CCLAB_INLINE_BUILD" -j "$(nproc)" --target cclab_cli || return 1
    mkdir -p "$carry/inline"
    (cd "$CCLAB_INLINE_BUILD" && cp --parents runtime/cli/cclab "$carry/inline/" &&
      find . -name 'lib*.so*' \( -type f -o -type l \) -print0 | xargs -0 cp -P --parents -t "$carry/inline") || return 1
  fi
  # Not stripped: symbols cost little (the kernels' machine code is most of libcclab) and name the
  # frames of a stack that cuda-gdb prints from a stuck run.
  (cd "$root" && git rev-parse HEAD >"$carry/commit" && git status --porcelain >>"$carry/commit")
  du -sh "$carry"/* | sort -h
  rm -rf "$root/.gpucarry"
  mkdir -p "$root/.gpucarry"
  # xz with a dictionary larger than libcclab: libnccl.so.2 (the same objects, linked again) then costs
  # almost nothing. gzip packed 85 MB; this about 30.
  tar -cf - -C "$carry" . | xz -9 -T1 --lzma2=preset=9,dict=192MiB >"$root/.gpucarry/carry.txz" || return 1
  echo "gpu_lease pack: $(du -sh "$carry" | cut -f1) staged, $(du -sh "$root/.gpucarry/carry.txz" | cut -f1) packed in .gpucarry/carry.txz (the carry limit is 64 MiB with the working tree)"
}

# ----------------------------------------------------------------------------------------------- run
out="${OUT:-$root/gpu-lease}"
logs=/tmp/cclab-lease-logs
t0=$(date +%s)
deadline=$((t0 + ${CCLAB_LEASE_SECONDS:-420}))
summary=()

# Packs the logs into $OUT/lease.tgz (after every step, so that a killed run still returns them).
save() { tar -czf "$out/lease.tgz.new" -C "$logs" . 2>/dev/null && mv "$out/lease.tgz.new" "$out/lease.tgz"; }
left() { echo $((deadline - $(date +%s))); }
# step NAME MAX_SECONDS FUNCTION: runs FUNCTION with at most min(MAX, time left) seconds.
step() {
  local name=$1 max=$2 fn=$3 l s e rc
  l=$(left)
  if [ "$l" -lt 10 ]; then summary+=("$(printf '%-10s skipped (deadline)' "$name")"); return; fi
  [ "$max" -gt "$l" ] && max=$l
  echo "=== $name (at most ${max}s; $(($(date +%s) - t0))s in)"
  s=$(date +%s)
  # The whole step under its limit: the function runs in a bash of its own (functions and variables
  # exported), which timeout ends.
  STEP_SECONDS=$max timeout -k 5 "$max" bash -c "$fn" >"$logs/$name.log" 2>&1
  rc=$?
  # What a step killed at its limit leaves behind (its commands' own timeouts are process groups of
  # their own) would hold the GPU during the next step.
  pkill -9 -f "$root/$build_rel|$carry/" 2>/dev/null
  e=$(date +%s)
  tail -n "${CCLAB_LEASE_TAIL:-10}" "$logs/$name.log"
  summary+=("$(printf '%-10s rc=%-4s %4ss' "$name" "$rc" $((e - s)))")
  [ "$name" = first ] && first_rc=$rc
  save
}
first_rc=0
# heavy NAME MAX FUNCTION: a step that needs a working backend; skipped when the first run failed (its
# ranks would only wait out their timeouts), unless CCLAB_LEASE_FORCE=1.
heavy() {
  if [ "$first_rc" -ne 0 ] && [ "${CCLAB_LEASE_FORCE:-0}" != 1 ]; then
    summary+=("$(printf '%-10s skipped (the first run failed)' "$1")")
    return
  fi
  step "$@"
}
# t SECONDS CMD...: a command with a time limit, the carried libraries on its LD_LIBRARY_PATH (only
# cclab's commands get them: the machine's own programs keep their libraries).
t() { local s=$1; shift; timeout -k 5 "$s" env LD_LIBRARY_PATH="$carry/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$@"; }

# Where NVIDIA's libnccl.so.2 is on this machine (the CUDA toolkit's, or a Python wheel's), once.
nvidia_nccl_dir() {
  if [ ! -f /tmp/cclab-lease-nccl-dir ]; then
    find /usr/local /usr/lib /opt -name 'libnccl.so.2' 2>/dev/null | head -1 | xargs -r dirname >/tmp/cclab-lease-nccl-dir
  fi
  cat /tmp/cclab-lease-nccl-dir
}
cclab=$root/$build_rel/runtime/cli/cclab

s_env() {
  date -u
  nvidia-smi -L
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem,pcie.link.gen.max,pcie.link.width.max --format=csv
  nvidia-smi topo -m
  nvidia-smi -q | sed -n '1,40p'
  nvcc --version | tail -2
  uname -a
  ldd --version | head -1
  echo "cores: $(nproc)"
  cat "$carry/commit"
  echo "--- NVIDIA's libnccl.so.2 on this machine: $(nvidia_nccl_dir)"
}

# Fails when the run fails, falls back to the host backend, or finds a wrong value.
s_first() {
  local rc
  CCLAB_BACKEND=cuda NCCL_DEBUG=INFO t 60 "$cclab" perf all_reduce -g 2 -b 1M -e 1M -n 2 -w 1 -c 1 >/tmp/cclab-first.txt 2>&1
  rc=$?
  cat /tmp/cclab-first.txt
  echo "rc=$rc"
  grep -q 'using host' /tmp/cclab-first.txt && { echo "FAILED: the CUDA backend did not start"; rc=1; }
  grep -q '^# Out of bounds values : 0 OK$' /tmp/cclab-first.txt || { echo "FAILED: wrong values, or no result"; rc=1; }
  CCLAB_BACKEND=cuda NCCL_DEBUG=WARN t 60 "$cclab" perf all_reduce -g 1 -b 8 -e 64M -f 8 -n 5 -w 2 -c 1
  echo "rc=$?"
  return $rc
}

# One small run per protocol, algorithm and collective, each bounded (CCLAB_TIMEOUT=10): where the
# first run fails, this says which paths do.
s_diag() {
  local p a c
  for p in Simple LL LL128; do
    for a in Ring Tree; do
      echo "##### all_reduce $a/$p -g 2"
      CCLAB_BACKEND=cuda CCLAB_TIMEOUT=10 NCCL_DEBUG=WARN NCCL_PROTO=$p NCCL_ALGO=$a t 20 "$cclab" perf all_reduce -g 2 -b 8 -e 4M -f 64 -n 2 -w 1 -c 1
      echo "rc=$?"
    done
  done
  for c in all_gather reduce_scatter broadcast reduce alltoall sendrecv; do
    echo "##### $c -g 3"
    CCLAB_BACKEND=cuda CCLAB_TIMEOUT=10 NCCL_DEBUG=WARN t 20 "$cclab" perf "$c" -g 3 -b 8 -e 4M -f 64 -n 2 -w 1 -c 1
    echo "rc=$?"
  done
}

# Where a run that hangs is stuck: the run in the background, then cuda-gdb attached in batch mode
# (host threads' stacks, the kernels running). CCLAB_LEASE_HANG="NAME:ENV:PERF ARGS;..." overrides the
# cases below.
s_hang() {
  local cases c name envs args pid
  cases=${CCLAB_LEASE_HANG:-"ring-simple-ar2:NCCL_PROTO=Simple NCCL_ALGO=Ring:all_reduce -g 2 -b 1M -e 1M -n 1 -w 0 -c 0;ag3:NCCL_PROTO=Simple:all_gather -g 3 -b 3M -e 3M -n 1 -w 0 -c 0;ring-ll-ar2:NCCL_PROTO=LL NCCL_ALGO=Ring:all_reduce -g 2 -b 64K -e 64K -n 1 -w 0 -c 0"}
  IFS=';' read -ra list <<<"$cases"
  for c in "${list[@]}"; do
    IFS=':' read -r name envs args <<<"$c"
    echo "##### $name: $envs cclab perf $args"
    # shellcheck disable=SC2086
    env CCLAB_BACKEND=cuda NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,COLL CCLAB_TIMEOUT=0 $envs \
      LD_LIBRARY_PATH="$carry/lib" stdbuf -oL -eL "$cclab" perf $args >"$logs/hang-$name.txt" 2>&1 &
    pid=$!
    sleep "${CCLAB_LEASE_HANG_WAIT:-6}"
    if kill -0 "$pid" 2>/dev/null; then
      echo "still running after ${CCLAB_LEASE_HANG_WAIT:-6}s: attaching cuda-gdb"
      timeout -k 5 60 cuda-gdb -p "$pid" -batch -ex "set pagination off" -ex "info threads" -ex "thread apply all bt 30" \
        -ex "info cuda kernels" -ex "info cuda blocks" -ex "info cuda warps" >"$logs/hang-$name-gdb.txt" 2>&1
      echo "cuda-gdb rc=$?"
      grep -E "^\s+Kernel|^\*?\s+[0-9]+ +[0-9]+ +[0-9]+ .*block_kernel|in cuda|cclab::|^Thread|^#[0-9]" "$logs/hang-$name-gdb.txt" | head -60
      kill -9 "$pid" 2>/dev/null
    else
      wait "$pid"
      echo "finished: rc=$?"
    fi
    wait "$pid" 2>/dev/null
    tail -5 "$logs/hang-$name.txt"
  done
}

# What detection finds, the model as NCCL's XML (one rank: a detected model needs a GPU per rank), and
# the sysfs files it reads, for a fake tree in the tests.
s_detect() {
  t 60 "$cclab" topo --detect
  echo "rc=$?"
  CCLAB_BACKEND=cuda NCCL_DEBUG=INFO NCCL_TOPO_DUMP_FILE="$logs/topo-dump.xml" t 60 "$cclab" perf all_reduce -g 1 -b 8 -e 8 -n 1 -w 0
  echo "rc=$?"
  bash "$root/scripts/sysfs_capture.sh" "$logs/sysfs.tgz"
}

# CCLAB_LEASE_TESTS: a ctest -R regex to run only some entries (a rerun after a fix).
s_tests() {
  (cd "$root/$build_rel" && t "$STEP_SECONDS" ctest -L gpu -E '^gpu_perf_' ${CCLAB_LEASE_TESTS:+-R "$CCLAB_LEASE_TESTS"} \
    --output-on-failure --timeout "${CCLAB_LEASE_TEST_SECONDS:-150}")
}

# nccl-tests' table from cclab's kernels: 5 collectives (CCLAB_LEASE_PERF_COLLS) x 2, 4, 8 ranks on the
# one GPU, 8 B .. 1 GiB.
s_perf() {
  local c g
  for g in 2 4 8; do
    for c in ${CCLAB_LEASE_PERF_COLLS:-all_reduce all_gather reduce_scatter broadcast sendrecv}; do
      echo "##### $c -g $g"
      CUDA_DEVICE_MAX_CONNECTIONS=32 CCLAB_BACKEND=cuda NCCL_DEBUG=WARN t 40 "$cclab" perf "$c" -g "$g" -b 16 -e 1G -f 4 -n 10 -w 3 -c 0
      echo "rc=$?"
    done
  done
}

# The copy bound: N concurrent cudaMemcpyAsync D2D (bench/gpu_memcpy_bw.cc), and gpu_vs_memcpy.sh.
s_memcpy() {
  local g
  for g in 1 2 4 8; do
    echo "##### memcpy x$g"
    t 20 "$root/$build_rel/bench/cclab_gpu_memcpy_bw" 16 1G "$g" 10
  done
  t 30 "$root/bench/gpu_vs_memcpy.sh" "$root/$build_rel"
}


# NVIDIA's nccl-tests: with NVIDIA's NCCL (one rank: all it allows on one GPU), and built against
# cclab's install tree, every collective checked (-c 1).
s_ncclt() {
  local c d
  d=$(nvidia_nccl_dir)
  echo "NVIDIA NCCL from: ${d:-none found}"
  for c in ${CCLAB_LEASE_NCCLT_COLLS:-all_reduce all_gather reduce_scatter broadcast reduce alltoall sendrecv gather scatter hypercube}; do
    if [ -n "$d" ] && [ -x "$carry/nt-nvidia/${c}_perf" ] && [[ " ${CCLAB_LEASE_NVIDIA_COLLS:-all_reduce all_gather sendrecv} " == *" $c "* ]]; then
      echo "##### NVIDIA NCCL $c"
      t 30 env LD_LIBRARY_PATH="$d" "$carry/nt-nvidia/${c}_perf" -g 1 -b 8 -e 1G -f 4 -n 20 -w 5 -c 1
      echo "rc=$?"
    fi
    if [ -x "$carry/nt-cclab/${c}_perf" ]; then
      echo "##### cclab $c"
      NCCL_DEBUG=VERSION t 30 env LD_LIBRARY_PATH="$carry/install/lib:$carry/lib" "$carry/nt-cclab/${c}_perf" -g 1 -b 8 -e 1G -f 4 -n 20 -w 5 -c 1
      echo "rc=$?"
    fi
  done
}

# A live stream from a GPU run, saved byte for byte by a client on the socket (the viewer's side of the
# protocol, docs/live.md): `cclab viz --live` replays it elsewhere. Also a trace file of the same run.
s_live() {
  local sock=/tmp/cclab-live.sock
  rm -f "$sock"
  python3 - "$sock" "$logs/live-stream.cctrace" <<'EOF' &
import socket, sys, time
path, dst = sys.argv[1], sys.argv[2]
end = time.time() + 60
while True:
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); s.connect(path); break
    except OSError:
        if time.time() > end: sys.exit("no live socket")
        time.sleep(0.05)
n = 0
with open(dst, "wb") as f:
    while True:
        b = s.recv(1 << 20)
        if not b: break
        f.write(b); n += len(b)
print("live client: %d bytes" % n)
EOF
  local py=$!
  CCLAB_BACKEND=cuda CCLAB_LIVE=$sock CCLAB_LIVE_WAIT=30 NCCL_DEBUG=WARN t 90 "$cclab" perf all_reduce -g 4 -b 64K -e 16M -f 4 -n 2 -w 1 -c 1
  echo "perf rc=$?"
  local i
  for i in $(seq 100); do kill -0 "$py" 2>/dev/null || break; sleep 0.1; done
  kill "$py" 2>/dev/null
  wait "$py"
  echo "client rc=$?"
  CCLAB_BACKEND=cuda CCLAB_TRACE="$logs/gpu-run.cctrace" NCCL_DEBUG=WARN t 90 "$cclab" perf all_reduce -g 4 -b 64K -e 16M -f 4 -n 2 -w 1 -c 1
  echo "trace rc=$?"
  t 30 "$cclab" trace info "$logs/gpu-run.cctrace" | head -30
  t 30 "$cclab" trace info "$logs/live-stream.cctrace" | head -30
}

# Channels per rank: ranks that share one GPU each run their own blocks, so with 2 ranks the default
# 16 channels keep 32 of the GPU's SMs busy. The same sweeps with NCCL_MIN_NCHANNELS=32 (the most one
# launch carries) against the default, back to back.
s_channels() {
  local c g ch
  for g in 2 4; do
    for c in all_reduce all_gather; do
      for ch in default 32 default 32; do
        echo "##### $c -g $g channels $ch"
        if [ "$ch" = default ]; then
          CUDA_DEVICE_MAX_CONNECTIONS=32 CCLAB_BACKEND=cuda t 30 "$cclab" perf "$c" -g "$g" -b 16M -e 1G -f 4 -n 10 -w 3 -c 0
        else
          CUDA_DEVICE_MAX_CONNECTIONS=32 CCLAB_BACKEND=cuda NCCL_MIN_NCHANNELS=$ch NCCL_MAX_NCHANNELS=$ch \
            t 30 "$cclab" perf "$c" -g "$g" -b 16M -e 1G -f 4 -n 10 -w 3 -c 0
        fi
      done
    done
  done
}

# PAT (NCCL_ALGO=PAT; NCCL_PAT_ENABLE=1, as the ranks share one machine) against Ring/Simple, back to
# back, then PAT's values checked on 3 and 8 ranks up to 64 MiB.
s_pat() {
  local c g a
  for g in 2 4 8; do
    for c in all_gather reduce_scatter; do
      for a in PAT Ring; do
        echo "##### $c -g $g algo $a"
        CUDA_DEVICE_MAX_CONNECTIONS=32 CCLAB_BACKEND=cuda NCCL_ALGO=$a NCCL_PROTO=Simple NCCL_PAT_ENABLE=1 NCCL_DEBUG=WARN \
          t 40 "$cclab" perf "$c" -g "$g" -b 64 -e 1G -f 16 -n 5 -w 2 -c 0
        echo "rc=$?"
      done
    done
  done
  for g in 3 8; do
    for c in all_gather reduce_scatter; do
      echo "##### checked $c -g $g algo PAT"
      CUDA_DEVICE_MAX_CONNECTIONS=32 CCLAB_BACKEND=cuda NCCL_ALGO=PAT NCCL_PAT_ENABLE=1 NCCL_DEBUG=WARN \
        t 60 "$cclab" perf "$c" -g "$g" -b 8 -e 64M -f 8 -n 2 -w 1 -c 1
      echo "rc=$?"
    done
  done
}

# Where a kernel's time goes (docs/gpu.md "Against the copy bound"): traced runs at 64 MiB, whose step
# records (begin, duration, time waiting, bytes) say how much of each block's time is waiting for a
# peer and how much is copying; `cclab trace dump --csv` reads them (logs/prof-*.cctrace come back).
s_profile() {
  local c g
  for g in 2 8; do
    for c in all_reduce sendrecv; do
      echo "##### traced $c -g $g"
      CUDA_DEVICE_MAX_CONNECTIONS=32 CCLAB_BACKEND=cuda CCLAB_TRACE="$logs/prof-$c-$g.cctrace" NCCL_DEBUG=WARN \
        t 60 "$cclab" perf "$c" -g "$g" -b 64M -e 64M -n 2 -w 1 -c 0
      echo "rc=$?"
    done
  done
}

# The checked sweeps of ctest (gpu_perf_*: 8 B .. 64 MiB, every value checked).
s_checked() {
  (cd "$root/$build_rel" && t "$STEP_SECONDS" ctest -L gpu -R '^gpu_perf_' --output-on-failure --timeout 120)
}

# The data loop inlined (CCLAB_CUDA_INLINE_DATA_LOOP=ON) against out of line, same runs back to back.
s_inline() {
  [ -d "$root/$build_rel-inline" ] || { echo "no inline build carried"; return 1; }
  local v c g bin
  for c in sendrecv all_reduce; do
    for g in 2 8; do
      for v in "" -inline "" -inline; do
        bin="$root/$build_rel$v/runtime/cli/cclab"
        echo "##### ${v:--outline} $c -g $g"
        CUDA_DEVICE_MAX_CONNECTIONS=32 CCLAB_BACKEND=cuda t 60 "$bin" perf "$c" -g "$g" -b 8 -e 1G -f 8 -n 10 -w 3 -c 0
      done
    done
  done
}

run() {
  mkdir -p "$out" "$logs"
  export root carry logs cclab build_rel
  export CCLAB_LEASE_TESTS CCLAB_LEASE_PERF_COLLS
  export -f t nvidia_nccl_dir s_hang s_channels s_pat s_profile s_env s_first s_diag s_detect s_tests s_perf s_memcpy s_ncclt s_live s_checked s_inline
  if [ -f "$carry/carry.txz" ] && [ ! -d "$carry/$build_rel" ]; then
    if command -v xz >/dev/null; then
      xz -dc "$carry/carry.txz" | tar -xf - -C "$carry" || return 1
    else  # Python's lzma and tarfile (the GPU image has python3)
      python3 -c 'import lzma, sys, tarfile; tarfile.open(fileobj=lzma.open(sys.argv[1])).extractall(sys.argv[2])' \
        "$carry/carry.txz" "$carry" || return 1
    fi
  fi
  # A carried library the machine has under the same name (soname) is dropped: the machine's copy is
  # newer here, and then the carried ones on LD_LIBRARY_PATH cannot displace its programs' libraries.
  local f n kept=""
  for f in "$carry"/lib/lib*.so*; do
    [ -e "$f" ] || continue
    n=$(basename "$f")
    if ldconfig -p 2>/dev/null | awk -v n="$n" '$1 == n && /x86-64/ { found = 1 } END { exit !found }'; then
      rm -f "$f"
    else
      kept="$kept $n"
    fi
  done
  echo "carried libraries this machine lacks:$kept"
  [ -d "$carry/$build_rel" ] || { echo "gpu_lease run: no $carry/$build_rel (run 'gpu_lease.sh pack' here and carry .gpucarry)"; return 1; }
  # The CTest files and rpaths name the build tree where it was packed (/work/main/build-gpu).
  rm -rf "$root/$build_rel" "$root/$build_rel-inline"
  cp -a "$carry/$build_rel" "$root/$build_rel"
  [ -d "$carry/inline" ] && cp -a "$carry/inline" "$root/$build_rel-inline"
  local packed
  packed=$(sed -n 's|^# Source directory: ||p' "$root/$build_rel/CTestTestfile.cmake" | head -1)
  if [ -n "$packed" ] && [ "$packed" != "$root" ] && [ ! -e "$packed" ]; then
    mkdir -p "$(dirname "$packed")" && ln -s "$root" "$packed" && echo "linked $packed -> $root"
  fi
  export PATH="$PATH:/usr/local/cuda/bin"
  local steps=("$@")
  [ ${#steps[@]} -gt 0 ] || steps=(env first diag detect tests perf pat memcpy ncclt live inline checked)
  local s
  for s in "${steps[@]}"; do
    case "$s" in
      env) step env 30 s_env ;;
      first) step first 130 s_first ;;
      diag) step diag 200 s_diag ;;
      hang) step hang 240 s_hang ;;
      detect) step detect 100 s_detect ;;
      tests) heavy tests "${CCLAB_LEASE_TESTS_SECONDS:-200}" s_tests ;;
      perf) heavy perf "${CCLAB_LEASE_PERF_SECONDS:-110}" s_perf ;;
      memcpy) step memcpy 40 s_memcpy ;;
      ncclt) heavy ncclt 70 s_ncclt ;;
      live) heavy live 40 s_live ;;
      checked) heavy checked 300 s_checked ;;
      channels) heavy channels 150 s_channels ;;
      pat) heavy pat 150 s_pat ;;
      profile) heavy profile 90 s_profile ;;
      inline) heavy inline 300 s_inline ;;
      *) echo "unknown step $s" ;;
    esac
  done
  echo "=== summary ($(($(date +%s) - t0))s)"
  printf '%s\n' "${summary[@]}"
  save
}

case "$mode" in
  pack) pack ;;
  run) run "$@" ;;
  *) usage ;;
esac
