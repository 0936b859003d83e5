#!/usr/bin/env bash
# Issue #63: how long from a kernel line to the node drained. Starts munge, slurmctld and slurmd
# (Debian's slurm-wlm; one node, gpu-001, on 127.0.0.1, as tests/node_gate_test.cc does), runs
# `trainlock watch --revoke slurm` on a FIFO standing in for /dev/kmsg, then EVENTS times: writes
# an Xid 79 record of a new GPU to the FIFO and polls `scontrol show node` until the node is
# drained for that GPU, then resumes it. Prints p50/p90/p99/max of the latency, then the watch's
# RSS and CPU over REST_S seconds at rest. Needs root (slurmd). Not a timed unit test.
#   bash bench/watch_latency.sh [TRAINLOCK] [EVENTS] [REST_S]   (defaults build/bin/trainlock 100 30)
set -euo pipefail
TRAINLOCK=$(realpath "${1:-build/bin/trainlock}")
EVENTS=${2:-100}
REST_S=${3:-30}
NODE=gpu-001
[ "$(id -u)" = 0 ] || { echo "watch_latency.sh: needs root (slurmd)" >&2; exit 2; }
D=$(mktemp -d /tmp/watch-latency.XXXXXX)
PIDS=()
cleanup() {
  SLURM_CONF="$D/slurm.conf" timeout 10 scontrol shutdown >/dev/null 2>&1 || true
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$D"
}
trap cleanup EXIT
trap 'exit 143' INT TERM
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
now_ns() { date +%s%N; }

mkdir -p "$D"/{munge,sock,state,spool,log,reports,watch}
chmod 755 "$D/sock"
head -c 1024 /dev/urandom > "$D/munge/munge.key"
chmod 400 "$D/munge/munge.key"; chmod 700 "$D/munge"
for i in 0 1 2 3 4 5 6 7; do : > "$D/gpu$i"; done
echo "Name=gpu File=$D/gpu[0-7]" > "$D/gres.conf"
HOST=$(hostname -s)
cat > "$D/slurm.conf" <<EOF
ClusterName=bench
GresTypes=gpu
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$D/sock/munge.socket
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
SlurmctldPidFile=$D/slurmctld.pid
SlurmdPidFile=$D/slurmd.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/linear
MpiDefault=none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=1 Gres=gpu:8 State=UNKNOWN
PartitionName=gpu Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$D/slurm.conf"
munged -F --force --key-file="$D/munge/munge.key" --socket="$D/sock/munge.socket" \
  --log-file="$D/log/munged.log" --pid-file="$D/munged.pid" --seed-file="$D/munged.seed" &
PIDS+=($!)
for _ in $(seq 100); do [ -S "$D/sock/munge.socket" ] && break; sleep 0.1; done
slurmctld -D -i -f "$SLURM_CONF" >"$D/log/slurmctld.out" 2>&1 & PIDS+=($!)
slurmd -D -N "$NODE" -f "$SLURM_CONF" >"$D/log/slurmd.out" 2>&1 & PIDS+=($!)
for _ in $(seq 120); do
  scontrol show node "$NODE" 2>/dev/null | grep -q 'State=IDLE' && break; sleep 0.5
done
scontrol show node "$NODE" | grep -q 'State=IDLE' || { echo "the node never came up" >&2; exit 3; }

mkfifo "$D/kmsg"
"$TRAINLOCK" watch --kmsg "$D/kmsg" --watch-state "$D/watch" --node "$NODE" \
  --reports-dir "$D/reports" --revoke slurm --breaker-fraction 1 >"$D/log/watch.out" 2>&1 &
WATCH=$!; PIDS+=("$WATCH")
exec 3>"$D/kmsg"  # held open for the whole run: the FIFO's end would end the watch

latencies=()
for i in $(seq 1 "$EVENTS"); do
  bus=$(printf '%02x' $((i % 256)))
  # printk's clock is CLOCK_MONOTONIC; /proc/uptime counts suspend too, close enough here.
  uptime_us=$(awk '{split($1, t, "."); printf "%s%s0000", t[1], t[2]}' /proc/uptime)
  t0=$(now_ns)
  printf '4,%d,%d,-;NVRM: Xid (PCI:0000:%s:00): 79, pid=1, name=python3, GPU has fallen off the bus.\n' \
    "$((1000 + i))" "$uptime_us" "$bus" >&3
  until scontrol show node "$NODE" | grep -q "Reason=trainlock: revoked gpu 0000:$bus:00 "; do
    sleep 0.005
  done
  t1=$(now_ns)
  latencies+=($(( (t1 - t0) / 1000 )))
  scontrol update NodeName="$NODE" State=RESUME
  sleep 2.1  # the next event is more than the watch's 2 s same-event slack later
done

printf '%s\n' "${latencies[@]}" | sort -n > "$D/latencies_us.txt"
pct() { awk -v p="$1" '{a[NR]=$1} END {i=int((NR*p+99)/100); if (i<1) i=1; printf "%.1f", a[i]/1000}' "$D/latencies_us.txt"; }
echo "machine: $(uname -srm), $(nproc) CPUs, $(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo)"
echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ); slurm: $(scontrol --version); trainlock: $("$TRAINLOCK" --version)"
echo "events: $EVENTS; latency from the line written to the node drained (ms): p50 $(pct 50), p90 $(pct 90), p99 $(pct 99), max $(pct 100)"
drained=$(grep -c ': drained (' "$D/log/watch.out" || true)
echo "the watch drained $drained times"

ticks() { awk '{print $14 + $15}' "/proc/$WATCH/stat"; }
c0=$(ticks); sleep "$REST_S"; c1=$(ticks)
hz=$(getconf CLK_TCK)
rss=$(awk '/VmRSS/{print $2, $3}' "/proc/$WATCH/status")
echo "at rest over ${REST_S} s: CPU $(awk -v t=$((c1 - c0)) -v hz="$hz" -v s="$REST_S" 'BEGIN{printf "%.3f", 100 * t / hz / s}')% of one core, RSS $rss"
