// Golden digests pinned in the lock (`trainlock lock --golden REPORT`, lockfile.h's GoldenPin): the
// pin's one writer, and the lookup `trainlock gate` holds a report to.
//
// A pin is `[golden.<key-sha256>]` with the digest and the key's members as the report names them
// (report/golden_digest.h). It is an output of validation, as [images] is of a build: it changes
// lock-sha256 but not the build identity, which the key itself names.
#pragma once

#include <filesystem>
#include <string>

#include "project/lockfile.h"
#include "report/golden_digest.h"

namespace trainlock {

// `lock_text` with `golden` pinned under its key (a pin already there for that key replaced).
// Throws InputError (exit 2) when the report's key names another build identity than the lock's
// (`lock_build_sha256`): a digest of another lock is no pin of this one.
std::string LockTextWithGoldenPin(const std::string& lock_text, const std::string& display,
                                  const std::string& lock_build_sha256, const GoldenDigest& golden);

// The pin for `key`, nullptr when the lock pins none for it.
const GoldenPin* PinnedGoldenFor(const Lockfile& lock, const GoldenKey& key);

}  // namespace trainlock
