// The generated Containerfile's Debian step: the packages a lock pins for a target
// ([[targets.<t>.debs]]), from the lock's archive alone. apt downloads them (with what they
// depend on, each checked by apt against the archive's signed index) into a scratch directory;
// each pinned .deb there is compared with the sha256 the lock recorded, and the build fails
// naming the first package whose file differs; only then does apt install, from those very
// files, downloading nothing.
#pragma once

#include <string>

#include "project/lockfile.h"

namespace trainlock {

// The comment and the RUN line that install `t.debs` (the Containerfile templates'
// @DEBIAN_INSTALL@, starting with a newline); "" when the lock pins none.
std::string DebianInstallStep(const Target& t);

}  // namespace trainlock
