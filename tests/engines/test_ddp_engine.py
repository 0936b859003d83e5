"""The `ddp` engine's round trip on examples/tiny's shape (CPU, gloo, torch >= 1.13):
an uninterrupted run (A) and a run SIGKILLed after its step-3 checkpoint committed (B),
resumed in a fresh process (C), must end in bitwise-equal states and losses; each negative
control (--no-restore-rng, --no-restore-data) must make them differ; a fresh process reads
the checkpoint back (D).

Run: PYTHONPATH=tests/engines /usr/bin/python3 -m unittest discover -s tests/engines -v
"""

import os
import shutil
import tempfile
import unittest

import harness

STEPS, SAVE_AT = 6, 3


class DdpRoundTrip(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="trainlock-ddp-")
        cls.spec = harness.write_spec(cls.dir, harness.tiny_spec())
        cls.a = cls.train("uninterrupted", ["--measure-step", "2", "--final-state", os.path.join(cls.dir, "a.safetensors")],
                          root=os.path.join(cls.dir, "a-ckpt"))
        cls.root = os.path.join(cls.dir, "ckpt")
        cls.b = cls.train("preempted", ["--save-at", str(SAVE_AT)], kill_after=harness.committed_at(SAVE_AT))
        cls.c = cls.train("resumed", ["--restore", "--final-state", os.path.join(cls.dir, "c.safetensors")])

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    @classmethod
    def train(cls, name, extra, root=None, kill_after=None, record=True):
        args = ["--engine", "ddp", "--role", "train", "--spec", cls.spec, "--checkpoint-root", root or cls.root,
                "--steps", str(STEPS), "--device", "cpu", "--threads", "1"] + extra
        return harness.run_engine(args, kill_after=kill_after, record="ddp-" + name if record else None)

    def test_uninterrupted_run_speaks_the_protocol(self):
        a = self.a
        self.assertEqual(a.code, 0, a.stderr[-3000:])
        self.assertEqual(a.events[0]["event"], "hello")
        self.assertEqual(a.events[0]["protocol"], "trainlock.engine/1")
        self.assertEqual(a.events[-1]["event"], "done")
        self.assertEqual(len(a.events), len(a.stdout_lines))  # nothing but protocol lines on stdout
        self.assertEqual(sorted(a.losses()), list(range(1, STEPS + 1)))
        m = a.one("measurement")
        self.assertEqual(m["step"], 2)
        self.assertEqual(m["measured_shape"], {"engine": "ddp", "world_size": 1, "param_dtype": "fp32",
                                               "activation_dtype": "fp32", "activation_checkpointing": False})
        self.assertEqual(m["tokens"], 4 * 32 * 2)
        self.assertTrue(os.path.exists(a.one("state")["file"]))

    def test_preempted_run_was_killed_after_its_checkpoint_committed(self):
        self.assertTrue(self.b.killed)
        committed = [e for e in self.b.of("checkpoint") if e["phase"] == "committed"]
        self.assertEqual(committed[0]["step"], SAVE_AT)
        self.assertEqual(self.b.one("eval")["when"], "after_save")

    def test_resumed_run_restores_rng_and_data_position(self):
        r = self.c.one("restored")
        self.assertEqual((r["step"], r["rng_restored"], r["data_restored"], r["world_size_saved"]), (SAVE_AT, True, True, 1))
        self.assertTrue(r["data_position_carried"])

    def test_resumed_state_is_bitwise_the_uninterrupted_state(self):
        a, c = self.a.one("state"), self.c.one("state")
        self.assertEqual(a["step"], c["step"])
        digests = self.a.state_digests()
        self.assertEqual(digests, self.c.state_digests())
        for prefix in ("param/", "optim/", "rng/torch_cpu", "rng/python", "data/position"):
            self.assertTrue(any(k.startswith(prefix) for k in digests), prefix)

    def test_the_resumed_run_gives_the_device_back_after_its_last_step(self):
        # Nothing trains after it: the coordinator may start the portable process beside its end.
        self.assertIn("trainlock-engine: device given back", self.c.stderr)

    def test_a_run_that_measures_or_saves_keeps_its_device(self):
        self.assertNotIn("device given back", self.a.stderr)
        self.assertNotIn("device given back", self.b.stderr)

    def test_resumed_losses_equal_the_uninterrupted_losses(self):
        a, c = self.a.losses(), self.c.losses()
        self.assertEqual(sorted(c), list(range(SAVE_AT + 1, STEPS + 1)))
        self.assertEqual({s: a[s] for s in c}, c)

    def test_eval_after_restore_equals_eval_after_save(self):
        self.assertEqual(self.c.one("eval")["when"], "after_restore")
        self.assertEqual(self.c.one("eval")["loss"], self.b.one("eval")["loss"])

    def test_without_the_rng_streams_the_resume_diverges(self):
        run = self.train("no-restore-rng", ["--restore", "--no-restore-rng", "--final-state", os.path.join(self.dir, "x.safetensors")])
        self.assertEqual(run.code, 0, run.stderr[-3000:])
        self.assertFalse(run.one("restored")["rng_restored"])
        self.assertTrue(run.one("restored")["data_restored"])
        self.assertNotEqual(run.state_digests()["param/lm_head.weight"], self.a.state_digests()["param/lm_head.weight"])
        self.assertNotEqual(run.losses()[STEPS], self.a.losses()[STEPS])

    def test_without_the_data_position_the_resume_diverges(self):
        run = self.train("no-restore-data", ["--restore", "--no-restore-data", "--final-state", os.path.join(self.dir, "y.safetensors")])
        self.assertEqual(run.code, 0, run.stderr[-3000:])
        self.assertFalse(run.one("restored")["data_restored"])
        self.assertFalse(run.one("restored")["data_position_carried"])
        self.assertNotEqual(run.state_digests()["data/position"], self.a.state_digests()["data/position"])
        self.assertNotEqual(run.losses()[SAVE_AT + 1], self.a.losses()[SAVE_AT + 1])

    def test_activation_checkpointing_is_observed_not_copied(self):
        spec = harness.write_spec(tempfile.mkdtemp(dir=self.dir), harness.tiny_spec(**{"training.activation_checkpointing": True}))
        args = ["--engine", "ddp", "--spec", spec, "--checkpoint-root", os.path.join(self.dir, "ac"), "--steps", "2",
                "--measure-step", "2", "--device", "cpu", "--threads", "1"]
        run = harness.run_engine(args)
        self.assertEqual(run.code, 0, run.stderr[-3000:])
        self.assertTrue(run.one("measurement")["measured_shape"]["activation_checkpointing"])
        self.assertEqual(run.losses()[1], self.a.losses()[1])  # recomputation replays dropout exactly

    def test_portable_role_reads_the_checkpoint_in_a_fresh_process(self):
        args = ["--engine", "ddp", "--role", "portable", "--spec", self.spec, "--checkpoint-root", self.root,
                "--device", "cpu", "--threads", "1"]
        run = harness.run_engine(args, record="ddp-portable")
        self.assertEqual(run.code, 0, run.stderr[-3000:])
        self.assertEqual(run.one("restored")["step"], SAVE_AT)
        self.assertEqual(run.one("eval")["when"], "portable")
        self.assertEqual(run.one("eval")["loss"], self.b.one("eval")["loss"])


if __name__ == "__main__":
    unittest.main()
