#!/usr/bin/env python3
"""Issue #29's baseline: the plain FSDP2 script a user would write instead of trainlock's fsdp2 engine.
ci/gpu.sh runs it in the same run as the pilot with --spec, the engine-spec.json the coordinator wrote
(trainlock.engine-spec/1), and holds the engine's train.step to within 5% of its peak memory and 3% of
its step time. Like for like with trainlock_engine (engines/fsdp2.py, hf_model.py, measure.py, runtime.py):
LlamaForCausalLM from the spec (sdpa, fp32 weights built on the CPU after torch.manual_seed(seed), then
moved), non-reentrant gradient checkpointing if asked, fully_shard on each decoder layer then the root,
MixedPrecisionPolicy(bf16 params, fp32 reduce) under bf16, torch's default AdamW (no fused/foreach) and
the warmup+cosine LambdaLR, fp32 cross-entropy, grad_accum micro-steps syncing gradients on the last
only, clipping, loss.item(); deterministic algorithms on, as in the engine's measured step. Tokens are
random and made before each timed step (the engine's loader also runs before its timer); pinned weights
are not loaded: neither changes memory or time.
Usage: [torchrun --nproc-per-node N] bench/fsdp2_reference.py --spec F [--steps 5] [--warmup 2] [--deterministic on|off]
"""
import argparse, json, math, os, statistics, tempfile, time  # noqa: E401 - a short bench script

import torch
import torch.distributed as dist


def hf_llama(m, t, seed):
    """hf_model.hf_config + build_hf_llama, without the engine's counters."""
    import transformers
    r = m.get("rope_scaling") or None
    rope = {"rope_type": r["type"] if r else "default"}
    rope.update({k: r[k] for k in ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings") if r and k in r})
    rope_args = ({"rope_parameters": dict(rope, rope_theta=m["rope_theta"])} if int(transformers.__version__.split(".")[0]) >= 5
                 else {"rope_theta": m["rope_theta"], "rope_scaling": rope if r else None})
    config = transformers.LlamaConfig(
        vocab_size=m["vocab_size"], hidden_size=m["hidden_size"], intermediate_size=m["intermediate_size"],
        num_hidden_layers=m["num_layers"], num_attention_heads=m["num_heads"], num_key_value_heads=m["num_kv_heads"],
        max_position_embeddings=max(t["seq_len"], (r or {}).get("original_max_position_embeddings", 0), 1),
        rms_norm_eps=m["norm_eps"], tie_word_embeddings=m["tie_embeddings"], attention_dropout=m["dropout"],
        attention_bias=False, mlp_bias=False, initializer_range=0.02, use_cache=False, **rope_args)
    config._attn_implementation = "sdpa"
    torch.manual_seed(seed)
    model = transformers.LlamaForCausalLM(config)
    if t["activation_checkpointing"]:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    return model


def lr_factor(step, o, s):  # schedule.learning_rate / lr
    if s["warmup_steps"] > 0 and step < s["warmup_steps"]:
        return (step + 1) / s["warmup_steps"]
    if s["name"] == "constant" or not o["lr"]:
        return 1.0
    progress = min(1.0, (step - s["warmup_steps"]) / max(1, s["total_steps"] - s["warmup_steps"]))
    return (s["min_lr"] + 0.5 * (o["lr"] - s["min_lr"]) * (1.0 + math.cos(math.pi * progress))) / o["lr"]


def init_group(backend):
    if "WORLD_SIZE" in os.environ:  # torchrun's env://
        return dist.init_process_group(backend)
    store = dist.FileStore(os.path.join(tempfile.mkdtemp(prefix="fsdp2-reference-"), "store"), 1)  # one process
    dist.init_process_group(backend, store=store, rank=0, world_size=1)


def main():
    p = argparse.ArgumentParser(description="A plain FSDP2 training step at a trainlock engine spec's shape.")
    p.add_argument("--spec", required=True, help="engine-spec.json (schema trainlock.engine-spec/1)")
    p.add_argument("--steps", type=int, default=5, help="timed optimizer steps (median reported)")
    p.add_argument("--warmup", type=int, default=2, help="optimizer steps before the timed ones")
    p.add_argument("--deterministic", choices=("on", "off"), default="on", help="as the engine measures: on")
    a = p.parse_args()
    fail = lambda message: p.exit(2, "fsdp2_reference: %s\n" % message)  # noqa: E731 - bad input or environment: exit 2
    if min(a.steps, a.warmup) < 1:
        fail("--steps and --warmup must be at least 1")
    try:
        with open(a.spec) as f:
            spec = json.load(f)
        if spec["schema"] != "trainlock.engine-spec/1":
            raise ValueError("schema %r is not trainlock.engine-spec/1" % spec["schema"])
        m, t = spec["model"], spec["training"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        fail("%s: unreadable spec (%s: %s)" % (a.spec, type(e).__name__, e))
    cuda = torch.cuda.is_available()
    if t["precision"] not in (("fp32", "bf16") if cuda else ("fp32",)):
        fail("training.precision %s: the fsdp2 engine trains fp32, or bf16 on a CUDA device" % t["precision"])
    try:
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
        import transformers
    except Exception as e:  # noqa: BLE001 - torch 1.13's fsdp package even fails with a ValueError on Python 3.11
        fail("needs torch >= 2.6 (torch.distributed.fsdp.fully_shard) and transformers; torch %s: %s: %s" % (torch.__version__, type(e).__name__, e))
    if a.deterministic == "on":  # runtime.set_deterministic, before CUDA initialises
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True)
        torch.backends.cudnn.benchmark, torch.backends.cudnn.deterministic = False, True
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0"))) if cuda else torch.device("cpu")
    if cuda:
        torch.cuda.set_device(device)
    init_group("nccl" if cuda else "gloo")
    world, rank = dist.get_world_size(), dist.get_rank()
    model = hf_llama(m, t, spec["seed"]).to(device)  # the whole fp32 model, then sharded: as the engine
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32) if t["precision"] == "bf16" else MixedPrecisionPolicy()
    for layer in model.model.layers:
        fully_shard(layer, mp_policy=policy)
    fully_shard(model, mp_policy=policy)
    o = t["optimizer"]
    optimizer = torch.optim.AdamW(model.parameters(), lr=o["lr"], betas=(o["beta1"], o["beta2"]), eps=o["eps"], weight_decay=o["weight_decay"])
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda n: lr_factor(n, o, t["scheduler"]))
    gen = torch.Generator(device=device).manual_seed(spec["seed"] + rank)

    def step(batches):
        model.train()
        optimizer.zero_grad(set_to_none=True)
        losses = []
        for i, (inputs, targets) in enumerate(batches):
            model.set_requires_gradient_sync(i == len(batches) - 1)  # reduce-scatter on the last only
            logits = model(input_ids=inputs).logits
            loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), targets.reshape(-1))
            losses.append(loss.detach())
            (loss / len(batches)).backward()
        if t["grad_clip"] > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), t["grad_clip"])
        optimizer.step()
        scheduler.step()
        mean = torch.stack(losses).mean()
        if world > 1:
            dist.all_reduce(mean)
        return mean.item() / world

    sync = torch.cuda.synchronize if cuda else (lambda _device: None)
    times = []
    for n in range(a.warmup + a.steps):
        batches = [(w[:, :-1].contiguous(), w[:, 1:].contiguous()) for w in  # (inputs, targets), as data.WindowLoader.batch
                   (torch.randint(0, m["vocab_size"], (t["micro_batch"], t["seq_len"] + 1), device=device, generator=gen) for _ in range(t["grad_accum"]))]
        sync(device)
        if n == a.warmup and cuda:  # peaks over the timed steps only, as measure.StepTimer
            torch.cuda.reset_peak_memory_stats(device)
        t0 = time.perf_counter()
        step(batches)
        sync(device)
        times.append(time.perf_counter() - t0)
    times = times[a.warmup:]
    peaks = torch.tensor([torch.cuda.max_memory_allocated(device), torch.cuda.max_memory_reserved(device)] if cuda else [-1, -1],
                         dtype=torch.int64, device=device)
    dist.all_reduce(peaks, op=dist.ReduceOp.MAX)  # the engine reports the largest rank's peaks
    if rank == 0:
        print(json.dumps({"script": "plain-fsdp2", "torch": torch.__version__, "transformers": transformers.__version__, "world_size": world,
                          "device_name": torch.cuda.get_device_name(device) if cuda else "cpu", "step_times_s": times,
                          "step_time_s": statistics.median(times), "peak_allocated_bytes": int(peaks[0]), "peak_reserved_bytes": int(peaks[1]),
                          "tokens_per_step": t["micro_batch"] * t["seq_len"] * t["grad_accum"] * world, "warmup_steps": a.warmup,
                          "deterministic": a.deterministic == "on"}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
