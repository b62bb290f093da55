# tests/labs/lib.sh - sourced by the labs' check tests (labNN_check_test.sh): running `cclab lab check`
# and asserting on its output. The sourcing script sets case, cclab, src, work, out, labnum (e.g. 04),
# lab (the lab's folder), solution (the reference solution's folder) and student_file (the file a
# student edits).

fail() {
  echo "FAIL ($case): $*"
  echo "--- output of the last command:"
  cat "$out"
  exit 1
}
# check DIR [ARGS]: `cclab lab check $labnum` on the student files in DIR; sets rc and seconds.
check() {
  local dir="$1"
  shift
  local t0=$SECONDS
  "$cclab" lab check "$labnum" --dir "$dir" --work "$work" "$@" >"$out" 2>&1
  rc=$?
  seconds=$((SECONDS - t0))
}
# check_seconds NAME: the time column of the check NAME in the table ("" when there is no such row).
check_seconds() {
  awk -v name="$1" '
    { line = $0; sub(/^ *[0-9]+  /, "", line) }
    index(line, name) == 1 && match(line, /(pass|FAIL|skip) +[0-9.]+ s$/) {
      t = substr(line, RSTART); sub(/^[a-zA-Z]+ +/, "", t); sub(/ s$/, "", t); print t; exit
    }' "$out"
}
# ends_within NAME LIMIT: the check NAME ended at its time limit of LIMIT seconds, by its own time in the
# table (plus 2 s for the grader's kill and reap). Not the whole run's time: that also counts the compiler
# and the simulator checks, which no limit bounds and which a loaded machine makes several times slower.
ends_within() {
  local t
  t="$(check_seconds "$1")"
  [[ -n "$t" ]] || fail "no row for the check '$1' in the table"
  awk -v t="$t" -v l="$2" 'BEGIN { exit !(t <= l + 2) }' ||
    fail "the check '$1' took $t s; the hang must end at its time limit ($2 s)"
}
# The output contains $1, with runs of blanks and line breaks as one blank (the table wraps long lines).
expect() {
  local flat want
  flat="$(tr '\n' ' ' <"$out" | tr -s ' ')"
  want="$(printf '%s' "$1" | tr '\n' ' ' | tr -s ' ')"
  [[ "$flat" == *"$want"* ]] || fail "the output lacks: $1"
}
# The output does not contain $1 (runs of blanks and line breaks as one blank, as expect).
expect_absent() {
  local flat want
  flat="$(tr '\n' ' ' <"$out" | tr -s ' ')"
  want="$(printf '%s' "$1" | tr '\n' ' ' | tr -s ' ')"
  [[ "$flat" != *"$want"* ]] || fail "the output contains: $1"
}
expect_rc() { [[ $rc == "$1" ]] || fail "exit status $rc, want $1"; }
# solution_variant DIR OLD NEW: a copy of the solution in $work/DIR whose $student_file has OLD replaced
# by NEW (fails when the solution no longer contains OLD), with the solution's answers.
solution_variant() {
  local dir="$work/$1" old="$2" new="$3"
  mkdir -p "$dir"
  cp "$solution/answers.txt" "$dir/"
  python3 - "$solution/$student_file" "$dir/$student_file" "$old" "$new" <<'PY' || fail "could not edit the solution"
import sys
src, dst, old, new = sys.argv[1:5]
text = open(src).read()
if old not in text:
    sys.exit("the solution no longer contains: " + old)
open(dst, "w").write(text.replace(old, new))
PY
}
# The skeleton as committed (a student may have edited the working tree's copy), else the working
# tree's: $student_file and answers.txt in $work/skeleton; prints that folder.
skeleton() {
  local dir="$work/skeleton" f
  mkdir -p "$dir"
  for f in "$student_file" answers.txt; do
    git -C "$src" show "HEAD:labs/$(basename "$lab")/$f" >"$dir/$f" 2>/dev/null || cp "$lab/$f" "$dir/$f"
  done
  echo "$dir"
}
