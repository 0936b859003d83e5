"""hf-trainer's ckpt.portable reads the checkpoint's weights with trainlock's own safetensors
reader, without transformers: one model.safetensors, or, where save_pretrained sharded the
weights (above its max_shard_size), the shards model.safetensors.index.json names. A sharded
checkpoint is read whole; an index that maps a tensor to another shard, names a file outside the
directory, or names a tensor no shard has, is refused as kind `checkpoint`."""

import json
import os
import shutil
import sys
import tempfile
import unittest

import harness

sys.path.insert(0, harness.PACKAGE_PARENT)

import torch  # noqa: E402

from trainlock_engine import final_state  # noqa: E402
from trainlock_engine.engines import hf_trainer  # noqa: E402
from trainlock_engine.protocol import EngineError  # noqa: E402

SHARD_1, SHARD_2 = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"


class ShardedTrainerCheckpoint(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="trainlock-hf-sharded-")
        self.embed, self.head = torch.arange(6.0).reshape(2, 3), torch.ones(3, 2)
        final_state.write({"model.embed_tokens.weight": self.embed}, os.path.join(self.dir, SHARD_1))
        final_state.write({"lm_head.weight": self.head}, os.path.join(self.dir, SHARD_2))
        self.index({"model.embed_tokens.weight": SHARD_1, "lm_head.weight": SHARD_2})

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def index(self, weight_map):
        with open(os.path.join(self.dir, hf_trainer.SHARD_INDEX), "w") as f:
            json.dump({"metadata": {"total_size": 48}, "weight_map": weight_map}, f)

    def refusal(self):
        with self.assertRaises(EngineError) as caught:
            hf_trainer._model_weights(self.dir)
        self.assertEqual(caught.exception.kind, "checkpoint")
        return caught.exception.message

    def test_every_shard_the_index_names_is_read(self):
        weights = hf_trainer._model_weights(self.dir)
        self.assertEqual(sorted(weights), ["lm_head.weight", "model.embed_tokens.weight"])
        self.assertTrue(torch.equal(weights["model.embed_tokens.weight"], self.embed))
        self.assertTrue(torch.equal(weights["lm_head.weight"], self.head))

    def test_a_tensor_in_another_shard_than_the_index_says_is_refused(self):
        # Two copies of a tensor: the index names the first, the second shard carries another.
        final_state.write({"lm_head.weight": self.head, "model.embed_tokens.weight": self.embed * 0},
                          os.path.join(self.dir, SHARD_2))
        self.assertIn("tensor model.embed_tokens.weight is in %s, but" % SHARD_2, self.refusal())

    def test_a_shard_outside_the_directory_is_refused(self):
        self.index({"model.embed_tokens.weight": "../" + SHARD_1, "lm_head.weight": SHARD_2})
        self.assertIn("not a .safetensors file of this directory", self.refusal())

    def test_a_tensor_no_shard_has_is_refused(self):
        self.index({"model.embed_tokens.weight": SHARD_1, "lm_head.weight": SHARD_2, "model.norm.weight": SHARD_2})
        self.assertIn("in no shard, first model.norm.weight", self.refusal())

    def test_one_model_file_is_read_as_before(self):
        os.remove(os.path.join(self.dir, hf_trainer.SHARD_INDEX))
        final_state.write({"lm_head.weight": self.head}, os.path.join(self.dir, "model.safetensors"))
        self.assertEqual(list(hf_trainer._model_weights(self.dir)), ["lm_head.weight"])


if __name__ == "__main__":
    unittest.main()
