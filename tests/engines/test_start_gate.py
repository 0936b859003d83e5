"""--start-after FILE: the coordinator starts the round trip's next process while the one before
it still trains; that process does its imports, then waits, its device untouched and nothing
said, until FILE exists (start_gate.py).

Run: /usr/bin/python3 -B -m unittest tests/engines/test_start_gate.py -v
"""

import json
import os
import select
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "validators", "engines", "python"))

import harness  # noqa: E402
from trainlock_engine import start_gate  # noqa: E402
from trainlock_engine.protocol import EngineError  # noqa: E402


def first_line(proc, seconds):
    """The process's first stdout line within `seconds`, else None."""
    ready, _, _ = select.select([proc.stdout], [], [], seconds)
    return proc.stdout.readline() if ready else None


class Gate(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "b-preempted.start")

    def tearDown(self):
        self.dir.cleanup()

    def test_the_wait_ends_when_the_file_appears(self):
        threading.Timer(0.2, lambda: open(self.path, "w").close()).start()
        started = time.monotonic()
        start_gate.wait(self.path)
        self.assertGreaterEqual(time.monotonic() - started, 0.15)

    def test_a_wait_whose_starter_is_gone_fails_instead_of_waiting_forever(self):
        parents = iter([1234] + [1] * 10)
        with mock.patch.object(start_gate.os, "getppid", lambda: next(parents)):
            with self.assertRaises(EngineError) as caught:
                start_gate.wait(self.path)
        self.assertEqual(caught.exception.kind, "input")
        self.assertIn("--start-after", caught.exception.message)

    def test_a_gated_engine_says_nothing_until_released_then_runs_its_role(self):
        spec = harness.write_spec(self.dir.name, harness.tiny_spec(**{"training.micro_batch": 1}))
        args = ["--engine", "ddp", "--spec", spec, "--checkpoint-root", os.path.join(self.dir.name, "ckpt"),
                "--steps", "1", "--device", "cpu", "--start-after", self.path]
        env = dict(os.environ, PYTHONPATH=harness.PACKAGE_PARENT)
        proc = subprocess.Popen([harness.PYTHON, "-B", "-m", "trainlock_engine"] + args, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, env=env, text=True)
        try:
            self.assertIsNone(first_line(proc, 4.0), "a gated engine spoke before it was released")
            open(self.path, "w").close()
            line = first_line(proc, 60.0)
            self.assertIsNotNone(line, "the released engine never said hello")
            self.assertEqual(json.loads(line)["event"], "hello")
            rest = proc.communicate(timeout=120)[0]
            events = [json.loads(x)["event"] for x in rest.splitlines() if x.startswith("{")]
            self.assertIn("step", events)
            self.assertEqual(events[-1], "done")
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()


if __name__ == "__main__":
    unittest.main()
