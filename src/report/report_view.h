// The one way to read a report.json: a view of the facts that the renderers, the gate, the plan
// and the fleet summary take from a report (report.h declares the format they read).
//
// A report is untrusted input: it may have been edited by hand, truncated or forged, and a
// reader runs before (or without) the schema check. So the view is tolerant: a missing or
// ill-typed member becomes "" (a string), NaN or nullopt (a number), or an empty list, and
// reading never throws. Deciding what the facts mean (a verdict, a refusal) is the readers' job.
#pragma once

#include <nlohmann/json.hpp>

#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "report/golden_digest.h"

namespace trainlock {

struct CheckView {
  std::string id;
  std::string status;  // "pass" | "fail" | "skip" | "error"; anything else as given
  double duration_s = std::numeric_limits<double>::quiet_NaN();  // NaN when absent
  std::string summary;
  std::string remedy;
  // Always an object. Metrics nested more than 32 levels deep are replaced by a note: copying
  // and printing JSON recurse, and a hostile report could nest a million levels.
  nlohmann::json metrics = nlohmann::json::object();
};

struct DeviceView {
  std::string name;
  std::string arch;  // compute_capability, else gfx
  std::optional<double> memory_bytes;
};

struct HostView {
  std::string hostname;
  std::string os;
  std::optional<double> cpus;
  std::optional<double> memory_bytes;
};

// One rank of a distributed validation's merged report (its `ranks` entries).
struct RankView {
  std::string rank;  // "3"; "?" when absent
  std::string device;
  std::string host;
  std::string error;  // a rank that sent no result: why
  std::optional<double> tokens_per_s;
  std::optional<double> peak_reserved_bytes;
  std::string digest;                   // the first 12 hex of its uninterrupted run's digest
  int passed = 0;                       // its own checks that passed
  std::vector<std::string> not_passed;  // "train.roundtrip fail"
};

struct ReportView {
  std::string project;
  std::string verdict;            // "pass" | "fail" | "error" (not judged: environment_error)
  std::string environment_error;  // why the node was not judged; "" when it was
  // A Python engine's interpreter and its torch, as probed; "" for the native engine.
  std::string engine_python;
  std::string engine_torch;
  bool engine_python_verified = false;  // engine.python_verified (report.h)
  std::string lock_sha256;
  std::string config_sha256;    // "" when the report does not say
  std::string manifest_sha256;  // "" when the report does not say (an older validator)
  std::string
      negative_control;  // "rng" | "data" | "corrupt" | "torn-snapshot" | "bitflip"; "" if real
  std::vector<std::string> drift;   // "lock.config: ..." for each drift --allow-drift let past
  std::string image_ref;            // "" when the report has no image
  std::string image_digest;         // "" when the report has no image
  std::string image_digest_source;  // "container-tool" | "environment"; "" when it does not say
  std::string validator_version;
  std::string torch;
  std::string build;
  std::string target;  // the lock target it validated; "" when the report does not say
  // checkpoint_dir.source: "lock" | "option" | "work-dir"; "" when the report does not say.
  std::string checkpoint_dir_source;
  std::string started_at;
  double duration_s = std::numeric_limits<double>::quiet_NaN();  // NaN when absent
  HostView host;
  std::vector<DeviceView> devices;    // one per entry of `devices`, whatever its type
  std::vector<CheckView> checks;      // one per entry of `checks`, whatever its type
  std::vector<std::string> required;  // the string entries of `required`
  std::vector<RankView> ranks;        // empty for a single process
  bool partial = false;               // one rank's part of a distributed run (IsPartialReport)
  // The golden digest and its key (golden_digest.h); nullopt when the report has none.
  std::optional<GoldenDigest> golden;
  // It carries a `signature` member; whether that verifies is report_signing.h's to say.
  bool is_signed = false;
  std::optional<int64_t> rank;        // `rank.rank`, when the report has a rank
  std::optional<int64_t> world_size;  // `rank.world_size`

  // The first check with this id; nullptr when the report has none.
  const CheckView* FindCheck(std::string_view id) const;
  bool IsRequired(std::string_view id) const;
  // How many checks have this status.
  int Count(std::string_view status) const;
};

ReportView ViewOfReport(const nlohmann::json& report);

// A member's string value, or "" when it is absent or not a string: readers of a report that
// may have been tampered with use this instead of nlohmann's value(), which throws.
std::string StringMember(const nlohmann::json& object, const char* key);

// The member `key` of `object` when it is a finite number; nullopt otherwise.
std::optional<double> FiniteNumber(const nlohmann::json& object, const char* key);

}  // namespace trainlock
