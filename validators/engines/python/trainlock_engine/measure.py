"""train.step's measurement, taken inside the framework process: the step's wall time
(CUDA synchronised on both ends), every rank's peak allocated/reserved bytes over that step
(peaks reset after the warm-up steps before it), tokens/s, the step's model FLOPs, and the
shape the step was observed to run in (read from tensors and the process group, never copied
from the config).
"""

import resource
import time

import torch

DTYPE_NAMES = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}


def dtype_name(dtype):
    return DTYPE_NAMES.get(dtype, str(dtype).replace("torch.", ""))


def device_memory(device):
    """{peak_allocated_bytes, peak_reserved_bytes, device_used_bytes, device_total_bytes};
    -1 where there is no CUDA device."""
    out = {"peak_allocated_bytes": -1, "peak_reserved_bytes": -1, "device_used_bytes": -1, "device_total_bytes": -1}
    if device is None or device.type != "cuda":
        return out
    out["peak_allocated_bytes"] = int(torch.cuda.max_memory_allocated(device))
    out["peak_reserved_bytes"] = int(torch.cuda.max_memory_reserved(device))
    try:
        free, total = torch.cuda.mem_get_info(device)
        out["device_used_bytes"], out["device_total_bytes"] = int(total - free), int(total)
    except (RuntimeError, AttributeError):
        pass
    return out


def peak_rss_bytes():
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def step_flops(m, t, tokens, matmul_parameters):
    """6 N per token for the matmul weights plus causal attention's score/value matmuls
    (6 * layers * seq * hidden per token), as the native engine and the plan count them."""
    attention = 6.0 * m["num_layers"] * t["seq_len"] * m["hidden_size"]
    return (6.0 * matmul_parameters + attention) * tokens


class StepTimer:
    """Around one optimizer step: start() after the warm-up, stop() after the step."""

    def __init__(self, device):
        self.device = device

    def start(self):
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
        self.t0 = time.perf_counter()

    def stop(self):
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        self.seconds = time.perf_counter() - self.t0
        self.memory = device_memory(self.device)
        return self.seconds


def gather_rank_peaks(memory, world_size, device):
    """[{rank, peak_allocated_bytes, peak_reserved_bytes}] for every rank (collective)."""
    mine = torch.tensor([memory["peak_allocated_bytes"], memory["peak_reserved_bytes"]], dtype=torch.int64, device=device)
    if world_size <= 1:
        rows = [mine]
    else:
        import torch.distributed as dist

        rows = [torch.zeros_like(mine) for _ in range(world_size)]
        dist.all_gather(rows, mine)
    return [{"rank": r, "peak_allocated_bytes": int(t[0]), "peak_reserved_bytes": int(t[1])} for r, t in enumerate(rows)]


def asks_deterministic(spec):
    """Whether the run's config trains with deterministic kernels (spec.py's default)."""
    return bool(spec["training"]["deterministic"])


def run_kernel_steps(device):
    """Timed steps with the run's kernels (after one warm-up), as the native engine times."""
    return 5 if device is not None and device.type == "cuda" else 3


def run_kernels_measurement(step, reference, timed):
    """The measurement in the run's (default) kernels: `timed` is [(StepTimer, ranks)] of the
    steps after the warm-up; reference the deterministic measurement (mode "deterministic")."""
    times = sorted(timer.seconds for timer, _ in timed)
    median = times[len(times) // 2]
    ranks = [dict(r) for r in timed[0][1]]
    for _, rows in timed[1:]:
        for mine, row in zip(ranks, rows):
            for key in ("peak_allocated_bytes", "peak_reserved_bytes"):
                mine[key] = max(mine[key], row[key])
    out = dict(reference)
    out.update({
        "step": step,
        "step_time_s": median,
        "tokens_per_s": reference["tokens"] / median if median > 0 else None,
        "peak_allocated_bytes": max(r["peak_allocated_bytes"] for r in ranks),
        "peak_reserved_bytes": max(r["peak_reserved_bytes"] for r in ranks),
        "device_used_bytes": max(timer.memory["device_used_bytes"] for timer, _ in timed),
        "peak_rss_bytes": peak_rss_bytes(),
        "mode": "default",
        "step_times_s": [timer.seconds for timer, _ in timed],
        "deterministic": reference,
        "ranks": ranks,
    })
    return out


def measurement(step, timer, tokens, flops, shape, ranks):
    return {
        "step": step,
        "step_time_s": timer.seconds,
        "tokens": tokens,
        "tokens_per_s": tokens / timer.seconds if timer.seconds > 0 else None,
        "flops": flops,
        "peak_allocated_bytes": max(r["peak_allocated_bytes"] for r in ranks),
        "peak_reserved_bytes": max(r["peak_reserved_bytes"] for r in ranks),
        "device_used_bytes": timer.memory["device_used_bytes"],
        "device_total_bytes": timer.memory["device_total_bytes"],
        "peak_rss_bytes": peak_rss_bytes(),
        "mode": "deterministic",
        "measured_shape": shape,
        "ranks": ranks,
    }
