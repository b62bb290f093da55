#!/usr/bin/env bash
# scripts/lab.sh - the labs (labs/README.md) in one command: installs what is missing, builds the `cclab`
# tool alone (the first time: about 3-4 minutes on 2 cores; afterwards seconds), then runs `cclab lab ARGS`.
#
#   scripts/lab.sh                   the labs and where you are (cclab lab list)
#   scripts/lab.sh run 01            run your lab 1 code once
#   scripts/lab.sh check 01          check it: a table of checks, a hint for each failure
#   scripts/lab.sh viz 01            watch the simulated run of your last check (without a display, add
#                                    --screenshot OUT.png: it renders under Xvfb)
#
# cclab itself is build/runtime/cli/cclab: `export PATH="$PWD/build/runtime/cli:$PATH"` and the labs'
# READMEs' commands (`cclab lab check 01`, `cclab sim ...`) work as written.
# Environment: CCLAB_BUILD_DIR (default build/), CCLAB_LABS_WORK (default BUILD/labs: builds, logs, the
# labs' status and course_started, the time this script first ran).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${CCLAB_BUILD_DIR:-$root/build}"
source "$root/scripts/cuda_opts.sh"
# The course's clock: the first time this script runs, before the first build (`cclab lab list` says how
# long lab 1 took to pass from here, the build included).
work="${CCLAB_LABS_WORK:-$build/labs}"
if [ ! -s "$work/course_started" ]; then
  mkdir -p "$work" && date +%s >"$work/course_started"
fi
CCLAB_TARGETS="cclab_cli" "$root/scripts/setup.sh" "$build" "${cuda_opts[@]}" >&2
cclab="$build/runtime/cli/cclab"
(($#)) || set -- list
# A screenshot needs a display; without one, render under Xvfb.
if [ "$1" = "viz" ] && [ -z "${DISPLAY:-}" ] && [[ " $* " == *" --screenshot "* ]] && command -v xvfb-run >/dev/null; then
  exec xvfb-run -a -s "-screen 0 1600x1000x24" "$cclab" lab "$@"
fi
# The labs' READMEs type `cclab`: say how, under the table, while another cclab (or none) is on PATH.
path_hint() {
  [ "$(command -v cclab 2>/dev/null)" = "$cclab" ] ||
    printf '\ncclab is %s: to type `cclab` as the labs do, in this shell and each new one:\n  export PATH="%s:$PATH"\n' \
      "$cclab" "$(dirname "$cclab")" >&2
}
if [ "$1" = "list" ]; then
  rc=0
  "$cclab" lab "$@" || rc=$?
  path_hint
  exit "$rc"
fi
exec "$cclab" lab "$@"
