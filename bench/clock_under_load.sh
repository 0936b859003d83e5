#!/usr/bin/env bash
# Issue #60 data (bench/clock_under_load.py says what each load is): the GEMM and training loads
# at the power cap beside nvidia-smi at 200 ms, then the pilot's `trainlock validate` beside it,
# the validator built in the background (nice 19) while the loads run.
# On the device machine, in the repository root, with .toml carried (ci/gpu.sh says why):
#   bash bench/clock_under_load.sh   (everything comes back in $OUT/clock.tar.gz and $OUT/*.json)
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
OUT=${OUT:-/tmp/out}; W=/tmp/clk; mkdir -p "$W" "$OUT"
# Where the script is on the device machine: bench/ once merged, a carried copy before.
SCRIPT=${CLOCK_SCRIPT:-bench/clock_under_load.py}
T0=$(date +%s)
log() { echo "== $(date -u +%H:%M:%S) (+$(( $(date +%s) - T0 ))s) $*"; }
pack() { tar czf "$OUT/clock.tar.gz" -C "$W" . ; }
nvidia-smi >"$W/nvidia-smi.txt" 2>&1
nvidia-smi -q -d POWER,CLOCK,PERFORMANCE,TEMPERATURE >"$W/nvidia-smi-q-before.txt" 2>&1
nvidia-smi --help-query-gpu >"$W/help-query-gpu.txt" 2>&1
python3 -c 'import torch, transformers; print("torch", torch.__version__, "transformers", transformers.__version__, torch.cuda.get_device_name(0))' | tee "$W/versions.txt"
git log --oneline -1 2>/dev/null | tee -a "$W/versions.txt"
head -12 "$W/nvidia-smi.txt"
build() {  # ci/gpu.sh's configure, build and the pilot's custom op, for two targets only
  local prefix nccl archs
  prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
  nccl=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "include"))' 2>/dev/null)
  [ -f "$nccl/nccl.h" ] || nccl=$(dirname "$(find /usr/include /usr/local -name nccl.h 2>/dev/null | head -1)")
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_PREFIX_PATH="$prefix" \
    -DTOMLPP_INCLUDE_DIR="$PWD/.toml" -DTRAINLOCK_NCCL_INCLUDE="$nccl" -DTRAINLOCK_WERROR=OFF || return 1
  cmake --build build-gpu -j 15 --target trainlock trainlock-validate || return 1
  archs=$(build-gpu/bin/trainlock archs examples/h200-pilot --target cuda) || return 1
  cmake -S examples/ops -B build-gpu/ops-pilot -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$prefix" -DTRAINLOCK_OPS_CUDA_ARCHS="$archs" -DTRAINLOCK_OPS_CUDA_PTX= || return 1
  cmake --build build-gpu/ops-pilot -j 15 || return 1
  mkdir -p examples/h200-pilot/ops && cp build-gpu/ops-pilot/libtrainlock_ops.so examples/h200-pilot/ops/
}
log "build (background, nice 19)"
( export -f build; timeout 400 nice -n 19 bash -c build ) >"$W/build.log" 2>&1 &
bpid=$!
log "gemm"
python3 "$SCRIPT" gemm --seconds 70 --out "$W" 2>"$W/gemm.stderr" || tail -20 "$W/gemm.stderr"
pack
log "train"
python3 "$SCRIPT" train --seconds 70 --out "$W" 2>"$W/train.stderr" || tail -20 "$W/train.stderr"
pack
log "waiting for the build"
wait "$bpid"; brc=$?
log "build exit $brc"
[ "$brc" -eq 0 ] || tail -30 "$W/build.log"
if [ "$brc" -eq 0 ]; then
  log "pilot"
  timeout 170 python3 "$SCRIPT" wrap --name pilot --out "$W" -- \
    build-gpu/bin/trainlock validate examples/h200-pilot --out "$W/pilot-report.json" \
    --work-dir /tmp/work-pilot >"$W/pilot.log" 2>&1
  echo "pilot exit $?"; grep -E "^  (PASS|FAIL|ERROR|SKIP)|^verdict|^pilot on" "$W/pilot.log" | head -30
  python3 "$SCRIPT" reports "$W/pilot-report.json"
fi
nvidia-smi -q -d POWER,CLOCK,PERFORMANCE,TEMPERATURE >"$W/nvidia-smi-q-after.txt" 2>&1
pack
cp "$W"/*.json "$OUT"/ 2>/dev/null
ls -la "$W" "$OUT"
log "done"
