#!/usr/bin/env bash
# The fuzz campaign: runs fuzz targets (tests/fuzz) for SECONDS each at nice 19, one after
# another or FUZZ_JOBS at a time, each from a persistent corpus in build/fuzz/campaign/<target>
# (its seeds and recorded findings added first), in libFuzzer's fork mode so that a crash is
# recorded and fuzzing goes on. Every crash, timeout or out-of-memory input is copied to
# tests/fuzz/regressions/<target>/ (where ctest's fuzz runs and fuzz_regression_test.cc
# replay it). What ran is appended to bench/results/<date>-fuzz/runs.tsv and summed per target
# in bench/results/<date>-fuzz/README.md, rewritten after each run, so that a campaign stopped
# early still says honestly what ran.
#
# Usage: bench/fuzz_campaign.sh SECONDS [TARGET...]     (default: every target)
#        FUZZ_JOBS=2 FUZZ_DATE=2026-12-01 bench/fuzz_campaign.sh 3600
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
seconds=$1
shift
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(loaders report gpu_binary safetensors checkpoint registry hub)
jobs=${FUZZ_JOBS:-1}
results=$src/bench/results/${FUZZ_DATE:-$(date -u +%F)}-fuzz
campaign=$src/build/fuzz/campaign
mkdir -p "$results" "$campaign"

nice -n 19 "$src/tests/fuzz/run_fuzz.sh" build "$src" "${CXX:-clang++}" >"$campaign/build.log" 2>&1 ||
  { cat "$campaign/build.log"; exit 1; }

# One target: fuzz, then record seconds, executions, corpus size and findings.
fuzz_one() {
  local target=$1 corpus=$campaign/$target log=$campaign/$target.log
  local artifacts=$src/build/fuzz/artifacts/$target
  "$src/tests/fuzz/run_fuzz.sh" seed "$src" "$target" "$corpus"
  mkdir -p "$artifacts"
  touch "$log.start"  # findings are the artifacts newer than this
  local start=$SECONDS
  nice -n 19 "$src/tests/fuzz/run_fuzz.sh" run "$src" "$target" "$seconds" "$corpus" \
    -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 >"$log" 2>&1 || true
  local ran=$((SECONDS - start))
  # Fork mode's progress lines start "#<executions>:"; the last one is the total.
  local execs
  execs=$(grep -o '^#[0-9]*' "$log" | tail -1 | tr -d '#')
  local size
  size=$(find "$corpus" -type f | wc -l)
  local found=0 f
  mkdir -p "$src/tests/fuzz/regressions/$target"
  for f in $(find "$artifacts" -type f -newer "$log.start" 2>/dev/null); do
    cp "$f" "$src/tests/fuzz/regressions/$target/"
    found=$((found + 1))
  done
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$target" "$ran" "${execs:-0}" "$size" "$found" \
    "$(date -u +%FT%TZ)" >>"$results/runs.tsv"
  rmdir "$src/tests/fuzz/regressions/$target" 2>/dev/null || true
}

write_record() {
  {
    echo "# Fuzz campaign, $(basename "$results" -fuzz)"
    echo
    echo "Machine: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')),"
    echo "$(free -g | awk '/Mem:/ {print $2}') GiB memory, $(uname -sr), shared with other builds; each"
    echo "target ran at nice 19 in libFuzzer's fork mode (one worker), $jobs at a time, from the"
    echo "corpus the earlier runs left (build/fuzz/campaign). Written by bench/fuzz_campaign.sh from"
    echo "runs.tsv (one line per run: target, seconds, executions, corpus size, findings, end)."
    echo
    echo "| target | runs | seconds | hours | executions | corpus (inputs) | crashes, timeouts, OOMs |"
    echo "|---|---:|---:|---:|---:|---:|---:|"
    awk -F'\t' '{ runs[$1]++; secs[$1] += $2; execs[$1] += $3; corpus[$1] = $4; found[$1] += $5 }
      END { for (t in runs) printf "| %s | %d | %d | %.2f | %d | %d | %d |\n",
            t, runs[t], secs[t], secs[t] / 3600, execs[t], corpus[t], found[t] }' \
      "$results/runs.tsv" | sort
    echo
    echo "Findings are copied to tests/fuzz/regressions/<target>/ and replayed by ctest's fuzz.<target>"
    echo "runs and by trainlock_tests' FuzzRegressions tests."
    # What was found and how it was fixed is written by hand in notes.md.
    if [ -f "$results/notes.md" ]; then echo && cat "$results/notes.md"; fi
  } >"$results/README.md"
}

run_target() {
  fuzz_one "$1"
  write_record
}

running=0
for target in "${targets[@]}"; do
  run_target "$target" &
  running=$((running + 1))
  if [ "$running" -ge "$jobs" ]; then
    wait -n
    running=$((running - 1))
  fi
done
wait
write_record
cat "$results/README.md"
