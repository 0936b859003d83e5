"""One engine process from start to exit: runtime, hello, the engine's role, done or error.

Every failure ends as exactly one `error` event (with --nproc, the launcher emits it from
the failing rank's report: launch.py) (after `hello`, which is always first) and
the kind's exit code: an EngineError as raised, an out-of-memory as kind `out_of_memory`
with the device's memory figures, anything else as kind `training` (traceback on stderr).
"""

import os
import signal
import sys
import traceback

import torch

from . import engines, launch, measure, runtime, start_gate
from .protocol import PROTOCOL, EngineError, Emitter

FRAMEWORK_MODULES = ("transformers", "accelerate", "lightning", "pytorch_lightning", "deepspeed", "safetensors", "numpy")


class Context:
    """What an engine's run() gets: the options, the rank layout, the device, the spec (after
    hello), the emitter, and the step being worked on (for error events)."""

    def __init__(self, opts, emitter, rank, world_size, local_rank):
        self.opts = opts
        self.emitter = emitter
        self.rank = rank
        self.world_size = world_size
        self.local_rank = local_rank
        self.device = None
        self.spec = None
        self.step = None
        self._hello_sent = False

    def emit(self, event, **members):
        self.emitter.emit(event, **members)

    def hello(self):
        if self._hello_sent:
            return
        self._hello_sent = True
        versions = {"torch": torch.__version__}
        for name in FRAMEWORK_MODULES:
            module = sys.modules.get(name)
            if module is not None and getattr(module, "__version__", None):
                versions[name] = str(module.__version__)
        self.emit("hello", protocol=PROTOCOL, engine=self.opts.engine, role=self.opts.role,
                  pid=os.getpid(), world_size=self.world_size,
                  device=str(self.device) if self.device is not None else None,
                  device_name=runtime.device_name(self.device) if self.device is not None else None,
                  versions=versions)


def _classify(exc, ctx):
    """An exception that is not an EngineError, as the error it reports."""
    oom_type = getattr(torch.cuda, "OutOfMemoryError", ())
    text = str(exc)
    if (oom_type and isinstance(exc, oom_type)) or "out of memory" in text.lower():
        memory = measure.device_memory(ctx.device) if ctx.device is not None else None
        return EngineError("out_of_memory", text.splitlines()[0] if text else "out of memory", memory=memory)
    return EngineError("training", "%s: %s" % (type(exc).__name__, text.splitlines()[0] if text else ""))


def _start(ctx):
    runtime.set_deterministic()
    if ctx.opts.threads:
        torch.set_num_threads(ctx.opts.threads)
    engine = engines.load(ctx.opts.engine)
    engine.prepare(ctx)  # the framework's imports: seconds, on the CPU only
    if ctx.opts.start_after:
        start_gate.wait(ctx.opts.start_after)
    ctx.device = runtime.pick_device(ctx.opts.device, ctx.local_rank, ctx.world_size)
    runtime.init_distributed(ctx.device, ctx.world_size)
    ctx.hello()
    return engine


def run(opts):
    rank, world, local = runtime.rank_layout()
    ctx = Context(opts, Emitter(enabled=rank == 0), rank, world, local)
    code = 0
    try:
        engine = _start(ctx)
        from . import spec

        ctx.spec = spec.load(opts.spec, opts.spec_sha256)
        if ctx.spec["engine"] not in (None, opts.engine):
            raise EngineError("input", "spec.engine is %s, the process was started as --engine %s" % (ctx.spec["engine"], opts.engine))
        engine.run(ctx)
        if opts.hold_until_killed:
            _hold_until_killed()
        ctx.emit("done")
    except EngineError as err:
        code = _fail(ctx, err)
    except Exception as exc:  # noqa: BLE001 - every failure becomes one error event
        traceback.print_exc()
        code = _fail(ctx, _classify(exc, ctx))
    sys.stderr.flush()
    if world > 1:
        os._exit(code)  # a process group's teardown can block on a dead peer
    return code


def _hold_until_killed():
    """The saving process (B) has said everything; it waits for the coordinator's SIGKILL, so a
    checkpoint it committed must hold without anything it would do on a clean exit."""
    sys.stdout.flush()
    sys.stderr.flush()
    while True:
        signal.pause()


def _fail(ctx, err):
    ctx.hello()
    if ctx.step is not None and "step" not in err.extra:
        err.extra["step"] = ctx.step
    error_dir = os.environ.get(launch.ERROR_DIR)
    if error_dir:  # one of several ranks: the launcher sees every rank and reports the cause
        launch.write_rank_error(error_dir, ctx.rank, err)
    else:
        ctx.emitter.error(err)
    return err.exit_code
