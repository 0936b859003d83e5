"""A bounded safetensors reader over a buffer (no `safetensors` package needed): the 8-byte
little-endian header length, the JSON header, then each tensor's bytes at its data_offsets.
Hostile files are normal: every offset, shape and dtype is checked before use, and a bad file
is a `model` error naming it.
"""

import struct

import torch

from . import bounded_json
from .protocol import EngineError

DTYPES = {
    "F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
    "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8,
    "U8": torch.uint8, "BOOL": torch.bool,
}
MAX_HEADER = 100 << 20


def _bad(name, what, kind="model"):
    raise EngineError(kind, "%s: not a safetensors file the engine can read (%s)" % (name, what))


def _entry_tensor(buf, base, name, key, entry, kind):
    if not isinstance(entry, dict) or entry.get("dtype") not in DTYPES:
        _bad(name, "tensor %s has an unknown dtype" % key, kind)
    shape, offsets = entry.get("shape"), entry.get("data_offsets")
    if not isinstance(shape, list) or not all(isinstance(d, int) and d >= 0 for d in shape):
        _bad(name, "tensor %s has a bad shape" % key, kind)
    if not (isinstance(offsets, list) and len(offsets) == 2 and all(isinstance(o, int) for o in offsets)):
        _bad(name, "tensor %s has bad data_offsets" % key, kind)
    begin, end = offsets
    dtype = DTYPES[entry["dtype"]]
    count = 1
    for d in shape:
        count *= d
    width = torch.tensor([], dtype=dtype).element_size()
    if not 0 <= begin <= end <= len(buf) - base or end - begin != count * width:
        _bad(name, "tensor %s's bytes do not fit the file" % key, kind)
    if count == 0:
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(buf, dtype=dtype, count=count, offset=base + begin).reshape(shape).clone()


def read(buf, name, kind="model"):
    """{tensor name: CPU tensor} from the bytes of a .safetensors file; what it cannot read is
    an EngineError of `kind` (a pinned model file's, or a checkpoint's)."""
    if len(buf) < 8:
        _bad(name, "shorter than its header length", kind)
    (size,) = struct.unpack("<Q", bytes(buf[:8]))
    if size > MAX_HEADER or 8 + size > len(buf):
        _bad(name, "header length %d" % size, kind)
    try:
        header = bounded_json.loads(buf[8:8 + size])
    except ValueError as e:  # UnicodeDecodeError is one
        _bad(name, "header is not JSON within the reader's limits (%s)" % str(e)[:200], kind)
    if not isinstance(header, dict):
        _bad(name, "header is not an object", kind)
    return {key: _entry_tensor(buf, 8 + size, name, key, entry, kind)
            for key, entry in header.items() if key != "__metadata__"}
