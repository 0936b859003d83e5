"""The ddp engine across processes (--nproc 2, gloo on CPU): rank 0 speaks for the job, a
resumed two-rank run ends bitwise where the uninterrupted two-rank run did, a checkpoint
saved by two ranks resumes in one keeping the global batch (grad_accum doubled), and when a
rank dies the job ends with an error instead of waiting on the dead peer.
"""

import os
import shutil
import signal
import tempfile
import time
import unittest

import harness


def _children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        return []


class TwoRanks(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="trainlock-ranks-")
        cls.spec = harness.write_spec(cls.dir, harness.tiny_spec())
        cls.root = os.path.join(cls.dir, "ckpt")
        cls.a = cls.engine(["--nproc", "2", "--steps", "4", "--save-at", "2", "--measure-step", "3",
                            "--final-state", os.path.join(cls.dir, "a.safetensors")], record="ddp-nproc2-uninterrupted")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    @classmethod
    def engine(cls, extra, record=None, kill_after=None):
        args = ["--engine", "ddp", "--spec", cls.spec, "--checkpoint-root", cls.root, "--device", "cpu",
                "--threads", "1"] + extra
        return harness.run_engine(args, record=record, kill_after=kill_after)

    def test_rank_zero_speaks_once_for_two_ranks(self):
        self.assertEqual(self.a.code, 0, self.a.stderr[-3000:])
        self.assertEqual(self.a.one("hello")["world_size"], 2)
        m = self.a.one("measurement")
        self.assertEqual(m["measured_shape"]["world_size"], 2)
        self.assertEqual([r["rank"] for r in m["ranks"]], [0, 1])
        self.assertEqual(m["tokens"], 4 * 32 * 2 * 2)
        self.assertEqual(len(self.a.of("step")), 4)

    def test_two_rank_resume_is_bitwise_the_uninterrupted_run(self):
        run = self.engine(["--nproc", "2", "--steps", "4", "--restore", "--final-state", os.path.join(self.dir, "c.safetensors")],
                          record="ddp-nproc2-resumed")
        self.assertEqual(run.code, 0, run.stderr[-3000:])
        restored = run.one("restored")
        self.assertEqual((restored["step"], restored["rng_restored"], restored["world_size_saved"]), (2, True, 2))
        self.assertEqual(run.state_digests(), self.a.state_digests())
        self.assertEqual(run.losses(), {s: l for s, l in self.a.losses().items() if s > 2})

    def test_one_rank_resumes_a_two_rank_checkpoint_keeping_the_global_batch(self):
        run = self.engine(["--steps", "4", "--restore", "--final-state", os.path.join(self.dir, "r.safetensors")],
                          record="ddp-resharded-2-to-1")
        self.assertEqual(run.code, 0, run.stderr[-3000:])
        restored = run.one("restored")
        self.assertEqual((restored["world_size_saved"], restored["grad_accum"]), (2, 4))
        self.assertTrue(restored["data_position_carried"])
        self.assertFalse(restored["rng_restored"])  # rank 1's streams have no rank to go to
        # The same global windows were read: the global data position ends where the two-rank
        # run's did. Losses agree only roughly (one rank draws dropout for both halves).
        self.assertEqual(run.state_digests()["data/position"], self.a.state_digests()["data/position"])
        for step, loss in run.losses().items():
            self.assertAlmostEqual(loss, self.a.losses()[step], delta=0.05)

    def test_a_dead_rank_ends_the_job(self):
        def kill_rank_one(event):
            if event.get("event") != "setup":
                return False
            launcher = [p for p in _children(os.getpid())]
            for pid in launcher:
                ranks = _children(pid)
                if len(ranks) == 2:
                    os.kill(ranks[1], signal.SIGKILL)
            return False

        started = time.time()
        run = self.engine(["--nproc", "2", "--steps", "4"], kill_after=kill_rank_one, record="ddp-nproc2-rank-killed")
        self.assertNotEqual(run.code, 0)
        self.assertEqual(run.of("done"), [])
        self.assertIn("rank 1", run.one("error")["message"])
        self.assertLess(time.time() - started, 120)


if __name__ == "__main__":
    unittest.main()
