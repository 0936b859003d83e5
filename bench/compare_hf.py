#!/usr/bin/env python3
"""Tabulates the validator's train.step (from its report) against Hugging Face transformers'
LlamaForCausalLM at the same shape in the same run (hf_step.py results). The first transformers
result is the baseline the targets are judged against (what the run would use: transformers
with TrainingArguments' default AdamW); the others are shown beside it.

Targets: the validator's step time <= 1.00x the baseline's (goal 0.95x), peak allocated within
5% of the baseline's.

Usage: compare_hf.py REPORT.json HF_BASELINE.json [HF_OTHER.json ...] > table.md"""
import json
import sys

report = json.load(open(sys.argv[1]))
runs = [json.load(open(p)) for p in sys.argv[2:]]
step = next(c for c in report["checks"] if c["id"] == "train.step")["metrics"]
gib = 2 ** 30
det = step.get("deterministic", {})
print(f"validator: train.step mode {step.get('mode', '?')}, step times {step.get('step_times_s')}")
print(f"transformers {runs[0]['transformers']}, torch {runs[0]['torch']}, {runs[0]['device']}; "
      f"TrainingArguments default optim: {runs[0]['trainer_default_optim']}")
print()
header = "| metric | validator (C++, LibTorch) |" + "".join(
    f" transformers, AdamW {r['optimizer']} | ratio |" for r in runs)
print(header)
print("|---|---|" + "---|---|" * len(runs))


def row(name, value, key, scale=1.0):
    cells = "".join(f" {r[key] / scale:.3f} | {value / (r[key] / scale):.3f} |" for r in runs)
    print(f"| {name} | {value:.3f} |{cells}")


row("step time, median (s)", step["step_time_s"], "step_time_median_s")
row("peak allocated (GiB)", step["peak_allocated_bytes"] / gib, "peak_allocated_bytes", gib)
row("peak reserved (GiB)", step["peak_reserved_bytes"] / gib, "peak_reserved_bytes", gib)
row("device used (GiB)", step["device_used_bytes"] / gib, "device_used_bytes", gib)
if det:
    print(f"| step time, deterministic kernels (s) | {det.get('step_time_s', float('nan')):.3f} |" +
          " | |" * len(runs))
base = runs[0]
time_ratio = step["step_time_s"] / base["step_time_median_s"]
alloc_ratio = step["peak_allocated_bytes"] / base["peak_allocated_bytes"]
print()
print(f"step time <= 1.00x transformers ({base['optimizer']}): {'yes' if time_ratio <= 1.0 else 'NO'} "
      f"({time_ratio:.3f}; goal 0.95); peak allocated within 5%: "
      f"{'yes' if abs(alloc_ratio - 1) <= 0.05 else 'NO'} ({alloc_ratio:.3f})")
