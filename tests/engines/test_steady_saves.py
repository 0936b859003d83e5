"""Steady-state saves (--steady-saves N --steady-root DIR, steady.py): after the round trip's
state is said, the saving process saves N more times in the run's mode into a root nothing
restores, each said as `checkpoint` phase "steady" with the steps after it timed, and says no
step of its own: its losses and final state stay the uninterrupted reference's.

Run: PYTHONPATH=tests/engines /usr/bin/python3 -m unittest discover -s tests/engines -v
"""

import os
import shutil
import sys
import tempfile
import unittest

import harness

sys.path.insert(0, harness.PACKAGE_PARENT)

from trainlock_engine import steady  # noqa: E402

STEPS, SAVE_AT = 6, 3


class SteadySavesOfTheSavingProcess(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="trainlock-steady-")
        spec = harness.write_spec(cls.dir, harness.tiny_spec())
        cls.steady_root = os.path.join(cls.dir, "steady")
        common = ["--engine", "ddp", "--role", "train", "--spec", spec, "--steps", str(STEPS), "--device", "cpu",
                  "--threads", "1", "--save-at", str(SAVE_AT), "--measure-step", "2"]
        cls.plain = harness.run_engine(common + ["--checkpoint-root", os.path.join(cls.dir, "plain"),
                                                 "--final-state", os.path.join(cls.dir, "plain.safetensors")])
        cls.saving = harness.run_engine(common + ["--checkpoint-root", os.path.join(cls.dir, "ckpt"),
                                               "--final-state", os.path.join(cls.dir, "steady.safetensors"),
                                               "--steady-saves", "2", "--steady-root", cls.steady_root])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def steady(self):
        return [e for e in self.saving.of("checkpoint") if e.get("phase") == "steady"]

    def test_each_steady_save_is_said_in_order_after_the_round_trips_checkpoint(self):
        self.assertEqual(self.saving.code, 0, self.saving.stderr[-2000:])
        self.assertEqual([e["ordinal"] for e in self.steady()], [2, 3])
        kinds = [(e["event"], e.get("phase")) for e in self.saving.events]
        self.assertLess(kinds.index(("checkpoint", "committed")), kinds.index(("checkpoint", "steady")))

    def test_a_steady_save_says_its_cost_to_training_in_parts(self):
        for e in self.steady():
            self.assertAlmostEqual(e["stall_s"], e["blocking_s"] + e["stretch_s"] + e["release_s"], places=9)
            self.assertEqual(e["steps_after"], steady.STEPS_AFTER)
            self.assertGreater(e["median_step_s"], 0)
            self.assertGreaterEqual(e["host_growth_bytes"], 0)

    def test_the_steady_saves_add_no_step_to_the_reference(self):
        self.assertEqual(self.saving.losses(), self.plain.losses())
        self.assertEqual(self.saving.state_digests(), self.plain.state_digests())

    def test_a_steady_save_is_written_under_the_steady_root_only(self):
        self.assertTrue(all(e["dir"].startswith(self.steady_root + os.sep) for e in self.steady()))
        self.assertEqual(sorted(os.listdir(os.path.join(self.dir, "ckpt"))),
                         sorted(os.listdir(os.path.join(self.dir, "plain"))))


class SteadySaveArithmetic(unittest.TestCase):
    def test_the_stretch_counts_each_step_beyond_the_median_of_those_before(self):
        self.assertAlmostEqual(steady.stretch([0.4, 0.5, 0.4], [0.9, 0.4, 0.6]), 0.5 + 0.2)

    def test_steps_no_slower_than_the_median_cost_nothing(self):
        self.assertEqual(steady.stretch([0.4, 0.5, 0.4], [0.3, 0.4]), 0.0)

    def test_without_steps_before_there_is_no_stretch(self):
        self.assertEqual(steady.stretch([], [5.0]), 0.0)


class SteadySaveOptions(unittest.TestCase):
    def refused(self, extra):
        d = tempfile.mkdtemp(prefix="trainlock-steady-opt-")
        try:
            spec = harness.write_spec(d, harness.tiny_spec())
            return harness.run_engine(["--engine", "ddp", "--spec", spec, "--checkpoint-root", d, "--steps", "4",
                                       "--device", "cpu"] + extra)
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def test_steady_saves_without_a_root_are_refused_before_any_work(self):
        run = self.refused(["--save-at", "2", "--steady-saves", "1"])
        self.assertEqual(run.code, 2)
        self.assertIn("--steady-root", run.one("error")["message"])

    def test_more_steady_saves_than_the_protocol_allows_are_refused(self):
        run = self.refused(["--save-at", "2", "--steady-saves", "17", "--steady-root", "/tmp/x"])
        self.assertEqual(run.code, 2)
        self.assertIn("outside 0..16", run.one("error")["message"])


if __name__ == "__main__":
    unittest.main()
