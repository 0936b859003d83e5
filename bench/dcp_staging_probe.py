#!/usr/bin/env python3
"""Where a DCP async_save's staging time goes on this machine: one process, a state of GIB GiB
of fp32 CUDA tensors (256 MiB each), `dcp.async_save` with torch's DefaultStager (pinned
buffers, async staging, non-blocking copies), the time from async_save's return until its
staging future is done, under each kernel mode a run can be in:

  default           torch.use_deterministic_algorithms(False): what a run with
                    `deterministic: false` trains with
  deterministic     torch.use_deterministic_algorithms(True): torch then also fills every
                    new uninitialised tensor (torch.utils.deterministic.fill_uninitialized_memory)
  deterministic, no fill   the same with fill_uninitialized_memory off

and then the upload (FileSystemWriter, default single thread, fsync on) with 1, 4 and 8 writer
threads. Written from torch.distributed.checkpoint's documentation; prints one JSON line per
measurement. Not part of the suite: ci/gpu.sh runs it as the `staging probe` stage.

    python3 bench/dcp_staging_probe.py [--gib 4] [--dir /tmp/dcp-probe]
"""
import argparse
import json
import os
import shutil
import time

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp


def state(gib, device):
    n = max(1, int(gib * 4))  # 256 MiB tensors
    return {"t%03d" % i: torch.randn(64 * 2**20, device=device) for i in range(n)}


def stager():
    from torch.distributed.checkpoint.staging import DefaultStager, StagingOptions

    return DefaultStager(StagingOptions(use_pinned_memory=True, use_shared_memory=False,
                                        use_async_staging=True, use_non_blocking_copy=True))


def timed_save(sd, target, mode, threads=None):
    fill = torch.utils.deterministic.fill_uninitialized_memory
    torch.use_deterministic_algorithms(mode != "default")
    if mode == "deterministic, no fill":
        torch.utils.deterministic.fill_uninitialized_memory = False
    stage = stager()
    extra = {"async_stager": stage}
    if threads is not None:
        extra["storage_writer"] = dcp.FileSystemWriter(target, thread_count=threads)
    torch.cuda.synchronize()
    started = time.perf_counter()
    response = dcp.async_save(sd, checkpoint_id=target, **extra)
    returned = time.perf_counter() - started
    response.staging_completion.result()
    staged = time.perf_counter() - started
    response.upload_completion.result()
    uploaded = time.perf_counter() - started
    stage.close()
    torch.utils.deterministic.fill_uninitialized_memory = fill
    torch.use_deterministic_algorithms(False)
    shutil.rmtree(target, ignore_errors=True)
    return {"mode": mode, "writer_threads": threads or 1, "async_save_returned_s": round(returned, 4),
            "staged_s": round(staged, 4), "uploaded_s": round(uploaded, 4)}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--gib", type=float, default=4.0)
    p.add_argument("--dir", default="/tmp/dcp-probe")
    a = p.parse_args()
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    dist.init_process_group("cpu:gloo,cuda:nccl", rank=0, world_size=1)
    sd = state(a.gib, torch.device("cuda"))
    print(json.dumps({"torch": torch.__version__, "gib": a.gib, "tensors": len(sd)}), flush=True)
    timed_save(sd, os.path.join(a.dir, "warm"), "default")  # the first save pays CUDA's host setup
    for mode in ("default", "deterministic", "deterministic, no fill", "default"):
        print(json.dumps(timed_save(sd, os.path.join(a.dir, "s"), mode)), flush=True)
    for threads in (1, 4, 8):
        print(json.dumps(timed_save(sd, os.path.join(a.dir, "w"), "default", threads)), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
