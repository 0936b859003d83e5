#!/usr/bin/env bash
# The main job on the bundled example: installs what it needs (ci/deps.sh --demo), builds
# only trainlock and trainlock-validate (preset `release`: Release, no sanitizers, no tests,
# GPU sample ops or fuzzers; ccache when installed), checks examples/tiny and validates it on
# this machine's CPU: one measured step and the train -> checkpoint -> SIGKILL -> restore ->
# resume round trip, report in build/tiny-report.json. Timed in bench/results/*-demo/.
set -euo pipefail
cd "$(dirname "$0")/.."
ci/deps.sh --demo
cmake --preset release
cmake --build --preset release -j "$(nproc)"
build/bin/trainlock check examples/tiny
build/bin/trainlock validate examples/tiny --out build/tiny-report.json
