#!/usr/bin/env python3
"""A plain FSDP2 training script, written from PyTorch's documentation (the FSDP2 `fully_shard`
tutorial, torch.distributed.checkpoint's async_save and staging API) as a user would write it,
not from trainlock's fsdp2 engine: the yardstick ci/gpu.sh holds the engine's train.step and
save blocking time against, on the same machine in the same call.

The shape is the project's own config (e.g. examples/h200-pilot/configs/llama-1b.yaml):
transformers' LlamaForCausalLM with sdpa attention built on the CPU, fully_shard on each
decoder layer and then the root over a 1-D mesh, MixedPrecisionPolicy(bf16 parameters, fp32
reductions) when the config trains bf16, torch's AdamW with the config's hyper-parameters,
gradient clipping at the config's grad_clip, grad_accum micro-steps (gradient sync on the last),
the loss computed in fp32 and the logits dropped before backward (torchtitan's loop), and the
run's kernels: deterministic algorithms only when the config says `deterministic: true`
(trainlock's default is false). Random tokens, made before each step's timer.

Measured: the median step time over --steps steps after --warmup steps, the peak allocated and
reserved device memory over those steps (largest rank), then --saves plain
`dcp.async_save(state)` calls of the model + optimizer state (get_state_dict), each followed by
one training step: blocking_s is the time from the save's start (making the stager, the
get_state_dict call, as the engine's clock starts at its save's start) until async_save returned
(state_dict_s the part before async_save), staging_wait_s the time
that step's optimizer.step() waited for the staged copy (torch's DefaultStager with async
staging, where the torch has it), save_blocking_s their sum, upload_s the time until the
upload's future resolved. Because the staging thread competes with training for the
interpreter and the host, a save can also stretch the step that follows it without making
optimizer.step() wait: staged_s is the time from async_save's return until the staged copy
was complete, step_after_save_s that following step's synchronised wall time, and stall_s
blocking_s plus how much longer that step took than the median step (the save's whole cost
to the training timeline, at least save_blocking_s). Each save line also says how long making
its stager took (stager_s, inside state_dict_s) and the garbage collector's pauses inside
blocking_s (gc_collections, gc_s); --sample-later-saves adds where the main thread was during
every save after the first (a diagnosis of their longer blocking; the first save, the one
compared with the engine's, is never sampled).

Output: JSON lines on stdout (rank 0): one `step` line per timed step, one `save` line per
save, and a last `result` line with everything.
Usage: [torchrun --nproc-per-node N] bench/fsdp2_plain.py --config CONFIG.yaml
       [--warmup 3] [--steps 5] [--saves 2] [--sample-later-saves] [--checkpoint-dir DIR]
"""
import argparse
import collections
import gc
import inspect
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn.functional as F


def emit(rank, **line):
    if rank == 0:
        print(json.dumps(line), flush=True)


def llama(model_cfg, seq_len):
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=model_cfg["vocab_size"], hidden_size=model_cfg["hidden_size"],
        intermediate_size=model_cfg["intermediate_size"], num_hidden_layers=model_cfg["num_layers"],
        num_attention_heads=model_cfg["num_heads"], num_key_value_heads=model_cfg["num_kv_heads"],
        max_position_embeddings=seq_len, rms_norm_eps=model_cfg.get("norm_eps", 1e-5),
        tie_word_embeddings=model_cfg.get("tie_embeddings", False), use_cache=False)
    config.rope_theta = model_cfg.get("rope_theta", 10000.0)
    config._attn_implementation = "sdpa"
    return LlamaForCausalLM(config)


def stager(cuda):
    """torch's DefaultStager (pinned buffers, async staging, non-blocking copies) where this
    torch has it and async_save takes it; else None (async_save stages before returning)."""
    if not cuda or "async_stager" not in inspect.signature(dcp.async_save).parameters:
        return None
    try:
        from torch.distributed.checkpoint.staging import DefaultStager, StagingOptions
    except ImportError:
        return None
    return DefaultStager(StagingOptions(use_pinned_memory=True, use_shared_memory=False,
                                        use_async_staging=True, use_non_blocking_copy=True))


class Run:
    def __init__(self, cfg, device):
        from torch.distributed.checkpoint.state_dict import get_state_dict  # noqa: F401 - fail early
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        self.m, self.t, self.device = cfg["model"], cfg["training"], device
        torch.manual_seed(cfg.get("seed", 0) if isinstance(cfg.get("seed"), int) else 0)
        model = llama(self.m, self.t["seq_len"])
        if self.t.get("activation_checkpointing"):
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        mesh = init_device_mesh(device.type, (dist.get_world_size(),))
        bf16 = self.t.get("precision") == "bf16"
        policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32) if bf16 else MixedPrecisionPolicy()
        for layer in model.model.layers:
            fully_shard(layer, mesh=mesh, mp_policy=policy)
        fully_shard(model, mesh=mesh, mp_policy=policy)
        self.model = model
        o = self.t["optimizer"]
        betas = tuple(o.get("betas", (0.9, 0.999)))
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=o["lr"], betas=betas, eps=o.get("eps", 1e-8),
                                           weight_decay=o.get("weight_decay", 0.0))
        self.gen = torch.Generator(device=device).manual_seed(1234 + dist.get_rank())
        self.staging = None  # the pending save's staging future

    def batches(self):
        shape = (self.t["micro_batch"], self.t["seq_len"] + 1)
        windows = [torch.randint(0, self.m["vocab_size"], shape, device=self.device, generator=self.gen)
                   for _ in range(self.t.get("grad_accum", 1))]
        return [(w[:, :-1], w[:, 1:]) for w in windows]

    def step(self, batches):
        """One optimizer step; returns the seconds optimizer.step() waited for a staged copy."""
        self.optimizer.zero_grad(set_to_none=True)
        for i, (inputs, targets) in enumerate(batches):
            self.model.set_requires_gradient_sync(i == len(batches) - 1)
            logits = self.model(input_ids=inputs).logits
            loss = F.cross_entropy(logits.flatten(0, 1).float(), targets.flatten(0, 1))
            del logits  # as torchtitan: the output is not kept through backward
            (loss / len(batches)).backward()
        if self.t.get("grad_clip", 0) > 0:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.t["grad_clip"])
        waited = 0.0
        if self.staging is not None:  # the staged copy must be complete before the update
            started = time.perf_counter()
            self.staging.result()
            waited, self.staging = time.perf_counter() - started, None
        self.optimizer.step()
        return waited


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def train(run, args, rank):
    times = []
    for n in range(args.warmup + args.steps):
        batches = run.batches()
        sync(run.device)
        if n == args.warmup and run.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(run.device)
        started = time.perf_counter()
        run.step(batches)
        sync(run.device)
        if n >= args.warmup:
            times.append(time.perf_counter() - started)
            emit(rank, event="step", step=n + 1, step_time_s=times[-1])
    cuda = run.device.type == "cuda"
    peaks = torch.tensor([torch.cuda.max_memory_allocated(run.device), torch.cuda.max_memory_reserved(run.device)] if cuda else [-1, -1],
                         dtype=torch.int64, device=run.device)
    dist.all_reduce(peaks, op=dist.ReduceOp.MAX)
    return times, int(peaks[0]), int(peaks[1])


class GcPauses:
    """Counts the garbage collector's pauses (gc.callbacks) from construction until stop()."""

    def __init__(self):
        self.count, self.seconds, self._began = 0, 0.0, None
        gc.callbacks.append(self._seen)

    def _seen(self, phase, _info):
        if phase == "start":
            self._began = time.perf_counter()
        elif self._began is not None:
            self.count, self.seconds, self._began = self.count + 1, self.seconds + time.perf_counter() - self._began, None

    def stop(self):
        gc.callbacks.remove(self._seen)


class MainThreadSampler:
    """Where the main thread is, sampled every millisecond from a thread (sys._current_frames)
    until stop(): {"file:line function": samples} for the innermost frame and the innermost
    torch.distributed frame. A diagnosis of a slow save only (the sampler takes the interpreter
    lock itself), so never on the save compared with the engine's."""

    def __init__(self):
        self.main, self.counts, self.running = threading.get_ident(), collections.Counter(), True
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while self.running:
            frame = sys._current_frames().get(self.main)
            inner, dist_frame = None, None
            while frame is not None:
                here = "%s:%d %s" % (frame.f_code.co_filename.rsplit("site-packages/", 1)[-1], frame.f_lineno, frame.f_code.co_name)
                inner = inner or here
                if dist_frame is None and "torch/distributed" in frame.f_code.co_filename:
                    dist_frame = here
                frame = frame.f_back
            self.counts["inner " + str(inner)] += 1
            self.counts["dist " + str(dist_frame)] += 1
            time.sleep(0.001)

    def stop(self):
        self.running = False
        self.thread.join()
        return dict(self.counts.most_common(24))


def staged_clock(response, started):
    """[seconds from `started` until the staging future resolved], filled in by its callback."""
    seen = [None]
    staging = getattr(response, "staging_completion", None)
    if staging is not None:
        staging.add_done_callback(lambda _f: seen.__setitem__(0, time.perf_counter() - started))
    return seen


def timed_step(run):
    """(seconds optimizer.step() waited for the staged copy, the step's synchronised wall time)."""
    batches = run.batches()
    sync(run.device)
    started = time.perf_counter()
    waited = run.step(batches)
    sync(run.device)
    return waited, time.perf_counter() - started


def save(run, args, rank, directory, median_step):
    from torch.distributed.checkpoint.state_dict import get_state_dict

    saves = []
    for n in range(args.saves):
        # A DefaultStager per save: torch 2.11's fails when reused (pytorch/pytorch#183413, the
        # workaround its report gives).
        # The clock starts where the user's save starts (the stager, the state dict), as the
        # engine's save_blocking_s does; the previous timed step left the device idle.
        pauses = GcPauses()
        sampler = MainThreadSampler() if args.sample_later_saves and n > 0 else None
        started = time.perf_counter()
        stage = stager(run.device.type == "cuda")
        stager_s = time.perf_counter() - started
        model_sd, optim_sd = get_state_dict(run.model, run.optimizer)
        state_dict_s = time.perf_counter() - started
        target = os.path.join(directory, "step-%d" % n)
        extra = {"async_stager": stage} if stage is not None else {}
        response = dcp.async_save({"model": model_sd, "optim": optim_sd}, checkpoint_id=target, **extra)
        blocking = time.perf_counter() - started
        pauses.stop()
        where = sampler.stop() if sampler is not None else None
        staged = staged_clock(response, started + blocking)
        run.staging = getattr(response, "staging_completion", None)
        upload = getattr(response, "upload_completion", response)
        waited, wall = timed_step(run)  # training goes on; its update waits for the staged copy
        upload.result()
        row = {"save": n + 1, "state_dict_s": state_dict_s, "blocking_s": blocking, "staging_wait_s": waited, "save_blocking_s": blocking + waited,
               "staged_s": staged[0], "step_after_save_s": wall, "stall_s": blocking + max(0.0, wall - median_step),
               "upload_s": time.perf_counter() - started, "stager": type(stage).__name__ if stage else None,
               "stager_s": stager_s, "gc_collections": pauses.count, "gc_s": pauses.seconds}
        if where is not None:
            row["main_thread_samples"] = where
        emit(rank, event="save", **row)
        saves.append(row)
        if stage is not None:
            stage.close()
        dist.barrier()
        if rank == 0:
            shutil.rmtree(target, ignore_errors=True)  # one 16 GB pilot state on disk at a time
    own = dict(saves[0]) if saves else None
    if own is not None:
        # async_save's own staging (no stager), for the table's second yardstick.
        started = time.perf_counter()
        model_sd, optim_sd = get_state_dict(run.model, run.optimizer)
        response = dcp.async_save({"model": model_sd, "optim": optim_sd}, checkpoint_id=os.path.join(directory, "own"))
        blocking = time.perf_counter() - started
        run.staging = None
        _, wall = timed_step(run)
        getattr(response, "upload_completion", response).result()
        dist.barrier()
        if rank == 0:
            shutil.rmtree(os.path.join(directory, "own"), ignore_errors=True)
        row = {"save": "own-staging", "blocking_s": blocking, "staging_wait_s": 0.0, "save_blocking_s": blocking,
               "staged_s": 0.0, "step_after_save_s": wall, "stall_s": blocking + max(0.0, wall - median_step),
               "upload_s": time.perf_counter() - started, "stager": None}
        emit(rank, event="save", **row)
        saves.append(row)
    return saves


def main():
    p = argparse.ArgumentParser(description="A plain FSDP2 training step and dcp.async_save at a project config's shape.")
    p.add_argument("--config", required=True, help="the project's training config (YAML)")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--saves", type=int, default=2)
    p.add_argument("--sample-later-saves", action="store_true",
                   help="sample where the main thread is during every save after the first (a diagnosis)")
    p.add_argument("--checkpoint-dir", help="where the saves go (default: a temporary directory, removed)")
    args = p.parse_args()
    import yaml

    with open(args.config) as f:
        cfg = yaml.safe_load(f)
    t = cfg["training"]
    if t.get("deterministic", False):  # the run's kernels: deterministic only when asked
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True)
    cuda = torch.cuda.is_available()
    if "WORLD_SIZE" not in os.environ:  # one process without torchrun
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=os.environ.get("MASTER_PORT", "29512"), RANK="0", WORLD_SIZE="1")
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0"))) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    dist.init_process_group("cpu:gloo,cuda:nccl" if cuda else "gloo")  # async_save needs a CPU backend
    rank = dist.get_rank()
    run = Run(cfg, device)
    times, allocated, reserved = train(run, args, rank)
    directory = args.checkpoint_dir or tempfile.mkdtemp(prefix="fsdp2-plain-")
    saves = save(run, args, rank, directory, statistics.median(times)) if args.saves > 0 else []
    import transformers

    emit(rank, event="result", script="fsdp2_plain", torch=torch.__version__, transformers=transformers.__version__,
         world_size=dist.get_world_size(), device_name=torch.cuda.get_device_name(device) if cuda else "cpu",
         deterministic=bool(t.get("deterministic", False)), warmup_steps=args.warmup, step_times_s=times,
         step_time_s=statistics.median(times), peak_allocated_bytes=allocated, peak_reserved_bytes=reserved,
         tokens_per_step=t["micro_batch"] * t["seq_len"] * t.get("grad_accum", 1) * dist.get_world_size(),
         saves=saves, save_blocking_s=saves[0]["save_blocking_s"] if saves else None,
         save_stall_s=saves[0]["stall_s"] if saves else None)
    dist.barrier()
    if not args.checkpoint_dir and rank == 0:
        shutil.rmtree(directory, ignore_errors=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
