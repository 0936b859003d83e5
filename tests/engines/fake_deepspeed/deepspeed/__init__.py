"""A FAKE, minimal `deepspeed` for trainlock's protocol test of the deepspeed engine: NOT
DeepSpeed. Put on PYTHONPATH only by tests/engines/test_deepspeed_engine.py, it implements
exactly the API surface trainlock_engine/engines/deepspeed.py uses, with DeepSpeed's
documented semantics over a plain torch optimizer, in one process:

    initialize(model, model_parameters, config, lr_scheduler=callable) ->
        (engine, optimizer, None, lr_scheduler); the optimizer is torch's AdamW built from
        config["optimizer"]["params"]
    engine(...), train(), eval(), module, optimizer, backward(loss) (scaled by
    1 / gradient_accumulation_steps), step() (optimizer, scheduler, zero_grad at the
    accumulation boundary, after clipping to config["gradient_clipping"]),
    is_gradient_accumulation_boundary(), gradient_accumulation_steps(),
    save_checkpoint(save_dir, tag, client_state) (torch.save files under save_dir/tag, then
    save_dir/latest), load_checkpoint(load_dir, tag, load_optimizer_states,
    load_lr_scheduler_states) -> (path, client_state) or (None, None)

A green test with it proves trainlock's engine speaks trainlock.engine/1 and round-trips
through this API; it proves nothing about DeepSpeed itself.
"""

import os

import torch

__version__ = "0.0.0+trainlock-protocol-fake"
TRAINLOCK_PROTOCOL_FAKE = True

MODEL_FILE = "mp_rank_00_model_states.pt"
OPTIM_FILE = "zero_pp_rank_0_mp_rank_00_optim_states.pt"


class FakeEngine(torch.nn.Module):
    def __init__(self, model, optimizer, scheduler, config):
        super().__init__()
        self.module = model
        self.optimizer = optimizer
        self.lr_scheduler = scheduler
        self.config = config
        self.micro_steps = 0
        self.global_steps = 0

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    def gradient_accumulation_steps(self):
        return self.config["gradient_accumulation_steps"]

    def is_gradient_accumulation_boundary(self):
        return (self.micro_steps + 1) % self.gradient_accumulation_steps() == 0

    def backward(self, loss):
        (loss / self.gradient_accumulation_steps()).backward()

    def step(self):
        if self.is_gradient_accumulation_boundary():
            clip = self.config.get("gradient_clipping", 0)
            if clip > 0:
                torch.nn.utils.clip_grad_norm_(self.module.parameters(), clip)
            self.optimizer.step()
            if self.lr_scheduler is not None:
                self.lr_scheduler.step()
            self.optimizer.zero_grad(set_to_none=True)
            self.global_steps += 1
        self.micro_steps += 1

    def save_checkpoint(self, save_dir, tag, client_state=None):
        path = os.path.join(save_dir, str(tag))
        os.makedirs(path, exist_ok=True)
        torch.save({"module": self.module.state_dict(), "lr_scheduler": self.lr_scheduler.state_dict(),
                    "global_steps": self.global_steps, "micro_steps": self.micro_steps,
                    "client_state": dict(client_state or {})}, os.path.join(path, MODEL_FILE))
        torch.save({"optimizer_state_dict": self.optimizer.state_dict()}, os.path.join(path, OPTIM_FILE))
        with open(os.path.join(save_dir, "latest"), "w") as f:
            f.write(str(tag))
        return True

    def load_checkpoint(self, load_dir, tag=None, load_optimizer_states=True, load_lr_scheduler_states=True):
        if tag is None:
            with open(os.path.join(load_dir, "latest")) as f:
                tag = f.read().strip()
        path = os.path.join(load_dir, str(tag))
        if not os.path.exists(os.path.join(path, MODEL_FILE)):
            return None, None
        state = torch.load(os.path.join(path, MODEL_FILE), map_location="cpu")
        self.module.load_state_dict(state["module"])
        if load_lr_scheduler_states:
            self.lr_scheduler.load_state_dict(state["lr_scheduler"])
        if load_optimizer_states:
            self.optimizer.load_state_dict(torch.load(os.path.join(path, OPTIM_FILE), map_location="cpu")["optimizer_state_dict"])
        self.global_steps, self.micro_steps = state["global_steps"], state["micro_steps"]
        return path, state["client_state"]


def initialize(model=None, model_parameters=None, config=None, lr_scheduler=None, optimizer=None, **_):
    if config.get("zero_optimization", {}).get("stage") != 1:
        raise ValueError("the fake implements ZeRO stage 1's single-process semantics only")
    if optimizer is None:
        params = config["optimizer"]["params"]
        optimizer = torch.optim.AdamW(list(model_parameters), lr=params["lr"], betas=tuple(params["betas"]),
                                      eps=params["eps"], weight_decay=params["weight_decay"])
    scheduler = lr_scheduler(optimizer) if callable(lr_scheduler) else lr_scheduler
    engine = FakeEngine(model, optimizer, scheduler, config)
    return engine, optimizer, None, scheduler
