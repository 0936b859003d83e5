"""The trainlock.engine/1 event stream: one JSON object per line on the real stdout.

The Emitter takes the process's stdout file descriptor for itself at start (a duplicate) and
points fd 1 and sys.stdout at stderr, so nothing a framework prints (Python or C level) can
land between protocol lines. Every event is written with one os.write and is at most 1 MiB.
Only rank 0 emits; other ranks' Emitters are silent.

EngineError carries an `error` event's kind and the exit code the process ends with.
"""

import json
import os
import sys

PROTOCOL = "trainlock.engine/1"
MAX_LINE = 1 << 20

# Exit codes by error kind: 2 the input cannot be honoured (refused before any work),
# 4 a checkpoint was refused, 5 training (or a pinned file) failed.
EXIT_CODES = {
    "input": 2,
    "unsupported": 2,
    "checkpoint": 4,
    "integrity": 5,
    "model": 5,
    "out_of_memory": 5,
    "non_finite_loss": 5,
    "training": 5,
}


# Every event and the members it may carry: the Python side of the table declared once for
# every engine in validators/support/engine_protocol.cc (the native worker carries a few more
# members of its own there). EngineProtocol.ThePythonTableIsTheDeclaredOne checks this one
# against it; the Emitter refuses an event or a member that is not here.
EVENTS = {
    "hello": ("protocol", "engine", "role", "pid", "world_size", "device", "device_name", "versions"),
    "artifact": ("path", "sha256", "bytes"),
    "setup": ("data", "model", "seconds"),
    "restored": ("step", "dir", "bytes", "seconds", "rng_restored", "data_restored", "world_size_saved",
                 "data_position_carried", "data_position_offered", "grad_accum", "skipped_uncommitted",
                 "resumed_from", "weights_only"),
    "step": ("step", "loss"),
    "measurement": ("step", "step_time_s", "tokens", "tokens_per_s", "flops", "peak_allocated_bytes",
                    "peak_reserved_bytes", "device_used_bytes", "device_total_bytes", "peak_rss_bytes", "mode",
                    "step_times_s", "deterministic", "measured_shape", "ranks"),
    "checkpoint": ("phase", "step", "async", "dir", "bytes", "seconds", "blocking_s", "write_s", "staging_wait_s",
                   "staging_s", "files", "step_after_save_s", "stall_s", "release_s"),
    "eval": ("when", "loss", "step"),
    "state": ("step", "bytes", "file"),
    "error": ("kind", "message", "step", "memory"),
    "done": (),
}


class EngineError(Exception):
    """A failure the process reports as an `error` event and exits on."""

    def __init__(self, kind, message, **extra):
        super().__init__(message)
        if kind not in EXIT_CODES:
            raise ValueError("unknown error kind " + kind)
        self.kind = kind
        self.message = message
        self.extra = extra  # optional `memory`, `step`

    @property
    def exit_code(self):
        return EXIT_CODES[self.kind]


def json_safe(value):
    """NaN and infinities are not JSON: they travel as null (a loss that is not finite is
    reported through its own error kind)."""
    if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
        return None
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


class Emitter:
    """Writes protocol events; construct once, first thing, in every process."""

    def __init__(self, enabled=True):
        self.enabled = enabled
        self._fd = os.dup(1) if enabled else None
        sys.stdout.flush()
        os.dup2(2, 1)  # C-level prints go to stderr too
        sys.stdout = sys.stderr
        self.count = 0

    def emit(self, event, **members):
        declared = EVENTS.get(event)
        undeclared = sorted(set(members) - set(declared)) if declared is not None else None
        if declared is None or undeclared:
            # A programming error of an engine: it ends the process as one `error` event.
            what = "no event %s" % event if declared is None else "event %s has no member %s" % (event, ", ".join(undeclared))
            raise EngineError("training", "the engine protocol (protocol.EVENTS) declares %s" % what)
        if not self.enabled:
            return
        record = {"event": event}
        record.update(json_safe(members))
        line = json.dumps(record, separators=(",", ":"), allow_nan=False) + "\n"
        data = line.encode("utf-8")
        if len(data) > MAX_LINE:
            raise EngineError("training", "event %s is larger than 1 MiB" % event)
        view = memoryview(data)
        while view:  # os.write may write less than asked on a pipe
            view = view[os.write(self._fd, view):]
        self.count += 1

    def error(self, err):
        # Only the declared members of an error travel: the error event itself cannot fail.
        extra = {k: v for k, v in err.extra.items() if k in EVENTS["error"]}
        self.emit("error", kind=err.kind, message=err.message, **extra)
