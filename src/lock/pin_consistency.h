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
#pragma once

#include <vector>

#include "lock/lock_rederive.h"
#include "project/spec.h"

namespace trainlock {

// One entry per pin that does not follow from `manifest`, naming the lock field
// ("targets.cpu.wheels[0].version") and why; empty when every pin is consistent.
std::vector<LockFieldDifference> PinConsistencyProblems(const Spec& lock, const Spec& manifest);

}  // namespace trainlock
