"""The learning-rate schedule of the training config, as a LambdaLR factor: linear warmup
over warmup_steps, then cosine from lr down to min_lr at total_steps (or constant). The same
arithmetic as the native engine's Trainer::LearningRate, indexed by steps already taken.
"""

import math


def learning_rate(spec, step):
    o, s = spec["training"]["optimizer"], spec["training"]["scheduler"]
    if s["warmup_steps"] > 0 and step < s["warmup_steps"]:
        return o["lr"] * (step + 1) / s["warmup_steps"]
    if s["name"] == "constant":
        return o["lr"]
    span = max(1, s["total_steps"] - s["warmup_steps"])
    progress = min(1.0, (step - s["warmup_steps"]) / span)
    return s["min_lr"] + 0.5 * (o["lr"] - s["min_lr"]) * (1.0 + math.cos(math.pi * progress))


def lambda_for(spec):
    """A LambdaLR lr_lambda (a factor of the base lr)."""
    base = spec["training"]["optimizer"]["lr"]
    return lambda step: learning_rate(spec, step) / base if base else 0.0
