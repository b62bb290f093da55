#!/usr/bin/env bash
# tests/install/package_test.sh BUILD_DIR SOURCE_DIR - the installed tree works as a library, with no
# LD_LIBRARY_PATH, from wherever it lies: it is installed, then moved, and from its new place
#   1. bin/cclab runs (RUNPATH $ORIGIN/../lib finds the installed libcclab.so.0);
#   2. find_package(cclab) builds tests/install/consumer/ against cclab::cclab and cclab::nccl, and both run;
#   3. `cc main.c $(pkg-config --cflags --libs cclab)` and `... nccl` build and run (the first finds its
#      library through LD_LIBRARY_PATH, the second through -Wl,-rpath: pkg-config gives neither).
# Set by ctest: CCLAB_TEST_CC / CCLAB_TEST_CFLAGS (the build's C compiler and its sanitizer flags, which the
# programs need to load a sanitized library), CCLAB_TEST_CMAKE, CCLAB_TEST_GENERATOR, CCLAB_TEST_VERSION.
set -euo pipefail
build="$1"
src="$2"
cc="${CCLAB_TEST_CC:-cc}"
read -r -a cflags <<<"${CCLAB_TEST_CFLAGS:-}"
cmake="${CCLAB_TEST_CMAKE:-cmake}"
work="$(mktemp -d "${TMPDIR:-/tmp}/cclab_package.XXXXXX")"
trap 'rm -rf "$work"' EXIT
fail() { echo "package_test: $*" >&2; exit 1; }
unset LD_LIBRARY_PATH LD_PRELOAD

"$cmake" --install "$build" --prefix "$work/installed" >/dev/null
# Everything below uses the moved tree: a path written into it at install time would now lead nowhere.
mv "$work/installed" "$work/prefix"
prefix="$work/prefix"
libdir="$(dirname "$(find "$prefix" -name 'libcclab.so.0' | head -1)")"
[ -f "$libdir/libcclab.so.0" ] || fail "no libcclab.so.0 under the prefix"
# The sim backend's plugin lies next to the runtime, where CCLAB_BACKEND=sim looks for it.
if [ -e "$build/runtime/libcclab-sim.so" ]; then
  [ -f "$libdir/libcclab-sim.so" ] || fail "the sim plugin libcclab-sim.so is not installed next to libcclab.so.0"
fi

# ---- 1. The installed executable finds its own libraries -------------------------------------------
exe="$prefix/bin/cclab"
[ -x "$exe" ] || fail "missing bin/cclab"
runpath="$(readelf -d "$exe" | sed -n 's/.*R\(UN\)\{0,1\}PATH.*\[\(.*\)\]/\2/p')"
[[ "$runpath" == *"\$ORIGIN"* ]] || fail "bin/cclab's rpath '$runpath' has no \$ORIGIN: the installed executable cannot find ../lib"
resolved="$(ldd "$exe" | sed -n 's/.*libcclab\.so\.0 => \(.*\) (0x.*/\1/p')"
[ -n "$resolved" ] || fail "bin/cclab does not find libcclab.so.0 (rpath '$runpath'): $(ldd "$exe" | grep libcclab)"
[ "$(readlink -f "$resolved")" = "$(readlink -f "$libdir/libcclab.so.0")" ] ||
  fail "bin/cclab loads $resolved, not the installed $libdir/libcclab.so.0"
version="$("$exe" --version)" || fail "bin/cclab --version failed: $version"
[[ "$version" == "cclab ${CCLAB_TEST_VERSION:-}"* ]] || fail "bin/cclab --version printed '$version'"
echo "bin/cclab: $version (rpath $runpath)"
perf="$("$exe" perf all_reduce -b 8 -e 8 -g 2 2>&1)" || fail "bin/cclab perf failed:"$'\n'"$perf"
grep -q "Out of bounds values : 0 OK" <<<"$perf" || fail "bin/cclab perf found wrong values:"$'\n'"$perf"
echo "bin/cclab perf all_reduce -g 2: no wrong values"

# ---- 2. find_package(cclab) -------------------------------------------------------------------------
generator=()
[ -n "${CCLAB_TEST_GENERATOR:-}" ] && generator=(-G "$CCLAB_TEST_GENERATOR")
"$cmake" -S "$src/tests/install/consumer" -B "$work/consumer" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_COMPILER="$cc" -DCMAKE_C_FLAGS="${cflags[*]}" \
  >"$work/consumer.log" 2>&1 || fail "the consumer project does not configure:"$'\n'"$(cat "$work/consumer.log")"
found="$(sed -n 's/^cclab_DIR:PATH=//p' "$work/consumer/CMakeCache.txt")"
[[ "$(readlink -f "$found")" == "$(readlink -f "$prefix")"/* ]] ||
  fail "find_package(cclab) found '$found', not the package in $prefix"
"$cmake" --build "$work/consumer" >"$work/consumer.log" 2>&1 ||
  fail "the consumer project does not build:"$'\n'"$(cat "$work/consumer.log")"
for lib in cclab:libcclab.so.0 nccl:libnccl.so.2; do
  exe="$work/consumer/consumer_${lib%%:*}"
  readelf -d "$exe" | grep -q "NEEDED.*\[${lib#*:}\]" || fail "consumer_${lib%%:*} does not need ${lib#*:}"
  "$exe" "find_package(cclab) cclab::${lib%%:*}" || fail "consumer_${lib%%:*} failed"
done

# ---- 3. pkg-config ----------------------------------------------------------------------------------
export PKG_CONFIG_PATH="$libdir/pkgconfig"
for pc in cclab nccl; do
  [ -f "$libdir/pkgconfig/$pc.pc" ] || fail "missing lib/pkgconfig/$pc.pc"
  want="${CCLAB_TEST_VERSION:-}"
  [ "$pc" = nccl ] && want=2.28.9
  got="$(pkg-config --modversion "$pc")" || fail "pkg-config does not find $pc"
  [ "$got" = "$want" ] || fail "pkg-config --modversion $pc: '$got', expected '$want'"
done
# shellcheck disable=SC2046 # pkg-config's output is a list of flags
"$cc" -std=c11 -Wall -Werror "${cflags[@]}" "$src/tests/install/consumer/main.c" $(pkg-config --cflags --libs cclab) \
  -o "$work/pc_cclab" || fail "main.c does not build with pkg-config cclab: $(pkg-config --cflags --libs cclab)"
readelf -d "$work/pc_cclab" | grep -q 'NEEDED.*\[libcclab.so.0\]' || fail "the pkg-config cclab program does not need libcclab.so.0"
LD_LIBRARY_PATH="$(pkg-config --variable=libdir cclab)" "$work/pc_cclab" "pkg-config cclab" ||
  fail "the program built with pkg-config cclab failed"
# shellcheck disable=SC2046
"$cc" -std=c11 -Wall -Werror "${cflags[@]}" "$src/tests/install/consumer/main.c" $(pkg-config --cflags --libs nccl) \
  -Wl,-rpath,"$(pkg-config --variable=libdir nccl)" -o "$work/pc_nccl" ||
  fail "main.c does not build with pkg-config nccl: $(pkg-config --cflags --libs nccl)"
readelf -d "$work/pc_nccl" | grep -q 'NEEDED.*\[libnccl.so.2\]' || fail "the pkg-config nccl program does not need libnccl.so.2"
"$work/pc_nccl" "pkg-config nccl" || fail "the program built with pkg-config nccl failed"

# ---- 4. a custom algorithm plugin against the installed headers --------------------------------------
cxx="${CCLAB_TEST_CXX:-c++}"
"$cxx" -std=c++17 -O1 -shared -fPIC -I"$(pkg-config --variable=includedir cclab)/cclab" \
  "$src/docs/examples/algorithms/two_shot.cc" -o "$work/two_shot.so" ||
  fail "docs/examples/algorithms/two_shot.cc does not build against the installed include/cclab/kernels"
out="$(CCLAB_ALGO_PLUGIN="$work/two_shot.so" NCCL_ALGO=TwoShot "$prefix/bin/cclab" perf all_reduce -b 4K -e 4K -g 3 2>&1)" ||
  fail "bin/cclab perf with the installed-header plugin failed:"$'\n'"$out"
grep -q "Out of bounds values : 0 OK" <<<"$out" || fail "the plugin's all_reduce has wrong values:"$'\n'"$out"
echo "custom algorithm plugin built against the installed headers: all_reduce on 3 ranks, no wrong values"
