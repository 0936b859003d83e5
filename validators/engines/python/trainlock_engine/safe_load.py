"""torch.load for checkpoints, which are hostile input: never unpickles arbitrary objects.

torch >= 2 uses weights_only=True. torch 1.13's weights-only unpickler cannot read floats
(pickle opcode BINFLOAT), which every optimizer state holds, so there a pickle module whose
Unpickler resolves only an allowlist of globals (tensor rebuild functions, dtypes,
OrderedDict, torch.Size) is used instead; torch's own wrapper still maps storage types.
"""

import collections
import pickle
import types

import torch

from .protocol import EngineError

TORCH2 = int(torch.__version__.split(".")[0]) >= 2
_REBUILD = ("_rebuild_tensor", "_rebuild_tensor_v2", "_rebuild_parameter", "_rebuild_parameter_with_state")


class _Unpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if module == "collections" and name == "OrderedDict":
            return collections.OrderedDict
        if module == "torch._utils" and name in _REBUILD:
            return getattr(torch._utils, name)
        if module == "torch" and (name == "Size" or isinstance(getattr(torch, name, None), torch.dtype)):
            return getattr(torch, name)
        raise pickle.UnpicklingError("global %s.%s is not allowed in a checkpoint" % (module, name))


_restricted = types.SimpleNamespace(Unpickler=_Unpickler, load=lambda f, **kw: _Unpickler(f, **kw).load(),
                                    __name__="trainlock_restricted_pickle")


def load(path):
    """The object torch.save wrote at path, on the CPU; kind `checkpoint` when unreadable."""
    try:
        if TORCH2:
            return torch.load(path, map_location="cpu", weights_only=True)
        return torch.load(path, map_location="cpu", pickle_module=_restricted)
    except Exception as e:  # noqa: BLE001 - a crafted pickle can raise anything (TypeError from
        # an allow-listed global called with other arguments); every failure is an unreadable file
        text = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise EngineError("checkpoint", "%s: unreadable (%s)" % (path, text[:300]))
