#!/usr/bin/env bash
# tests/runtime/doctor_test.sh PROG CCLAB - the staged hangs of issue 22 end in seconds, with default
# settings, each with the doctor's verdict (core/doctor.h): 0.05-1.5 s on an idle machine; the bound is 30 s, half
# of the 60 s after which the run is killed as a hang); a late rank is reported and then completes;
# SIGUSR1 and `cclab doctor` print the board of a stuck job. PROG is doctor_prog, CCLAB the cclab tool.
set -u
prog=$1
cclab=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; sed 's/^/    /' "$work/out" | cut -c1-400; failures=$((failures + 1)); }

# run NAME MODE KIND LIMIT_S: doctor_prog with NCCL_DEBUG and CCLAB_TIMEOUT unset; must end in LIMIT_S.
run() {
  local name=$1 mode=$2 kind=$3 limit=$4
  local start=$SECONDS
  env -u NCCL_DEBUG -u NCCL_DEBUG_SUBSYS -u CCLAB_TIMEOUT -u CCLAB_STUCK_WARN -u CCLAB_DOCTOR \
    timeout 60 "$prog" "$mode" "$kind" >"$work/out" 2>&1
  rc=$?
  took=$((SECONDS - start))
  [ "$rc" = 0 ] || fail "$name: exited $rc (124: a hang)"
  [ "$took" -le "$limit" ] || fail "$name: took $took s, more than $limit"
}
expect() {  # NAME PATTERN: a line of the output matches
  grep -q -- "$2" "$work/out" || fail "$1: no line matching '$2'"
}
count_errors() {  # NAME N: N rank lines end with an error
  local n
  n=$(grep -c "^rank [0-3]: \(invalid usage\|remote process\)" "$work/out")
  [ "$n" = "$2" ] || fail "$1: $n ranks returned an error, expected $2"
}

for kind in procs threads; do
  # A count mismatch and a different collective: found by the sizes at once; the report shows what
  # every rank called.
  run "$kind count" count "$kind" 30
  count_errors "$kind count" 4
  expect "$kind count" "same count and datatype"
  expect "$kind count" "doctor: collective #0 differs between ranks: .*rank 3 called all_reduce(524288 x float32, sum)"
  expect "$kind count" "doctor: collective #0 differs between ranks: .*ranks\\? [0-9, -]* called all_reduce(1048576 x float32, sum)"
  run "$kind coll" coll "$kind" 30
  count_errors "$kind coll" 4
  expect "$kind coll" "doctor: collective #0 differs between ranks: rank 3 called all_gather(1048576 x float32); ranks\? [0-9, -]* called all_reduce(1048576 x float32, sum)"
  # A rank that destroys its communicator without calling: the others end with the verdict.
  run "$kind left" left "$kind" 30
  count_errors "$kind left" 3
  # (a process that left may also have ended by then: either way the others say it left)
  expect "$kind left" "^rank [0-2]: invalid usage.*rank 3 \\(left the communicator .* without calling collective #0, all_reduce(1048576 x float32, sum)\\|(pid [0-9]*) left the communicator\\)"
  expect "$kind left" "doctor: rank 3 left the communicator"
  expect "$kind left" "rank 3 (pid [0-9]*): left"
done

# The same where the others wait for rank 3 to connect (a 4-byte all_reduce: its protocol connects at
# its first call): the connection wait is on the board too.
run "left-small" left-small procs 30
count_errors "left-small" 3
expect "left-small" "doctor: rank 3 left the communicator"
expect "left-small" "waits for rank 3 to connect on channel 0"
run "threads left-small" left-small threads 30
count_errors "threads left-small" 3
expect "threads left-small" "^rank [0-2]: invalid usage.*rank 3 left the communicator"

# A dead process (SHM peers): found by watching the peer's process, no CCLAB_TIMEOUT.
run "dead" dead procs 30
count_errors "dead" 3
expect "dead" "^rank [0-2]: remote process.*rank 3 (pid [0-9]*) died"
expect "dead" "doctor: rank 3 (pid [0-9]*) died"

# A late rank (8 s) is not an error: the report names it after CCLAB_STUCK_WARN, SIGUSR1 prints the
# board again, `cclab doctor` reads it from outside; then the all_reduce completes right.
env -u NCCL_DEBUG -u CCLAB_TIMEOUT CCLAB_STUCK_WARN=2 timeout 60 "$prog" missing procs >"$work/out" 2>&1 &
job=$!
sleep 3.5
"$cclab" doctor >"$work/doctor" 2>&1
doctor_rc=$?
rank0=$(pgrep -P "$(pgrep -P $job -f "$prog" | head -1)" 2>/dev/null | head -1)
[ -n "$rank0" ] && kill -USR1 "$rank0"
wait $job
rc=$?
[ "$rc" = 0 ] || fail "missing: exited $rc"
[ "$(grep -c 'sum right' "$work/out")" = 4 ] || fail "missing: not every rank got the right sum once rank 3 came"
expect "missing" "doctor: rank 3 has not called collective #0, all_reduce(1048576 x float32, sum)"
expect "missing" "rank 0 (pid [0-9]*): in op #0, collective #0: all_reduce(1048576 x float32, sum), Ring/Simple"
expect "missing" "waits for data from rank 3 on channel 0"
if [ -n "$rank0" ]; then expect "missing" "doctor: SIGUSR1: rank 3 has not called"; else fail "missing: found no rank process to signal"; fi
[ "$doctor_rc" = 1 ] || { cp "$work/doctor" "$work/out"; fail "cclab doctor: exit $doctor_rc, expected 1 (stuck)"; }
grep -q "verdict: rank 3 has not called collective #0" "$work/doctor" || { cp "$work/doctor" "$work/out"; fail "cclab doctor: no verdict naming rank 3"; }

# Two hosts (NCCL_HOSTID: ranks 0-1 and 2-3, NET between them): each host has its own board, and each
# host's report shows every rank - the other host's slots read through its board server.
env -u NCCL_DEBUG -u CCLAB_TIMEOUT DOCTOR_HOSTS=2 CCLAB_STUCK_WARN=2 timeout 60 "$prog" missing procs >"$work/out" 2>&1
[ "$(grep -c 'sum right' "$work/out")" = 4 ] || fail "two hosts: not every rank got the right sum"
[ "$(grep -o 'board /cclab-board-[0-9a-f-]*' "$work/out" | sort -u | wc -l)" = 2 ] || fail "two hosts: expected a report from each host's board"
if grep -q "no status" "$work/out"; then fail "two hosts: a report lacks the other host's ranks"; fi
[ "$(grep -c 'rank 2 (pid [0-9]*): in op #0, collective #0: all_reduce(1048576 x float32, sum)' "$work/out")" = 2 ] ||
  fail "two hosts: rank 2's operation is not in both reports"
[ "$(grep -c 'rank 0 (pid [0-9]*): in op #0, collective #0: all_reduce(1048576 x float32, sum)' "$work/out")" = 2 ] ||
  fail "two hosts: rank 0's operation is not in both reports"

# Threads: the same late rank, reported in-process.
env -u NCCL_DEBUG -u CCLAB_TIMEOUT CCLAB_STUCK_WARN=2 timeout 60 "$prog" missing threads >"$work/out" 2>&1
[ "$(grep -c 'sum right' "$work/out")" = 4 ] || fail "threads missing: not every rank got the right sum"
expect "threads missing" "doctor: rank 3 has not called collective #0"

# The doctor's reports go into the trace (CCLAB_TRACE, a STUK section): a run that ends with a verdict
# still writes its trace, `cclab doctor TRACE` prints the reports, `cclab trace info` mentions them.
doctor_trace() {  # NAME TRACE EXPECTED_RC: cclab doctor TRACE into $work/out
  "$cclab" doctor "$2" >"$work/out" 2>&1
  local rc=$?
  [ "$rc" = "$3" ] || fail "$1: cclab doctor TRACE exited $rc, expected $3"
}
env -u NCCL_DEBUG -u CCLAB_TIMEOUT -u CCLAB_STUCK_WARN -u CCLAB_DOCTOR CCLAB_TRACE="$work/left.cctrace" \
  timeout 60 "$prog" left threads >"$work/out" 2>&1
count_errors "trace left" 3
if [ -s "$work/left.cctrace" ]; then
  doctor_trace "trace left" "$work/left.cctrace" 1
  expect "trace left" "^doctor: rank 3 left the communicator (ncclCommDestroy / ncclCommAbort) without calling collective #0"
  expect "trace left" "^  rank 3 (pid [0-9]*): left"
  expect "trace left" "^  rank 0 (pid [0-9]*): in op #0, collective #0: all_reduce(1048576 x float32, sum)"
  expect "trace left" "the operation could not complete"
  "$cclab" trace info "$work/left.cctrace" >"$work/out" 2>&1 || fail "trace left: cclab trace info failed"
  expect "trace left" "^doctor  *[0-9]* reports\? of stuck waits .*rank 3 left the communicator.*(certain"
else
  fail "trace left: no trace written ($work/left.cctrace)"
fi
env -u NCCL_DEBUG -u CCLAB_TIMEOUT CCLAB_STUCK_WARN=2 CCLAB_TRACE="$work/missing.cctrace" \
  timeout 60 "$prog" missing threads >"$work/out" 2>&1
[ "$(grep -c 'sum right' "$work/out")" = 4 ] || fail "trace missing: not every rank got the right sum"
doctor_trace "trace missing" "$work/missing.cctrace" 1
expect "trace missing" "^doctor: rank 3 has not called collective #0, all_reduce(1048576 x float32, sum)"
expect "trace missing" "waits for data from rank 3 on channel 0"
expect "trace missing" "ranks were waiting (the waits went on)"
env -u NCCL_DEBUG -u CCLAB_TIMEOUT -u CCLAB_STUCK_WARN CCLAB_TRACE="$work/ok.cctrace" \
  timeout 60 "$prog" ok threads >"$work/out" 2>&1
doctor_trace "trace ok" "$work/ok.cctrace" 0
expect "trace ok" "no report of the doctor"
"$cclab" doctor "$work/nonexistent.cctrace" >"$work/out" 2>&1
[ $? = 2 ] || fail "cclab doctor on a missing trace: expected exit 2"

# No misuse, no report; and every board is gone once its job ends.
run "ok" ok procs 30
[ "$(grep -c 'sum right' "$work/out")" = 4 ] || fail "ok: not every rank got the right sum"
if grep -q "doctor:" "$work/out"; then fail "ok: a report without a hang"; fi
# A job's boards are gone when it ends: destroyed communicators, and (exit handlers) communicators a
# program never destroyed; the INFO log names each board. (Other jobs on the host may hold boards of their
# own, so only this run's names are checked.)
for mode in ok nodestroy; do
  for kind in procs threads; do
    env -u CCLAB_DOCTOR NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT timeout 60 "$prog" "$mode" "$kind" >"$work/out" 2>&1
    [ "$(grep -c 'sum right' "$work/out")" = 4 ] || fail "$mode $kind: not every rank got the right sum"
    names=$(grep -o 'status board /cclab-board-[0-9a-f-]*' "$work/out" | sed 's|.*/||' | sort -u)
    [ -n "$names" ] || fail "$mode $kind: the INFO log names no board"
    for n in $names; do
      [ ! -e "/dev/shm/$n" ] || fail "$mode $kind: board $n left behind"
    done
  done
done

[ "$failures" = 0 ] && echo "doctor: all cases passed" && exit 0
exit 1
