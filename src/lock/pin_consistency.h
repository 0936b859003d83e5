// What the lock's own pins must satisfy given the manifest, offline. The re-derivation
// (lock_rederive.h) takes digests and closures from the lock's pins; a hand edit of a pin
// itself is caught here, from what follows from trainlock.toml and the pins without a network:
//   - each target's closure holds, for every [python] package and the target's torch, exactly
//     one wheel whose version satisfies the manifest's pin (as the resolver asks, "==V");
//   - each wheel's name and version are those its file name spells (a wheel's file name is its
//     distribution and version), and the closure names each package once;
//   - a base pinned with base-platforms names an index: its digest is none of the per-platform
//     manifest digests the index lists (an index cannot list itself).
// What needs the wheels' METADATA (whether every dependency a wheel declares is locked) or the
// registry (whether the index digest is the one the tag served) is not knowable offline: `lock
// --check --upstream` re-resolves both.
// PinsNotCheckedOffline names those, so that `check` and `lock --check` never call a lock "ok"
// for more than they checked.
#pragma once

#include <string>
#include <vector>

#include "lock/lock_rederive.h"
#include "project/lockfile.h"

namespace trainlock {

// One entry per pin that does not follow from `manifest`, naming the lock field
// ("targets.cpu.wheels[0].version") and why; empty when every pin is consistent.
std::vector<LockFieldDifference> PinConsistencyProblems(const Lockfile& lock,
                                                        const Lockfile& manifest);

// What the offline checks take on trust from the lock's own pins, one phrase each, for the
// user to read after "not checked offline: ": per target with wheels, their dependencies and
// hashes ("the dependencies and hashes of cpu's wheels (a deleted dependency wheel)"); per
// target whose manifest names its base by tag alone, the digest the tag resolved to ("the base
// digest of cpu's tag-only base"); per target with Debian packages, their versions and hashes;
// for a Hub model or dataset, the commit a branch or tag resolved to and the files' hashes.
// Empty when the manifest pins all of it. `lock --check --upstream` re-resolves each.
std::vector<std::string> PinsNotCheckedOffline(const Lockfile& lock, const Lockfile& manifest);

}  // namespace trainlock
