"""final_state.write: the final training state streamed into the safetensors file the
coordinator digests. The file must hold every entry's exact bytes at the offsets its header
states, whatever the chunking and the writer threads did, and refuse what it cannot store.

Run: /usr/bin/python3 -B -m unittest tests/engines/test_final_state.py -v
"""

import json
import os
import struct
import sys
import tempfile
import unittest
from unittest import mock

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "validators", "engines", "python"))

import torch  # noqa: E402

from trainlock_engine import final_state  # noqa: E402
from trainlock_engine.protocol import EngineError  # noqa: E402


def read_safetensors(path):
    """{name: (dtype, shape, bytes)} read back independently of the writer."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    body = raw[8 + n:]
    out = {}
    for name, h in header.items():
        a, b = h["data_offsets"]
        out[name] = (h["dtype"], h["shape"], body[a:b])
    ends = sorted(h["data_offsets"][1] for h in header.values())
    assert len(body) == (ends[-1] if ends else 0), "trailing or missing bytes"
    return out


def raw_bytes(t):
    return t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b""


class StreamedFinalState(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "state.safetensors")

    def tearDown(self):
        self.dir.cleanup()

    def test_every_entry_is_stored_with_its_exact_bytes_in_sorted_order(self):
        g = torch.Generator().manual_seed(3)
        flat = {"param/w": torch.randn(37, 11, generator=g), "param/b": torch.randn(5, generator=g).to(torch.bfloat16),
                "optim/w/step": torch.tensor(4.0), "rng/torch_cpu": torch.randint(0, 255, (100,), dtype=torch.uint8, generator=g),
                "rng/flag": torch.tensor([True, False, True]), "data/position": {"step": 4, "windows": [3, 1]}}
        size = final_state.write(flat, self.path)
        self.assertEqual(size, os.path.getsize(self.path))
        stored = read_safetensors(self.path)
        self.assertEqual(sorted(stored), sorted(flat))
        for name, value in flat.items():
            if torch.is_tensor(value):
                self.assertEqual(stored[name][1], list(value.shape), name)
                self.assertEqual(stored[name][2], raw_bytes(value), name)
        self.assertEqual(json.loads(stored["data/position"][2]), {"step": 4, "windows": [3, 1]})
        with open(self.path, "rb") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            self.assertEqual(list(json.loads(f.read(n))), sorted(flat))

    def test_a_tensor_larger_than_a_chunk_is_split_and_reassembled_exactly(self):
        big = torch.arange(10007, dtype=torch.int32)
        with mock.patch.object(final_state, "CHUNK_BYTES", 1000):
            final_state.write({"param/big": big, "param/small": torch.ones(3)}, self.path)
        self.assertEqual(read_safetensors(self.path)["param/big"][2], raw_bytes(big))

    def test_a_non_contiguous_tensor_is_stored_as_its_contiguous_copy(self):
        t = torch.arange(24, dtype=torch.float32).reshape(4, 6).t()
        final_state.write({"param/t": t}, self.path)
        self.assertEqual(read_safetensors(self.path)["param/t"][2], raw_bytes(t.contiguous()))

    def test_empty_tensors_take_no_bytes(self):
        final_state.write({"param/empty": torch.zeros(0, 4), "param/one": torch.ones(1)}, self.path)
        stored = read_safetensors(self.path)
        self.assertEqual(stored["param/empty"][2], b"")
        self.assertEqual(stored["param/empty"][1], [0, 4])

    def test_a_dtype_safetensors_cannot_store_is_refused_before_writing(self):
        with self.assertRaises(EngineError) as caught:
            final_state.write({"param/c": torch.zeros(2, dtype=torch.complex64)}, self.path)
        self.assertEqual(caught.exception.kind, "training")
        self.assertIn("param/c", caught.exception.message)
        self.assertFalse(os.path.exists(self.path))

    def test_a_rank_that_does_not_write_leaves_no_file(self):
        self.assertEqual(final_state.write({"param/w": torch.ones(2)}, self.path, writing=False), 0)
        self.assertFalse(os.path.exists(self.path))

    def test_a_symlink_at_the_path_is_not_followed(self):
        target = os.path.join(self.dir.name, "elsewhere")
        with open(target, "w") as f:
            f.write("keep")
        os.symlink(target, self.path)
        with self.assertRaises(OSError):
            final_state.write({"param/w": torch.ones(2)}, self.path)
        with open(target) as f:
            self.assertEqual(f.read(), "keep")


class PreparedFinalState(unittest.TestCase):
    """final_state.Prepared: the file allocated ahead holds the same bytes once written, appears
    at its name only then, and never stays behind or replaces a file it did not make."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "state.safetensors")
        g = torch.Generator().manual_seed(5)
        self.flat = {"param/w": torch.randn(300, 70, generator=g), "param/b": torch.randn(9, generator=g),
                     "data/position": {"step": 8}}

    def tearDown(self):
        self.dir.cleanup()

    def unprepared_bytes(self):
        other = os.path.join(self.dir.name, "unprepared.safetensors")
        final_state.write(self.flat, other)
        with open(other, "rb") as f:
            return f.read()

    def test_a_prepared_file_holds_the_same_bytes_and_is_renamed_to_its_name(self):
        prepared = final_state.Prepared(self.path, final_state.tensor_bytes(self.flat))
        ready = prepared.take(self.path)
        self.assertIsNotNone(ready)
        self.assertFalse(os.path.exists(self.path))
        size = final_state.write(self.flat, self.path, prepared=ready)
        with open(self.path, "rb") as f:
            self.assertEqual(f.read(), self.unprepared_bytes())
        self.assertEqual(size, os.path.getsize(self.path))
        self.assertFalse(os.path.exists(ready))

    def test_the_estimate_counts_the_tensors_bytes(self):
        self.assertEqual(final_state.tensor_bytes(self.flat), (300 * 70 + 9) * 4)

    def test_a_prepared_file_larger_than_the_state_is_cut_to_its_size(self):
        prepared = final_state.Prepared(self.path, 1 << 20)
        final_state.write(self.flat, self.path, prepared=prepared.take(self.path))
        with open(self.path, "rb") as f:
            self.assertEqual(f.read(), self.unprepared_bytes())

    def test_a_prepared_file_never_used_is_removed(self):
        prepared = final_state.Prepared(self.path, 4096)
        prepared.discard()
        self.assertEqual(os.listdir(self.dir.name), [])

    def test_it_is_only_handed_to_the_file_it_was_made_for(self):
        prepared = final_state.Prepared(self.path, 4096)
        self.assertIsNone(prepared.take(os.path.join(self.dir.name, "other.safetensors")))
        prepared.discard()

    def test_a_file_already_at_the_prepared_name_is_neither_used_nor_removed(self):
        theirs = self.path + ".prepared"
        with open(theirs, "w") as f:
            f.write("someone else's")
        prepared = final_state.Prepared(self.path, 4096)
        self.assertIsNone(prepared.take(self.path))
        prepared.discard()
        with open(theirs) as f:
            self.assertEqual(f.read(), "someone else's")

    def test_a_link_at_the_name_of_a_prepared_write_is_replaced_and_its_target_left_alone(self):
        target = os.path.join(self.dir.name, "elsewhere")
        with open(target, "w") as f:
            f.write("keep")
        os.symlink(target, self.path)
        prepared = final_state.Prepared(self.path, 4096)
        final_state.write(self.flat, self.path, prepared=prepared.take(self.path))
        self.assertFalse(os.path.islink(self.path))
        with open(target) as f:
            self.assertEqual(f.read(), "keep")


if __name__ == "__main__":
    unittest.main()
