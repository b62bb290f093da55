#!/usr/bin/env bash
# tests/install/install_test.sh BUILD_DIR SOURCE_DIR - `cmake --install` lays out NCCL's names
# (include/nccl.h, lib/libnccl.so -> libnccl.so.2) beside cclab's, and a program written for NCCL
# compiles, links with -lnccl and runs against the installed tree (the program: consumer/main.c).
set -euo pipefail
build="$1"
src="$2"
prefix="$(mktemp -d "${TMPDIR:-/tmp}/cclab_install.XXXXXX")"
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix" >/dev/null
fail() { echo "install_test: $*" >&2; exit 1; }
libdir="$prefix/lib"
[ -d "$libdir" ] || libdir="$(dirname "$(find "$prefix" -name 'libnccl.so' | head -1)")"
for f in include/nccl.h include/cclab/nccl.h include/cclab/cclab.h; do
  [ -f "$prefix/$f" ] || fail "missing $f"
done
for f in libnccl.so libnccl.so.2 libcclab.so libcclab.so.0; do
  [ -e "$libdir/$f" ] || fail "missing lib/$f"
done
soname="$(readelf -d "$libdir/libnccl.so.2" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')"
[ "$soname" = "libnccl.so.2" ] || fail "libnccl.so.2 has soname '$soname'"
# (nm's output is kept first: `nm | grep -q` under pipefail fails when grep stops reading early.)
exports="$(nm -D --defined-only "$libdir/libnccl.so.2")"
for sym in ncclAllReduce ncclCommInitRank ncclGetLastError pncclAllReduce; do
  grep -qw "$sym" <<<"$exports" || fail "libnccl.so.2 does not export $sym"
done
# The CUDA runtime cclab links statically must stay private: exporting cudaMalloc & co. from libnccl.so.2
# would interpose on the application's own CUDA runtime under LD_PRELOAD.
if grep -qE ' T cuda[A-Z]' <<<"$exports"; then fail "libnccl.so.2 exports CUDA runtime symbols"; fi
# CCLAB_TEST_CC / CCLAB_TEST_CFLAGS (set by ctest): the build's C compiler and its sanitizer flags.
read -r -a cflags <<<"${CCLAB_TEST_CFLAGS:-}"
"${CCLAB_TEST_CC:-cc}" -std=c11 -Wall -Werror "${cflags[@]}" -I"$prefix/include" "$src/tests/install/consumer/main.c" \
  -L"$libdir" -lnccl -o "$prefix/dropin"
readelf -d "$prefix/dropin" | grep -q 'NEEDED.*\[libnccl.so.2\]' || fail "the program does not need libnccl.so.2"
LD_LIBRARY_PATH="$libdir" "$prefix/dropin" dropin
