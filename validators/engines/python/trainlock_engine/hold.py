"""--hold-save-at POINT: the save of the last --save-at stopped at one point of its upload, so
the coordinator's SIGKILL lands exactly there and never races the write (docs/validate.md,
"Kill during a save"). At the point the process says `checkpoint` phase "held" (rank 0) and
sleeps until it is killed; every other rank that reaches a point sleeps too.

The points (protocol_generated.SAVE_POINTS): before-files (the step directory made, nothing in
it), mid-file (part of the first data file's bytes written), after-files (every data file
written, the framework's metadata not yet), after-metadata (the framework's checkpoint and the
driver's files complete, the commit marker not yet), after-commit (the marker written, before
the `committed` event). The driver holds at the first, fourth and fifth; an engine whose
`save_points` names mid-file and after-files holds there inside its save (engines/fsdp2.py,
through cut_data_files and SaveHold.at).
"""

import contextlib
import threading
import time

from .protocol_generated import SAVE_POINTS  # noqa: F401 - the choices cli.py offers

INSIDE_SAVE = ("mid-file", "after-files")  # the points an engine's own save must reach


class SaveHold:
    """Where one save stops: at(point) returns at once for every other point."""

    def __init__(self, emit, point, step, pause=None):
        self.emit, self.point, self.step = emit, point, step
        self._pause = pause or _forever
        self._lock = threading.Lock()
        self._said = False

    def at(self, point):
        if point != self.point:
            return
        with self._lock:
            first, self._said = not self._said, True
        if first:
            self.emit("checkpoint", phase="held", step=self.step, point=point)
        self._pause()


def _forever():
    while True:
        time.sleep(3600)


class _CutStream:
    """A data file's stream whose first write stops half way: half its bytes reach the file
    (flushed), then the hold; everything else is the wrapped stream's."""

    def __init__(self, stream, hold, cut):
        self._stream, self._hold, self._cut = stream, hold, cut

    def write(self, data):
        if self._cut.is_set() or memoryview(data).nbytes < 2:
            return self._stream.write(data)
        self._cut.set()
        view = memoryview(data)
        if view.ndim != 1 or view.format != "B":
            view = view.cast("B")  # a typed buffer: cut it in bytes
        self._stream.write(view[:len(view) // 2])
        self._stream.flush()
        self._hold.at("mid-file")
        return self._stream.write(view[len(view) // 2:])

    def __getattr__(self, name):
        return getattr(self._stream, name)


class CutFileSystem:
    """A storage writer's file system (torch.distributed.checkpoint's FileSystem: create_stream,
    concat_path, ...) whose first data file (DATA_SUFFIX) is cut by a mid-file hold; the
    metadata and every other call are the wrapped file system's."""

    DATA_SUFFIX = ".distcp"

    def __init__(self, fs, hold):
        self._fs, self._hold, self._cut = fs, hold, threading.Event()

    @contextlib.contextmanager
    def create_stream(self, path, mode):
        with self._fs.create_stream(path, mode) as stream:
            if "w" in mode and str(path).endswith(self.DATA_SUFFIX):
                yield _CutStream(stream, self._hold, self._cut)
            else:
                yield stream

    def __getattr__(self, name):
        return getattr(self._fs, name)
