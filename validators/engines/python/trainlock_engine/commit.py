"""When a checkpoint counts: the commit marker.

A step directory (`<root>/step-00000004`) is committed only once the framework's save has
returned (every rank) and `trainlock-commit.json` ({step, files: [{path, block_sha256, size}]},
every other file of the directory, hashed after the save) was written atomically: temporary
file, fsync, rename, fsync of the directory. A save killed in flight leaves no marker, and the
restore skips that directory (reported as `skipped_uncommitted`). A marker whose files do not
verify (changed, missing, or a file it does not list) is refused: the restore fails with kind
`checkpoint` rather than fall back to an older one or load the damaged one. Markers are
hostile input: read bounded, paths relative and inside the directory.

A file's `block_sha256` is the SHA-256 of the concatenated SHA-256 digests of its 64 MiB
blocks, the blocks hashed on several threads: a pilot's DCP shard is one 16 GB file per rank,
which one thread hashes in about 8 s, at every commit and every restore.
"""

import concurrent.futures
import hashlib
import json
import os
import re
import shutil

from . import bounded_json
from .protocol import EngineError

MARKER = "trainlock-commit.json"
MAX_MARKER_BYTES = 16 << 20
STEP_DIR = re.compile(r"^step-(\d{8})$")


def step_dir(root, step):
    return os.path.join(root, "step-%08d" % step)


BLOCK_BYTES = 64 << 20
HASH_THREADS = max(1, min(8, os.cpu_count() or 1))


def _hash_block(fd, offset, length):
    digest = hashlib.sha256()
    while length > 0:
        chunk = os.pread(fd, min(length, 8 << 20), offset)
        if not chunk:
            break  # the file shrank while it was hashed: the size check refuses it
        digest.update(chunk)  # hashlib lets go of the GIL for large buffers
        offset += len(chunk)
        length -= len(chunk)
    return digest.digest()


def _hash(path):
    """(block_sha256, size) of a file (see the module's docstring)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        size = os.fstat(fd).st_size
        offsets = range(0, size, BLOCK_BYTES)
        with concurrent.futures.ThreadPoolExecutor(HASH_THREADS) as pool:
            blocks = list(pool.map(lambda o: _hash_block(fd, o, min(BLOCK_BYTES, size - o)), offsets))
    finally:
        os.close(fd)
    return hashlib.sha256(b"".join(blocks)).hexdigest(), size


def _listing(directory):
    """Relative paths of the directory's regular files, the marker and temporaries excepted.
    A symbolic link anywhere below it (to a file or a directory) is refused: its bytes live
    outside the checkpoint, so no marker may cover them and os.walk would not look inside."""
    out = []
    for base, dirs, files in os.walk(directory):
        dirs.sort()
        for name in dirs + files:
            if os.path.islink(os.path.join(base, name)):
                raise EngineError("checkpoint", "%s: a symbolic link in a checkpoint; it holds regular files only"
                                  % os.path.join(base, name))
        for name in sorted(files):
            rel = os.path.relpath(os.path.join(base, name), directory)
            if rel != MARKER and not rel.startswith(MARKER + "."):
                out.append(rel)
    return out


def _fsync_dir(path):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_marker(directory, step):
    """Hashes every file, fsyncs it, writes the marker atomically. Returns (files, bytes)."""
    files = []
    for rel in _listing(directory):
        path = os.path.join(directory, rel)
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        sha, size = _hash(path)
        files.append({"path": rel, "block_sha256": sha, "size": size})
    for base, _, _ in os.walk(directory):
        _fsync_dir(base)
    tmp = os.path.join(directory, MARKER + ".tmp")
    with open(tmp, "w") as f:
        json.dump({"step": step, "files": files}, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, os.path.join(directory, MARKER))
    _fsync_dir(directory)
    _fsync_dir(os.path.dirname(os.path.abspath(directory)))
    return files, sum(f["size"] for f in files)


def _read_marker(directory):
    path = os.path.join(directory, MARKER)
    try:
        doc = bounded_json.load_file(path, MAX_MARKER_BYTES)
        files = doc["files"]
        step = doc["step"]
        if not isinstance(step, int) or isinstance(step, bool) or not isinstance(files, list):
            raise ValueError("step or files of the wrong type")
        for f in files:
            rel = f["path"]
            if (not isinstance(rel, str) or os.path.isabs(rel) or os.path.normpath(rel) != rel
                    or rel.startswith("..") or not isinstance(f["block_sha256"], str) or not isinstance(f["size"], int)):
                raise ValueError("bad file entry %r" % (f,))
        return doc
    except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError) as e:
        raise EngineError("checkpoint", "%s: unreadable commit marker (%s)" % (path, e))


def verify(directory, step):
    """The marker's files, each re-hashed; raises kind `checkpoint` on any difference.
    Returns the total bytes."""
    doc = _read_marker(directory)
    if doc["step"] != step:
        raise EngineError("checkpoint", "%s: marker says step %d" % (directory, doc["step"]))
    listed = {f["path"]: f for f in doc["files"]}
    extra = sorted(set(_listing(directory)) - set(listed))
    if extra:
        raise EngineError("checkpoint", "%s: %s is not in the commit marker" % (directory, extra[0]))
    for rel, f in listed.items():
        path = os.path.join(directory, rel)
        if os.path.islink(path) or not os.path.isfile(path):
            raise EngineError("checkpoint", "%s: missing or not a regular file" % path)
        sha, size = _hash(path)
        if sha != f["block_sha256"] or size != f["size"]:
            raise EngineError("checkpoint", "%s: block sha256 %s (%d bytes), the commit marker says %s (%d bytes)" % (
                path, sha, size, f["block_sha256"], f["size"]))
    return sum(f["size"] for f in doc["files"])


def _step_dirs(root):
    try:
        names = os.listdir(root)
    except FileNotFoundError:
        return []
    out = []
    for name in names:
        m = STEP_DIR.match(name)
        if m and os.path.isdir(os.path.join(root, name)) and not os.path.islink(os.path.join(root, name)):
            out.append((int(m.group(1)), os.path.join(root, name)))
    return sorted(out, reverse=True)


def latest_committed(root):
    """(step, dir, bytes, skipped_uncommitted) of the newest committed checkpoint, or
    (None, None, 0, skipped) when there is none. Uncommitted directories newer than it are
    skipped; a committed one that does not verify is refused."""
    skipped = []
    for step, directory in _step_dirs(root):
        if not os.path.exists(os.path.join(directory, MARKER)):
            skipped.append(directory)
            continue
        return step, directory, verify(directory, step), skipped
    return None, None, 0, skipped


def newest_committed(root):
    """(step, dir, bytes, skipped_uncommitted) of the checkpoint a resume starts from; refuses
    (kind `checkpoint`) when there is none, naming the uncommitted directories it skipped."""
    step, directory, size, skipped = latest_committed(root)
    if step is None:
        raise EngineError("checkpoint", "no committed checkpoint under %s%s" % (
            root, " (uncommitted: %s)" % ", ".join(skipped) if skipped else ""))
    return step, directory, size, skipped


def prepare_dir(root, step):
    """A fresh, empty step directory (an earlier attempt at the same step is removed)."""
    directory = step_dir(root, step)
    if os.path.lexists(directory):
        shutil.rmtree(directory)
    os.makedirs(directory)
    return directory


def prune(root, keep_last):
    """Removes committed step directories beyond the newest keep_last (0 keeps all)."""
    if keep_last <= 0:
        return
    committed = [d for _, d in _step_dirs(root) if os.path.exists(os.path.join(d, MARKER))]
    for directory in committed[keep_last:]:
        shutil.rmtree(directory, ignore_errors=True)
