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

// Runs `body` and returns its exit code; nothing escapes as a crash. An InputError becomes its
// diagnostics on stderr and exit 2; a Failure (failure.h) "<command>: <what>", then
// "<command>: <note>" for each of its notes, and the Failure's exit code; any other exception
// "<program>: error: <what>" and exit 3. Credentials in any of them are redacted. `command` is what
// the user ran, e.g. "trainlock image build", so that a failure says which step failed; empty means
// `program`.
int RunWithExitCodes(std::string_view program, const std::function<int()>& body,
                     std::string_view command = {});

}  // namespace trainlock
