// PATH lookup; see program_path.h.
#include "base/program_path.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "base/exit_code.h"
#include "base/failure.h"

namespace trainlock {

std::vector<std::string> ProgramCandidates(const std::string& program, const std::string& path) {
  if (program.find('/') != std::string::npos) return {program};
  std::vector<std::string> candidates;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find(':', start);
    if (end == std::string::npos) end = path.size();
    candidates.push_back(
        (std::filesystem::path(path.substr(start, end - start)) / program).string());
    start = end + 1;
  }
  return candidates;
}

bool OnPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  for (const std::string& candidate : ProgramCandidates(program, path ? path : kDefaultPath)) {
    if (::access(candidate.c_str(), X_OK) == 0) return true;
  }
  return false;
}

std::filesystem::path RunningExecutable() {
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec)
    throw Failure("cannot read /proc/self/exe (this program's own path): " + ec.message(),
                  kExitEnvironment);
  return self;
}

std::filesystem::path CompanionProgram(const std::string& name) {
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec && std::filesystem::exists(self.parent_path() / name, ec))
    return self.parent_path() / name;
  const char* path = std::getenv("PATH");
  for (const std::string& candidate : ProgramCandidates(name, path ? path : kDefaultPath)) {
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return {};
}

}  // namespace trainlock
