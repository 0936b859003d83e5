"""--hold-save-at (hold.py): a save stopped at one point of its upload, said as `checkpoint` phase
"held", so that the coordinator's SIGKILL lands exactly there. Unit tests of the hold and of the
file system that cuts a DCP data file (what engines/fsdp2.py's holding writer uses; torch 1.13
has no DCP, so the writer itself runs on the GPU stage of ci/gpu.sh), then the driver's points
end to end through the ddp engine: before-files, after-metadata and after-commit leave the step
directory as their names say, the restore passes over the torn one, and the state right after
a restore (--restored-state) is bitwise the uninterrupted run's at that step (--state-at).
"""

import contextlib
import os
import shutil
import sys
import tempfile
import unittest

import harness

sys.path.insert(0, harness.PACKAGE_PARENT)

from trainlock_engine import commit, hold  # noqa: E402
from trainlock_engine.protocol_generated import SAVE_POINTS  # noqa: E402


class Stopped(Exception):
    pass


def _stop():
    raise Stopped()


class SaveHoldUnit(unittest.TestCase):
    def test_it_says_held_once_and_stops_only_at_its_point(self):
        said = []
        h = hold.SaveHold(lambda event, **m: said.append((event, m)), "after-files", 5, pause=_stop)
        h.at("before-files")
        h.at("mid-file")
        with self.assertRaises(Stopped):
            h.at("after-files")
        with self.assertRaises(Stopped):
            h.at("after-files")  # a second thread reaching it stops too, unsaid
        self.assertEqual(said, [("checkpoint", {"phase": "held", "step": 5, "point": "after-files"})])

    def test_the_points_are_the_protocols_in_the_order_a_save_passes_them(self):
        self.assertEqual(SAVE_POINTS, ("before-files", "mid-file", "after-files", "after-metadata", "after-commit"))
        self.assertTrue(set(hold.INSIDE_SAVE) <= set(SAVE_POINTS))


class _PlainFs:
    """The part of DCP's FileSystem a writer uses: streams on real files."""

    @contextlib.contextmanager
    def create_stream(self, path, mode):
        with open(path, mode) as stream:
            yield stream

    def concat_path(self, path, suffix):
        return os.path.join(path, suffix)


class CutFileSystemUnit(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="trainlock-cut-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def test_the_first_data_file_holds_half_its_first_write_at_the_hold(self):
        data = os.path.join(self.dir, "__0_0.distcp")
        seen = []

        def at_hold():
            with open(data, "rb") as f:
                seen.append(f.read())

        fs = hold.CutFileSystem(_PlainFs(), hold.SaveHold(lambda *a, **k: None, "mid-file", 3, pause=at_hold))
        with fs.create_stream(data, "wb") as stream:
            stream.write(b"0123456789")
            stream.write(b"abc")
        self.assertEqual(seen, [b"01234"])
        with open(data, "rb") as f:
            self.assertEqual(f.read(), b"0123456789abc")  # past the hold (a test's pause returns)

    def test_a_typed_buffer_is_cut_in_bytes(self):
        import array

        data = os.path.join(self.dir, "__0_0.distcp")
        seen = []

        def at_hold():
            seen.append(os.path.getsize(data))

        fs = hold.CutFileSystem(_PlainFs(), hold.SaveHold(lambda *a, **k: None, "mid-file", 3, pause=at_hold))
        with fs.create_stream(data, "wb") as stream:
            stream.write(memoryview(array.array("i", [1, 2, 3, 4])))
        self.assertEqual(seen, [8])
        self.assertEqual(os.path.getsize(data), 16)

    def test_metadata_and_later_data_files_are_written_whole(self):
        h = hold.SaveHold(lambda *a, **k: None, "mid-file", 3, pause=_stop)
        fs = hold.CutFileSystem(_PlainFs(), h)
        with fs.create_stream(os.path.join(self.dir, ".metadata.tmp"), "wb") as stream:
            stream.write(b"metadata")
        with self.assertRaises(Stopped):
            with fs.create_stream(os.path.join(self.dir, "__0_0.distcp"), "wb") as stream:
                stream.write(b"0123456789")
        with fs.create_stream(os.path.join(self.dir, "__1_0.distcp"), "wb") as stream:
            stream.write(b"whole")
        with open(os.path.join(self.dir, "__1_0.distcp"), "rb") as f:
            self.assertEqual(f.read(), b"whole")
        self.assertEqual(fs.concat_path("a", "b"), os.path.join("a", "b"))  # the rest is the wrapped one's


def _held_at(point):
    return lambda e: e.get("event") == "checkpoint" and e.get("phase") == "held" and e.get("point") == point


class HoldThroughTheDriver(unittest.TestCase):
    """The driver's points on the ddp engine: B saves at 2 and 3, the save of 3 held and killed."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="trainlock-hold-")
        cls.spec = harness.write_spec(cls.dir, harness.tiny_spec())
        cls.reference = os.path.join(cls.dir, "a-state-at-2.safetensors")
        cls.uninterrupted = cls.engine(["--steps", "4", "--state-at", "2", cls.reference], os.path.join(cls.dir, "a"))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    @classmethod
    def engine(cls, extra, root, kill_after=None):
        args = ["--engine", "ddp", "--spec", cls.spec, "--checkpoint-root", root, "--device", "cpu",
                "--threads", "1"] + extra
        return harness.run_engine(args, kill_after=kill_after)

    def held(self, point):
        root = os.path.join(self.dir, point)
        run = self.engine(["--steps", "4", "--save-at", "2", "--save-at", "3", "--hold-save-at", point], root,
                          kill_after=_held_at(point))
        self.assertTrue(run.killed, run.stderr[-2000:])
        self.assertEqual([e["phase"] for e in run.of("checkpoint")], ["started", "committed", "started", "held"])
        self.assertEqual(run.of("checkpoint")[-1]["step"], 3)
        return root

    def after(self, step):
        return {s: loss for s, loss in self.uninterrupted.losses().items() if s > step}

    def resume(self, root, step):
        restored_state = os.path.join(root, "c-restored.safetensors")
        run = self.engine(["--steps", "4", "--restore", "--restored-state", restored_state], root)
        self.assertEqual(run.code, 0, run.stderr[-2000:])
        self.assertEqual(run.one("restored")["step"], step)
        return run, restored_state

    def test_before_files_leaves_an_empty_step_directory_the_restore_skips(self):
        root = self.held("before-files")
        torn = commit.step_dir(root, 3)
        self.assertEqual(os.listdir(torn), [])
        run, restored_state = self.resume(root, 2)
        self.assertEqual(run.one("restored")["skipped_uncommitted"], [torn])
        self.assertEqual(run.losses(), self.after(2))
        self.assertEqual(harness.state_file_digests(restored_state), harness.state_file_digests(self.reference))

    def test_after_metadata_leaves_every_file_but_the_marker(self):
        root = self.held("after-metadata")
        torn = commit.step_dir(root, 3)
        self.assertFalse(os.path.exists(os.path.join(torn, commit.MARKER)))
        self.assertIn("trainlock-driver.pt", os.listdir(torn))
        run, _ = self.resume(root, 2)
        self.assertEqual(run.one("restored")["skipped_uncommitted"], [torn])

    def test_after_commit_restores_the_new_checkpoint(self):
        root = self.held("after-commit")
        self.assertTrue(os.path.exists(os.path.join(commit.step_dir(root, 3), commit.MARKER)))
        run, _ = self.resume(root, 3)
        self.assertEqual(run.one("restored")["skipped_uncommitted"], [])
        self.assertEqual(run.losses(), self.after(3))

    def test_a_point_inside_a_save_the_engine_cannot_stop_at_is_refused(self):
        run = self.engine(["--steps", "4", "--save-at", "2", "--hold-save-at", "mid-file"],
                          os.path.join(self.dir, "refused"))
        self.assertEqual(run.code, 2, run.stderr[-2000:])
        self.assertEqual(run.one("error")["kind"], "unsupported")
        self.assertIn("--hold-save-at mid-file", run.one("error")["message"])


if __name__ == "__main__":
    unittest.main()
