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

# The protocol's name, its line limit, the error kinds with their exit codes (2 the input
# cannot be honoured, refused before any work; 4 a checkpoint was refused; 5 training or a
# pinned file failed) and every event with the members it may carry: generated from the one
# declaration every engine shares (validators/support/engine_events.h, engine_protocol.cc). The
# Emitter refuses an event or a member that is not there.
from .protocol_generated import EVENTS, EXIT_CODES, MAX_LINE, PROTOCOL  # noqa: F401


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
