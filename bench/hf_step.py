#!/usr/bin/env python3
"""What users run instead of the validator's train.step: Hugging Face transformers'
LlamaForCausalLM at the project's shape (SDPA attention, fp32 weights under bf16 autocast,
AdamW, gradient clipping), measured the way docs/DESIGN.md prescribes: one warm-up step (AdamW
creates its state lazily), then for each measured step reset the peak stats, zero_grad(set_to_none),
forward, backward, clip, optimizer step, synchronize; peak allocated and reserved from the first
measured step, the median step time of the measured steps.

Usage: hf_step.py CONFIG.yaml [--optimizer foreach|fused|trainer-default] [--steps N] > result.json
`trainer-default` uses the AdamW implementation transformers' TrainingArguments picks by default
on this machine (recorded in the output as trainer_default_optim)."""
import argparse
import json
import statistics
import sys
import time

import torch
import yaml


def trainer_default_optim():
    """The optimizer name TrainingArguments defaults to here (e.g. adamw_torch_fused)."""
    try:
        from transformers import TrainingArguments
        return str(TrainingArguments(output_dir="/tmp/trainlock-hf-args", report_to=[]).optim.value)
    except Exception as e:  # an old transformers or a missing accelerate: say so
        return f"unknown ({type(e).__name__}: {e})"


def build_model(m, device):
    from transformers import LlamaConfig, LlamaForCausalLM
    config = LlamaConfig(
        vocab_size=m["vocab_size"], hidden_size=m["hidden_size"],
        intermediate_size=m["intermediate_size"], num_hidden_layers=m["num_layers"],
        num_attention_heads=m["num_heads"], num_key_value_heads=m.get("num_kv_heads", m["num_heads"]),
        rms_norm_eps=m.get("norm_eps", 1e-5), rope_theta=m.get("rope_theta", 10000.0),
        tie_word_embeddings=m.get("tie_embeddings", False), attention_dropout=m.get("dropout", 0.0),
        max_position_embeddings=1 << 17, attn_implementation="sdpa", use_cache=False)
    return LlamaForCausalLM(config).to(device)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("config")
    parser.add_argument("--optimizer", default="foreach", choices=["foreach", "fused", "trainer-default"])
    parser.add_argument("--steps", type=int, default=8, help="measured steps after the warm-up")
    args = parser.parse_args()
    cfg = yaml.safe_load(open(args.config))
    m, t = cfg["model"], cfg["training"]
    default_optim = trainer_default_optim()
    fused = args.optimizer == "fused" or (args.optimizer == "trainer-default" and "fused" in default_optim)
    torch.manual_seed(0)
    device = torch.device("cuda")
    model = build_model(m, device)
    model.train()
    o = t["optimizer"]
    opt = torch.optim.AdamW(model.parameters(), lr=o["lr"], betas=tuple(o.get("betas", (0.9, 0.95))),
                            eps=o.get("eps", 1e-8), weight_decay=o.get("weight_decay", 0.0),
                            fused=fused, foreach=None if fused else True)
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(t["precision"])
    mb, seq, accum = t["micro_batch"], t["seq_len"], t.get("grad_accum", 1)
    batches = [torch.randint(0, m["vocab_size"], (mb, seq), device=device) for _ in range(accum)]

    def step():
        opt.zero_grad(set_to_none=True)
        for tokens in batches:
            with torch.autocast("cuda", dtype=dtype, enabled=dtype is not None):
                loss = model(input_ids=tokens, labels=tokens).loss
            (loss / accum).backward()
        if t.get("grad_clip", 0):
            torch.nn.utils.clip_grad_norm_(model.parameters(), t["grad_clip"])
        opt.step()

    step()  # warm-up
    times, peaks = [], None
    for _ in range(args.steps):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        start = time.perf_counter()
        step()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
        if peaks is None:
            free, total = torch.cuda.mem_get_info()
            peaks = {"peak_allocated_bytes": torch.cuda.max_memory_allocated(),
                     "peak_reserved_bytes": torch.cuda.max_memory_reserved(),
                     "device_used_bytes": total - free, "device_total_bytes": total}
    import transformers
    json.dump({"implementation": "transformers LlamaForCausalLM (sdpa)",
               "transformers": transformers.__version__, "torch": torch.__version__,
               "device": torch.cuda.get_device_name(0), "optimizer": "fused" if fused else "foreach",
               "trainer_default_optim": default_optim, "deterministic": False, **peaks,
               "step_times_s": times, "step_time_median_s": statistics.median(times),
               "tokens_per_step": mb * seq * accum}, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
