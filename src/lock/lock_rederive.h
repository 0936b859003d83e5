// The lock re-derived offline and compared field by field: what `check` and `lock --check`
// use to refuse a hand-edited lock. Every field the manifest decides (required checks,
// tolerances, targets, custom ops, the config path, the seed...) is re-derived from
// trainlock.toml; what only the network can re-resolve (digests, commits, file hashes,
// wheels) is taken from the lock's own pins. [images] is an output of `image build --push`,
// not derivable, and is left out of the comparison (lock-sha256 covers it).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <toml++/toml.h>

#include "compat/finding.h"
#include "project/project.h"

namespace trainlock {

struct LockFieldDifference {
  std::string field;    // dotted, e.g. "validate.required"
  std::string locked;   // the lock's value as JSON, or "(absent)"
  std::string derived;  // the re-derived value as JSON, or "(absent)"
  // A pin that contradicts what follows from the manifest (pin_consistency.h) says why here
  // instead: "'1.0.1' but [python] pins trainlock-demo-app at '1.0.0'".
  std::string note;

  // "validate.required: [] but trainlock.toml says [...]", or "FIELD: NOTE".
  std::string Describe() const;
};

// The fields where `lock` and `derived` differ, [images] and the header aside, in key order.
std::vector<LockFieldDifference> LockFieldDifferences(const toml::table& lock,
                                                      const toml::table& derived);

// Where the re-derivation takes the pins of files: `check` hashes them here; the validator,
// which verifies each file where it uses it, takes them from the lock (LockOptions'
// pins_verified_at_use_from_lock: local model and dataset files, a pinned prebuilt custom-op
// library, the Python engine's files, custom-op sources), so that a file changed since locking
// fails the check that uses it and only a lock changed since is refused as edited.
enum class FilePins { kHashedHere, kVerifiedAtUse };

// `check`'s view, and the validator's before any work: one "lock.edited" finding per field the
// offline re-derivation of project.dir's lock gives differently, and per pin that does not
// follow from the manifest (pin_consistency.h) ("lock.stale" when it cannot re-derive at all).
// None when there is no lock or manifest, or the lock is already stale against the manifest or
// config (those have their own findings, lock_drift.h).
std::vector<Finding> RederivedLockFindings(const Project& project,
                                           FilePins files = FilePins::kHashedHere);

// What that offline re-derivation took on trust from the lock's own pins
// (PinsNotCheckedOffline, pin_consistency.h); empty when it did not run (no lock or manifest,
// or a stale lock).
std::vector<std::string> NotCheckedOffline(const Project& project);

}  // namespace trainlock
