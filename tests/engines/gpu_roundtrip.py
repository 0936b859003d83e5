"""Manual check on a machine with torch >= 2.4, transformers and (optionally) GPUs: the round
trip (A uninterrupted, B killed after committing step 3, C resumed, D portable) of one engine,
printed as a summary. Not part of the CPU suite.

    PYTHONPATH=tests/engines python3 tests/engines/gpu_roundtrip.py ENGINE [PRECISION] [NPROC] [--async-save]
"""

import json
import os
import sys
import tempfile

import harness


def main():
    engine = sys.argv[1]
    precision = sys.argv[2] if len(sys.argv) > 2 else "bf16"
    nproc = sys.argv[3] if len(sys.argv) > 3 else "1"
    extra = ["--async-save"] if "--async-save" in sys.argv else []
    work = tempfile.mkdtemp(prefix="trainlock-gpu-")
    spec = harness.write_spec(work, harness.tiny_spec(engine=engine, **{"training.precision": precision}))
    base = ["--engine", engine, "--spec", spec, "--device", "auto", "--nproc", nproc]

    def go(name, args, root, kill_after=None):
        run = harness.run_engine(base + ["--checkpoint-root", os.path.join(work, root)] + args, kill_after=kill_after)
        print("==", name, "exit", run.code, "killed" if run.killed else "")
        for e in run.events:
            print(json.dumps(e)[:600])
        if run.code not in (0, None) and not run.killed:
            print(run.stderr[-4000:])
        return run

    a = go("A", ["--steps", "6", "--measure-step", "2", "--final-state", os.path.join(work, "a.safetensors")], "a")
    go("B", ["--steps", "6", "--save-at", "3"] + extra, "b", kill_after=harness.committed_at(3))
    c = go("C", ["--steps", "6", "--restore", "--final-state", os.path.join(work, "c.safetensors")], "b")
    go("D", ["--role", "portable"], "b")
    if a.of("state") and c.of("state"):
        da, dc = a.state_digests(), c.state_digests()
        differ = sorted(k for k in da if da[k] != dc.get(k))
        print("digests equal:", not differ, "differ:", differ[:8], "count", len(da))
        print("losses equal:", {s: l for s, l in a.losses().items() if s > 3} == c.losses())


if __name__ == "__main__":
    main()
