// PATH lookup; see program_path.h.
#include "base/program_path.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

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

}  // namespace trainlock
