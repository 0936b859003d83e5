// `trainlock gate`: the decision a launcher or CI makes before a long run, from a report and
// the lock it must match. Every reason to refuse is collected, not only the first, so one run
// of the gate tells the operator everything to fix.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "compat/catalog.h"
#include "project/lockfile.h"

namespace trainlock {

struct GateRequest {
  std::string report_path;  // for messages
  std::string report_text;  // the file's bytes, as read (the signature covers them)
  const Lockfile* lock = nullptr;
  std::string lock_path;
  std::string lock_sha256;
  std::vector<std::string> require;  // --require: checks required on top of the lock's
  std::optional<int64_t> max_age_s;  // --max-age, else the lock's valid-for
  // Where max_age_s came from, for the refusal: "--max-age" or "the lock's validate.valid-for".
  std::string max_age_source = "--max-age";
  // --node: the node the run is about to use; the report must have been made on it (its
  // host.hostname, which the validator takes from TRAINLOCK_NODE_NAME or gethostname).
  std::optional<std::string> node;
  std::optional<std::string> public_key_pem;  // --key
  bool allow_unsigned = false;                // --allow-unsigned: no --key is not a refusal
  std::optional<std::string> image_digest;    // --image: the report must have run in it
  // --target: the lock target the long run uses; the report must have validated it. Without
  // it the lock must have one target (the CLI refuses an ambiguous lock, exit 2).
  std::optional<std::string> target;
  // The project's files against the lock (lock_check.h, what `lock --check` runs), checked by
  // the caller: each a drift that refuses ("files" topic), and the fact a pass states.
  std::vector<std::string> file_drift;
  std::string files_fact;
  int64_t now_s = 0;  // seconds since the epoch
  // --require-lock-checkpoint-dir: the round trip must have checkpointed to the lock's storage
  // (the report's checkpoint_dir.source "lock"), not to a --checkpoint-dir override.
  bool require_lock_checkpoint_dir = false;
  // --require-engine: the round trip must have been trained by this engine (the lock's
  // validate.engine is required whenever a training check passed).
  std::optional<std::string> require_engine;
};

struct GateDecision {
  // Why the gate refuses, each "<topic>: <sentence>" with topic one of signature, schema,
  // partial, lock, files, config, target, image, devices, checks, checkpoint, evidence, age, node.
  // Empty when the report clears the gate.
  std::vector<std::string> reasons;
  // What was established when it clears: the facts the pass line prints.
  std::vector<std::string> facts;
  bool allowed() const { return reasons.empty(); }
  nlohmann::json ToJson() const;
};

// Decides. Throws InputError (exit 2) when the report is not JSON and no key was given, and for a
// report of another version of the format (ReportSchemaVersionProblem) whose signature, if a key
// was given, holds; with a key an unreadable report is a refusal on its signature, since it may
// have been tampered with.
GateDecision EvaluateGate(const GateRequest& request, const Catalog& catalog);

}  // namespace trainlock
