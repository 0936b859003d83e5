"""The `deepspeed` engine against a FAKE `deepspeed` module (fake_deepspeed/, on PYTHONPATH
only here): a PROTOCOL test, not a DeepSpeed test. It proves the engine speaks
trainlock.engine/1 and round-trips bitwise through the DeepSpeed API surface it uses
(initialize, backward, step, save_checkpoint with client_state and `latest`,
load_checkpoint): an uninterrupted run (A) and a run SIGKILLed after its step-3 checkpoint
committed (B), resumed in a fresh process (C), end in bitwise-equal states and losses; each
negative control (--no-restore-rng, --no-restore-data) makes them differ; a fresh process
reads the checkpoint back (D). Without any deepspeed module the engine is refused.

Run: PYTHONPATH=tests/engines /usr/bin/python3 -B -m unittest discover -s tests/engines -p 'test_*.py'
"""

import os
import shutil
import tempfile
import unittest

import harness

STEPS, SAVE_AT = 6, 3
FAKE = os.path.join(harness.HERE, "fake_deepspeed")
WITH_FAKE = {"PYTHONPATH": harness.PACKAGE_PARENT + os.pathsep + FAKE}


class DeepSpeedProtocolRoundTrip(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="trainlock-deepspeed-")
        cls.spec = harness.write_spec(cls.dir, harness.tiny_spec(engine="deepspeed"))
        cls.a = cls.train("uninterrupted", ["--measure-step", "2", "--final-state", os.path.join(cls.dir, "a.safetensors")],
                          root=os.path.join(cls.dir, "a-ckpt"))
        cls.root = os.path.join(cls.dir, "ckpt")
        cls.b = cls.train("preempted", ["--save-at", str(SAVE_AT)], kill_after=harness.committed_at(SAVE_AT))
        cls.c = cls.train("resumed", ["--restore", "--final-state", os.path.join(cls.dir, "c.safetensors")])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    @classmethod
    def train(cls, name, extra, root=None, kill_after=None):
        args = ["--engine", "deepspeed", "--role", "train", "--spec", cls.spec, "--checkpoint-root", root or cls.root,
                "--steps", str(STEPS), "--device", "cpu", "--threads", "1"] + extra
        return harness.run_engine(args, kill_after=kill_after, record="deepspeed-" + name, env=WITH_FAKE)

    def test_uninterrupted_run_speaks_the_protocol(self):
        a = self.a
        self.assertEqual(a.code, 0, a.stderr[-3000:])
        hello = a.events[0]
        self.assertEqual((hello["event"], hello["engine"]), ("hello", "deepspeed"))
        self.assertEqual(hello["versions"]["deepspeed"], "0.0.0+trainlock-protocol-fake")
        self.assertEqual(a.events[-1]["event"], "done")
        self.assertEqual(len(a.events), len(a.stdout_lines))
        self.assertEqual(sorted(a.losses()), list(range(1, STEPS + 1)))
        self.assertIn("fake deepspeed", a.one("setup")["model"]["class"])
        shape = a.one("measurement")["measured_shape"]
        self.assertEqual((shape["engine"], shape["param_dtype"], shape["activation_checkpointing"]), ("deepspeed", "fp32", False))

    def test_checkpoint_commits_after_save_checkpoint_wrote_latest(self):
        committed = [e for e in self.b.of("checkpoint") if e["phase"] == "committed"]
        self.assertTrue(self.b.killed)
        self.assertEqual(committed[0]["step"], SAVE_AT)
        directory = committed[0]["dir"]
        with open(os.path.join(directory, "latest")) as f:
            self.assertEqual(f.read(), "step-%d" % SAVE_AT)
        self.assertTrue(os.path.exists(os.path.join(directory, "step-%d" % SAVE_AT, "mp_rank_00_model_states.pt")))

    def test_resumed_run_restores_rng_and_data_position(self):
        r = self.c.one("restored")
        self.assertEqual((r["step"], r["rng_restored"], r["data_restored"]), (SAVE_AT, True, True))

    def test_resumed_state_and_losses_are_bitwise_the_uninterrupted_ones(self):
        self.a.one("state"), self.c.one("state")  # each wrote exactly one final state
        digests = self.a.state_digests()
        self.assertEqual(digests, self.c.state_digests())
        for prefix in ("param/", "optim/", "rng/torch_cpu", "data/position"):
            self.assertTrue(any(k.startswith(prefix) for k in digests), prefix)
        self.assertEqual({s: l for s, l in self.a.losses().items() if s > SAVE_AT}, self.c.losses())
        self.assertEqual(self.c.one("eval")["loss"], self.b.one("eval")["loss"])

    def test_without_the_rng_streams_the_resume_diverges(self):
        run = self.train("no-restore-rng", ["--restore", "--no-restore-rng", "--final-state", os.path.join(self.dir, "x.safetensors")])
        self.assertEqual(run.code, 0, run.stderr[-3000:])
        self.assertFalse(run.one("restored")["rng_restored"])
        self.assertNotEqual(run.state_digests()["param/lm_head.weight"], self.a.state_digests()["param/lm_head.weight"])
        self.assertNotEqual(run.losses()[STEPS], self.a.losses()[STEPS])

    def test_without_the_data_position_the_resume_diverges(self):
        run = self.train("no-restore-data", ["--restore", "--no-restore-data", "--final-state", os.path.join(self.dir, "y.safetensors")])
        self.assertEqual(run.code, 0, run.stderr[-3000:])
        self.assertFalse(run.one("restored")["data_restored"])
        self.assertNotEqual(run.state_digests()["data/position"], self.a.state_digests()["data/position"])
        self.assertNotEqual(run.losses()[SAVE_AT + 1], self.a.losses()[SAVE_AT + 1])

    def test_a_checkpoint_whose_client_state_is_another_step_is_refused(self):
        import sys

        import torch

        sys.path.insert(0, harness.PACKAGE_PARENT)
        from trainlock_engine import commit

        root = os.path.join(self.dir, "moved")
        shutil.copytree(self.root, root)
        moved = os.path.join(root, "step-%08d" % (SAVE_AT + 1))
        os.rename(os.path.join(root, "step-%08d" % SAVE_AT), moved)
        os.rename(os.path.join(moved, "step-%d" % SAVE_AT), os.path.join(moved, "step-%d" % (SAVE_AT + 1)))
        with open(os.path.join(moved, "latest"), "w") as f:
            f.write("step-%d" % (SAVE_AT + 1))
        driver = torch.load(os.path.join(moved, "trainlock-driver.pt"))
        driver["step"] = SAVE_AT + 1
        torch.save(driver, os.path.join(moved, "trainlock-driver.pt"))
        os.remove(os.path.join(moved, commit.MARKER))
        commit.write_marker(moved, SAVE_AT + 1)  # everything but DeepSpeed's client_state says step 4
        run = harness.run_engine(["--engine", "deepspeed", "--spec", self.spec, "--checkpoint-root", root, "--steps", str(STEPS),
                                  "--restore", "--device", "cpu", "--threads", "1"], env=WITH_FAKE)
        self.assertIn("client_state", run.one("error")["message"])
        self.assertEqual(run.one("error")["kind"], "checkpoint")
        self.assertEqual(run.code, 4)
        self.assertEqual(run.of("step"), [])

    def test_portable_role_reads_the_checkpoint_in_a_fresh_process(self):
        run = harness.run_engine(["--engine", "deepspeed", "--role", "portable", "--spec", self.spec, "--checkpoint-root",
                                  self.root, "--device", "cpu", "--threads", "1"], record="deepspeed-portable", env=WITH_FAKE)
        self.assertEqual(run.code, 0, run.stderr[-3000:])
        self.assertEqual(run.one("restored")["step"], SAVE_AT)
        self.assertEqual(run.one("eval")["loss"], self.b.one("eval")["loss"])


if __name__ == "__main__":
    unittest.main()
