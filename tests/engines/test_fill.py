"""runtime.filling / set_fill: deterministic mode's fill of new tensors is switched only where a
buffer is written in full before it is read, and is always put back (runtime.py's docstring).
torch 2.1 and later have the switch (torch.utils.deterministic.fill_uninitialized_memory);
Debian's torch 1.13 has none and never fills, so there the helpers change nothing.

Run: /usr/bin/python3 -B -m unittest tests/engines/test_fill.py -v
"""

import os
import sys
import types
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "validators", "engines", "python"))

import torch  # noqa: E402

from trainlock_engine import runtime  # noqa: E402


class WithTheSwitch(unittest.TestCase):
    """torch.utils.deterministic as torch >= 2.1 has it (a stand-in namespace on an older torch)."""

    def setUp(self):
        self.saved = getattr(torch.utils, "deterministic", None)
        self.switch = types.SimpleNamespace(fill_uninitialized_memory=True)
        torch.utils.deterministic = self.switch

    def tearDown(self):
        if self.saved is None:
            del torch.utils.deterministic
        else:
            torch.utils.deterministic = self.saved

    def test_set_fill_returns_the_setting_it_replaced(self):
        self.assertIs(runtime.set_fill(False), True)
        self.assertIs(self.switch.fill_uninitialized_memory, False)
        self.assertIs(runtime.set_fill(True), False)

    def test_filling_switches_within_and_puts_the_setting_back(self):
        with runtime.filling(False):
            self.assertIs(self.switch.fill_uninitialized_memory, False)
        self.assertIs(self.switch.fill_uninitialized_memory, True)

    def test_filling_puts_the_setting_back_when_the_block_raises(self):
        with self.assertRaises(KeyError):
            with runtime.filling(False):
                raise KeyError("load failed")
        self.assertIs(self.switch.fill_uninitialized_memory, True)


class WithoutTheSwitch(unittest.TestCase):
    def setUp(self):
        self.saved = getattr(torch.utils, "deterministic", None)
        if self.saved is not None:
            del torch.utils.deterministic

    def tearDown(self):
        if self.saved is not None:
            torch.utils.deterministic = self.saved

    def test_a_torch_without_the_switch_is_left_alone(self):
        self.assertIsNone(runtime.set_fill(False))
        with runtime.filling(False):
            self.assertFalse(hasattr(torch.utils, "deterministic"))


if __name__ == "__main__":
    unittest.main()
