#!/usr/bin/env python3
"""What the docs name exists: a repository path in backticks (`src/cli/main.cc`,
`lockfiles/compat/`) or a markdown link to a repository file ([x](formats.md)) in the README,
docs/*.md and examples/**/README.md is there, and an option shown with a command
(`trainlock gate --require`, `trainlock-validate --nproc auto`, in backticks or a code block) is
one that command's --help lists.

Usage: doc_names_test.py --source-dir DIR --bin-dir DIR   (runs its own unit tests without
arguments)
"""
import argparse
import os
import re
import subprocess
import sys
import unittest

ROOTS = ("src", "validators", "tests", "ci", "examples", "bench", "lockfiles", "images", "docs")
# A whole backticked span that is a repository path: `src/cli/main.cc`, `docs/`, `ci/test.sh:12`.
PATH_SPAN = re.compile(r"^(?:%s)/[\w./@+-]*$" % "|".join(ROOTS))
# Placeholders and patterns name no one path.
PLACEHOLDER = re.compile(r"[<>*{}$]|\.\.\.|…|/X\b|\bNAME\b")
INLINE = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")
FENCE = re.compile(r"^\s*(```|~~~)")
# `trainlock CMD...` or `trainlock-validate`, then what follows on the line.
COMMAND = re.compile(r"(?<![\w./-])(trainlock(?:-validate)?)((?:\s+[^\s]+)*)")
OPTION = re.compile(r"^(--[a-z][\w-]*)")
STOP = re.compile(r"^(\||&&|;|#|>|\)|\$\()")


def code_lines(text):
    """(line number, text) of each line inside a fenced code block, continuations joined."""
    out, in_code, pending = [], False, None
    for number, line in enumerate(text.split("\n"), 1):
        if FENCE.match(line):
            in_code = not in_code
            continue
        if not in_code:
            continue
        if pending:
            pending = (pending[0], pending[1] + " " + line.strip())
        else:
            pending = (number, line)
        if not pending[1].rstrip().endswith("\\"):
            out.append(pending)
            pending = None
        else:
            pending = (pending[0], pending[1].rstrip()[:-1])
    return out


def inline_spans(text):
    """(line number, span) of each backticked span outside code blocks."""
    out, in_code = [], False
    for number, line in enumerate(text.split("\n"), 1):
        if FENCE.match(line):
            in_code = not in_code
            continue
        if not in_code:
            out += [(number, m.group(1)) for m in INLINE.finditer(line)]
    return out


def missing_paths(path, text, exists):
    """`path:line: ...` for each repository path or link in `text` that `exists(rel)` denies
    (main's `exists` accepts a path git ignores: one a command writes, `DIR/.trainlock/`)."""
    problems = []
    for number, span in inline_spans(text):
        span = re.sub(r":\d+(:\d+)?$", "", span.rstrip(".,;"))
        if PATH_SPAN.match(span) and not PLACEHOLDER.search(span) and not exists(span):
            problems.append(f"{path}:{number}: `{span}` does not exist")
    in_code = False
    for number, line in enumerate(text.split("\n"), 1):
        if FENCE.match(line):
            in_code = not in_code
            continue
        if in_code:
            continue
        for m in LINK.finditer(line):
            target = m.group(1)
            if re.match(r"^[a-z]+:", target) or PLACEHOLDER.search(target):
                continue  # https:, mailto:
            rel = os.path.normpath(os.path.join(os.path.dirname(path), target))
            if not exists(rel):
                problems.append(f"{path}:{number}: link to {rel} does not exist")
    return problems


def commands_in(text):
    """(line number, program, words after it) for each command shown in `text`."""
    found = []
    pieces = code_lines(text) + inline_spans(text)
    for number, piece in pieces:
        for m in COMMAND.finditer(piece):
            found.append((number, m.group(1), m.group(2).split()))
    return found


def unknown_options(path, text, help_of, subcommands_of):
    """`path:line: ...` for each `--opt` shown after a command whose help does not list it.
    `help_of(words)` is the --help text of the command (`["trainlock", "gate"]`),
    `subcommands_of(words)` the names of its subcommands."""
    problems = []
    for number, program, words in commands_in(text):
        rest = list(words)
        if rest and rest[0].endswith(":"):
            continue  # a line the program printed ("trainlock gate: error: ..."), no command
        # The command's words: `fleet k8s`, `fleet k8s|slurm` (each of them).
        choices = [[program]]
        while rest:
            alternatives = rest[0].split("|")
            subs = subcommands_of(choices[0])
            if not all(a in subs for a in alternatives):
                break
            choices = [c + [a] for c in choices for a in alternatives]
            rest.pop(0)
        for i, word in enumerate(rest):
            # "|" ends a pipeline, unless it separates alternatives in a synopsis
            # ("(--key PUB | --allow-unsigned)").
            after = rest[i + 1].lstrip("[(") if i + 1 < len(rest) else ""
            if (STOP.match(word) and not (word == "|" and after.startswith("-"))) or \
                    word.startswith("trainlock"):
                break
            m = OPTION.match(word.lstrip("[("))
            if not m:
                continue
            for c in choices:
                if not re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(m.group(1)), help_of(c)):
                    problems.append(
                        f"{path}:{number}: {' '.join(c)} --help does not list {m.group(1)}")
    return problems


def files_to_check(source_dir):
    paths = ["README.md"]
    paths += sorted("docs/" + n for n in os.listdir(os.path.join(source_dir, "docs"))
                    if n.endswith(".md"))
    for root, _, names in os.walk(os.path.join(source_dir, "examples")):
        paths += [os.path.relpath(os.path.join(root, n), source_dir)
                  for n in sorted(names) if n == "README.md"]
    return paths


def main(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--bin-dir", required=True)
    args = parser.parse_args(argv)
    own_helps = {}

    def own_help(words):
        key = tuple(words)
        if key not in own_helps:
            program = os.path.join(args.bin_dir, words[0])
            if words[0] == "trainlock-validate" and not os.path.exists(program):
                return own_help(["trainlock", "validate"])  # built without LibTorch
            run = subprocess.run([program] + words[1:] + ["--help"], capture_output=True,
                                 text=True, check=False)
            own_helps[key] = run.stdout
        return own_helps[key]

    def help_of(words):
        # The global options are taken after a command too.
        return own_help(words) + (own_help(["trainlock"]) if words[0] == "trainlock" else "")

    def subcommands_of(words):
        section = own_help(words).split("\nSubcommands:\n", 1)
        if len(section) < 2:
            return []
        return re.findall(r"^  ([a-z][a-z0-9-]*)", section[1].split("\n\n")[0], re.M)

    def exists(rel):
        if os.path.exists(os.path.join(args.source_dir, rel)):
            return True
        ignored = subprocess.run(["git", "-C", args.source_dir, "check-ignore", "-q", rel],
                                 check=False)
        return ignored.returncode == 0

    problems = []
    for rel in files_to_check(args.source_dir):
        with open(os.path.join(args.source_dir, rel), encoding="utf-8") as f:
            text = f.read()
        problems += missing_paths(rel, text, exists)
        problems += unknown_options(rel, text, help_of, subcommands_of)
    for p in problems:
        print(p)
    print(f"{len(problems)} name(s) in the docs that do not exist")
    return 1 if problems else 0


class Rules(unittest.TestCase):
    FILES = {"src/cli/main.cc", "docs/formats.md", "lockfiles/compat"}
    HELP = {("trainlock",): "Subcommands:\n  gate   x\n  fleet  y\n\nOptions:\n  --catalog\n",
            ("trainlock", "gate"): "--require --key",
            ("trainlock", "fleet"): "Subcommands:\n  k8s  a\n  slurm  b\n",
            ("trainlock", "fleet", "k8s"): "--nodes --out",
            ("trainlock", "fleet", "slurm"): "--nodes",
            ("trainlock-validate",): "--nproc"}

    def missing(self, text, path="docs/a.md"):
        return missing_paths(path, text, lambda rel: rel in self.FILES)

    def unknown(self, text):
        subs = {("trainlock",): ["gate", "fleet"], ("trainlock", "fleet"): ["k8s", "slurm"]}
        return unknown_options("docs/a.md", text, lambda w: self.HELP.get(tuple(w), ""),
                               lambda w: subs.get(tuple(w), []))

    def test_a_backticked_path_that_exists_passes(self):
        self.assertEqual(self.missing("see `src/cli/main.cc` and `lockfiles/compat`"), [])

    def test_a_backticked_path_that_does_not_exist_is_named_with_its_line(self):
        self.assertEqual(self.missing("\nsee `src/cli/gone.cc`."),
                         ["docs/a.md:2: `src/cli/gone.cc` does not exist"])

    def test_a_placeholder_path_is_no_path(self):
        self.assertEqual(self.missing("`examples/<name>/` and `src/**/x.cc`"), [])

    def test_a_link_resolves_against_the_linking_document(self):
        self.assertEqual(self.missing("[f](formats.md#x)"), [])
        self.assertEqual(self.missing("[f](../lockfiles/README.md)"),
                         ["docs/a.md:1: link to lockfiles/README.md does not exist"])
        self.assertEqual(self.missing("[w](https://example.com/x.md)"), [])

    def test_an_option_the_commands_help_lists_passes(self):
        self.assertEqual(self.unknown("`trainlock gate r.json --require a,b`"), [])
        self.assertEqual(self.unknown("```\ntrainlock gate --require x \\\n  --key k\n```"), [])

    def test_an_option_the_commands_help_does_not_list_is_named(self):
        self.assertEqual(self.unknown("`trainlock gate --reqiure x`"),
                         ["docs/a.md:1: trainlock gate --help does not list --reqiure"])

    def test_every_command_of_alternatives_must_list_the_option(self):
        self.assertEqual(self.unknown("`trainlock fleet k8s|slurm --out d`"),
                         ["docs/a.md:1: trainlock fleet slurm --help does not list --out"])

    def test_a_line_the_program_printed_is_no_command(self):
        self.assertEqual(self.unknown("`trainlock gate: error: unknown option --reqiure`"), [])

    def test_a_synopsis_names_its_options_in_brackets_and_alternatives(self):
        self.assertEqual(self.unknown("`trainlock gate [--require C] (--key K | --kye)`"),
                         ["docs/a.md:1: trainlock gate --help does not list --kye"])

    def test_a_pipe_ends_the_command(self):
        self.assertEqual(self.unknown("`trainlock gate x | grep --color`"), [])

    def test_the_validators_options(self):
        self.assertEqual(self.unknown("`trainlock-validate . --nproc auto --gone`"),
                         ["docs/a.md:1: trainlock-validate --help does not list --gone"])


if __name__ == "__main__":
    if len(sys.argv) > 1:
        sys.exit(main(sys.argv[1:]))
    unittest.main()
