"""The fsdp2 engine's ReusedPinnedStager keeps one block of host memory from save to save
(reused_stager.py): the block is carved into one buffer per staged tensor, each aligned so any
dtype can view it, none overlapping another, and a tensor the block has no room for is not
squeezed in (the stager then allocates it on its own and counts it). The copies, the side
stream and the page-locking need a GPU and are exercised by ci/gpu.sh's fsdp2 stages.

Run: PYTHONPATH=tests/engines /usr/bin/python3 -m unittest discover -s tests/engines -v
"""

import sys
import unittest

import harness

sys.path.insert(0, harness.PACKAGE_PARENT)

import torch  # noqa: E402

from trainlock_engine import reused_stager  # noqa: E402


class UnlockedBlock(reused_stager.PinnedBlock):
    """The block without its page-locking (no GPU here): the carving is the same."""

    def _page_lock(self):
        pass


class BlockCarving(unittest.TestCase):
    def test_each_buffer_has_the_shape_and_dtype_of_its_tensor(self):
        block = UnlockedBlock(4096)
        buffer = block.take(torch.zeros(3, 5, dtype=torch.float32))
        self.assertEqual((buffer.shape, buffer.dtype), (torch.Size([3, 5]), torch.float32))

    def test_buffers_start_aligned_and_never_overlap(self):
        block = UnlockedBlock(4096)
        first = block.take(torch.zeros(7, dtype=torch.bfloat16))
        second = block.take(torch.zeros(3, dtype=torch.float64))
        self.assertEqual(second.data_ptr() - first.data_ptr(), reused_stager.ALIGN)
        self.assertEqual((second.data_ptr() - block.flat.data_ptr()) % reused_stager.ALIGN, 0)

    def test_a_tensor_the_block_has_no_room_for_gets_no_buffer_from_it(self):
        block = UnlockedBlock(1024)
        self.assertIsNotNone(block.take(torch.zeros(128, dtype=torch.float32)))
        self.assertIsNone(block.take(torch.zeros(129, dtype=torch.float32)))

    def test_a_block_sized_by_device_bytes_holds_every_tensor(self):
        sizes = [(5, 3), (1000,), (17,)]
        size = sum(reused_stager._aligned(reused_stager._nbytes(torch.zeros(s))) for s in sizes)
        block = UnlockedBlock(size)
        self.assertTrue(all(block.take(torch.zeros(s)) is not None for s in sizes))

    def test_host_tensors_need_no_staging_memory(self):
        self.assertEqual(reused_stager.device_bytes([torch.zeros(100)]), 0)


if __name__ == "__main__":
    unittest.main()
