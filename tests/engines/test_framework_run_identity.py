"""The framework engines (hf-trainer, lightning) own their checkpoint files, so they cannot carry
the driver state the ddp and fsdp2 engines save; each step directory gets trainlock-run.json
(the step and the spec's SHA-256) before the commit marker covers it, and a restore or
ckpt.portable refuses, with kind `checkpoint`, a step directory of another spec, of another
step, or without it. The framework itself is not needed: these are the functions both engines'
save and resume call (engines/_framework.py)."""

import os
import shutil
import sys
import tempfile
import unittest

import harness

sys.path.insert(0, harness.PACKAGE_PARENT)

from trainlock_engine import commit  # noqa: E402
from trainlock_engine.engines import _framework as fw  # noqa: E402
from trainlock_engine.protocol import EngineError  # noqa: E402

SPEC = {"sha256": "a" * 64}


class FrameworkRunIdentity(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="trainlock-run-identity-")
        self.step_dir = commit.prepare_dir(self.root, 3)
        with open(os.path.join(self.step_dir, "model.safetensors"), "wb") as f:
            f.write(b"weights")

    def tearDown(self):
        shutil.rmtree(self.root, ignore_errors=True)

    def committed(self, write_identity=True):
        if write_identity:
            fw.write_run_identity(self.step_dir, 3, SPEC)
        commit.write_marker(self.step_dir, 3)
        step, directory, _, _ = commit.newest_committed(self.root)
        return step, directory

    def refusal(self, step, directory, spec):
        with self.assertRaises(EngineError) as caught:
            fw.check_run_identity(directory, step, spec)
        self.assertEqual(caught.exception.kind, "checkpoint")
        return caught.exception.message

    def test_a_step_of_this_run_is_restored(self):
        step, directory = self.committed()
        fw.check_run_identity(directory, step, SPEC)

    def test_a_step_written_for_another_spec_is_refused_naming_both(self):
        step, directory = self.committed()
        message = self.refusal(step, directory, {"sha256": "b" * 64})
        self.assertIn("written for the run of spec aaaaaaaaaaaa, not this run's (bbbbbbbbbbbb)", message)

    def test_a_step_directory_that_does_not_say_which_run_wrote_it_is_refused(self):
        step, directory = self.committed(write_identity=False)
        self.assertIn("no trainlock-run.json", self.refusal(step, directory, SPEC))

    def test_an_identity_of_another_step_is_refused(self):
        fw.write_run_identity(self.step_dir, 2, SPEC)
        commit.write_marker(self.step_dir, 3)
        step, directory, _, _ = commit.newest_committed(self.root)
        self.assertIn("not step 3's", self.refusal(step, directory, SPEC))

    def test_an_oversized_identity_is_refused_unread(self):
        with open(os.path.join(self.step_dir, fw.RUN_FILE), "w") as f:
            f.write(" " * (fw.MAX_RUN_FILE_BYTES + 1))
        commit.write_marker(self.step_dir, 3)
        step, directory, _, _ = commit.newest_committed(self.root)
        self.assertIn("larger than 4096 bytes", self.refusal(step, directory, SPEC))


if __name__ == "__main__":
    unittest.main()
