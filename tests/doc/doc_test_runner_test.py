#!/usr/bin/env python3
"""The rules of tests/doc/doc_test.py: what it runs, what it refuses, and when a command fails."""
import io
import os
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import doc_test  # noqa: E402

FENCE = "```"


def doc(*lines):
    return "\n".join(lines) + "\n"


class Parsing(unittest.TestCase):
    def test_a_console_command_is_found_with_its_line_and_default_exit_zero(self):
        blocks = doc_test.parse(doc("intro", "", FENCE + "console", "$ trainlock check .",
                                    "output line", FENCE))
        self.assertEqual(len(blocks), 1)
        c = blocks[0].commands[0]
        self.assertEqual((c.line, c.text, c.expected_exit), (4, "trainlock check .", 0))

    def test_a_trailing_exit_comment_sets_the_expected_code(self):
        blocks = doc_test.parse(doc(FENCE + "console", "$ trainlock gate r.json   # exit 1",
                                    FENCE))
        c = blocks[0].commands[0]
        self.assertEqual((c.text, c.expected_exit), ("trainlock gate r.json", 1))

    def test_backslash_continues_a_command(self):
        blocks = doc_test.parse(doc(FENCE + "console", "$ trainlock fleet k8s a \\",
                                    ">   --nodes 4", FENCE))
        self.assertEqual(blocks[0].commands[0].text, "trainlock fleet k8s a  --nodes 4")

    def test_a_shell_block_is_refused(self):
        with self.assertRaisesRegex(doc_test.DocError, "```console"):
            doc_test.parse(doc(FENCE + "sh", "trainlock check .", FENCE))

    def test_a_prompt_in_a_text_block_is_refused(self):
        with self.assertRaisesRegex(doc_test.DocError, "never run"):
            doc_test.parse(doc(FENCE + "text", "$ trainlock check .", FENCE))

    def test_a_command_in_an_unlabeled_block_is_refused(self):
        with self.assertRaisesRegex(doc_test.DocError, "never run"):
            doc_test.parse(doc(FENCE, "kubectl apply -f job.yaml", FENCE))

    def test_an_indented_command_is_refused(self):
        with self.assertRaisesRegex(doc_test.DocError, "indented command"):
            doc_test.parse(doc("text", "", "    bash ci/demo.sh", ""))

    def test_a_synopsis_in_a_text_block_is_allowed(self):
        self.assertEqual(doc_test.parse(doc(FENCE + "text", "trainlock gate REPORT", FENCE)), [])

    def test_not_run_needs_a_reason(self):
        with self.assertRaisesRegex(doc_test.DocError, "needs a reason"):
            doc_test.parse(doc("<!-- doc-test: not run: -->", FENCE + "console", "$ x", FENCE))

    def test_not_run_records_its_reason(self):
        blocks = doc_test.parse(doc("<!-- doc-test: not run: needs a GPU -->", FENCE + "console",
                                    "$ trainlock validate . --nproc auto", FENCE))
        self.assertEqual(blocks[0].not_run, "needs a GPU")

    def test_an_unknown_marker_is_refused(self):
        with self.assertRaisesRegex(doc_test.DocError, "unknown doc-test marker"):
            doc_test.parse(doc("<!-- doc-test: skip -->", FENCE + "console", "$ x", FENCE))

    def test_a_stand_in_hidden_in_an_html_comment_is_refused(self):
        with self.assertRaisesRegex(doc_test.DocError, "invisible on the rendered page"):
            doc_test.parse(doc("<!-- doc-test: instead of `a` run `b`: no network -->",
                               FENCE + "console", "$ a", FENCE))

    def test_visible_stand_ins_may_be_separated_by_an_empty_quote_line(self):
        blocks = doc_test.parse(doc("> doc-test: instead of `a` run `b`: no network", ">",
                                    "> doc-test: instead of `c` run `d`: no registry",
                                    FENCE + "console", "$ a", "$ c", FENCE))
        self.assertEqual([s[:2] for s in blocks[0].stand_ins], [("a", "b"), ("c", "d")])

    def test_a_marker_away_from_its_block_is_refused(self):
        with self.assertRaisesRegex(doc_test.DocError, "not directly above"):
            doc_test.parse(doc("<!-- doc-test: not run: GPU -->", "prose", FENCE + "console",
                               "$ x", FENCE))


class Running(unittest.TestCase):
    def setUp(self):
        self.scratch = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.scratch)

    def run_doc(self, text):
        out = io.StringIO()
        failures = doc_test.run_blocks(doc_test.parse(text), "doc.md", "/nonexistent",
                                       self.scratch, out=out)
        return failures, out.getvalue()

    def test_a_command_exiting_as_shown_passes(self):
        failures, _ = self.run_doc(doc(FENCE + "console", "$ false   # exit 1", "$ true", FENCE))
        self.assertEqual(failures, 0)

    def test_a_command_exiting_otherwise_fails_with_its_output(self):
        failures, out = self.run_doc(doc(FENCE + "console", "$ echo broken; exit 3", FENCE))
        self.assertEqual(failures, 1)
        self.assertIn("expected exit 0, got 3", out)
        self.assertIn("broken", out)

    def test_the_lines_shown_below_a_command_must_be_in_its_output(self):
        failures, out = self.run_doc(doc(FENCE + "console", "$ echo one; echo two", "two",
                                         "three", FENCE))
        self.assertEqual(failures, 1)
        self.assertIn("the output lacks the line shown: three", out)

    def test_an_ellipsis_in_a_shown_line_matches_any_text(self):
        failures, out = self.run_doc(doc(FENCE + "console", "$ echo took 0.16 s, pass",
                                         "took ... s, pass", FENCE))
        self.assertEqual(failures, 0, out)

    def test_blocks_share_the_scratch_directory_in_order(self):
        failures, _ = self.run_doc(doc(FENCE + "console", "$ echo x > f", FENCE, "",
                                       FENCE + "console", "$ test -f f", FENCE))
        self.assertEqual(failures, 0)

    def test_a_not_run_block_is_reported_not_run(self):
        failures, out = self.run_doc(doc("<!-- doc-test: not run: needs a cluster -->",
                                         FENCE + "console", "$ kubectl apply -f j.yaml", FENCE))
        self.assertEqual(failures, 0)
        self.assertIn("NOT RUN (needs a cluster): $ kubectl apply -f j.yaml", out)

    def test_a_stand_in_runs_in_place_of_the_command(self):
        failures, out = self.run_doc(doc(
            "> doc-test: instead of `fetch-from-hub` run `mkdir p`: no network here",
            FENCE + "console", "$ fetch-from-hub p", "$ test -d p", FENCE))
        self.assertEqual(failures, 0, out)
        self.assertIn("(stand-in: mkdir p)", out)

    def test_a_stand_in_matching_no_command_is_refused(self):
        with self.assertRaisesRegex(doc_test.DocError, "matches no command"):
            self.run_doc(doc("> doc-test: instead of `gone` run `true`: stale",
                             FENCE + "console", "$ true", FENCE))


if __name__ == "__main__":
    unittest.main()
