// Finding a program the way a shell does: a name without a slash is looked up in each
// directory of PATH, in order.
#pragma once

#include <string>
#include <vector>

namespace trainlock {

// The PATH used when the environment has none.
inline constexpr const char* kDefaultPath = "/usr/bin:/bin";

// The files that `program` may name, in the order to try them: `program` itself when it has a
// slash, otherwise `program` in each directory of `path` (an empty directory is the current
// one).
std::vector<std::string> ProgramCandidates(const std::string& program, const std::string& path);

// True when `program` is an executable on this process's PATH.
bool OnPath(const std::string& program);

}  // namespace trainlock
