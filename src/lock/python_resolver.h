// Resolving the Python closure of an image: the exact packages a target installs (torch and
// the manifest's [python] packages) and every dependency their wheels declare (Requires-Dist,
// with markers evaluated for the image's interpreter and platform and extras followed), each
// pinned to one version and one wheel file with its SHA-256: what `pip install
// --require-hashes --no-deps` then installs, and nothing else.
//
// Indexes are asked in order and a project comes from the first index that has it (uv's
// "first-index" strategy: a later index cannot shadow a package of an earlier one). Versions:
// the newest one with a wheel for the platform that satisfies every constraint on it (no
// pre-releases unless a constraint names one, no yanked files unless pinned). A pick that a
// later constraint excludes is re-picked until nothing changes; there is no backtracking
// search, so a conflict is reported with every constraint and who made it, not searched around.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/failure.h"
#include "lock/python_index.h"
#include "lock/wheel_tags.h"

namespace trainlock {

struct PythonPin {
  std::string name;     // normalised
  std::string version;  // as the wheel's file name spells it
  std::string file;     // the wheel
  std::string sha256;
  std::string index;  // the index it came from
};

struct ClosureRequest {
  std::string what;                  // for messages, e.g. "targets.cpu"
  std::vector<std::string> indexes;  // simple API roots, in order
  PythonPlatform platform;
  std::map<std::string, std::string> roots;  // package -> exact version
};

// The closure, sorted by name. Throws a Failure: exit 1 when it cannot be satisfied (a package
// no index has, no version that satisfies every constraint or has a wheel for the platform,
// a dependency given by URL) or content does not match its hash, 3 when an index cannot answer.
std::vector<PythonPin> ResolvePythonClosure(const ClosureRequest& request,
                                            const IndexOptions& options);

}  // namespace trainlock
