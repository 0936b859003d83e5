#!/usr/bin/env bash
# Builds the libFuzzer target with clang (preset `fuzz`, in build/fuzz) and runs it for a
# bounded time over a seed corpus made from the examples and tests/bad-input.
# Usage: run_fuzz.sh SOURCE_DIR CLANGXX SECONDS
set -euo pipefail
src=$1 clangxx=$2 seconds=$3
build=$src/build/fuzz
cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER="$clangxx" -DTRAINLOCK_FUZZ=ON -DTRAINLOCK_TESTS=OFF \
  -DTRAINLOCK_VALIDATOR=OFF >"$build.configure.log" 2>&1 || { cat "$build.configure.log"; exit 1; }
cmake --build "$build" --target fuzz_loaders
corpus=$build/corpus
rm -rf "$corpus" && mkdir -p "$corpus"
# Seeds: a selector byte (0 manifest, 1 lock, 2 config) followed by a real file.
n=0
seed() { { printf "\\$(printf '%03o' "$1")"; cat "$2"; } >"$corpus/seed-$n"; n=$((n + 1)); }
for f in "$src"/examples/*/trainlock.toml "$src"/tests/bad-input/*.toml; do [ -f "$f" ] && seed 0 "$f"; done
for f in "$src"/examples/*/trainlock.lock "$src"/tests/bad-input/*.lock; do [ -f "$f" ] && seed 1 "$f"; done
for f in "$src"/examples/*/configs/*.yaml "$src"/tests/bad-input/*.yaml; do [ -f "$f" ] && seed 2 "$f"; done
echo "fuzzing for ${seconds}s from $n seeds"
"$build/bin/fuzz_loaders" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
  -print_final_stats=1 "$corpus"
