// `trainlock lock DIR [--check] [--offline]`: resolve the manifest into trainlock.lock, or
// (--check) say offline whether the lock is still the manifest's, or (--golden REPORT) pin the
// golden digest of a passing report under its key (report/golden_pin.h).
#include <iostream>

#include <nlohmann/json.hpp>

#include "base/diagnostic.h"
#include "base/exit_code.h"
#include "base/failure.h"
#include "base/file_io.h"
#include "base/json_file.h"
#include "base/strings.h"
#include "base/terminal_text.h"
#include "base/toml_document.h"
#include "cli/commands.h"
#include "lock/lock_check.h"
#include "lock/lock_resolver.h"
#include "project/project.h"
#include "report/golden_pin.h"
#include "report/report_file.h"
#include "report/report_view.h"

namespace trainlock::cli {
namespace {

struct LockCommandOptions {
  std::string dir = ".";
  bool check = false;
  bool offline = false;
  bool python_only = false;
  bool skip_python = false;
  bool upstream = false;  // --check --upstream: also ask whether floating refs moved
  bool json = false;
  long timeout_s = 30;
  std::string golden_report;  // --golden REPORT
};

// --check: the CI drift gate. Offline by design: it asks whether the lock still pins what the
// manifest and config say, from the lock's own pins, so it gives the same answer on a runner
// without network and never depends on what a registry or the Hub serves today. --upstream
// asks that second question too: whether a tag or branch the manifest floats on has moved.
int CheckLock(const std::filesystem::path& dir, const LockCommandOptions& options) {
  const std::filesystem::path path = dir / kLockFile;
  const std::string relock = "; run `trainlock lock " + options.dir + "`";
  LockOptions o;
  o.offline = !options.upstream;
  o.skip_python = !options.upstream;  // the lock's own closure, when the request is unchanged
  o.index.timeout_s = options.timeout_s;
  o.registry.timeout_s = options.timeout_s;
  o.hub.timeout_s = options.timeout_s;
  const LockCheckResult check = CheckLockAgainstFiles(dir, o);
  const std::string& current = check.lock_sha256;
  if (!check.up_to_date) {
    // The lines quote the lock and what the indexes and registries answer: one line each,
    // through the terminal-safe printer.
    std::cerr << path.string() << ": error: " << TerminalLine(check.problem) << relock << "\n";
    // Each field by name (a hand edit of validate.required shows as that field), then the lines.
    for (const std::string& field : check.fields)
      std::cerr << path.string() << ": " << TerminalLine(field) << "\n";
    for (const std::string& line : check.would_change)
      std::cerr << "  would change: " << TerminalLine(line) << "\n";
    return kExitVerdict;
  }
  // Offline, "up to date" covers what offline can check; the rest is named, never implied.
  const std::vector<std::string>& unchecked = check.not_checked_offline;
  if (options.json) {
    std::cout << DumpJsonOutput(
                     nlohmann::json{{"lock", path.string()},
                                    {"up_to_date", true},
                                    {"checked", options.upstream ? "upstream" : "offline"},
                                    {"not_checked_offline", unchecked},
                                    {"lock_sha256", current}})
              << "\n";
    return kExitOk;
  }
  std::cout << path.string() << ": up to date" << (unchecked.empty() ? "" : " offline")
            << " (lock-sha256 " << current << ")\n";
  if (!unchecked.empty()) {
    std::cout << path.string() << ": not checked offline: " << JoinStrings(unchecked, ", ")
              << ": run `trainlock lock " << options.dir << " --check --upstream`\n";
  }
  return kExitOk;
}

// --golden REPORT: the digest a passing report's round trip computed, pinned under its key.
// Only a pass is pinned: a failing node's digest, or a negative control's, is no reference.
int PinGolden(const std::filesystem::path& dir, const LockCommandOptions& options) {
  const std::string& file = options.golden_report;
  const ReportView report = ViewOfReport(ReadReportFile(file, file));
  if (!report.golden)
    throw InputError(Diagnostic{
        file, {}, "carries no golden digest", "pin a report whose train.roundtrip passed bitwise"});
  if (report.verdict != "pass" || !report.negative_control.empty())
    throw InputError(Diagnostic{file,
                                {},
                                "is not a passing report: its digest is no reference",
                                "pin the report of a node that passed"});
  const Project project = LoadProject(dir, ManifestRequirement::kOptional);
  RequireLock(project, "cannot read: no such file: the golden digest is pinned into the lock");
  const std::filesystem::path path = dir / kLockFile;
  const std::string text = LockTextWithGoldenPin(ReadInputFile(path, path.string()), path.string(),
                                                 project.lock->lock_build_sha256, *report.golden);
  WriteFileAtomically(path, text);
  const std::string key = GoldenKeyId(report.golden->key);
  if (options.json) {
    std::cout << DumpJsonOutput(nlohmann::json{{"lock", path.string()},
                                               {"key_sha256", key},
                                               {"digest", report.golden->digest}})
              << "\n";
  } else {
    std::cout << "pinned golden digest " << report.golden->digest << " for key " << key << " ("
              << TerminalLine(report.golden->key.gpu) << ") in " << path.string() << "\n";
  }
  return kExitOk;
}

int RunLock(const LockCommandOptions& options, const GlobalOptions& global) {
  const std::filesystem::path dir = options.dir;
  if (options.check) return CheckLock(dir, options);
  if (!options.golden_report.empty()) return PinGolden(dir, options);
  LockOptions o;
  o.offline = options.offline;
  o.python_only = options.python_only;
  o.skip_python = options.skip_python;
  o.index.timeout_s = options.timeout_s;
  o.registry.timeout_s = options.timeout_s;
  o.hub.timeout_s = options.timeout_s;  // the Hub too: a stalled Hub must not hold CI for minutes
  // A missing or unreadable manifest is said alone, without a step that began and stopped.
  ReadInputFile(dir / kManifestFile, DisplayPath(dir, kManifestFile));
  std::unique_ptr<Progress> progress = MakeProgress(global, "trainlock lock");
  progress->Begin(options.offline ? "locking offline from the existing lock"
                                  : "resolving base images, Hub revisions, Python closures and "
                                    "local files");
  const ResolvedLock lock = ResolveLock(dir, o);
  progress->End();
  const std::filesystem::path path = dir / kLockFile;
  WriteFileAtomically(path, lock.text);
  if (options.json) {
    std::cout << DumpJsonOutput(nlohmann::json{{"lock", path.string()},
                                               {"written", true},
                                               {"lock_sha256", lock.lock_sha256},
                                               {"pinned", lock.pinned}})
              << "\n";
    return kExitOk;
  }
  if (global.quiet()) return kExitOk;
  for (const std::string& line : lock.pinned) std::cout << "  " << TerminalLine(line) << "\n";
  std::cout << "wrote " << path.string() << " (lock-sha256 " << lock.lock_sha256 << ")\n";
  return kExitOk;
}

}  // namespace

Command RegisterLock(CLI::App& app, const GlobalOptions& global) {
  auto options = std::make_shared<LockCommandOptions>();
  CLI::App* cmd = app.add_subcommand(
      "lock",
      "Resolve DIR/trainlock.toml into DIR/trainlock.lock: base images to the digests their\n"
      "registries serve (each platform's manifest digest too), Hugging Face revisions to\n"
      "commits with every file's size and SHA-256, local files and custom-op sources hashed,\n"
      "each target's Python closure (torch, [python] and every dependency) to one wheel each\n"
      "with its SHA-256 from the target's package indexes. Every body is verified against its\n"
      "digest; nothing is written unless everything resolves. Exit 1 when content does not\n"
      "match its digest or a closure cannot be satisfied (or, with --check, the lock is\n"
      "stale), 3 when a registry, the Hub or an index cannot answer. Credentials: "
      "TRAINLOCK_REGISTRY_USERNAME/PASSWORD or\n"
      "~/.docker/config.json; HF_TOKEN; HF_ENDPOINT for another Hub.");
  cmd->add_option("DIR", options->dir,
                  "Project directory (or its trainlock.lock or trainlock.toml)")
      ->transform(ProjectDirArgument())
      ->capture_default_str();
  cmd->add_flag("--check", options->check,
                "The CI drift gate, offline (no network at all): write nothing; exit 1 when the "
                "lock is missing, or stale against the manifest or config, or hand-edited (a field "
                "differing from what the manifest and the lock's own pins derive), naming each "
                "field; when up to date, names what only --upstream checks (the wheels' "
                "dependencies and hashes, a tag-only base's digest...)");
  cmd->add_flag("--upstream", options->upstream,
                "With --check: also ask the registries and the Hub whether a tag or branch the "
                "manifest floats on now resolves elsewhere (network; exit 3 when they cannot "
                "answer)");
  cmd->add_flag("--offline", options->offline,
                "Never touch the network: use only what the manifest or the existing lock pins");
  cmd->add_flag("--python-only", options->python_only,
                "Ask only the package indexes; base images and Hub revisions as with --offline");
  cmd->add_flag(
      "--skip-python", options->skip_python,
      "Never ask the package indexes: keep the existing lock's closures where the request "
      "is unchanged, leave the others unresolved (`image generate` then refuses them)");
  cmd->add_flag("--json", options->json,
                "Print the lock's path, lock-sha256 and what was pinned as JSON");
  cmd->add_option("--golden", options->golden_report,
                  "Instead of resolving: pin the golden digest of this passing REPORT into the "
                  "lock under its key ([golden.<key-sha256>]), which `trainlock gate` then holds "
                  "every report of that key to");
  cmd->add_option("--timeout", options->timeout_s, "Seconds per network request")
      ->capture_default_str()
      ->check(CLI::Range(1L, 3600L));
  return [options, &global] { return RunLock(*options, global); };
}

}  // namespace trainlock::cli
