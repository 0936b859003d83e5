"""--nproc P: this process launches P rank processes of itself and waits.

Each rank gets RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1 and a
free MASTER_PORT, shares this process's stdout (rank 0 writes the protocol) and process group
(a SIGKILL of the group ends every rank), and dies with this process (PR_SET_PDEATHSIG). When
a rank exits non-zero the others are killed; when that rank was not rank 0, or rank 0 died
by a signal, this process reports the failure itself (rank 0 can no longer).
"""

import ctypes
import os
import signal
import socket
import subprocess
import sys
import time

CHILD_FLAG = "TRAINLOCK_ENGINE_RANK_PROCESS"


def is_rank_process():
    return os.environ.get(CHILD_FLAG) == "1"


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent():
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def _spawn(argv, nproc, port):
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    procs = []
    for rank in range(nproc):
        env = dict(os.environ)
        env.update({CHILD_FLAG: "1", "RANK": str(rank), "WORLD_SIZE": str(nproc), "LOCAL_RANK": str(rank),
                    "LOCAL_WORLD_SIZE": str(nproc), "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
                    "PYTHONPATH": package_parent + os.pathsep + env.get("PYTHONPATH", "")})
        procs.append(subprocess.Popen([sys.executable, "-m", "trainlock_engine"] + argv, env=env,
                                      preexec_fn=_die_with_parent))
    return procs


def _kill(procs):
    for p in procs:
        if p.poll() is None:
            p.kill()
    for p in procs:
        p.wait()


def run_ranks(opts, argv):
    procs = _spawn(argv, opts.nproc, free_port())
    signal.signal(signal.SIGTERM, lambda *_: (_kill(procs), os._exit(143)))
    while True:
        codes = [p.poll() for p in procs]
        failed = [(r, c) for r, c in enumerate(codes) if c not in (None, 0)]
        if failed:
            rank, code = failed[0]
            _kill(procs)
            if rank != 0 or code < 0:
                return _report(opts, rank, code)
            return code
        if all(c == 0 for c in codes):
            return 0
        time.sleep(0.1)


def _report(opts, rank, code):
    from .protocol import Emitter, EngineError

    how = "was killed by signal %d" % -code if code < 0 else "exited with code %d" % code
    err = EngineError("training", "rank %d of %d %s" % (rank, opts.nproc, how))
    Emitter(enabled=True).error(err)
    return err.exit_code
