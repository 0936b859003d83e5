// Reading JSON input files (reports) with errors that name file:line:column, like every other
// bad-input message (diagnostic.h).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <string>

#include "diagnostic.h"

namespace trainlock {

// The diagnostic for a parse error in `text`: nlohmann gives a byte offset; this turns it into
// the line and column a person's editor jumps to.
Diagnostic JsonParseDiagnostic(const std::string& display, const std::string& text,
                               const nlohmann::json::parse_error& error);

// Reads and parses a JSON file; throws InputError (exit 2) naming the file and position when it
// cannot be read or is not JSON.
nlohmann::json ReadJsonFile(const std::filesystem::path& file, const std::string& display);

// ReadJsonFile, then refuses a document that does not conform to trainlock.report/v1: an
// InputError with one line per violation, at most `max_lines` of them, the last saying how
// many more there are.
nlohmann::json ReadReportFile(const std::filesystem::path& file, const std::string& display,
                              size_t max_lines = SIZE_MAX);

}  // namespace trainlock
