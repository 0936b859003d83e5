"""Engine `ddp`: the plain-PyTorch Llama (model.py) in DistributedDataParallel (gloo on CPU,
NCCL on CUDA), AdamW, the config's warmup + cosine schedule as a LambdaLR, gradient
accumulation under no_sync, gradient clipping, autocast (bf16/fp16, with a GradScaler for
fp16) on CUDA. Checkpoints are one torch.save file (model, optimizer, scheduler, scaler)
written by rank 0 (every replica holds the same state); --async-save snapshots the state to
host memory and writes it from a thread while training goes on.
"""

import contextlib
import os

import torch

from .. import digests, measure, optim, roundtrip, runtime, safe_load, weights
from ..model import Llama, causal_lm_loss, matmul_parameters
from ..protocol import EngineError

STATE_FILE = "ddp-state.pt"
AUTOCAST = {"bf16": torch.bfloat16, "fp16": torch.float16}


def prepare(ctx):
    pass  # plain torch: nothing to import, any torch >= 1.13


def run(ctx):
    roundtrip.run(ctx, DdpEngine)


def cpu_copy(obj):
    """A deep copy with every tensor cloned to host memory (a snapshot an asynchronous write
    can take its time over while training changes the live tensors)."""
    if torch.is_tensor(obj):
        return obj.detach().to("cpu", copy=True)
    if isinstance(obj, dict):
        return type(obj)((k, cpu_copy(v)) for k, v in obj.items())
    if isinstance(obj, (list, tuple)):
        return type(obj)(cpu_copy(v) for v in obj)
    return obj


class DdpEngine(roundtrip.Engine):
    name = "ddp"

    def build(self):
        m, t = self.spec["model"], self.spec["training"]
        if t["precision"] != "fp32" and self.device.type != "cuda":
            raise EngineError("unsupported", "training.precision %s needs a CUDA device; this process runs on %s" % (t["precision"], self.device))
        self.model = Llama(m, activation_checkpointing=t["activation_checkpointing"])
        if m["files"]:
            weights.load_into(self.model, weights.read_pinned(m["files"], self.ctx.emit), m["tie_embeddings"])
            source = "weights"
        else:
            self.model.init_weights()  # the driver seeded torch with the spec's seed
            source = "seeded initialisation"
        self.model.to(self.device)
        self.wrapped = self.model
        if self.ctx.world_size > 1:
            from torch.nn.parallel import DistributedDataParallel

            ids = [self.device.index] if self.device.type == "cuda" else None
            self.wrapped = DistributedDataParallel(self.model, device_ids=ids)
        self.names = [n for n, _ in self.model.named_parameters()]
        self.optimizer = optim.build_optimizer(self.spec, self.model.parameters())
        self.scheduler = optim.build_scheduler(self.spec, self.optimizer)
        self.autocast = AUTOCAST.get(t["precision"]) if self.device.type == "cuda" else None
        self.scaler = torch.cuda.amp.GradScaler() if t["precision"] == "fp16" else None
        return {"source": source, "class": "plain PyTorch Llama in DistributedDataParallel",
                "parameters": sum(p.numel() for p in self.model.parameters())}

    def _autocast(self):
        if self.autocast is None:
            return contextlib.nullcontext()
        return torch.autocast(device_type="cuda", dtype=self.autocast)

    def release_training_memory(self):
        # As fsdp2's: gradients and the allocator's cached blocks (ddp runs several ranks, where
        # the coordinator keeps D apart anyway; giving the device back costs nothing).
        return runtime.give_device_back(self.optimizer, self.device)

    def train_step(self, micro_batches):
        self.wrapped.train()
        self.optimizer.zero_grad(set_to_none=True)
        losses = []
        for i, (inputs, targets) in enumerate(micro_batches):
            last = i == len(micro_batches) - 1
            sync = contextlib.nullcontext() if last or self.wrapped is self.model else self.wrapped.no_sync()
            with sync:
                with self._autocast():
                    loss = causal_lm_loss(self.wrapped(inputs), targets)
                losses.append(loss.detach())
                scaled = loss / len(micro_batches)
                (self.scaler.scale(scaled) if self.scaler else scaled).backward()
        if self.scaler:
            self.scaler.unscale_(self.optimizer)
        if self.spec["training"]["grad_clip"] > 0:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.spec["training"]["grad_clip"])
        if self.scaler:
            self.scaler.step(self.optimizer)
            self.scaler.update()
        else:
            self.optimizer.step()
        self.scheduler.step()
        return runtime.global_mean(self.ctx.world_size, torch.stack(losses).mean())

    def eval_loss(self, batches):
        self.model.eval()
        with torch.no_grad(), self._autocast():
            total = sum(causal_lm_loss(self.model(x), y).float() for x, y in batches) / len(batches)
        self.model.train()
        return float(total.item())  # every rank evaluates the same windows

    def _state(self):
        state = {"model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
                 "scheduler": self.scheduler.state_dict()}
        if self.scaler:
            state["scaler"] = self.scaler.state_dict()
        return state

    def save(self, directory, step, asynchronous):
        if self.ctx.rank != 0:
            return None
        path = os.path.join(directory, STATE_FILE)
        if not asynchronous:
            torch.save(self._state(), path)
            return None
        snapshot = cpu_copy(self._state())
        return roundtrip.ThreadedSave(lambda: torch.save(snapshot, path))

    def load(self, directory):
        state = safe_load.load(os.path.join(directory, STATE_FILE))
        try:
            self.model.load_state_dict(state["model"])
            self.optimizer.load_state_dict(state["optimizer"])
            self.scheduler.load_state_dict(state["scheduler"])
            if self.scaler:
                self.scaler.load_state_dict(state["scaler"])
        except (KeyError, TypeError, ValueError, RuntimeError) as e:
            raise EngineError("checkpoint", "%s: does not fit this model and optimizer (%s)" % (directory, str(e).splitlines()[0]))

    def full_state(self):
        params = {n: p.detach() for n, p in self.model.named_parameters()}
        return params, digests.optimizer_by_name(self.optimizer, self.names)

    def measured_shape(self):
        return {"param_dtype": measure.dtype_name(next(self.model.parameters()).dtype),
                "activation_dtype": measure.dtype_name(self.model.logits_dtype) if self.model.logits_dtype else None,
                "activation_checkpointing": self.model.recomputed_layers > 0}

    def matmul_parameters(self):
        return matmul_parameters(self.spec["model"])
