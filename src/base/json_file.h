// Reading JSON input files with errors that name file:line:column, like every other
// bad-input message (diagnostic.h).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <string>

#include "base/diagnostic.h"

namespace trainlock {

// The diagnostic for a parse error in `text`: nlohmann gives a byte offset; this turns it into
// the line and column a person's editor jumps to.
Diagnostic JsonParseDiagnostic(const std::string& display, const std::string& text,
                               const nlohmann::json::parse_error& error);

// Reads and parses a JSON file; throws InputError (exit 2) naming the file and position when it
// cannot be read or is not JSON.
nlohmann::json ReadJsonFile(const std::filesystem::path& file, const std::string& display);

}  // namespace trainlock
