#!/usr/bin/env bash
# tests/labs/lab_check_test.sh CASE CCLAB SOURCE_DIR WORK_DIR - `cclab lab check 01` can fail, and says
# why; and the reference solution passes. One ctest entry per CASE (label labs):
#   skeleton        the skeleton as committed fails with the skeleton's hint; only the compile check passes
#   json            --json is JSON with every check, its status and hint
#   broken          a file that does not compile: the compiler's error, every other check skipped
#   missing         no file at all: says so, and how to get the skeleton back
#   renamed         the function under another name: compiles, does not load; the hint says to keep the name
#   hang            a ncclRecv without its ncclSend: fails within the time limit, names the wait, the hint
#   spin            an endless loop outside cclab: killed at the time limit ("timed out after 3 s")
#   crash           a write far past recvbuff: "crashed with SIGSEGV", the check after it still runs
#   usage           `cclab lab run --help` (no lab number) prints the usage; a wrong lab number says so
#   solution        labs/solutions/01-ring-allreduce passes every check; `lab list` says passing; `lab run` works
#   timing          `lab list` (and --json) says how long lab 1 took to pass: from scripts/lab.sh's first run
#                   (course_started) or the lab's first run or check, to the first passing check
#   remainder       the solution with chunks that ignore count % n: the TODO 3 hint
#   answers         the solution with wrong answers: those checks fail, the others pass
#   split           the solution with each step in two groups of half a chunk: exact, but check 8 fails
#                   (1.17x the 14 steps of NCCL's send/recv, at most 1.1x) with its hint; ring_busbw (the
#                   solution's answer) fails too
# The last five need labs/solutions/ (tests/labs/CMakeLists.txt adds them only when it exists).
set -u
case="$1" cclab="$2" src="$3" work="$4/$case"
lab="$src/labs/01-ring-allreduce"
solution="$src/labs/solutions/01-ring-allreduce"
students="$src/tests/labs/students"
rm -rf "$work"
mkdir -p "$work"
out="$work/out.txt"

labnum=01 student_file=ring_allreduce.c
# shellcheck source=tests/labs/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
expect_any() {
  local a
  for a in "$@"; do
    (expect "$a") >/dev/null 2>&1 && return 0
  done
  fail "the output lacks all of: $*"
}

case "$case" in
  skeleton)
    check "$(skeleton)"
    expect_rc 1
    expect "recvbuff holds this rank's own input: nothing was received or added (this is what the skeleton"
    expect "1 of 12 checks pass"
    expect "no answer for 'steps' yet"
    expect "skipped: needs your ring to be exact in the simulator"
    ;;
  json)
    check "$(skeleton)" --json
    expect_rc 1
    python3 - "$out" <<'PY' || fail "the JSON is not what it should be"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["lab"] == "01" and j["passed"] is False and j["checks"] == len(j["results"]) == 12, j
assert j["checks_passed"] == 1, j["checks_passed"]
for r in j["results"]:
    assert set(r) >= {"name", "status", "passed", "skipped", "detail", "hint", "seconds"}, r
    assert r["status"] in ("pass", "fail", "skip"), r
    assert r["status"] == "pass" or r["hint"] or r["skipped"], r
assert j["results"][0]["name"] == "compile ring_allreduce.c" and j["results"][0]["passed"]
assert "TODO 1" in j["results"][1]["hint"], j["results"][1]
PY
    ;;
  broken)
    check "$students/broken"
    expect_rc 1
    expect "error: expected"
    expect "fix the first error the compiler reports"
    expect "skipped: your code did not compile"
    expect "0 of 12 checks pass"
    ;;
  missing)
    mkdir -p "$work/empty"
    check "$work/empty"
    expect_rc 1
    expect "ring_allreduce.c does not exist"
    expect "brings the skeleton back"
    expect "there is no answers file"
    ;;
  renamed)
    # The function under another name: it compiles (the header only declares it) but does not load.
    dir="$(skeleton)"
    sed -i 's/^ncclResult_t lab_ring_allreduce(/ncclResult_t my_ring_allreduce(/' "$dir/ring_allreduce.c"
    grep -q '^ncclResult_t my_ring_allreduce(' "$dir/ring_allreduce.c" || fail "the skeleton no longer defines lab_ring_allreduce"
    check "$dir"
    expect_rc 1
    expect "compile ring_allreduce.c pass"
    expect "lab_ring_allreduce"
    expect "keep the function's name and signature as in ring_allreduce.h"
    ;;
  hang)
    check "$students/hang" --timeout 6
    expect_rc 1
    ends_within "host backend, 2 ranks, 7 calls" 6
    # cclab's own wait gives up first (CCLAB_TIMEOUT, half the limit) and names the wait; on a loaded
    # machine the grader's kill may come first.
    expect_any "waiting for data from rank" "your code timed out after 6 s"
    expect "a ncclRecv without its ncclSend"
    expect "skipped: your code hung with 2 ranks"
    expect "the simulated ranks deadlocked"
    ;;
  spin)
    check "$students/spin" --timeout 3
    expect_rc 1
    ends_within "host backend, 2 ranks, 7 calls" 3
    ends_within "simulator: 8 ranks, dgx-h100, 16 MiB, exact" 3
    expect "your code timed out after 3 s at 2 ranks, count 1"
    expect "your code timed out after 3 s at 8 ranks, count 4194304"
    expect "a ncclRecv without its ncclSend"
    ;;
  crash)
    check "$students/crash" --timeout 20
    expect_rc 1
    expect "crashed with SIGSEGV"
    expect "run it alone: cclab lab run 01 --ranks 2 --size 4"
    # ... with the --dir and --work the check was given, so that it runs the same files in the same place.
    tr '\n' ' ' <"$out" | tr -s ' ' | grep -q "run it alone: cclab lab run 01 --ranks 2 --size 4 --dir [^ ]* --work [^ ]* " ||
      fail "the command to run it alone lacks the check's --dir and --work"
    expect "host backend, 3 ranks, 8 calls"
    ;;
  solution)
    check "$solution"
    expect_rc 0
    expect "12 of 12 checks pass"
    expect "Lab 01 is done"
    expect "503.4 us: 1.00x (at most 1.1x)"
    [[ -s "$work/01-ring-allreduce/ring.cctrace" ]] || fail "no trace for cclab lab viz"
    "$cclab" lab list --work "$work" >"$out" 2>&1 || fail "cclab lab list failed"
    expect "passing (12 of 12 checks"
    "$cclab" lab run 01 --dir "$solution" --work "$work" --ranks 3 --size 28 >"$out" 2>&1 || fail "lab run failed"
    expect "rank 2: all 7 elements right"
    ;;
  remainder)
    solution_variant remainder \
      '  *start = uc * base + (uc < extra ? uc : extra);
  *len = base + (uc < extra ? 1 : 0);' \
      '  (void)extra;
  *start = uc * base;
  *len = base;'
    check "$work/remainder"
    expect_rc 1
    expect "only the last count % n elements are wrong, where n does not divide count: chunk_of must cover all"
    expect "right with count 2, 1000, 1000 in place"
    ;;
  answers)
    solution_variant answers "" ""
    sed -i -e 's/^steps = .*/steps = 16/' -e 's/^ring_busbw = .*/ring_busbw = 55.6/' -e 's/^busbw_factor = .*/busbw_factor = fast/' \
      "$work/answers/answers.txt"
    check "$work/answers"
    expect_rc 1
    expect "9 of 12 checks pass"
    expect "steps per rank, 8 ranks: 16 is not right"
    expect "GB/s, your ring in the simulator: 55.6 is not within 2%"
    expect "busbw_factor = 'fast' is not a number"
    ;;
  split)
    # Each ring step as two groups of half the chunk, each with its synchronisation: right, but twice the
    # groups, and each half goes on fewer of NCCL's channels (lab 2's D5).
    solution_variant split \
      '  ncclResult_t r = ncclGroupStart();
  if (r != ncclSuccess) return r;
  ncclResult_t rs = ncclSend(send, send_len, ncclFloat, next, comm, stream);
  ncclResult_t rr = ncclRecv(recv, recv_len, ncclFloat, prev, comm, stream);
  r = ncclGroupEnd();
  if (rs != ncclSuccess) return rs;
  if (rr != ncclSuccess) return rr;
  if (r != ncclSuccess) return r;
  return cclabStreamSynchronize(stream);' \
      '  const size_t hs = send_len / 2, hr = recv_len / 2;
  for (int h = 0; h < 2; ++h) {
    ncclResult_t r = ncclGroupStart();
    if (r != ncclSuccess) return r;
    ncclResult_t rs = ncclSend(send + h * hs, h ? send_len - hs : hs, ncclFloat, next, comm, stream);
    ncclResult_t rr = ncclRecv(recv + h * hr, h ? recv_len - hr : hr, ncclFloat, prev, comm, stream);
    r = ncclGroupEnd();
    if (rs != ncclSuccess) return rs;
    if (rr != ncclSuccess) return rr;
    if (r != ncclSuccess) return r;
    r = cclabStreamSynchronize(stream);
    if (r != ncclSuccess) return r;
  }
  return ncclSuccess;'
    check "$work/split"
    expect_rc 1
    # check 8, and ring_busbw: the answer is the solution's (58.32), of a faster ring
    expect "10 of 12 checks pass"
    expect "simulator: 8 ranks, dgx-h100, 16 MiB, exact pass"
    expect "time at most 1.1x NCCL's send/recv steps FAIL"
    expect "14 steps of NCCL's send/recv of 2 MiB"
    expect "1.17x (at most 1.1x)"
    expect "a step in several groups"
    ;;
  timing)
    # How long lab 1 took to pass: from scripts/lab.sh's first run (course_started, here 30 min 30 s
    # ago), to the first passing check; a later failing check keeps it. Without course_started, from the
    # lab's first run or check.
    echo $(($(date +%s) - 1830)) >"$work/course_started"
    "$cclab" lab run 01 --dir "$(skeleton)" --work "$work" >"$out" 2>&1
    "$cclab" lab list --work "$work" >"$out" 2>&1 || fail "cclab lab list failed"
    expect "01 Ring all_reduce by hand started (run, not checked yet)"
    check "$(skeleton)"
    expect_rc 1
    "$cclab" lab list --work "$work" >"$out" 2>&1
    expect "failing (1 of 12 checks"
    expect_absent "first passed"
    check "$solution"
    expect_rc 0
    check "$(skeleton)"
    expect_rc 1
    "$cclab" lab list --work "$work" >"$out" 2>&1
    expect "failing (1 of 12 checks"
    expect "; first passed 30 min after scripts/lab.sh first ran"
    "$cclab" lab list --work "$work" --json >"$out" 2>&1 || fail "cclab lab list --json failed"
    python3 - "$out" <<'PY' || fail "lab list --json is not what it should be"
import json, sys
j = json.load(open(sys.argv[1]))
l1 = j["labs"][0]
assert l1["lab"] == "01" and l1["passed"] is False and l1["checks_run"] == 3, l1
assert 1830 <= l1["seconds_to_pass"] <= 1830 + 120, l1
assert l1["timed_from"] == "scripts/lab.sh" and l1["first_passed"] - j["course_started"] == l1["seconds_to_pass"], l1
assert l1["started"] <= l1["first_passed"], l1
assert all(l["status"] == "not started" and "seconds_to_pass" not in l for l in j["labs"][1:]), j["labs"][1:]
PY
    rm "$work/course_started"
    "$cclab" lab list --work "$work" >"$out" 2>&1
    expect "; first passed under 1 min after its first \`cclab lab run/check 01\`"
    ;;
  usage)
    # --help before a lab number (or without one) is the usage, exit 0; otherwise a lab number comes first.
    seconds=0
    for args in "run --help" "viz -h" "run --json --help"; do
      # shellcheck disable=SC2086
      "$cclab" lab $args >"$out" 2>&1
      rc=$?
      expect_rc 0
      expect "cclab lab run NN"
      expect_absent "no lab"
    done
    "$cclab" lab run >"$out" 2>&1
    rc=$?
    expect_rc 2
    expect "cclab lab run: which lab?"
    "$cclab" lab run 99 --help >"$out" 2>&1
    rc=$?
    expect_rc 2
    expect "cclab lab run: no lab '99'"
    ;;
  *)
    echo "lab_check_test.sh: unknown case $case" >&2
    exit 2
    ;;
esac
echo "ok ($case, $seconds s)"
