#!/usr/bin/env python3
"""Runs every command the README and docs/ show, so that the documentation cannot drift.

A command is a line starting with `$ ` in a ```console block (a line ending in `\\` continues
on the next). It runs with bash in a scratch copy of the repository's examples/,
tests/fixtures/ and tests/junit/, with the built binaries first on PATH; one scratch directory per document,
so later blocks see what earlier ones wrote (validate writes report.json, gate reads it). A
command passes when it exits with the code its trailing comment names (`# exit 1`), else 0,
and its output holds the lines shown below it, in order (`...` in a line matches any text).

A command that cannot run here (it needs a GPU, a cluster, the network) is never dropped
silently; a marker on the line(s) above the block says what happens instead:

  <!-- doc-test: not run: REASON -->                   the whole block is not run
  > doc-test: instead of `PREFIX` run `CMD`: REASON      commands starting with PREFIX run
                                                         CMD instead (a stand-in)

A stand-in changes what the shown commands do, so a reader must see it: it is a visible
blockquote line (lines holding only `>` may separate markers), never an HTML comment.

Anything else that looks like a command is refused: `$ ` outside a console block, a
```sh/```bash/```shell block, or a command word (trainlock, bash, kubectl, ...) at the start
of an indented or unlabeled code block. Synopses go in ```text blocks.

Usage: doc_test.py --bin-dir DIR --source-dir DIR DOC.md...
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field

MARKER = re.compile(r"^<!--\s*doc-test:\s*(.*?)\s*-->\s*$")
VISIBLE_MARKER = re.compile(r"^>\s*doc-test:\s*(.*?)\s*$")
QUOTE_SEPARATOR = re.compile(r"^>\s*$")
NOT_RUN = re.compile(r"^not run:\s*(.*)$")
INSTEAD = re.compile(r"^instead of `([^`]+)` run `([^`]+)`:\s*(.*)$")
FENCE = re.compile(r"^(```|~~~)\s*([A-Za-z0-9_+-]*)\s*$")
EXIT_COMMENT = re.compile(r"\s+#\s*exit\s+(\d+)\s*$")
# Words that start a command a reader would copy; in a code block that is not a console
# block they mean a command nobody runs.
COMMAND_WORD = re.compile(
    r"^\s*(\$ |trainlock |trainlock-validate |bash |sh |cmake |ctest |kubectl |sbatch |srun |"
    r"torchrun |python3 |sudo |apt-get )")
SHELL_LANGUAGES = {"sh", "bash", "shell", "zsh"}


@dataclass
class Command:
    line: int          # 1-based line of the `$ ` in the document
    text: str          # as shown, continuation lines joined
    expected_exit: int
    expected_output: list = field(default_factory=list)  # the lines shown below it


@dataclass
class Block:
    line: int                    # 1-based line of the opening fence
    commands: list = field(default_factory=list)
    not_run: str = None          # the reason, when the block is not run
    stand_ins: list = field(default_factory=list)  # (prefix, replacement, reason)


class DocError(Exception):
    pass


def _parse_marker(text, path, line, block, visible):
    if not visible and INSTEAD.match(text):
        raise DocError(f"{path}:{line}: a stand-in in an HTML comment is invisible on the "
                       "rendered page; write it as a visible `> doc-test: instead of ...` line")
    m = NOT_RUN.match(text)
    if m:
        if not m.group(1):
            raise DocError(f"{path}:{line}: `doc-test: not run:` needs a reason")
        block.not_run = m.group(1)
        return
    m = INSTEAD.match(text)
    if m:
        if not m.group(3):
            raise DocError(f"{path}:{line}: a stand-in needs a reason after the colon")
        block.stand_ins.append((m.group(1), m.group(2), m.group(3)))
        return
    raise DocError(f"{path}:{line}: unknown doc-test marker {text!r}; "
                   "use `not run: REASON` or `instead of `X` run `Y`: REASON`")


def _console_commands(lines, first_line, path):
    commands = []
    i = 0
    while i < len(lines):
        text = lines[i]
        if not text.startswith("$ "):
            i += 1
            continue
        start = first_line + i
        command = text[2:]
        while command.endswith("\\") and i + 1 < len(lines):
            i += 1
            command = command[:-1] + " " + re.sub(r"^>\s?", "", lines[i]).strip()
        if command.endswith("\\"):
            raise DocError(f"{path}:{start}: the command's last line ends with a backslash")
        expected = 0
        m = EXIT_COMMENT.search(command)
        if m:
            expected = int(m.group(1))
            command = command[:m.start()]
        commands.append(Command(start, command.strip(), expected))
        i += 1
        while i < len(lines) and not lines[i].startswith("$ "):
            if lines[i].strip():
                commands[-1].expected_output.append(lines[i].rstrip())
            i += 1
    return commands


def _line_pattern(shown):
    return re.compile("^" + ".*".join(re.escape(part) for part in shown.split("...")) + "$")


def missing_output(shown_lines, output):
    """The first shown line that the output lacks, matched in order, `...` matching any
    text; None when every shown line is there."""
    actual = [line.rstrip() for line in output.split("\n")]
    position = 0
    for shown in shown_lines:
        pattern = _line_pattern(shown)
        while position < len(actual) and not pattern.match(actual[position]):
            position += 1
        if position == len(actual):
            return shown
        position += 1
    return None


def parse(text, path="<doc>"):
    """The console blocks of a markdown document; DocError for anything the rules refuse."""
    lines = text.split("\n")
    blocks = []
    pending = None  # markers seen above the next fence
    pending_line = 0
    i = 0
    previous_blank = True
    while i < len(lines):
        line = lines[i]
        m = MARKER.match(line.strip()) or VISIBLE_MARKER.match(line.strip())
        if m:
            if pending is None:
                pending, pending_line = Block(line=0), i + 1
            _parse_marker(m.group(1), path, i + 1, pending, line.strip().startswith(">"))
            i += 1
            continue
        if pending is not None and QUOTE_SEPARATOR.match(line.strip()):
            i += 1
            continue
        fence = FENCE.match(line.strip()) if not line.startswith("    ") else None
        if fence:
            language = fence.group(2).lower()
            end = i + 1
            while end < len(lines) and lines[end].strip() != fence.group(1):
                end += 1
            if end == len(lines):
                raise DocError(f"{path}:{i + 1}: code block is never closed")
            body = lines[i + 1:end]
            if language == "console":
                block = pending or Block(line=0)
                block.line = i + 1
                block.commands = _console_commands(body, i + 2, path)
                if not block.commands:
                    raise DocError(f"{path}:{i + 1}: console block without a `$ ` command")
                blocks.append(block)
            else:
                if pending is not None:
                    raise DocError(f"{path}:{pending_line}: doc-test marker above a "
                                   f"```{language} block; markers belong above ```console")
                if language in SHELL_LANGUAGES:
                    raise DocError(f"{path}:{i + 1}: ```{language} block: show commands as "
                                   "```console with `$ ` prompts so that they are run")
                for k, body_line in enumerate(body):
                    if body_line.startswith("$ ") or (
                            language == "" and COMMAND_WORD.match(body_line)):
                        raise DocError(f"{path}:{i + 2 + k}: a command outside a ```console "
                                       "block is never run; move it into one (synopses go "
                                       "in ```text)")
            pending = None
            i = end + 1
            previous_blank = False
            continue
        if pending is not None and line.strip():
            raise DocError(f"{path}:{pending_line}: doc-test marker not directly above a "
                           "```console block")
        # An indented code block: four spaces after a blank line, outside lists' text.
        if line.startswith("    ") and previous_blank and COMMAND_WORD.match(line):
            raise DocError(f"{path}:{i + 1}: an indented command is never run; show it in a "
                           "```console block with a `$ ` prompt")
        previous_blank = not line.strip() or (previous_blank and line.startswith("    "))
        i += 1
    if pending is not None:
        raise DocError(f"{path}:{pending_line}: doc-test marker without a block below it")
    return blocks


def command_to_run(block, command, path):
    """The command line to run for `command`: its stand-in when one applies."""
    for prefix, replacement, _ in block.stand_ins:
        if command.text.startswith(prefix):
            return replacement
    return command.text


def check_stand_ins_used(block, path):
    for prefix, _, _ in block.stand_ins:
        if not any(c.text.startswith(prefix) for c in block.commands):
            raise DocError(f"{path}:{block.line}: stand-in for `{prefix}` matches no command "
                           "in the block below it")


def make_scratch(source_dir):
    scratch = tempfile.mkdtemp(prefix="trainlock-doc-")
    for part in ("examples", os.path.join("tests", "fixtures"), os.path.join("tests", "junit")):
        shutil.copytree(os.path.join(source_dir, part), os.path.join(scratch, part),
                        symlinks=True, ignore=shutil.ignore_patterns(".trainlock", "build*"))
    os.makedirs(os.path.join(scratch, "home"))
    return scratch


def run_blocks(blocks, path, bin_dir, scratch, out=sys.stdout, timeout=900):
    """Runs every block in order in `scratch`; returns the number of failed commands."""
    env = dict(os.environ)
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    env["HOME"] = os.path.join(scratch, "home")
    env.pop("TRAINLOCK_CATALOG", None)
    failures = 0
    for block in blocks:
        check_stand_ins_used(block, path)
        if block.not_run:
            for c in block.commands:
                print(f"{path}:{c.line}: NOT RUN ({block.not_run}): $ {c.text}", file=out)
            continue
        for c in block.commands:
            line = command_to_run(block, c, path)
            shown = "" if line == c.text else f" (stand-in: {line})"
            try:
                result = subprocess.run(["bash", "-o", "pipefail", "-c", line], cwd=scratch,
                                        env=env, stdout=subprocess.PIPE,
                                        stderr=subprocess.STDOUT, timeout=timeout)
                code, output = result.returncode, result.stdout.decode(errors="replace")
            except subprocess.TimeoutExpired as e:
                code, output = f"timeout after {timeout}s", (e.stdout or b"").decode(
                    errors="replace")
            missing = missing_output(c.expected_output, output)
            if code == c.expected_exit and missing is None:
                print(f"{path}:{c.line}: ok (exit {code}): $ {c.text}{shown}", file=out)
                continue
            failures += 1
            tail = "\n".join(output.rstrip().split("\n")[-30:])
            why = (f"expected exit {c.expected_exit}, got {code}" if code != c.expected_exit
                   else f"the output lacks the line shown: {missing}")
            print(f"{path}:{c.line}: FAILED: $ {c.text}{shown}\n  {why}; output (last 30 "
                  f"lines):\n{tail}", file=out)
    return failures


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin-dir", required=True)
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    parser.add_argument("docs", nargs="+")
    args = parser.parse_args(argv)
    failures = 0
    for doc in args.docs:
        shown = os.path.relpath(doc, args.source_dir)
        with open(doc, encoding="utf-8") as f:
            text = f.read()
        scratch = make_scratch(args.source_dir)
        try:
            failures += run_blocks(parse(text, shown), shown, os.path.abspath(args.bin_dir),
                                   scratch)
        except DocError as e:
            print(f"error: {e}")
            failures += 1
        finally:
            if args.keep:
                print(f"scratch directory kept: {scratch}")
            else:
                shutil.rmtree(scratch, ignore_errors=True)
    print(f"{failures} failed" if failures else "all documented commands behaved as shown")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
