#!/usr/bin/env bash
# tests/scripts/gpu_session_test.sh SOURCE_DIR - scripts/gpu_session.sh's kit staging, without a GPU: a kit
# built here of a library this machine lacks and of a library it has (zlib's soname, in Debian's layout:
# /lib, and an absolute development link in /usr/lib). The first must be staged as a file; the second
# must be dropped and its links pointed at the machine's copy, so the kit never shadows a newer system
# library. Also: staging happens once per kit, and an unknown phase, a missing kit and a prefix that is
# not the script's are refused with a message.
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

# 2. A library the machine has (zlib's soname), laid out as Debian's zlib1g and zlib1g-dev are: the
# library in /lib/<multiarch>, the development link in /usr/lib/<multiarch> pointing at it by absolute
# path, and a static archive beside it.
ldconfig_bin=""
for t in ldconfig /sbin/ldconfig /usr/sbin/ldconfig; do
  if command -v "$t" >/dev/null; then ldconfig_bin=$(command -v "$t"); break; fi
done
[ -n "$ldconfig_bin" ] || fail "no ldconfig on this machine"
sys_z=$("$ldconfig_bin" -p | awk '$1 == "libz.so.1" && /x86-64/ && !n++ { print $NF }')
[ -n "$sys_z" ] || fail "this machine has no libz.so.1 in its ld.so cache"
lib="$tmp/pkg-zlib/lib/$multiarch"
mkdir -p "$lib"
cp "$(readlink -f "$sys_z")" "$lib/libz.so.1.2.99"
ln -s libz.so.1.2.99 "$lib/libz.so.1"
make_deb zlib
lib="$tmp/pkg-zlib-dev/usr/lib/$multiarch"
mkdir -p "$lib"
ln -s "/lib/$multiarch/libz.so.1.2.99" "$lib/libz.so"
echo 'not an archive' >"$lib/libz.a"
make_deb zlib-dev

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

[ ! -e "$stage/lib/$multiarch" ] || fail "libraries were left in the prefix's /lib"

# Staging is done once per kit: a second phase reuses it, a changed kit is staged again.
touch "$slib/marker"
CCLAB_KIT_DIR="$tmp/kit" CCLAB_KIT_ROOT="$stage" bash "$session" env "$tmp/out" >/dev/null 2>&1 || fail "second env phase"
[ -e "$slib/marker" ] || fail "the second phase staged the kit again"
cp "$tmp/kit/debs/cclabkit.deb" "$tmp/kit/debs/cclabkit-copy.deb"
CCLAB_KIT_DIR="$tmp/kit" CCLAB_KIT_ROOT="$stage" bash "$session" env "$tmp/out" >/dev/null 2>&1 || fail "third env phase"
[ ! -e "$slib/marker" ] || fail "a changed kit was not staged again"
[ -f "$slib/libcclabkit.so.1.0.0" ] || fail "the changed kit's staging lost the kit's library"
# A directory that is not a kit prefix is never removed.
mkdir -p "$tmp/precious" && touch "$tmp/precious/file"
set +e
msg=$(CCLAB_KIT_DIR="$tmp/kit" CCLAB_KIT_ROOT="$tmp/precious" bash "$session" env "$tmp/out" 2>&1)
set -e
[ -e "$tmp/precious/file" ] || fail "gpu_session.sh removed a directory that was not its prefix"
[[ "$msg" == *"is not empty and not a kit prefix"* ]] || fail "no message for a foreign CCLAB_KIT_ROOT: $msg"

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
