#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs dependencies, builds with ASan/UBSan and
# warnings as errors (preset `test`, in build/), and runs every test through ctest, including
# the bounded libFuzzer runs of every fuzz target (tests/fuzz). The preset sets TRAINLOCK_TESTS
# over what ci/demo.sh's release build left in build/'s cache, and no test found is a failure.
set -euo pipefail
cd "$(dirname "$0")/.."
ci/deps.sh
cmake --preset test
cmake --build --preset test -j "$(nproc)"
ctest --preset test -j "$(nproc)" --timeout 900 --no-tests=error
