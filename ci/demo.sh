#!/usr/bin/env bash
# The main job on the bundled example: installs dependencies, builds (preset `release`, in
# build/), checks examples/tiny and validates it on this machine's CPU: one measured step and
# the train -> checkpoint -> SIGKILL -> restore -> resume round trip, report in
# build/tiny-report.json.
set -euo pipefail
cd "$(dirname "$0")/.."
ci/deps.sh
cmake --preset release
cmake --build --preset release -j "$(nproc)"
build/bin/trainlock check examples/tiny
build/bin/trainlock validate examples/tiny --out build/tiny-report.json
