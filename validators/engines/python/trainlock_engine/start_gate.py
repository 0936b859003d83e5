"""--start-after FILE: a process started ahead of its turn waits here, its interpreter and the
framework's imports done and no device touched yet, until the coordinator creates FILE.

The coordinator starts the round trip's next process while the one before it still trains
(its imports cost 8-10 s of every process: bench/results/2026-12-03-h200-verdict-time) and
creates the file when that process has ended. Until then this process has not opened the GPU,
read the spec or a checkpoint, so nothing it does can disturb the running one or see a state
that process has not finished. It stops waiting, and fails, if the process that started it is
gone (nothing would ever create the file).
"""

import os
import time

from .protocol import EngineError

POLL_SECONDS = 0.02


def wait(path):
    parent = os.getppid()
    while not os.path.exists(path):
        if os.getppid() != parent:
            raise EngineError("input", "--start-after %s: the process that started this one ended before releasing it" % path)
        time.sleep(POLL_SECONDS)
