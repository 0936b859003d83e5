"""fsdp2's async save handle (engines/fsdp2.py FutureSave) lets go of the save's staged copy
where the driver times it: torch 2.11 unpins the copy's pinned host buffers on the thread that
drops the last reference (about a second for the pilot's 16 GB), so the handle must neither keep
the copy beyond release() nor sit in a reference cycle that leaves it to the garbage collector,
which would unpin it at some later step, unmeasured."""

import concurrent.futures
import gc
import sys
import unittest
import weakref

import harness

sys.path.insert(0, harness.PACKAGE_PARENT)

from trainlock_engine.engines.fsdp2 import FutureSave  # noqa: E402


class StagedCopy:
    """Stands in for the staged state dict."""


class Stager:
    """torch 2.11's DefaultStager as far as the handle sees it: its staging future holds the
    staged copy, and async_save's own staging future is completed from that one's callback."""

    def __init__(self):
        self.staging_future = concurrent.futures.Future()
        self.closed = False

    def close(self):
        self.closed = True


def an_async_save():
    """(the handle, a weak reference to its staged copy), staged and uploaded."""
    stager = Stager()
    returned_staging = concurrent.futures.Future()
    stager.staging_future.add_done_callback(lambda _f, r=returned_staging: r.set_result(None))
    upload = concurrent.futures.Future()
    response = type("AsyncSaveResponse", (), {})()
    response.staging_completion, response.upload_completion = returned_staging, upload
    handle = FutureSave(response, stager)
    copy = StagedCopy()
    stager.staging_future.set_result(copy)
    upload.set_result(None)
    return handle, weakref.ref(copy)


class FutureSaveRelease(unittest.TestCase):
    def setUp(self):
        gc.disable()  # what is freed must be freed by reference counts alone
        self.addCleanup(gc.enable)

    def test_the_staged_copy_lives_until_release(self):
        handle, copy = an_async_save()
        handle.wait()
        self.assertIsNotNone(copy())

    def test_release_frees_the_staged_copy_at_once(self):
        handle, copy = an_async_save()
        handle.wait()
        handle.release()
        self.assertIsNone(copy())

    def test_a_dropped_handle_is_in_no_reference_cycle(self):
        handle, copy = an_async_save()
        handle.wait()
        del handle
        self.assertIsNone(copy())

    def test_the_staging_time_is_kept_past_release(self):
        handle, _ = an_async_save()
        handle.wait()
        handle.release()
        self.assertIsNotNone(handle.staging_s)

    def test_wait_closes_the_stager(self):
        handle, _ = an_async_save()
        stager = handle.stager
        handle.wait()
        self.assertTrue(stager.closed)


if __name__ == "__main__":
    unittest.main()
