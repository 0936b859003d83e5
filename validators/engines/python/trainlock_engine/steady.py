"""Steady-state saves (--steady-saves N --steady-root DIR): what a save costs training once its
buffers exist, the figure a run that saves hundreds of times lives with.

After the round trip's state is recorded (the final state written, the checkpoint committed,
the step measured with the run's kernels) the saving process trains on in the run's mode and
saves N more times into DIR, which nothing restores: STEPS_BEFORE steps timed before each save
(with the run-mode measurement's, the median the stretch is taken against; none before the
first when that measurement has just timed as many), the save, then
STEPS_AFTER steps timed after it. Each is said as `checkpoint` phase "steady": `ordinal` (2 for
the first: the round trip's checkpoint was the first), `blocking_s` (the save call),
`stretch_s` (how much the steps after it outlasted the median, summed: a staging copy the
optimizer waits for is in them), `release_s`, `stall_s` (their sum), `new_pinned_bytes` (what
the engine's stager allocated; -1 when it cannot say) and `host_growth_bytes` (the process's
resident memory growth across the save and the steps after it). Each save but the last is
waited for, released and its directory marked before the next, as a long run's saves are
minutes apart; the last is waited for only when its commit releases something to time (torch's
DefaultStager, one per save); otherwise its upload is left to the coordinator's SIGKILL. The
native worker applies the same rule (validators/support/save_cost.h).

These steps say no `step` event: the process's losses are the reference's, steps 1 to N.
"""

import os
import time

from . import commit, runtime
from .protocol import EngineError

STEPS_BEFORE = 3
STEPS_AFTER = 3


def median(seconds):
    """The median (the upper one of an even count); 0 for none."""
    ordered = sorted(seconds)
    return ordered[len(ordered) // 2] if ordered else 0.0


def stretch(before, after):
    """How much longer than the median of `before` the steps of `after` took, summed."""
    if not before:
        return 0.0
    typical = median(before)
    return sum(max(0.0, s - typical) for s in after)


def resident_bytes():
    """This process's resident memory (/proc/self/statm), -1 where it cannot be read."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return -1


def _timed_step(driver):
    started = time.perf_counter()
    loss = driver.engine.train_step(driver.micro_batches())
    seconds = time.perf_counter() - started
    driver.step += 1
    if loss != loss or loss in (float("inf"), float("-inf")):
        raise EngineError("non_finite_loss", "step %d's loss is %r (a steady-state save's step)" % (driver.step, loss), step=driver.step)
    return seconds


def _one(driver, ordinal, before, last):
    opts, ctx = driver.opts, driver.ctx
    measured_just_now = ordinal == 2 and len(before) >= STEPS_BEFORE  # the run-mode steps
    before.extend(_timed_step(driver) for _ in range(0 if measured_just_now else STEPS_BEFORE))
    step = driver.step
    directory = commit.step_dir(opts.steady_root, step)
    if ctx.rank == 0:
        commit.prepare_dir(opts.steady_root, step)
    runtime.barrier(driver.world)
    resident = resident_bytes()
    started = time.perf_counter()
    handle = driver.engine.save(directory, step, opts.async_save or driver.engine.saves_asynchronously)
    blocking = time.perf_counter() - started
    after = [_timed_step(driver) for _ in range(STEPS_AFTER)]
    grown = resident_bytes()
    release = 0.0
    if handle is not None and (not last or getattr(handle, "releases_at_commit", False)):
        handle.wait()
        waited = time.perf_counter()
        if hasattr(handle, "release"):
            handle.release()
        release = time.perf_counter() - waited
        runtime.barrier(driver.world)
    extra = stretch(before, after)
    ctx.emit("checkpoint", phase="steady", step=step, ordinal=ordinal, dir=directory,
             blocking_s=blocking, stretch_s=extra, release_s=release, stall_s=blocking + extra + release,
             median_step_s=median(before), steps_after=len(after),
             new_pinned_bytes=getattr(handle, "new_pinned_bytes", 0 if handle is None else -1),
             host_growth_bytes=-1 if resident < 0 or grown < 0 else max(0, grown - resident),
             **{"async": handle is not None})


def run(driver, run_mode_steps):
    """The steady-state saves after everything the round trip reads was said; `run_mode_steps`
    are the seconds of the run-mode measurement's steps (the baseline's start)."""
    before = list(run_mode_steps)
    saves = driver.opts.steady_saves
    for i in range(saves):
        _one(driver, i + 2, before, last=i + 1 == saves)
