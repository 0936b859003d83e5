"""safe_load: a checkpoint's pickle is hostile input. Whatever a crafted file makes the
unpickler raise, the engine reports an unreadable checkpoint (kind `checkpoint`, exit 4), never
a training failure (kind `training`, exit 5) and never an object it should not build."""
import os
import shutil
import sys
import tempfile
import unittest

import harness

sys.path.insert(0, harness.PACKAGE_PARENT)
from trainlock_engine import safe_load  # noqa: E402
from trainlock_engine.protocol import EngineError  # noqa: E402

# Legacy (non-zip) torch.save streams whose pickle calls an allowed global with arguments it
# does not take: torch.Size(5), OrderedDict(1), a tensor rebuild with none.
CRAFTED = {
    "size-of-an-int.pt": b"\x80\x02ctorch\nSize\nK\x05\x85R.",
    "ordered-dict-of-an-int.pt": b"\x80\x02ccollections\nOrderedDict\nK\x01\x85R.",
    "rebuild-without-arguments.pt": b"\x80\x02ctorch._utils\n_rebuild_tensor_v2\n)R.",
    "a-global-not-allowed.pt": b"\x80\x02cos\nsystem\nX\x04\x00\x00\x00trueR.",
    "truncated.pt": b"\x80\x02ctorch\nSi",
}


class CraftedCheckpointPickles(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="trainlock-safe-load-")
        self.addCleanup(shutil.rmtree, self.dir, True)

    def test_each_is_an_unreadable_checkpoint(self):
        for name, raw in CRAFTED.items():
            path = os.path.join(self.dir, name)
            with open(path, "wb") as f:
                f.write(raw)
            with self.subTest(name=name), self.assertRaises(EngineError) as caught:
                safe_load.load(path)
            self.assertEqual(caught.exception.kind, "checkpoint", name)
            self.assertIn("unreadable", caught.exception.message)


if __name__ == "__main__":
    unittest.main()
