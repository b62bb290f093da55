#!/usr/bin/env bash
# tests/gpu/shards_test.sh BINARY FILTER... - the GPU test binary's ctest entries (tests/gpu/CMakeLists.txt),
# checked without a GPU: each entry's gtest filter selects at least one test, and together the entries
# run every test of the binary exactly once (a renamed test can neither vanish nor run twice).
set -euo pipefail
bin="${1:?usage: shards_test.sh BINARY FILTER...}"
shift
# gtest's listing: "Suite." lines, then "  Test" lines (a comment may follow a parameterised name).
list() {
  "$bin" --gtest_list_tests "$@" | awk '/^[^ ]/ { suite = $1 } /^  / { print suite $1 }'
}
all=$(list | sort)
[ -n "$all" ] || { echo "FAILED: $bin lists no tests"; exit 1; }
picked=""
for f in "$@"; do
  got=$(list --gtest_filter="$f")
  [ -n "$got" ] || { echo "FAILED: the filter '$f' selects no test"; exit 1; }
  picked+="$got"$'\n'
done
picked=$(printf '%s' "$picked" | sed '/^$/d' | sort)
twice=$(printf '%s\n' "$picked" | uniq -d)
[ -z "$twice" ] || { echo "FAILED: run by two entries: $twice"; exit 1; }
missing=$(comm -23 <(printf '%s\n' "$all") <(printf '%s\n' "$picked"))
[ -z "$missing" ] || { echo "FAILED: run by no entry: $missing"; exit 1; }
echo "PASSED: $# entries run each of the $(printf '%s\n' "$all" | wc -l) tests once"
