"""The run the coordinator resolved from the lock (schema trainlock.engine-spec/1), read
bounded and checked member by member: a missing member or one of the wrong type is an
`input` error naming it (e.g. `spec.training.optimizer.lr`). Returns plain dicts.

Pinned files are listed here but not read here: pinned.py hashes each at its point of use.
"""

import hashlib
import json
import os

from . import bounded_json
from .protocol import EngineError

SCHEMA = "trainlock.engine-spec/1"
MAX_SPEC_BYTES = 16 << 20

# The range of every numeric member, by member name, as the native reader applies them
# (src/run/engine_spec.cc, from src/run/run_config.h's shape_range): a spec a checkpoint carries
# is read with them too, so a crafted one is refused here as the native engine refuses it.
# tests/engines/test_spec_ranges.py reads both C++ files and fails on any difference.
RANGES = {
    "hidden_size": (1, 1 << 20), "num_layers": (1, 4096), "num_heads": (1, 4096), "num_kv_heads": (1, 4096),
    "intermediate_size": (1, 1 << 22), "vocab_size": (2, 1 << 24), "rope_theta": (1.0, 1e9),
    "factor": (1.0, 1e6), "low_freq_factor": (1e-6, 1e6), "high_freq_factor": (1e-6, 1e6),
    "original_max_position_embeddings": (1, 1 << 24), "norm_eps": (1e-12, 1e-1), "dropout": (0.0, 0.9),
    "seq_len": (1, 1 << 20), "micro_batch": (1, 1 << 20), "grad_accum": (1, 1 << 16),
    "lr": (0.0, 10.0), "beta1": (0.0, 1.0), "beta2": (0.0, 1.0), "eps": (0.0, 1.0), "weight_decay": (0.0, 10.0),
    "warmup_steps": (0, 1 << 40), "total_steps": (1, 1 << 40), "min_lr": (0.0, 10.0), "grad_clip": (0.0, 1e6),
    "bytes_per_token": (2, 4), "eval_batches": (1, 1 << 20), "size": (0, (1 << 63) - 1),
}

# The most windows a synthetic stream may hold, counted (length - 1) // seq_len, as
# src/run/engine_spec.h's kMaxDataWindows: the stream's shuffled window order is allocated
# whole, so a crafted length would otherwise allocate without bound (8 bytes a window).
# tests/engines/test_spec_ranges.py reads the C++ constant and the C++ count.
MAX_DATA_WINDOWS = 1 << 26

# The largest seed or synthetic length: src/run/spec_members.h's Unsigned reads a uint64_t.
MAX_UNSIGNED = (1 << 64) - 1

# training.parallelism's values, as src/run/engine_spec.cc's ReadTraining allows them
# (tests/engines/test_spec_members.py reads the C++ list).
PARALLELISM = ("ddp", "fsdp")


def refuse_other_run(directory, written_sha256, spec):
    """Refuses (kind `checkpoint`) a checkpoint in `directory` that says it was written for the
    run of another spec (`written_sha256`): the same model, recipe, data and seed or nothing."""
    if written_sha256 != spec.get("sha256"):
        raise EngineError("checkpoint", "%s: written for the run of spec %s, not this run's (%s)"
                          % (directory, str(written_sha256)[:12], str(spec.get("sha256"))[:12]))


def _fail(path, what):
    raise EngineError("input", "spec.%s: %s" % (path, what))


def _get(obj, key, path, kinds):
    """The member `key` of `obj`, of `kinds`: every member read is required, as the native
    reader's (src/run/spec_members.h's Get); null is a wrong type, never a default."""
    where = path + "." + key if path else key
    if key not in obj:
        _fail(where, "missing")
    value = obj[key]
    if kinds == "int":
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif kinds == "number":
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif kinds == "bool":
        ok = isinstance(value, bool)
    elif kinds == "str":
        ok = isinstance(value, str)
    elif kinds == "object":
        ok = isinstance(value, dict)
    else:  # list
        ok = isinstance(value, list)
    if not ok:
        _fail(where, "expected %s, got %s" % (kinds, json.dumps(value)[:80]))
    return value


def _unsigned(obj, key, path):
    """A non-negative integer that fits 64 bits, as src/run/spec_members.h's Unsigned."""
    where = (path + "." if path else "") + key
    value = _get(obj, key, path, "int")
    if value < 0:
        _fail(where, "must be non-negative, got %d" % value)
    if value > MAX_UNSIGNED:
        _fail(where, "%d is above 2^64-1" % value)
    return value


def _ranged(obj, key, path, kind):
    """The member `key`, of `kind` ("int" or "number"), within RANGES[key]."""
    value = _get(obj, key, path, kind)
    low, high = RANGES[key]
    if not low <= value <= high:
        _fail((path + "." if path else "") + key, "%s is out of range [%s, %s]" % (json.dumps(value), low, high))
    return value if kind == "int" else float(value)


def _one_of(obj, key, path, choices):
    value = _get(obj, key, path, "str")
    if value not in choices:
        _fail(path + "." + key, "%r is not one of %s" % (value, ", ".join(choices)))
    return value


def _files(obj, key, path):
    """The pinned files listed at `key`, each member required and read in the order of
    src/run/engine_spec.cc's ReadFiles (a `name` for a shard too: the coordinator writes one)."""
    out = []
    for i, f in enumerate(_get(obj, key, path, "list")):
        where = "%s.%s[%d]" % (path, key, i)
        if not isinstance(f, dict):
            _fail(where, "expected object")
        entry = {"path": _get(f, "path", where, "str"), "name": _get(f, "name", where, "str"),
                 "sha256": _get(f, "sha256", where, "str"), "size": _ranged(f, "size", where, "int")}
        if not os.path.isabs(entry["path"]):
            _fail(where + ".path", "must be absolute")
        if len(entry["sha256"]) != 64 or any(c not in "0123456789abcdef" for c in entry["sha256"]):
            _fail(where + ".sha256", "not a lowercase hex SHA-256")
        out.append(entry)
    return out


def _rope_scaling(model):
    r = model.get("rope_scaling")
    if r is None:
        return None
    if not isinstance(r, dict):
        _fail("model.rope_scaling", "expected null or object")
    p = "model.rope_scaling"
    kind = _one_of(r, "type", p, ("linear", "llama3"))
    out = {"type": kind, "factor": _ranged(r, "factor", p, "number")}
    if kind == "llama3":
        for key in ("low_freq_factor", "high_freq_factor"):
            out[key] = _ranged(r, key, p, "number")
        out["original_max_position_embeddings"] = _ranged(r, "original_max_position_embeddings", p, "int")
    return out


def _shape_problems(m):
    """[(member, message)]: the rules over several members that the model `m` (its members
    already in range) breaks, as src/run/run_config.cc's ModelShapeProblems; the reader refuses
    the first, as the native one does. test_spec_shape.py plants each."""
    problems = []
    if m["hidden_size"] % m["num_heads"]:
        problems.append(("num_heads", "model.hidden_size %d is not divisible by model.num_heads %d"
                         % (m["hidden_size"], m["num_heads"])))
    elif (m["hidden_size"] // m["num_heads"]) % 2:  # as in C++: asked only of a whole head dimension
        problems.append(("num_heads", "model head dimension %d is odd; rotary embeddings need an even head "
                         "dimension" % (m["hidden_size"] // m["num_heads"])))
    if m["num_heads"] % m["num_kv_heads"]:
        problems.append(("num_kv_heads", "model.num_heads %d is not a multiple of model.num_kv_heads %d"
                         % (m["num_heads"], m["num_kv_heads"])))
    r = m["rope_scaling"]
    if r is not None and r["type"] == "llama3" and r["high_freq_factor"] <= r["low_freq_factor"]:
        problems.append(("rope_scaling", "'model.rope_scaling.high_freq_factor' must be greater than "
                         "low_freq_factor"))
    return problems


def _model(spec):
    m = _get(spec, "model", "", "object")
    p = "model"
    _one_of(m, "architecture", p, ("llama",))
    out = {"architecture": "llama"}
    for key in ("hidden_size", "num_layers", "num_heads", "num_kv_heads", "intermediate_size", "vocab_size"):
        out[key] = _ranged(m, key, p, "int")
    out["tie_embeddings"] = _get(m, "tie_embeddings", p, "bool")
    out["rope_theta"] = _ranged(m, "rope_theta", p, "number")
    out["rope_scaling"] = _rope_scaling(m)
    out["norm_eps"] = _ranged(m, "norm_eps", p, "number")
    out["dropout"] = _ranged(m, "dropout", p, "number")
    # Checked after every member is read and before the files, where the native reader checks it.
    problems = _shape_problems(out)
    if problems:
        field, message = problems[0]
        _fail(p + "." + field, "breaks a rule: " + message)
    out["files"] = _files(m, "files", p)
    # The directory the files' names are under, read only when there are files (as the native
    # reader, which writes "" without them).
    out["dir"] = ""
    if out["files"]:
        out["dir"] = _get(m, "dir", p, "str")
        if not os.path.isabs(out["dir"]):
            _fail(p + ".dir", "must be absolute")
    return out


def _training(spec):
    t = _get(spec, "training", "", "object")
    p = "training"
    out = {key: _ranged(t, key, p, "int") for key in ("seq_len", "micro_batch", "grad_accum")}
    out["precision"] = _one_of(t, "precision", p, ("fp32", "bf16", "fp16"))
    o = _get(t, "optimizer", p, "object")
    po = p + ".optimizer"
    _one_of(o, "name", po, ("adamw",))
    out["optimizer"] = {"name": "adamw"}
    for key in ("lr", "beta1", "beta2", "eps", "weight_decay"):
        out["optimizer"][key] = _ranged(o, key, po, "number")
    if out["optimizer"]["lr"] <= 0:  # the native reader's rule too: a rate of 0 never trains
        _fail(po + ".lr", "is not above 0")
    if out["optimizer"]["beta1"] >= 1 or out["optimizer"]["beta2"] >= 1:
        _fail(po + ".beta1", "or beta2 is not below 1")
    s = _get(t, "scheduler", p, "object")
    ps = p + ".scheduler"
    out["scheduler"] = {"name": _one_of(s, "name", ps, ("cosine", "constant")),
                        "warmup_steps": _ranged(s, "warmup_steps", ps, "int"),
                        "total_steps": _ranged(s, "total_steps", ps, "int"),
                        "min_lr": _ranged(s, "min_lr", ps, "number")}
    out["grad_clip"] = _ranged(t, "grad_clip", p, "number")
    out["activation_checkpointing"] = _get(t, "activation_checkpointing", p, "bool")
    out["parallelism"] = _one_of(t, "parallelism", p, PARALLELISM)
    out["shuffle"] = _get(t, "shuffle", p, "bool")
    out["deterministic"] = _get(t, "deterministic", p, "bool")
    return out


def _synthetic_length(d, seq_len):
    """data.length, as src/run/engine_spec.cc's ReadData: at least 2 tokens (one window) and at
    most MAX_DATA_WINDOWS windows of seq_len."""
    length = _unsigned(d, "length", "data")
    if length < 2:
        _fail("data.length", "is below 2 tokens")
    if (length - 1) // seq_len > MAX_DATA_WINDOWS:
        _fail("data.length", "%d is over %d windows of seq_len %d" % (length, MAX_DATA_WINDOWS, seq_len))
    return length


def _data(spec, seq_len):
    d = _get(spec, "data", "", "object")
    kind = _one_of(d, "kind", "data", ("synthetic", "shards"))
    if kind == "synthetic":
        return {"kind": kind, "seed": _unsigned(d, "seed", "data"),
                "length": _synthetic_length(d, seq_len)}
    width = _ranged(d, "bytes_per_token", "data", "int")
    if width not in (2, 4):
        _fail("data.bytes_per_token", "must be 2 or 4, got %d" % width)
    files = _files(d, "files", "data")
    if not files:
        _fail("data.files", "no shards")
    return {"kind": kind, "files": files, "bytes_per_token": width}


def parse(spec):
    if not isinstance(spec, dict):
        _fail("", "the spec is not a JSON object")
    schema = _get(spec, "schema", "", "str")
    if schema != SCHEMA:
        _fail("schema", "%r is not %s" % (schema, SCHEMA))
    out = {"schema": schema,
           "engine": _get(spec, "engine", "", "str"),  # required strings, as the native reader's
           "lock_sha256": _get(spec, "lock_sha256", "", "str"),  # (no form asked of the hashes)
           "config_sha256": _get(spec, "config_sha256", "", "str"),
           "seed": _unsigned(spec, "seed", ""),
           "eval_batches": _ranged(spec, "eval_batches", "", "int")}
    out["model"] = _model(spec)
    out["training"] = _training(spec)
    out["data"] = _data(spec, out["training"]["seq_len"])
    return out


def load(path, sha256=None):
    """The spec at `path`; with `sha256` (the coordinator's, --spec-sha256) the bytes read are
    verified against it before anything is parsed. The result's "sha256" is the spec's identity,
    which every checkpoint carries."""
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_SPEC_BYTES + 1)
    except OSError as e:
        raise EngineError("input", "%s: %s" % (path, e.strerror or e))
    if len(raw) > MAX_SPEC_BYTES:
        raise EngineError("input", "%s: larger than %d bytes" % (path, MAX_SPEC_BYTES))
    digest = hashlib.sha256(raw).hexdigest()
    if sha256 is not None and digest != sha256:
        raise EngineError("integrity", "%s: sha256 %s (measured by the engine reading it) is not the coordinator's "
                          "sha256 %s: the spec changed after the coordinator wrote it" % (path, digest, sha256))
    try:
        doc = bounded_json.loads(raw)
    except (UnicodeDecodeError, ValueError) as e:
        raise EngineError("input", "%s: not JSON (%s)" % (path, e))
    out = parse(doc)
    out["sha256"] = digest
    return out
