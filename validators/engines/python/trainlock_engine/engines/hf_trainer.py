"""Engine `hf-trainer`: Hugging Face's LlamaForCausalLM (hf_model.py) trained by
transformers.Trainer, which owns the loop, the data order and the checkpoints; trainlock only
configures it from the spec and watches through a TrainerCallback.

Configured: TrainingArguments from the spec (per-device batch = micro_batch,
gradient_accumulation_steps, max_grad_norm, bf16/fp16, gradient_checkpointing, seed and
data_seed, save_strategy "steps", report_to none); torch's AdamW with the spec's
hyper-parameters, in the kernel the Trainer's own `optim` default names (fused on a recent
torch and a GPU), and the spec's warmup + cosine schedule as a LambdaLR (optim.py), handed over
through `optimizers=(optimizer, scheduler)`; the training windows (data.py) as a map-style Dataset.
The Trainer's own sampler (accelerate's seeded RandomSampler) is what decides the order, and
on resume the Trainer's own batch skipping: that is the thing under test.

Checkpoints: the callback asks the Trainer to save at each --save-at step
(control.should_save); in on_save (after the Trainer wrote the model, optimizer.pt,
scheduler.pt, rng_state.pth and trainer_state.json) the folder is renamed to trainlock's step
directory, the eval loss taken, and the commit marker written over everything: only then
`committed`. Resume: trainer.train(resume_from_checkpoint=<newest committed step directory>);
the Trainer restores model, optimizer, scheduler, its RNG file and skips the trained batches.

A run whose config does not ask for deterministic kernels (training.deterministic false) has
its step measured once more after the round trip: the Trainer's loop is run again for a few
steps with torch's default kernels (measure.py, _framework.Measure).

Observed, not assumed: `restored` is emitted at the first resumed forward, and rng_restored
says whether every RNG stream then equals the one saved with the checkpoint (a Trainer that
restores its RNG late, or lets something draw after restoring, reports false); the data
position is the list of windows the last step trained on, read from the batches the model
received. Negative controls: --no-restore-rng resumes from a copy of the checkpoint without
rng_state*.pth, --no-restore-data sets ignore_data_skip; both must make the run diverge.

One process only (--nproc 1); refused as `unsupported` without transformers or accelerate.
"""

import dataclasses
import os
import shutil
import time

import torch

from .. import bounded_json, commit, optim, rng
from ..hf_model import _count_recomputation
from ..model import causal_lm_loss
from ..protocol import EngineError
from . import _framework as fw

NAME = "hf-trainer"
OUTPUT_DIR = "hf-trainer-output"
RESUME_COPY = "hf-trainer-resume-without-rng"
MAX_TRAINER_STATE_BYTES = 64 << 20  # transformers' trainer_state.json (a log line per logging step)
RNG_FILE = "trainlock-rng.pt"  # the streams at save time, to observe the Trainer's restore


def prepare(ctx):
    fw.refuse_without(NAME, "transformers", "accelerate")
    fw.check_single_process(ctx, NAME)


def run(ctx):
    if ctx.opts.role == "portable":
        portable(ctx)
    else:
        HfTrainerRun(ctx).train()


def _training_arguments(ctx, resume):
    from transformers import TrainingArguments

    spec, opts = ctx.spec, ctx.opts
    t, o = spec["training"], spec["training"]["optimizer"]
    fields = {f.name for f in dataclasses.fields(TrainingArguments)}
    wanted = dict(
        output_dir=os.path.join(opts.checkpoint_root, OUTPUT_DIR), max_steps=opts.steps,
        per_device_train_batch_size=t["micro_batch"], gradient_accumulation_steps=t["grad_accum"],
        learning_rate=o["lr"], adam_beta1=o["beta1"], adam_beta2=o["beta2"], adam_epsilon=o["eps"],
        weight_decay=o["weight_decay"], warmup_steps=t["scheduler"]["warmup_steps"], max_grad_norm=t["grad_clip"],
        bf16=t["precision"] == "bf16", fp16=t["precision"] == "fp16",
        gradient_checkpointing=t["activation_checkpointing"], seed=spec["seed"], data_seed=spec["seed"],
        save_strategy="steps", save_steps=min(opts.save_at) if opts.save_at else opts.steps, save_total_limit=None,
        report_to=[], logging_strategy="no", disable_tqdm=True, remove_unused_columns=False,
        # The Trainer's own data loading (its default pinned host memory on a GPU): the loop a
        # user of the Trainer runs, and what train.step measures.
        dataloader_num_workers=0, dataloader_drop_last=True,
        ignore_data_skip=bool(resume and opts.no_restore_data))
    if t["activation_checkpointing"]:
        wanted["gradient_checkpointing_kwargs"] = {"use_reentrant": False}
    missing = sorted(k for k in wanted if k not in fields)
    if missing:
        import transformers

        raise EngineError("unsupported", "transformers %s's TrainingArguments has no %s" % (transformers.__version__, ", ".join(missing)))
    if ctx.device.type == "cpu":
        wanted["use_cpu" if "use_cpu" in fields else "no_cuda"] = True
    return TrainingArguments(**wanted)


def _trainer_class():
    from transformers import Trainer

    class WatchedTrainer(Trainer):
        """Computes the loss over the windows' own targets and records it per micro-batch."""

        def compute_loss(self, model, inputs, return_outputs=False, **kwargs):
            hooks = self.trainlock
            hooks.before_forward(model)
            logits = model(input_ids=inputs["input_ids"]).logits
            loss = causal_lm_loss(logits, inputs["targets"])
            hooks.recorder.micro(loss, inputs["window"])
            return (loss, {"logits": logits}) if return_outputs else loss

        def _get_train_sampler(self, *args, **kwargs):
            if not self.trainlock.ctx.spec["training"]["shuffle"]:
                return torch.utils.data.SequentialSampler(self.train_dataset)
            return super()._get_train_sampler(*args, **kwargs)

    return WatchedTrainer


def _callback_class():
    from transformers import TrainerCallback

    class Events(TrainerCallback):
        def __init__(self, run):
            self.run = run

        def on_train_begin(self, args, state, control, model=None, **kwargs):
            self.run.on_train_begin()

        def on_step_begin(self, args, state, control, **kwargs):
            self.run.ctx.step = state.global_step + 1
            self.run.measure.begin(state.global_step + 1)

        def on_step_end(self, args, state, control, **kwargs):
            control.should_save = self.run.on_step_end(state.global_step)  # overrides DefaultFlowCallback
            return control

        def on_save(self, args, state, control, **kwargs):
            self.run.on_save(args, state.global_step)

    return Events


class HfTrainerRun:
    def __init__(self, ctx):
        started, info = fw.set_up(self, ctx, NAME)
        self.resume = self._resume_point() if self.opts.restore else None
        args = _training_arguments(ctx, self.resume)
        # The AdamW kernel the Trainer would build from these arguments (adamw_torch_fused by
        # default on a recent torch): the spec's hyper-parameters, the Trainer user's kernel.
        fused = "fused" in str(getattr(args.optim, "value", args.optim)) and ctx.device.type == "cuda"
        self.optimizer = optim.build_optimizer(self.spec, self.model.parameters(), fused=fused)
        self.scheduler = optim.build_scheduler(self.spec, self.optimizer)
        info["class"] += " under transformers.Trainer"
        info["optimizer"] = "torch AdamW (%s)" % ("fused" if fused else "foreach")
        ctx.emit("setup", data=self.loader.describe(), model=info, seconds=time.perf_counter() - started)
        self.trainer = _trainer_class()(model=self.model, args=args, train_dataset=fw.WindowDataset(self.loader),
                                        optimizers=(self.optimizer, self.scheduler), callbacks=[_callback_class()(self)])
        self.trainer.trainlock = self
        self._check_device()
        self.pending_restore = self.resume is not None

    def _check_device(self):
        used = torch.device(self.trainer.args.device)
        if used.type != self.ctx.device.type or (used.type == "cuda" and (used.index or 0) != (self.ctx.device.index or 0)):
            raise EngineError("unsupported", "--device %s: transformers' Trainer trains on %s in a single process" % (self.ctx.device, used))
        if getattr(self.trainer.args, "n_gpu", 1) > 1:
            raise EngineError("unsupported", "transformers' Trainer would wrap the model in DataParallel over %d GPUs; expose one GPU" % self.trainer.args.n_gpu)

    # -- resume --------------------------------------------------------------------------
    def _resume_point(self):
        step, directory, size, skipped = commit.newest_committed(self.opts.checkpoint_root)
        fw.check_run_identity(directory, step, self.spec)
        state = _trainer_state(directory)
        if state.get("global_step") != step:
            raise EngineError("checkpoint", "%s: trainer_state.json says global_step %r" % (directory, state.get("global_step")))
        saved_rng = _read_rng(directory)
        resume_dir = directory
        if self.opts.no_restore_rng:  # the Trainer restores what it finds: give it no RNG file
            resume_dir = os.path.join(self.opts.checkpoint_root, RESUME_COPY)
            shutil.rmtree(resume_dir, ignore_errors=True)
            shutil.copytree(directory, resume_dir, ignore=shutil.ignore_patterns("rng_state*.pth"))
        return {"step": step, "dir": directory, "resume_dir": resume_dir, "bytes": size, "skipped": skipped,
                "saved_rng": saved_rng, "started": time.perf_counter()}

    def before_forward(self, model):
        """At the first resumed forward: did the Trainer put the saved RNG streams back?"""
        if not self.pending_restore or not model.training:
            return
        self.pending_restore = False
        r = self.resume
        rng_restored = r["saved_rng"] is not None and fw.rng_matches(r["saved_rng"], self.ctx.device)
        data_restored = not self.opts.no_restore_data
        self.ctx.emit("restored", step=r["step"], dir=r["dir"], bytes=r["bytes"], seconds=time.perf_counter() - r["started"],
                      rng_restored=rng_restored, data_restored=data_restored, world_size_saved=1,
                      data_position_carried=data_restored, grad_accum=self.spec["training"]["grad_accum"],
                      skipped_uncommitted=r["skipped"], resumed_from=r["resume_dir"])
        self.ctx.emit("eval", when="after_restore", loss=fw.eval_loss(self.model, self.loader, self.spec, self.ctx.device), step=r["step"])

    # -- callbacks -----------------------------------------------------------------------
    def on_train_begin(self):
        if self.spec["training"]["activation_checkpointing"]:
            _count_recomputation(self.model)  # the Trainer re-enabled checkpointing: count again

    def on_step_end(self, step):
        if self.measure.timed is not None:  # the loop with the run's kernels: timed, never saved
            self.recorder.step_loss(step)
            self.measure.end(step, self.spec["training"]["grad_accum"])
            return False
        loss = self.recorder.step_loss(step)
        self.ctx.emit("step", step=step, loss=loss)
        self.measure.end(step, self.spec["training"]["grad_accum"])
        save = step in self.opts.save_at
        if save:
            self.save_started = time.perf_counter()
            self.ctx.emit("checkpoint", phase="started", step=step, **{"async": False})
        return save

    def on_save(self, args, step):
        from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

        source = os.path.join(args.output_dir, "%s-%d" % (PREFIX_CHECKPOINT_DIR, step))
        if not os.path.exists(os.path.join(source, "trainer_state.json")):
            raise EngineError("checkpoint", "%s: the Trainer's save left no trainer_state.json" % source)
        target = commit.step_dir(self.opts.checkpoint_root, step)
        if os.path.lexists(target):
            shutil.rmtree(target)
        os.rename(source, target)
        torch.save(rng.capture(), os.path.join(target, RNG_FILE))  # no stream drew since the Trainer's save
        blocking = time.perf_counter() - self.save_started
        self.ctx.emit("eval", when="after_save", loss=fw.eval_loss(self.model, self.loader, self.spec, self.ctx.device), step=step)
        fw.write_run_identity(target, step, self.spec)
        files, size = commit.write_marker(target, step)
        seconds = time.perf_counter() - self.save_started
        self.ctx.emit("checkpoint", phase="committed", step=step, dir=target, bytes=size, seconds=seconds, blocking_s=blocking,
                      write_s=blocking, files=len(files), **{"async": False})
        commit.prune(self.opts.checkpoint_root, self.opts.keep_last)

    # -- the run -------------------------------------------------------------------------
    def train(self):
        resume_dir = self.resume["resume_dir"] if self.resume else None
        self.trainer.train(resume_from_checkpoint=resume_dir)
        if self.pending_restore:
            raise EngineError("checkpoint", "the Trainer resumed without running a step (restored step %d, --steps %d)" % (self.resume["step"], self.opts.steps))
        step = self.trainer.state.global_step
        self.ctx.step = None
        if step != self.opts.steps:
            raise EngineError("training", "the Trainer stopped at step %d, not --steps %d" % (step, self.opts.steps))
        if self.opts.final_state:
            fw.emit_final_state(self.ctx, step, self.model, self.optimizer, self.recorder.position(step))
        if self.measure.wants_run_kernels:
            self.train_with_run_kernels(step)

    def train_with_run_kernels(self, step):
        """The config does not ask for deterministic kernels: the Trainer's own loop again, on
        the trained model, optimizer and schedule, with torch's default kernels (a warm-up
        step, then the timed ones). Nothing is saved or compared after the round trip."""
        self.measure.start_run_kernels()
        steps = self.measure.run_kernel_loop_steps()
        try:
            self.trainer.args.max_steps = steps
        except dataclasses.FrozenInstanceError:  # transformers releases whose arguments froze
            self.trainer.args = dataclasses.replace(self.trainer.args, max_steps=steps)
        self.trainer.train()
        self.ctx.step = None
        self.measure.finish_run_kernels(step + steps)


def _trainer_state(directory):
    path = os.path.join(directory, "trainer_state.json")
    try:
        # written by Python's json.dump, which writes inf as Infinity
        state = bounded_json.load_file(path, MAX_TRAINER_STATE_BYTES, nonfinite=True)
        if not isinstance(state, dict):
            raise ValueError("not an object")
        return state
    except (OSError, ValueError, UnicodeDecodeError) as e:
        raise EngineError("checkpoint", "%s: unreadable (%s)" % (path, e))


def _read_rng(directory):
    from .. import safe_load

    path = os.path.join(directory, RNG_FILE)
    return safe_load.load(path) if os.path.exists(path) else None


SHARD_INDEX = "model.safetensors.index.json"  # save_pretrained's, above max_shard_size
MAX_SHARD_INDEX_BYTES = 16 << 20


def _read_safetensors(directory, file_name):
    from .. import safetensors_io

    path = os.path.join(directory, file_name)
    try:
        with open(path, "rb") as f:
            return safetensors_io.read(f.read(), path, kind="checkpoint")
    except OSError as e:
        raise EngineError("checkpoint", "%s: %s" % (path, e.strerror or e))


def _shard_index(directory):
    """The index's weight_map ({tensor name: shard file}); every shard a plain .safetensors file
    name in the checkpoint's own directory (the commit marker verified each before this)."""
    path = os.path.join(directory, SHARD_INDEX)
    try:
        doc = bounded_json.load_file(path, MAX_SHARD_INDEX_BYTES)
    except (OSError, ValueError) as e:
        raise EngineError("checkpoint", "%s: unreadable (%s)" % (path, e))
    weight_map = doc.get("weight_map") if isinstance(doc, dict) else None
    if not isinstance(weight_map, dict) or not weight_map:
        raise EngineError("checkpoint", "%s: no weight_map" % path)
    for name, shard in weight_map.items():
        if (not isinstance(shard, str) or os.path.basename(shard) != shard or shard.startswith(".")
                or not shard.endswith(".safetensors")):
            raise EngineError("checkpoint", "%s: tensor %s maps to %r, not a .safetensors file of this directory"
                              % (path, name, shard))
    return weight_map


def _model_weights(directory):
    """The checkpoint's model weights, read with trainlock's own safetensors reader: the one
    model.safetensors, or the shards a sharded save's index names, each tensor in the shard the
    index says and every tensor the index names found."""
    if os.path.exists(os.path.join(directory, "model.safetensors")) or not os.path.exists(
            os.path.join(directory, SHARD_INDEX)):
        return _read_safetensors(directory, "model.safetensors")
    weight_map = _shard_index(directory)
    weights = {}
    for shard in sorted(set(weight_map.values())):
        for name, tensor in _read_safetensors(directory, shard).items():
            if weight_map.get(name) != shard:
                raise EngineError("checkpoint", "%s: tensor %s is in %s, but %s maps it to %r"
                                  % (directory, name, shard, SHARD_INDEX, weight_map.get(name)))
            weights[name] = tensor
    missing = sorted(set(weight_map) - set(weights))
    if missing:
        raise EngineError("checkpoint", "%s: %d tensor(s) %s names are in no shard, first %s"
                          % (directory, len(missing), SHARD_INDEX, missing[0]))
    return weights


def portable(ctx):
    """A fresh process reads the newest committed checkpoint's weights with trainlock's own
    safetensors reader (not the Trainer's) and reports the eval loss."""
    fw.portable(ctx, _model_weights)
