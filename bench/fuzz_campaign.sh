#!/usr/bin/env bash
# The fuzz campaign: runs fuzz targets (tests/fuzz) for SECONDS each at nice 19, FUZZ_JOBS
# targets at a time with FUZZ_WORKERS libFuzzer workers each (fork mode, so that a crash is
# recorded and fuzzing goes on), each from a persistent corpus in build/fuzz/campaign/<target>
# (its seeds and recorded findings added first). Every crash, timeout or out-of-memory input
# is copied to tests/fuzz/regressions/<target>/ (where ctest's fuzz runs and
# fuzz_regression_test.cc replay it). What ran is appended to bench/results/<date>-fuzz/runs.tsv
# and summed per target in bench/results/<date>-fuzz/README.md, rewritten after each run, so
# that a campaign stopped early still says honestly what ran.
#
# Hours are CPU hours, measured (the user and system time of the target's processes, read by
# the shell that waited for them), not wall time times workers: a worker starved by other work
# on the machine does not count as fuzzing.
#
# Usage: bench/fuzz_campaign.sh SECONDS [TARGET...]     (default: every target)
#        FUZZ_JOBS=7 FUZZ_WORKERS=4 FUZZ_DATE=2026-12-01 bench/fuzz_campaign.sh 3600
#        FUZZ_BIN=DIR: use fuzz_<target> executables built elsewhere instead of building here
#          (for a machine without clang: the device machine runs binaries built on the CPU one).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
seconds=$1
shift
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(loaders report gpu_binary safetensors checkpoint checkpoint_state registry hub pep503 pep691
  metadata debian_index layer)
jobs=${FUZZ_JOBS:-1}
workers=${FUZZ_WORKERS:-1}
results=$src/bench/results/${FUZZ_DATE:-$(date -u +%F)}-fuzz
campaign=$src/build/fuzz/campaign
mkdir -p "$results" "$campaign"
machine="$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(uname -r)"

if [ -z "${FUZZ_BIN:-}" ]; then
  nice -n 19 "$src/tests/fuzz/run_fuzz.sh" build "$src" "${CXX:-clang++}" >"$campaign/build.log" 2>&1 ||
    { cat "$campaign/build.log"; exit 1; }
fi

# CPU seconds (user + system) from the second line of a file `times` wrote: this shell's
# waited-for children. `times` itself runs in fuzz_one's shell, never in a pipe or $(...), whose
# subshell has other children.
cpu_seconds_in() {
  sed -n 2p "$1" | awk '{ n = 0
    for (i = 1; i <= 2; i++) { split($i, p, /[ms]/); n += p[1] * 60 + p[2] }
    printf "%d", n }'
}

# One target: fuzz, then record seconds, CPU seconds, executions, corpus size and findings.
fuzz_one() {
  local target=$1
  local corpus=$campaign/$target log=$campaign/$target.log
  local artifacts=$src/build/fuzz/artifacts/$target
  "$src/tests/fuzz/run_fuzz.sh" seed "$src" "$target" "$corpus"
  mkdir -p "$artifacts"
  touch "$log.start"  # findings are the artifacts newer than this
  local start=$SECONDS cpu_before
  times >"$log.times"
  cpu_before=$(cpu_seconds_in "$log.times")
  nice -n 19 "$src/tests/fuzz/run_fuzz.sh" run "$src" "$target" "$seconds" "$corpus" \
    -fork="$workers" -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 >"$log" 2>&1 || true
  times >"$log.times"
  local ran=$((SECONDS - start)) cpu=$(($(cpu_seconds_in "$log.times") - cpu_before))
  # Fork mode's progress lines start "#<executions>:"; the last one is the total.
  local execs
  execs=$(grep -o '^#[0-9]*' "$log" | tail -1 | tr -d '#')
  local size
  size=$(find "$corpus" -type f | wc -l)
  local found=0 f
  mkdir -p "$src/tests/fuzz/regressions/$target"
  while IFS= read -r -d '' f; do
    cp "$f" "$src/tests/fuzz/regressions/$target/"
    found=$((found + 1))
  done < <(find "$artifacts" -type f -newer "$log.start" -print0 2>/dev/null)
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$target" "$ran" "$workers" "$cpu" "${execs:-0}" \
    "$size" "$found" "$(date -u +%FT%TZ)" "$machine" >>"$results/runs.tsv"
  rmdir "$src/tests/fuzz/regressions/$target" 2>/dev/null || true
}

write_record() {
  {
    echo "# Fuzz campaign, $(basename "$results" -fuzz)"
    echo
    echo "Written by bench/fuzz_campaign.sh from runs.tsv, one line per run: target, wall seconds,"
    echo "libFuzzer workers (fork mode), CPU seconds, executions, corpus size, findings, end, machine."
    echo "Every run is at nice 19 from the corpus the earlier runs on that machine left."
    echo "Hours are measured CPU hours of the target's processes (user + system)."
    echo
    echo "| target | runs | wall seconds | CPU hours | executions | corpus (inputs) | crashes, timeouts, OOMs |"
    echo "|---|---:|---:|---:|---:|---:|---:|"
    awk -F'\t' '{ runs[$1]++; secs[$1] += $2; cpu[$1] += $4; execs[$1] += $5; corpus[$1] = $6; found[$1] += $7 }
      END { for (t in runs) printf "| %s | %d | %d | %.2f | %d | %d | %d |\n",
            t, runs[t], secs[t], cpu[t] / 3600, execs[t], corpus[t], found[t] }' \
      "$results/runs.tsv" | sort
    echo
    echo "Machines:"
    echo
    cut -f9 "$results/runs.tsv" | sort | uniq -c | sed 's/^ *\([0-9]*\) /- \1 runs on: /'
    echo
    echo "Findings are copied to tests/fuzz/regressions/<target>/ and replayed by ctest's fuzz.<target>"
    echo "runs and by trainlock_tests' FuzzRegressions tests."
    # What was found and how it was fixed is written by hand in notes.md.
    if [ -f "$results/notes.md" ]; then echo && cat "$results/notes.md"; fi
  } >"$results/README.md.tmp"
  mv "$results/README.md.tmp" "$results/README.md"
}

run_target() {
  fuzz_one "$1"
  # Runs finishing together rewrite the record one at a time.
  flock "$results/.lock" bash -c "$(declare -f write_record); results='$results' write_record"
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
rm -f "$results/.lock"
cat "$results/README.md"
