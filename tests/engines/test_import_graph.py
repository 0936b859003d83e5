"""The trainlock_engine package has no import cycle: its modules' imports, read from the source
(ast, every import statement, at module level or inside a function), form a graph without a
cycle. A cycle works or fails by the order modules happen to be imported in; the shared piece
belongs in the module that owns it instead.

Run: /usr/bin/python3 -B -m unittest tests/engines/test_import_graph.py -v
"""

import ast
import os
import shutil
import tempfile
import unittest

PACKAGE_PARENT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "validators", "engines",
                              "python")
PACKAGE = "trainlock_engine"


def modules(parent, package):
    """{dotted module name: source file} of every .py file of the package."""
    found = {}
    for directory, dirs, files in os.walk(os.path.join(parent, package)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for f in sorted(files):
            if not f.endswith(".py"):
                continue
            path = os.path.join(directory, f)
            dotted = os.path.relpath(path, parent)[:-3].replace(os.sep, ".")
            found[dotted[:-len(".__init__")] if dotted.endswith(".__init__") else dotted] = path
    return found


def imported(name, path, known):
    """The package's modules that the module `name` (at `path`) imports."""
    is_package = os.path.basename(path) == "__init__.py"
    here = name if is_package else name.rpartition(".")[0]
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name in known)
        elif isinstance(node, ast.ImportFrom):
            base = here.split(".")[:len(here.split(".")) - node.level + 1] if node.level else []
            source = ".".join(base + ([node.module] if node.module else []))
            for a in node.names:  # `from . import x`: module x; `from .m import f`: module m
                target = source + "." + a.name
                out.add(target if target in known else source)
    return {m for m in out if m in known and m != name}


def import_graph(parent, package):
    known = modules(parent, package)
    return {name: imported(name, path, known) for name, path in known.items()}


def cycles(graph):
    """Each cycle found by a depth-first walk, as the list of modules around it."""
    found, state, stack = [], {}, []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                found.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return found


class ImportGraph(unittest.TestCase):
    def test_the_package_has_no_import_cycle(self):
        graph = import_graph(PACKAGE_PARENT, PACKAGE)
        self.assertIn("trainlock_engine.cli", graph)
        self.assertIn("trainlock_engine.launch", graph["trainlock_engine.cli"])
        found = cycles(graph)
        self.assertEqual(found, [], "import cycles: " + "; ".join(" -> ".join(c) for c in found))

    def test_a_planted_cycle_through_a_function_level_import_is_found(self):
        root = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, root)
        os.makedirs(os.path.join(root, "pkg", "sub"))
        files = {
            "pkg/__init__.py": "",
            "pkg/a.py": "from . import b\n",
            "pkg/b.py": "def later():\n    from .sub.c import f\n",
            "pkg/sub/__init__.py": "",
            "pkg/sub/c.py": "import pkg.a\n",
            "pkg/d.py": "from .a import x\n",
        }
        for name, text in files.items():
            with open(os.path.join(root, name), "w") as f:
                f.write(text)
        graph = import_graph(root, "pkg")
        self.assertEqual(graph["pkg.d"], {"pkg.a"})
        self.assertEqual(cycles(graph), [["pkg.a", "pkg.b", "pkg.sub.c", "pkg.a"]])


if __name__ == "__main__":
    unittest.main()
