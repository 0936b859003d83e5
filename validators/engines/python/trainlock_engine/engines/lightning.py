"""Engine `lightning`: Hugging Face's LlamaForCausalLM in a LightningModule, trained by
Lightning's Trainer (max_steps, accumulate_grad_batches, gradient_clip_val, precision
"32-true" / "bf16-mixed" / "16-mixed", deterministic=True, no logger), torch's AdamW and the
spec's warmup + cosine LambdaLR stepped per optimizer step (configure_optimizers). Lightning
owns the loop, the checkpoint contents and the resume (trainer.fit(ckpt_path=...)); trainlock
configures it and watches through a Callback.

Lightning's checkpoint carries the model, optimizer, scheduler, its loops' progress and the
state of stateful callbacks and stateful data loaders; it saves no RNG stream and, for a plain
DataLoader, no data position (a mid-epoch resume restarts the epoch). The engine uses the two
documented ways to add state, and reports whether Lightning used them, as observed:
  - the training data is a stateful iterable of micro-batches (state_dict/load_state_dict,
    Lightning's _Stateful protocol) whose state is the position after the last batch a
    training_step received (not after the last one fetched: Lightning prefetches);
    data_restored says Lightning handed the saved position back (--no-restore-data ignores it);
  - the callback is stateful and carries every RNG stream; rng_restored says the streams were,
    at the first resumed training_step, the saved ones (--no-restore-rng does not put them
    back). Something that draws between Lightning's restore and the first forward shows
    as rng_restored false, which is a failed round trip, as it should be.

Checkpoints: at each --save-at step (on_train_batch_end of the accumulation's last micro-batch)
trainer.save_checkpoint(<step dir>/lightning.ckpt); committed once it returned, the eval loss
was taken and the commit marker written. A run whose config does not ask for deterministic
kernels has its step measured once more after the round trip, by a second Trainer with
deterministic=False (measure.py, _framework.Measure). One process only; refused as `unsupported` without
lightning (or pytorch_lightning) or transformers.
"""

import importlib
import os
import time

import torch

from .. import commit, optim, rng, safe_load
from ..model import causal_lm_loss
from ..protocol import EngineError
from . import _framework as fw

NAME = "lightning"
CKPT = "lightning.ckpt"
PRECISION = {"fp32": "32-true", "bf16": "bf16-mixed", "fp16": "16-mixed"}


def _pl():
    try:
        import lightning.pytorch as pl
    except ImportError:
        import pytorch_lightning as pl
    return pl


def prepare(ctx):
    try:
        _pl()
    except ImportError:
        raise EngineError("unsupported", "engine lightning cannot import lightning (nor pytorch_lightning)")
    fw.refuse_without(NAME, "transformers")
    fw.check_single_process(ctx, NAME)


def run(ctx):
    if ctx.opts.role == "portable":
        portable(ctx)
    else:
        LightningRun(ctx).train()


class StatefulBatches:
    """Micro-batches (inputs, targets, windows, position after) from data.py's loader,
    endless (max_steps ends training); state = the position training consumed up to."""

    def __init__(self, loader, micro_batch, accept_state):
        self.loader, self.micro_batch, self.accept_state = loader, micro_batch, accept_state
        self.consumed_state = loader.state()
        self.pending = None  # (loader state, the last consumed batch's position tensor)
        self.offered, self.loaded = False, False

    def __iter__(self):
        while True:
            windows = self.loader.next_windows(self.micro_batch)
            inputs, targets = self.loader.batch(windows, "cpu")
            after = torch.tensor([self.loader.epoch, self.loader.cursor], dtype=torch.long)
            yield inputs, targets, torch.tensor(windows, dtype=torch.long), after

    def consumed(self, after):
        # Read when Lightning asks for the state: `after` is on the device by now, and reading
        # it here would wait for the forward pass (see fw.StepRecorder).
        self.pending = (self.loader.state(), after.detach())

    def state_dict(self):
        if self.pending is not None:
            state, after = self.pending
            epoch, cursor = (int(x) for x in after.tolist())
            self.consumed_state, self.pending = dict(state, epoch=epoch, cursor=cursor), None
        return dict(self.consumed_state)

    def load_state_dict(self, state):
        self.pending = None
        self.offered = True
        if self.accept_state:
            self.loader.restore(state)
            self.consumed_state = self.loader.state()
            self.loaded = True


def _module_class(pl):
    class LlamaModule(pl.LightningModule):
        def __init__(self, model, run):
            super().__init__()
            self.model = model
            self.trainlock = run

        def training_step(self, batch, batch_idx):
            inputs, targets, windows, after = batch
            self.trainlock.before_forward()
            loss = causal_lm_loss(self.model(input_ids=inputs).logits, targets)
            self.trainlock.recorder.micro(loss, windows)
            self.trainlock.batches.consumed(after)
            return loss

        def configure_optimizers(self):
            return {"optimizer": self.trainlock.optimizer,
                    "lr_scheduler": {"scheduler": self.trainlock.scheduler, "interval": "step", "frequency": 1}}

    return LlamaModule


def _callback_class(pl):
    class Events(pl.Callback):
        def __init__(self, run):
            self.run, self.last_step = run, None

        def state_dict(self):  # saved in the checkpoint by Lightning
            return {"rng": rng.capture()}

        def load_state_dict(self, state):  # called by Lightning on resume
            self.run.loaded_rng(state)

        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
            step = trainer.global_step + 1
            self.run.ctx.step = step
            self.run.measure.begin(step)

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
            if self.last_step is None:
                self.last_step = self.run.start_step
            if trainer.global_step == self.last_step:
                return  # inside an accumulation: no optimizer step yet
            self.last_step = trainer.global_step
            self.run.on_step_end(trainer, trainer.global_step)

    return Events


class LightningRun:
    def __init__(self, ctx):
        pl = _pl()
        started, info = fw.set_up(self, ctx, NAME)
        self.batches = StatefulBatches(self.loader, self.spec["training"]["micro_batch"], not self.opts.no_restore_data)
        self.optimizer = optim.build_optimizer(self.spec, self.model.parameters())
        self.scheduler = optim.build_scheduler(self.spec, self.optimizer)
        self.resume, self.saved_rng, self.start_step = None, None, 0
        if self.opts.restore:
            self.resume = self._resume_point()
            self.start_step = self.resume["step"]
        self.pending_restore = self.resume is not None
        self.module = _module_class(pl)(self.model, self)
        info["class"] += " in a LightningModule"
        ctx.emit("setup", data=self.loader.describe(), model=info, seconds=time.perf_counter() - started)
        self.trainer = self._trainer(pl)

    def _trainer(self, pl, max_steps=None, deterministic=True):
        t = self.spec["training"]
        cuda = self.ctx.device.type == "cuda"
        return pl.Trainer(accelerator="gpu" if cuda else "cpu", devices=[self.ctx.device.index or 0] if cuda else 1,
                          max_steps=max_steps or self.opts.steps, accumulate_grad_batches=t["grad_accum"],
                          gradient_clip_val=t["grad_clip"] if t["grad_clip"] > 0 else None, gradient_clip_algorithm="norm",
                          precision=PRECISION[t["precision"]], deterministic=deterministic, benchmark=False, logger=False,
                          enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                          num_sanity_val_steps=0, limit_val_batches=0, callbacks=[_callback_class(pl)(self)],
                          # One process, started by trainlock: Lightning's cluster detection would
                          # import mpi4py where it is installed, whose MPI_Init aborts the process
                          # without the site hooks the isolated engine runs without.
                          plugins=[importlib.import_module(pl.__name__ + ".plugins.environments").LightningEnvironment()],
                          default_root_dir=os.path.join(self.opts.checkpoint_root, "lightning-output"))

    # -- resume --------------------------------------------------------------------------
    def _resume_point(self):
        step, directory, size, skipped = commit.newest_committed(self.opts.checkpoint_root)
        fw.check_run_identity(directory, step, self.spec)
        path = os.path.join(directory, CKPT)
        if not os.path.isfile(path):
            raise EngineError("checkpoint", "%s: no %s" % (directory, CKPT))
        return {"step": step, "dir": directory, "path": path, "bytes": size, "skipped": skipped, "started": time.perf_counter()}

    def loaded_rng(self, state):
        saved = state.get("rng") if isinstance(state, dict) else None
        self.saved_rng = saved
        if saved is not None and not self.opts.no_restore_rng:
            rng.restore(saved)

    def before_forward(self):
        """At the first resumed training_step: which saved state did Lightning give back?"""
        if not self.pending_restore:
            return
        self.pending_restore = False
        r = self.resume
        if self.trainer.global_step != r["step"]:
            raise EngineError("checkpoint", "Lightning resumed at step %d from %s (step %d)" % (self.trainer.global_step, r["path"], r["step"]))
        rng_restored = self.saved_rng is not None and fw.rng_matches(self.saved_rng, self.ctx.device)
        data_restored = self.batches.loaded
        self.ctx.emit("restored", step=r["step"], dir=r["dir"], bytes=r["bytes"], seconds=time.perf_counter() - r["started"],
                      rng_restored=rng_restored, data_restored=data_restored, world_size_saved=1,
                      data_position_carried=data_restored, data_position_offered=self.batches.offered,
                      grad_accum=self.spec["training"]["grad_accum"], skipped_uncommitted=r["skipped"])
        self.ctx.emit("eval", when="after_restore", loss=fw.eval_loss(self.model, self.loader, self.spec, self.ctx.device), step=r["step"])

    # -- callbacks -----------------------------------------------------------------------
    def on_step_end(self, trainer, step):
        if self.measure.timed is not None:  # the loop with the run's kernels: timed, never saved
            self.recorder.step_loss(step)
            self.measure.end(step, self.spec["training"]["grad_accum"])
            return
        loss = self.recorder.step_loss(step)
        self.ctx.emit("step", step=step, loss=loss)
        self.measure.end(step, self.spec["training"]["grad_accum"])
        if step in self.opts.save_at:
            self.save(trainer, step)

    def save(self, trainer, step):
        self.ctx.emit("checkpoint", phase="started", step=step, **{"async": False})
        started = time.perf_counter()
        directory = commit.prepare_dir(self.opts.checkpoint_root, step)
        trainer.save_checkpoint(os.path.join(directory, CKPT))
        if not os.path.isfile(os.path.join(directory, CKPT)):
            raise EngineError("checkpoint", "trainer.save_checkpoint returned without writing %s" % CKPT)
        blocking = time.perf_counter() - started
        self.ctx.emit("eval", when="after_save", loss=fw.eval_loss(self.model, self.loader, self.spec, self.ctx.device), step=step)
        fw.write_run_identity(directory, step, self.spec)
        files, size = commit.write_marker(directory, step)
        seconds = time.perf_counter() - started
        self.ctx.emit("checkpoint", phase="committed", step=step, dir=directory, bytes=size, seconds=seconds, blocking_s=blocking,
                      write_s=blocking, files=len(files), **{"async": False})
        commit.prune(self.opts.checkpoint_root, self.opts.keep_last)

    # -- the run -------------------------------------------------------------------------
    def train(self):
        self.trainer.fit(self.module, train_dataloaders=self.batches, ckpt_path=self.resume["path"] if self.resume else None)
        if self.pending_restore:
            raise EngineError("checkpoint", "Lightning resumed without running a step (restored step %d, --steps %d)" % (self.resume["step"], self.opts.steps))
        step = self.trainer.global_step
        self.ctx.step = None
        if step != self.opts.steps:
            raise EngineError("training", "Lightning stopped at step %d, not --steps %d" % (step, self.opts.steps))
        if self.opts.final_state:
            fw.emit_final_state(self.ctx, step, self.model, self.optimizer, self.recorder.position(step))
        if self.measure.wants_run_kernels:
            self.train_with_run_kernels(step)

    def train_with_run_kernels(self, step):
        """The config does not ask for deterministic kernels: a second Lightning Trainer
        (deterministic=False, torch's default kernels) fits the trained module for a warm-up
        step and the timed ones. Nothing is saved or compared after the round trip."""
        self.measure.start_run_kernels()
        steps = self.measure.run_kernel_loop_steps()
        self.start_step = 0  # the new Trainer counts from 0
        self.trainer = self._trainer(_pl(), max_steps=steps, deterministic=False)
        self.trainer.fit(self.module, train_dataloaders=self.batches)
        self.ctx.step = None
        self.measure.finish_run_kernels(step + steps)


def _model_weights(directory):
    """The model's weights from the .ckpt's state_dict (trainlock's restricted loader, not
    Lightning's): the LightningModule's `model.` entries."""
    path = os.path.join(directory, CKPT)
    checkpoint = safe_load.load(path)
    state = checkpoint.get("state_dict") if isinstance(checkpoint, dict) else None
    if not isinstance(state, dict):
        raise EngineError("checkpoint", "%s: no state_dict" % path)
    return {k[len("model."):]: v for k, v in state.items() if k.startswith("model.") and torch.is_tensor(v)}


def portable(ctx):
    """A fresh process reads the newest committed checkpoint's model weights from the .ckpt
    and reports the eval loss."""
    fw.portable(ctx, _model_weights)
