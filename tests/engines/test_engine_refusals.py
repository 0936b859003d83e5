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

    def test_a_spec_changed_after_the_coordinator_wrote_it_is_an_integrity_error(self):
        path = harness.write_spec(self.dir, harness.tiny_spec())
        written = _sha(path)
        with open(path, "a") as f:
            f.write(" ")
        run = harness.run_engine(["--engine", "ddp", "--spec", path, "--spec-sha256", written, "--checkpoint-root",
                                  self.root, "--steps", "2", "--device", "cpu", "--threads", "1"])
        self.assert_refused(run, "integrity", 5, "is not the coordinator's sha256 " + written)

    def test_a_checkpoint_of_another_run_is_not_restored(self):
        saved = self.run_spec(harness.tiny_spec(), ["--save-at", "1"], engine="ddp")
        self.assertEqual(saved.code, 0, saved.stderr[-2000:])
        other = harness.tiny_spec(seed=8)  # the same shape, another seed: another run
        run = self.run_spec(other, ["--restore"])
        self.assert_refused(run, "checkpoint", 4, "written for the run of spec")

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
        files = [{"path": shard, "name": "train-0000.bin", "sha256": _sha(shard), "size": os.path.getsize(shard)}]
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

    def test_a_token_outside_the_vocabulary_that_no_window_reads_is_refused_before_training(self):
        shard, spec = self.shard_spec()
        with open(shard, "r+b") as f:  # the last token: past the last window of seq_len + 1 tokens
            f.seek(2 * 2399)
            f.write(struct.pack("<H", 300))
        spec["data"]["files"] = [{"path": shard, "name": "train-0000.bin", "sha256": _sha(shard), "size": os.path.getsize(shard)}]
        run = self.run_spec(spec)
        self.assert_refused(run, "input", 2, "%s: token 300 at index 2399 is outside the vocabulary (256)" % shard)

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
        spec["model"]["dir"] = self.dir  # as the coordinator writes it: the files' names are under it
        return path, spec

    def test_pinned_weights_are_verified_and_loaded(self):
        path, spec = self.weights_spec()
        run = self.run_spec(spec, ["--final-state", os.path.join(self.dir, "s.safetensors")])
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

class VocabularyScan(unittest.TestCase):
    """data.first_out_of_vocab: every token of a mapped shard, in bounded steps."""

    def scan(self, tokens, width, vocab, step):
        import torch  # noqa: F401 (the engine's dependency)
        from trainlock_engine import data

        buffer = bytearray(struct.pack("<%d%s" % (len(tokens), "H" if width == 2 else "I"), *tokens))
        saved, data.VOCAB_SCAN_TOKENS = data.VOCAB_SCAN_TOKENS, step
        try:
            return data.first_out_of_vocab(buffer, width, vocab)
        finally:
            data.VOCAB_SCAN_TOKENS = saved

    def test_the_first_uint32_token_past_the_vocabulary_is_found_in_a_later_step(self):
        tokens = [i % 1000 for i in range(5000)]
        tokens[4321], tokens[4999] = 70000, 1 << 31
        self.assertEqual(self.scan(tokens, 4, 1000, 1000), (4321, 70000))

    def test_a_uint16_token_at_the_last_index_is_found(self):
        tokens = [i % 256 for i in range(3001)]
        tokens[-1] = 0xFFFF
        self.assertEqual(self.scan(tokens, 2, 256, 1024), (3000, 0xFFFF))

    def test_a_shard_within_the_vocabulary_has_no_finding(self):
        self.assertIsNone(self.scan([i % 256 for i in range(3000)], 2, 256, 1000))


if __name__ == "__main__":
    unittest.main()
