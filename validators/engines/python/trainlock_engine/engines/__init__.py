"""The engines by protocol name. Each is a module with

    prepare(ctx)  import the framework, refuse what it cannot run (EngineError kind
                  `unsupported`); runs before `hello` so hello's versions are the framework's
    run(ctx)      do ctx.opts.role (train or portable), emitting events through ctx.emit

Engines built on the plain round-trip driver (roundtrip.py) implement its Engine class and
make run() call roundtrip.run(ctx, TheirEngine).
"""

import importlib
import pkgutil

# The engine list is written once, in trainlock's C++ (src/project/round_trip_engines.cc, with
# what each can do); here an engine is its module: `hf-trainer` is hf_trainer.py. Modules whose
# name starts with "_" are shared pieces. RoundTripEngines.EveryPythonEngineIsAModuleOfThePackage
# checks the two against each other.
MODULES = {m.name.replace("_", "-"): m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")}
NAMES = tuple(sorted(MODULES))


def load(name):
    return importlib.import_module(__name__ + "." + MODULES[name])
