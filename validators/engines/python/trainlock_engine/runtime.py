"""The process's torch runtime: deterministic kernels, the device, the process group.

Determinism is switched on for every engine before CUDA is touched (CUBLAS_WORKSPACE_CONFIG
must be set before cuBLAS initialises), so an uninterrupted and a resumed run compute the
same bits. A run whose config does not ask for deterministic kernels has its step measured
again with torch's default ones (use_run_kernels) once the round trip's state is recorded
(roundtrip.py, engines/_framework.py); cuBLAS keeps the workspace setting it started with. The process group times out (TRAINLOCK_ENGINE_DIST_TIMEOUT seconds, default 300)
so a rank whose peer died does not wait forever.

Deterministic mode also makes torch fill every tensor it allocates uninitialised (empty,
empty_like, .cpu() copies) with NaN first (torch.utils.deterministic.fill_uninitialized_memory),
on one CPU core. A save allocates as the run's own save would, filled only if the config asks
for deterministic kernels (set_fill, roundtrip.Driver.save): DCP's DefaultStager staging of the
pilot's 16 GB took 2.5-3 s longer filled on an H200 (bench/results/2026-12-03-h200-spawn-order,
the plain script's save 7.3-8.0 s filled, 4.5 s unfilled; bench/results/2026-12-03-h200-fill-fix,
the engine's save blocking 6.4-6.6 s before, 0.19 s after). Everything else, a restore's
buffers included, allocates under deterministic mode's own setting: no measurement showed a
cost there.
"""

import datetime
import os

import torch

from .protocol import EngineError


def set_deterministic():
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True


def set_fill(enabled):
    """Sets whether torch fills new tensors (in deterministic mode); returns the setting it had,
    None on a torch without the switch (before 2.1, which never fills)."""
    utils = getattr(torch.utils, "deterministic", None)
    if utils is None or not hasattr(utils, "fill_uninitialized_memory"):
        return None
    before = utils.fill_uninitialized_memory
    utils.fill_uninitialized_memory = bool(enabled)
    return before


def use_run_kernels():
    """torch's default kernels (what a run with `deterministic: false` trains with)."""
    torch.use_deterministic_algorithms(False)
    torch.backends.cudnn.deterministic = False
    torch.backends.cudnn.benchmark = False  # torch's default


def rank_layout():
    """(rank, world_size, local_rank) from the launcher's environment; (0, 1, 0) alone."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return 0, 1, 0
    return int(os.environ["RANK"]), world, int(os.environ.get("LOCAL_RANK", os.environ["RANK"]))


def pick_device(choice, local_rank, world):
    cuda = torch.cuda.is_available()
    if choice == "cpu" or (choice == "auto" and not cuda):
        return torch.device("cpu")
    if not cuda:
        raise EngineError("unsupported", "--device %s: torch %s sees no CUDA device" % (choice, torch.__version__))
    index = int(choice[5:]) if choice.startswith("cuda:") else (local_rank if world > 1 else 0)
    if index >= torch.cuda.device_count():
        raise EngineError("unsupported", "--device: cuda:%d does not exist (%d devices)" % (index, torch.cuda.device_count()))
    torch.cuda.set_device(index)
    return torch.device("cuda", index)


def device_name(device):
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    # os.uname(), not platform.processor(): that runs `uname -p` found on PATH, a program the
    # isolated engine must not start (docs/validate.md, "Isolation").
    return os.uname().machine or "cpu"


def init_distributed(device, world):
    if world <= 1:
        return
    import torch.distributed as dist

    seconds = int(os.environ.get("TRAINLOCK_ENGINE_DIST_TIMEOUT", "300"))
    backend = "nccl" if device.type == "cuda" else "gloo"
    dist.init_process_group(backend, timeout=datetime.timedelta(seconds=seconds))


def barrier(world):
    if world > 1:
        import torch.distributed as dist

        dist.barrier()


def broadcast_object(value, world):
    """Rank 0's value on every rank (picklable objects; small)."""
    if world <= 1:
        return value
    import torch.distributed as dist

    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def global_mean(world, value):
    """The mean of a scalar tensor over every rank (the step's loss), as a float on each."""
    if world > 1:
        import torch.distributed as dist

        dist.all_reduce(value)
        value = value / world
    return float(value.item())


def all_ranks_ok(ok, world, device):
    """True on every rank only when every rank passed True: a failure decided on one rank
    (an unreadable file) is raised on all, so no rank is left waiting in a collective."""
    if world <= 1:
        return ok
    import torch.distributed as dist

    flag = torch.tensor([1 if ok else 0], dtype=torch.int64, device=device)
    dist.all_reduce(flag, op=dist.ReduceOp.MIN)
    return bool(flag.item())


def give_device_back(optimizer, device):
    """Drops the gradients and the allocator's cached blocks once nothing trains any more
    (Engine.release_training_memory): what stays is the parameters and the optimizer's state.
    Returns True: something was given back."""
    optimizer.zero_grad(set_to_none=True)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.empty_cache()
    return True
