#!/usr/bin/env bash
# scripts/setup.sh - install what cclab needs (Debian packages), configure with CMake + Ninja
# (+ ccache when present) and build. Idempotent: with everything installed and built it takes seconds.
#
#   scripts/setup.sh [BUILD_DIR] [extra cmake -D options...]
#
# Environment: CCLAB_BUILD_TYPE (default RelWithDebInfo), CCLAB_JOBS (default: number of cores),
# CCLAB_TARGETS (what to build, e.g. cclab_cli; default: everything).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-$root/build}"
shift || true

packages=(build-essential cmake ninja-build ccache pkg-config libgtest-dev libopenmpi-dev openmpi-bin
          libcli11-dev nlohmann-json3-dev libfmt-dev libpugixml-dev libsimgrid-dev libzstd-dev zlib1g-dev
          libimgui-dev libglfw3-dev libstb-dev libgl1-mesa-dri xvfb xauth python3)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "cclab setup: installing ${missing[*]}"
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="${CCLAB_BUILD_TYPE:-RelWithDebInfo}" "$@"
elif (($#)); then
  cmake "$build" "$@" >/dev/null  # options given again: reconfigure quietly (errors still show)
fi
targets=()
for t in ${CCLAB_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build" -j "${CCLAB_JOBS:-$(nproc)}" "${targets[@]}"
