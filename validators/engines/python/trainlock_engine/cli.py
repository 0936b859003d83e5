"""The engine's command line (trainlock.engine/1's option set) and the process's main().

    python3 -m trainlock_engine --engine NAME --role train|portable --spec FILE [--spec-sha256 HEX]
        --checkpoint-root DIR --steps N [--save-at K]... [--measure-step M] [--restore]
        [--no-restore-rng] [--no-restore-data] [--final-state FILE]
        [--device auto|cpu|cuda|cuda:I] [--threads T] [--keep-last K] [--nproc P]
        [--async-save] [--start-after FILE] [--hold-save-at POINT] [--state-at STEP FILE]
        [--restored-state FILE] [--hold-until-killed] [--steady-saves N --steady-root DIR]

--hold-until-killed: once everything is said, wait for the coordinator's SIGKILL (the saving
process B, which is also the uninterrupted reference). --steady-saves N: after that, N more
saves into --steady-root in the run's mode, each said as `checkpoint` phase "steady" (steady.py). --hold-save-at stops the last --save-at's save at POINT (hold.py); --state-at writes the state
after step STEP to FILE, --restored-state the state right after the restore (the coordinator's
torn-snapshot check compares the two).

An option the engine cannot honour is refused before any work: `hello`, then `error` kind
`input` and exit 2. With --nproc P > 1 this process only launches the ranks (launch.py).
"""

import argparse
import os
import sys

from . import engines, launch
from .protocol import PROTOCOL, EngineError, Emitter
from .protocol_generated import MAX_STEADY_SAVES, SAVE_POINTS


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse would print usage and exit 2 on its own
        raise EngineError("input", "command line: " + message)


def _parser():
    p = _Parser(prog="trainlock_engine", add_help=False, allow_abbrev=False)
    p.add_argument("--engine", required=True)
    p.add_argument("--role", choices=("train", "portable"), default="train")
    p.add_argument("--spec", required=True)
    p.add_argument("--spec-sha256", default=None)  # the coordinator always gives it
    p.add_argument("--checkpoint-root", required=True)
    p.add_argument("--steps", type=int, default=0)
    p.add_argument("--save-at", type=int, action="append", default=[])
    p.add_argument("--measure-step", type=int, default=0)
    p.add_argument("--restore", action="store_true")
    p.add_argument("--no-restore-rng", action="store_true")
    p.add_argument("--no-restore-data", action="store_true")
    p.add_argument("--final-state", default=None)
    p.add_argument("--device", default="auto")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--keep-last", type=int, default=0)
    p.add_argument("--nproc", type=int, default=1)
    p.add_argument("--async-save", action="store_true")
    p.add_argument("--start-after", default=None)
    p.add_argument("--hold-save-at", choices=SAVE_POINTS, default=None)
    p.add_argument("--state-at", nargs=2, metavar=("STEP", "FILE"), default=None)
    p.add_argument("--restored-state", default=None)
    p.add_argument("--hold-until-killed", action="store_true")
    p.add_argument("--steady-saves", type=int, default=0)
    p.add_argument("--steady-root", default=None)
    return p


def _check(opts):
    """Cross-option rules, each naming the option it refuses."""
    if opts.engine not in engines.NAMES:
        raise EngineError("input", "--engine %s: not one of %s" % (opts.engine, ", ".join(engines.NAMES)))
    if opts.role == "train" and opts.steps < 1:
        raise EngineError("input", "--steps must be at least 1 for --role train")
    for k in opts.save_at:
        if not 1 <= k <= opts.steps:
            raise EngineError("input", "--save-at %d is outside 1..--steps (%d)" % (k, opts.steps))
    if opts.hold_save_at and not opts.save_at:
        raise EngineError("input", "--hold-save-at %s holds the last --save-at's save; none is given" % opts.hold_save_at)
    if opts.state_at is not None:
        step, path = opts.state_at
        if not step.isdigit() or not 1 <= int(step) <= opts.steps:
            raise EngineError("input", "--state-at %s: the step is outside 1..--steps (%d)" % (step, opts.steps))
        opts.state_at = (int(step), path)
    if not 0 <= opts.steady_saves <= MAX_STEADY_SAVES:
        raise EngineError("input", "--steady-saves %d is outside 0..%d" % (opts.steady_saves, MAX_STEADY_SAVES))
    if opts.steady_saves and (not opts.steady_root or not opts.save_at):
        raise EngineError("input", "--steady-saves needs --steady-root and a --save-at")
    if opts.restored_state and not opts.restore:
        raise EngineError("input", "--restored-state needs --restore")
    if opts.measure_step and not 1 <= opts.measure_step <= opts.steps:
        raise EngineError("input", "--measure-step %d is outside 1..--steps" % opts.measure_step)
    if opts.nproc < 1 or opts.nproc > 1024:
        raise EngineError("input", "--nproc %d is outside 1..1024" % opts.nproc)
    if opts.threads < 0 or opts.keep_last < 0:
        raise EngineError("input", "--threads and --keep-last must not be negative")
    dev = opts.device
    if not (dev in ("auto", "cpu", "cuda") or (dev.startswith("cuda:") and dev[5:].isdigit())):
        raise EngineError("input", "--device %s: not auto, cpu, cuda or cuda:I" % dev)
    if opts.nproc > 1 and dev.startswith("cuda:"):
        raise EngineError("input", "--device %s names one GPU; --nproc %d needs cuda or auto" % (dev, opts.nproc))
    return opts


def parse_options(argv):
    opts = _check(_parser().parse_args(argv))
    opts.checkpoint_root = os.path.abspath(opts.checkpoint_root)
    if opts.steady_root:
        opts.steady_root = os.path.abspath(opts.steady_root)
    return opts


def _engine_from_argv(argv):
    for i, a in enumerate(argv):
        if a == "--engine" and i + 1 < len(argv):
            return argv[i + 1]
        if a.startswith("--engine="):
            return a.split("=", 1)[1]
    return None


def _refuse(err, argv):
    """An option error: the protocol still starts with hello."""
    emitter = Emitter(enabled=int(os.environ.get("RANK", "0")) == 0)
    emitter.emit("hello", protocol=PROTOCOL, engine=_engine_from_argv(argv), role=None,
                 pid=os.getpid(), world_size=None, device=None, device_name=None, versions={})
    emitter.error(err)
    return err.exit_code


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        opts = parse_options(argv)
    except EngineError as err:
        return _refuse(err, argv)
    if opts.nproc > 1 and not launch.is_rank_process():
        return launch.run_ranks(opts, argv)
    from . import process  # imports torch: after the options are known to be sane
    return process.run(opts)
