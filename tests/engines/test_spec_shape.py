"""The model-shape rules: the Python engines refuse a spec whose model breaks a rule over several
members exactly as the native reader does (src/run/engine_spec.cc's ReadModel, which applies
src/run/run_config.cc's ModelShapeProblems), naming the member the C++ names. Each rule is
planted in an otherwise valid spec; this test also reads ModelShapeProblems and fails when the
C++ gains or loses a rule, so spec.py's _shape_problems cannot silently drift from it.

Run: /usr/bin/python3 -B -m unittest tests/engines/test_spec_shape.py -v
"""

import os
import re
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "validators", "engines", "python"))
sys.path.insert(0, HERE)

from test_spec_ranges import refusal  # noqa: E402  (the error reading tiny_spec(**overrides), or "")

LLAMA3_SCALING = {"type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                  "original_max_position_embeddings": 8192}


def pilot_like(**overrides):
    """examples/h200-pilot-fsdp2's Llama-3.2-1B shape (with its Llama 3 rope scaling) at seq_len 4096."""
    shape = {"model.hidden_size": 2048, "model.num_layers": 16, "model.num_heads": 32, "model.num_kv_heads": 8,
             "model.intermediate_size": 8192, "model.vocab_size": 128256, "model.tie_embeddings": True,
             "model.rope_theta": 500000, "model.rope_scaling": dict(LLAMA3_SCALING), "model.dropout": 0.0,
             "training.seq_len": 4096, "training.precision": "bf16", "training.parallelism": "fsdp",
             "data.length": 4096 * 1000 + 1}
    shape.update(overrides)
    return refusal(**shape)


def cpp_shape_rules():
    """The member each of ModelShapeProblems' rules names, in the order the C++ checks them."""
    with open(os.path.join(ROOT, "src", "run", "run_config.cc")) as f:
        source = f.read()
    body = re.search(r"ModelShapeProblems\(const ModelConfig& m\) \{(.*?)\n\}", source, re.S)
    if body is None:
        raise ValueError("src/run/run_config.cc: ModelShapeProblems not found")
    return re.findall(r"problems\.push_back\(\s*\{\s*\"(\w+)\"", body.group(1))


class ModelShape(unittest.TestCase):
    def test_the_native_reader_has_the_rules_planted_here(self):
        # One entry per rule below; a rule added to or removed from the C++ must reach spec.py too.
        self.assertEqual(cpp_shape_rules(), ["num_heads", "num_heads", "num_kv_heads", "rope_scaling"])

    def test_a_pilot_like_spec_is_read(self):
        self.assertEqual(pilot_like(), "")

    def test_a_hidden_size_num_heads_does_not_divide_is_refused_naming_num_heads(self):
        message = refusal(**{"model.hidden_size": 64, "model.num_heads": 6, "model.num_kv_heads": 2})
        self.assertIn("spec.model.num_heads: breaks a rule", message)
        self.assertIn("model.hidden_size 64 is not divisible by model.num_heads 6", message)

    def test_an_odd_head_dimension_is_refused_naming_num_heads(self):
        message = refusal(**{"model.hidden_size": 60, "model.num_heads": 4, "model.num_kv_heads": 2})
        self.assertIn("spec.model.num_heads: breaks a rule", message)
        self.assertIn("model head dimension 15 is odd", message)

    def test_num_heads_not_a_multiple_of_num_kv_heads_is_refused_naming_num_kv_heads(self):
        message = refusal(**{"model.num_heads": 4, "model.num_kv_heads": 3})
        self.assertIn("spec.model.num_kv_heads: breaks a rule", message)
        self.assertIn("model.num_heads 4 is not a multiple of model.num_kv_heads 3", message)

    def test_a_llama3_high_freq_factor_below_low_freq_factor_is_refused_naming_rope_scaling(self):
        scaling = dict(LLAMA3_SCALING, low_freq_factor=4.0, high_freq_factor=1.0)
        message = pilot_like(**{"model.rope_scaling": scaling})
        self.assertIn("spec.model.rope_scaling: breaks a rule", message)
        self.assertIn("high_freq_factor' must be greater than low_freq_factor", message)

    def test_a_llama3_high_freq_factor_equal_to_low_freq_factor_is_refused(self):
        scaling = dict(LLAMA3_SCALING, low_freq_factor=2.0, high_freq_factor=2.0)
        self.assertIn("spec.model.rope_scaling: breaks a rule", pilot_like(**{"model.rope_scaling": scaling}))

    def test_linear_rope_scaling_has_no_frequency_rule(self):
        self.assertEqual(pilot_like(**{"model.rope_scaling": {"type": "linear", "factor": 2.0}}), "")

    def test_a_model_breaking_two_rules_is_refused_at_the_first_the_native_reader_checks(self):
        # hidden 64 / 6 heads does not divide, and 6 heads do not share 4 kv heads evenly.
        message = refusal(**{"model.hidden_size": 64, "model.num_heads": 6, "model.num_kv_heads": 4})
        self.assertIn("spec.model.num_heads: breaks a rule", message)

    def test_the_shape_is_checked_after_every_model_member_is_read(self):
        # As ReadModel: a member out of range is reported before a rule the shape breaks.
        message = refusal(**{"model.num_kv_heads": 3, "model.dropout": 0.95})
        self.assertIn("spec.model.dropout", message)


if __name__ == "__main__":
    unittest.main()
