// What a rebuild from the lock fetches from, probed before it starts: `image build --check`
// whose package index, Debian archive or base registry is down fails at once in one line naming
// each host that did not answer (exit 3), instead of after a minute of pip's and the engine's
// retries and a screen of their output.
#pragma once

#include <string>
#include <vector>

#include "project/lockfile.h"

namespace trainlock {

struct RebuildSource {
  enum class Kind { kBaseRegistry, kPackageIndex, kDebianArchive };
  Kind kind;
  std::string url;  // what is probed: https://REGISTRY/v2/, the index root, the archive
};

// The places the generated Containerfile of `target` (a lock's) fetches from: the base's
// registry unless `base_is_local` (the engine has the image already), each package index when
// it installs wheels, the Debian archive when it installs packages. The registry is plain HTTP
// where the build's pull is (PlainHttpRegistry: loopback, or `tls_verify` false).
std::vector<RebuildSource> RebuildSources(const Target& target, bool base_is_local,
                                          bool tls_verify);

// Probes every source at once, each for at most `timeout_s` seconds, and throws a Failure (exit
// 3) naming every one that did not answer, with why, on one line.
void RequireReachable(const std::vector<RebuildSource>& sources, long timeout_s);

}  // namespace trainlock
