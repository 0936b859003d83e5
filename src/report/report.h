// The compatibility report (`report.json`, schema trainlock.report/v1): the contract that the
// validator writes and that gate, plan and CI read (docs/DESIGN.md, "Report").
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
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
  std::string image_digest_source;  // how the digest was obtained: "engine" | "job"; "" unknown
  std::string validator_version;
  std::string torch_version;
  std::string build;  // "cpu" | "cuda" | "rocm"
  nlohmann::json host = nlohmann::json::object();
  nlohmann::json devices = nlohmann::json::array();
  std::string started_at;  // RFC 3339, UTC
  double duration_s = 0;
  std::vector<CheckResult> checks;
  std::vector<std::string> required;  // check ids that must pass for a "pass" verdict

  // "pass" when no check failed or errored and every required check passed.
  std::string Verdict() const;
  nlohmann::json ToJson() const;
};

// Schema violations of a report document, each "json.path: problem"; empty when it conforms
// to trainlock.report/v1.
std::vector<std::string> ReportSchemaViolations(const nlohmann::json& report);

// A member's string value, or "" when it is absent or not a string: readers of a report that
// may have been tampered with use this instead of nlohmann's value(), which throws.
std::string StringMember(const nlohmann::json& object, const char* key);

// The current UTC time as RFC 3339 with seconds ("2026-11-29T21:33:10Z").
std::string NowRfc3339();

}  // namespace trainlock
