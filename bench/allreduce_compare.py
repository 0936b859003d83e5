#!/usr/bin/env python3
"""torch.distributed all_reduce bus bandwidth beside trainlock-validate's comm.allreduce.

Run the reference under torchrun on the same GPUs, with the same sizes, iteration counts and
formula as validators/comm/collectives.cc (float32 zeros, one warm-up, iterations = clamp(256 MiB /
size, 3, 20), busbw = algbw x 2(n-1)/n as nccl-tests):

    python3 -m torch.distributed.run --standalone --nproc-per-node N bench/allreduce_compare.py \
        --json torch-allreduce.json
    python3 bench/allreduce_compare.py --table comm-report.json torch-allreduce.json
"""
import argparse
import json
import os
import sys
import time


def measure(max_bytes, out):
    import torch
    import torch.distributed as dist

    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
    rows = []
    size = 1 << 20
    while size <= max_bytes:
        z = torch.zeros(size // 4, dtype=torch.float32, device="cuda")
        dist.all_reduce(z)  # warm-up
        iterations = max(3, min(20, (256 << 20) // size))
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(iterations):
            dist.all_reduce(z)
        torch.cuda.synchronize()
        seconds = (time.perf_counter() - t0) / iterations
        algbw = size / seconds / 1e9
        rows.append({"bytes": size, "iterations": iterations, "time_us": seconds * 1e6,
                     "algbw_gbps": algbw, "busbw_gbps": algbw * 2 * (world - 1) / world})
        size *= 2
    if rank == 0:
        with open(out, "w") as f:
            json.dump({"world_size": world, "torch": torch.__version__,
                       "nccl": ".".join(map(str, torch.cuda.nccl.version())), "sizes": rows}, f,
                      indent=2)
    dist.destroy_process_group()


def table(report_path, torch_path):
    report = json.load(open(report_path))
    check = next(c for c in report["checks"] if c["id"] == "comm.allreduce")
    ours = {r["bytes"]: r for r in check["metrics"]["sizes"]}
    ref = json.load(open(torch_path))
    theirs = {r["bytes"]: r for r in ref["sizes"]}
    print(f"comm.allreduce ({check['status']}) vs torch.distributed all_reduce, "
          f"{ref['world_size']} ranks, torch {ref['torch']}, NCCL {ref['nccl']}\n")
    print("| size | validator busbw GB/s | torch.distributed busbw GB/s | ratio |")
    print("|---:|---:|---:|---:|")
    ratios = []
    for size in sorted(set(ours) & set(theirs)):
        a, b = ours[size]["busbw_gbps"], theirs[size]["busbw_gbps"]
        ratios.append(a / b if b else 0)
        print(f"| {size >> 20} MiB | {a:.1f} | {b:.1f} | {ratios[-1]:.3f} |")
    peak_ours = max(r["busbw_gbps"] for r in ours.values())
    peak_theirs = max(r["busbw_gbps"] for r in theirs.values())
    print(f"\npeak busbw: validator {peak_ours:.1f} GB/s, torch.distributed {peak_theirs:.1f} GB/s, "
          f"ratio {peak_ours / peak_theirs:.3f} (target >= 0.95)")
    big = [r for s, r in zip(sorted(set(ours) & set(theirs)), ratios) if s >= 64 << 20]
    if big:
        print(f"sizes >= 64 MiB: mean ratio {sum(big) / len(big):.3f}, min {min(big):.3f}")
    return 0 if peak_ours >= 0.95 * peak_theirs else 1


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--json")
    p.add_argument("--max-mib", type=int, default=1024)
    p.add_argument("--table", nargs=2, metavar=("REPORT", "TORCH_JSON"))
    a = p.parse_args()
    if a.table:
        sys.exit(table(*a.table))
    measure(a.max_mib << 20, a.json)
