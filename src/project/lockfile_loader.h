// Loading and schema-validating a manifest (trainlock.toml) or lock (trainlock.lock).
#pragma once

#include <string>
#include <string_view>

#include "project/lockfile.h"

namespace trainlock {

inline constexpr int64_t kLockVersion = 1;

// Parses and validates `text` as a manifest or lock. Every problem found is reported; throws
// InputError carrying all of them when there is any. `path` is used in messages only.
// On success `identity_sha256` holds manifest-sha256 (manifest) or lock-sha256 (lock).
Lockfile LoadLockfile(std::string_view text, const std::string& path, LockfileKind kind,
                      std::string* identity_sha256 = nullptr);

}  // namespace trainlock
