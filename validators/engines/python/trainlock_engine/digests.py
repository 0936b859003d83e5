"""Per-tensor digests of a final training state, as the `state` event reports them.

Each digest is the SHA-256 of `<dtype>|<shape>|` followed by the tensor's bytes, taken from the
full (unsharded), contiguous CPU tensor, so two processes agree exactly when every bit agrees.
Names: param/<name>, optim/<param name>/<key> (optimizer state keyed by parameter name, never
by position), rng/<stream>, data/position. Non-tensor state (Python's RNG, the data position)
is digested over its canonical JSON with dtype `json`.
"""

import ctypes
import hashlib
import json

import torch

FINAL_STATE_MAX_BYTES = 1 << 30


def tensor_bytes(t):
    t = t.detach().to("cpu").contiguous()
    if t.numel() == 0:
        return b""
    return ctypes.string_at(t.data_ptr(), t.numel() * t.element_size())


def tensor_digest(t):
    dtype = str(t.dtype).replace("torch.", "")
    head = "%s|%s|" % (dtype, ",".join(str(d) for d in t.shape))
    return hashlib.sha256(head.encode() + tensor_bytes(t)).hexdigest()


def json_digest(value):
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(b"json||" + text.encode()).hexdigest()


def optimizer_by_name(optimizer, names):
    """{param name: {key: tensor}} from a torch optimizer whose param_groups list the
    parameters in `names` order (the order they were handed to it)."""
    params = [p for group in optimizer.param_groups for p in group["params"]]
    by_id = {id(p): name for p, name in zip(params, names)}
    out = {}
    for p, state in optimizer.state.items():
        out[by_id[id(p)]] = {k: v for k, v in state.items()}
    return out


def flatten_state(params, optim, rng_streams, data_position):
    """{digest name: tensor or JSON value} of a final state."""
    flat = {"param/" + k: v for k, v in params.items()}
    for name, state in optim.items():
        for key, value in state.items():
            flat["optim/%s/%s" % (name, key)] = value if torch.is_tensor(value) else torch.tensor(value)
    for stream, value in rng_streams.items():
        flat["rng/" + stream] = value
    flat["data/position"] = data_position
    return flat


def digest_all(flat):
    """(digests, total tensor bytes)."""
    digests, total = {}, 0
    for name, value in flat.items():
        if torch.is_tensor(value):
            digests[name] = tensor_digest(value)
            total += value.numel() * value.element_size()
        else:
            digests[name] = json_digest(value)
    return digests, total


def write_final_state(flat, path, total):
    """torch.save of the tensors when they fit in 1 GiB; the path written, or None."""
    if not path or total > FINAL_STATE_MAX_BYTES:
        return None
    torch.save({k: (v.detach().cpu() if torch.is_tensor(v) else v) for k, v in flat.items()}, path)
    return path
