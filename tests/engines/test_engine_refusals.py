"""What an engine process refuses, through the protocol: each test plants one fault and
asserts `hello` first, then one `error` of the documented kind and the exit code
(2 input/unsupported, 4 checkpoint, 5 integrity), and that no training step ran.
Also the positive point-of-use paths: pinned shards and pinned weights that verify are
reported as `artifact` events and train.
"""

import hashlib
import json
import os
import shutil
import struct
import sys
import tempfile
import unittest

import harness

sys.path.insert(0, harness.PACKAGE_PARENT)


def _sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class Refusals(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="trainlock-refusal-")
        self.root = os.path.join(self.dir, "ckpt")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def run_spec(self, spec, extra=(), engine="ddp", record=None):
        path = harness.write_spec(self.dir, spec)
        args = ["--engine", engine, "--spec", path, "--checkpoint-root", self.root, "--steps", "2",
                "--device", "cpu", "--threads", "1"] + list(extra)
        return harness.run_engine(args, record=record)

    def assert_refused(self, run, kind, code, mentions):
        self.assertEqual(run.events[0]["event"], "hello", run.stdout_lines[:2])
        error = run.one("error")
        self.assertEqual(error["kind"], kind, error)
        self.assertIn(mentions, error["message"])
        self.assertEqual(run.code, code, run.stderr[-2000:])
        self.assertEqual(run.of("step"), [])
        self.assertEqual(run.of("done"), [])

    def test_unknown_option_is_an_input_error(self):
        run = self.run_spec(harness.tiny_spec(), ["--frobnicate"], record="ddp-unknown-option")
        self.assert_refused(run, "input", 2, "--frobnicate")

    def test_a_spec_member_of_the_wrong_type_is_named(self):
        run = self.run_spec(harness.tiny_spec(**{"training.optimizer.lr": "fast"}), record="ddp-bad-spec")
        self.assert_refused(run, "input", 2, "spec.training.optimizer.lr")

    def test_a_spec_for_another_engine_is_refused(self):
        run = self.run_spec(harness.tiny_spec(engine="fsdp2"))
        self.assert_refused(run, "input", 2, "spec.engine")

    def test_bf16_on_cpu_is_refused_naming_the_precision(self):
        run = self.run_spec(harness.tiny_spec(**{"training.precision": "bf16"}), record="ddp-bf16-on-cpu")
        self.assert_refused(run, "unsupported", 2, "training.precision")

    def test_fsdp2_refuses_a_torch_without_fully_shard(self):
        import torch

        if tuple(int(x) for x in torch.__version__.split(".")[:2]) >= (2, 4):
            self.skipTest("torch %s has fully_shard" % torch.__version__)
        run = self.run_spec(harness.tiny_spec(engine="fsdp2"), engine="fsdp2", record="fsdp2-old-torch")
        self.assert_refused(run, "unsupported", 2, torch.__version__)

    def test_restore_without_a_committed_checkpoint_is_a_checkpoint_error(self):
        run = self.run_spec(harness.tiny_spec(), ["--restore"])
        self.assert_refused(run, "checkpoint", 4, "no committed checkpoint")

    # -- pinned files -------------------------------------------------------------------
    def shard_spec(self, tokens=2400):
        shard = os.path.join(self.dir, "train-0000.bin")
        with open(shard, "wb") as f:
            f.write(struct.pack("<%dH" % tokens, *[(i * 7 + i // 8) % 256 for i in range(tokens)]))
        files = [{"path": shard, "sha256": _sha(shard), "size": os.path.getsize(shard)}]
        return shard, harness.tiny_spec(data={"kind": "shards", "files": files, "bytes_per_token": 2})

    def test_a_pinned_shard_that_verifies_is_an_artifact_and_trains(self):
        shard, spec = self.shard_spec()
        run = self.run_spec(spec)
        self.assertEqual(run.code, 0, run.stderr[-2000:])
        self.assertEqual(run.one("artifact")["path"], shard)
        self.assertIn("1 token shard(s)", run.one("setup")["data"])
        self.assertEqual(len(run.of("step")), 2)

    def test_a_tampered_pinned_shard_is_an_integrity_error(self):
        shard, spec = self.shard_spec()
        with open(shard, "r+b") as f:
            f.seek(100)
            f.write(b"\x01\x00")
        run = self.run_spec(spec, record="ddp-tampered-shard")
        self.assert_refused(run, "integrity", 5, shard)
        self.assertEqual(run.of("artifact"), [])

    def weights_spec(self):
        import torch
        from trainlock_engine.model import Llama

        spec = harness.tiny_spec()
        torch.manual_seed(99)
        model = Llama(spec["model"])
        model.init_weights()
        header, blobs, offset = {}, [], 0
        for name, t in model.state_dict().items():
            raw = t.contiguous().numpy().tobytes()
            header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(raw)]}
            blobs.append(raw)
            offset += len(raw)
        head = json.dumps(header).encode()
        path = os.path.join(self.dir, "model.safetensors")
        with open(path, "wb") as f:
            f.write(struct.pack("<Q", len(head)) + head + b"".join(blobs))
        spec["model"]["files"] = [{"path": path, "name": "model.safetensors", "sha256": _sha(path), "size": os.path.getsize(path)}]
        return path, spec

    def test_pinned_weights_are_verified_and_loaded(self):
        path, spec = self.weights_spec()
        run = self.run_spec(spec, ["--final-state", os.path.join(self.dir, "s.pt")])
        self.assertEqual(run.code, 0, run.stderr[-2000:])
        self.assertEqual(run.one("artifact")["path"], path)
        self.assertEqual(run.one("setup")["model"]["source"], "weights")

    def test_tampered_pinned_weights_are_an_integrity_error(self):
        path, spec = self.weights_spec()
        with open(path, "r+b") as f:
            f.seek(-4, os.SEEK_END)
            f.write(b"\x00\x00\x80\x7f")
        run = self.run_spec(spec)
        self.assert_refused(run, "integrity", 5, path)


if __name__ == "__main__":
    unittest.main()
