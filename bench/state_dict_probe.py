#!/usr/bin/env python3
"""How long `get_state_dict(model, optimizer)` takes on an FSDP2 model under each kernel mode a
round trip's process can be in, in one process, the modes interleaved so that drift of the
machine hits each alike:

  default        torch.use_deterministic_algorithms(False): the run's mode (`deterministic: false`)
  deterministic  torch.use_deterministic_algorithms(True), which also fills new tensors: the
                 mode the engines train the bitwise round trip in
  no fill        deterministic with torch.utils.deterministic.fill_uninitialized_memory off: what
                 the engine's save window sets

The model is transformers' LlamaForCausalLM with the pilot's layer count and head layout
(examples/h200-pilot/configs/llama-1b.yaml) at a small width (the call's time goes by the
number of parameters, not their size), fully_shard per decoder layer and the root, torch's AdamW
after two steps. Written from torch.distributed.checkpoint.state_dict's documentation; prints
one JSON line per mode, then one line with the call's parts in the run's mode: the model's
state dict (get_model_state_dict) and the optimizer's (get_optimizer_state_dict) timed apart,
and a fixed pure-Python loop beside them (`python_loop`), whose time says how fast this
process's CPU runs Python: get_state_dict's spread from process to process is to be read
against it. The line also names the CPU the main thread ran on and the steal time the
machine's /proc/stat counted during the rounds (a virtual CPU waiting for its host). Not part
of the suite: ci/gpu.sh runs it as the `get_state_dict probe (kernel modes)` stage
(STATE_DICT_PROBE=1).

    python3 bench/state_dict_probe.py [--rounds 40] [--hidden 256]
"""
import argparse
import json
import os
import statistics
import time

import torch
import torch.distributed as dist


def model(hidden, layers, device):
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=1024, hidden_size=hidden, intermediate_size=4 * hidden, num_hidden_layers=layers,
                         num_attention_heads=8, num_key_value_heads=2, max_position_embeddings=64, use_cache=False)
    m = LlamaForCausalLM(config).to(device)
    mesh = init_device_mesh(device.type, (1,))
    policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
    for layer in m.model.layers:
        fully_shard(layer, mesh=mesh, mp_policy=policy)
    fully_shard(m, mesh=mesh, mp_policy=policy)
    return m


def python_loop():
    """A fixed amount of pure-Python work (dict and attribute traffic, as get_state_dict's is)."""
    d = {}
    for i in range(20000):
        d["layer.%d.weight" % (i % 500)] = i
    return len(d)


def steal_ticks():
    with open("/proc/stat") as f:
        fields = f.readline().split()  # cpu user nice system idle iowait irq softirq steal ...
    return int(fields[8]) if len(fields) > 8 else None


def this_cpu():
    with open("/proc/self/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[36])  # field 39, "processor"


def timed(fn, *args):
    started = time.perf_counter()
    fn(*args)
    return time.perf_counter() - started


def set_mode(mode):
    torch.use_deterministic_algorithms(mode != "default")
    fill = getattr(torch.utils, "deterministic", None)
    if fill is not None and hasattr(fill, "fill_uninitialized_memory"):
        fill.fill_uninitialized_memory = mode == "deterministic"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=40)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--layers", type=int, default=16)
    args = p.parse_args()
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=os.environ.get("MASTER_PORT", "29517"), RANK="0", WORLD_SIZE="1")
    cuda = torch.cuda.is_available()
    device = torch.device("cuda", 0) if cuda else torch.device("cpu")
    dist.init_process_group("cpu:gloo,cuda:nccl" if cuda else "gloo")
    from torch.distributed.checkpoint.state_dict import get_state_dict

    m = model(args.hidden, args.layers, device)
    optimizer = torch.optim.AdamW(m.parameters(), lr=1e-4)
    for _ in range(2):
        x = torch.randint(0, 1024, (2, 64), device=device)
        m(input_ids=x, labels=x).loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    modes = ("default", "deterministic", "no fill")
    times = {mode: [] for mode in modes}
    get_state_dict(m, optimizer)  # the first call in the process, apart
    for _ in range(args.rounds):
        for mode in modes:
            set_mode(mode)
            started = time.perf_counter()
            get_state_dict(m, optimizer)
            times[mode].append(time.perf_counter() - started)
    set_mode("default")
    from torch.distributed.checkpoint.state_dict import get_model_state_dict, get_optimizer_state_dict

    parts = {"get_state_dict": [], "model": [], "optimizer": [], "python_loop": []}
    stolen, cpus = steal_ticks(), set()
    for _ in range(args.rounds):
        parts["get_state_dict"].append(timed(get_state_dict, m, optimizer))
        parts["model"].append(timed(get_model_state_dict, m))
        parts["optimizer"].append(timed(get_optimizer_state_dict, m, optimizer))
        parts["python_loop"].append(timed(python_loop))
        cpus.add(this_cpu())
    stolen = steal_ticks() - stolen if stolen is not None else None
    params = sum(1 for _ in m.parameters())
    for mode in modes:
        t = sorted(times[mode])
        print(json.dumps({"mode": mode, "parameters": params, "rounds": args.rounds, "median_s": statistics.median(t),
                          "min_s": t[0], "max_s": t[-1], "torch": torch.__version__}), flush=True)
    print(json.dumps({"parts": {k: statistics.median(v) for k, v in parts.items()}, "rounds": args.rounds,
                      "parameters": params, "main_thread_cpus": sorted(cpus), "steal_ticks": stolen,
                      "clock_ticks_per_s": os.sysconf("SC_CLK_TCK")}), flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
