#!/bin/bash
# Runs the test suite: cmocka unit binaries (TAP) and black-box TAP scripts, all through prove.
# Usage: PLAUNCH_BUILD=/abs/build scripts/run-tests.sh [unit binaries...]
set -u
cd "$(dirname "$0")/.."
export PLAUNCH_BUILD="${PLAUNCH_BUILD:-$PWD/build}"
export PLAUNCH_SRC="$PWD"
export CMOCKA_MESSAGE_OUTPUT=TAP
# Sanitizer builds: fail on the first report, keep going past known-benign leak noise from libraries.
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:exitcode=99}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1:exitcode=98}"
tests=("$@")
for t in tests/bb/*.t; do [ -e "$t" ] && tests+=("$t"); done
if [ ${#tests[@]} -eq 0 ]; then
    echo "run-tests: no tests found" >&2
    exit 1
fi
exec prove --timer -e '' "${tests[@]}"
