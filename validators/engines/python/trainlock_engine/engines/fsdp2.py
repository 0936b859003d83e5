"""Engine `fsdp2`: Hugging Face's LlamaForCausalLM (hf_model.py) sharded with FSDP2's
fully_shard (each decoder layer, then the root), bf16 through MixedPrecisionPolicy (fp32
reductions), AdamW + the config's schedule, checkpoints with torch.distributed.checkpoint:
model and optimizer as sharded state dicts (each rank writes its shards), dcp.async_save for
every checkpoint, as an FSDP2 user saves. The model's state dict is made once and reused, as
torchtitan's checkpoint manager does (model_state.py: a save checks that every parameter still
has the storage the dict was made over, and makes it again where not); the optimizer's is made
at each save (get_optimizer_state_dict). On a GPU with a torch whose async_save takes a stager
(2.9 and later), every save is staged by one ReusedPinnedStager (reused_stager.py): page-locked
host buffers made once in the background after the first step and kept from save to save, the
copies on a side stream beside the next step's forward and backward, and the optimizer step
waiting for them on the device. torch's own DefaultStager, which pins a fresh copy for every
save and cannot be reused on torch 2.11, stays the fallback where the block cannot be
page-locked (_async_stager), one per save; the next optimizer step then waits on the host for
its staging copy, and that wait counts as time training was held up (the handle's
staging_wait_s; roundtrip.py adds it to blocking_s, which train.roundtrip reports as
save_blocking_s). The checkpoint is committed only once the save's future resolved on every
rank.

The step drops the model's output before backward, as torchtitan's training loop does (the
loss is computed, the logits released, then loss.backward()): the measured peak is that
loop's, not one that keeps the logits alive through backward.

The scheduler's state is captured at the save and written beside at its commit (rank 0); RNG
streams and the data position by the driver (roundtrip.py). torch.distributed.checkpoint is
imported when the engine is built, as a user's script imports it at its top: imported inside the
first save, and with the scheduler file written there, B's save held training up 0.21 s against
the plain script's 0.03 s (bench/results/2026-12-04-h200-save-blocking). A checkpoint resumes at
another --nproc: DCP reshards the tensors and the driver keeps the global batch.

Needs torch >= 2.4 (fully_shard) and transformers; otherwise refused as `unsupported` before
any work. fp16 is refused (FSDP2 would need a sharded gradient scaler).
"""

import copy
import itertools
import os
import time

import torch

from .. import digests, hold, measure, optim, roundtrip, runtime, safe_load
from ..model import causal_lm_loss, matmul_parameters
from ..protocol import EngineError
from ..model_state import CachedModelState
from ..reused_stager import ReusedPinnedStager, device_bytes

DCP_DIR = "dcp"
SCHEDULER_FILE = "fsdp2-scheduler.pt"


def _torch_version():
    return tuple(int("".join(c for c in x if c.isdigit()) or 0) for x in torch.__version__.split(".")[:2])


def _fsdp():
    try:
        from torch.distributed.fsdp import FSDPModule, MixedPrecisionPolicy, fully_shard  # torch >= 2.6
    except ImportError:
        from torch.distributed._composable.fsdp import FSDPModule, MixedPrecisionPolicy, fully_shard  # 2.4, 2.5
    return fully_shard, MixedPrecisionPolicy, FSDPModule


def reshard_after_evaluation(model, fsdp_module_class):
    """Puts every FSDP module of `model` back to its sharded parameters after a forward pass
    without backward. FSDP2 keeps the root's parameters unsharded after a forward (the backward
    would gather them again); after an evaluation nothing reshards them, so the root holds its
    gathered parameters and they, not the shards, are the model's parameters until the next
    backward. torchtitan's validator reshards here "to ensure the model weights are sharded
    the same way for checkpoint saving"; so does this engine, or every save after an
    evaluation would find the cached model state stale (model_state.py)."""
    for module in model.modules():
        if isinstance(module, fsdp_module_class):
            module.reshard()


def prepare(ctx):
    if _torch_version() < (2, 4):
        raise EngineError("unsupported", "engine fsdp2 needs torch >= 2.4 (fully_shard); this is torch %s" % torch.__version__)
    try:
        _fsdp()
        import transformers  # noqa: F401 - hello reports its version
    except ImportError as e:
        raise EngineError("unsupported", "engine fsdp2 cannot import %s" % e.name)


def run(ctx):
    roundtrip.run(ctx, Fsdp2Engine)


def _single_process_group(device):
    """fully_shard and DCP need a process group even for one process."""
    import torch.distributed as dist

    if dist.is_initialized():
        return
    from ..launch import free_port

    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(free_port()))
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo", rank=0, world_size=1)


def holding_writer(target, save_hold):
    """DCP's FileSystemWriter for `target` that stops where `save_hold` says (--hold-save-at):
    mid-file inside the first data file's first write (hold.CutFileSystem), after-files at the
    start of finish(), which writes the checkpoint's .metadata once every rank's files are
    written. Only a held save gets it: every other save passes no storage writer, as a user's."""
    from torch.distributed.checkpoint import FileSystemWriter

    class HoldingWriter(FileSystemWriter):
        def __init__(self, path):
            super().__init__(path)
            self.fs = hold.CutFileSystem(self.fs, save_hold)

        def finish(self, metadata, results):
            save_hold.at("after-files")
            return super().finish(metadata, results)

    return HoldingWriter(target)


def _import_checkpointing():
    """Imports DCP, its state-dict helpers and (where this torch has it) its staging, before the
    first save needs them."""
    import torch.distributed.checkpoint  # noqa: F401
    import torch.distributed.checkpoint.state_dict  # noqa: F401

    try:
        import torch.distributed.checkpoint.staging  # noqa: F401 - torch >= 2.9
    except ImportError:
        pass


def _async_stager(device):
    """A DefaultStager as an FSDP2 user configures it on a GPU (torch >= 2.9: pinned host buffers,
    async staging on a side stream, non-blocking copies), else None (async_save's own staging,
    before it returns).

    A new one for every save: torch 2.11's DefaultStager closes its StateDictStager at the end
    of each staging, so a reused one fails its second save with KeyError(<class 'type'>)
    (pytorch/pytorch#183413, fixed after 2.11 by #183424; seen on the H200 on 2026-12-02,
    bench/results/2026-12-02-h200-fsdp2)."""
    if not _takes_stager(device):
        return None
    from torch.distributed.checkpoint.staging import DefaultStager, StagingOptions

    # The upload runs in a thread of this process: no shared memory needed.
    return DefaultStager(StagingOptions(use_pinned_memory=True, use_shared_memory=False,
                                        use_async_staging=True, use_non_blocking_copy=True))


def _takes_stager(device):
    """Whether async_save on this torch takes a stager (2.9 and later) for saves from a GPU."""
    import torch.distributed.checkpoint as dcp

    if device.type != "cuda":
        return False
    try:
        import inspect

        from torch.distributed.checkpoint.staging import DefaultStager, StagingOptions  # noqa: F401

        return "async_stager" in inspect.signature(dcp.async_save).parameters
    except (ImportError, TypeError, ValueError):
        return False


def _reused_stager(device):
    """The ReusedPinnedStager where this torch's async_save takes a stager (and the GPU can
    page-lock host memory), else None (_async_stager's per-save DefaultStager, or async_save's
    own staging)."""
    if not _takes_stager(device):
        return None
    cudart = torch.cuda.cudart()
    if not hasattr(cudart, "cudaHostRegister"):
        return None
    return ReusedPinnedStager(device)


class FutureSave:
    """dcp.async_save's result as a driver handle: its upload future, and (newer torch) the
    staging future the next optimizer step must wait for.

    The stager's staging future holds the staged copy, whose pinned host buffers torch 2.11
    unpins (weakref finalizers of _state_dict_stager.py) on the thread that drops the last
    reference: about a second for the pilot's 16 GB, which a plain script pays at its next save
    (bench/results/2026-12-04-h200-save-release). release() drops it where the driver times it
    (`release_s`). Nothing here refers back to the handle: a reference cycle through the staging
    future's callback would leave the copy to the cyclic garbage collector, which unpins it at
    an unforeseen step, and the release would not be measured at all."""

    def __init__(self, response, stager=None, beside=None, reused=None):
        self.beside = beside or {}  # {file name: state} the driver writes at the commit
        self.future = getattr(response, "upload_completion", response)  # newer torch: AsyncSaveResponse
        self.staging = getattr(response, "staging_completion", None)
        self.stager = stager  # this save's own DefaultStager, closed once the upload is done
        # The ReusedPinnedStager that staged it: the optimizer waits for its copies on the
        # device, and the commit has nothing to release.
        self.reused = reused
        self.releases_at_commit = stager is not None
        self.new_pinned_bytes = reused.new_pinned_bytes if reused is not None else -1
        self.staging_wait_s = 0.0
        self._staged_after = []  # [seconds from async_save's return until the staged copy was complete]
        if self.staging is not None:
            started, staged_after = time.perf_counter(), self._staged_after
            self.staging.add_done_callback(lambda _future: staged_after.append(time.perf_counter() - started))

    @property
    def staging_s(self):
        return self._staged_after[0] if self._staged_after else None

    def release(self):
        """Drops the stager and the futures, and with them the staged copy."""
        self.stager = self.staging = self.future = None

    def wait_for_staging(self):
        """Blocks until the staged copy is complete (the parameters may change from then on); a
        reused stager's copies are waited for by the training stream, not the host."""
        if self.staging is None:
            return
        if self.reused is not None:
            self.reused.gate_current_stream()
            self.staging = None
            return
        if not self.staging.done():
            started = time.perf_counter()
            try:
                self.staging.result()
            except Exception as e:  # noqa: BLE001 - a failed staging refuses the commit
                raise EngineError("checkpoint", "staging the asynchronous DCP save failed: %s" % e)
            self.staging_wait_s += time.perf_counter() - started
        self.staging = None

    def done(self):
        return self.future.done()

    def wait(self):
        self.wait_for_staging()
        try:
            self.future.result()
        except Exception as e:  # noqa: BLE001 - any failure of the save refuses the commit
            raise EngineError("checkpoint", "the asynchronous DCP save failed: %s" % e)
        finally:
            # Closed (its threads), but kept: its staging future holds the staged copy until
            # release().
            if self.stager is not None:
                self.stager.close()


class Fsdp2Engine(roundtrip.Engine):
    name = "fsdp2"
    saves_asynchronously = True  # dcp.async_save for every checkpoint, as an FSDP2 user saves
    save_points = hold.INSIDE_SAVE  # a held save's storage writer stops there (holding_writer)

    def build(self):
        from ..hf_model import build_hf_llama, watch_logits_dtype

        t = self.spec["training"]
        if t["precision"] == "fp16":
            raise EngineError("unsupported", "training.precision fp16: the fsdp2 engine trains fp32 or bf16")
        if t["precision"] == "bf16" and self.device.type != "cuda":
            raise EngineError("unsupported", "training.precision bf16 needs a CUDA device; this process runs on %s" % self.device)
        _single_process_group(self.device)
        fully_shard, MixedPrecisionPolicy, self.fsdp_module_class = _fsdp()
        self.model, info = build_hf_llama(self.spec, self.ctx.emit, self.device)
        watch_logits_dtype(self.model)
        policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32) if t["precision"] == "bf16" else MixedPrecisionPolicy()
        # The mesh on this process's device: fully_shard's default mesh is the accelerator's,
        # which on a GPU machine training on the CPU would put rank r on a GPU r that may not exist.
        from torch.distributed.device_mesh import init_device_mesh

        mesh = init_device_mesh(self.device.type, (torch.distributed.get_world_size(),))
        for layer in self.model.model.layers:
            fully_shard(layer, mesh=mesh, mp_policy=policy)
        fully_shard(self.model, mesh=mesh, mp_policy=policy)
        self.optimizer = optim.build_optimizer(self.spec, self.model.parameters())
        self.scheduler = optim.build_scheduler(self.spec, self.optimizer)
        # The async saves' own group, made once as DCP's docs show: a save's collectives must not
        # interleave with training's, and making it inside the first save would block that save.
        self.async_group = torch.distributed.new_group(backend="gloo")
        _import_checkpointing()
        self.stager = _reused_stager(self.device)  # its buffers are made after the first step
        self.in_flight = None  # the last async save's handle, until its staging is complete
        from torch.distributed.checkpoint.state_dict import get_model_state_dict

        self.model_state = CachedModelState(lambda: get_model_state_dict(self.model), self._named_tensors)
        self.model_state.refresh()  # here, not in the first save (torchtitan makes it at its start)
        self.settle_model_state = True  # after the first step: see train_step
        info["class"] += " sharded with fully_shard"
        return info

    def release_training_memory(self):
        # The gradients (the pilot's are 5 GB of fp32) and every cached block: what C keeps is
        # its parameters and AdamW's moments (the coordinator's PortableFitsBesideResumedState).
        return runtime.give_device_back(self.optimizer, self.device)

    def train_step(self, micro_batches):
        self.model.train()
        self.optimizer.zero_grad(set_to_none=True)
        losses = []
        for i, (inputs, targets) in enumerate(micro_batches):
            if hasattr(self.model, "set_requires_gradient_sync"):  # reduce-scatter on the last only
                self.model.set_requires_gradient_sync(i == len(micro_batches) - 1)
            # The output is dropped before backward, as torchtitan's loop does: autograd keeps
            # only what the loss's backward needs, not the logits themselves.
            logits = self.model(input_ids=inputs).logits
            loss = causal_lm_loss(logits, targets)
            del logits
            losses.append(loss.detach())
            (loss / len(micro_batches)).backward()
        if self.spec["training"]["grad_clip"] > 0:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.spec["training"]["grad_clip"])
        if self.in_flight is not None:  # the staged copy must be complete before the update
            self.in_flight.wait_for_staging()
            self.in_flight = None
        self.optimizer.step()
        self.scheduler.step()
        if self.settle_model_state:
            # FSDP2's lazy init, at the first forward, re-pads an unevenly sharded parameter into
            # a new local shard, so the dict made at build (or after a load) may be stale by the
            # first save. Made again here, between steps, the first save need not: it only
            # checks it (model_state.py).
            self.model_state.get()
            self.settle_model_state = False
            if self.stager is not None and self.ctx.opts.save_at and not self.stager.prepared:
                # A process that saves makes its staging block now, in the background (one
                # that only resumes or evaluates never saves and allocates nothing).
                self.stager.prepare(device_bytes(self._saved_tensors()))
        return runtime.global_mean(self.ctx.world_size, torch.stack(losses).mean())

    def eval_loss(self, batches):
        self.model.eval()
        with torch.no_grad():
            total = sum(causal_lm_loss(self.model(input_ids=x).logits, y).float() for x, y in batches) / len(batches)
        reshard_after_evaluation(self.model, self.fsdp_module_class)
        self.model.train()
        return runtime.global_mean(self.ctx.world_size, total)

    def _saved_tensors(self):
        """Every tensor a save stages: the model's state (its parameters' shards) and the
        optimizer's moments."""
        tensors = [t for _, t in self._named_tensors()]
        for state in self.optimizer.state.values():
            tensors.extend(v for v in state.values() if isinstance(v, torch.Tensor))
        return tensors

    def _named_tensors(self):
        """The model's parameters and buffers by name: what the cached model state is made of."""
        return itertools.chain(self.model.named_parameters(), self.model.named_buffers())

    def _sharded_state(self):
        from torch.distributed.checkpoint.state_dict import get_state_dict

        model_sd, optim_sd = get_state_dict(self.model, self.optimizer)
        return {"model": model_sd, "optim": optim_sd}

    def _state_to_save(self):
        """The model's cached state dict (made again where its parameters changed) and the
        optimizer's, made now: its param groups carry the scheduler's current learning rate."""
        from torch.distributed.checkpoint.state_dict import get_optimizer_state_dict

        made = self.model_state.made
        model_sd = self.model_state.get()
        modelled = time.perf_counter()
        optim_sd = get_optimizer_state_dict(self.model, self.optimizer)
        return {"model": model_sd, "optim": optim_sd}, modelled, self.model_state.made != made

    def save(self, directory, step, asynchronous):
        import torch.distributed.checkpoint as dcp

        target = os.path.join(directory, DCP_DIR)
        started = time.perf_counter()
        beside = {SCHEDULER_FILE: copy.deepcopy(self.scheduler.state_dict())} if self.ctx.rank == 0 else {}
        scheduled = time.perf_counter()
        state, modelled, model_made = self._state_to_save()
        held = {"storage_writer": holding_writer(target, self.hold)} if self.hold is not None else {}
        if not asynchronous:
            dcp.save(state, checkpoint_id=target, **held)
            for name, value in beside.items():
                torch.save(value, os.path.join(directory, name))
            return None
        stated = time.perf_counter()
        stager = self.stager or _async_stager(self.device)
        extra = {"async_stager": stager} if stager is not None else {}
        extra.update(held)
        stager_made = time.perf_counter()
        response = dcp.async_save(state, checkpoint_id=target, process_group=self.async_group, **extra)
        if self.stager is not None:
            self.in_flight = FutureSave(response, None, beside, reused=self.stager)
        else:
            self.in_flight = FutureSave(response, stager, beside)
        made_note = "made in this save, %s" % self.model_state.remade_because if model_made else "cached"
        roundtrip.phase_note("fsdp2 save (model state %s)" % made_note,
                             scheduler=scheduled - started, model_state=modelled - scheduled,
                             optim_state=stated - modelled, stager=stager_made - stated,
                             async_save=time.perf_counter() - stager_made)
        return self.in_flight

    def load(self, directory):
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint.state_dict import set_state_dict

        state = self._sharded_state()  # initialises the optimizer's state so DCP has targets
        self.model_state.forget()
        try:
            dcp.load(state, checkpoint_id=os.path.join(directory, DCP_DIR))
            set_state_dict(self.model, self.optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"])
            self.model_state.refresh()  # as torchtitan's ModelWrapper does after a load
            self.settle_model_state = True
            self.scheduler.load_state_dict(safe_load.load(os.path.join(directory, SCHEDULER_FILE)))
        except EngineError:
            raise
        except (KeyError, ValueError, RuntimeError, OSError) as e:
            raise EngineError("checkpoint", "%s: the DCP checkpoint does not load (%s)" % (directory, str(e).splitlines()[0][:300]))

    def full_state(self):
        # The sharded DTensors themselves: final_state.write gathers each in turn (the
        # parameters' names are their FQNs: fully_shard and Hugging Face's gradient
        # checkpointing wrap no module).
        names = [n for n, _ in self.model.named_parameters()]
        params = {n: p.detach() for n, p in self.model.named_parameters()}
        return params, digests.optimizer_by_name(self.optimizer, names)

    def measured_shape(self):
        seen = self.model.trainlock_logits_dtype[0]
        return {"param_dtype": measure.dtype_name(next(self.model.parameters()).dtype),
                "activation_dtype": measure.dtype_name(seen) if seen is not None else None,
                "activation_checkpointing": self.model.trainlock_recomputed[0] > 0}

    def matmul_parameters(self):
        return matmul_parameters(self.spec["model"])


