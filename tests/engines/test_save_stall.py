"""The save's whole cost to training (`stall_s` on the committed `checkpoint` event): the time
the save held training up plus how much the step after it outlasted the steps before it. An
async save's staging runs beside that step and can stretch it several seconds while the save
call itself returns at once, so blocking_s alone would understate what the run loses."""

import sys
import unittest

import harness

sys.path.insert(0, harness.PACKAGE_PARENT)

from trainlock_engine import roundtrip  # noqa: E402


def driver_after(step_times, step_after_save):
    d = roundtrip.Driver.__new__(roundtrip.Driver)
    d.pending = None
    d.step_times = []
    d.step_after_save = None
    for seconds in step_times:
        d.note_step_time(seconds)
    d.pending = ("a save in flight",)
    if step_after_save is not None:
        d.note_step_time(step_after_save)
    return d


class SaveStall(unittest.TestCase):
    def test_the_step_after_the_save_counts_beyond_the_median_of_those_before(self):
        d = driver_after([3.0, 0.4, 0.5, 0.4], 5.4)  # the first step warms up and is left out
        self.assertEqual(d.step_after_save, 5.4)
        self.assertAlmostEqual(d.save_stretch(), 5.0)

    def test_a_step_no_slower_than_before_costs_nothing(self):
        self.assertEqual(driver_after([3.0, 0.4, 0.5, 0.4], 0.3).save_stretch(), 0.0)

    def test_a_save_with_no_step_after_it_costs_only_its_blocking(self):
        self.assertEqual(driver_after([3.0, 0.4], None).save_stretch(), 0.0)

    def test_steps_after_the_one_after_the_save_are_ordinary_steps_again(self):
        d = driver_after([3.0, 0.4, 0.4], 2.0)
        d.note_step_time(0.5)
        self.assertEqual(d.step_times, [3.0, 0.4, 0.4, 0.5])
        self.assertEqual(d.step_after_save, 2.0)


class CommittedEvent(unittest.TestCase):
    def commit_of(self, *extra):
        import os
        import shutil
        import tempfile
        directory = tempfile.mkdtemp(prefix="trainlock-stall-")
        try:
            spec = harness.write_spec(directory, harness.tiny_spec())
            run = harness.run_engine(["--engine", "ddp", "--spec", spec, "--checkpoint-root",
                                      os.path.join(directory, "ckpt"), "--steps", "4", "--save-at", "2",
                                      "--device", "cpu", "--threads", "1"] + list(extra))
            self.assertEqual(run.code, 0, run.stderr[-2000:])
            return [e for e in run.of("checkpoint") if e["phase"] == "committed"][0]
        finally:
            shutil.rmtree(directory, ignore_errors=True)

    def test_an_async_save_says_the_step_after_it_and_its_stall(self):
        committed = self.commit_of("--async-save")
        self.assertTrue(committed["async"], committed)
        self.assertIn("step_after_save_s", committed)
        self.assertGreaterEqual(committed["stall_s"], committed["blocking_s"])

    def test_a_synchronous_save_stalls_training_for_its_whole_time(self):
        committed = self.commit_of()
        self.assertFalse(committed["async"], committed)
        self.assertNotIn("step_after_save_s", committed)
        self.assertEqual(committed["stall_s"], committed["blocking_s"])


if __name__ == "__main__":
    unittest.main()
