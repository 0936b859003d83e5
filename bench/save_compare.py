#!/usr/bin/env python3
"""Checkpoint save speed: the validator against PyTorch and the disk.

Compares, on the same disk in the same run (ci/gpu.sh runs it right after the pilot):
  - the validator's save of the pilot's full training state (fp32 parameters and AdamW
    moments), as train.roundtrip reports it (save_s, checkpoint_bytes; every file fsynced);
  - Python's torch.save of the same state (a model of the same shape on the GPU, AdamW state
    materialised by one step), timed to the end of torch.save and to the end of os.fsync;
  - torch.distributed.checkpoint.async_save of the same state (one process, Gloo for its
    background collective), timed to its return (what training is blocked for) and to the end
    of its future (files written and fsynced: durable), beside the validator's own asynchronous
    save (train.roundtrip's save_blocking_s and save_s);
  - dd if=/dev/zero ... conv=fsync of the same number of bytes (the disk's streaming write),
    and the same bytes split over parallel dd writers (the disk's ceiling for parallel writes).

Usage: save_compare.py REPORT.json CONFIG.yaml DIR [--json OUT.json]
DIR must be on the disk the validator wrote its checkpoint to; files written there are
removed afterwards. Prints a Markdown table."""
import argparse
import json
import os
import subprocess
import sys
import time

import torch
import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from python_step import Llama  # noqa: E402  (the same model definition as the step reference)


def validator_save(report_path):
    report = json.load(open(report_path))
    roundtrip = next(c for c in report["checks"] if c["id"] == "train.roundtrip")
    m = roundtrip["metrics"]
    return {"bytes": m["checkpoint_bytes"], "seconds": m["save_s"],
            "blocking_seconds": m.get("save_blocking_s")}


def pilot_state(config_path):
    """A model of the pilot's shape on the GPU with its AdamW state materialised by one step."""
    cfg = yaml.safe_load(open(config_path))
    torch.manual_seed(0)
    model = Llama(cfg["model"]).to("cuda")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for p in model.parameters():
        p.grad = torch.randn_like(p)
    opt.step()  # creates exp_avg and exp_avg_sq for every parameter
    for p in model.parameters():
        p.grad = None
    torch.cuda.synchronize()
    return model, opt


def dcp_async_save(model, opt, directory):
    """torch.distributed.checkpoint.async_save: blocked until it returns, durable at the end of
    its future. Measured twice: the first call also sets up its staging, the second is the
    steady state a long run sees at every save."""
    import shutil
    import torch.distributed as dist
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict
    if not dist.is_initialized():
        dist.init_process_group("cpu:gloo,cuda:nccl", rank=0, world_size=1,
                                init_method="tcp://127.0.0.1:29517")
    model_sd, opt_sd = get_state_dict(model, opt)
    runs = []
    for i in range(2):
        path = os.path.join(directory, f"dcp-{i}")
        os.sync()
        start = time.perf_counter()
        future = dcp.async_save({"model": model_sd, "optimizer": opt_sd}, checkpoint_id=path)
        blocked = time.perf_counter() - start
        future.result()
        durable = time.perf_counter() - start
        size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(path) for f in fs)
        shutil.rmtree(path)
        runs.append({"bytes": size, "blocking_seconds": blocked, "seconds": durable})
    return {"first": runs[0], "steady": runs[1]}


def torch_save(model, opt, directory):
    state = {"model": model.state_dict(), "optimizer": opt.state_dict()}
    path = os.path.join(directory, "torch-save.pt")
    os.sync()
    start = time.perf_counter()
    with open(path, "wb") as f:
        torch.save(state, f)
        serialized = time.perf_counter() - start
        f.flush()
        os.fsync(f.fileno())
    durable = time.perf_counter() - start
    size = os.path.getsize(path)
    os.remove(path)
    return {"bytes": size, "seconds_to_return": serialized, "seconds": durable}


def dd(bytes_, directory):
    path = os.path.join(directory, "dd.bin")
    block = 64 << 20
    count = (bytes_ + block - 1) // block
    os.sync()
    start = time.perf_counter()
    subprocess.run(["dd", "if=/dev/zero", f"of={path}", f"bs={block}", f"count={count}",
                    "conv=fsync"], check=True, stderr=subprocess.DEVNULL)
    seconds = time.perf_counter() - start
    size = os.path.getsize(path)
    os.remove(path)
    return {"bytes": size, "seconds": seconds}


def dd_parallel(bytes_, directory, streams):
    """The same bytes as `streams` concurrent dd writers (the validator writes its shards in
    parallel): the disk's ceiling under parallel writes, for context."""
    block = 64 << 20
    count = (bytes_ // streams + block - 1) // block
    paths = [os.path.join(directory, f"dd-{i}.bin") for i in range(streams)]
    os.sync()
    start = time.perf_counter()
    procs = [subprocess.Popen(["dd", "if=/dev/zero", f"of={p}", f"bs={block}", f"count={count}",
                               "conv=fsync"], stderr=subprocess.DEVNULL) for p in paths]
    if any(p.wait() != 0 for p in procs):
        raise SystemExit("dd failed")
    seconds = time.perf_counter() - start
    size = sum(os.path.getsize(p) for p in paths)
    for p in paths:
        os.remove(p)
    return {"bytes": size, "seconds": seconds, "streams": streams}


def gbps(r):
    return r["bytes"] / r["seconds"] / 1e9


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("report")
    parser.add_argument("config")
    parser.add_argument("dir")
    parser.add_argument("--json")
    args = parser.parse_args()
    os.makedirs(args.dir, exist_ok=True)
    v = validator_save(args.report)
    model, opt = pilot_state(args.config)
    t = torch_save(model, opt, args.dir)
    try:
        a = dcp_async_save(model, opt, args.dir)
    except Exception as e:  # recorded, not hidden: the table says why the row is missing
        a = {"error": f"{type(e).__name__}: {e}"}
    d = dd(v["bytes"], args.dir)
    dp = dd_parallel(v["bytes"], args.dir, min(16, os.cpu_count() or 1))
    result = {"validator": v, "torch_save": t, "dcp_async_save": a, "dd_conv_fsync": d,
              "dd_parallel": dp,
              "speedup_vs_torch_save": t["seconds"] / v["seconds"] * v["bytes"] / t["bytes"],
              "fraction_of_dd": gbps(v) / gbps(d)}
    if args.json:
        json.dump(result, open(args.json, "w"), indent=2)
    print("| writer | bytes | training blocked (s) | durable (s) | GB/s to durable |")
    print("|---|---|---|---|---|")
    vb = v.get("blocking_seconds")
    print(f"| validator, async (stage to pinned host memory, sharded parallel write, SHA-256 inline, fsync, atomic rename) "
          f"| {v['bytes']:,} | {vb if vb is None else f'{vb:.2f}'} | {v['seconds']:.2f} | {gbps(v):.2f} |")
    if "error" in a:
        print(f"| torch.distributed.checkpoint.async_save | - | - | - | {a['error']} |")
    else:
        for name in ("first", "steady"):
            r = a[name]
            print(f"| torch.distributed.checkpoint.async_save ({name} call) | {r['bytes']:,} | "
                  f"{r['blocking_seconds']:.2f} | {r['seconds']:.2f} | {gbps(r):.2f} |")
    print()
    print("| writer | bytes | seconds | GB/s |")
    print("|---|---|---|---|")
    print(f"| validator (sharded, parallel, SHA-256 inline, fsync) | {v['bytes']:,} | {v['seconds']:.2f} | {gbps(v):.2f} |")
    print(f"| torch.save + os.fsync | {t['bytes']:,} | {t['seconds']:.2f} | {gbps(t):.2f} |")
    print(f"| torch.save (returned, before fsync) | {t['bytes']:,} | {t['seconds_to_return']:.2f} | "
          f"{t['bytes'] / t['seconds_to_return'] / 1e9:.2f} |")
    print(f"| dd if=/dev/zero bs=64M conv=fsync | {d['bytes']:,} | {d['seconds']:.2f} | {gbps(d):.2f} |")
    print(f"| {dp['streams']} x dd in parallel, conv=fsync | {dp['bytes']:,} | {dp['seconds']:.2f} | {gbps(dp):.2f} |")
    print()
    print(f"validator vs torch.save + fsync: {result['speedup_vs_torch_save']:.2f}x faster (target >= 1.5x); "
          f"validator vs dd: {result['fraction_of_dd'] * 100:.0f}% (target >= 85%); "
          f"vs parallel dd: {gbps(v) / gbps(dp) * 100:.0f}%")


if __name__ == "__main__":
    main()
