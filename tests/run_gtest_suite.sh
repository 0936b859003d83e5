#!/usr/bin/env bash
# Runs one GoogleTest suite for ctest (cmake/GTestSuites.cmake): BINARY --gtest_filter=SUITE.*,
# its output shown as it comes. Exit 77 (ctest's skip) when the suite passed without running a
# test to its end (every one skipped: a tool or root missing), else the binary's exit code: a
# failure is never reported as a skip.
# Usage: run_gtest_suite.sh BINARY --gtest_filter=SUITE.*
set -uo pipefail
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
if [ "$status" -eq 0 ] && grep -q '^\[  PASSED  \] 0 tests\.' "$log"; then
  exit 77
fi
exit "$status"
