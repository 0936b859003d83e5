"""protocol.EVENTS: the engine protocol's events and members as the Python engines may emit
them (generated into protocol_generated.py from the declaration every engine shares,
validators/support/engine_events.h and engine_protocol.cc). The Emitter refuses anything else,
so an engine cannot grow a member the coordinator was never told of.

Run: /usr/bin/python3 -B -m unittest tests/engines/test_protocol_table.py -v
"""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "validators", "engines", "python"))

from trainlock_engine import protocol  # noqa: E402
from trainlock_engine.protocol import EngineError  # noqa: E402


class CapturingEmitter(protocol.Emitter):
    """An Emitter whose lines land in a list instead of on the process's stdout."""

    def __init__(self):
        self.enabled, self.count, self.lines = True, 0, []

    def emit(self, event, **members):
        fd_write = protocol.os.write
        protocol.os.write = lambda fd, view: self.lines.append(bytes(view)) or len(view)
        try:
            super().emit(event, **members)
        finally:
            protocol.os.write = fd_write


class ProtocolTable(unittest.TestCase):
    def test_a_declared_event_with_declared_members_is_written(self):
        out = CapturingEmitter()
        out._fd = 99
        out.emit("step", step=3, loss=1.5)
        self.assertEqual(json.loads(out.lines[0]), {"event": "step", "step": 3, "loss": 1.5})

    def test_an_undeclared_member_is_refused_naming_it(self):
        out = CapturingEmitter()
        with self.assertRaises(EngineError) as caught:
            out.emit("step", step=3, loss=1.5, digests={"x": "y"})
        self.assertIn("event step has no member digests", caught.exception.message)
        self.assertEqual(out.lines, [])

    def test_an_undeclared_event_is_refused(self):
        with self.assertRaises(EngineError) as caught:
            CapturingEmitter().emit("progress", step=1)
        self.assertIn("no event progress", caught.exception.message)

    def test_an_error_keeps_its_declared_members_and_drops_the_others(self):
        out = CapturingEmitter()
        out._fd = 99
        out.error(EngineError("training", "boom", step=4, memory={"device_used_bytes": 1}, secret="x"))
        self.assertEqual(json.loads(out.lines[0]), {"event": "error", "kind": "training", "message": "boom", "step": 4,
                                                    "memory": {"device_used_bytes": 1}})

    def test_every_event_is_checked_even_on_a_silent_rank(self):
        out = CapturingEmitter()
        out.enabled = False
        with self.assertRaises(EngineError):
            out.emit("state", step=1, bytes=2, file="f", digests={})


if __name__ == "__main__":
    unittest.main()
