"""Runs trainlock's Python engines as the coordinator does: a subprocess speaking
trainlock.engine/1 on stdout, optionally SIGKILLed (its whole process group) right after a
given event. Shared by the engine tests.

TRAINLOCK_ENGINE_PYTHON picks the interpreter (default /usr/bin/python3, Debian's with torch).
TRAINLOCK_RECORD_TRANSCRIPTS=1 stores each recorded run's stdout under
tests/engines/transcripts/<name>.jsonl (the C++ coordinator tests replay them).
"""

import hashlib
import json
import os
import signal
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PACKAGE_PARENT = os.path.join(ROOT, "validators", "engines", "python")
PYTHON = os.environ.get("TRAINLOCK_ENGINE_PYTHON", "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable)
TRANSCRIPTS = os.path.join(HERE, "transcripts")


def tiny_spec(**overrides):
    """examples/tiny/configs/tiny.yaml as an engine spec, on a synthetic stream."""
    spec = {
        "schema": "trainlock.engine-spec/1", "engine": "ddp", "lock_sha256": "0" * 64, "config_sha256": "0" * 64,
        "seed": 1234, "eval_batches": 2,
        "model": {"architecture": "llama", "hidden_size": 64, "num_layers": 2, "num_heads": 4, "num_kv_heads": 2,
                  "intermediate_size": 160, "vocab_size": 256, "tie_embeddings": False, "rope_theta": 10000,
                  "rope_scaling": None, "norm_eps": 1e-5, "dropout": 0.1, "files": [], "dir": ""},
        "training": {"seq_len": 32, "micro_batch": 4, "grad_accum": 2, "precision": "fp32",
                     "optimizer": {"name": "adamw", "lr": 1e-3, "beta1": 0.9, "beta2": 0.95, "eps": 1e-8,
                                   "weight_decay": 0.1},
                     "scheduler": {"name": "cosine", "warmup_steps": 2, "total_steps": 100, "min_lr": 1e-4},
                     "grad_clip": 1.0, "activation_checkpointing": False, "parallelism": "ddp", "shuffle": True,
                     "deterministic": True},
        "data": {"kind": "synthetic", "seed": 7, "length": 20000},
    }
    for path, value in overrides.items():  # "training.precision": "bf16"
        node = spec
        keys = path.split(".")
        for k in keys[:-1]:
            node = node[k]
        node[keys[-1]] = value
    return spec


def write_spec(directory, spec):
    path = os.path.join(directory, "spec.json")
    with open(path, "w") as f:
        json.dump(spec, f)
    return path


class Run:
    def __init__(self, code, lines, stderr, killed):
        self.code, self.stdout_lines, self.stderr, self.killed = code, lines, stderr, killed
        self.events = []
        for line in lines:
            try:
                self.events.append(json.loads(line))
            except ValueError:
                pass

    def of(self, kind):
        return [e for e in self.events if e.get("event") == kind]

    def one(self, kind):
        found = self.of(kind)
        assert len(found) == 1, "expected one %s event, got %d: %s" % (kind, len(found), self.stderr[-2000:])
        return found[0]

    def losses(self):
        return {e["step"]: e["loss"] for e in self.of("step")}

    def state_digests(self):
        """{tensor name: SHA-256 of "<dtype>|<shape>|" and its bytes} of the final state file this
        run wrote, computed here from the file as the coordinator does (state_file.h), never
        taken from the engine's events."""
        return state_file_digests(self.one("state")["file"])


def state_file_digests(path):
    with open(path, "rb") as f:
        buf = f.read()
    (size,) = struct.unpack("<Q", buf[:8])
    header = json.loads(buf[8:8 + size])
    header.pop("__metadata__", None)
    base, out = 8 + size, {}
    for name, entry in header.items():
        begin, end = entry["data_offsets"]
        head = "%s|%s|" % (entry["dtype"], ",".join(str(d) for d in entry["shape"]))
        out[name] = hashlib.sha256(head.encode() + buf[base + begin:base + end]).hexdigest()
    return out


def run_engine(args, kill_after=None, record=None, timeout=300, env=None):
    """Runs `python3 -m trainlock_engine ARGS`. kill_after: a predicate over events; the first
    event it accepts gets the process group SIGKILLed."""
    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = PACKAGE_PARENT
    full_env.update(env or {})
    err_file = tempfile.TemporaryFile()  # not a pipe: a chatty stderr must not block the engine
    proc = subprocess.Popen([PYTHON, "-B", "-m", "trainlock_engine"] + list(args), stdout=subprocess.PIPE,
                            stderr=err_file, env=full_env, start_new_session=True)
    lines, killed = [], False
    try:
        for raw in proc.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            lines.append(line)
            if kill_after is not None and not killed:
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if kill_after(event):
                    os.killpg(proc.pid, signal.SIGKILL)
                    killed = True
        code = proc.wait(timeout=timeout)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    err_file.seek(0)
    stderr = err_file.read().decode("utf-8", "replace")
    err_file.close()
    proc.stdout.close()
    if record and os.environ.get("TRAINLOCK_RECORD_TRANSCRIPTS") == "1":
        os.makedirs(TRANSCRIPTS, exist_ok=True)
        with open(os.path.join(TRANSCRIPTS, record + ".jsonl"), "w") as f:
            f.write("".join(line + "\n" for line in lines))
    return Run(code, lines, stderr, killed)


def committed_at(step):
    return lambda e: e.get("event") == "checkpoint" and e.get("phase") == "committed" and e.get("step") == step
