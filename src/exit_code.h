// Exit codes shared by every command (DESIGN.md, "Exit codes").
#pragma once

namespace trainlock {

enum ExitCode : int {
  kExitOk = 0,           // success, or a verdict in favour
  kExitVerdict = 1,      // a verdict against: incompatible, check failed, gate refused
  kExitBadInput = 2,     // bad input or usage; the message names file:line:column
  kExitEnvironment = 3,  // the environment failed: registry unreachable, engine missing
};

}  // namespace trainlock
