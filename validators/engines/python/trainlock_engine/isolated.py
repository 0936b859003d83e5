"""The isolated start of an engine process: `python3 -I -S -B -u .../trainlock_engine/isolated.py ARGS`.

The coordinator starts every Python engine this way (validators/coordinator/engine_command.cc,
docs/validate.md "Isolation"). `-I` leaves out the working directory, the script's directory,
PYTHONPATH, PYTHONHOME, PYTHONUSERBASE and the user's site-packages; `-S` runs no site module,
so no `.pth` file anywhere is executed or followed. This file, part of the verified package,
then sets sys.path to exactly: the verified package's parent directory, the interpreter's
standard library (what sys.path holds under -I -S), and the interpreter's own site-packages
(dist-packages on Debian) directories, those of its venv when it is one (pyvenv.cfg beside or
above the executable) and the base interpreter's when the venv includes them. No `.pth` file
is processed: torch, numpy and the frameworks import from those directories without one.
launch.py starts the ranks of `--nproc` the same way (RESTART).
"""

import os
import sys

ENGINE_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESTART = ["-I", "-S", "-B", "-u", os.path.abspath(__file__)]


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


def main():
    standard = [p for p in sys.path if p and os.path.isabs(p)]
    sys.path[:] = [ENGINE_PARENT] + standard + [d for d in site_directories() if d not in standard]
    sys.argv[0] = "trainlock_engine"
    from trainlock_engine.cli import main as engine_main

    return engine_main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
