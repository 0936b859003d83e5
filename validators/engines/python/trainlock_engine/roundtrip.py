"""The round-trip driver shared by engines that expose a training step: it owns the data
loader, the RNG streams, the commit markers and the protocol's events; an Engine subclass
owns the framework (model, optimizer, scheduler, its checkpoint format).

Role train: [restore the newest committed checkpoint] -> steps up to --steps, saving at each
--save-at, measuring --measure-step -> the final state's file (--final-state) -> when the
config does not ask for deterministic kernels, the step measured again with the run's kernels
(measure.py).
Role portable: restore in a fresh process and report the eval loss.

What the driver saves beside the framework's files, per checkpoint directory:
trainlock-driver.pt (rank 0: step, world size, grad_accum, data position) and
trainlock-rng-rank-NNNNN.pt (each rank's RNG streams). The global batch
(micro_batch * grad_accum * world_size) is kept when a checkpoint is resumed at another world
size by scaling grad_accum, so the global data position means the same samples.
"""

import gc
import os
import random
import sys
import threading
import time

import torch

from . import commit, data, digests, final_state, hold, measure, rng, runtime, safe_load, steady
from . import spec as run_spec
from .protocol import EngineError

DRIVER_FILE = "trainlock-driver.pt"
RNG_FILE = "trainlock-rng-rank-%05d.pt"


class Engine:
    """A framework's side of the round trip. All methods run on every rank."""

    name = None
    saves_asynchronously = False  # True: every save is asynchronous, as the framework's users save
    save_points = ()  # the points of hold.INSIDE_SAVE its save holds at (self.hold.at)
    hold = None  # the hold.SaveHold of the save under way, when --hold-save-at asks for one

    def __init__(self, ctx):
        self.ctx, self.spec, self.device = ctx, ctx.spec, ctx.device

    def build(self):
        """Model, optimizer, scheduler. Returns setup's `model` member ({source, ...})."""
        raise NotImplementedError

    def train_step(self, micro_batches):
        """One optimizer step over [(inputs, targets)] (this rank's micro-batches); returns
        the step's loss averaged over every rank's micro-batches."""
        raise NotImplementedError

    def eval_loss(self, batches):
        raise NotImplementedError

    def save(self, directory, step, asynchronous):
        """Writes the framework's checkpoint into directory. Returns None when it is complete,
        else a handle with done() and wait() (an asynchronous save), and optionally `beside`:
        {file name: state captured at the save} that the driver writes when the save commits,
        outside the time training is held up, and release(): lets go of what the save still
        holds (a staged copy), called once at the commit, where the driver times it (release_s)."""
        raise NotImplementedError

    def load(self, directory):
        raise NotImplementedError

    def release_training_memory(self):
        """Gives the device back once nothing trains any more (gradients, the allocator's cached
        blocks), before the last step is said, so the portable process may start beside the
        end of this one: an engine whose capability frees_device_after_training says so
        (src/project/round_trip_engines.h). Returns whether it gave anything back; by default
        it keeps everything."""
        return False

    def full_state(self):
        """({param name: tensor}, {param name: {key: tensor}}) on any device; a sharded
        DTensor is gathered by final_state.write, on every rank in the same order."""
        raise NotImplementedError

    def measured_shape(self):
        """{param_dtype, activation_dtype, activation_checkpointing} as observed."""
        raise NotImplementedError

    def matmul_parameters(self):
        raise NotImplementedError


class ThreadedSave:
    """An asynchronous save's handle for engines that write from a thread."""

    def __init__(self, work):
        self.error = None
        self.thread = threading.Thread(target=self._run, args=(work,), daemon=True)
        self.thread.start()

    def _run(self, work):
        try:
            work()
        except BaseException as e:  # noqa: BLE001 - re-raised by wait()
            self.error = e

    def done(self):
        return not self.thread.is_alive()

    def wait(self):
        self.thread.join()
        if self.error is not None:
            raise EngineError("checkpoint", "the asynchronous save failed: %s" % self.error)


def seed_everything(seed):
    """Every stream rng.py captures starts from the spec's seed in every process."""
    random.seed(seed)
    torch.manual_seed(seed)  # and every CUDA device's generator
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed(seed % (1 << 32))


class Driver:
    hold = None  # the hold.SaveHold of the save under way (--hold-save-at), shared with the engine

    def __init__(self, ctx, engine_class):
        self.ctx, self.spec, self.opts = ctx, ctx.spec, ctx.opts
        self.world = ctx.world_size
        self.step = 0
        self.grad_accum = self.spec["training"]["grad_accum"]
        self.pending = None
        self.fill_outside_save = None  # the fill setting to put back once the pending save commits
        self.step_times = []  # each step's wall time, but the one after a save (note_step_time)
        self.step_after_save = None
        self.reference = None  # the deterministic measurement, while the run's kernels are to come
        self.prepared = None  # the final state's file, allocated ahead (prepare_final_state)
        seed_everything(self.spec["seed"])
        started = time.perf_counter()
        self.loader = data.loader_for(self.spec, ctx.emit, self.world)
        self.engine = engine_class(ctx)
        point = getattr(self.opts, "hold_save_at", None)
        if point in hold.INSIDE_SAVE and point not in self.engine.save_points:
            raise EngineError("unsupported", "--hold-save-at %s: the %s engine's save cannot stop there" % (point, self.engine.name))
        model = self.engine.build()
        ctx.emit("setup", data=self.loader.describe(), model=model, seconds=time.perf_counter() - started)

    # -- data --------------------------------------------------------------------------
    def micro_batches(self):
        mb = self.spec["training"]["micro_batch"]
        out = []
        for _ in range(self.grad_accum):
            windows = self.loader.next_windows(mb * self.world)
            out.append(self.loader.batch(windows[self.ctx.rank * mb:(self.ctx.rank + 1) * mb], self.ctx.device))
        return out

    def eval(self, when):
        self.ctx.emit("eval", when=when, loss=self.eval_loss(), step=self.step)

    def eval_loss(self):
        saved = rng.capture()  # evaluation must leave every stream where training left it
        mb = self.spec["training"]["micro_batch"]
        batches = [self.loader.eval_batch(i, mb, self.ctx.device) for i in range(self.spec["eval_batches"])]
        loss = self.engine.eval_loss(batches)
        rng.restore(saved)
        return loss

    # -- checkpoints -------------------------------------------------------------------
    def held_save(self, step):
        """The hold of this step's save: the last --save-at's when --hold-save-at is given."""
        point = getattr(self.opts, "hold_save_at", None)
        if point is None or step != max(self.opts.save_at):
            return None
        return hold.SaveHold(self.ctx.emit, point, step)

    def save(self, step):
        if self.pending is not None:
            self.finish(wait=True)
        self.hold = self.engine.hold = self.held_save(step)
        asynchronous = self.opts.async_save or self.engine.saves_asynchronously
        # The saved state's eval loss (after_save), taken before the save starts: evaluated
        # after it, its forward passes would overlap an async save's staging and stretch the
        # save beyond what the run's own loop (step, save, step) sees.
        saved_state_loss = self.eval_loss()
        self.ctx.emit("checkpoint", phase="started", step=step, **{"async": asynchronous})
        self.step_after_save = None
        started = time.perf_counter()
        directory = commit.step_dir(self.opts.checkpoint_root, step)
        if self.ctx.rank == 0:
            commit.prepare_dir(self.opts.checkpoint_root, step)
        runtime.barrier(self.world)
        if self.hold is not None:
            self.hold.at("before-files")
        prepared = time.perf_counter()
        # The RNG streams and the driver's state as of this step, captured now and written when
        # the save commits (finish): writing them here held training up for a quarter second
        # on the pilot, which a run's own save does not (bench/results/2026-12-03-h200-fill-fix).
        beside = {RNG_FILE % self.ctx.rank: rng.capture()}
        if self.ctx.rank == 0:
            beside[DRIVER_FILE] = {"step": step, "world_size": self.world, "grad_accum": self.grad_accum,
                                   "data": self.loader.state(), "lock_sha256": self.spec["lock_sha256"],
                                   "spec_sha256": self.spec.get("sha256")}
        # The save allocates its buffers as the run's own save does: deterministic mode (on for
        # the bitwise comparison) fills every new tensor, an async save's staging buffers too,
        # which a run without `deterministic: true` never does; on an H200 the pilot's 16 GB
        # staging took 2.5-3 s longer filled (bench/results/2026-12-03-h200-spawn-order). The
        # setting is put back when the save commits; the steps between are never compared.
        captured = time.perf_counter()
        self.fill_outside_save = runtime.set_fill(measure.asks_deterministic(self.spec))
        with GcPauses() as pauses:
            handle = self.engine.save(directory, step, asynchronous)
        returned = time.perf_counter()
        self.pending = (step, directory, handle, started, returned - started, beside)
        # Where the time training is held up goes (the blocking part of blocking_s).
        phase_note("save %d" % step, prepared=prepared - started, captured=captured - prepared,
                   saved=returned - captured, gc=pauses.seconds)
        self.ctx.emit("eval", when="after_save", loss=saved_state_loss, step=self.step)
        if handle is None or self.hold is not None:  # a held save goes no further
            self.finish(wait=True)

    def finish(self, wait):
        """Commits the pending save once every rank's part is complete; with wait=False only
        when it already is (polled between steps while training goes on)."""
        step, directory, handle, started, blocking, beside = self.pending
        if not wait and not runtime.all_ranks_ok(handle is None or handle.done(), self.world, self.ctx.device):
            return
        if handle is not None:
            handle.wait()
            beside = {**beside, **getattr(handle, "beside", {})}  # what the engine captured at the save
        staging_wait = getattr(handle, "staging_wait_s", 0.0) if handle is not None else 0.0
        staging = {"staging_s": handle.staging_s} if getattr(handle, "staging_s", None) is not None else {}
        asynchronous = handle is not None
        waited = time.perf_counter()
        # The handle lets go of the save's staged copy here (an async save's pinned host buffers,
        # which unpinning holds this thread up for), where release_s times it.
        if hasattr(handle, "release"):
            handle.release()
        self.pending = handle = None
        released = time.perf_counter() - waited
        for name, state in beside.items():  # before the marker, which lists every file
            torch.save(state, os.path.join(directory, name))
        if self.fill_outside_save is not None:
            runtime.set_fill(self.fill_outside_save)
            self.fill_outside_save = None
        runtime.barrier(self.world)
        held, self.hold = self.hold, None
        if held is not None:
            self.engine.hold = None
            held.at("after-metadata")
        if self.ctx.rank == 0:
            uploaded = time.perf_counter()
            files, size = commit.write_marker(directory, step)
            if held is not None:
                held.at("after-commit")
            seconds = time.perf_counter() - started
            phase_note("checkpoint %d" % step, uploaded=waited - started, released=released,
                       written=uploaded - waited - released, marked=seconds - (uploaded - started))
            # Training was held up until save() returned, and then while a step waited for a
            # staging copy still in flight (a handle's staging_wait_s, engines/fsdp2.py), and
            # here again while the save's staged copy was released (release_s): torch 2.11 pins
            # a fresh 16 GB for each of the pilot's saves and unpins it on the thread that drops
            # it, about a second, which a run's own loop pays at one of its saves too.
            held = blocking + staging_wait if asynchronous else seconds
            after = {} if self.step_after_save is None else {"step_after_save_s": self.step_after_save}
            release = {"release_s": released} if asynchronous else {}
            self.ctx.emit("checkpoint", phase="committed", step=step, dir=directory, bytes=size, seconds=seconds,
                          blocking_s=held, write_s=seconds, staging_wait_s=staging_wait, files=len(files),
                          stall_s=held + self.save_stretch() + (released if asynchronous else 0.0), **after,
                          **staging, **release, **{"async": asynchronous})
            commit.prune(self.opts.checkpoint_root, self.opts.keep_last)
        runtime.barrier(self.world)

    def restore(self, for_training):
        started = time.perf_counter()
        found = None
        if self.ctx.rank == 0:
            try:
                found = ("ok",) + commit.newest_committed(self.opts.checkpoint_root)
            except EngineError as e:
                found = ("error", e.kind, e.message)
        found = runtime.broadcast_object(found, self.world)
        if found[0] == "error":
            raise EngineError(found[1], found[2])
        _, step, directory, size, skipped = found
        driver = safe_load.load(os.path.join(directory, DRIVER_FILE))
        if not isinstance(driver, dict) or driver.get("step") != step:
            raise EngineError("checkpoint", "%s: the driver state is not step %d's" % (directory, step))
        run_spec.refuse_other_run(directory, driver.get("spec_sha256"), self.spec)
        world_saved, accum_saved = driver.get("world_size"), driver.get("grad_accum")
        self.rescale_accumulation(world_saved, accum_saved)
        verified = time.perf_counter()
        self.engine.load(directory)
        phase_note("restore", found=verified - started, loaded=time.perf_counter() - verified)
        rng_restored = self.restore_rng(directory, world_saved)
        data_restored = False
        if not self.opts.no_restore_data:
            self.loader.restore(driver.get("data"))
            data_restored = True
        self.step = step
        self.ctx.emit("restored", step=step, dir=directory, bytes=size, seconds=time.perf_counter() - started,
                      rng_restored=rng_restored, data_restored=data_restored, world_size_saved=world_saved,
                      data_position_carried=data_restored, grad_accum=self.grad_accum,
                      skipped_uncommitted=skipped)
        if for_training and getattr(self.opts, "restored_state", None):
            self.write_state(self.opts.restored_state)

    def rescale_accumulation(self, world_saved, accum_saved):
        if not isinstance(world_saved, int) or not isinstance(accum_saved, int) or world_saved < 1 or accum_saved < 1:
            raise EngineError("checkpoint", "the driver state has no world size / grad_accum")
        global_micro = world_saved * accum_saved
        if global_micro % self.world:
            raise EngineError("unsupported", "a checkpoint saved at world size %d with grad_accum %d cannot keep its global batch at world size %d" % (world_saved, accum_saved, self.world))
        self.grad_accum = global_micro // self.world

    def restore_rng(self, directory, world_saved):
        if self.opts.no_restore_rng:
            return False
        path = os.path.join(directory, RNG_FILE % self.ctx.rank)
        mine = os.path.exists(path)
        if mine:
            rng.restore(safe_load.load(path))
        # At another world size some saved streams have no rank to go to (or a rank has no
        # stream): the job's randomness is not the saved job's, so it does not count.
        every = runtime.all_ranks_ok(mine, self.world, self.ctx.device)
        return every and world_saved == self.world

    # -- training ----------------------------------------------------------------------
    def train(self):
        if self.opts.restore:
            self.restore(for_training=True)
            self.eval("after_restore")
        save_at = set(self.opts.save_at)
        while self.step < self.opts.steps:
            self.ctx.step = self.step + 1
            started = time.perf_counter()
            if self.step + 1 == self.opts.measure_step:
                loss = self.measured_step()
            else:
                loss = self.engine.train_step(self.micro_batches())
            self.note_step_time(time.perf_counter() - started)
            self.step += 1
            if loss != loss or loss in (float("inf"), float("-inf")):
                raise EngineError("non_finite_loss", "step %d's loss is %r" % (self.step, loss), step=self.step)
            if self.step == self.opts.steps and not self.trains_on(save_at):
                releasing = time.perf_counter()
                if self.engine.release_training_memory():
                    phase_note("device given back", released=time.perf_counter() - releasing)
            self.ctx.emit("step", step=self.step, loss=loss)
            self.prepare_final_state()
            state_at = getattr(self.opts, "state_at", None)
            if state_at is not None and self.step == state_at[0]:
                self.write_state(state_at[1])
            if self.pending is not None:
                self.finish(wait=False)
            if self.step in save_at:
                self.save(self.step)
        self.ctx.step = None
        # The final state is written while a save's upload goes on; the run's kernels are timed
        # only once it is committed, so no write shares the host with the timing.
        if self.opts.final_state:
            self.final_state()
        if self.pending is not None:
            self.finish(wait=True)
        run_mode_steps = self.step_times[1:]  # the deterministic run's own, when that is its mode
        if self.reference is not None:
            run_mode_steps = self.measure_run_kernels()
        if getattr(self.opts, "steady_saves", 0):
            steady.run(self, run_mode_steps)

    def note_step_time(self, seconds):
        """Keeps each step's wall time (the step ends in the loss's .item(), so the device's
        work is in it); the first step after a save is the save's `step_after_save_s`: how long
        the save's staging, which goes on beside it, stretched it."""
        if self.pending is not None and self.step_after_save is None:
            self.step_after_save = seconds
            # The host's wait for the staged copy inside that step is counted in blocking_s
            # already (staging_wait_s): the stretch leaves it out, so no second counts it.
            self.waited_in_step_after_save = getattr(self.pending[2], "staging_wait_s", 0.0) or 0.0
        else:
            self.step_times.append(seconds)

    def save_stretch(self):
        """How much longer than the steps before it the step after the save took (0 when it was
        not longer, or no step came after it): the save's cost to training that its blocking time
        does not show, as a plain async_save's next step shows it (bench/fsdp2_plain.py)."""
        if self.step_after_save is None:
            return 0.0
        before = self.step_times[1:] or self.step_times  # the first step warms up
        if not before:
            return 0.0
        waited = getattr(self, "waited_in_step_after_save", 0.0)
        return steady.stretch(before, [self.step_after_save - waited])

    def measured_step(self):
        timer = measure.StepTimer(self.ctx.device)
        batches = self.micro_batches()
        timer.start()
        loss = self.engine.train_step(batches)
        timer.stop()
        ranks = measure.gather_rank_peaks(timer.memory, self.world, self.ctx.device)
        t, m = self.spec["training"], self.spec["model"]
        tokens = t["micro_batch"] * t["seq_len"] * self.grad_accum * self.world
        shape = {"engine": self.engine.name, "world_size": _group_world_size()}
        shape.update(self.engine.measured_shape())
        flops = measure.step_flops(m, t, tokens, self.engine.matmul_parameters())
        reference = measure.measurement(self.step + 1, timer, tokens, flops, shape, ranks)
        if measure.asks_deterministic(self.spec):
            self.ctx.emit("measurement", **reference)
        else:  # reported with the run's kernels, once the round trip's state is recorded
            self.reference = reference
        return loss

    def measure_run_kernels(self):
        """The step again with the run's (default) kernels, after the round trip: a warm-up
        step, then run_kernel_steps timed ones (their seconds returned); nothing is compared
        after this (steady.py's saves come after it, never restored)."""
        runtime.use_run_kernels()
        self.ctx.step = self.step + 1
        self.engine.train_step(self.micro_batches())
        self.step += 1
        timed = []
        for _ in range(measure.run_kernel_steps(self.ctx.device)):
            self.ctx.step = self.step + 1
            timer = measure.StepTimer(self.ctx.device)
            batches = self.micro_batches()
            timer.start()
            loss = self.engine.train_step(batches)
            timer.stop()
            self.step += 1
            if loss != loss or loss in (float("inf"), float("-inf")):
                raise EngineError("non_finite_loss", "step %d's loss is %r (the run's kernels)" % (self.step, loss), step=self.step)
            timed.append((timer, measure.gather_rank_peaks(timer.memory, self.world, self.ctx.device)))
        self.ctx.step = None
        self.ctx.emit("measurement", **measure.run_kernels_measurement(self.step, self.reference, timed))
        return [timer.seconds for timer, _ in timed]

    def trains_on(self, save_at):
        """Whether the device is needed after the last step: a measurement, a save, a state at
        a step, steady-state saves, or a save still under way."""
        return bool(self.opts.measure_step or save_at or getattr(self.opts, "state_at", None)
                    or getattr(self.opts, "steady_saves", 0) or self.pending is not None)

    def prepare_final_state(self):
        """Starts allocating the final state's file (final_state.Prepared) once the measured
        step is behind: beside the steps after it, never beside the one timed. Rank 0 writes."""
        if not self.opts.final_state or self.prepared is not None or self.ctx.rank != 0:
            return
        if self.step < (self.opts.measure_step or 0):
            return
        params, optim = self.engine.full_state()
        size = final_state.tensor_bytes(digests.flatten_state(params, optim, {}, None))
        self.prepared = final_state.Prepared(self.opts.final_state, size)

    def final_state(self):
        started = time.perf_counter()
        path, size = self.write_state(self.opts.final_state, self.prepared)
        if self.ctx.rank != 0:
            return
        phase_note("final state", written=time.perf_counter() - started)
        self.ctx.emit("state", step=self.step, bytes=size, file=path)

    def write_state(self, file, prepared=None):
        """The state as of now (parameters, optimizer, RNG streams, data position) to `file`,
        which the coordinator digests: the final state, A's state at a step (--state-at) or C's
        right after its restore (--restored-state). Every rank gathers; rank 0 writes."""
        rngs = rng.capture()  # before anything below could draw
        params, optim = self.engine.full_state()
        flat = digests.flatten_state(params, optim, rng.streams(rngs), self.loader.state())
        path = os.path.abspath(file)
        ready = prepared.take(path) if prepared is not None else None
        return path, final_state.write(flat, path, writing=self.ctx.rank == 0, prepared=ready)

    def portable(self):
        self.restore(for_training=False)
        self.eval("portable")


def phase_note(what, **seconds):
    """One line on stderr with a phase's parts in seconds: where a round trip's time goes, for
    whoever reads the process's stderr file (the coordinator judges nothing from it). To the
    tenth of a millisecond: a save's blocking parts are milliseconds."""
    parts = ", ".join("%s in %.4f s" % (k, v) for k, v in seconds.items())
    print("trainlock-engine: %s: %s" % (what, parts), file=sys.stderr, flush=True)


class GcPauses:
    """The garbage collector's pauses while entered (gc.callbacks): how many, how long. A
    collection inside a save's window holds training up as the save does; a phase note says
    how much of the window it was."""

    def __init__(self):
        self.count, self.seconds, self._began = 0, 0.0, None

    def _seen(self, phase, _info):
        if phase == "start":
            self._began = time.perf_counter()
        elif self._began is not None:
            self.count, self.seconds, self._began = self.count + 1, self.seconds + time.perf_counter() - self._began, None

    def __enter__(self):
        gc.callbacks.append(self._seen)
        return self

    def __exit__(self, *_exc):
        gc.callbacks.remove(self._seen)


def _group_world_size():
    import torch.distributed as dist

    return dist.get_world_size() if dist.is_available() and dist.is_initialized() else 1


def run(ctx, engine_class):
    driver = Driver(ctx, engine_class)
    if ctx.opts.role == "portable":
        driver.portable()
    else:
        driver.train()
