#!/usr/bin/env python3
"""A copy of an example project whose manifest names another round-trip engine, relocked, for
ci/gpu.sh.

    python3 bench/engine_project.py SRC DEST --engine fsdp2 [--parallelism fsdp] [--torch V]
                                    [--trainlock PATH]

The copy's trainlock.toml gets `[validate] engine` (and with --torch every target's `torch`,
this machine's, as re-locking here would), with --parallelism its training config's
`parallelism`; then `trainlock lock DEST --offline` re-pins the lock from the existing one (the
engine files' `engine-sha256`, the config's hash), so the lock re-derives from the manifest as
`validate` requires (a hand-edited lock is refused before any work). The GPU machine reaches no
registry or Hub: --offline needs none.
"""
import argparse
import os
import pathlib
import re
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def set_validate_engine(manifest, engine):
    """`[validate] engine = ENGINE` in the manifest's text, replacing one already there."""
    if re.search(r"(?m)^engine\s*=", manifest):
        return re.sub(r"""(?m)^engine\s*=\s*['"][^'"]*['"]""", 'engine = "%s"' % engine, manifest)
    if "[validate]\n" not in manifest:
        manifest += "\n[validate]\n"
    return manifest.replace("[validate]\n", '[validate]\nengine = "%s"\n' % engine, 1)


def copy_op_sources(manifest, src, dest):
    """Each custom op's `source` directory (relative to the project, often `../ops`) copied to
    the same place relative to DEST, so that the copy locks as the example does."""
    for rel in re.findall(r"""(?m)^\s*source\s*=\s*['"](\.[^'"]*)['"]""", manifest):
        there, here = (src / rel).resolve(), (dest / rel).resolve()
        if there.is_dir() and not here.exists():
            shutil.copytree(there, here, ignore=shutil.ignore_patterns("build*", "__pycache__"))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("src")
    p.add_argument("dest")
    p.add_argument("--engine", required=True)
    p.add_argument("--parallelism")
    p.add_argument("--torch", help="the torch version the lock pins (this machine's, as re-locking would)")
    p.add_argument("--trainlock", default=str(ROOT / "build-gpu/bin/trainlock"))
    a = p.parse_args()
    src, dest = pathlib.Path(a.src), pathlib.Path(a.dest)
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns(".trainlock"))
    manifest_path = dest / "trainlock.toml"
    manifest = set_validate_engine(manifest_path.read_text(), a.engine)
    copy_op_sources(manifest, src, dest)
    if a.torch:
        manifest = re.sub(r"""(?m)^torch\s*=\s*['"][^'"]*['"]""", 'torch = "%s"' % a.torch, manifest)
    manifest_path.write_text(manifest)
    if a.parallelism:
        config_rel = re.search(r"""(?m)^config\s*=\s*['"]([^'"]+)['"]""", manifest).group(1)
        config = dest / config_rel
        config.write_text(re.sub(r"(?m)^(\s*parallelism:\s*)\S+", r"\g<1>" + a.parallelism,
                                 config.read_text()))
    trainlock = a.trainlock if os.path.exists(a.trainlock) else "trainlock"
    # --skip-python keeps a closure the example did not resolve (the pilots pin none) unresolved.
    run = subprocess.run([trainlock, "lock", str(dest), "--offline", "--skip-python", "-q"],
                         capture_output=True, text=True)
    if run.returncode != 0:
        sys.stderr.write(run.stdout + run.stderr)
        return run.returncode
    print(dest)
    return 0


if __name__ == "__main__":
    sys.exit(main())
