"""Pieces shared by the engines whose framework owns the training loop (hf-trainer,
lightning): they cannot use roundtrip's Driver, so they observe the loop from the framework's
callbacks and report what they saw.

    WindowDataset     data.py's training windows as a map-style torch Dataset (each item
                      names its window, so the data actually trained on is observable)
    StepRecorder      the micro-batch losses and windows of the optimizer step in progress;
                      one `step` event per optimizer step with the exact mean loss
    eval_loss         the eval windows' loss, leaving every RNG stream as it found it
    rng_snapshot / rng_matches   did the framework put the saved RNG streams back before the
                      first resumed forward? (observed, never assumed)
    Measure           the --measure-step measurement around one optimizer step, and the
                      steps of the framework's second loop with the run's kernels when the
                      config does not ask for deterministic ones (measure.py)
    emit_final_state  the `state` event (and --final-state file) of model, optimizer, RNG and
                      the observed data position
    write_run_identity / check_run_identity   which run a step directory was written for
                      (the spec's SHA-256), written before the commit marker covers it and
                      checked before a restore: a checkpoint of another spec is refused, as
                      the ddp and fsdp2 driver state refuses it
"""

import contextlib
import json
import os
import time

import torch

from .. import bounded_json, digests, final_state, measure, rng, runtime
from .. import spec as run_spec
from ..model import causal_lm_loss, matmul_parameters
from ..protocol import EngineError

AUTOCAST = {"bf16": torch.bfloat16, "fp16": torch.float16}
RUN_FILE = "trainlock-run.json"
MAX_RUN_FILE_BYTES = 4096


def write_run_identity(directory, step, spec):
    """Before the commit marker (which then covers it): the step and the spec it was written for."""
    with open(os.path.join(directory, RUN_FILE), "w") as f:
        json.dump({"step": step, "spec_sha256": spec.get("sha256")}, f)


def check_run_identity(directory, step, spec):
    """Refuses (kind `checkpoint`) a committed step directory written for another spec or step,
    or one that does not say which run wrote it."""
    path = os.path.join(directory, RUN_FILE)
    if not os.path.lexists(path):
        raise EngineError("checkpoint", "%s: no %s: not written by a trainlock engine's save" % (directory, RUN_FILE))
    try:
        written = bounded_json.load_file(path, MAX_RUN_FILE_BYTES)
    except (OSError, ValueError) as e:
        raise EngineError("checkpoint", "%s: unreadable: %s" % (path, e))
    if not isinstance(written, dict) or written.get("step") != step:
        raise EngineError("checkpoint", "%s: not step %d's" % (path, step))
    run_spec.refuse_other_run(directory, written.get("spec_sha256"), spec)


def refuse_without(engine, *modules):
    """Imports each module; the first missing one refuses the engine (kind unsupported)."""
    import importlib

    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError as e:
            raise EngineError("unsupported", "engine %s cannot import %s" % (engine, e.name or name))


def check_single_process(ctx, engine):
    if ctx.world_size > 1:
        raise EngineError("unsupported", "--nproc %d: engine %s runs the round trip in one process" % (ctx.world_size, engine))


def check_precision(spec, device):
    precision = spec["training"]["precision"]
    if precision != "fp32" and device.type != "cuda":
        raise EngineError("unsupported", "training.precision %s needs a CUDA device; this process runs on %s" % (precision, device))


def autocast(spec, device):
    dtype = AUTOCAST.get(spec["training"]["precision"])
    if dtype is None or device.type != "cuda":
        return contextlib.nullcontext()
    return torch.autocast(device_type="cuda", dtype=dtype)


class WindowDataset(torch.utils.data.Dataset):
    def __init__(self, loader):
        self.loader = loader

    def __len__(self):
        return self.loader.train_windows

    def __getitem__(self, index):
        tokens = torch.tensor(self.loader.window(int(index)), dtype=torch.long)
        return {"input_ids": tokens[:-1], "targets": tokens[1:], "window": torch.tensor(int(index), dtype=torch.long)}


class StepRecorder:
    """Each micro-batch's loss and windows, kept as tensors until the optimizer step ends:
    reading them mid-step (the framework moved the batch to the device) would wait for the
    forward pass and stall the launch queue: the suspected cause of the lightning engine's step
    measuring twice the framework's own loop's at a launch-bound shape
    (bench/results/2026-12-02-h200-engine-files; not yet measured again with this change)."""

    def __init__(self):
        self.losses, self.windows, self.last_windows = [], [], []

    def micro(self, loss, windows):
        self.losses.append(loss.detach().float())
        self.windows.append(windows.detach().reshape(-1))

    def step_loss(self, step):
        """The optimizer step's loss: the mean of its micro-batch losses."""
        if not self.losses:
            raise EngineError("training", "step %d ended with no micro-batch loss recorded" % step, step=step)
        loss = float(torch.stack(self.losses).mean().item())
        windows = [int(w) for t in self.windows for w in t.tolist()]
        self.last_windows, self.losses, self.windows = windows, [], []
        if loss != loss or loss in (float("inf"), float("-inf")):
            raise EngineError("non_finite_loss", "step %d's loss is %r" % (step, loss), step=step)
        return loss

    def position(self, step):
        """The observed data position: the windows the last optimizer step trained on."""
        return {"step": step, "windows": list(self.last_windows)}


def hf_logits(model, inputs):
    return model(input_ids=inputs).logits


def eval_loss(model, loader, spec, device):
    saved = rng.capture()  # evaluation must leave every stream where training left it
    was_training = model.training
    model.eval()
    mb = spec["training"]["micro_batch"]
    with torch.no_grad(), autocast(spec, device):
        batches = [loader.eval_batch(i, mb, device) for i in range(spec["eval_batches"])]
        total = sum(causal_lm_loss(hf_logits(model, x), y).float() for x, y in batches) / len(batches)
    model.train(was_training)
    rng.restore(saved)
    return float(total.item())


def _compared_streams(state, device):
    streams = rng.streams(state)
    keep = {"python", "torch_cpu", "numpy"}
    if device.type == "cuda":
        keep.add("cuda:%d" % (device.index or 0))
    return digests.digest_all({k: v for k, v in streams.items() if k in keep})[0]


def rng_snapshot():
    return rng.capture()


def rng_matches(saved, device):
    """True when every stream the process draws from is, now, the saved one."""
    try:
        return _compared_streams(rng.capture(), device) == _compared_streams(saved, device)
    except (KeyError, TypeError, ValueError):
        return False


class Measure:
    """Times optimizer step `step` (0: none) between begin() and end(). When the config does
    not ask for deterministic kernels the measurement is held (reference) until the engine ran
    its framework's loop again with the run's kernels: start_run_kernels(), the loop's steps
    (the first a warm-up, the others timed through the same begin()/end()), finish_run_kernels()."""

    def __init__(self, ctx, engine, model, step):
        self.ctx, self.engine, self.model, self.step = ctx, engine, model, step
        self.timer = None
        self.reference = None
        self.timed = None  # [(StepTimer, ranks)] in the run's kernels; None in the round trip

    @property
    def wants_run_kernels(self):
        return self.reference is not None and self.timed is None

    def run_kernel_loop_steps(self):
        """Optimizer steps the second loop runs: one warm-up, then the timed ones."""
        return 1 + measure.run_kernel_steps(self.ctx.device)

    def start_run_kernels(self):
        runtime.use_run_kernels()
        self.timer, self.timed = None, []

    def finish_run_kernels(self, steps_done):
        if not self.timed:
            raise EngineError("training", "the framework's loop with the run's kernels timed no step")
        self.ctx.emit("measurement", **measure.run_kernels_measurement(steps_done, self.reference, self.timed))

    def begin(self, step):
        if self.timed is not None:
            # Step 1 of the second loop is its warm-up; a callback called per micro-batch
            # (Lightning) does not restart the timer of the step in progress.
            if step > 1 and self.timer is None:
                self.timer = measure.StepTimer(self.ctx.device)
                self.timer.start()
            return
        if step == self.step and self.timer is None:
            self.timer = measure.StepTimer(self.ctx.device)
            self.timer.start()

    def end(self, step, grad_accum):
        if self.timed is not None:
            if self.timer is not None:
                self.timer.stop()
                self.timed.append((self.timer, measure.gather_rank_peaks(self.timer.memory, 1, self.ctx.device)))
                self.timer = None
            return
        if step != self.step or self.timer is None:
            return
        self.timer.stop()
        spec = self.ctx.spec
        t, m = spec["training"], spec["model"]
        tokens = t["micro_batch"] * t["seq_len"] * grad_accum
        seen = self.model.trainlock_logits_dtype[0]
        shape = {"engine": self.engine, "world_size": 1,
                 "param_dtype": measure.dtype_name(next(self.model.parameters()).dtype),
                 "activation_dtype": measure.dtype_name(seen) if seen is not None else None,
                 "activation_checkpointing": self.model.trainlock_recomputed[0] > 0}
        flops = measure.step_flops(m, t, tokens, matmul_parameters(m))
        ranks = measure.gather_rank_peaks(self.timer.memory, 1, self.ctx.device)
        reference = measure.measurement(step, self.timer, tokens, flops, shape, ranks)
        if measure.asks_deterministic(spec):
            self.ctx.emit("measurement", **reference)
        else:
            self.reference = reference


def set_up(run, ctx, engine):
    """What both framework engines start with, on `run`: ctx, spec, opts; the data loader;
    the seeded (or pinned) Hugging Face Llama on the device, its logits dtype watched; the step
    recorder and the measurement. Returns (the time it started, setup's `model` member)."""
    from .. import data
    from ..hf_model import build_hf_llama, watch_logits_dtype
    from ..roundtrip import seed_everything

    run.ctx, run.spec, run.opts = ctx, ctx.spec, ctx.opts
    check_precision(run.spec, ctx.device)
    started = time.perf_counter()
    seed_everything(run.spec["seed"])
    run.loader = data.loader_for(run.spec, ctx.emit, 1)
    run.model, info = build_hf_llama(run.spec, ctx.emit)
    watch_logits_dtype(run.model)
    run.model.to(ctx.device)
    run.recorder = StepRecorder()
    run.measure = Measure(ctx, engine, run.model, run.opts.measure_step)
    return started, info


def portable(ctx, model_weights):
    """ckpt.portable's process for an engine whose framework owns the checkpoint: a fresh
    model gets the newest committed checkpoint's weights (model_weights(directory): {name:
    tensor}, read without the framework) and the eval loss is reported."""
    from .. import commit, data, weights
    from ..hf_model import build_hf_llama
    from ..roundtrip import seed_everything

    started = time.perf_counter()
    seed_everything(ctx.spec["seed"])
    loader = data.loader_for(ctx.spec, ctx.emit, 1)
    model, info = build_hf_llama(ctx.spec, ctx.emit)
    ctx.emit("setup", data=loader.describe(), model=info, seconds=time.perf_counter() - started)
    step, directory, size, skipped = commit.newest_committed(ctx.opts.checkpoint_root)
    check_run_identity(directory, step, ctx.spec)
    weights.load_into(model, model_weights(directory), ctx.spec["model"]["tie_embeddings"])
    model.to(ctx.device)
    ctx.emit("restored", step=step, dir=directory, bytes=size, seconds=time.perf_counter() - started, rng_restored=False,
             data_restored=False, world_size_saved=1, data_position_carried=False, weights_only=True, skipped_uncommitted=skipped)
    ctx.emit("eval", when="portable", loss=eval_loss(model, loader, ctx.spec, ctx.device), step=step)


def emit_final_state(ctx, step, model, optimizer, position):
    names = [n for n, _ in model.named_parameters()]
    params = {n: p.detach() for n, p in model.named_parameters()}
    optim = digests.optimizer_by_name(optimizer, names)
    flat = digests.flatten_state(params, optim, rng.streams(rng.capture()), position)
    path = os.path.abspath(ctx.opts.final_state)
    ctx.emit("state", step=step, bytes=final_state.write(flat, path), file=path)
