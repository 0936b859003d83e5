// Failure: the one exception for "this could not be done" that is not bad input. It carries
// the exit code it ends the program with (docs/DESIGN.md, "Exit codes"): 1 when content did
// not match what it must (a tampered blob, a build that is not reproducible), 2 for a bad
// request found late (an engine name), 3 when the environment failed (a registry, the Hub or
// an engine could not be reached or run). RunWithExitCodes (exit_code.h) prints it and exits
// with its code; bad input with file positions is an InputError (diagnostic.h) instead.
//
// The rule: Failure and InputError (always exit 2) are the only exceptions that cross a module
// boundary, and our code throws no bare std exception (tests/throw_sites_test.cc enumerates
// every throw site under src/ and validators/). A module may keep an exception class of its own
// (e.g. CheckpointError) when the place meant to handle it catches it by name; that test lists
// each one with where. What still reaches RunWithExitCodes' catch-all as exit 3 is a library's
// exception (std::bad_alloc, nlohmann::json, std::filesystem).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "base/exit_code.h"

namespace trainlock {

class Failure : public std::runtime_error {
 public:
  // `notes` are printed after `what`, each on its own line under the same prefix, for what
  // the user should know on top of the cause (e.g. that nothing was written). A note is one
  // line: a newline or other control character in it is printed escaped (TerminalLine).
  Failure(const std::string& what, ExitCode code, std::vector<std::string> notes = {})
      : std::runtime_error(what), code_(code), notes_(std::move(notes)) {}

  ExitCode exit_code() const { return code_; }
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  ExitCode code_;
  std::vector<std::string> notes_;
};

}  // namespace trainlock
