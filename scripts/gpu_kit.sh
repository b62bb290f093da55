#!/usr/bin/env bash
# scripts/gpu_kit.sh [KIT_DIR] - gathers, on this (Debian, networked) machine, the build dependencies a
# bare GPU machine may lack, so that scripts/gpu_session.sh can build and test cclab there with no
# network (the project's lent GPU machines reach nothing outside; docs/gpu.md, "On a lent GPU machine").
#
# The kit is the Debian packages (.deb, amd64) of the libraries cclab builds against - GoogleTest,
# nlohmann-json, CLI11, pugixml, zstd, zlib, pkgconf and SimGrid with the libraries it loads - about
# 37 MB, in KIT_DIR (default .gpukit/ in the checkout, which git ignores). gpu_session.sh unpacks them
# into a private prefix there and uses a package's copy only where the machine has no library of that
# soname. The visualiser, MPI and ccache are left out: the GPU build does without them.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
kit="${1:-$root/.gpukit}"
packages=(libgtest-dev nlohmann-json3-dev libcli11-dev libpugixml-dev libpugixml1v5 libzstd-dev libzstd1 zlib1g-dev
          zlib1g pkgconf pkgconf-bin libpkgconf3 libsimgrid-dev libsimgrid3.32 libboost1.74-dev libboost-dev
          libboost-context1.74.0 libboost-stacktrace1.74.0 libns3.37 libgsl27 libgslcblas0 libgfortran5
          libquadmath0 libsqlite3-0 libxml2 libicu72)
mkdir -p "$kit/debs"
rm -f "$kit/debs"/*.deb
# apt-get download writes into the current directory; as root it warns that _apt cannot write there.
(cd "$kit/debs" && apt-get download "${packages[@]}" 2>&1 | grep -v '^W: Download is performed unsandboxed' || true)
n=$(find "$kit/debs" -name '*.deb' | wc -l)
if [ "$n" -ne "${#packages[@]}" ]; then
  echo "gpu_kit: got $n of ${#packages[@]} packages in $kit/debs (apt-get update first?)" >&2
  exit 1
fi
echo "gpu_kit: $n packages, $(du -sh "$kit/debs" | cut -f1), in $kit/debs"
