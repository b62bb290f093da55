#!/usr/bin/env bash
# tests/scripts/gpu_session_test.sh SOURCE_DIR - scripts/gpu_session.sh's kit staging, without a GPU: a kit
# of two packages built here, one with a library this machine lacks and one with a library it has
# (same soname). The first must be staged as a file; the second must be dropped and its links pointed at
# the machine's copy, so the kit never shadows a newer system library. Also: an unknown phase and a
# missing kit are refused with a message.
set -euo pipefail
src="${1:?usage: gpu_session_test.sh SOURCE_DIR}"
session="$src/scripts/gpu_session.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
multiarch=x86_64-linux-gnu
fail() { echo "FAILED: $*"; exit 1; }

# A package: name, then files to put under usr/lib/<multiarch>/ (already in $tmp/pkg-<name>/).
make_deb() {
  local name=$1 dir="$tmp/pkg-$1"
  mkdir -p "$dir/DEBIAN"
  printf 'Package: %s\nVersion: 1.0\nArchitecture: amd64\nMaintainer: cclab tests\nDescription: test\n' "$name" \
    >"$dir/DEBIAN/control"
  dpkg-deb --build "$dir" "$tmp/kit/debs/$name.deb" >/dev/null
}
mkdir -p "$tmp/kit/debs"

# 1. A library no machine has.
lib="$tmp/pkg-cclabkit/usr/lib/$multiarch"
mkdir -p "$lib"
echo 'int cclab_kit_probe(void) { return 42; }' >"$tmp/probe.c"
gcc -shared -fPIC -Wl,-soname,libcclabkit.so.1 -o "$lib/libcclabkit.so.1.0.0" "$tmp/probe.c"
ln -s libcclabkit.so.1.0.0 "$lib/libcclabkit.so.1"
ln -s libcclabkit.so.1.0.0 "$lib/libcclabkit.so"
make_deb cclabkit

# 2. A library the machine has (zlib's soname), as another version's file name.
sys_z=$(ldconfig -p | awk '$1 == "libz.so.1" && /x86-64/ && !n++ { print $NF }')
[ -n "$sys_z" ] || fail "this machine has no libz.so.1 in its ld.so cache"
lib="$tmp/pkg-zlib/usr/lib/$multiarch"
mkdir -p "$lib"
cp "$(readlink -f "$sys_z")" "$lib/libz.so.1.2.99"
ln -s libz.so.1.2.99 "$lib/libz.so.1"
ln -s libz.so.1.2.99 "$lib/libz.so"
make_deb zlib

stage="$tmp/stage"
CCLAB_KIT_DIR="$tmp/kit" CCLAB_KIT_ROOT="$stage" bash "$session" env "$tmp/out" >"$tmp/env.out" 2>&1 ||
  { cat "$tmp/env.out"; fail "the env phase failed"; }
slib="$stage/usr/lib/$multiarch"
[ -f "$slib/libcclabkit.so.1.0.0" ] && [ ! -L "$slib/libcclabkit.so.1.0.0" ] || fail "the kit's own library was not staged"
[ "$(readlink -f "$slib/libcclabkit.so")" = "$slib/libcclabkit.so.1.0.0" ] || fail "libcclabkit.so does not lead to the kit's file"
[ ! -e "$slib/libz.so.1.2.99" ] || fail "the kit's copy of a library the machine has was kept"
[ "$(readlink "$slib/libz.so.1")" = "$sys_z" ] || fail "libz.so.1 points at '$(readlink "$slib/libz.so.1")', not the machine's $sys_z"
[ -e "$slib/libz.so" ] || fail "the development link libz.so is dangling"
[ "$(readlink -f "$slib/libz.so")" = "$(readlink -f "$sys_z")" ] || fail "libz.so does not lead to the machine's zlib"
grep -q 'the kit gives:' "$tmp/out/env.log" || fail "env.log does not list what the kit gives"
given=$(grep -A1 'the kit gives:' "$tmp/out/env.log" | tail -1)
[[ "$given" == *libcclabkit.so.1.0.0* && "$given" != *libz* ]] || fail "env.log lists '$given'"
# The staged prefix links: a program built against it runs with the kit's library.
echo 'int cclab_kit_probe(void); int main(void) { return cclab_kit_probe() == 42 ? 0 : 1; }' >"$tmp/main.c"
gcc -o "$tmp/main" "$tmp/main.c" -L"$slib" -lcclabkit
LD_LIBRARY_PATH="$slib" "$tmp/main" || fail "a program linked against the staged library did not run"

# Staging is done once: a second phase reuses it.
touch "$slib/marker"
CCLAB_KIT_DIR="$tmp/kit" CCLAB_KIT_ROOT="$stage" bash "$session" env "$tmp/out" >/dev/null 2>&1 || fail "second env phase"
[ -e "$slib/marker" ] || fail "the second phase staged the kit again"

# Refusals.
set +e
msg=$(bash "$session" bogus "$tmp/out" 2>&1); rc=$?
set -e
[ "$rc" -eq 2 ] && [[ "$msg" == *"unknown phase 'bogus'"* ]] || fail "an unknown phase gave rc $rc: $msg"
set +e
msg=$(CCLAB_KIT_DIR="$tmp/nokit" CCLAB_KIT_ROOT="$tmp/stage2" CCLAB_GPU_BUILD_DIR="$tmp/b" bash "$session" build "$tmp/out" 2>&1); rc=$?
set -e
[ "$rc" -ne 0 ] && [[ "$msg" == *"no kit in $tmp/nokit/debs"* ]] || fail "a missing kit gave rc $rc: $msg"
[ ! -e "$tmp/b" ] || fail "the build phase configured without a kit"
echo "PASSED: gpu_session.sh stages a kit (own library kept, the machine's zlib preferred) and refuses bad input"
