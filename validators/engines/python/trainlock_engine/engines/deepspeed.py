"""Engine `deepspeed`: Hugging Face's LlamaForCausalLM under deepspeed.initialize with a ZeRO
stage 1 config built from the spec (micro batch, gradient accumulation, bf16/fp16, gradient
clipping, AdamW with the spec's hyper-parameters as torch's AdamW), the spec's warmup + cosine
schedule as a torch LambdaLR handed to initialize, engine.backward / engine.step per
micro-batch (DeepSpeed steps the optimizer at the accumulation boundary), and checkpoints with
engine.save_checkpoint(dir, tag="step-K", client_state=...) / load_checkpoint(dir, tag,
load_optimizer_states=True, load_lr_scheduler_states=True). A checkpoint is committed only after
save_checkpoint returned on every rank and its `latest` file names the tag.

The round-trip driver (roundtrip.py) owns data, RNG streams and the commit marker, as for ddp
and fsdp2: DeepSpeed saves no RNG state, so the streams and the data position travel in the
driver's files beside DeepSpeed's; client_state carries the step and the lock's digest, and a
checkpoint whose client_state is not the step its directory names is refused.

DeepSpeed cannot be installed on the machines trainlock is tested on. This module is written
against DeepSpeed's documented API and tested only against a FAKE `deepspeed` module
(tests/engines/fake_deepspeed): that test proves the engine speaks trainlock.engine/1 and
round-trips bitwise through the API surface it uses; it is a protocol test, not a DeepSpeed
test. Under the fake (it says so: deepspeed.TRAINLOCK_PROTOCOL_FAKE) the model is the plain
PyTorch Llama (model.py, the same parameter names), so the test needs no transformers.
Without deepspeed (or, with the real one, without transformers) the engine is refused as
`unsupported` before any work.
"""

import os

import torch

from .. import commit, digests, measure, optim, roundtrip, runtime, weights
from ..model import Llama, causal_lm_loss, matmul_parameters
from ..protocol import EngineError

TAG = "step-%d"


def _is_fake(module):
    return bool(getattr(module, "TRAINLOCK_PROTOCOL_FAKE", False))


def prepare(ctx):
    try:
        import deepspeed
    except ImportError as e:
        raise EngineError("unsupported", "engine deepspeed cannot import %s" % (e.name or "deepspeed"))
    if not _is_fake(deepspeed):
        try:
            import transformers  # noqa: F401 - hello reports its version
        except ImportError as e:
            raise EngineError("unsupported", "engine deepspeed cannot import %s" % e.name)


def run(ctx):
    roundtrip.run(ctx, DeepSpeedEngine)


def ds_config(spec, world_size):
    """DeepSpeed's config dict for the spec: ZeRO stage 1, torch's AdamW."""
    t = spec["training"]
    o = t["optimizer"]
    config = {
        "train_micro_batch_size_per_gpu": t["micro_batch"],
        "gradient_accumulation_steps": t["grad_accum"],
        "train_batch_size": t["micro_batch"] * t["grad_accum"] * world_size,
        "zero_optimization": {"stage": 1},
        "optimizer": {"type": "AdamW", "params": {"lr": o["lr"], "betas": [o["beta1"], o["beta2"]], "eps": o["eps"],
                                                  "weight_decay": o["weight_decay"], "torch_adam": True}},
        "bf16": {"enabled": t["precision"] == "bf16"},
        "fp16": {"enabled": t["precision"] == "fp16", "initial_scale_power": 16},
        "steps_per_print": 1 << 30,
        "wall_clock_breakdown": False,
    }
    if t["grad_clip"] > 0:
        config["gradient_clipping"] = t["grad_clip"]
    return config


def _step_of(directory):
    m = commit.STEP_DIR.match(os.path.basename(os.path.normpath(directory)))
    if not m:
        raise EngineError("checkpoint", "%s is not a step directory" % directory)
    return int(m.group(1))


class DeepSpeedEngine(roundtrip.Engine):
    name = "deepspeed"

    def build(self):
        import deepspeed

        t = self.spec["training"]
        if t["precision"] != "fp32" and self.device.type != "cuda":
            raise EngineError("unsupported", "training.precision %s needs a CUDA device; this process runs on %s" % (t["precision"], self.device))
        self.fake = _is_fake(deepspeed)
        model, info = self._model()
        model.to(self.device)
        self.names = [n for n, _ in model.named_parameters()]
        spec = self.spec
        self.engine, self.optimizer, _, self.scheduler = deepspeed.initialize(
            model=model, model_parameters=model.parameters(), config=ds_config(self.spec, self.ctx.world_size),
            lr_scheduler=lambda optimizer: optim.build_scheduler(spec, optimizer))
        self.model = self.engine.module
        info["class"] += " under deepspeed.initialize (ZeRO 1)"
        return info

    def _model(self):
        m, t = self.spec["model"], self.spec["training"]
        if not self.fake:
            from ..hf_model import build_hf_llama, watch_logits_dtype

            model, info = build_hf_llama(self.spec, self.ctx.emit)
            watch_logits_dtype(model)
            self.hf = True
            return model, info
        self.hf = False
        model = Llama(m, activation_checkpointing=t["activation_checkpointing"])
        if m["files"]:
            weights.load_into(model, weights.read_pinned(m["files"], self.ctx.emit), m["tie_embeddings"])
            source = "weights"
        else:
            model.init_weights()  # the driver seeded torch with the spec's seed
            source = "seeded initialisation"
        return model, {"source": source, "class": "plain PyTorch Llama (protocol test: fake deepspeed)",
                       "parameters": sum(p.numel() for p in model.parameters())}

    def _logits(self, module, inputs):
        out = module(input_ids=inputs) if self.hf else module(inputs)
        return out.logits if self.hf else out

    def train_step(self, micro_batches):
        if len(micro_batches) != self.engine.gradient_accumulation_steps():
            raise EngineError("unsupported", "DeepSpeed accumulates %d micro-batches per step; this step has %d (a resume at another world size)"
                              % (self.engine.gradient_accumulation_steps(), len(micro_batches)))
        self.engine.train()
        losses = []
        for i, (inputs, targets) in enumerate(micro_batches):
            loss = causal_lm_loss(self._logits(self.engine, inputs), targets)
            losses.append(loss.detach().float())
            self.engine.backward(loss)  # scaled by 1 / gradient_accumulation_steps by DeepSpeed
            if self.engine.is_gradient_accumulation_boundary() != (i == len(micro_batches) - 1):
                raise EngineError("training", "DeepSpeed's accumulation boundary is not this step's last micro-batch")
            self.engine.step()  # the optimizer and scheduler step at the accumulation boundary
        return runtime.global_mean(self.ctx.world_size, torch.stack(losses).mean())

    def eval_loss(self, batches):
        self.engine.eval()
        with torch.no_grad():
            total = sum(causal_lm_loss(self._logits(self.engine, x), y).float() for x, y in batches) / len(batches)
        self.engine.train()
        return float(total.item())

    def save(self, directory, step, asynchronous):
        tag = TAG % step
        self.engine.save_checkpoint(directory, tag=tag, client_state={"trainlock_step": step, "lock_sha256": self.spec["lock_sha256"]})
        if self.ctx.rank == 0:
            latest = os.path.join(directory, "latest")
            try:
                with open(latest) as f:
                    named = f.read(256).strip()
            except OSError as e:
                raise EngineError("checkpoint", "save_checkpoint returned without writing %s (%s)" % (latest, e))
            if named != tag:
                raise EngineError("checkpoint", "%s names %r, the save was %r" % (latest, named, tag))
        return None  # DeepSpeed's save is synchronous: complete when it returns

    def load(self, directory):
        step = _step_of(directory)
        try:
            path, client = self.engine.load_checkpoint(directory, tag=TAG % step, load_optimizer_states=True,
                                                       load_lr_scheduler_states=True)
        except (KeyError, ValueError, RuntimeError, OSError) as e:
            raise EngineError("checkpoint", "%s: DeepSpeed's load_checkpoint failed (%s)" % (directory, str(e).splitlines()[0][:300]))
        if path is None:
            raise EngineError("checkpoint", "%s: DeepSpeed found no checkpoint tagged %s" % (directory, TAG % step))
        if not isinstance(client, dict) or client.get("trainlock_step") != step:
            raise EngineError("checkpoint", "%s: the checkpoint's client_state is not step %d's (%r)" % (directory, step, client))

    def full_state(self):
        params = {n: p.detach() for n, p in self.model.named_parameters()}
        base = self.engine.optimizer
        inner = getattr(base, "optimizer", None)  # ZeRO wraps torch's optimizer
        if inner is None:
            return params, digests.optimizer_by_name(base, self.names)
        # ZeRO's optimizer holds flat fp32 partitions of this rank: named by position, they
        # compare between processes of one world size (the round trip's A and C).
        optim = {}
        for g, group in enumerate(inner.param_groups):
            for i, p in enumerate(group["params"]):
                entry = {"master": p.detach()}
                entry.update(inner.state.get(p, {}))
                optim["zero/rank%d/group%d/%d" % (self.ctx.rank, g, i)] = entry
        return params, optim

    def measured_shape(self):
        if self.hf:
            seen = self.model.trainlock_logits_dtype[0]
            recomputed = self.model.trainlock_recomputed[0]
        else:
            seen, recomputed = self.model.logits_dtype, self.model.recomputed_layers
        return {"param_dtype": measure.dtype_name(next(self.model.parameters()).dtype),
                "activation_dtype": measure.dtype_name(seen) if seen is not None else None,
                "activation_checkpointing": recomputed > 0}

    def matmul_parameters(self):
        return matmul_parameters(self.spec["model"])
