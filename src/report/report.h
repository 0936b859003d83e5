// The compatibility report (`report.json`, schema trainlock.report/v1): the contract that the
// validator writes and that gate, plan and CI read (docs/DESIGN.md, "Report").
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainlock {

inline constexpr const char* kReportSchema = "trainlock.report/v1";

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

struct Report {
  std::string lock_sha256;
  std::optional<std::pair<std::string, std::string>> image;  // ref, digest
  std::string validator_version;
  std::string torch_version;
  std::string build;  // "cpu" | "cuda" | "rocm"
  nlohmann::json host = nlohmann::json::object();
  nlohmann::json devices = nlohmann::json::array();
  std::string started_at;  // RFC 3339, UTC
  double duration_s = 0;
  std::vector<CheckResult> checks;
  std::vector<std::string> required;  // check ids that must pass for a "pass" verdict

  // "pass" when no check is failing (IsFailingCheck).
  std::string Verdict() const;
  nlohmann::json ToJson() const;
};

// The one rule for a check that fails a report, shared by the verdict, the gate and the fleet
// summary: it failed or errored, or it is required and did not pass. A required check that was
// skipped, is absent from the report (status ""), or has a status the schema does not know
// fails: a check that did not run proves nothing.
bool IsFailingCheck(std::string_view status, bool required);

// Schema violations of a report document, each "json.path: problem"; empty when it conforms
// to trainlock.report/v1.
std::vector<std::string> ReportSchemaViolations(const nlohmann::json& report);

// The current UTC time as RFC 3339 with seconds ("2026-11-29T21:33:10Z").
std::string NowRfc3339();

}  // namespace trainlock
