#!/usr/bin/env python3
"""What users run instead of perf.matmul: torch.mm in Python on the same GPU in the same run,
by the probe's method (square bf16 matmuls into a preallocated output, bursts of back-to-back
launches of about 6 and 60 ms, best of 3 bursts after a warm-up burst) and by the common
one-liner (torch.utils.benchmark's Timer.blocked_autorange on one 8192 matmul), beside the
validator's own figures from a report.

Usage: matmul_peak.py REPORT.json > table.md"""
import json
import sys
import time

import torch
import torch.utils.benchmark as benchmark


def bursts(n, burst_s):
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    out = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
    flops = 2.0 * n ** 3
    count = max(2, round(burst_s / (flops / 800e12)))
    fastest = float("inf")
    for rnd in range(4):
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(count):
            torch.mm(a, b, out=out)
        torch.cuda.synchronize()
        if rnd:
            fastest = min(fastest, (time.perf_counter() - start) / count)
    return flops / fastest / 1e12


def main():
    report = json.load(open(sys.argv[1]))
    perf = next((c for c in report["checks"] if c["id"] == "perf.matmul"), {})
    rows = perf.get("metrics", {}).get("devices", [{}])
    validator = rows[0].get("method", {}).get("tflops_by_size", {}) if rows else {}
    print(f"GPU {torch.cuda.get_device_name()}, torch {torch.__version__}")
    print("\n| size / burst | validator (C++, at::mm_out) TFLOP/s | Python torch.mm TFLOP/s |")
    print("|---|---|---|")
    for n in (4096, 8192, 12288, 16384):
        for label, s in (("6ms", 0.006), ("60ms", 0.060)):
            key = f"{n}/{label}"
            v = validator.get(key)
            print(f"| {key} | {v:.1f} |" if v else f"| {key} | - |", f" {bursts(n, s):.1f} |")
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    t = benchmark.Timer("torch.mm(a, a)", globals={"a": a, "torch": torch}).blocked_autorange(min_run_time=2)
    print(f"\ntorch.utils.benchmark Timer.blocked_autorange, 8192 bf16, 2 s: "
          f"{2.0 * 8192 ** 3 / t.median / 1e12:.1f} TFLOP/s (median)")
    print(f"perf.matmul in the report: {perf.get('status')}: {perf.get('summary')}")


main()
