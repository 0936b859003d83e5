#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (in build/fuzz) and runs them for a bounded time.
# A run starts from a corpus of the target's seeds (tests/fuzz/seeds/<target>; the loaders
# also get the examples and tests/bad-input, the report target the report fixtures) plus
# every recorded finding (tests/fuzz/regressions/<target>), so that a finding that comes back
# fails at once. Crash, timeout and out-of-memory inputs land in build/fuzz/artifacts/<target>/.
#
# Usage: run_fuzz.sh build SOURCE_DIR CLANGXX
#        run_fuzz.sh seed SOURCE_DIR TARGET CORPUS_DIR     (adds the seeds to CORPUS_DIR)
#        run_fuzz.sh run SOURCE_DIR TARGET SECONDS [CORPUS_DIR [LIBFUZZER_OPTIONS...]]
#          (without CORPUS_DIR: a fresh build/fuzz/corpus/<target>)
# FUZZ_BIN names a folder of fuzz_<target> executables built elsewhere (default build/fuzz/bin).
set -euo pipefail
mode=$1 src=$2
build=$src/build/fuzz
bin=${FUZZ_BIN:-$build/bin}

seed_corpus() {
  local target=$1 corpus=$2 n=0
  mkdir -p "$corpus"
  # The loaders' seeds: a selector byte (0 manifest, 1 lock, 2 config) and a real file.
  seed_with() {
    # The selector byte through printf's %b (an octal escape), never as a format string.
    { printf '%b' "\\0$(printf '%03o' "$1")"; cat "$2"; } >"$corpus/seed-$n"
    n=$((n + 1))
  }
  case $target in
    loaders)
      for f in "$src"/examples/*/trainlock.toml "$src"/tests/bad-input/*.toml; do [ -f "$f" ] && seed_with 0 "$f"; done
      for f in "$src"/examples/*/trainlock.lock "$src"/tests/bad-input/*.lock; do [ -f "$f" ] && seed_with 1 "$f"; done
      for f in "$src"/examples/*/configs/*.yaml "$src"/tests/bad-input/*.yaml; do [ -f "$f" ] && seed_with 2 "$f"; done
      ;;
    report)
      cp "$src"/tests/fixtures/reports/*.json "$corpus"/
      ;;
  esac
  for dir in "$src/tests/fuzz/seeds/$target" "$src/tests/fuzz/regressions/$target"; do
    if [ -d "$dir" ]; then find "$dir" -maxdepth 1 -type f ! -name README.md -exec cp {} "$corpus"/ \;; fi
  done
}

case $mode in
  build)
    clangxx=$3
    mkdir -p "$build"
    # OSS-Fuzz's flags (-O1, line tables only): the one translation unit of trainlock_core
    # compiles in 165 s instead of 237 s at RelWithDebInfo's -O2 -g on 2 CPUs, and crash stacks
    # keep their file and line. NDEBUG as before: third-party asserts stay out of the verdict.
    cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE= \
      -DCMAKE_CXX_FLAGS="-O1 -gline-tables-only -DNDEBUG" \
      -DCMAKE_CXX_COMPILER="$clangxx" -DTRAINLOCK_FUZZ=ON -DTRAINLOCK_TESTS=OFF \
      -DTRAINLOCK_VALIDATOR=OFF >"$build.configure.log" 2>&1 || { cat "$build.configure.log"; exit 1; }
    cmake --build "$build" --target fuzz_targets
    ;;
  seed)
    seed_corpus "$3" "$4"
    ;;
  run)
    target=$3 seconds=$4 corpus=${5:-}
    shift $(($# < 5 ? $# : 5))
    if [ -z "$corpus" ]; then
      corpus=$build/corpus/$target
      rm -rf "$corpus"
      seed_corpus "$target" "$corpus"
    fi
    artifacts=$build/artifacts/$target
    mkdir -p "$artifacts"
    echo "fuzz_$target: ${seconds}s from $(find "$corpus" -type f | wc -l) inputs in $corpus"
    # Inputs up to 64 KiB: enough for every format's structure (a 10,000-deep JSON document
    # is 20 KB), small enough to keep thousands of executions a second.
    "$bin/fuzz_$target" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
      -max_len=65536 -print_final_stats=1 -artifact_prefix="$artifacts/" "$@" "$corpus"
    ;;
  *)
    echo "usage: run_fuzz.sh build|seed|run ..." >&2
    exit 2
    ;;
esac
