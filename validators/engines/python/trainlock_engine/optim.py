"""The optimizer and learning-rate schedule every engine trains with, built in one place:
torch's AdamW with the spec's hyper-parameters (applied to every parameter, as the native
engine does) and the spec's warmup + cosine schedule (schedule.py) as a LambdaLR stepped once
per optimizer step.

`fused` picks torch's fused AdamW kernel (CUDA, torch >= 2.0) where the framework the engine
stands for would use it by default: transformers' Trainer builds `adamw_torch_fused` on a
recent torch, so a Trainer user's step runs that kernel, and the hf-trainer engine measures
the same one (its numbers are the run's, not a slower stand-in's).
"""

import torch

from .schedule import lambda_for


def build_optimizer(spec, parameters, fused=False):
    o = spec["training"]["optimizer"]
    options = dict(lr=o["lr"], betas=(o["beta1"], o["beta2"]), eps=o["eps"], weight_decay=o["weight_decay"])
    if fused:
        options["fused"] = True
    return torch.optim.AdamW(parameters, **options)


def build_scheduler(spec, optimizer):
    return torch.optim.lr_scheduler.LambdaLR(optimizer, lambda_for(spec))
