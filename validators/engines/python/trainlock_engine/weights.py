"""Pinned weights into a model: each safetensors file verified at its point of use
(pinned.py), then loaded by Hugging Face parameter name. A name the model lacks, or a
parameter no file provides, is a `model` error (a tied lm_head may be absent).
"""

import torch

from . import pinned, safetensors_io
from .protocol import EngineError


def read_pinned(files, emit):
    tensors = {}
    for entry in files:
        buf = pinned.open_verified(entry, emit)
        tensors.update(safetensors_io.read(buf, entry["path"]))
    return tensors


def load_into(model, tensors, tied):
    own = model.state_dict()
    unexpected = [k for k in tensors if k not in own and not (tied and k == "lm_head.weight")]
    missing = [k for k in own if k not in tensors and not (tied and k == "lm_head.weight")]
    if unexpected or missing:
        raise EngineError("model", "the pinned weights do not fit the model (missing %s; unexpected %s)" % (missing[:3], unexpected[:3]))
    with torch.no_grad():
        for name, value in tensors.items():
            if name not in own:
                continue
            if tuple(value.shape) != tuple(own[name].shape):
                raise EngineError("model", "%s: shape %s in the weights, %s in the model" % (name, list(value.shape), list(own[name].shape)))
            own[name].copy_(value.to(own[name].dtype))
