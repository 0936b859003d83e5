"""The engines read JSON they did not write (their spec, a checkpoint's commit marker, transformers'
trainer state, a safetensors header, a rank's error record) under the native reader's limits
(src/base/json_limits.h): nesting, numbers within a double, each member once, no NaN. A crafted
file is refused with its offset and its reader's own error, never a RecursionError that would be
reported as a failed training step, and never read as something else than it says."""

import json
import os
import random
import re
import shutil
import struct
import sys
import tempfile
import unittest

import harness

sys.path.insert(0, harness.PACKAGE_PARENT)

from trainlock_engine import bounded_json, commit, launch, safetensors_io, spec  # noqa: E402
from trainlock_engine.protocol import EngineError  # noqa: E402

DEEP = "[" * 100000 + "]" * 100000  # deep enough that Python's json raises RecursionError


def nested(depth):
    return "[" * depth + "]" * depth


class Limits(unittest.TestCase):
    def test_the_depth_is_the_native_readers(self):
        with open(os.path.join(harness.ROOT, "src", "base", "json_limits.h")) as f:
            found = re.findall(r"inline constexpr int kMaxJsonDepth = (\d+);", f.read())
        self.assertEqual(found, [str(bounded_json.MAX_DEPTH)])

    def test_nesting_up_to_the_limit_is_read(self):
        value, depth = bounded_json.loads(nested(bounded_json.MAX_DEPTH)), 1
        while value:
            value, depth = value[0], depth + 1
        self.assertEqual(depth, bounded_json.MAX_DEPTH)

    def test_one_level_deeper_is_refused_at_its_bracket(self):
        with self.assertRaisesRegex(ValueError, r"at byte 64: JSON nested deeper than 64 levels"):
            bounded_json.loads(nested(bounded_json.MAX_DEPTH + 1))

    def test_a_document_deep_enough_to_exhaust_pythons_recursion_is_a_value_error(self):
        with self.assertRaisesRegex(ValueError, "nested deeper"):
            bounded_json.loads(DEEP)

    def test_brackets_inside_strings_do_not_nest(self):
        value = {"s": "[" * 1000, "t": "\\\"[{"}
        self.assertEqual(bounded_json.loads(json.dumps(value)), value)

    def test_a_member_named_twice_is_refused_with_its_offset(self):
        with self.assertRaisesRegex(ValueError, r'at byte 12: member "step" appears twice'):
            bounded_json.loads('{"step": 1, "step": 2}')

    def test_a_member_named_twice_through_an_escape_is_refused(self):
        with self.assertRaisesRegex(ValueError, 'member "ab" appears twice'):
            bounded_json.loads('{"a\\u0062": 1, "ab": 2}')

    def test_the_same_name_in_two_objects_is_read(self):
        self.assertEqual(bounded_json.loads('[{"a": 1}, {"a": 2}]'), [{"a": 1}, {"a": 2}])

    def test_a_number_beyond_a_double_is_refused(self):
        for text in ('{"x": 1e999}', '[-1e400]', "[1" + "0" * 400 + "]", "[99e307]", "[1" + "0" * 250 + "e99]",
                     "[2" + "0" * 308 + ".5]"):
            with self.assertRaisesRegex(ValueError, "beyond the range of a double", msg=text):
                bounded_json.loads(text)

    def test_numbers_within_a_double_are_read(self):
        self.assertEqual(bounded_json.loads("[-1e308, 18446744073709551615, 0.5, 1e-999]"),
                         [-1e308, 18446744073709551615, 0.5, 0.0])
        self.assertEqual(bounded_json.loads("[1" + "0" * 250 + "]"), [10 ** 250])

    def test_nan_and_infinity_are_refused(self):
        for text in ("[NaN]", "[Infinity]", "[-Infinity]"):
            with self.assertRaisesRegex(ValueError, "not a JSON value", msg=text):
                bounded_json.loads(text)

    def test_nan_and_infinity_are_read_where_the_writer_is_pythons_json(self):
        value = bounded_json.loads('{"grad_norm": Infinity, "loss": NaN}', nonfinite=True)
        self.assertEqual(value["grad_norm"], float("inf"))
        self.assertNotEqual(value["loss"], value["loss"])

    def test_mutated_documents_are_read_as_json_reads_them_or_refused_with_a_value_error(self):
        entry = {"path": "a/b.pt", "block_sha256": "0" * 8, "size": -1.5e3, "lr": 1e300}
        seed_doc = json.dumps({"step": 4, "files": [entry],
                               "s": "q\\\\\"[{", "t": [[], {}, None, True]})
        alphabet = '[]{}",:\\0123456789eE.-+ anNI'
        limits = ("nested deeper", "appears twice", "beyond the range", "not a JSON value")
        rng = random.Random(20261204)
        for _ in range(3000):
            text = list(seed_doc)
            for _ in range(rng.randint(1, 4)):
                at = rng.randrange(len(text) + 1)
                op = rng.randrange(3)
                if op == 0:
                    text.insert(at, rng.choice(alphabet) * rng.choice((1, 1, 2, 70)))
                elif text and op == 1:
                    del text[min(at, len(text) - 1)]
                elif text:
                    text[min(at, len(text) - 1)] = rng.choice(alphabet)
            text = "".join(text)
            try:
                expected = json.loads(text)
            except (ValueError, RecursionError):
                expected = ValueError
            try:
                got = bounded_json.loads(text)
            except ValueError as e:
                if expected is not ValueError:  # Python reads it: only a limit may refuse it
                    self.assertTrue(any(limit in str(e) for limit in limits), (text, str(e)))
                continue
            self.assertIsNot(expected, ValueError, text)
            self.assertEqual(json.dumps(got), json.dumps(expected), text)

    def test_bytes_that_are_not_utf8_are_a_value_error(self):
        with self.assertRaises(ValueError):
            bounded_json.loads(b'{"a": "\xff"}')


class Readers(unittest.TestCase):
    """Each reader of a file it did not write refuses a crafted one as that file's error."""

    def setUp(self):
        self.dir = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.dir)

    def write(self, name, text):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def test_a_file_larger_than_its_cap_is_refused_and_one_at_it_read(self):
        path = self.write("doc.json", '{"a": "%s"}' % ("x" * 91))  # 100 bytes
        self.assertEqual(bounded_json.load_file(path, 100), {"a": "x" * 91})
        with self.assertRaisesRegex(ValueError, "larger than 99 bytes"):
            bounded_json.load_file(path, 99)

    def test_a_deep_commit_marker_is_an_unreadable_checkpoint(self):
        directory = commit.step_dir(self.dir, 3)
        os.makedirs(directory)
        self.write(os.path.join(os.path.basename(directory), commit.MARKER), DEEP)
        with self.assertRaises(EngineError) as caught:
            commit.verify(directory, 3)
        self.assertEqual(caught.exception.kind, "checkpoint")
        self.assertIn("unreadable commit marker (at byte 64: JSON nested deeper", caught.exception.message)

    def test_a_commit_marker_naming_its_step_twice_is_refused(self):
        directory = commit.step_dir(self.dir, 3)
        os.makedirs(directory)
        self.write(os.path.join(os.path.basename(directory), commit.MARKER), '{"step": 9, "files": [], "step": 3}')
        with self.assertRaises(EngineError) as caught:
            commit.verify(directory, 3)
        self.assertIn('member "step" appears twice', caught.exception.message)

    def test_a_deep_spec_is_refused_as_input(self):
        path = self.write("spec.json", '{"schema": ' + DEEP + "}")  # the 64th bracket opens level 65
        with self.assertRaises(EngineError) as caught:
            spec.load(path)
        self.assertEqual(caught.exception.kind, "input")
        self.assertIn("spec.json: not JSON (at byte 74: JSON nested deeper", caught.exception.message)

    def test_a_safetensors_header_naming_a_tensor_twice_is_refused(self):
        entry = '{"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}'
        header = ('{"w": %s, "w": %s}' % (entry, entry)).encode()
        buf = struct.pack("<Q", len(header)) + header + b"\0" * 4
        with self.assertRaises(EngineError) as caught:
            safetensors_io.read(buf, "model.safetensors")
        self.assertIn('model.safetensors: not a safetensors file the engine can read (header is not JSON within the '
                      'reader\'s limits (at byte 62: member "w" appears twice', caught.exception.message)

    def test_a_rank_error_with_a_nan_in_its_extras_reaches_the_launcher(self):
        launch.write_rank_error(self.dir, 2, EngineError("out_of_memory", "no room", memory={"free": float("nan")}))
        [(rank, record)] = launch._rank_errors(self.dir)
        self.assertEqual((rank, record["kind"], record["extra"]), (2, "out_of_memory", {"memory": {"free": None}}))

    def test_a_rank_error_record_the_launcher_cannot_trust_is_passed_over(self):
        good = {"kind": "checkpoint", "message": "torn", "extra": {}, "time": 2.0}
        self.write("rank-0.json", json.dumps(good))
        self.write("rank-1.json", DEEP)
        self.write("rank-2.json", json.dumps(dict(good, kind="no such kind")))
        self.write("rank-3.json", json.dumps(dict(good, extra=[1])))
        self.write("rank-4.json", json.dumps(dict(good, message="x" * launch.MAX_RANK_ERROR_BYTES)))
        self.write("rank-5.json", json.dumps(dict(good, time=1.0, kind="training")))
        self.assertEqual(launch._rank_errors(self.dir), [(5, dict(good, time=1.0, kind="training")), (0, good)])


class HfTrainerCheckpointFiles(unittest.TestCase):
    """hf-trainer's resume reads transformers' trainer_state.json from the checkpoint, and
    ckpt.portable its model.safetensors: a crafted one is a refused checkpoint (exit 4)."""

    def setUp(self):
        try:
            from trainlock_engine.engines import hf_trainer
        except ImportError as e:  # the engine module itself needs only torch
            self.skipTest("hf_trainer does not import here: %s" % e)
        self.hf_trainer = hf_trainer
        self.dir = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_a_deep_trainer_state_is_an_unreadable_checkpoint(self):
        with open(os.path.join(self.dir, "trainer_state.json"), "w") as f:
            f.write(DEEP)
        with self.assertRaises(EngineError) as caught:
            self.hf_trainer._trainer_state(self.dir)
        self.assertEqual(caught.exception.kind, "checkpoint")
        self.assertIn("nested deeper", caught.exception.message)

    def test_a_trainer_state_logging_an_overflowed_step_is_read(self):
        with open(os.path.join(self.dir, "trainer_state.json"), "w") as f:
            json.dump({"global_step": 4, "log_history": [{"grad_norm": float("inf"), "loss": 2.5, "step": 4}]}, f)
        self.assertEqual(self.hf_trainer._trainer_state(self.dir)["log_history"][0]["grad_norm"], float("inf"))

    def test_an_oversized_trainer_state_is_refused_not_read_in_part(self):
        with open(os.path.join(self.dir, "trainer_state.json"), "wb") as f:
            f.truncate(self.hf_trainer.MAX_TRAINER_STATE_BYTES + 1)
        with self.assertRaises(EngineError) as caught:
            self.hf_trainer._trainer_state(self.dir)
        self.assertIn("larger than %d bytes" % self.hf_trainer.MAX_TRAINER_STATE_BYTES, caught.exception.message)

    def test_checkpoint_weights_with_a_crafted_header_are_a_refused_checkpoint(self):
        header = b'{"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}, "w": 1}'
        with open(os.path.join(self.dir, "model.safetensors"), "wb") as f:
            f.write(struct.pack("<Q", len(header)) + header + b"\0" * 4)
        with self.assertRaises(EngineError) as caught:
            self.hf_trainer._model_weights(self.dir)
        self.assertEqual((caught.exception.kind, caught.exception.exit_code), ("checkpoint", 4))
        self.assertIn('model.safetensors: not a safetensors file the engine can read', caught.exception.message)


if __name__ == "__main__":
    unittest.main()
