#!/usr/bin/env python3
"""One row per GPU from a merged report of `trainlock validate DIR --nproc auto`.

Each rank's round trip (train.step throughput and peak memory, train.roundtrip status and the
digest of its uninterrupted run) beside rank 0's perf.matmul / perf.hbm for that device, and
the merged verdicts of the checks the ranks share:

    python3 bench/rank_table.py report.json > per-gpu.md
"""
import json
import sys


def check(report, check_id):
    for c in report.get("checks", []):
        if c.get("id") == check_id:
            return c
    return {}


def perf_by_index(report, check_id):
    devices = check(report, check_id).get("metrics", {}).get("devices", [])
    return {d.get("index"): d.get("value") for d in devices}


def gib(value):
    return f"{value / 2**30:.1f}" if isinstance(value, (int, float)) and value >= 0 else "-"


def number(value, scale=1):
    return f"{value * scale:.0f}" if isinstance(value, (int, float)) else "-"


def main(path):
    with open(path) as f:
        report = json.load(f)
    matmul = perf_by_index(report, "perf.matmul")
    hbm = perf_by_index(report, "perf.hbm")
    print(f"{len(report.get('ranks', []))} ranks, verdict {report.get('verdict')}, "
          f"{report.get('duration_s', 0):.1f} s\n")
    print("| rank | device | tokens/s | step s | peak alloc GiB | peak reserved GiB "
          "| train.roundtrip | digest | perf.matmul TFLOP/s | perf.hbm GB/s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for entry in report.get("ranks", []):
        rank = entry.get("rank")
        if "error" in entry:
            print(f"| {rank} | - | {entry['error']} | | | | | | | |")
            continue
        train = entry.get("train", {})
        index = entry.get("local_rank")
        status = entry.get("checks", {}).get("train.roundtrip", {}).get("status", "-")
        mm, bw = matmul.get(index), hbm.get(index)
        print(f"| {rank} | {entry.get('device')} | {train.get('tokens_per_s', 0):.0f} "
              f"| {train.get('step_time_s', 0):.3f} | {gib(train.get('peak_allocated_bytes'))} "
              f"| {gib(train.get('peak_reserved_bytes'))} | {status} "
              f"| {train.get('reference_digest', '-')[:12]} "
              f"| {number(mm)} | {number(bw, 1000)} |")
    print()
    for check_id in ("train.step", "train.roundtrip", "comm.allreduce", "comm.ddp",
                     "perf.matmul", "perf.hbm"):
        c = check(report, check_id)
        print(f"- {check_id} ({c.get('status', '-')}): {c.get('summary', '')}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: rank_table.py MERGED_REPORT.json")
    main(sys.argv[1])
