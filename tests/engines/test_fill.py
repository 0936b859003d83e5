"""runtime.set_fill: deterministic mode's fill of new tensors is switched off for a save whose
run does not ask for deterministic kernels, and put back when the save commits (runtime.py's
docstring, with the measurements that keep it).
torch 2.1 and later have the switch (torch.utils.deterministic.fill_uninitialized_memory);
Debian's torch 1.13 has none and never fills, so there the helpers change nothing.

Run: /usr/bin/python3 -B -m unittest tests/engines/test_fill.py -v
"""

import os
import shutil
import sys
import tempfile
import types
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "validators", "engines", "python"))

import torch  # noqa: E402

from trainlock_engine import roundtrip, runtime  # noqa: E402


class StandInSwitch(unittest.TestCase):
    """torch.utils.deterministic as torch >= 2.1 has it (a stand-in namespace on an older torch)."""

    def setUp(self):
        self.saved = getattr(torch.utils, "deterministic", None)
        self.switch = types.SimpleNamespace(fill_uninitialized_memory=True)
        torch.utils.deterministic = self.switch

    def tearDown(self):
        if self.saved is None:
            del torch.utils.deterministic
        else:
            torch.utils.deterministic = self.saved


class WithTheSwitch(StandInSwitch):
    def test_set_fill_returns_the_setting_it_replaced(self):
        self.assertIs(runtime.set_fill(False), True)
        self.assertIs(self.switch.fill_uninitialized_memory, False)
        self.assertIs(runtime.set_fill(True), False)


class RecordingEngine:
    """Saves nothing but what the fill setting was while it was asked to save."""

    def __init__(self, switch, asynchronous):
        self.switch, self.saves_asynchronously = switch, asynchronous
        self.fill_during_save = []

    def save(self, directory, step, asynchronous):
        self.fill_during_save.append(self.switch.fill_uninitialized_memory)
        return FinishedSave() if asynchronous else None


class FinishedSave:
    staging_wait_s = 0.0
    staging_s = None

    def done(self):
        return True

    def wait(self):
        pass


class TheSaveAllocatesAsTheRunDoes(StandInSwitch):
    """Deterministic mode is on for the bitwise comparison and fills every new tensor; the run's
    own save (config without `deterministic: true`) fills nothing, so the round trip's save must
    not either: an async save's 16 GB of staging buffers filled cost an H200 2.5-3 s."""

    def driver(self, deterministic, asynchronous):
        root = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, root)
        d = roundtrip.Driver.__new__(roundtrip.Driver)
        d.ctx = types.SimpleNamespace(rank=0, emit=lambda *a, **k: None)
        d.spec = {"training": {"deterministic": deterministic}, "lock_sha256": "0" * 64}
        d.opts = types.SimpleNamespace(async_save=False, checkpoint_root=root, keep_last=2)
        d.world, d.step, d.grad_accum, d.pending, d.fill_outside_save = 1, 3, 1, None, None
        d.loader = types.SimpleNamespace(state=lambda: {"position": 3})
        d.eval_loss = lambda: 1.0
        d.engine = RecordingEngine(self.switch, asynchronous)
        return d

    def test_a_run_without_deterministic_kernels_saves_unfilled_and_fills_again_after(self):
        for asynchronous in (False, True):
            d = self.driver(deterministic=False, asynchronous=asynchronous)
            d.save(3)
            if d.pending is not None:
                d.finish(wait=True)
            self.assertEqual(d.engine.fill_during_save, [False])
            self.assertIs(self.switch.fill_uninitialized_memory, True)

    def test_an_async_save_stays_unfilled_until_it_commits(self):
        d = self.driver(deterministic=False, asynchronous=True)
        d.save(3)
        self.assertIsNotNone(d.pending)
        self.assertIs(self.switch.fill_uninitialized_memory, False)
        d.finish(wait=True)
        self.assertIs(self.switch.fill_uninitialized_memory, True)

    def test_a_run_with_deterministic_kernels_saves_filled(self):
        d = self.driver(deterministic=True, asynchronous=False)
        d.save(3)
        self.assertEqual(d.engine.fill_during_save, [True])
        self.assertIs(self.switch.fill_uninitialized_memory, True)


class WithoutTheSwitch(unittest.TestCase):
    def setUp(self):
        self.saved = getattr(torch.utils, "deterministic", None)
        if self.saved is not None:
            del torch.utils.deterministic

    def tearDown(self):
        if self.saved is not None:
            torch.utils.deterministic = self.saved

    def test_a_torch_without_the_switch_is_left_alone(self):
        self.assertIsNone(runtime.set_fill(False))
        self.assertFalse(hasattr(torch.utils, "deterministic"))


if __name__ == "__main__":
    unittest.main()
