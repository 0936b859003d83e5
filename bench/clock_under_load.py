#!/usr/bin/env python3
"""SM clock, power and clocks-event reasons of a GPU under a load at its power cap (issue #60).

The throttle rule (src/report/gpu_throttle.h) failed a step whose mean SM clock while busy at the
power cap was under a clock floor (sustained-sm-clock-mhz, 1650 MHz); these records showed a healthy
H100 far under it under GEMM, and the floor was removed (issue #60): the gemm load's TFLOP/s is now
the catalog's matmul-tflops-at-power-limit (lockfiles/compat/gpus.toml). This script
records what healthy GPUs do at the cap under three loads, with nvidia-smi sampling every 200 ms
beside each (the validator's telemetry interval):

  gemm   dense bf16 8192x8192 matrix products in a loop for --seconds (GEMM-bound, the heaviest)
  train  a Llama training step at the pilot's shape (transformers' LlamaForCausalLM, SDPA, bf16
         autocast, AdamW, gradient clipping) in a loop for --seconds
  wrap   any command (the pilot's `trainlock validate`) beside the sampler: -- CMD ARGS...

Each writes OUT/NAME.csv (the raw samples, a header line first) and OUT/NAME.json (the summary:
power, SM clock overall, at power >= 0.95 x limit and busy at sw_power_cap as the rule counts it,
temperature, the reasons seen with their sample counts, 10 s windows, the load's own numbers).
`summarize CSV` summarizes a CSV again; `reports REPORT.json...` tabulates what the validator's own
telemetry (train.roundtrip's) recorded at the cap in reports. Only reads the GPU's state: never sets clocks or limits.
"""
import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import time

INTERVAL_MS = 200
AT_CAP_FRACTION = 0.95  # a sample at power >= this x the enforced limit counts as at the cap
BUSY_PCT = 80  # src/report/gpu_throttle.h kBusyUtilizationPct
SUSTAINED_FLOOR_MHZ = 1650  # the removed clock floor (sustained-sm-clock-mhz), kept to compare records
FIELDS = [
    "timestamp", "power.draw", "power.draw.instant", "power.limit", "enforced.power.limit",
    "power.default_limit", "clocks.sm", "clocks.max.sm", "clocks.applications.graphics",
    "clocks.mem", "temperature.gpu", "temperature.memory", "utilization.gpu",
    "clocks_event_reasons.active", "clocks_event_reasons.gpu_idle",
    "clocks_event_reasons.sw_power_cap", "clocks_event_reasons.hw_slowdown",
    "clocks_event_reasons.sw_thermal_slowdown", "clocks_event_reasons.hw_thermal_slowdown",
    "clocks_event_reasons.hw_power_brake_slowdown", "clocks_event_reasons.sync_boost",
]
# NVML's nvmlClocksEventReason* bits, in bit order (nvml.h).
REASON_BITS = ["gpu_idle", "applications_clocks_setting", "sw_power_cap", "hw_slowdown",
               "sync_boost", "sw_thermal_slowdown", "hw_thermal_slowdown",
               "hw_power_brake_slowdown", "display_clock_setting"]


def query_ok(fields):
    r = subprocess.run(["nvidia-smi", "-i", "0", "--query-gpu=" + ",".join(fields),
                        "--format=csv,noheader,nounits"], capture_output=True, text=True)
    return r.returncode == 0 and "Field" not in r.stdout + r.stderr


def usable_fields():
    """The FIELDS this driver's nvidia-smi accepts (one query each when the whole list fails)."""
    if query_ok(FIELDS):
        return FIELDS, []
    kept = [f for f in FIELDS if query_ok([f])]
    return kept, [f for f in FIELDS if f not in kept]


def gpu_identity():
    r = subprocess.run(["nvidia-smi", "-i", "0", "--query-gpu=name,driver_version,uuid,memory.total",
                        "--format=csv,noheader"], capture_output=True, text=True)
    name, driver, uuid, memory = [x.strip() for x in (r.stdout.strip().split(",") + ["?"] * 4)[:4]]
    return {"name": name, "driver": driver, "uuid": uuid, "memory_total": memory}


class Sampler:
    """nvidia-smi -lms 200 into OUT/NAME.csv while the load runs."""

    def __init__(self, csv_path):
        self.fields, self.dropped = usable_fields()
        self.csv_path = csv_path
        with open(csv_path, "w") as f:
            f.write(",".join(self.fields) + "\n")
        self.file = open(csv_path, "a")
        self.proc = subprocess.Popen(
            ["nvidia-smi", "-i", "0", "--query-gpu=" + ",".join(self.fields),
             "--format=csv,noheader,nounits", "-lms", str(INTERVAL_MS)],
            stdout=self.file, stderr=subprocess.STDOUT)
        time.sleep(1.0)  # a second of samples before the load starts

    def stop(self):
        time.sleep(1.0)  # and one after it ends
        self.proc.terminate()
        self.proc.wait(timeout=10)
        self.file.close()


def number(text):
    text = text.strip()
    if text.startswith("0x"):
        return int(text, 16)
    if text in ("Active", "Not Active"):
        return text == "Active"
    try:
        return float(text)
    except ValueError:
        return None  # [N/A], [Not Supported]


def read_csv(path):
    rows = []
    with open(path) as f:
        header = [h.strip() for h in f.readline().split(",")]
        for line in f:
            parts = [p.strip() for p in line.rstrip("\n").split(",")]
            if len(parts) != len(header):
                continue  # a line cut by the sampler's end
            try:
                when = dt.datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f")
            except ValueError:
                continue
            row = {"t": when}
            row.update({h: number(p) for h, p in zip(header[1:], parts[1:])})
            rows.append(row)
    return rows


def stats(values):
    values = [v for v in values if v is not None]
    if not values:
        return None
    return {"mean": round(statistics.fmean(values), 1), "min": min(values), "max": max(values),
            "median": statistics.median(values)}


def reason_names(bits):
    return [name for i, name in enumerate(REASON_BITS) if bits >> i & 1] + \
        ([hex(bits & ~((1 << len(REASON_BITS)) - 1))] if bits >> len(REASON_BITS) else [])


def summarize(rows, start=None, end=None):
    """The numbers of the samples between start and end (all samples when None)."""
    window = [r for r in rows if (start is None or r["t"] >= start) and (end is None or r["t"] <= end)]
    if not window:
        return {"samples": 0}
    gaps = [(b["t"] - a["t"]).total_seconds() for a, b in zip(window, window[1:])]
    dt_s = statistics.median(gaps) if gaps else INTERVAL_MS / 1000
    limit = lambda r: r.get("enforced.power.limit") or r.get("power.limit")
    at_cap = [r for r in window if r.get("power.draw") is not None and limit(r)
              and r["power.draw"] >= AT_CAP_FRACTION * limit(r)]
    sw_cap = lambda r: (r.get("clocks_event_reasons.active") or 0) & 0x4 or r.get("clocks_event_reasons.sw_power_cap")
    busy_cap = [r for r in window if sw_cap(r) and (r.get("utilization.gpu") or 0) >= BUSY_PCT]
    reasons = {}
    for r in window:
        for name in reason_names(int(r.get("clocks_event_reasons.active") or 0)):
            reasons[name] = reasons.get(name, 0) + 1
    per_field = {k.split(".", 1)[1]: sum(1 for r in window if r.get(k) is True)
                 for k in window[0] if k.startswith("clocks_event_reasons.") and k != "clocks_event_reasons.active"}
    clock = lambda rs: stats([r.get("clocks.sm") for r in rs])
    t0 = window[0]["t"]
    windows = []
    for i in range(0, int((window[-1]["t"] - t0).total_seconds()) + 1, 10):
        part = [r for r in window if i <= (r["t"] - t0).total_seconds() < i + 10]
        part_cap = [r for r in part if r in at_cap]
        if part:
            windows.append({"from_s": i, "samples": len(part),
                            "sm_clock_mean": clock(part)["mean"] if clock(part) else None,
                            "sm_clock_at_cap_mean": clock(part_cap)["mean"] if part_cap else None,
                            "power_mean": stats([r.get("power.draw") for r in part])["mean"],
                            "temperature_max": stats([r.get("temperature.gpu") for r in part])["max"],
                            "at_cap_samples": len(part_cap)})
    busy_clock = clock(busy_cap)
    return {
        "samples": len(window), "duration_s": round((window[-1]["t"] - t0).total_seconds(), 2),
        "sample_interval_s_median": round(dt_s, 3),
        "power_w": stats([r.get("power.draw") for r in window]),
        "power_instant_w": stats([r.get("power.draw.instant") for r in window]),
        "power_limit_w": stats([r.get("power.limit") for r in window]),
        "enforced_power_limit_w": stats([r.get("enforced.power.limit") for r in window]),
        "default_power_limit_w": stats([r.get("power.default_limit") for r in window]),
        "sm_clock_mhz": clock(window),
        "max_sm_clock_mhz": stats([r.get("clocks.max.sm") for r in window]),
        "applications_clock_mhz": stats([r.get("clocks.applications.graphics") for r in window]),
        "mem_clock_mhz": stats([r.get("clocks.mem") for r in window]),
        "temperature_c": stats([r.get("temperature.gpu") for r in window]),
        "memory_temperature_c": stats([r.get("temperature.memory") for r in window]),
        "utilization_pct": stats([r.get("utilization.gpu") for r in window]),
        "at_cap": {"rule": f"power.draw >= {AT_CAP_FRACTION} x enforced limit", "samples": len(at_cap),
                   "seconds": round(len(at_cap) * dt_s, 1), "sm_clock_mhz": clock(at_cap),
                   "power_w": stats([r.get("power.draw") for r in at_cap])},
        "busy_at_sw_power_cap": {"rule": f"sw_power_cap set and utilization >= {BUSY_PCT} % (the throttle rule's)",
                                 "samples": len(busy_cap), "seconds": round(len(busy_cap) * dt_s, 1),
                                 "sm_clock_mhz": busy_clock,
                                 "below_sustained_floor": (busy_clock["mean"] < SUSTAINED_FLOOR_MHZ) if busy_clock else None,
                                 "sustained_floor_mhz": SUSTAINED_FLOOR_MHZ},
        "reasons_seen": dict(sorted(reasons.items(), key=lambda kv: -kv[1])),
        "reason_fields_active": per_field,
        "windows_10s": windows,
    }


def run_load(args, name, load):
    """Samples beside load() and writes OUT/NAME.csv and OUT/NAME.json; load returns its numbers."""
    os.makedirs(args.out, exist_ok=True)
    csv_path = os.path.join(args.out, name + ".csv")
    sampler = Sampler(csv_path)
    start = dt.datetime.now()
    try:
        numbers = load()
    finally:
        end = dt.datetime.now()
        sampler.stop()
    rows = read_csv(csv_path)
    summary = {"load": name, "gpu": gpu_identity(), "fields": sampler.fields, "fields_dropped": sampler.dropped,
               "interval_ms": INTERVAL_MS, "start": start.isoformat(), "end": end.isoformat(),
               "load_numbers": numbers, "during_load": summarize(rows, start, end)}
    try:
        import torch
        summary["torch"] = torch.__version__
    except ImportError:
        pass
    with open(os.path.join(args.out, name + ".json"), "w") as f:
        json.dump(summary, f, indent=2, default=str)
    print(one_line(summary), flush=True)
    return summary


def one_line(s):
    d, n = s["during_load"], s["load_numbers"]
    cap, busy = d.get("at_cap", {}), d.get("busy_at_sw_power_cap", {})
    c = lambda x: "%s/%s/%s" % (x["mean"], x["min"], x["max"]) if x else "-"
    return ("%s on %s: %s s, %s samples, %s; power mean %s W (limit %s); SM clock mean %s; at cap %s s "
            "clock mean/min/max %s; busy at sw_power_cap %s s clock %s; temp max %s; reasons %s") % (
        s["load"], s["gpu"]["name"], d.get("duration_s"), d.get("samples"),
        {k: v for k, v in n.items() if k in ("tflops", "model_tflops", "step_time_median_s", "rc")},
        d.get("power_w", {}).get("mean"), (d.get("enforced_power_limit_w") or {}).get("mean"),
        (d.get("sm_clock_mhz") or {}).get("mean"), cap.get("seconds"), c(cap.get("sm_clock_mhz")),
        busy.get("seconds"), c(busy.get("sm_clock_mhz")), (d.get("temperature_c") or {}).get("max"),
        d.get("reasons_seen"))


def gemm_load(seconds, n=8192, batch=32, sets=4):
    import torch
    dev = torch.device("cuda")
    gen = torch.Generator(device=dev).manual_seed(60)
    a = [torch.randn(n, n, device=dev, dtype=torch.bfloat16, generator=gen) for _ in range(sets)]
    b = [torch.randn(n, n, device=dev, dtype=torch.bfloat16, generator=gen) for _ in range(sets)]
    c = torch.full((n, n), float("nan"), device=dev, dtype=torch.bfloat16)
    torch.mm(a[0], b[0], out=c)
    ref = a[0].float() @ b[0].float()
    rel_err = float((c.float() - ref).norm() / ref.norm())
    del ref
    for i in range(10):
        torch.mm(a[i % sets], b[i % sets], out=c)
    torch.cuda.synchronize()
    flop = 2.0 * n ** 3
    events, count, t0 = [], 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        begin = torch.cuda.Event(enable_timing=True)
        done = torch.cuda.Event(enable_timing=True)
        begin.record()
        for i in range(batch):
            torch.mm(a[i % sets], b[i % sets], out=c)
        done.record()
        events.append((begin, done))
        count += batch
        if len(events) > 1:
            events[-2][1].synchronize()  # one batch queued ahead: the GPU never waits on the host
    torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    total_ms = events[0][0].elapsed_time(events[-1][1])
    per_batch = [batch * flop / (b.elapsed_time(e) / 1e3) / 1e12 for b, e in events]
    return {"n": n, "dtype": "bf16", "products": count, "gpu_seconds": round(total_ms / 1e3, 2),
            "wall_seconds": round(wall, 2), "tflops": round(count * flop / (total_ms / 1e3) / 1e12, 1),
            "batch_tflops": {"products_per_batch": batch, **stats([round(x, 1) for x in per_batch])},
            "first_10_batches_tflops": [round(x, 1) for x in per_batch[:10]],
            "last_10_batches_tflops": [round(x, 1) for x in per_batch[-10:]],
            "relative_error_vs_fp32": rel_err}


def train_load(seconds, config, micro_batch):
    import torch
    import yaml
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = yaml.safe_load(open(config))
    m, t = cfg["model"], cfg["training"]
    dev = torch.device("cuda")
    total = torch.cuda.get_device_properties(0).total_memory
    # transformers' model at the pilot's micro-batch 4 peaks at 76.8 GB allocated (the H200 runs
    # of bench/results/2026-12-01-h200-measurement): too close to an H100's 80 GB, so 2 there.
    mb = (4 if total > 100e9 else 2) if micro_batch == "auto" else int(micro_batch)
    seq = t["seq_len"]
    torch.manual_seed(60)
    model = LlamaForCausalLM(LlamaConfig(
        vocab_size=m["vocab_size"], hidden_size=m["hidden_size"], intermediate_size=m["intermediate_size"],
        num_hidden_layers=m["num_layers"], num_attention_heads=m["num_heads"],
        num_key_value_heads=m.get("num_kv_heads", m["num_heads"]), rms_norm_eps=m.get("norm_eps", 1e-5),
        rope_theta=m.get("rope_theta", 10000.0), tie_word_embeddings=m.get("tie_embeddings", False),
        max_position_embeddings=1 << 17, attn_implementation="sdpa", use_cache=False)).to(dev)
    model.train()
    o = t["optimizer"]
    opt = torch.optim.AdamW(model.parameters(), lr=o["lr"], betas=tuple(o["betas"]), eps=o["eps"],
                            weight_decay=o["weight_decay"], foreach=True)
    tokens = torch.randint(0, m["vocab_size"], (mb, seq), device=dev)
    params = sum(p.numel() for p in model.parameters())
    # 6 N per token for the matrix products (the tied head counted once, as a product) and
    # 6 L s h for causal attention's two products, forward and backward.
    flop_per_step = (6 * params + 6 * m["num_layers"] * seq * m["hidden_size"]) * mb * seq

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(input_ids=tokens, labels=tokens).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), t.get("grad_clip", 1.0))
        opt.step()
        return loss

    step()
    torch.cuda.synchronize()
    times, t0 = [], time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        s = time.perf_counter()
        loss = step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - s)
    median = statistics.median(times)
    return {"model": "transformers LlamaForCausalLM (sdpa), the pilot's shape", "micro_batch": mb,
            "seq_len": seq, "params": params, "steps": len(times), "step_time_median_s": round(median, 4),
            "step_time_s": stats([round(x, 4) for x in times]), "final_loss": float(loss),
            "model_tflops": round(flop_per_step / median / 1e12, 1),
            "peak_allocated_bytes": torch.cuda.max_memory_allocated()}


def wrap_load(command):
    start = time.perf_counter()
    rc = subprocess.call(command)
    return {"command": " ".join(command), "rc": rc, "seconds": round(time.perf_counter() - start, 1)}


def report_rows(paths):
    """A markdown row per GPU of each report's train.roundtrip telemetry: the clock at the cap."""
    print("| report | GPU | limit W | busy at cap s | SM clock at cap mean / min / max MHz | temp max C "
          "| reasons (samples) | train.step |")
    print("|---|---|---|---|---|---|---|---|")
    for path in paths:
        try:
            checks = {c["id"]: c for c in json.load(open(path))["checks"]}
        except (OSError, ValueError, KeyError) as e:
            print(f"| {path} | unreadable: {e} |||||||")
            continue
        step = checks.get("train.step", {}).get("metrics", {})
        telemetry = checks.get("train.roundtrip", {}).get("metrics", {}).get("telemetry") or {}
        for d in telemetry.get("devices") or []:
            clock = d.get("sm_clock_at_power_cap_mhz") or {}
            reasons = ", ".join("%s %s" % (r["name"], r["samples"]) for r in d.get("throttle_reasons_seen", []))
            print("| %s | %s | %s | %.1f | %s | %s | %s | %s %s |" % (
                path, d.get("name"), d.get("power_limit_w"), d.get("busy_at_power_cap_s") or 0,
                " / ".join("%.0f" % clock[k] for k in ("mean", "min", "max")) if clock else "-",
                (d.get("temperature_c") or {}).get("max"), reasons,
                checks.get("train.step", {}).get("status"),
                "%.3f s" % step["step_time_s"] if step.get("step_time_s") else "-"))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="what", required=True)
    g = sub.add_parser("gemm")
    g.add_argument("--seconds", type=float, default=70)
    t = sub.add_parser("train")
    t.add_argument("--seconds", type=float, default=70)
    t.add_argument("--config", default="examples/h200-pilot/configs/llama-1b.yaml")
    t.add_argument("--micro-batch", default="auto")
    w = sub.add_parser("wrap")
    w.add_argument("--name", default="pilot")
    w.add_argument("command", nargs=argparse.REMAINDER)
    for s in (g, t, w):
        s.add_argument("--out", required=True)
    s = sub.add_parser("summarize")
    s.add_argument("csv")
    r = sub.add_parser("reports")
    r.add_argument("reports", nargs="+")
    args = p.parse_args()
    if args.what == "gemm":
        run_load(args, "gemm", lambda: gemm_load(args.seconds))
    elif args.what == "train":
        run_load(args, "train", lambda: train_load(args.seconds, args.config, args.micro_batch))
    elif args.what == "wrap":
        command = args.command[1:] if args.command[:1] == ["--"] else args.command
        summary = run_load(args, args.name, lambda: wrap_load(command))
        sys.exit(summary["load_numbers"]["rc"])
    elif args.what == "reports":
        report_rows(args.reports)
    else:
        json.dump(summarize(read_csv(args.csv)), sys.stdout, indent=2, default=str)
        print()


if __name__ == "__main__":
    main()
