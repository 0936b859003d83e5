#!/usr/bin/env bash
# The golden digest's negative control, repeated: ROUNDS rounds (default 20) of four simulated
# nodes validating a fresh copy of examples/tiny on the CPU (`--only train.roundtrip`), one of
# them under `--negative-control bitflip` (the flipped node moves from round to round), then
# `trainlock fleet summarize --json` of the round's four reports. A round passes when the
# summary names the flipped node as computing differently, and no other. The suite runs one
# round (tests/validator/golden_bitflip_test.cc); twenty are too slow for it.
# Writes rounds.log and README.md to $RESULTS (default bench/results/<date>-golden-bitflip).
#
# Usage: [RESULTS=DIR] [BIN=build/bin] bench/golden_bitflip.sh [ROUNDS]
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
bin=${BIN:-$src/build/bin}
rounds=${1:-20}
results=${RESULTS:-$src/bench/results/$(date -u +%F)-golden-bitflip}
mkdir -p "$results"
log=$results/rounds.log
: >"$log"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
nodes=(node-1 node-2 node-3 node-4)

validate() {  # validate ROUND NODE FLIP: one node's validation; its report in reports/NODE.json
  local dir=$work/$1/$2
  mkdir -p "$dir"
  cp -r "$src/examples/tiny/." "$dir/"
  local extra=()
  if [ "$3" = 1 ]; then extra=(--negative-control bitflip); fi
  TRAINLOCK_NODE_NAME=$2 TMPDIR=$dir "$bin/trainlock" validate "$dir" --threads 1 \
    --only train.roundtrip --out "$work/$1/reports/$2.json" "${extra[@]}" -q >/dev/null 2>&1 || true
}

passed=0
for ((round = 1; round <= rounds; round++)); do
  flipped=${nodes[$(((round - 1) % 4))]}
  mkdir -p "$work/$round/reports"
  start=$(date +%s)
  for pair in "0 1" "2 3"; do  # two at a time
    read -r a b <<<"$pair"
    validate "$round" "${nodes[$a]}" "$([ "${nodes[$a]}" = "$flipped" ] && echo 1 || echo 0)" &
    validate "$round" "${nodes[$b]}" "$([ "${nodes[$b]}" = "$flipped" ] && echo 1 || echo 0)"
    wait
  done
  named=$("$bin/trainlock" fleet summarize "$work/$round/reports" --json |
    python3 -c 'import json,sys; g=json.load(sys.stdin)["golden"]; print(",".join(n for k in g for n in k["differing"]) if len(g)==1 and len(g[0]["nodes"])==4 else "(not one key of four nodes)")' ||
    true)
  verdict=fail
  if [ "$named" = "$flipped" ]; then verdict=pass; passed=$((passed + 1)); fi
  echo "round $round: flipped $flipped, named ${named:-none}: $verdict ($(($(date +%s) - start)) s)" |
    tee -a "$log"
done
{
  echo "# Golden digest negative control: $passed of $rounds rounds"
  echo
  echo "\`bench/golden_bitflip.sh $rounds\` on $(nproc) CPUs, $(date -u +%FT%TZ), commit $(git -C "$src" rev-parse --short HEAD)."
  echo "Each round: four validations of examples/tiny (--only train.roundtrip), one with"
  echo "--negative-control bitflip; a round passes when fleet summarize names exactly that node."
  echo
  sed 's/^/    /' "$log"
} >"$results/README.md"
echo "$passed of $rounds rounds named the flipped node and no other"
[ "$passed" = "$rounds" ]
