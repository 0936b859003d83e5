// Running an external program (an image engine) without a shell: arguments passed as they
// are, stdout and stderr captured together, the exit status returned.
#pragma once

#include <string>
#include <vector>

namespace trainlock {

struct CommandResult {
  int exit_code = -1;  // 127: could not be started; 128 + N: killed by signal N
  std::string output;  // stdout and stderr, interleaved
};

CommandResult RunCapture(const std::vector<std::string>& argv);

// True when `program` is an executable on PATH.
bool OnPath(const std::string& program);

}  // namespace trainlock
