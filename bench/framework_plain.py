#!/usr/bin/env python3
"""The frameworks' own training loops, written from their documentation as a user would (not
from trainlock's hf-trainer and lightning engines): Hugging Face `Trainer.train()` and Lightning
`Trainer.fit()` on transformers' LlamaForCausalLM, the yardstick ci/gpu.sh holds the engines'
train.step against, on the same machine in the same call.

The shape comes from a JSON file of plain numbers (model: hidden_size, num_layers, num_heads,
num_kv_heads, intermediate_size, vocab_size; training: seq_len, micro_batch, grad_accum,
precision, lr, weight_decay, grad_clip, warmup_steps), so both sides train the same run.
Random tokens; AdamW; the framework's own bf16 autocast ("bf16=True" / "bf16-mixed"); the
framework's own loss (the model's `labels`); nothing checkpointed.

Measured per optimizer step (grad_accum micro-batches), with the device synchronised at each
end: the median of --steps steps after --warmup, and the peak allocated and reserved memory
over those steps. Output: one JSON line per framework, {"framework", "step_time_s",
"peak_allocated_bytes", "peak_reserved_bytes", "steps"}.
Usage: bench/framework_plain.py SHAPE.json [--framework hf-trainer|lightning|both]
       [--warmup 3] [--steps 8]
"""
import argparse
import json
import statistics
import tempfile
import time

import torch


def llama(shape):
    from transformers import LlamaConfig, LlamaForCausalLM

    m, t = shape["model"], shape["training"]
    config = LlamaConfig(vocab_size=m["vocab_size"], hidden_size=m["hidden_size"],
                         intermediate_size=m["intermediate_size"], num_hidden_layers=m["num_layers"],
                         num_attention_heads=m["num_heads"], num_key_value_heads=m["num_kv_heads"],
                         max_position_embeddings=t["seq_len"], use_cache=False, attn_implementation="sdpa")
    torch.manual_seed(0)
    return LlamaForCausalLM(config)


class RandomTokens(torch.utils.data.Dataset):
    def __init__(self, shape, count):
        m, t = shape["model"], shape["training"]
        g = torch.Generator().manual_seed(1)
        self.ids = torch.randint(0, m["vocab_size"], (count, t["seq_len"]), generator=g)

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


class StepClock:
    """Optimizer-step times and the peak memory over the timed steps."""

    def __init__(self, warmup):
        self.warmup, self.times, self.started, self.steps = warmup, [], None, 0

    def begin(self):
        torch.cuda.synchronize()
        if self.steps == self.warmup:
            torch.cuda.reset_peak_memory_stats()
        self.started = time.perf_counter()

    def end(self):
        torch.cuda.synchronize()
        if self.steps >= self.warmup:
            self.times.append(time.perf_counter() - self.started)
        self.steps += 1

    def result(self, framework):
        return {"framework": framework, "step_time_s": statistics.median(self.times), "steps": len(self.times),
                "peak_allocated_bytes": torch.cuda.max_memory_allocated(),
                "peak_reserved_bytes": torch.cuda.max_memory_reserved(), "torch": torch.__version__}


def hf_trainer(shape, warmup, steps):
    from transformers import Trainer, TrainerCallback, TrainingArguments

    t = shape["training"]
    clock = StepClock(warmup)

    class Timing(TrainerCallback):
        def on_step_begin(self, args, state, control, **kwargs):
            clock.begin()

        def on_step_end(self, args, state, control, **kwargs):
            clock.end()

    total = warmup + steps
    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(
            output_dir=out, per_device_train_batch_size=t["micro_batch"], gradient_accumulation_steps=t["grad_accum"],
            max_steps=total, learning_rate=t["lr"], weight_decay=t["weight_decay"], max_grad_norm=t["grad_clip"],
            lr_scheduler_type="cosine", warmup_steps=t["warmup_steps"], bf16=t["precision"] == "bf16",
            save_strategy="no", report_to=[], logging_strategy="no", dataloader_num_workers=0, seed=0)
        data = RandomTokens(shape, total * t["micro_batch"] * t["grad_accum"])
        Trainer(model=llama(shape), args=args, train_dataset=data, callbacks=[Timing()]).train()
    return clock.result("hf-trainer")


def lightning(shape, warmup, steps):
    import lightning as L

    t = shape["training"]
    clock = StepClock(warmup)

    class Module(L.LightningModule):
        def __init__(self):
            super().__init__()
            self.model = llama(shape)

        def training_step(self, batch, batch_idx):
            return self.model(input_ids=batch["input_ids"], labels=batch["labels"]).loss

        def configure_optimizers(self):
            return torch.optim.AdamW(self.parameters(), lr=t["lr"], weight_decay=t["weight_decay"])

    class Timing(L.Callback):
        def on_train_batch_start(self, trainer, module, batch, batch_idx):
            if batch_idx % t["grad_accum"] == 0:
                clock.begin()

        def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
            if (batch_idx + 1) % t["grad_accum"] == 0:
                clock.end()

    total = warmup + steps
    data = torch.utils.data.DataLoader(RandomTokens(shape, total * t["micro_batch"] * t["grad_accum"]),
                                       batch_size=t["micro_batch"])
    trainer = L.Trainer(max_steps=total, accelerator="gpu", devices=1,
                        precision="bf16-mixed" if t["precision"] == "bf16" else "32-true",
                        gradient_clip_val=t["grad_clip"], accumulate_grad_batches=t["grad_accum"], logger=False,
                        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
                        callbacks=[Timing()])
    trainer.fit(Module(), data)
    return clock.result("lightning")


def main():
    p = argparse.ArgumentParser(description="Trainer.train() and Trainer.fit() at a given Llama shape.")
    p.add_argument("shape", help="JSON file: {model: {...}, training: {...}} (see the docstring)")
    p.add_argument("--framework", choices=["hf-trainer", "lightning", "both"], default="both")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--steps", type=int, default=8)
    args = p.parse_args()
    with open(args.shape) as f:
        shape = json.load(f)
    runs = {"hf-trainer": hf_trainer, "lightning": lightning}
    for name in (runs if args.framework == "both" else [args.framework]):
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        print(json.dumps(runs[name](shape, args.warmup, args.steps)), flush=True)


if __name__ == "__main__":
    main()
