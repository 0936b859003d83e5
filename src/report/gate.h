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

// The node's last revoking event, as its watch recorded it (watch/node_record.h; the caller
// reads the record): a report that started before the event vouches for a node that has since
// reported a fault, and only a new pass started after it restores the node.
struct GateRevocation {
  int64_t at_s = 0;         // the event's UTC time, seconds since the epoch (fraction dropped)
  std::string event;        // "gpu 0000:3b:00 Xid 79 (fallen off the bus) at <UTC time>"
  std::string kernel_line;  // the kernel log's line
  std::string record;       // the record's path, for the refusal
};

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
  // --watch-state: the node's last revoking event, when its record holds one.
  std::optional<GateRevocation> revocation;
};

struct GateDecision {
  // Why the gate refuses, each "<topic>: <sentence>" with topic one of signature, schema,
  // partial, lock, files, config, target, image, devices, checks, checkpoint, evidence, age, node,
  // revoked.
  // Empty when the report clears the gate.
  std::vector<std::string> reasons;
  // What was established when it clears: the facts the pass line prints.
  std::vector<std::string> facts;
  bool allowed() const { return reasons.empty(); }
  nlohmann::json ToJson() const;
};

// The one revocation rule, for the gate and for `trainlock watch --once` alike: why a report
// whose started_at is `started_at` does not clear a node revoked by `revocation`, "" when it
// does (it started in a second after the event's). A start time that does not parse is a
// refusal: nothing says the report came after the fault.
std::string RevocationRefusal(const GateRevocation& revocation, const std::string& started_at);

// Decides. Throws InputError (exit 2) when the report is not JSON and no key was given, and for a
// report of another version of the format (ReportSchemaVersionProblem) whose signature, if a key
// was given, holds; with a key an unreadable report is a refusal on its signature, since it may
// have been tampered with.
GateDecision EvaluateGate(const GateRequest& request, const Catalog& catalog);

}  // namespace trainlock
