#!/usr/bin/env python3
"""The reference for the validator's train.step: the same Llama shape, optimizer and
precision in PyTorch eager (Python), measured the way docs/DESIGN.md prescribes: one warm-up
step (AdamW state is created lazily), then reset peak stats, zero_grad(set_to_none),
forward, backward, optimizer step, synchronize, read the peaks.

Usage: python_step.py CONFIG.yaml [--steps N] > result.json
Prints JSON: peak_allocated_bytes, peak_reserved_bytes, step_time_s (the measured step,
like the validator) and step_time_median_s over the steps after the warm-up."""
import argparse
import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F
import yaml


class RMSNorm(torch.nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        xf = x.float()
        return self.weight * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype)


def rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


class Layer(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        h, i = c["hidden_size"], c["intermediate_size"]
        self.heads, self.kv = c["num_heads"], c.get("num_kv_heads", c["num_heads"])
        self.d = h // self.heads
        self.q = torch.nn.Linear(h, self.heads * self.d, bias=False)
        self.k = torch.nn.Linear(h, self.kv * self.d, bias=False)
        self.v = torch.nn.Linear(h, self.kv * self.d, bias=False)
        self.o = torch.nn.Linear(self.heads * self.d, h, bias=False)
        self.gate = torch.nn.Linear(h, i, bias=False)
        self.up = torch.nn.Linear(h, i, bias=False)
        self.down = torch.nn.Linear(i, h, bias=False)
        self.n1 = RMSNorm(h, c.get("norm_eps", 1e-5))
        self.n2 = RMSNorm(h, c.get("norm_eps", 1e-5))

    def forward(self, x, cos, sin):
        b, s, _ = x.shape
        y = self.n1(x)
        q = self.q(y).view(b, s, self.heads, self.d).transpose(1, 2)
        k = self.k(y).view(b, s, self.kv, self.d).transpose(1, 2)
        v = self.v(y).view(b, s, self.kv, self.d).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if self.kv != self.heads:
            k = k.repeat_interleave(self.heads // self.kv, 1)
            v = v.repeat_interleave(self.heads // self.kv, 1)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(a.transpose(1, 2).reshape(b, s, -1))
        y = self.n2(x)
        return x + self.down(F.silu(self.gate(y)) * self.up(y))


class Llama(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.embed = torch.nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.layers = torch.nn.ModuleList(Layer(c) for _ in range(c["num_layers"]))
        self.norm = RMSNorm(c["hidden_size"], c.get("norm_eps", 1e-5))
        self.tied = c.get("tie_embeddings", False)
        if not self.tied:
            self.head = torch.nn.Linear(c["hidden_size"], c["vocab_size"], bias=False)

    def forward(self, tokens):
        h = self.embed(tokens)
        d = self.c["hidden_size"] // self.c["num_heads"]
        inv = 1.0 / (self.c.get("rope_theta", 10000.0) ** (torch.arange(0, d, 2, device=tokens.device).float() / d))
        f = torch.outer(torch.arange(tokens.shape[1], device=tokens.device).float(), inv)
        emb = torch.cat((f, f), -1)
        cos, sin = emb.cos().to(h.dtype)[None, None], emb.sin().to(h.dtype)[None, None]
        for layer in self.layers:
            h = layer(h, cos, sin)
        h = self.norm(h)
        return h @ self.embed.weight.t().to(h.dtype) if self.tied else self.head(h)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("config")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--deterministic", action="store_true",
                        help="deterministic algorithms, as the validator runs (bitwise resume)")
    args = parser.parse_args()
    if args.deterministic:
        import os
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True)
    cfg = yaml.safe_load(open(args.config))
    m, t = cfg["model"], cfg["training"]
    torch.manual_seed(0)
    device = torch.device("cuda")
    model = Llama(m).to(device)
    o = t["optimizer"]
    opt = torch.optim.AdamW(model.parameters(), lr=o["lr"], betas=tuple(o.get("betas", (0.9, 0.95))),
                            eps=o.get("eps", 1e-8), weight_decay=o.get("weight_decay", 0.0))
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(t["precision"])
    mb, seq, accum = t["micro_batch"], t["seq_len"], t.get("grad_accum", 1)

    def step():
        opt.zero_grad(set_to_none=True)
        for _ in range(accum):
            tokens = torch.randint(0, m["vocab_size"], (mb, seq + 1), device=device)
            with torch.autocast("cuda", dtype=dtype, enabled=dtype is not None):
                logits = model(tokens[:, :-1])
                loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), tokens[:, 1:].reshape(-1))
            (loss / accum).backward()
        if t.get("grad_clip", 0):
            torch.nn.utils.clip_grad_norm_(model.parameters(), t["grad_clip"])
        opt.step()

    step()  # warm-up: AdamW creates its state lazily
    times = []
    peaks = None
    for i in range(args.steps - 1):
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
    json.dump({"torch": torch.__version__, "device": torch.cuda.get_device_name(0),
               "deterministic": args.deterministic, **peaks,
               "step_time_s": times[0], "step_time_median_s": statistics.median(times),
               "tokens_per_step": mb * seq * accum}, sys.stdout, indent=2)
    print()


if __name__ == "__main__":
    main()
