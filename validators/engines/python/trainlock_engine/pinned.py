"""Point-of-use verification of the files the lock pins (weights, token shards).

A pinned file is opened once (without blocking, so a FIFO is refused rather than waited on),
must be a regular file of the pinned size, and is mapped privately; the mapped bytes are
hashed before anything reads them and the mapping is what the engine then reads, so a file
replaced after the open (by rename, as downloads and syncs replace) never reaches training. A
file rewritten in place while the run reads it can: Linux shows a private mapping's untouched
pages as the file is now. Copying every byte would close that at twice the memory of a model
(and is no option for a dataset); pinned storage is expected to stay unwritten during a run, as
the native engine's token_data.cc says too. Each verified file is reported as an `artifact`
event; a mismatch is an `integrity` error naming the file.
"""

import hashlib
import mmap
import os
import stat

from .protocol import EngineError

CHUNK = 8 << 20


def open_verified(entry, emit):
    """The file's bytes as a private mapping (a buffer), after its SHA-256 matched."""
    path = entry["path"]
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise EngineError("integrity", "%s: %s" % (path, e.strerror or e))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise EngineError("integrity", "%s: not a regular file" % path)
        if st.st_size != entry["size"]:
            raise EngineError("integrity", "%s: %d bytes, the lock pins %d" % (path, st.st_size, entry["size"]))
        data = mmap.mmap(fd, st.st_size, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE) if st.st_size else b""
    finally:
        os.close(fd)
    digest = hashlib.sha256()
    view = memoryview(data)
    for start in range(0, len(view), CHUNK):
        digest.update(view[start:start + CHUNK])
    view.release()
    actual = digest.hexdigest()
    if actual != entry["sha256"]:
        raise EngineError("integrity", "%s: sha256 %s, the lock pins %s" % (path, actual, entry["sha256"]))
    emit("artifact", path=path, sha256=actual, bytes=st.st_size)
    return data
