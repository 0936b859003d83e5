"""What verifying the image's Python costs (src/checks/python_files.h) on the machine it runs on.

- `trainlock-validate record-python-files` over PYTHON, three times: the first reads the trees
  from disk, the later ones stand for the validator's walk before a validation (the same walk
  and the same hashes, from the page cache as on a node that just ran the image);
- the entries, files and bytes recorded, and the largest files;
- what the engine's private pycache prefix costs `import torch` (and transformers when there):
  a cold prefix (the run's first Python process compiles), a warm prefix (the round trip's later
  processes), and the tree's own __pycache__ as an interpreter without the prefix reads it.

Usage: python3 bench/python_files_cost.py VALIDATOR [PYTHON] [OUT_DIR]
"""

import json
import os
import subprocess
import sys
import tempfile
import time


def timed(argv):
    start = time.perf_counter()
    run = subprocess.run(argv, capture_output=True, text=True)
    return time.perf_counter() - start, run


def main():
    validator = sys.argv[1]
    python = sys.argv[2] if len(sys.argv) > 2 else sys.executable
    out_dir = sys.argv[3] if len(sys.argv) > 3 else tempfile.mkdtemp()
    record = os.path.join(out_dir, "python-files.json")
    for i in range(3):
        seconds, run = timed([validator, "record-python-files", "--python", python, "--out", record])
        print("record %d: %.2f s: %s" % (i + 1, seconds, (run.stdout + run.stderr).strip()))
    files = json.load(open(record))["files"]
    sized = [f for f in files if f["kind"] == "file"]
    print("entries %d, files %d, bytes %.2f GiB, record %.1f MiB" % (
        len(files), len(sized), sum(f["size"] for f in sized) / 2**30, os.path.getsize(record) / 2**20))
    for f in sorted(sized, key=lambda f: -f["size"])[:5]:
        print("  %8.1f MiB %s" % (f["size"] / 2**20, f["path"]))
    modules = "import torch"
    if subprocess.run([python, "-c", "import transformers"], capture_output=True).returncode == 0:
        modules += ", transformers"
    with tempfile.TemporaryDirectory() as prefix:
        for label, options in [("tree __pycache__ (no prefix)", ["-I", "-B"]),
                               ("cold pycache prefix", ["-I", "-X", "pycache_prefix=" + prefix]),
                               ("warm pycache prefix", ["-I", "-X", "pycache_prefix=" + prefix]),
                               ("tree __pycache__ again", ["-I", "-B"])]:
            seconds, run = timed([python, *options, "-c", modules])
            print("%s: %s %.2f s%s" % (modules, label, seconds, "" if run.returncode == 0 else " FAILED " + run.stderr[-300:]))


if __name__ == "__main__":
    main()
