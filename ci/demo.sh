#!/usr/bin/env bash
# The main job on the bundled example: installs dependencies, builds (preset `release`, in
# build/) and checks examples/tiny.
set -euo pipefail
cd "$(dirname "$0")/.."
ci/deps.sh
cmake --preset release
cmake --build --preset release -j "$(nproc)"
build/bin/trainlock check examples/tiny
