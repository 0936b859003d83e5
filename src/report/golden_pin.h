// Golden digests pinned in the lock (`trainlock lock --golden REPORT`, lockfile.h's GoldenPin): the
// pin's one writer, and the comparison `trainlock gate` and `fleet summarize --lock` hold reports
// to.
//
// A pin is `[golden.<key-sha256>]` with the digest and the key's members as the report names them
// (report/golden_digest.h). It is an output of validation, as [images] is of a build: it changes
// lock-sha256 but not the build identity, which the key itself names.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "project/lockfile.h"
#include "report/golden_compare.h"
#include "report/golden_digest.h"

namespace trainlock {

// `lock_text` with `golden` pinned under its key (a pin already there for that key replaced).
// Throws InputError (exit 2) when the report's key names another build identity than the lock's
// (`lock_build_sha256`): a digest of another lock is no pin of this one.
std::string LockTextWithGoldenPin(const std::string& lock_text, const std::string& display,
                                  const std::string& lock_build_sha256, const GoldenDigest& golden);

// The pin for `key`, nullptr when the lock pins none for it.
const GoldenPin* PinnedGoldenFor(const Lockfile& lock, const GoldenKey& key);

// The one comparison with the lock's pin, which `trainlock gate` holds one report to and `fleet
// summarize --lock` a round's reports under one key: CompareGolden of `witnesses` against the
// digest the lock pins for `key`; nullopt when it pins none for that key (compared with nothing).
std::optional<GoldenVerdict> CompareWithLockPin(const Lockfile& lock, const GoldenKey& key,
                                                const std::vector<GoldenWitness>& witnesses);

// The one rule for a report that carries no golden digest (train.roundtrip did not pass bitwise,
// or did not run) where the lock pins some: the reason `trainlock gate` refuses it and `fleet
// summarize --lock` fails its node for; nullopt when the lock pins none or the report has one.
std::optional<std::string> MissingGoldenRefusal(const Lockfile& lock, bool report_has_golden);

}  // namespace trainlock
