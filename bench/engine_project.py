#!/usr/bin/env python3
"""A copy of an example project whose lock names another round-trip engine, for ci/gpu.sh.

    python3 bench/engine_project.py SRC DEST --engine fsdp2 [--parallelism fsdp]

The copy is what an image holds (the lock and the training config, no manifest): its lock gets
`[validate] engine` and `engine-sha256` (the SHA-256 of the `sha256sum` listing of this
checkout's validators/engines/python/trainlock_engine, what `trainlock lock` pins), and with
--parallelism the config's `parallelism` and the lock's `config-sha256` follow. Re-locking needs
the registries and the Hub, which the GPU machine cannot reach; the edit is the same field
change `trainlock lock` would make for `[validate] engine = "..."`.
"""
import argparse
import hashlib
import pathlib
import re
import shutil
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def engine_sha256():
    package = ROOT / "validators/engines/python"
    files = sorted(p.relative_to(package).as_posix()
                   for p in (package / "trainlock_engine").rglob("*.py")
                   if "__pycache__" not in p.parts)
    listing = "".join("%s  %s\n" % (hashlib.sha256((package / f).read_bytes()).hexdigest(), f)
                      for f in files)
    return hashlib.sha256(listing.encode()).hexdigest()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("src")
    p.add_argument("dest")
    p.add_argument("--engine", required=True)
    p.add_argument("--parallelism")
    p.add_argument("--torch", help="the torch version the lock pins (this machine's, as re-locking would)")
    a = p.parse_args()
    src, dest = pathlib.Path(a.src), pathlib.Path(a.dest)
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns(".trainlock"))
    (dest / "trainlock.toml").unlink()
    lock = (dest / "trainlock.lock").read_text()
    config_rel = re.search(r"""^config = ['"]([^'"]+)['"]""", lock, re.M).group(1)
    config = dest / config_rel
    if a.parallelism:
        text = re.sub(r"(?m)^(\s*parallelism:\s*)\S+", r"\g<1>" + a.parallelism,
                      config.read_text())
        config.write_text(text)
        lock = re.sub(r"""(?m)^config-sha256 = ['"][0-9a-f]{64}['"]""",
                      "config-sha256 = '%s'" % hashlib.sha256(config.read_bytes()).hexdigest(),
                      lock)
    lock = lock.replace("[validate]\n", '[validate]\nengine = "%s"\nengine-sha256 = "%s"\n'
                        % (a.engine, engine_sha256()), 1)
    if a.torch:
        lock = re.sub(r"""(?m)^torch = ['\"][^'\"]*['\"]""", 'torch = "%s"' % a.torch, lock)
    (dest / "trainlock.lock").write_text(lock)
    print(dest)


if __name__ == "__main__":
    sys.exit(main())
