"""Manual check for the framework engines on a GPU machine (torch >= 2, transformers,
accelerate, lightning): for each engine, the round trip A (uninterrupted), B (save at K,
SIGKILLed after `committed`), C (resumed), D (portable), plus the two negative controls
(--no-restore-rng, --no-restore-data, which must diverge), on a small Llama (hidden 256,
4 layers, seq 256, micro_batch 4, grad_accum 2, dropout 0.1) in bf16 on cuda. Prints per engine:
bitwise yes/no, first divergent step, max loss difference, the restored flags. Not part of the
CPU suite; each process has a timeout.

With --beside-plain the shape is a larger one (hidden 2048, 8 layers, seq 2048: the GPU's work
sets the step time) and each engine's measured step (process A) is printed beside the
framework's own Trainer.train() / Trainer.fit() at the same shape, run by
bench/framework_plain.py in the same call; with --step-only, --rounds pairs of the two, one
after the other, judged on their medians.

    PYTHONPATH=tests/engines python3 tests/engines/gpu_engines.py [ENGINE...] [--precision P] [--timeout S]
        [--beside-plain [--step-only [--rounds R]]]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import harness

STEPS, SAVE_AT = 6, 3


def spec_for(engine, precision, larger=False):
    if larger:  # the shape compared with the frameworks' own loops: the GPU's work, not the host's
        # launches, sets the step time (at hidden 1024, seq 1024 the step was 50-100 ms and the
        # same plain loop measured 0.052-0.076 s from one run to the next on the same machine)
        shape = {"model.hidden_size": 2048, "model.num_layers": 8, "model.num_heads": 16, "model.num_kv_heads": 8,
                 "model.intermediate_size": 5632, "model.vocab_size": 32000, "model.dropout": 0.0,
                 "training.seq_len": 2048, "data.length": 4000000}
    else:
        shape = {"model.hidden_size": 256, "model.num_layers": 4, "model.num_heads": 4, "model.num_kv_heads": 2,
                 "model.intermediate_size": 688, "model.vocab_size": 512, "model.dropout": 0.1,
                 "training.seq_len": 256, "data.length": 200000}
    return harness.tiny_spec(engine=engine, **shape, **{
        "training.micro_batch": 4, "training.grad_accum": 2, "training.precision": precision,
        "training.deterministic": False})  # trainlock's default: the step is measured with the run's kernels


def plain_shape(spec):
    """The numbers bench/framework_plain.py reads (it shares no code with the engines)."""
    m, t = spec["model"], spec["training"]
    return {"model": {k: m[k] for k in ("hidden_size", "num_layers", "num_heads", "num_kv_heads",
                                        "intermediate_size", "vocab_size")},
            "training": {"seq_len": t["seq_len"], "micro_batch": t["micro_batch"], "grad_accum": t["grad_accum"],
                         "precision": t["precision"], "lr": t["optimizer"]["lr"],
                         "weight_decay": t["optimizer"]["weight_decay"], "grad_clip": t["grad_clip"],
                         "warmup_steps": t["scheduler"]["warmup_steps"]}}


def plain_loop(engine, spec, work):
    """bench/framework_plain.py's row for `engine` at the spec's shape, or None (printed)."""
    shape = os.path.join(work, "shape.json")
    with open(shape, "w") as f:
        json.dump(plain_shape(spec), f)
    script = os.path.join(harness.ROOT, "bench", "framework_plain.py")
    out = subprocess.run([sys.executable, script, shape, "--framework", engine], capture_output=True, text=True,
                         timeout=600)
    rows = []
    for line in out.stdout.splitlines():  # the frameworks print dicts of their own on stdout too
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and row.get("framework") == engine:
            rows.append(row)
    if not rows:
        print("   the plain %s loop failed: %s" % (engine, out.stderr[-2000:]))
        return None
    return rows[-1]


def beside_plain(engine, spec, measurement, work, plain=None):
    """The engine's measured step beside the framework's own loop at the same shape; True
    when step and peak allocated are within 5 %."""
    plain = plain or plain_loop(engine, spec, work)
    if plain is None:
        return False
    print("   | | trainlock %s engine | the framework's own loop | engine / plain |" % engine)
    print("   |---|---|---|---|")
    ok = True
    for key, scale in (("step_time_s", 1), ("peak_allocated_bytes", 2 ** 20), ("peak_reserved_bytes", 2 ** 20)):
        a, b = measurement.get(key), plain.get(key)
        ratio = a / b if a and b else None
        print("   | %s | %.4g | %.4g | %s |" % (key, (a or 0) / scale, (b or 0) / scale,
                                                "%.3f" % ratio if ratio else "-"))
        if key != "peak_reserved_bytes":
            ok = ok and ratio is not None and abs(ratio - 1) <= 0.05
    print("   within 5%% of the framework's own loop: %s" % ("yes" if ok else "NO"))
    return ok


def compare(a, c):
    """(bitwise, first divergent step, max |loss diff|, differing digest names)."""
    la, lc = a.losses(), c.losses()
    steps = sorted(s for s in la if s > SAVE_AT)
    first = next((s for s in steps if la.get(s) != lc.get(s)), None)
    diffs = [abs(la[s] - lc[s]) for s in steps if s in lc and la[s] is not None and lc[s] is not None]
    da = a.state_digests() if a.of("state") else {}
    dc = c.state_digests() if c.of("state") else {}
    differ = sorted(k for k in set(da) | set(dc) if da.get(k) != dc.get(k))
    bitwise = bool(da) and not differ and first is None and len(lc) == len(steps)
    return bitwise, first, max(diffs) if diffs else None, differ


def restored_flags(run):
    r = run.of("restored")
    return {k: r[0].get(k) for k in ("step", "rng_restored", "data_restored", "data_position_offered")} if r else None


def show_failure(name, run):
    if run.code not in (0, None) and not run.killed:
        err = run.of("error")
        print("   %s exit %s: %s" % (name, run.code, err[0] if err else run.stderr[-1500:]))


def rounds_beside_plain(engine, spec, a, work, rounds, go):
    """`rounds` pairs of (the engine's process A, the framework's own loop), run one after the
    other so both sides see the same machine; the verdict is on the medians of the pairs."""
    pairs = []
    for r in range(rounds):
        if r:
            a = go("A uninterrupted", ["--measure-step", "2"], "a%d" % r)
        m, plain = a.of("measurement"), plain_loop(engine, spec, work)
        if not m or plain is None:
            return False
        pairs.append((m[0], plain))
        print("   round %d: engine %.4f s, plain %.4f s, ratio %.3f" % (r + 1, m[0]["step_time_s"], plain["step_time_s"],
                                                                     m[0]["step_time_s"] / plain["step_time_s"]))
    median = {}
    for side in (0, 1):
        rows = [p[side] for p in pairs]
        median[side] = dict(rows[0], step_time_s=sorted(x["step_time_s"] for x in rows)[len(rows) // 2])
    return beside_plain(engine, spec, median[0], work, median[1])


def engine_round_trip(engine, precision, timeout, work, larger=False, step_only=False, rounds=1):
    spec_doc = spec_for(engine, precision, larger)
    spec = harness.write_spec(work, spec_doc)
    base = ["--engine", engine, "--spec", spec, "--device", "cuda", "--steps", str(STEPS)]

    def go(name, args, root, kill_after=None):
        started = time.time()
        run = harness.run_engine(base + ["--checkpoint-root", os.path.join(work, root)] + args, kill_after=kill_after,
                                 timeout=timeout)
        print("   %-16s exit %-4s %5.1fs %s" % (name, run.code, time.time() - started, "killed" if run.killed else ""))
        show_failure(name, run)
        return run

    print("== %s (%s)" % (engine, precision))
    a = go("A uninterrupted", ["--measure-step", "2", "--final-state", os.path.join(work, "a.safetensors")], "a")
    if a.of("hello"):
        print("   versions", a.events[0].get("versions"))
    if step_only:
        return rounds_beside_plain(engine, spec_doc, a, work, rounds, go)
    b = go("B preempted", ["--save-at", str(SAVE_AT)], "b", kill_after=harness.committed_at(SAVE_AT))
    c = go("C resumed", ["--restore", "--final-state", os.path.join(work, "c.safetensors")], "b")
    d = go("D portable", ["--role", "portable"], "b")
    nr = go("no-restore-rng", ["--restore", "--no-restore-rng", "--final-state", os.path.join(work, "r.safetensors")], "b")
    nd = go("no-restore-data", ["--restore", "--no-restore-data", "--final-state", os.path.join(work, "d.safetensors")], "b")
    bitwise, first, maxdiff, differ = compare(a, c)
    print("   bitwise: %s  first divergent step: %s  max loss diff: %s" % ("yes" if bitwise else "no", first, maxdiff))
    if differ:
        print("   digests that differ (%d): %s" % (len(differ), differ[:10]))
    print("   restored (C):", restored_flags(c))
    evals = {e["when"]: e["loss"] for r in (b, c, d) for e in r.of("eval")}
    print("   eval after_save %s after_restore %s portable %s" % (evals.get("after_save"), evals.get("after_restore"), evals.get("portable")))
    for name, run in (("no-restore-rng", nr), ("no-restore-data", nd)):
        diverged = not compare(a, run)[0]
        print("   %s: restored %s, diverged: %s" % (name, restored_flags(run), "yes" if diverged else "NO (the control failed)"))
    m = a.of("measurement")
    modes_ok = False
    if m:
        reference = m[0].get("deterministic") or {}
        print("   measured_shape", m[0]["measured_shape"], "step_time_s %.4f" % m[0]["step_time_s"],
              "mode", m[0].get("mode"), "deterministic step_time_s", reference.get("step_time_s"))
        modes_ok = m[0].get("mode") == "default" and reference.get("mode") == "deterministic"
        if not modes_ok:
            print("   the step was not measured with the run's kernels beside the deterministic ones")
        if larger:
            modes_ok = beside_plain(engine, spec_doc, m[0], work) and modes_ok
    return bitwise and modes_ok


def main():
    p = argparse.ArgumentParser()
    p.add_argument("engines", nargs="*", default=["hf-trainer", "lightning"])
    p.add_argument("--precision", default="bf16")
    p.add_argument("--timeout", type=int, default=120)
    p.add_argument("--beside-plain", action="store_true",
                   help="a larger shape, and each engine's step beside the framework's own loop")
    p.add_argument("--step-only", action="store_true",
                   help="with --beside-plain: only process A and the framework's own loop")
    p.add_argument("--rounds", type=int, default=2,
                   help="with --step-only: pairs of (process A, the framework's loop) to take the medians of")
    opts = p.parse_args()
    results = {}
    for engine in opts.engines:
        with tempfile.TemporaryDirectory(prefix="trainlock-gpu-%s-" % engine) as work:
            try:
                results[engine] = engine_round_trip(engine, opts.precision, opts.timeout, work, opts.beside_plain,
                                                    opts.step_only, opts.rounds)
            except Exception as e:  # noqa: BLE001 - one engine's failure must not hide the other's result
                print("   %s: the check itself failed: %s: %s" % (engine, type(e).__name__, e))
                results[engine] = False
    if opts.step_only:  # only process A ran: the result is the comparison with the framework's loop
        print("summary:", {k: "within 5%" if v else "NOT within 5%" for k, v in results.items()})
    else:
        print("summary:", {k: "bitwise, measured in both modes" if v else "NOT bitwise or not measured in both modes"
                           for k, v in results.items()})
    return 0 if all(results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
