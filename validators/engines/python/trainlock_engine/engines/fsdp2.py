"""Engine `fsdp2` (placeholder)."""
import torch
from ..protocol import EngineError


def prepare(ctx):
    raise EngineError("unsupported", "fsdp2 needs torch >= 2.4 (fully_shard); this is torch %s" % torch.__version__)


def run(ctx):
    pass
