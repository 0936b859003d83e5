"""The engines by protocol name. Each is a module with

    prepare(ctx)  import the framework, refuse what it cannot run (EngineError kind
                  `unsupported`); runs before `hello` so hello's versions are the framework's
    run(ctx)      do ctx.opts.role (train or portable), emitting events through ctx.emit

Engines built on the plain round-trip driver (roundtrip.py) implement its Engine class and
make run() call roundtrip.run(ctx, TheirEngine).
"""

import importlib

MODULES = {
    "ddp": "ddp",
    "fsdp2": "fsdp2",
    "hf-trainer": "hf_trainer",
    "lightning": "lightning",
    "deepspeed": "deepspeed",
}


def _present(module):
    import importlib.util

    return importlib.util.find_spec(__name__ + "." + module) is not None


NAMES = tuple(name for name, module in MODULES.items() if _present(module))


def load(name):
    return importlib.import_module(__name__ + "." + MODULES[name])
