// The compatibility report (`report.json`, schema trainlock.report/v2): the contract that the
// validator writes and that gate, plan and CI read (docs/DESIGN.md, "Report"). The whole format
// is declared here: Report::ToJson writes every member and ReportSchemaViolations checks them;
// readers take the facts through report_view.h.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "report/golden_digest.h"

namespace trainlock {

// The schema this trainlock writes and reads; docs/formats.md ("Report") says what changed
// from the earlier versions, which are refused (ReportSchemaVersionProblem), never read as this.
inline constexpr const char* kReportSchema = "trainlock.report/v2";

enum class CheckStatus { kPass, kFail, kSkip, kError };
const char* CheckStatusName(CheckStatus status);

struct CheckResult {
  std::string id;  // a check id from check_ids.h
  CheckStatus status = CheckStatus::kSkip;
  double duration_s = 0;
  std::string summary;  // one line a person reads
  std::string remedy;   // what to do about a fail/error/skip; "" for a pass
  nlohmann::json metrics = nlohmann::json::object();
};

// Which process of a distributed validation wrote the report.
struct ReportRank {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  std::string launcher;  // "torchrun" | "slurm" | "standalone"
};

// A lock-drift finding (lock.stale, lock.config) that --allow-drift let the validator train past.
struct ReportDrift {
  std::string id;
  std::string message;
};

// Where the round trip wrote its checkpoints: "lock" the lock's validate.checkpoint-dir (the
// storage the long run uses), "option" --checkpoint-dir overriding it, "work-dir" neither (the
// lock names none). `path` is the storage, not this run's own directory under it.
struct ReportCheckpointDir {
  std::string path;
  std::string source;
};

// The Python engine's interpreter as the validator probed it before any training
// (validators/coordinator/engine_probe.h); absent for the native engine, which is this binary.
struct ReportEngine {
  std::string name;    // the lock's validate.engine
  std::string python;  // the interpreter's path; "" when there is none
  std::string torch;   // torch.__version__ in that interpreter; "" when unknown
  nlohmann::json versions = nlohmann::json::object();  // {module: version} it imported
  // Inside an image: the interpreter is the image's recorded one and every file on its path was
  // found as the image recorded it before it ran (checks/python_files.h). False outside one:
  // nothing verified the host's interpreter.
  bool python_verified = false;
};

struct Report {
  std::string lock_sha256;
  // What the run trained from: the training config's bytes and the manifest's canonical form
  // (validate refuses a project without its manifest; an image carries its own in
  // /etc/trainlock). The gate compares the config hash with the lock's config-sha256.
  std::string config_sha256;
  std::string manifest_sha256;
  std::vector<ReportDrift> drift;  // non-empty only with --allow-drift
  // "rng" | "data" | "corrupt" | "torn-snapshot" | "bitflip" when the run broke on purpose
  // (--negative-control): such a report exists to fail, and its verdict is never "pass".
  std::string negative_control;
  std::optional<std::pair<std::string, std::string>> image;  // ref, digest
  // How the digest was obtained: "container-tool" (measured by the container tool that ran the
  // validator: `trainlock validate --image`) | "environment" (only claimed, by
  // TRAINLOCK_IMAGE_DIGEST, as a job that pulled the image by digest sets it); "" unknown.
  std::string image_digest_source;
  std::string validator_version;
  std::string torch_version;
  std::string build;  // "cpu" | "cuda" | "rocm"
  // The lock target the run validated ("cpu" | "cuda" | "rocm"): the one whose image carries
  // this build of the validator, so it equals `build`. The gate matches it with --target.
  std::string target;
  nlohmann::json host = nlohmann::json::object();
  nlohmann::json devices = nlohmann::json::array();
  std::string started_at;  // RFC 3339, UTC
  double duration_s = 0;
  std::vector<CheckResult> checks;
  std::vector<std::string> required;  // check ids that must pass for a "pass" verdict

  // How the validator ran, for the person reading the report; the verdict ignores them.
  std::string project;                  // the manifest's project name
  std::optional<std::string> work_dir;  // kept with --keep-work; null when it was removed
  std::vector<std::string> only;        // --only; the member is absent when empty
  std::optional<ReportCheckpointDir> checkpoint_dir;  // absent before any training was set up
  std::optional<ReportRank> rank;                     // absent from a single process's report
  // The entries of every rank (rank_merge.h), in the merged report of a distributed validation
  // only: each rank's own report leaves them out.
  std::optional<nlohmann::json> ranks;
  // A rank's own report of a distributed validation (report.rank-N.json): one part of the run,
  // written as "partial": true. Only the merged report clears the gate; a report whose rank
  // has world_size > 1 and that has no `ranks` is partial whatever it says (IsPartialReport).
  bool partial = false;

  std::optional<ReportEngine> engine;
  // What the round trip's deterministic steps computed, with the key it is comparable under
  // (golden_digest.h, GoldenOfReport); written as null when train.roundtrip did not pass bitwise.
  std::optional<GoldenDigest> golden;
  // Why the node was not judged: this environment cannot run the validation (the engine's
  // interpreter, framework or torch is missing or unusable here). One line naming what and how
  // to get it; non-empty makes the verdict "error" (exit 3) whatever the checks say.
  std::string environment_error;

  // "error" when environment_error is set (the node was not judged); else "pass" when no check
  // is failing (IsFailingCheck) and the run was no negative control; else "fail".
  std::string Verdict() const;
  nlohmann::json ToJson() const;
};

// The one rule for a check that fails a report, shared by the verdict, the gate and the fleet
// summary: it failed or errored, or it is required and did not pass. A required check that was
// skipped, is absent from the report (status ""), or has a status the schema does not know
// fails: a check that did not run proves nothing.
bool IsFailingCheck(std::string_view status, bool required);

// Whether a report document is one rank's part of a distributed run: it says "partial": true,
// or its rank, or the world_size its comm.ddp or comm.allreduce metrics state, is above 1 and it
// carries no `ranks` (the merged report's alone): a rank's report with `partial` and `rank`
// removed is still partial.
bool IsPartialReport(const nlohmann::json& report);

// The largest world_size the report's comm.ddp and comm.allreduce metrics state; nullopt when
// neither states one.
std::optional<int64_t> CollectiveWorldSize(const nlohmann::json& report);

// Schema violations of a report document, each "json.path: problem"; empty when it conforms
// to kReportSchema.
std::vector<std::string> ReportSchemaViolations(const nlohmann::json& report);

// For a report of another version of the format ("schema" another "trainlock.report/..."), one
// line saying which schema it has, that this trainlock reads kReportSchema and that the node must
// be validated again with it; "" otherwise (this version, or no report schema at all, which
// ReportSchemaViolations names). The gate and every reader of report files refuse such a report
// as bad input (exit 2) before looking at anything else.
std::string ReportSchemaVersionProblem(const nlohmann::json& report);

}  // namespace trainlock
