"""When a checkpoint counts (commit.py): only a step directory with a commit marker whose
files all verify is restored. Unit tests on planted directories, then end to end through the
ddp engine: a torn newest checkpoint is skipped and reported, a changed file is refused
(kind `checkpoint`, exit 4, nothing restored), an asynchronous save commits and restores.
"""

import json
import os
import shutil
import sys
import tempfile
import unittest

import harness

sys.path.insert(0, harness.PACKAGE_PARENT)

from trainlock_engine import commit  # noqa: E402
from trainlock_engine.protocol import EngineError  # noqa: E402


def _plant(root, step, files, marker=True):
    directory = commit.step_dir(root, step)
    os.makedirs(directory, exist_ok=True)
    for name, data in files.items():
        os.makedirs(os.path.dirname(os.path.join(directory, name)), exist_ok=True)
        with open(os.path.join(directory, name), "wb") as f:
            f.write(data)
    if marker:
        commit.write_marker(directory, step)
    return directory


class CommitMarker(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="trainlock-commit-")

    def tearDown(self):
        shutil.rmtree(self.root, ignore_errors=True)

    def test_newest_committed_directory_is_chosen(self):
        _plant(self.root, 2, {"a.pt": b"two"})
        newest = _plant(self.root, 4, {"a.pt": b"four", "sub/b.bin": b"x"})
        step, directory, size, skipped = commit.latest_committed(self.root)
        self.assertEqual((step, directory, size, skipped), (4, newest, 5, []))

    def test_a_directory_without_marker_is_skipped_and_reported(self):
        older = _plant(self.root, 2, {"a.pt": b"two"})
        torn = _plant(self.root, 4, {"a.pt": b"fo"}, marker=False)
        step, directory, _, skipped = commit.latest_committed(self.root)
        self.assertEqual((step, directory, skipped), (2, older, [torn]))

    def test_a_changed_file_is_refused_not_skipped(self):
        _plant(self.root, 2, {"a.pt": b"two"})
        directory = _plant(self.root, 4, {"a.pt": b"four"})
        with open(os.path.join(directory, "a.pt"), "wb") as f:
            f.write(b"FOUR")
        with self.assertRaises(EngineError) as caught:
            commit.latest_committed(self.root)
        self.assertEqual(caught.exception.kind, "checkpoint")
        self.assertIn("a.pt", caught.exception.message)

    def test_a_byte_changed_in_a_later_block_is_refused(self):
        saved = commit.BLOCK_BYTES
        commit.BLOCK_BYTES = 4  # blocks of 4 bytes: "0123|4567|89ab"
        try:
            directory = _plant(self.root, 4, {"a.pt": b"0123456789ab"})
            self.assertEqual(commit.verify(directory, 4), 12)
            with open(os.path.join(directory, "a.pt"), "r+b") as f:
                f.seek(10)
                f.write(b"X")
            with self.assertRaises(EngineError) as caught:
                commit.verify(directory, 4)
            self.assertIn("block sha256", caught.exception.message)
        finally:
            commit.BLOCK_BYTES = saved

    def test_the_block_digest_is_the_sha256_of_the_blocks_digests(self):
        import hashlib

        directory = _plant(self.root, 4, {"a.pt": b"x" * 10})
        with open(os.path.join(directory, commit.MARKER)) as f:
            entry = json.load(f)["files"][0]
        self.assertEqual(entry["block_sha256"], hashlib.sha256(hashlib.sha256(b"x" * 10).digest()).hexdigest())

    def test_a_missing_file_is_refused(self):
        directory = _plant(self.root, 4, {"a.pt": b"four", "b.pt": b"b"})
        os.remove(os.path.join(directory, "b.pt"))
        with self.assertRaises(EngineError):
            commit.latest_committed(self.root)

    def test_a_file_the_marker_does_not_list_is_refused(self):
        directory = _plant(self.root, 4, {"a.pt": b"four"})
        with open(os.path.join(directory, "planted.pt"), "wb") as f:
            f.write(b"x")
        with self.assertRaises(EngineError) as caught:
            commit.latest_committed(self.root)
        self.assertIn("planted.pt", caught.exception.message)

    def test_a_marker_naming_a_path_outside_its_directory_is_refused(self):
        directory = _plant(self.root, 4, {"a.pt": b"four"})
        with open(os.path.join(directory, commit.MARKER), "w") as f:
            json.dump({"step": 4, "files": [{"path": "../../etc/passwd", "block_sha256": "0" * 64, "size": 1}]}, f)
        with self.assertRaises(EngineError) as caught:
            commit.latest_committed(self.root)
        self.assertIn("unreadable commit marker", caught.exception.message)

    def test_a_symlinked_directory_in_a_checkpoint_is_refused(self):
        outside = tempfile.mkdtemp(prefix="trainlock-outside-")
        self.addCleanup(shutil.rmtree, outside, True)
        directory = _plant(self.root, 4, {"a.pt": b"four"})
        os.symlink(outside, os.path.join(directory, "dcp"))
        with open(os.path.join(outside, "shard.distcp"), "wb") as f:
            f.write(b"bytes outside the checkpoint")
        with self.assertRaises(EngineError) as caught:
            commit.verify(directory, 4)
        self.assertEqual(caught.exception.kind, "checkpoint")
        self.assertIn("a symbolic link in a checkpoint", caught.exception.message)
        with self.assertRaises(EngineError):
            commit.write_marker(directory, 4)

    def test_a_symlinked_file_in_a_checkpoint_is_refused(self):
        directory = _plant(self.root, 4, {"a.pt": b"four"})
        os.symlink(os.path.join(directory, "a.pt"), os.path.join(directory, "b.pt"))
        with self.assertRaises(EngineError) as caught:
            commit.latest_committed(self.root)
        self.assertIn("b.pt: a symbolic link in a checkpoint", caught.exception.message)

    def test_a_marker_of_another_step_is_refused(self):
        directory = _plant(self.root, 4, {"a.pt": b"four"})
        os.rename(directory, commit.step_dir(self.root, 6))
        with self.assertRaises(EngineError):
            commit.latest_committed(self.root)

    def test_keep_last_prunes_old_committed_directories_only(self):
        for step in (1, 2, 3):
            _plant(self.root, step, {"a.pt": b"x"})
        torn = _plant(self.root, 4, {"a.pt": b"x"}, marker=False)
        commit.prune(self.root, 2)
        self.assertEqual(sorted(os.listdir(self.root)), ["step-00000002", "step-00000003", os.path.basename(torn)])


class StateCapturedAtTheSave(unittest.TestCase):
    """An engine's small files (fsdp2's scheduler) are captured when the save starts and written
    when it commits, outside the time training is held up, and the marker lists them."""

    class Handle:
        def __init__(self):
            self.beside = {"engine-scheduler.pt": {"last_epoch": 4}}
            self.waited = False

        def done(self):
            return True

        def wait(self):
            self.waited = True

    def driver_with_pending(self, directory, handle):
        import types

        from trainlock_engine import roundtrip
        d = roundtrip.Driver.__new__(roundtrip.Driver)
        d.ctx = types.SimpleNamespace(rank=0, emit=lambda *a, **k: None)
        d.opts = types.SimpleNamespace(checkpoint_root=self.root, keep_last=0)
        d.world, d.fill_outside_save, d.step_times, d.step_after_save = 1, None, [], None
        d.pending = (4, directory, handle, 0.0, 0.01, {"driver.pt": {"step": 4}})
        return d

    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="trainlock-commit-")

    def tearDown(self):
        shutil.rmtree(self.root, ignore_errors=True)

    def test_the_engines_captured_files_are_written_at_the_commit_and_listed(self):
        import torch

        directory = commit.prepare_dir(self.root, 4)
        handle = self.Handle()
        self.driver_with_pending(directory, handle).finish(wait=True)
        self.assertTrue(handle.waited)
        self.assertEqual(torch.load(os.path.join(directory, "engine-scheduler.pt")), {"last_epoch": 4})
        step, committed, _, _ = commit.latest_committed(self.root)
        self.assertEqual((step, committed), (4, directory))
        with open(os.path.join(directory, commit.MARKER)) as f:
            listed = {entry["path"] for entry in json.load(f)["files"]}
        self.assertEqual(listed, {"engine-scheduler.pt", "driver.pt"})


class CommitThroughTheEngine(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="trainlock-commit-e2e-")
        cls.spec = harness.write_spec(cls.dir, harness.tiny_spec())
        cls.root = os.path.join(cls.dir, "ckpt")
        cls.saved = cls.engine(["--steps", "3", "--save-at", "2", "--save-at", "3"])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    @classmethod
    def engine(cls, extra, root=None, record=None):
        args = ["--engine", "ddp", "--spec", cls.spec, "--checkpoint-root", root or cls.root, "--device", "cpu",
                "--threads", "1"] + extra
        return harness.run_engine(args, record=record)

    def copy_root(self, name):
        root = os.path.join(self.dir, name)
        shutil.copytree(self.root, root)
        return root

    def test_a_torn_newest_checkpoint_is_skipped(self):
        self.assertEqual(self.saved.code, 0, self.saved.stderr[-2000:])
        root = self.copy_root("torn")
        os.remove(os.path.join(commit.step_dir(root, 3), commit.MARKER))
        run = self.engine(["--steps", "3", "--restore"], root=root, record="ddp-torn-checkpoint")
        self.assertEqual(run.code, 0, run.stderr[-2000:])
        restored = run.one("restored")
        self.assertEqual(restored["step"], 2)
        self.assertEqual(restored["skipped_uncommitted"], [commit.step_dir(root, 3)])

    def test_a_checkpoint_whose_file_changed_is_refused(self):
        root = self.copy_root("tampered")
        target = os.path.join(commit.step_dir(root, 3), "ddp-state.pt")
        with open(target, "r+b") as f:
            f.seek(os.path.getsize(target) // 2)
            f.write(b"\xff")
        run = self.engine(["--steps", "3", "--restore"], root=root, record="ddp-tampered-checkpoint")
        self.assertEqual(run.code, 4, run.stderr[-2000:])
        self.assertEqual(run.one("error")["kind"], "checkpoint")
        self.assertIn("ddp-state.pt", run.one("error")["message"])
        self.assertEqual(run.of("restored"), [])

    def test_an_asynchronous_save_commits_and_restores(self):
        root = os.path.join(self.dir, "async")
        saved = self.engine(["--steps", "3", "--save-at", "2", "--async-save"], root=root, record="ddp-async-save")
        self.assertEqual(saved.code, 0, saved.stderr[-2000:])
        phases = [(e["phase"], e["async"]) for e in saved.of("checkpoint")]
        self.assertEqual(phases, [("started", True), ("committed", True)])
        resumed = self.engine(["--steps", "3", "--restore"], root=root)
        self.assertEqual(resumed.code, 0, resumed.stderr[-2000:])
        self.assertEqual(resumed.one("restored")["step"], 2)
        self.assertEqual(resumed.losses()[3], saved.losses()[3])


if __name__ == "__main__":
    unittest.main()
