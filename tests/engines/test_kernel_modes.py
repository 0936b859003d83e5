"""train.step's kernel modes on the `ddp` engine (CPU, Debian's torch): the step is measured
with the kernels the run's config asks for (training.deterministic), as the native engine
measures it. A config that asks for deterministic kernels gets one measurement, mode
"deterministic"; one that does not gets the step again with torch's default kernels after the
round trip (mode "default", the median of step_times_s) and the deterministic measurement
beside it, while the round trip's state stays the deterministic one. The same for the engines
whose framework owns the loop (hf-trainer, lightning), through _framework.Measure driven as
their callbacks drive it.

Run: PYTHONPATH=tests/engines /usr/bin/python3 -B -m unittest tests/engines/test_kernel_modes.py -v
"""

import os
import shutil
import sys
import tempfile
import unittest

import harness

STEPS, MEASURE = 4, 2


def _train(directory, name, deterministic):
    spec = harness.write_spec(tempfile.mkdtemp(dir=directory), harness.tiny_spec(**{"training.deterministic": deterministic}))
    args = ["--engine", "ddp", "--role", "train", "--spec", spec, "--checkpoint-root", os.path.join(directory, name),
            "--steps", str(STEPS), "--measure-step", str(MEASURE), "--final-state", os.path.join(directory, name + ".safetensors"),
            "--device", "cpu", "--threads", "1"]
    return harness.run_engine(args)


class KernelModes(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="trainlock-kernels-")
        cls.deterministic = _train(cls.dir, "deterministic", True)
        cls.default = _train(cls.dir, "default", False)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_a_config_asking_for_deterministic_kernels_is_measured_with_them(self):
        run = self.deterministic
        self.assertEqual(run.code, 0, run.stderr[-3000:])
        m = run.one("measurement")
        self.assertEqual((m["mode"], m["step"]), ("deterministic", MEASURE))
        self.assertNotIn("deterministic", m)

    def test_a_config_not_asking_for_them_is_measured_with_the_default_kernels(self):
        run = self.default
        self.assertEqual(run.code, 0, run.stderr[-3000:])
        m = run.one("measurement")
        self.assertEqual(m["mode"], "default")
        self.assertEqual(len(m["step_times_s"]), 3)
        self.assertEqual(m["step_time_s"], sorted(m["step_times_s"])[1])  # the median
        self.assertEqual(m["step"], STEPS + 1 + 3)  # after the round trip: a warm-up, 3 timed
        self.assertEqual((m["tokens"], m["measured_shape"]["engine"]), (4 * 32 * 2, "ddp"))

    def test_the_deterministic_measurement_is_beside_the_default_one(self):
        m = self.default.one("measurement")
        reference = m["deterministic"]
        self.assertEqual((reference["mode"], reference["step"]), ("deterministic", MEASURE))
        self.assertGreater(reference["step_time_s"], 0)
        self.assertNotIn("deterministic", reference)

    def test_the_round_trip_stays_deterministic(self):
        # The steps with the default kernels come after the final state: the state and the
        # losses the round trip compares are those of the deterministic run, to the bit.
        events = [e["event"] for e in self.default.events]
        self.assertLess(events.index("state"), events.index("measurement"))
        self.assertEqual(self.default.state_digests(), self.deterministic.state_digests())
        self.assertEqual(self.default.losses(), self.deterministic.losses())
        self.assertEqual(sorted(self.default.losses()), list(range(1, STEPS + 1)))


class _Ctx:
    def __init__(self, spec):
        import torch

        self.device, self.spec, self.events = torch.device("cpu"), spec, []

    def emit(self, event, **members):
        self.events.append(dict(members, event=event))


class _Model:
    trainlock_logits_dtype, trainlock_recomputed = [None], [0]

    def parameters(self):
        import torch

        return iter([torch.zeros(1)])


class FrameworkLoopKernelModes(unittest.TestCase):
    """_framework.Measure as hf-trainer's and lightning's callbacks drive it (once per
    micro-batch at a step's start), without the frameworks."""

    def measure(self, deterministic):
        sys.path.insert(0, harness.PACKAGE_PARENT)
        from trainlock_engine import runtime
        from trainlock_engine.engines import _framework as fw

        runtime.set_deterministic()
        ctx = _Ctx(harness.tiny_spec(**{"training.deterministic": deterministic}))
        m = fw.Measure(ctx, "hf-trainer", _Model(), MEASURE)
        for step in (1, 2, 3):
            for _ in range(2):  # two micro-batches, the callback called for each
                m.begin(step)
            m.end(step, 2)
        return ctx, m

    def test_a_config_asking_for_deterministic_kernels_gets_the_round_trips_step(self):
        ctx, m = self.measure(True)
        self.assertEqual([(e["mode"], e["step"]) for e in ctx.events], [("deterministic", MEASURE)])
        self.assertFalse(m.wants_run_kernels)

    def test_otherwise_the_second_loop_is_timed_with_the_default_kernels(self):
        import torch

        ctx, m = self.measure(False)
        self.assertEqual(ctx.events, [])  # held until the run's kernels were measured
        self.assertTrue(m.wants_run_kernels)
        m.start_run_kernels()
        self.assertFalse(torch.are_deterministic_algorithms_enabled())
        for step in range(1, m.run_kernel_loop_steps() + 1):
            for _ in range(2):
                m.begin(step)
            m.end(step, 2)
        m.finish_run_kernels(6 + m.run_kernel_loop_steps())
        (event,) = ctx.events
        self.assertEqual((event["mode"], event["step"], len(event["step_times_s"])), ("default", 10, 3))
        self.assertEqual((event["deterministic"]["mode"], event["deterministic"]["step"]), ("deterministic", MEASURE))


if __name__ == "__main__":
    unittest.main()
