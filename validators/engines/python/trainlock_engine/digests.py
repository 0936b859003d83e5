"""A final training state, flattened (final_state.py writes it for the coordinator), and
digested in-process.

Names: param/<name>, optim/<param name>/<key> (optimizer state keyed by parameter name, never
by position), rng/<stream>, data/position. Non-tensor state (Python's RNG, the data position)
stays a JSON value; final_state.py stores it as the U8 bytes of its canonical JSON.

The digests here (SHA-256 of `<dtype>|<shape>|` and the bytes) compare RNG streams inside one
process (engines/_framework.py); nothing the coordinator reads.
"""

import ctypes
import hashlib
import json

import torch


SAFETENSORS_DTYPES = {
    torch.float64: "F64", torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
    torch.int64: "I64", torch.int32: "I32", torch.int16: "I16", torch.int8: "I8",
    torch.uint8: "U8", torch.bool: "BOOL",
}


def tensor_bytes(t):
    t = t.detach().to("cpu").contiguous()
    if t.numel() == 0:
        return b""
    return ctypes.string_at(t.data_ptr(), t.numel() * t.element_size())


def tensor_digest(t):
    dtype = str(t.dtype).replace("torch.", "")
    head = "%s|%s|" % (dtype, ",".join(str(d) for d in t.shape))
    return hashlib.sha256(head.encode() + tensor_bytes(t)).hexdigest()


def canonical_json(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def json_digest(value):
    return hashlib.sha256(b"json||" + canonical_json(value)).hexdigest()


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
