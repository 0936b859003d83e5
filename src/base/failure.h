// Failure: the one exception for "this could not be done" that is not bad input. It carries
// the exit code it ends the program with (docs/DESIGN.md, "Exit codes"): 1 when content did
// not match what it must (a tampered blob, a build that is not reproducible), 2 for a bad
// request found late (an engine name), 3 when the environment failed (a registry, the Hub or
// an engine could not be reached or run). RunWithExitCodes (exit_code.h) prints it and exits
// with its code; bad input with file positions is an InputError (diagnostic.h) instead.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "base/exit_code.h"

namespace trainlock {

class Failure : public std::runtime_error {
 public:
  // `notes` are printed after `what`, each on its own line under the same prefix, for what
  // the user should know on top of the cause (e.g. that nothing was written).
  Failure(const std::string& what, ExitCode code, std::vector<std::string> notes = {})
      : std::runtime_error(what), code_(code), notes_(std::move(notes)) {}

  ExitCode exit_code() const { return code_; }
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  ExitCode code_;
  std::vector<std::string> notes_;
};

}  // namespace trainlock
