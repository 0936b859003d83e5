"""Every RNG stream a training process draws from: Python's random, torch's CPU generator,
each CUDA device's generator, and numpy's global generator when numpy is loaded.

capture() returns plain data (tuples, lists, uint8 tensors) that torch.load(weights_only=True)
reads back; restore() puts it back. Digest names: rng/python, rng/torch_cpu, rng/cuda:<i>,
rng/numpy. Restoring is skipped under --no-restore-rng (a negative control: the resumed run
must then diverge wherever dropout draws).
"""

import random
import sys

import torch

from .protocol import EngineError


def capture():
    state = {"python": _python_state(), "torch_cpu": torch.get_rng_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = [torch.cuda.get_rng_state(i) for i in range(torch.cuda.device_count())]
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        kind, keys, pos, has_gauss, cached = numpy.random.get_state()
        state["numpy"] = [kind, [int(k) for k in keys], int(pos), int(has_gauss), float(cached)]
    return state


def _python_state():
    version, internal, gauss = random.getstate()
    return [version, list(internal), gauss]


def restore(state):
    try:
        version, internal, gauss = state["python"]
        random.setstate((version, tuple(internal), gauss))
        torch.set_rng_state(state["torch_cpu"])
        for i, s in enumerate(state.get("cuda", [])):
            if i < torch.cuda.device_count():
                torch.cuda.set_rng_state(s, i)
        if "numpy" in state and sys.modules.get("numpy") is not None:
            kind, keys, pos, has_gauss, cached = state["numpy"]
            numpy = sys.modules["numpy"]
            numpy.random.set_state((kind, numpy.array(keys, dtype=numpy.uint32), pos, has_gauss, cached))
    except (KeyError, TypeError, ValueError, RuntimeError) as e:
        raise EngineError("checkpoint", "the checkpoint's RNG state cannot be restored (%s)" % e)


def streams(state):
    """{stream name: tensor or JSON value} for digests."""
    out = {"python": state["python"], "torch_cpu": state["torch_cpu"]}
    for i, s in enumerate(state.get("cuda", [])):
        out["cuda:%d" % i] = s
    if "numpy" in state:
        out["numpy"] = state["numpy"]
    return out
