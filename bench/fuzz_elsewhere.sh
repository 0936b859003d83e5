#!/usr/bin/env bash
# Fuzzing on a machine without clang (the device machine: many cores, no compiler for
# libFuzzer): `pack` builds the fuzz targets here and packs them, stripped, with the two
# libraries that machine lacks (Debian's yaml-cpp 0.7 and toml++) into .fuzzbin/fuzzbin.tar.xz
# and the corpora grown so far (build/fuzz/campaign) into .fuzzbin/corpus.tar.xz (git-ignored;
# carry .fuzzbin); `run` unpacks them there and runs bench/fuzz_campaign.sh with every
# target (or FUZZ_TARGETS) at once, then packs the record and any findings into $OUT/fuzz.tar to bring back
# (unpack it in the repository root: bench/results/<date>-fuzz and tests/fuzz/regressions) and
# the grown corpora into $OUT/corpus.tar.xz (build/fuzz/campaign) when under 15 MiB.
#
# Usage: bench/fuzz_elsewhere.sh pack
#        FUZZ_WORKERS=4 [FUZZ_TARGETS="pep503 pep691"] OUT=DIR bench/fuzz_elsewhere.sh run SECONDS
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
pack=$src/.fuzzbin/fuzzbin.tar.xz
case ${1:-} in
  pack)
    "$src/tests/fuzz/run_fuzz.sh" build "$src" "${CXX:-clang++}"
    stage=$(mktemp -d)
    mkdir -p "$stage/lib" "$src/.fuzzbin"
    for b in "$src"/build/fuzz/bin/fuzz_*; do strip -o "$stage/$(basename "$b")" "$b"; done
    for lib in libyaml-cpp.so.0.7 libtomlplusplus.so.3; do
      cp -L "/usr/lib/$(gcc -print-multiarch)/$lib" "$stage/lib/"
    done
    tar -C "$stage" -cJf "$pack" .
    rm -rf "$stage"
    # The grown corpora too, so that the next run goes on from them.
    if [ -d "$src/build/fuzz/campaign" ]; then
      (cd "$src" && tar -cJf .fuzzbin/corpus.tar.xz --exclude='*.log*' build/fuzz/campaign)
    fi
    ls -l "$pack"
    ;;
  run)
    seconds=$2
    bin=$src/build/fuzz/prebuilt
    rm -rf "$bin" && mkdir -p "$bin" && tar -C "$bin" -xJf "$pack"
    # The corpora an earlier run grew, when carried (`pack` puts them beside the binaries).
    if [ -f "$src/.fuzzbin/corpus.tar.xz" ]; then tar -C "$src" -xJf "$src/.fuzzbin/corpus.tar.xz"; fi
    export LD_LIBRARY_PATH=$bin/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    # FUZZ_TARGETS (a space-separated list) fuzzes only those, all at once.
    read -ra chosen <<<"${FUZZ_TARGETS:-}"
    FUZZ_BIN=$bin FUZZ_JOBS=${FUZZ_JOBS:-11} FUZZ_WORKERS=${FUZZ_WORKERS:-4} \
      "$src/bench/fuzz_campaign.sh" "$seconds" "${chosen[@]}" || true
    # The findings' folder only when a run made it.
    (cd "$src" && found=() && { [ ! -d tests/fuzz/regressions ] || found=(tests/fuzz/regressions); } &&
      tar -cf "${OUT:?}/fuzz.tar" bench/results/*-fuzz "${found[@]}")
    # The grown corpora, to go on from (build/fuzz/campaign), when small enough to come back.
    (cd "$src" && tar -cJf "$OUT/corpus.tar.xz" --exclude='*.log*' build/fuzz/campaign)
    [ "$(stat -c %s "$OUT/corpus.tar.xz")" -lt $((15 << 20)) ] || rm "$OUT/corpus.tar.xz"
    ;;
  *)
    echo "usage: bench/fuzz_elsewhere.sh pack | run SECONDS" >&2
    exit 2
    ;;
esac
