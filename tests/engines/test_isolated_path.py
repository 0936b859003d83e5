"""isolated.py's sys.path: inside an image exactly the recorded one the coordinator hands over
(TRAINLOCK_ENGINE_SYS_PATH), after the engine package's own directory; outside one the
interpreter's standard library and site directories; `--print-sys-path` prints what the image
build records; launch.isolated_restart keeps the pycache prefix for the ranks of --nproc.

Run: /usr/bin/python3 -B -m unittest tests/engines/test_isolated_path.py -v
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

ISOLATED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "validators",
                        "engines", "python", "trainlock_engine", "isolated.py")


def run(args, env=None, options=("-I", "-S", "-B")):
    return subprocess.run([sys.executable, *options, ISOLATED, *args], capture_output=True, text=True,
                          env=env if env is not None else {}, timeout=60)


class IsolatedPath(unittest.TestCase):
    def test_the_recorded_path_is_the_path_exactly(self):
        out = run(["--print-sys-path"], {"TRAINLOCK_ENGINE_SYS_PATH": "/img/lib/python3.11:/img/site"})
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(json.loads(out.stdout), ["/img/lib/python3.11", "/img/site"])

    def test_outside_an_image_the_path_is_the_interpreters_own(self):
        out = run(["--print-sys-path"])
        self.assertEqual(out.returncode, 0, out.stderr)
        path = json.loads(out.stdout)
        self.assertTrue(all(os.path.isabs(p) for p in path))
        self.assertIn(os.path.dirname(os.__file__), path)  # the standard library

    def test_restart_keeps_the_pycache_prefix_of_the_process(self):
        with tempfile.TemporaryDirectory() as prefix:
            code = ("import sys; sys.path.insert(0, %r); from trainlock_engine import launch; import json; "
                    "print(json.dumps(launch.isolated_restart()))" % os.path.dirname(os.path.dirname(ISOLATED)))
            out = subprocess.run([sys.executable, "-I", "-S", "-X", "pycache_prefix=" + prefix, "-c", code],
                                 capture_output=True, text=True, env={}, timeout=60)
            self.assertEqual(out.returncode, 0, out.stderr)
            restart = json.loads(out.stdout)
            self.assertIn("pycache_prefix=" + prefix, restart)
            self.assertNotIn("-B", restart)
            self.assertEqual(os.path.realpath(restart[-1]), os.path.realpath(ISOLATED))


if __name__ == "__main__":
    unittest.main()
