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

// `check`'s view: one "lock.edited" finding per field the offline re-derivation of
// project.dir's lock gives differently, and per pin that does not follow from the manifest
// (pin_consistency.h) ("lock.stale" when it cannot re-derive at all). None
// when there is no lock or the lock is already stale against the manifest or config (those
// have their own findings).
std::vector<Finding> RederivedLockFindings(const Project& project);

}  // namespace trainlock
