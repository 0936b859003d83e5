#!/usr/bin/env bash
# The newcomer's path, timed from a fresh clone as the README tells it: `bash ci/demo.sh`
# (compiler cache off, so nothing comes from an earlier build), the quickstart's commands on a
# copy of examples/tiny (init --from-hub and an online lock need the Hub and docker.io, which
# this machine cannot reach: `cp -r examples/tiny` and `lock --offline` stand in, as the
# README's doc-test does), `examples/offline/image-path.sh` with its defaults (build/bin, where
# the demo built), and its `--recheck` in a new shell without SOURCE_DATE_EPOCH. One line per
# step with its wall time goes to stdout; each step's output to LOGDIR/<step>.log.
#
#   bench/newcomer_path.sh REPO CLONE_DIR LOGDIR
set -uo pipefail
repo=$1 clone=$2 logs=$3
mkdir -p "$logs"
logs=$(cd "$logs" && pwd)
step() {  # step NAME COMMAND...: run in the clone, time it, keep its output
  local name=$1; shift
  local start end rc
  start=$(date +%s.%N)
  (cd "$clone" && "$@") >"$logs/$name.log" 2>&1
  rc=$?
  end=$(date +%s.%N)
  printf '%-28s exit %-3s %8.1f s\n' "$name" "$rc" "$(echo "$end - $start" | bc)"
  return $rc
}
echo "== $(date -u +%FT%TZ) $(nproc) CPUs, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
rm -rf "$clone"
git clone -q "$repo" "$clone" || exit 1
echo "   a fresh clone of $repo at $(git -C "$clone" rev-parse --short HEAD)"
export CCACHE_DISABLE=1
step demo bash ci/demo.sh || exit 1
export PATH=$clone/build/bin:$PATH
step quickstart-copy cp -r examples/tiny myproject
step quickstart-lock trainlock lock myproject --offline
step quickstart-check trainlock check myproject
step quickstart-validate trainlock validate myproject --out report.json
step quickstart-gate trainlock gate report.json --lock myproject --allow-unsigned
work=$clone/build/image-path-work
step image-path bash examples/offline/image-path.sh --work "$work"
step image-path-recheck env -u SOURCE_DATE_EPOCH bash -c "bash examples/offline/image-path.sh --recheck '$work'"
echo "== $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg)"
