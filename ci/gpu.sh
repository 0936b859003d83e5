#!/usr/bin/env bash
# The GPU run, on the device machine (Ubuntu 24.04, H200, torch 2.11+cu130 in python3): builds
# trainlock and the validator against that torch, runs the validator tests on the GPU,
# validates examples/h200-pilot, runs the Python reference for train.step in the same run,
# compares the pilot's checkpoint save with torch.save and dd, and with two or more GPUs runs
# the collectives beside torch.distributed and the pilot on every GPU (--nproc auto and under
# torchrun); it leaves reports and tables in $OUT (default build-gpu/out). Stages can be left
# out: SKIP_TESTS, SKIP_PILOT, SKIP_TORCHRUN, SKIP_SAVE_COMPARE, SKIP_REFERENCE, SKIP_HF,
# SKIP_MULTI (the collectives, the pilot and fsdp2 on every GPU), SKIP_TWO_NODES, SKIP_ENGINES (the
# Python engines: fsdp2 on the pilot beside a plain FSDP2 script, a kill during async_save,
# resharding 2 -> 1 over gloo on the CPUs, hf-trainer and lightning); VALIDATOR_TESTS_FILTER
# runs only the validator tests it names (a GoogleTest filter). SKIP_ENGINE_PILOT, SKIP_ENGINE_KDS,
# SKIP_ENGINE_RESHARD, SKIP_ENGINE_CONTROLS (FSDP2_CONTROLS picks of rng data corrupt), SKIP_FRAMEWORKS leave out single engine stages
# (KILL_POINTS, KILL_PROJECT=tiny for the kill stage; NATIVE_KILLS=1 adds the native engine's),
# PILOT_DISK_STATES=1 validates the pilot a second time with its final states on disk, WATCH_BESIDE=1
# runs `trainlock watch` beside the pilot's validations, SKIP_PERF the pilot's
# perf.matmul and targets stages; FRAMEWORKS_STEP_ONLY=1 runs only process A of hf-trainer and
# lightning beside their frameworks' own loops; PLAIN_SAVES=N sets the plain FSDP2 script's
# DefaultStager saves (default 2), PLAIN_SAMPLE=1 samples where its main thread is in every save
# after the first; SKIP_FRAMEWORK_ROUNDTRIPS leaves out hf-trainer's and
# lightning's round trips through `trainlock validate` on examples/tiny (FRAMEWORK_CONTROLS=""
# without their rng/data controls, FRAMEWORK_PASS="" only the controls, FRAMEWORK_ENGINES one); STAGING_PROBE=1 adds bench/dcp_staging_probe.py (PROBE_GIB),
# STATE_DICT_PROBE=1 bench/state_dict_probe.py in four processes (two beside an nvidia-smi sampler);
# SKIP_PLAIN_FSDP2=1 runs the fsdp2 pilot's validation without the plain FSDP2 script beside it,
# PLAIN_BESIDE_SAMPLER=1 runs that script a second time with nvidia-smi sampling at 200 ms;
# FUZZ_SECONDS (below)
# fuzzes beside them.
# Also: the pilot's train.step beside Hugging Face transformers' LlamaForCausalLM (bench/hf_step.py,
# three AdamW variants), the targets of perf.*, the checkpoint stall, `plan` on the 8B
# out-of-memory report, and with two GPUs two simulated nodes (one GPU each).
# The machine has no toml++: a copy of Debian's headers travels in .toml/ (git-ignored):
#   mkdir -p .toml && cp -r /usr/include/toml++ .toml/
set -uo pipefail
cd "$(dirname "$0")/.." || exit 3
# NVLink multicast stays off on shared machines (the device tool's KINDS.md says why).
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUT=${OUT:-$PWD/build-gpu/out}
mkdir -p "$OUT"
log() { echo "== $(date -u +%H:%M:%S) $*"; }

# FUZZ_SECONDS=N: the fuzz targets packed by `bench/fuzz_elsewhere.sh pack` (carried in .fuzzbin)
# fuzz for N seconds on this machine's CPUs at nice 19 beside the stages (FUZZ_TARGETS picks
# them, FUZZ_WORKERS workers each); the record comes back in $OUT/fuzz.tar.
fuzz_pid=
if [ -n "${FUZZ_SECONDS:-}" ] && [ -f .fuzzbin/fuzzbin.tar.xz ]; then
  log "fuzzing for $FUZZ_SECONDS s in the background (${FUZZ_TARGETS:-every target})"
  OUT=$OUT bench/fuzz_elsewhere.sh run "$FUZZ_SECONDS" >"$OUT/fuzz.log" 2>&1 &
  fuzz_pid=$!
fi

prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
# NCCL's header for c10d's ProcessGroupNCCL: the nvidia-nccl wheel beside torch, else the system.
nccl_include=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "include"))' 2>/dev/null)
[ -f "$nccl_include/nccl.h" ] || nccl_include=$(dirname "$(find /usr/include /usr/local -name nccl.h 2>/dev/null | head -1)")
log "configure (torch at $prefix)"
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_PREFIX_PATH="$prefix" \
  -DTOMLPP_INCLUDE_DIR="$PWD/.toml" -DTRAINLOCK_NCCL_INCLUDE="$nccl_include" -DTRAINLOCK_WERROR=OFF >"$OUT/configure.log" 2>&1 ||
  { tail -40 "$OUT/configure.log"; exit 1; }
log "build"
# BUILD_TARGETS (e.g. "trainlock trainlock-validate") builds only those, for a run of a few stages.
cmake --build build-gpu -j "$(nproc)" ${BUILD_TARGETS:+--target $BUILD_TARGETS} >"$OUT/build.log" 2>&1 ||
  { grep -E "error" -A3 "$OUT/build.log" | head -60; exit 1; }
grep -c "warning:" "$OUT/build.log" | sed 's/^/build warnings: /' || true

# Every stage below runs even when an earlier one fails; the summary at the end says which did.
status=()
stage() {  # stage NAME COMMAND...: run, record pass/fail
  local name=$1; shift
  log "$name"
  if "$@"; then status+=("pass  $name"); else status+=("FAIL  $name (exit $?)"); fi
}
tests() {
  build-gpu/bin/validator_tests ${VALIDATOR_TESTS_FILTER:+--gtest_filter="$VALIDATOR_TESTS_FILTER"} \
    >"$OUT/validator-tests.log" 2>&1
  local rc=$?
  grep -E "^\[  (FAILED|PASSED)|Failure|Segmentation|error:" -A3 "$OUT/validator-tests.log" | head -60
  tail -3 "$OUT/validator-tests.log"
  return $rc
}
[ -n "${SKIP_TESTS:-}" ] || stage "validator tests (CPU parts and GPU end to end)" tests

[ -n "${SKIP_TESTS:-}" ] || stage "tiny on the GPU" build-gpu/bin/trainlock-validate examples/tiny --device cuda \
  --out "$OUT/tiny-gpu-report.json"

# The pilot's custom op (examples/ops), built the way a project builds its own: for the
# architectures of the lock's target, into the project's ops/ directory the lock names.
pilot_ops() {
  local archs
  archs=$(build-gpu/bin/trainlock archs examples/h200-pilot --target cuda) || return 1
  echo "building examples/ops for sm $archs"
  if ! { cmake -S examples/ops -B build-gpu/ops-pilot -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$prefix" -DTRAINLOCK_OPS_CUDA_ARCHS="$archs" -DTRAINLOCK_OPS_CUDA_PTX= \
      >"$OUT/ops-build.log" 2>&1 &&
      cmake --build build-gpu/ops-pilot -j "$(nproc)" >>"$OUT/ops-build.log" 2>&1; }; then
    grep -E "error|Error" -A3 "$OUT/ops-build.log" | head -40
    return 1
  fi
  mkdir -p examples/h200-pilot/ops && cp build-gpu/ops-pilot/libtrainlock_ops.so examples/h200-pilot/ops/ &&
    build-gpu/bin/trainlock inspect examples/h200-pilot/ops/libtrainlock_ops.so
}
stage "custom op for the pilot (examples/ops)" pilot_ops

# Where a round trip's time went: each process's seconds and its first event of each kind.
process_times() {
  python3 - "$1" <<'PY'
import json, sys
try:
    checks = {c["id"]: c for c in json.load(open(sys.argv[1]))["checks"]}
except (OSError, ValueError, KeyError):
    sys.exit(0)
for c in checks.values():
    if c.get("duration_s"):
        print("  %-16s %6.2f s" % (c["id"], c["duration_s"]))
rt = checks.get("train.roundtrip", {}).get("metrics", {})
print("  first save: blocking %s s, stall %s s, release %s s; steady saves: %s" % (
    rt.get("save_blocking_s"), rt.get("save_stall_s"), rt.get("save_release_s"),
    "; ".join("#%s blocking %.3f stretch %.3f release %.3f stall %.3f (median step %.3f) new pinned %s host growth %s" % (
        e.get("ordinal"), e.get("blocking_s", 0), e.get("stretch_s", 0), e.get("release_s", 0), e.get("stall_s", 0),
        e.get("median_step_s", 0), e.get("new_pinned_bytes"), e.get("host_growth_bytes")) for e in rt.get("save_steady") or [])))
print("  final states in: %s%s; D beside C: %s, beside C's end: %s" % (
    rt.get("states_in"), " (%s)" % rt["states_not_in_memory"] if rt.get("states_not_in_memory") else "",
    rt.get("portable_beside_resume"), rt.get("portable_beside_resume_end", False)))
for name, p in (rt.get("processes") or {}).items():
    events = ", ".join("%s %.1f" % (k, v) for k, v in sorted(p.get("first_event_s", {}).items(), key=lambda kv: kv[1]))
    print("  %-18s %6.1f s  spawned %.1f ended %.1f (first: %s)" % (name, p.get("seconds", 0), p.get("spawned_s", 0), p.get("ended_s", 0), events))
PY
}
# One full validation of the pilot, timed: NAME (its files' suffix, "" the first), the words the
# time line says, then validate's extra options.
timed_pilot() {
  local name=$1 words=$2 start end rc
  shift 2
  start=$(date +%s.%N)
  build-gpu/bin/trainlock validate examples/h200-pilot --out "$OUT/h200-pilot${name}-report.json" \
    --work-dir "$PWD/build-gpu/work-pilot" "$@"
  rc=$?
  end=$(date +%s.%N)
  echo "time to full verdict${words}: $(python3 -c "print(round($end - $start, 1))") s" |
    tee "$OUT/pilot-verdict-time${name}.txt"
  process_times "$OUT/h200-pilot${name}-report.json" | tee -a "$OUT/pilot-verdict-time${name}.txt"
  return $rc
}
# PILOT_DISK_STATES=1: the pilot again with its final states on the work directory's disk
# (--state-dir), as they were before they went to memory: the same machine's comparison.
# WATCH_BESIDE=1: `trainlock watch` follows /dev/kmsg beside the pilot's validations (issue #63):
# it must record no event and revoke nothing; its output and `watch --once` come back in $OUT.
watch_start() {
  [ -n "${WATCH_BESIDE:-}" ] || return 0
  mkdir -p "$OUT/watch-state"
  build-gpu/bin/trainlock watch --watch-state "$OUT/watch-state" --node gpu-node \
    --reports-dir "$OUT/watch-reports" >"$OUT/watch.out" 2>"$OUT/watch.err" &
  watch_pid=$!
  echo "watch started (pid $watch_pid); /dev/kmsg: $(ls -l /dev/kmsg 2>&1)"
}
watch_stop() {
  [ -n "${WATCH_BESIDE:-}" ] || return 0
  kill -TERM "$watch_pid" 2>/dev/null; wait "$watch_pid"; echo "watch exit $? (143: stopped by SIGTERM)"
  tail -n 5 "$OUT/watch.out" "$OUT/watch.err"
  # The first pilot's passing report is the node's baseline for NVML's counters.
  mkdir -p "$OUT/watch-reports" && cp "$OUT/h200-pilot-report.json" "$OUT/watch-reports/gpu-node.json"
  build-gpu/bin/trainlock watch --once --watch-state "$OUT/watch-state" --node gpu-node \
    --reports-dir "$OUT/watch-reports" | tee "$OUT/watch-once.txt"
  echo "watch --once exit ${PIPESTATUS[0]} (0: not revoked)"
  # This node's kernel log so far, replayed: what the watch would have decided on it.
  dmesg >"$OUT/dmesg.txt" 2>"$OUT/dmesg.err" || echo "dmesg: exit $? ($(head -c 200 "$OUT/dmesg.err"))"
  local replay_rc=0
  build-gpu/bin/trainlock watch --replay "$OUT/dmesg.txt" --json >"$OUT/watch-dmesg-replay.json" 2>&1 || replay_rc=$?
  echo "replay of this node's dmesg ($(wc -l <"$OUT/dmesg.txt") lines): exit $replay_rc"; head -c 600 "$OUT/watch-dmesg-replay.json"
}
pilot() {
  local rc=0
  watch_start
  timed_pilot "" "" --keep-work || rc=1
  tail -4 build-gpu/work-pilot/*/*.stderr 2>/dev/null | tail -20
  echo "  /dev/shm: $(df -h --output=size,avail /dev/shm | tail -1); $(grep -E 'MemTotal|MemAvailable' /proc/meminfo | tr -s ' ' | paste -sd ' ')"
  if [ -n "${PILOT_DISK_STATES:-}" ]; then
    mkdir -p build-gpu/states-disk
    timed_pilot -disk-states ", final states on disk" --state-dir "$PWD/build-gpu/states-disk" -q || rc=1
  fi
  watch_stop
  # Issue #64: two validations on one GPU give one golden digest under one key.
  python3 - "$OUT"/h200-pilot-report.json "$OUT"/h200-pilot-disk-states-report.json <<'PY' | tee "$OUT/golden.txt"
import json, sys
for path in sys.argv[1:]:
    try:
        g = json.load(open(path)).get("golden")
    except (OSError, ValueError):
        continue
    print(path.rsplit("/", 1)[-1], json.dumps(g, sort_keys=True))
PY
  return $rc
}
[ -n "${SKIP_PILOT:-}" ] || stage "h200-pilot" pilot

# The collectives across every GPU of the machine, beside torch.distributed in the same run,
# then the whole pilot with one rank per GPU: each rank's own round trip on its GPU, rank 0's
# merged report and a table with a row per GPU.
collectives() {
  local n
  n=$(nvidia-smi -L | wc -l)
  [ "$n" -ge 2 ] || { echo "one GPU: no collectives to measure"; return 0; }
  build-gpu/bin/trainlock-validate examples/h200-pilot --nproc auto \
    --only comm.allreduce,comm.ddp --out "$OUT/comm-report.json" | tail -4
  python3 -m torch.distributed.run --standalone --nproc-per-node "$n" bench/allreduce_compare.py \
    --json "$OUT/torch-allreduce.json" >"$OUT/torch-allreduce.log" 2>&1 || { tail -20 "$OUT/torch-allreduce.log"; return 1; }
  python3 bench/allreduce_compare.py --table "$OUT/comm-report.json" "$OUT/torch-allreduce.json" |
    tee "$OUT/busbw-table.md"
}
[ -n "${SKIP_MULTI:-}" ] || stage "comm.allreduce, comm.ddp vs torch.distributed" collectives

pilot_all_gpus() {
  local n start end
  n=$(nvidia-smi -L | wc -l)
  [ "$n" -ge 2 ] || return 0
  mkdir -p "$OUT/h200-pilot-all-gpus"
  start=$(date +%s.%N)
  build-gpu/bin/trainlock validate examples/h200-pilot --nproc auto \
    --out "$OUT/h200-pilot-all-gpus/report.json" --work-dir "$PWD/build-gpu/work-all"
  local rc=$?
  end=$(date +%s.%N)
  echo "$n GPUs, time to full verdict: $(python3 -c "print(round($end - $start, 1))") s" |
    tee "$OUT/h200-pilot-all-gpus/verdict-time.txt"
  python3 bench/rank_table.py "$OUT/h200-pilot-all-gpus/report.json" |
    tee "$OUT/h200-pilot-all-gpus/per-gpu.md"
  return $rc
}
[ -n "${SKIP_MULTI:-}" ] || stage "h200-pilot on every GPU (--nproc auto)" pilot_all_gpus

# The same under torchrun, as a launcher would start it: one process per GPU from torchrun's
# variables, rank 0's merged report.
pilot_torchrun() {
  local n
  n=$(nvidia-smi -L | wc -l)
  [ "$n" -ge 2 ] || return 0
  mkdir -p "$OUT/h200-pilot-torchrun"
  python3 -m torch.distributed.run --standalone --nproc-per-node "$n" --no-python \
    build-gpu/bin/trainlock-validate examples/h200-pilot \
    --out "$OUT/h200-pilot-torchrun/report.json" >"$OUT/h200-pilot-torchrun/run.log" 2>&1
  local rc=$?
  grep -E "^verdict|rank [0-9]+/" "$OUT/h200-pilot-torchrun/run.log"
  python3 bench/rank_table.py "$OUT/h200-pilot-torchrun/report.json" |
    tee "$OUT/h200-pilot-torchrun/per-gpu.md"
  return $rc
}
[ -n "${SKIP_TORCHRUN:-}" ] || stage "h200-pilot on every GPU under torchrun" pilot_torchrun

# The pilot's checkpoint save beside torch.save and dd of the same size on the same disk.
save_compare() {
  rm -rf build-gpu/work-pilot/checkpoints  # 15 GB: room for the torch.save and dd files
  python3 bench/save_compare.py "$OUT/h200-pilot-report.json" examples/h200-pilot/configs/llama-1b.yaml \
    build-gpu/save-compare --json "$OUT/save-compare.json" | tee "$OUT/save-compare.md"
}
[ -n "${SKIP_SAVE_COMPARE:-}" ] || stage "checkpoint save vs torch.save and dd" save_compare

# perf.matmul beside torch.mm in Python by the same method and by torch.utils.benchmark.
matmul_peak() {
  python3 bench/matmul_peak.py "$OUT/h200-pilot-report.json" | tee "$OUT/matmul-table.md"
}
[ -n "${SKIP_PILOT:-}${SKIP_PERF:-}" ] || stage "perf.matmul beside torch.mm" matmul_peak

# What users run instead: transformers' LlamaForCausalLM at the pilot's shape, in this run, with
# the AdamW TrainingArguments picks by default here (the baseline), torch's foreach and fused.
hf() {
  python3 -c 'import transformers; print("transformers", transformers.__version__)' || return 1
  local o
  for o in trainer-default foreach fused; do
    python3 bench/hf_step.py examples/h200-pilot/configs/llama-1b.yaml --optimizer "$o" \
      >"$OUT/hf-step-$o.json" 2>"$OUT/hf-step-$o.log" || { tail -20 "$OUT/hf-step-$o.log"; return 1; }
  done
  python3 bench/compare_hf.py "$OUT/h200-pilot-report.json" "$OUT/hf-step-trainer-default.json" \
    "$OUT/hf-step-foreach.json" "$OUT/hf-step-fused.json" | tee "$OUT/hf-table.md"
}
[ -n "${SKIP_HF:-}" ] || stage "train.step beside transformers' LlamaForCausalLM" hf

# The pilot report's own numbers against the issue's targets: perf.matmul >= 95% of 790 TFLOP/s,
# perf.hbm >= 90% of 4.3 TB/s, the save's blocking time < 2 s (beside the time to durable storage).
targets() {
  python3 - "$OUT/h200-pilot-report.json" <<'PY' | tee "$OUT/targets.md"
import json, sys
r = json.load(open(sys.argv[1]))
c = {x["id"]: x for x in r["checks"]}
def m(i): return c.get(i, {}).get("metrics", {})
ok = True
def line(name, value, target, good):
    global ok
    ok &= bool(good)
    print(f"| {name} | {value} | {target} | {'yes' if good else 'NO'} |")
print("| measure | value | target | met |\n|---|---|---|---|")
mm = m("perf.matmul"); hb = m("perf.hbm"); rt = m("train.roundtrip"); st = m("train.step")
def low(mx): return min([d.get("value", 0) for d in mx.get("devices", [])] or [0])
tf = low(mm)
line("perf.matmul (bf16 dense)", f"{tf} TFLOP/s, {c.get('perf.matmul', {}).get('status')}", ">= 750.5 (95% of 790)", tf >= 750.5)
bw = low(hb)
line("perf.hbm", f"{bw} TB/s, {c.get('perf.hbm', {}).get('status')}", ">= 3.87 (90% of 4.3)", bw >= 3.87)
blk = rt.get("save_blocking_s", 1e9)
line("checkpoint save, training blocked", f"{blk} s (durable {rt.get('save_s')} s)", "< 2 s", blk < 2)
line("round trip bitwise", rt.get("bitwise_equal"), "true", rt.get("bitwise_equal") is True)
print(f"\ntrain.step mode {st.get('mode')}, step {st.get('step_time_s')} s; perf.matmul metrics {json.dumps(mm)[:600]}")
print(f"perf.hbm metrics {json.dumps(hb)[:400]}")
sys.exit(0 if ok else 1)
PY
}
[ -n "${SKIP_PILOT:-}${SKIP_PERF:-}" ] || stage "targets: perf.matmul, perf.hbm, checkpoint stall" targets

# An example that cannot fit must fail train.step with numbers and remedies, exit 1, no crash.
oom() {
  build-gpu/bin/trainlock validate examples/h200-8b-oom --out "$OUT/h200-8b-oom-report.json"
  local rc=$?
  echo "exit code $rc (expected 1)"
  [ "$rc" -eq 1 ]
}
[ -n "${SKIP_REFERENCE:-}" ] || stage "h200-8b-oom (must fail train.step, exit 1)" oom

# plan reads that failed report and recommends a layout that fits, with the arithmetic; one
# remedy engine: train.step's first remedy is plan's first choice.
plan_oom() {
  build-gpu/bin/trainlock plan "$OUT/h200-8b-oom-report.json" | tee "$OUT/h200-8b-oom-plan.txt" &&
    build-gpu/bin/trainlock plan "$OUT/h200-8b-oom-report.json" --json >"$OUT/h200-8b-oom-plan.json" &&
    python3 - "$OUT/h200-8b-oom-report.json" "$OUT/h200-8b-oom-plan.json" <<'PY'
import json, sys
report, plan = (json.load(open(path)) for path in sys.argv[1:3])
step = next(c for c in report["checks"] if c["id"] == "train.step")
first = step["metrics"]["remedies"][0]
assert plan["best_fix"] and first.startswith(plan["best_fix"] + ": "), (first, plan["best_fix"])
print("train.step's first remedy is plan's first choice:", plan["best_fix"])
PY
}
[ -n "${SKIP_REFERENCE:-}" ] || stage "plan on the 8B out-of-memory report" plan_oom

# Two nodes simulated on a two-GPU machine: one GPU each (CUDA_VISIBLE_DEVICES), torchrun's
# variables with distinct GROUP_RANK and node names; the merged report names both nodes.
two_nodes() {
  local n port=29611
  n=$(nvidia-smi -L | wc -l)
  [ "$n" -ge 2 ] || { echo "one GPU: two simulated nodes need two"; return 0; }
  mkdir -p "$OUT/two-nodes"
  local r pids=()
  for r in 0 1; do
    CUDA_VISIBLE_DEVICES=$r RANK=$r LOCAL_RANK=0 GROUP_RANK=$r WORLD_SIZE=2 LOCAL_WORLD_SIZE=1 \
      MASTER_ADDR=127.0.0.1 MASTER_PORT=$port TRAINLOCK_NODE_NAME=sim-node-$r \
      build-gpu/bin/trainlock-validate examples/h200-pilot --out "$OUT/two-nodes/node-$r.json" \
      >"$OUT/two-nodes/node-$r.log" 2>&1 &
    pids+=($!)
  done
  wait "${pids[0]}"; local rc=$?
  wait "${pids[1]}"
  python3 bench/rank_table.py "$OUT/two-nodes/node-0.json" | tee "$OUT/two-nodes/per-gpu.md"
  return $rc
}
[ -n "${SKIP_TWO_NODES:-}" ] || stage "two simulated nodes, one GPU each" two_nodes

reference() {
  python3 bench/python_step.py examples/h200-pilot/configs/llama-1b.yaml --deterministic \
    >"$OUT/python-step.json" &&
    python3 bench/python_step.py examples/h200-pilot/configs/llama-1b.yaml >"$OUT/python-step-default.json" &&
    python3 bench/compare_step.py "$OUT/h200-pilot-report.json" "$OUT/python-step.json" \
      "$OUT/python-step-default.json" | tee "$OUT/step-table.md"
}
[ -n "${SKIP_REFERENCE:-}" ] || stage "Python reference step" reference
# The round trip's Python engines (docs/validate.md, "Engines"). The pilot's lock names fsdp2
# in a copy (bench/engine_project.py: the manifest names the engine and the copy is relocked offline).
# ENGINE_ONLY=train.step measures the step alone (for fsdp2 beside the plain script, without the
# pilot's five-minute round trip).
# The kept work folders hold checkpoints and final states (16 GB a round trip on the pilot), and a
# warm machine keeps them between calls: on the 64 GiB disk the fourth validation ran out of room.
# Before each engine stage the large files of earlier validations go (their logs and events stay).
free_work_space() {
  local dir
  for dir in build-gpu/work-* build-gpu/save-compare; do
    [ -d "$dir" ] && find "$dir" -type f -size +64M -delete
  done
  rm -rf /tmp/trainlock-gpu-*  # gpu_engines.py's folders of an earlier call cut short
  df -h --output=avail build-gpu | tail -1 | sed 's/^ */disk free before the stage: /'
}
engine_validate() {  # engine_validate NAME PROJECT [validator options...]: one validation
  local name=$1 project=$2; shift 2
  local start end
  mkdir -p "$OUT/engines"  # a stage may run without the one that used to make it
  free_work_space
  start=$(date +%s.%N)
  # ENGINE_ONLY=all: every check (the full verdict), else the training checks or those it names.
  local only=(--only "${ENGINE_ONLY:-train.step,train.roundtrip,train.eval,ckpt.portable}")
  [ "${ENGINE_ONLY:-}" != all ] || only=()
  build-gpu/bin/trainlock validate "$project" --python "$(command -v python3)" \
    "${only[@]}" --progress log \
    --out "$OUT/engines/$name-report.json" --work-dir "$PWD/build-gpu/work-$name" --keep-work "$@" \
    >"$OUT/engines/$name.log" 2>&1
  local rc=$?
  end=$(date +%s.%N)
  grep -E "^  (PASS|FAIL|ERROR)|^verdict" "$OUT/engines/$name.log"
  echo "$name: exit $rc, $(python3 -c "print(round($end - $start, 1))") s" | tee -a "$OUT/engines/times.txt"
  process_times "$OUT/engines/$name-report.json" | tee -a "$OUT/engines/times.txt"
  grep -h '"committed"' "$PWD"/build-gpu/work-"$name"/*/b-preempted.jsonl 2>/dev/null | cut -c1-500
  grep -h "^trainlock-engine: " "$PWD"/build-gpu/work-"$name"/*/*.stderr 2>/dev/null | tee -a "$OUT/engines/times.txt"
  return $rc
}
fsdp2_pilot() {
  mkdir -p "$OUT/engines"
  python3 bench/engine_project.py examples/h200-pilot build-gpu/pilot-fsdp2 --engine fsdp2 \
    --parallelism fsdp >/dev/null || return 1
  engine_validate fsdp2-pilot build-gpu/pilot-fsdp2
}
fsdp2_kill_during_save() {  # KILL_POINTS: the points to kill at (default all five), one validation each
  # KILL_PROJECT=tiny kills examples/tiny's fsdp2 project (seconds a validation) instead of the pilot's.
  local project=build-gpu/pilot-fsdp2 name=fsdp2-pilot-kill
  if [ "${KILL_PROJECT:-}" = tiny ]; then
    project=build-gpu/tiny-fsdp2 name=fsdp2-tiny-kill
    python3 bench/engine_project.py examples/tiny "$project" --engine fsdp2 --parallelism fsdp \
      --torch "$(python3 -c 'import torch; print(torch.__version__.split("+")[0])')" >/dev/null || return 1
  elif [ ! -d "$project" ]; then
    python3 bench/engine_project.py examples/h200-pilot "$project" --engine fsdp2 --parallelism fsdp \
      >/dev/null || return 1
  fi
  local point rc=0
  for point in ${KILL_POINTS:-before-files mid-file after-files after-metadata after-commit}; do
    ENGINE_ONLY="" engine_validate "$name-$point" "$project" --device cuda --kill-point "$point" || rc=1
    grep -h '"held"' "$PWD/build-gpu/work-$name-$point"/*/b-preempted.jsonl 2>/dev/null | cut -c1-300
  done
  return $rc
}
# The native engine killed at each point of a save on the GPU, on examples/tiny (NATIVE_KILLS=1).
native_kill_during_save() {
  local point rc=0
  mkdir -p "$OUT/native-kills"
  for point in ${KILL_POINTS:-before-files mid-file after-files after-metadata after-commit}; do
    build-gpu/bin/trainlock-validate examples/tiny --device cuda --kill-point "$point" \
      --out "$OUT/native-kills/$point.json" >"$OUT/native-kills/$point.log" 2>&1 || rc=1
    python3 - "$OUT/native-kills/$point.json" "$point" <<'PY'
import json, sys
checks = {c["id"]: c for c in json.load(open(sys.argv[1]))["checks"]}
m = checks["train.roundtrip"]["metrics"]
print("native %-14s %s: restored_step %s, killed_during_save %s, snapshot_equal %s, skipped %s" % (
    sys.argv[2], checks["train.roundtrip"]["status"], m.get("restored_step"), m.get("killed_during_save"),
    m.get("snapshot_equal"), m.get("skipped_uncommitted")))
PY
  done
  return $rc
}
fsdp2_beside_plain() {  # the fsdp2 engine on the pilot and a plain FSDP2 script, one call
  fsdp2_pilot || return 1
  [ -z "${SKIP_PLAIN_FSDP2:-}" ] || return 0  # the engine's verdict alone (its time, its phases)
  # Written from PyTorch's documentation, not from the engine: the pilot's config, the run's
  # kernels, the output dropped before backward, dcp.async_save with torch's DefaultStager.
  python3 bench/fsdp2_plain.py --config examples/h200-pilot/configs/llama-1b.yaml --saves "${PLAIN_SAVES:-2}" \
    ${PLAIN_SAMPLE:+--sample-later-saves} >"$OUT/engines/plain-fsdp2.jsonl" || return 1
  if [ -n "${PLAIN_BESIDE_SAMPLER:-}" ]; then
    # The same script again with an NVML sampler at the validator's telemetry interval (200 ms)
    # beside it, as train.roundtrip's telemetry samples beside process B's save.
    nvidia-smi --query-gpu=timestamp,power.draw,clocks.sm,temperature.gpu,clocks_event_reasons.active \
      --format=csv -lms 200 >"$OUT/engines/plain-sampler.csv" 2>&1 &
    local sampler=$!
    python3 bench/fsdp2_plain.py --config examples/h200-pilot/configs/llama-1b.yaml --saves "${PLAIN_SAVES:-2}" \
      >"$OUT/engines/plain-fsdp2-sampled.jsonl"
    kill "$sampler" 2>/dev/null
    grep -h '"event": "save"' "$OUT/engines/plain-fsdp2-sampled.jsonl" | cut -c1-400
  fi
  engine_plain_table "$OUT/engines/fsdp2-pilot-report.json" "$OUT/engines/plain-fsdp2.jsonl" |
    tee "$OUT/engines/fsdp2-vs-plain.md"
  # Whether each save reused the cached model state or made it (and why): a save that made it
  # blocks for get_model_state_dict too.
  grep -ho "fsdp2 save (model state [^)]*)" "$PWD"/build-gpu/work-fsdp2-pilot/*/*.stderr 2>/dev/null |
    sort | uniq -c | tee -a "$OUT/engines/fsdp2-vs-plain.md"
}
engine_plain_table() {  # engine_plain_table REPORT PLAIN_JSONL: the engine beside the plain script
  python3 - "$1" "$2" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
checks = {c["id"]: c for c in report["checks"]}
step = checks["train.step"]["metrics"]
roundtrip = checks.get("train.roundtrip", {}).get("metrics", {})
plain = [json.loads(line) for line in open(sys.argv[2]) if line.startswith("{")]
plain = next(p for p in reversed(plain) if p.get("event") == "result")
print("engine train.step mode: %s (plain script deterministic: %s)" % (step.get("mode"), plain["deterministic"]))
print()
print("| | trainlock fsdp2 engine | plain FSDP2 script | engine / plain |")
print("|---|---|---|---|")
stager_saves = [s for s in plain.get("saves", []) if s.get("stager") == "DefaultStager"]
def median(key, saves=None):
    values = sorted(s[key] for s in (stager_saves if saves is None else saves) if s.get(key) is not None)
    return values[len(values) // 2] if values else None
rows = (("step_time_s (s, median)", step.get("step_time_s"), plain.get("step_time_s"), 1),
        ("peak_allocated (MiB)", step.get("peak_allocated_bytes"), plain.get("peak_allocated_bytes"), 2**20),
        ("peak_reserved (MiB)", step.get("peak_reserved_bytes"), plain.get("peak_reserved_bytes"), 2**20),
        ("async_save blocking (s), plain's first save with DefaultStager", roundtrip.get("save_blocking_s"),
         plain.get("save_blocking_s"), 1),
        ("async_save blocking (s), plain's median over its DefaultStager saves", roundtrip.get("save_blocking_s"),
         median("save_blocking_s"), 1),
        ("the save's whole cost to training (s): blocking + the next step's stretch (+ the engine's release at its "
         "commit), plain's first save (nothing to release)", roundtrip.get("save_stall_s"), plain.get("save_stall_s"), 1),
        ("the same, plain's median over its DefaultStager saves (later ones release the previous staged copy)",
         roundtrip.get("save_stall_s"), median("stall_s"), 1),
        ("releasing the staged copy (s): the engine's at its commit, plain's second save's blocking less its first's",
         roundtrip.get("save_release_s"),
         stager_saves[1]["blocking_s"] - stager_saves[0]["blocking_s"] if len(stager_saves) > 1 else None, 1),
        ("a later save's whole cost to training (s): the engine's costliest steady-state save, plain's median over "
         "its DefaultStager saves after the first", roundtrip.get("save_steady_stall_s"), median("stall_s", stager_saves[1:]), 1),
        ("a later save's blocking (s): the same saves", roundtrip.get("save_steady_blocking_s"),
         median("save_blocking_s", stager_saves[1:]), 1),
        ("async_save blocking (s), plain with its own staging", roundtrip.get("save_blocking_s"),
         next((s["save_blocking_s"] for s in plain.get("saves", []) if s.get("save") == "own-staging"), None), 1))
for name, a, b, scale in rows:
    if a is None or b is None or not b:
        print("| %s | %s | %s | - |" % (name, a, b)); continue
    print("| %s | %.4g | %.4g | %.3f |" % (name, a / scale, b / scale, a / b))
for row in plain.get("saves", []):
    print("plain save %s: %s" % (row.get("save"), {k: round(v, 4) if isinstance(v, float) else v for k, v in row.items()}))
PY
}
fsdp2_every_gpu() {  # fsdp2 on the pilot, a rank per GPU, beside the plain script under torchrun
  local n rc
  n=$(nvidia-smi -L | wc -l)
  [ "$n" -ge 2 ] || { echo "one GPU: fsdp2 over every GPU waits for a machine with two or more"; return 0; }
  [ -d build-gpu/pilot-fsdp2 ] || python3 bench/engine_project.py examples/h200-pilot build-gpu/pilot-fsdp2 \
    --engine fsdp2 --parallelism fsdp >/dev/null || return 1
  engine_validate "fsdp2-pilot-$n-gpus" build-gpu/pilot-fsdp2 --engine-nproc "$n"
  rc=$?
  python3 -m torch.distributed.run --standalone --nproc-per-node "$n" bench/fsdp2_plain.py \
    --config examples/h200-pilot/configs/llama-1b.yaml --saves "${PLAIN_SAVES:-2}" \
    >"$OUT/engines/plain-fsdp2-$n-gpus.jsonl" 2>"$OUT/engines/plain-fsdp2-$n-gpus.stderr" ||
    { tail -20 "$OUT/engines/plain-fsdp2-$n-gpus.stderr"; return 1; }
  engine_plain_table "$OUT/engines/fsdp2-pilot-$n-gpus-report.json" "$OUT/engines/plain-fsdp2-$n-gpus.jsonl" |
    tee "$OUT/engines/fsdp2-vs-plain-$n-gpus.md"
  return $rc
}
fsdp2_reshard_cpu() {  # save at world size 2, restore at 1, on the CPUs over gloo
  mkdir -p "$OUT/engines"
  # The lock pins this machine's torch, as re-locking here would (the engine's hello must name it).
  python3 bench/engine_project.py examples/tiny build-gpu/tiny-fsdp2 --engine fsdp2 \
    --parallelism fsdp --torch "$(python3 -c 'import torch; print(torch.__version__.split("+")[0])')" \
    >/dev/null || return 1
  engine_validate fsdp2-reshard-2-to-1-cpu build-gpu/tiny-fsdp2 --device cpu --engine-nproc 2 \
    --reshard-to 1
  # The verdict is the check's documented finding for a resharded resume (docs/validate.md): the
  # round trip at world size 2 bitwise, E restoring the checkpoint's step at world size 1 with the
  # data position carried, and E not bitwise (a reduction over 1 rank sums in another order).
  # The stage passes on exactly that finding and names anything else.
  python3 - "$OUT/engines/fsdp2-reshard-2-to-1-cpu-report.json" <<'PY'
import json, sys
try:
    rt = [c for c in json.load(open(sys.argv[1]))["checks"] if c["id"] == "train.roundtrip"][0]
except (OSError, ValueError, KeyError, IndexError) as e:
    sys.exit("no train.roundtrip in the report: %s" % e)
m, e = rt.get("metrics", {}), rt.get("metrics", {}).get("reshard") or {}
seen = {"status": rt.get("status"), "world_size_2_bitwise": m.get("bitwise_equal"),
        "restored_step": e.get("restored_step"), "restored_world_size": e.get("restored_world_size"),
        "data_position_carried": e.get("data_position_carried"), "resharded_bitwise": e.get("bitwise_equal"),
        "max_abs_loss_diff": e.get("max_abs_loss_diff")}
print("reshard 2 -> 1: %s" % seen)
want = {"status": "fail", "world_size_2_bitwise": True, "restored_world_size": 1,
        "data_position_carried": True, "resharded_bitwise": False}
if any(seen[k] != v for k, v in want.items()) or seen["restored_step"] != m.get("checkpoint_at"):
    sys.exit("not the documented finding for a resharded resume")
PY
}
fsdp2_controls() {  # the negative controls on the GPU: no RNG or data restore, a flipped byte: exit 1
  mkdir -p "$OUT/engines"
  # The lock pins this machine's torch, as re-locking here would (the engine's hello must name it).
  python3 bench/engine_project.py examples/tiny build-gpu/tiny-fsdp2 --engine fsdp2 \
    --parallelism fsdp --torch "$(python3 -c 'import torch; print(torch.__version__.split("+")[0])')" \
    >/dev/null || return 1
  local control rc=0
  for control in ${FSDP2_CONTROLS:-rng data corrupt}; do
    # The whole round trip whatever ENGINE_ONLY says: the control must fail train.roundtrip.
    ENGINE_ONLY="" engine_validate "fsdp2-control-$control" build-gpu/tiny-fsdp2 --device cuda \
      --negative-control "$control"
    local status
    status=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print([c["status"] for c in r["checks"] if c["id"]=="train.roundtrip"][0])' \
      "$OUT/engines/fsdp2-control-$control-report.json" 2>/dev/null)
    [ "$status" = fail ] || { echo "the $control control did not fail train.roundtrip (it is: ${status:-absent})"; rc=1; }
  done
  return $rc
}
framework_roundtrips() {  # hf-trainer and lightning through trainlock validate on the GPU, controls too
  mkdir -p "$OUT/engines"
  local engine control status rc=0 torch_version
  torch_version=$(python3 -c 'import torch; print(torch.__version__.split("+")[0])')
  for engine in ${FRAMEWORK_ENGINES:-hf-trainer lightning}; do
    # The lock pins this machine's torch, as re-locking here would (the engine's hello must name it).
    python3 bench/engine_project.py examples/tiny "build-gpu/tiny-$engine" --engine "$engine" \
      --torch "$torch_version" >/dev/null || return 1
    [ -z "${FRAMEWORK_PASS-1}" ] || ENGINE_ONLY="" engine_validate "$engine-tiny" "build-gpu/tiny-$engine" --device cuda || rc=1
    [ -n "${FRAMEWORK_CONTROLS-1}" ] || continue
    for control in rng data; do
      ENGINE_ONLY="" engine_validate "$engine-control-$control" "build-gpu/tiny-$engine" --device cuda \
        --negative-control "$control"
      status=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print([c["status"] for c in r["checks"] if c["id"]=="train.roundtrip"][0])' \
        "$OUT/engines/$engine-control-$control-report.json" 2>/dev/null)
      [ "$status" = fail ] || { echo "$engine: the $control control did not fail train.roundtrip (it is: ${status:-absent})"; rc=1; }
    done
  done
  return $rc
}
staging_probe() {  # where an async_save's staging and upload time goes; the engine's import time
  mkdir -p "$OUT/engines"
  python3 bench/dcp_staging_probe.py --gib "${PROBE_GIB:-4}" --dir "$PWD/build-gpu/dcp-probe" \
    | tee "$OUT/engines/dcp-staging-probe.jsonl" || return 1
  local t0 t1 t2
  t0=$(date +%s.%N); python3 -I -c 'import torch' || return 1
  t1=$(date +%s.%N); python3 -I -c 'import torch, transformers; from transformers import LlamaForCausalLM' || return 1
  t2=$(date +%s.%N)
  python3 -c "print('import torch: %.2f s; torch + transformers LlamaForCausalLM: %.2f s' % ($t1 - $t0, $t2 - $t1))" \
    | tee -a "$OUT/engines/dcp-staging-probe.jsonl"
}
framework_engines() {  # hf-trainer and lightning on the GPU, beside Trainer.train() / Trainer.fit()
  mkdir -p "$OUT/engines"
  free_work_space
  TRAINLOCK_ENGINE_PYTHON=$(command -v python3) PYTHONPATH=tests/engines \
    python3 tests/engines/gpu_engines.py --beside-plain ${FRAMEWORKS_STEP_ONLY:+--step-only} 2>&1 | tee "$OUT/engines/hf-trainer-lightning.txt"
}
state_dict_probe() {  # get_state_dict's time under each kernel mode and its parts, four processes
  mkdir -p "$OUT/engines"
  local i sampler beside
  for i in 1 2 3 4; do  # the call's time goes by the process: more than one says how far it spreads
    sampler='' beside=false
    if [ "$i" -gt 2 ]; then  # as train.roundtrip's telemetry samples beside process B's save
      nvidia-smi --query-gpu=timestamp,power.draw,clocks.sm --format=csv -lms 200 >/dev/null 2>&1 &
      sampler=$! beside=true
    fi
    python3 bench/state_dict_probe.py --rounds "${STATE_DICT_ROUNDS:-20}" |
      sed "s/^{/{\"process\": $i, \"sampler_beside\": $beside, /" |
      tee -a "$OUT/engines/state-dict-probe.jsonl"
    local status=$?
    [ -z "$sampler" ] || kill "$sampler" 2>/dev/null
    [ "$status" -eq 0 ] || return 1
  done
}
if [ -z "${SKIP_ENGINES:-}" ]; then
  # What waits for a machine with two GPUs or more goes first (skipped with SKIP_MULTI, like the
  # collectives and the pilot on every GPU).
  [ -n "${SKIP_MULTI:-}" ] ||
    stage "fsdp2 on h200-pilot over every GPU beside a plain FSDP2 script under torchrun" fsdp2_every_gpu
  [ -z "${STAGING_PROBE:-}" ] || stage "async_save staging probe (kernel modes, writer threads)" staging_probe
  [ -z "${STATE_DICT_PROBE:-}" ] || stage "get_state_dict probe (kernel modes)" state_dict_probe
  [ -n "${SKIP_ENGINE_PILOT:-}" ] ||
    stage "fsdp2 on h200-pilot beside a plain FSDP2 script (step, peak, async_save ratios)" \
      fsdp2_beside_plain
  [ -n "${SKIP_ENGINE_KDS:-}" ] ||
    stage "fsdp2 on h200-pilot, SIGKILL at each point of an async_save" fsdp2_kill_during_save
  [ -z "${NATIVE_KILLS:-}" ] || stage "native on examples/tiny (GPU), SIGKILL at each point of a save" native_kill_during_save
  [ -n "${SKIP_ENGINE_RESHARD:-}" ] || stage "fsdp2 resharding 2 -> 1 over gloo (CPU)" fsdp2_reshard_cpu
  [ -n "${SKIP_ENGINE_CONTROLS:-}" ] || stage "fsdp2's negative controls on the GPU" fsdp2_controls
  [ -n "${SKIP_FRAMEWORKS:-}" ] || stage "hf-trainer and lightning on the GPU" framework_engines
  [ -n "${SKIP_FRAMEWORK_ROUNDTRIPS:-}" ] ||
    stage "hf-trainer and lightning round trips through trainlock validate (and their controls)" framework_roundtrips
fi
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$OUT/gpu.txt" || true
objdump -T build-gpu/bin/trainlock-validate | grep -c "GLIBCXX.*filesystem" | sed 's/^/filesystem symbols bound to libstdc++: /'
if [ -n "$fuzz_pid" ]; then
  log "waiting for the fuzzing"
  wait "$fuzz_pid"
  tail -20 "$OUT/fuzz.log"
fi
log "summary"
printf '  %s\n' "${status[@]}"
