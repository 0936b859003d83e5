"""The save's whole cost to training (`stall_s` on the committed `checkpoint` event): the time
the save held training up, how much the step after it outlasted the steps before it, and the
time the commit held training releasing the save's staged copy (`release_s`). An async save's
staging runs beside that step and can stretch it several seconds while the save call itself
returns at once, so blocking_s alone would understate what the run loses."""

import os
import shutil
import sys
import tempfile
import time
import types
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
    d.pending = (3, "dir", None, 0.0, 0.0, {})  # a save in flight, its handle without a wait
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

    def test_the_wait_for_the_staged_copy_inside_that_step_is_not_counted_twice(self):
        d = roundtrip.Driver.__new__(roundtrip.Driver)
        d.pending, d.step_times, d.step_after_save = None, [], None
        for seconds in [3.0, 0.4, 0.4]:
            d.note_step_time(seconds)
        d.pending = (3, "dir", types.SimpleNamespace(staging_wait_s=1.5), 0, 0, {})
        d.note_step_time(2.0)  # 1.5 s of it waiting for the staged copy, in blocking_s already
        self.assertAlmostEqual(d.save_stretch(), 0.1)

    def test_steps_after_the_one_after_the_save_are_ordinary_steps_again(self):
        d = driver_after([3.0, 0.4, 0.4], 2.0)
        d.note_step_time(0.5)
        self.assertEqual(d.step_times, [3.0, 0.4, 0.4, 0.5])
        self.assertEqual(d.step_after_save, 2.0)


class SlowRelease:
    """Stands in for an async save's staged copy whose release holds the thread that drops it
    (torch 2.11 unpins pinned host buffers there, about a second for the pilot's 16 GB)."""

    def __init__(self, seconds):
        self.seconds = seconds

    def __del__(self):
        time.sleep(self.seconds)


class FinishedSave:
    """An async save's handle whose upload is done, holding its staged copy."""

    def __init__(self, staged):
        self.staged, self.beside, self.staging_wait_s, self.staging_s = staged, {}, 0.0, None

    def done(self):
        return True

    def wait(self):
        pass


class ReleaseAtTheCommit(unittest.TestCase):
    def committed_after_release(self, seconds):
        directory = tempfile.mkdtemp(prefix="trainlock-release-")
        self.addCleanup(shutil.rmtree, directory, True)
        step_dir = os.path.join(directory, "step-00000002")
        os.makedirs(step_dir)
        events = []
        d = driver_after([3.0, 0.4, 0.4], 0.4)
        d.ctx = types.SimpleNamespace(rank=0, device=None, emit=lambda kind, **body: events.append(dict(kind=kind, **body)))
        d.world, d.fill_outside_save = 1, None
        d.opts = types.SimpleNamespace(checkpoint_root=directory, keep_last=0)
        d.pending = (2, step_dir, FinishedSave(SlowRelease(seconds)), time.perf_counter(), 0.01, {})
        d.finish(wait=True)
        return [e for e in events if e["kind"] == "checkpoint"][0]

    def test_the_time_releasing_the_staged_copy_is_said_and_counted_in_the_stall(self):
        committed = self.committed_after_release(0.3)
        self.assertGreaterEqual(committed["release_s"], 0.3)
        self.assertGreaterEqual(committed["stall_s"], committed["blocking_s"] + committed["release_s"])
        self.assertLess(committed["blocking_s"], 0.3)  # the save call's own time, not the release

    def test_a_release_that_costs_nothing_adds_nothing(self):
        committed = self.committed_after_release(0.0)
        self.assertLess(committed["release_s"], 0.1)


class CommittedEvent(unittest.TestCase):
    def commit_of(self, *extra):
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
        self.assertIn("release_s", committed)
        self.assertGreaterEqual(committed["stall_s"], committed["blocking_s"])

    def test_a_synchronous_save_stalls_training_for_its_whole_time(self):
        committed = self.commit_of()
        self.assertFalse(committed["async"], committed)
        self.assertNotIn("step_after_save_s", committed)
        self.assertNotIn("release_s", committed)  # its release is inside its blocking time
        self.assertEqual(committed["stall_s"], committed["blocking_s"])


if __name__ == "__main__":
    unittest.main()
