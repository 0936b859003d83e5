// Diagnostics: one-line, position-carrying error messages for bad input.
//
// Every problem found in a user's file is reported as exactly one line,
//   path:line:column: error: message; hint
// (or `path: error: message` when no position exists), so editors and CI logs can jump to it.
// Credentials in it are redacted.
#pragma once

#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace trainlock {

// A 1-based position in a source file; line 0 means "no position".
struct SourcePos {
  int line = 0;
  int column = 0;
  bool known() const { return line > 0; }
};

struct Diagnostic {
  std::string path;
  SourcePos pos;
  std::string message;
  std::string hint;  // optional, e.g. "did you mean 'seed'?"

  // The one-line rendering described at the top of this file.
  std::string Format() const;
};

// Collects the errors found while loading a project, so that all of them are reported at once.
class Diagnostics {
 public:
  void Error(std::string path, SourcePos pos, std::string message, std::string hint = {});
  void Add(Diagnostic d) { items_.push_back(std::move(d)); }
  bool empty() const { return items_.empty(); }
  size_t size() const { return items_.size(); }
  const std::vector<Diagnostic>& items() const { return items_; }

 private:
  std::vector<Diagnostic> items_;
};

// Writes each diagnostic on its own line to `out`, at most `limit` of them, then one line
// saying how many more there were.
void PrintDiagnostics(const Diagnostics& diags, std::ostream& out, size_t limit = 50);

// Thrown when input is unusable; carries the diagnostics that explain why. Commands turn it
// into exit code 2.
class InputError : public std::runtime_error {
 public:
  explicit InputError(Diagnostics diags);
  explicit InputError(Diagnostic diag);
  const Diagnostics& diagnostics() const { return diags_; }

 private:
  Diagnostics diags_;
};

// Quotes user input for a message: 'value', with credentials redacted (base/redact.h), control
// and non-ASCII bytes escaped and anything past 60 characters elided, so a 10 MB value or
// binary garbage stays one short line and a password in a URL is never shown.
std::string Quoted(std::string_view value);

}  // namespace trainlock
