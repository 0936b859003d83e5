// The offline drift check of a lock against its project's files: `trainlock lock --check`
// runs it, and so does `trainlock gate --lock DIR` before it trusts a report of that lock.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "lock/lock_resolver.h"

namespace trainlock {

struct LockCheckResult {
  bool up_to_date = false;
  // When not up to date: "missing", "edited: ...", or "stale: <why>".
  std::string problem;
  // When stale: each field that differs, by name ("validate.required: [] but trainlock.toml
  // says [...]"), so that a hand edit is named; then the lock lines re-locking would write.
  std::vector<std::string> fields;
  std::vector<std::string> would_change;
  std::string lock_sha256;  // of DIR/trainlock.lock as it is
  // Offline, what the check took on trust from the lock's own pins (PinsNotCheckedOffline):
  // an up-to-date lock is up to date offline only, and these say what `--upstream` checks.
  std::vector<std::string> not_checked_offline;
};

// Re-resolves DIR's manifest from the lock's own pins (offline unless `o` asks otherwise),
// hashing the config and the local model and dataset files, and compares the result with
// DIR/trainlock.lock. A manifest asking for something the lock does not pin is stale. Throws
// what ResolveLock throws otherwise (InputError for a missing local file).
LockCheckResult CheckLockAgainstFiles(const std::filesystem::path& dir, const LockOptions& o);

}  // namespace trainlock
