"""How fast can a training process put its final state (a pilot's is 14.8 GB) into a file the
coordinator reads? Issue #60's verdict time: the native engine's writer moved about 2.3 GB/s
whether through pwrite or a shared mapping (bench/results/2026-12-07-native-verdict). This probe
times each leg on the GPU machine, for a file in /dev/shm and one on the work directory's disk:

  d2h        device -> one pinned buffer (one copy)
  pwrite-1   pinned -> file with os.pwrite, one thread
  pwrite-8   the same from 8 threads (the file system's inode lock serializes them)
  files-8    8 threads, each writing its own file (one inode each: no shared lock)
  mmap-8     pinned -> the file's shared mapping, 8 threads copying (page faults in parallel)
  register   cudaHostRegister of the file's shared mapping (pins its pages, faulting them in)
  d2h-mapped device -> the registered mapping directly (no bounce through a pinned buffer)
  falloc     posix_fallocate of the whole file (a tmpfs allocates and zeroes its pages here, so a
             writer that knows its size early can pay this off the critical path)
  *-pre      the same legs into a file allocated beforehand (the mapping populated: MAP_POPULATE)

Usage: python3 bench/state_write_probe.py [GIB] [DIR ...]   (default 8 GiB, /dev/shm and .)
Prints one line per leg and directory: seconds and GB/s.
"""

import mmap
import os
import sys
import threading
import time

import torch

GIB = float(sys.argv[1]) if len(sys.argv) > 1 else 8.0
DIRS = sys.argv[2:] or ["/dev/shm", "."]
SIZE = int(GIB * (1 << 30)) // (64 << 20) * (64 << 20)
SLICE = 64 << 20


def timed(name, where, fn):
    torch.cuda.synchronize()
    start = time.perf_counter()
    result = fn()
    torch.cuda.synchronize()
    s = time.perf_counter() - start
    print("%-14s %-10s %7.3f s %7.2f GB/s" % (name, where, s, SIZE / s / 1e9), flush=True)
    return result


def threads(n, work, count):
    def run(k):
        for i in range(k, count, n):
            work(i)
    ts = [threading.Thread(target=run, args=(k,)) for k in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()


def allocated_file(path, where):
    """A new file with SIZE bytes allocated (timed as falloc)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    timed("falloc", where, lambda: os.posix_fallocate(fd, 0, SIZE))
    return fd


def mapped_file(path, where=None):
    """A new file of SIZE bytes, its shared mapping and a uint8 tensor over it; allocated
    beforehand and the mapping populated when `where` is given."""
    if where is None:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        os.ftruncate(fd, SIZE)
        flags = mmap.MAP_SHARED
    else:
        fd = allocated_file(path, where)
        flags = mmap.MAP_SHARED | mmap.MAP_POPULATE
    m = mmap.mmap(fd, SIZE, flags, mmap.PROT_READ | mmap.PROT_WRITE)
    return fd, m, torch.frombuffer(m, dtype=torch.uint8)


def close_mapped(path, fd, m):
    """After the caller dropped its tensor over the mapping (which holds the buffer open)."""
    m.close()
    os.close(fd)
    os.unlink(path)


def main():
    device = torch.empty(SIZE, dtype=torch.uint8, device="cuda").random_()
    pinned = torch.empty(SIZE, dtype=torch.uint8, pin_memory=True)
    timed("d2h", "pinned", lambda: pinned.copy_(device))
    view = memoryview(pinned.numpy())
    slices = SIZE // SLICE
    for d in DIRS:
        where = "shm" if d.startswith("/dev/shm") else "disk"
        path = os.path.join(d, "state-write-probe.bin")
        for name, n in (("pwrite-1", 1), ("pwrite-8", 8)):
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
            timed(name, where, lambda: threads(
                n, lambda i: os.pwrite(fd, view[i * SLICE:(i + 1) * SLICE], i * SLICE), slices))
            os.close(fd)
            os.unlink(path)
        fds = [os.open("%s.%d" % (path, k), os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600) for k in range(8)]
        timed("files-8", where, lambda: threads(
            8, lambda i: os.pwrite(fds[i % 8], view[i * SLICE:(i + 1) * SLICE], (i // 8) * SLICE), slices))
        for k, fd in enumerate(fds):
            os.close(fd)
            os.unlink("%s.%d" % (path, k))
        fd, m, mapped = mapped_file(path)
        timed("mmap-8", where, lambda: threads(
            8, lambda i: mapped[i * SLICE:(i + 1) * SLICE].copy_(pinned[i * SLICE:(i + 1) * SLICE]), slices))
        del mapped
        close_mapped(path, fd, m)
        fd, m, mapped = mapped_file(path)
        ptr = mapped.data_ptr()
        err = timed("register", where, lambda: torch.cuda.cudart().cudaHostRegister(ptr, SIZE, 0))
        if int(err) == 0:
            timed("d2h-mapped", where, lambda: mapped.copy_(device))
            torch.cuda.cudart().cudaHostUnregister(ptr)
        else:
            print("register   %-10s refused: cudaError %s" % (where, int(err)), flush=True)
        del mapped
        close_mapped(path, fd, m)
        pre_legs(path, where, view, pinned, device, slices)


def pre_legs(path, where, view, pinned, device, slices):
    """The legs again into files allocated (and mappings populated) beforehand."""
    for name, n in (("pwrite-1-pre", 1), ("pwrite-8-pre", 8)):
        fd = allocated_file(path, where)
        timed(name, where, lambda: threads(
            n, lambda i: os.pwrite(fd, view[i * SLICE:(i + 1) * SLICE], i * SLICE), slices))
        os.close(fd)
        os.unlink(path)
    fd, m, mapped = mapped_file(path, where)
    timed("mmap-8-pre", where, lambda: threads(
        8, lambda i: mapped[i * SLICE:(i + 1) * SLICE].copy_(pinned[i * SLICE:(i + 1) * SLICE]), slices))
    del mapped
    close_mapped(path, fd, m)
    fd, m, mapped = mapped_file(path, where)
    ptr = mapped.data_ptr()
    err = timed("register-pre", where, lambda: torch.cuda.cudart().cudaHostRegister(ptr, SIZE, 0))
    if int(err) == 0:
        timed("d2h-mapped-pre", where, lambda: mapped.copy_(device))
        torch.cuda.cudart().cudaHostUnregister(ptr)
    else:
        print("register-pre %-10s refused: cudaError %s" % (where, int(err)), flush=True)
    del mapped
    close_mapped(path, fd, m)


main()
