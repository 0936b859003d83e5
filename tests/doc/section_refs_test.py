#!/usr/bin/env python3
"""Every reference to a section of the README or docs/ resolves, so that a reader sent there
finds it: a prose reference `(docs/images.md, "Images, the whole path")` or `(README, "X")` in
examples/, docs/ and the README names the start of a heading of that document, and a markdown
link `[..](images.md#anchor)` names the anchor of one of its headings.

Usage: section_refs_test.py --source-dir DIR   (runs its own unit tests without arguments)
"""
import argparse
import os
import re
import sys
import unittest

# (README, "Quickstart"), (docs/fleet.md, "CI"), (README.md, "...")
PROSE_REF = re.compile(r'\((README(?:\.md)?|docs/[\w.-]+\.md), "([^"]+)"')
# [text](images.md#anchor), [text](docs/images.md#anchor), [text](#anchor)
LINK_REF = re.compile(r'\]\(([\w./-]*\.md)?#([\w-]+)\)')
HEADING = re.compile(r"^#{1,6}\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^\s*(```|~~~)")


def headings(text):
    """The headings of a markdown document, outside code blocks."""
    found, in_code = [], False
    for line in text.split("\n"):
        if FENCE.match(line):
            in_code = not in_code
            continue
        m = HEADING.match(line)
        if m and not in_code:
            found.append(m.group(1))
    return found


def anchor(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def plain(heading):
    return heading.replace("`", "")


def broken_refs(path, text, read_doc):
    """`path:line: ...` for each reference in `text` that names no heading. `read_doc(rel)`
    returns the text of a document by its path from the repository root, None if missing."""
    problems = []
    doc_dir = os.path.dirname(path)
    for number, line in enumerate(text.split("\n"), 1):
        for m in PROSE_REF.finditer(line):
            target = "README.md" if m.group(1).startswith("README") else m.group(1)
            section = m.group(2)
            doc = read_doc(target)
            if doc is None:
                problems.append(f"{path}:{number}: {target} does not exist")
            elif not any(plain(h).startswith(plain(section)) for h in headings(doc)):
                problems.append(f'{path}:{number}: {target} has no section "{section}"')
        for m in LINK_REF.finditer(line):
            target = os.path.normpath(os.path.join(doc_dir, m.group(1))) if m.group(1) else path
            doc = read_doc(target)
            if doc is None:
                problems.append(f"{path}:{number}: {target} does not exist")
            elif m.group(2) not in {anchor(h) for h in headings(doc)}:
                problems.append(f"{path}:{number}: {target} has no heading #{m.group(2)}")
    return problems


def files_to_check(source_dir):
    """README.md, docs/*.md and every text file under examples/, relative to source_dir."""
    paths = ["README.md"]
    paths += sorted("docs/" + n for n in os.listdir(os.path.join(source_dir, "docs"))
                    if n.endswith(".md"))
    for root, _, names in os.walk(os.path.join(source_dir, "examples")):
        for name in sorted(names):
            paths.append(os.path.relpath(os.path.join(root, name), source_dir))
    return paths


def main(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("--source-dir", required=True)
    args = parser.parse_args(argv)

    def read_doc(rel):
        try:
            with open(os.path.join(args.source_dir, rel), encoding="utf-8") as f:
                return f.read()
        except (OSError, UnicodeDecodeError):
            return None

    problems = []
    for rel in files_to_check(args.source_dir):
        text = read_doc(rel)
        if text is not None:  # binary files (the report screenshot) hold no references
            problems += broken_refs(rel, text, read_doc)
    for p in problems:
        print(p)
    print(f"{len(problems)} broken section reference(s)")
    return 1 if problems else 0


class Rules(unittest.TestCase):
    DOCS = {"docs/images.md": "# Images\n\n## Images, the whole path\n```\n# not a heading\n```\n",
            "README.md": "# trainlock\n\n## Quickstart\n"}

    def broken(self, text, path="examples/x.toml"):
        return broken_refs(path, text, self.DOCS.get)

    def test_a_prose_reference_to_the_start_of_a_heading_resolves(self):
        self.assertEqual(self.broken('# see (docs/images.md, "Images, the whole")'), [])

    def test_a_prose_reference_to_no_heading_is_named_with_its_line(self):
        self.assertEqual(self.broken('\n# (README, "Images")'),
                         ['examples/x.toml:2: README.md has no section "Images"'])

    def test_a_heading_inside_a_code_block_does_not_count(self):
        self.assertEqual(len(self.broken('(docs/images.md, "not a heading")')), 1)

    def test_a_link_anchor_resolves_against_the_linked_document(self):
        self.assertEqual(self.broken("[x](images.md#images-the-whole-path)", "docs/a.md"), [])
        self.assertEqual(self.broken("[x](images.md#images)", "docs/a.md"), [])
        self.assertEqual(self.broken("[x](images.md#the-whole-path)", "docs/a.md"),
                         ["docs/a.md:1: docs/images.md has no heading #the-whole-path"])

    def test_a_reference_to_a_missing_document_is_broken(self):
        self.assertEqual(self.broken('(docs/gone.md, "X")'),
                         ["examples/x.toml:1: docs/gone.md does not exist"])


if __name__ == "__main__":
    if len(sys.argv) > 1:
        sys.exit(main(sys.argv[1:]))
    unittest.main()
