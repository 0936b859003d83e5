#!/usr/bin/env bash
# Times ci/demo.sh on a fresh Debian 12: a new root file system made with mmdebstrap (only
# apt, ca-certificates and git in it), this working tree's tracked files copied in, then each
# step of ci/demo.sh in a chroot, timed, on this machine's CPUs. Nothing comes
# from a cache: the packages are downloaded and the build starts with an empty ccache.
# Writes fresh.log and ninja_log.txt to $RESULTS (default bench/results/<date>-demo).
# Needs root and network to Debian's mirror.
#
# Usage: sudo [RESULTS=DIR] bench/demo_fresh.sh [ROOT]   (default ROOT: /tmp/trainlock-demo-root)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
root=${1:-/tmp/trainlock-demo-root}
log=${RESULTS:-$src/bench/results/$(date -u +%F)-demo}/fresh.log
mkdir -p "$(dirname "$log")"
if [ ! -x "$root/usr/bin/apt-get" ]; then
  mmdebstrap --variant=apt --include=ca-certificates,git bookworm "$root"
fi
rm -rf "$root/root/trainlock" && mkdir -p "$root/root/trainlock"
(cd "$src" && git ls-files -z | tar --null -T - -cf - | tar -C "$root/root/trainlock" -xf -)
cp /etc/resolv.conf "$root/etc/resolv.conf"
mountpoint -q "$root/proc" || mount -t proc proc "$root/proc"
mountpoint -q "$root/dev" || mount --bind /dev "$root/dev"
trap 'umount "$root/proc" "$root/dev" 2>/dev/null || true' EXIT
step() {  # step NAME COMMAND: run COMMAND in the chroot's checkout, its wall time logged
  local start end
  start=$(date +%s.%N)
  chroot "$root" bash -c "cd /root/trainlock && ($2) >/tmp/step.log 2>&1" ||
    { tail -30 "$root/tmp/step.log"; exit 1; }
  end=$(date +%s.%N)
  echo "$1: $(echo "$end - $start" | bc) s wall" | tee -a "$log"
}
{
  echo "# ci/demo.sh on a fresh Debian 12 root, $(date -u +%FT%TZ)"
  echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2), $(free -g | awk '/Mem:/ {print $2}') GiB"
  echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$log"
# The steps of ci/demo.sh, one by one so that each is timed.
step deps "ci/deps.sh --demo"
step configure "cmake --preset release"
step build "cmake --build --preset release -j \$(nproc)"
step check "build/bin/trainlock check examples/tiny"
step validate "build/bin/trainlock validate examples/tiny --out build/tiny-report.json"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$log"
chroot "$root" bash -c "cd /root/trainlock && grep -c . build/.ninja_log" | sed 's/^/ninja log lines: /' >>"$log"
cp "$root/root/trainlock/build/.ninja_log" "$(dirname "$log")/ninja_log.txt"
# Per-step compile times, summed by directory (the build's critical parts).
awk -F'\t' 'NR > 1 { d = $2 - $1; p = $4; sub(/\/[^\/]*$/, "", p); s[p] += d; n++; t += d }
  END { printf "build steps: %d, sum of step times %.0f s\n", n, t / 1000
        for (k in s) printf "%7.1f s %s\n", s[k] / 1000, k }' "$root/root/trainlock/build/.ninja_log" |
  sort -rn >>"$log"
cat "$log"
