// Reading untrusted JSON (input files, registry and Hub answers, files the validator reads
// back) with the limits of json_limits.h, and errors that name file:line:column like every
// other bad-input message (diagnostic.h).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "base/diagnostic.h"

namespace trainlock {

// The diagnostic for a parse error in `text`: nlohmann gives a byte offset; this turns it into
// the line and column a person's editor jumps to.
Diagnostic JsonParseDiagnostic(const std::string& display, const std::string& text,
                               const nlohmann::json::parse_error& error);

// Parses JSON text from outside: throws InputError (exit 2) naming `display` and the position
// when it is not JSON, nests deeper than kMaxJsonDepth, holds a number beyond a double or
// names a member twice in one object. No nlohmann exception escapes.
nlohmann::json ParseJsonText(std::string_view text, const std::string& display);

// ParseJsonText for callers whose refusal is not an InputError (a registry's answer, a file
// the validator reads): nullopt, with *problem set to the reason and its position ("JSON
// nested deeper than 64 levels of arrays and objects at line 1, column 65").
std::optional<nlohmann::json> TryParseJsonText(std::string_view text, std::string* problem);

// TryParseJsonText over a file's bytes, for files the validator reads back (its workers'
// results, a model's config.json); nullopt with *problem when unreadable or refused.
std::optional<nlohmann::json> TryReadJsonFile(const std::filesystem::path& file,
                                              std::string* problem);

// `value` as trainlock prints it for --json and writes it to a terminal or pipe: indented by
// `indent` (-1: one line), every string's credentials redacted (base/redact.h: --json quotes
// reports and registries trainlock did not write), invalid UTF-8 replaced by U+FFFD (never the
// JSON library's exception), and C1 controls, bidirectional formatting characters and U+2028/U+2029
// escaped as \uNNNN (terminal_text.h: EscapeJsonForTerminal). No newline is appended.
std::string DumpJsonOutput(const nlohmann::json& value, int indent = 2);

// Reads and parses a JSON file with ParseJsonText; throws InputError (exit 2) naming the file
// and position when it cannot be read or is refused.
nlohmann::json ReadJsonFile(const std::filesystem::path& file, const std::string& display);

}  // namespace trainlock
