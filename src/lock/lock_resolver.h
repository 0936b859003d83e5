// `trainlock lock`'s engine: the manifest resolved into a lock. Base images are pinned to
// the digest the registry serves (with each platform's manifest digest), Hugging Face
// revisions to commits with every file's size and SHA-256, local files and custom-op sources
// hashed, and each target's Python closure resolved from its package indexes
// (python_resolver.h). Lookups run concurrently. Offline, only what the manifest or the
// existing lock already pins is used.
// The lock is the manifest's own document with those values filled in, written in sorted
// key order, so the same inputs always give the same bytes.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <toml++/toml.h>

#include "base/failure.h"
#include "lock/hf_hub.h"
#include "lock/oci_registry.h"
#include "lock/python_index.h"

namespace trainlock {

struct LockOptions {
  bool offline = false;
  // Ask only the package indexes: registries and the Hub as with --offline.
  bool python_only = false;
  // Never ask the package indexes: a closure the existing lock cannot supply is left
  // unresolved (the lock says so; `image generate` refuses such a target).
  bool skip_python = false;
  // The validator's re-derivation (lock_rederive.h): the pins of files it verifies where it
  // uses them are taken from the existing lock instead of being hashed here (a changed file is
  // then that check's failure, not an edited lock): the local model and dataset files (its
  // workers hash each as they read it), a prebuilt custom-op library the lock pins (the ops
  // worker hashes it before loading it), the Python engine's files (the coordinator hashes
  // them before running them); so are custom-op source trees, which it never reads (an image
  // carries only the library built from them). `check` and `lock --check` hash them all.
  bool pins_verified_at_use_from_lock = false;
  RegistryOptions registry;
  HubOptions hub;
  IndexOptions index;
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

// Resolves DIR/trainlock.toml. Throws InputError for bad project files and a Failure when
// something cannot be pinned, naming every value that could not, not only the first: exit 1
// when content did not match its digest or --offline has no pin for it, else 3 (could not
// ask); a mismatch outranks an unreachable registry.
ResolvedLock ResolveLock(const std::filesystem::path& dir, const LockOptions& options);

}  // namespace trainlock
