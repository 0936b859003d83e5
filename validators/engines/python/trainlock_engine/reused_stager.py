"""A DCP stager that keeps its page-locked host buffers from one save to the next (the fsdp2
engine's async saves on a GPU).

torch 2.11's DefaultStager allocates and page-locks a fresh copy of the state for every save (the
pilot's 16 GB: seconds of its thread, which stretch the steps beside it) and unpins it when the
last reference goes (about a second), and one DefaultStager cannot be reused
(pytorch/pytorch#183413). torch's BlockingAsyncStager(cache_staged_state_dict=True) keeps its
buffers but copies on the training thread and blocks it for the whole copy. A run that saves
hundreds of times needs neither: this stager, on DCP's public AsyncStager protocol, makes one
block of host memory once, in a background thread (prepare(): after the first step, when the
optimizer's state exists, as the native engine allocates at its start), made resident by
torch's parallel fill and page-locked in one cudaHostRegister call; each save copies the state's
device tensors into it on a side stream with non-blocking copies, so the next step's forward and
backward run beside the copies, and the optimizer step waits for them on the device
(gate_current_stream: a stream wait, the host goes on). The upload reads the buffers once the
copies are done (the staging future). Nothing is freed or unpinned between saves: a save after
the first allocates nothing unless a tensor changed shape, and `new_pinned_bytes` says what
each save allocated.

A DTensor is staged as a DTensor of the same spec over a host tensor, through the tensor-subclass
protocol (__tensor_flatten__ / __tensor_unflatten__), so DCP plans the same chunks it would for
the device state. Host tensors of the state (AdamW's step counts) are cloned; other leaves are
taken as they are (the state dict is made anew for each save).
"""

import threading
import weakref
from concurrent.futures import Future

import torch

ALIGN = 512  # bytes: every buffer starts at a multiple (any dtype's view needs its item size)


def _aligned(nbytes):
    return (nbytes + ALIGN - 1) // ALIGN * ALIGN


def _nbytes(tensor):
    return tensor.numel() * tensor.element_size()


def _local(tensor):
    """(the tensor whose bytes are staged, how to rebuild the staged leaf from its host copy)."""
    flatten = getattr(tensor, "__tensor_flatten__", None)
    if flatten is None or type(tensor) is torch.Tensor:
        return tensor, lambda host: host
    names, context = flatten()
    if len(names) != 1:
        raise TypeError("%s has %d inner tensors; the stager stages one" % (type(tensor).__name__, len(names)))
    shape, stride = tensor.shape, tensor.stride()
    return getattr(tensor, names[0]), lambda host: type(tensor).__tensor_unflatten__({names[0]: host}, context, shape, stride)


def device_bytes(tensors):
    """The host memory a save of `tensors` stages (each rounded up to ALIGN): what prepare()
    should be given for a state made of them."""
    return sum(_aligned(_nbytes(_local(t)[0])) for t in tensors if _local(t)[0].device.type != "cpu")


class PinnedBlock:
    """One block of page-locked host memory, carved into buffers in the order they are asked for."""

    def __init__(self, nbytes):
        self.nbytes, self.used = nbytes, 0
        self.storage = torch.UntypedStorage(max(nbytes, 1))  # allocated, not filled: no fill cost
        flat = torch.empty(0, dtype=torch.uint8).set_(self.storage)
        flat.zero_()  # resident, on torch's intra-op threads, before the one register call
        self.flat = flat
        self._page_lock()

    def _page_lock(self):
        """One cudaHostRegister call for the whole block, undone when the block goes."""
        cudart = torch.cuda.cudart()
        status = cudart.cudaHostRegister(self.flat.data_ptr(), self.flat.numel(), 0)
        if int(status) != 0:
            raise RuntimeError("cudaHostRegister of %d bytes failed (%s)" % (self.flat.numel(), status))
        weakref.finalize(self.storage, cudart.cudaHostUnregister, self.flat.data_ptr())

    def take(self, like):
        """A host tensor shaped like `like` from the block; None when the block is used up."""
        size = _nbytes(like)
        need = _aligned(size)
        if self.used + need > self.nbytes:
            return None
        raw = self.flat[self.used:self.used + size]
        self.used += need
        return raw.view(like.dtype).view(like.shape) if size else torch.empty(like.shape, dtype=like.dtype)


class ReusedPinnedStager:
    """DCP's AsyncStager protocol (stage, should_synchronize_after_execute, synchronize_staging,
    close) over buffers kept from save to save. One save at a time: the caller waits for a
    save's upload before it starts the next (the round trip's driver does)."""

    _synchronize_after_execute = False

    def __init__(self, device):
        self.device = device
        self.stream = torch.cuda.Stream(device=device)
        self.buffers = {}  # {path in the state: host tensor}
        self.block = None
        self._preparing = None
        self.prepare_s = None
        self.prepare_error = None  # why no block could be made (the buffers are then pinned one by one)
        self.new_pinned_bytes = 0  # what the last stage() allocated (the block counts once)
        self._block_counted = False
        self.copied = None  # the last save's copies' completion (a CUDA event)
        self._executor = None

    @property
    def should_synchronize_after_execute(self):
        return False

    @property
    def prepared(self):
        """Whether prepare() was called (the block is made, being made, or could not be)."""
        return self._preparing is not None or self.block is not None or self.prepare_error is not None

    def prepare(self, nbytes):
        """Starts making the block in a background thread (a long run does this once)."""
        import time

        def make():
            started = time.perf_counter()
            try:
                self.block = PinnedBlock(nbytes)
            except (RuntimeError, AttributeError) as e:  # each buffer is then pinned on its own
                self.prepare_error = str(e)
            self.prepare_s = time.perf_counter() - started

        self._preparing = threading.Thread(target=make, name="trainlock-pinned-block", daemon=True)
        self._preparing.start()

    def _buffer(self, path, like):
        held = self.buffers.get(path)
        if held is not None and held.shape == like.shape and held.dtype == like.dtype:
            return held
        made = self.block.take(like) if self.block is not None else None
        if made is None:  # no block, or it is used up: a buffer of its own, counted
            made = torch.empty(like.shape, dtype=like.dtype, pin_memory=True)
            self.new_pinned_bytes += _nbytes(made)
        self.buffers[path] = made
        return made

    def _stage_leaf(self, path, value):
        if not isinstance(value, torch.Tensor):
            return value
        local, rebuild = _local(value)
        if local.device.type == "cpu":
            return rebuild(local.detach().clone())
        host = self._buffer(path, local)
        host.copy_(local.detach(), non_blocking=True)
        return rebuild(host)

    def _walk(self, path, value):
        if isinstance(value, dict):
            return {k: self._walk(path + (k,), v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(self._walk(path + (i,), v) for i, v in enumerate(value))
        return self._stage_leaf(path, value)

    def stage(self, state_dict):
        """Queues the copies into the kept buffers on the side stream; returns a future of the
        staged state, complete once the copies are."""
        if self._preparing is not None:
            self._preparing.join()  # a first save before the block is made waits for it
            self._preparing = None
        self.new_pinned_bytes = 0
        if self.block is not None and not self._block_counted:
            self.new_pinned_bytes, self._block_counted = self.block.nbytes, True
        self.stream.wait_stream(torch.cuda.current_stream(self.device))
        with torch.no_grad(), torch.cuda.stream(self.stream):
            staged = self._walk((), state_dict)
            self.copied = torch.cuda.Event()
            self.copied.record(self.stream)
        if self._executor is None:
            from concurrent.futures import ThreadPoolExecutor

            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="trainlock-staging")
        done = Future()
        event = self.copied

        def complete():
            try:
                event.synchronize()
                done.set_result(staged)
            except BaseException as e:  # noqa: BLE001 - the upload and the commit see it
                done.set_exception(e)

        self._executor.submit(complete)
        return done

    def gate_current_stream(self):
        """The training stream waits (on the device) for the last save's copies: the parameters
        and moments may be changed after them, never while they are read."""
        if self.copied is not None:
            torch.cuda.current_stream(self.device).wait_event(self.copied)

    def synchronize_staging(self):
        if self.copied is not None:
            self.copied.synchronize()

    def close(self):
        """Nothing to close between saves: the buffers are kept for the next one."""
