// Exit codes shared by every command (docs/DESIGN.md, "Exit codes"), and the mapping of failures
// to them that every program's main() uses.
#pragma once

#include <functional>
#include <string_view>

namespace trainlock {

enum ExitCode : int {
  kExitOk = 0,           // success, or a verdict in favour
  kExitVerdict = 1,      // a verdict against: incompatible, check failed, gate refused
  kExitBadInput = 2,     // bad input or usage; the message names file:line:column
  kExitEnvironment = 3,  // the environment failed: registry unreachable, engine missing
};

// Runs `body` and returns its exit code; an InputError becomes its diagnostics on stderr and
// exit 2, any other exception "program: error: what" and exit 3. Nothing escapes as a crash.
int RunWithExitCodes(std::string_view program, const std::function<int()>& body);

}  // namespace trainlock
