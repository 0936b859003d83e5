// Reading a report.json from disk: JSON parse errors with file:line:column, then the
// report schema (kReportSchema), before any reader looks inside.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <string>

namespace trainlock {

// ReadJsonFile, then refuses a report of another version of the format with one line
// (ReportSchemaVersionProblem), and a document that does not conform to kReportSchema: an
// InputError with one line per violation, at most `max_lines` of them, the last saying how
// many more there are.
nlohmann::json ReadReportFile(const std::filesystem::path& file, const std::string& display,
                              size_t max_lines = SIZE_MAX);
}  // namespace trainlock
