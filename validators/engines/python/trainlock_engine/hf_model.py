"""Hugging Face's LlamaForCausalLM built from the spec (for the framework engines: fsdp2,
hf-trainer, lightning, deepspeed). transformers is imported here, lazily, so the ddp engine
runs without it.

The config maps the spec's fields one to one (dropout becomes attention_dropout, the only
dropout Hugging Face's Llama has). Attention is "sdpa" on torch >= 2, "eager" before, a fixed
choice so every process of a round trip runs the same kernels. Weights are the pinned
safetensors (verified at their point of use) when the spec lists files, else a seeded
initialisation (torch.manual_seed(seed) right before construction). With
activation_checkpointing, gradient checkpointing is enabled and each recomputation counted
(model.trainlock_recomputed[0]), so the measured shape says whether it happened.
"""

import functools

import torch

from . import weights

TORCH2 = int(torch.__version__.split(".")[0]) >= 2


def _rope(m, transformers_major):
    r = m["rope_scaling"]
    params = {"rope_type": r["type"] if r else "default"}
    if r:
        params["factor"] = r["factor"]
        for key in ("low_freq_factor", "high_freq_factor", "original_max_position_embeddings"):
            if key in r:
                params[key] = r[key]
    if transformers_major >= 5:
        params["rope_theta"] = m["rope_theta"]
        return {"rope_parameters": params}
    return {"rope_theta": m["rope_theta"], "rope_scaling": params if r else None}


def hf_config(spec):
    import transformers
    from transformers import LlamaConfig

    m, t = spec["model"], spec["training"]
    major = int(transformers.__version__.split(".")[0])
    original = (m["rope_scaling"] or {}).get("original_max_position_embeddings", 0)
    config = LlamaConfig(vocab_size=m["vocab_size"], hidden_size=m["hidden_size"],
                         intermediate_size=m["intermediate_size"], num_hidden_layers=m["num_layers"],
                         num_attention_heads=m["num_heads"], num_key_value_heads=m["num_kv_heads"],
                         max_position_embeddings=max(t["seq_len"], original, 1),
                         rms_norm_eps=m["norm_eps"], tie_word_embeddings=m["tie_embeddings"],
                         attention_dropout=m["dropout"], attention_bias=False, mlp_bias=False,
                         initializer_range=0.02, use_cache=False, **_rope(m, major))
    config._attn_implementation = "sdpa" if TORCH2 else "eager"
    return config


def _count_recomputation(model):
    counter = [0]

    def counting(func, *args, **kwargs):
        counter[0] += 1
        return func(*args, **kwargs)

    for module in model.modules():
        func = getattr(module, "_gradient_checkpointing_func", None)
        if func is not None:
            module._gradient_checkpointing_func = functools.partial(counting, func)
    model.trainlock_recomputed = counter


def build_hf_llama(spec, emit, device=None):
    """(LlamaForCausalLM in fp32, setup's `model` member): built on `device` (an engine that
    trains there: the seeded initialisation runs on it, seconds faster than on the CPU for a
    pilot's billion parameters), else on the CPU for the framework to move."""
    from transformers import LlamaForCausalLM

    m = spec["model"]
    config = hf_config(spec)
    torch.manual_seed(spec["seed"])
    if device is None:
        model = LlamaForCausalLM(config)
    else:
        with torch.device(device):  # torch >= 2.0, as every engine that passes a device needs
            model = LlamaForCausalLM(config)
    if m["files"]:
        weights.load_into(model, weights.read_pinned(m["files"], emit), m["tie_embeddings"])
        source = "weights"
    else:
        source = "seeded initialisation"
    model.trainlock_recomputed = [0]
    if spec["training"]["activation_checkpointing"]:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        _count_recomputation(model)
    info = {"source": source, "class": "transformers LlamaForCausalLM", "attn_implementation": config._attn_implementation,
            "parameters": sum(p.numel() for p in model.parameters())}
    return model, info


def watch_logits_dtype(model):
    """A forward hook on lm_head recording the logits' dtype: model.trainlock_logits_dtype[0]."""
    seen = [None]

    def hook(_module, _inputs, output):
        seen[0] = output.dtype

    model.lm_head.register_forward_hook(hook)
    model.trainlock_logits_dtype = seen
    return seen
