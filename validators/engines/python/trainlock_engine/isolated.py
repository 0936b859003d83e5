"""The isolated start of an engine process:
`python3 -I -S -u -X pycache_prefix=WORK/pycache .../trainlock_engine/isolated.py ARGS`.

The coordinator starts every Python engine this way (validators/coordinator/engine_command.cc,
docs/validate.md "Isolation"). `-I` leaves out the working directory, the script's directory,
PYTHONPATH, PYTHONHOME, PYTHONUSERBASE and the user's site-packages; `-S` runs no site module,
so no `.pth` file anywhere is executed or followed; the pycache prefix keeps bytecode in the
run's own directory, so no `__pycache__` of the interpreter's trees is ever read. This file,
part of the verified package, then sets sys.path to exactly: the verified package's parent
directory, then the path the image recorded and the validator verified file by file
(TRAINLOCK_ENGINE_SYS_PATH, set by the coordinator inside an image: src/checks/python_files.h)
or, outside an image, the interpreter's standard library (what sys.path holds under -I -S) and
its own site-packages (dist-packages on Debian) directories, those of its venv when it is one
(pyvenv.cfg beside or above the executable) and the base interpreter's when the venv includes
them. No `.pth` file is processed: torch, numpy and the frameworks import from those
directories without one. `--print-sys-path` prints that path (after the package's own
directory) as one JSON list: what the image build records. launch.py starts the ranks of
`--nproc` the same way (launch.isolated_restart).
"""

import os
import sys

ENGINE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SYS_PATH_VARIABLE = "TRAINLOCK_ENGINE_SYS_PATH"


def _venv():
    """(venv directory, includes the base's site-packages) or (None, True)."""
    exe_dir = os.path.dirname(sys.executable)
    for d in (exe_dir, os.path.dirname(exe_dir)):
        cfg = os.path.join(d, "pyvenv.cfg")
        if os.path.isfile(cfg):
            include = False
            with open(cfg) as f:
                for line in f:
                    key, _, value = line.partition("=")
                    if key.strip() == "include-system-site-packages":
                        include = value.strip().lower() == "true"
            return d, include
    return None, True


def site_directories():
    import site  # under -S importing site runs nothing: getsitepackages only computes paths

    venv, include_base = _venv()
    version = "python%d.%d" % sys.version_info[:2]
    found = [os.path.join(venv, lib, version, "site-packages") for lib in ("lib", "lib64")] if venv else []
    if include_base:
        found += site.getsitepackages([sys.base_prefix])
    return [d for d in dict.fromkeys(found) if os.path.isdir(d)]


def engine_path():
    """The engine's sys.path after its own package's directory."""
    recorded = os.environ.get(SYS_PATH_VARIABLE)
    if recorded is not None:
        return [p for p in recorded.split(os.pathsep) if p]
    standard = [p for p in sys.path if p and os.path.isabs(p)]
    return standard + [d for d in site_directories() if d not in standard]


def main():
    if sys.argv[1:] == ["--print-sys-path"]:
        import json

        print(json.dumps(engine_path()))
        return 0
    sys.path[:] = [ENGINE_PARENT] + engine_path()
    sys.argv[0] = "trainlock_engine"
    from trainlock_engine.cli import main as engine_main

    return engine_main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
