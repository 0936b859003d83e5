#!/usr/bin/env python3
"""Tabulates the validator's train.step against the Python eager reference (python_step.py)
from the same run: peak allocated within 10%, step time at most 1.05x Python's. The first
Python file is the like-for-like reference (deterministic algorithms, as the validator runs
for its bitwise resume test); a second, optional one is PyTorch's default (nondeterministic)
mode, shown for information.

Usage: compare_step.py REPORT.json PYTHON_DETERMINISTIC.json [PYTHON_DEFAULT.json] > table.md"""
import json
import sys

report = json.load(open(sys.argv[1]))
py = json.load(open(sys.argv[2]))
default = json.load(open(sys.argv[3])) if len(sys.argv) > 3 else None
step = next(c for c in report["checks"] if c["id"] == "train.step")["metrics"]
rows = [("peak allocated (GiB)", step["peak_allocated_bytes"] / 2**30, py["peak_allocated_bytes"] / 2**30),
        ("peak reserved (GiB)", step["peak_reserved_bytes"] / 2**30, py["peak_reserved_bytes"] / 2**30),
        ("device used (GiB)", step["device_used_bytes"] / 2**30, py["device_used_bytes"] / 2**30),
        ("step time (s)", step["step_time_s"], py["step_time_s"]),
        ("step time, Python median of later steps (s)", step["step_time_s"], py["step_time_median_s"])]
if default:
    rows.append(("step time vs Python default (nondeterministic) mode (s)", step["step_time_s"],
                 default["step_time_s"]))
    rows.append(("peak allocated vs Python default mode (GiB)", step["peak_allocated_bytes"] / 2**30,
                 default["peak_allocated_bytes"] / 2**30))
print("| metric | validator (C++) | Python eager | ratio |")
print("|---|---|---|---|")
for name, v, p in rows:
    print(f"| {name} | {v:.3f} | {p:.3f} | {v / p:.3f} |")
alloc_ratio = step["peak_allocated_bytes"] / py["peak_allocated_bytes"]
time_ratio = step["step_time_s"] / py["step_time_s"]
print()
print(f"peak allocated within 10%: {'yes' if abs(alloc_ratio - 1) <= 0.10 else 'NO'} ({alloc_ratio:.3f}); "
      f"step time <= 1.05x: {'yes' if time_ratio <= 1.05 else 'NO'} ({time_ratio:.3f})")
