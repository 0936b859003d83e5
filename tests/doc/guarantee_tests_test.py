#!/usr/bin/env python3
"""Every test docs/guarantees.md names as enforcing a guarantee exists, so that a row never
rests on a test that was renamed or removed: in the right column of its table, `Suite.Name` is a
C++ TEST, TEST_F or TEST_P under tests/ (or a Python unittest class `Suite` there), `Suite.*`
names a suite (C++ or a Python class) that exists, and `test_name` is a Python test function or
test module under tests/. Other spans (paths, fuzz targets, commands) are left to doc.names.

Usage: guarantee_tests_test.py --source-dir DIR   (runs its own unit tests without arguments)
"""
import argparse
import os
import re
import sys
import unittest

CPP_TEST = re.compile(r"\b(?:TEST|TEST_F|TEST_P|TYPED_TEST)\(\s*(\w+)\s*,\s*(\w+)\s*\)")
PY_TEST = re.compile(r"^\s*def (test_\w+)\(", re.M)
PY_CLASS = re.compile(r"^class (\w+)\(", re.M)
SUITE_TEST = re.compile(r"([A-Z]\w*)\.(\*|\w+)")
PY_NAME = re.compile(r"test_\w+")
SPAN = re.compile(r"`([^`\n]+)`")


class Known:
    """The tests of a tree: C++ `Suite.Name`s and suites, Python test names and classes."""

    def __init__(self):
        self.cpp_tests, self.suites, self.py_tests, self.py_classes = set(), set(), set(), set()

    def add_cpp(self, text):
        for suite, name in CPP_TEST.findall(text):
            self.cpp_tests.add(suite + "." + name)
            self.suites.add(suite)

    def add_python(self, filename, text):
        if filename.startswith("test_"):
            self.py_tests.add(filename[:-len(".py")])
        self.py_tests.update(PY_TEST.findall(text))
        self.py_classes.update(PY_CLASS.findall(text))

    def has(self, span):
        m = SUITE_TEST.fullmatch(span)
        if m:
            suite, name = m.groups()
            if suite in self.py_classes:
                return True
            return suite in self.suites if name == "*" else span in self.cpp_tests
        return span in self.py_tests


def named_tests(text):
    """(line number, span) of each test name in the right column of the page's tables."""
    found = []
    for number, line in enumerate(text.split("\n"), 1):
        if not line.startswith("|") or line.startswith("|---"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if len(cells) < 2 or cells == ["guarantee", "enforced by"]:
            continue
        for span in SPAN.findall(cells[-1]):
            if SUITE_TEST.fullmatch(span) or PY_NAME.fullmatch(span):
                found.append((number, span))
    return found


def missing_tests(path, text, known):
    """`path:line: ...` for each named test the tree does not have."""
    return [f"{path}:{number}: names {span}, which is no test under tests/"
            for number, span in named_tests(text) if not known.has(span)]


def scan_tests(source_dir):
    known = Known()
    for root, dirs, names in os.walk(os.path.join(source_dir, "tests")):
        dirs[:] = [d for d in dirs if d not in ("node_modules", "__pycache__")]
        for name in names:
            if not name.endswith((".cc", ".py")):
                continue
            with open(os.path.join(root, name), encoding="utf-8", errors="replace") as f:
                text = f.read()
            if name.endswith(".cc"):
                known.add_cpp(text)
            else:
                known.add_python(name, text)
    return known


def main(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("--source-dir", required=True)
    args = parser.parse_args(argv)
    page = "docs/guarantees.md"
    with open(os.path.join(args.source_dir, page), encoding="utf-8") as f:
        text = f.read()
    named = named_tests(text)
    problems = missing_tests(page, text, scan_tests(args.source_dir))
    for p in problems:
        print(p)
    print(f"{len(named)} named test(s), {len(problems)} missing")
    return 1 if problems or not named else 0


class Rules(unittest.TestCase):
    def known(self):
        known = Known()
        known.add_cpp("TEST(Gate, ARankReportIsRefused) {}\nTEST_F(GateCli,\n  AConfigIsNamed) {}\n")
        known.add_python("test_protocol_table.py",
                         "class ProtocolTable(unittest.TestCase):\n    def test_a_member(self):\n")
        return known

    def missing(self, right):
        text = f"| guarantee | enforced by |\n|---|---|\n| a claim | {right} |\n"
        return missing_tests("docs/guarantees.md", text, self.known())

    def test_existing_tests_suites_and_python_names_are_found(self):
        self.assertEqual(self.missing("`Gate.ARankReportIsRefused`, `GateCli.AConfigIsNamed`, "
                                      "`Gate.*`, `ProtocolTable.*`, `test_a_member`, "
                                      "`test_protocol_table`"), [])

    def test_a_renamed_test_is_named_with_its_line(self):
        self.assertEqual(self.missing("`Gate.ARankReportIsRefusedNamingIt`"),
                         ["docs/guarantees.md:3: names Gate.ARankReportIsRefusedNamingIt, "
                          "which is no test under tests/"])

    def test_a_suite_that_does_not_exist_is_missing(self):
        self.assertEqual(len(self.missing("`Gone.*`")), 1)

    def test_a_python_test_that_does_not_exist_is_missing(self):
        self.assertEqual(len(self.missing("`test_gone`")), 1)

    def test_the_guarantee_column_and_other_spans_are_not_test_names(self):
        text = "| `Gate.Gone` is a claim | `tests/engines`, fuzz target `checkpoint_state` |\n"
        self.assertEqual(named_tests(text), [])


if __name__ == "__main__":
    if len(sys.argv) > 1:
        sys.exit(main(sys.argv[1:]))
    unittest.main()
