// Finding a program the way a shell does (a name without a slash is looked up in each
// directory of PATH, in order), and this process's own executable (/proc/self/exe) and the
// programs installed beside it (trainlock finds trainlock-validate there).
#pragma once

#include <filesystem>
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

// This process's executable, read from /proc/self/exe. Throws Failure (exit 3) when the link
// cannot be read.
std::filesystem::path RunningExecutable();

// `name` beside this process's executable when it is there, else the first executable `name`
// on PATH; "" when neither exists.
std::filesystem::path CompanionProgram(const std::string& name);

}  // namespace trainlock
