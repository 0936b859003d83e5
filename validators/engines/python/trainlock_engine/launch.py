"""--nproc P: this process launches P rank processes of itself and waits.

Each rank gets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1 and a
free MASTER_PORT, shares this process's stdout (rank 0 writes the protocol) and process group
(a SIGKILL of the group ends every rank), and dies with this process (PR_SET_PDEATHSIG).

Failures are reported here, not by the ranks: a rank that fails writes its error to a file
and exits; when any rank exits non-zero the others are killed (a peer blocked in a collective
would otherwise wait for its timeout), and this process emits the one `error` event for the
root cause: a rank killed by a signal it did not send first, else the first rank's own error.
"""

import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

from . import bounded_json

CHILD_FLAG = "TRAINLOCK_ENGINE_RANK_PROCESS"
ERROR_DIR = "TRAINLOCK_ENGINE_ERROR_DIR"
MAX_RANK_ERROR_BYTES = 1 << 20  # a rank's error record: a kind, a message, a few members


def is_rank_process():
    return os.environ.get(CHILD_FLAG) == "1"


def write_rank_error(directory, rank, err):
    from .protocol import json_safe

    # NaN and infinities as null, as every event carries them: the launcher's reader refuses them.
    record = json_safe({"kind": err.kind, "message": err.message, "extra": err.extra, "time": time.time()})
    tmp = os.path.join(directory, "rank-%d.json.tmp" % rank)
    with open(tmp, "w") as f:
        json.dump(record, f, allow_nan=False)
    os.rename(tmp, os.path.join(directory, "rank-%d.json" % rank))


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent():
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def isolated_restart():
    """The interpreter options and script that start a rank as isolated as the coordinator
    started this process (isolated.py's docstring), keeping its pycache prefix. Here, not in
    isolated.py: isolated.py starts cli, which starts this module (no import cycle)."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "isolated.py")
    pycache = ["-X", "pycache_prefix=" + sys.pycache_prefix] if sys.pycache_prefix else ["-B"]
    return ["-I", "-S", "-u"] + pycache + [script]


def _interpreter():
    """How a rank starts: as isolated as this process when the coordinator started it
    isolated (isolated.py), else as `python -B -m trainlock_engine`."""
    if sys.flags.isolated and sys.flags.no_site:
        return [sys.executable] + isolated_restart()
    return [sys.executable, "-B", "-m", "trainlock_engine"]


def _spawn(argv, nproc, port, error_dir):
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    procs = []
    for rank in range(nproc):
        env = dict(os.environ)
        env.update({CHILD_FLAG: "1", ERROR_DIR: error_dir, "RANK": str(rank), "WORLD_SIZE": str(nproc),
                    "LOCAL_RANK": str(rank), "LOCAL_WORLD_SIZE": str(nproc), "MASTER_ADDR": "127.0.0.1",
                    "MASTER_PORT": str(port), "PYTHONPATH": package_parent + os.pathsep + env.get("PYTHONPATH", "")})
        procs.append(subprocess.Popen(_interpreter() + argv, env=env, preexec_fn=_die_with_parent))
    return procs


def _kill(procs):
    for p in procs:
        if p.poll() is None:
            p.kill()
    for p in procs:
        p.wait()


def run_ranks(opts, argv):
    error_dir = tempfile.mkdtemp(prefix="trainlock-engine-errors-")
    try:
        procs = _spawn(argv, opts.nproc, free_port(), error_dir)
        signal.signal(signal.SIGTERM, lambda *_: (_kill(procs), os._exit(143)))
        while True:
            codes = [p.poll() for p in procs]
            if any(c not in (None, 0) for c in codes):
                _kill(procs)
                return _report(opts, codes, error_dir)
            if all(c == 0 for c in codes):
                return 0
            time.sleep(0.05)
    finally:
        shutil.rmtree(error_dir, ignore_errors=True)


def _rank_errors(error_dir):
    """[(rank, record)] from the error reports the ranks left, oldest first. A rank process is
    untrusted like any other: a report that is too large, not JSON within bounded_json's
    limits, or not an object is passed over (the rank's exit code still counts)."""
    out = []
    for name in os.listdir(error_dir):
        if name.startswith("rank-") and name.endswith(".json") and name[5:-5].isdigit():
            try:
                with open(os.path.join(error_dir, name), "rb") as f:
                    raw = f.read(MAX_RANK_ERROR_BYTES + 1)
                record = bounded_json.loads(raw) if len(raw) <= MAX_RANK_ERROR_BYTES else None
            except (OSError, ValueError):
                continue
            if _well_formed(record):
                out.append((int(name[5:-5]), record))
    return sorted(out, key=lambda item: item[1].get("time", 0))


def _well_formed(record):
    """A record write_rank_error could have written: a known kind, a message, a time, extras."""
    from .protocol import EXIT_CODES

    return (isinstance(record, dict) and record.get("kind") in EXIT_CODES and isinstance(record.get("message"), str)
            and isinstance(record.get("time", 0), (int, float)) and not isinstance(record.get("time", 0), bool)
            and isinstance(record.get("extra", {}), dict) and all(isinstance(k, str) for k in record.get("extra", {})))


def _report(opts, codes, error_dir):
    """codes: each rank's exit status when the first failure was seen (None: still running,
    then killed here)."""
    from .protocol import Emitter, EngineError

    signalled = [(r, c) for r, c in enumerate(codes) if c is not None and c < 0]
    errors = _rank_errors(error_dir)
    if signalled:
        rank, code = signalled[0]
        err = EngineError("training", "rank %d of %d was killed by signal %d" % (rank, opts.nproc, -code))
    elif errors:
        rank, record = errors[0]
        err = EngineError(record["kind"], "rank %d: %s" % (rank, record["message"]), **record.get("extra", {}))
    else:
        rank, code = next((r, c) for r, c in enumerate(codes) if c not in (None, 0))
        err = EngineError("training", "rank %d of %d exited with code %d" % (rank, opts.nproc, code))
    Emitter(enabled=True).error(err)
    return err.exit_code
