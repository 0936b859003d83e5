"""data.SyntheticTokens: the seeded synthetic stream the Python engines train on when no dataset
is pinned. It must be the native engine's stream (validators/engines/native/token_data.cc)
token for token, whether it is computed with numpy (vectorised: a framework's in-step data
loading reads it inside the measured step) or in pure Python (torch without numpy).

Run: /usr/bin/python3 -B -m unittest tests/engines/test_synthetic_tokens.py -v
"""

import os
import sys
import unittest
from unittest import mock

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "validators", "engines", "python"))

from trainlock_engine import data  # noqa: E402

# Seed 7, vocabulary 32000: the first 12 tokens, as SplitMix64 over 8-token blocks defines them
# (block = splitmix64(seed ^ splitmix64(p / 8)) % vocab, token = (block + 7 * (p % 8)) % vocab).
FIRST_TOKENS_SEED_7 = [25319, 25326, 25333, 25340, 25347, 25354, 25361, 25368, 31666, 31673, 31680, 31687]


class SyntheticStream(unittest.TestCase):
    def test_the_stream_starts_with_the_known_tokens(self):
        self.assertEqual(data.SyntheticTokens(7, 32000, 10**6).read(0, 12), FIRST_TOKENS_SEED_7)

    def test_pure_python_gives_the_same_known_tokens(self):
        with mock.patch.object(data, "_np", None):
            self.assertEqual(data.SyntheticTokens(7, 32000, 10**6).read(0, 12), FIRST_TOKENS_SEED_7)

    @unittest.skipIf(data._np is None, "numpy is not installed: only the pure-Python path exists")
    def test_numpy_and_pure_python_agree_far_into_the_stream(self):
        stream = data.SyntheticTokens(0xDEADBEEFCAFEF00D, 50257, 1 << 62)
        for start, n in [(0, 1025), (123456789, 1025), ((1 << 40) + 3, 17), ((1 << 62) - 9, 9)]:
            with self.subTest(start=start):
                expected = stream._read_python(start, n)
                self.assertEqual(stream.read(start, n), expected)

    def test_tokens_are_python_ints_inside_the_vocabulary(self):
        tokens = data.SyntheticTokens(3, 1000, 10**6).read(500, 64)
        self.assertTrue(all(type(t) is int and 0 <= t < 1000 for t in tokens))

    def test_an_empty_read_is_empty(self):
        self.assertEqual(data.SyntheticTokens(3, 1000, 10**6).read(10, 0), [])


if __name__ == "__main__":
    unittest.main()
