"""spec.RANGES: the Python engines read a spec with the ranges the native reader applies
(src/run/engine_spec.cc, from src/run/run_config.h's shape_range), so a spec that one refuses
the other refuses too, a checkpoint's crafted spec included. The table is written in both
languages; this test reads the C++ and fails on any member or bound that differs. So too the
cap on a synthetic stream's windows (spec.MAX_DATA_WINDOWS, engine_spec.h's kMaxDataWindows).

Run: /usr/bin/python3 -B -m unittest tests/engines/test_spec_ranges.py -v
"""

import os
import re
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "validators", "engines", "python"))
sys.path.insert(0, HERE)

from harness import tiny_spec  # noqa: E402
from trainlock_engine import spec as spec_module  # noqa: E402
from trainlock_engine.protocol import EngineError  # noqa: E402


def _read(relative):
    with open(os.path.join(ROOT, relative)) as f:
        return f.read()


def _value(expression, constants):
    """A C++ bound as the headers spell it: `int64_t{1} << 20`, `1e-12`, `INT64_MAX`, a constant."""
    text = expression.strip()
    if text in constants:
        return constants[text]
    # int64_t{1} and uint64_t{1} alike (engine_spec.h's kMaxDataWindows is unsigned)
    text = re.sub(r"\bu?int64_t\{(\d+)\}", r"\1", text).replace("INT64_MAX", str((1 << 63) - 1))
    if not re.fullmatch(r"[0-9eE.+\- <]+", text):
        raise ValueError("a bound this test cannot read: %r" % expression)
    return eval(text, {"__builtins__": {}})  # digits, exponents and shifts only (checked above)


def cpp_ranges():
    """{member: (min, max)} as src/run/engine_spec.cc reads each numeric member."""
    constants = {}
    for name, expression in re.findall(r"inline constexpr int64_t (k\w+) = ([^;]+);", _read("src/run/engine_spec.h")):
        constants[name] = _value(expression, {})
    for name, bounds in re.findall(r"inline constexpr (?:Int|Number)Range (k\w+)\{(.*)\};", _read("src/run/run_config.h")):
        low, high = bounds.split(",", 1)
        constants["R::" + name] = (_value(low, {}), _value(high, {}))
    ranges = {}
    for member, bound in re.findall(r"\.(?:Integer|Number)\(\s*\"(\w+)\",\s*(R::k\w+|\{[^}]*\})\)",
                                    _read("src/run/engine_spec.cc")):
        if bound.startswith("{"):
            low, high = bound[1:-1].split(",", 1)
            ranges[member] = (_value(low, constants), _value(high, constants))
        else:
            ranges[member] = constants[bound]
    return ranges


def refusal(**overrides):
    """The error reading tiny_spec(**overrides) raises, or "" where it is read."""
    try:
        spec_module.parse(tiny_spec(**overrides))
    except EngineError as e:
        return str(e)
    return ""


def cpp_max_data_windows():
    """src/run/engine_spec.h's kMaxDataWindows."""
    found = re.findall(r"inline constexpr uint64_t kMaxDataWindows = ([^;]+);", _read("src/run/engine_spec.h"))
    if len(found) != 1:
        raise ValueError("src/run/engine_spec.h declares kMaxDataWindows %d times" % len(found))
    return _value(found[0], {})


# How src/run/engine_spec.cc's ReadData counts a synthetic stream's windows against the cap;
# spec.py's _synthetic_length counts them the same way, and a change here must reach it.
WINDOW_COUNT = re.compile(r"\(d\.length - 1\) / static_cast<uint64_t>\(t\.seq_len\)\s*>\s*kMaxDataWindows")


class SpecRanges(unittest.TestCase):
    def test_every_numeric_member_has_the_native_readers_range(self):
        native = cpp_ranges()
        self.assertGreaterEqual(len(native), 25)  # the scan found the reader's members
        self.assertEqual(sorted(spec_module.RANGES), sorted(native))
        for member, (low, high) in native.items():
            self.assertEqual(spec_module.RANGES[member], (low, high), member)

    def refusal(self, **overrides):
        return refusal(**overrides)

    def test_the_tiny_spec_is_read(self):
        self.assertEqual(self.refusal(), "")

    def test_a_dropout_the_native_reader_refuses_is_refused_naming_the_member(self):
        self.assertIn("model.dropout", self.refusal(**{"model.dropout": 0.95}))
        self.assertEqual(self.refusal(**{"model.dropout": 0.9}), "")

    def test_a_bound_is_inclusive_and_one_past_it_is_refused(self):
        self.assertEqual(self.refusal(**{"training.grad_accum": 1 << 16}), "")
        self.assertIn("training.grad_accum", self.refusal(**{"training.grad_accum": (1 << 16) + 1}))

    def test_a_huge_model_dimension_is_refused_before_anything_is_built(self):
        self.assertIn("model.hidden_size", self.refusal(**{"model.hidden_size": 1 << 30}))

    def test_a_learning_rate_of_zero_is_refused_as_the_native_reader_does(self):
        self.assertIn("training.optimizer.lr", self.refusal(**{"training.optimizer.lr": 0.0}))

    def test_a_beta_of_one_is_refused_as_the_native_reader_does(self):
        self.assertIn("training.optimizer.beta1", self.refusal(**{"training.optimizer.beta2": 1.0}))


class DataWindowCap(unittest.TestCase):
    """A synthetic stream holds at most kMaxDataWindows windows, counted (length - 1) // seq_len."""

    SEQ_LEN = 32  # tiny_spec's

    def refusal(self, length, **overrides):
        return refusal(**{"data.length": length}, **overrides)

    def test_the_cap_is_the_native_readers(self):
        self.assertEqual(spec_module.MAX_DATA_WINDOWS, cpp_max_data_windows())

    def test_the_native_reader_still_counts_windows_as_spec_py_does(self):
        self.assertRegex(_read("src/run/engine_spec.cc"), WINDOW_COUNT)

    def test_a_stream_of_exactly_the_cap_is_read(self):
        self.assertEqual(self.refusal(spec_module.MAX_DATA_WINDOWS * self.SEQ_LEN + 1), "")

    def test_the_longest_length_within_the_cap_is_read(self):
        self.assertEqual(self.refusal((spec_module.MAX_DATA_WINDOWS + 1) * self.SEQ_LEN), "")

    def test_one_window_over_the_cap_is_refused_naming_the_member_and_the_limit(self):
        message = self.refusal((spec_module.MAX_DATA_WINDOWS + 1) * self.SEQ_LEN + 1)
        self.assertIn("spec.data.length", message)
        self.assertIn("over %d windows of seq_len %d" % (spec_module.MAX_DATA_WINDOWS, self.SEQ_LEN), message)

    def test_the_cap_counts_windows_of_the_specs_seq_len(self):
        length = (spec_module.MAX_DATA_WINDOWS + 1) * self.SEQ_LEN + 1
        self.assertEqual(self.refusal(length, **{"training.seq_len": 64}), "")

    def test_a_stream_below_two_tokens_is_refused_as_the_native_reader_does(self):
        self.assertIn("spec.data.length: is below 2 tokens", self.refusal(1))
        self.assertEqual(self.refusal(2), "")


if __name__ == "__main__":
    unittest.main()
