// `trainlock lock`'s engine: the manifest resolved into a lock. Base images are pinned to
// the digest the registry serves (with each platform's manifest digest), Hugging Face
// revisions to commits with every file's size and SHA-256, local files hashed. Lookups run
// concurrently. Offline, only what the manifest or the existing lock already pins is used.
// The lock is the manifest's own document with those values filled in, written in sorted
// key order, so the same inputs always give the same bytes.
#pragma once

#include <filesystem>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <toml++/toml.h>

#include "lock/hf_hub.h"
#include "lock/oci_registry.h"

namespace trainlock {

// A value that could not be pinned; exit_code as RegistryError / HubError (3: could not
// ask, 1: content did not match, or offline and not pinned anywhere).
class LockError : public std::runtime_error {
 public:
  LockError(const std::string& what, int exit_code)
      : std::runtime_error(what), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

struct LockOptions {
  bool offline = false;
  RegistryOptions registry;
  HubOptions hub;
};

struct ResolvedLock {
  std::string text;                  // the lock file's bytes
  std::string lock_sha256;           // its identity
  std::string existing_lock_sha256;  // of DIR/trainlock.lock as it was; "" if missing/invalid
  std::vector<std::string> pinned;   // one line per resolved value, for the summary
};

// A lock document as trainlock writes it: the header comment, then the TOML in sorted key
// order (toml++'s formatter), so the same document always gives the same bytes.
std::string LockFileText(const toml::table& lock);

// Resolves DIR/trainlock.toml. Throws InputError for bad project files and LockError when
// something cannot be pinned (every failure, not only the first).
ResolvedLock ResolveLock(const std::filesystem::path& dir, const LockOptions& options);

}  // namespace trainlock
