"""spec.parse asks for every member src/run/engine_spec.cc's ReadEngineSpec asks for, of the
type it asks, so a spec the native reader refuses the Python engines refuse too (an `input`
error naming the member, spec.<path>): the top-level strings and seed, model.files (and
model.dir, absolute, when files are listed), training.parallelism (one of the values the C++
allows, read from the C++ here) and training.deterministic, and the 64-bit seeds. The specs
the coordinator writes (EngineSpecJson) carry every one of these members; so does
harness.tiny_spec, which this test checks against the C++ writer's member lists.

Run: /usr/bin/python3 -B -m unittest tests/engines/test_spec_members.py -v
"""

import copy
import json
import os
import re
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "validators", "engines", "python"))
sys.path.insert(0, HERE)

from harness import tiny_spec  # noqa: E402
from trainlock_engine import spec as spec_module  # noqa: E402
from trainlock_engine.protocol import EngineError  # noqa: E402

ENGINE_SPEC_CC = "src/run/engine_spec.cc"
SHA = "ab" * 32


def _read(relative):
    with open(os.path.join(ROOT, relative)) as f:
        return f.read()


def cpp_parallelism():
    """The values src/run/engine_spec.cc's ReadTraining allows training.parallelism."""
    found = re.findall(r'OneOf\("parallelism",\s*\{([^}]*)\}\)', _read(ENGINE_SPEC_CC))
    if len(found) != 1:
        raise ValueError("%s reads parallelism %d times" % (ENGINE_SPEC_CC, len(found)))
    return tuple(re.findall(r'"([^"]*)"', found[0]))


def cpp_written_members(function):
    """The member names src/run/engine_spec.cc's `function` (ModelJson, TrainingJson,
    EngineSpecJson) writes in its returned object, nested objects' members included."""
    text = _read(ENGINE_SPEC_CC)
    start = text.index("json %s(" % function)
    body = text[text.index("return", start):text.index("\n}\n", start)]
    return set(re.findall(r'\{"(\w+)",', body))


def members(obj):
    """Every member name of a JSON object and of the objects nested in it."""
    names = set()
    for key, value in obj.items():
        names.add(key)
        if isinstance(value, dict):
            names |= members(value)
    return names


def refusal(spec):
    """The message reading `spec` raises (its kind asserted `input`), or "" where it is read."""
    try:
        spec_module.parse(spec)
    except EngineError as e:
        assert e.kind == "input", e.kind
        return str(e)
    return ""


def without(path):
    """tiny_spec less the member at the dotted `path`."""
    spec = tiny_spec()
    node = spec
    keys = path.split(".")
    for k in keys[:-1]:
        node = node[k]
    del node[keys[-1]]
    return spec


def with_model_file(**model):
    """tiny_spec listing one pinned model file, its model members overridden by `model`."""
    spec = tiny_spec(**{"model.files": [{"path": "/pinned/model.safetensors", "name": "model.safetensors",
                                         "sha256": SHA, "size": 10}]})
    spec["model"].update(model)
    return spec


class RequiredMembers(unittest.TestCase):
    """A member the native reader requires, missing, is refused naming it."""

    def assert_missing_refused(self, path):
        self.assertEqual(refusal(without(path)), "spec.%s: missing" % path)

    def test_a_spec_without_engine_is_refused_naming_it(self):
        self.assert_missing_refused("engine")

    def test_a_spec_without_lock_sha256_is_refused_naming_it(self):
        self.assert_missing_refused("lock_sha256")

    def test_a_spec_without_config_sha256_is_refused_naming_it(self):
        self.assert_missing_refused("config_sha256")

    def test_a_spec_without_seed_is_refused_naming_it(self):
        self.assert_missing_refused("seed")

    def test_a_spec_without_model_files_is_refused_naming_it(self):
        self.assert_missing_refused("model.files")

    def test_a_spec_without_training_parallelism_is_refused_naming_it(self):
        self.assert_missing_refused("training.parallelism")

    def test_a_spec_without_training_deterministic_is_refused_naming_it(self):
        self.assert_missing_refused("training.deterministic")

    def test_a_spec_without_data_seed_is_refused_naming_it(self):
        self.assert_missing_refused("data.seed")

    def test_a_shard_listed_without_a_name_is_refused_naming_it(self):
        spec = tiny_spec(data={"kind": "shards", "bytes_per_token": 2,
                               "files": [{"path": "/pinned/train-0000.bin", "sha256": SHA, "size": 4}]})
        self.assertEqual(refusal(spec), "spec.data.files[0].name: missing")

    def test_a_listed_shard_with_a_name_is_read(self):
        spec = tiny_spec(data={"kind": "shards", "bytes_per_token": 2,
                               "files": [{"path": "/pinned/train-0000.bin", "name": "train-0000.bin",
                                          "sha256": SHA, "size": 4}]})
        self.assertEqual(refusal(spec), "")


class MemberTypes(unittest.TestCase):
    """A required member of the wrong type is refused naming it; null is not a default."""

    def test_a_null_engine_is_refused_naming_it(self):
        self.assertIn("spec.engine: expected str", refusal(tiny_spec(engine=None)))

    def test_a_null_model_files_is_refused_naming_it(self):
        self.assertIn("spec.model.files: expected list", refusal(tiny_spec(**{"model.files": None})))

    def test_a_deterministic_that_is_not_a_bool_is_refused_naming_it(self):
        self.assertIn("spec.training.deterministic: expected bool",
                      refusal(tiny_spec(**{"training.deterministic": "yes"})))

    def test_a_lock_sha256_is_any_string_as_the_native_reader_asks_no_form_of_it(self):
        self.assertEqual(refusal(tiny_spec(lock_sha256="", config_sha256="not hex")), "")


class Parallelism(unittest.TestCase):
    """training.parallelism is one of the values src/run/engine_spec.cc allows."""

    def test_the_allowed_values_are_the_native_readers(self):
        self.assertEqual(spec_module.PARALLELISM, cpp_parallelism())

    def test_each_allowed_value_is_read(self):
        for value in cpp_parallelism():
            with self.subTest(value=value):
                spec = spec_module.parse(tiny_spec(**{"training.parallelism": value}))
                self.assertEqual(spec["training"]["parallelism"], value)

    def test_a_value_the_native_reader_does_not_allow_is_refused_naming_it(self):
        message = refusal(tiny_spec(**{"training.parallelism": "zero3"}))
        self.assertTrue(message.startswith("spec.training.parallelism: 'zero3' is not one of"), message)

    def test_a_value_differing_only_in_case_is_refused(self):
        self.assertIn("spec.training.parallelism:", refusal(tiny_spec(**{"training.parallelism": "DDP"})))


class ModelDir(unittest.TestCase):
    """model.dir: required, absolute, when model.files lists any file; not read otherwise."""

    def test_a_relative_dir_is_refused_when_files_are_listed(self):
        self.assertEqual(refusal(with_model_file(dir="models/tiny")), "spec.model.dir: must be absolute")

    def test_an_empty_dir_is_refused_when_files_are_listed(self):
        self.assertEqual(refusal(with_model_file(dir="")), "spec.model.dir: must be absolute")

    def test_a_missing_dir_is_refused_when_files_are_listed(self):
        spec = with_model_file()
        del spec["model"]["dir"]
        self.assertEqual(refusal(spec), "spec.model.dir: missing")

    def test_an_absolute_dir_is_read_when_files_are_listed(self):
        self.assertEqual(spec_module.parse(with_model_file(dir="/pinned"))["model"]["dir"], "/pinned")

    def test_the_dir_is_not_read_when_no_files_are_listed(self):
        spec = without("model.dir")
        self.assertEqual(refusal(spec), "")
        self.assertEqual(refusal(tiny_spec(**{"model.dir": "relative"})), "")


class Seeds(unittest.TestCase):
    """seed and data.seed are unsigned 64-bit integers, as spec_members.h's Unsigned reads them."""

    def test_a_seed_of_2_to_the_64_is_refused_naming_it(self):
        self.assertEqual(refusal(tiny_spec(seed=1 << 64)), "spec.seed: %d is above 2^64-1" % (1 << 64))

    def test_a_seed_of_2_to_the_64_minus_1_is_read(self):
        self.assertEqual(spec_module.parse(tiny_spec(seed=(1 << 64) - 1))["seed"], (1 << 64) - 1)

    def test_a_data_seed_of_2_to_the_64_is_refused_naming_it(self):
        self.assertIn("spec.data.seed: ", refusal(tiny_spec(**{"data.seed": 1 << 64})))

    def test_a_data_seed_of_2_to_the_64_minus_1_is_read(self):
        spec = spec_module.parse(tiny_spec(**{"data.seed": (1 << 64) - 1}))
        self.assertEqual(spec["data"]["seed"], (1 << 64) - 1)

    def test_a_negative_seed_is_refused_naming_it(self):
        self.assertIn("spec.seed: ", refusal(tiny_spec(seed=-1)))

    def test_a_fractional_seed_is_refused_naming_it(self):
        self.assertIn("spec.seed: expected int", refusal(tiny_spec(seed=1.0)))


class CoordinatorSpecs(unittest.TestCase):
    """The test specs carry every member the coordinator's writer (EngineSpecJson) writes, so
    the members now required never refuse a spec the coordinator could have written."""

    def test_tiny_spec_carries_every_top_level_member_the_coordinator_writes(self):
        self.assertEqual(set(tiny_spec()), cpp_written_members("EngineSpecJson"))

    def test_tiny_spec_carries_every_model_member_the_coordinator_writes(self):
        self.assertEqual(members(tiny_spec()["model"]), cpp_written_members("ModelJson"))

    def test_tiny_spec_carries_every_training_member_the_coordinator_writes(self):
        self.assertEqual(members(tiny_spec()["training"]), cpp_written_members("TrainingJson"))

    def test_tiny_spec_is_read(self):
        self.assertEqual(refusal(copy.deepcopy(tiny_spec())), "")


class JsonValues(unittest.TestCase):
    """load refuses what the native reader's JSON parser refuses: NaN and Infinity."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="trainlock-spec-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_a_spec_holding_nan_is_refused_as_not_json(self):
        path = os.path.join(self.dir, "spec.json")
        with open(path, "w") as f:
            f.write(json.dumps(tiny_spec(**{"training.grad_clip": float("nan")})))
        with self.assertRaises(EngineError) as caught:
            spec_module.load(path)
        self.assertEqual(caught.exception.kind, "input")
        self.assertIn("not JSON (NaN is not a JSON value", str(caught.exception))


if __name__ == "__main__":
    unittest.main()
