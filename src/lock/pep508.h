// Python dependency specifications (PEP 508), as wheels declare them in METADATA's
// Requires-Dist: a name, extras, a version specifier set and an environment marker, and the
// markers' evaluation for the interpreter and platform an image will run (python_version,
// sys_platform, platform_machine, ..., and `extra`).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>

#include "base/package_name.h"
#include "lock/pep440.h"

namespace trainlock {

// The marker variables of the environment a closure is resolved for.
using MarkerEnvironment = std::map<std::string, std::string>;

struct PyRequirement {
  std::string name;              // normalised
  std::set<std::string> extras;  // normalised
  PySpecifierSet specifier;
  std::string url;     // "name @ url" (not resolvable from an index)
  std::string marker;  // "" = always
  std::string text;    // as written
};

// Nullopt with *error set for text that is not a PEP 508 requirement.
std::optional<PyRequirement> ParsePyRequirement(std::string_view text, std::string* error);

// Evaluates `marker` ("" is true) in `env`; `extra == "x"` holds when x is among `extras`.
// Throws a Failure (exit 2) naming the problem for a marker that does not parse.
bool EvaluateMarker(std::string_view marker, const MarkerEnvironment& env,
                    const std::set<std::string>& extras);

}  // namespace trainlock
