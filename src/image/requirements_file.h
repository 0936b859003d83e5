// requirements.txt of an image: the lock's Python closure for one target in pip's
// hash-checking mode (one `name==version --hash=sha256:...` per wheel, the target's indexes as
// --index-url / --extra-index-url), so that `pip install --require-hashes --no-deps` installs
// exactly the pinned wheels and fails on any other byte.
#pragma once

#include <string>

#include "project/lockfile.h"

namespace trainlock {

// `target` must have a resolved closure (target.wheels).
std::string RequirementsFile(const Target& target, const std::string& lock_sha256);

}  // namespace trainlock
