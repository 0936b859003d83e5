"""Framework engines refuse cleanly where their framework is missing: `hello`, then one
`error` of kind `unsupported` naming the missing module, exit 2, no step. Each test runs only
where that framework is indeed absent (Debian's python3 has none of them) and is skipped
elsewhere; the deepspeed refusal runs without the fake module the protocol test uses.
"""

import os
import shutil
import tempfile
import unittest

import harness


def _absent(*names):
    probe = "import importlib.util,sys; sys.exit(0 if all(importlib.util.find_spec(n) is None for n in %r) else 1)" % (names,)
    import subprocess

    return subprocess.run([harness.PYTHON, "-c", probe]).returncode == 0


class FrameworkRefusals(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="trainlock-framework-refusal-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def refused(self, engine, extra=(), record=None):
        spec = harness.write_spec(self.dir, harness.tiny_spec(engine=engine))
        args = ["--engine", engine, "--spec", spec, "--checkpoint-root", os.path.join(self.dir, "ckpt"), "--steps", "2",
                "--device", "cpu", "--threads", "1"] + list(extra)
        run = harness.run_engine(args, record=record)
        self.assertEqual(run.events[0]["event"], "hello", run.stdout_lines[:2])
        self.assertEqual(run.events[0]["engine"], engine)
        self.assertEqual(run.code, 2, run.stderr[-2000:])
        self.assertEqual(run.of("step"), [])
        self.assertEqual(run.of("setup"), [])
        error = run.one("error")
        self.assertEqual(error["kind"], "unsupported", error)
        return error["message"]

    def test_hf_trainer_without_transformers_is_refused_naming_it(self):
        if not _absent("transformers"):
            self.skipTest("transformers is installed")
        self.assertIn("cannot import transformers", self.refused("hf-trainer", record="hf-trainer-no-transformers"))

    def test_lightning_without_lightning_is_refused_naming_it(self):
        if not _absent("lightning", "pytorch_lightning"):
            self.skipTest("lightning is installed")
        self.assertIn("cannot import lightning", self.refused("lightning", record="lightning-not-installed"))

    def test_deepspeed_without_deepspeed_is_refused_naming_it(self):
        if not _absent("deepspeed"):
            self.skipTest("deepspeed is installed")
        self.assertIn("cannot import deepspeed", self.refused("deepspeed", record="deepspeed-not-installed"))


if __name__ == "__main__":
    unittest.main()
