#!/usr/bin/env bash
# tests/labs/lab05_check_test.sh CASE CCLAB SOURCE_DIR WORK_DIR - `cclab lab check 05` (Topology and
# channels) fails where it should, with the hint it should give, and passes the reference solution.
# One ctest entry per CASE (label labs); each takes well under a second:
#   skeleton   the skeleton as committed: the XML loads and is the README's server, but its ring crosses
#              SYS twice (both NICs on socket 0) and finds 1 channel instead of 2; every answer is missing
#   malformed  the skeleton cut in the middle: the loader's file:line message, the other checks skipped
#   moved      the solution with a GPU moved to the other socket: the inventory check says so
#   solution   labs/solutions/05-topology-channels passes every check; `lab run 05` shows 1 crossing
#   answers    the solution with wrong answers: those checks fail, the others pass
# The last three need labs/solutions/ (tests/labs/CMakeLists.txt adds them only when it exists).
set -u
case="$1" cclab="$2" src="$3" work="$4/lab05-$case"
lab="$src/labs/05-topology-channels"
solution="$src/labs/solutions/05-topology-channels"
rm -rf "$work"
mkdir -p "$work"
out="$work/out.txt"

labnum=05 student_file=machine.xml
# shellcheck source=tests/labs/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

case "$case" in
  skeleton)
    check "$(skeleton)"
    expect_rc 1
    expect "2 of 11 checks pass"
    expect "the README's server: 2 sockets x 4 GPUs, 2 NICs pass"
    expect "channel 0 (NET/0 GPU/0 GPU/1 GPU/2 GPU/3 GPU/4 GPU/5 GPU/6 GPU/7 NET/0) crosses SYS 2 times in machine 0"
    expect "when both NICs hang off the same socket"
    expect "ring graph: 1 channel(s) x 10.0 GB/s = 10.0 GB/s; the server built by cclab (pcie-8gpu-2socket:2) gets 2 x 10.0 = 20.0 GB/s"
    expect "no answer for 'h100_channels' yet"
    ;;
  malformed)
    dir="$(skeleton)"
    head -n 20 "$dir/machine.xml" >"$dir/cut.xml" && mv "$dir/cut.xml" "$dir/machine.xml"
    check "$dir"
    expect_rc 1
    expect "machine.xml:20: truncated XML"
    expect "the loader's message names the line"
    expect "skipped: machine.xml did not load"
    ;;
  moved)
    mkdir -p "$work/moved"
    cp "$solution/answers.txt" "$work/moved/"
    python3 - "$solution/machine.xml" "$work/moved/machine.xml" <<'PY' || fail "could not edit the solution"
import sys, re
text = open(sys.argv[1]).read()
gpu = re.search(r'      <pci busid="0000:3e:00.0".*?</pci>\n', text, re.S)
if not gpu:
    sys.exit("the solution no longer has GPU 0000:3e:00.0")
text = text.replace(gpu.group(0), "")
anchor = '        <gpu dev="7" sm="80" rank="-1" gdr="1"/>\n      </pci>\n'
if anchor not in text:
    sys.exit("the solution no longer has GPU 7")
open(sys.argv[2], "w").write(text.replace(anchor, anchor + gpu.group(0)))
PY
    check "$work/moved"
    expect_rc 1
    expect "CPU 0 has 3 GPUs; the README's server has 4 on each socket"
    ;;
  solution)
    check "$solution"
    expect_rc 0
    expect "11 of 11 checks pass"
    expect "Lab 05 is done"
    expect "ring graph: 2 channel(s) x 10.0 GB/s = 20.0 GB/s, as on the server built by cclab"
    "$cclab" lab run 05 --dir "$solution" --work "$work" >"$out" 2>&1 || fail "lab run failed"
    expect "channel 0: NET/0 GPU/0 GPU/1 GPU/2 GPU/3 GPU/7 GPU/6 GPU/5 GPU/4 NET/1: 1 (GPU/3 -> GPU/7)"
    ;;
  answers)
    mkdir -p "$work/answers"
    cp "$solution/machine.xml" "$work/answers/"
    sed -e 's/^h100_channels = .*/h100_channels = 24/' -e 's/^pcie_ring_order = .*/pcie_ring_order = 0 1 2 3 4 5 6 7/' \
      -e 's/^pcie_busbw = .*/pcie_busbw = 20/' "$solution/answers.txt" >"$work/answers/answers.txt"
    check "$work/answers"
    expect_rc 1
    expect "8 of 11 checks pass"
    expect "ring channels the search finds on dgx-h100: 24 is not right"
    expect "0 1 2 3 4 5 6 7 is not right"
    expect "20 is not within 5% of the grader's value"
    ;;
  *)
    echo "lab05_check_test.sh: unknown case $case" >&2
    exit 2
    ;;
esac
echo "ok ($case)"
