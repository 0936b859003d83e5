// `trainlock gate REPORT --lock DIR [--key PUB] [--max-age DURATION] [--require CHECK...]`:
// exit 0 only when the report clears every rule of gate.h; otherwise print every reason.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "base/diagnostic.h"
#include "base/exit_code.h"
#include "base/failure.h"
#include "base/file_io.h"
#include "base/json_file.h"
#include "base/rank_env.h"
#include "base/refs.h"
#include "base/strings.h"
#include "base/terminal_text.h"
#include "base/time_text.h"
#include "cli/commands.h"
#include "compat/lock_drift.h"
#include "image/in_image_paths.h"
#include "lock/lock_check.h"
#include "lock/pinned_files_here.h"
#include "project/artifact_paths.h"
#include "project/check_ids.h"
#include "project/project.h"
#include "project/round_trip_engines.h"
#include "report/gate.h"
#include "report/report_attestation.h"
#include "report/report_signing.h"
#include "report/report_view.h"
#include "watch/node_record.h"

namespace trainlock::cli {
namespace {

struct GateOptions {
  std::string report;
  std::string lock_dir;  // --lock; "" = not given (GateLockDir)
  std::string key;
  std::optional<std::string> max_age;  // given (perhaps empty) or not
  std::vector<std::string> require;
  bool allow_unsigned = false;
  bool require_lock_checkpoint_dir = false;
  std::string require_engine;
  std::string image;
  std::string target;
  std::optional<std::string> node;           // --node NAME; a bare --node: this host's name
  std::string watch_state = kWatchStateDir;  // --watch-state DIR
  bool json = false;
};

// --target: the lock target the long run uses. A lock of one target names it; with several,
// the gate cannot tell which one the run will use, and a pass for another would be a pass
// for the wrong image and accelerators: exit 2 until --target says.
std::optional<std::string> GateTargetOf(const GateOptions& options, const Project& project) {
  const auto& targets = project.lock->targets;
  std::string names;
  for (const auto& [name, target] : targets) names += (names.empty() ? "" : ", ") + name;
  if (!options.target.empty()) {
    if (targets.contains(options.target)) return options.target;
    throw InputError(Diagnostic{"--target",
                                {},
                                "the lock has no target " + Quoted(options.target),
                                "give one of its targets: " + names});
  }
  if (targets.size() <= 1) return std::nullopt;
  throw InputError(
      Diagnostic{project.lock_path,
                 {},
                 "the lock has targets " + names + ": which one the long run uses is ambiguous",
                 "give --target with the one the run uses"});
}

// What matched among the files that are here, once some are absent.
std::string FilesHereFact(const Project& project, const PinnedFilesHere& here) {
  if (!project.config_read) return here.checked ? " (the pinned files here match the lock)" : "";
  return here.checked ? " (the config and the pinned files here match the lock)"
                      : " (the config matches the lock)";
}

// The project's files against the lock: the config's hash always (lock_drift.h), each pinned
// project file that is here hashed (pinned_files_here.h), and with the manifest and every file
// here, `lock --check`'s own offline re-derivation (lock_check.h). A pinned file that is here
// and cannot be used (a symlink out of the project, a directory, unreadable) or a project the
// check cannot read is a refusal; only for files truly absent (a report checked on another
// machine) does the gate rely on the hashes the report states, and it names them.
void CheckFiles(const std::string& dir, const Project& project, GateRequest& request) {
  const std::string relock = "; run `trainlock lock " + dir + "`, then validate again";
  for (const Finding& f : LockDrift(project))
    request.file_drift.push_back(f.id + ": " + f.message + relock);
  const PinnedFilesHere here = InspectPinnedFiles(project.dir, *project.lock);
  for (const std::string& why : here.unusable) {
    request.file_drift.push_back(why +
                                 "; a pinned file must be a readable regular file inside "
                                 "the project, as `trainlock lock` hashed it");
  }
  std::vector<std::string> absent = here.absent;
  if (!project.config_read) absent.insert(absent.begin(), project.config_path);
  if (!project.manifest) absent.insert(absent.begin(), project.manifest_path);
  if (!absent.empty()) {  // no re-derivation: each file that is here against its hash
    for (const std::string& change : here.changed) request.file_drift.push_back(change + relock);
    request.files_fact = "files not present: relying on the report for " +
                         JoinStrings(absent, ", ") + FilesHereFact(project, here);
    return;
  }
  if (!here.unusable.empty()) return;
  LockOptions o;
  o.offline = true;
  o.skip_python = true;
  try {
    const LockCheckResult check = CheckLockAgainstFiles(dir, o);
    if (!check.up_to_date) {
      std::string changed;
      for (const std::string& line : check.would_change) changed += "; would change: " + line;
      request.file_drift.push_back(project.lock_path + ": " + check.problem + changed + relock);
    } else {
      request.files_fact = "project files match the lock";
    }
  } catch (const InputError& e) {
    request.file_drift.push_back(std::string("the project's files cannot be checked against the "
                                             "lock: ") +
                                 e.what());
  } catch (const Failure& e) {
    request.file_drift.push_back(std::string("the project's files cannot be checked against the "
                                             "lock: ") +
                                 e.what());
  }
}

GateRequest BuildRequest(const GateOptions& options, const Project& project) {
  GateRequest request;
  request.report_path = options.report;
  request.report_text = ReadInputFile(options.report, options.report);
  request.lock = &*project.lock;
  request.lock_path = project.lock_path;
  request.lock_sha256 = project.lock->lock_build_sha256;
  request.require = options.require;
  for (const std::string& id : options.require) {
    if (!IsCheckId(id))
      throw InputError(Diagnostic{"--require", {}, "unknown check id " + Quoted(id), ""});
  }
  if (options.max_age) {
    request.max_age_s = ParseDurationSeconds(*options.max_age);
    if (!request.max_age_s || *request.max_age_s <= 0) {
      throw InputError(Diagnostic{"--max-age",
                                  {},
                                  "not a positive duration: " + Quoted(*options.max_age),
                                  "write it as e.g. 36h, 7d, 1h30m (units w d h m s)"});
    }
  } else if (project.lock->validate.valid_for_s > 0) {
    request.max_age_s = project.lock->validate.valid_for_s;
    request.max_age_source = "the lock's validate.valid-for";
  }
  if (options.node) {
    // Named as the validator names the node it runs on (TRAINLOCK_NODE_NAME, else the host).
    request.node = options.node->empty() ? HostName() : *options.node;
  }
  if (!options.image.empty()) {
    if (!IsDigest(options.image)) {
      throw InputError(Diagnostic{"--image",
                                  {},
                                  "not an image digest: " + Quoted(options.image),
                                  "give sha256:<64 hex>, as `trainlock image build` prints"});
    }
    request.image_digest = options.image;
  }
  request.target = GateTargetOf(options, project);
  request.allow_unsigned = options.allow_unsigned;
  request.require_lock_checkpoint_dir = options.require_lock_checkpoint_dir;
  if (!options.require_engine.empty()) request.require_engine = options.require_engine;
  if (!options.key.empty()) request.public_key_pem = ReadInputFile(options.key, options.key);
  request.now_s = std::chrono::duration_cast<std::chrono::seconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  return request;
}

// The node's last revoking event from its record under --watch-state (the node is --node's,
// else this host's): none without a directory or a record; a record that cannot be read or
// does not parse is bad input (ReadNodeRecord), never no revocation.
std::optional<GateRevocation> NodeRevocation(const GateOptions& options) {
  const std::string node = options.node && !options.node->empty() ? *options.node : HostName();
  const std::optional<NodeRecord> record = ReadNodeRecord(options.watch_state, node);
  if (!record || !record->revoked) return std::nullopt;
  GateRevocation revocation;
  revocation.at_s = record->revoked->at_us / 1000000;
  revocation.event = RecordedEventText(*record->revoked);
  revocation.kernel_line = record->revoked->kernel_line;
  revocation.record = NodeRecordPath(options.watch_state, node).string();
  return revocation;
}

// -v: every check the report carries with its status, the required ones (the lock's [validate]
// required and --require, as the gate judges them) marked, so that a
// decision can be read against the evidence. Nothing when the report is not JSON (the
// decision above already says so).
// With `evidence` (-vv) each check's summary and the metrics it rests on follow it.
// The report whose checks -v lists: the given one, or the one an attestation envelope carries
// once its key verifies it (nothing for an envelope that does not open: its checks are not the
// signer's to show).
std::optional<std::string> ReportToList(const GateRequest& request) {
  if (!LooksLikeEnvelope(request.report_text)) return request.report_text;
  std::string report_text;
  if (!request.public_key_pem ||
      !OpenReportAttestation(request.report_text, *request.public_key_pem, &report_text).empty())
    return std::nullopt;
  return report_text;
}

void PrintReportChecks(const GateRequest& request, const std::vector<std::string>& require,
                       bool evidence) {
  const std::optional<std::string> report_text = ReportToList(request);
  if (!report_text) return;
  std::string problem;
  std::optional<nlohmann::json> report = TryParseJsonText(*report_text, &problem);
  if (!report) return;
  const ReportView view = ViewOfReport(*report);
  if (view.checks.empty()) return;
  std::cout << "checks in " << TerminalLine(request.report_path) << ":\n";
  for (const CheckView& c : view.checks) {
    const std::string id = c.id.empty() ? "?" : c.id;
    const std::string status = c.status.empty() ? "?" : c.status;
    const bool required = std::find(require.begin(), require.end(), id) != require.end() ||
                          (request.lock && std::find(request.lock->validate.required.begin(),
                                                     request.lock->validate.required.end(),
                                                     id) != request.lock->validate.required.end());
    std::cout << "  " << TerminalLine(status) << " " << TerminalLine(id)
              << (required ? " (required)" : "") << "\n";
    if (!evidence) continue;
    if (!c.summary.empty()) std::cout << "      " << TerminalLine(c.summary) << "\n";
    if (!c.metrics.empty())
      std::cout << "      evidence: "
                << TerminalLine(
                       c.metrics.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))
                << "\n";
  }
}

// The project whose lock the report is compared with: --lock when given; else REPORT when it
// names a project directory (`gate DIR` reads that project's report, so its lock too); else
// the current directory.
std::string GateLockDir(const GateOptions& options) {
  if (!options.lock_dir.empty()) return LockDirOf(options.lock_dir);
  std::error_code ec;
  if (!options.report.empty() && std::filesystem::is_directory(options.report, ec))
    return options.report;
  return ".";
}

int RunGate(const GateOptions& options, const GlobalOptions& global) {
  Catalog catalog = LoadCatalog(global);
  const std::string dir = GateLockDir(options);
  // The lock is the one file a node needs (docs/fleet.md); the manifest and config are
  // compared with it when they are here.
  Project project = LoadProject(dir, ManifestRequirement::kLockAlone);
  RequireLock(project, "cannot read: no such file: the gate compares a report with a lock");
  GateOptions resolved = options;
  resolved.report = ReportPathOf(resolved.report.empty() ? dir : resolved.report);
  GateRequest request = BuildRequest(resolved, project);
  request.revocation = NodeRevocation(options);
  CheckFiles(dir, project, request);
  GateDecision decision;
  try {
    decision = EvaluateGate(request, catalog);
  } catch (const KeyError& e) {
    throw InputError(Diagnostic{options.key, {}, e.what(), "give the .pub file from keygen"});
  }
  if (options.json) {
    nlohmann::json out = decision.ToJson();
    out["report"] = resolved.report;
    out["lock"] = project.lock_path;
    std::cout << DumpJsonOutput(out) << "\n";
  } else if (decision.allowed()) {
    const std::string facts = JoinStrings(decision.facts, ", ");
    std::cout << "gate: pass: " << TerminalLine(resolved.report) << " clears "
              << TerminalLine(project.lock_path) << " (" << TerminalLine(facts) << ")\n";
  } else {
    std::cout << "gate: refused: " << TerminalLine(resolved.report) << " does not clear "
              << TerminalLine(project.lock_path) << " (" << decision.reasons.size() << " reason"
              << (decision.reasons.size() == 1 ? "" : "s") << ")\n";
    // Reasons quote the report (summaries, image ref): shown as text, never as escapes.
    for (const std::string& r : decision.reasons) std::cout << "  - " << TerminalLine(r) << "\n";
  }
  if (!options.json && global.verbosity > 0)
    PrintReportChecks(request, options.require, global.verbosity > 1);
  return decision.allowed() ? kExitOk : kExitVerdict;
}

}  // namespace

Command RegisterGate(CLI::App& app, const GlobalOptions& global) {
  auto options = std::make_shared<GateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "gate",
      "Decide whether a long run may start: exit 0 only when REPORT validated this lock\n"
      "(lock_sha256), ran in the lock's built image for its target, on the target's\n"
      "accelerators, with every required check passed (a skip is a refusal), within --max-age\n"
      "(default: the lock's [validate] valid-for), made on --node when given,\n"
      "carries a valid Ed25519 signature over exactly these bytes (--key; an unsigned report\n"
      "only with --allow-unsigned), trained the lock's config, is no negative control, and\n"
      "whose every passing check's metrics support the pass; that is no rank's partial report,\n"
      "validated --target (required with a multi-target lock), and whose project files (with\n"
      "--lock DIR) still match the lock, as `lock --check` sees them, and that started after\n"
      "the node's last revoking event (--watch-state). A refusal prints every reason.\n"
      "Exit 0 pass, 1 refused, 2 bad input.");
  cmd->add_option("REPORT", options->report,
                  "report.json written by trainlock-validate, or a project directory for its "
                  ".trainlock/reports/report.json, where it writes by default (default: the "
                  "--lock project's)");
  cmd->add_option("--lock", options->lock_dir,
                  "The lock: trainlock.lock itself or the project directory holding it "
                  "(default: REPORT's project when REPORT is a directory, else .)");
  cmd->add_option("--key", options->key, "Ed25519 public key (PEM) the report must be signed with");
  cmd->add_option("--max-age", options->max_age,
                  "Refuse a report older than this (e.g. 36h, 7d, 1h30m; default the lock's "
                  "[validate] valid-for, else no limit)");
  cmd->add_option("--node", options->node,
                  "Refuse a report made on another node than NAME (its host.hostname); a bare "
                  "--node names this host as the validator does (TRAINLOCK_NODE_NAME, else the "
                  "host name)")
      ->expected(0, 1);
  cmd->add_option("--watch-state", options->watch_state,
                  "The directory where `trainlock watch` keeps the node's revocation record "
                  "(default " +
                      std::string(kWatchStateDir) +
                      "): a report that started before "
                      "the node's last revoking event is refused; no directory or record is no "
                      "revocation, one that does not read is an error")
      ->type_name("DIR");
  cmd->add_flag("--allow-unsigned", options->allow_unsigned,
                "Accept a report without a signature (without --key the gate refuses otherwise)");
  cmd->add_option("--image", options->image,
                  "Refuse a report that did not run in this image (sha256:<64 hex>)");
  cmd->add_option("--require", options->require,
                  "Checks that must pass on top of the lock's [validate] required (a,b or "
                  "repeated)")
      ->delimiter(',')
      ->expected(1, -1);
  cmd->add_option("--target", options->target,
                  "The lock target the long run uses (cpu, cuda, rocm); required when the lock "
                  "has several: the report must have validated it");
  cmd->add_flag("--require-lock-checkpoint-dir", options->require_lock_checkpoint_dir,
                "Refuse a report whose checkpoints did not go to the lock's "
                "validate.checkpoint-dir (a --checkpoint-dir override, or a lock naming none)");
  cmd->add_option("--require-engine", options->require_engine,
                  "Refuse a report whose round trip another engine trained (native, ddp, fsdp2, "
                  "hf-trainer, lightning, deepspeed)")
      ->check(CLI::IsMember(RoundTripEngineNames()));
  cmd->add_flag("--json", options->json, "Print the decision as JSON");
  return [options, &global] { return RunGate(*options, global); };
}

}  // namespace trainlock::cli
